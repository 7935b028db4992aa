//! Hosts: an address, the agents bound to its ports, and the flows it
//! intercepts. A host that receives a packet not addressed to it forwards
//! it on its next hop towards the destination (a router, a base station).

use std::net::IpAddr;

use squall_link::{Addresses, FlowKey, Protocol};

use squall_scenario::EphemeralPorts;

use crate::hash::FxHashMap;
use crate::ids::AgentId;
use crate::ports::{Exhausted, PortAllocator};

/// Another agent on the host already has this protocol and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{protocol:?} port {port} is already bound on this host")]
pub struct PortInUse {
    pub protocol: Protocol,
    pub port: u16,
}

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
    pub addresses: Addresses,
    /// Agents receiving the packets addressed to this host, by protocol and
    /// destination port: a table, since a host may hold tens of thousands
    /// (a server port and a client port per flow of a `count` entry), and
    /// every packet that reaches the host looks its port up.
    bound: FxHashMap<(Protocol, u16), AgentId>,
    /// TCP connections to a port several flows share (`server_ports =
    /// "shared"`), by (local port, remote address, remote port): the
    /// agent of each, looked up before `bound`, as Linux looks up an
    /// established socket by its 4-tuple before the listener
    /// (`__inet_lookup`, include/net/inet_hashtables.h).
    connections: FxHashMap<(u16, IpAddr, u16), AgentId>,
    /// Agents receiving passing packets by protocol and either port.
    intercepts: Vec<Binding>,
    /// The ports its TCP connections take when they name none.
    pub ports: PortAllocator,
}

impl Host {
    pub fn new(name: String, addresses: Addresses, ports: EphemeralPorts) -> Self {
        Host {
            name,
            addresses,
            bound: FxHashMap::default(),
            connections: FxHashMap::default(),
            intercepts: Vec::new(),
            ports: PortAllocator::new(ports),
        }
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

    /// Delivers the TCP connection from `remote`:`remote_port` to local
    /// `port` to `agent`, whoever is bound to the port (a connection to a
    /// shared listening port; the client registers it as it connects).
    pub fn accept(&mut self, port: u16, remote: IpAddr, remote_port: u16, agent: AgentId) {
        self.connections.insert((port, remote, remote_port), agent);
    }

    /// Forgets the connection [`Self::accept`] registered, if `agent`
    /// still has it.
    pub fn forget(&mut self, port: u16, remote: IpAddr, remote_port: u16, agent: AgentId) {
        let key = (port, remote, remote_port);
        if self.connections.get(&key) == Some(&agent) {
            self.connections.remove(&key);
        }
    }

    /// The agent that receives `flow`'s packets addressed to this host:
    /// its connection's, else the one bound to its destination port.
    #[inline]
    pub fn receiver(&self, flow: &FlowKey) -> Option<AgentId> {
        if flow.protocol == Protocol::Tcp
            && !self.connections.is_empty()
            && let Some(&agent) = self.connections.get(&(flow.dst_port, flow.src, flow.src_port))
        {
            return Some(agent);
        }
        self.bound_agent(flow.protocol, flow.dst_port)
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
    use std::net::Ipv4Addr;

    use super::*;

    fn host(low: u16, high: u16) -> Host {
        Host::new("h".into(), Addresses::v4(Ipv4Addr::new(10, 0, 0, 1)), EphemeralPorts { low, high })
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
    fn a_connection_goes_to_its_agent_before_the_port_s() {
        let mut h = host(100, 102);
        let (listener, one, two) = (AgentId(0), AgentId(1), AgentId(2));
        let c = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9));
        let flow = |src_port: u16, dst_port: u16| FlowKey {
            protocol: Protocol::Tcp,
            src: c,
            dst: h_addr(),
            src_port,
            dst_port,
        };
        h.bind(Protocol::Tcp, 5000, listener).unwrap();
        h.accept(5000, c, 40000, one);
        h.accept(5000, c, 40001, two);
        assert_eq!(h.receiver(&flow(40000, 5000)), Some(one));
        assert_eq!(h.receiver(&flow(40001, 5000)), Some(two));
        // Another client port, or another local port: the bound agent.
        assert_eq!(h.receiver(&flow(40002, 5000)), Some(listener));
        assert_eq!(h.receiver(&flow(40000, 5001)), None);
        // UDP is never looked up by connection.
        assert_eq!(h.receiver(&FlowKey { protocol: Protocol::Udp, ..flow(40000, 5000) }), None);
        // Only the agent that has it forgets a connection.
        h.forget(5000, c, 40000, two);
        assert_eq!(h.receiver(&flow(40000, 5000)), Some(one));
        h.forget(5000, c, 40000, one);
        assert_eq!(h.receiver(&flow(40000, 5000)), Some(listener));
    }

    fn h_addr() -> IpAddr {
        Ipv4Addr::new(10, 0, 0, 1).into()
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
