//! A path: one direction's ordered list of stages, behind the driver
//! contract that both engines use (docs/design.md):
//!
//! - [`Path::push`]`(now, packet)`: a packet enters the path;
//! - [`Path::poll`]`(now)`: the next packet delivered at or before `now`;
//! - [`Path::next_wakeup`]`()`: the earliest time the path must be called;
//! - [`Path::apply`]`(now, change)`: a state change.
//!
//! Calls must come with non-decreasing `now`. Early or spurious calls are
//! harmless: `poll` before anything is due returns `None`. Given the same
//! seed and the same calls, a path's deliveries and events are identical.

use std::collections::VecDeque;

use crate::config::{PathConfig, StageConfig};
use crate::error::ConfigError;
use crate::event::{Direction, DropReason, Event, Recording};
use crate::packet::{Packet, PacketId};
use crate::patch::Change;
use crate::stage::{Stage, StageStats};
use crate::time::Instant;

/// A packet leaving the path, with the time the model delivered it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub at: Instant,
    pub packet: Packet,
}

/// What the path's last stage delivered leaves the path. A loop of
/// `push_back`, not `extend`: `VecDeque`'s `extend` from a mapped `Drain`
/// stayed out of line and copied each packet twice (4 % of `squall bench
/// tcp`'s samples, perf), for what is mostly one packet.
fn leave(out: &mut VecDeque<Delivery>, last: &mut Stage) {
    for (at, packet) in last.out.drain(..) {
        out.push_back(Delivery { at, packet });
    }
}

/// What happened to the packets that entered a path.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PathStats {
    pub entered: u64,
    pub delivered: u64,
    pub dropped: u64,
    /// Inside the path now (queued, on a link, in a buffer, or delivered
    /// but not yet polled).
    pub in_flight: u64,
}

impl PathStats {
    /// Every packet that entered is delivered, dropped with a reason, or
    /// still inside.
    pub fn conserved(&self) -> bool {
        self.entered == self.delivered + self.dropped + self.in_flight
    }
}

#[derive(Debug)]
pub struct Path {
    direction: Direction,
    stages: Vec<Stage>,
    out: VecDeque<Delivery>,
    events: Vec<Event>,
    /// Packets moving between stages within one advance.
    hand_over: Vec<(Instant, Packet)>,
    now: Instant,
    entered: u64,
    polled: u64,
    /// A stage announces a flow-control window (seed 000 §4.2): the
    /// stages then move together, one instant at a time.
    flow_controlled: bool,
    /// A stage copies packets (`duplicate`), now or since a state: only
    /// then has [`Path::take_copies`] anything to look for (it runs for
    /// every delivery and drop).
    copying: bool,
}

impl Path {
    /// Builds the path; `seed` is the replication seed, from which every
    /// component's stream is derived by name.
    pub fn new(config: &PathConfig, seed: u64) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut stages = Vec::with_capacity(config.stages.len());
        for s in &config.stages {
            let queue = s.queue.kind(&format!("{}.queue", s.name))?;
            stages.push(Stage::new(s.clone(), &queue, config.direction, seed));
        }
        let last = stages.len() - 1;
        for (i, s) in stages.iter_mut().enumerate() {
            s.set_has_next(i < last);
        }
        let mut path = Path {
            direction: config.direction,
            stages,
            out: VecDeque::new(),
            events: Vec::new(),
            hand_over: Vec::new(),
            now: Instant::ZERO,
            entered: 0,
            polled: 0,
            flow_controlled: false,
            copying: false,
        };
        path.copying = path.stages.iter().any(Stage::copies_packets);
        path.refresh_windows(Instant::ZERO);
        Ok(path)
    }

    /// Gives each stage before a flow-controlled one the room left in that
    /// stage's window at `now`: its window minus the packets the stage before
    /// has started sending and those waiting in its queue. A stage with room
    /// tries to send at `now` (it may have been held for want of it).
    fn refresh_windows(&mut self, now: Instant) {
        self.flow_controlled = self.stages.iter().skip(1).any(|s| s.window().is_some());
        if !self.flow_controlled {
            return;
        }
        for i in 1..self.stages.len() {
            let Some(window) = self.stages[i].window() else { continue };
            let used = self.stages[i - 1].sending() + self.stages[i].queue_len();
            let room = u64::from(window).saturating_sub(used) as u32;
            self.stages[i - 1].set_credit(now, Some(room), &mut self.events);
        }
    }

    /// [`Path::advance`] with flow control: a stage's room depends on the
    /// stage after it, so every stage handles each instant before any moves
    /// past it, and the windows are brought up to date after each instant.
    fn advance_in_step(&mut self, now: Instant) {
        let now = now.max(self.now);
        self.now = now;
        self.refresh_windows(now);
        while let Some(t) = self.stages.iter().filter_map(Stage::next_wakeup).min().filter(|&t| t <= now) {
            self.step(t);
            self.refresh_windows(t);
        }
        self.step(now);
    }

    /// Every stage, in order, handles what is due at or before `t`; a
    /// packet a stage delivers at `t` enters the next one at `t`.
    fn step(&mut self, t: Instant) {
        let last = self.stages.len() - 1;
        for (i, stage) in self.stages.iter_mut().enumerate() {
            let mut incoming = std::mem::take(&mut self.hand_over);
            for (at, p) in incoming.drain(..) {
                stage.push(at, p, &mut self.events);
            }
            stage.run_until(t, &mut self.events);
            self.hand_over = incoming;
            if i == last {
                leave(&mut self.out, stage);
            } else {
                self.hand_over.append(&mut stage.out);
            }
        }
    }

    pub fn direction(&self) -> Direction {
        self.direction
    }

    pub fn stage_names(&self) -> impl Iterator<Item = &str> {
        self.stages.iter().map(|s| s.name())
    }

    /// The configuration in force of stage `name` (the scenario's, with
    /// the changes applied so far), if the path has that stage.
    pub fn stage_config(&self, name: &str) -> Option<&StageConfig> {
        self.stages.iter().find(|s| s.name() == name).map(|s| s.config())
    }

    /// Which events to keep (default: all). Counters are kept either way.
    pub fn set_recording(&mut self, recording: Recording) {
        for s in &mut self.stages {
            s.set_recording(recording);
        }
    }

    /// Samples stage `stage`'s queue classes at every change from now on
    /// (for output vectors; [`crate::ClassSample`]); whether the path has
    /// that stage.
    pub fn record_classes(&mut self, stage: &str) -> bool {
        let Some(s) = self.stages.iter_mut().find(|s| s.name() == stage) else { return false };
        s.record_classes();
        true
    }

    /// Appends the class samples taken since the last call to `out`: in
    /// time order per stage (stages are advanced one after the other).
    pub fn drain_class_samples_into(&mut self, out: &mut Vec<crate::ClassSample>) {
        for s in &mut self.stages {
            s.drain_class_samples(out);
        }
    }

    /// Brings every stage up to `now`, stage by stage: a packet a stage
    /// delivers at `t` enters the next one at `t`.
    fn advance(&mut self, now: Instant) {
        if self.flow_controlled {
            return self.advance_in_step(now);
        }
        let now = now.max(self.now);
        self.now = now;
        let last = self.stages.len() - 1;
        for i in 0..self.stages.len() {
            let stage = &mut self.stages[i];
            // A stage with nothing arriving, nothing due and nothing delivered
            // has nothing to do.
            if self.hand_over.is_empty() && stage.out.is_empty() && stage.next_wakeup().is_none_or(|t| t > now) {
                continue;
            }
            let mut incoming = std::mem::take(&mut self.hand_over);
            for (t, p) in incoming.drain(..) {
                stage.push(t, p, &mut self.events);
            }
            stage.run_until(now, &mut self.events);
            self.hand_over = incoming;
            if stage.out.is_empty() {
                continue;
            }
            if i == last {
                leave(&mut self.out, stage);
            } else {
                self.hand_over.append(&mut stage.out);
            }
        }
    }

    /// A packet enters the path at `now`.
    pub fn push(&mut self, now: Instant, packet: Packet) {
        self.advance(now);
        self.entered += 1;
        let events = &mut self.events;
        self.stages[0].push(self.now, packet, events);
        if self.stages.len() > 1 {
            self.advance(self.now);
        } else {
            // The stage has handled everything due by now (its `push` ran
            // it until now): what it delivered leaves the path.
            leave(&mut self.out, &mut self.stages[0]);
        }
    }

    /// The next packet delivered at or before `now`, in delivery order.
    pub fn poll(&mut self, now: Instant) -> Option<Delivery> {
        if self.out.is_empty() {
            self.advance(now);
        }
        let d = self.out.pop_front()?;
        self.polled += 1;
        Some(d)
    }

    /// The earliest time the path needs a call; `None` when it is idle.
    pub fn next_wakeup(&self) -> Option<Instant> {
        if let Some(d) = self.out.front() {
            return Some(d.at);
        }
        self.stages.iter().filter_map(|s| s.next_wakeup()).min()
    }

    /// The instant a stage's series with `at_end = "end"` or a trace
    /// played once ends the run (the earliest), once known: from the start for `start = "run"`,
    /// from the stage's first packet for `start = "first_packet"`. The
    /// engines read it after each call and end the run there
    /// ([`crate::series`]).
    pub fn series_end(&self) -> Option<Instant> {
        self.stages.iter().filter_map(|s| s.series_end()).min()
    }

    /// Whether a stage has a series with `at_end = "end"` or a trace
    /// played once (the engines then ask [`Path::series_end`]).
    pub fn may_end_run(&self) -> bool {
        self.stages.iter().any(|s| {
            s.config().trace.as_ref().is_some_and(|t| t.once)
                || s.config().series.iter().any(|(_, p)| p.at_end == crate::series::AtEnd::End)
        })
    }

    /// Applies `change` at `now` if it names one of this path's stages;
    /// says whether it did. Everything due at `now` happens first, except
    /// that a change of radio parameters decides the radio slot starting
    /// at `now` (the slot is held until the change is in; see
    /// [`crate::radio::RadioLink::apply`]).
    pub fn apply(&mut self, now: Instant, change: &Change) -> bool {
        let target = self.stages.iter().position(|s| s.name() == change.stage());
        if let Some(i) = target {
            self.stages[i].before_change(now.max(self.now), change);
        }
        self.advance(now);
        let Some(i) = target else {
            return false;
        };
        self.stages[i].apply(self.now, change, &mut self.events);
        self.copying |= self.stages[i].copies_packets();
        self.refresh_windows(self.now);
        self.advance(self.now);
        true
    }

    /// Appends to `out` the ids of the packets the stages copied
    /// (`duplicate`) since the last call: each copy has its packet's id
    /// and is delivered or dropped on its own.
    #[inline]
    pub fn take_copies(&mut self, out: &mut Vec<PacketId>) {
        if !self.copying {
            return;
        }
        for s in &mut self.stages {
            out.append(&mut s.copies);
        }
    }

    /// The events recorded since the last call, in time order.
    pub fn drain_events(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        self.drain_events_into(&mut events);
        events
    }

    /// Appends the events recorded since the last call to `out`, in time
    /// order (stages are advanced one after the other, so a batch is sorted
    /// here; the sort is stable, keeping each stage's order at equal times).
    pub fn drain_events_into(&mut self, out: &mut Vec<Event>) {
        let start = out.len();
        out.append(&mut self.events);
        out[start..].sort_by_key(|e| e.time);
    }

    pub fn stats(&self) -> PathStats {
        let delivered = self.polled;
        let dropped = self.stages.iter().map(|s| s.stats(self.now).dropped_total()).sum();
        let in_flight = self.stages.iter().map(|s| s.occupancy()).sum::<u64>()
            + self.out.len() as u64
            + self.hand_over.iter().filter(|(_, p)| !p.background).count() as u64
            + self.stages.iter().map(|s| s.out.iter().filter(|(_, p)| !p.background).count() as u64).sum::<u64>();
        // A stage's copies (`duplicate`) enter the path too.
        let entered = self.entered + self.stages.iter().map(Stage::duplicated).sum::<u64>();
        PathStats { entered, delivered, dropped, in_flight }
    }

    /// Each stage's counters, with mean queue lengths over [0, now].
    pub fn stage_stats(&self, now: Instant) -> Vec<StageStats> {
        self.stages.iter().map(|s| s.stats(now)).collect()
    }

    /// Drops by reason over all stages.
    pub fn drops_by_reason(&self) -> Vec<(DropReason, u64)> {
        DropReason::ALL
            .iter()
            .map(|&r| (r, self.stages.iter().map(|s| s.stats(self.now).dropped.get(r)).sum()))
            .collect()
    }
}

/// Series replayed through a whole path ([`crate::series`]): delays and
/// rates at a packet's instant, the ends, the start at the first packet.
#[cfg(test)]
mod series_through_a_path {
    use crate::config::{PathConfig, StageConfig};
    use crate::event::Direction;
    use crate::packet::{FlowKey, Packet, PacketId, Protocol};
    use crate::path::Path;
    use crate::series::{AtEnd, Between, ParameterSeries, SeriesStart, StageSeries};
    use crate::time::Instant;

    const S: u64 = 1_000_000_000;

    fn series(times_ns: &[u64], values: &[f64], between: Between, at_end: AtEnd) -> ParameterSeries {
        ParameterSeries {
            file: None,
            between,
            at_end,
            start: SeriesStart::Run,
            times_ns: times_ns.to_vec(),
            values: values.to_vec(),
        }
    }

    const MS: u64 = 1_000_000;

    fn path(set: impl FnOnce(&mut StageSeries)) -> Path {
        let mut stage = StageConfig::named("s");
        set(&mut stage.series);
        Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![stage] }, 1).unwrap()
    }

    fn packet(id: u64) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            src_port: 1,
            dst_port: 2,
        };
        Packet::new(PacketId(id), 1500, flow)
    }

    /// Pushes one 1 500-byte packet at `at` ns and runs the path until
    /// it is idle: the delivery time in ns and the wake-ups asked for.
    fn one_packet(p: &mut Path, at: u64) -> (u64, usize) {
        p.push(Instant::from_nanos(at), packet(0));
        let mut wakeups = 0;
        while let Some(t) = p.next_wakeup() {
            wakeups += 1;
            if let Some(d) = p.poll(t) {
                return (d.at.as_nanos(), wakeups);
            }
            assert!(wakeups < 1000, "the path keeps waking without delivering");
        }
        panic!("the packet was not delivered");
    }

    fn delay(between: Between, at_end: AtEnd) -> impl FnOnce(&mut StageSeries) {
        move |s| s.delay = Some(Box::new(series(&[0, S, 2 * S], &[10e6, 50e6, 0.0], between, at_end)))
    }

    /// One 1 500-byte packet every ms for 2 s through a stage whose series
    /// `set` steps at 1 s: (sent at ns, delivered at ns, corrupted) of each
    /// packet delivered, and the number sent.
    fn every_ms(set: impl FnOnce(&mut StageConfig)) -> (Vec<(u64, u64, bool)>, u64) {
        let mut stage = StageConfig::named("s");
        set(&mut stage);
        let mut p = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![stage] }, 7).unwrap();
        let mut sent_at = std::collections::HashMap::new();
        let mut out = Vec::new();
        for k in 0..2000u64 {
            let now = Instant::from_nanos(k * MS);
            while p.next_wakeup().is_some_and(|t| t <= now) {
                let t = p.next_wakeup().unwrap();
                while let Some(d) = p.poll(t) {
                    out.push((sent_at[&d.packet.id.0], d.at.as_nanos(), d.packet.corrupted));
                }
            }
            sent_at.insert(k, k * MS);
            p.push(now, packet(k));
        }
        while let Some(t) = p.next_wakeup() {
            while let Some(d) = p.poll(t) {
                out.push((sent_at[&d.packet.id.0], d.at.as_nanos(), d.packet.corrupted));
            }
        }
        (out, 2000)
    }

    /// Jitter, loss and corruption series in the model (so in both
    /// engines; tests/trace_emu.rs sees them through the emulator): jitter
    /// 0 then 10 ms (uniform in [0, 10 ms]: mean 5 ms, deviation 2.887
    /// ms), loss and corruption 0 then 30 % (binomial), each stepping at
    /// 1 s; with `reorder` each packet keeps its own delay. Before 1 s
    /// every packet is delivered on time and whole; after, the mean
    /// within 3.5 standard errors (0.32 ms over 1 000), the fractions
    /// within 3.5 binomial ones (0.051 of 1 000).
    #[test]
    fn jitter_loss_and_corruption_series_act_from_their_step() {
        let step = |v: f64| Some(Box::new(series(&[0, S], &[0.0, v], Between::Step, AtEnd::Hold)));
        let (out, _) = every_ms(|st| {
            st.reorder = true;
            st.series.jitter = step(10e6);
        });
        assert_eq!(out.len(), 2000);
        assert!(out.iter().filter(|o| o.0 < S).all(|o| o.1 == o.0), "a delay before the step");
        let late: Vec<f64> = out.iter().filter(|o| o.0 >= S).map(|o| (o.1 - o.0) as f64 / 1e6).collect();
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!(
            late.iter().all(|&d| (0.0..=10.0).contains(&d)) && (mean - 5.0).abs() <= 3.5 * 2.887 / 1000f64.sqrt(),
            "{mean}"
        );
        let within = |k: usize| (k as f64 / 1000.0 - 0.3).abs() <= 3.5 * (0.3f64 * 0.7 / 1000.0).sqrt();
        let (out, sent) = every_ms(|st| st.series.loss = step(0.3));
        let lost_after = 1000 - out.iter().filter(|o| o.0 >= S).count();
        assert_eq!(out.iter().filter(|o| o.0 < S).count(), 1000, "a packet lost before the step");
        assert!(within(lost_after), "{lost_after} of 1000 lost after the step ({sent} sent)");
        let (out, _) = every_ms(|st| {
            st.error_mode = crate::config::ErrorMode::Corrupt;
            st.series.corrupt = step(0.3);
        });
        let corrupted = out.iter().filter(|o| o.0 >= S && o.2).count();
        println!("jitter mean {mean:.3} ms after the step; lost {lost_after}, corrupted {corrupted} of 1000");
        assert_eq!(out.len(), 2000);
        assert!(out.iter().filter(|o| o.0 < S).all(|o| !o.2), "a packet corrupted before the step");
        assert!(within(corrupted), "{corrupted} of 1000 corrupted after the step");
    }

    #[test]
    fn a_packet_gets_the_linear_delay_at_its_instant() {
        // 10 ms at 0 s to 50 ms at 1 s: 30 ms at 0.5 s, 20 ms at 0.25 s.
        assert_eq!(one_packet(&mut path(delay(Between::Linear, AtEnd::Hold)), S / 2).0, S / 2 + 30 * MS);
        assert_eq!(one_packet(&mut path(delay(Between::Linear, AtEnd::Hold)), S / 4).0, S / 4 + 20 * MS);
        // Stepwise: 10 ms until 1 s.
        assert_eq!(one_packet(&mut path(delay(Between::Step, AtEnd::Hold)), S / 2).0, S / 2 + 10 * MS);
    }

    #[test]
    fn loop_starts_again_hold_keeps_the_last_value_end_ends_the_run() {
        // At 2.5 s: the loop is at 0.5 s (10 ms); hold keeps the last point's 0 ms.
        let at = 2 * S + S / 2;
        assert_eq!(one_packet(&mut path(delay(Between::Step, AtEnd::Loop)), at).0, at + 10 * MS);
        assert_eq!(one_packet(&mut path(delay(Between::Step, AtEnd::Hold)), at).0, at);
        let held = path(delay(Between::Step, AtEnd::Hold));
        assert_eq!((held.series_end(), held.may_end_run()), (None, false));
        let ended = path(delay(Between::Step, AtEnd::End));
        assert_eq!((ended.series_end(), ended.may_end_run()), (Some(Instant::from_nanos(2 * S)), true));
    }

    /// 0 bit/s for the first 100 ms, then 12 Mbit/s (1 ms per packet).
    fn late_rate(start: SeriesStart) -> impl FnOnce(&mut StageSeries) {
        move |s| {
            let mut r = series(&[0, 100 * MS], &[0.0, 12e6], Between::Step, AtEnd::Hold);
            r.start = start;
            s.rate = Some(Box::new(r));
        }
    }

    #[test]
    fn a_first_packet_series_starts_when_the_first_packet_comes() {
        // From the run's start, the 0 rate is over by 1 s: sent in 1 ms.
        assert_eq!(one_packet(&mut path(late_rate(SeriesStart::Run)), S).0, S + MS);
        // From the first packet (at 1 s): held 100 ms, then 1 ms; one
        // wake-up at the point where the rate rises, one for the delivery.
        let mut p = path(late_rate(SeriesStart::FirstPacket));
        assert_eq!(p.next_wakeup(), None, "an idle stage asks for no wake-up");
        assert_eq!(one_packet(&mut p, S), (S + 101 * MS, 2));
    }

    #[test]
    fn an_end_from_the_first_packet_is_known_once_it_came() {
        let mut p = path(|s| {
            let mut d = series(&[0, S], &[0.0, 0.0], Between::Step, AtEnd::End);
            d.start = SeriesStart::FirstPacket;
            s.delay = Some(Box::new(d));
        });
        assert_eq!(p.series_end(), None);
        one_packet(&mut p, 3 * S);
        assert_eq!(p.series_end(), Some(Instant::from_nanos(4 * S)));
    }

    #[test]
    fn an_idle_stage_takes_no_wake_up_per_point() {
        // A point every ms, looping: a packet at 10 s still takes one
        // wake-up (its delivery), not 10 000.
        let times: Vec<u64> = (0..=100).map(|i| i * MS).collect();
        let values: Vec<f64> = (0..=100).map(|i| 1e6 + i as f64 * 1e5).collect();
        let mut p = path(|s| s.rate = Some(Box::new(series(&times, &values, Between::Step, AtEnd::Loop))));
        let (_, wakeups) = one_packet(&mut p, 10 * S);
        assert_eq!(wakeups, 1);
    }
}
