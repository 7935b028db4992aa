//! Which path a packet takes: the scenario's hosts and links as a graph,
//! with shortest-hop routes. A packet read from host A for host C goes
//! into the path of the first link on the route; when that path delivers
//! it at an intermediate host B, it goes straight into the next path (the
//! forwarding of seed 000 §4.2's pipeline, done inside squall).

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

use squall_link::Direction;
use squall_scenario::Scenario;

use crate::error::EmuError;

/// Index of a host in `Scenario::hosts`.
pub type HostIndex = usize;

/// One direction of one link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathEnds {
    pub link: usize,
    pub direction: Direction,
    pub from: HostIndex,
    pub to: HostIndex,
}

/// Hosts, addresses and the route table.
#[derive(Clone, Debug)]
pub struct Routing {
    pub names: Vec<String>,
    pub addresses: Vec<Ipv4Addr>,
    by_address: HashMap<Ipv4Addr, HostIndex>,
    /// Path index = link * 2 + (0 downlink, 1 uplink).
    pub paths: Vec<PathEnds>,
    /// `next[from][to]`: the path to take from `from` towards `to`.
    next: Vec<Vec<Option<usize>>>,
}

impl Routing {
    pub fn new(scenario: &Scenario) -> Result<Self, EmuError> {
        let names: Vec<String> = scenario.hosts.iter().map(|h| h.name.clone()).collect();
        let addresses: Vec<Ipv4Addr> = scenario.hosts.iter().map(|h| h.address).collect();
        let index = |name: &str| {
            names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| EmuError::Scenario(format!("link names host `{name}`, which is not in [[hosts]]")))
        };
        let mut by_address = HashMap::new();
        for (i, a) in addresses.iter().enumerate() {
            if by_address.insert(*a, i).is_some() {
                return Err(EmuError::Scenario(format!("two hosts have address {a}")));
            }
        }
        let mut paths = Vec::new();
        for (link, l) in scenario.links.iter().enumerate() {
            let (a, b) = (index(&l.between[0])?, index(&l.between[1])?);
            paths.push(PathEnds { link, direction: Direction::Downlink, from: a, to: b });
            paths.push(PathEnds { link, direction: Direction::Uplink, from: b, to: a });
        }
        let n = names.len();
        let mut next = vec![vec![None; n]; n];
        for (from, row) in next.iter_mut().enumerate() {
            // Breadth-first from `from`; remember the first path taken.
            let mut seen = vec![false; n];
            seen[from] = true;
            let mut queue: VecDeque<(HostIndex, usize)> = VecDeque::new();
            for (p, ends) in paths.iter().enumerate().filter(|(_, e)| e.from == from) {
                if !seen[ends.to] {
                    seen[ends.to] = true;
                    row[ends.to] = Some(p);
                    queue.push_back((ends.to, p));
                }
            }
            while let Some((host, first)) = queue.pop_front() {
                for ends in paths.iter().filter(|e| e.from == host) {
                    if !seen[ends.to] {
                        seen[ends.to] = true;
                        row[ends.to] = Some(first);
                        queue.push_back((ends.to, first));
                    }
                }
            }
        }
        Ok(Routing { names, addresses, by_address, paths, next })
    }

    pub fn host_of(&self, address: Ipv4Addr) -> Option<HostIndex> {
        self.by_address.get(&address).copied()
    }

    /// The path a packet at `from` takes towards `to`.
    pub fn next_path(&self, from: HostIndex, to: HostIndex) -> Option<usize> {
        self.next.get(from)?.get(to).copied().flatten()
    }

    /// The hosts `from` can reach.
    pub fn reachable(&self, from: HostIndex) -> Vec<HostIndex> {
        (0..self.names.len()).filter(|&to| self.next_path(from, to).is_some()).collect()
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
        assert_eq!(r.host_of(Ipv4Addr::new(10, 0, 1, 1)), Some(2));
        assert_eq!((r.fixed(), r.mobile()), (0, 1));
        assert_eq!(r.reachable(0), vec![1, 2]);
    }
}
