//! The link behind a stage's queue discipline: Seawind's channel (seed 000
//! §4.3) or a WIPEMU radio link (seed 002), behind one small trait with an
//! enum for static dispatch.

use super::channel::{Channel, Due};
use super::{DropCounts, Recorder};
use crate::config::StageConfig;
use crate::event::{DropReason, Event};
use crate::packet::Packet;
use crate::radio::{RadioLink, RadioPatch};
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// What a link counted.
#[derive(Clone, Debug, Default)]
pub(crate) struct LinkStats {
    pub delivered: u64,
    pub dropped: DropCounts,
    pub frame_errors: u64,
    pub retransmissions: u64,
    pub corrupted: u64,
    /// Packets an error marked CE instead of dropping (`error_ecn`).
    pub ecn_marked: u64,
    /// Background (virtual) packets that left the link, and that it dropped.
    pub background_delivered: u64,
    pub background_dropped: u64,
    /// Background packets passed on to the next stage (BGL channel).
    pub background_forwarded: u64,
    /// Frame errors and ARQ retransmissions of background packets, apart
    /// from the real ones above.
    pub background_frame_errors: u64,
    pub background_retransmissions: u64,
}

/// A link: takes packets from the queue discipline when it has room and
/// delivers them (into `out`, with their time) after its own timers.
pub(crate) trait Link {
    /// Which of the link's timers is due.
    type Timer: Copy;
    /// The earliest pending timer.
    fn next_timer(&self) -> Option<(Instant, Self::Timer)>;
    fn next_wakeup(&self) -> Option<Instant> {
        self.next_timer().map(|(t, _)| t)
    }
    /// Handles `timer`, the earliest pending one, at `now`. `queue_empty`
    /// says whether packets wait in the queue discipline in front.
    fn fire(
        &mut self,
        now: Instant,
        timer: Self::Timer,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    );
    /// Whether the link can take a packet of `size` bytes now.
    fn accepts(&self, size: u32) -> bool;
    /// Takes a packet (the caller checked [`Link::accepts`]).
    fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>);
    /// The queue discipline has handed over what the link could take.
    fn fed(&mut self, now: Instant, queue_empty: bool, log: &mut Vec<Event>);
    /// A packet waits in front of a link where nothing waited before.
    fn wake(&mut self, now: Instant);
    /// Nothing waits to be sent (the allocation may be released).
    fn idle(&self) -> bool;
    /// The time a typical packet takes to send (RED's idle decay).
    fn typical_tx(&self) -> Duration;
    /// Packets inside the link.
    fn occupancy(&self) -> u64;
    fn stats(&self) -> LinkStats;
}

impl Link for Channel {
    type Timer = Due;
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
}

/// A WIPEMU radio link (seed 002): takes one packet at a time from the
/// queue (the base station's queue feeds the link).
#[derive(Debug)]
pub(crate) struct Radio(pub Box<RadioLink>);

impl Link for Radio {
    type Timer = ();
    fn next_timer(&self) -> Option<(Instant, ())> {
        self.0.next_wakeup().map(|t| (t, ()))
    }
    fn fire(
        &mut self,
        now: Instant,
        _timer: (),
        _queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        self.0.run_until(now);
        while let Some(d) = self.0.poll(now) {
            out.push((d.at, d.packet));
        }
        self.0.drain_events_into(log);
    }
    fn accepts(&self, _size: u32) -> bool {
        self.0.backlog() == 0
    }
    fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        self.0.push(now, packet);
        self.0.drain_events_into(log);
    }
    fn fed(&mut self, _now: Instant, _queue_empty: bool, _log: &mut Vec<Event>) {}
    fn wake(&mut self, _now: Instant) {}
    fn idle(&self) -> bool {
        true
    }
    /// The radio's frames vary with modulation; RED sees the channel's
    /// starting value, 1 ms.
    fn typical_tx(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn occupancy(&self) -> u64 {
        self.0.occupancy() as u64
    }
    fn stats(&self) -> LinkStats {
        let r = self.0.stats();
        let mut dropped = DropCounts::default();
        dropped.add_n(DropReason::ArqLimit, r.dropped);
        LinkStats {
            delivered: r.delivered,
            dropped,
            frame_errors: r.frame_errors,
            retransmissions: r.retransmissions,
            corrupted: r.corrupted,
            ..LinkStats::default()
        }
    }
}

/// Every link, for static dispatch. One per stage: the channel stays
/// inline (it is on every packet's path), the rarer radio is boxed.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyLink {
    Channel(Channel),
    Radio(Radio),
}

macro_rules! dispatch {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            AnyLink::Channel($l) => $e,
            AnyLink::Radio($l) => $e,
        }
    };
}

impl AnyLink {
    /// The link `config` describes: its radio if it has one, else the
    /// channel. `rng(component)` gives the stage's random stream of that
    /// name.
    pub(crate) fn new(config: &StageConfig, recorder: Recorder, seed: u64, rng: impl FnMut(&str) -> StreamRng) -> Self {
        match &config.radio {
            Some(r) => AnyLink::Radio(Radio(Box::new(
                RadioLink::new(r, &recorder.stage, recorder.direction, seed)
                    .expect("radio configuration validated with the stage"),
            ))),
            None => AnyLink::Channel(Channel::new(config, recorder, rng)),
        }
    }

    pub(crate) fn set_recorder(&mut self, recorder: Recorder) {
        match self {
            AnyLink::Channel(c) => c.set_recorder(recorder),
            AnyLink::Radio(r) => r.0.set_recording(recorder.recording),
        }
    }

    /// Takes the stage's new configuration; a radio link also applies the
    /// radio part of the patch, and says `false` if it refused it (it is
    /// then left as it was).
    pub(crate) fn reconfigure(
        &mut self,
        now: Instant,
        config: &StageConfig,
        radio: Option<&RadioPatch>,
        log: &mut Vec<Event>,
        rng: impl FnMut(&str) -> StreamRng,
    ) -> bool {
        match self {
            AnyLink::Channel(c) => {
                c.reconfigure(config, rng);
                true
            }
            AnyLink::Radio(r) => {
                let Some(p) = radio else { return true };
                let accepted = r.0.apply(now, p).is_ok();
                r.0.drain_events_into(log);
                accepted
            }
        }
    }

    /// A blackout starts or ends: a channel sends nothing during one.
    pub(crate) fn set_blackout(&mut self, on: bool) {
        if let AnyLink::Channel(c) = self {
            c.set_blackout(on);
        }
    }

    /// A vacation starts or ends: a channel starts no transmission during
    /// one (a radio stage takes no vacations: refused with the stage).
    pub(crate) fn set_vacation(&mut self, on: bool) {
        if let AnyLink::Channel(c) = self {
            c.set_vacation(on);
        }
    }

    /// Whether forwarded background packets go on after this link (a
    /// next stage exists) or are consumed here.
    pub(crate) fn set_forwarding(&mut self, on: bool) {
        if let AnyLink::Channel(c) = self {
            c.set_forwarding(on);
        }
    }

    /// How many new packets the link may start sending into the next
    /// stage (flow control); `None`: no limit. A radio stage before a
    /// flow-controlled stage is refused with the path.
    pub(crate) fn set_credit(&mut self, credit: Option<u32>) {
        if let AnyLink::Channel(c) = self {
            c.set_credit(credit);
        }
    }

    /// Packets whose transmission has started and that have not left the
    /// link yet (they count against the next stage's window).
    pub(crate) fn started(&self) -> u64 {
        match self {
            AnyLink::Channel(c) => c.started() as u64,
            AnyLink::Radio(r) => r.0.occupancy() as u64,
        }
    }

    /// A blackout in drop mode: packets waiting in the link are dropped.
    pub(crate) fn drop_waiting(
        &mut self,
        now: Instant,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        if let AnyLink::Channel(c) = self {
            c.drop_waiting(now, queue_empty, log, out);
        }
    }

    /// Holds the radio slot that starts at `at` until [`AnyLink::release_hold`].
    pub(crate) fn hold_slot_start(&mut self, at: Instant) {
        if let AnyLink::Radio(r) = self {
            r.0.hold_slot_start(at);
        }
    }

    pub(crate) fn release_hold(&mut self) {
        if let AnyLink::Radio(r) = self {
            r.0.release_hold();
        }
    }
}

/// A timer of one of the links.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AnyTimer {
    Channel(Due),
    Radio,
}

impl Link for AnyLink {
    type Timer = AnyTimer;
    fn next_timer(&self) -> Option<(Instant, AnyTimer)> {
        match self {
            AnyLink::Channel(c) => c.next_timer().map(|(t, d)| (t, AnyTimer::Channel(d))),
            AnyLink::Radio(r) => r.next_wakeup().map(|t| (t, AnyTimer::Radio)),
        }
    }
    fn fire(
        &mut self,
        now: Instant,
        timer: AnyTimer,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        match (self, timer) {
            (AnyLink::Channel(c), AnyTimer::Channel(d)) => c.fire_timer(now, d, queue_empty, log, out),
            (AnyLink::Radio(r), AnyTimer::Radio) => r.fire(now, (), queue_empty, log, out),
            _ => {}
        }
    }
    fn accepts(&self, size: u32) -> bool {
        dispatch!(self, l => l.accepts(size))
    }
    fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        dispatch!(self, l => l.push(now, packet, log))
    }
    fn fed(&mut self, now: Instant, queue_empty: bool, log: &mut Vec<Event>) {
        dispatch!(self, l => l.fed(now, queue_empty, log))
    }
    fn wake(&mut self, now: Instant) {
        dispatch!(self, l => l.wake(now))
    }
    fn idle(&self) -> bool {
        dispatch!(self, l => l.idle())
    }
    fn typical_tx(&self) -> Duration {
        dispatch!(self, l => l.typical_tx())
    }
    fn occupancy(&self) -> u64 {
        dispatch!(self, l => l.occupancy())
    }
    fn stats(&self) -> LinkStats {
        dispatch!(self, l => l.stats())
    }
}
