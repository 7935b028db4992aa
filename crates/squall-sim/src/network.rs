//! The network: hosts joined by paths (two per link, one each way), the
//! routes between them, and the bookkeeping of every packet inside.
//!
//! The paths, routes, forwarding at intermediate hosts, processing delays
//! and the state schedule are the model's [`Fabric`], which the emulator
//! drives too; what the simulator keeps beside it (bound agents, timers,
//! the packet ledger, flows, records, the event queue) is [`Books`], the
//! fabric's [`Hooks`].
//!
//! Packets move synchronously at one instant: a path's delivery arrives at
//! its far host at the delivery time, and a forwarding host pushes it onto
//! the next path at once. A packet is therefore always inside exactly one
//! path, or already out of the network (delivered or dropped).

use std::net::IpAddr;
use std::sync::Arc;

use squall_link::fabric::{Arrival, FabricPath, HostIndex};
use squall_link::{
    Direction, Event, EventKind, Fabric, Hooks, Instant, Packet, PacketId, Path, PathId, PathRole, Protocol, Recording,
    State,
};

use crate::hash::FxHashMap;
use crate::host::PortInUse;
use crate::host::{Host, HostId};
use crate::ids::{AgentId, TimerToken};
use crate::ledger::{self, Entry, PacketLedger};
use crate::metrics::FlowMetrics;
use crate::recorder::RunRecorder;
use crate::result::{CaptureDirection, PacketRecord};
use crate::scheduler::{Scheduler, Wake};
use crate::{RunOptions, SimError};
use squall_tcp::Segment;

/// The destination cannot be reached from the sending host (no host has
/// that address, no path leads there, or it is the sending host itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no route from host {from:?} to {to}")]
pub struct NoRoute {
    pub from: HostId,
    pub to: IpAddr,
}

/// How many calls a path gets between drains of its events. Draining
/// allocates a fresh buffer in the model, so it is batched; a batch is
/// still small enough to stay in cache.
const DRAIN_BATCH: u32 = 256;

/// The simulator's side of a path of the fabric.
#[derive(Clone, Copy, Debug, Default)]
struct PathWake {
    /// The pending wakeup request, (time, sequence number); older requests
    /// for this path are stale and ignored.
    scheduled: Option<(Instant, u64)>,
    calls_since_drain: u32,
}

/// A packet that reached an agent, with its TCP header if it has one; the
/// engine hands it over.
pub(crate) type Handover = Option<(AgentId, Packet, Option<Segment>)>;

/// Where a run's events and captures go.
pub(crate) enum Records {
    /// Kept for the [`crate::RunResult`]: the events in time order, and
    /// per host its captured packets and their TCP headers.
    Keep {
        events: Vec<Event>,
        captures: Vec<Vec<(Instant, CaptureDirection, Packet)>>,
        headers: Vec<Vec<Option<Segment>>>,
    },
    /// Handed on as they come.
    Stream(Box<dyn RunRecorder>),
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Records::Keep { events, captures, .. } => {
                write!(f, "Keep({} events, {} hosts captured)", events.len(), captures.len())
            }
            Records::Stream(_) => f.write_str("Stream"),
        }
    }
}

/// The fabric and the simulator's books on it.
#[derive(Debug)]
pub(crate) struct Network {
    pub fabric: Fabric,
    pub books: Books,
}

/// What the simulator keeps on its hosts and on every packet inside the
/// fabric.
#[derive(Debug)]
pub(crate) struct Books {
    pub hosts: Vec<Host>,
    wakes: Vec<PathWake>,
    /// Each path's label, by [`PathId`].
    pub labels: Vec<String>,
    pub scheduler: Scheduler,
    /// Host of each agent.
    agent_hosts: Vec<HostId>,
    /// Armed timers of each agent: token and the sequence number of the
    /// request that fires it.
    timers: Vec<Vec<(TimerToken, u64)>>,
    pub ledger: PacketLedger,
    pub flows: Vec<FlowMetrics>,
    flow_index: FxHashMap<squall_link::FlowKey, u32>,
    pub options: RunOptions,
    pub records: Vec<PacketRecord>,
    /// Where events and captures go: kept for the result, or streamed.
    pub recording: Records,
    /// Model events drained and not yet handed on (only with
    /// `options.record_events`), in the order drained.
    pending: Vec<Event>,
    /// Every event before this time has been handed on.
    settled: Instant,
    /// The first inconsistency seen (a bug): reported as a conservation
    /// error at the end of the run.
    pub violation: Option<String>,
    /// Why the run cannot go on (a host out of ephemeral ports): the
    /// engine stops with it after the callback that met it.
    pub failure: Option<SimError>,
    /// Events of one drain, reused to avoid an allocation per drain.
    drained: Vec<Event>,
    /// Whether stages sample their queue classes (`[[record]]` of a
    /// class): their samples are handed on with the events.
    pub record_classes: bool,
    /// Class samples of one drain, reused.
    class_samples: Vec<squall_link::ClassSample>,
    /// Copies taken from a path ([`Books::take_copies`]), reused.
    copies: Vec<squall_link::PacketId>,
}

impl Network {
    /// `recorder`: where events and captures go as the run makes them
    /// (`None`: kept for the result).
    pub fn new(
        hosts: Vec<Host>,
        mut fabric: Fabric,
        options: RunOptions,
        recorder: Option<Box<dyn RunRecorder>>,
    ) -> Self {
        let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
        let records = match recorder {
            Some(mut r) => {
                r.start(&names);
                Records::Stream(r)
            }
            None => Records::Keep {
                events: Vec::new(),
                captures: if options.record_captures { names.iter().map(|_| Vec::new()).collect() } else { Vec::new() },
                headers: if options.record_captures { names.iter().map(|_| Vec::new()).collect() } else { Vec::new() },
            },
        };
        // Drops are always needed, to charge them to flows; the rest only
        // when the run keeps events.
        fabric.set_recording(if options.record_events { Recording::All } else { Recording::Drops });
        let books = Books {
            hosts,
            wakes: vec![PathWake::default(); fabric.paths().len()],
            labels: fabric.paths().iter().map(|p| p.label.clone()).collect(),
            scheduler: Scheduler::default(),
            agent_hosts: Vec::new(),
            timers: Vec::new(),
            ledger: PacketLedger::new(),
            flows: Vec::new(),
            flow_index: FxHashMap::default(),
            options,
            records: Vec::new(),
            recording: records,
            pending: Vec::new(),
            settled: Instant::ZERO,
            violation: None,
            failure: None,
            drained: Vec::new(),
            record_classes: false,
            class_samples: Vec::new(),
            copies: Vec::new(),
        };
        Network { fabric, books }
    }

    /// The first path from `from` towards `to`.
    pub fn next_hop(&self, from: HostId, to: HostId) -> Option<PathId> {
        self.fabric.routes().next_path(from.index(), to.index())
    }

    /// The host a path's deliveries reach.
    pub fn path_end(&self, p: PathId) -> HostId {
        HostId(self.fabric.path(p).to as u32)
    }

    // --- packets ---

    /// An agent on `host` sends `packet` at `now`.
    pub fn send(&mut self, now: Instant, host: HostId, packet: Packet) -> Result<PacketId, NoRoute> {
        let flow = self.books.flow_index.get(&packet.flow).copied().unwrap_or(ledger::NONE);
        self.send_with(now, host, packet, None, flow)
    }

    /// Sends `packet` with the TCP header `tcp` beside it, counted for the
    /// workload flow with index `flow` (or none, [`ledger::NONE`]).
    pub fn send_with(
        &mut self,
        now: Instant,
        host: HostId,
        mut packet: Packet,
        tcp: Option<Segment>,
        flow: u32,
    ) -> Result<PacketId, NoRoute> {
        let no_route = NoRoute { from: host, to: packet.flow.dst };
        let first = self.fabric.first_path(host.index(), &packet).ok_or(no_route)?;
        let books = &mut self.books;
        let record = if books.options.record_packets && flow != ledger::NONE {
            books.records.len() as u32
        } else {
            ledger::NONE
        };
        let id = books.ledger.insert(Entry { sent: now, flow, record, tcp });
        packet.id = id;
        if let Some(f) = books.flows.get_mut(flow as usize) {
            f.on_send(now, packet.size);
        }
        if record != ledger::NONE {
            books.records.push(PacketRecord {
                id,
                flow: flow as usize,
                size: packet.size,
                sent: now,
                delivered: None,
                dropped: None,
            });
        }
        self.fabric.send(now, host.index(), packet, first, books);
        Ok(id)
    }

    /// Path `from` delivered `packet` at `now` to its far host. Returns the
    /// agent that takes it, if any; otherwise the packet was forwarded (or
    /// reached a host where nothing listens on its port).
    /// The TCP connection from `client`:`client_port` to `server`:`port`
    /// goes to `agent` on the server's host (a shared listening port).
    pub fn accept(&mut self, server: IpAddr, port: u16, client: IpAddr, client_port: u16, agent: AgentId) {
        if let Some(h) = self.fabric.routes().host_of(server) {
            self.books.hosts[h].accept(port, client, client_port, agent);
        }
    }

    /// Undoes [`Self::accept`] (the client's port is free again).
    pub fn forget(&mut self, server: IpAddr, port: u16, client: IpAddr, client_port: u16, agent: AgentId) {
        if let Some(h) = self.fabric.routes().host_of(server) {
            self.books.hosts[h].forget(port, client, client_port, agent);
        }
    }

    #[inline]
    pub fn arrive(&mut self, now: Instant, from: PathId, packet: Packet) -> Handover {
        let Arrival { host, packet, claimed, .. } = self.fabric.arrive(now, from, packet, &mut self.books)?;
        let books = &mut self.books;
        let h = &books.hosts[host];
        let agent = if claimed { h.interceptor(&packet.flow) } else { h.receiver(&packet.flow) };
        let tcp = books.leave(now, &packet);
        agent.map(|a| (a, packet, tcp))
    }

    /// After any call on path `p`: drain its events now and then, and make
    /// sure a wakeup is requested for its `next_wakeup()`.
    pub fn after_call(&mut self, now: Instant, p: PathId) {
        self.books.after_call(now, p, &mut self.fabric.path_mut(p).path);
    }

    pub fn drain_all(&mut self) {
        self.books.drain_all(self.fabric.paths_mut());
    }

    /// Hands on the events before `now` ([`Books::settle`]).
    pub fn settle(&mut self, now: Option<Instant>) {
        self.books.settle(now, self.fabric.paths_mut());
    }
}

impl Books {
    /// The addresses of a flow from `from` to `to` of `ip_version`
    /// (4, 6, or the scenario's default: squall_scenario::topology::flow_addresses).
    pub fn flow_addresses(&self, from: HostId, to: HostId, ip_version: Option<u8>) -> Option<(IpAddr, IpAddr)> {
        let (a, b) = (self.hosts[from.index()].addresses, self.hosts[to.index()].addresses);
        squall_scenario::topology::flow_addresses(a, b, ip_version)
    }

    /// Registers a workload flow whose packets are counted by index
    /// only ([`Ctx::send_tcp`](crate::agent::Ctx::send_tcp)): a TCP flow
    /// with ephemeral client ports to a shared server port, whose key
    /// (client port 0 until it connects) other flows share.
    pub fn add_flow_unindexed(&mut self, metrics: FlowMetrics) {
        self.flows.push(metrics);
    }

    /// Registers a workload flow; packets carrying `metrics.key()` count
    /// for it. Returns false if another flow has that key.
    pub fn add_flow(&mut self, metrics: FlowMetrics) -> bool {
        let index = self.flows.len() as u32;
        if self.flow_index.insert(metrics.key(), index).is_some() {
            return false;
        }
        self.flows.push(metrics);
        true
    }

    /// Places a new agent on `host`.
    pub fn add_agent(&mut self, host: HostId) -> AgentId {
        self.agent_hosts.push(host);
        self.timers.push(Vec::new());
        AgentId(self.agent_hosts.len() as u32 - 1)
    }

    pub fn agent_host(&self, agent: AgentId) -> HostId {
        self.agent_hosts[agent.index()]
    }

    pub fn bind(&mut self, host: HostId, protocol: Protocol, port: u16, agent: AgentId) -> Result<(), PortInUse> {
        self.hosts[host.index()].bind(protocol, port, agent)
    }

    /// An ephemeral port of `host` for a new TCP connection of `agent`
    /// (of workload flow `flow`), bound to the agent (crate::ports);
    /// `None` if the host has none free, with the run's failure set.
    pub fn connect_port(&mut self, now: Instant, host: HostId, agent: AgentId, flow: &str) -> Option<u16> {
        let h = &mut self.hosts[host.index()];
        match h.connect_port(agent) {
            Ok(port) => Some(port),
            Err(e) => {
                self.failure.get_or_insert(SimError::PortsExhausted {
                    host: h.name.clone(),
                    range: h.ports.range(),
                    flow: flow.to_string(),
                    at: now,
                    held: e.held,
                    other: e.other,
                });
                None
            }
        }
    }

    /// `port`, from [`Self::connect_port`], is free again: its connection
    /// closed (after TIME-WAIT).
    pub fn release_port(&mut self, host: HostId, agent: AgentId, port: u16) {
        let h = &mut self.hosts[host.index()];
        h.unbind(Protocol::Tcp, port, agent);
        h.ports.release(port);
    }

    /// The client port of workload flow `flow`'s first connection, for
    /// its key in the results (a flow that names no port gets it when it
    /// connects).
    pub fn set_client_port(&mut self, up_flow: u32, down_flow: u32, port: u16) {
        if let Some(f) = self.flows.get_mut(up_flow as usize) {
            f.set_src_port(port);
        }
        if let Some(f) = self.flows.get_mut(down_flow as usize) {
            f.set_dst_port(port);
        }
    }

    pub fn intercept(&mut self, host: HostId, protocol: Protocol, port: u16, agent: AgentId) -> Result<(), PortInUse> {
        self.hosts[host.index()].intercept(protocol, port, agent)
    }

    // --- timers ---

    pub fn set_timer(&mut self, agent: AgentId, token: TimerToken, at: Instant) {
        let seq = self.scheduler.schedule(at, Wake::Timer(agent, token));
        let armed = &mut self.timers[agent.index()];
        match armed.iter_mut().find(|(t, _)| *t == token) {
            Some(slot) => slot.1 = seq,
            None => armed.push((token, seq)),
        }
    }

    pub fn cancel_timer(&mut self, agent: AgentId, token: TimerToken) {
        self.timers[agent.index()].retain(|(t, _)| *t != token);
    }

    /// Whether the request `seq` for `token` is the armed one; if so the
    /// timer is disarmed and fires.
    pub fn take_timer(&mut self, agent: AgentId, token: TimerToken, seq: u64) -> bool {
        let armed = &mut self.timers[agent.index()];
        match armed.iter().position(|&(t, s)| t == token && s == seq) {
            Some(i) => {
                armed.swap_remove(i);
                true
            }
            None => false,
        }
    }

    // --- packets ---

    /// The packet left the network at `now` (its destination, or an
    /// intercepting agent); returns its TCP header.
    #[inline]
    fn leave(&mut self, now: Instant, packet: &Packet) -> Option<Segment> {
        let Some(entry) = self.ledger.resolve(packet.id) else {
            self.violate(format!("packet {} of {} delivered but not inside the network", packet.id.0, packet.flow));
            return None;
        };
        if let Some(f) = self.flows.get_mut(entry.flow as usize) {
            f.on_delivery(now, entry.sent, packet.size, packet.corrupted);
        }
        if let Some(r) = self.records.get_mut(entry.record as usize) {
            r.delivered = Some(now);
        }
        entry.tcp
    }

    #[inline]
    fn capture(&mut self, now: Instant, host: HostIndex, direction: CaptureDirection, packet: &Packet) {
        if !self.options.record_captures {
            return;
        }
        let tcp = self.ledger.get(packet.id).and_then(|e| e.tcp);
        match &mut self.recording {
            Records::Keep { captures, headers, .. } => {
                if let Some(c) = captures.get_mut(host) {
                    c.push((now, direction, packet.clone()));
                    headers[host].push(tcp);
                }
            }
            Records::Stream(r) => r.capture(host, now, direction, packet, tcp.as_ref()),
        }
    }

    /// Whether the request `seq` is path `p`'s pending wakeup; if so it is
    /// consumed and the engine polls the path.
    pub fn take_wakeup(&mut self, p: PathId, seq: u64) -> bool {
        let wake = &mut self.wakes[p.index()];
        if wake.scheduled.is_some_and(|(_, s)| s == seq) {
            wake.scheduled = None;
            true
        } else {
            false
        }
    }

    /// Enters the copies `path`'s stages made (`duplicate`) in the
    /// ledger, before any of them is delivered or dropped.
    #[inline]
    fn take_copies(&mut self, path: &mut Path) {
        let mut copies = std::mem::take(&mut self.copies);
        path.take_copies(&mut copies);
        for id in copies.drain(..) {
            if !self.ledger.copy(id) {
                self.violate(format!("packet {} copied but not inside the network", id.0));
                continue;
            }
            let flow = self.ledger.get(id).map_or(ledger::NONE, |e| e.flow);
            if let Some(f) = self.flows.get_mut(flow as usize) {
                f.copies += 1;
            }
        }
        self.copies = copies;
    }

    /// After any call on path `p` (`path`): drain its events now and
    /// then, and make sure a wakeup is requested for its `next_wakeup()`.
    #[inline]
    pub fn after_call(&mut self, now: Instant, p: PathId, path: &mut Path) {
        let wake = &mut self.wakes[p.index()];
        wake.calls_since_drain += 1;
        if wake.calls_since_drain >= DRAIN_BATCH {
            self.drain(p, path);
        }
        let Some(at) = path.next_wakeup() else { return };
        let at = at.max(now);
        if self.wakes[p.index()].scheduled.is_none_or(|(t, _)| at < t) {
            let seq = self.scheduler.schedule(at, Wake::Path(p));
            self.wakes[p.index()].scheduled = Some((at, seq));
        }
    }

    /// Takes path `p`'s events: drops are charged to their packet's flow,
    /// and the events are kept if the run records them.
    pub fn drain(&mut self, p: PathId, path: &mut Path) {
        self.take_copies(path);
        self.wakes[p.index()].calls_since_drain = 0;
        let mut events = std::mem::take(&mut self.drained);
        path.drain_events_into(&mut events);
        for e in &events {
            let (EventKind::Drop(reason), Some(id)) = (e.kind, e.packet) else { continue };
            let Some(entry) = self.ledger.resolve(id) else {
                self.violate(format!("packet {} dropped ({reason}) but not inside the network", id.0));
                continue;
            };
            if let Some(f) = self.flows.get_mut(entry.flow as usize) {
                f.on_drop(reason);
            }
            if let Some(r) = self.records.get_mut(entry.record as usize) {
                r.dropped = Some(reason);
            }
        }
        if self.options.record_events {
            if let Some(e) = events.iter().find(|e| e.time < self.settled) {
                // The events before `settled` are out already: the model
                // reported one late, and the log would be out of order.
                self.violate(format!(
                    "a {} event at {} s drained after {} s was settled",
                    e.kind.name(),
                    e.time,
                    self.settled
                ));
            }
            self.pending.append(&mut events);
        }
        events.clear();
        self.drained = events;
        if self.record_classes {
            path.drain_class_samples_into(&mut self.class_samples);
            if let Records::Stream(r) = &mut self.recording
                && !self.class_samples.is_empty()
            {
                r.class_samples(&self.class_samples);
            }
            self.class_samples.clear();
        }
    }

    pub fn drain_all(&mut self, paths: &mut [FabricPath]) {
        for (p, slot) in paths.iter_mut().enumerate() {
            self.drain(PathId(p as u32), &mut slot.path);
        }
    }

    /// A streamed run hands `trace`'s samples so far to its recorder.
    pub fn tcp_samples(&mut self, trace: &mut crate::TcpTrace) {
        if let Records::Stream(r) = &mut self.recording {
            r.tcp_samples(trace);
            trace.handed += trace.samples.len() as u64;
            trace.samples.clear();
        }
    }

    /// Hands on the events before `now`, in time order, once enough wait
    /// (or all of them, `now` = `None`, at the end of the run). Every path
    /// is drained first: each has been called for everything due before
    /// `now` (the scheduler wakes it at its `next_wakeup`), so no event
    /// before `now` can come later. Equal times keep the order drained,
    /// as one stable sort of every event at the end would.
    pub fn settle(&mut self, now: Option<Instant>, paths: &mut [FabricPath]) {
        const SETTLE_AT: usize = 1 << 16;
        if !self.options.record_events || (now.is_some() && self.pending.len() < SETTLE_AT) {
            return;
        }
        self.drain_all(paths);
        self.pending.sort_by_key(|e| e.time); // stable: equal times keep drain order
        let ready = match now {
            Some(now) => self.pending.partition_point(|e| e.time < now),
            None => self.pending.len(),
        };
        if let Some(now) = now {
            self.settled = self.settled.max(now);
        }
        match &mut self.recording {
            Records::Keep { events, .. } => events.extend(self.pending.drain(..ready)),
            Records::Stream(r) => {
                r.events(&self.pending[..ready]);
                self.pending.drain(..ready);
            }
        }
    }

    /// Notes that a state was entered (for the event log).
    pub fn record_state(&mut self, at: Instant, name: &str) {
        if at < self.settled {
            self.violate(format!("state `{name}` entered at {at} s, after {} s was settled", self.settled));
        }
        if self.options.record_events {
            self.pending.push(Event {
                time: at,
                stage: Arc::from(name),
                // A state applies to both directions; the field is unused.
                direction: Direction::Downlink,
                kind: EventKind::StateChange,
                packet: None,
                flow: None,
                size: 0,
            });
        }
    }

    fn violate(&mut self, message: String) {
        self.violation.get_or_insert(message);
    }
}

/// The simulator's part in each step of a packet through the fabric.
impl Hooks for Books {
    /// Counts the hop for the packet's flow.
    #[inline]
    fn entering(&mut self, _now: Instant, id: PathId, packet: &Packet) {
        if !self.flows.is_empty() {
            let flow = self.ledger.get(packet.id).map_or(ledger::NONE, |e| e.flow);
            if let Some(f) = self.flows.get_mut(flow as usize) {
                f.on_hop(id.0, true);
            }
        }
    }

    #[inline]
    fn entered(&mut self, now: Instant, id: PathId, path: &mut Path) {
        self.after_call(now, id, path);
    }

    /// The path's copies go into the ledger before the packet goes on.
    #[inline]
    fn left(&mut self, _now: Instant, id: PathId, _role: PathRole, path: &mut Path, packet: &Packet) {
        self.take_copies(path);
        let flow = self.ledger.get(packet.id).map_or(ledger::NONE, |e| e.flow);
        if let Some(f) = self.flows.get_mut(flow as usize) {
            f.on_hop(id.0, false);
        }
    }

    /// A host's capture shows every packet that reaches it from a link.
    #[inline]
    fn reached(&mut self, now: Instant, host: HostIndex, packet: &Packet, _local: bool, _delayed: bool) {
        self.capture(now, host, CaptureDirection::Received, packet);
    }

    /// ... and every packet it puts onto a link.
    #[inline]
    fn departs(&mut self, now: Instant, host: HostIndex, packet: &Packet, _origin: bool) {
        self.capture(now, host, CaptureDirection::Sent, packet);
    }

    #[inline]
    fn claims(&mut self, host: HostIndex, packet: &Packet) -> bool {
        self.hosts[host].interceptor(&packet.flow).is_some()
    }

    fn no_route(&mut self, _now: Instant, host: HostIndex, packet: Packet) {
        self.violate(format!(
            "packet {} of {} reached host {} which has no route onward",
            packet.id.0, packet.flow, self.hosts[host].name
        ));
    }

    fn entering_state(&mut self, at: Instant, state: &State, _paths: &mut [FabricPath]) {
        self.record_state(at, &state.name);
    }

    /// Events of each state come after it in the log.
    fn entered_state(&mut self, _at: Instant, _state: &State, paths: &mut [FabricPath]) {
        if self.options.record_events {
            self.drain_all(paths);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timer semantics a TCP agent relies on: re-arming a token
    /// replaces its deadline, cancelling removes it, tokens are independent.
    #[test]
    fn rearmed_and_cancelled_timers_do_not_fire() {
        let text = "name = \"t\"\nduration = \"1 s\"\nlinks = []\n[[hosts]]\nname = \"h\"\naddress = \"127.0.0.1\"\n";
        let scenario = squall_scenario::parse("t.toml", text, std::path::Path::new(".")).unwrap();
        let topology = squall_scenario::Topology::new(&scenario).unwrap();
        let fabric =
            squall_scenario::fabric::build(&scenario, &topology, 1, squall_scenario::fabric::Engine::Simulator)
                .unwrap();
        let mut net = Network::new(
            vec![Host::new(
                "h".into(),
                squall_link::Addresses::v4(std::net::Ipv4Addr::LOCALHOST),
                squall_scenario::EphemeralPorts::LINUX,
            )],
            fabric,
            RunOptions::default(),
            None,
        )
        .books;
        let a = net.add_agent(HostId(0));
        let (rto, ack) = (TimerToken(0), TimerToken(1));
        net.set_timer(a, rto, Instant::from_millis(10));
        net.set_timer(a, ack, Instant::from_millis(20));
        net.set_timer(a, rto, Instant::from_millis(30)); // restart the RTO
        net.set_timer(a, TimerToken(2), Instant::from_millis(5));
        net.cancel_timer(a, TimerToken(2));
        let mut fired = vec![];
        while let Some(r) = net.scheduler.pop_until(Instant::FAR_FUTURE) {
            let Wake::Timer(agent, token) = r.wake else { panic!("only timers were set") };
            if net.take_timer(agent, token, r.seq) {
                fired.push((r.at.as_nanos() / 1_000_000, token.0));
            }
        }
        assert_eq!(fired, vec![(20, 1), (30, 0)]);
    }
}
