//! `squall compare SCENARIO`: the scenario's replications in the simulate
//! engine and in the emulate engine (real Linux TCP, one `squall emu`
//! child per replication, as `squall run` does), both analysed from their
//! pcaps by the same code, side by side per flow and metric against a
//! tolerance (squall_analysis::compare). Exits 1 when a metric is outside
//! its tolerance, so CI can use it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use squall_analysis::buckets::{BucketRow, MeanCi, bucket_rows};
use squall_analysis::compare::{
    MatchedFlow, Overlay, PageInfo, TCP_METRICS, Tolerances, TraceFiles, UDP_METRICS, Verdict, display_relative,
    display_summary, metric_title, overlays, parity, write_report,
};
use squall_analysis::detail::run_detail;
use squall_analysis::flows::flow_label;
use squall_analysis::{RunHost, analyse_run, by_workload};
use squall_link::{FlowKey, Protocol};
use squall_scenario::{Scenario, TcpApp, TcpCc};

use crate::run_args::EventLog;
use crate::run_cmd::{EmuChildOptions, emulate, simulate};
use crate::sim_cmd::{self, Loaded, ScenarioArgs};

const AFTER_HELP: &str = "\
The scenario runs N times in the simulator (squall's TCP and UDP models, virtual time; --sim-replications for \
more) and N times in the emulator (`squall emu` in a child process per replication: real Linux TCP and real UDP sockets in network \
namespaces, through the same link model in real time; needs root). Replication i has seed S + i in both. \
Both engines' runs are analysed from their pcaps by the same code, and each [[workload.tcp]] and \
[[workload.udp]] entry is matched by name (its hosts, protocol and server port in each engine).

Compared per flow: TCP goodput (bit/s), retransmitted data segments (%), mean RTT (s), elapsed time (s, first \
packet to last received); UDP goodput, mean one-way delay, elapsed time. Entries with `count` or `arrivals` are \
compared by size bucket instead: each engine's flows.csv (FCT from the client's SYN to the last data reaching the \
receiver, slowdown against the simulator's ideal FCT) gives its FCT/slowdown table, printed side by side and \
written to DIR/fct_buckets.csv; they must come after the entries compared flow by flow. Each row has both engines' mean and \
95% Student-t interval, the relative difference (emu - sim) / emu and a verdict: pass when its absolute value \
is at most the tolerance.

Writes DIR/compare.csv (the table), DIR/compare.html (the table, and the first replication of each engine \
overlaid: time-sequence diagrams, cwnd and smoothed RTT of the simulator's TCP trace beside Linux's TCP_INFO), \
DIR/plots/*.svg, DIR/sim/rep-N/ and DIR/emu/rep-N/ (each run's pcaps, events.csv and traces).

Exit status: 0 when every metric is within its tolerance, 1 when one is not (listed on stderr), 2 on an error. \
The scenario needs at least one [[workload.tcp]] (bulk, or web with a site) or [[workload.udp]]; \
[[workload.commands]] cannot run in the simulator.

Examples:
  sudo squall compare scenarios/emu/tcp-workload.toml --replications 3
  sudo squall compare my.toml --set links.0.downlink.0.error.packet=1% --tolerance 10% --tolerance rtt_mean=20%";

#[derive(Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct CompareArgs {
    /// Scenario file, or builtin:NAME.
    pub scenario: String,
    /// Replications in each engine (at least 2 for confidence intervals).
    #[arg(long, default_value_t = 3)]
    pub replications: u32,
    /// Replications in the simulator, if more than --replications: its
    /// runs cost little, and more of them narrow its interval and sample
    /// what varies from run to run (random losses, the hosts' clock
    /// phases) better than the emulator's few. Replication i has seed
    /// S + i in both engines; the emulator runs the first --replications.
    #[arg(long, value_name = "N")]
    pub sim_replications: Option<u32>,
    /// Output directory (default: out/SCENARIO-NAME-compare).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the comparison already in --out (its files are removed
    /// first); without it such a directory is refused.
    #[arg(long)]
    pub force: bool,
    /// How to print the comparison: aligned `table`, or `json` / `csv`
    /// with one row per flow and metric, the metric's unit in its name
    /// (`throughput_bit_per_s`) and plain numbers.
    #[arg(long, value_enum, default_value_t = crate::sim_cmd::Format::Table)]
    pub format: crate::sim_cmd::Format,
    /// Largest |(emu - sim) / emu| that passes: `10%` (or `0.1`) for every
    /// metric, `METRIC=20%` for one (goodput_bps, retransmitted_pct,
    /// rtt_mean, delay_mean, elapsed). Repeatable.
    #[arg(long = "tolerance", value_name = "[METRIC=]PERCENT", default_value = "10%")]
    pub tolerance: Vec<String>,
    /// Set a scenario key before running, as for `squall sim`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Seed of the first replication (replication i uses seed + i in both
    /// engines).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run each emulation's data plane in SCHED_FIFO at this priority
    /// (1-99), as `squall emu --realtime`: on a loaded machine it keeps
    /// the emulator's timing at low packet rates.
    #[arg(long, value_name = "PRIORITY")]
    pub realtime: Option<i32>,
    /// A delivery later than this flags an emulated run (`squall emu
    /// --late-threshold`, default 1 ms), which the "emu runs on time"
    /// column counts. Lower it where less can change the result: at 10
    /// Mbit/s cubic's HyStart ends its ACK train at a 2 ms gap between
    /// ACKs that come 1.2 ms apart, so 0.8 ms late can change Linux's
    /// slow start.
    #[arg(long, value_name = "TIME")]
    pub late_threshold: Option<squall_link::Duration>,
}

/// "3 replication(s) in each engine", or "40 replications in the
/// simulator, 10 in the emulator".
fn replication_counts(sim: u32, emu: u32) -> String {
    if sim == emu {
        format!("{emu} replication(s) in each engine")
    } else {
        format!("{sim} replications in the simulator, {emu} in the emulator")
    }
}

/// A fraction as the percentage a user would have written: 10%, 2.5%,
/// 0.01% (up to four decimals, no trailing zeros).
fn percent(fraction: f64) -> String {
    let text = format!("{:.4}", fraction * 100.0);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `10%`, `0.1`, `rtt_mean=20%`: a default tolerance and per-metric ones.
fn parse_tolerances(specs: &[String]) -> Result<Tolerances> {
    let mut t = Tolerances { default: 0.1, per_metric: Default::default() };
    let known: Vec<&str> = TCP_METRICS.iter().chain(UDP_METRICS).copied().collect();
    for spec in specs {
        let (metric, value) = match spec.split_once('=') {
            Some((m, v)) => (Some(m.trim()), v.trim()),
            None => (None, spec.trim()),
        };
        let fraction = match value.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
            None => value.parse::<f64>(),
        };
        let fraction = match fraction {
            Ok(f) if f.is_finite() && f >= 0.0 => f,
            _ => bail!(
                "--tolerance {spec:?}: expected a percentage like `10%` (or a fraction like `0.1`), optionally after METRIC="
            ),
        };
        match metric {
            None => t.default = fraction,
            Some(m) if known.contains(&m) => {
                t.per_metric.insert(m.to_string(), fraction);
            }
            Some(m) => bail!("--tolerance {spec:?}: no metric `{m}`; the metrics are {}", known.join(", ")),
        }
    }
    Ok(t)
}

/// Refuses what cannot run in both engines, naming the file and the entry.
fn check_comparable(source: &str, scenario: &Scenario) -> Result<()> {
    if let Some(why) = scenario.refuse_outside_host("`squall compare` runs it in the simulator too, which") {
        bail!("{source}: {why}");
    }
    if let Some(c) = scenario.workload.commands.first() {
        bail!(
            "{source}: [[workload.commands]] `{}` on host `{}` cannot run in the simulator, which runs no real \
             programs; `squall compare` runs the scenario in both engines: describe the traffic as [[workload.tcp]] \
             or [[workload.udp]], or run this scenario with `squall emu` alone",
            c.run,
            c.host
        );
    }
    if scenario.workload.tcp.is_empty() && scenario.workload.udp.is_empty() {
        bail!(
            "{source}: no [[workload.tcp]] or [[workload.udp]] to compare; add one, e.g.\n  [[workload.tcp]]\n  \
             name = \"download\"\n  from = \"fixed\"\n  to = \"mobile\"\n  app = {{ bulk = \"5 MB\" }}"
        );
    }
    // The emulator's server ports number every entry's flows in order: an
    // `arrivals` entry has as many as its replication draws, so an entry
    // compared flow by flow after it would listen on a port that changes
    // with the replication.
    let mut after_arrivals: Option<&str> = None;
    for f in &scenario.workload.tcp {
        let what = format!("{source}: [[workload.tcp]] `{}`", f.name);
        match (after_arrivals, is_open_loop(f)) {
            (_, true) if f.arrivals.is_some() => after_arrivals = Some(&f.name),
            (Some(a), false) => bail!(
                "{what} comes after the `arrivals` entry `{a}`: `squall compare` matches an entry without `count` or \
                 `arrivals` by its server port in the emulator, which follows the flows of the entries before it; \
                 write the `arrivals` entries last"
            ),
            _ => {}
        }
        match &f.app {
            TcpApp::Bulk(_) => {}
            TcpApp::Web(w) if !w.site_files.is_empty() => {}
            TcpApp::Web(_) => bail!(
                "{what}: a web application runs in emulation only with a site manifest (site = \"site.csv\"), not \
                 with sizes"
            ),
            TcpApp::BulkFor(_) => bail!(
                "{what}: app = {{ bulk_for = ... }} runs in both engines, but the comparison's metrics are a bulk \
                 transfer's (goodput and elapsed time of N bytes); give the bytes to send instead, app = {{ bulk = \
                 \"5 MB\" }}"
            ),
            TcpApp::RequestResponse(_) => {
                bail!(
                    "{what}: request_response runs in both engines, but the comparison's metrics are a bulk \
                     transfer's; compare a bulk or web application"
                )
            }
        }
        if f.cc == TcpCc::Tahoe {
            bail!("{what}: cc = \"tahoe\": Linux has no Tahoe; use \"reno\", \"newreno\", \"sack\" or \"cubic\"");
        }
    }
    Ok(())
}

/// The addresses of a flow from host `from` to host `to` (of
/// `ip_version`, or the scenario's default family).
fn flow_addresses(
    scenario: &Scenario,
    from: &str,
    to: &str,
    ip_version: Option<u8>,
    what: &str,
) -> Result<(std::net::IpAddr, std::net::IpAddr)> {
    let host = |name: &str| {
        scenario.hosts.iter().find(|h| h.name == name).with_context(|| format!("{what}: no host `{name}`"))
    };
    let (a, b) = (host(from)?.addresses(), host(to)?.addresses());
    squall_scenario::topology::flow_addresses(a, b, ip_version)
        .with_context(|| format!("{what}: `{from}` and `{to}` have no IP version in common"))
}

/// Each workload's data flow as each engine's analysis labels it: the
/// hosts, the protocol, and the server's port (the client's is `*`). A
/// bulk flow's data goes from `from` to `to`; a web page's from the server
/// (`to`) back to the client. The simulator's and the emulator's servers
/// listen on ports of their own (squall_sim::tcp_ports,
/// squall_emu::workload::plan::tcp_server_port); UDP flows use the same ports in both.
fn workload_flows(scenario: &Scenario) -> Result<Vec<MatchedFlow>> {
    let mut out = Vec::new();
    // The emulator's number of the entry's (first) flow: every entry's
    // flows before it counted (squall_scenario::count).
    let mut member = 0;
    for (i, f) in scenario.workload.tcp.iter().enumerate() {
        let first = member;
        if is_open_loop(f) {
            // Compared by size bucket (flows.csv), not flow by flow.
            member += squall_scenario::count::expand_tcp(scenario, i, scenario.seed).len();
            continue;
        }
        member += 1;
        let what = format!("[[workload.tcp]] `{}`", f.name);
        let (from, to) = flow_addresses(scenario, &f.from, &f.to, f.ip_version, &what)?;
        let (_, sim_port) = squall_sim::tcp_ports(f, i).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let emu_port =
            squall_emu::workload::plan::tcp_server_port(f, first).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let label = |port: u16| {
            // Any port at or above the ephemeral range is written `*`.
            let client = u16::MAX;
            if matches!(f.app, TcpApp::Web(_)) {
                let key = FlowKey { protocol: Protocol::Tcp, src: to, dst: from, src_port: port, dst_port: client };
                flow_label(&key, &f.to, &f.from)
            } else {
                let key = FlowKey { protocol: Protocol::Tcp, src: from, dst: to, src_port: client, dst_port: port };
                flow_label(&key, &f.from, &f.to)
            }
        };
        out.push(MatchedFlow {
            name: f.name.clone(),
            protocol: "tcp",
            sim_label: label(sim_port),
            emu_label: label(emu_port),
            ..MatchedFlow::default()
        });
    }
    for (i, f) in scenario.workload.udp.iter().enumerate() {
        let what = format!("[[workload.udp]] `{}`", f.name);
        let (from, to) = flow_addresses(scenario, &f.from, &f.to, f.ip_version, &what)?;
        let (src_port, dst_port) = squall_sim::udp_ports(f, i).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let key = FlowKey { protocol: Protocol::Udp, src: from, dst: to, src_port, dst_port };
        let label = flow_label(&key, &f.from, &f.to);
        out.push(MatchedFlow {
            name: f.name.clone(),
            protocol: "udp",
            sim_label: label.clone(),
            emu_label: label,
            ..MatchedFlow::default()
        });
    }
    Ok(out)
}

/// An entry that stands for many flows (`count`) or an arrival process
/// of them (`arrivals`): compared by its FCT/slowdown table by size
/// bucket rather than flow by flow.
fn is_open_loop(f: &squall_scenario::TcpFlow) -> bool {
    f.count.is_some() || f.arrivals.is_some()
}

/// The FCT/slowdown tables by size bucket of both engines' runs (the
/// flows of `count` and `arrivals` entries), side by side: the text table
/// and DIR/fct_buckets.csv's text; `None` without such flows.
fn bucket_comparison(out: &Path, sim_replications: u32, replications: u32) -> Result<Option<(String, String)>> {
    let rows_of = |engine: &str| -> Result<Vec<BucketRow>> {
        let n = if engine == "sim" { sim_replications } else { replications };
        let counts = (0..n)
            .map(|r| crate::report_cmd::run_tcp_counts(&out.join(format!("{engine}/rep-{r}/result.json"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(bucket_rows(&crate::report_cmd::bucket_aggregate(&counts)))
    };
    let (sim, emu) = (rows_of("sim")?, rows_of("emu")?);
    if sim.is_empty() && emu.is_empty() {
        return Ok(None);
    }
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in sim.iter().chain(&emu) {
        if !keys.contains(&(r.entry.clone(), r.bucket.clone())) {
            keys.push((r.entry.clone(), r.bucket.clone()));
        }
    }
    let find =
        |rows: &[BucketRow], k: &(String, String)| rows.iter().find(|r| r.entry == k.0 && r.bucket == k.1).cloned();
    let cell = |m: MeanCi, digits: usize| match m.half_width {
        Some(h) => format!("{:.digits$} ±{:.digits$}", m.mean, h),
        None => format!("{:.digits$}", m.mean),
    };
    let header = [
        "entry",
        "bucket",
        "flows sim/emu",
        "completed sim/emu",
        "FCT mean sim (s)",
        "FCT mean emu (s)",
        "slowdown sim",
        "slowdown emu",
    ];
    let mut csv = String::from(
        "entry,bucket,engine,replications,flows,completed,fct_mean_s,fct_ci95_half_s,fct_p99_s,slowdown_mean,\
         slowdown_ci95_half,slowdown_p99\n",
    );
    let half = |m: MeanCi| m.half_width.map_or(String::new(), |h| format!("{h:.9}"));
    let mut body = Vec::new();
    for k in &keys {
        let (s, e) = (find(&sim, k), find(&emu, k));
        for (engine, r) in [("sim", &s), ("emu", &e)] {
            if let Some(r) = r {
                csv.push_str(&format!(
                    "{},{},{engine},{},{:.1},{:.1},{:.9},{},{:.9},{:.6},{},{:.6}\n",
                    r.entry,
                    r.bucket,
                    r.replications,
                    r.flows,
                    r.completed,
                    r.fct.mean,
                    half(r.fct),
                    r.fct_p99.mean,
                    r.slowdown.mean,
                    half(r.slowdown),
                    r.slowdown_p99.mean
                ));
            }
        }
        let show = |r: &Option<BucketRow>, f: &dyn Fn(&BucketRow) -> String| r.as_ref().map_or("-".to_string(), f);
        body.push([
            k.0.clone(),
            k.1.clone(),
            format!("{}/{}", show(&s, &|r| format!("{:.1}", r.flows)), show(&e, &|r| format!("{:.1}", r.flows))),
            format!(
                "{}/{}",
                show(&s, &|r| format!("{:.1}", r.completed)),
                show(&e, &|r| format!("{:.1}", r.completed))
            ),
            show(&s, &|r| cell(r.fct, 4)),
            show(&e, &|r| cell(r.fct, 4)),
            show(&s, &|r| cell(r.slowdown, 2)),
            show(&e, &|r| cell(r.slowdown, 2)),
        ]);
    }
    let mut widths = header.map(str::len);
    for row in &body {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: &[&str]| {
        let t: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        text.push_str(&format!("  {}\n", t.join("  ").trim_end()));
    };
    line(&header);
    for row in &body {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    Ok(Some((text, csv)))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Engine {
    Sim,
    Emu,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Sim => "sim",
            Engine::Emu => "emu",
        }
    }
}

/// Analyses `replications` runs under `dir` (rep-N) and files each
/// workload's flow; returns notes on runs that did not finish or lacked a
/// flow.
fn analyse(
    engine: Engine,
    dir: &Path,
    replications: u32,
    hosts: &[RunHost],
    flows: &mut [MatchedFlow],
) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for r in 0..replications {
        let run = dir.join(format!("rep-{r}"));
        let mut stats = by_workload(analyse_run(&run, hosts).with_context(|| format!("analysing {}", run.display()))?);
        if crate::report_cmd::mark_unfinished(&run, &mut stats) {
            notes.push(format!(
                "{} rep-{r}: a TCP transfer did not finish by the end of the run; its elapsed time counts to the end",
                engine.name()
            ));
        }
        for f in flows.iter_mut() {
            let label = if engine == Engine::Sim { &f.sim_label } else { &f.emu_label };
            match stats.iter().find(|s| &s.label == label) {
                Some(s) => {
                    let runs = if engine == Engine::Sim { &mut f.sim } else { &mut f.emu };
                    runs.push((r, s.clone()));
                }
                None => notes.push(format!(
                    "{} rep-{r}: no flow `{label}` for `{}` in the captures (flows seen: {})",
                    engine.name(),
                    f.name,
                    stats.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(", ")
                )),
            }
        }
    }
    Ok(notes)
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let tolerances = parse_tolerances(&args.tolerance)?;
    if args.replications == 0 {
        bail!("--replications must be at least 1");
    }
    let n_sim = args.sim_replications.unwrap_or(args.replications);
    if n_sim < args.replications {
        bail!(
            "--sim-replications {n_sim} is below --replications {}: the simulator runs at least the emulator's \
             replications (give more, or leave it out)",
            args.replications
        );
    }
    let scenario_args = ScenarioArgs {
        scenario: Some(args.scenario.clone()),
        link: None,
        uplink: None,
        downlink_trace: None,
        once: false,
        mm: Default::default(),
        uplink_trace: None,
        out: None,
        seed: args.seed,
        overrides: args.overrides.clone(),
        no_events: false,
        no_pcap: false,
    };
    let Loaded { source, scenario } = sim_cmd::load(&scenario_args, Some(args.replications))?;
    check_comparable(&source, &scenario)?;
    let mut flows = workload_flows(&scenario).with_context(|| source.clone())?;
    let n = scenario.replications;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("out").join(format!("{}-compare", scenario.name)));
    crate::output::prepare_out_dir(&out, args.force)?;
    crate::output::write_atomic(&out.join("scenario.toml"), toml::to_string(&scenario)?)?;
    eprintln!(
        "squall compare: {} ({source}), {} from seed {}",
        scenario.name,
        replication_counts(n_sim, n),
        scenario.seed
    );
    for r in 0..n_sim {
        let dir = out.join(format!("sim/rep-{r}"));
        simulate(&scenario, r, scenario.replication_seed(r), EventLog::All, &dir)
            .with_context(|| format!("simulating replication {r}"))?;
    }
    eprintln!("squall compare: {n_sim} simulated run(s) done; emulating (real time, one at a time)");
    for r in 0..n {
        eprintln!("squall compare: emulated replication {}/{n}", r + 1);
        let dir = out.join(format!("emu/rep-{r}"));
        let options = EmuChildOptions { realtime: args.realtime, late_threshold: args.late_threshold };
        emulate(&scenario, scenario.replication_seed(r), &dir, &options)
            .with_context(|| format!("emulating replication {r} (needs root and network namespaces)"))?;
    }
    let hosts: Vec<RunHost> =
        scenario.hosts.iter().map(|h| RunHost { name: h.name.clone(), addresses: h.addresses() }).collect();
    let mut notes = analyse(Engine::Sim, &out.join("sim"), n_sim, &hosts, &mut flows)?;
    notes.extend(analyse(Engine::Emu, &out.join("emu"), n, &hosts, &mut flows)?);
    let rows = parity(&flows, &tolerances);
    let buckets = bucket_comparison(&out, n_sim, n)?;
    if let Some((_, csv)) = &buckets {
        crate::output::write_atomic(&out.join("fct_buckets.csv"), csv)?;
    }

    // The first replication of each engine, overlaid.
    let (sim0, emu0) = (out.join("sim/rep-0"), out.join("emu/rep-0"));
    let sim_detail = run_detail(&sim0, &hosts).with_context(|| format!("reading {}", sim0.display()))?;
    let emu_detail = run_detail(&emu0, &hosts).with_context(|| format!("reading {}", emu0.display()))?;
    let mut plots: Vec<Overlay> = Vec::new();
    for (f, spec) in flows.iter().zip(scenario.workload.tcp.iter().map(Some).chain(std::iter::repeat(None))) {
        let traces = match spec {
            Some(t) => TraceFiles {
                sim: format!("{}.csv", squall_sim::tcp_trace_stem(&t.name, 0, "client")),
                emu: squall_emu::workload::plan::tcp_info_file(&t.name),
                // Linux's segments carry the 12 bytes of timestamps.
                mss: t.mss().0 as f64 - 12.0,
            },
            None => TraceFiles::default(),
        };
        plots.extend(overlays(f, &sim_detail, &emu_detail, &traces));
    }

    let timing = squall_analysis::summary_file::emu_timing(&out.join("emu"), n);
    let flagged = timing.iter().filter(|t| t.1).count();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let tolerance_text = std::iter::once(percent(tolerances.default))
        .chain(tolerances.per_metric.iter().map(|(m, t)| format!("{m} {}", percent(*t))))
        .collect::<Vec<_>>()
        .join(", ");
    let mut lines = vec![
        format!(
            "Scenario {} ({source}); {}, seeds {}..={} (the emulator's the first {n} of them).",
            scenario.name,
            replication_counts(n_sim, n),
            scenario.seed,
            scenario.replication_seed(n_sim - 1)
        ),
        format!(
            "sim: squall's TCP and UDP models in virtual time. emu: real Linux TCP (kernel {}) and UDP sockets in \
             network namespaces, through the same link model in real time.",
            kernel.trim()
        ),
        format!("Verdict: pass when |(emu − sim) / emu| of the means ≤ the tolerance ({tolerance_text})."),
        format!(
            "Emulator departure-time error p99 per run: {} µs{}.",
            timing.iter().map(|t| format!("{:.0}", t.0)).collect::<Vec<_>>().join(", "),
            if flagged > 0 { format!("; {flagged} run(s) flagged: timing was not kept") } else { String::new() }
        ),
    ];
    lines.extend(notes.iter().cloned());
    let info = PageInfo { title: format!("squall compare: {}", scenario.name), lines };
    write_report(&out, &info, &rows, &plots)
        .with_context(|| format!("cannot write the report in {}", out.display()))?;

    let table = args.format == crate::sim_cmd::Format::Table;
    // With only `count` and `arrivals` entries there is no flow-by-flow table.
    if table && !rows.is_empty() {
        crate::output::outln!(
            "\n{:<14} {:<14} {:>28} {:>28} {:>14} {:>9} {:>7}",
            "flow",
            "metric",
            "sim mean ± 95% CI",
            "emu mean ± 95% CI",
            "(emu-sim)/emu",
            "tolerance",
            "verdict"
        );
        for r in &rows {
            crate::output::outln!(
                "{:<14} {:<14} {:>28} {:>28} {:>14} {:>9} {:>7}",
                r.flow,
                metric_title(r.metric),
                display_summary(r.metric, &r.sim),
                display_summary(r.metric, &r.emu),
                display_relative(r.relative_difference),
                percent(r.tolerance),
                r.verdict.as_str()
            );
        }
    } else if !table {
        use crate::output::Cell;
        let mut printed = crate::output::Rows::new(&[
            "flow",
            "metric",
            "sim_mean",
            "sim_ci95_low",
            "sim_ci95_high",
            "emu_mean",
            "emu_ci95_low",
            "emu_ci95_high",
            "relative_difference",
            "tolerance",
            "verdict",
        ]);
        let ci = |s: &squall_analysis::Summary, low: bool| {
            if s.n < 2 {
                f64::NAN
            } else if low {
                s.ci95.low
            } else {
                s.ci95.high
            }
        };
        for r in &rows {
            printed.push(vec![
                Cell::from(r.flow.as_str()),
                Cell::from(crate::output::metric_with_unit(r.metric)),
                Cell::Num(r.sim.mean),
                Cell::Num(ci(&r.sim, true)),
                Cell::Num(ci(&r.sim, false)),
                Cell::Num(r.emu.mean),
                Cell::Num(ci(&r.emu, true)),
                Cell::Num(ci(&r.emu, false)),
                Cell::Num(r.relative_difference),
                Cell::Num(r.tolerance),
                Cell::from(r.verdict.as_str()),
            ]);
        }
        printed.print(args.format);
    }
    if let Some((text, _)) = &buckets {
        let title = format!(
            "FCT and slowdown by size bucket (count and arrivals entries), over {n} replication(s) in each engine \
             (mean ±95% CI half width; slowdown against the simulator's ideal FCT):"
        );
        if table {
            crate::output::outln!("\n{title}\n{}", text.trim_end());
        } else {
            eprintln!("squall compare: {title}\n{}", text.trim_end());
        }
    }
    for note in &notes {
        eprintln!("squall compare: {note}");
    }
    if flagged > 0 {
        eprintln!("squall compare: warning: {flagged} emulated run(s) did not keep timing (see emu/rep-N/result.json)");
    }
    let wrote = format!(
        "wrote {0}/compare.csv, {0}/compare.html, {1}{0}/plots/, {0}/sim/ and {0}/emu/",
        out.display(),
        if buckets.is_some() { format!("{}/fct_buckets.csv, ", out.display()) } else { String::new() }
    );
    if table {
        crate::output::outln!("\n{wrote}");
    } else {
        eprintln!("{wrote}");
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .map(|r| {
            format!(
                "{} {} ({} against a tolerance of {})",
                r.flow,
                metric_title(r.metric),
                display_relative(r.relative_difference),
                percent(r.tolerance)
            )
        })
        .collect();
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "squall compare: FAIL: {} of {} metric(s) differ between the engines by more than their tolerance: {}",
        failed.len(),
        rows.len(),
        failed.join("; ")
    );
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_print_as_written() {
        for (given, shown) in [("10%", "10%"), ("2.5%", "2.5%"), ("0.01%", "0.01%"), ("0.1", "10%"), ("100%", "100%")] {
            assert_eq!(percent(parse_tolerances(&[given.into()]).unwrap().default), shown, "{given}");
        }
    }

    #[test]
    fn tolerances_as_percentages_fractions_and_per_metric() {
        let t = parse_tolerances(&["5%".into(), "rtt_mean=20%".into(), "elapsed=0.5".into()]).unwrap();
        assert_eq!(t.default, 0.05);
        assert_eq!(t.of("rtt_mean"), 0.2);
        assert_eq!(t.of("elapsed"), 0.5);
        assert_eq!(t.of("goodput_bps"), 0.05);
        assert!((parse_tolerances(&["0.001%".into()]).unwrap().default - 1e-5).abs() < 1e-18);
        let e = parse_tolerances(&["ten".into()]).unwrap_err().to_string();
        assert!(e.contains("--tolerance \"ten\"") && e.contains("10%"), "{e}");
        let e = parse_tolerances(&["speed=5%".into()]).unwrap_err().to_string();
        assert!(e.contains("no metric `speed`") && e.contains("goodput_bps"), "{e}");
        assert!(parse_tolerances(&["-1%".into()]).is_err());
    }

    #[test]
    fn workloads_are_matched_by_their_servers_port_in_each_engine() {
        let text = r#"
name = "t"
duration = "10 s"
[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "down"
rate = "10 Mbit/s"
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
[[workload.tcp]]
name = "download"
profile = "rfc"
from = "fixed"
to = "mobile"
app = { bulk = "1 MB" }
[[workload.udp]]
name = "voice"
from = "mobile"
to = "fixed"
rate = "64 kbit/s"
size = "200 B"
"#;
        let scenario = squall_scenario::parse("t.toml", text, Path::new(".")).unwrap();
        check_comparable("t.toml", &scenario).unwrap();
        let flows = workload_flows(&scenario).unwrap();
        assert_eq!(flows[0].sim_label, "tcp fixed:* > mobile:5000");
        assert_eq!(flows[0].emu_label, "tcp fixed:* > mobile:15000");
        assert_eq!(flows[1].sim_label, "udp mobile:10000 > fixed:5001");
        assert_eq!(flows[1].emu_label, flows[1].sim_label);
    }
}
