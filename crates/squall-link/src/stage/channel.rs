//! The link part of Seawind's channel (seed 000 §4.3, Figure 3):
//!
//! allocation → fragmentation → link send buffer → transmission → errors
//! (drop, corrupt, ARQ) → propagation → link receive buffer (reassembly,
//! order) → out.
//!
//! The stage's queue discipline feeds it: [`Channel::has_room_for`] says whether
//! the send buffer has room for a packet, [`Channel::take`] puts one in.
//! Its timers are handled one at a time by [`Channel::fire_timer`], in time order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use super::Recorder;
use super::any_link::LinkKind;
use super::errors::ErrorProcess;
use super::link::{Link, LinkStats};
use super::netem::{NetemDelay, SlotGate};
use crate::config::{BufferLimit, ErrorMode, Fragmentation, StageConfig};
use crate::dist::{Distribution, Sampler};
use crate::event::{DropReason, Event, EventKind};
use crate::packet::{FlowKey, Packet};
use crate::patch::StagePatch;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// Rare timers, kept in a heap. The two that fire for every frame —
/// the end of the transmission and the frame's arrival — have their own
/// cheaper structures ([`Channel::transmit_end`], [`Channel::arrivals`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    AllocationDone,
    RetransmitReady,
}

/// Which pending timer is next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    Heap,
    TransmitEnd,
    Arrival,
    /// A slot starts (tc-netem `slot`).
    Slot,
}

/// The link's state of a packet that left the queue: in the send buffer,
/// on the link, or in the receive buffer. The packet itself is kept apart
/// ([`Channel::packets`]).
#[derive(Debug)]
struct InFlight {
    seq: u64,
    frames: u32,
    /// The fragmentation it entered the link under, an index into
    /// [`Channel::fragmentations`]: a state that changes `fragmentation`
    /// applies to the packets that enter after it. An index rather than the
    /// frame sizes themselves keeps `InFlight` at its size without them (it
    /// fits in padding), so moving one in and out of its slot costs no more.
    fragmentation: u32,
    /// Next frame to send for the first time.
    next_frame: u32,
    /// Frames sent without error (or corrupted and passed on).
    frames_done: u32,
    frames_arrived: u32,
    propagation: Duration,
    in_send_buffer: bool,
    in_receive_buffer: bool,
    complete: bool,
    /// How the packet keeps its flow's order.
    order: Order,
}

/// How a packet on the link keeps its flow's order (seed 000 §4.3: the
/// receive buffer hands a flow's packets on in the order they entered,
/// unless the stage lets the link reorder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// None kept: it was taken with `reorder` on.
    Free,
    /// Kept by the link itself. Until one packet can overtake another, the
    /// link is a FIFO: frames are sent once each, packet after packet, in
    /// the order the packets entered, and arrive in the order they were
    /// sent, so every packet is complete after those that entered before
    /// it and no flow order needs to be looked up. The first frame that
    /// may overtake ([`Channel::keep_flow_orders`]) gives every such
    /// packet its place in [`FlowOrders`].
    Fifo,
    /// Its place in flow order `i` of [`FlowOrders`].
    Queue(u32),
}

/// Per flow, the packets on the link in the order they entered it: the
/// receive buffer hands a flow's packets on in that order (seed 000 §4.3).
/// A packet finds its flow's queue by the index it got when it entered, so
/// the flow is looked up once per packet. A flow keeps its queue while it
/// is empty; when the flows known reach a bound, the empty queues are given
/// up at once (for reuse), and the bound becomes twice the flows left, so
/// the map stays bounded however many flows a run sees, at amortised
/// constant cost per flow.
#[derive(Debug)]
struct FlowOrders {
    index: FxHashMap<FlowKey, u32>,
    queues: Vec<(FlowKey, VecDeque<(usize, u64)>)>,
    /// Queues no flow uses, kept for reuse.
    free: Vec<u32>,
    /// The last flow that joined, and its order: a burst of one flow (a
    /// TCP flight) is looked up once.
    last: Option<(FlowKey, u32)>,
    /// A new flow finding this many known gives up the empty queues first.
    sweep_at: usize,
}

impl Default for FlowOrders {
    fn default() -> Self {
        FlowOrders {
            index: FxHashMap::default(),
            queues: Vec::new(),
            free: Vec::new(),
            last: None,
            sweep_at: Self::SWEEP,
        }
    }
}

impl FlowOrders {
    /// The least number of known flows at which empty queues are given up.
    const SWEEP: usize = 1024;

    /// Appends `(slot, seq)` to `flow`'s order; returns the order's index.
    fn join(&mut self, flow: FlowKey, slot: usize, seq: u64) -> u32 {
        let i = match self.last.filter(|(f, _)| *f == flow).map(|(_, i)| i).or_else(|| self.index.get(&flow).copied()) {
            Some(i) => i,
            None => {
                if self.index.len() >= self.sweep_at {
                    self.sweep();
                }
                let i = match self.free.pop() {
                    Some(i) => {
                        self.queues[i as usize].0 = flow;
                        i
                    }
                    None => {
                        self.queues.push((flow, VecDeque::new()));
                        (self.queues.len() - 1) as u32
                    }
                };
                self.index.insert(flow, i);
                i
            }
        };
        self.queues[i as usize].1.push_back((slot, seq));
        self.last = Some((flow, i));
        i
    }

    /// Gives up the queues of the flows with no packet on the link (no
    /// packet refers to an empty queue: a packet's entry leaves its queue
    /// only once the packet is delivered or dropped).
    fn sweep(&mut self) {
        let (queues, free) = (&mut self.queues, &mut self.free);
        self.index.retain(|_, &mut i| {
            let queue = &mut queues[i as usize].1;
            if !queue.is_empty() {
                return true;
            }
            queue.shrink_to(16);
            free.push(i);
            false
        });
        self.last = None;
        self.sweep_at = Self::SWEEP.max(2 * self.index.len());
    }
}

#[derive(Debug, Clone, Copy)]
struct Transmission {
    slot: usize,
    seq: u64,
    frame: u32,
    attempt: u32,
}

/// A frame waiting to be sent again by link ARQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Retransmission {
    ready: Instant,
    order: u64,
    slot: usize,
    seq: u64,
    frame: u32,
    attempt: u32,
}

/// The channel's parameters, taken from the stage's configuration.
#[derive(Debug, Clone)]
struct ChannelConfig {
    fragmentation: Option<Fragmentation>,
    send_buffer: BufferLimit,
    receive_buffer: Option<BufferLimit>,
    rate: Option<crate::units::Rate>,
    error_mode: ErrorMode,
    error_ecn: bool,
    rate_overhead: Option<crate::netem::RateOverhead>,
    delay: Duration,
    reorder: bool,
    slot: Option<crate::netem::Slot>,
}

impl ChannelConfig {
    fn of(c: &StageConfig) -> Self {
        ChannelConfig {
            fragmentation: c.fragmentation.clone(),
            send_buffer: c.send_buffer,
            receive_buffer: c.receive_buffer,
            rate: c.rate,
            error_mode: c.error_mode.clone(),
            error_ecn: c.error_ecn,
            rate_overhead: c.rate_overhead.clone(),
            delay: c.delay,
            reorder: c.reorder,
            slot: c.slot.clone(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Channel {
    config: ChannelConfig,
    recorder: Recorder,
    errors: ErrorProcess,
    /// Boxed, as the other parts few stages have: an ordinary stage
    /// stays small (a dumbbell of 1 000 host pairs has 4 004 stages).
    service: Option<Box<Sampler<Duration>>>,
    allocation: Option<Box<Sampler<Duration>>>,
    jitter: Option<Box<Sampler<Duration>>>,
    /// netem's correlated jitter and packets sent early.
    netem: NetemDelay,
    /// netem's slots, if the stage has (or had, with packets waiting) one.
    slot: Option<Box<SlotGate>>,
    timers: BinaryHeap<Reverse<(Instant, u64, Timer)>>,
    /// Sequence number given to every timer when set: equal times fire in
    /// the order they were set.
    timer_seq: u64,
    /// End of the transmission in progress: (time, timer sequence).
    transmit_end: Option<(Instant, u64)>,
    /// Frames on their way to the receiver: (arrival, timer sequence, slot,
    /// packet seq), in (arrival, sequence) order. With a fixed propagation
    /// delay they arrive in the order they were sent, so inserting is an
    /// append; jitter or a delay change inserts in place.
    arrivals: VecDeque<(Instant, u64, usize, u64)>,
    allocated: bool,
    allocating: bool,
    /// In a blackout (either mode) nothing is sent.
    blackout: bool,
    /// On vacation (seed 003 §2.2) no new transmission starts.
    vacation: bool,
    /// Forwarded background packets go on to a next stage.
    forwarding: bool,
    /// New packets the link may still start under the next stage's flow
    /// control window (seed 000 §4.2); `None`: no window.
    credit: Option<u32>,
    transmitting: Option<Transmission>,
    retransmissions: BinaryHeap<Reverse<Retransmission>>,
    /// Packets in the send buffer with frames not yet sent once, in order.
    tx_order: VecDeque<(usize, u64)>,
    send_packets: u32,
    send_frames: u32,
    receive_packets: u32,
    receive_frames: u32,
    /// Packets on the link by slot, each with its link state in `slots`.
    /// Two tables rather than the packet inside its state: together they
    /// were 144 bytes, above the 128 bytes LLVM copies inline on x86-64,
    /// so entering each packet called `memcpy` (1.3 % of `squall bench
    /// tcp`'s samples; issue 29). Apart, each is copied inline.
    packets: Vec<Option<Packet>>,
    slots: Vec<Option<InFlight>>,
    free_slots: Vec<usize>,
    next_seq: u64,
    /// Per flow, packets on the link in the order they entered it; used
    /// once a packet could overtake another (`overtaking`).
    orders: FlowOrders,
    /// A frame has been sent again by link ARQ or has arrival time before
    /// a frame sent earlier: from then on every packet takes its place in
    /// `orders` (see [`Order::Fifo`]).
    overtaking: bool,
    /// Every fragmentation the link has had, each once. A packet keeps the
    /// index of the one it entered under. The table's length is bounded by
    /// the distinct fragmentations the scenario's states name.
    fragmentations: Vec<Option<Fragmentation>>,
    /// The index of the current one (`config.fragmentation`).
    fragmentation: u32,
    last_tx_time: Duration,
    stats: LinkStats,
}

impl Channel {
    /// `rng(component)` gives the stage's random stream of that name.
    pub(crate) fn new(config: &StageConfig, recorder: Recorder, mut rng: impl FnMut(&str) -> StreamRng) -> Self {
        let mut sampler =
            |d: &Option<Distribution<Duration>>, c: &str| d.clone().map(|d| Box::new(Sampler::new(d, rng(c))));
        let allocation = sampler(&config.allocation_delay, "allocation");
        let service = sampler(&config.service_time, "service");
        let jitter = sampler(&config.jitter, "jitter");
        let mut errors = ErrorProcess::new(config.error.clone(), rng("error"));
        errors.set_correlation(config.error_correlation, || rng("error_correlation"));
        Channel {
            config: ChannelConfig::of(config),
            recorder,
            errors,
            netem: NetemDelay::new(config, &mut rng),
            slot: config.slot.as_ref().map(|s| Box::new(SlotGate::new(s, Instant::ZERO, rng("slot")))),
            service,
            allocated: allocation.is_none(),
            allocation,
            jitter,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            transmit_end: None,
            arrivals: VecDeque::new(),
            allocating: false,
            blackout: false,
            vacation: false,
            forwarding: false,
            credit: None,
            transmitting: None,
            retransmissions: BinaryHeap::new(),
            tx_order: VecDeque::new(),
            send_packets: 0,
            send_frames: 0,
            receive_packets: 0,
            receive_frames: 0,
            packets: Vec::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            next_seq: 0,
            orders: FlowOrders::default(),
            overtaking: false,
            fragmentations: vec![config.fragmentation.clone()],
            fragmentation: 0,
            last_tx_time: Duration::from_millis(1),
            stats: LinkStats::default(),
        }
    }

    /// Takes the stage's new configuration (a state change).
    pub(crate) fn reconfigure(&mut self, now: Instant, config: &StageConfig, mut rng: impl FnMut(&str) -> StreamRng) {
        if config.slot != self.config_slot() {
            match (&mut self.slot, &config.slot) {
                (Some(g), c) => g.set(c.as_ref(), now),
                (None, Some(c)) => self.slot = Some(Box::new(SlotGate::new(c, now, rng("slot")))),
                (None, None) => {}
            }
        }
        self.errors.set_model(config.error.clone());
        self.errors.set_correlation(config.error_correlation, || rng("error_correlation"));
        self.netem.reconfigure(config, &mut rng);
        let mut update =
            |sampler: &mut Option<Box<Sampler<Duration>>>, d: &Option<Distribution<Duration>>, c: &str| match (
                sampler.as_mut(),
                d,
            ) {
                (_, None) => *sampler = None,
                (Some(s), Some(d)) => s.set_distribution(d.clone()),
                (None, Some(d)) => *sampler = Some(Box::new(Sampler::new(d.clone(), rng(c)))),
            };
        update(&mut self.service, &config.service_time, "service");
        update(&mut self.jitter, &config.jitter, "jitter");
        update(&mut self.allocation, &config.allocation_delay, "allocation");
        if self.allocation.is_none() {
            self.allocated = true;
        }
        self.config = ChannelConfig::of(config);
        let current = &self.config.fragmentation;
        self.fragmentation = match self.fragmentations.iter().position(|f| f == current) {
            Some(i) => i as u32,
            None => {
                self.fragmentations.push(current.clone());
                (self.fragmentations.len() - 1) as u32
            }
        };
    }

    /// The slot configuration in force.
    fn config_slot(&self) -> Option<crate::netem::Slot> {
        self.config.slot.clone()
    }

    pub(crate) fn set_recorder(&mut self, recorder: Recorder) {
        self.recorder = recorder;
    }

    pub(crate) fn counters(&self) -> &LinkStats {
        &self.stats
    }

    /// The time the last transmission took (1 ms before the first).
    pub(crate) fn last_tx_time(&self) -> Duration {
        self.last_tx_time
    }

    /// Packets in the send buffer, on the link or in the receive buffer.
    pub(crate) fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count() + self.slot.as_ref().map_or(0, |g| g.len())
    }

    /// Nothing waits in the send buffer.
    pub(crate) fn send_buffer_empty(&self) -> bool {
        self.send_packets == 0
    }

    /// A blackout starts (`true`) or ends: nothing is sent during one.
    pub(crate) fn set_blackout(&mut self, blackout: bool) {
        self.blackout = blackout;
    }

    /// A vacation starts (`true`) or ends: no transmission starts during one.
    pub(crate) fn set_vacation(&mut self, vacation: bool) {
        self.vacation = vacation;
    }

    pub(crate) fn set_forwarding(&mut self, forwarding: bool) {
        self.forwarding = forwarding;
    }

    pub(crate) fn set_credit(&mut self, credit: Option<u32>) {
        self.credit = credit;
    }

    /// Packets whose first frame has been sent and that have not been
    /// delivered or dropped yet.
    pub(crate) fn started(&self) -> u32 {
        self.receive_packets + self.slot.as_ref().map_or(0, |g| g.len() as u32)
    }

    /// The earliest pending timer: (time, sequence, which).
    #[inline(always)]
    fn next_due(&self) -> Option<(Instant, u64, Due)> {
        let mut best = self.timers.peek().map(|Reverse((t, q, _))| (*t, *q, Due::Heap));
        let mut consider = |t: Instant, q: u64, d: Due| {
            if best.as_ref().is_none_or(|b| (t, q) < (b.0, b.1)) {
                best = Some((t, q, d));
            }
        };
        if let Some((t, q)) = self.transmit_end {
            consider(t, q, Due::TransmitEnd);
        }
        if let Some(&(t, q, _, _)) = self.arrivals.front() {
            consider(t, q, Due::Arrival);
        }
        // At equal times a slot starts after every other timer: packets
        // due at a slot's start leave in it.
        if let Some(t) = self.slot.as_ref().and_then(|g| g.next_wakeup()) {
            consider(t, u64::MAX, Due::Slot);
        }
        best
    }

    /// The earliest pending timer and which it is.
    #[inline(always)]
    pub(crate) fn next_timer(&self) -> Option<(Instant, Due)> {
        self.next_due().map(|(t, _, d)| (t, d))
    }

    /// Handles `due`, the earliest pending timer (at `now`). `queue_empty`
    /// says whether the queue in front holds packets (the allocation is
    /// released when nothing waits).
    pub(crate) fn fire_timer(
        &mut self,
        now: Instant,
        due: Due,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        match due {
            Due::Heap => {
                let Some(Reverse((_, _, timer))) = self.timers.pop() else { return };
                match timer {
                    Timer::AllocationDone => {
                        self.allocating = false;
                        self.allocated = true;
                        self.release_allocation_if_empty(queue_empty);
                    }
                    Timer::RetransmitReady => {}
                }
            }
            Due::TransmitEnd => {
                self.transmit_end = None;
                if let Some(tx) = self.transmitting.take() {
                    self.transmit_end(now, tx, queue_empty, log, out);
                }
            }
            Due::Arrival => {
                let Some((_, _, slot, seq)) = self.arrivals.pop_front() else { return };
                self.frame_arrival(now, slot, seq, log, out);
            }
            Due::Slot => self.release_slot(now, log, out),
        }
    }

    /// A packet waits for the link at `now` where nothing waited before:
    /// resources are allocated (seed 000 §4.3, allocation delay).
    pub(crate) fn allocate(&mut self, now: Instant) {
        if self.allocated || self.allocating {
            return;
        }
        let delay = self.allocation.as_mut().map_or(Duration::ZERO, |s| s.sample());
        if delay.is_zero() {
            self.allocated = true;
        } else {
            self.allocating = true;
            self.schedule(now + delay, Timer::AllocationDone);
        }
    }

    fn schedule(&mut self, at: Instant, timer: Timer) {
        self.timer_seq += 1;
        self.timers.push(Reverse((at, self.timer_seq, timer)));
    }

    /// Resources are released when nothing waits for the link.
    pub(crate) fn release_allocation_if_empty(&mut self, queue_empty: bool) {
        if self.allocation.is_some() && queue_empty && self.send_packets == 0 {
            self.allocated = false;
        }
    }

    /// Frames a packet of `size` bytes takes under the current fragmentation.
    fn frames_of(&self, size: u32) -> u32 {
        match &self.config.fragmentation {
            None => 1,
            Some(f) => {
                let s = (size as f64 * f.compression).ceil() as u64;
                s.div_ceil(f.frame_payload.0).max(1) as u32
            }
        }
    }

    /// The size on the wire of frame `frame` of a packet of `size` bytes,
    /// under the fragmentation it entered the link with
    /// (`fragmentations`: [`Channel::fragmentations`]).
    fn frame_wire_bytes(fragmentations: &[Option<Fragmentation>], f: &InFlight, size: u32, frame: u32) -> u64 {
        match &fragmentations[f.fragmentation as usize] {
            None => size as u64,
            Some(frag) => {
                let s = (size as f64 * frag.compression).ceil() as u64;
                let payload = if frame + 1 < f.frames {
                    frag.frame_payload.0
                } else {
                    s - (f.frames as u64 - 1) * frag.frame_payload.0
                };
                payload + frag.frame_header.0
            }
        }
    }

    /// Whether the send buffer has room for a packet of `size` bytes.
    pub(crate) fn has_room_for(&self, size: u32) -> bool {
        match self.config.send_buffer {
            BufferLimit::Packets(n) => self.send_packets < n,
            BufferLimit::Frames(n) => self.send_packets == 0 || self.send_frames + self.frames_of(size) <= n,
        }
    }

    fn receive_buffer_has_room(&self, frames: u32) -> bool {
        match self.config.receive_buffer {
            None => true,
            Some(BufferLimit::Packets(n)) => self.receive_packets < n,
            Some(BufferLimit::Frames(n)) => self.receive_packets == 0 || self.receive_frames + frames <= n,
        }
    }

    /// Puts a packet the queue released into the send buffer (the caller
    /// checked [`Channel::has_room_for`]).
    pub(crate) fn take(&mut self, packet: Packet) {
        let frames = self.frames_of(packet.size);
        let seq = self.next_seq;
        self.next_seq += 1;
        let flow = packet.flow;
        let slot = self.free_slots.pop().unwrap_or(self.slots.len());
        let order = if self.config.reorder {
            Order::Free
        } else if self.overtaking {
            Order::Queue(self.orders.join(flow, slot, seq))
        } else {
            Order::Fifo
        };
        let entry = InFlight {
            seq,
            frames,
            fragmentation: self.fragmentation,
            next_frame: 0,
            frames_done: 0,
            frames_arrived: 0,
            propagation: Duration::ZERO,
            in_send_buffer: true,
            in_receive_buffer: false,
            complete: false,
            order,
        };
        if slot == self.slots.len() {
            self.slots.push(Some(entry));
            self.packets.push(Some(packet));
        } else {
            self.slots[slot] = Some(entry);
            self.packets[slot] = Some(packet);
        }
        self.send_packets += 1;
        self.send_frames += frames;
        self.tx_order.push_back((slot, seq));
    }

    fn packet_in(&self, slot: usize) -> Option<&Packet> {
        self.packets[slot].as_ref()
    }

    fn live(&self, slot: usize, seq: u64) -> bool {
        matches!(self.slots.get(slot), Some(Some(f)) if f.seq == seq)
    }

    /// Starts the next frame if the link is free: ARQ retransmissions
    /// first, then new frames in order (seed 002 §II: "retransmissions go
    /// first").
    pub(crate) fn try_transmit(&mut self, now: Instant, log: &mut Vec<Event>) {
        if self.transmitting.is_some() || !self.allocated || self.blackout || self.vacation {
            return;
        }
        // Drop stale retransmissions (their packet is gone).
        while let Some(&Reverse(r)) = self.retransmissions.peek() {
            if self.live(r.slot, r.seq) {
                break;
            }
            self.retransmissions.pop();
        }
        let next = match self.retransmissions.peek() {
            Some(&Reverse(r)) if r.ready <= now => {
                self.retransmissions.pop();
                Some((r.slot, r.seq, r.frame, r.attempt))
            }
            _ => self.next_new_frame(),
        };
        let Some((slot, seq, frame, attempt)) = next else { return };
        let f = self.slots[slot].as_ref().expect("live slot");
        let size = self.packet_in(slot).expect("live slot").size;
        let wire = Self::frame_wire_bytes(&self.fragmentations, f, size, frame);
        let duration = match (&mut self.service, self.config.rate) {
            (Some(s), _) => s.sample(),
            (None, Some(rate)) => {
                rate.transmission_time(self.config.rate_overhead.as_ref().map_or(wire, |o| o.charged(wire)))
            }
            (None, None) => Duration::ZERO,
        };
        self.last_tx_time = if duration.is_zero() { self.last_tx_time } else { duration };
        let tx = Transmission { slot, seq, frame, attempt };
        self.transmitting = Some(tx);
        self.timer_seq += 1;
        self.transmit_end = Some((now + duration, self.timer_seq));
        let packet = self.packet_in(slot);
        if attempt > 0 {
            self.recorder.log(log, now, EventKind::Retransmit { frame, attempt }, packet);
        }
        self.recorder.log(log, now, EventKind::TransmitStart { frame }, packet);
    }

    /// The next frame sent for the first time, if the receive buffer (the
    /// link's window) has room for a new packet.
    fn next_new_frame(&mut self) -> Option<(usize, u64, u32, u32)> {
        loop {
            let &(slot, seq) = self.tx_order.front()?;
            if !self.live(slot, seq) {
                self.tx_order.pop_front();
                continue;
            }
            let f = self.slots[slot].as_ref().expect("live slot");
            if f.next_frame == 0 && (!self.receive_buffer_has_room(f.frames) || self.credit == Some(0)) {
                return None;
            }
            let first = f.next_frame == 0;
            let frames = f.frames;
            if first {
                let propagation = self.netem.propagation(self.config.delay, self.jitter.as_deref_mut());
                self.receive_packets += 1;
                self.receive_frames += frames;
                if let Some(c) = self.credit.as_mut() {
                    *c -= 1;
                }
                let f = self.slots[slot].as_mut().expect("live slot");
                f.propagation = propagation;
                f.in_receive_buffer = true;
            }
            let f = self.slots[slot].as_mut().expect("live slot");
            let frame = f.next_frame;
            f.next_frame += 1;
            if f.next_frame == f.frames {
                self.tx_order.pop_front();
            }
            return Some((slot, seq, frame, 0));
        }
    }

    fn transmit_end(
        &mut self,
        now: Instant,
        tx: Transmission,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        if !self.live(tx.slot, tx.seq) {
            return;
        }
        let (size, background) = self.packet_in(tx.slot).map(|p| (p.size, p.background)).expect("live slot");
        let f = self.slots[tx.slot].as_ref().expect("live slot");
        let wire = Self::frame_wire_bytes(&self.fragmentations, f, size, tx.frame);
        self.recorder.log(log, now, EventKind::TransmitEnd { frame: tx.frame }, self.packet_in(tx.slot));
        if self.errors.frame_hit(wire) {
            if background {
                self.stats.background_frame_errors += 1;
            } else {
                self.stats.frame_errors += 1;
            }
            self.recorder.log(log, now, EventKind::FrameError { frame: tx.frame }, self.packet_in(tx.slot));
            match self.config.error_mode.clone() {
                // tc-netem `ecn`: an ECN-capable packet is marked instead.
                ErrorMode::Drop
                    if self.config.error_ecn && self.packet_in(tx.slot).is_some_and(|p| p.ecn.is_capable()) =>
                {
                    self.packets[tx.slot].as_mut().expect("live slot").set_ecn(crate::packet::Ecn::Ce);
                    if !background {
                        self.stats.ecn_marked += 1;
                    }
                    self.recorder.log(log, now, EventKind::EcnMark, self.packet_in(tx.slot));
                }
                ErrorMode::Drop => {
                    self.remove_and_drop(now, tx.slot, DropReason::Error, queue_empty, log, out);
                    return;
                }
                ErrorMode::Arq(arq) => {
                    if tx.attempt >= arq.retries {
                        self.remove_and_drop(now, tx.slot, DropReason::ArqLimit, queue_empty, log, out);
                    } else {
                        if background {
                            self.stats.background_retransmissions += 1;
                        } else {
                            self.stats.retransmissions += 1;
                        }
                        // The frame is sent again after frames sent later.
                        self.keep_flow_orders();
                        let ready = now + arq.delay;
                        self.timer_seq += 1;
                        self.retransmissions.push(Reverse(Retransmission {
                            ready,
                            order: self.timer_seq,
                            slot: tx.slot,
                            seq: tx.seq,
                            frame: tx.frame,
                            attempt: tx.attempt + 1,
                        }));
                        self.schedule(ready, Timer::RetransmitReady);
                    }
                    return;
                }
                ErrorMode::Corrupt => {
                    let frames = self.slots[tx.slot].as_ref().expect("live slot").frames as u64;
                    let bits = size as u64 * 8;
                    let span = bits.div_ceil(frames);
                    let first = tx.frame as u64 * span;
                    let packet = self.packets[tx.slot].as_mut().expect("live slot");
                    let first_corruption = !packet.corrupted;
                    let flipped = match self.errors.bit_probability() {
                        // Per bit: every bit of the frame on the wire in
                        // error flips; those past the frame's share of the
                        // packet (its link header) change no packet bit.
                        Some(b) => {
                            let share = span.min(bits.saturating_sub(first));
                            let mut flipped = 0;
                            self.errors.bit_errors_given_hit(wire * 8, b, |offset| {
                                if offset < share {
                                    packet.flip_bit(first + offset);
                                    flipped += 1;
                                }
                            });
                            flipped
                        }
                        // Per frame: one flipped bit in this frame's share
                        // of the packet (tc-netem's `corrupt`).
                        None => {
                            let bit = first + self.errors.bit_to_flip(span);
                            packet.flip_bit(bit.min(bits.saturating_sub(1)));
                            1
                        }
                    };
                    if flipped > 0 {
                        if first_corruption {
                            self.stats.corrupted += 1;
                        }
                        self.recorder.log(log, now, EventKind::Corrupt { bits: flipped }, self.packet_in(tx.slot));
                    }
                }
            }
        }
        let f = self.slots[tx.slot].as_mut().expect("live slot");
        f.frames_done += 1;
        let arrival = now + f.propagation;
        let left_send_buffer = f.frames_done == f.frames;
        if left_send_buffer {
            f.in_send_buffer = false;
        }
        self.send_frames -= 1;
        if left_send_buffer {
            self.send_packets -= 1;
        }
        self.timer_seq += 1;
        let entry = (arrival, self.timer_seq, tx.slot, tx.seq);
        match self.arrivals.back() {
            Some(last) if (last.0, last.1) > (entry.0, entry.1) => {
                // It arrives before a frame sent earlier.
                self.keep_flow_orders();
                let at = self.arrivals.partition_point(|e| (e.0, e.1) <= (entry.0, entry.1));
                self.arrivals.insert(at, entry);
            }
            _ => self.arrivals.push_back(entry),
        }
        self.release_allocation_if_empty(queue_empty);
    }

    fn frame_arrival(
        &mut self,
        now: Instant,
        slot: usize,
        seq: u64,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        if !self.live(slot, seq) {
            return;
        }
        let f = self.slots[slot].as_mut().expect("live slot");
        f.frames_arrived += 1;
        if f.frames_arrived < f.frames {
            return;
        }
        f.complete = true;
        match f.order {
            Order::Free | Order::Fifo => self.deliver(now, slot, log, out),
            Order::Queue(order) => self.release_in_order(now, order, log, out),
        }
    }

    /// A frame may overtake another from now on (link ARQ, jitter, a
    /// shorter delay, netem's packets sent early): the packets that kept
    /// their order by the link's FIFO take their places in their flows'
    /// orders, in the order they entered, as they would have had they
    /// joined when taken. None of them is complete yet (a complete FIFO
    /// packet is delivered at once), and none has been overtaken: until
    /// this frame, every frame was sent once and arrives in sending order.
    fn keep_flow_orders(&mut self) {
        if self.overtaking {
            return;
        }
        self.overtaking = true;
        let mut fifo: Vec<(u64, usize)> = (self.slots.iter().enumerate())
            .filter_map(|(slot, f)| f.as_ref().filter(|f| f.order == Order::Fifo).map(|f| (f.seq, slot)))
            .collect();
        fifo.sort_unstable();
        for (seq, slot) in fifo {
            let flow = self.packet_in(slot).expect("live slot").flow;
            let f = self.slots[slot].as_mut().expect("live slot");
            f.order = Order::Queue(self.orders.join(flow, slot, seq));
        }
    }

    /// Delivers the complete packets at the head of flow order `order`,
    /// skipping dropped ones.
    fn release_in_order(&mut self, now: Instant, order: u32, log: &mut Vec<Event>, out: &mut Vec<(Instant, Packet)>) {
        let i = order as usize;
        while let Some(&(slot, seq)) = self.orders.queues[i].1.front() {
            let complete = match self.slots.get(slot) {
                Some(Some(f)) if f.seq == seq => f.complete,
                // Dropped: skipped.
                _ => true,
            };
            if !complete {
                return;
            }
            self.orders.queues[i].1.pop_front();
            if self.live(slot, seq) {
                self.deliver(now, slot, log, out);
            }
        }
    }

    /// Frees `slot` and hands out its packet and flow order.
    fn take_slot(&mut self, slot: usize) -> (Packet, Order) {
        let f = self.slots[slot].as_ref().expect("live slot");
        let (seq, frames, frames_done) = (f.seq, f.frames, f.frames_done);
        if f.in_send_buffer {
            self.send_packets -= 1;
            self.send_frames -= frames - frames_done;
        }
        if f.in_receive_buffer {
            self.receive_packets -= 1;
            self.receive_frames -= frames;
        }
        if self.transmitting.is_some_and(|t| t.slot == slot && t.seq == seq) {
            self.transmitting = None;
            self.transmit_end = None;
        }
        self.free_slots.push(slot);
        let InFlight { order, .. } = self.slots[slot].take().expect("live slot");
        (self.packets[slot].take().expect("live slot"), order)
    }

    fn deliver(&mut self, now: Instant, slot: usize, log: &mut Vec<Event>, out: &mut Vec<(Instant, Packet)>) {
        let (packet, _) = self.take_slot(slot);
        if packet.background {
            if packet.forward && self.forwarding {
                // On to the next stage over the BGL channel.
                self.stats.background_forwarded += 1;
                out.push((now, packet));
            } else {
                // Virtual load ends here: it took its link time.
                self.stats.background_delivered += 1;
            }
            return;
        }
        match &mut self.slot {
            Some(g) => {
                g.arrive(now, packet);
                self.release_slot(now, log, out);
            }
            None => self.leave(now, packet, log, out),
        }
    }

    /// A real packet leaves the link at `now`.
    fn leave(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>, out: &mut Vec<(Instant, Packet)>) {
        self.stats.delivered += 1;
        self.recorder.log(log, now, EventKind::Deliver, Some(&packet));
        out.push((now, packet));
    }

    /// The packets the slot in force lets leave at `now`.
    fn release_slot(&mut self, now: Instant, log: &mut Vec<Event>, out: &mut Vec<(Instant, Packet)>) {
        while let Some(p) = self.slot.as_mut().and_then(|g| g.take(now)) {
            self.leave(now, p, log, out);
        }
        if self.slot.as_ref().is_some_and(|g| g.done()) {
            self.slot = None;
        }
    }

    fn remove_and_drop(
        &mut self,
        now: Instant,
        slot: usize,
        reason: DropReason,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        let (packet, order) = self.take_slot(slot);
        if packet.background {
            self.stats.background_dropped += 1;
        } else {
            self.stats.dropped.add(reason);
            self.recorder.log(log, now, EventKind::Drop(reason), Some(&packet));
        }
        self.release_allocation_if_empty(queue_empty);
        if let Order::Queue(order) = order {
            // Packets of the flow waiting behind this one may go now.
            self.release_in_order(now, order, log, out);
        }
    }

    /// A blackout in drop mode: every packet not yet sent is dropped.
    pub(crate) fn drop_waiting(
        &mut self,
        now: Instant,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        let waiting: Vec<usize> =
            (0..self.slots.len()).filter(|&s| self.slots[s].as_ref().is_some_and(|f| f.in_send_buffer)).collect();
        for slot in waiting {
            self.remove_and_drop(now, slot, DropReason::Blackout, queue_empty, log, out);
        }
    }
}

/// The default link kind: a stage without another link kind's key.
impl LinkKind for Channel {
    fn choose(
        config: &StageConfig,
        recorder: &Recorder,
        _seed: u64,
        rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> Option<Self> {
        Some(Channel::new(config, recorder.clone(), rng))
    }
}

impl Link for Channel {
    type Timer = Due;
    #[inline]
    fn next_timer(&self) -> Option<(Instant, Due)> {
        Channel::next_timer(self)
    }
    fn fire(
        &mut self,
        now: Instant,
        due: Due,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        self.fire_timer(now, due, queue_empty, log, out);
    }
    fn accepts(&self, size: u32) -> bool {
        self.has_room_for(size)
    }
    fn push(&mut self, _now: Instant, packet: Packet, _log: &mut Vec<Event>) {
        self.take(packet);
    }
    fn fed(&mut self, now: Instant, queue_empty: bool, log: &mut Vec<Event>) {
        self.release_allocation_if_empty(queue_empty);
        self.try_transmit(now, log);
    }
    fn wake(&mut self, now: Instant) {
        self.allocate(now);
    }
    fn idle(&self) -> bool {
        self.send_buffer_empty()
    }
    fn typical_tx(&self) -> Duration {
        self.last_tx_time()
    }
    fn occupancy(&self) -> u64 {
        self.in_flight() as u64
    }
    fn stats(&self) -> LinkStats {
        self.counters().clone()
    }
    fn set_recorder(&mut self, recorder: &Recorder) {
        Channel::set_recorder(self, recorder.clone());
    }
    fn reconfigure(
        &mut self,
        now: Instant,
        config: &StageConfig,
        _patch: &StagePatch,
        _log: &mut Vec<Event>,
        rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> bool {
        Channel::reconfigure(self, now, config, rng);
        true
    }
    fn set_blackout(&mut self, on: bool) {
        Channel::set_blackout(self, on);
    }
    fn drop_waiting(
        &mut self,
        now: Instant,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        Channel::drop_waiting(self, now, queue_empty, log, out);
    }
    fn set_vacation(&mut self, on: bool) {
        Channel::set_vacation(self, on);
    }
    fn set_forwarding(&mut self, on: bool) {
        Channel::set_forwarding(self, on);
    }
    fn set_credit(&mut self, credit: Option<u32>) {
        Channel::set_credit(self, credit);
    }
    fn started(&self) -> u64 {
        Channel::started(self) as u64
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::packet::Protocol;

    fn flow(n: u32) -> FlowKey {
        FlowKey {
            protocol: Protocol::Udp,
            src: Ipv4Addr::from(0x0a00_0000 + n).into(),
            dst: Ipv4Addr::new(10, 0, 1, 1).into(),
            src_port: 1,
            dst_port: 2,
        }
    }

    /// A packet and its link state each move in and out of their tables
    /// by inline copies: LLVM copies up to 128 bytes inline on x86-64, a
    /// larger value with a call of `memcpy` (issue 29: the two together
    /// were 144 bytes once flow keys held IPv6 addresses).
    #[test]
    fn a_packet_and_its_link_state_are_copied_inline() {
        assert!(std::mem::size_of::<Packet>() <= 128, "{} bytes", std::mem::size_of::<Packet>());
        assert!(std::mem::size_of::<InFlight>() <= 128, "{} bytes", std::mem::size_of::<InFlight>());
    }

    /// Sends `n` packets of 1 000 bytes, flows 0..flows in turn, 0.1 ms
    /// apart, into a channel of `config` and runs it until it is idle;
    /// returns the channel and the delivered packets' ids.
    fn run(config: &StageConfig, n: u32, flows: u32) -> (Channel, Vec<u64>) {
        let recorder =
            Recorder { stage: "s".into(), direction: crate::Direction::Downlink, recording: Default::default() };
        let mut c = Channel::new(config, recorder, |name| crate::rng::stream(1, name));
        let (mut log, mut out) = (Vec::new(), Vec::new());
        let mut i = 0;
        loop {
            let next_packet = (i < n).then(|| Instant::from_micros(100 * u64::from(i)));
            let next = match (next_packet, c.next_timer()) {
                (Some(p), Some((t, _))) if t < p => c.next_timer().map(|(t, d)| (t, Some(d))),
                (Some(p), _) => Some((p, None)),
                (None, t) => t.map(|(t, d)| (t, Some(d))),
            };
            let Some((now, due)) = next else { break };
            match due {
                Some(due) => c.fire_timer(now, due, true, &mut log, &mut out),
                None => {
                    c.take(Packet::new(crate::PacketId(u64::from(i)), 1000, flow(i % flows)));
                    i += 1;
                }
            }
            c.try_transmit(now, &mut log);
        }
        let ids = out.iter().map(|(_, p)| p.id.0).collect();
        (c, ids)
    }

    /// A FIFO link (constant delay, no ARQ) delivers every flow in order
    /// without the flow order map; a link whose frames overtake (jitter)
    /// keeps its flows' orders in the map and still delivers each in order.
    #[test]
    fn flow_orders_only_once_a_frame_can_overtake() {
        let mut fifo = StageConfig::named("s");
        fifo.rate = Some("10 Mbit/s".parse().unwrap());
        fifo.delay = Duration::from_millis(20);
        let (c, ids) = run(&fifo, 300, 3);
        assert_eq!(ids, (0..300).collect::<Vec<u64>>());
        assert!(!c.overtaking);
        assert!(c.orders.index.is_empty() && c.orders.queues.is_empty(), "a FIFO link needs no flow order");

        let mut jitter = fifo.clone();
        jitter.jitter = Some(Distribution::Uniform { low: Duration::ZERO, high: Duration::from_millis(50) });
        let (c, ids) = run(&jitter, 300, 3);
        assert!(c.overtaking);
        assert_eq!(c.orders.queues.len(), 3, "one order per flow");
        assert_eq!(ids.len(), 300);
        for f in 0..3 {
            let of_flow: Vec<u64> = ids.iter().copied().filter(|i| i % 3 == f).collect();
            assert!(of_flow.windows(2).all(|w| w[0] < w[1]), "flow {f} reordered");
        }
        assert!(ids.windows(2).any(|w| w[1] < w[0]), "the jitter reorders across flows");
    }

    /// Empty queues stay with their flows until the flows known reach the
    /// bound; then a new flow gives up every empty queue (and reuses one),
    /// keeps the flows with packets on the link, and the bound doubles past
    /// what is left.
    #[test]
    fn flow_orders_give_up_empty_queues_at_the_bound() {
        let mut o = FlowOrders::default();
        let n = FlowOrders::SWEEP as u32;
        for f in 0..n {
            assert_eq!(o.join(flow(f), f as usize, u64::from(f)), f);
        }
        // All but the last 10 flows deliver their packet.
        for f in 0..n - 10 {
            o.queues[f as usize].1.pop_front();
        }
        // A known flow joins again: its own (empty) queue, no sweep.
        assert_eq!(o.join(flow(3), 9999, 9999), 3);
        o.queues[3].1.pop_front();
        assert_eq!(o.index.len(), FlowOrders::SWEEP);
        // A new flow: the empty queues go, the 10 busy flows stay.
        let i = o.join(flow(n), 0, 0);
        assert_eq!(o.index.len(), 11);
        assert_eq!(o.free.len(), (n - 10 - 1) as usize);
        assert!(i < n - 10, "reuses a given-up queue");
        for f in n - 10..n {
            assert_eq!(o.index.get(&flow(f)), Some(&f), "busy flow {f} keeps its queue");
        }
        assert_eq!(o.sweep_at, FlowOrders::SWEEP);
        // The last flow is not remembered across a sweep wrongly: flow(n)
        // finds the queue it was given.
        assert_eq!(o.join(flow(n), 1, 1), i);
        assert_eq!(o.queues[i as usize].1.len(), 2);
    }
}
