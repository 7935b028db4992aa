//! A stage: a queue discipline in front of a link (docs/design.md, "A
//! stage"). The queue discipline ([`qdisc`]) decides which packet goes
//! next and which are dropped; the link ([`link`]) is Seawind's channel
//! (seed 000 §4.3, Figure 3: allocation, fragmentation, send buffer,
//! transmission, errors and ARQ, propagation, receive buffer), a WIPEMU
//! radio link (seed 002) or a Mahimahi trace of delivery opportunities.
//!
//! The stage is driven by its path: `run_until(now)` handles its timers in
//! time order and `push(now, packet)` hands it a packet. It reads no clock.

pub(crate) mod any_link;
mod background;
mod channel;
mod class_log;
mod errors;
pub(crate) mod link;
mod netem;
pub(crate) mod qdisc;
mod trace;
mod vacation;

// Every link kind, once (`any_link::links!`): the default kind first, then
// the kinds a key of the stage chooses, tried in this order. A new kind:
// its `mod` above and a line here. `#[inline]`: see
// `any_link::next_timer_out_of_line`.
any_link::links! {
    default Channel(channel::Channel),
    #[inline] Radio(crate::radio::RadioLink),
    Trace(trace::TraceLink),
}

use std::sync::Arc;

use crate::config::{BlackoutMode, StageConfig};
use crate::event::{Direction, DropReason, Event, EventKind, Recording};
use crate::packet::{FlowKey, Packet, PacketId};
use crate::patch::Change;
use crate::queue::QueueKind;
use crate::rng::{StreamRng, stream};
use crate::series::{SeriesKey, SeriesPlayer};
use crate::time::{Duration, Instant};
use background::Background;
use class_log::ClassLog;
pub use class_log::{ClassCounts, ClassSample};
use link::Link;
use qdisc::{AnyQueueDisc, Dequeued, Dropped, Enqueued, LinkHint, QueueDisc};
use vacation::Vacations;

/// Drops counted per [`DropReason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounts([u64; DropReason::ALL.len()]);

impl DropCounts {
    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason.index()]
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// (reason, count) for every reason, in [`DropReason::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&r| (r, self.get(r)))
    }
    pub(crate) fn add(&mut self, reason: DropReason) {
        self.0[reason.index()] += 1;
    }
    /// Counts `n` more drops of `reason`.
    pub fn add_n(&mut self, reason: DropReason, n: u64) {
        self.0[reason.index()] += n;
    }
    fn merge(&mut self, other: &DropCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

impl serde::Serialize for DropCounts {
    /// As a map from reason to count, reasons with no drops left out.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter().filter(|(_, n)| *n > 0).map(|(r, n)| (r.as_str(), n)))
    }
}

/// What a stage counted.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StageStats {
    pub name: String,
    pub direction: Option<Direction>,
    pub entered: u64,
    pub delivered: u64,
    pub dropped: DropCounts,
    pub ecn_marked: u64,
    pub frame_errors: u64,
    pub retransmissions: u64,
    pub corrupted: u64,
    /// Copies made of entering packets (`duplicate`), not in `entered`.
    #[serde(skip_serializing_if = "is_zero")]
    pub duplicated: u64,
    /// Time-averaged number of packets waiting in the queue discipline
    /// (background packets included: they take queue space).
    pub mean_queue_len: f64,
    pub max_queue_len: usize,
    /// Background (virtual) packets, counted apart from the real ones
    /// above.
    pub background: BackgroundStats,
    /// Per class, in class order, when the queue has classes (real and
    /// background packets together: both take the class's share).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassStats>,
}

/// What one class of a stage's queue counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassStats {
    pub name: String,
    /// Packets the class accepted.
    pub enqueued: u64,
    /// Packets it handed to the link, and their bytes.
    pub sent: u64,
    pub sent_bytes: u64,
    /// Drops in the class (tail or head drop, AQM, sojourn limit).
    pub dropped: u64,
    /// Packets waiting in the class now (the live view's queue length
    /// per class; not in summary.json, which is written at the end).
    #[serde(skip)]
    pub queued: usize,
    /// Their bytes (likewise not in summary.json).
    #[serde(skip)]
    pub queued_bytes: u64,
    /// `dropped` by reason (likewise not in summary.json).
    #[serde(skip)]
    pub drops: DropCounts,
}

impl ClassStats {
    pub(crate) fn count_drops(&mut self, drops: &[qdisc::Dropped]) {
        self.dropped += drops.len() as u64;
        for d in drops {
            self.drops.add(d.reason);
        }
    }
}

/// What became of a stage's background (virtual) packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackgroundStats {
    pub generated: u64,
    /// Arrived from the stage before over the BGL channel (seed 000 §5.1).
    #[serde(skip_serializing_if = "is_zero")]
    pub received: u64,
    /// Sent over the link (then discarded).
    pub served: u64,
    /// Sent over the link and passed on to the next stage.
    #[serde(skip_serializing_if = "is_zero")]
    pub forwarded: u64,
    pub dropped: u64,
    /// Frames of background packets hit by errors, and their ARQ
    /// retransmissions (the stage's `frame_errors` and `retransmissions`
    /// count real packets only).
    #[serde(skip_serializing_if = "is_zero")]
    pub frame_errors: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub retransmissions: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl StageStats {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.total()
    }
}

/// Writes a stage's events, with its name and direction, if its
/// [`Recording`] keeps them.
#[derive(Clone, Debug)]
pub(crate) struct Recorder {
    pub stage: Arc<str>,
    pub direction: Direction,
    pub recording: Recording,
}

impl Recorder {
    /// Records `kind` ([`Recorder::log_tag`]). Inline, and the packet's tag
    /// taken only for an event the recording keeps: a stage logs several
    /// events per packet, and most runs keep only the drops.
    #[inline]
    pub(crate) fn log(&self, log: &mut Vec<Event>, now: Instant, kind: EventKind, packet: Option<&Packet>) {
        if self.recording.keeps(&kind) {
            self.push(log, now, kind, packet.map(PacketTag::of));
        }
    }

    /// Records `kind`; nothing for background (virtual) packets.
    #[inline]
    pub(crate) fn log_tag(&self, log: &mut Vec<Event>, now: Instant, kind: EventKind, packet: Option<PacketTag>) {
        if self.recording.keeps(&kind) {
            self.push(log, now, kind, packet);
        }
    }

    /// Appends an event the recording keeps.
    fn push(&self, log: &mut Vec<Event>, now: Instant, kind: EventKind, packet: Option<PacketTag>) {
        if !packet.is_some_and(|p| p.background) {
            log.push(Event {
                time: now,
                stage: self.stage.clone(),
                direction: self.direction,
                kind,
                packet: packet.map(|p| p.id),
                flow: packet.map(|p| p.flow),
                size: packet.map_or(0, |p| p.size),
            });
        }
    }
}

/// What an event says about a packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PacketTag {
    pub id: PacketId,
    pub flow: FlowKey,
    pub size: u32,
    pub background: bool,
}

impl PacketTag {
    pub(crate) fn of(p: &Packet) -> Self {
        PacketTag { id: p.id, flow: p.flow, size: p.size, background: p.background }
    }
}

/// The time integral of the number of waiting packets, for the mean.
#[derive(Debug, Default)]
struct QueueLength {
    /// Packet·ns up to `last_change`.
    area: u128,
    last_change: Instant,
}

impl QueueLength {
    /// The queue held `len` packets since the last call; now is `now`.
    fn advance(&mut self, now: Instant, len: usize) {
        let dt = now.saturating_since(self.last_change).as_nanos() as u128;
        self.area += dt * len as u128;
        self.last_change = self.last_change.max(now);
    }

    /// Mean number of waiting packets over [0, now], `len` waiting now.
    fn mean(&self, now: Instant, len: usize) -> f64 {
        let dt = now.saturating_since(self.last_change).as_nanos() as u128;
        let area = self.area + dt * len as u128;
        if now.as_nanos() == 0 { 0.0 } else { area as f64 / now.as_nanos() as f64 }
    }
}

/// What the queue discipline side counted.
#[derive(Debug, Default)]
struct QueueStats {
    entered: u64,
    background_generated: u64,
    /// Forwarded background packets from the stage before.
    background_received: u64,
    background_dropped: u64,
    dropped: DropCounts,
    ecn_marked: u64,
    max_len: usize,
}

#[derive(Debug)]
pub(crate) struct Stage {
    recorder: Recorder,
    seed: u64,
    config: StageConfig,
    qdisc: AnyQueueDisc,
    link: AnyLink,
    /// Virtual traffic generators, if the stage has any.
    background: Option<Background>,
    /// netem's `duplicate`, if the stage copies packets.
    duplicator: Option<Box<netem::Duplicator>>,
    duplicated: u64,
    /// Ids of the packets copied since the path last took them.
    pub(crate) copies: Vec<PacketId>,
    /// The server's vacations, if it takes any.
    vacation: Option<Box<Vacations>>,
    blackout: Option<BlackoutMode>,
    /// Parameters that follow time series ([`crate::series`]), if any.
    series: Option<Box<SeriesPlayer>>,
    /// A rate series is at 0: no transmission starts.
    series_hold: bool,
    now: Instant,
    queue_length: QueueLength,
    stats: QueueStats,
    /// Packets the queue discipline dropped in the current call.
    drops: Vec<Dropped>,
    /// Deliveries since the path last collected them, in time order.
    pub(crate) out: Vec<(Instant, Packet)>,
    /// Per-class samples, when an engine records this stage's classes.
    class_log: Option<Box<ClassLog>>,
}

/// The stream name of one of a stage's random components.
fn stream_name(direction: Direction, stage: &str, component: &str) -> String {
    format!("{direction}/{stage}/{component}")
}

/// The random stream of `component` of the stage.
fn component_rng(seed: u64, direction: Direction, stage: &str) -> impl FnMut(&str) -> StreamRng + '_ {
    move |c| stream(seed, &stream_name(direction, stage, c))
}

impl Stage {
    /// `config` must have passed [`StageConfig::validate`]; `queue` is its
    /// queue's kind ([`crate::config::QueueConfig::kind`]).
    pub(crate) fn new(config: StageConfig, queue: &QueueKind, direction: Direction, seed: u64) -> Self {
        let name: Arc<str> = Arc::from(config.name.as_str());
        let recorder = Recorder { stage: name.clone(), direction, recording: Recording::All };
        let qdisc = AnyQueueDisc::new(queue, &mut component_rng(seed, direction, &name));
        let link = AnyLink::new(&config, recorder.clone(), seed, component_rng(seed, direction, &name));
        let background = (!config.background.is_empty()).then(|| {
            Background::new(
                &config.background,
                &config.queue,
                config.rate,
                Instant::ZERO,
                component_rng(seed, direction, &name),
            )
        });
        let vacation = config
            .vacation
            .as_ref()
            .filter(|v| !v.is_off())
            .map(|v| Box::new(Vacations::new(v, Instant::ZERO, component_rng(seed, direction, &name))));
        let series = (!config.series.is_empty()).then(|| Box::new(SeriesPlayer::new(&config.series)));
        let duplicator = config
            .duplicate
            .as_ref()
            .map(|d| Box::new(netem::Duplicator::new(d, component_rng(seed, direction, &name)("duplicate"))));
        Stage {
            recorder,
            seed,
            config,
            qdisc,
            link,
            background,
            duplicator,
            duplicated: 0,
            copies: Vec::new(),
            vacation,
            blackout: None,
            series,
            series_hold: false,
            now: Instant::ZERO,
            queue_length: QueueLength::default(),
            stats: QueueStats::default(),
            drops: Vec::new(),
            out: Vec::new(),
            class_log: None,
        }
    }

    /// Samples the queue's classes at every change from now on
    /// ([`ClassLog`]); a stage without classes samples nothing.
    pub(crate) fn record_classes(&mut self) {
        if self.class_log.is_none() {
            let mut log = Box::<ClassLog>::default();
            log.sample(&self.recorder.stage, self.now, &self.qdisc);
            self.class_log = Some(log);
        }
    }

    /// Appends the class samples taken since the last call to `out`, in
    /// time order.
    pub(crate) fn drain_class_samples(&mut self, out: &mut Vec<ClassSample>) {
        if let Some(log) = self.class_log.as_deref_mut() {
            out.append(&mut log.samples);
        }
    }

    /// After any operation on the queue discipline: its classes' changes.
    #[inline]
    fn sample_classes(&mut self) {
        if let Some(log) = self.class_log.as_deref_mut() {
            log.sample(&self.recorder.stage, self.now, &self.qdisc);
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.recorder.stage
    }

    /// The configuration in force: the scenario's, with the changes applied since.
    pub(crate) fn config(&self) -> &StageConfig {
        &self.config
    }

    pub(crate) fn set_recording(&mut self, recording: Recording) {
        self.recorder.recording = recording;
        self.link.set_recorder(&self.recorder);
    }

    #[inline]
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        if self.background.is_none() && self.series.is_none() && self.vacation.is_none() {
            // The common case: only the link's timers.
            return self.link.next_wakeup();
        }
        self.next_wakeup_with_sources()
    }

    /// [`Stage::next_wakeup`] when background load, series or vacations
    /// add wake-ups of their own; out of line, so that the common case
    /// stays small enough to inline into the path's loop.
    #[inline(never)]
    fn next_wakeup_with_sources(&self) -> Option<Instant> {
        let earliest = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let link = self.link.next_wakeup();
        let link = match &self.background {
            None => link,
            Some(b) => earliest(link, b.next_wakeup()),
        };
        let link = match &self.series {
            None => link,
            Some(_) => earliest(link, self.series_wakeup()),
        };
        match &self.vacation {
            // Vacations matter only to packets waiting to be sent: an empty
            // stage lets its path go idle, and catches up with the schedule
            // (the same samples, in the same order) when a packet arrives.
            Some(v) if !(self.qdisc.is_empty() && self.link.idle()) => earliest(link, Some(v.next_wakeup())),
            _ => link,
        }
    }

    /// Background packets inside the stage (queue, buffers, link).
    fn background_inside(&self) -> u64 {
        let link = self.link.stats();
        self.stats.background_generated + self.stats.background_received
            - self.stats.background_dropped
            - link.background_dropped
            - link.background_delivered
            - link.background_forwarded
    }

    /// Real packets inside the stage (queue, buffers, link).
    /// Whether the stage copies packets now (`duplicate`).
    pub(crate) fn copies_packets(&self) -> bool {
        self.duplicator.is_some()
    }

    /// Copies made of entering packets (`duplicate`).
    pub(crate) fn duplicated(&self) -> u64 {
        self.duplicated
    }

    pub(crate) fn occupancy(&self) -> u64 {
        let inside = self.qdisc.len() as u64 + self.link.occupancy();
        inside - self.background_inside()
    }

    /// The flow-control window this stage announces to the one before it
    /// (seed 000 §4.2), in packets.
    pub(crate) fn window(&self) -> Option<u32> {
        self.config.flow_control.as_ref().map(|f| f.packets())
    }

    /// Packets (real and virtual) waiting in the queue discipline: the
    /// input buffer a window protects.
    pub(crate) fn queue_len(&self) -> u64 {
        self.qdisc.len() as u64
    }

    /// Packets this stage has started sending on to the next one and that
    /// have not arrived there yet.
    pub(crate) fn sending(&self) -> u64 {
        self.link.started()
    }

    /// Whether a next stage follows: forwarded background load goes on to
    /// it instead of ending here.
    pub(crate) fn set_has_next(&mut self, has_next: bool) {
        self.link.set_forwarding(has_next);
    }

    /// The next stage's window has room for `credit` more packets (`None`:
    /// no flow control); the link may start sending again at `now`.
    pub(crate) fn set_credit(&mut self, now: Instant, credit: Option<u32>, log: &mut Vec<Event>) {
        self.link.set_credit(credit);
        if credit.is_some_and(|c| c > 0) {
            self.now = self.now.max(now);
            self.feed_link(log);
        }
    }

    pub(crate) fn stats(&self, now: Instant) -> StageStats {
        let link = self.link.stats();
        let mut dropped = self.stats.dropped;
        dropped.merge(&link.dropped);
        StageStats {
            name: self.config.name.clone(),
            direction: Some(self.recorder.direction),
            entered: self.stats.entered,
            delivered: link.delivered,
            dropped,
            ecn_marked: self.stats.ecn_marked + link.ecn_marked,
            frame_errors: link.frame_errors,
            retransmissions: link.retransmissions,
            corrupted: link.corrupted,
            duplicated: self.duplicated,
            mean_queue_len: self.queue_length.mean(now.max(self.now), self.qdisc.len()),
            max_queue_len: self.stats.max_len,
            background: BackgroundStats {
                generated: self.stats.background_generated,
                received: self.stats.background_received,
                served: link.background_delivered,
                forwarded: link.background_forwarded,
                dropped: self.stats.background_dropped + link.background_dropped,
                frame_errors: link.background_frame_errors,
                retransmissions: link.background_retransmissions,
            },
            classes: self.qdisc.class_stats(),
        }
    }

    fn log(&self, log: &mut Vec<Event>, kind: EventKind, packet: Option<&Packet>) {
        self.recorder.log(log, self.now, kind, packet);
    }

    /// The stage's own wake-up for its series: only a link held by a rate
    /// of 0 with packets waiting needs one, at the rate series' next
    /// point (where the rate may rise again).
    fn series_wakeup(&self) -> Option<Instant> {
        let series = self.series.as_ref()?;
        if !self.series_hold || (self.qdisc.is_empty() && self.link.idle()) {
            return None;
        }
        series.next_rate_point(self.now)
    }

    /// Sets the keys whose series' value at `now` differs from the one in
    /// force, as a state change would (the link takes the new
    /// configuration; what it has started keeps its times).
    fn follow_series(&mut self, now: Instant, log: &mut Vec<Event>) {
        let Some(series) = self.series.as_mut() else { return };
        let mut changes = Vec::new();
        series.changes(now, &mut changes);
        if changes.is_empty() {
            return;
        }
        let mut config = self.config.clone();
        let mut hold = self.series_hold;
        for (key, v) in changes {
            match key {
                SeriesKey::Rate => {
                    // Below 1 bit/s no packet would ever finish: hold the link.
                    hold = v < 1.0;
                    if !hold {
                        config.rate = Some(crate::units::Rate::from_bits_per_sec(v.round() as u64));
                    }
                }
                SeriesKey::Delay => config.delay = Duration::from_nanos(v.round() as u64),
                SeriesKey::Jitter => {
                    // Uniform in [0, J]; kept as a distribution at 0 so that
                    // the jitter's random stream goes on.
                    let high = Duration::from_nanos(v.round() as u64);
                    config.jitter = Some(crate::dist::Distribution::Uniform { low: Duration::ZERO, high });
                }
                SeriesKey::Loss | SeriesKey::Corrupt => {
                    let p = crate::units::Probability::new(v.clamp(0.0, 1.0)).expect("clamped to 0..=1");
                    config.error = crate::config::ErrorModel::Packet(p);
                }
            }
        }
        {
            let mut rng = component_rng(self.seed, self.recorder.direction, &self.recorder.stage);
            self.link.reconfigure(now, &config, &crate::patch::StagePatch::default(), log, &mut rng);
        }
        self.config = config;
        if hold != self.series_hold {
            self.series_hold = hold;
            self.link.set_vacation(hold);
            if !hold {
                self.now = self.now.max(now);
                self.feed_link(log);
            }
        }
    }

    /// The instant a series with `at_end = "end"` or a trace played once
    /// (mm-link's `--once`) ends the run, once known.
    pub(crate) fn series_end(&self) -> Option<Instant> {
        let trace = self.config().trace.as_ref().and_then(|t| t.end());
        let series = self.series.as_ref().and_then(|s| s.end());
        trace.into_iter().chain(series).min()
    }

    /// Handles every timer due at or before `now`, in time order.
    pub(crate) fn run_until(&mut self, now: Instant, log: &mut Vec<Event>) {
        if self.background.is_none() && self.vacation.is_none() && self.series.is_none() {
            // The common case: only the link's timers.
            while let Some((at, timer)) = self.link.next_timer() {
                if at > now {
                    break;
                }
                self.now = self.now.max(at);
                self.link.fire(self.now, timer, self.qdisc.is_empty(), log, &mut self.out);
                self.feed_link(log);
            }
            self.now = self.now.max(now);
            return;
        }
        loop {
            let link = self.link.next_timer().filter(|(at, _)| *at <= now);
            let background = self.background.as_ref().and_then(Background::next_wakeup).filter(|&at| at <= now);
            // A series' point where a held link may start goes first at
            // equal times: the rate in force then times the transmission.
            if let Some(t) = self.series_wakeup().filter(|&t| t <= now)
                && link.is_none_or(|(at, _)| t <= at)
                && background.is_none_or(|at| t <= at)
            {
                self.now = self.now.max(t);
                self.follow_series(self.now, log);
                continue;
            }
            if self.series.is_some() {
                let next = [link.map(|(at, _)| at), background].into_iter().flatten().min();
                if let Some(at) = next {
                    self.follow_series(self.now.max(at), log);
                }
            }
            // A vacation starting or ending goes first at equal times: a
            // transmission that ends as a vacation starts has no successor.
            let vacation = self.vacation.as_deref().map(Vacations::next_wakeup).filter(|&v| v <= now);
            if let Some(v) = vacation
                && link.is_none_or(|(at, _)| v <= at)
                && background.is_none_or(|at| v <= at)
            {
                self.now = self.now.max(v);
                let away = self.vacation.as_deref_mut().is_some_and(Vacations::toggle);
                self.link.set_vacation(away);
                if !away {
                    self.feed_link(log);
                }
                continue;
            }
            match (link, background) {
                (None, None) => break,
                // The link's timers go first at equal times.
                (Some((at, timer)), b) if b.is_none_or(|b| at <= b) => {
                    self.now = self.now.max(at);
                    self.link.fire(self.now, timer, self.qdisc.is_empty(), log, &mut self.out);
                    self.feed_link(log);
                }
                (_, b) => {
                    let Some(at) = b else { break };
                    self.now = self.now.max(at);
                    let Some((_, g)) = self.background.as_mut().and_then(|b| b.poll(at)) else { break };
                    self.stats.background_generated += 1;
                    self.admit(g.packet, g.class, log);
                }
            }
        }
        self.now = self.now.max(now);
    }

    /// A packet arrives at the stage at `now` (not earlier than the last
    /// `run_until`).
    pub(crate) fn push(&mut self, now: Instant, packet: Packet, log: &mut Vec<Event>) {
        self.run_until(now, log);
        if let Some(series) = self.series.as_mut() {
            if !packet.background {
                series.packet_entered(now);
            }
            self.follow_series(now, log);
        }
        if packet.background {
            self.stats.background_received += 1;
        } else {
            self.stats.entered += 1;
            // netem enqueues the copy first (sch_netem.c `netem_enqueue`).
            if self.duplicator.as_deref_mut().is_some_and(netem::Duplicator::copies) {
                self.duplicated += 1;
                self.copies.push(packet.id);
                self.admit(packet.clone(), None, log);
            }
        }
        self.admit(packet, None, log);
        // Zero-time transmissions and deliveries happen now.
        self.run_until(now, log);
    }

    /// A real or background packet enters the queue discipline now
    /// (`class`: the background source's class).
    #[inline]
    fn admit(&mut self, packet: Packet, class: Option<usize>, log: &mut Vec<Event>) {
        let now = self.now;
        if self.blackout == Some(BlackoutMode::Drop) {
            self.drop_packet(packet, DropReason::Blackout, log);
            return;
        }
        if self.slot_limit_reached() {
            self.drop_packet(packet, DropReason::QueueOverflow, log);
            return;
        }
        let was_empty = self.qdisc.is_empty() && self.link.idle();
        let hint = LinkHint { typical_tx: self.link.typical_tx() };
        // What the events say about the packet, taken before the queue owns it.
        let tag = PacketTag::of(&packet);
        self.queue_length.advance(now, self.qdisc.len());
        let mut drops = std::mem::take(&mut self.drops);
        let verdict = match class {
            None => self.qdisc.enqueue(now, packet, hint, &mut drops),
            Some(_) => self.qdisc.enqueue_into(now, packet, class, hint, &mut drops),
        };
        self.drop_packets(&mut drops, log);
        self.drops = drops;
        if let Enqueued::Queued { marked } = verdict {
            self.stats.max_len = self.stats.max_len.max(self.qdisc.len());
            if marked {
                self.stats.ecn_marked += 1;
                self.recorder.log_tag(log, self.now, EventKind::EcnMark, Some(tag));
            }
            self.recorder.log_tag(log, self.now, EventKind::Enqueue, Some(tag));
            if self.blackout == Some(BlackoutMode::Hold) {
                self.recorder.log_tag(log, self.now, EventKind::Hold, Some(tag));
            }
        }
        if was_empty && !self.qdisc.is_empty() {
            self.link.wake(self.now);
        }
        self.feed_link(log);
    }

    /// Whether a stage with netem's `slot` is full: its queue's packet
    /// limit counts every packet inside the stage, those in the queue
    /// discipline and those the link holds (being delayed, or waiting for
    /// a slot), as netem's `limit` counts every packet in its tfifo (Linux
    /// net/sched/sch_netem.c `netem_enqueue`: `if (unlikely(sch->q.qlen >=
    /// sch->limit))` drops the arriving packet; `q.qlen` counts the packets
    /// waiting for their time to send and for a slot alike). Without this
    /// the packets waiting for slots that carry less than arrives would
    /// grow without bound. The arrival is dropped (netem's tail drop,
    /// whatever the queue's drop policy), counted and recorded as a queue
    /// overflow. Stages without a slot keep squall's meaning: the limit
    /// counts the queue discipline's packets only.
    #[inline]
    fn slot_limit_reached(&self) -> bool {
        if self.config.slot.is_none() {
            return false;
        }
        let Some(limit) = self.config.queue.packets else { return false };
        self.qdisc.len() as u64 + self.link.occupancy() >= u64::from(limit)
    }

    /// Counts and records the packets the queue dropped, in order, and
    /// empties `drops`. Most calls have none: checking first spares building
    /// and dropping a `Drain` per packet (4.7 M of 435 M instructions in
    /// `squall bench tcp`, measured with callgrind).
    #[inline]
    fn drop_packets(&mut self, drops: &mut Vec<Dropped>, log: &mut Vec<Event>) {
        if drops.is_empty() {
            return;
        }
        for d in drops.drain(..) {
            self.drop_packet(d.packet, d.reason, log);
        }
    }

    fn drop_packet(&mut self, packet: Packet, reason: DropReason, log: &mut Vec<Event>) {
        if packet.background {
            self.stats.background_dropped += 1;
            return;
        }
        self.stats.dropped.add(reason);
        self.log(log, EventKind::Drop(reason), Some(&packet));
    }

    /// Moves packets from the queue discipline into the link while it has
    /// room (not during a blackout in hold mode). Every change of the
    /// queue discipline is followed by this call: the classes are sampled
    /// here, before and after.
    fn feed_link(&mut self, log: &mut Vec<Event>) {
        self.sample_classes();
        self.feed_link_now(log);
        self.sample_classes();
    }

    fn feed_link_now(&mut self, log: &mut Vec<Event>) {
        if self.blackout == Some(BlackoutMode::Hold) || self.vacation.as_deref().is_some_and(Vacations::away) {
            return;
        }
        if !self.qdisc.is_empty() {
            let mut drops = std::mem::take(&mut self.drops);
            loop {
                self.queue_length.advance(self.now, self.qdisc.len());
                let link = &self.link;
                let next = self.qdisc.dequeue(self.now, |size| link.accepts(size), &mut drops);
                self.drop_packets(&mut drops, log);
                let Some(Dequeued { packet, marked }) = next else { break };
                if marked {
                    self.stats.ecn_marked += 1;
                    self.log(log, EventKind::EcnMark, Some(&packet));
                }
                self.link.push(self.now, packet, log);
            }
            self.drops = drops;
        }
        self.link.fed(self.now, self.qdisc.is_empty(), log);
    }

    /// `change` will be applied at `at` by the next [`Stage::apply`]: the
    /// link may hold what the change decides ([`Link::before_change`]).
    pub(crate) fn before_change(&mut self, at: Instant, change: &Change) {
        self.link.before_change(at, change);
    }

    /// Applies a change addressed to this stage at `now`.
    pub(crate) fn apply(&mut self, now: Instant, change: &Change, log: &mut Vec<Event>) {
        self.run_until(now, log);
        match change {
            Change::Set { patch, .. } => {
                let mut config = patch.applied_to(&self.config);
                let (seed, direction) = (self.seed, self.recorder.direction);
                // A new rate changes the gaps of sources given as a share of
                // it (`load`); `replaced` rebuilds just those.
                let rate_moves_load = patch.sets("rate") && config.background.iter().any(|b| b.load.is_some());
                if patch.sets("background") || rate_moves_load {
                    let rng = component_rng(seed, direction, &self.recorder.stage);
                    self.background = match self.background.take() {
                        _ if config.background.is_empty() => None,
                        Some(old) => Some(old.replaced(&config.background, &config.queue, config.rate, now, rng)),
                        None => Some(Background::new(&config.background, &config.queue, config.rate, now, rng)),
                    };
                } else if patch.sets("queue")
                    && let Some(b) = &mut self.background
                {
                    b.set_classes(&config.queue);
                }
                if patch.sets("duplicate") {
                    self.duplicator = match (self.duplicator.take(), &config.duplicate) {
                        (_, None) => None,
                        (Some(mut d), Some(c)) => {
                            d.set(c);
                            Some(d)
                        }
                        (None, Some(c)) => Some(Box::new(netem::Duplicator::new(
                            c,
                            component_rng(seed, direction, &self.recorder.stage)("duplicate"),
                        ))),
                    };
                }
                if patch.sets("vacation") {
                    let rng = component_rng(seed, direction, &self.recorder.stage);
                    self.vacation =
                        config.vacation.as_ref().filter(|v| !v.is_off()).map(|v| Box::new(Vacations::new(v, now, rng)));
                    // The new schedule starts with a service period.
                    self.link.set_vacation(false);
                }
                // Checked with the scenario (`StagePatch::check`); a radio
                // patch the link refuses leaves it, and its recorded
                // configuration, as they were.
                let accepted = {
                    let mut rng = component_rng(seed, direction, &self.recorder.stage);
                    self.link.reconfigure(now, &config, patch, log, &mut rng)
                };
                if !accepted {
                    config.radio = self.config.radio.clone();
                }
                // Checked with the scenario (`StagePatch::check`); a queue
                // that does not fit leaves it, and its recorded
                // configuration, as they were. A change that leaves the
                // queue's keys alone leaves the queue alone.
                let queue = patch.sets("queue").then(|| config.queue.kind(&format!("{}.queue", config.name)));
                if let Some(Err(_)) = queue {
                    config.queue = self.config.queue.clone();
                }
                if let Some(Ok(queue)) = queue {
                    let hint = LinkHint { typical_tx: self.link.typical_tx() };
                    let stage = self.recorder.stage.clone();
                    let mut rng = component_rng(seed, direction, &stage);
                    let mut drops = std::mem::take(&mut self.drops);
                    self.queue_length.advance(now, self.qdisc.len());
                    // This stage's own virtual packets go back into their
                    // source's class; forwarded ones (from here or from a
                    // stage before) are classified as on arrival.
                    let background = &self.background;
                    let class_of = |p: &Packet| background.as_ref().filter(|_| p.background && !p.forward)?.class_of(p);
                    self.qdisc.reconfigure(now, &queue, hint, &mut rng, class_of, &mut drops);
                    if let Some(log) = self.class_log.as_deref_mut() {
                        log.queue_changed();
                    }
                    for d in drops.drain(..) {
                        self.drop_packet(d.packet, d.reason, log);
                    }
                    self.drops = drops;
                }
                self.config = config;
            }
            Change::BlackoutStart { mode, .. } => {
                self.log(log, EventKind::BlackoutStart, None);
                self.blackout = Some(*mode);
                self.link.set_blackout(true);
                if *mode == BlackoutMode::Drop {
                    self.queue_length.advance(now, self.qdisc.len());
                    for (p, _) in self.qdisc.drain(now) {
                        self.drop_packet(p, DropReason::Blackout, log);
                    }
                    self.link.drop_waiting(self.now, self.qdisc.is_empty(), log, &mut self.out);
                }
            }
            Change::BlackoutEnd { .. } => {
                if self.blackout.take().is_some() {
                    self.link.set_blackout(false);
                    self.log(log, EventKind::BlackoutEnd, None);
                }
            }
        }
        self.link.changed();
        self.feed_link(log);
        self.run_until(now, log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_length_is_time_weighted() {
        let mut q = QueueLength::default();
        // 1 packet for 1 s, 2 for 1 s, 1 for 1 s, 0 for 1 s: mean 1 over 4 s.
        q.advance(Instant::from_secs(0), 0);
        q.advance(Instant::from_secs(1), 1);
        q.advance(Instant::from_secs(2), 2);
        q.advance(Instant::from_secs(3), 1);
        assert!((q.mean(Instant::from_secs(4), 0) - 1.0).abs() < 1e-12);
    }
}
