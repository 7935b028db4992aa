//! The hosts of a run and the routes between them, as the set-up needs
//! them (names, addresses, each namespace's routes): the scenario's
//! resolved topology ([`Topology`], shared with the simulator). Which path
//! a packet takes, and its forwarding at intermediate hosts, is the
//! model's fabric's (`squall_link::Fabric`, driven by the data plane).
//!
//! With an outside host (`outside_interface`, [`crate::engine::uplink`]), every
//! address that no host of the scenario has is that host's: a packet for
//! the Internet crosses the path towards it and leaves the machine there.

use std::net::{Ipv4Addr, Ipv6Addr};

use squall_link::Addresses;

use squall_scenario::{Scenario, Topology};

use crate::error::EmuError;

/// Index of a host in `Scenario::hosts`.
pub type HostIndex = squall_scenario::HostIndex;

/// One direction of one link.
pub type PathEnds = squall_scenario::TopologyPath;

/// Hosts, addresses and the route table.
#[derive(Clone, Debug)]
pub struct Routing {
    pub names: Vec<String>,
    /// Each host's IPv4 address, if it has one (`address`; an IPv6-only
    /// host has none).
    pub addresses: Vec<Option<Ipv4Addr>>,
    /// Each host's IPv6 address, if it has one (`address6`).
    pub addresses6: Vec<Option<Ipv6Addr>>,
    /// Path index = link * 2 + (0 downlink, 1 uplink).
    pub paths: Vec<PathEnds>,
    /// The host that stands for everything beyond the scenario.
    pub outside: Option<HostIndex>,
    topology: Topology,
}

impl Routing {
    pub fn new(scenario: &Scenario) -> Result<Self, EmuError> {
        let topology = Topology::new(scenario)?;
        Ok(Routing {
            names: topology.names.clone(),
            addresses: topology.addresses.iter().map(|a| a.v4).collect(),
            addresses6: topology.addresses.iter().map(|a| a.v6).collect(),
            paths: topology.paths.clone(),
            outside: scenario.outside_host().map(|(i, _)| i),
            topology,
        })
    }

    /// Host `i`'s addresses, of both families.
    pub fn host_addresses(&self, i: HostIndex) -> Addresses {
        Addresses { v4: self.addresses[i], v6: self.addresses6[i] }
    }

    /// Host `i`'s address as a program is given it when one is wanted:
    /// its IPv4 address, else its IPv6 one.
    pub fn preferred_address(&self, i: HostIndex) -> Option<std::net::IpAddr> {
        let a = self.host_addresses(i);
        a.v4.map(std::net::IpAddr::V4).or(a.v6.map(std::net::IpAddr::V6))
    }

    /// The path a packet at `from` takes towards `to`.
    pub fn next_path(&self, from: HostIndex, to: HostIndex) -> Option<usize> {
        self.topology.next_path(from, to)
    }

    /// The hosts `from` can reach.
    pub fn reachable(&self, from: HostIndex) -> Vec<HostIndex> {
        self.topology.reachable(from)
    }

    /// The "mobile" host of shell mode: the second host of the first link.
    pub fn mobile(&self) -> HostIndex {
        self.paths.first().map_or(0, |p| p.to)
    }

    /// The "fixed" host of shell mode: the first host of the first link.
    pub fn fixed(&self) -> HostIndex {
        self.paths.first().map_or(0, |p| p.from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE_HOSTS: &str = r#"
name = "t"
duration = "1 s"
[[hosts]]
name = "server"
address = "10.0.0.1"
[[hosts]]
name = "router"
address = "10.0.0.2"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["server", "router"]
[[links.downlink]]
name = "wan-down"
[[links.uplink]]
name = "wan-up"
[[links]]
between = ["router", "mobile"]
[[links.downlink]]
name = "air-down"
[[links.uplink]]
name = "air-up"
"#;

    #[test]
    fn routes_through_an_intermediate_host() {
        let s = squall_scenario::parse("t.toml", THREE_HOSTS, std::path::Path::new(".")).unwrap();
        let r = Routing::new(&s).unwrap();
        assert_eq!(r.next_path(0, 2), Some(0)); // server -> router first
        assert_eq!(r.next_path(1, 2), Some(2)); // router -> mobile
        assert_eq!(r.next_path(2, 0), Some(3)); // mobile -> router (uplink of link 1)
        assert_eq!(r.next_path(1, 0), Some(1));
        assert_eq!((r.fixed(), r.mobile()), (0, 1));
        assert_eq!(r.reachable(0), vec![1, 2]);
    }
}
