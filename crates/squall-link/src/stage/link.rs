//! The seam between a stage's queue discipline and its link: the [`Link`]
//! trait and what a link counts. The link kinds implement it in their own
//! files (Seawind's channel, seed 000 §4.3, [`super::channel`]; a WIPEMU
//! radio link, seed 002, [`crate::radio`]; a Mahimahi trace of delivery
//! opportunities, [`super::trace`]); `AnyLink` dispatches to them (declared by
//! [`super::any_link::links!`] from the list of kinds in `stage/mod.rs`).

use super::{DropCounts, Recorder};
use crate::config::StageConfig;
use crate::event::Event;
use crate::packet::Packet;
use crate::patch::{Change, StagePatch};
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
/// one impl of this trait and of [`super::any_link::LinkKind`] and one
/// line in the list of kinds (`stage/mod.rs`). The methods with
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
