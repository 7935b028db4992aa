//! A scenario's workloads as real programs (seed 000 §4.1): what
//! `[[workload.commands]]`, `[[workload.tcp]]` and `[[workload.udp]]` become
//! in emulation — the commands to start in each host's namespace, the
//! files a web site needs, and the sysctls the TCP flows need — so that the
//! emulator runs what the simulator models. [`WorkloadPlan::of`] takes the
//! scenario and where the run's files go; it starts nothing.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use squall_link::Duration;
use squall_scenario::Scenario;
use squall_scenario::ports::udp_ports;

use super::CommandSpec;
use crate::naming::TUN_NAME;

/// Why a scenario's workloads cannot be run as real programs. The
/// messages are the CLI's (`squall emu`), one per cause.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// One `[[workload.tcp]]` or `[[workload.udp]]` flow (`flow` names it,
    /// like ``[[workload.tcp]] `bulk` ``) cannot run; `source` says why.
    #[error("{flow}")]
    Flow { flow: String, source: FlowError },
    /// Two `[[workload.tcp]]` flows need different values of one sysctl on
    /// the same host; Linux keeps it per namespace.
    #[error(
        "{flow}: needs {key} = {value} on host `{host}`, where another [[workload.tcp]] needs {other} (Linux keeps it \
         per namespace)"
    )]
    SysctlConflict { flow: String, key: String, value: String, host: String, other: String },
    /// A host's own `sysctl` table sets a key its `[[workload.tcp]]` flows
    /// need at another value.
    #[error("host `{host}`: sysctl `{key}` = \"{mine}\", but its [[workload.tcp]] flows need \"{value}\"")]
    HostSysctl { host: String, key: String, mine: String, value: String },
    /// A host's `ephemeral_ports` and its own `sysctl` table give two
    /// different port ranges.
    #[error(
        "hosts[{index}] (`{host}`): `ephemeral_ports` = \"{range}\" but sysctl `{key}` = \"{mine}\"; give one of them"
    )]
    EphemeralPorts { index: usize, host: String, range: String, key: &'static str, mine: String },
    /// The resolved scenario's path, which the UDP senders read, cannot be
    /// made absolute.
    #[error("{}", path.display())]
    Resolved { path: PathBuf, source: io::Error },
}

/// Why one flow cannot run as real programs.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// `cc = "tahoe"`: Linux has no Tahoe.
    #[error("Linux has no Tahoe; use cc = \"reno\" or \"cubic\" in emulation")]
    NoTahoe,
    /// The kernel's list of congestion controls cannot be read.
    #[error("reading {path}")]
    ReadAvailable { path: &'static str, source: io::Error },
    /// The kernel neither offers the flow's congestion control nor loads
    /// modules.
    #[error(
        "cc = \"{cc}\": this kernel offers {available} (net.ipv4.tcp_available_congestion_control) and loads no \
         modules; run it with `squall sim`, or on a kernel built with tcp_{cc}"
    )]
    CcUnavailable { cc: &'static str, available: String },
    /// A web application given by sizes, without a site manifest.
    #[error("emulation fetches a site: give the web application a manifest (site = \"site.csv\") instead of sizes")]
    NoSite,
    /// The flow names a host the scenario does not have.
    #[error("no host `{name}`")]
    NoHost { name: String },
    /// The two hosts have no address of the flow's family in common (the
    /// scenario check refuses this first).
    #[error("hosts `{from}` and `{to}` have no address of the flow's IP version in common")]
    NoCommonFamily { from: String, to: String },
    /// The flow's ports (squall_scenario::ports).
    #[error("{0}")]
    Ports(String),
    /// A file of the web site could not be made (`what`: create, write).
    #[error("cannot {what} {}", path.display())]
    File { what: &'static str, path: PathBuf, source: io::Error },
    /// The web site's directories or Apache's configuration could not be
    /// written.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn flow_error(flow: &str, source: FlowError) -> PlanError {
    PlanError::Flow { flow: flow.to_string(), source }
}

/// What a scenario's workloads are in emulation, in the order they are
/// started: the commands of `[[workload.commands]]`, then those of the
/// `[[workload.tcp]]` flows, then those of `[[workload.udp]]`.
#[derive(Debug)]
pub struct WorkloadPlan {
    /// `[[workload.commands]]`, as given.
    pub commands: Vec<CommandSpec>,
    /// `[[workload.tcp]]`: each flow's server and client.
    pub tcp: Vec<CommandSpec>,
    /// `[[workload.udp]]`: a sink per destination and port, a sender per flow.
    pub udp: Vec<CommandSpec>,
    /// The sysctls the TCP flows need in their hosts' namespaces.
    pub sysctls: Sysctls,
}

impl WorkloadPlan {
    /// The workloads of `scenario`. `resolved` is where the resolved
    /// scenario will be, for the UDP senders to read; `workload_dir` where
    /// the workloads' files go (a web site, Apache's configuration; written
    /// now). `say` gets what the user should know: a key Linux cannot
    /// take, the programs a web workload runs.
    pub fn of(
        scenario: &Scenario,
        resolved: &Path,
        workload_dir: &Path,
        say: &mut dyn FnMut(&str),
    ) -> Result<Self, PlanError> {
        let commands = scenario
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
        for host in scenario.hosts.iter().filter(|h| h.stack_delay.is_some()) {
            say(&stack_delay_note(&host.name));
        }
        let (tcp, sysctls) = tcp_workloads(scenario, workload_dir, say)?;
        let udp = udp_workloads(scenario, resolved)?;
        Ok(WorkloadPlan { commands, tcp, udp, sysctls })
    }
}

/// What `squall emu` says of a host's `stack_delay`: the simulator's model
/// of a real stack's turnaround, which the emulator's real host has of its
/// own.
fn stack_delay_note(host: &str) -> String {
    format!(
        "host `{host}` is a real Linux stack with a turnaround of its own; `stack_delay` (the simulator's model \
         of it) is not applied"
    )
}

/// Adds `sysctls` (a [`WorkloadPlan`]'s) to their hosts' `sysctl` tables
/// in `scenario`, refusing one a host sets to another value.
pub fn apply_sysctls(sysctls: &Sysctls, scenario: &mut Scenario) -> Result<(), PlanError> {
    for (host, keys) in sysctls {
        let Some(h) = scenario.hosts.iter_mut().find(|h| h.name == *host) else { continue };
        for (key, value) in keys {
            match h.sysctl.get(key) {
                Some(mine) if mine.0 != *value => {
                    return Err(PlanError::HostSysctl {
                        host: host.clone(),
                        key: key.clone(),
                        mine: mine.0.clone(),
                        value: value.clone(),
                    });
                }
                _ => {
                    h.sysctl.insert(key.clone(), squall_scenario::SysctlValue(value.clone()));
                }
            }
        }
    }
    Ok(())
}

/// A host's `ephemeral_ports` as its namespace's
/// `net.ipv4.ip_local_port_range` ("LOW HIGH", Documentation/networking/
/// ip-sysctl.rst): the real programs' connections take their ports from it.
/// An error if the host's `sysctl` gives that key another range.
pub fn ephemeral_port_sysctls(scenario: &mut Scenario) -> Result<(), PlanError> {
    const KEY: &str = "net.ipv4.ip_local_port_range";
    for (index, h) in scenario.hosts.iter_mut().enumerate() {
        let Some(range) = h.ephemeral_ports else { continue };
        let value = format!("{} {}", range.low, range.high);
        match h.sysctl.get(KEY) {
            Some(mine) if mine.0.split_whitespace().ne(value.split_whitespace()) => {
                return Err(PlanError::EphemeralPorts {
                    index,
                    host: h.name.clone(),
                    range: range.to_string(),
                    key: KEY,
                    mine: mine.0.clone(),
                });
            }
            _ => {
                h.sysctl.insert(KEY.to_string(), squall_scenario::SysctlValue(value));
            }
        }
    }
    Ok(())
}

/// The shell prefix that sets route attributes (ip-route(8)) on a host's
/// route to `to` (/32 or /128, as [`crate::sys::device::address_device`]
/// made it) before its command runs; empty if there are none.
fn route_change(to: IpAddr, from: IpAddr, attrs: &[String]) -> String {
    if attrs.is_empty() {
        return String::new();
    }
    let (family, prefix) = if to.is_ipv6() { ("-6 ", 128) } else { ("", 32) };
    format!("ip {family}route change {to}/{prefix} dev {TUN_NAME} src {from} {} && ", attrs.join(" "))
}

/// The addresses (from's, to's) a flow between hosts `from` and `to` runs
/// over in emulation: the simulator's choice
/// ([`squall_scenario::topology::flow_addresses`]: `ip_version`, else IPv6
/// when both have one).
fn flow_addresses(
    scenario: &Scenario,
    from: &str,
    to: &str,
    ip_version: Option<u8>,
) -> Result<(IpAddr, IpAddr), FlowError> {
    let host = |name: &str| {
        scenario.hosts.iter().find(|h| h.name == name).ok_or_else(|| FlowError::NoHost { name: name.to_string() })
    };
    let (a, b) = (host(from)?, host(to)?);
    let addresses = squall_scenario::topology::flow_addresses(a.addresses(), b.addresses(), ip_version)
        .ok_or_else(|| FlowError::NoCommonFamily { from: from.to_string(), to: to.to_string() })?;
    Ok(addresses)
}

/// First port of the bulk servers that stand for `[[workload.tcp]]` flows
/// (flow i listens on `TCP_WORKLOAD_PORT + i`).
const TCP_WORKLOAD_PORT: u16 = 15_000;

/// The port the server of `[[workload.tcp]]` entry number `index` listens
/// on in emulation: a bulk server's `TCP_WORKLOAD_PORT + index`, Apache's
/// `dst_port` or 80 (the simulator's: `squall_scenario::ports::tcp_ports`).
/// `index` counts every flow an entry with `count` stands for
/// (squall_scenario::count).
pub fn tcp_server_port(f: &squall_scenario::TcpFlow, index: usize) -> Result<u16, FlowError> {
    match f.app {
        squall_scenario::TcpApp::Web(_) => Ok(f.dst_port.unwrap_or(80)),
        _ => u16::try_from(index).ok().and_then(|i| TCP_WORKLOAD_PORT.checked_add(i)).ok_or_else(|| {
            FlowError::Ports(format!(
                "flow number {index} would listen on port {TCP_WORKLOAD_PORT} + {index}, past 65535: emulation \
                     runs at most {} TCP flows (a smaller `count`)",
                u16::MAX - TCP_WORKLOAD_PORT + 1
            ))
        }),
    }
}

/// `[[workload.tcp]]` flows as real Linux TCP: for a bulk application, a
/// `squall tool bulk` server on the flow's `to` host and a client on its
/// `from` host at `start`, told every key Linux can express (see
/// [`LinuxTcp`]); for a web application with a site, Apache 2 and wget
/// (`web_workload`). The keys Linux cannot take are said, one line each,
/// never silently dropped (`say` gets them). Returns the commands and the
/// sysctls the flows need in their hosts' namespaces.
fn tcp_workloads(
    scenario: &Scenario,
    workload_dir: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<(Vec<CommandSpec>, Sysctls), PlanError> {
    use squall_scenario::TcpApp;
    let mut out = Vec::new();
    let mut sysctls = Sysctls::new();
    // An entry with `count` (or a drawn start or size) stands for its
    // flows, drawn as the simulator's first replication draws them
    // (squall_scenario::count, with the scenario's seed).
    let members =
        scenario.workload.tcp.iter().enumerate().flat_map(|(i, _)| {
            squall_scenario::count::expand_tcp(scenario, i, scenario.seed).into_iter().map(|m| m.flow)
        });
    for (i, f) in members.enumerate() {
        let f = &f;
        let what = format!("[[workload.tcp]] `{}`", f.name);
        let (client, server) =
            flow_addresses(scenario, &f.from, &f.to, f.ip_version).map_err(|e| flow_error(&what, e))?;
        let linux = LinuxTcp::of(f).map_err(|e| flow_error(&what, e))?;
        check_kernel_offers(linux.cc).map_err(|e| flow_error(&what, e))?;
        for note in &linux.notes {
            say(&format!("{what}: {note}"));
        }
        for host in scenario.hosts.iter().filter(|h| h.clock_phase.is_some() && (h.name == f.from || h.name == f.to)) {
            say(&format!(
                "{what}: host `{}` keeps the kernel's timestamp clock; `clock_phase` is not applied",
                host.name
            ));
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
                Some(other) if other != value => {
                    return Err(PlanError::SysctlConflict {
                        flow: what,
                        key: key.to_string(),
                        value,
                        host: host.clone(),
                        other,
                    });
                }
                _ => {}
            }
        }
        // What the client does, as `squall tool bulk` options.
        let app = match &f.app {
            TcpApp::Web(web) => {
                out.extend(
                    web_workload(scenario, f, web, workload_dir, &linux, say).map_err(|e| flow_error(&what, e))?,
                );
                continue;
            }
            TcpApp::Bulk(bytes) => format!("--bytes {}", bytes.as_constant().map_or(0, |b| b.0)),
            TcpApp::BulkFor(d) => format!("--for '{d}'"),
            TcpApp::RequestResponse(r) => format!(
                "--request {} --response {} --count {} --think '{}'",
                r.request.0, r.response.0, r.count, r.think
            ),
        };
        let port = tcp_server_port(f, i).map_err(|e| flow_error(&what, e))?;
        out.push(CommandSpec {
            host: f.to.clone(),
            at: Duration::ZERO,
            run: format!(
                "{}squall tool bulk --server --port {port} --mss {}{}",
                route_change(client, server, &linux.receiver_route),
                f.mss().0,
                linux.window.map(|w| format!(" --window {w}")).unwrap_or_default()
            ),
            background: true,
            interactive: false,
        });
        out.push(CommandSpec {
            host: f.from.clone(),
            at: f.start.as_constant().unwrap_or(Duration::ZERO),
            run: format!(
                "{}squall tool bulk --client {server} --port {port} {app} --cc {} --mss {} --info-csv {}",
                route_change(server, client, &linux.sender_route),
                linux.cc,
                f.mss().0,
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
pub fn tcp_info_file(flow: &str) -> String {
    format!("tcp-{flow}.csv")
}

/// Sysctls per host name: host → key → value.
pub type Sysctls = BTreeMap<String, BTreeMap<String, String>>;

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
    fn of(f: &squall_scenario::TcpFlow) -> Result<Self, FlowError> {
        use squall_scenario::{DelayedAckSpec, RtoSpec, TcpCc, TcpProfile, WindowSize};
        let cc = match f.cc {
            TcpCc::Tahoe => return Err(FlowError::NoTahoe),
            // Linux's `reno` recovers with SACK when it is on (RFC 6675)
            // and as NewReno (RFC 6582) when it is off.
            TcpCc::Reno | TcpCc::NewReno | TcpCc::Sack => "reno",
            TcpCc::Cubic => "cubic",
            TcpCc::Vegas => "vegas",
            TcpCc::Bbr => "bbr",
        };
        let segments = |w: WindowSize| match w {
            WindowSize::Segments(n) => n,
            WindowSize::Bytes(b) => b.0.div_ceil(f.mss().0.max(1)),
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
fn check_kernel_offers(cc: &'static str) -> Result<(), FlowError> {
    let path = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    let available = std::fs::read_to_string(path).map_err(|source| FlowError::ReadAvailable { path, source })?;
    let modules = Path::new("/proc/modules").exists();
    if available.split_whitespace().any(|a| a == cc) || modules {
        return Ok(());
    }
    Err(FlowError::CcUnavailable { cc, available: available.trim().to_string() })
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
fn udp_workloads(scenario: &Scenario, resolved: &Path) -> Result<Vec<CommandSpec>, PlanError> {
    let mut out = Vec::new();
    let mut sinks = std::collections::BTreeSet::new();
    let absolute =
        std::path::absolute(resolved).map_err(|source| PlanError::Resolved { path: resolved.to_path_buf(), source })?;
    for (i, f) in scenario.workload.udp.iter().enumerate() {
        let what = format!("[[workload.udp]] `{}`", f.name);
        flow_addresses(scenario, &f.from, &f.to, f.ip_version).map_err(|e| flow_error(&what, e))?;
        let (_, dst_port) = udp_ports(f, i).map_err(|e| flow_error(&what, FlowError::Ports(e)))?;
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
    say: &mut dyn FnMut(&str),
) -> Result<Vec<CommandSpec>, FlowError> {
    use std::fmt::Write as _;
    if web.site_files.is_empty() {
        return Err(FlowError::NoSite);
    }
    let (client_address, server_address) = flow_addresses(scenario, &f.from, &f.to, f.ip_version)?;
    // In a URL and Apache's Listen, an IPv6 address is in brackets (RFC
    // 3986 §3.2.2).
    let server_host = match server_address {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
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
    if f.mss().0 != 1460 {
        receiver_route.push(format!("advmss {}", f.mss().0));
    }
    let server_route = route_change(client_address, server_address, &linux.sender_route);
    let client_route = route_change(server_address, client_address, &receiver_route);
    // A web server listens on its `dst_port` or 80 (no index in it).
    let port = f.dst_port.unwrap_or(80);
    let site = workload_dir.join(format!("site-{}", f.name));
    let count = web.object_count() as usize;
    let mut urls = String::new();
    for file in web.site_files.iter().take(count) {
        let path = site.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|source| FlowError::File {
                what: "create",
                path: parent.to_path_buf(),
                source,
            })?;
        }
        fs::write(&path, vec![b'x'; file.bytes as usize]).map_err(|source| FlowError::File {
            what: "write",
            path: path.clone(),
            source,
        })?;
        // Writing to a String cannot fail.
        let _ = writeln!(urls, "http://{server_host}:{port}/{}", file.path);
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
        addr = server_host,
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
    say(&format!(
        "[[workload.tcp]] `{}`: Apache 2 on {} ({}:{port}, {}) and wget on {} fetching {count} files; \
         the flow's TCP keys as route attributes and sysctls (cc as the server's net.ipv4.tcp_congestion_control)",
        f.name,
        f.to,
        server_host,
        conf_file.display(),
        f.from
    ));
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
            at: f.start.as_constant().unwrap_or(Duration::ZERO) + WEB_SERVER_STARTUP,
            run: format!(
                "{client_route}wget -nv -O /dev/null{keep_alive} -i {}",
                shell_quote(&format!("urls-{}.txt", f.name))
            ),
            background: false,
            interactive: false,
        },
    ])
}

/// `s` as one word of a POSIX shell command line: as it is when it holds
/// only characters no shell treats specially, else in single quotes.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ephemeral_ports_become_the_namespaces_port_range() {
        let text = |keys: &str| {
            format!(
                "name = \"t\"\nduration = \"1 s\"\nlinks = []\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n\
                 [[hosts]]\nname = \"b\"\naddress = \"10.0.0.2\"\n{keys}\n"
            )
        };
        let load = |keys: &str| squall_scenario::parse("t.toml", &text(keys), std::path::Path::new(".")).unwrap();
        let mut s = load("ephemeral_ports = \"40000-40009\"");
        ephemeral_port_sysctls(&mut s).unwrap();
        assert!(s.hosts[0].sysctl.is_empty());
        assert_eq!(s.hosts[1].sysctl["net.ipv4.ip_local_port_range"].0, "40000 40009");
        // The same range given both ways is fine; another is refused.
        let mut same =
            load("ephemeral_ports = \"40000-40009\"\nsysctl = { \"net.ipv4.ip_local_port_range\" = \"40000  40009\" }");
        ephemeral_port_sysctls(&mut same).unwrap();
        let mut other =
            load("ephemeral_ports = \"40000-40009\"\nsysctl = { \"net.ipv4.ip_local_port_range\" = \"1024 65535\" }");
        let err = ephemeral_port_sysctls(&mut other).unwrap_err().to_string();
        assert!(err.contains("hosts[1] (`b`)") && err.contains("40000-40009") && err.contains("1024 65535"), "{err}");
    }

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

    /// A host's `stack_delay` is said once, by name, and nothing else of
    /// the plan changes.
    #[test]
    fn a_stack_delay_is_said_and_not_applied() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/emu/compare-bulk.toml");
        let mut plain = squall_scenario::load(&file).unwrap();
        for h in &mut plain.hosts {
            h.stack_delay = None;
        }
        let mut scenario = plain.clone();
        scenario.hosts[1].stack_delay =
            Some(squall_link::Distribution::constant(squall_link::Duration::from_micros(30)));
        let dir = tempfile::tempdir().unwrap();
        let mut said = Vec::new();
        let plan =
            WorkloadPlan::of(&scenario, Path::new("resolved.toml"), dir.path(), &mut |s| said.push(s.to_string()))
                .unwrap();
        let mobile = &scenario.hosts[1].name;
        assert_eq!(said.iter().filter(|s| s.contains("stack_delay")).count(), 1, "{said:?}");
        assert!(said.contains(&stack_delay_note(mobile)), "{said:?}");
        let before = WorkloadPlan::of(&plain, Path::new("resolved.toml"), dir.path(), &mut |_| {}).unwrap();
        let runs = |p: &WorkloadPlan| p.tcp.iter().map(|c| (c.host.clone(), c.run.clone())).collect::<Vec<_>>();
        assert_eq!(runs(&plan), runs(&before));
        assert_eq!(plan.sysctls, before.sysctls);
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
        let (commands, sysctls) = tcp_workloads(&scenario, dir.path(), &mut |_| {}).unwrap();
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
