//! Hosts: an address, the agents bound to its ports, and the flows it
//! intercepts. A host that receives a packet not addressed to it forwards
//! it on its next hop towards the destination (a router, a base station).

use std::net::Ipv4Addr;

use squall_link::{FlowKey, Protocol};

use squall_scenario::EphemeralPorts;

use crate::agent::{AgentId, PortInUse};
use crate::hash::FxHashMap;
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
    /// destination port: a table, since a host may hold tens of thousands
    /// (a server port and a client port per flow of a `count` entry), and
    /// every packet that reaches the host looks its port up.
    bound: FxHashMap<(Protocol, u16), AgentId>,
    /// Agents receiving passing packets by protocol and either port.
    intercepts: Vec<Binding>,
    /// The ports its TCP connections take when they name none.
    pub ports: PortAllocator,
}

impl Host {
    pub fn new(name: String, address: Ipv4Addr, ports: EphemeralPorts) -> Self {
        Host { name, address, bound: FxHashMap::default(), intercepts: Vec::new(), ports: PortAllocator::new(ports) }
    }

    pub fn bind(&mut self, protocol: Protocol, port: u16, agent: AgentId) -> Result<(), PortInUse> {
        match self.bound.entry((protocol, port)) {
            std::collections::hash_map::Entry::Occupied(_) => Err(PortInUse { protocol, port }),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(agent);
                Ok(())
            }
        }
    }

    /// An ephemeral TCP port for a new connection of `agent`, bound to it:
    /// the allocator's next port that no agent has bound.
    pub fn connect_port(&mut self, agent: AgentId) -> Result<u16, Exhausted> {
        let bound = &self.bound;
        let port = self.ports.allocate(|p| bound.contains_key(&(Protocol::Tcp, p)))?;
        self.bound.insert((Protocol::Tcp, port), agent);
        Ok(port)
    }

    /// Stops delivering `protocol` and `port` to `agent` (nothing happens
    /// if another agent has it).
    pub fn unbind(&mut self, protocol: Protocol, port: u16, agent: AgentId) {
        if self.bound.get(&(protocol, port)) == Some(&agent) {
            self.bound.remove(&(protocol, port));
        }
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
        self.bound.get(&(protocol, port)).copied()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn host(low: u16, high: u16) -> Host {
        Host::new("h".into(), Ipv4Addr::new(10, 0, 0, 1), EphemeralPorts { low, high })
    }

    #[test]
    fn a_port_has_one_agent_and_only_it_unbinds_it() {
        let mut h = host(100, 102);
        let (a, b) = (AgentId(0), AgentId(1));
        h.bind(Protocol::Tcp, 5000, a).unwrap();
        assert_eq!(h.bind(Protocol::Tcp, 5000, b), Err(PortInUse { protocol: Protocol::Tcp, port: 5000 }));
        // Another protocol's port 5000 is another port.
        h.bind(Protocol::Udp, 5000, b).unwrap();
        h.unbind(Protocol::Tcp, 5000, b);
        assert_eq!(h.bound_agent(Protocol::Tcp, 5000), Some(a), "b does not hold it");
        h.unbind(Protocol::Tcp, 5000, a);
        assert_eq!(h.bound_agent(Protocol::Tcp, 5000), None);
        assert_eq!(h.bound_agent(Protocol::Udp, 5000), Some(b));
    }

    #[test]
    fn an_ephemeral_port_skips_the_bound_ones_and_is_bound() {
        let mut h = host(100, 102);
        let (server, client) = (AgentId(0), AgentId(1));
        h.bind(Protocol::Tcp, 100, server).unwrap();
        // A UDP port 101 does not keep TCP's 101.
        h.bind(Protocol::Udp, 101, server).unwrap();
        assert_eq!(h.connect_port(client), Ok(101));
        assert_eq!(h.bound_agent(Protocol::Tcp, 101), Some(client));
        assert_eq!(h.connect_port(client), Ok(102));
        assert_eq!(h.connect_port(client), Err(Exhausted { held: 2, other: 1 }));
    }
}
