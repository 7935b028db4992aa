//! `squall bench emu`: how fast the emulate engine forwards, against the
//! same traffic over a plain veth pair, and how well it keeps time at
//! 100 Mbit/s.
//!
//! `squall bench tcp`: how fast the simulate engine runs one bulk NewReno
//! flow (10 Mbit/s, 30 ms one way, 0.1% loss, 100 simulated seconds), in
//! delivered segments per wall-clock second: the scenario of `cargo bench
//! -p squall-sim --bench tcp`, from the same file; bench/ns3/run.sh sets it
//! against ns-3.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use squall_emu::blast::SinkReport;
use squall_emu::dataplane::DataplaneOptions;
use squall_emu::timing::TimingSummary;
use squall_emu::workload::CommandSpec;
use squall_emu::{EmulationOptions, baseline};

#[path = "../../squall-sim/benches/common/single_flow.rs"]
mod single_flow;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand)]
pub enum BenchWhat {
    /// Forwarding rate (64- and 1500-byte packets) through a stage with no
    /// rate limit and no delay, against plain veth; departure-time error at
    /// 100 Mbit/s. Needs root.
    Emu {
        /// Seconds of traffic per measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Write the results as JSON here too.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
    },
    /// Simulate engine speed: one bulk NewReno flow, 10 Mbit/s, 30 ms one
    /// way, 0.1% packet loss, 100 simulated seconds; delivered segments
    /// (bytes received / 1460) per wall-clock second, for seeds
    /// `seed..seed+runs`, and their median.
    Tcp {
        /// Runs, each with the next seed.
        #[arg(long, default_value_t = 5)]
        runs: u64,
        /// Seed of the first run.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the results as JSON here too.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
    },
}

#[derive(Serialize)]
struct Forwarding {
    ip_size: usize,
    squall: SinkReport,
    veth: SinkReport,
    /// squall pps / veth pps.
    ratio: f64,
    squall_timing: TimingSummary,
}

#[derive(Serialize)]
struct BenchReport {
    forwarding: Vec<Forwarding>,
    /// 1500-byte packets paced at 95 Mbit/s into a 100 Mbit/s stage.
    timing_100mbit: TimingSummary,
    sink_100mbit: SinkReport,
}

const SCENARIO: &str = r#"
name = "bench"
duration = "60 s"
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
queue = { packets = 1000 }
RATE
[[links.uplink]]
name = "up"
"#;

fn through_squall(
    exe: &Path,
    rate: Option<&str>,
    ip_size: usize,
    seconds: f64,
    pace_bps: Option<f64>,
) -> Result<(SinkReport, TimingSummary)> {
    let text = SCENARIO.replace("RATE", &rate.map(|r| format!("rate = \"{r}\"")).unwrap_or_default());
    let scenario = squall_scenario::parse("bench.toml", &text, Path::new(".")).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let dir = tempfile::tempdir()?;
    let exe = exe.display();
    let pace = pace_bps.map(|r| format!(" --rate-bps {r}")).unwrap_or_default();
    let commands = vec![
        CommandSpec::parse(&format!("mobile@0s={exe} tool udp --sink"), false)?,
        CommandSpec::parse(
            &format!("fixed@0.2s={exe} tool udp --send 10.0.1.1 --size {ip_size} --seconds {seconds}{pace}"),
            false,
        )?,
    ];
    let options = EmulationOptions {
        dataplane: DataplaneOptions {
            record_events: false,
            record_captures: false,
            record_deliveries: false,
            ..Default::default()
        },
        commands,
        workload_dir: dir.path().to_path_buf(),
        control: false,
        ..Default::default()
    };
    let signal = squall_emu::cleanup::stop_on_signals()?;
    let report = squall_emu::run(&scenario, options, signal)?;
    let out = std::fs::read_to_string(dir.path().join("0-mobile.stdout"))?;
    let sink: SinkReport = serde_json::from_str(out.trim()).with_context(|| format!("sink output {out:?}"))?;
    Ok((sink, report.dataplane.timing))
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    match args.what {
        BenchWhat::Emu { seconds, json } => emu(seconds, json),
        BenchWhat::Tcp { runs, seed, json } => tcp(runs, seed, json),
    }
}

#[derive(Serialize)]
struct TcpBenchReport {
    scenario: &'static str,
    runs: Vec<single_flow::Measurement>,
    median_segments_per_wall_second: f64,
    /// Peak resident set of the process (VmHWM), kB, if known.
    peak_rss_kb: Option<u64>,
}

fn tcp(runs: u64, seed: u64, json: Option<std::path::PathBuf>) -> Result<ExitCode> {
    anyhow::ensure!(runs > 0, "--runs must be at least 1");
    let scenario = single_flow::scenario();
    let mut measurements = Vec::new();
    for s in seed..seed + runs {
        let m = single_flow::measure(&scenario, s);
        println!("{m}");
        measurements.push(m);
    }
    let mut rates: Vec<f64> = measurements.iter().map(|m| m.segments_per_wall_second).collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median = if n % 2 == 1 { rates[n / 2] } else { (rates[n / 2 - 1] + rates[n / 2]) / 2.0 };
    let peak_rss_kb = vm_hwm_kb();
    println!(
        "median of {n}: {median:.0} delivered segments per wall-clock second (target >= 800000); peak RSS {} kB",
        peak_rss_kb.map_or("?".into(), |v| v.to_string())
    );
    let report = TcpBenchReport {
        scenario: single_flow::SCENARIO,
        runs: measurements,
        median_segments_per_wall_second: median,
        peak_rss_kb,
    };
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Peak resident set of this process, kB (Linux), or None.
fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn emu(seconds: f64, json: Option<std::path::PathBuf>) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("where is squall?")?;
    let mut forwarding = Vec::new();
    for ip_size in [64, 1500] {
        let (squall, squall_timing) = through_squall(&exe, None, ip_size, seconds, None)?;
        let veth = baseline::veth(&exe, ip_size, seconds)?;
        let ratio = if veth.pps > 0.0 { squall.pps / veth.pps } else { 0.0 };
        forwarding.push(Forwarding { ip_size, squall, veth, ratio, squall_timing });
    }
    let (sink_100mbit, timing_100mbit) = through_squall(&exe, Some("100 Mbit/s"), 1500, seconds, Some(95e6))?;
    println!("{:>6} {:>12} {:>10} {:>12} {:>10} {:>7}", "bytes", "squall pps", "Gbit/s", "veth pps", "Gbit/s", "ratio");
    for f in &forwarding {
        println!(
            "{:>6} {:>12.0} {:>10.3} {:>12.0} {:>10.3} {:>7.3}",
            f.ip_size,
            f.squall.pps,
            f.squall.bps / 1e9,
            f.veth.pps,
            f.veth.bps / 1e9,
            f.ratio
        );
    }
    let t = &timing_100mbit;
    println!(
        "100 Mbit/s, 1500 B: {} deliveries at {:.1} Mbit/s; departure error p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us, {} late (> 1 ms)",
        t.deliveries,
        sink_100mbit.bps / 1e6,
        t.error_p50 * 1e6,
        t.error_p99 * 1e6,
        t.error_p999 * 1e6,
        t.error_max * 1e6,
        t.late
    );
    let report = BenchReport { forwarding, timing_100mbit, sink_100mbit };
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    }
    Ok(ExitCode::SUCCESS)
}
