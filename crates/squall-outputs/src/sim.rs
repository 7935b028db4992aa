//! `squall sim`'s replications and files (moved from the binary's
//! sim_cmd.rs unchanged, with the loop that ran them and wrote
//! summary.json now in [`simulate_into`]): the CLI and the Python package
//! run the same code, so their numbers are the same.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use squall_analysis::summary_file::{self, Aggregate, CwndAverage, SummaryFile, stage_samples, stage_summary};
use squall_link::DropReason;
use squall_scenario::Scenario;
use squall_sim::{EventFilter, FileRecorder, FlowResult, RunOptions, RunResult, TcpFlowResult};

use crate::builtin;
use crate::files::{write_atomic, write_atomic_with};
use crate::limits::FlowLimit;

/// A scenario's name as given (`builtin:NAME`, or its path: relative to
/// `base`), its text, and the directory its own file names are relative
/// to.
pub fn scenario_text(spec: &str, base: &Path) -> Result<(String, String, PathBuf)> {
    match spec.strip_prefix("builtin:") {
        Some(name) => {
            let b = builtin::find(name)
                .with_context(|| format!("no built-in scenario `{name}`; `squall scenarios` lists them"))?;
            Ok((format!("builtin:{name}"), b.text.to_string(), PathBuf::from("scenarios")))
        }
        None => {
            let path = base.join(spec);
            let text =
                fs::read_to_string(&path).with_context(|| format!("cannot read scenario file {}", path.display()))?;
            Ok((path.display().to_string(), text, path.parent().map(Path::to_path_buf).unwrap_or_default()))
        }
    }
}

/// Which files a replication writes besides its summary.
#[derive(Clone, Copy, Debug)]
pub struct Outputs {
    pub events: bool,
    pub pcap: bool,
}

/// One replication's outcome in summary.json (squall_analysis::summary_file).
pub type ReplicationSummary = summary_file::ReplicationSummary<FlowResult, TcpFlowResult>;

/// A traced end's time-averaged congestion window for summary.json.
fn cwnd_average(life: &squall_sim::CwndLife, flows: &[TcpFlowResult], end: squall_link::Instant) -> CwndAverage {
    let completed = flows.iter().any(|f| f.name == life.flow && f.completed);
    let close = if completed { life.last } else { end.max(life.last) };
    CwndAverage {
        flow: life.flow.clone(),
        connection: life.connection,
        endpoint: life.endpoint,
        from: life.first.as_secs_f64(),
        to: close.as_secs_f64(),
        bytes: life.average(close),
    }
}

/// A simulated run's summary.json: no keys of its own after `aggregate`.
pub type SimSummary = SummaryFile<ReplicationSummary, FlowLimit, ()>;

/// Runs one replication of `scenario` with `seed`, its events.csv (with
/// the events `filter` keeps) and pcaps streamed into `rep_dir` as the run
/// makes them (memory stays bounded however long the run), with its TCP
/// trace files; returns its summary. A simulation error stops the caller's
/// other replications; a file that cannot be written fails this one.
pub fn simulate_replication(
    scenario: &Scenario,
    replication: u32,
    seed: u64,
    rep_dir: &Path,
    outputs: Outputs,
    filter: EventFilter,
) -> Result<Result<ReplicationSummary>, squall_sim::SimError> {
    let existed = rep_dir.exists();
    if let Err(e) = fs::create_dir_all(rep_dir) {
        return Ok(Err(anyhow::anyhow!("cannot create {}: {e}", rep_dir.display())));
    }
    let vectors = match squall_sim::VectorWriter::create(rep_dir, scenario) {
        Ok(v) => v,
        Err(e) => return Ok(Err(anyhow::anyhow!(e))),
    };
    // `[[record]]` vectors come from the events and TCP samples.
    let record_events = outputs.events || vectors.is_some();
    let options = RunOptions { record_events, record_packets: false, record_captures: outputs.pcap };
    let recorder = FileRecorder::new(rep_dir, outputs.events.then_some(filter), outputs.pcap).with_vectors(vectors);
    let (run, mut recorder) = match squall_sim::run_recorded(scenario, seed, options, Box::new(recorder)) {
        Ok(done) => done,
        Err(e) => {
            // A run that failed leaves no half-written files of its own.
            if !existed {
                let _ = fs::remove_dir_all(rep_dir);
            }
            return Err(e);
        }
    };
    let lives = match recorder.finish_vectors(run.end) {
        Ok(lives) => lives,
        Err(e) => return Ok(Err(anyhow::anyhow!(e))),
    };
    let cwnd_average = lives.iter().map(|l| cwnd_average(l, &run.tcp_flows, run.end)).collect();
    Ok(recorder
        .finish()
        .map_err(anyhow::Error::msg)
        .map(|()| replication_summary(scenario, replication, run, cwnd_average)))
}

/// A replication's summary (its files are written already); the flows of
/// `count` entries go to its rows of flows.csv.
fn replication_summary(
    scenario: &Scenario,
    replication: u32,
    mut run: RunResult,
    cwnd_average: Vec<CwndAverage>,
) -> ReplicationSummary {
    let (tcp_counts, count_flows) = crate::count_out::take_count_flows(scenario, replication, &mut run);
    ReplicationSummary {
        tcp_counts,
        count_flows,
        replication,
        seed: run.seed,
        end: run.end.as_secs_f64(),
        flows: run.flows,
        tcp_flows: run.tcp_flows,
        stages: run.stages.iter().map(stage_summary).collect(),
        cwnd_average,
        clock_phases: run.clock_phases.iter().map(|(h, phase)| (h.clone(), phase.as_secs_f64())).collect(),
    }
}

pub fn aggregate(runs: &[ReplicationSummary]) -> Aggregate {
    let mut flows: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for r in runs {
        for f in &r.flows {
            let m = flows.entry(f.name.clone()).or_default();
            let mut put = |k: &str, v: f64| m.entry(k.to_string()).or_default().push(v);
            put("sent_packets", f.sent_packets as f64);
            put("delivered_packets", f.delivered_packets as f64);
            put("delivered_bytes", f.delivered_bytes as f64);
            put("throughput_bps", f.throughput_bps);
            put("delay_mean", f.delay_mean);
            put("delay_p50", f.delay_p50);
            put("delay_p99", f.delay_p99);
            put("interarrival_sd", f.interarrival_sd);
            put("jitter_rfc3550", f.jitter_rfc3550);
            let dropped: u64 = f.dropped.values().sum();
            put("dropped_packets", dropped as f64);
            for reason in DropReason::ALL {
                put(&format!("dropped_{}", reason.as_str()), f.dropped.get(&reason).copied().unwrap_or(0) as f64);
            }
        }
    }
    let stages = stage_samples(runs.iter().map(|r| r.stages.as_slice()));
    let mut aggregate = Aggregate::from_samples(flows, stages);
    aggregate.tcp_counts = crate::count_out::aggregate(runs.iter().map(|r| r.tcp_counts.as_slice()));
    aggregate.tcp_count_buckets = crate::count_out::aggregate_buckets(runs.iter().map(|r| r.tcp_counts.as_slice()));
    aggregate
}

/// Writes the resolved scenario as `out`/scenario.toml (the first file
/// of a run, which marks the directory as one).
pub fn write_resolved_scenario(out: &Path, scenario: &Scenario) -> Result<()> {
    let resolved = toml::to_string(scenario).context("cannot write the resolved scenario")?;
    write_atomic(&out.join("scenario.toml"), &resolved)
}

/// Runs every replication of `scenario` on `jobs` threads (replication i
/// with seed + i, each into `out`/rep-i/), then writes `out`/summary.json
/// with the replications, their aggregate and `tcp_limits`; returns what
/// it wrote. `source` is the scenario's name as given (a path or
/// `builtin:NAME`). A simulation error stops the other replications.
pub fn simulate_into(
    scenario: Scenario,
    source: String,
    out: &Path,
    jobs: usize,
    outputs: Outputs,
    tcp_limits: Vec<FlowLimit>,
) -> Result<SimSummary> {
    let runs = squall_sim::for_each_replication(&scenario, jobs, |i| {
        let rep_dir = out.join(format!("rep-{i}"));
        simulate_replication(&scenario, i, scenario.replication_seed(i), &rep_dir, outputs, EventFilter::All)
    })?;
    let runs: Vec<ReplicationSummary> = runs.into_iter().collect::<Result<_>>()?;
    let summary = SimSummary {
        squall_version: env!("CARGO_PKG_VERSION"),
        engine: "sim",
        scenario: scenario.name.clone(),
        source,
        seed: scenario.seed,
        replications: scenario.replications,
        aggregate: aggregate(&runs),
        resolved_scenario: scenario,
        tcp_limits,
        runs,
        engine_details: (),
    };
    write_atomic_with(&out.join("summary.json"), |w| Ok(serde_json::to_writer_pretty(w, &summary)?))?;
    if wrote_flows_csv(&summary) {
        let csv = summary_file::count_flows_csv(summary.runs.iter().flat_map(|r| &r.count_flows));
        write_atomic(&out.join("flows.csv"), csv)?;
    }
    Ok(summary)
}

/// Whether [`simulate_into`] wrote flows.csv: the run has flows of
/// `count` entries.
pub fn wrote_flows_csv(summary: &SimSummary) -> bool {
    summary.runs.iter().any(|r| !r.count_flows.is_empty())
}
