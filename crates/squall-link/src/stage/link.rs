//! The link behind a stage's queue discipline: Seawind's channel (seed 000
//! §4.3), a WIPEMU radio link (seed 002) or a Mahimahi trace of delivery
//! opportunities ([`super::trace`]), behind one small trait with an enum for
//! static dispatch.

use super::channel::{Channel, Due};
use super::trace::{TraceLink, TraceTimer};
use super::{DropCounts, Recorder};
use crate::config::{Change, StageConfig};
use crate::event::Event;
use crate::packet::Packet;
use crate::patch::StagePatch;
use crate::radio::RadioLink;
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
///
/// This is the whole seam between a stage and its link: a new link kind is
/// one impl of this trait and one variant of [`AnyLink`]. The methods with
/// a default are the stage's controls a link kind may ignore (a radio takes
/// no blackouts); the defaults do nothing.
pub(crate) trait Link {
    /// Which of the link's timers is due.
    type Timer: Copy;
    /// The earliest pending timer.
    fn next_timer(&self) -> Option<(Instant, Self::Timer)>;
    fn next_wakeup(&self) -> Option<Instant> {
        self.next_timer().map(|(t, _)| t)
    }
    /// Handles `timer`, the earliest pending one as [`Link::next_timer`]
    /// reported it, at `now`. `queue_empty` says whether packets wait in
    /// the queue discipline in front.
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

    /// The stage's recorder changed (its recording level).
    fn set_recorder(&mut self, recorder: &Recorder);
    /// Takes the stage's new configuration at `now` (a state change whose
    /// patch is `patch`); says `false` if it refused the part of the patch
    /// that is its own, and is then left as it was.
    fn reconfigure(
        &mut self,
        now: Instant,
        config: &StageConfig,
        patch: &StagePatch,
        log: &mut Vec<Event>,
        rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> bool;
    /// `change` will be applied to the stage at `at`, once everything due
    /// before it has happened ([`crate::Path::apply`]); [`Link::changed`]
    /// follows it. A link whose next step at `at` the change decides holds
    /// that step until then.
    fn before_change(&mut self, _at: Instant, _change: &Change) {}
    /// The change announced by [`Link::before_change`] is in.
    fn changed(&mut self) {}
    /// A blackout starts (`true`) or ends.
    fn set_blackout(&mut self, _on: bool) {}
    /// A blackout in drop mode: packets waiting in the link are dropped.
    fn drop_waiting(
        &mut self,
        _now: Instant,
        _queue_empty: bool,
        _log: &mut Vec<Event>,
        _out: &mut Vec<(Instant, Packet)>,
    ) {
    }
    /// A vacation (seed 003 §2.2) starts (`true`) or ends.
    fn set_vacation(&mut self, _on: bool) {}
    /// Whether forwarded background packets go on after this link (a next
    /// stage exists) or are consumed here.
    fn set_forwarding(&mut self, _on: bool) {}
    /// How many new packets the link may start sending into the next stage
    /// (flow control, seed 000 §4.2); `None`: no limit.
    fn set_credit(&mut self, _credit: Option<u32>) {}
    /// Packets whose transmission has started and that have not left the
    /// link yet (they count against the next stage's window).
    fn started(&self) -> u64 {
        self.occupancy()
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

/// Every link, for static dispatch. One per stage: the channel stays
/// inline (it is on every packet's path), the rarer radio is boxed.
///
/// A new link kind: its impl of [`Link`] in its own file, a variant here
/// with its arm in `dispatch!` and in [`AnyTimer`], and its case in
/// [`AnyLink::new`].
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyLink {
    Channel(Channel),
    Radio(Box<RadioLink>),
    Trace(Box<TraceLink>),
}

macro_rules! dispatch {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            AnyLink::Channel($l) => $e,
            AnyLink::Radio(b) => {
                let $l: &RadioLink = b;
                $e
            }
            AnyLink::Trace(b) => {
                let $l: &TraceLink = b;
                $e
            }
        }
    };
}

macro_rules! dispatch_mut {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            AnyLink::Channel($l) => $e,
            AnyLink::Radio(b) => {
                let $l: &mut RadioLink = b;
                $e
            }
            AnyLink::Trace(b) => {
                let $l: &mut TraceLink = b;
                $e
            }
        }
    };
}

impl AnyLink {
    /// The link `config` describes: its radio or its trace if it has one,
    /// else the channel. `rng(component)` gives the stage's random stream of that
    /// name.
    pub(crate) fn new(config: &StageConfig, recorder: Recorder, seed: u64, rng: impl FnMut(&str) -> StreamRng) -> Self {
        match (&config.radio, &config.trace) {
            (Some(r), _) => AnyLink::Radio(Box::new(
                RadioLink::new(r, &recorder.stage, recorder.direction, seed)
                    .expect("radio configuration validated with the stage"),
            )),
            (None, Some(t)) => AnyLink::Trace(Box::new(TraceLink::new(t, recorder))),
            (None, None) => AnyLink::Channel(Channel::new(config, recorder, rng)),
        }
    }
}

/// A timer of one of the links.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AnyTimer {
    Channel(Due),
    Radio(<RadioLink as Link>::Timer),
    Trace(TraceTimer),
}

/// The trace link's next timer, out of line: inlined into
/// [`AnyLink::next_timer`] it made the compiler stop inlining that
/// dispatch into the stage's loop (+23 M instructions, 5 %, on `squall
/// bench tcp --runs 1` under callgrind, which has no trace link).
#[inline(never)]
fn trace_next_timer(l: &TraceLink) -> Option<(Instant, AnyTimer)> {
    Link::next_timer(l).map(|(t, d)| (t, AnyTimer::Trace(d)))
}

/// The trace link's next wake-up, out of line for the same reason as
/// [`trace_next_timer`].
#[inline(never)]
fn trace_next_wakeup(l: &TraceLink) -> Option<Instant> {
    Link::next_wakeup(l)
}

impl Link for AnyLink {
    type Timer = AnyTimer;
    #[inline]
    fn next_timer(&self) -> Option<(Instant, AnyTimer)> {
        match self {
            AnyLink::Channel(c) => Link::next_timer(c).map(|(t, d)| (t, AnyTimer::Channel(d))),
            AnyLink::Radio(r) => Link::next_timer(r.as_ref()).map(|(t, d)| (t, AnyTimer::Radio(d))),
            AnyLink::Trace(l) => trace_next_timer(l),
        }
    }
    /// Dispatched directly, not through [`Link::next_timer`]: the stage
    /// asks for its next wake-up on every pass of the path, and building
    /// an [`AnyTimer`] only to drop it cost the inlining of
    /// [`super::Stage::next_wakeup`].
    #[inline]
    fn next_wakeup(&self) -> Option<Instant> {
        match self {
            AnyLink::Channel(c) => Link::next_wakeup(c),
            AnyLink::Radio(r) => Link::next_wakeup(r.as_ref()),
            AnyLink::Trace(l) => trace_next_wakeup(l),
        }
    }
    /// A timer of another link kind than this one cannot come from
    /// [`Link::next_timer`] (a stage's link never changes kind); it is a
    /// bug, caught in debug builds.
    fn fire(
        &mut self,
        now: Instant,
        timer: AnyTimer,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        match (self, timer) {
            (AnyLink::Channel(c), AnyTimer::Channel(d)) => Link::fire(c, now, d, queue_empty, log, out),
            (AnyLink::Radio(r), AnyTimer::Radio(d)) => Link::fire(r.as_mut(), now, d, queue_empty, log, out),
            (AnyLink::Trace(l), AnyTimer::Trace(d)) => Link::fire(l.as_mut(), now, d, queue_empty, log, out),
            (link, timer) => debug_assert!(false, "timer {timer:?} fired on a link of another kind: {link:?}"),
        }
    }
    fn accepts(&self, size: u32) -> bool {
        dispatch!(self, l => Link::accepts(l, size))
    }
    fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        dispatch_mut!(self, l => Link::push(l, now, packet, log))
    }
    fn fed(&mut self, now: Instant, queue_empty: bool, log: &mut Vec<Event>) {
        dispatch_mut!(self, l => Link::fed(l, now, queue_empty, log))
    }
    fn wake(&mut self, now: Instant) {
        dispatch_mut!(self, l => Link::wake(l, now))
    }
    fn idle(&self) -> bool {
        dispatch!(self, l => Link::idle(l))
    }
    fn typical_tx(&self) -> Duration {
        dispatch!(self, l => Link::typical_tx(l))
    }
    fn occupancy(&self) -> u64 {
        dispatch!(self, l => Link::occupancy(l))
    }
    fn stats(&self) -> LinkStats {
        dispatch!(self, l => Link::stats(l))
    }
    fn set_recorder(&mut self, recorder: &Recorder) {
        dispatch_mut!(self, l => Link::set_recorder(l, recorder))
    }
    fn reconfigure(
        &mut self,
        now: Instant,
        config: &StageConfig,
        patch: &StagePatch,
        log: &mut Vec<Event>,
        rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> bool {
        dispatch_mut!(self, l => Link::reconfigure(l, now, config, patch, log, rng))
    }
    fn before_change(&mut self, at: Instant, change: &Change) {
        dispatch_mut!(self, l => Link::before_change(l, at, change))
    }
    fn changed(&mut self) {
        dispatch_mut!(self, l => Link::changed(l))
    }
    fn set_blackout(&mut self, on: bool) {
        dispatch_mut!(self, l => Link::set_blackout(l, on))
    }
    fn drop_waiting(
        &mut self,
        now: Instant,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        dispatch_mut!(self, l => Link::drop_waiting(l, now, queue_empty, log, out))
    }
    fn set_vacation(&mut self, on: bool) {
        dispatch_mut!(self, l => Link::set_vacation(l, on))
    }
    fn set_forwarding(&mut self, on: bool) {
        dispatch_mut!(self, l => Link::set_forwarding(l, on))
    }
    fn set_credit(&mut self, credit: Option<u32>) {
        dispatch_mut!(self, l => Link::set_credit(l, credit))
    }
    fn started(&self) -> u64 {
        dispatch!(self, l => Link::started(l))
    }
}
