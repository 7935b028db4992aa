//! Output vectors (seed 004 §5: every module records any quantity over
//! time as a vector, plotted and averaged afterwards): the quantities a
//! scenario's `[[record]]` entries name (squall_scenario::record), written
//! as they come to vectors.csv, one tidy row per sample:
//! `time_s,source,name,value`.
//!
//! The samples come from what a [`FileRecorder`](crate::FileRecorder) is
//! handed anyway — the model's events (a stage's packets, bytes, drops and
//! states) and the TCP trace samples (a sender's cwnd, ssthresh, srtt,
//! rttvar, rto, bytes in flight) — so a run records nothing more in its hot
//! path, and a run without `[[record]]` has no [`VectorWriter`] at all.
//! A class of a stage's queue is the exception: events carry no class and
//! background packets no events, so the model samples the class's own
//! counters at every change (squall_link::ClassSample), only for the
//! stages a `[[record]]` entry names with a `class`.
//! Nothing is kept but each vector's current value: memory stays bounded
//! however long the run.
//!
//! Rows of one vector are in time order; vectors of stages come in the
//! events' order, those of a TCP end in batches (its samples are handed on
//! in batches), so rows of different vectors may interleave out of time
//! order.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use squall_link::{ClassCounts, ClassSample, Duration, Event, EventKind, Inside, Instant, StageConfig, StagePatch};
use squall_scenario::{Quantity, RecordSource, Scenario};

use crate::result::{TcpSample, TcpTrace};

/// The header of vectors.csv.
pub const VECTORS_HEADER: &str = "time_s,source,name,value";

/// One value of a vector: a number, or a name (a stage's state).
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Number(f64),
    Text(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Number(x) => write!(f, "{x}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// One vector's sampling: at every change, or on a grid `every` apart
/// from time 0 (each grid sample the value in force at that instant, that
/// is after every change at or before it).
#[derive(Debug)]
struct Sampler {
    source: String,
    name: String,
    every: Option<Duration>,
    /// The next grid time not written yet.
    next: Instant,
    current: Option<Value>,
    /// A rate over each interval ([`Quantity::needs_interval`]): `current`
    /// is a running count of bytes, and each grid sample is what it grew
    /// by since the last one (`since`), in bit/s over the interval.
    windowed: bool,
    since: f64,
}

impl Sampler {
    fn new(source: &str, quantity: Quantity, every: Option<Duration>, initial: Option<Value>) -> Self {
        let windowed = quantity.needs_interval();
        // A window ending at time 0 holds nothing: the first is (0, every].
        let next = match every {
            Some(every) if windowed => Instant::ZERO + every,
            _ => Instant::ZERO,
        };
        Sampler {
            source: source.to_string(),
            name: quantity.name(),
            every,
            next,
            current: initial,
            windowed,
            since: 0.0,
        }
    }

    fn row(&self, w: &mut impl Write, at: Instant, v: &Value) -> std::io::Result<()> {
        writeln!(w, "{at},{},{},{v}", csv_field(&self.source), self.name)
    }

    /// The grid samples before `t` (all up to and including `t` when
    /// `inclusive`), with the value in force.
    fn catch_up(&mut self, w: &mut impl Write, t: Instant, inclusive: bool) -> std::io::Result<()> {
        let Some(every) = self.every else { return Ok(()) };
        while self.next < t || (inclusive && self.next == t) {
            match &self.current {
                Some(Value::Number(count)) if self.windowed => {
                    let bits = (count - self.since) * 8.0;
                    self.row(w, self.next, &Value::Number(bits / every.as_secs_f64()))?;
                    self.since = *count;
                }
                Some(v) => self.row(w, self.next, v)?,
                None => {}
            }
            self.next += every;
        }
        Ok(())
    }

    /// The quantity is `v` from `t` on.
    fn offer(&mut self, w: &mut impl Write, t: Instant, v: Value) -> std::io::Result<()> {
        if self.every.is_some() {
            self.catch_up(w, t, false)?;
        } else if self.current.as_ref() != Some(&v) {
            self.row(w, t, &v)?;
        }
        self.current = Some(v);
        Ok(())
    }
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")).into() } else { s.into() }
}

/// A recorded stage: what events.csv tells of it, and its vectors.
#[derive(Debug)]
struct StageVectors {
    /// Packets and bytes inside (enqueued, not yet delivered or dropped).
    inside: Inside,
    drops: [u64; squall_link::DropReason::ALL.len()],
    state: String,
    /// Bytes delivered so far.
    delivered: u64,
    /// Its configuration in force (the scenario's, with each state that
    /// set it applied in turn, as the model applies them: `Stage::apply`).
    config: StageConfig,
    vectors: Vec<(Quantity, Sampler)>,
}

impl StageVectors {
    fn value(&self, q: Quantity) -> Value {
        match q {
            Quantity::QueuePackets => Value::Number(self.inside.packets() as f64),
            Quantity::QueueBytes => Value::Number(self.inside.bytes() as f64),
            Quantity::Drops(None) => Value::Number(self.drops.iter().sum::<u64>() as f64),
            Quantity::Drops(Some(r)) => Value::Number(self.drops[r.index()] as f64),
            Quantity::State => Value::Text(self.state.clone()),
            Quantity::Rate => Value::Number(self.config.rate.map_or(f64::INFINITY, |r| r.bits_per_sec() as f64)),
            Quantity::DeliveredBytes | Quantity::Throughput => Value::Number(self.delivered as f64),
            _ => Value::Number(f64::NAN),
        }
    }
}

/// The value of a class's quantity in `counts`.
fn class_value(q: Quantity, counts: &ClassCounts) -> f64 {
    match q {
        Quantity::QueuePackets => counts.queued_packets as f64,
        Quantity::QueueBytes => counts.queued_bytes as f64,
        Quantity::Drops(None) => counts.drops.total() as f64,
        Quantity::Drops(Some(r)) => counts.drops.get(r) as f64,
        Quantity::Sent => counts.sent as f64,
        Quantity::SentBytes => counts.sent_bytes as f64,
        _ => f64::NAN,
    }
}

/// The source name of a class in vectors.csv: STAGE/CLASS.
pub fn class_source(stage: &str, class: &str) -> String {
    format!("{stage}/{class}")
}

/// One TCP connection end's congestion window over its life, for its
/// time average (seed 004 §5's "average congestion window").
#[derive(Clone, Debug, PartialEq)]
pub struct CwndLife {
    pub flow: String,
    pub connection: u32,
    pub endpoint: &'static str,
    /// The first sample (the end's first send).
    pub first: Instant,
    /// The last sample and the window from it on.
    pub last: Instant,
    pub last_cwnd: u64,
    /// ∫ cwnd dt from `first` to `last`, byte·ns.
    pub area: u128,
}

impl CwndLife {
    /// The time-weighted mean window (bytes) from the first sample to
    /// `close`, the window after the last sample holding until then
    /// (`close` before the last sample counts as the last sample); the last
    /// window when the life has no length.
    pub fn average(&self, close: Instant) -> f64 {
        let close = close.max(self.last);
        let length = close.as_nanos() - self.first.as_nanos();
        if length == 0 {
            return self.last_cwnd as f64;
        }
        let area = self.area + u128::from(self.last_cwnd) * u128::from(close.as_nanos() - self.last.as_nanos());
        area as f64 / length as f64
    }

    fn add(&mut self, s: &TcpSample) {
        let held = s.time.as_nanos().saturating_sub(self.last.as_nanos());
        self.area += u128::from(self.last_cwnd) * u128::from(held);
        self.last = s.time.max(self.last);
        self.last_cwnd = s.cwnd;
    }
}

/// Streams a run's `[[record]]` vectors to vectors.csv.
#[derive(Debug)]
pub struct VectorWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// By stage name.
    stages: BTreeMap<String, StageVectors>,
    /// State name → the recorded stages it sets, and how.
    states: BTreeMap<String, Vec<(String, StagePatch)>>,
    /// TCP flow name → its recorded quantities and their sampling.
    flows: BTreeMap<String, Vec<(Quantity, Option<Duration>)>>,
    /// Per traced connection end (by source name): its vectors.
    ends: BTreeMap<String, Vec<(Quantity, Sampler)>>,
    /// Per traced end of a flow with `cwnd` recorded: its window's life.
    lives: BTreeMap<String, CwndLife>,
    /// By (stage, class): the class's recorded quantities.
    classes: BTreeMap<(String, String), Vec<(Quantity, Sampler)>>,
}

/// The source name of a TCP connection end in vectors.csv:
/// FLOW/CONNECTION/ENDPOINT (the end of tcp-FLOW-CONNECTION-ENDPOINT.csv).
pub fn tcp_source(flow: &str, connection: u32, endpoint: &str) -> String {
    format!("{flow}/{connection}/{endpoint}")
}

impl VectorWriter {
    /// vectors.csv in `dir` for `scenario`'s `[[record]]` entries; `None`
    /// when it has none.
    pub fn create(dir: &Path, scenario: &Scenario) -> Result<Option<Self>, String> {
        if scenario.record.is_empty() {
            return Ok(None);
        }
        let path = dir.join("vectors.csv");
        let file = File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let mut out = BufWriter::new(file);
        let mut stages: BTreeMap<String, StageVectors> = BTreeMap::new();
        let mut flows: BTreeMap<String, Vec<(Quantity, Option<Duration>)>> = BTreeMap::new();
        let mut classes: BTreeMap<(String, String), Vec<(Quantity, Sampler)>> = BTreeMap::new();
        for r in &scenario.record {
            match r.resolved() {
                // The model's first sample (time 0, every counter 0) starts
                // an at-change vector.
                Some((RecordSource::Class(stage, class), q)) => {
                    let source = class_source(&stage, &class);
                    classes.entry((stage, class)).or_default().push((q, Sampler::new(&source, q, r.every, None)));
                }
                Some((RecordSource::Stage(name), q)) => {
                    let Some(config) = scenario.stage(&name) else {
                        return Err(format!("[[record]] names stage `{name}`, which the scenario does not have"));
                    };
                    let st = stages.entry(name.clone()).or_insert_with(|| StageVectors {
                        inside: Inside::default(),
                        drops: [0; squall_link::DropReason::ALL.len()],
                        state: String::new(),
                        delivered: 0,
                        config: config.clone(),
                        vectors: Vec::new(),
                    });
                    let initial = st.value(q);
                    st.vectors.push((q, Sampler::new(&name, q, r.every, Some(initial))));
                }
                Some((RecordSource::Flow(name), q)) => flows.entry(name).or_default().push((q, r.every)),
                // The scenario's check refuses such entries.
                None => return Err(format!("[[record]] entry {r:?} names no known source and quantity")),
            }
        }
        let states = scenario
            .states
            .iter()
            .map(|s| {
                let set = s.set.iter().filter(|(k, _)| stages.contains_key(*k));
                (s.name.clone(), set.map(|(k, patch)| (k.clone(), patch.clone())).collect())
            })
            .collect();
        let written = (|| {
            writeln!(out, "{VECTORS_HEADER}")?;
            // At-change stage vectors start from their value at time 0.
            for st in stages.values() {
                for (_, s) in st.vectors.iter().filter(|(_, s)| s.every.is_none()) {
                    if let Some(v) = &s.current {
                        s.row(&mut out, Instant::ZERO, v)?;
                    }
                }
            }
            Ok::<_, std::io::Error>(())
        })();
        written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let w =
            VectorWriter { path, out, stages, states, flows, ends: BTreeMap::new(), lives: BTreeMap::new(), classes };
        Ok(Some(w))
    }

    /// Model events, in time order.
    pub fn events(&mut self, events: &[Event]) -> Result<(), String> {
        for e in events {
            if e.kind == EventKind::StateChange {
                let Some(set) = self.states.get(&*e.stage) else { continue };
                for (name, patch) in set.clone() {
                    if let Some(st) = self.stages.get_mut(&name) {
                        st.state = e.stage.to_string();
                        st.config = patch.applied_to(&st.config);
                    }
                    self.offer_stage(&name, e.time)?;
                }
                continue;
            }
            let Some(st) = self.stages.get_mut(&*e.stage) else { continue };
            // As the report's queue plot counts them (squall_link::Inside).
            match e.kind {
                EventKind::Enqueue => {}
                EventKind::Deliver => st.delivered += u64::from(e.size),
                EventKind::Drop(r) => st.drops[r.index()] += 1,
                _ => continue,
            }
            st.inside.apply(e);
            let name = e.stage.to_string();
            self.offer_stage(&name, e.time)?;
        }
        Ok(())
    }

    fn offer_stage(&mut self, name: &str, t: Instant) -> Result<(), String> {
        let Some(st) = self.stages.get_mut(name) else { return Ok(()) };
        for i in 0..st.vectors.len() {
            let v = st.value(st.vectors[i].0);
            if let Err(e) = st.vectors[i].1.offer(&mut self.out, t, v) {
                return Err(format!("cannot write {}: {e}", self.path.display()));
            }
        }
        Ok(())
    }

    /// Samples of stages' classes (in time order per stage; the model's
    /// own, squall_link::ClassSample): each class recorded takes its own.
    pub fn class_samples(&mut self, samples: &[ClassSample]) -> Result<(), String> {
        for s in samples {
            // Looked up by borrowed names: no allocation per sample.
            let Some(vectors) = self
                .classes
                .iter_mut()
                .find(|((stage, class), _)| **stage == *s.stage && **class == *s.class)
                .map(|(_, v)| v)
            else {
                continue;
            };
            for (q, sampler) in vectors.iter_mut() {
                let v = Value::Number(class_value(*q, &s.counts));
                if let Err(e) = sampler.offer(&mut self.out, s.time, v) {
                    return Err(format!("cannot write {}: {e}", self.path.display()));
                }
            }
        }
        Ok(())
    }

    /// A connection end's next samples (in time order per end).
    pub fn tcp_samples(&mut self, trace: &TcpTrace) -> Result<(), String> {
        let Some(recorded) = self.flows.get(&trace.flow) else { return Ok(()) };
        let source = tcp_source(&trace.flow, trace.connection, trace.endpoint);
        if !self.ends.contains_key(&source) {
            let samplers = recorded.iter().map(|&(q, every)| (q, Sampler::new(&source, q, every, None))).collect();
            self.ends.insert(source.clone(), samplers);
        }
        let with_cwnd = recorded.iter().any(|(q, _)| *q == Quantity::Cwnd);
        let Some(samplers) = self.ends.get_mut(&source) else { return Ok(()) };
        for s in &trace.samples {
            if with_cwnd {
                self.lives
                    .entry(source.clone())
                    .or_insert_with(|| CwndLife {
                        flow: trace.flow.clone(),
                        connection: trace.connection,
                        endpoint: trace.endpoint,
                        first: s.time,
                        last: s.time,
                        last_cwnd: s.cwnd,
                        area: 0,
                    })
                    .add(s);
            }
            for (q, sampler) in samplers.iter_mut() {
                let secs = |ns: u64| ns as f64 / 1e9;
                let v = match q {
                    Quantity::Cwnd => s.cwnd as f64,
                    // An "infinite" ssthresh has no value (as in tcp-*.csv).
                    Quantity::Ssthresh if s.ssthresh >= u64::MAX / 8 => continue,
                    Quantity::Ssthresh => s.ssthresh as f64,
                    Quantity::Srtt => secs(s.srtt),
                    Quantity::Rttvar => secs(s.rttvar),
                    Quantity::Rto => secs(s.rto),
                    Quantity::InFlight => s.in_flight as f64,
                    Quantity::DeliveredBytes | Quantity::Throughput => s.acked as f64,
                    Quantity::DeliveryRate => match s.delivery_rate {
                        Some(r) => r as f64,
                        // No sample kept yet.
                        None => continue,
                    },
                    _ => continue,
                };
                if let Err(e) = sampler.offer(&mut self.out, s.time, Value::Number(v)) {
                    return Err(format!("cannot write {}: {e}", self.path.display()));
                }
            }
        }
        Ok(())
    }

    /// At the run's `end`: the grid samples up to it, then the file
    /// flushed; the cwnd lives of the recorded ends.
    pub fn finish(&mut self, end: Instant) -> Result<Vec<CwndLife>, String> {
        let out = &mut self.out;
        let all = self
            .stages
            .values_mut()
            .flat_map(|st| st.vectors.iter_mut())
            .chain(self.ends.values_mut().flat_map(|v| v.iter_mut()))
            .chain(self.classes.values_mut().flat_map(|v| v.iter_mut()));
        for (_, sampler) in all {
            sampler.catch_up(out, end, true).map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        }
        self.out.flush().map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        Ok(std::mem::take(&mut self.lives).into_values().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life(steps: &[(u64, u64)]) -> CwndLife {
        let sample = |&(ms, cwnd): &(u64, u64)| TcpSample {
            time: Instant::from_millis(ms),
            cwnd,
            ssthresh: u64::MAX,
            srtt: 0,
            rttvar: 0,
            rto: 0,
            in_flight: 0,
            acked: 0,
            delivery_rate: None,
        };
        let first = sample(&steps[0]);
        let mut l = CwndLife {
            flow: "f".into(),
            connection: 0,
            endpoint: "client",
            first: first.time,
            last: first.time,
            last_cwnd: first.cwnd,
            area: 0,
        };
        for s in steps {
            l.add(&sample(s));
        }
        l
    }

    /// By hand: 2 920 B for 100 ms, 5 840 B for 100 ms, 11 680 B for
    /// 200 ms (slow start doubling each 100 ms round, then held):
    /// (2920·100 + 5840·100 + 11680·200) / 400 = 8 030 B.
    #[test]
    fn the_average_window_is_weighted_by_time() {
        let l = life(&[(100, 2920), (150, 2920), (200, 5840), (300, 11680)]);
        assert_eq!(l.average(Instant::from_millis(500)), 8030.0);
        // Closed at the last sample: (2920·100 + 5840·100) / 200 = 4 380 B.
        assert_eq!(l.average(Instant::from_millis(300)), 4380.0);
        // A close before the last sample counts as the last sample.
        assert_eq!(l.average(Instant::from_millis(250)), 4380.0);
        // One sample, no length: its window.
        assert_eq!(life(&[(100, 1460)]).average(Instant::from_millis(100)), 1460.0);
    }

    #[test]
    fn a_grid_sample_holds_the_value_in_force_at_its_instant() {
        let mut out = Vec::new();
        let mut s = Sampler::new("down", Quantity::QueuePackets, Some(Duration::from_millis(10)), None);
        s.offer(&mut out, Instant::from_millis(5), Value::Number(1.0)).unwrap();
        // A change exactly on the grid is in that grid sample.
        s.offer(&mut out, Instant::from_millis(20), Value::Number(2.0)).unwrap();
        s.offer(&mut out, Instant::from_millis(20), Value::Number(3.0)).unwrap();
        s.catch_up(&mut out, Instant::from_millis(30), true).unwrap();
        let text = String::from_utf8(out).unwrap();
        // No value before 5 ms: no sample at 0.
        assert_eq!(
            text,
            "0.010000000,down,queue_packets,1\n0.020000000,down,queue_packets,3\n0.030000000,down,queue_packets,3\n"
        );
    }

    #[test]
    fn at_every_change_a_repeated_value_is_not_written_again() {
        let mut out = Vec::new();
        let mut s = Sampler::new("a,b", Quantity::Cwnd, None, None);
        for (ms, v) in [(1, 10.0), (2, 10.0), (3, 20.0)] {
            s.offer(&mut out, Instant::from_millis(ms), Value::Number(v)).unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "0.001000000,\"a,b\",cwnd,10\n0.003000000,\"a,b\",cwnd,20\n");
    }
}
