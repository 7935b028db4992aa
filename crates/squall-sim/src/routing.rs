//! Routing: every host's next hop towards every other host, by
//! breadth-first search over the paths (fewest hops; between equal routes,
//! the link listed first in the scenario wins).

use std::collections::VecDeque;

use crate::host::HostId;
use crate::network::PathId;

#[derive(Debug)]
pub(crate) struct Routes {
    hosts: usize,
    /// `next[from * hosts + to]`: the first path from `from` towards `to`.
    next: Vec<Option<PathId>>,
}

impl Routes {
    /// `paths` yields each path's (sending host, receiving host), in
    /// `PathId` order.
    pub fn new(hosts: usize, paths: impl Iterator<Item = (HostId, HostId)>) -> Self {
        // Paths into each host, to search backwards from each destination.
        let mut into: Vec<Vec<(PathId, HostId)>> = vec![Vec::new(); hosts];
        for (i, (from, to)) in paths.enumerate() {
            into[to.index()].push((PathId(i as u32), from));
        }
        let mut next = vec![None; hosts * hosts];
        let mut reached = vec![false; hosts];
        let mut queue = VecDeque::new();
        for dst in 0..hosts {
            reached.iter_mut().for_each(|r| *r = false);
            reached[dst] = true;
            queue.push_back(dst);
            while let Some(v) = queue.pop_front() {
                for &(path, u) in &into[v] {
                    if !reached[u.index()] {
                        reached[u.index()] = true;
                        next[u.index() * hosts + dst] = Some(path);
                        queue.push_back(u.index());
                    }
                }
            }
        }
        Routes { hosts, next }
    }

    pub fn next_hop(&self, from: HostId, to: HostId) -> Option<PathId> {
        self.next.get(from.index() * self.hosts + to.index()).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_routes_through_the_middle_host() {
        // fixed(0) -- bs(1) -- mobile(2); link 0 = paths 0 (0->1), 1 (1->0);
        // link 1 = paths 2 (1->2), 3 (2->1).
        let h = |i| HostId(i);
        let r = Routes::new(3, [(h(0), h(1)), (h(1), h(0)), (h(1), h(2)), (h(2), h(1))].into_iter());
        assert_eq!(r.next_hop(h(0), h(2)), Some(PathId(0)));
        assert_eq!(r.next_hop(h(1), h(2)), Some(PathId(2)));
        assert_eq!(r.next_hop(h(2), h(0)), Some(PathId(3)));
        assert_eq!(r.next_hop(h(1), h(0)), Some(PathId(1)));
        assert_eq!(r.next_hop(h(0), h(0)), None, "no route to itself");
    }

    #[test]
    fn one_way_link_and_shortest_route() {
        let h = |i| HostId(i);
        // 0->1 only; 1->2, 2->0, and a direct 0->2.
        let r = Routes::new(3, [(h(0), h(1)), (h(1), h(2)), (h(2), h(0)), (h(0), h(2))].into_iter());
        assert_eq!(r.next_hop(h(0), h(2)), Some(PathId(3)), "one hop beats two");
        assert_eq!(r.next_hop(h(1), h(0)), Some(PathId(1)));
        assert_eq!(r.next_hop(h(2), h(1)), Some(PathId(2)));
    }
}
