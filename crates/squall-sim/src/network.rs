//! The network: hosts joined by paths (two per link, one each way), the
//! routes between them, and the bookkeeping of every packet inside.
//!
//! Packets move synchronously at one instant: a path's delivery arrives at
//! its far host at the delivery time, and a forwarding host pushes it onto
//! the next path at once. A packet is therefore always inside exactly one
//! path, or already out of the network (delivered or dropped).

use std::net::Ipv4Addr;
use std::sync::Arc;

use squall_link::{Direction, Event, EventKind, Instant, Packet, PacketId, Path, Protocol, Recording};

use crate::agent::{AgentId, NoRoute, PortInUse, TimerToken};
use crate::hash::FxHashMap;
use crate::host::{Host, HostId};
use crate::ledger::{self, Entry, PacketLedger};
use crate::metrics::FlowMetrics;
use crate::recorder::RunRecorder;
use crate::result::{CaptureDirection, PacketRecord};
use crate::routing::Routes;
use crate::scheduler::{Scheduler, Wake};
use crate::{RunOptions, SimError};
use squall_tcp::Segment;

/// Index of a path: links in scenario order, each downlink then uplink
/// (a direction without stages has no path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct PathId(pub u32);

impl PathId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// How many calls a path gets between drains of its events. Draining
/// allocates a fresh buffer in the model, so it is batched; a batch is
/// still small enough to stay in cache.
const DRAIN_BATCH: u32 = 256;

/// What a path stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathRole {
    /// One direction of a link.
    Link,
    /// A host's processing delay for the packets it receives.
    Input,
    /// A host's processing delay for the packets it sends and forwards.
    Output,
}

#[derive(Debug)]
pub(crate) struct PathSlot {
    pub path: Path,
    /// The host its deliveries reach (a processing path's own host).
    pub to: HostId,
    pub role: PathRole,
    /// "link 0 downlink (fixed -> mobile)", for error messages.
    pub label: String,
    /// The pending wakeup request, (time, sequence number); older requests
    /// for this path are stale and ignored.
    scheduled: Option<(Instant, u64)>,
    calls_since_drain: u32,
}

impl PathSlot {
    pub fn new(path: Path, to: HostId, label: String) -> Self {
        PathSlot { path, to, label, role: PathRole::Link, scheduled: None, calls_since_drain: 0 }
    }

    /// Host `host`'s processing delay (`role` Input or Output).
    pub fn processing(path: Path, host: HostId, role: PathRole, label: String) -> Self {
        PathSlot { role, ..PathSlot::new(path, host, label) }
    }
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

#[derive(Debug)]
pub(crate) struct Network {
    pub hosts: Vec<Host>,
    by_address: FxHashMap<Ipv4Addr, HostId>,
    pub paths: Vec<PathSlot>,
    routes: Routes,
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
    /// Copies taken from a path ([`Network::take_copies`]), reused.
    copies: Vec<squall_link::PacketId>,
}

impl Network {
    /// `recorder`: where events and captures go as the run makes them
    /// (`None`: kept for the result).
    pub fn new(
        hosts: Vec<Host>,
        paths: Vec<PathSlot>,
        routes: Routes,
        options: RunOptions,
        recorder: Option<Box<dyn RunRecorder>>,
    ) -> Self {
        let by_address = hosts.iter().enumerate().map(|(i, h)| (h.address, HostId(i as u32))).collect();
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
        let recording = if options.record_events { Recording::All } else { Recording::Drops };
        let mut paths = paths;
        for slot in &mut paths {
            slot.path.set_recording(recording);
        }
        Network {
            hosts,
            by_address,
            paths,
            routes,
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
            copies: Vec::new(),
        }
    }

    pub fn host_by_address(&self, address: Ipv4Addr) -> Option<HostId> {
        self.by_address.get(&address).copied()
    }

    pub fn host_address(&self, host: HostId) -> Ipv4Addr {
        self.hosts[host.index()].address
    }

    /// The first path from `from` towards `to`.
    pub fn next_hop(&self, from: HostId, to: HostId) -> Option<PathId> {
        self.routes.next_hop(from, to)
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

    /// The TCP connection from `client`:`client_port` to `server`:`port`
    /// goes to `agent` on the server's host (a shared listening port).
    pub fn accept(&mut self, server: Ipv4Addr, port: u16, client: Ipv4Addr, client_port: u16, agent: AgentId) {
        if let Some(h) = self.host_by_address(server) {
            self.hosts[h.index()].accept(port, client, client_port, agent);
        }
    }

    /// Undoes [`Self::accept`] (the client's port is free again).
    pub fn forget(&mut self, server: Ipv4Addr, port: u16, client: Ipv4Addr, client_port: u16, agent: AgentId) {
        if let Some(h) = self.host_by_address(server) {
            self.hosts[h.index()].forget(port, client, client_port, agent);
        }
    }

    /// Registers a workload flow whose packets are counted by index
    /// only ([`Ctx::send_tcp`](crate::agent::Ctx::send_tcp)): a TCP flow
    /// with ephemeral client ports to a shared server port, whose key
    /// (client port 0 until it connects) other flows share.
    pub fn add_flow_unindexed(&mut self, metrics: FlowMetrics) {
        self.flows.push(metrics);
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

    /// An agent on `host` sends `packet` at `now`.
    pub fn send(&mut self, now: Instant, host: HostId, packet: Packet) -> Result<PacketId, NoRoute> {
        let flow = self.flow_index.get(&packet.flow).copied().unwrap_or(ledger::NONE);
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
        let dst = self.host_by_address(packet.flow.dst).ok_or(no_route)?;
        let first = self.routes.next_hop(host, dst).ok_or(no_route)?;
        let record =
            if self.options.record_packets && flow != ledger::NONE { self.records.len() as u32 } else { ledger::NONE };
        let id = self.ledger.insert(Entry { sent: now, flow, record, tcp });
        packet.id = id;
        if let Some(f) = self.flows.get_mut(flow as usize) {
            f.on_send(now, packet.size);
        }
        if record != ledger::NONE {
            self.records.push(PacketRecord {
                id,
                flow: flow as usize,
                size: packet.size,
                sent: now,
                delivered: None,
                dropped: None,
            });
        }
        match self.hosts[host.index()].output {
            // Captured as it leaves the processing, onto the link.
            Some(output) => self.push(now, output, packet),
            None => {
                self.capture(now, host, CaptureDirection::Sent, &packet, tcp);
                self.push(now, first, packet);
            }
        }
        Ok(id)
    }

    /// Path `from` delivered `packet` at `now` to its far host. Returns the
    /// agent that takes it, if any; otherwise the packet was forwarded (or
    /// reached a host where nothing listens on its port).
    #[inline]
    pub fn arrive(&mut self, now: Instant, from: PathId, packet: Packet) -> Handover {
        self.take_copies(from);
        let host = self.paths[from.index()].to;
        let (flow, tcp) = self.ledger.get(packet.id).map_or((ledger::NONE, None), |e| (e.flow, e.tcp));
        if let Some(f) = self.flows.get_mut(flow as usize) {
            f.on_hop(from.0, false);
        }
        match self.paths[from.index()].role {
            PathRole::Link => {
                self.capture(now, host, CaptureDirection::Received, &packet, tcp);
                if let Some(input) = self.hosts[host.index()].input {
                    self.push(now, input, packet);
                    return None;
                }
            }
            PathRole::Input => {}
            PathRole::Output => {
                self.onto_link(now, host, packet, tcp);
                return None;
            }
        }
        let h = &self.hosts[host.index()];
        if packet.flow.dst == h.address {
            let agent = h.receiver(&packet.flow);
            let tcp = self.leave(now, &packet);
            return agent.map(|a| (a, packet, tcp));
        }
        if let Some(agent) = h.interceptor(&packet.flow) {
            let tcp = self.leave(now, &packet);
            return Some((agent, packet, tcp));
        }
        match self.hosts[host.index()].output {
            Some(output) => self.push(now, output, packet),
            None => self.onto_link(now, host, packet, tcp),
        }
        None
    }

    /// `packet` leaves `host` at `now` onto the link towards its
    /// destination.
    fn onto_link(&mut self, now: Instant, host: HostId, packet: Packet, tcp: Option<Segment>) {
        let next = self.host_by_address(packet.flow.dst).and_then(|dst| self.routes.next_hop(host, dst));
        match next {
            Some(next) => {
                self.capture(now, host, CaptureDirection::Sent, &packet, tcp);
                self.push(now, next, packet);
            }
            None => self.violate(format!(
                "packet {} of {} reached host {} which has no route onward",
                packet.id.0,
                packet.flow,
                self.hosts[host.index()].name
            )),
        }
    }

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
    fn capture(
        &mut self,
        now: Instant,
        host: HostId,
        direction: CaptureDirection,
        packet: &Packet,
        tcp: Option<Segment>,
    ) {
        if !self.options.record_captures {
            return;
        }
        match &mut self.recording {
            Records::Keep { captures, headers, .. } => {
                if let Some(c) = captures.get_mut(host.index()) {
                    c.push((now, direction, packet.clone()));
                    headers[host.index()].push(tcp);
                }
            }
            Records::Stream(r) => r.capture(host.index(), now, direction, packet, tcp.as_ref()),
        }
    }

    /// `packet` enters path `p` at `now`.
    #[inline]
    pub fn push(&mut self, now: Instant, p: PathId, packet: Packet) {
        if !self.flows.is_empty() {
            let flow = self.ledger.get(packet.id).map_or(ledger::NONE, |e| e.flow);
            if let Some(f) = self.flows.get_mut(flow as usize) {
                f.on_hop(p.0, true);
            }
        }
        self.paths[p.index()].path.push(now, packet);
        self.after_call(now, p);
    }

    /// Whether the request `seq` is path `p`'s pending wakeup; if so it is
    /// consumed and the engine polls the path.
    pub fn take_wakeup(&mut self, p: PathId, seq: u64) -> bool {
        let slot = &mut self.paths[p.index()];
        if slot.scheduled.is_some_and(|(_, s)| s == seq) {
            slot.scheduled = None;
            true
        } else {
            false
        }
    }

    /// Enters the copies path `p`'s stages made (`duplicate`) in the
    /// ledger, before any of them is delivered or dropped.
    #[inline]
    fn take_copies(&mut self, p: PathId) {
        let mut copies = std::mem::take(&mut self.copies);
        self.paths[p.index()].path.take_copies(&mut copies);
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

    /// After any call on path `p`: drain its events now and then, and make
    /// sure a wakeup is requested for its `next_wakeup()`.
    #[inline]
    pub fn after_call(&mut self, now: Instant, p: PathId) {
        let slot = &mut self.paths[p.index()];
        slot.calls_since_drain += 1;
        if slot.calls_since_drain >= DRAIN_BATCH {
            self.drain(p);
        }
        let slot = &mut self.paths[p.index()];
        let Some(at) = slot.path.next_wakeup() else { return };
        let at = at.max(now);
        if slot.scheduled.is_none_or(|(t, _)| at < t) {
            let seq = self.scheduler.schedule(at, Wake::Path(p));
            self.paths[p.index()].scheduled = Some((at, seq));
        }
    }

    /// Takes path `p`'s events: drops are charged to their packet's flow,
    /// and the events are kept if the run records them.
    pub fn drain(&mut self, p: PathId) {
        self.take_copies(p);
        let slot = &mut self.paths[p.index()];
        slot.calls_since_drain = 0;
        let mut events = std::mem::take(&mut self.drained);
        slot.path.drain_events_into(&mut events);
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
    pub fn settle(&mut self, now: Option<Instant>) {
        const SETTLE_AT: usize = 1 << 16;
        if !self.options.record_events || (now.is_some() && self.pending.len() < SETTLE_AT) {
            return;
        }
        self.drain_all();
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

    pub fn drain_all(&mut self) {
        for p in 0..self.paths.len() {
            self.drain(PathId(p as u32));
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
        let routes = crate::routing::Routes::new(topology, Vec::new());
        let mut net = Network::new(
            vec![Host::new("h".into(), Ipv4Addr::LOCALHOST, squall_scenario::EphemeralPorts::LINUX)],
            vec![],
            routes,
            RunOptions::default(),
            None,
        );
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
