//! `squall bench sim`: the simulator at scale, beside ns-3 (issue 35).
//!
//! N bulk TCP NewReno flows share one 100 Mbit/s, 20 ms link with a
//! 1 000-packet drop-tail queue for 3 simulated seconds, for each N asked
//! (`--flows 1,10,100`); N = 1 is the single-flow benchmark instead
//! (10 Mbit/s, 30 ms, a 100-packet queue, 0.1% packet loss on the data
//! direction, 100 simulated seconds: `squall bench tcp`'s scenario). The
//! flows are one `[[workload.tcp]]` entry with `count = N`.
//!
//! Both simulators run as child processes, measured the same way from
//! outside: the whole process's wall time (exec to exit) and its peak
//! resident set (`ru_maxrss` of getrusage(2) `RUSAGE_CHILDREN`, read by a
//! `squall bench measure` process that has that one child, as GNU time
//! reads it with wait4(2)). ns-3 is bench/ns3/many_flows.cc, built from the
//! PyPI `ns3` wheel by bench/ns3/sim.sh; without it squall runs alone.
//!
//! The figure per point is the wall time per packet the bottleneck
//! delivered (squall: the data stage's `delivered` in summary.json; ns-3:
//! the packets its receiving device took from the link).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::output::outln;

/// Where `squall bench sim` looks for the ns-3 program when `--ns3` is not
/// given (relative to the current directory: the repository's root).
const NS3_DEFAULT: &str = "bench/ns3/build/many_flows";

#[derive(Args)]
pub struct SimBenchArgs {
    /// Numbers of flows to run, comma-separated (1 is the single-flow
    /// benchmark: 10 Mbit/s, 30 ms, 0.1% loss, 100 s).
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 10, 100, 1_000, 10_000])]
    flows: Vec<u32>,
    /// Runs per point and simulator (the median wall time and the largest
    /// peak RSS are reported).
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Seed of the runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The ns-3 program (bench/ns3/many_flows.cc, built by
    /// bench/ns3/sim.sh). Default: bench/ns3/build/many_flows if it exists.
    #[arg(long, conflicts_with = "no_ns3")]
    ns3: Option<PathBuf>,
    /// Run squall alone.
    #[arg(long)]
    no_ns3: bool,
    /// ns-3 runs only the points with at most this many flows (its peak
    /// memory grows by about 1 MB a flow: 1 053 MB at 1 000 flows here).
    #[arg(long, default_value_t = 1_000)]
    ns3_max_flows: u32,
    /// Write the results as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `squall bench measure`: runs one command and reports its wall time and
/// resource usage, as JSON on stdout.
#[derive(Args)]
pub struct MeasureArgs {
    /// Where the command's standard output goes.
    #[arg(long)]
    stdout: PathBuf,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// What `squall bench measure` reports about its one child.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Usage {
    /// From just before the child was started to its exit, seconds.
    pub wall_seconds: f64,
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// The child's peak resident set (ru_maxrss), kB.
    pub max_rss_kb: u64,
    /// Its exit code (None: killed by a signal).
    pub exit_code: Option<i32>,
}

/// Runs the command of `args` and prints its [`Usage`]: this process has
/// no other child, so getrusage(RUSAGE_CHILDREN) is the command's own.
pub fn measure(args: MeasureArgs) -> Result<ExitCode> {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike as _;
    let out =
        std::fs::File::create(&args.stdout).with_context(|| format!("cannot create {}", args.stdout.display()))?;
    let (program, rest) = args.command.split_first().context("no command to measure")?;
    let start = Instant::now();
    let status =
        Command::new(program).args(rest).stdout(out).status().with_context(|| format!("cannot run {program}"))?;
    let wall_seconds = start.elapsed().as_secs_f64();
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage(RUSAGE_CHILDREN)")?;
    let usage = Usage {
        wall_seconds,
        user_seconds: u.user_time().num_microseconds() as f64 / 1e6,
        system_seconds: u.system_time().num_microseconds() as f64 / 1e6,
        // Linux gives ru_maxrss in kilobytes (getrusage(2)).
        max_rss_kb: u.max_rss().try_into().unwrap_or(0),
        exit_code: status.code(),
    };
    outln!("{}", serde_json::to_string(&usage)?);
    Ok(ExitCode::SUCCESS)
}

/// One point of the benchmark: the scenario both simulators run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub flows: u32,
    pub rate_mbps: u32,
    pub delay_ms: u32,
    pub queue_packets: u32,
    /// Packet loss probability on the data direction, per mille.
    pub loss_per_mille: u32,
    pub seconds: u32,
    /// Sending hosts: 1, or above [`Point::ONE_SENDER_MAX`] flows a host
    /// group of this many behind a router (10 Gbit/s links) in front of
    /// the bottleneck.
    pub senders: u32,
}

impl Point {
    /// The issue's points: the single-flow benchmark for one flow, else N
    /// flows on 100 Mbit/s, 20 ms, a 1 000-packet queue, 3 s.
    pub fn for_flows(flows: u32) -> Point {
        if flows == 1 {
            Point {
                flows,
                rate_mbps: 10,
                delay_ms: 30,
                queue_packets: 100,
                loss_per_mille: 1,
                seconds: 100,
                senders: 1,
            }
        } else {
            let senders = if flows <= Self::ONE_SENDER_MAX { 1 } else { flows.div_ceil(Self::PER_SENDER) };
            Point { flows, rate_mbps: 100, delay_ms: 20, queue_packets: 1000, loss_per_mille: 0, seconds: 3, senders }
        }
    }

    /// Flows one sending host takes: a server port per flow (`dst_port +
    /// k`, from 5000) stays at or below 65 535 up to 60 000 flows. Beyond,
    /// the flows share one listening port and are told apart by their
    /// client ports, of which one host has 64 512 (1024–65535): so more
    /// flows need more senders.
    pub const ONE_SENDER_MAX: u32 = 60_000;
    /// Flows per sending host above [`Self::ONE_SENDER_MAX`] (as in
    /// bench/sim/100000-flows.toml: two hosts of 50 000).
    pub const PER_SENDER: u32 = 50_000;

    /// The scenario file: two hosts, one link, one `count = N` entry with
    /// `squall bench tcp`'s TCP settings (bench/ns3/many_flows.cc's).
    pub fn scenario(&self, seed: u64) -> String {
        if self.senders > 1 {
            return self.scenario_of_senders(seed);
        }
        let Point { flows, rate_mbps, delay_ms, queue_packets, loss_per_mille, seconds, senders: _ } = self;
        let error = if *loss_per_mille > 0 {
            format!("error = {{ packet = \"{}%\" }}\n", *loss_per_mille as f64 / 10.0)
        } else {
            String::new()
        };
        // Linux's default range holds 28 232 connections; beyond, all the
        // unprivileged ports.
        let ports = if *flows <= 28_232 { "32768-60999" } else { "1024-65535" };
        // Server ports dst_port + k must stay at or below 65535.
        let dst_port = if *flows <= 60_000 { 5000 } else { 1024 };
        format!(
            r#"name = "bench-sim-{flows}"
duration = "{seconds} s"
seed = {seed}

[[hosts]]
name = "a"
address = "10.0.0.1"
ephemeral_ports = "{ports}"
[[hosts]]
name = "b"
address = "10.0.1.1"

[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "down"
rate = "{rate_mbps} Mbit/s"
delay = "{delay_ms} ms"
queue = {{ packets = {queue_packets} }}
{error}[[links.uplink]]
name = "up"
rate = "{rate_mbps} Mbit/s"
delay = "{delay_ms} ms"
queue = {{ packets = {queue_packets} }}

[[workload.tcp]]
name = "bulk"
profile = "rfc"
from = "a"
to = "b"
count = {flows}
dst_port = {dst_port}
app = {{ bulk_for = "{seconds} s" }}
cc = "newreno"
mss = "1460 B"
rwnd = "1 MB"
window_scaling = true
sack = false
delayed_ack = "200 ms"
min_rto = "1 s"
limited_transmit = true
initial_window = 2
"#
        )
    }

    /// The scenario of more flows than one host can open (no packet
    /// loss: the single-flow point has one sender): the host group `a` of
    /// `senders` hosts, each with 1024–65535 as its ephemeral range, takes
    /// the flows in turn (`pairing = "all_to_one"`) to one listening port
    /// of `b` (`server_ports = "shared"`), through a router `r` and the
    /// same bottleneck `down` as the one-sender points.
    fn scenario_of_senders(&self, seed: u64) -> String {
        let Point { flows, rate_mbps, delay_ms, queue_packets, seconds, senders, .. } = self;
        format!(
            r#"name = "bench-sim-{flows}"
duration = "{seconds} s"
seed = {seed}

[[host_groups]]
name = "a"
count = {senders}
prefix = "10.0.0.0/24"
ephemeral_ports = "1024-65535"
[[hosts]]
name = "r"
address = "10.0.2.1"
[[hosts]]
name = "b"
address = "10.0.1.1"

[[links]]
between = ["a", "r"]
[[links.downlink]]
name = "a-up"
rate = "10 Gbit/s"
[[links.uplink]]
name = "a-down"
rate = "10 Gbit/s"
[[links]]
between = ["r", "b"]
[[links.downlink]]
name = "down"
rate = "{rate_mbps} Mbit/s"
delay = "{delay_ms} ms"
queue = {{ packets = {queue_packets} }}
[[links.uplink]]
name = "up"
rate = "{rate_mbps} Mbit/s"
delay = "{delay_ms} ms"
queue = {{ packets = {queue_packets} }}

[[workload.tcp]]
name = "bulk"
profile = "rfc"
from = "a"
to = "b"
count = {flows}
pairing = "all_to_one"
server_ports = "shared"
dst_port = 1024
app = {{ bulk_for = "{seconds} s" }}
cc = "newreno"
mss = "1460 B"
rwnd = "1 MB"
window_scaling = true
sack = false
delayed_ack = "200 ms"
min_rto = "1 s"
limited_transmit = true
initial_window = 2
"#
        )
    }

    /// The ns-3 program's arguments for the same scenario.
    pub fn ns3_args(&self, seed: u64) -> Vec<String> {
        vec![
            format!("--seed={seed}"),
            format!("--flows={}", self.flows),
            format!("--seconds={}", self.seconds),
            format!("--rate={}Mbps", self.rate_mbps),
            format!("--delay={}ms", self.delay_ms),
            format!("--queue={}", self.queue_packets),
            format!("--loss={}", self.loss_per_mille as f64 / 1000.0),
        ]
    }
}

/// One simulator's figures at one point.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// Median of the runs' whole-process wall times, seconds.
    pub wall_seconds: f64,
    /// Median of the runs' CPU times (user + system), seconds: less
    /// disturbed than the wall time on a busy machine.
    pub cpu_seconds: f64,
    /// Largest peak RSS of the runs, kB.
    pub max_rss_kb: u64,
    /// Packets the bottleneck delivered (data direction).
    pub delivered_packets: u64,
    /// wall_seconds / delivered_packets, microseconds.
    pub wall_us_per_packet: f64,
    /// max_rss_kb / flows.
    pub rss_kb_per_flow: f64,
    pub runs: Vec<Usage>,
}

#[derive(Debug, Serialize)]
pub struct PointReport {
    pub point: Point,
    pub squall: Figures,
    pub ns3: Option<Figures>,
    /// ns-3's wall time over squall's.
    pub wall_ratio: Option<f64>,
    /// ns-3's CPU time over squall's.
    pub cpu_ratio: Option<f64>,
    /// ns-3's peak RSS over squall's.
    pub rss_ratio: Option<f64>,
}

#[derive(Debug, Serialize)]
struct SimBenchReport {
    seed: u64,
    squall: String,
    ns3: Option<String>,
    /// Load average of the machine before the first run and after the last.
    load_before: Option<String>,
    load_after: Option<String>,
    points: Vec<PointReport>,
}

fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// Runs `command` under `squall bench measure`; returns its usage and
/// standard output.
fn measured(exe: &Path, dir: &Path, command: &[String]) -> Result<(Usage, String)> {
    let stdout = dir.join("stdout.txt");
    let out = Command::new(exe)
        .args(["bench", "measure", "--stdout"])
        .arg(&stdout)
        .arg("--")
        .args(command)
        .stderr(Stdio::piped())
        .output()
        .context("cannot run squall bench measure")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("squall bench measure {command:?} failed: {stderr}");
    }
    let usage: Usage = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("squall bench measure printed {:?}", String::from_utf8_lossy(&out.stdout)))?;
    let text = std::fs::read_to_string(&stdout).unwrap_or_default();
    if usage.exit_code != Some(0) {
        bail!("{command:?} exited with {:?}; its output: {text}{stderr}", usage.exit_code);
    }
    Ok((usage, text))
}

/// The data stage's delivered packets in a `squall sim` run's summary.json.
fn squall_delivered(summary: &Path) -> Result<u64> {
    let text = std::fs::read_to_string(summary).with_context(|| format!("cannot read {}", summary.display()))?;
    let s: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}", summary.display()))?;
    let stages =
        s["runs"][0]["stages"].as_array().with_context(|| format!("{}: no runs[0].stages", summary.display()))?;
    stages
        .iter()
        .find(|st| st["name"] == "down")
        .and_then(|st| st["delivered"].as_u64())
        .with_context(|| format!("{}: no stage \"down\" with a delivered count", summary.display()))
}

/// The `delivered_packets=` of ns-3's RESULT line.
fn ns3_delivered(out: &str) -> Result<u64> {
    let line = out.lines().find(|l| l.starts_with("RESULT ")).with_context(|| format!("no RESULT line in {out:?}"))?;
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix("delivered_packets="))
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no delivered_packets in {line:?}"))
}

fn figures(point: &Point, runs: Vec<Usage>, delivered: u64) -> Figures {
    let walls: Vec<f64> = runs.iter().map(|u| u.wall_seconds).collect();
    let wall_seconds = squall_analysis::percentile(&walls, 0.5);
    let cpus: Vec<f64> = runs.iter().map(|u| u.user_seconds + u.system_seconds).collect();
    let cpu_seconds = squall_analysis::percentile(&cpus, 0.5);
    let max_rss_kb = runs.iter().map(|u| u.max_rss_kb).max().unwrap_or(0);
    Figures {
        wall_seconds,
        cpu_seconds,
        max_rss_kb,
        delivered_packets: delivered,
        wall_us_per_packet: wall_seconds * 1e6 / delivered.max(1) as f64,
        rss_kb_per_flow: max_rss_kb as f64 / f64::from(point.flows),
        runs,
    }
}

fn run_squall(exe: &Path, point: &Point, seed: u64, runs: u32) -> Result<Figures> {
    let dir = tempfile::Builder::new().prefix("squall-bench-sim-").tempdir()?;
    let file = dir.path().join(format!("flows-{}.toml", point.flows));
    std::fs::write(&file, point.scenario(seed))?;
    let mut usages = Vec::new();
    let mut delivered = None;
    for _ in 0..runs {
        let out = dir.path().join("out");
        let _ = std::fs::remove_dir_all(&out);
        let command: Vec<String> = [
            exe.to_str().context("squall's path is not UTF-8")?,
            "sim",
            file.to_str().context("temporary path is not UTF-8")?,
            "--no-pcap",
            "--no-events",
            "--out",
            out.to_str().context("temporary path is not UTF-8")?,
        ]
        .map(String::from)
        .to_vec();
        let (usage, _) = measured(exe, dir.path(), &command)?;
        let d = squall_delivered(&out.join("summary.json"))?;
        // Same seed, same scenario: the same packets every run.
        if delivered.is_some_and(|p| p != d) {
            bail!("squall delivered {d} packets in one run and {delivered:?} in another of the same seed");
        }
        delivered = Some(d);
        usages.push(usage);
    }
    Ok(figures(point, usages, delivered.unwrap_or(0)))
}

fn run_ns3(exe: &Path, ns3: &Path, point: &Point, seed: u64, runs: u32) -> Result<Figures> {
    let dir = tempfile::Builder::new().prefix("squall-bench-ns3-").tempdir()?;
    let mut command = vec![ns3.to_str().context("ns-3 program's path is not UTF-8")?.to_string()];
    command.extend(point.ns3_args(seed));
    let mut usages = Vec::new();
    let mut delivered = 0;
    for _ in 0..runs {
        let (usage, out) = measured(exe, dir.path(), &command)?;
        delivered = ns3_delivered(&out)?;
        usages.push(usage);
    }
    Ok(figures(point, usages, delivered))
}

fn describe(name: &str, f: &Figures) -> String {
    format!(
        "{name:<7} {:>9.3} s wall {:>9.3} s CPU {:>9.1} MB {:>10} packets {:>8.3} us/packet {:>8.1} KB/flow",
        f.wall_seconds,
        f.cpu_seconds,
        f.max_rss_kb as f64 / 1024.0,
        f.delivered_packets,
        f.wall_us_per_packet,
        f.rss_kb_per_flow
    )
}

pub fn run(args: SimBenchArgs) -> Result<ExitCode> {
    if args.flows.is_empty() || args.flows.contains(&0) {
        bail!("--flows: expected numbers of flows of at least 1, such as --flows 1,10,100; got {:?}", args.flows);
    }
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let exe = std::env::current_exe().context("where is squall?")?;
    let ns3 = match (&args.ns3, args.no_ns3) {
        (_, true) => None,
        (Some(p), false) => {
            if !p.is_file() {
                bail!("--ns3 {}: no such program (bash bench/ns3/sim.sh builds it)", p.display());
            }
            Some(p.clone())
        }
        (None, false) => Some(PathBuf::from(NS3_DEFAULT)).filter(|p| p.is_file()),
    };
    match &ns3 {
        Some(p) => eprintln!("ns-3: {}", p.display()),
        None if !args.no_ns3 => {
            eprintln!("ns-3: not run (no {NS3_DEFAULT}; bash bench/ns3/sim.sh builds it from the ns3 wheel)")
        }
        None => {}
    }
    let load_before = load_average();
    let mut points = Vec::new();
    for &flows in &args.flows {
        let point = Point::for_flows(flows);
        let squall =
            run_squall(&exe, &point, args.seed, args.runs).with_context(|| format!("squall at {flows} flows"))?;
        let ns3_figures = match &ns3 {
            Some(p) if flows <= args.ns3_max_flows && point.senders == 1 => {
                Some(run_ns3(&exe, p, &point, args.seed, args.runs).with_context(|| format!("ns-3 at {flows} flows"))?)
            }
            _ => None,
        };
        let senders =
            if point.senders > 1 { format!(", {} senders behind a router", point.senders) } else { String::new() };
        outln!(
            "{flows} flows ({} Mbit/s, {} ms, {}-packet queue, {}% loss, {} s simulated{senders}):",
            point.rate_mbps,
            point.delay_ms,
            point.queue_packets,
            point.loss_per_mille as f64 / 10.0,
            point.seconds
        );
        outln!("  {}", describe("squall", &squall));
        let (mut wall_ratio, mut cpu_ratio, mut rss_ratio) = (None, None, None);
        match &ns3_figures {
            Some(n) => {
                outln!("  {}", describe("ns-3", n));
                let w = n.wall_seconds / squall.wall_seconds;
                let c = n.cpu_seconds / squall.cpu_seconds.max(1e-3);
                let r = n.max_rss_kb as f64 / squall.max_rss_kb.max(1) as f64;
                outln!("  ns-3 / squall: {w:.1}x wall time, {c:.1}x CPU time, {r:.1}x peak memory");
                (wall_ratio, cpu_ratio, rss_ratio) = (Some(w), Some(c), Some(r));
            }
            None if ns3.is_some() && point.senders > 1 => {
                outln!("  ns-3    not run (bench/ns3/many_flows.cc has one sender; this point has {})", point.senders)
            }
            None if ns3.is_some() => outln!("  ns-3    not run (more than --ns3-max-flows {})", args.ns3_max_flows),
            None => {}
        }
        points.push(PointReport { point, squall, ns3: ns3_figures, wall_ratio, cpu_ratio, rss_ratio });
    }
    let report = SimBenchReport {
        seed: args.seed,
        squall: exe.display().to_string(),
        ns3: ns3.map(|p| p.display().to_string()),
        load_before,
        load_after: load_average(),
        points,
    };
    outln!(
        "load average before: {}, after: {}",
        report.load_before.as_deref().unwrap_or("?"),
        report.load_after.as_deref().unwrap_or("?")
    );
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
