//! `squall sim`: run a scenario's replications in the simulate engine and
//! write summary.json, the resolved scenario, events.csv and pcaps.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use squall_analysis::{Summary, summarize};
use squall_link::DropReason;
use squall_scenario::Scenario;
use squall_sim::{EventFilter, FileRecorder, FlowResult, RunOptions, RunResult, TcpFlowResult};

use crate::builtin;

/// What both engines take to find their scenario and where to write.
#[derive(Args, Clone)]
pub struct ScenarioArgs {
    /// Scenario file, or builtin:NAME (`squall scenarios` lists them).
    /// Leave out when giving --link.
    pub scenario: Option<String>,
    /// A one-line downlink in netem's words instead of a scenario file:
    /// "rate 10mbit delay 50ms loss 1%".
    #[arg(long, conflicts_with = "scenario")]
    pub link: Option<String>,
    /// The uplink for --link (default: the downlink's delay, no loss).
    #[arg(long, requires = "link")]
    pub uplink: Option<String>,
    /// Output directory (default: out/SCENARIO-NAME, out/SCENARIO-NAME-emu
    /// for emulation).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the first replication (replication i uses seed + i).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Set a scenario key before running: `--set links.0.downlink.0.rate="2 Mbit/s"`,
    /// `--set stage.gsm-down.delay="300 ms"`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Do not write events.csv (faster, smaller).
    #[arg(long)]
    pub no_events: bool,
    /// Do not write pcap files.
    #[arg(long)]
    pub no_pcap: bool,
}

#[derive(Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub common: ScenarioArgs,
    /// Replications to run, each with the next seed (default: the
    /// scenario's `replications`, else 1).
    #[arg(long)]
    pub replications: Option<u32>,
    /// Replications run in parallel on this many threads (default: all cores).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Add a bulk TCP transfer from the first host of the first link to
    /// the second for the whole run, with this congestion control (tahoe,
    /// reno, newreno, sack, cubic): `--link "rate 10mbit delay 50ms" --tcp cubic`.
    #[arg(long, value_name = "CC")]
    pub tcp: Option<String>,
    /// Add a constant-rate UDP flow of 1200-byte packets the same way, at
    /// this rate: `--udp "5 Mbit/s"`.
    #[arg(long, value_name = "RATE")]
    pub udp: Option<String>,
}

/// Adds the `--tcp` and `--udp` workloads to `scenario` and checks it.
fn add_workloads(scenario: &mut Scenario, tcp: Option<&str>, udp: Option<&str>) -> Result<()> {
    if tcp.is_none() && udp.is_none() {
        return Ok(());
    }
    let Some(link) = scenario.links.first() else { bail!("--tcp and --udp need a scenario with a link") };
    let [from, to] = link.between.clone();
    let duration = scenario.duration;
    let flow = |text: String, what: &str| -> Result<toml::Table> {
        text.parse::<toml::Table>().with_context(|| format!("{what}: not a valid value"))
    };
    if let Some(cc) = tcp {
        let t = flow(
            format!("name = \"tcp\"\nfrom = {from:?}\nto = {to:?}\ncc = {cc:?}\napp = {{ bulk_for = \"{duration}\" }}"),
            "--tcp",
        )?;
        scenario.workload.tcp.push(
            t.try_into().map_err(|_| anyhow::anyhow!("--tcp {cc:?}: expected tahoe, reno, newreno, sack or cubic"))?,
        );
    }
    if let Some(rate) = udp {
        let t =
            flow(format!("name = \"udp\"\nfrom = {from:?}\nto = {to:?}\nsize = \"1200 B\"\nrate = {rate:?}"), "--udp")?;
        scenario.workload.udp.push(t.try_into().map_err(|e: toml::de::Error| {
            anyhow::anyhow!("--udp {rate:?}: {}; expected a rate like \"5 Mbit/s\"", e.message())
        })?);
    }
    scenario.check().map_err(|e| anyhow::anyhow!("{e:?}"))
}

/// `--set` on a scenario built in memory (a `--link` one, or one with
/// `--tcp`/`--udp` flows added): edits its TOML as it would a file's.
fn override_resolved(
    source: &str,
    scenario: &Scenario,
    overrides: &[(String, String)],
    base: &Path,
) -> Result<Scenario> {
    let text = toml::to_string(scenario).with_context(|| format!("cannot write the {source} scenario"))?;
    squall_scenario::parse_with_overrides(source, &text, overrides, base).map_err(|e| anyhow::anyhow!("{e:?}"))
}

/// A scenario as loaded: where from, and the resolved value.
pub struct Loaded {
    pub source: String,
    pub scenario: Scenario,
}

/// Loads the scenario `args` name, with its overrides, seed and (when
/// given) number of replications applied.
/// A scenario's name as given (`builtin:NAME`, or its path: relative to
/// `base`), its text, and the directory its own file names are relative
/// to.
pub(crate) fn scenario_text(spec: &str, base: &Path) -> Result<(String, String, PathBuf)> {
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

pub fn load(args: &ScenarioArgs, replications: Option<u32>) -> Result<Loaded> {
    load_with(args, replications, None, None)
}

/// [`load`], with `squall sim`'s `--tcp` and `--udp` flows added before
/// the `--set` overrides are applied, so that `--set workload.tcp.0.…`
/// reaches the flow `--tcp` adds (issue 28).
pub fn load_with(
    args: &ScenarioArgs,
    replications: Option<u32>,
    tcp: Option<&str>,
    udp: Option<&str>,
) -> Result<Loaded> {
    let overrides: Vec<(String, String)> = args
        .overrides
        .iter()
        .map(|kv| {
            kv.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).with_context(|| {
                format!("--set {kv:?}: expected KEY=VALUE, like --set stage.gsm-down.delay=\"300 ms\"")
            })
        })
        .collect::<Result<_>>()?;
    let adds_flows = tcp.is_some() || udp.is_some();
    // The run's length when --tcp added its flow (before --set).
    let mut added_for = None;
    let (source, mut scenario) = match (&args.scenario, &args.link) {
        (Some(s), None) => {
            let (source, text, base) = scenario_text(s, Path::new(""))?;
            if overrides.is_empty() || !adds_flows {
                let mut scenario = squall_scenario::parse_with_overrides(&source, &text, &overrides, &base)
                    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
                add_workloads(&mut scenario, tcp, udp)?;
                (source, scenario)
            } else {
                let mut scenario =
                    squall_scenario::parse(&source, &text, &base).map_err(|e| anyhow::anyhow!("{e:?}"))?;
                add_workloads(&mut scenario, tcp, udp)?;
                added_for = Some(scenario.duration);
                let scenario = override_resolved(&source, &scenario, &overrides, &base)?;
                (source, scenario)
            }
        }
        (None, Some(link)) => {
            let mut scenario = squall_scenario::scenario_from_netem(link, args.uplink.as_deref())
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            add_workloads(&mut scenario, tcp, udp)?;
            added_for = Some(scenario.duration);
            let source = format!("--link {link:?}");
            if overrides.is_empty() {
                (source, scenario)
            } else {
                let scenario = override_resolved(&source, &scenario, &overrides, Path::new("."))?;
                (source, scenario)
            }
        }
        _ => bail!("give a scenario (a file or builtin:NAME) or --link \"rate 10mbit delay 50ms loss 1%\""),
    };
    // The --tcp flow sends for the whole run, also when --set changed the
    // run's duration after the flow was added.
    if let (Some(_), Some(before)) = (tcp, added_for)
        && let Some(f) = scenario.workload.tcp.iter_mut().find(|f| f.name == "tcp")
        && f.app == squall_scenario::TcpApp::BulkFor(before)
    {
        f.app = squall_scenario::TcpApp::BulkFor(scenario.duration);
    }
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(r) = replications {
        if r == 0 {
            bail!("--replications must be at least 1");
        }
        scenario.replications = r;
    }
    Ok(Loaded { source, scenario })
}

/// Which files a replication writes besides its summary.
#[derive(Clone, Copy, Debug)]
pub struct Outputs {
    pub events: bool,
    pub pcap: bool,
}

/// One replication's outcome in summary.json.
#[derive(Serialize)]
pub struct ReplicationSummary {
    replication: u32,
    seed: u64,
    end: f64,
    flows: Vec<FlowResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tcp_flows: Vec<TcpFlowResult>,
    stages: Vec<StageSummary>,
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

#[derive(Serialize)]
struct Summary_ {
    squall_version: &'static str,
    engine: &'static str,
    scenario: String,
    source: String,
    seed: u64,
    replications: u32,
    /// Every parameter as the run used it; `squall sim DIR/scenario.toml`
    /// repeats the run exactly.
    resolved_scenario: Scenario,
    /// TCP flows whose window or application caps them below their
    /// path's bottleneck (crate::limits); absent when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tcp_limits: Vec<crate::limits::FlowLimit>,
    runs: Vec<ReplicationSummary>,
    aggregate: Aggregate,
}

#[derive(Serialize, Default)]
struct Aggregate {
    /// Flow name → metric → statistics over replications.
    flows: BTreeMap<String, BTreeMap<String, Summary>>,
    /// Stage name → metric → statistics over replications.
    stages: BTreeMap<String, BTreeMap<String, Summary>>,
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
        mean_queue_len: s.mean_queue_len,
        max_queue_len: s.max_queue_len,
        background: (s.background.generated + s.background.received > 0).then_some(s.background),
        classes: s.classes.clone(),
    }
}

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
    let options = RunOptions { record_events: outputs.events, record_packets: false, record_captures: outputs.pcap };
    let recorder = FileRecorder::new(rep_dir, outputs.events.then_some(filter), outputs.pcap);
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
    Ok(recorder.finish().map_err(anyhow::Error::msg).map(|()| replication_summary(replication, run)))
}

/// A replication's summary (its files are written already).
fn replication_summary(replication: u32, run: RunResult) -> ReplicationSummary {
    ReplicationSummary {
        replication,
        seed: run.seed,
        end: run.end.as_secs_f64(),
        flows: run.flows,
        tcp_flows: run.tcp_flows,
        stages: run.stages.iter().map(stage_summary).collect(),
    }
}

fn aggregate(runs: &[ReplicationSummary]) -> Aggregate {
    let mut agg = Aggregate::default();
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
            put("jitter", f.jitter);
            let dropped: u64 = f.dropped.values().sum();
            put("dropped_packets", dropped as f64);
            for reason in DropReason::ALL {
                put(&format!("dropped_{}", reason.as_str()), f.dropped.get(&reason).copied().unwrap_or(0) as f64);
            }
        }
    }
    let mut stages: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for r in runs {
        for s in &r.stages {
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
    let summarize_all = |m: BTreeMap<String, BTreeMap<String, Vec<f64>>>| {
        m.into_iter().map(|(k, v)| (k, v.into_iter().map(|(mk, xs)| (mk, summarize(&xs))).collect())).collect()
    };
    agg.flows = summarize_all(flows);
    agg.stages = summarize_all(stages);
    agg
}

pub fn run(sim: SimArgs) -> Result<ExitCode> {
    let args = &sim.common;
    let Loaded { source, scenario } = load_with(args, sim.replications, sim.tcp.as_deref(), sim.udp.as_deref())?;
    if let Some(why) = scenario.refuse_outside_host("the simulator") {
        bail!("{source}: {why}");
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("out").join(&scenario.name));
    fs::create_dir_all(&out).with_context(|| format!("cannot create output directory {}", out.display()))?;
    let resolved = toml::to_string(&scenario).context("cannot write the resolved scenario")?;
    fs::write(out.join("scenario.toml"), &resolved).with_context(|| format!("cannot write {}", out.display()))?;
    let jobs = sim.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if args.link.is_some() {
        eprintln!("{}", squall_scenario::describe_netem_directions(&scenario, args.uplink.is_some()));
    }
    eprintln!(
        "squall sim: {} ({source}), {} replication(s) from seed {}, {} s each, {jobs} thread(s)",
        scenario.name,
        scenario.replications,
        scenario.seed,
        scenario.duration.as_secs_f64()
    );
    let tcp_limits = crate::limits::tcp_limits(&scenario);
    for l in &tcp_limits {
        eprintln!("squall sim: tcp flow `{}` is {}", l.flow, l.limited_by.text);
    }
    let outputs = Outputs { events: !args.no_events, pcap: !args.no_pcap };
    let runs = squall_sim::for_each_replication(&scenario, jobs, |i| {
        let rep_dir = out.join(format!("rep-{i}"));
        simulate_replication(&scenario, i, scenario.replication_seed(i), &rep_dir, outputs, EventFilter::All)
    })?;
    let runs: Vec<ReplicationSummary> = runs.into_iter().collect::<Result<_>>()?;
    let summary = Summary_ {
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
    };
    let path = out.join("summary.json");
    fs::write(&path, serde_json::to_string_pretty(&summary)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    print_table(&summary);
    let per_run: Vec<&str> = [(outputs.events, "events.csv"), (outputs.pcap, "HOST.pcap")]
        .into_iter()
        .filter(|o| o.0)
        .map(|o| o.1)
        .collect();
    let per_run = if per_run.is_empty() { String::new() } else { format!(" and rep-N/ ({})", per_run.join(", ")) };
    println!("\nwrote {}/summary.json, scenario.toml{per_run}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Per TCP flow over the replications, as seed 000's Table 2: elapsed time
/// (10th, 50th, 90th percentile), and medians of goodput, retransmitted
/// segments, dropped packets (both directions) and timeouts.
fn print_tcp_table(s: &Summary_) {
    let Some(first) = s.runs.first() else { return };
    if first.tcp_flows.is_empty() {
        return;
    }
    println!("\ntcp flows (elapsed: p10 / p50 / p90 over replications; the rest medians)");
    println!(
        "{:<16} {:>9} {:>26} {:>14} {:>8} {:>8} {:>8} {:>8}",
        "flow", "completed", "elapsed p10/p50/p90 (s)", "goodput", "rexmit", "dropped", "timeouts", "goodput%"
    );
    for (i, flow) in first.tcp_flows.iter().enumerate() {
        let per_run = |f: &dyn Fn(&ReplicationSummary, &TcpFlowResult) -> f64| -> Vec<f64> {
            s.runs.iter().filter_map(|r| r.tcp_flows.get(i).map(|t| f(r, t))).collect()
        };
        let completed = per_run(&|_, t| f64::from(u8::from(t.completed))).iter().sum::<f64>();
        let elapsed = per_run(&|_, t| t.transfer_time);
        let goodput = per_run(&|_, t| t.goodput_bps / 8.0);
        let rexmit = per_run(&|_, t| t.sender.retransmitted_segments as f64);
        let timeouts = per_run(&|_, t| t.sender.timeouts as f64);
        let link_goodput = per_run(&|_, t| t.sender.goodput * 100.0);
        let prefix = format!("{}:", flow.name);
        let dropped = per_run(&|r, _| {
            r.flows.iter().filter(|f| f.name.starts_with(&prefix)).map(|f| f.dropped.values().sum::<u64>()).sum::<u64>()
                as f64
        });
        let p = |xs: &[f64], q: f64| squall_analysis::percentile(xs, q);
        println!(
            "{:<16} {:>4.0}/{:<4} {:>8.2}/{:>8.2}/{:>8.2} {:>10.0} B/s {:>8.0} {:>8.0} {:>8.0} {:>8.1}",
            flow.name,
            completed,
            s.runs.len(),
            p(&elapsed, 0.1),
            p(&elapsed, 0.5),
            p(&elapsed, 0.9),
            p(&goodput, 0.5),
            p(&rexmit, 0.5),
            p(&dropped, 0.5),
            p(&timeouts, 0.5),
            p(&link_goodput, 0.5),
        );
    }
}

fn print_table(s: &Summary_) {
    println!("\nflows (mean over {} replication(s); ± is the 95% CI half-width)", s.replications);
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>16} {:>12} {:>12} {:>12}",
        "flow", "sent", "delivered", "dropped", "throughput", "delay mean", "delay p99", "jitter"
    );
    for (name, m) in &s.aggregate.flows {
        let g = |k: &str| m.get(k).map_or(f64::NAN, |x| x.mean);
        let ci = |k: &str| m.get(k).map_or(f64::NAN, |x| x.ci95.half_width());
        println!(
            "{:<16} {:>9.0} {:>9.0} {:>9.0} {:>9.1}±{:<5.1}kb/s {:>10.1}ms {:>10.1}ms {:>10.1}ms",
            name,
            g("sent_packets"),
            g("delivered_packets"),
            g("dropped_packets"),
            g("throughput_bps") / 1e3,
            ci("throughput_bps") / 1e3,
            g("delay_mean") * 1e3,
            g("delay_p99") * 1e3,
            g("jitter") * 1e3,
        );
    }
    print_tcp_table(s);
    for l in &s.tcp_limits {
        println!("note: tcp flow `{}` is {}", l.flow, l.limited_by.text);
    }
    println!("\nstages (drops by reason, mean over replications)");
    for (name, m) in &s.aggregate.stages {
        let drops: Vec<String> = DropReason::ALL
            .iter()
            .filter_map(|r| {
                let v = m.get(&format!("dropped_{}", r.as_str()))?.mean;
                (v > 0.0).then(|| format!("{}={v:.1}", r.as_str()))
            })
            .collect();
        let q = m.get("mean_queue_len").map_or(f64::NAN, |x| x.mean);
        println!(
            "{:<16} mean queue {:>7.2} pkts   drops: {}",
            name,
            q,
            if drops.is_empty() { "none".into() } else { drops.join(" ") }
        );
    }
}
