//! The rest of `squall bench emu` (issue 10's list): TCP through a stage
//! with no limit against plain veth, TCP achieved/configured rate with and
//! without 20 ms each way (as Mahimahi was measured), departure-time error
//! at 1 Gbit/s, ping RTT over 25 ms each way, and the data plane's CPU
//! time per forwarded packet. Each figure is printed beside its reference,
//! measured in the same run.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use squall_emu::baseline::Placement;
use squall_emu::bulk::BulkResult;
use squall_emu::dataplane::DataplaneOptions;
use squall_emu::workload::CommandSpec;
use squall_emu::{EmulationOptions, EmulationReport, baseline};

/// CPU time (user + system) of this process so far, s: the data plane, not
/// the workloads (they are other processes).
pub fn cpu_seconds() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike as _;
    // getrusage(RUSAGE_SELF) cannot fail for this process; 0 if it did.
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| (u.user_time().num_microseconds() + u.system_time().num_microseconds()) as f64 / 1e6)
        .unwrap_or(0.0)
}

/// CPU time the whole machine has spent busy so far, s, from /proc/stat:
/// user, system, interrupt, softirq and steal time of every CPU. Niced
/// time is left out, so a low-priority job (a fuzzer) running beside a
/// benchmark does not count as the benchmark's work. None where
/// /proc/stat cannot be read.
pub fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<f64> =
        stat.lines().next()?.split_whitespace().skip(1).map(|v| v.parse().ok()).collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let busy = [0, 2, 5, 6, 7].iter().filter_map(|&i| fields.get(i)).sum::<f64>();
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()?? as f64;
    (ticks > 0.0).then(|| busy / ticks)
}

/// Runs `f` and returns what it gave with the machine's busy CPU seconds
/// over its run ([`machine_busy_seconds`]).
pub fn with_machine_cpu<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, Option<f64>)> {
    let before = machine_busy_seconds();
    let out = f()?;
    let used = machine_busy_seconds().zip(before).map(|(a, b)| a - b);
    Ok((out, used))
}

/// Two hosts, `down` and `up` as the stages' extra keys, and a `sysctl`
/// table for both hosts.
pub(crate) fn scenario(down: &str, up: &str, sysctl: &str) -> String {
    format!(
        r#"
name = "bench"
duration = "300 s"
[[hosts]]
name = "fixed"
address = "10.0.0.1"
{sysctl}
[[hosts]]
name = "mobile"
address = "10.0.1.1"
{sysctl}
[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "down"
{down}
[[links.uplink]]
name = "up"
{up}
"#
    )
}

/// Buffers large enough for a 5 Gbit/s, 40 ms path (25 MB in flight).
const BIG_BUFFERS: &str =
    r#"sysctl = { "net.ipv4.tcp_rmem" = "4096 131072 268435456", "net.ipv4.tcp_wmem" = "4096 131072 268435456" }"#;

/// How a benchmark runs squall emu, beyond its scenario and commands.
#[derive(Clone, Default)]
pub(crate) struct Setup {
    /// `--no-offloads`.
    pub no_offloads: bool,
    pub dataplane: DataplaneOptions,
    /// `--pin`.
    pub pin: bool,
    /// `--host-device`.
    pub host_device: squall_emu::HostDevice,
    /// Where the sending and the receiving workloads run (the data plane
    /// with the receiver, `--dataplane-cpu`).
    pub placed: Option<Placement>,
}

impl Setup {
    pub fn pinned() -> Setup {
        Setup { pin: true, ..Setup::default() }
    }

    /// `--host-device xdp`, pinned or not.
    pub fn xdp(pin: bool) -> Setup {
        Setup { pin, host_device: squall_emu::HostDevice::Xdp, ..Setup::default() }
    }

    /// `--host-device xdp`, the workloads as `placed` says and the data
    /// plane (`--dataplane-cpu`) on the receiver's CPU.
    pub fn xdp_placed(placed: Placement) -> Setup {
        let mut setup = Setup { placed: Some(placed), ..Setup::xdp(false) };
        setup.dataplane.cpu = Some(placed.receiver);
        setup
    }

    /// `command` placed as the sender (`sender`) or the receiver, if the
    /// setup places them.
    pub fn on(&self, sender: bool, command: &str) -> String {
        match self.placed {
            Some(p) => format!("{} {command}", p.prefix(sender).join(" ")),
            None => command.to_string(),
        }
    }
}

/// The sender on the first CPU this process may use, the receiver on the
/// last with `receiver_nice`; `None` with fewer than two CPUs.
pub fn two_cpus(receiver_nice: i32) -> Option<Placement> {
    let cpus = squall_emu::emulation::usable_cpus();
    (cpus.len() >= 2).then(|| Placement { sender: cpus[0], receiver: cpus[cpus.len() - 1], receiver_nice })
}

/// Runs `text` with `commands` as `setup` says; returns the report, the
/// workloads' directory and the CPU time the run took in this process.
pub(crate) fn emulate_with(
    text: &str,
    commands: &[&str],
    setup: &Setup,
) -> Result<(EmulationReport, tempfile::TempDir, f64)> {
    let scenario = squall_scenario::parse("bench.toml", text, Path::new(".")).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let dir = tempfile::tempdir()?;
    let commands = commands.iter().map(|c| CommandSpec::parse(c, false)).collect::<Result<Vec<_>, _>>()?;
    let options = EmulationOptions {
        recording: None,
        commands,
        workload_dir: dir.path().to_path_buf(),
        control: false,
        offloads: !setup.no_offloads,
        dataplane: setup.dataplane.clone(),
        pin: setup.pin,
        host_device: setup.host_device,
        ..Default::default()
    };
    let signal = squall_emu::cleanup::stop_on_signals()?;
    let cpu = cpu_seconds();
    let report = squall_emu::run(&scenario, options, signal)?;
    Ok((report, dir, cpu_seconds() - cpu))
}

/// A bulk transfer of `bytes` from fixed to mobile through squall.
fn bulk_through_squall(exe: &Path, text: &str, bytes: u64, cc: &str) -> Result<BulkResult> {
    bulk_through_squall_with(exe, text, bytes, cc, &Setup::default())
}

fn bulk_through_squall_with(exe: &Path, text: &str, bytes: u64, cc: &str, setup: &Setup) -> Result<BulkResult> {
    let exe = exe.display();
    let (_, dir, _) = emulate_with(
        text,
        &[
            &format!("mobile@0s={exe} tool bulk --server --once"),
            // TCP_INFO samples (to /dev/null) give the steady goodput.
            &format!(
                "fixed@0.2s={exe} tool bulk --client 10.0.1.1 --bytes {bytes} --cc {cc} --info-csv /dev/null --interval-ms 10"
            ),
        ],
        setup,
    )?;
    let out = std::fs::read_to_string(dir.path().join("1-fixed.stdout"))?;
    serde_json::from_str(out.trim()).with_context(|| {
        let err = std::fs::read_to_string(dir.path().join("1-fixed.stderr")).unwrap_or_default();
        let server = std::fs::read_to_string(dir.path().join("0-mobile.stderr")).unwrap_or_default();
        format!("bulk client printed {out:?}, said {err:?}; server said {server:?}")
    })
}

#[derive(Serialize)]
pub struct TcpUnlimited {
    /// With TUN offloads (the default).
    pub squall_bps: f64,
    /// With `--no-offloads`: one wire-sized packet per read and write.
    pub squall_no_offloads_bps: f64,
    /// With `--pin`.
    pub squall_pinned_bps: f64,
    pub veth_bps: f64,
    pub ratio: f64,
    /// A forwarder that only moves packets (no model) between TUN devices,
    /// and between veths' outer ends with AF_PACKET sockets.
    pub tun_forwarder_bps: f64,
    pub packet_socket_forwarder_bps: f64,
    /// squall with `--host-device xdp`, and a forwarder between AF_XDP
    /// sockets on veths' outer ends.
    pub squall_xdp_bps: f64,
    pub xdp_forwarder_bps: f64,
}

/// TCP through a stage with no rate limit, against plain veth.
pub fn tcp_unlimited(exe: &Path, bytes: u64) -> Result<TcpUnlimited> {
    let text = scenario("queue = { packets = 10000 }", "", "");
    let squall = bulk_through_squall(exe, &text, bytes, "cubic")?;
    let plain = bulk_through_squall_with(exe, &text, bytes, "cubic", &Setup { no_offloads: true, ..Setup::default() })?;
    let pinned = bulk_through_squall_with(exe, &text, bytes, "cubic", &Setup::pinned())?;
    let veth = baseline::veth_bulk(exe, bytes)?;
    let forwarder = |devices| -> Result<f64> {
        let bed = baseline::Forwarder::start(devices)?;
        Ok(bed.bulk(exe, bytes)?.goodput_bps)
    };
    let tun_forwarder_bps = forwarder(baseline::ForwarderDevices::Tun)?;
    let packet_socket_forwarder_bps = forwarder(baseline::ForwarderDevices::PacketSocket)?;
    let xdp_forwarder_bps = forwarder(baseline::ForwarderDevices::Xdp)?;
    let squall_xdp = bulk_through_squall_with(exe, &text, bytes, "cubic", &Setup::xdp(false))?;
    Ok(TcpUnlimited {
        squall_xdp_bps: squall_xdp.goodput_bps,
        xdp_forwarder_bps,
        squall_bps: squall.goodput_bps,
        squall_no_offloads_bps: plain.goodput_bps,
        squall_pinned_bps: pinned.goodput_bps,
        veth_bps: veth.goodput_bps,
        ratio: squall.goodput_bps / veth.goodput_bps,
        tun_forwarder_bps,
        packet_socket_forwarder_bps,
    })
}

#[derive(Serialize)]
pub struct RatePoint {
    pub rate_mbps: f64,
    pub delay_ms: f64,
    /// Goodput of the whole transfer / configured rate (IP bytes are more
    /// than goodput by the headers: at most 1460/1500 = 0.973).
    pub achieved: f64,
    /// The same without the handshake and slow start.
    pub steady: Option<f64>,
    pub retransmitted_segments: u64,
}

/// TCP (cubic) achieved/configured rate at each rate, alone and with
/// `delay` each way, with buffers for the bandwidth-delay product and a
/// queue of twice it.
pub fn rate_sweep(exe: &Path, rates_mbps: &[f64], delays_ms: &[f64], seconds: f64) -> Result<Vec<RatePoint>> {
    let mut out = Vec::new();
    for &delay in delays_ms {
        for &rate in rates_mbps {
            let bdp_packets = (rate * 1e6 * 2.0 * delay / 1e3 / 8.0 / 1500.0).ceil() as u64;
            let queue = (2 * bdp_packets).max(1000);
            let stage =
                |q: u64| format!("rate = \"{rate} Mbit/s\"\ndelay = \"{delay} ms\"\nqueue = {{ packets = {q} }}");
            let text = scenario(&stage(queue), &stage(queue), BIG_BUFFERS);
            let bytes = (rate * 1e6 / 8.0 * seconds) as u64;
            eprintln!("bench: TCP at {rate} Mbit/s, {delay} ms each way, {bytes} bytes");
            let r = bulk_through_squall(exe, &text, bytes, "cubic")
                .with_context(|| format!("TCP at {rate} Mbit/s, {delay} ms each way"))?;
            let configured = rate * 1e6;
            out.push(RatePoint {
                rate_mbps: rate,
                delay_ms: delay,
                achieved: r.goodput_bps / configured,
                steady: r.steady_goodput_bps.map(|s| s / configured),
                retransmitted_segments: r.final_info.total_retrans as u64,
            });
        }
    }
    Ok(out)
}

#[derive(Clone, Debug, Serialize)]
pub struct PingFigures {
    pub sent: u64,
    pub received: u64,
    /// From ping's summary line (microsecond resolution).
    pub avg_ms: f64,
    pub mdev_ms: f64,
    /// From its per-reply lines (0.1 ms resolution above 10 ms).
    pub median_ms: f64,
    pub p99_ms: f64,
    pub configured_ms: f64,
    /// The same ping with no squall between the hosts (plain veth, or the
    /// Linux bridge), in the same run: the hosts' own RTT, which any link
    /// adds to its delay.
    pub baseline: Option<Box<PingFigures>>,
}

/// `ping` from fixed to mobile over `one_way_ms` each way, `count` echoes
/// 20 ms apart, squall run as `setup` says.
pub fn ping(one_way_ms: f64, count: u32, setup: &Setup) -> Result<PingFigures> {
    let stage = format!("delay = \"{one_way_ms} ms\"");
    let (_, dir, _) = emulate_with(
        &scenario(&stage, &stage, ""),
        &[&format!("fixed@0.2s=ping -n -i 0.02 -c {count} 10.0.1.1")],
        setup,
    )?;
    let out = std::fs::read_to_string(dir.path().join("0-fixed.stdout"))?;
    let mut figures = PingFigures::from_output(&out, count, 2.0 * one_way_ms)?;
    let plain = squall_emu::baseline::veth_ping(count)?;
    figures.baseline = Some(Box::new(PingFigures::from_output(&plain, count, 0.0)?));
    Ok(figures)
}

impl PingFigures {
    /// "ping over ...: avg, median, p99; configured" and, with a baseline,
    /// what squall adds to the hosts' own RTT.
    pub fn describe(&self, over: &str) -> String {
        let mut s = format!(
            "ping over {over} ({} of {} replies): avg {:.3} ms (mdev {:.3}), median {:.2} ms, p99 {:.2} ms; configured {:.1} ms",
            self.received, self.sent, self.avg_ms, self.mdev_ms, self.median_ms, self.p99_ms, self.configured_ms
        );
        if let Some(b) = &self.baseline {
            s += &format!(
                "\n  without squall: avg {:.3} ms, median {:.3} ms, p99 {:.3} ms; squall adds (avg) {:.3} ms beyond the configured {:.1} ms",
                b.avg_ms,
                b.median_ms,
                b.p99_ms,
                self.avg_ms - b.avg_ms - self.configured_ms,
                self.configured_ms
            );
        }
        s
    }

    /// The figures of `ping -c count` printed as `out`.
    pub fn from_output(out: &str, count: u32, configured_ms: f64) -> Result<PingFigures> {
        let mut times: Vec<f64> =
            out.lines().filter_map(|l| l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok()).collect();
        times.sort_by(f64::total_cmp);
        let summary = out.lines().find(|l| l.contains("min/avg/max")).with_context(|| format!("ping printed {out}"))?;
        let numbers: Vec<f64> =
            // "rtt min/avg/max/mdev = 50.086/50.483/65.143/1.478 ms, pipe 3"
            summary.split('=').nth(1).and_then(|v| v.split_whitespace().next()).unwrap_or("").split('/').filter_map(|x| x.parse().ok()).collect();
        anyhow::ensure!(numbers.len() == 4 && !times.is_empty(), "ping printed {out}");
        let pick = |q: f64| times[((q * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1];
        Ok(PingFigures {
            sent: count as u64,
            received: times.len() as u64,
            avg_ms: numbers[1],
            mdev_ms: numbers[3],
            median_ms: pick(0.5),
            p99_ms: pick(0.99),
            configured_ms,
            baseline: None,
        })
    }
}
