//! One emulation run, start to end: sweep stale objects, make a namespace
//! and TUN device per host, build the paths and the state schedule, start
//! the control socket, run the data plane on its own thread while the
//! calling thread starts and reaps workloads, then tear everything down.
//! Teardown runs on every exit: normal end, signal, or error after setup.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use serde::Serialize;
use squall_link::{Direction, Instant};
use squall_scenario::Scenario;

use crate::engine::cleanup::sweep_stale;
use crate::engine::clock::Clock;
use crate::engine::control::ControlServer;
use crate::engine::dataplane::{Dataplane, DataplaneOptions, DataplaneReport};
use crate::engine::inline::InlineLock;
use crate::engine::joined::JoinedNs;
use crate::engine::recording::{Recorder, RecordingOptions};
use crate::engine::routing::HostIndex;
use crate::engine::routing::Routing;
use crate::engine::uplink::{OutsideReport, Uplink};
use crate::engine::workload::{CommandOutcome, CommandSpec, Workloads};
use crate::error::{Context, EmuError};
use crate::naming::RunId;
use crate::record::RecordFile;
use crate::sys::device::{PacketDevice, TunDevice, TunOffloads};
use crate::sys::netns::NetNs;
/// The CPU affinity calls, under the names the CLI uses.
pub use crate::sys::sched::{pin_this_thread, usable_cpus};

/// How to run.
#[derive(Clone, Debug)]
pub struct EmulationOptions {
    pub dataplane: DataplaneOptions,
    /// What to record, streamed to disk while the run goes on; `None`:
    /// nothing.
    pub recording: Option<RecordingOptions>,
    pub commands: Vec<CommandSpec>,
    /// Where workload output goes (created if missing).
    pub workload_dir: PathBuf,
    /// MTU of the TUN devices, bytes.
    pub mtu: u32,
    /// Let hosts hand squall TCP/UDP flights of up to 64 KB with their
    /// checksums left open (IFF_VNET_HDR, TUNSETOFFLOAD), cut into
    /// wire-sized packets before the model sees them.
    pub offloads: bool,
    /// Listen on a control socket.
    pub control: bool,
    /// Stop when the foreground workloads have exited (else run for the
    /// scenario's duration).
    pub stop_when_workloads_exit: bool,
    /// Inline between two existing interfaces instead of namespaces of
    /// its own ([`crate::engine::inline`]).
    pub inline: Option<crate::engine::inline::InlineOptions>,
    /// The data plane alone on the last CPU this process may use, and
    /// everything else squall starts (workloads, the recording thread) on
    /// the others; nothing changes with fewer than two.
    pub pin: bool,
    /// What joins each host's namespace to squall.
    pub host_device: HostDevice,
    /// A line said on stderr once the run is set up, as its data plane
    /// starts (so that a run refused while setting up does not first say
    /// it runs).
    pub announce: Option<String>,
}

/// What joins a host's namespace to squall (docs/guide: Emulation, "Which device joins
/// a host: TUN or AF_XDP"; Benchmarks has the figures of both on one machine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HostDevice {
    /// A TUN device with offloads: hosts hand squall TCP flights of up to
    /// 64 KB; the faster for bulk TCP.
    #[default]
    Tun,
    /// A veth pair with an AF_XDP socket on squall's end
    /// ([`crate::sys::veth_host`]): frames read in batches from a shared ring;
    /// the faster for small packets, wire-sized TCP.
    Xdp,
}

impl Default for EmulationOptions {
    fn default() -> Self {
        EmulationOptions {
            dataplane: DataplaneOptions::default(),
            recording: None,
            commands: Vec::new(),
            workload_dir: PathBuf::from("."),
            mtu: 1500,
            offloads: true,
            control: true,
            stop_when_workloads_exit: true,
            inline: None,
            pin: false,
            host_device: HostDevice::Tun,
            announce: None,
        }
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The foreground workloads exited.
    Workloads,
    /// The scenario's duration passed.
    Duration,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal,
}

/// What a run produced.
pub struct EmulationReport {
    pub id: RunId,
    pub ended_by: EndReason,
    pub dataplane: DataplaneReport,
    pub workloads: Vec<CommandOutcome>,
    pub host_names: Vec<String>,
    pub stale_removed: Vec<String>,
    /// What the hosts' TUN devices were granted (`None`: inline mode).
    pub offloads: Option<TunOffloads>,
    /// The outside host, if the scenario has one.
    pub outside: Option<OutsideReport>,
    /// The CPU the data plane was pinned to (`pin`, or
    /// `DataplaneOptions::cpu`), if it was.
    pub dataplane_cpu: Option<usize>,
}

/// The namespaces of a run, one per host; when dropped, those it made
/// are removed and what it changed in those it joined is put back.
#[derive(Default)]
struct Hosts {
    namespaces: Vec<NetNs>,
    joined: Vec<JoinedNs>,
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.namespaces.drain(..) {
            let name = ns.name().to_string();
            if let Err(e) = ns.delete() {
                tracing::warn!("squall emu: could not remove namespace {name}: {e}");
            }
        }
        for joined in self.joined.drain(..) {
            for e in joined.restore() {
                tracing::warn!("squall emu: could not undo a change in a joined namespace: {e}");
            }
        }
    }
}

/// What [`attach`] set up: the hosts' devices (handed to the data plane)
/// and what is undone when it is dropped, in field order: the devices'
/// descriptors closed, the namespaces removed, the outside host's nft
/// table and sysctl restored, the inline interfaces' locks released.
#[derive(Default)]
struct Attached {
    /// One per host, in the order of the routing's hosts; inline, the two
    /// interfaces, in their order.
    devices: Vec<Box<dyn PacketDevice>>,
    hosts: Hosts,
    uplink: Option<Uplink>,
    inline_lock: Option<InlineLock>,
    /// Inline: which hosts each interface stands for.
    sides: Option<crate::engine::inline::InlineSides>,
    /// What the hosts' TUN devices were granted (`None`: no TUN device).
    offloads: Option<TunOffloads>,
}

/// The model of a run: its fabric (paths, routes, processing delays,
/// state schedule) and when the run ends.
struct Model {
    fabric: squall_link::Fabric,
    end: Instant,
}

/// Runs `scenario` in real time until its duration, the end of the
/// foreground workloads, or `signal` is set: [`attach`] the hosts'
/// devices, [`build_model`], start the workloads, control socket, recorder
/// and data plane, [`supervise`] them, and [`teardown`] on every way out
/// once the data plane started (before, what was set up is undone as it
/// is dropped).
pub fn run(
    scenario: &Scenario,
    mut options: EmulationOptions,
    signal: Arc<AtomicBool>,
) -> Result<EmulationReport, EmuError> {
    // Held to the end of the run: this thread's CPUs are given back then.
    let (pinned, dataplane_cpu) = place_dataplane(&mut options)?;
    let id = RunId::current();
    let stale_removed = sweep_stale();
    for s in &stale_removed {
        tracing::info!("squall emu: removed stale {s}");
    }
    // Before anything is made, so a later start can tell this run's
    // objects from a dead run's; removed last (dropped after `attached`).
    let mut record = RecordFile::create(id)?;
    let routing = Routing::new(scenario)?;
    std::fs::create_dir_all(&options.workload_dir).context(|| format!("create {}", options.workload_dir.display()))?;
    let mut attached = attach(id, scenario, &routing, &options, &mut record)?;
    let model = build_model(scenario)?;
    let mut workloads = plan_workloads(id, &routing, &options)?;
    let (to_dataplane, control_rx) = mpsc::channel();
    let control = if options.control {
        Some(ControlServer::start(id, run_info(id, scenario, &routing, &options, &attached), to_dataplane)?)
    } else {
        None
    };
    // Recording: the files are made now, the writer starts with the run.
    let recorder = match &options.recording {
        Some(r) => Recorder::start(r, &routing.names)?,
        None => Recorder::off(),
    };

    let clock = Clock::start();
    let done = Arc::new(AtomicBool::new(false));
    let drain = Arc::new(AtomicBool::new(false));
    let mut dataplane = Dataplane::new(
        clock,
        options.dataplane.clone(),
        routing.clone(),
        std::mem::take(&mut attached.devices),
        model.fabric,
        scenario.stage_names(Direction::Downlink),
        scenario.stage_names(Direction::Uplink),
        recorder,
    );
    if let Some(sides) = attached.sides.clone() {
        dataplane = dataplane.bridging(crate::engine::inline::InlineFilter::of(scenario), sides);
    }
    if let Some(line) = &options.announce {
        tracing::info!("{line}");
    }
    let (thread_done, thread_drain) = (Arc::clone(&done), Arc::clone(&drain));
    let end = model.end;
    let handle = std::thread::Builder::new()
        .name("squall-dataplane".into())
        .spawn(move || dataplane.run(end, &thread_done, &thread_drain, &control_rx))
        .context(|| "start the data plane thread".to_string())?;

    let ends = Ends { done: &done, drain: &drain };
    let (ended_by, failure) =
        supervise(&handle, &mut workloads, clock, (&attached.hosts, &mut record), &signal, ends, &options);
    let (report, outcomes, outside) = teardown(handle, workloads, clock, control, attached, &routing, id);
    if let Some(e) = failure {
        return Err(e);
    }
    let dataplane = report?;
    Ok(EmulationReport {
        id,
        ended_by,
        dataplane,
        workloads: outcomes,
        host_names: routing.names.clone(),
        stale_removed,
        offloads: outside.offloads,
        outside: outside.report,
        dataplane_cpu: pinned.as_ref().map(|p| p.dataplane_cpu).or(dataplane_cpu),
    })
}

/// Where the data plane runs: with `pin`, alone on the last CPU this
/// process may use (the returned guard gives this thread its CPUs back
/// when dropped); else on `options.dataplane.cpu` if given, which must be
/// one this process may use.
fn place_dataplane(options: &mut EmulationOptions) -> Result<(Option<Pinned>, Option<usize>), EmuError> {
    let pinned = if options.pin { pin_others() } else { None };
    if let Some(p) = &pinned {
        options.dataplane.cpu = Some(p.dataplane_cpu);
    }
    // The data plane pinned to a CPU of the caller's choice, others free.
    let pinned_alone = if pinned.is_none() { options.dataplane.cpu } else { None };
    if let Some(cpu) = pinned_alone
        && !usable_cpus().contains(&cpu)
    {
        return Err(EmuError::Cpu { cpu, usable: usable_cpus() });
    }
    Ok((pinned, pinned_alone))
}

/// Joins every host to squall: inline, the two interfaces; else a
/// namespace per host with its device (TUN or veth), routes and sysctls,
/// and for the outside host a TUN device in the root namespace.
fn attach(
    id: RunId,
    scenario: &Scenario,
    routing: &Routing,
    options: &EmulationOptions,
    record: &mut RecordFile,
) -> Result<Attached, EmuError> {
    let mut attached = Attached::default();
    if let Some(inline) = &options.inline {
        if !options.commands.is_empty() {
            return Err(EmuError::Inline(
                "inline mode carries the traffic of real interfaces: it runs no workloads or commands (leave out \
                 [[workload.*]], --run, --serve and the shell command)"
                    .into(),
            ));
        }
        let inline = crate::engine::inline::attach(scenario, routing, inline)?;
        attached.inline_lock = Some(inline.lock);
        attached.devices = inline.devices;
        attached.sides = Some(inline.sides);
    }
    let mut outside_device = match routing.outside {
        Some(outside) => attach_outside(id, scenario, routing, options, outside, &mut attached)?,
        None => None,
    };
    if options.inline.is_none() {
        for i in 0..routing.names.len() {
            attach_host(scenario, routing, options, (id, &mut *record), i, &mut outside_device, &mut attached)?;
        }
    }
    Ok(attached)
}

/// The outside host: a TUN device in the root namespace whose packets the
/// kernel forwards out of a real interface; what that changes is undone
/// when `attached.uplink` is dropped. Refuses what the outside host cannot
/// have: inline mode, commands, sysctls.
fn attach_outside(
    id: RunId,
    scenario: &Scenario,
    routing: &Routing,
    options: &EmulationOptions,
    outside: HostIndex,
    attached: &mut Attached,
) -> Result<Option<TunDevice>, EmuError> {
    if options.inline.is_some() {
        return Err(EmuError::Inline(format!(
            "host `{}` is outside (outside_interface): inline mode carries two interfaces' traffic and has no \
             outside host; leave out --inline or outside_interface",
            routing.names[outside]
        )));
    }
    if let Some(c) = options.commands.iter().find(|c| c.host == routing.names[outside]) {
        return Err(EmuError::Workload {
            spec: c.run.clone(),
            message: format!(
                "host `{}` is outside (outside_interface): it stands for the world beyond the scenario and runs no \
                 commands; run them on a machine behind its interface",
                c.host
            ),
        });
    }
    if let Some((_, h)) = scenario.outside_host()
        && let Some(key) = h.sysctl.keys().next()
    {
        return Err(EmuError::Sysctl {
            host: h.name.clone(),
            key: key.clone(),
            value: h.sysctl[key].0.clone(),
            message: "the host is outside (outside_interface): it stands for the machines beyond that interface, and \
                      its namespace stays empty"
                .into(),
        });
    }
    let Some((uplink, tun)) = Uplink::open(id, scenario, routing, options.mtu, options.offloads)? else {
        return Ok(None);
    };
    tracing::info!(
        "squall emu: host `{}` is outside: through {} out of {}",
        routing.names[outside],
        crate::engine::uplink::object_name(id),
        uplink.interface()
    );
    attached.uplink = Some(uplink);
    Ok(Some(tun))
}

/// Host `i`'s namespace and the device that joins it to squall, its
/// default route towards the outside host if there is one, its sysctls.
/// The outside host's namespace stays empty; its device is the one
/// [`attach_outside`] opened. A host that names an existing namespace
/// (`netns`, `netns_pid`) joins it ([`crate::engine::joined`]).
fn attach_host(
    scenario: &Scenario,
    routing: &Routing,
    options: &EmulationOptions,
    (id, record): (RunId, &mut RecordFile),
    i: HostIndex,
    outside_device: &mut Option<TunDevice>,
    attached: &mut Attached,
) -> Result<(), EmuError> {
    let name = &routing.names[i];
    let reachable = routing.reachable(i);
    let default_route = routing.outside.is_some_and(|o| o != i && routing.next_path(i, o).is_some());
    let host = scenario.hosts.iter().find(|h| &h.name == name);
    let addresses = routing.host_addresses(i);
    let peers: Vec<std::net::IpAddr> = reachable
        .iter()
        .flat_map(|&h| routing.host_addresses(h).iter().collect::<Vec<_>>())
        .filter(|p| addresses.like(*p).is_some())
        .collect();
    let joined = match host.and_then(crate::engine::joined::existing) {
        Some(ns) => {
            let (ns, joined) = crate::engine::joined::join(name, ns, addresses, &peers, default_route, record)?;
            attached.hosts.namespaces.push(ns);
            attached.hosts.joined.push(joined);
            Some(attached.hosts.joined.len() - 1)
        }
        None => {
            attached.hosts.namespaces.push(NetNs::create(&id.netns_name(name))?);
            None
        }
    };
    if Some(i) == routing.outside {
        // Its namespace stays empty (commands were refused above).
        attached.devices.push(Box::new(outside_device.take().expect("opened above")));
        return Ok(());
    }
    let ns = &attached.hosts.namespaces[i];
    let tun = match options.host_device {
        HostDevice::Xdp => {
            attached.devices.push(Box::new(crate::sys::veth_host::VethHost::create(
                ns,
                addresses,
                &peers,
                options.mtu,
            )?));
            None
        }
        HostDevice::Tun => Some(TunDevice::create(ns, addresses, &peers, options.mtu, options.offloads)?),
    };
    if default_route {
        // Any address beyond the scenario: through squall to the outside host.
        if let Some(v4) = addresses.v4 {
            ns.ip(&["route", "add", "default", "dev", crate::naming::TUN_NAME, "src", &v4.to_string()])?;
        }
        if let Some(v6) = addresses.v6 {
            ns.ip(&["-6", "route", "add", "default", "dev", crate::naming::TUN_NAME, "src", &v6.to_string()])?;
        }
    }
    if let Some(tun) = tun {
        if attached.offloads.is_none() {
            let got = tun.offloads();
            if options.offloads && !(got.tso && got.uso) {
                tracing::info!(
                    "squall emu: note: this kernel grants TUN offloads {got:?}; without the others hosts hand squall \
                     wire-sized packets (slower, the same model)"
                );
            }
            attached.offloads = Some(got);
        }
        attached.devices.push(Box::new(tun));
    }
    // After the device, so per-device keys (net.ipv4.conf.squall0.*) exist.
    if let Some(host) = host {
        for (key, value) in &host.sysctl {
            match joined {
                // Its former value recorded first, to be put back.
                Some(j) => attached.hosts.joined[j].set_sysctl(key, &value.0, record)?,
                None => attached.hosts.namespaces[i].set_sysctl(name, key, &value.0)?,
            }
        }
    }
    Ok(())
}

/// The model: the scenario's fabric, seeded with the scenario's seed (the
/// same the simulator builds, with addresses beyond the scenario routed to
/// its outside host).
fn build_model(scenario: &Scenario) -> Result<Model, EmuError> {
    let topology = squall_scenario::Topology::new(scenario)?;
    let mut fabric =
        squall_scenario::fabric::build(scenario, &topology, scenario.seed, squall_scenario::fabric::Engine::Emulator)
            .map_err(|e| EmuError::Path { what: e.what, source: e.source })?;
    // `[[record]]` entries of a class: the model samples its classes
    // (written to classes.csv when the recording asks for them).
    for stage in squall_scenario::record::class_stages(&scenario.record) {
        fabric.record_classes(&stage);
    }
    Ok(Model { fabric, end: Instant::ZERO + scenario.duration })
}

/// The workloads with their environment: SQUALL_FIXED, SQUALL_MOBILE,
/// SQUALL_RUN_ID, SQUALL_ADDR_<HOST> for every host with an IPv4 address
/// (and the `6` keys for IPv6 ones), and each end host's peer (the other
/// end host: its IPv4 address, else its IPv6 one).
fn plan_workloads(id: RunId, routing: &Routing, options: &EmulationOptions) -> Result<Workloads, EmuError> {
    let mut env = vec![("SQUALL_RUN_ID".to_string(), id.0.to_string())];
    for (end, key) in [(routing.fixed(), "SQUALL_FIXED"), (routing.mobile(), "SQUALL_MOBILE")] {
        if let Some(a) = routing.addresses[end] {
            env.push((key.to_string(), a.to_string()));
        }
    }
    let preferred = |h| routing.preferred_address(h).map(|a| a.to_string()).unwrap_or_default();
    let (fixed, mobile) = (preferred(routing.fixed()), preferred(routing.mobile()));
    for (end, key) in [(routing.fixed(), "SQUALL_FIXED6"), (routing.mobile(), "SQUALL_MOBILE6")] {
        if let Some(a) = routing.addresses6[end] {
            env.push((key.to_string(), a.to_string()));
        }
    }
    for ((name, addr), addr6) in routing.names.iter().zip(&routing.addresses).zip(&routing.addresses6) {
        let key: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        if let Some(a) = addr {
            env.push((format!("SQUALL_ADDR_{key}"), a.to_string()));
        }
        if let Some(a) = addr6 {
            env.push((format!("SQUALL_ADDR6_{key}"), a.to_string()));
        }
    }
    let peers: Vec<String> = (0..routing.names.len())
        .map(|h| {
            if h == routing.mobile() {
                fixed.clone()
            } else if h == routing.fixed() {
                mobile.clone()
            } else {
                String::new()
            }
        })
        .collect();
    Workloads::new(options.commands.clone(), &routing.names, env, peers, &options.workload_dir)
}

/// What `squall ctl info` answers: the run, its hosts and where each is
/// (the interface it is behind, inline or outside, or its namespace),
/// the scenario's states and duration.
fn run_info(
    id: RunId,
    scenario: &Scenario,
    routing: &Routing,
    options: &EmulationOptions,
    attached: &Attached,
) -> serde_json::Value {
    serde_json::json!({
        "id": id.0,
        "scenario": scenario.name,
        "hosts": (0..routing.names.len()).map(|i| {
            let (name, address) = (&routing.names[i], routing.addresses[i]);
            let mut host = match (&options.inline, attached.uplink.as_ref().filter(|_| Some(i) == routing.outside)) {
                (Some(_), _) => {
                    let device = attached.sides.as_ref().map_or(i, |s| s.device_of(i));
                    serde_json::json!({"name": name, "address": address, "interface": attached.devices[device].label()})
                }
                (None, Some(uplink)) => serde_json::json!({"name": name, "address": address, "outside_interface": uplink.interface()}),
                (None, None) => {
                    let netns = attached.hosts.namespaces.get(i).map_or_else(|| id.netns_name(name), |n| n.name().to_string());
                    serde_json::json!({"name": name, "address": address, "netns": netns})
                }
            };
            if let Some(a) = routing.addresses6[i] {
                host["address6"] = serde_json::json!(a);
            }
            host
        }).collect::<Vec<_>>(),
        "states": scenario.schedule().iter().map(|s| s.state.name.clone()).collect::<Vec<_>>(),
        // Each stage's background-load generators, for `squall ctl background`.
        "background": scenario.stages()
            .flat_map(|st| st.background.iter().map(move |g| serde_json::json!({"stage": st.name, "generator": g.name})))
            .collect::<Vec<_>>(),
        "duration": scenario.duration.as_secs_f64(),
    })
}

/// How the supervisor ends the data plane's loop: at once (`done`), or
/// once what the workloads sent has been delivered (`drain`).
#[derive(Clone, Copy)]
struct Ends<'a> {
    done: &'a AtomicBool,
    drain: &'a AtomicBool,
}

/// Starts and reaps the workloads every 5 ms while the data plane runs,
/// until it ends by itself (the scenario's duration), a workload cannot
/// be started or `signal` is set (then it tells the data plane to stop at
/// once, `done`); when (`stop_when_workloads_exit`) the foreground
/// workloads have exited, it tells the data plane to deliver what they
/// sent and stop (`drain`), and keeps watching for a signal meanwhile.
/// Workloads started in a namespace the run joined go into the run's
/// `record` as they start ([`crate::record::WorkloadGroup`]).
/// Returns why the run ended and a workload's failure.
fn supervise(
    handle: &JoinHandle<DataplaneReport>,
    workloads: &mut Workloads,
    clock: Clock,
    (hosts, record): (&Hosts, &mut RecordFile),
    signal: &AtomicBool,
    ends: Ends,
    options: &EmulationOptions,
) -> (EndReason, Option<EmuError>) {
    let mut ended_by = EndReason::Duration;
    while !handle.is_finished() {
        let polled = workloads.poll(clock.now(), &hosts.namespaces).and_then(|started| {
            for s in started {
                let ns = &hosts.namespaces[s.host];
                if ns.is_joined() {
                    let group = crate::record::WorkloadGroup::of(&s.host_name, s.pid, ns)?;
                    record.update(|r| r.workloads.push(group))?;
                }
            }
            Ok(())
        });
        let (reason, failure) = if let Err(e) = polled {
            (EndReason::Duration, Some(e))
        } else if signal.load(Ordering::Relaxed) {
            (EndReason::Signal, None)
        } else {
            if options.stop_when_workloads_exit && ended_by != EndReason::Workloads && workloads.foreground_done() {
                ended_by = EndReason::Workloads;
                ends.drain.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        };
        ends.done.store(true, Ordering::Relaxed);
        return (reason, failure);
    }
    (ended_by, None)
}

/// What the outside host did, and what the TUN devices were granted.
struct Leftovers {
    report: Option<OutsideReport>,
    offloads: Option<TunOffloads>,
}

/// Ends the run in order: the data plane's thread joined (its devices
/// closed), the workloads stopped (SIGTERM, then SIGKILL after 500 ms),
/// the control socket closed, the namespaces removed, the outside host's
/// changes undone (saying how many packets to the outside were dropped
/// as leaked), the inline locks released.
fn teardown(
    handle: JoinHandle<DataplaneReport>,
    mut workloads: Workloads,
    clock: Clock,
    control: Option<ControlServer>,
    attached: Attached,
    routing: &Routing,
    id: RunId,
) -> (Result<DataplaneReport, EmuError>, Vec<CommandOutcome>, Leftovers) {
    let report = handle.join().map_err(|_| EmuError::Panicked { thread: "the data plane thread".into() });
    let outcomes = workloads.stop_all(clock.now(), std::time::Duration::from_millis(500));
    drop(control);
    let Attached { devices, hosts, uplink, inline_lock, offloads, sides: _ } = attached;
    drop(devices);
    drop(hosts);
    let outside = uplink.as_ref().zip(routing.outside).map(|(uplink, host)| OutsideReport {
        host: routing.names[host].clone(),
        interface: uplink.interface().to_string(),
        device: crate::engine::uplink::object_name(id),
        leaked: uplink.leaked(),
    });
    if let Some(o) = &outside
        && let Some(n @ 1..) = o.leaked
    {
        tracing::warn!(
            "squall emu: {n} packet(s) to the outside would have left through another interface than {} (this \
             machine's routes send their destination elsewhere) and were dropped",
            o.interface
        );
    }
    drop(uplink);
    drop(inline_lock);
    (report, outcomes, Leftovers { report: outside, offloads })
}

/// This thread moved off the CPU kept for the data plane (the last it may
/// use); what it starts from now on inherits that. Gives the thread its
/// CPUs back when dropped.
struct Pinned {
    dataplane_cpu: usize,
    all: nix::sched::CpuSet,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &self.all);
    }
}

/// Keeps the last CPU this thread may use for the data plane and moves
/// the thread to the others; `None` (and nothing changed) with fewer than
/// two, or if the kernel refuses.
fn pin_others() -> Option<Pinned> {
    let here = nix::unistd::Pid::from_raw(0);
    let all = nix::sched::sched_getaffinity(here).ok()?;
    let cpus = usable_cpus();
    let (&dataplane_cpu, rest) = cpus.split_last()?;
    if rest.is_empty() {
        tracing::warn!("squall emu: --pin: one CPU only, nothing pinned");
        return None;
    }
    let mut others = nix::sched::CpuSet::new();
    for &c in rest {
        others.set(c).ok()?;
    }
    nix::sched::sched_setaffinity(here, &others).ok()?;
    Some(Pinned { dataplane_cpu, all })
}

/// Whether this process can make network namespaces (root, `ip`, and a
/// kernel that allows it): tries to make and remove one.
pub fn namespaces_available() -> Result<(), EmuError> {
    let name = format!("{}probe", RunId::current().netns_name(""));
    let ns = NetNs::create(&name)?;
    ns.delete()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPUs this thread may run on as the kernel lists them in
    /// /proc/thread-self/status (`Cpus_allowed_list: 0-3,8`, proc(5)),
    /// read without the affinity system call that `usable_cpus` makes.
    fn cpus_allowed_list() -> Vec<usize> {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
        let mut cpus = Vec::new();
        for range in list.split(',') {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            cpus.extend(first.parse::<usize>().unwrap()..=last.parse::<usize>().unwrap());
        }
        cpus
    }

    #[test]
    fn a_cpu_outside_this_process_s_affinity_is_refused_with_the_usable_ones() {
        let allowed = cpus_allowed_list();
        let outside = allowed.last().unwrap() + 1;
        let mut options = EmulationOptions::default();
        options.dataplane.cpu = Some(outside);
        let err = place_dataplane(&mut options).err().expect("a CPU outside the affinity is refused");
        assert!(matches!(&err, EmuError::Cpu { cpu, usable } if *cpu == outside && *usable == allowed), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("the data plane cannot run on CPU {outside}: this process may use CPUs {allowed:?}")
        );
        // One it may use: the data plane goes there, nothing else moves.
        options.dataplane.cpu = Some(allowed[0]);
        let (pinned, cpu) = place_dataplane(&mut options).unwrap();
        assert!(pinned.is_none());
        assert_eq!(cpu, Some(allowed[0]));
    }
}
