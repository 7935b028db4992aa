//! Agents: the protocol endpoints and applications that live on hosts
//! (seed 001 §2.1's source and sink processes).
//!
//! An agent is a sans-IO state machine driven by the engine through three
//! callbacks, each with the current virtual time (docs/design.md: `now` in every
//! callback; smoltcp's `socket/tcp/congestion.rs` shape):
//!
//! - [`Agent::start`] once, at time zero, in the order agents were made;
//! - [`Agent::on_packet`] when a packet for it reaches its host;
//! - [`Agent::on_timer`] when one of its timers fires.
//!
//! Everything an agent does to the world goes through [`Ctx`]: send a
//! packet (routed from its host by destination address), arm or cancel a
//! timer, bind a port. Agents are stored in [`crate::any_agent::AnyAgent`], an enum with one
//! variant per kind, so calls are statically dispatched.
//!
//! # How TCP slots in
//!
//! Nothing in the engine knows about UDP. A TCP implementation (Tahoe,
//! Reno, NewReno, SACK, CUBIC) is one more [`crate::any_agent::AnyAgent`] variant:
//!
//! - **Dispatch.** A host hands a packet addressed to it to the agent bound
//!   to `(protocol, destination port)` ([`Ctx::bind`]; the engine binds the
//!   workload's agents when it builds the run). A TCP listener or client
//!   binds its port and demultiplexes its connections itself by 4-tuple,
//!   like a socket set.
//! - **Timers.** A timer is named by a [`TimerToken`] the agent chooses
//!   (e.g. 0 = RTO, 1 = delayed ACK, 2 = persist). Arming a token again
//!   replaces its pending deadline and [`Ctx::cancel_timer`] removes it, so
//!   restarting the RTO on every ACK is one call; the engine drops the
//!   superseded wakeups itself and never fires a cancelled timer.
//! - **Split-TCP proxy.** A forwarding host (router, base station) normally
//!   routes packets that are not addressed to it. An agent that calls
//!   [`Ctx::intercept`]`(protocol, port)` receives, instead, every passing
//!   packet of that protocol with that source or destination port: it
//!   terminates the connection and opens its own towards the destination,
//!   sending with whatever addresses it chooses (the original ones, for a
//!   transparent proxy; routing is by destination only).
//! - **Accounting.** Every packet an agent sends gets a fresh id; when it
//!   leaves the network (at its destination host, or at an intercepting
//!   agent) or is dropped, the engine counts it against the workload flow
//!   whose 5-tuple it carries.

use std::net::IpAddr;

use squall_link::{Instant, Packet, PacketId, Protocol};

use squall_tcp::Segment;

use crate::host::HostId;
pub use crate::host::PortInUse;
pub use crate::ids::{AgentId, TimerToken};
use crate::network::Network;
pub use crate::network::NoRoute;

/// A protocol endpoint or application on a host.
pub trait Agent {
    /// Called once at time zero.
    fn start(&mut self, now: Instant, ctx: &mut Ctx<'_>);
    /// A packet for this agent reached its host at `now`, with the TCP
    /// header that travelled beside it, if any.
    fn on_packet(&mut self, now: Instant, packet: Packet, tcp: Option<Segment>, ctx: &mut Ctx<'_>);
    /// The timer `token` fired at `now` (its deadline).
    fn on_timer(&mut self, now: Instant, token: TimerToken, ctx: &mut Ctx<'_>);
}

/// What an agent may do during one callback. Sends take effect at once:
/// the packet enters the first path of its route at `now`.
pub struct Ctx<'a> {
    now: Instant,
    agent: AgentId,
    host: HostId,
    net: &'a mut Network,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(now: Instant, agent: AgentId, net: &'a mut Network) -> Self {
        let host = net.books.agent_host(agent);
        Ctx { now, agent, host, net }
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// The host this agent lives on.
    pub fn host(&self) -> HostId {
        self.host
    }

    /// The address of this agent's host of `like`'s IP version.
    pub fn address_like(&self, like: IpAddr) -> Option<IpAddr> {
        self.net.books.hosts[self.host.index()].addresses.like(like)
    }

    /// Sends `packet` from this host towards `packet.flow.dst`. The engine
    /// gives it a fresh id, unique within the run (any id it carried is
    /// replaced), and returns that id.
    pub fn send(&mut self, packet: Packet) -> Result<PacketId, NoRoute> {
        self.net.send(self.now, self.host, packet)
    }

    /// Sends a TCP segment: `packet` with the header `segment` beside it,
    /// counted for the workload flow with index `flow` (whatever its
    /// addresses and ports).
    pub fn send_tcp(&mut self, packet: Packet, segment: Segment, flow: u32) -> Result<PacketId, NoRoute> {
        self.net.send_with(self.now, self.host, packet, Some(segment), flow)
    }

    /// A streamed run takes `trace`'s samples so far (they are written
    /// out; `trace` keeps their count); a run that keeps its records in
    /// memory leaves them.
    pub(crate) fn tcp_samples(&mut self, trace: &mut crate::TcpTrace) {
        self.net.books.tcp_samples(trace);
    }

    /// Arms timer `token` to fire at `at` (at `now` if `at` is earlier),
    /// replacing its pending deadline if it had one.
    pub fn set_timer(&mut self, token: TimerToken, at: Instant) {
        self.net.books.set_timer(self.agent, token, at.max(self.now));
    }

    /// Disarms timer `token`; nothing happens if it was not armed.
    pub fn cancel_timer(&mut self, token: TimerToken) {
        self.net.books.cancel_timer(self.agent, token);
    }

    /// Receives the packets addressed to this host with `protocol` and
    /// destination port `port`.
    pub fn bind(&mut self, protocol: Protocol, port: u16) -> Result<(), PortInUse> {
        self.net.books.bind(self.host, protocol, port, self.agent)
    }

    /// An ephemeral port of this host for a new TCP connection of workload
    /// flow `flow`, bound to this agent (crate::ports); `None` if the host
    /// has none free, which ends the run with that error.
    pub fn connect_port(&mut self, flow: &str) -> Option<u16> {
        self.net.books.connect_port(self.now, self.host, self.agent, flow)
    }

    /// `port`, from [`Self::connect_port`], is free again: its connection
    /// closed, after TIME-WAIT.
    pub fn release_port(&mut self, port: u16) {
        self.net.books.release_port(self.host, self.agent, port);
    }

    /// The connection from this host's `client_port` to `server`:`port`
    /// goes to `agent` on the server's host, whoever listens on the port
    /// (a port several flows share).
    pub(crate) fn accept_at(&mut self, server: IpAddr, port: u16, client_port: u16, agent: AgentId) {
        if let Some(client) = self.address_like(server) {
            self.net.accept(server, port, client, client_port, agent);
        }
    }

    /// Undoes [`Self::accept_at`].
    pub(crate) fn forget_at(&mut self, server: IpAddr, port: u16, client_port: u16, agent: AgentId) {
        if let Some(client) = self.address_like(server) {
            self.net.forget(server, port, client, client_port, agent);
        }
    }

    /// Workload flows `up_flow` and `down_flow` (the two directions of a
    /// TCP flow) have `port` as their client port in the results.
    pub(crate) fn set_client_port(&mut self, up_flow: u32, down_flow: u32, port: u16) {
        self.net.books.set_client_port(up_flow, down_flow, port);
    }

    /// Receives, instead of forwarding them, the packets passing through
    /// this host (addressed to another) with `protocol` and `port` as
    /// source or destination port: the hook of a split-connection proxy.
    pub fn intercept(&mut self, protocol: Protocol, port: u16) -> Result<(), PortInUse> {
        self.net.books.intercept(self.host, protocol, port, self.agent)
    }
}
