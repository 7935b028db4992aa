//! A link whose service follows a Mahimahi trace of delivery opportunities,
//! spent as `mm-link` spends them (Netravali et al., USENIX ATC 2015;
//! `src/frontend/link_queue.cc`: `next_delivery_time`,
//! `use_a_delivery_opportunity`, `rationalize`).
//!
//! - Opportunity *i* of loop *n* is at `n·P + tᵢ` ms from the link's start,
//!   *P* the trace's last value (the first value is not subtracted: a trace
//!   `0 … N` has N+1 opportunities every N ms, as in mm-link).
//! - Each opportunity is a budget of 1 504 bytes, spent on the packet in
//!   transit and then on the queue's next packets while it lasts: several
//!   small packets leave at one opportunity; a packet larger than what is
//!   left takes it, carries its remaining bytes to the next opportunities
//!   and leaves at the one that finishes it. An opportunity that finds no
//!   packet waiting is wasted, and so is the rest of one that runs out of
//!   packets.
//! - A packet costs its IP length plus 4 bytes, the TUN header mm-link
//!   reads with each packet, so a 1 500-byte IP packet takes exactly one
//!   opportunity.
//! - A packet can use only opportunities after the instant it arrived
//!   (mm-link calls `rationalize` before it enqueues an arrival). mm-link's
//!   clock is in whole milliseconds, so a packet arriving during ms *t*
//!   waits for an opportunity at *t*+1 or later; with integer-ms
//!   opportunities that is the same rule in squall's nanoseconds
//!   (⌊a⌋ < m ⇔ a < m). What differs: squall departs a packet at the
//!   opportunity's exact instant, mm-link when its event loop next wakes
//!   (`wait_time`), a fraction of a ms later.
//! - The trace starts at the link's start (the run's start; mm-link: when
//!   its `LinkQueue` is built at shell start-up, each direction on its own).
//!   It loops, unless `once` (mm-link's `--once`) is set: then no
//!   opportunity follows the last one, and the run ends there
//!   ([`DeliveryTrace::end`]).
//!
//! While nothing waits, the link asks for no wake-up: when a packet comes,
//! the next opportunity after it is found arithmetically (loop number and
//! a binary search within the loop), whatever the number of idle loops.

use std::sync::Arc;

use super::Recorder;
use super::any_link::LinkKind;
use super::link::{Link, LinkStats};
use crate::config::StageConfig;
use crate::event::{DropReason, Event, EventKind};
use crate::packet::Packet;
use crate::patch::StagePatch;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};
use crate::trace::{DeliveryTrace, OPPORTUNITY_BYTES, PACKET_OVERHEAD_BYTES};

const NANOS_PER_MS: u64 = 1_000_000;

/// The packet being sent and the bytes of it the opportunities have not
/// carried yet.
#[derive(Debug)]
struct InTransit {
    packet: Packet,
    left: u64,
    started: bool,
}

/// Which of the link's steps is due.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TraceTimer {
    /// The next opportunity of the trace.
    Opportunity,
    /// The opportunity being spent has bytes left for the packet just
    /// taken from the queue.
    Rest,
}

/// A trace-driven link (module documentation).
#[derive(Debug)]
pub(crate) struct TraceLink {
    /// The opportunities within one loop, ns from the loop's start.
    schedule: Arc<[u64]>,
    /// The loop's period, ns (the last opportunity's offset).
    period: u64,
    /// The first opportunity not yet used or passed: its loop and index.
    loop_number: u64,
    next: usize,
    /// The opportunity being spent, at its instant, and the bytes it has
    /// left: set while the queue still holds packets for it.
    open: Option<(Instant, u64)>,
    in_transit: Option<InTransit>,
    /// A blackout holds the link: no opportunity is used until it ends.
    blackout: bool,
    /// Played once (mm-link's `--once`): no loop after the first.
    once: bool,
    /// The next feed finds the first opportunity after its instant again
    /// (a blackout ended).
    resync: bool,
    recorder: Recorder,
    stats: LinkStats,
}

impl TraceLink {
    /// `trace` must have passed [`DeliveryTrace::validate`].
    pub(crate) fn new(trace: &DeliveryTrace, recorder: Recorder) -> Self {
        let schedule: Arc<[u64]> = trace.opportunities_ms.iter().map(|ms| ms * NANOS_PER_MS).collect();
        let period = *schedule.last().expect("a validated trace has an opportunity");
        TraceLink {
            schedule,
            period,
            loop_number: 0,
            next: 0,
            open: None,
            in_transit: None,
            blackout: false,
            once: trace.once,
            resync: false,
            recorder,
            stats: LinkStats::default(),
        }
    }

    /// The instant of the next opportunity not yet used.
    fn next_opportunity(&self) -> Instant {
        Instant::from_nanos(self.loop_number * self.period + self.schedule[self.next])
    }

    /// The opportunity after the next one: the trace loops after its last.
    fn advance(&mut self) {
        self.next += 1;
        if self.next == self.schedule.len() {
            self.next = 0;
            self.loop_number += 1;
        }
    }

    /// Makes the next opportunity the first one strictly after `now`.
    /// Loop *n* holds it, `n = ⌊now / P⌋`: its last opportunity, at
    /// `(n+1)·P`, is after `now`, and loop *n−1* ends at `n·P ≤ now`.
    fn skip_to_after(&mut self, now: Instant) {
        let t = now.as_nanos();
        self.loop_number = t / self.period;
        let within = t % self.period;
        self.next = self.schedule.partition_point(|&s| s <= within);
    }
}

/// A stage with `trace`.
impl LinkKind for TraceLink {
    fn choose(
        config: &StageConfig,
        recorder: &Recorder,
        _seed: u64,
        _rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> Option<Self> {
        Some(TraceLink::new(config.trace.as_ref()?, recorder.clone()))
    }
}

impl Link for TraceLink {
    type Timer = TraceTimer;

    fn next_timer(&self) -> Option<(Instant, TraceTimer)> {
        if self.blackout || self.in_transit.is_none() {
            return None;
        }
        if self.once && self.loop_number > 0 && self.open.is_none_or(|(_, left)| left == 0) {
            // The trace played once is used up: the packet waits for good.
            return None;
        }
        match self.open {
            Some((at, left)) if left > 0 => Some((at, TraceTimer::Rest)),
            _ => Some((self.next_opportunity(), TraceTimer::Opportunity)),
        }
    }

    /// Spends an opportunity (or the rest of the one being spent) on the
    /// packet in transit, as mm-link's `rationalize`: the packet leaves
    /// now if this finishes it, and what is left of the budget stays for
    /// the queue's next packet, if one waits.
    fn fire(
        &mut self,
        now: Instant,
        timer: TraceTimer,
        queue_empty: bool,
        log: &mut Vec<Event>,
        out: &mut Vec<(Instant, Packet)>,
    ) {
        let mut budget = match (timer, self.open) {
            (TraceTimer::Rest, Some((_, left))) => left,
            _ => {
                self.advance();
                OPPORTUNITY_BYTES
            }
        };
        let Some(tx) = self.in_transit.as_mut() else {
            self.open = None;
            return;
        };
        if !tx.started {
            tx.started = true;
            self.recorder.log(log, now, EventKind::TransmitStart { frame: 0 }, Some(&tx.packet));
        }
        let spent = budget.min(tx.left);
        tx.left -= spent;
        budget -= spent;
        if tx.left > 0 {
            self.open = None;
            return;
        }
        let tx = self.in_transit.take().expect("checked above");
        self.recorder.log(log, now, EventKind::TransmitEnd { frame: 0 }, Some(&tx.packet));
        self.recorder.log(log, now, EventKind::Deliver, Some(&tx.packet));
        self.stats.delivered += 1;
        out.push((now, tx.packet));
        // mm-link's loop dequeues the next packet into what is left, and
        // wastes the rest when the queue is empty.
        self.open = (!queue_empty).then_some((now, budget));
    }

    fn accepts(&self, _size: u32) -> bool {
        self.in_transit.is_none()
    }

    /// Takes the queue's head. Fed while an opportunity is being spent, it
    /// goes on with that opportunity; otherwise (it found the link idle)
    /// it waits for the first opportunity after `now`.
    fn push(&mut self, now: Instant, packet: Packet, _log: &mut Vec<Event>) {
        if self.open.is_none_or(|(at, _)| at != now) {
            self.open = None;
            self.skip_to_after(now);
        }
        let left = u64::from(packet.size) + PACKET_OVERHEAD_BYTES;
        self.in_transit = Some(InTransit { packet, left, started: false });
    }

    fn fed(&mut self, now: Instant, _queue_empty: bool, _log: &mut Vec<Event>) {
        if self.in_transit.is_none() || self.open.is_some_and(|(_, left)| left == 0) {
            self.open = None;
        }
        if self.resync && !self.blackout {
            self.resync = false;
            self.open = None;
            self.skip_to_after(now);
        }
    }

    fn wake(&mut self, _now: Instant) {}

    fn idle(&self) -> bool {
        self.in_transit.is_none()
    }

    /// The mean time between opportunities (RED's idle decay).
    fn typical_tx(&self) -> Duration {
        Duration::from_nanos(self.period / self.schedule.len() as u64)
    }

    fn occupancy(&self) -> u64 {
        u64::from(self.in_transit.is_some())
    }

    fn stats(&self) -> LinkStats {
        self.stats.clone()
    }

    fn set_recorder(&mut self, recorder: &Recorder) {
        self.recorder = recorder.clone();
    }

    /// A state cannot change the trace (`StagePatch::check` refuses it),
    /// and the keys it can change (the queue's) are the stage's.
    fn reconfigure(
        &mut self,
        _now: Instant,
        _config: &StageConfig,
        _patch: &StagePatch,
        _log: &mut Vec<Event>,
        _rng: &mut dyn FnMut(&str) -> StreamRng,
    ) -> bool {
        true
    }

    /// Opportunities during a blackout are wasted; after it, the packet in
    /// transit waits for the first one after the blackout's end.
    fn set_blackout(&mut self, on: bool) {
        self.blackout = on;
        self.open = None;
        if !on {
            self.resync = true;
        }
    }

    fn drop_waiting(
        &mut self,
        now: Instant,
        _queue_empty: bool,
        log: &mut Vec<Event>,
        _out: &mut Vec<(Instant, Packet)>,
    ) {
        if let Some(tx) = self.in_transit.take() {
            self.stats.dropped.add(DropReason::Blackout);
            self.recorder.log(log, now, EventKind::Drop(DropReason::Blackout), Some(&tx.packet));
        }
        self.open = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{PathConfig, StageConfig};
    use crate::event::Direction;
    use crate::packet::{FlowKey, Packet, PacketId, Protocol};
    use crate::path::Path;
    use crate::time::Instant;
    use crate::trace::DeliveryTrace;

    fn path(trace: &[u64]) -> Path {
        let mut stage = StageConfig::named("cell");
        stage.trace = Some(DeliveryTrace::from_millis(trace.to_vec()));
        Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![stage] }, 1).unwrap()
    }

    fn packet(id: u64, size: u32) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            src_port: 1,
            dst_port: 2,
        };
        Packet::new(PacketId(id), size, flow)
    }

    fn us(micros: u64) -> Instant {
        Instant::from_micros(micros)
    }

    /// Pushes `(time, IP size)` arrivals in order and runs the path until
    /// it is idle; returns each delivery's time in µs, in delivery order,
    /// and how many wake-ups the path asked for.
    fn run(p: &mut Path, arrivals: &[(Instant, u32)]) -> (Vec<u64>, usize) {
        let mut out = Vec::new();
        let mut wakeups = 0;
        let drain = |p: &mut Path, until: Option<Instant>, out: &mut Vec<u64>, wakeups: &mut usize| {
            while let Some(t) = p.next_wakeup().filter(|&t| until.is_none_or(|u| t < u)) {
                *wakeups += 1;
                while let Some(d) = p.poll(t) {
                    out.push(d.at.as_nanos() / 1000);
                }
            }
        };
        for (i, &(at, size)) in arrivals.iter().enumerate() {
            drain(p, Some(at), &mut out, &mut wakeups);
            p.push(at, packet(i as u64, size));
        }
        drain(p, None, &mut out, &mut wakeups);
        (out, wakeups)
    }

    const MS: u64 = 1000;

    #[test]
    fn trace_1_sends_one_1500_byte_packet_per_ms() {
        // 1 500 B of IP + 4 B of TUN header = one 1 504-byte opportunity.
        let (out, _) = run(&mut path(&[1]), &[(Instant::ZERO, 1500); 5]);
        assert_eq!(out, [MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]);
    }

    #[test]
    fn rattan_1_1_2_gives_three_opportunities_every_2_ms() {
        // Loop 0: 1, 1, 2 ms; loop 1 (base 2 ms): 3, 3, 4 ms.
        let (out, _) = run(&mut path(&[1, 1, 2]), &[(Instant::ZERO, 1500); 6]);
        assert_eq!(out, [MS, MS, 2 * MS, 3 * MS, 3 * MS, 4 * MS]);
    }

    #[test]
    fn a_3000_byte_packet_takes_two_opportunities_and_leaves_the_rest_to_the_next() {
        // 3 004 B: 1 504 at 1 ms, 1 500 at 2 ms, which keeps 4 B for the
        // next packet (1 504 B): 4 at 2 ms, 1 500 at 3 ms.
        let (out, _) = run(&mut path(&[1]), &[(Instant::ZERO, 3000), (Instant::ZERO, 1500)]);
        assert_eq!(out, [2 * MS, 3 * MS]);
    }

    #[test]
    fn one_opportunity_sends_14_small_packets_and_part_of_a_15th() {
        // 100 B of IP cost 104: 14 × 104 = 1 456 B at 1 ms, and 48 of the
        // 15th's 104; its other 56 go at 2 ms with the 16th (104 B).
        let (out, _) = run(&mut path(&[1]), &[(Instant::ZERO, 100); 16]);
        let mut expected = vec![MS; 14];
        expected.extend([2 * MS, 2 * MS]);
        assert_eq!(out, expected);
    }

    #[test]
    fn an_arrival_uses_only_opportunities_after_it_and_an_empty_queue_wastes_the_rest() {
        // At 0.5 ms: the 1 ms opportunity. At exactly 1 ms (the opportunity
        // has passed, as in mm-link where `rationalize` runs before the
        // enqueue): the 2 ms one. The 1 ms opportunity's unused 1 400 B are
        // wasted, not given to the packet that comes at 1 ms.
        let (out, _) = run(&mut path(&[1]), &[(us(500), 100), (us(1000), 100)]);
        assert_eq!(out, [MS, 2 * MS]);
    }

    #[test]
    fn the_trace_loops_with_the_period_of_its_last_value() {
        // `3 5`: loop 0 at 3, 5 ms; loop 1 at 8, 10 ms (the first value is
        // not subtracted from the period).
        let (out, _) = run(&mut path(&[3, 5]), &[(Instant::ZERO, 1500); 4]);
        assert_eq!(out, [3 * MS, 5 * MS, 8 * MS, 10 * MS]);
        // `0 5`: 0 of loop k+1 falls on 5 of loop k: two opportunities at
        // every multiple of 5 ms after the start.
        let (out, _) = run(&mut path(&[0, 5]), &[(us(100), 1500); 4]);
        assert_eq!(out, [5 * MS, 5 * MS, 10 * MS, 10 * MS]);
    }

    #[test]
    fn idle_loops_are_skipped_without_wake_ups() {
        // `2 3` (period 3 ms). A packet at 1 ms leaves at 2 ms; the link
        // then asks for nothing. The next comes a million loops later, at
        // 3 000 002.5 ms: loop 1 000 000's opportunities are at 3 000 002
        // and 3 000 003 ms, so it leaves at 3 000 003 ms.
        let mut p = path(&[2, 3]);
        let late = us(3_000_002_500);
        let (out, wakeups) = run(&mut p, &[(us(MS), 1500), (late, 1500)]);
        assert_eq!(out, [2 * MS, 3_000_003 * MS]);
        assert_eq!(wakeups, 2, "one wake-up per departure, none while idle");
        assert_eq!(p.next_wakeup(), None);
    }

    #[test]
    fn a_trace_played_once_sends_nothing_after_its_last_opportunity() {
        // `1 1 2` once: three opportunities, then none; looped, the next
        // loop's 3 ms serves the fourth packet.
        let mut once = path(&[1, 1, 2]);
        let mut stage = StageConfig::named("cell");
        stage.trace = Some(DeliveryTrace { once: true, ..DeliveryTrace::from_millis(vec![1, 1, 2]) });
        let mut p = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![stage] }, 1).unwrap();
        let (out, _) = run(&mut p, &[(Instant::ZERO, 1500); 4]);
        assert_eq!(out, [MS, MS, 2 * MS]);
        assert_eq!(p.next_wakeup(), None, "the fourth packet waits for good");
        assert_eq!(p.series_end(), Some(Instant::from_millis(2)), "the run ends at the last opportunity");
        assert!(p.may_end_run());
        let (looped, _) = run(&mut once, &[(Instant::ZERO, 1500); 4]);
        assert_eq!(looped, [MS, MS, 2 * MS, 3 * MS]);
        assert_eq!(once.series_end(), None);
        // A packet arriving after the end finds no opportunity either.
        let (late, _) = run(&mut p, &[(Instant::from_millis(7), 100)]);
        assert!(late.is_empty());
    }
}
