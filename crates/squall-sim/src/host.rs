//! Hosts: an address, the agents bound to its ports, and the flows it
//! intercepts. A host that receives a packet not addressed to it forwards
//! it on its next hop towards the destination (a router, a base station).

use std::net::Ipv4Addr;

use squall_link::{FlowKey, Protocol};

use squall_scenario::EphemeralPorts;

use crate::agent::{AgentId, PortInUse};
use crate::ports::{Exhausted, PortAllocator};

/// Index of a host in the scenario's `hosts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub(crate) u32);

impl HostId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Copy, Debug)]
struct Binding {
    protocol: Protocol,
    port: u16,
    agent: AgentId,
}

#[derive(Debug)]
pub(crate) struct Host {
    pub name: String,
    pub address: Ipv4Addr,
    /// Agents receiving the packets addressed to this host, by protocol and
    /// destination port. Few per host: a linear search beats hashing.
    bound: Vec<Binding>,
    /// Agents receiving passing packets by protocol and either port.
    intercepts: Vec<Binding>,
    /// The path of its processing delay for what it receives, if it has one.
    pub input: Option<crate::network::PathId>,
    /// The path of its processing delay for what it sends and forwards.
    pub output: Option<crate::network::PathId>,
    /// The ports its TCP connections take when they name none.
    pub ports: PortAllocator,
}

impl Host {
    pub fn new(name: String, address: Ipv4Addr, ports: EphemeralPorts) -> Self {
        Host {
            name,
            address,
            bound: Vec::new(),
            intercepts: Vec::new(),
            input: None,
            output: None,
            ports: PortAllocator::new(ports),
        }
    }

    pub fn bind(&mut self, protocol: Protocol, port: u16, agent: AgentId) -> Result<(), PortInUse> {
        if self.bound_agent(protocol, port).is_some() {
            return Err(PortInUse { protocol, port });
        }
        self.bound.push(Binding { protocol, port, agent });
        Ok(())
    }

    /// An ephemeral TCP port for a new connection of `agent`, bound to it:
    /// the allocator's next port that no agent has bound.
    pub fn connect_port(&mut self, agent: AgentId) -> Result<u16, Exhausted> {
        let bound = &self.bound;
        let port = self.ports.allocate(|p| bound.iter().any(|b| b.protocol == Protocol::Tcp && b.port == p))?;
        self.bound.push(Binding { protocol: Protocol::Tcp, port, agent });
        Ok(port)
    }

    /// Stops delivering `protocol` and `port` to `agent` (nothing happens
    /// if another agent has it).
    pub fn unbind(&mut self, protocol: Protocol, port: u16, agent: AgentId) {
        self.bound.retain(|b| !(b.protocol == protocol && b.port == port && b.agent == agent));
    }

    pub fn intercept(&mut self, protocol: Protocol, port: u16, agent: AgentId) -> Result<(), PortInUse> {
        if self.intercepts.iter().any(|b| b.protocol == protocol && b.port == port) {
            return Err(PortInUse { protocol, port });
        }
        self.intercepts.push(Binding { protocol, port, agent });
        Ok(())
    }

    /// The agent bound to `protocol` and destination `port`.
    pub fn bound_agent(&self, protocol: Protocol, port: u16) -> Option<AgentId> {
        self.bound.iter().find(|b| b.protocol == protocol && b.port == port).map(|b| b.agent)
    }

    /// The agent intercepting a passing packet of `flow`, if any.
    #[inline]
    pub fn interceptor(&self, flow: &FlowKey) -> Option<AgentId> {
        if self.intercepts.is_empty() {
            return None;
        }
        self.intercepts
            .iter()
            .find(|b| b.protocol == flow.protocol && (b.port == flow.src_port || b.port == flow.dst_port))
            .map(|b| b.agent)
    }
}
