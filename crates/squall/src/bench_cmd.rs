//! `squall bench emu`: how fast the emulate engine forwards, against the
//! same traffic over a plain veth pair, and how well it keeps time at
//! 100 Mbit/s.

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
    let BenchWhat::Emu { seconds, json } = args.what;
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
