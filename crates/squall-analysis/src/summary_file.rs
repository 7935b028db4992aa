//! summary.json: what `squall sim` and `squall emu` write at the top of a
//! run's directory, and what `squall report` reads back (with an
//! experiment run's result.json, which has the same keys). One definition
//! for both engines; each engine fills in its own run record (`R`: the
//! simulator's [`ReplicationSummary`], the emulator's [`EmuRunSummary`])
//! and its own keys after `aggregate` (`E`).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use squall_link::DropReason;
use squall_scenario::Scenario;

use crate::flows::{FlowStats, RunHost};
use crate::stats::{Summary, summarize};

/// The whole file. `L` is a TCP flow's limit (the CLI's flow-limit
/// analysis), `R` one run's record, `E` the engine's own keys, written
/// after `aggregate` (`()` for none).
#[derive(Serialize)]
pub struct SummaryFile<R, L, E> {
    pub squall_version: &'static str,
    /// `sim` or `emu`.
    pub engine: &'static str,
    pub scenario: String,
    pub source: String,
    pub seed: u64,
    pub replications: u32,
    /// Every parameter as the run used it; `squall sim DIR/scenario.toml`
    /// repeats the run exactly.
    pub resolved_scenario: Scenario,
    /// TCP flows whose window or application caps them below their
    /// path's bottleneck; absent when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_limits: Vec<L>,
    pub runs: Vec<R>,
    pub aggregate: Aggregate,
    #[serde(flatten)]
    pub engine_details: E,
}

/// One replication's outcome in a simulated run's summary.json: `F` a
/// flow's result, `T` a TCP flow's (squall-sim's `FlowResult` and
/// `TcpFlowResult`).
#[derive(Serialize)]
pub struct ReplicationSummary<F, T> {
    pub replication: u32,
    pub seed: u64,
    pub end: f64,
    pub flows: Vec<F>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_flows: Vec<T>,
    pub stages: Vec<StageSummary>,
    /// The time-averaged congestion window of each traced end of a flow
    /// with `cwnd` in a `[[record]]` entry (seed 004 §5); absent without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cwnd_average: Vec<CwndAverage>,
    /// Each `[[workload.tcp]]` entry with `count`, its flows summed up
    /// (their own results are rows of flows.csv, not in `tcp_flows`);
    /// absent without such an entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_counts: Vec<CountSummary>,
    /// Where each host's millisecond TCP timestamp clock ticks past the
    /// whole millisecond, seconds, for the hosts with a TCP connection end
    /// (the simulator's `[[hosts]] clock_phase`, given or drawn from the
    /// seed); absent without TCP.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub clock_phases: BTreeMap<String, f64>,
    /// The rows of flows.csv (not in summary.json).
    #[serde(skip)]
    pub count_flows: Vec<CountFlow>,
}

/// The flows of one `[[workload.tcp]]` entry with `count` in one
/// replication (squall_scenario::count).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct CountSummary {
    /// The entry's name.
    pub entry: String,
    pub flows: u32,
    /// Flows whose every byte reached the receiving application.
    pub completed: u32,
    /// Flow completion time of the completed flows, s ([`CountFlow::fct`]):
    /// mean, and 50th and 99th percentiles (crate::stats::percentile, R-7).
    pub fct_mean: f64,
    pub fct_p50: f64,
    pub fct_p99: f64,
    /// Mean goodput of the completed flows, bit/s.
    pub goodput_mean_bps: f64,
    /// Bytes the flows' applications received, in all.
    pub delivered_bytes: u64,
    pub retransmitted_segments: u64,
    /// Retransmission timeouts of the flows, in all; `None` when an
    /// engine does not know them (the emulator: pcaps do not tell).
    pub timeouts: Option<u64>,
    /// The flows by size bucket ([`SIZE_BUCKETS`]), the buckets with at
    /// least one flow.
    pub buckets: Vec<BucketSummary>,
}

/// The size buckets of FCT and slowdown tables: name and the sizes in it,
/// `low <= bytes < high` (1 KB = 1000 B), in decades from 10 KB as
/// transport studies tabulate the web-search and data-mining workloads
/// (pFabric, SIGCOMM 2013, §5.2, (0, 100 KB] and larger flows apart; Homa,
/// SIGCOMM 2018, §5.1, slowdown by message size).
pub const SIZE_BUCKETS: [(&str, u64, u64); 4] = [
    ("<10KB", 0, 10_000),
    ("10KB-100KB", 10_000, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    (">=1MB", 1_000_000, u64::MAX),
];

/// The flows of one size bucket of an entry in one replication.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct BucketSummary {
    /// Its name in [`SIZE_BUCKETS`].
    pub bucket: String,
    pub flows: u32,
    pub completed: u32,
    /// FCT of the completed flows, s: mean, 50th and 99th percentiles.
    pub fct_mean: f64,
    pub fct_p50: f64,
    pub fct_p99: f64,
    /// Slowdown ([`CountFlow::slowdown`]) of the completed flows.
    pub slowdown_mean: f64,
    pub slowdown_p50: f64,
    pub slowdown_p99: f64,
}

impl BucketSummary {
    /// The bucket summaries of `rows`, the non-empty buckets in order.
    pub fn of(rows: &[&CountFlow]) -> Vec<Self> {
        let or_zero = |x: f64| if x.is_finite() { x } else { 0.0 };
        SIZE_BUCKETS
            .iter()
            .filter_map(|&(name, low, high)| {
                let inside: Vec<&CountFlow> = rows.iter().copied().filter(|r| (low..high).contains(&r.bytes)).collect();
                if inside.is_empty() {
                    return None;
                }
                let done: Vec<&CountFlow> = inside.iter().copied().filter(|r| r.completed).collect();
                let fcts: Vec<f64> = done.iter().map(|r| r.fct).collect();
                let slowdowns: Vec<f64> = done.iter().filter_map(|r| r.slowdown).collect();
                Some(BucketSummary {
                    bucket: name.to_string(),
                    flows: inside.len() as u32,
                    completed: done.len() as u32,
                    fct_mean: or_zero(crate::stats::mean(&fcts)),
                    fct_p50: or_zero(crate::stats::percentile(&fcts, 0.5)),
                    fct_p99: or_zero(crate::stats::percentile(&fcts, 0.99)),
                    slowdown_mean: or_zero(crate::stats::mean(&slowdowns)),
                    slowdown_p50: or_zero(crate::stats::percentile(&slowdowns, 0.5)),
                    slowdown_p99: or_zero(crate::stats::percentile(&slowdowns, 0.99)),
                })
            })
            .collect()
    }
}

/// One flow of a `count` entry: a row of flows.csv, the columns ns-3's
/// FlowMonitor reports per flow (addresses and ports, first and last
/// packet times, bytes, lost packets) with a flow completion time.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct CountFlow {
    pub replication: u32,
    /// The entry's name and the flow's index in it (`NAME#INDEX`).
    pub entry: String,
    pub flow: u32,
    pub src: String,
    pub dst: String,
    /// The server's port (the client's is ephemeral).
    pub dst_port: u16,
    /// When the client sent its SYN, s.
    pub start: f64,
    /// Bytes the application had to send.
    pub bytes: u64,
    pub completed: bool,
    /// Flow completion time, s: from the client's first SYN to the last
    /// byte reaching the receiving application (the receiver knows the
    /// flow is complete then; the sender learns it an ACK later). The
    /// end of the run less `start` when the flow did not complete.
    pub fct: f64,
    /// Delivered bytes·8 / fct, bit/s.
    pub goodput_bps: f64,
    pub retransmitted_segments: u64,
    /// Retransmission timeouts; `None` (an empty cell) when the engine
    /// does not know (the emulator: pcaps do not tell).
    pub timeouts: Option<u64>,
    /// The flow's FCT alone on the empty path, s (squall_sim::ideal);
    /// `None` (an empty cell) for an empty transfer.
    pub ideal_fct: Option<f64>,
    /// fct / ideal_fct (pFabric's normalized FCT, Homa's slowdown); `None`
    /// without an ideal FCT.
    pub slowdown: Option<f64>,
}

impl CountSummary {
    /// The summary of `rows`, the flows of the entry `entry`.
    pub fn of(entry: &str, rows: &[&CountFlow]) -> Self {
        let fcts: Vec<f64> = rows.iter().filter(|r| r.completed).map(|r| r.fct).collect();
        let goodputs: Vec<f64> = rows.iter().filter(|r| r.completed).map(|r| r.goodput_bps).collect();
        let or_zero = |x: f64| if x.is_finite() { x } else { 0.0 };
        CountSummary {
            entry: entry.to_string(),
            flows: rows.len() as u32,
            completed: fcts.len() as u32,
            fct_mean: or_zero(crate::stats::mean(&fcts)),
            fct_p50: or_zero(crate::stats::percentile(&fcts, 0.5)),
            fct_p99: or_zero(crate::stats::percentile(&fcts, 0.99)),
            goodput_mean_bps: or_zero(crate::stats::mean(&goodputs)),
            delivered_bytes: rows.iter().filter(|r| r.completed).map(|r| r.bytes).sum(),
            retransmitted_segments: rows.iter().map(|r| r.retransmitted_segments).sum(),
            timeouts: rows.iter().map(|r| r.timeouts).sum(),
            buckets: BucketSummary::of(rows),
        }
    }
}

/// flows.csv: a header, then one line per flow of every `count` entry of
/// every replication, in replication and flow order.
pub fn count_flows_csv<'a>(rows: impl IntoIterator<Item = &'a CountFlow>) -> String {
    let mut out = String::from(
        "replication,entry,flow,src,dst,dst_port,start_s,bytes,completed,fct_s,goodput_bps,retransmitted_segments,\
         timeouts,ideal_fct_s,slowdown\n",
    );
    let cell = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.9}"));
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{:.9},{},{},{:.9},{:.3},{},{},{},{}\n",
            r.replication,
            r.entry,
            r.flow,
            r.src,
            r.dst,
            r.dst_port,
            r.start,
            r.bytes,
            r.completed,
            r.fct,
            r.goodput_bps,
            r.retransmitted_segments,
            r.timeouts.map_or(String::new(), |n| n.to_string()),
            cell(r.ideal_fct),
            cell(r.slowdown)
        ));
    }
    out
}

/// One TCP connection end's congestion window averaged over its life,
/// weighted by time: from its first send to its last change when its flow
/// completed, else to the end of the run.
#[derive(Serialize)]
pub struct CwndAverage {
    pub flow: String,
    pub connection: u32,
    pub endpoint: &'static str,
    /// The life's start and end, s.
    pub from: f64,
    pub to: f64,
    pub bytes: f64,
}

/// The one run of an emulation: `H` a host's counters, `T` the run's
/// departure-time error (squall-emu's `HostCounters` and `TimingSummary`).
#[derive(Serialize)]
pub struct EmuRunSummary<H, T> {
    pub replication: u32,
    pub seed: u64,
    pub end: f64,
    /// Every flow seen in the hosts' pcaps, analysed by the same code as an
    /// experiment's runs (crate::flows).
    pub flows: Vec<FlowStats>,
    pub stages: Vec<StageSummary>,
    pub hosts: BTreeMap<String, H>,
    pub timing: T,
    /// Each `[[workload.tcp]]` entry with `count` or `arrivals`, its flows
    /// summed up as in a simulated run's [`ReplicationSummary`]; absent
    /// without such an entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_counts: Vec<CountSummary>,
    /// The rows of flows.csv (not in summary.json).
    #[serde(skip)]
    pub count_flows: Vec<CountFlow>,
}

#[derive(Serialize)]
pub struct StageSummary {
    pub name: String,
    pub direction: String,
    pub entered: u64,
    pub delivered: u64,
    pub dropped: BTreeMap<&'static str, u64>,
    pub ecn_marked: u64,
    pub frame_errors: u64,
    pub retransmissions: u64,
    pub corrupted: u64,
    /// Copies the stage made (`duplicate`); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub duplicated: u64,
    pub mean_queue_len: f64,
    pub max_queue_len: usize,
    /// Background (virtual) packets of the stage, counted apart from the
    /// real ones above; absent when the stage has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<squall_link::BackgroundStats>,
    /// Per class of a classful queue; absent without classes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<squall_link::ClassStats>,
}

#[derive(Serialize, Default)]
pub struct Aggregate {
    /// Flow name → metric → statistics over replications.
    pub flows: BTreeMap<String, BTreeMap<String, Summary>>,
    /// Stage name → metric → statistics over replications.
    pub stages: BTreeMap<String, BTreeMap<String, Summary>>,
    /// `[[workload.tcp]]` entry with `count` → metric of [`CountSummary`]
    /// (flows, completed, fct_mean, fct_p50, fct_p99, goodput_mean_bps)
    /// → statistics over replications; absent without such an entry.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_counts: BTreeMap<String, BTreeMap<String, Summary>>,
    /// The same entries by size bucket: entry → bucket
    /// ([`SIZE_BUCKETS`]) → metric of [`BucketSummary`] → statistics over
    /// the replications that had flows in the bucket.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_count_buckets: BTreeMap<String, BTreeMap<String, BTreeMap<String, Summary>>>,
}

/// Name → metric → one value per replication.
pub type Samples = BTreeMap<String, BTreeMap<String, Vec<f64>>>;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A stage's counters as summary.json writes them (both engines).
pub fn stage_summary(s: &squall_link::StageStats) -> StageSummary {
    StageSummary {
        name: s.name.clone(),
        direction: s.direction.map(|d| d.to_string()).unwrap_or_default(),
        entered: s.entered,
        delivered: s.delivered,
        dropped: s.dropped.iter().filter(|(_, n)| *n > 0).map(|(r, n)| (r.as_str(), n)).collect(),
        ecn_marked: s.ecn_marked,
        frame_errors: s.frame_errors,
        retransmissions: s.retransmissions,
        corrupted: s.corrupted,
        duplicated: s.duplicated,
        mean_queue_len: s.mean_queue_len,
        max_queue_len: s.max_queue_len,
        background: (s.background.generated + s.background.received > 0).then_some(s.background),
        classes: s.classes.clone(),
    }
}

/// The stages' samples of every replication (`runs`: each one's stages):
/// mean queue length and drops by reason.
pub fn stage_samples<'a>(runs: impl IntoIterator<Item = &'a [StageSummary]>) -> Samples {
    let mut stages = Samples::new();
    for r in runs {
        for s in r {
            let m = stages.entry(s.name.clone()).or_default();
            let mut put = |k: &str, v: f64| m.entry(k.to_string()).or_default().push(v);
            put("mean_queue_len", s.mean_queue_len);
            for reason in DropReason::ALL {
                put(
                    &format!("dropped_{}", reason.as_str()),
                    s.dropped.get(reason.as_str()).copied().unwrap_or(0) as f64,
                );
            }
        }
    }
    stages
}

impl Aggregate {
    /// Every sample summarised (crate::stats::summarize).
    pub fn from_samples(flows: Samples, stages: Samples) -> Self {
        let summarize_all = |m: Samples| {
            m.into_iter().map(|(k, v)| (k, v.into_iter().map(|(mk, xs)| (mk, summarize(&xs))).collect())).collect()
        };
        Aggregate {
            flows: summarize_all(flows),
            stages: summarize_all(stages),
            tcp_counts: BTreeMap::new(),
            tcp_count_buckets: BTreeMap::new(),
        }
    }

    /// One emulated run: its flows' metrics (crate::report::METRICS, from
    /// the hosts' pcaps) and its stages' queue lengths and drops.
    pub fn of_one_run(flows: &[FlowStats], stages: &[StageSummary]) -> Self {
        let mut aggregate = Aggregate::default();
        for f in flows {
            let m = aggregate.flows.entry(f.flow.clone()).or_default();
            for (k, _) in crate::report::METRICS {
                m.insert(k.to_string(), summarize(&[crate::report::metric(f, k)]));
            }
        }
        for s in stages {
            let m = aggregate.stages.entry(s.name.clone()).or_default();
            m.insert("mean_queue_len".into(), summarize(&[s.mean_queue_len]));
            for reason in DropReason::ALL {
                let n = s.dropped.get(reason.as_str()).copied().unwrap_or(0) as f64;
                m.insert(format!("dropped_{}", reason.as_str()), summarize(&[n]));
            }
        }
        aggregate
    }
}

/// Why a summary.json or result.json cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum SummaryReadError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// The file is not JSON.
    #[error("{} is not JSON", path.display())]
    Json { path: PathBuf, source: serde_json::Error },
    /// The file has no resolved scenario and none is beside it.
    #[error(
        "{} has no `resolved_scenario` and there is no {}; for a run of an experiment, `squall report` its \
         experiment's directory (a page per point, under runs/)",
        path.display(),
        beside.display()
    )]
    NoScenario { path: PathBuf, beside: PathBuf, source: io::Error },
    /// The scenario beside the file is not a scenario.
    #[error("{} is not a scenario", path.display())]
    NotScenario { path: PathBuf, source: ScenarioTextError },
    /// A host of the resolved scenario has no name or no IPv4 address.
    #[error("{}: resolved_scenario.hosts: expected a name and an IPv4 address (address), an IPv6 one (address6) or both, found {host}", path.display())]
    Host { path: PathBuf, host: serde_json::Value },
    /// Neither the run nor its scenario says how long it was.
    #[error("{}: no run length (`end`, or the scenario's `duration`)", path.display())]
    NoEnd { path: PathBuf },
}

/// Why a resolved scenario written as TOML cannot be read as JSON.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioTextError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The engine that wrote a summary.json or result.json (`sim` when it
/// does not say).
pub fn engine(summary: &serde_json::Value) -> &str {
    summary["engine"].as_str().unwrap_or("sim")
}

/// summary.json or result.json, read: the whole value, the resolved
/// scenario, its hosts, and the length of run `replication` (seconds).
pub fn read_result(
    path: &Path,
    replication: u32,
) -> Result<(serde_json::Value, serde_json::Value, Vec<RunHost>, f64), SummaryReadError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| SummaryReadError::Read { path: path.to_path_buf(), source })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| SummaryReadError::Json { path: path.to_path_buf(), source })?;
    let scenario = match &v["resolved_scenario"] {
        s if s.is_object() => s.clone(),
        // A simulated run of an experiment: its scenario is beside it, or
        // given by the caller (the manifest's point).
        _ => {
            let beside = path.with_file_name("scenario.toml");
            let text = std::fs::read_to_string(&beside).map_err(|source| SummaryReadError::NoScenario {
                path: path.to_path_buf(),
                beside: beside.clone(),
                source,
            })?;
            toml_to_json(&text).map_err(|source| SummaryReadError::NotScenario { path: beside, source })?
        }
    };
    read_with_scenario(path, v, scenario, replication)
}

/// A resolved scenario written as TOML, as the JSON value summary.json
/// would hold (both are the same serde serialisation).
pub fn toml_to_json(text: &str) -> Result<serde_json::Value, ScenarioTextError> {
    let value: toml::Value = toml::from_str(text)?;
    Ok(serde_json::to_value(value)?)
}

/// [`read_result`] of the file at `path`, read already (`v`), with its
/// resolved scenario (`scenario`, as JSON).
pub fn read_with_scenario(
    path: &Path,
    v: serde_json::Value,
    scenario: serde_json::Value,
    replication: u32,
) -> Result<(serde_json::Value, serde_json::Value, Vec<RunHost>, f64), SummaryReadError> {
    let mut hosts = Vec::new();
    for h in scenario["hosts"].as_array().into_iter().flatten() {
        let v4 = h["address"].as_str().map(|a| a.parse::<std::net::Ipv4Addr>().ok());
        let v6 = h["address6"].as_str().map(|a| a.parse::<std::net::Ipv6Addr>().ok());
        let (Some(name), v4, v6) = (h["name"].as_str(), v4, v6) else {
            return Err(SummaryReadError::Host { path: path.to_path_buf(), host: h.clone() });
        };
        // Each address given must parse, and one at least be given.
        let (Some(v4), Some(v6)) = (v4.map_or(Some(None), |a| a.map(Some)), v6.map_or(Some(None), |a| a.map(Some)))
        else {
            return Err(SummaryReadError::Host { path: path.to_path_buf(), host: h.clone() });
        };
        if v4.is_none() && v6.is_none() {
            return Err(SummaryReadError::Host { path: path.to_path_buf(), host: h.clone() });
        }
        hosts.push(RunHost { name: name.to_string(), addresses: squall_link::Addresses { v4, v6 } });
    }
    let duration = scenario["duration"].as_str().and_then(|d| d.parse::<squall_link::Duration>().ok());
    let run =
        v["runs"].as_array().and_then(|r| r.iter().find(|r| r["replication"].as_u64() == Some(replication.into())));
    let end = run
        .and_then(|r| r["end"].as_f64())
        .or_else(|| v["end"].as_f64())
        .or(duration.map(|d| d.as_secs_f64()))
        .ok_or_else(|| SummaryReadError::NoEnd { path: path.to_path_buf() })?;
    Ok((v, scenario, hosts, end))
}

/// The emulator's departure-time error per run of an experiment's
/// emulated set in `dir` (rep-N/result.json `timing`): p99 in µs, and
/// whether the run was flagged. A run whose file is missing or has no
/// timing is left out.
pub fn emu_timing(dir: &Path, replications: u32) -> Vec<(f64, bool)> {
    (0..replications)
        .filter_map(|r| {
            let text = std::fs::read_to_string(dir.join(format!("rep-{r}/result.json"))).ok()?;
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            Some((v["timing"]["error_p99"].as_f64()? * 1e6, v["timing"]["on_time"].as_bool() == Some(false)))
        })
        .collect()
}
