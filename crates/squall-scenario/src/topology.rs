//! The resolved topology: hosts, the two paths of every link, and one
//! route table, built once from a scenario and used by both engines, so a
//! packet takes the same route in `squall sim` and `squall emu`.
//!
//! Routing rule (the simulator's since the start, seed 000 §4.2's
//! pipelined stages forwarding hop by hop): a packet at host `u` for host
//! `d` takes the first path of a route with the fewest hops from `u` to
//! `d`. Routes are found breadth-first backwards from each destination,
//! over the paths in scenario order (link 0 downlink, link 0 uplink, link
//! 1 downlink, ...), so between equal routes the path met first wins; and
//! because every host's choice comes from the same tree towards `d`, the
//! hop-by-hop route is the route its first host chose. Only paths with
//! stages carry traffic: a direction without stages has no path.

use std::collections::{HashMap, VecDeque};

use rustc_hash::FxHashMap;
use std::net::IpAddr;

use squall_link::Direction;
use squall_link::fabric::{Addresses, NO_ROUTE, RouteTable};

use crate::schema::Scenario;

/// Index of a host in `Scenario::hosts`.
pub type HostIndex = usize;

/// Index of a path: `2 · link + 0` for the downlink, `+ 1` for the uplink.
pub type PathIndex = usize;

/// One direction of one link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyPath {
    pub link: usize,
    pub direction: Direction,
    pub from: HostIndex,
    pub to: HostIndex,
    /// Whether the direction has stages (carries traffic).
    pub carries: bool,
}

/// Hosts, paths and the route table of a scenario.
#[derive(Clone, Debug)]
pub struct Topology {
    pub names: Vec<String>,
    pub addresses: Vec<Addresses>,
    /// Looked up for every packet the emulator reads: FxHash, not SipHash
    /// (addresses are the scenario's own, no attacker chooses them).
    by_address: FxHashMap<IpAddr, HostIndex>,
    /// Every link's downlink and uplink, at [`PathIndex`] `2 · link + d`.
    pub paths: Vec<TopologyPath>,
    /// The path each host sends on towards each other host: its default
    /// path and its exceptions, so the table grows with the hosts, not
    /// with their pairs (a table of every pair held 16 MB for a dumbbell
    /// of 1 000 host pairs as `u32`, 64 MB as options).
    next: RouteTable,
}

/// The addresses a flow between hosts with `from` and `to` uses (see
/// [`Topology::flow_addresses`]).
pub fn flow_addresses(from: Addresses, to: Addresses, ip_version: Option<u8>) -> Option<(IpAddr, IpAddr)> {
    let v6 = || Some((IpAddr::V6(from.v6?), IpAddr::V6(to.v6?)));
    let v4 = || Some((IpAddr::V4(from.v4?), IpAddr::V4(to.v4?)));
    match ip_version {
        Some(4) => v4(),
        Some(6) => v6(),
        Some(_) => None,
        None => v6().or_else(v4),
    }
}

/// Why a scenario has no topology (a checked scenario always has one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("links[{link}] names host `{name}`, which is not in [[hosts]]")]
    UnknownHost { link: usize, name: String },
    #[error("two hosts are named `{0}`")]
    DuplicateName(String),
    #[error("hosts `{0}` and `{1}` have the same address {2}")]
    DuplicateAddress(String, String, IpAddr),
    #[error("links[{link}] joins host `{name}` to itself")]
    SelfLink { link: usize, name: String },
}

impl Topology {
    pub fn new(scenario: &Scenario) -> Result<Self, TopologyError> {
        let names: Vec<String> = scenario.hosts.iter().map(|h| h.name.clone()).collect();
        let addresses: Vec<Addresses> = scenario.hosts.iter().map(|h| h.addresses()).collect();
        let mut by_name = HashMap::new();
        let mut by_address = FxHashMap::default();
        for (i, h) in scenario.hosts.iter().enumerate() {
            if by_name.insert(h.name.as_str(), i).is_some() {
                return Err(TopologyError::DuplicateName(h.name.clone()));
            }
            for a in h.addresses().iter() {
                if let Some(j) = by_address.insert(a, i) {
                    return Err(TopologyError::DuplicateAddress(names[j].clone(), h.name.clone(), a));
                }
            }
        }
        let mut paths = Vec::with_capacity(2 * scenario.links.len());
        for (link, l) in scenario.links.iter().enumerate() {
            let index = |name: &String| {
                by_name.get(name.as_str()).copied().ok_or(TopologyError::UnknownHost { link, name: name.clone() })
            };
            let (a, b) = (index(&l.between[0])?, index(&l.between[1])?);
            if a == b {
                return Err(TopologyError::SelfLink { link, name: names[a].clone() });
            }
            let down =
                TopologyPath { link, direction: Direction::Downlink, from: a, to: b, carries: !l.downlink.is_empty() };
            let up = TopologyPath { link, direction: Direction::Uplink, from: b, to: a, carries: !l.uplink.is_empty() };
            paths.extend([down, up]);
        }
        let next = route_table(names.len(), &paths);
        Ok(Topology { names, addresses, by_address, paths, next })
    }

    pub fn hosts(&self) -> usize {
        self.names.len()
    }

    pub fn host_index(&self, name: &str) -> Option<HostIndex> {
        self.names.iter().position(|n| n == name)
    }

    pub fn host_of(&self, address: IpAddr) -> Option<HostIndex> {
        self.by_address.get(&address).copied()
    }

    /// The addresses a flow from host `from` to host `to` uses:
    /// `ip_version`'s (4 or 6) when given, else IPv6 when both hosts have
    /// one (a happy-eyeballs client's preference, RFC 8305 §4), else
    /// IPv4. `None`: the two hosts have no address of that family in
    /// common.
    pub fn flow_addresses(&self, from: HostIndex, to: HostIndex, ip_version: Option<u8>) -> Option<(IpAddr, IpAddr)> {
        flow_addresses(self.addresses[from], self.addresses[to], ip_version)
    }

    /// The path a packet at `from` takes towards `to` (`None` for no
    /// route, and for `from == to`).
    pub fn next_path(&self, from: HostIndex, to: HostIndex) -> Option<PathIndex> {
        self.next.get(from, to).map(|p| p as PathIndex)
    }

    /// The route table, by [`PathIndex`].
    pub fn route_table(&self) -> &RouteTable {
        &self.next
    }

    /// Every path from `from` to `to`, hop by hop.
    pub fn route(&self, from: HostIndex, to: HostIndex) -> Option<Vec<PathIndex>> {
        let mut route = Vec::new();
        let mut at = from;
        while at != to {
            let p = self.next_path(at, to)?;
            route.push(p);
            at = self.paths[p].to;
        }
        (!route.is_empty()).then_some(route)
    }

    /// The hosts `from` can send to.
    pub fn reachable(&self, from: HostIndex) -> Vec<HostIndex> {
        (0..self.hosts()).filter(|&to| self.next_path(from, to).is_some()).collect()
    }
}

/// Breadth-first from each destination over the paths into each host.
fn route_table(hosts: usize, paths: &[TopologyPath]) -> RouteTable {
    let mut into: Vec<Vec<(PathIndex, HostIndex)>> = vec![Vec::new(); hosts];
    for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.carries) {
        into[p.to].push((i, p.from));
    }
    let mut reached = vec![false; hosts];
    let mut queue = VecDeque::new();
    RouteTable::build(hosts, |dst, next| {
        reached.iter_mut().for_each(|r| *r = false);
        reached[dst] = true;
        queue.push_back(dst);
        while let Some(v) = queue.pop_front() {
            for &(path, u) in &into[v] {
                if !reached[u] {
                    reached[u] = true;
                    next[u] = u32::try_from(path).unwrap_or(NO_ROUTE);
                    queue.push_back(u);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hosts A, B, C, D; links (A,C), (B,D), (A,B), (C,D) in that order:
    /// A reaches D in two hops through B or through C.
    pub(crate) const FOUR_LINKS: &str = r#"
name = "four-links"
duration = "1 s"
[[hosts]]
name = "A"
address = "10.0.0.1"
[[hosts]]
name = "B"
address = "10.0.0.2"
[[hosts]]
name = "C"
address = "10.0.0.3"
[[hosts]]
name = "D"
address = "10.0.0.4"
[[links]]
between = ["A", "C"]
downlink = [{ name = "ac" }]
uplink = [{ name = "ca" }]
[[links]]
between = ["B", "D"]
downlink = [{ name = "bd" }]
uplink = [{ name = "db" }]
[[links]]
between = ["A", "B"]
downlink = [{ name = "ab" }]
uplink = [{ name = "ba" }]
[[links]]
between = ["C", "D"]
downlink = [{ name = "cd" }]
uplink = [{ name = "dc" }]
"#;

    fn topology(text: &str) -> Topology {
        Topology::new(&crate::parse("t.toml", text, std::path::Path::new(".")).unwrap()).unwrap()
    }

    #[test]
    fn the_four_link_example_has_one_route_each_way() {
        // Paths: 0 A->C, 1 C->A, 2 B->D, 3 D->B, 4 A->B, 5 B->A, 6 C->D,
        // 7 D->C. Backwards from D, the paths into D are met in order 2
        // (from B) then 6 (from C), so B joins the tree first and A joins
        // through B (path 4). Backwards from A: 1 (from C) before 5 (from
        // B), so D joins through C (path 7).
        let t = topology(FOUR_LINKS);
        let (a, b, c, d) = (0, 1, 2, 3);
        assert_eq!(t.route(a, d), Some(vec![4, 2]), "A -> B -> D");
        assert_eq!(t.route(d, a), Some(vec![7, 1]), "D -> C -> A");
        // Hop by hop is the first host's choice.
        assert_eq!(t.next_path(b, d), Some(2));
        assert_eq!(t.next_path(c, a), Some(1));
        assert_eq!(t.route(a, a), None);
        assert_eq!(t.reachable(a), vec![b, c, d]);
    }

    #[test]
    fn a_dumbbells_route_table_grows_with_its_hosts() {
        // 100 pairs: left-k -- r1 -- r2 -- right-k, 202 hosts. Each leaf
        // has one path out (its default, no exception); each router sends
        // towards its 100 leaves on 100 paths and towards the other 101
        // hosts on the bottleneck: a full row of 202 entries. A table of
        // every pair would hold 202² = 40 804 entries (163 KB as u32).
        let t = topology(
            r#"
name = "dumbbell"
duration = "1 s"
[[hosts]]
name = "r1"
address = "10.0.0.1"
[[hosts]]
name = "r2"
address = "10.0.0.2"
[[host_groups]]
name = "left"
count = 100
prefix = "10.1.0.0/16"
[[host_groups]]
name = "right"
count = 100
prefix = "10.2.0.0/16"
[[links]]
between = ["left", "r1"]
downlink = [{ name = "l-in" }]
uplink = [{ name = "l-out" }]
[[links]]
between = ["r1", "r2"]
downlink = [{ name = "down" }]
uplink = [{ name = "up" }]
[[links]]
between = ["r2", "right"]
downlink = [{ name = "r-in" }]
uplink = [{ name = "r-out" }]
"#,
        );
        assert_eq!(t.hosts(), 202);
        let bytes = t.route_table().heap_bytes();
        assert!(bytes <= 202 * 32 + 2 * 202 * 4, "{bytes} bytes");
        // And it routes: left-0 -> r1 -> r2 -> right-0, and back.
        let (l0, r0) = (t.host_index("left-0").unwrap(), t.host_index("right-0").unwrap());
        let there: Vec<_> = t.route(l0, r0).unwrap().iter().map(|&p| (t.paths[p].from, t.paths[p].to)).collect();
        assert_eq!(there, [(l0, 0), (0, 1), (1, r0)]);
        assert_eq!(t.route(r0, l0).unwrap().len(), 3);
        assert_eq!(t.reachable(l0).len(), 201);
    }

    #[test]
    fn a_direction_without_stages_carries_nothing() {
        // A checked scenario has stages both ways; one built in code may not.
        let mut s = crate::parse("t.toml", FOUR_LINKS, std::path::Path::new(".")).unwrap();
        s.links[1].downlink.clear();
        let t = Topology::new(&s).unwrap();
        assert!(!t.paths[2].carries);
        // B -> D is gone: A reaches D through C, and B goes back to A.
        assert_eq!(t.route(0, 3), Some(vec![0, 6]), "A -> C -> D");
        assert_eq!(t.next_path(1, 3), Some(5), "B -> A first");
    }

    #[test]
    fn routes_are_shortest_and_consistent_on_random_graphs() {
        // A small deterministic generator: 200 random graphs of 2-7 hosts.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rand = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let hosts = 2 + rand(6) as usize;
            let links = rand(10) as usize;
            let mut paths = Vec::new();
            for link in 0..links {
                let a = rand(hosts as u64) as usize;
                let b = (a + 1 + rand(hosts as u64 - 1) as usize) % hosts;
                paths.push(TopologyPath { link, direction: Direction::Downlink, from: a, to: b, carries: rand(4) > 0 });
                paths.push(TopologyPath { link, direction: Direction::Uplink, from: b, to: a, carries: rand(4) > 0 });
            }
            let next = route_table(hosts, &paths);
            // Hop distances by plain BFS from every source.
            for from in 0..hosts {
                let mut dist = vec![usize::MAX; hosts];
                dist[from] = 0;
                let mut q = VecDeque::from([from]);
                while let Some(u) = q.pop_front() {
                    for p in paths.iter().filter(|p| p.carries && p.from == u) {
                        if dist[p.to] == usize::MAX {
                            dist[p.to] = dist[u] + 1;
                            q.push_back(p.to);
                        }
                    }
                }
                for (to, &dist_to) in dist.iter().enumerate() {
                    let mut at = from;
                    let mut hops = 0;
                    while at != to {
                        let Some(p) = next.get(at, to) else { break };
                        let p = p as usize;
                        assert!(paths[p].carries && paths[p].from == at);
                        at = paths[p].to;
                        hops += 1;
                        assert!(hops <= hosts, "a loop");
                    }
                    if from == to {
                        assert_eq!(next.get(from, to), None);
                    } else if dist_to == usize::MAX {
                        assert_eq!(next.get(from, to), None, "a route where none exists");
                    } else {
                        assert_eq!((at, hops), (to, dist_to), "not a shortest route");
                    }
                }
            }
        }
    }
}
