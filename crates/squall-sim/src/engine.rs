//! The engine: builds a run from a scenario, then wakes paths, agents and
//! the state schedule in virtual time until the scenario's duration.

use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use squall_link::rng::stream;
use squall_link::{Entry, FlowKey, Instant, PathId, Protocol, Sampler};
use squall_scenario::{
    DelayedAckSpec, EphemeralPorts, RtoSpec, Scenario, ServerPorts, TcpApp, TcpCc, TcpFlow, TcpProfile, Topology,
};
use squall_tcp::{CcKind, DelayedAck, Profile, RtoVariant, TcpConfig};

use crate::agent::{Agent, Ctx};
use crate::any_agent::AnyAgent;
use crate::hash::FxHashMap;
use crate::host::{Host, HostId};
use crate::ids::AgentId;
use crate::metrics::FlowMetrics;
use crate::network::{Network, Records};
use crate::recorder::RunRecorder;
use crate::result::{HostCapture, RunResult};
use crate::scheduler::Wake;
use crate::tcp::{AppPlan, ClockPhases, ResponseSize, ServerLimits, TcpClient, TcpPart, TcpPlan, TcpProxy, TcpServer};
use crate::udp::{UdpSink, UdpSource};
use crate::{RunOptions, SimError};
use squall_scenario::ports::{tcp_ports, udp_ports};

/// More wakeups than this at one instant is a livelock (a model or agent
/// that keeps asking to be woken now), not a workload.
const MAX_WAKEUPS_PER_INSTANT: u64 = 1 << 24;

/// Ports a TCP flow with a fixed first client port may bind on its host,
/// kept from the ephemeral allocator: the one port of a bulk flow, or the
/// thousand the 20000 + 1000·index rule gives a flow of exchanges (one
/// port per connection).
fn fixed_client_ports(f: &TcpFlow, first: u16) -> std::ops::RangeInclusive<u16> {
    match f.app {
        TcpApp::Bulk(_) | TcpApp::BulkFor(_) => first..=first,
        _ => first..=first.saturating_add(999),
    }
}

/// One replication in progress.
pub(crate) struct Simulation {
    seed: u64,
    net: Network,
    agents: Vec<AnyAgent>,
    tcp_plans: Vec<Arc<TcpPlan>>,
    end: Instant,
    /// A stage has a series with `at_end = "end"`: the run ends where it
    /// does ([`squall_link::Path::series_end`]).
    series_may_end: bool,
    /// End the run once every TCP application is done.
    stop_when_done: bool,
    /// The client and server agents of each TCP flow, by plan index.
    tcp_agents: Vec<(AgentId, AgentId)>,
    /// Every TCP flow before this plan index is done (an application
    /// that is done stays done), so [`Self::all_tcp_done`] costs no scan
    /// of every flow per wakeup.
    done_below: usize,
    /// Wakeups handled so far, and how many of them at the current instant.
    wakeups: u64,
    instant: Instant,
    at_instant: u64,
    /// The timestamp clock phase of each host with a TCP connection end
    /// (a client, a server or a split-TCP proxy), by host name.
    clock_phases: std::collections::BTreeMap<String, squall_link::Duration>,
}

fn scenario_error(message: impl Into<String>) -> SimError {
    SimError::Scenario(message.into())
}

impl Simulation {
    /// Builds the hosts, paths, routes, agents and state schedule of
    /// `scenario` for the replication with `seed`.
    /// `recorder`: where events and captures go as the run makes them
    /// (`None`: kept for the result).
    pub fn new(
        scenario: &Scenario,
        seed: u64,
        options: RunOptions,
        recorder: Option<Box<dyn RunRecorder>>,
    ) -> Result<Self, SimError> {
        if let Some((i, c)) = scenario.workload.commands.iter().enumerate().next() {
            return Err(scenario_error(format!(
                "workload.commands[{i}] (on host `{}`: `{}`) runs a real program, which only `squall emu` can \
                 do; the simulator runs [[workload.tcp]] and [[workload.udp]]",
                c.host, c.run
            )));
        }
        let topology = Topology::new(scenario).map_err(|e| scenario_error(e.to_string()))?;
        let host_ids: HashMap<&str, HostId> =
            scenario.hosts.iter().enumerate().map(|(i, h)| (h.name.as_str(), HostId(i as u32))).collect();
        let hosts: Vec<Host> = topology
            .names
            .iter()
            .zip(&topology.addresses)
            .zip(&scenario.hosts)
            .map(|((n, a), h)| Host::new(n.clone(), *a, h.ephemeral_ports.unwrap_or(EphemeralPorts::LINUX)))
            .collect();
        // Each host's timestamp clock phase: its own, or drawn from the
        // stream "host/NAME/clock" (uniform below 1 ms).
        let clock_phases: Vec<squall_link::Duration> = scenario
            .hosts
            .iter()
            .map(|h| {
                h.clock_phase.unwrap_or_else(|| {
                    let mut rng = stream(seed, &format!("host/{}/clock", h.name));
                    squall_link::Duration::from_nanos(rand::Rng::next_u64(&mut rng) % 1_000_000)
                })
            })
            .collect();
        let mut tcp_clocks = std::collections::BTreeMap::new();
        let host = |name: &str, what: &str| {
            host_ids
                .get(name)
                .copied()
                .ok_or_else(|| scenario_error(format!("{what} names host `{name}`, which is not in `hosts`")))
        };

        // The states are checked before the schedule is built from them.
        let stage_names: HashSet<&str> = scenario.stages().map(|s| s.name.as_str()).collect();
        for s in &scenario.schedule() {
            for change in &s.state.changes {
                if !stage_names.contains(change.stage()) {
                    return Err(scenario_error(format!(
                        "state `{}` changes stage `{}`, which no link has",
                        s.state.name,
                        change.stage()
                    )));
                }
            }
            if let Entry::Cycle { hold } = &s.entry {
                hold.validate().map_err(|e| scenario_error(format!("state `{}`: `hold`: {e}", s.state.name)))?;
            }
        }

        let mut fabric =
            squall_scenario::fabric::build(scenario, &topology, seed, squall_scenario::fabric::Engine::Simulator)
                .map_err(|e| SimError::Config(e.source))?;
        // `[[record]]` entries of a class: the model samples its classes.
        let class_stages = squall_scenario::record::class_stages(&scenario.record);
        for stage in &class_stages {
            fabric.record_classes(stage);
        }
        let mut net = Network::new(hosts, fabric, options, recorder);
        net.books.record_classes = !class_stages.is_empty();
        let mut agents = Vec::new();
        for (i, f) in scenario.workload.udp.iter().enumerate() {
            let what = format!("workload.udp `{}`", f.name);
            let (from, to) = (host(&f.from, &what)?, host(&f.to, &what)?);
            if net.next_hop(from, to).is_none() {
                return Err(scenario_error(format!("{what}: no route from `{}` to `{}`", f.from, f.to)));
            }
            let (src_port, dst_port) = udp_ports(f, i).map_err(|e| scenario_error(format!("{what}: {e}")))?;
            let (src, dst) = net.books.flow_addresses(from, to, f.ip_version).ok_or_else(|| {
                scenario_error(format!("{what}: `{}` and `{}` have no IP version in common", f.from, f.to))
            })?;
            let key = FlowKey { protocol: Protocol::Udp, src, dst, src_port, dst_port };
            if !net.books.add_flow(FlowMetrics::new(f.name.clone(), key)) {
                return Err(scenario_error(format!("{what}: another flow has the same addresses and ports ({key})")));
            }
            let source = UdpSource::new(f, key, seed, Instant::ZERO + scenario.duration).map_err(SimError::Scenario)?;
            net.books.add_agent(from);
            agents.push(AnyAgent::UdpSource(Box::new(source)));
            // Flows to the same host and port share one sink.
            if net.books.hosts[to.index()].bound_agent(Protocol::Udp, dst_port).is_none() {
                let sink = net.books.add_agent(to);
                agents.push(AnyAgent::UdpSink(UdpSink::default()));
                net.books.bind(to, Protocol::Udp, dst_port, sink).map_err(|e| scenario_error(e.to_string()))?;
            }
        }

        let mut tcp_plans = Vec::new();
        let mut tcp_agents = Vec::new();
        // Shared server ports (host, port) and the entry listening there.
        let mut listeners: FxHashMap<(HostId, u16), usize> = FxHashMap::default();
        let end = Instant::ZERO + scenario.duration;
        // An entry with `count` stands for many flows (squall_scenario::count).
        for i in 0..scenario.workload.tcp.len() {
            let members = squall_scenario::count::expand_tcp(scenario, i, seed);
            // Two agents a flow (a proxy adds one), reserved at once rather than
            // grown by doubling (100 000 flows held 262 144 slots for 200 000).
            agents.reserve(2 * members.len());
            net.books.flows.reserve(2 * members.len());
            for member in members {
                let f = &member.flow;
                let what = format!("workload.tcp `{}`", f.name);
                let (from, to) = (host(&f.from, &what)?, host(&f.to, &what)?);
                if net.next_hop(from, to).is_none() || net.next_hop(to, from).is_none() {
                    return Err(scenario_error(format!(
                        "{what}: no route both ways between `{}` and `{}`",
                        f.from, f.to
                    )));
                }
                let proxy = match &f.proxy {
                    None => None,
                    Some(p) => {
                        let p = host(p, &what)?;
                        if !on_route(&net, from, to, p) || !on_route(&net, to, from, p) {
                            return Err(scenario_error(format!(
                                "{what}: the proxy `{}` is not on the route between `{}` and `{}` both ways",
                                scenario.hosts[p.index()].name,
                                f.from,
                                f.to
                            )));
                        }
                        Some(p)
                    }
                };
                if member.index.is_some() && f.dst_port.is_none() {
                    return Err(scenario_error(format!(
                        "{what}: its server port (the entry's dst_port + {}) is past 65535: the arrivals drew too many \
                     flows; give server_ports = \"shared\", a lower dst_port or a shorter window",
                        member.index.unwrap_or(0)
                    )));
                }
                let (client_port, server_port) = tcp_ports(f, i).map_err(|e| scenario_error(format!("{what}: {e}")))?;
                // A host with a range of its own gives every flow without a
                // `src_port` ports from it.
                let client_port = if member.ephemeral
                    || f.src_port.is_none() && scenario.hosts[from.index()].ephemeral_ports.is_some()
                {
                    None
                } else {
                    client_port
                };
                if let Some(first) = client_port {
                    for p in fixed_client_ports(f, first) {
                        net.books.hosts[from.index()].ports.reserve(p);
                    }
                }
                let addresses = net.books.flow_addresses(from, to, f.ip_version).ok_or_else(|| {
                    scenario_error(format!("{what}: `{}` and `{}` have no IP version in common", f.from, f.to))
                })?;
                // A flow that names no MSS takes its IP version's (a loaded
                // scenario has it filled in already; one built otherwise
                // may not).
                let with_mss;
                let f = if f.mss.is_none() && addresses.0.is_ipv6() {
                    with_mss = squall_scenario::TcpFlow {
                        mss: Some(squall_link::Bytes(squall_scenario::DEFAULT_MSS_IPV6)),
                        ..f.clone()
                    };
                    &with_mss
                } else {
                    f
                };
                let key = |towards_server: bool| {
                    // An ephemeral client port is 0 until the first connection.
                    let client_port = client_port.unwrap_or(0);
                    let (c, s) = addresses;
                    if towards_server {
                        FlowKey {
                            protocol: Protocol::Tcp,
                            src: c,
                            dst: s,
                            src_port: client_port,
                            dst_port: server_port,
                        }
                    } else {
                        FlowKey {
                            protocol: Protocol::Tcp,
                            src: s,
                            dst: c,
                            src_port: server_port,
                            dst_port: client_port,
                        }
                    }
                };
                let (up_key, down_key) = (key(true), key(false));
                let up_flow = net.books.flows.len() as u32;
                // Flows sharing a server port have one key until they connect
                // (client port 0); ephemeral ports keep their connections apart.
                let shared = f.server_ports == ServerPorts::Shared && client_port.is_none();
                if shared {
                    net.books.add_flow_unindexed(FlowMetrics::new(format!("{}:c2s", f.name), up_key));
                    net.books.add_flow_unindexed(FlowMetrics::new(format!("{}:s2c", f.name), down_key));
                } else if !net.books.add_flow(FlowMetrics::new(format!("{}:c2s", f.name), up_key))
                    || !net.books.add_flow(FlowMetrics::new(format!("{}:s2c", f.name), down_key))
                {
                    return Err(scenario_error(format!(
                        "{what}: another flow has the same addresses and ports ({up_key})"
                    )));
                }
                // A recorded delivery rate is sampled whatever the congestion control.
                let rate_samples = squall_scenario::record::records_delivery_rate(&scenario.record, &f.name);
                let config = |rcv_buf: u64| {
                    let config = tcp_config(f, rcv_buf, seed).map_err(|e| scenario_error(format!("{what}: {e}")))?;
                    Ok::<_, SimError>(TcpConfig { rate_samples, ..config })
                };
                let mss = f.mss().0;
                let start = f.start.as_constant().unwrap_or(squall_link::Duration::ZERO);
                let client = net.books.add_agent(from);
                let server = net.books.add_agent(to);
                // Client and server share one configuration (a pure function
                // of the flow), the proxy's wired side too unless its buffer differs.
                let cfg = config(f.rwnd().0)?;
                let proxy_buffer_cfg = match f.proxy_buffer {
                    None => None,
                    Some(b) => Some(Box::new(config(b.bytes(mss))?)),
                };
                for h in [Some(from), Some(to), proxy].into_iter().flatten() {
                    tcp_clocks.insert(scenario.hosts[h.index()].name.clone(), clock_phases[h.index()]);
                }
                let plan = Arc::new(TcpPlan {
                    index: tcp_plans.len(),
                    name: f.name.clone(),
                    cc: tcp_cc(f.cc).name(),
                    cfg,
                    proxy_buffer_cfg,
                    clocks: ClockPhases {
                        client: clock_phases[from.index()],
                        server: clock_phases[to.index()],
                        proxy: proxy.map_or(squall_link::Duration::ZERO, |p| clock_phases[p.index()]),
                    },
                    app: app_plan(f, start, seed, end),
                    start: Instant::ZERO + start,
                    client: addresses.0,
                    server: addresses.1,
                    client_port,
                    server_port,
                    shared_server: shared.then_some(server),
                    drain: f.drain,
                    up_flow,
                    down_flow: up_flow + 1,
                    record_traces: options.record_events,
                });
                agents.push(AnyAgent::TcpClient(TcpClient::new(plan.clone())));
                agents.push(AnyAgent::TcpServer(TcpServer::new(plan.clone())));
                tcp_agents.push((client, server));
                // A shared port is bound once, by the entry's first flow: its
                // connections reach their flows' servers by their 4-tuples.
                if !shared || listeners.insert((to, server_port), i).is_none_or(|e| e != i) {
                    net.books
                        .bind(to, Protocol::Tcp, server_port, server)
                        .map_err(|e| scenario_error(format!("{what}: {e}")))?;
                }
                if let Some(p) = proxy {
                    let agent = net.books.add_agent(p);
                    agents.push(AnyAgent::TcpProxy(TcpProxy::new(plan.clone())));
                    net.books
                        .intercept(p, Protocol::Tcp, server_port, agent)
                        .map_err(|e| scenario_error(format!("{what}: proxy: {e}")))?;
                }
                tcp_plans.push(plan);
            }
        }

        // States due at time zero apply before any agent sends.
        if let Some(at) = net.fabric.schedule().next_wakeup() {
            net.books.scheduler.schedule(at, Wake::States);
        }
        net.books.scheduler.schedule_starts(agents.len() as u32);
        // Paths with work of their own from the start (background
        // generators) wake before any packet reaches them.
        for p in 0..net.fabric.paths().len() {
            net.after_call(Instant::ZERO, PathId(p as u32));
        }
        let series_may_end = net.fabric.may_end_run();
        Ok(Simulation {
            seed,
            net,
            agents,
            tcp_plans,
            end: Instant::ZERO + scenario.duration,
            series_may_end,
            stop_when_done: scenario.stop_when_done,
            tcp_agents,
            done_below: 0,
            wakeups: 0,
            instant: Instant::ZERO,
            at_instant: 0,
            clock_phases: tcp_clocks,
        })
    }

    /// Handles the next wakeup due by the end of the run; `false` when
    /// there is none left.
    pub fn step(&mut self) -> Result<bool, SimError> {
        let Some(request) = self.net.books.scheduler.pop_until(self.end) else {
            return Ok(false);
        };
        let now = request.at;
        self.count_wakeup(now)?;
        // Every wakeup before `now` has run: the events before it can go.
        self.net.settle(Some(now));
        match request.wake {
            Wake::Path(p) => {
                if self.net.books.take_wakeup(p, request.seq) {
                    self.wake_path(now, p);
                }
            }
            Wake::Timer(agent, token) => {
                if self.net.books.take_timer(agent, token, request.seq) {
                    let mut ctx = Ctx::new(now, agent, &mut self.net);
                    self.agents[agent.index()].on_timer(now, token, &mut ctx);
                }
            }
            Wake::Start(agent) => {
                let mut ctx = Ctx::new(now, agent, &mut self.net);
                self.agents[agent.index()].start(now, &mut ctx);
            }
            Wake::States => self.enter_states(now)?,
        }
        if let Some(e) = self.net.books.failure.take() {
            return Err(e);
        }
        Ok(true)
    }

    /// Runs at most `limit` wakeups (all of them if `None`); an error if
    /// the run is not over by then.
    pub fn run(&mut self, limit: Option<u64>) -> Result<(), SimError> {
        loop {
            if limit.is_some_and(|l| self.wakeups >= l) && self.net.books.scheduler.has_due(self.end) {
                return Err(SimError::Livelock { wakeups: self.wakeups, at: self.instant });
            }
            if !self.step()? {
                return Ok(());
            }
            if self.series_may_end {
                // A stage's series with `at_end = "end"` ends the run there.
                if let Some(end) = self.net.fabric.series_end() {
                    self.end = self.end.min(end);
                }
            }
            if self.stop_when_done && self.all_tcp_done() {
                self.end = self.instant;
                return Ok(());
            }
        }
    }

    /// Whether every TCP flow's application is done (none: false): a
    /// flow is done when its client or its server says so. Resumes from
    /// the first flow not yet seen done.
    fn all_tcp_done(&mut self) -> bool {
        let done = |a: AgentId| match &self.agents[a.index()] {
            AnyAgent::TcpClient(c) => c.is_done(),
            AnyAgent::TcpServer(s) => s.is_done(),
            _ => false,
        };
        while let Some(&(client, server)) = self.tcp_agents.get(self.done_below) {
            if !done(client) && !done(server) {
                return false;
            }
            self.done_below += 1;
        }
        !self.tcp_agents.is_empty()
    }

    fn count_wakeup(&mut self, now: Instant) -> Result<(), SimError> {
        self.wakeups += 1;
        if now == self.instant {
            self.at_instant += 1;
            if self.at_instant > MAX_WAKEUPS_PER_INSTANT {
                return Err(SimError::Livelock { wakeups: self.wakeups, at: now });
            }
        } else {
            self.instant = now;
            self.at_instant = 1;
        }
        Ok(())
    }

    /// Path `p` is due: take every packet it delivers now to its far host.
    fn wake_path(&mut self, now: Instant, p: PathId) {
        while let Some(d) = self.net.fabric.path_mut(p).path.poll(now) {
            debug_assert_eq!(d.at, now, "a path delivered before it asked to be woken");
            if let Some((agent, packet, tcp)) = self.net.arrive(now, p, d.packet) {
                let mut ctx = Ctx::new(now, agent, &mut self.net);
                self.agents[agent.index()].on_packet(now, packet, tcp, &mut ctx);
            }
        }
        self.net.after_call(now, p);
    }

    /// Enters every state due at `now`: each change goes to every path.
    fn enter_states(&mut self, now: Instant) -> Result<(), SimError> {
        if self.net.books.options.record_events {
            // Events before the state come before it in the log.
            self.net.drain_all();
        }
        let net = &mut self.net;
        net.fabric.enter_due_states(now, &mut net.books).map_err(|storm| {
            scenario_error(format!(
                "states entered more than {} times at {} s: a cycle with zero holding times?",
                squall_link::Fabric::MAX_STATES_PER_INSTANT,
                storm.at
            ))
        })?;
        for p in 0..net.fabric.paths().len() {
            net.after_call(now, PathId(p as u32));
        }
        if let Some(at) = net.fabric.schedule().next_wakeup() {
            net.books.scheduler.schedule(at.max(now), Wake::States);
        }
        Ok(())
    }

    /// Ends the run: checks conservation and gathers the results.
    pub fn finish(mut self) -> Result<(RunResult, Option<Box<dyn RunRecorder>>), SimError> {
        let net = &mut self.net;
        net.drain_all();
        net.settle(None);
        if let Some(v) = net.books.violation.take() {
            return Err(SimError::Conservation(v));
        }
        let mut in_paths = 0;
        for slot in net.fabric.paths() {
            let s = slot.path.stats();
            if !s.conserved() {
                return Err(SimError::Conservation(format!(
                    "{}: {} entered, {} delivered + {} dropped + {} inside",
                    slot.label, s.entered, s.delivered, s.dropped, s.in_flight
                )));
            }
            in_paths += s.in_flight;
        }
        if net.books.ledger.live() != in_paths {
            return Err(SimError::Conservation(format!(
                "{} packets should be inside the network but the paths hold {in_paths}",
                net.books.ledger.live()
            )));
        }
        let in_flight = net.books.ledger.live_per_flow(net.books.flows.len());
        for (f, &inside) in net.books.flows.iter().zip(&in_flight) {
            let accounted = f.delivered_packets + f.dropped_total() + inside;
            if f.sent_packets + f.copies != accounted {
                return Err(SimError::Conservation(format!(
                    "flow {}: {} sent, {} delivered + {} dropped + {inside} inside",
                    f.key(),
                    f.sent_packets,
                    f.delivered_packets,
                    f.dropped_total()
                )));
            }
        }

        let stages = net.fabric.paths().iter().flat_map(|s| s.path.stage_stats(self.end)).collect();
        let empty = Records::Keep { events: Vec::new(), captures: Vec::new(), headers: Vec::new() };
        let (events, captures, mut recorder) = match std::mem::replace(&mut net.books.recording, empty) {
            Records::Keep { events, captures, headers } => {
                let captures = (captures.into_iter().zip(headers).zip(&net.books.hosts))
                    .map(|((packets, tcp), h)| HostCapture { host: h.name.clone(), packets, tcp })
                    .collect();
                (events, captures, None)
            }
            Records::Stream(recorder) => (Vec::new(), Vec::new(), Some(recorder)),
        };
        let mut parts: Vec<Vec<TcpPart>> = self.tcp_plans.iter().map(|_| Vec::new()).collect();
        for a in &mut self.agents {
            let (index, part) = match a {
                AnyAgent::TcpClient(c) => (c.flow_index(), c.finish()),
                AnyAgent::TcpServer(s) => (s.flow_index(), s.finish()),
                AnyAgent::TcpProxy(p) => (p.flow_index(), p.finish()),
                _ => continue,
            };
            parts[index].push(part);
        }
        let mut tcp_flows = Vec::new();
        let mut tcp_traces = Vec::new();
        for (plan, parts) in self.tcp_plans.iter().zip(parts) {
            let (flow, traces) = crate::tcp::flow_result(plan, parts, self.end);
            tcp_flows.push(flow);
            tcp_traces.extend(traces);
        }
        if let Some(recorder) = recorder.as_mut() {
            // The rest of each trace, then its end: the trace files are whole.
            for trace in std::mem::take(&mut tcp_traces) {
                recorder.tcp_samples(&trace);
                recorder.tcp_trace_done(&trace);
            }
        }
        let labels = &net.books.labels;
        let flows =
            std::mem::take(&mut net.books.flows).into_iter().zip(in_flight).map(|(f, n)| f.finish(n, labels)).collect();
        let result = RunResult {
            seed: self.seed,
            end: self.end,
            flows,
            stages,
            events,
            packets: std::mem::take(&mut net.books.records),
            captures,
            tcp_flows,
            tcp_traces,
            clock_phases: std::mem::take(&mut self.clock_phases),
        };
        Ok((result, recorder))
    }
}

/// Whether `via` is a host on the route from `from` to `to` (not an end).
fn on_route(net: &Network, from: HostId, to: HostId, via: HostId) -> bool {
    let mut at = from;
    for _ in 0..net.books.hosts.len() {
        let Some(p) = net.next_hop(at, to) else { return false };
        at = net.path_end(p);
        if at == to {
            return false;
        }
        if at == via {
            return true;
        }
    }
    false
}

fn tcp_cc(cc: TcpCc) -> CcKind {
    match cc {
        TcpCc::Tahoe => CcKind::Tahoe,
        TcpCc::Reno => CcKind::Reno,
        TcpCc::NewReno => CcKind::NewReno,
        TcpCc::Sack => CcKind::Sack,
        TcpCc::Cubic => CcKind::Cubic,
        TcpCc::Vegas => CcKind::Vegas,
        TcpCc::Bbr => CcKind::Bbr,
    }
}

/// The squall-tcp settings of a `[[workload.tcp]]` entry, with a receive
/// buffer of `rcv_buf` bytes: the profile's defaults (`TcpConfig::default`
/// or `TcpConfig::linux`), overridden by every key the flow gives. The
/// connection's random stream (BBR's) is seeded from the replication's
/// `seed` and the flow's name.
pub(crate) fn tcp_config(f: &TcpFlow, rcv_buf: u64, seed: u64) -> Result<TcpConfig, squall_tcp::ConfigError> {
    let cc = tcp_cc(f.cc);
    let mss = f.mss().0.min(u32::MAX as u64) as u32;
    let defaults = TcpConfig::profile(match f.profile {
        TcpProfile::Rfc => Profile::Rfc,
        TcpProfile::Linux => Profile::Linux,
    });
    // The RFC profile offers SACK only where the algorithm recovers with
    // it; Linux always does (net.ipv4.tcp_sack = 1).
    let default_sack = match f.profile {
        TcpProfile::Rfc => matches!(cc, CcKind::Sack | CcKind::Cubic | CcKind::Bbr),
        TcpProfile::Linux => defaults.sack,
    };
    let config = TcpConfig {
        cc,
        mss,
        rcv_buf,
        window_scaling: f.window_scaling.unwrap_or(defaults.window_scaling),
        sack: f.sack.unwrap_or(default_sack),
        timestamps: f.timestamps.unwrap_or(defaults.timestamps),
        delayed_ack: match f.delayed_ack {
            None => defaults.delayed_ack,
            Some(DelayedAckSpec::Enabled(false)) => DelayedAck::Off,
            Some(DelayedAckSpec::Enabled(true)) => DelayedAck::On(squall_link::Duration::from_millis(200)),
            Some(DelayedAckSpec::Timer(t)) => DelayedAck::On(t),
        },
        min_rto: f.min_rto.unwrap_or(defaults.min_rto),
        rto_variant: match f.rto {
            None => defaults.rto_variant,
            Some(RtoSpec::Rfc6298) => RtoVariant::Rfc6298,
            Some(RtoSpec::Seed001) => RtoVariant::Seed001,
            Some(RtoSpec::Linux) => RtoVariant::Linux,
        },
        hystart: f.hystart.unwrap_or(defaults.hystart),
        initial_window: f.initial_window.unwrap_or(defaults.initial_window),
        limited_transmit: f.limited_transmit,
        dupack_threshold: f.dupack_threshold.unwrap_or(defaults.dupack_threshold),
        initial_ssthresh: f.initial_ssthresh.map_or(defaults.initial_ssthresh, |w| w.bytes(mss as u64)),
        max_window: f.max_window.map_or(defaults.max_window, |w| w.bytes(mss as u64)),
        seed: rand::Rng::next_u64(&mut stream(seed, &format!("tcp/{}/cc", f.name))),
        ..defaults
    };
    config.validate()?;
    Ok(config)
}

/// The application of a flow; web object sizes are drawn from the stream
/// "tcp/NAME/size".
fn app_plan(f: &TcpFlow, start: squall_link::Duration, seed: u64, end: Instant) -> AppPlan {
    match &f.app {
        // A drawn size is constant once the entry is expanded.
        TcpApp::Bulk(b) => AppPlan::Bulk { bytes: b.as_constant().map_or(0, |b| b.0) },
        TcpApp::BulkFor(d) => AppPlan::BulkUntil { stop: (Instant::ZERO + start + *d).min(end) },
        TcpApp::RequestResponse(rr) => AppPlan::Exchanges {
            count: rr.count.into(),
            request: rr.request.0,
            response: ResponseSize::Fixed(rr.response.0),
            think: rr.think,
            keep_alive: true,
            limits: ServerLimits::default(),
        },
        TcpApp::Web(web) => AppPlan::Exchanges {
            count: web.object_count().into(),
            request: web.request.0,
            response: match &web.size {
                Some(size) => {
                    ResponseSize::Drawn(Sampler::new(size.clone(), stream(seed, &format!("tcp/{}/size", f.name))))
                }
                None => ResponseSize::Listed(web.site_files.iter().map(|f| f.bytes).collect()),
            },
            think: squall_link::Duration::ZERO,
            keep_alive: web.keep_alive,
            limits: ServerLimits {
                max_requests: web.max_requests,
                keep_alive_timeout: web.keep_alive_timeout,
                server_timeout: web.server_timeout,
            },
        },
    }
}
