//! `squall emu`: run a scenario in the emulate engine (real time, real
//! Linux TCP in network namespaces) and write the same files as `squall
//! sim`: summary.json (engine "emu"), scenario.toml, rep-0/events.csv and
//! rep-0/HOST.pcap, plus rep-0/timing.csv (scheduled and actual time of
//! every delivery) and rep-0/workloads/ (each command's output).
//!
//! The pcaps, events.csv and timing.csv are written while the run goes on
//! (squall_emu::recording): memory stays flat however long it runs, and a
//! record the writer cannot keep up with is dropped and counted
//! (`emu.capture_dropped` in summary.json), never the packet.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use squall_analysis::{Summary, summarize};
use squall_emu::dataplane::{DataplaneOptions, DataplaneReport};
use squall_emu::naming::TUN_NAME;
use squall_emu::recording::{DEFAULT_QUEUE, DEFAULT_QUEUE_BYTES, RecordCounts, RecordingOptions};
use squall_emu::workload::{CommandOutcome, CommandSpec, WorkloadFile};
use squall_emu::{EmulationOptions, EmulationReport, EndReason};
use squall_link::{DropReason, Duration};
use squall_scenario::Scenario;
use squall_trace::SNAPLEN;

use crate::sim_cmd::{self, Loaded, ScenarioArgs, StageSummary, stage_summary};

/// `--host-device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HostDeviceArg {
    Tun,
    Xdp,
}

/// `--inline-socket`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InlineSocketArg {
    Packet,
    Xdp,
}

impl From<InlineSocketArg> for squall_emu::inline::InlineSocket {
    fn from(a: InlineSocketArg) -> Self {
        match a {
            InlineSocketArg::Packet => squall_emu::inline::InlineSocket::Packet,
            InlineSocketArg::Xdp => squall_emu::inline::InlineSocket::Xdp,
        }
    }
}

impl From<HostDeviceArg> for squall_emu::HostDevice {
    fn from(a: HostDeviceArg) -> Self {
        match a {
            HostDeviceArg::Tun => squall_emu::HostDevice::Tun,
            HostDeviceArg::Xdp => squall_emu::HostDevice::Xdp,
        }
    }
}

#[derive(Args)]
pub struct EmuArgs {
    #[command(flatten)]
    pub common: ScenarioArgs,
    /// Run a command on a host: HOST@TIME=COMMAND, e.g.
    /// `fixed@1s="iperf3 -c 10.0.1.1 -t 5"`. The run ends when all of them
    /// have exited (or at the scenario's duration). Repeatable.
    #[arg(long = "run", value_name = "HOST@TIME=COMMAND")]
    pub run: Vec<String>,
    /// Like --run, for a server: the run does not wait for it, and it is
    /// stopped at the end. Repeatable.
    #[arg(long = "serve", value_name = "HOST@TIME=COMMAND")]
    pub serve: Vec<String>,
    /// A TOML file with `[[commands]]` (host, at, run, background).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Run for this long instead of the scenario's duration ("30 s").
    #[arg(long)]
    pub duration: Option<Duration>,
    /// Sleep until this long before each deadline, then spin.
    #[arg(long, default_value = "200 us")]
    pub early_wakeup: Duration,
    /// After reading packets, keep reading (spinning) this long before
    /// sleeping: while traffic flows, packets are found without waking
    /// the data plane, a cost the senders' CPUs pay ("0 s": sleep at once).
    #[arg(long, default_value = "50 us")]
    pub busy_poll: Duration,
    /// A delivery later than this is counted late and flags the run.
    #[arg(long, default_value = "1 ms")]
    pub late_threshold: Duration,
    /// Run the data plane in SCHED_FIFO at this priority (1-99). Helps on a
    /// loaded machine at low packet rates; at high rates the kernel's
    /// real-time throttling makes it worse.
    #[arg(long, value_name = "PRIORITY")]
    pub realtime: Option<i32>,
    /// Run the data plane alone on the last CPU, and the workloads (and
    /// squall's other threads) on the others.
    #[arg(long)]
    pub pin: bool,
    /// Run the data plane on this CPU, and leave the workloads and squall's
    /// other threads where the kernel puts them (place workloads yourself
    /// with `taskset -c`). With `--host-device xdp`, a sender alone on one
    /// CPU and its receiver on the data plane's is the fastest placement
    /// measured (docs/guide, "Emulation: Which device joins a host: TUN or AF_XDP").
    #[arg(long, value_name = "CPU", conflicts_with = "pin")]
    pub dataplane_cpu: Option<usize>,
    /// What joins each host to squall: `tun` (a TUN device with offloads,
    /// the faster for bulk TCP) or `xdp` (a veth pair read and written
    /// with AF_XDP, the faster for small packets; TCP flights come
    /// wire-sized). docs/guide, "Emulation: Which device joins a host: TUN or AF_XDP".
    #[arg(long, value_enum, default_value_t = HostDeviceArg::Tun)]
    pub host_device: HostDeviceArg,
    /// Inline, what reads and writes the two interfaces: `packet` (AF_PACKET
    /// with a receive ring; GSO super-frames pass, the faster for bulk TCP)
    /// or `xdp` (AF_XDP in copy mode, the faster for small frames; an XDP
    /// program on a veth turns its peer's GSO off). docs/guide, "Inline and outside hosts".
    #[arg(long, value_enum, default_value_t = InlineSocketArg::Packet)]
    pub inline_socket: InlineSocketArg,
    /// MTU of the hosts' TUN devices, bytes.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Open the hosts' TUN devices without offloads: each write of a host
    /// is one wire-sized packet (slower; the model sees the same packets
    /// either way, as offloaded flights are cut before it).
    #[arg(long)]
    pub no_offloads: bool,
    /// Keep at most this many bytes of each packet in the pcaps (like
    /// `tcpdump -s`); a record's original length stays the packet's.
    /// Default: whole packets.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=SNAPLEN as i64))]
    pub snaplen: Option<u32>,
    /// Do not write timing.csv (each delivery's scheduled and actual
    /// time); the summary's departure-error figures are kept. At millions
    /// of deliveries a second its writing competes with the data plane.
    #[arg(long)]
    pub no_timing: bool,
    /// Started by `squall run` or `squall compare`, which move the files
    /// into their own layout: the closing "wrote …" line, which would name
    /// paths gone by then, is left out.
    #[arg(long, hide = true)]
    pub files_moved_by_parent: bool,
    /// Records (packets, a wake-up's events, delivery timings) the queue to
    /// the recording thread holds; when it is full, records are dropped and
    /// counted (summary.json `emu.capture_dropped`), packets never.
    #[arg(long, value_name = "RECORDS", default_value_t = DEFAULT_QUEUE, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 24))]
    pub record_queue: usize,
    /// Inline mode: carry every frame between two existing interfaces
    /// through the scenario's link instead of making namespaces: frames
    /// from the first take the downlink (links[0].between[0]'s side),
    /// frames from the second the uplink. `--inline eth1,eth2`. Needs a
    /// scenario of two hosts and one link (or --link) and no workloads.
    #[arg(long, value_name = "IFACE,IFACE", value_parser = parse_interface_pair)]
    pub inline: Option<[String; 2]>,
    /// Inline mode: attach even to an interface with this machine's
    /// default route or one of its global addresses.
    #[arg(long)]
    pub force_interface: bool,
    /// Replace the run already in --out (its files are removed first, as
    /// `squall sim --force` does); without it such a directory is refused
    /// before anything is started.
    #[arg(long)]
    pub force: bool,
    /// How to print the per-flow results (from the hosts' pcaps): an
    /// aligned `table`, or `json` / `csv` with plain numbers and the unit
    /// in each name, as `squall sim --format`.
    #[arg(long, value_enum, default_value_t = sim_cmd::Format::Table)]
    pub format: sim_cmd::Format,
    /// Shell mode: run this command on the mobile host (the second host of
    /// the first link) with SQUALL_PEER set to the fixed host's address; the
    /// run ends when it exits.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `A,B`: two interface names.
fn parse_interface_pair(s: &str) -> Result<[String; 2], String> {
    match s.split(',').map(str::trim).collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok([a.to_string(), b.to_string()]),
        _ => Err(format!("expected two interface names separated by a comma, like `eth1,eth2`; got `{s}`")),
    }
}

#[derive(Serialize)]
struct RunSummary {
    replication: u32,
    seed: u64,
    end: f64,
    /// Every flow seen in the hosts' pcaps, analysed by the same code as an
    /// experiment's runs (squall-analysis).
    flows: Vec<squall_analysis::FlowStats>,
    stages: Vec<StageSummary>,
    hosts: BTreeMap<String, squall_emu::dataplane::HostCounters>,
    timing: squall_emu::timing::TimingSummary,
}

#[derive(Serialize)]
struct EmuSummary {
    squall_version: &'static str,
    engine: &'static str,
    scenario: String,
    source: String,
    seed: u64,
    replications: u32,
    resolved_scenario: Scenario,
    /// TCP flows whose window (theirs, or the kernel's buffers) or
    /// application caps them below their path's bottleneck
    /// (crate::limits::emu_tcp_limits); absent when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tcp_limits: Vec<crate::limits::FlowLimit>,
    runs: Vec<RunSummary>,
    aggregate: Aggregate,
    /// Departure-time error of the run (seed 000 §6).
    timing: squall_emu::timing::TimingSummary,
    emu: EmuDetails,
}

#[derive(Serialize, Default)]
struct Aggregate {
    flows: BTreeMap<String, BTreeMap<String, Summary>>,
    stages: BTreeMap<String, BTreeMap<String, Summary>>,
}

#[derive(Serialize)]
struct EmuDetails {
    run_id: u32,
    ended_by: EndReason,
    /// TUN offloads granted to the hosts (absent inline).
    offloads: Option<squall_emu::device::TunOffloads>,
    /// The outside host: its interface, device and the packets dropped
    /// for leaving elsewhere (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    outside: Option<squall_emu::uplink::OutsideReport>,
    early_wakeup: f64,
    busy_poll: f64,
    /// What joined the hosts to squall (`--host-device`; absent inline).
    #[serde(skip_serializing_if = "Option::is_none")]
    host_device: Option<squall_emu::HostDevice>,
    /// Inline, what read and wrote the interfaces (`--inline-socket`).
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_socket: Option<squall_emu::inline::InlineSocket>,
    /// The CPU the data plane was pinned to (`--pin` or `--dataplane-cpu`),
    /// if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned_cpu: Option<usize>,
    workloads: Vec<CommandOutcome>,
    stale_removed: Vec<String>,
    /// Records written to the pcaps, events.csv and timing.csv.
    recorded: RecordCounts,
    /// Records dropped because the recording queue was full.
    capture_dropped: RecordCounts,
    /// Bytes of each packet kept in the pcaps.
    snaplen: u32,
    record_queue: usize,
    /// Peak resident set of squall (VmHWM) when the run ended, before the
    /// pcaps were analysed, kB.
    peak_rss_kb: Option<u64>,
}

/// Every command of the run, and the sysctls its TCP workloads need.
/// `resolved` is where the resolved scenario will be, for the UDP senders
/// to read; `workload_dir` where the workloads' files go (a web site).
fn commands(
    args: &EmuArgs,
    scenario: &Scenario,
    resolved: &Path,
    workload_dir: &Path,
) -> Result<(Vec<CommandSpec>, Sysctls)> {
    let mut out: Vec<CommandSpec> = scenario
        .workload
        .commands
        .iter()
        .map(|c| CommandSpec {
            host: c.host.clone(),
            at: c.at,
            run: c.run.clone(),
            background: c.background,
            interactive: false,
        })
        .collect();
    for spec in &args.run {
        out.push(CommandSpec::parse(spec, false)?);
    }
    for spec in &args.serve {
        out.push(CommandSpec::parse(spec, true)?);
    }
    if let Some(file) = &args.workload {
        out.extend(WorkloadFile::load(file)?.commands);
    }
    let (tcp, sysctls) = tcp_workloads(scenario, workload_dir)?;
    out.extend(tcp);
    out.extend(udp_workloads(scenario, resolved)?);
    if !args.command.is_empty() {
        let mobile = scenario.links.first().map(|l| l.between[1].clone()).context("the scenario has no link")?;
        let run = args.command.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ");
        out.push(CommandSpec { host: mobile, at: Duration::ZERO, run, background: false, interactive: true });
    }
    Ok((out, sysctls))
}

/// The shell prefix that sets route attributes (ip-route(8)) on a host's
/// route to `to` before its command runs; empty if there are none.
fn route_change(to: std::net::Ipv4Addr, from: std::net::Ipv4Addr, attrs: &[String]) -> String {
    if attrs.is_empty() {
        String::new()
    } else {
        format!("ip route change {to}/32 dev {TUN_NAME} src {from} {} && ", attrs.join(" "))
    }
}

/// First port of the bulk servers that stand for `[[workload.tcp]]` flows
/// (flow i listens on `TCP_WORKLOAD_PORT + i`).
const TCP_WORKLOAD_PORT: u16 = 15_000;

/// The port the server of `[[workload.tcp]]` entry number `index` listens
/// on in emulation: a bulk server's `TCP_WORKLOAD_PORT + index`, Apache's
/// `dst_port` or 80 (the simulator's: `squall_sim::tcp_ports`).
pub(crate) fn tcp_server_port(f: &squall_scenario::TcpFlow, index: usize) -> u16 {
    match f.app {
        squall_scenario::TcpApp::Web(_) => f.dst_port.unwrap_or(80),
        _ => TCP_WORKLOAD_PORT + index as u16,
    }
}

/// `[[workload.tcp]]` flows as real Linux TCP: for a bulk application, a
/// `squall tool bulk` server on the flow's `to` host and a client on its
/// `from` host at `start`, told every key Linux can express (see
/// [`LinuxTcp`]); for a web application with a site, Apache 2 and wget
/// (`web_workload`). The keys Linux cannot take are said, one line each,
/// never silently dropped. Returns the commands and the sysctls the flows
/// need in their hosts' namespaces.
fn tcp_workloads(scenario: &Scenario, workload_dir: &Path) -> Result<(Vec<CommandSpec>, Sysctls)> {
    use squall_scenario::TcpApp;
    let mut out = Vec::new();
    let mut sysctls = Sysctls::new();
    for (i, f) in scenario.workload.tcp.iter().enumerate() {
        let what = format!("[[workload.tcp]] `{}`", f.name);
        let linux = LinuxTcp::of(f).with_context(|| what.clone())?;
        check_kernel_offers(linux.cc).with_context(|| what.clone())?;
        for note in &linux.notes {
            eprintln!("squall emu: {what}: {note}");
        }
        // Both hosts take the flow's sysctls; for a site, Apache's host
        // also takes its congestion control (the bulk tool sets its own).
        let mut needs: Vec<(&String, &str, String)> = [&f.from, &f.to]
            .into_iter()
            .flat_map(|host| linux.sysctls.iter().map(move |(key, value)| (host, *key, value.clone())))
            .collect();
        if matches!(f.app, TcpApp::Web(_)) {
            needs.push((&f.to, "net.ipv4.tcp_congestion_control", linux.cc.to_string()));
        }
        for (host, key, value) in needs {
            let set = sysctls.entry(host.clone()).or_default();
            match set.insert(key.to_string(), value.clone()) {
                Some(other) if other != value => anyhow::bail!(
                    "{what}: needs {key} = {value} on host `{host}`, where another [[workload.tcp]] needs {other} \
                     (Linux keeps it per namespace)"
                ),
                _ => {}
            }
        }
        // What the client does, as `squall tool bulk` options.
        let app = match &f.app {
            TcpApp::Web(web) => {
                out.extend(web_workload(scenario, f, web, workload_dir, &linux).with_context(|| what.clone())?);
                continue;
            }
            TcpApp::Bulk(bytes) => format!("--bytes {}", bytes.0),
            TcpApp::BulkFor(d) => format!("--for '{d}'"),
            TcpApp::RequestResponse(r) => format!(
                "--request {} --response {} --count {} --think '{}'",
                r.request.0, r.response.0, r.count, r.think
            ),
        };
        let address = |name: &str| {
            scenario
                .hosts
                .iter()
                .find(|h| h.name == name)
                .map(|h| h.address)
                .with_context(|| format!("{what}: no host `{name}`"))
        };
        let (client, server) = (address(&f.from)?, address(&f.to)?);
        let port = tcp_server_port(f, i);
        out.push(CommandSpec {
            host: f.to.clone(),
            at: Duration::ZERO,
            run: format!(
                "{}squall tool bulk --server --port {port} --mss {}{}",
                route_change(client, server, &linux.receiver_route),
                f.mss.0,
                linux.window.map(|w| format!(" --window {w}")).unwrap_or_default()
            ),
            background: true,
            interactive: false,
        });
        out.push(CommandSpec {
            host: f.from.clone(),
            at: f.start,
            run: format!(
                "{}squall tool bulk --client {server} --port {port} {app} --cc {} --mss {} --info-csv {}",
                route_change(server, client, &linux.sender_route),
                linux.cc,
                f.mss.0,
                shell_quote(&tcp_info_file(&f.name))
            ),
            background: false,
            interactive: false,
        });
    }
    Ok((out, sysctls))
}

/// The file in `workloads/` where a `[[workload.tcp]]` bulk client writes
/// its TCP_INFO samples.
pub(crate) fn tcp_info_file(flow: &str) -> String {
    format!("tcp-{flow}.csv")
}

/// Sysctls per host name.
type Sysctls = BTreeMap<String, BTreeMap<String, String>>;

/// What Linux is told for one `[[workload.tcp]]` flow: the congestion
/// control, route attributes on the sender's route to the receiver and the
/// receiver's route back (ip-route(8): `initcwnd`, `rto_min`, `ssthresh`,
/// `cwnd ... lock cwnd`, `quickack`), per-namespace sysctls (`tcp_sack`,
/// `tcp_window_scaling`); TCP_MAXSEG and TCP_WINDOW_CLAMP go to the bulk
/// tool. `notes` say what Linux does instead for the keys it cannot take.
///
/// With `profile = "rfc"` every key is applied at its resolved value (RFC
/// defaults included). With `profile = "linux"` a key left out is Linux's
/// own default already, and one given at Linux's default changes nothing:
/// neither is set, so the kernel runs as it would unconfigured.
#[derive(Debug, PartialEq)]
struct LinuxTcp {
    cc: &'static str,
    /// TCP_WINDOW_CLAMP for the receiving tool, bytes; `None` leaves
    /// Linux's receive-buffer autotuning alone.
    window: Option<u64>,
    sender_route: Vec<String>,
    receiver_route: Vec<String>,
    sysctls: Vec<(&'static str, String)>,
    notes: Vec<String>,
}

impl LinuxTcp {
    fn of(f: &squall_scenario::TcpFlow) -> Result<Self> {
        use squall_scenario::{DelayedAckSpec, RtoSpec, TcpCc, TcpProfile, WindowSize};
        let cc = match f.cc {
            TcpCc::Tahoe => anyhow::bail!("Linux has no Tahoe; use cc = \"reno\" or \"cubic\" in emulation"),
            // Linux's `reno` recovers with SACK when it is on (RFC 6675)
            // and as NewReno (RFC 6582) when it is off.
            TcpCc::Reno | TcpCc::NewReno | TcpCc::Sack => "reno",
            TcpCc::Cubic => "cubic",
            TcpCc::Vegas => "vegas",
            TcpCc::Bbr => "bbr",
        };
        let segments = |w: WindowSize| match w {
            WindowSize::Segments(n) => n,
            WindowSize::Bytes(b) => b.0.div_ceil(f.mss.0.max(1)),
        };
        let linux = f.profile == TcpProfile::Linux;
        // A key to apply: always with the RFC profile (at its resolved
        // value), with the Linux profile only if given and not Linux's own
        // default.
        let apply = |given: bool, at_linux_default: bool| !linux || (given && !at_linux_default);
        let mut sender_route = Vec::new();
        let initial_window = f.initial_window.unwrap_or(if linux { LINUX_INITCWND } else { 2 });
        if apply(f.initial_window.is_some(), initial_window == LINUX_INITCWND) {
            sender_route.push(format!("initcwnd {initial_window}"));
        }
        let min_rto = f.min_rto.unwrap_or(if linux { LINUX_RTO_MIN } else { Duration::from_secs(1) });
        if apply(f.min_rto.is_some(), min_rto == LINUX_RTO_MIN) {
            sender_route.push(format!("rto_min {}ms", min_rto.as_nanos().div_ceil(1_000_000)));
        }
        if let Some(w) = f.initial_ssthresh {
            sender_route.push(format!("ssthresh {}", segments(w)));
        }
        if let Some(w) = f.max_window {
            sender_route.push(format!("cwnd {} lock cwnd", segments(w)));
        }
        let mut receiver_route = Vec::new();
        let mut notes = Vec::new();
        match f.delayed_ack {
            Some(DelayedAckSpec::Enabled(false)) => receiver_route.push("quickack 1".to_string()),
            // The Linux profile's delayed ACKs are Linux's own.
            None if linux => {}
            None | Some(DelayedAckSpec::Enabled(true)) | Some(DelayedAckSpec::Timer(_)) => notes.push(
                "Linux delays ACKs by its own rules (quick-ACK at the start, then 40 ms to 200 ms), not by \
                 `delayed_ack`; `delayed_ack = false` is the one setting it takes (route `quickack`)"
                    .to_string(),
            ),
        }
        let rto = f.rto.unwrap_or(if linux { RtoSpec::Linux } else { RtoSpec::Rfc6298 });
        if rto == RtoSpec::Seed001 || (linux && rto == RtoSpec::Rfc6298) {
            notes.push("Linux computes its RTO with its own rules (rto = \"linux\"); `rto` is not applied".into());
        }
        if !f.limited_transmit {
            notes.push(
                "Linux always uses limited transmit (RFC 3042); `limited_transmit = false` is not applied".into(),
            );
        }
        if f.hystart == Some(false) && f.cc == TcpCc::Cubic {
            notes.push(
                "HyStart is a global tcp_cubic module parameter, not a per-namespace setting; `hystart = false` is \
                 not applied"
                    .into(),
            );
        }
        if f.drain.is_some() {
            notes.push("the receiving tool reads at once; `drain` is not applied".into());
        }
        if f.proxy.is_some() {
            notes.push("runs end to end; the split-TCP proxy exists in the simulator only".into());
        }
        let mut sysctls = Vec::new();
        let sack = f.sack.unwrap_or(linux || matches!(f.cc, TcpCc::Sack | TcpCc::Cubic | TcpCc::Bbr));
        if apply(f.sack.is_some(), sack) {
            sysctls.push(("net.ipv4.tcp_sack", u8::from(sack).to_string()));
        }
        // DupThresh is Linux's initial reordering degree, per namespace
        // (net/ipv4/tcp_ipv4.c `tcp_sk_init` sets net.ipv4.tcp_reordering
        // to TCP_FASTRETRANS_THRESH, 3, which both profiles share;
        // net/ipv4/tcp.c `tcp_init_sock` copies it into tp->reordering).
        if let Some(n) = f.dupack_threshold
            && n != LINUX_REORDERING
        {
            sysctls.push(("net.ipv4.tcp_reordering", n.to_string()));
        }
        let window_scaling = f.window_scaling.unwrap_or(true);
        if apply(f.window_scaling.is_some(), window_scaling) {
            sysctls.push(("net.ipv4.tcp_window_scaling", u8::from(window_scaling).to_string()));
        }
        // Timestamps only when asked for: the RFC profile has always left
        // Linux's default (on) alone.
        if let Some(ts) = f.timestamps
            && apply(true, ts)
        {
            sysctls.push(("net.ipv4.tcp_timestamps", u8::from(ts).to_string()));
        }
        let window = (!linux || f.rwnd.is_some()).then(|| f.rwnd().0);
        Ok(LinuxTcp { cc, window, sender_route, receiver_route, sysctls, notes })
    }
}

/// The kernel runs congestion control `cc`: it is listed in
/// net.ipv4.tcp_available_congestion_control (built in or loaded), or
/// the kernel can load it as a module (root's TCP_CONGESTION does).
fn check_kernel_offers(cc: &str) -> Result<()> {
    let path = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    let available = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let modules = Path::new("/proc/modules").exists();
    if available.split_whitespace().any(|a| a == cc) || modules {
        return Ok(());
    }
    anyhow::bail!(
        "cc = \"{cc}\": this kernel offers {} (net.ipv4.tcp_available_congestion_control) and loads no modules; \
         run it with `squall sim`, or on a kernel built with tcp_{cc}",
        available.trim()
    )
}

/// Linux's initial congestion window, segments (include/net/tcp.h
/// `TCP_INIT_CWND`, RFC 6928).
const LINUX_INITCWND: u32 = 10;
/// Linux's default `net.ipv4.tcp_reordering` (include/net/tcp.h
/// `TCP_FASTRETRANS_THRESH`), RFC 5681's DupThresh.
const LINUX_REORDERING: u32 = 3;
/// Linux's lower bound of the RTO (`TCP_RTO_MIN`).
const LINUX_RTO_MIN: Duration = Duration::from_millis(200);

/// `[[workload.udp]]` in emulation: `squall tool udp-flow` on each flow's
/// `from` host sends the packets the simulator would (same pacer, seed,
/// sizes and ports), and a `squall tool udp-sink` on each destination host
/// and port takes them.
fn udp_workloads(scenario: &Scenario, resolved: &Path) -> Result<Vec<CommandSpec>> {
    let mut out = Vec::new();
    let mut sinks = std::collections::BTreeSet::new();
    let absolute = std::path::absolute(resolved).with_context(|| format!("{}", resolved.display()))?;
    for (i, f) in scenario.workload.udp.iter().enumerate() {
        let what = format!("[[workload.udp]] `{}`", f.name);
        let (_, dst_port) = squall_sim::udp_ports(f, i).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        if sinks.insert((f.to.clone(), dst_port)) {
            out.push(CommandSpec {
                host: f.to.clone(),
                at: Duration::ZERO,
                run: format!("squall tool udp-sink --port {dst_port}"),
                background: true,
                interactive: false,
            });
        }
        // The flow's own `start` is in its packet times: the sender starts
        // with the run.
        out.push(CommandSpec {
            host: f.from.clone(),
            at: Duration::ZERO,
            run: format!(
                "squall tool udp-flow --scenario {} --flow {} --seed {}",
                shell_quote(&absolute.to_string_lossy()),
                shell_quote(&f.name),
                scenario.seed
            ),
            background: false,
            interactive: false,
        });
    }
    Ok(out)
}

/// How long Apache gets to start before wget asks it for the first file.
const WEB_SERVER_STARTUP: Duration = Duration::from_secs(1);

/// A `web` application with a site manifest as real programs (seed 003
/// §3): the site's files written under `workload_dir/site-NAME/`, Apache 2
/// (Debian's `apache2`) on the `to` host with a configuration written
/// beside them (`apache-NAME.conf`: KeepAlive, MaxKeepAliveRequests,
/// KeepAliveTimeout and Timeout from the scenario), and wget on the `from`
/// host fetching the files one at a time in the manifest's order
/// (`urls-NAME.txt`; `--no-http-keep-alive` without keep-alive), one
/// second after the start (Apache's start-up). The site download duration
/// is read from the captures like the simulator's (first SYN to last
/// byte).
fn web_workload(
    scenario: &Scenario,
    f: &squall_scenario::TcpFlow,
    web: &squall_scenario::WebPage,
    workload_dir: &Path,
    linux: &LinuxTcp,
) -> Result<Vec<CommandSpec>> {
    use std::fmt::Write as _;
    if web.site_files.is_empty() {
        bail!("emulation fetches a site: give the web application a manifest (site = \"site.csv\") instead of sizes");
    }
    let server = scenario.hosts.iter().find(|h| h.name == f.to).with_context(|| format!("no host `{}`", f.to))?;
    let client = scenario.hosts.iter().find(|h| h.name == f.from).with_context(|| format!("no host `{}`", f.from))?;
    // Apache sends the data: the sender's route attributes (initcwnd,
    // rto_min, …) go on its route to the client. wget receives: the
    // receiver's (quickack) on its route to the server, with the window
    // it may offer (ip-route(8) `window`: tcp_output.c
    // `tcp_select_initial_window` clamps to RTAX_WINDOW) and, for an MSS
    // other than the MTU's 1460, the MSS it announces (`advmss`), which
    // the bulk tool sets by TCP_WINDOW_CLAMP and TCP_MAXSEG instead.
    let mut receiver_route = linux.receiver_route.clone();
    if let Some(window) = linux.window {
        receiver_route.push(format!("window {window}"));
    }
    if f.mss.0 != 1460 {
        receiver_route.push(format!("advmss {}", f.mss.0));
    }
    let server_route = route_change(client.address, server.address, &linux.sender_route);
    let client_route = route_change(server.address, client.address, &receiver_route);
    let port = tcp_server_port(f, 0);
    let site = workload_dir.join(format!("site-{}", f.name));
    let count = web.object_count() as usize;
    let mut urls = String::new();
    for file in web.site_files.iter().take(count) {
        let path = site.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        fs::write(&path, vec![b'x'; file.bytes as usize])
            .with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(urls, "http://{}:{port}/{}", server.address, file.path)?;
    }
    let dir = fs::canonicalize(workload_dir)?;
    let site = fs::canonicalize(&site)?;
    // Apache's children run as www-data: they must reach the site.
    let mut p = Some(site.as_path());
    while let Some(d) = p {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(d)?.permissions().mode();
        if mode & 0o005 != 0o005 {
            fs::set_permissions(d, fs::Permissions::from_mode(mode | 0o005))?;
        }
        if d == dir {
            break;
        }
        p = d.parent();
    }
    let secs = |d: Option<Duration>, default: u64| d.map_or(default, |d| d.as_secs_f64().ceil() as u64);
    let conf = format!(
        "# squall: [[workload.tcp]] `{name}` (seed 003 §3), Apache 2 on {host}\n\
         LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n\
         LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so\n\
         ServerName {host}\n\
         Listen {addr}:{port}\n\
         User www-data\n\
         Group www-data\n\
         PidFile {dir}/apache-{name}.pid\n\
         DefaultRuntimeDir {dir}\n\
         Mutex file:{dir} default\n\
         ErrorLog {dir}/apache-{name}-error.log\n\
         DocumentRoot \"{site}\"\n\
         <Directory \"{site}\">\n    Require all granted\n</Directory>\n\
         KeepAlive {keep_alive}\n\
         MaxKeepAliveRequests {max_requests}\n\
         KeepAliveTimeout {keep_alive_timeout}\n\
         Timeout {timeout}\n\
         StartServers 2\n",
        name = f.name,
        host = f.to,
        addr = server.address,
        dir = dir.display(),
        site = site.display(),
        keep_alive = if web.keep_alive { "On" } else { "Off" },
        max_requests = web.max_requests,
        keep_alive_timeout = secs(web.keep_alive_timeout, 15),
        timeout = secs(web.server_timeout, 300),
    );
    let conf_file = dir.join(format!("apache-{}.conf", f.name));
    fs::write(&conf_file, conf)?;
    fs::write(dir.join(format!("urls-{}.txt", f.name)), urls)?;
    eprintln!(
        "squall emu: [[workload.tcp]] `{}`: Apache 2 on {} ({}:{port}, {}) and wget on {} fetching {count} files; \
         the flow's TCP keys as route attributes and sysctls (cc as the server's net.ipv4.tcp_congestion_control)",
        f.name,
        f.to,
        server.address,
        conf_file.display(),
        f.from
    );
    let keep_alive = if web.keep_alive { "" } else { " --no-http-keep-alive" };
    Ok(vec![
        CommandSpec {
            host: f.to.clone(),
            at: Duration::ZERO,
            // Debian installs apache2 in /usr/sbin, outside some users' PATH.
            run: format!(
                "{server_route}PATH=\"$PATH:/usr/sbin\" exec apache2 -f {} -DFOREGROUND",
                shell_quote(&conf_file.display().to_string())
            ),
            background: true,
            interactive: false,
        },
        CommandSpec {
            host: f.from.clone(),
            at: f.start + WEB_SERVER_STARTUP,
            run: format!(
                "{client_route}wget -nv -O /dev/null{keep_alive} -i {}",
                shell_quote(&format!("urls-{}.txt", f.name))
            ),
            background: false,
            interactive: false,
        },
    ])
}

/// The `[[record]]` stage vectors of an emulated run, from its events.csv
/// (the data plane drives the same stage model, whose events the run
/// recorded), streamed into rep-0/vectors.csv as `squall sim` writes them.
fn stage_vectors(scenario: &squall_scenario::Scenario, rep: &Path, end: squall_link::Instant) -> Result<()> {
    let events = rep.join("events.csv");
    let file = fs::File::open(&events).with_context(|| format!("cannot read {}", events.display()))?;
    let reader = squall_trace::EventLogReader::new(std::io::BufReader::new(file))
        .with_context(|| format!("cannot read {}", events.display()))?;
    let Some(mut vectors) = squall_sim::VectorWriter::create(rep, scenario).map_err(anyhow::Error::msg)? else {
        return Ok(());
    };
    let mut batch = Vec::with_capacity(4096);
    for e in reader {
        batch.push(e.with_context(|| format!("cannot read {}", events.display()))?);
        if batch.len() == batch.capacity() {
            vectors.events(&batch).map_err(anyhow::Error::msg)?;
            batch.clear();
        }
    }
    vectors.events(&batch).map_err(anyhow::Error::msg)?;
    vectors.finish(end).map_err(anyhow::Error::msg)?;
    Ok(())
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub fn run(args: EmuArgs) -> Result<ExitCode> {
    if !args.command.is_empty() && args.format != sim_cmd::Format::Table {
        anyhow::bail!(
            "--format prints the per-flow results on stdout, which shell mode (a command after --) leaves to the \
             command; read them from OUT/summary.json instead"
        );
    }
    let Loaded { source, mut scenario } = sim_cmd::load(&args.common, None)?;
    if args.common.link.is_some() {
        eprintln!("{}", squall_scenario::describe_netem_directions(&scenario, args.common.uplink.is_some()));
    }
    if let Some(d) = args.duration {
        scenario.duration = d;
    }
    for never in scenario.after_the_end() {
        eprintln!("squall emu: warning: {never}");
    }
    scenario.replications = 1;
    if let Some(why) = squall_scenario::record::refused_in_emulation(&scenario.record).first() {
        anyhow::bail!("{source}: {why}");
    }
    if !scenario.record.is_empty() && args.common.no_events {
        anyhow::bail!("{source}: [[record]] stage vectors are made from events.csv, which --no-events leaves out");
    }
    let out = args.common.out.clone().unwrap_or_else(|| PathBuf::from("out").join(format!("{}-emu", scenario.name)));
    let rep = out.join("rep-0");
    // Refused before the output directory is touched.
    if args.force_interface && scenario.inline.is_none() && args.inline.is_none() {
        anyhow::bail!(
            "--force-interface is for inline mode (--inline IFACE,IFACE or an [inline] table in the scenario)"
        );
    }
    // Refused or cleared before anything starts (no namespace, no command).
    crate::output::prepare_out_dir(&out, args.force)?;
    fs::create_dir_all(rep.join("workloads"))
        .with_context(|| format!("cannot create output directory {}", rep.display()))?;
    let (commands, sysctls) = commands(&args, &scenario, &out.join("scenario.toml"), &rep.join("workloads"))?;
    for (host, keys) in sysctls {
        let Some(h) = scenario.hosts.iter_mut().find(|h| h.name == host) else { continue };
        for (key, value) in keys {
            match h.sysctl.get(&key) {
                Some(mine) if mine.0 != value => anyhow::bail!(
                    "host `{host}`: sysctl `{key}` = \"{}\", but its [[workload.tcp]] flows need \"{value}\"",
                    mine.0
                ),
                _ => {
                    h.sysctl.insert(key, squall_scenario::SysctlValue(value));
                }
            }
        }
    }
    // --inline names the interfaces of the scenario's [inline] table (or
    // makes one that carries every IP frame); the resolved scenario says
    // which were used.
    if let Some(interfaces) = &args.inline {
        let inline = scenario.inline.get_or_insert_with(|| squall_scenario::Inline {
            interfaces: interfaces.clone(),
            rules: Vec::new(),
            default: squall_scenario::InlineClass::Link,
        });
        inline.interfaces = interfaces.clone();
    }
    let resolved = toml::to_string(&scenario).context("cannot write the resolved scenario")?;
    crate::output::write_atomic(&out.join("scenario.toml"), &resolved)?;
    let tcp_limits = crate::limits::emu_tcp_limits(&scenario, |h| crate::limits::kernel_buffers(&scenario, h));
    for l in &tcp_limits {
        eprintln!("squall emu: tcp flow `{}` is {}", l.flow, l.limited_by.text);
    }

    let options = EmulationOptions {
        dataplane: DataplaneOptions {
            early_wakeup: args.early_wakeup,
            busy_poll: args.busy_poll,
            late_threshold: args.late_threshold,
            realtime_priority: args.realtime,
            cpu: args.dataplane_cpu,
        },
        recording: Some(RecordingOptions {
            dir: rep.clone(),
            events: !args.common.no_events,
            captures: !args.common.no_pcap,
            deliveries: !args.no_timing,
            snaplen: args.snaplen.unwrap_or(SNAPLEN),
            queue: args.record_queue,
            queue_bytes: DEFAULT_QUEUE_BYTES,
        }),
        stop_when_workloads_exit: commands.iter().any(|c| !c.background),
        commands,
        workload_dir: rep.join("workloads"),
        inline: scenario.inline.as_ref().map(|i| squall_emu::inline::InlineOptions {
            interfaces: i.interfaces.clone(),
            force: args.force_interface,
            socket: args.inline_socket.into(),
        }),
        mtu: args.mtu,
        offloads: !args.no_offloads,
        control: true,
        pin: args.pin,
        host_device: args.host_device.into(),
        announce: Some(format!(
            "squall emu: {} ({source}), run {}, up to {} s; `squall ctl status {}` while it runs",
            scenario.name,
            std::process::id(),
            scenario.duration.as_secs_f64(),
            std::process::id()
        )),
    };
    let signal = squall_emu::cleanup::stop_on_signals()?;
    let report = squall_emu::run(&scenario, options, signal).context("emulation failed")?;
    let peak_rss_kb = crate::bench_cmd::vm_hwm_kb();
    let shell = !args.command.is_empty();
    // A workload still running when the scenario's duration ends is
    // stopped with the run, as the simulator's flows are: said (before the
    // closing lines), not failed (a bulk transfer that cannot finish in
    // time is a result, not an error).
    let cut = |w: &&CommandOutcome| w.exit_code.is_none() && report.ended_by == EndReason::Duration;
    for w in report.workloads.iter().filter(|w| !w.background).filter(cut) {
        eprintln!("squall emu: `{}` on {} was still running at the end of the run and was stopped", w.run, w.host);
    }
    write_outputs(&out, &rep, &args, source, scenario, &report, peak_rss_kb)?;
    let failed =
        report.workloads.iter().filter(|w| !w.background && (!cut(w) || shell)).find(|w| w.exit_code != Some(0));
    Ok(match (shell, failed) {
        (true, Some(w)) => ExitCode::from(w.exit_code.unwrap_or(1).clamp(1, 255) as u8),
        (false, Some(w)) => {
            match w.exit_code {
                Some(code) => eprintln!("squall emu: `{}` on {} exited with status {code}", w.run, w.host),
                None => eprintln!(
                    "squall emu: `{}` on {} did not exit by itself: a signal ended it (or squall stopped it when the \
                     run ended)",
                    w.run, w.host
                ),
            }
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    })
}

fn write_outputs(
    out: &Path,
    rep: &Path,
    args: &EmuArgs,
    source: String,
    scenario: Scenario,
    report: &EmulationReport,
    peak_rss_kb: Option<u64>,
) -> Result<()> {
    let host_device = scenario.inline.is_none().then_some(args.host_device.into());
    let inline_socket = scenario.inline.is_some().then_some(args.inline_socket.into());
    let d: &DataplaneReport = &report.dataplane;
    let recording = &d.recording;
    if let Some(e) = &recording.error {
        anyhow::bail!("recording failed: {e}");
    }
    if !scenario.record.is_empty() {
        stage_vectors(&scenario, rep, d.end)?;
    }

    // As said before the run started.
    let tcp_limits = crate::limits::emu_tcp_limits(&scenario, |h| crate::limits::kernel_buffers(&scenario, h));
    let stages: Vec<StageSummary> = d.stages.iter().map(stage_summary).collect();
    let hosts: Vec<squall_analysis::RunHost> =
        scenario.hosts.iter().map(|h| squall_analysis::RunHost { name: h.name.clone(), address: h.address }).collect();
    let flows = if args.common.no_pcap {
        Vec::new()
    } else {
        squall_analysis::analyse_run(rep, &hosts).with_context(|| format!("analysing {}", rep.display()))?
    };
    let mut aggregate = Aggregate::default();
    for f in &flows {
        let m = aggregate.flows.entry(f.flow.clone()).or_default();
        for (k, _) in squall_analysis::report::METRICS {
            m.insert(k.to_string(), summarize(&[squall_analysis::report::metric(f, k)]));
        }
    }
    for s in &stages {
        let m = aggregate.stages.entry(s.name.clone()).or_default();
        m.insert("mean_queue_len".into(), summarize(&[s.mean_queue_len]));
        for reason in DropReason::ALL {
            let n = s.dropped.get(reason.as_str()).copied().unwrap_or(0) as f64;
            m.insert(format!("dropped_{}", reason.as_str()), summarize(&[n]));
        }
    }
    let run = RunSummary {
        replication: 0,
        seed: scenario.seed,
        end: d.end.as_secs_f64(),
        flows,
        stages,
        hosts: report.host_names.iter().cloned().zip(d.hosts.iter().cloned()).collect(),
        timing: d.timing.clone(),
    };
    let summary = EmuSummary {
        squall_version: env!("CARGO_PKG_VERSION"),
        engine: "emu",
        scenario: scenario.name.clone(),
        source,
        seed: scenario.seed,
        replications: 1,
        resolved_scenario: scenario,
        tcp_limits,
        runs: vec![run],
        aggregate,
        timing: d.timing.clone(),
        emu: EmuDetails {
            run_id: report.id.0,
            ended_by: report.ended_by,
            offloads: report.offloads,
            outside: report.outside.clone(),
            early_wakeup: args.early_wakeup.as_secs_f64(),
            busy_poll: args.busy_poll.as_secs_f64(),
            host_device,
            inline_socket,
            pinned_cpu: report.dataplane_cpu,
            workloads: report.workloads.clone(),
            stale_removed: report.stale_removed.clone(),
            recorded: recording.written,
            capture_dropped: recording.dropped,
            snaplen: args.snaplen.unwrap_or(SNAPLEN),
            record_queue: args.record_queue,
            peak_rss_kb,
        },
    };
    crate::output::write_atomic(&out.join("summary.json"), serde_json::to_string_pretty(&summary)?)?;
    // `squall run` and `squall compare` print their own tables. In shell
    // mode stdout is the command's own (as in Mahimahi's shells, scripts
    // read it), so the table stays in summary.json and stdout carries
    // nothing else.
    if !args.files_moved_by_parent && !summary.aggregate.flows.is_empty() {
        if args.command.is_empty() {
            print_flows(&summary.aggregate.flows, args.format);
        } else {
            eprintln!(
                "squall emu: per-flow results in {}/summary.json (shell mode leaves stdout to the command)",
                out.display()
            );
        }
    }
    let t = &d.timing;
    eprintln!(
        "squall emu: ended by {:?} at {:.3} s; {} deliveries, departure error p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us; {} late (> {} ms){}",
        report.ended_by,
        d.end.as_secs_f64(),
        t.deliveries,
        t.error_p50 * 1e6,
        t.error_p99 * 1e6,
        t.error_p999 * 1e6,
        t.error_max * 1e6,
        t.late,
        t.late_threshold * 1e3,
        if t.on_time { "" } else { " — RUN FLAGGED: timing was not kept" }
    );
    let written: Vec<&str> = [
        (!args.common.no_events, "events.csv"),
        (!args.common.no_pcap, "HOST.pcap"),
        (!args.no_timing, "timing.csv"),
        (true, "workloads/"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if !args.files_moved_by_parent {
        eprintln!("wrote {}/summary.json, scenario.toml and rep-0/ ({})", out.display(), written.join(", "));
    }
    let dropped = recording.dropped;
    if dropped.total() > 0 {
        eprintln!(
            "squall emu: warning: the recording could not keep up; dropped {} packet records, {} events and {} timing rows \
             (summary.json emu.capture_dropped); forwarding was not affected — a larger --record-queue, --snaplen or \
             --no-events helps",
            dropped.packets, dropped.events, dropped.deliveries
        );
    }
    if d.hosts.iter().any(|h| !h.refused.is_empty()) {
        for (name, h) in report.host_names.iter().zip(&d.hosts) {
            if !h.refused.is_empty() {
                eprintln!("squall emu: not carried from {name}: {:?}", h.refused);
            }
        }
    }
    Ok(())
}

/// The per-flow results of the run (from the hosts' pcaps, squall-analysis
/// METRICS), as `squall sim` prints its own: an aligned table, or json /
/// csv with the unit in each column's name and plain numbers.
fn print_flows(flows: &BTreeMap<String, BTreeMap<String, Summary>>, format: sim_cmd::Format) {
    use crate::output::{Cell, Rows};
    let value = |m: &BTreeMap<String, Summary>, k: &str| m.get(k).map_or(f64::NAN, |x| x.mean);
    if format != sim_cmd::Format::Table {
        let mut columns = vec!["flow".to_string()];
        columns.extend(squall_analysis::report::METRICS.iter().map(|(k, _)| crate::output::metric_with_unit(k)));
        let mut rows = Rows { columns, rows: Vec::new() };
        for (name, m) in flows {
            let mut row = vec![Cell::from(name.as_str())];
            row.extend(squall_analysis::report::METRICS.iter().map(|(k, _)| Cell::Num(value(m, k))));
            rows.push(row);
        }
        rows.print(format);
        return;
    }
    crate::output::outln!("\nflows (one run; from the hosts' pcaps; docs/metrics.md defines each figure)");
    let mut table = vec![
        [
            "flow",
            "sent",
            "received",
            "dropped",
            "throughput (Mbit/s)",
            "delay mean (ms)",
            "RTT mean (ms)",
            "jitter RFC 3550 (ms)",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (name, m) in flows {
        let ms = |k: &str| format!("{:.1}", value(m, k) * 1e3);
        table.push(vec![
            name.clone(),
            format!("{:.0}", value(m, "sent_packets")),
            format!("{:.0}", value(m, "received_packets")),
            format!("{:.0}", value(m, "dropped")),
            format!("{:.3}", value(m, "throughput_bps") / 1e6),
            ms("delay_mean"),
            ms("rtt_mean"),
            ms("jitter_rfc3550"),
        ]);
    }
    sim_cmd::print_aligned(&table);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(keys: &str) -> squall_scenario::TcpFlow {
        toml::from_str(&format!("name = \"f\"\nfrom = \"a\"\nto = \"b\"\napp = {{ bulk = \"1 MB\" }}\n{keys}")).unwrap()
    }

    #[test]
    fn rfc_profile_sets_every_key_as_before() {
        let l = LinuxTcp::of(&flow("profile = \"rfc\"")).unwrap();
        assert_eq!(l.sender_route, vec!["initcwnd 2", "rto_min 1000ms"]);
        assert_eq!(l.window, Some(65_535));
        assert_eq!(
            l.sysctls,
            vec![("net.ipv4.tcp_sack", "0".to_string()), ("net.ipv4.tcp_window_scaling", "1".to_string())]
        );
        assert_eq!(l.notes.len(), 1, "delayed_ack's note: {:?}", l.notes);
    }

    #[test]
    fn linux_profile_leaves_linux_defaults_alone() {
        let l = LinuxTcp::of(&flow("profile = \"linux\"\ncc = \"cubic\"")).unwrap();
        assert_eq!(
            l,
            LinuxTcp {
                cc: "cubic",
                window: None,
                sender_route: vec![],
                receiver_route: vec![],
                sysctls: vec![],
                notes: vec![],
            }
        );
        // A flow without `profile` is a Linux-profile flow (issue 28).
        assert_eq!(LinuxTcp::of(&flow("cc = \"cubic\"")).unwrap(), l);
        // Given at Linux's own values: still nothing to set.
        let same = "profile = \"linux\"\ninitial_window = 10\nmin_rto = \"200 ms\"\nsack = true\ntimestamps = true";
        let l = LinuxTcp::of(&flow(same)).unwrap();
        assert!(l.sender_route.is_empty() && l.sysctls.is_empty());
        // Different from Linux's: set.
        let other =
            "profile = \"linux\"\ninitial_window = 4\nmin_rto = \"300 ms\"\ntimestamps = false\nrwnd = \"256 KiB\"";
        let l = LinuxTcp::of(&flow(other)).unwrap();
        assert_eq!(l.sender_route, vec!["initcwnd 4", "rto_min 300ms"]);
        assert_eq!(l.sysctls, vec![("net.ipv4.tcp_timestamps", "0".to_string())]);
        assert_eq!(l.window, Some(256 * 1024));
        // DupThresh is net.ipv4.tcp_reordering, 3 in Linux and the RFC.
        for profile in ["linux", "rfc"] {
            let l = LinuxTcp::of(&flow(&format!("profile = \"{profile}\"\ndupack_threshold = 5"))).unwrap();
            assert!(l.sysctls.contains(&("net.ipv4.tcp_reordering", "5".to_string())), "{:?}", l.sysctls);
            let l = LinuxTcp::of(&flow(&format!("profile = \"{profile}\"\ndupack_threshold = 3"))).unwrap();
            assert!(l.sysctls.iter().all(|(k, _)| *k != "net.ipv4.tcp_reordering"), "{:?}", l.sysctls);
        }
        // A key Linux cannot take keeps its note.
        let l = LinuxTcp::of(&flow("profile = \"linux\"\nrto = \"seed001\"\ndelayed_ack = \"100 ms\"")).unwrap();
        assert_eq!(l.notes.len(), 2, "{:?}", l.notes);
    }

    /// Seed 003's site (`profile = "rfc"`, `initial_window = 2`, `min_rto
    /// = "200 ms"`, `cc = "reno"`, `sack = true`): Apache, which sends the
    /// data, gets the sender's route attributes towards the client; wget
    /// the receiver's window towards the server; the server's namespace
    /// the congestion control (before, Apache ran Linux's initcwnd 10).
    #[test]
    fn a_web_workload_gets_the_flows_tcp_keys() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seed003-web.toml");
        let scenario = squall_scenario::load(&file).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (commands, sysctls) = tcp_workloads(&scenario, dir.path()).unwrap();
        let apache = commands.iter().find(|c| c.run.contains("apache2")).unwrap();
        assert_eq!(apache.host, "server");
        assert!(
            apache.run.starts_with(&format!(
                "ip route change 10.0.1.1/32 dev {TUN_NAME} src 10.0.0.1 initcwnd 2 rto_min 200ms && "
            )),
            "{}",
            apache.run
        );
        let wget = commands.iter().find(|c| c.run.contains("wget")).unwrap();
        assert_eq!(wget.host, "client");
        assert!(
            wget.run.starts_with(&format!("ip route change 10.0.0.1/32 dev {TUN_NAME} src 10.0.1.1 window 65535 && ")),
            "{}",
            wget.run
        );
        assert_eq!(sysctls["server"]["net.ipv4.tcp_congestion_control"], "reno");
        assert!(!sysctls["client"].contains_key("net.ipv4.tcp_congestion_control"), "{sysctls:?}");
        assert_eq!(sysctls["server"]["net.ipv4.tcp_sack"], "1");
    }
}
