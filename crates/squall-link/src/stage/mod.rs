//! A stage: Seawind's channel (seed 000 §4.3, Figure 3). Packets pass
//!
//! input queue → allocation → fragmentation → link send buffer →
//! transmission → errors (drop, corrupt, ARQ) → propagation →
//! link receive buffer (reassembly, order) → out.
//!
//! The stage is driven by its path: `run_until(now)` handles its timers in
//! time order and `push(now, packet)` hands it a packet. It reads no clock.

mod errors;
mod queue;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;
use std::sync::Arc;

use crate::config::{BlackoutMode, BufferLimit, Change, ErrorMode, StageConfig};
use crate::dist::Sampler;
use crate::event::{Direction, DropReason, Event, EventKind, Recording};
use crate::packet::{FlowKey, Packet};
use crate::radio::RadioLink;
use crate::rng::stream;
use crate::time::{Duration, Instant};
use errors::ErrorProcess;
use queue::{Admission, InputQueue};

/// What a stage counted.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StageStats {
    pub name: String,
    pub direction: Option<Direction>,
    pub entered: u64,
    pub delivered: u64,
    /// Drops per [`DropReason`], indexed by [`DropReason::index`].
    pub dropped: [u64; 6],
    pub ecn_marked: u64,
    pub frame_errors: u64,
    pub retransmissions: u64,
    pub corrupted: u64,
    /// Time-averaged number of packets waiting in the input queue.
    pub mean_queue_len: f64,
    pub max_queue_len: usize,
}

impl StageStats {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }
}

/// Rare timers, kept in a heap. The two that fire for every frame —
/// the end of the transmission and the frame's arrival — have their own
/// cheaper structures ([`Stage::transmit_end`], [`Stage::arrivals`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    AllocationDone,
    RetransmitReady,
}

/// Which pending timer is next.
enum Due {
    Heap,
    TransmitEnd,
    Arrival,
    /// The radio link's next slot boundary or delivery.
    Radio,
}

/// A packet that left the input queue: in the send buffer, on the link, or
/// in the receive buffer.
#[derive(Debug)]
struct InFlight {
    packet: Packet,
    seq: u64,
    frames: u32,
    /// Next frame to send for the first time.
    next_frame: u32,
    /// Frames sent without error (or corrupted and passed on).
    frames_done: u32,
    frames_arrived: u32,
    propagation: Duration,
    in_send_buffer: bool,
    in_receive_buffer: bool,
    complete: bool,
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

#[derive(Debug)]
pub(crate) struct Stage {
    name: Arc<str>,
    direction: Direction,
    seed: u64,
    config: StageConfig,
    queue: InputQueue,
    errors: ErrorProcess,
    service: Option<Sampler<Duration>>,
    allocation: Option<Sampler<Duration>>,
    jitter: Option<Sampler<Duration>>,
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
    now: Instant,
    allocated: bool,
    allocating: bool,
    transmitting: Option<Transmission>,
    retransmissions: BinaryHeap<Reverse<Retransmission>>,
    /// Packets in the send buffer with frames not yet sent once, in order.
    tx_order: VecDeque<(usize, u64)>,
    send_packets: u32,
    send_frames: u32,
    receive_packets: u32,
    receive_frames: u32,
    slots: Vec<Option<InFlight>>,
    free_slots: Vec<usize>,
    next_seq: u64,
    /// Per flow, packets on the link in the order they entered it.
    flow_order: FxHashMap<FlowKey, VecDeque<(usize, u64)>>,
    blackout: Option<BlackoutMode>,
    /// Deliveries since the path last collected them, in time order.
    pub(crate) out: Vec<(Instant, Packet)>,
    stats: StageStats,
    last_tx_time: Duration,
    evicted: Vec<Packet>,
    recording: Recording,
    /// A radio stage's link (seed 002), replacing the channel's link part.
    radio: Option<Box<RadioLink>>,
}

/// The stream name of one of a stage's random components.
fn stream_name(direction: Direction, stage: &str, component: &str) -> String {
    format!("{direction}/{stage}/{component}")
}

impl Stage {
    /// `config` must have passed [`StageConfig::validate`].
    pub(crate) fn new(config: StageConfig, direction: Direction, seed: u64) -> Self {
        let name: Arc<str> = Arc::from(config.name.as_str());
        let rng = |c: &str| stream(seed, &stream_name(direction, &name, c));
        let sampler =
            |d: &Option<crate::dist::Distribution<Duration>>, c: &str| d.clone().map(|d| Sampler::new(d, rng(c)));
        let allocation = sampler(&config.allocation_delay, "allocation");
        let radio = config.radio.as_ref().map(|r| {
            Box::new(RadioLink::new(r, &name, direction, seed).expect("radio configuration validated with the stage"))
        });
        Stage {
            queue: InputQueue::new(config.queue.clone(), rng("red")),
            errors: ErrorProcess::new(config.error.clone(), rng("error")),
            service: sampler(&config.service_time, "service"),
            jitter: sampler(&config.jitter, "jitter"),
            allocated: allocation.is_none(),
            allocation,
            stats: StageStats { name: config.name.clone(), direction: Some(direction), ..Default::default() },
            name,
            direction,
            seed,
            config,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            transmit_end: None,
            arrivals: VecDeque::new(),
            now: Instant::ZERO,
            allocating: false,
            transmitting: None,
            retransmissions: BinaryHeap::new(),
            tx_order: VecDeque::new(),
            send_packets: 0,
            send_frames: 0,
            receive_packets: 0,
            receive_frames: 0,
            slots: Vec::new(),
            free_slots: Vec::new(),
            next_seq: 0,
            flow_order: FxHashMap::default(),
            blackout: None,
            out: Vec::new(),
            last_tx_time: Duration::from_millis(1),
            evicted: Vec::new(),
            recording: Recording::All,
            radio,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn set_recording(&mut self, recording: Recording) {
        self.recording = recording;
        if let Some(r) = self.radio.as_mut() {
            r.set_recording(recording);
        }
    }

    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        self.next_due().map(|(t, _, _)| t)
    }

    /// The earliest pending timer: (time, sequence, which).
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
        if let Some(t) = self.radio.as_ref().and_then(|r| r.next_wakeup()) {
            // After the stage's own timers at the same time.
            consider(t, u64::MAX, Due::Radio);
        }
        best
    }

    /// Packets inside the stage (queue, buffers, link).
    pub(crate) fn occupancy(&self) -> u64 {
        self.queue.len() as u64
            + self.slots.iter().filter(|s| s.is_some()).count() as u64
            + self.radio.as_ref().map_or(0, |r| r.occupancy() as u64)
    }

    /// Advances the radio link to `at` and passes on what it delivered.
    fn run_radio(&mut self, at: Instant, log: &mut Vec<Event>) {
        let Some(radio) = self.radio.as_mut() else { return };
        radio.run_until(at);
        while let Some(d) = radio.poll(at) {
            self.out.push((d.at, d.packet));
        }
        radio.drain_events_into(log);
    }

    pub(crate) fn stats(&self, now: Instant) -> StageStats {
        let mut s = self.stats.clone();
        s.mean_queue_len = self.queue.mean_len(now.max(self.now));
        if let Some(r) = &self.radio {
            let r = r.stats();
            s.delivered += r.delivered;
            s.dropped[DropReason::ArqLimit.index()] += r.dropped;
            s.frame_errors += r.frame_errors;
            s.retransmissions += r.retransmissions;
            s.corrupted += r.corrupted;
        }
        s
    }

    fn log(&self, log: &mut Vec<Event>, kind: EventKind, packet: Option<&Packet>) {
        if self.recording.keeps(&kind) {
            log.push(Event {
                time: self.now,
                stage: self.name.clone(),
                direction: self.direction,
                kind,
                packet: packet.map(|p| p.id),
                flow: packet.map(|p| p.flow),
                size: packet.map_or(0, |p| p.size),
            });
        }
    }

    fn schedule(&mut self, at: Instant, timer: Timer) {
        self.timer_seq += 1;
        self.timers.push(Reverse((at, self.timer_seq, timer)));
    }

    /// Handles every timer due at or before `now`, in time order.
    pub(crate) fn run_until(&mut self, now: Instant, log: &mut Vec<Event>) {
        while let Some((at, _, due)) = self.next_due() {
            if at > now {
                break;
            }
            self.now = self.now.max(at);
            match due {
                Due::Heap => {
                    let Some(Reverse((_, _, timer))) = self.timers.pop() else { break };
                    match timer {
                        Timer::AllocationDone => {
                            self.allocating = false;
                            self.allocated = true;
                            self.release_allocation_if_empty();
                        }
                        Timer::RetransmitReady => {}
                    }
                }
                Due::TransmitEnd => {
                    self.transmit_end = None;
                    if let Some(tx) = self.transmitting.take() {
                        self.transmit_end(tx, log);
                    }
                }
                Due::Arrival => {
                    let Some((_, _, slot, seq)) = self.arrivals.pop_front() else { break };
                    self.frame_arrival(slot, seq, log);
                }
                Due::Radio => self.run_radio(at, log),
            }
            self.fill_send_buffer(log);
            self.try_transmit(log);
        }
        self.now = self.now.max(now);
    }

    /// A packet arrives at the stage at `now` (not earlier than the last
    /// `run_until`).
    pub(crate) fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        self.run_until(now, log);
        self.stats.entered += 1;
        if self.blackout == Some(BlackoutMode::Drop) {
            self.drop_packet(packet, DropReason::Blackout, log);
            return;
        }
        let was_empty = self.queue.is_empty() && self.send_packets == 0;
        let typical_tx = self.last_tx_time;
        let mut evicted = std::mem::take(&mut self.evicted);
        let (admission, refused) = self.queue.offer(now, packet, typical_tx, &mut evicted);
        for p in evicted.drain(..) {
            self.drop_packet(p, DropReason::QueueOverflow, log);
        }
        self.evicted = evicted;
        match admission {
            Admission::Enqueued { marked } => {
                self.stats.max_queue_len = self.stats.max_queue_len.max(self.queue.len());
                let packet = self.queue.last();
                if marked {
                    self.stats.ecn_marked += 1;
                    self.log(log, EventKind::EcnMark, packet);
                }
                self.log(log, EventKind::Enqueue, packet);
                if self.blackout == Some(BlackoutMode::Hold) {
                    self.log(log, EventKind::Hold, packet);
                }
            }
            Admission::RedDrop => self.drop_packet(refused.expect("refused packet returned"), DropReason::Red, log),
            Admission::Overflow => {
                self.drop_packet(refused.expect("refused packet returned"), DropReason::QueueOverflow, log)
            }
        }
        if was_empty && !self.queue.is_empty() && !self.allocated && !self.allocating {
            self.start_allocation();
        }
        self.fill_send_buffer(log);
        self.try_transmit(log);
        // Zero-time transmissions and deliveries happen now.
        self.run_until(now, log);
    }

    fn start_allocation(&mut self) {
        let delay = self.allocation.as_mut().map_or(Duration::ZERO, |s| s.sample());
        if delay.is_zero() {
            self.allocated = true;
        } else {
            self.allocating = true;
            self.schedule(self.now + delay, Timer::AllocationDone);
        }
    }

    /// Resources are released when nothing waits for the link.
    fn release_allocation_if_empty(&mut self) {
        if self.allocation.is_some() && self.queue.is_empty() && self.send_packets == 0 {
            self.allocated = false;
        }
    }

    fn drop_packet(&mut self, packet: Packet, reason: DropReason, log: &mut Vec<Event>) {
        self.stats.dropped[reason.index()] += 1;
        self.log(log, EventKind::Drop(reason), Some(&packet));
    }

    /// Frames a packet takes, and each frame's size on the wire.
    fn frames_of(&self, size: u32) -> u32 {
        match &self.config.fragmentation {
            None => 1,
            Some(f) => {
                let s = (size as f64 * f.compression).ceil() as u64;
                s.div_ceil(f.frame_payload.0).max(1) as u32
            }
        }
    }

    fn frame_wire_bytes(&self, size: u32, frame: u32) -> u64 {
        match &self.config.fragmentation {
            None => size as u64,
            Some(f) => {
                let s = (size as f64 * f.compression).ceil() as u64;
                let n = s.div_ceil(f.frame_payload.0).max(1);
                let payload = if (frame as u64) + 1 < n { f.frame_payload.0 } else { s - (n - 1) * f.frame_payload.0 };
                payload + f.frame_header.0
            }
        }
    }

    fn send_buffer_has_room(&self, frames: u32) -> bool {
        match self.config.send_buffer {
            BufferLimit::Packets(n) => self.send_packets < n,
            BufferLimit::Frames(n) => self.send_packets == 0 || self.send_frames + frames <= n,
        }
    }

    fn receive_buffer_has_room(&self, frames: u32) -> bool {
        match self.config.receive_buffer {
            None => true,
            Some(BufferLimit::Packets(n)) => self.receive_packets < n,
            Some(BufferLimit::Frames(n)) => self.receive_packets == 0 || self.receive_frames + frames <= n,
        }
    }

    /// Moves packets from the input queue into the link send buffer while
    /// it has room, dropping those that waited too long.
    fn fill_send_buffer(&mut self, log: &mut Vec<Event>) {
        if self.blackout == Some(BlackoutMode::Hold) {
            return;
        }
        if self.radio.is_some() {
            self.feed_radio(log);
            return;
        }
        while let Some(size) = self.queue.head_size() {
            let frames = self.frames_of(size);
            if !self.send_buffer_has_room(frames) {
                break;
            }
            let q = self.queue.pop(self.now).expect("head exists");
            if self.queue.max_sojourn().is_some_and(|max| self.now.saturating_since(q.since) > max) {
                self.drop_packet(q.packet, DropReason::SojournLimit, log);
                continue;
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            let flow = q.packet.flow;
            let entry = InFlight {
                packet: q.packet,
                seq,
                frames,
                next_frame: 0,
                frames_done: 0,
                frames_arrived: 0,
                propagation: Duration::ZERO,
                in_send_buffer: true,
                in_receive_buffer: false,
                complete: false,
            };
            let slot = match self.free_slots.pop() {
                Some(s) => {
                    self.slots[s] = Some(entry);
                    s
                }
                None => {
                    self.slots.push(Some(entry));
                    self.slots.len() - 1
                }
            };
            self.send_packets += 1;
            self.send_frames += frames;
            self.tx_order.push_back((slot, seq));
            if !self.config.reorder {
                self.flow_order.entry(flow).or_default().push_back((slot, seq));
            }
        }
        self.release_allocation_if_empty();
    }

    /// A radio link takes one packet at a time from the queue (seed 002:
    /// the base station's queue feeds the link).
    fn feed_radio(&mut self, log: &mut Vec<Event>) {
        while self.radio.as_ref().is_some_and(|r| r.backlog() == 0) {
            let Some(q) = self.queue.pop(self.now) else { break };
            if self.queue.max_sojourn().is_some_and(|max| self.now.saturating_since(q.since) > max) {
                self.drop_packet(q.packet, DropReason::SojournLimit, log);
                continue;
            }
            let now = self.now;
            if let Some(r) = self.radio.as_mut() {
                r.push(now, q.packet);
                r.drain_events_into(log);
            }
        }
    }

    fn live(&self, slot: usize, seq: u64) -> bool {
        matches!(self.slots.get(slot), Some(Some(f)) if f.seq == seq)
    }

    /// Starts the next frame if the link is free: ARQ retransmissions
    /// first, then new frames in order (seed 002 §II: "retransmissions go
    /// first").
    fn try_transmit(&mut self, log: &mut Vec<Event>) {
        if self.transmitting.is_some() || !self.allocated || self.blackout.is_some() || self.radio.is_some() {
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
            Some(&Reverse(r)) if r.ready <= self.now => {
                self.retransmissions.pop();
                Some((r.slot, r.seq, r.frame, r.attempt))
            }
            _ => self.next_new_frame(),
        };
        let Some((slot, seq, frame, attempt)) = next else { return };
        let size = self.slots[slot].as_ref().expect("live slot").packet.size;
        let wire = self.frame_wire_bytes(size, frame);
        let duration = match (&mut self.service, self.config.rate) {
            (Some(s), _) => s.sample(),
            (None, Some(rate)) => rate.transmission_time(wire),
            (None, None) => Duration::ZERO,
        };
        self.last_tx_time = if duration.is_zero() { self.last_tx_time } else { duration };
        let tx = Transmission { slot, seq, frame, attempt };
        self.transmitting = Some(tx);
        self.timer_seq += 1;
        self.transmit_end = Some((self.now + duration, self.timer_seq));
        let packet = self.slots[slot].as_ref().map(|f| &f.packet);
        if attempt > 0 {
            self.log(log, EventKind::Retransmit { frame, attempt }, packet);
        }
        self.log(log, EventKind::TransmitStart { frame }, packet);
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
            if f.next_frame == 0 && !self.receive_buffer_has_room(f.frames) {
                return None;
            }
            let first = f.next_frame == 0;
            let frames = f.frames;
            if first {
                let propagation = self.config.delay + self.jitter.as_mut().map_or(Duration::ZERO, |j| j.sample());
                self.receive_packets += 1;
                self.receive_frames += frames;
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

    fn transmit_end(&mut self, tx: Transmission, log: &mut Vec<Event>) {
        if !self.live(tx.slot, tx.seq) {
            return;
        }
        let size = self.slots[tx.slot].as_ref().expect("live slot").packet.size;
        let wire = self.frame_wire_bytes(size, tx.frame);
        self.log(log, EventKind::TransmitEnd { frame: tx.frame }, self.slots[tx.slot].as_ref().map(|f| &f.packet));
        if self.errors.frame_hit(wire) {
            self.stats.frame_errors += 1;
            self.log(log, EventKind::FrameError { frame: tx.frame }, self.slots[tx.slot].as_ref().map(|f| &f.packet));
            match self.config.error_mode.clone() {
                ErrorMode::Drop => {
                    self.remove_and_drop(tx.slot, DropReason::Error, log);
                    return;
                }
                ErrorMode::Arq(arq) => {
                    if tx.attempt >= arq.retries {
                        self.remove_and_drop(tx.slot, DropReason::ArqLimit, log);
                    } else {
                        self.stats.retransmissions += 1;
                        let ready = self.now + arq.delay;
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
                    // One flipped bit in this frame's share of the packet.
                    let frames = self.slots[tx.slot].as_ref().expect("live slot").frames as u64;
                    let bits = size as u64 * 8;
                    let span = bits.div_ceil(frames);
                    let bit = tx.frame as u64 * span + self.errors.bit_to_flip(span);
                    let f = self.slots[tx.slot].as_mut().expect("live slot");
                    let first_corruption = !f.packet.corrupted;
                    f.packet.flip_bit(bit.min(bits.saturating_sub(1)));
                    if first_corruption {
                        self.stats.corrupted += 1;
                    }
                    self.log(log, EventKind::Corrupt, self.slots[tx.slot].as_ref().map(|f| &f.packet));
                }
            }
        }
        let now = self.now;
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
                let at = self.arrivals.partition_point(|e| (e.0, e.1) <= (entry.0, entry.1));
                self.arrivals.insert(at, entry);
            }
            _ => self.arrivals.push_back(entry),
        }
        self.release_allocation_if_empty();
    }

    fn frame_arrival(&mut self, slot: usize, seq: u64, log: &mut Vec<Event>) {
        if !self.live(slot, seq) {
            return;
        }
        let f = self.slots[slot].as_mut().expect("live slot");
        f.frames_arrived += 1;
        if f.frames_arrived < f.frames {
            return;
        }
        f.complete = true;
        let flow = f.packet.flow;
        if self.config.reorder {
            self.deliver(slot, log);
        } else {
            self.release_in_order(flow, log);
        }
    }

    /// Delivers the flow's complete packets from the head of its order,
    /// skipping dropped ones.
    fn release_in_order(&mut self, flow: FlowKey, log: &mut Vec<Event>) {
        let Some(order) = self.flow_order.get_mut(&flow) else { return };
        let mut ready = Vec::new();
        while let Some(&(slot, seq)) = order.front() {
            match self.slots.get(slot) {
                Some(Some(f)) if f.seq == seq => {
                    if !f.complete {
                        break;
                    }
                    ready.push(slot);
                    order.pop_front();
                }
                _ => {
                    order.pop_front();
                }
            }
        }
        if order.is_empty() {
            self.flow_order.remove(&flow);
        }
        for slot in ready {
            self.deliver(slot, log);
        }
    }

    fn take_slot(&mut self, slot: usize) -> InFlight {
        let f = self.slots[slot].take().expect("live slot");
        self.free_slots.push(slot);
        if f.in_send_buffer {
            self.send_packets -= 1;
            self.send_frames -= f.frames - f.frames_done;
        }
        if f.in_receive_buffer {
            self.receive_packets -= 1;
            self.receive_frames -= f.frames;
        }
        if self.transmitting.is_some_and(|t| t.slot == slot && t.seq == f.seq) {
            self.transmitting = None;
            self.transmit_end = None;
        }
        f
    }

    fn deliver(&mut self, slot: usize, log: &mut Vec<Event>) {
        let f = self.take_slot(slot);
        self.stats.delivered += 1;
        self.log(log, EventKind::Deliver, Some(&f.packet));
        self.out.push((self.now, f.packet));
    }

    fn remove_and_drop(&mut self, slot: usize, reason: DropReason, log: &mut Vec<Event>) {
        let f = self.take_slot(slot);
        let flow = f.packet.flow;
        self.drop_packet(f.packet, reason, log);
        self.release_allocation_if_empty();
        if !self.config.reorder {
            // Packets of the flow waiting behind this one may go now.
            self.release_in_order(flow, log);
        }
    }

    /// Holds the radio slot that starts at `at` until the next
    /// [`Stage::apply`] (a radio change at `at` decides that slot).
    pub(crate) fn hold_radio_slot_start(&mut self, at: Instant) {
        if let Some(r) = self.radio.as_mut() {
            r.hold_slot_start(at);
        }
    }

    /// Applies a change addressed to this stage at `now`.
    pub(crate) fn apply(&mut self, now: Instant, change: &Change, log: &mut Vec<Event>) {
        self.run_until(now, log);
        match change {
            Change::Set { patch, .. } => {
                let mut config = patch.applied_to(&self.config);
                if let (Some(radio), Some(p)) = (self.radio.as_mut(), &patch.radio) {
                    // Checked with the scenario (`StagePatch::check`); a
                    // patch the link refuses leaves it, and its recorded
                    // configuration, as they were.
                    if radio.apply(now, p).is_err() {
                        config.radio = self.config.radio.clone();
                    }
                    radio.drain_events_into(log);
                }
                self.queue.set_config(config.queue.clone());
                self.errors.set_model(config.error.clone());
                let (dir, name, seed) = (self.direction, self.name.clone(), self.seed);
                let update = |sampler: &mut Option<Sampler<Duration>>,
                              d: &Option<crate::dist::Distribution<Duration>>,
                              c: &str| {
                    match (sampler.as_mut(), d) {
                        (_, None) => *sampler = None,
                        (Some(s), Some(d)) => s.set_distribution(d.clone()),
                        (None, Some(d)) => {
                            *sampler = Some(Sampler::new(d.clone(), stream(seed, &stream_name(dir, &name, c))))
                        }
                    }
                };
                update(&mut self.service, &config.service_time, "service");
                update(&mut self.jitter, &config.jitter, "jitter");
                update(&mut self.allocation, &config.allocation_delay, "allocation");
                if self.allocation.is_none() {
                    self.allocated = true;
                }
                self.config = config;
            }
            Change::BlackoutStart { mode, .. } => {
                self.log(log, EventKind::BlackoutStart, None);
                self.blackout = Some(*mode);
                if *mode == BlackoutMode::Drop {
                    for p in self.queue.drain(now) {
                        self.drop_packet(p, DropReason::Blackout, log);
                    }
                    let waiting: Vec<usize> = (0..self.slots.len())
                        .filter(|&s| self.slots[s].as_ref().is_some_and(|f| f.in_send_buffer))
                        .collect();
                    for slot in waiting {
                        self.remove_and_drop(slot, DropReason::Blackout, log);
                    }
                }
            }
            Change::BlackoutEnd { .. } => {
                if self.blackout.take().is_some() {
                    self.log(log, EventKind::BlackoutEnd, None);
                }
            }
        }
        if let Some(r) = self.radio.as_mut() {
            r.release_hold();
        }
        self.fill_send_buffer(log);
        self.try_transmit(log);
        self.run_until(now, log);
    }
}
