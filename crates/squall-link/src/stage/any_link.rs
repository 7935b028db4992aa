//! Every link kind behind one enum, for static dispatch: the stage holds an
//! [`AnyLink`] and calls it through the [`Link`] trait.

use super::Recorder;
use super::channel::{Channel, Due};
use super::link::{Link, LinkStats};
use super::trace::{TraceLink, TraceTimer};
use crate::config::StageConfig;
use crate::event::Event;
use crate::packet::Packet;
use crate::patch::{Change, StagePatch};
use crate::radio::RadioLink;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

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
            (Some(r), _) => {
                let mut radio = RadioLink::new(r, &recorder.stage, recorder.direction, seed)
                    .expect("radio configuration validated with the stage");
                Link::set_recorder(&mut radio, &recorder);
                AnyLink::Radio(Box::new(radio))
            }
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
