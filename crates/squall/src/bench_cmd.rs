//! `squall bench emu`: how fast the emulate engine forwards, against the
//! same traffic over a plain veth pair, and how well it keeps time at
//! 100 Mbit/s.
//!
//! `squall bench emu --soak DURATION`: a long run with recording on (pcaps
//! and events.csv streamed to disk), UDP offered at ten times a 100 Mbit/s
//! link; reports peak memory, whether every packet is accounted for, and
//! how many records the recording dropped.
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
use squall_emu::dataplane::{DataplaneOptions, DataplaneReport};
use squall_emu::recording::{RecordCounts, RecordingOptions};
use squall_emu::timing::TimingSummary;
use squall_emu::workload::CommandSpec;
use squall_emu::{EmulationOptions, baseline};
use squall_link::Duration;

use crate::bench_more::Setup;
use crate::output::outln;

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
        /// Instead: one run this long ("10m", "10 min", "600 s") with pcaps
        /// and events.csv on, 1500-byte UDP packets offered at 1 Gbit/s
        /// into a 100 Mbit/s stage; reports peak RSS, packet conservation
        /// and dropped capture records.
        #[arg(long, value_parser = crate::soak::parse_soak_duration)]
        soak: Option<Duration>,
        /// Bytes of each packet kept in the soak's pcaps (whole packets at
        /// 1 Gbit/s would need 7.5 GB a minute of disk).
        #[arg(long, default_value_t = 96)]
        soak_snaplen: u32,
        /// Where the soak's run directory goes (removed after, unless
        /// --soak-keep).
        #[arg(long)]
        soak_dir: Option<std::path::PathBuf>,
        /// Keep the soak's pcaps, events.csv and timing.csv.
        #[arg(long)]
        soak_keep: bool,
    },
    /// squall between two interfaces (`emu --inline`) against a plain Linux
    /// bridge on the same two veths, in one run: UDP packets per second at
    /// 64 and 1500 bytes, one cubic TCP connection's Gbit/s, departure-time
    /// error at 1 Gbit/s. Needs root.
    Bridge {
        /// Seconds of UDP traffic per measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Write the results as JSON here too.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
    },
    /// How close to its configured link the emulator keeps time on this
    /// machine (the tails the tests do not assert): cyclictest's wake-up
    /// latency (when rt-tests is installed) beside the departure error and
    /// ping over 25 ms each way with a data plane that sleeps, one that
    /// spins and the default (`--early-wakeup auto`); sleep(1 ms) overshoot,
    /// ping through `emu --inline` with 20 ms each way against the
    /// configured 40 ms and a plain Linux bridge, and TCP goodput through
    /// a 100 Mbit/s stage against its line rate. Needs root.
    Timing {
        /// Echoes of the ping measurement (20 ms apart).
        #[arg(long, default_value_t = 500)]
        pings: u32,
        /// Seconds of iperf3 (if installed) through the 100 Mbit/s stage.
        #[arg(long, default_value_t = 6)]
        seconds: u32,
        /// Write the results as JSON here too.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
    },
    /// Simulate engine at scale: N bulk NewReno flows (one `count` entry)
    /// on a 100 Mbit/s, 20 ms link for 3 s, N = 1 the single-flow case;
    /// whole-process wall time, peak RSS and wall time per delivered
    /// packet, beside ns-3 (bench/ns3/many_flows.cc) when it is built.
    Sim(crate::bench_sim::SimBenchArgs),
    /// The control tool's cost to a running emulation: the same 100 Mbit/s
    /// TCP emulation without `squall serve` and with it and 20 clients
    /// watching its live stream, alternated; departure-time error side by
    /// side (`--soak 10m`: the server's memory over one long run). Needs
    /// root.
    Serve(crate::bench_serve::ServeBenchArgs),
    /// Runs a command and prints its wall time and resource usage as JSON
    /// (what `bench sim` measures each simulator with).
    #[command(hide = true)]
    Measure(crate::bench_sim::MeasureArgs),
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
    /// CPU time of the data plane (this process) per forwarded packet, us.
    cpu_us_per_packet: f64,
    /// Busy CPU time of the whole machine (sender, receiver, kernel and
    /// squall; set-up included) per packet received, us: squall's run and
    /// plain veth's. With both cores busy, pps is at most 2 s over this.
    machine_us_per_packet_squall: Option<f64>,
    machine_us_per_packet_veth: Option<f64>,
    /// A forwarder that only moves packets between the same TUN devices
    /// (no model, no clock, no recording): the most any user-space
    /// emulator on TUN reaches here; and the same between veth pairs'
    /// outer ends read and written with AF_PACKET sockets. With the
    /// machine's CPU us per packet.
    tun_forwarder: (SinkReport, Option<f64>),
    packet_socket_forwarder: (SinkReport, Option<f64>),
    /// squall with `--pin` (the data plane alone on the last CPU), with
    /// the machine's CPU us per packet.
    squall_pinned: (SinkReport, Option<f64>),
    /// squall with `--host-device xdp`, alone and with `--pin`; and a
    /// forwarder between AF_XDP sockets on veths' outer ends.
    squall_xdp: (SinkReport, Option<f64>),
    squall_xdp_pinned: (SinkReport, Option<f64>),
    xdp_forwarder: (SinkReport, Option<f64>),
    /// The sender alone on one CPU, the receiver and the data plane on
    /// the other, at equal nice and with the receiver first (empty with
    /// fewer than two CPUs).
    placed: Vec<Placed>,
}

/// squall `--host-device xdp --dataplane-cpu R` with the sender on CPU S
/// and the receiver on CPU R, and plain veth with the same placement;
/// each with the machine's CPU us per packet.
#[derive(Serialize)]
struct Placed {
    placement: baseline::Placement,
    squall_xdp: (SinkReport, Option<f64>),
    /// Packets squall delivered to the receiving host per second (the
    /// receiver's socket may drop some when the receiver falls behind).
    delivered_pps: f64,
    veth: (SinkReport, Option<f64>),
}

#[derive(Serialize)]
struct BenchReport {
    forwarding: Vec<Forwarding>,
    /// 1500-byte packets paced at 95 Mbit/s into a 100 Mbit/s stage.
    timing_100mbit: TimingSummary,
    sink_100mbit: SinkReport,
    /// 1500-byte packets paced at 950 Mbit/s into a 1 Gbit/s stage.
    timing_1gbit: TimingSummary,
    sink_1gbit: SinkReport,
    /// The same with the data plane under SCHED_FIFO priority 50.
    timing_1gbit_fifo: TimingSummary,
    sink_1gbit_fifo: SinkReport,
    /// The same with `--pin`: the data plane alone on the last CPU.
    timing_1gbit_pinned: TimingSummary,
    sink_1gbit_pinned: SinkReport,
    tcp_unlimited: crate::bench_more::TcpUnlimited,
    rates: Vec<crate::bench_more::RatePoint>,
    ping: Option<crate::bench_more::PingFigures>,
    /// The same with `--early-wakeup "20 ms"`: the data plane never
    /// sleeps (it spins, one core busy), so no wake-up delays a packet.
    ping_spinning: Option<crate::bench_more::PingFigures>,
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

/// UDP of `ip_size`-byte packets for `seconds` (paced to `pace_bps` if
/// given) through a stage with `rate` (none: no limit) and a 1000-packet
/// queue; returns what the sink counted, the departure timing and the data
/// plane's CPU time, s.
fn through_squall(
    exe: &Path,
    rate: Option<&str>,
    ip_size: usize,
    seconds: f64,
    pace_bps: Option<f64>,
) -> Result<(SinkReport, TimingSummary, f64)> {
    through_squall_with(exe, rate, ip_size, seconds, pace_bps, &Setup::default())
}

/// [`through_squall`], squall run as `setup` says.
fn through_squall_with(
    exe: &Path,
    rate: Option<&str>,
    ip_size: usize,
    seconds: f64,
    pace_bps: Option<f64>,
    setup: &Setup,
) -> Result<(SinkReport, TimingSummary, f64)> {
    let rate = rate.map(|r| format!("rate = \"{r}\"")).unwrap_or_default();
    let text = crate::bench_more::scenario(&format!("queue = {{ packets = 1000 }}\n{rate}"), "", "");
    let exe = exe.display();
    let pace = pace_bps.map(|r| format!(" --rate-bps {r}")).unwrap_or_default();
    let sink = setup.on(false, &format!("{exe} tool udp --sink"));
    let send = setup.on(true, &format!("{exe} tool udp --send 10.0.1.1 --size {ip_size} --seconds {seconds}{pace}"));
    let (report, dir, cpu) =
        crate::bench_more::emulate_with(&text, &[&format!("mobile@0s={sink}"), &format!("fixed@0.2s={send}")], setup)?;
    let out = std::fs::read_to_string(dir.path().join("0-mobile.stdout"))?;
    let sink: SinkReport = serde_json::from_str(out.trim()).with_context(|| format!("sink output {out:?}"))?;
    Ok((sink, report.dataplane.timing, cpu))
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    match args.what {
        BenchWhat::Emu { soak: Some(duration), json, soak_snaplen, soak_dir, soak_keep, .. } => {
            soak(duration, soak_snaplen, soak_dir, soak_keep, json)
        }
        BenchWhat::Emu { seconds, json, .. } => emu(seconds, json),
        BenchWhat::Tcp { runs, seed, json } => tcp(runs, seed, json),
        BenchWhat::Sim(args) => crate::bench_sim::run(args),
        BenchWhat::Serve(args) => crate::bench_serve::run(args),
        BenchWhat::Measure(args) => crate::bench_sim::measure(args),
        BenchWhat::Bridge { seconds, json } => bridge(seconds, json),
        BenchWhat::Timing { pings, seconds, json } => timing(pings, seconds, json),
    }
}

fn timing(pings: u32, seconds: u32, json: Option<std::path::PathBuf>) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("where is squall?")?;
    // 100 MB: about 8 s at 100 Mbit/s, long enough that slow start is a
    // small part of it.
    let cyclictest = crate::bench_loops::cyclictest(10_000)?;
    match &cyclictest {
        Some(c) => println!(
            "cyclictest (normal priority, {} wake-ups every {} us): p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, max {:.0} us",
            c.loops, c.interval_us, c.p50_us, c.p99_us, c.p999_us, c.max_us
        ),
        None => println!("cyclictest: not installed (Debian: apt-get install rt-tests)"),
    }
    let loops = crate::bench_loops::loops(pings)?;
    for l in &loops {
        println!("{}", crate::bench_loops::describe(l));
    }
    let f = crate::bench_bridge::timing(&exe, pings, 100_000_000, seconds)?;
    let o = &f.sleep_overshoot;
    println!(
        "sleep(1 ms) overshoot ({} sleeps): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        o.samples,
        o.p50 * 1e3,
        o.p99 * 1e3,
        o.max * 1e3
    );
    println!("{}", f.ping_20ms.describe("squall --inline, 20 ms each way"));
    println!(
        "TCP (cubic, 100 MB) through 100 Mbit/s: {:.2} Mbit/s, {:.3} of the line rate (96.53 Mbit/s of payload); departure error p50 {:.3} ms, p99 {:.3} ms",
        f.tcp_100mbit_bps / 1e6,
        f.tcp_100mbit_of_line_rate,
        f.tcp_100mbit_timing.error_p50 * 1e3,
        f.tcp_100mbit_timing.error_p99 * 1e3
    );
    match (f.iperf3_100mbit_bps, f.iperf3_100mbit_of_line_rate) {
        (Some(b), Some(r)) => {
            println!("iperf3 ({seconds} s) through 100 Mbit/s: {:.2} Mbit/s, {r:.3} of the line rate", b / 1e6)
        }
        _ => println!("iperf3 through 100 Mbit/s: not measured (iperf3 missing or failed)"),
    }
    if let Some(path) = json {
        let all = serde_json::json!({ "cyclictest": cyclictest, "loops": loops, "inline": f });
        std::fs::write(&path, serde_json::to_string_pretty(&all)?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn bridge(seconds: f64, json: Option<std::path::PathBuf>) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("where is squall?")?;
    let f = crate::bench_bridge::run(&exe, seconds)?;
    outln!(
        "{:>6} {:>14} {:>10} {:>12} {:>10} {:>7} {:>26}",
        "bytes",
        "Linux bridge pps",
        "Gbit/s",
        "squall pps",
        "Gbit/s",
        "ratio",
        "machine us/pkt bridge/sq"
    );
    let us = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.2}"));
    for ((size, linux, squall), (linux_us, squall_us)) in f.udp.iter().zip(&f.udp_machine_us_per_packet) {
        let ratio = if linux.pps > 0.0 { squall.pps / linux.pps } else { 0.0 };
        outln!(
            "{size:>6} {:>16.0} {:>10.3} {:>12.0} {:>10.3} {ratio:>7.3} {:>26}",
            linux.pps,
            linux.bps / 1e9,
            squall.pps,
            squall.bps / 1e9,
            format!("{} / {}", us(*linux_us), us(*squall_us))
        );
    }
    outln!(
        "TCP (cubic, 1 GB): Linux bridge {:.2} Gbit/s, squall {:.2} Gbit/s, ratio {:.3}",
        f.tcp_linux_bps / 1e9,
        f.tcp_squall_bps / 1e9,
        f.tcp_squall_bps / f.tcp_linux_bps
    );
    for (name, udp, tcp_bps) in [
        (
            "a forwarder that only moves frames between the same AF_PACKET sockets (no model)",
            &f.forwarder_udp,
            f.forwarder_tcp_bps,
        ),
        ("a forwarder between AF_XDP sockets (copy mode, no model)", &f.xdp_forwarder_udp, f.xdp_forwarder_tcp_bps),
        ("squall --inline-socket xdp", &f.squall_xdp_udp, f.squall_xdp_tcp_bps),
    ] {
        for ((size, sink, machine), (_, linux, _)) in udp.iter().zip(&f.udp) {
            outln!(
                "{size:>4} B, {name}: {:.0} pps, {:.3} of the bridge, machine {} us/pkt",
                sink.pps,
                sink.pps / linux.pps.max(1.0),
                us(*machine)
            );
        }
        outln!("TCP, {name}: {:.2} Gbit/s, {:.3} of the bridge", tcp_bps / 1e9, tcp_bps / f.tcp_linux_bps);
    }
    for p in &f.placed {
        for (size, (sq, linux)) in [64, 1500].iter().zip(p.squall_xdp.iter().zip(&p.linux)) {
            outln!(
                "{size:>4} B, placed (sender on CPU {}, receiver at nice {} and data plane on CPU {}): squall \
                 --inline-socket xdp {:.0} pps, Linux bridge placed alike {:.0} pps, ratio {:.3}",
                p.placement.sender,
                p.placement.receiver_nice,
                p.placement.receiver,
                sq.pps,
                linux.pps,
                sq.pps / linux.pps.max(1.0)
            );
        }
    }
    if let Some(t) = &f.tcp_own_cpu {
        outln!(
            "TCP, sender and receiver on CPU {}, forwarding alone on CPU {}: Linux bridge {:.2} Gbit/s, AF_PACKET \
             forwarder (no model) {:.2} ({:.3}), squall --dataplane-cpu {} {:.2} ({:.3})",
            t.ends,
            t.forwarding,
            t.linux_bps / 1e9,
            t.forwarder_bps / 1e9,
            t.forwarder_bps / t.linux_bps,
            t.forwarding,
            t.squall_bps / 1e9,
            t.squall_bps / t.linux_bps
        );
    }
    for (i, r) in f.tcp_rounds.iter().enumerate() {
        let iperf3 = match (r.iperf3_linux_bps, r.iperf3_forwarder_bps, r.iperf3_squall_bps) {
            (Some(l), Some(w), Some(s)) => format!(
                "; iperf3: Linux bridge {:.2} Gbit/s, forwarder {:.2} ({:.3}), squall {:.2} ({:.3})",
                l / 1e9,
                w / 1e9,
                w / l,
                s / 1e9,
                s / l
            ),
            _ => String::new(),
        };
        outln!(
            "TCP round {}: Linux bridge {:.2} Gbit/s, AF_PACKET forwarder (no model) {:.2} ({:.3}), squall {:.2} \
             ({:.3}){iperf3}",
            i + 1,
            r.linux_bps / 1e9,
            r.forwarder_bps / 1e9,
            r.forwarder_bps / r.linux_bps,
            r.squall_bps / 1e9,
            r.squall_bps / r.linux_bps
        );
    }
    if !f.tcp_rounds.is_empty() {
        let median = |v: Vec<f64>| squall_analysis::percentile(&v, 0.5);
        let ratios = |of: fn(&crate::bench_bridge::TcpRound) -> f64| -> Vec<f64> {
            f.tcp_rounds.iter().map(|r| of(r) / r.linux_bps).collect()
        };
        let spread = |v: Vec<f64>| {
            let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
            format!("{:.3} ({lo:.3}-{hi:.3})", median(v))
        };
        outln!(
            "TCP over {} rounds, median (range) of the ratio to the bridge: squall {}, forwarder {}",
            f.tcp_rounds.len(),
            spread(ratios(|r| r.squall_bps)),
            spread(ratios(|r| r.forwarder_bps))
        );
        let machine: Option<Vec<(f64, f64, f64)>> = f
            .tcp_rounds
            .iter()
            .map(|r| Some((r.linux_machine_s?, r.forwarder_machine_s?, r.squall_machine_s?)))
            .collect();
        if let Some(m) = machine {
            outln!(
                "TCP, the machine's busy CPU seconds per GB carried (all CPUs), median: Linux bridge {:.3} s, \
                 forwarder {:.3} s ({:.2} times the bridge's), squall {:.3} s ({:.2} times)",
                median(m.iter().map(|x| x.0).collect()),
                median(m.iter().map(|x| x.1).collect()),
                median(m.iter().map(|x| x.1 / x.0).collect()),
                median(m.iter().map(|x| x.2).collect()),
                median(m.iter().map(|x| x.2 / x.0).collect())
            );
        }
        let iperf3: Option<Vec<(f64, f64)>> = f
            .tcp_rounds
            .iter()
            .map(|r| {
                let linux = r.iperf3_linux_bps?;
                Some((r.iperf3_squall_bps? / linux, r.iperf3_forwarder_bps? / linux))
            })
            .collect();
        if let Some(v) = iperf3 {
            outln!(
                "TCP with iperf3, median (range) of the ratio to the bridge: squall {}, forwarder {}",
                spread(v.iter().map(|x| x.0).collect()),
                spread(v.iter().map(|x| x.1).collect())
            );
        }
    }
    let t = &f.timing_1gbit;
    outln!(
        "1 Gbit/s stage, 1500 B paced at 950 Mbit/s: {:.1} Mbit/s out; departure error p50 {:.1} us, p99 {:.1} us, max {:.1} us, {} late (> 1 ms)",
        f.sink_1gbit.bps / 1e6,
        t.error_p50 * 1e6,
        t.error_p99 * 1e6,
        t.error_max * 1e6,
        t.late
    );
    outln!("{}", f.ping_20ms.describe("20 ms each way"));
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&f)?)?;
    }
    Ok(ExitCode::SUCCESS)
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
        outln!("{m}");
        measurements.push(m);
    }
    let rates: Vec<f64> = measurements.iter().map(|m| m.segments_per_wall_second).collect();
    let n = rates.len();
    let median = squall_analysis::percentile(&rates, 0.5);
    let peak_rss_kb = vm_hwm_kb();
    outln!(
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
pub(crate) fn vm_hwm_kb() -> Option<u64> {
    crate::soak::proc_status_kb("self", "VmHWM")
}

fn emu(seconds: f64, json: Option<std::path::PathBuf>) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("where is squall?")?;
    let mut forwarding = Vec::new();
    for ip_size in [64, 1500] {
        let ((squall, squall_timing, cpu), machine_squall) =
            crate::bench_more::with_machine_cpu(|| through_squall(&exe, None, ip_size, seconds, None))?;
        let cpu_us_per_packet = cpu * 1e6 / squall_timing.deliveries.max(1) as f64;
        let ((squall_pinned, _, _), machine_pinned) = crate::bench_more::with_machine_cpu(|| {
            through_squall_with(&exe, None, ip_size, seconds, None, &Setup::pinned())
        })?;
        let per_packet = |busy: Option<f64>, sink: &SinkReport| busy.map(|b| b * 1e6 / sink.packets.max(1) as f64);
        let mut squall_xdp = Vec::new();
        for pin in [false, true] {
            let ((sink, _, _), machine) = crate::bench_more::with_machine_cpu(|| {
                through_squall_with(&exe, None, ip_size, seconds, None, &Setup::xdp(pin))
            })?;
            let us = per_packet(machine, &sink);
            squall_xdp.push((sink, us));
        }
        let (veth, machine_veth) =
            crate::bench_more::with_machine_cpu(|| Ok(baseline::veth(&exe, ip_size, seconds, None)?))?;
        // Placed: the sender alone on one CPU, the receiver (and squall's
        // data plane) on the other, the receiver first at equal nice and
        // then before the data plane; plain veth placed the same way.
        let mut placed = Vec::new();
        for nice in [0, -10] {
            let Some(p) = crate::bench_more::two_cpus(nice) else { break };
            let ((sink, timing, _), machine) = crate::bench_more::with_machine_cpu(|| {
                through_squall_with(&exe, None, ip_size, seconds, None, &Setup::xdp_placed(p))
            })?;
            let (veth, veth_machine) =
                crate::bench_more::with_machine_cpu(|| Ok(baseline::veth(&exe, ip_size, seconds, Some(p))?))?;
            placed.push(Placed {
                placement: p,
                squall_xdp: (sink.clone(), per_packet(machine, &sink)),
                delivered_pps: timing.deliveries as f64 / seconds,
                veth: (veth.clone(), per_packet(veth_machine, &veth)),
            });
        }
        let forwarder = |devices| -> Result<(SinkReport, Option<f64>)> {
            let bed = baseline::Forwarder::start(devices)?;
            let (sink, busy) = crate::bench_more::with_machine_cpu(|| Ok(bed.udp(&exe, ip_size, seconds)?))?;
            let per_packet = busy.map(|b| b * 1e6 / sink.packets.max(1) as f64);
            Ok((sink, per_packet))
        };
        let tun_forwarder = forwarder(baseline::ForwarderDevices::Tun)?;
        let packet_socket_forwarder = forwarder(baseline::ForwarderDevices::PacketSocket)?;
        let xdp_forwarder = forwarder(baseline::ForwarderDevices::Xdp)?;
        let ratio = if veth.pps > 0.0 { squall.pps / veth.pps } else { 0.0 };
        let squall_xdp_pinned = squall_xdp.pop().expect("two runs");
        let squall_xdp = squall_xdp.pop().expect("two runs");
        forwarding.push(Forwarding {
            placed,
            squall_xdp,
            squall_xdp_pinned,
            xdp_forwarder,
            ip_size,
            machine_us_per_packet_squall: per_packet(machine_squall, &squall),
            squall_pinned: (squall_pinned.clone(), per_packet(machine_pinned, &squall_pinned)),
            machine_us_per_packet_veth: per_packet(machine_veth, &veth),
            tun_forwarder,
            packet_socket_forwarder,
            squall,
            veth,
            ratio,
            squall_timing,
            cpu_us_per_packet,
        });
    }
    outln!(
        "{:>6} {:>12} {:>10} {:>12} {:>10} {:>7} {:>12} {:>22}",
        "bytes",
        "squall pps",
        "Gbit/s",
        "veth pps",
        "Gbit/s",
        "ratio",
        "CPU us/pkt",
        "machine us/pkt sq/veth"
    );
    let us = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.2}"));
    for f in &forwarding {
        outln!(
            "{:>6} {:>12.0} {:>10.3} {:>12.0} {:>10.3} {:>7.3} {:>12.2} {:>22}",
            f.ip_size,
            f.squall.pps,
            f.squall.bps / 1e9,
            f.veth.pps,
            f.veth.bps / 1e9,
            f.ratio,
            f.cpu_us_per_packet,
            format!("{} / {}", us(f.machine_us_per_packet_squall), us(f.machine_us_per_packet_veth))
        );
    }
    outln!(
        "(machine us/pkt: busy CPU time of both cores, niced jobs left out, set-up included, per packet received; \
         what squall adds per packet over veth bounds the ratio on 2 cores)"
    );
    for f in &forwarding {
        for (how, (sink, machine)) in [
            ("squall --pin (data plane alone on the last CPU)", &f.squall_pinned),
            ("squall --host-device xdp", &f.squall_xdp),
            ("squall --host-device xdp --pin", &f.squall_xdp_pinned),
        ] {
            outln!(
                "{:>6} B, {how}: {:.0} pps, {:.3} of veth, machine {} us/pkt",
                f.ip_size,
                sink.pps,
                sink.pps / f.veth.pps.max(1.0),
                us(*machine)
            );
        }
    }
    for f in &forwarding {
        for p in &f.placed {
            let ((sq, sq_us), (veth, veth_us)) = (&p.squall_xdp, &p.veth);
            let pl = &p.placement;
            outln!(
                "{:>6} B, placed (sender on CPU {}, receiver at nice {} and data plane on CPU {}): squall --host-device \
                 xdp {:.0} pps (delivered {:.0}), plain veth placed alike {:.0} pps, ratio {:.3}, machine us/pkt {} / {}",
                f.ip_size,
                pl.sender,
                pl.receiver_nice,
                pl.receiver,
                sq.pps,
                p.delivered_pps,
                veth.pps,
                sq.pps / veth.pps.max(1.0),
                us(*sq_us),
                us(*veth_us)
            );
        }
    }
    outln!("A forwarder that only moves packets between two devices (no model, no clock, no recording):");
    for f in &forwarding {
        for (devices, (sink, machine)) in [
            ("TUN devices (as squall emu)", &f.tun_forwarder),
            ("veths' outer ends, AF_PACKET (as --inline)", &f.packet_socket_forwarder),
            ("veths' outer ends, AF_XDP (as --host-device xdp)", &f.xdp_forwarder),
        ] {
            outln!(
                "{:>6} B, {devices}: {:.0} pps, {:.3} of veth, machine {} us/pkt; squall reaches {:.3} of it",
                f.ip_size,
                sink.pps,
                sink.pps / f.veth.pps.max(1.0),
                us(*machine),
                f.squall.pps / sink.pps.max(1.0)
            );
        }
    }
    let (sink_100mbit, timing_100mbit, _) = through_squall(&exe, Some("100 Mbit/s"), 1500, seconds, Some(95e6))?;
    let (sink_1gbit, timing_1gbit, _) = through_squall(&exe, Some("1 Gbit/s"), 1500, seconds, Some(950e6))?;
    let realtime = Setup {
        dataplane: squall_emu::dataplane::DataplaneOptions { realtime_priority: Some(50), ..Default::default() },
        ..Setup::default()
    };
    // The same with the data plane under SCHED_FIFO (`--realtime 50`): the
    // sender and the receiving stack can no longer preempt it.
    let (sink_1gbit_fifo, timing_1gbit_fifo, _) =
        through_squall_with(&exe, Some("1 Gbit/s"), 1500, seconds, Some(950e6), &realtime)?;
    // And with `--pin`: no workload shares the data plane's CPU.
    let (sink_1gbit_pinned, timing_1gbit_pinned, _) =
        through_squall_with(&exe, Some("1 Gbit/s"), 1500, seconds, Some(950e6), &Setup::pinned())?;
    for (name, t, sink) in [
        ("100 Mbit/s", &timing_100mbit, &sink_100mbit),
        ("1 Gbit/s", &timing_1gbit, &sink_1gbit),
        ("1 Gbit/s, --realtime 50", &timing_1gbit_fifo, &sink_1gbit_fifo),
        ("1 Gbit/s, --pin", &timing_1gbit_pinned, &sink_1gbit_pinned),
    ] {
        outln!(
            "{name}, 1500 B: {} deliveries at {:.1} Mbit/s; departure error p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us, {} late (> 1 ms)",
            t.deliveries,
            sink.bps / 1e6,
            t.error_p50 * 1e6,
            t.error_p99 * 1e6,
            t.error_p999 * 1e6,
            t.error_max * 1e6,
            t.late
        );
    }
    let tcp_unlimited = crate::bench_more::tcp_unlimited(&exe, 1_000_000_000)?;
    outln!(
        "TCP (cubic, 1 GB) through a stage with no limit: {:.2} Gbit/s ({:.2} without TUN offloads, {:.2} with --pin); \
         plain veth {:.2} Gbit/s; ratio {:.3}",
        tcp_unlimited.squall_bps / 1e9,
        tcp_unlimited.squall_no_offloads_bps / 1e9,
        tcp_unlimited.squall_pinned_bps / 1e9,
        tcp_unlimited.veth_bps / 1e9,
        tcp_unlimited.ratio
    );
    outln!(
        "TCP, a forwarder that only moves packets (no model): between TUN devices {:.2} Gbit/s, between veths' outer \
         ends with AF_PACKET {:.2} Gbit/s, with AF_XDP {:.2} Gbit/s; squall --host-device xdp {:.2} Gbit/s (XDP turns \
         the hosts' segmentation offload off)",
        tcp_unlimited.tun_forwarder_bps / 1e9,
        tcp_unlimited.packet_socket_forwarder_bps / 1e9,
        tcp_unlimited.xdp_forwarder_bps / 1e9,
        tcp_unlimited.squall_xdp_bps / 1e9
    );
    let rates = crate::bench_more::rate_sweep(&exe, &[12.0, 120.0, 600.0, 1200.0, 5000.0], &[0.0, 20.0], 5.0)?;
    outln!("TCP (cubic, 5 s of data, buffers for the BDP) achieved / configured rate:");
    for r in &rates {
        outln!(
            "  {:>6} Mbit/s, {:>4} ms each way: {:.3} (steady {}), {} retransmitted",
            r.rate_mbps,
            r.delay_ms,
            r.achieved,
            r.steady.map_or("-".to_string(), |s| format!("{s:.3}")),
            r.retransmitted_segments
        );
    }
    let ping = match crate::bench_more::ping(25.0, 500, &Setup::default()) {
        Ok(p) => {
            outln!("{}", p.describe("25 ms each way"));
            Some(p)
        }
        Err(e) => {
            outln!("ping: not measured ({e:#}); apt-get install iputils-ping");
            None
        }
    };
    let spinning = Setup {
        dataplane: squall_emu::dataplane::DataplaneOptions {
            early_wakeup: squall_emu::wakeup::EarlyWakeup::Fixed(squall_link::Duration::from_millis(20)),
            ..Default::default()
        },
        ..Setup::default()
    };
    let ping_spinning = crate::bench_more::ping(25.0, 500, &spinning).ok();
    if let Some(p) = &ping_spinning {
        outln!("{}", p.describe("25 ms each way, --early-wakeup \"20 ms\" (never sleeps)"));
    }
    let report = BenchReport {
        forwarding,
        timing_100mbit,
        sink_100mbit,
        timing_1gbit,
        sink_1gbit,
        timing_1gbit_fifo,
        sink_1gbit_fifo,
        timing_1gbit_pinned,
        sink_1gbit_pinned,
        tcp_unlimited,
        rates,
        ping,
        ping_spinning,
    };
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every packet the data plane read from the sender, accounted for.
#[derive(Serialize)]
struct Conservation {
    /// Datagrams the sending program handed to its socket.
    offered: u64,
    /// Of those, read by squall from the sender's TUN device.
    read_by_squall: u64,
    /// Dropped by the sender's TUN device before squall read them (its
    /// queue full): offered = read_by_squall + this, one datagram a frame.
    kernel_dropped: u64,
    /// Not carried (malformed, no route), by reason.
    refused: std::collections::BTreeMap<&'static str, u64>,
    /// Entered the model's path.
    entered: u64,
    /// Delivered by the model and written to the receiver's device.
    delivered: u64,
    /// Delivered but the write to the receiver's device failed.
    write_errors: u64,
    /// Dropped by the model, by reason.
    dropped: std::collections::BTreeMap<String, u64>,
    /// Still inside the path when the run ended.
    in_flight: u64,
    /// Counted by the receiving program.
    received_by_sink: u64,
    /// offered = read_by_squall + kernel_dropped, read_by_squall =
    /// refused + entered, and entered = delivered + write_errors + dropped
    /// + in_flight.
    conserved: bool,
}

#[derive(Serialize)]
struct SoakReport {
    seconds: f64,
    offered_bps: f64,
    link_bps: f64,
    snaplen: u32,
    /// Peak resident set of this process (VmHWM), kB.
    peak_rss_kb: Option<u64>,
    packets: Conservation,
    recorded: RecordCounts,
    capture_dropped: RecordCounts,
    /// Bytes written to the run directory.
    written_bytes: u64,
    timing: TimingSummary,
}

fn soak(
    duration: Duration,
    snaplen: u32,
    dir: Option<std::path::PathBuf>,
    keep: bool,
    json: Option<std::path::PathBuf>,
) -> Result<ExitCode> {
    const LINK_BPS: f64 = 100e6;
    const OFFERED_BPS: f64 = 10.0 * LINK_BPS;
    const IP_SIZE: usize = 1500;
    let exe = std::env::current_exe().context("where is squall?")?;
    let text = SCENARIO
        .replace("RATE", "rate = \"100 Mbit/s\"")
        .replace("\"60 s\"", &format!("\"{} s\"", duration.as_secs_f64() + 60.0));
    let scenario = squall_scenario::parse("soak.toml", &text, Path::new(".")).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let base = dir.unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
    let run_dir = tempfile::Builder::new().prefix("squall-soak-").tempdir_in(&base)?;
    let workloads = run_dir.path().join("workloads");
    let seconds = duration.as_secs_f64();
    let exe_s = exe.display();
    let commands = vec![
        CommandSpec::parse(&format!("mobile@0s={exe_s} tool udp --sink --seconds {seconds}"), false)?,
        CommandSpec::parse(
            &format!(
                "fixed@0.2s={exe_s} tool udp --send 10.0.1.1 --size {IP_SIZE} --seconds {seconds} --rate-bps {OFFERED_BPS}"
            ),
            false,
        )?,
    ];
    // The default bounds of `squall emu`'s queue.
    let mut recording = RecordingOptions::all(run_dir.path());
    recording.snaplen = snaplen;
    let options = EmulationOptions {
        dataplane: DataplaneOptions::default(),
        recording: Some(recording),
        commands,
        workload_dir: workloads.clone(),
        control: false,
        ..Default::default()
    };
    eprintln!(
        "soak: {seconds} s of {IP_SIZE}-byte UDP at {:.0} Mbit/s into {:.0} Mbit/s, pcaps (snaplen {snaplen}) and events.csv in {}",
        OFFERED_BPS / 1e6,
        LINK_BPS / 1e6,
        run_dir.path().display()
    );
    let signal = squall_emu::cleanup::stop_on_signals()?;
    let report = squall_emu::run(&scenario, options, signal)?;
    let peak_rss_kb = vm_hwm_kb();
    let read_json = |name: &str| -> Result<serde_json::Value> {
        let out = std::fs::read_to_string(workloads.join(name))?;
        serde_json::from_str(out.trim()).with_context(|| format!("{name}: {out:?}"))
    };
    let sink: SinkReport = serde_json::from_value(read_json("0-mobile.stdout")?)?;
    let offered = read_json("1-fixed.stdout")?["sent"].as_u64().context("sender output")?;
    let packets = conservation(&report.dataplane, offered, sink.packets);
    let d = &report.dataplane;
    if let Some(e) = &d.recording.error {
        anyhow::bail!("recording failed: {e}");
    }
    let written_bytes = std::fs::read_dir(run_dir.path())?
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let result = SoakReport {
        seconds: d.end.as_secs_f64(),
        offered_bps: OFFERED_BPS,
        link_bps: LINK_BPS,
        snaplen,
        peak_rss_kb,
        packets,
        recorded: d.recording.written,
        capture_dropped: d.recording.dropped,
        written_bytes,
        timing: d.timing.clone(),
    };
    outln!("{}", serde_json::to_string_pretty(&result)?);
    let p = &result.packets;
    outln!(
        "soak {:.0} s: offered {} packets, squall read {}, the sender's TUN dropped {}, delivered {}, dropped {:?}, in flight {}, refused {:?}: {}; \
         peak RSS {} kB; recorded {} packet records, {} events, {} timing rows ({:.2} GB); dropped {} packet records, {} events, {} timing rows",
        result.seconds,
        p.offered,
        p.read_by_squall,
        p.kernel_dropped,
        p.delivered,
        p.dropped,
        p.in_flight,
        p.refused,
        if p.conserved { "conserved" } else { "NOT CONSERVED" },
        peak_rss_kb.map_or("?".into(), |v| v.to_string()),
        result.recorded.packets,
        result.recorded.events,
        result.recorded.deliveries,
        written_bytes as f64 / 1e9,
        result.capture_dropped.packets,
        result.capture_dropped.events,
        result.capture_dropped.deliveries,
    );
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&result)?)?;
    }
    if keep {
        let kept = run_dir.keep();
        eprintln!("soak: kept {}", kept.display());
    }
    Ok(if result.packets.conserved { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Accounts for every packet of the soak from the run's counters (host 0
/// is the sender, fixed; host 1 the receiver, mobile; path 0 the downlink).
fn conservation(d: &DataplaneReport, offered: u64, received_by_sink: u64) -> Conservation {
    let (sender, receiver) = (&d.hosts[0], &d.hosts[1]);
    let path = d.paths.first().cloned().unwrap_or_default();
    let mut dropped = std::collections::BTreeMap::new();
    // The soak's downlink is its only path with traffic; the uplink stage
    // carries nothing.
    for stage in &d.stages {
        for (reason, n) in stage.dropped.iter() {
            if n > 0 {
                *dropped.entry(reason.as_str().to_string()).or_default() += n;
            }
        }
    }
    let refused: u64 = sender.refused.values().sum();
    let dropped_total: u64 = dropped.values().sum();
    let conserved = offered == sender.sent_packets + refused + sender.kernel_dropped_frames
        && sender.sent_packets == path.entered
        && path.entered == path.delivered + path.dropped + path.in_flight
        && path.dropped == dropped_total
        && path.delivered == receiver.received_packets + receiver.write_errors;
    Conservation {
        offered,
        read_by_squall: sender.sent_packets + refused,
        kernel_dropped: sender.kernel_dropped_frames,
        refused: sender.refused.clone(),
        entered: path.entered,
        delivered: receiver.received_packets,
        write_errors: receiver.write_errors,
        dropped,
        in_flight: path.in_flight,
        received_by_sink,
        conserved,
    }
}
