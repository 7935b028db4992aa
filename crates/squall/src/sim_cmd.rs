//! `squall sim`: run a scenario's replications in the simulate engine and
//! write summary.json, the resolved scenario, events.csv and pcaps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use squall_analysis::{Summary, summarize};
use squall_link::DropReason;
use squall_scenario::Scenario;
use squall_sim::TcpFlowResult;

pub use squall_outputs::sim::{Outputs, ReplicationSummary, SimSummary, scenario_text, simulate_replication};

pub use crate::output::Format;
use crate::output::{self, out, outln};
use crate::run_args::MANY_RUNS;

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
    /// A Mahimahi trace (mm-link's DOWNLINK-TRACE) for --link's downlink:
    /// a stage sending at its delivery opportunities follows the --link one.
    #[arg(long, requires = "link", value_name = "FILE")]
    pub downlink_trace: Option<PathBuf>,
    /// The same for the uplink (mm-link's UPLINK-TRACE).
    #[arg(long, requires = "link", value_name = "FILE")]
    pub uplink_trace: Option<PathBuf>,
    /// mm-link's --once: play the --downlink-trace and --uplink-trace
    /// once instead of looping them; the run ends at the end of the
    /// shorter (scenario files: `trace = { file = "...", once = true }`).
    #[arg(long)]
    pub once: bool,
    #[command(flatten)]
    pub mm: crate::mahimahi_flags::MahimahiFlags,
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
    /// Replace the run already in --out (its files are removed first, so
    /// no rep-N/ of the old run stays); without it such a directory is
    /// refused.
    #[arg(long)]
    pub force: bool,
    /// How to print the per-flow results: an aligned `table`, or `json` /
    /// `csv` with plain numbers and the unit in each name
    /// (`throughput_bit_per_s`, `delay_mean_s`); json adds the stages.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Run more than 100 000 replications (refused without it, as
    /// `squall run` refuses such experiments: usually a typo).
    #[arg(long)]
    pub allow_many_runs: bool,
    /// Replications run in parallel on this many threads (default: all cores).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Add a bulk TCP transfer from the first host of the first link to
    /// the second for the whole run, with this congestion control (tahoe,
    /// reno, newreno, sack, cubic, vegas, bbr): `--link "rate 10mbit delay 50ms" --tcp cubic`.
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
            t.try_into().map_err(|_| {
                anyhow::anyhow!("--tcp {cc:?}: expected tahoe, reno, newreno, sack, cubic, vegas or bbr")
            })?,
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
            // clap's `requires = "link"` lets these through beside a
            // scenario file (seen: the run went on without them).
            if args.uplink.is_some() {
                bail!(
                    "--uplink gives the uplink of a --link one-liner; a scenario file has its own [[links.uplink]] \
                     (change it with --set links.0.uplink.0.KEY=VALUE)"
                );
            }
            if args.downlink_trace.is_some() || args.uplink_trace.is_some() {
                bail!(
                    "--downlink-trace and --uplink-trace add a trace stage to a --link one-liner; in a scenario file give the stage `trace = \"FILE\"`"
                );
            }
            if args.once {
                bail!(
                    "--once plays --downlink-trace and --uplink-trace once; in a scenario file give the stage `trace = {{ file = \"FILE\", once = true }}`"
                );
            }
            if args.mm.any() {
                bail!(
                    "--uplink-queue, --downlink-queue and --onoff go with a --link one-liner; in a scenario file give the stage's `queue` and a [[blackouts]] entry (docs/guide: For netem and Mahimahi users)"
                );
            }
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
            if args.once && args.downlink_trace.is_none() && args.uplink_trace.is_none() {
                bail!("--once plays a trace once: give it with --downlink-trace FILE or --uplink-trace FILE");
            }
            let mut scenario = squall_scenario::scenario_from_netem(link, args.uplink.as_deref())
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            for (downlink, file, flag) in
                [(true, &args.downlink_trace, "--downlink-trace"), (false, &args.uplink_trace, "--uplink-trace")]
            {
                if let Some(file) = file {
                    squall_scenario::mahimahi::append_trace_stage(&mut scenario, downlink, file, args.once)
                        .with_context(|| format!("{flag} {}", file.display()))?;
                }
            }
            args.mm.apply(&mut scenario)?;
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

pub fn run(sim: SimArgs) -> Result<ExitCode> {
    let args = &sim.common;
    let Loaded { source, scenario } = load_with(args, sim.replications, sim.tcp.as_deref(), sim.udp.as_deref())?;
    if let Some(why) = scenario.refuse_outside_host("the simulator") {
        bail!("{source}: {why}");
    }
    if u64::from(scenario.replications) > MANY_RUNS && !sim.allow_many_runs {
        bail!(
            "{source}: {} replications, more than the {MANY_RUNS} that run without asking (each writes a rep-N/ \
             directory); add --allow-many-runs to run them all",
            scenario.replications
        );
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("out").join(&scenario.name));
    output::prepare_out_dir(&out, sim.force)?;
    squall_outputs::sim::write_resolved_scenario(&out, &scenario)?;
    let jobs = sim.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if args.link.is_some() {
        eprintln!("{}", squall_scenario::describe_netem_directions(&scenario, args.uplink.is_some()));
    }
    for never in scenario.after_the_end() {
        eprintln!("squall sim: warning: {never}");
    }
    eprintln!(
        "squall sim: {} ({source}), {} replication(s) from seed {}, {} s each, {jobs} thread(s)",
        scenario.name,
        scenario.replications,
        scenario.seed,
        scenario.duration.as_secs_f64()
    );
    let tcp_limits = crate::limits::tcp_limits(&scenario);
    // Said once: in the table's notes, or on stderr when stdout holds
    // json or csv (where summary.json's `tcp_limits` has it too).
    if sim.format != Format::Table {
        for l in &tcp_limits {
            eprintln!("squall sim: tcp flow `{}` is {}", l.flow, l.limited_by.text);
        }
    }
    let outputs = Outputs { events: !args.no_events, pcap: !args.no_pcap };
    let summary = squall_outputs::sim::simulate_into(scenario, source, &out, jobs, outputs, tcp_limits)?;
    match sim.format {
        Format::Table => print_table(&summary),
        Format::Json => outln!("{}", serde_json::to_string_pretty(&flat_results(&summary))?),
        Format::Csv => out!("{}", flows_csv(&summary)),
    }
    let per_run: Vec<&str> = [(outputs.events, "events.csv"), (outputs.pcap, "HOST.pcap")]
        .into_iter()
        .filter(|o| o.0)
        .map(|o| o.1)
        .collect();
    let per_run = if per_run.is_empty() { String::new() } else { format!(" and rep-N/ ({})", per_run.join(", ")) };
    let flows_csv = if squall_outputs::sim::wrote_flows_csv(&summary) { ", flows.csv" } else { "" };
    let wrote = format!("wrote {}/summary.json{flows_csv}, scenario.toml{per_run}", out.display());
    // With json or csv, stdout holds the data alone.
    if sim.format == Format::Table {
        outln!("\n{wrote}");
    } else {
        eprintln!("{wrote}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Per flow, the columns of `--format json|csv`: (name with its unit,
/// mean over replications). Plain numbers in SI base units.
fn flow_columns(m: &BTreeMap<String, Summary>) -> Vec<(&'static str, f64)> {
    let g = |k: &str| m.get(k).map_or(f64::NAN, |x| x.mean);
    let throughput = m.get("throughput_bps").copied().unwrap_or_else(|| summarize(&[]));
    let ci = |low: bool| {
        if throughput.n < 2 {
            f64::NAN
        } else if low {
            throughput.ci95.low
        } else {
            throughput.ci95.high
        }
    };
    vec![
        ("replications", throughput.n as f64),
        ("sent_packets", g("sent_packets")),
        ("delivered_packets", g("delivered_packets")),
        ("dropped_packets", g("dropped_packets")),
        ("throughput_bit_per_s", g("throughput_bps")),
        ("throughput_ci95_low_bit_per_s", ci(true)),
        ("throughput_ci95_high_bit_per_s", ci(false)),
        ("delay_mean_s", g("delay_mean")),
        ("delay_p50_s", g("delay_p50")),
        ("delay_p99_s", g("delay_p99")),
        ("jitter_rfc3550_s", g("jitter_rfc3550")),
        ("interarrival_sd_s", g("interarrival_sd")),
    ]
}

/// `--format json`: the flows' means and the stages' drops and queue
/// lengths, numbers only (a confidence bound that does not exist, n < 2,
/// is null).
fn flat_results(s: &SimSummary) -> serde_json::Value {
    let num = |x: f64| if x.is_finite() { serde_json::json!(x) } else { serde_json::Value::Null };
    let flows: Vec<serde_json::Value> = s
        .aggregate
        .flows
        .iter()
        .map(|(name, m)| {
            let mut o = serde_json::Map::new();
            o.insert("flow".into(), name.clone().into());
            for (k, v) in flow_columns(m) {
                o.insert(k.into(), num(v));
            }
            o.into()
        })
        .collect();
    let stages: Vec<serde_json::Value> = s
        .aggregate
        .stages
        .iter()
        .map(|(name, m)| {
            let mut o = serde_json::Map::new();
            o.insert("stage".into(), name.clone().into());
            for (k, v) in m {
                let key = if k == "mean_queue_len" { "mean_queue_packets".to_string() } else { format!("{k}_packets") };
                o.insert(key, num(v.mean));
            }
            o.into()
        })
        .collect();
    serde_json::json!({ "flows": flows, "stages": stages })
}

/// `--format csv`: one row per flow, the columns of [`flow_columns`]; a
/// confidence bound that does not exist (n < 2) is an empty cell.
fn flows_csv(s: &SimSummary) -> String {
    let mut text = String::new();
    for (i, (name, m)) in s.aggregate.flows.iter().enumerate() {
        let cols = flow_columns(m);
        if i == 0 {
            let header: Vec<&str> = cols.iter().map(|c| c.0).collect();
            text.push_str(&format!("flow,{}\n", header.join(",")));
        }
        let quoted =
            if name.contains([',', '"']) { format!("\"{}\"", name.replace('"', "\"\"")) } else { name.clone() };
        let values: Vec<String> =
            cols.iter().map(|c| if c.1.is_finite() { c.1.to_string() } else { String::new() }).collect();
        text.push_str(&format!("{quoted},{}\n", values.join(",")));
    }
    text
}

/// The SI prefix for bit rates up to `max` bit/s: (divisor, unit).
fn si_rate_unit(max: f64) -> (f64, &'static str) {
    match max {
        m if m >= 1e9 => (1e9, "Gbit/s"),
        m if m >= 1e6 => (1e6, "Mbit/s"),
        m if m >= 1e3 => (1e3, "kbit/s"),
        _ => (1.0, "bit/s"),
    }
}

/// A mean over replications divided by `scale`, with its 95% confidence
/// interval only where one means something: "(1 run)" for n = 1, "(all N
/// identical)" when nothing varied, else "MEAN ± HALF-WIDTH".
fn mean_with_ci(x: &Summary, scale: f64, decimals: usize) -> String {
    let mean = x.mean / scale;
    match x.n {
        0 => "-".to_string(),
        1 => format!("{mean:.decimals$} (1 run)"),
        n if x.std_dev == 0.0 => format!("{mean:.decimals$} (all {n} identical)"),
        _ => format!("{mean:.decimals$} ± {:.decimals$}", x.ci95.half_width() / scale),
    }
}

/// Prints `rows` (the first is the header) as columns two spaces apart,
/// the first left-aligned, the others right-aligned.
pub(crate) fn print_aligned(rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|v| v.chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| if c == 0 { format!("{v:<w$}", w = width[c]) } else { format!("{v:>w$}", w = width[c]) })
            .collect();
        outln!("{}", cells.join("  ").trim_end());
    }
}

/// Per TCP flow over the replications, as seed 000's Table 2: elapsed time
/// (10th, 50th, 90th percentile), and medians of goodput, retransmitted
/// segments, dropped packets (both directions) and timeouts.
fn print_tcp_table(s: &SimSummary) {
    let Some(first) = s.runs.first() else { return };
    if first.tcp_flows.is_empty() {
        return;
    }
    outln!("\ntcp flows (elapsed: p10 / p50 / p90 over replications; the rest medians)");
    outln!(
        "{:<16} {:>9} {:>26} {:>16} {:>8} {:>8} {:>8} {:>8}",
        "flow",
        "completed",
        "elapsed p10/p50/p90 (s)",
        "goodput",
        "rexmit",
        "dropped",
        "timeouts",
        "goodput%"
    );
    for (i, flow) in first.tcp_flows.iter().enumerate() {
        let per_run = |f: &dyn Fn(&ReplicationSummary, &TcpFlowResult) -> f64| -> Vec<f64> {
            s.runs.iter().filter_map(|r| r.tcp_flows.get(i).map(|t| f(r, t))).collect()
        };
        let completed = per_run(&|_, t| f64::from(u8::from(t.completed))).iter().sum::<f64>();
        let elapsed = per_run(&|_, t| t.transfer_time);
        let goodput = per_run(&|_, t| t.goodput_bps);
        let rexmit = per_run(&|_, t| t.sender.retransmitted_segments as f64);
        let timeouts = per_run(&|_, t| t.sender.timeouts as f64);
        let link_goodput = per_run(&|_, t| t.sender.goodput * 100.0);
        let prefix = format!("{}:", flow.name);
        let dropped = per_run(&|r, _| {
            r.flows.iter().filter(|f| f.name.starts_with(&prefix)).map(|f| f.dropped.values().sum::<u64>()).sum::<u64>()
                as f64
        });
        let p = |xs: &[f64], q: f64| squall_analysis::percentile(xs, q);
        outln!(
            "{:<16} {:>4.0}/{:<4} {:>8.2}/{:>8.2}/{:>8.2} {:>9.3} Mbit/s {:>8.0} {:>8.0} {:>8.0} {:>8.1}",
            flow.name,
            completed,
            s.runs.len(),
            p(&elapsed, 0.1),
            p(&elapsed, 0.5),
            p(&elapsed, 0.9),
            p(&goodput, 0.5) / 1e6,
            p(&rexmit, 0.5),
            p(&dropped, 0.5),
            p(&timeouts, 0.5),
            p(&link_goodput, 0.5),
        );
    }
}

fn print_table(s: &SimSummary) {
    let n = s.replications;
    let note = if n >= 2 { "; ± is the 95% CI half-width" } else { "" };
    outln!("\nflows (mean over {n} replication(s){note}; docs/metrics.md defines each figure)");
    let flows: Vec<(&String, &BTreeMap<String, Summary>)> = s.aggregate.flows.iter().collect();
    let stat = |m: &BTreeMap<String, Summary>, k: &str| m.get(k).cloned().unwrap_or_else(|| summarize(&[]));
    let max_rate = flows.iter().map(|(_, m)| stat(m, "throughput_bps").mean).fold(0.0, f64::max);
    let (scale, unit) = si_rate_unit(max_rate);
    let mut rows = vec![
        [
            "flow",
            "sent",
            "delivered",
            "dropped",
            &format!("throughput ({unit})"),
            "delay mean (ms)",
            "delay p99 (ms)",
            "jitter RFC 3550 (ms)",
            "inter-arrival sd (ms)",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (name, m) in flows {
        let ms = |k: &str| format!("{:.1}", stat(m, k).mean * 1e3);
        rows.push(vec![
            name.clone(),
            format!("{:.0}", stat(m, "sent_packets").mean),
            format!("{:.0}", stat(m, "delivered_packets").mean),
            format!("{:.0}", stat(m, "dropped_packets").mean),
            mean_with_ci(&stat(m, "throughput_bps"), scale, 3),
            ms("delay_mean"),
            ms("delay_p99"),
            ms("jitter_rfc3550"),
            ms("interarrival_sd"),
        ]);
    }
    print_aligned(&rows);
    print_tcp_table(s);
    for l in &s.tcp_limits {
        outln!("note: tcp flow `{}` is {}", l.flow, l.limited_by.text);
    }
    outln!("\nstages (drops by reason, mean over replications)");
    for (name, m) in &s.aggregate.stages {
        let drops: Vec<String> = DropReason::ALL
            .iter()
            .filter_map(|r| {
                let v = m.get(&format!("dropped_{}", r.as_str()))?.mean;
                (v > 0.0).then(|| format!("{}={v:.1}", r.as_str()))
            })
            .collect();
        let q = m.get("mean_queue_len").map_or(f64::NAN, |x| x.mean);
        outln!(
            "{:<16} mean queue {:>7.2} pkts   drops: {}",
            name,
            q,
            if drops.is_empty() { "none".into() } else { drops.join(" ") }
        );
    }
}
