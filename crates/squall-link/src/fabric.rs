//! The network both engines drive: hosts joined by paths (one per link
//! direction that has stages), the route table, forwarding at
//! intermediate hosts, the hosts' processing delays and the state
//! schedule. A packet read from host A for host C enters the path of the
//! first link on the route; when that path delivers it at an intermediate
//! host B, it goes straight on into the next path (the forwarding of seed
//! 000 §4.2's pipeline, done inside the model).
//!
//! Sans-IO like a [`Path`]: time comes in as `now`, the fabric never reads
//! a clock. The engine calls [`Fabric::send`] for a packet a host sends,
//! [`Fabric::arrive`] for each packet a path delivers (or
//! [`Fabric::poll`] for every path due, as the real-time engine does),
//! [`Fabric::enter_due_states`] at the schedule's [`Fabric::next_wakeup`].
//! What an engine does at the edges (captures, accounting, waking a path
//! in its event queue) it does in its [`Hooks`], called with the packet
//! at each step; every hook has a no-op default.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rustc_hash::FxHashMap;

use crate::event::Recording;
use crate::packet::Packet;
use crate::path::{Path, PathStats};
use crate::state::{State, StateSchedule};
use crate::time::Instant;

/// Index of a host (the scenario's `hosts` order).
pub type HostIndex = usize;

/// Index of a path in the fabric: the links' paths that carry traffic in
/// scenario order (each downlink, then uplink), then the hosts' processing
/// delays in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathId(pub u32);

impl PathId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a path of the fabric stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathRole {
    /// One direction of a link: the path at this index of the topology
    /// (`2 · link + direction`).
    Link(usize),
    /// A host's processing delay for the packets it receives.
    Input,
    /// A host's processing delay for the packets it sends and forwards.
    Output,
}

/// One path of the fabric and where it leads.
#[derive(Debug)]
pub struct FabricPath {
    pub path: Path,
    /// The host its deliveries reach (a processing delay's own host).
    pub to: HostIndex,
    pub role: PathRole,
    /// "links[0] downlink (fixed -> mobile)", for messages.
    pub label: String,
}

/// A host's addresses: IPv4, IPv6 or both (a dual-stack host).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Addresses {
    pub v4: Option<Ipv4Addr>,
    pub v6: Option<Ipv6Addr>,
}

impl Addresses {
    /// A host with one IPv4 address.
    pub fn v4(a: Ipv4Addr) -> Self {
        Addresses { v4: Some(a), v6: None }
    }

    /// Whether `a` is one of them.
    #[inline]
    pub fn has(&self, a: IpAddr) -> bool {
        match a {
            IpAddr::V4(a) => self.v4 == Some(a),
            IpAddr::V6(a) => self.v6 == Some(a),
        }
    }

    /// Each address, IPv4 first.
    pub fn iter(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.v4.map(IpAddr::V4).into_iter().chain(self.v6.map(IpAddr::V6))
    }

    /// The address of the family `like` has.
    pub fn like(&self, like: IpAddr) -> Option<IpAddr> {
        match like {
            IpAddr::V4(_) => self.v4.map(IpAddr::V4),
            IpAddr::V6(_) => self.v6.map(IpAddr::V6),
        }
    }
}

/// Hosts by address. A few are a list scanned in order: comparing an
/// address with a handful of others costs less than hashing it (an IPv6
/// address is 16 bytes; `squall bench tcp`, one flow between two hosts,
/// spent 2 % of its time in the hash lookup once addresses became
/// `IpAddr`). More go in a hash map: FxHash, not SipHash (the addresses
/// are the scenario's own, no attacker chooses them).
#[derive(Clone, Debug)]
enum AddressIndex {
    Few(Vec<(IpAddr, HostIndex)>),
    Many(FxHashMap<IpAddr, HostIndex>),
}

impl AddressIndex {
    /// Addresses up to which a list is scanned.
    const FEW: usize = 8;

    fn new(pairs: impl Iterator<Item = (IpAddr, HostIndex)>) -> Self {
        let pairs: Vec<(IpAddr, HostIndex)> = pairs.collect();
        if pairs.len() <= Self::FEW {
            AddressIndex::Few(pairs)
        } else {
            AddressIndex::Many(pairs.into_iter().collect())
        }
    }

    #[inline]
    fn get(&self, address: IpAddr) -> Option<HostIndex> {
        match self {
            AddressIndex::Few(pairs) => pairs.iter().find(|(a, _)| *a == address).map(|&(_, i)| i),
            AddressIndex::Many(map) => map.get(&address).copied(),
        }
    }
}

/// Hosts' addresses and the route table.
#[derive(Clone, Debug)]
pub struct Routes {
    addresses: Vec<Addresses>,
    /// Looked up for every packet forwarded.
    by_address: AddressIndex,
    /// The host that stands for every address no host has (the
    /// emulator's `outside_interface`).
    outside: Option<HostIndex>,
    /// The path each host sends on towards each other host, as
    /// [`PathId`]s.
    next: RouteTable,
    /// Bridge mode (inline between two interfaces): a packet from one of
    /// the two hosts goes to the other, whatever its addresses.
    bridge: bool,
}

impl Routes {
    /// `next`: the path (a [`PathId`]'s number) each host sends on
    /// towards each other host, a table of `addresses.len()` hosts.
    /// Addresses are distinct (the scenario's check).
    pub fn new(addresses: Vec<Addresses>, outside: Option<HostIndex>, next: RouteTable) -> Self {
        assert_eq!(next.hosts(), addresses.len(), "a route table for other hosts");
        let by_address =
            AddressIndex::new(addresses.iter().enumerate().flat_map(|(i, a)| a.iter().map(move |a| (a, i))));
        Routes { addresses, by_address, outside, next, bridge: false }
    }

    pub fn hosts(&self) -> usize {
        self.addresses.len()
    }

    pub fn addresses(&self, host: HostIndex) -> Addresses {
        self.addresses[host]
    }

    /// The host with `address`.
    pub fn host_of(&self, address: IpAddr) -> Option<HostIndex> {
        self.by_address.get(address)
    }

    /// The host a packet for `address` goes to: the host with that
    /// address, else the outside host (if there is one).
    pub fn destination(&self, address: IpAddr) -> Option<HostIndex> {
        self.host_of(address).or(self.outside)
    }

    /// The path `from` sends on towards `to` (`None`: no route, or
    /// `from == to`).
    pub fn next_path(&self, from: HostIndex, to: HostIndex) -> Option<PathId> {
        self.next.get(from, to).map(PathId)
    }

    /// The path `packet` takes from `host`.
    #[inline]
    fn next_for(&self, host: HostIndex, packet: &Packet) -> Option<PathId> {
        if self.bridge {
            return self.next_path(host, 1 - host.min(1));
        }
        self.destination(packet.flow.dst).and_then(|to| self.next_path(host, to))
    }

    /// Whether `packet`, at `host`, is for it (not to be forwarded).
    #[inline]
    fn is_local(&self, host: HostIndex, packet: &Packet) -> bool {
        if self.bridge || self.addresses[host].has(packet.flow.dst) {
            return true;
        }
        match self.destination(packet.flow.dst) {
            Some(to) => to == host,
            None => true,
        }
    }
}

/// A route table that grows with the hosts, not with their pairs: each
/// host keeps a default path (the one it sends on towards most hosts, as
/// a host's default route does) and the hosts it reaches otherwise,
/// sorted, or a full row when those are many (the router of a star). A
/// dumbbell of 1 000 host pairs (2 002 hosts) holds 2 000 leaves' single
/// default and two routers' rows, where a table per host pair held
/// 2 002² entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteTable {
    rows: Vec<RouteRow>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RouteRow {
    /// Towards each host but this one: the path of `except` for the
    /// hosts it lists (sorted by host), `default` for the others.
    Default { default: u32, except: Box<[(u32, u32)]> },
    /// `next[to]` for every host (this one's entry is [`NO_ROUTE`]).
    Full(Box<[u32]>),
}

/// An entry of a [`RouteTable`] without a path.
pub const NO_ROUTE: u32 = u32::MAX;

impl RouteTable {
    /// The table of `hosts` hosts from `towards(to, next)`, which fills
    /// `next[from]` (`hosts` entries) with the path `from` sends on
    /// towards `to`, or [`NO_ROUTE`]. It is called twice for each `to`
    /// in order (once to find each host's default path, once for the
    /// others), so no table of every pair is ever held.
    pub fn build(hosts: usize, mut towards: impl FnMut(HostIndex, &mut [u32])) -> Self {
        let mut next = vec![NO_ROUTE; hosts];
        // Per host, how many hosts each path leads to.
        let mut votes: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for to in 0..hosts {
            next.fill(NO_ROUTE);
            towards(to, &mut next);
            for (from, &path) in next.iter().enumerate().filter(|&(from, _)| from != to) {
                *votes.entry((from as u32, path)).or_default() += 1;
            }
        }
        // The most voted path; between equal votes the lowest number.
        let mut default = vec![(0, NO_ROUTE); hosts];
        for (&(from, path), &count) in &votes {
            let best = &mut default[from as usize];
            if (count, std::cmp::Reverse(path)) > (best.0, std::cmp::Reverse(best.1)) {
                *best = (count, path);
            }
        }
        drop(votes);
        let mut except: Vec<Vec<(u32, u32)>> = vec![Vec::new(); hosts];
        for to in 0..hosts {
            next.fill(NO_ROUTE);
            towards(to, &mut next);
            for (from, &path) in next.iter().enumerate() {
                if from != to && path != default[from].1 {
                    except[from].push((to as u32, path));
                }
            }
        }
        let rows = except
            .into_iter()
            .zip(default)
            .enumerate()
            .map(|(from, (except, (_, default)))| {
                // A full row takes 4 bytes a host, a list 8 an entry: the
                // full row once the list has a quarter of the hosts (at
                // most twice the list's bytes, a lookup without search).
                if except.len() * 4 >= hosts {
                    let mut row = vec![default; hosts];
                    row[from] = NO_ROUTE;
                    for (to, path) in except {
                        row[to as usize] = path;
                    }
                    RouteRow::Full(row.into_boxed_slice())
                } else {
                    RouteRow::Default { default, except: except.into_boxed_slice() }
                }
            })
            .collect();
        RouteTable { rows }
    }

    pub fn hosts(&self) -> usize {
        self.rows.len()
    }

    /// The path `from` sends on towards `to` (`None`: no route, or
    /// `from == to`, or a host beyond the table).
    #[inline]
    pub fn get(&self, from: HostIndex, to: HostIndex) -> Option<u32> {
        if from == to || to >= self.rows.len() {
            return None;
        }
        let path = match self.rows.get(from)? {
            RouteRow::Full(row) => row[to],
            RouteRow::Default { default, except } => match except.binary_search_by_key(&(to as u32), |e| e.0) {
                Ok(i) => except[i].1,
                Err(_) => *default,
            },
        };
        (path != NO_ROUTE).then_some(path)
    }

    /// The same routes with each path `p` renamed `rename(p)` (`None`:
    /// no route).
    pub fn rename(self, rename: impl Fn(u32) -> Option<u32>) -> Self {
        let rename = |p: u32| if p == NO_ROUTE { NO_ROUTE } else { rename(p).unwrap_or(NO_ROUTE) };
        let rows = self
            .rows
            .into_iter()
            .map(|row| match row {
                RouteRow::Full(mut row) => {
                    row.iter_mut().for_each(|p| *p = rename(*p));
                    RouteRow::Full(row)
                }
                RouteRow::Default { default, mut except } => {
                    except.iter_mut().for_each(|e| e.1 = rename(e.1));
                    RouteRow::Default { default: rename(default), except }
                }
            })
            .collect();
        RouteTable { rows }
    }

    /// Bytes the table holds (for the tests and benchmarks).
    pub fn heap_bytes(&self) -> usize {
        let row = |r: &RouteRow| match r {
            RouteRow::Full(row) => row.len() * 4,
            RouteRow::Default { except, .. } => except.len() * 8,
        };
        self.rows.len() * std::mem::size_of::<RouteRow>() + self.rows.iter().map(row).sum::<usize>()
    }
}

/// A packet that reached the host it is for, or an agent there that
/// takes it on its way ([`Hooks::claims`]).
#[derive(Debug)]
pub struct Arrival {
    pub at: Instant,
    pub host: HostIndex,
    pub packet: Packet,
    /// An agent at `host` claimed it; it is for another host.
    pub claimed: bool,
    /// It came through the host's processing delay for what it receives
    /// (so [`Hooks::reached`] saw it before the delay).
    pub delayed: bool,
}

/// Why states stopped being entered: more than
/// [`Fabric::MAX_STATES_PER_INSTANT`] at one instant, a cycle whose
/// holding times are all zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateStorm {
    pub at: Instant,
}

/// What an engine does as packets cross the fabric. Each call says what
/// just happened; none may push into the fabric.
pub trait Hooks {
    /// `packet` is about to enter path `id` at `now`.
    fn entering(&mut self, _now: Instant, _id: PathId, _packet: &Packet) {}
    /// Path `id` took a packet at `now`.
    fn entered(&mut self, _now: Instant, _id: PathId, _path: &mut Path) {}
    /// Path `id` delivered `packet` at `now`, before the fabric does
    /// anything with it.
    fn left(&mut self, _now: Instant, _id: PathId, _role: PathRole, _path: &mut Path, _packet: &Packet) {}
    /// `packet` reached `host` from a link at `now`; `local`: it is for
    /// the host; `delayed`: it goes into the host's processing delay.
    fn reached(&mut self, _now: Instant, _host: HostIndex, _packet: &Packet, _local: bool, _delayed: bool) {}
    /// `packet` leaves `host` onto a link at `now`; `origin`: the host
    /// sent it (it is not forwarding it).
    fn departs(&mut self, _now: Instant, _host: HostIndex, _packet: &Packet, _origin: bool) {}
    /// Whether an agent at `host` takes `packet`, which is for another
    /// host (a split-TCP proxy).
    fn claims(&mut self, _host: HostIndex, _packet: &Packet) -> bool {
        false
    }
    /// `packet` is at `host`, which has no route onward for it: it leaves
    /// the network here.
    fn no_route(&mut self, _now: Instant, _host: HostIndex, _packet: Packet) {}
    /// [`Fabric::poll`] only: a packet reached the host it is for.
    fn arrived(&mut self, _arrival: Arrival) {}
    /// `state` (due at `at`) is about to change every path.
    fn entering_state(&mut self, _at: Instant, _state: &State, _paths: &mut [FabricPath]) {}
    /// `state` (due at `at`) changed every path.
    fn entered_state(&mut self, _at: Instant, _state: &State, _paths: &mut [FabricPath]) {}
}

/// Hooks that do nothing.
impl Hooks for () {}

/// The paths, routes, processing delays and state schedule of a run.
#[derive(Debug)]
pub struct Fabric {
    paths: Vec<FabricPath>,
    routes: Routes,
    /// Per host, its processing delay for what it receives, and for what
    /// it sends and forwards.
    input: Vec<Option<PathId>>,
    output: Vec<Option<PathId>>,
    /// The fabric's path of each topology path (`None`: no stages).
    links: Vec<Option<PathId>>,
    schedule: StateSchedule,
}

impl Fabric {
    /// More states than this entered at one instant: a cycle whose
    /// holding times are all zero.
    pub const MAX_STATES_PER_INSTANT: u32 = 1 << 16;

    /// `paths`: the links' paths then the processing delays, as
    /// [`PathId`] says; `routes` index them.
    pub fn new(paths: Vec<FabricPath>, routes: Routes, schedule: StateSchedule) -> Self {
        let n = routes.hosts();
        let (mut input, mut output) = (vec![None; n], vec![None; n]);
        let mut links = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            let id = Some(PathId(i as u32));
            match p.role {
                PathRole::Input => input[p.to] = id,
                PathRole::Output => output[p.to] = id,
                PathRole::Link(t) => {
                    links.resize(links.len().max(t + 1), None);
                    links[t] = id;
                }
            }
        }
        Fabric { paths, routes, input, output, links, schedule }
    }

    /// Bridge mode: two hosts joined by one link; a packet from one goes
    /// to the other, whatever its addresses.
    pub fn bridging(mut self) -> Self {
        self.routes.bridge = true;
        self
    }

    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    pub fn paths(&self) -> &[FabricPath] {
        &self.paths
    }

    pub fn paths_mut(&mut self) -> &mut [FabricPath] {
        &mut self.paths
    }

    pub fn path(&self, id: PathId) -> &FabricPath {
        &self.paths[id.index()]
    }

    pub fn path_mut(&mut self, id: PathId) -> &mut FabricPath {
        &mut self.paths[id.index()]
    }

    /// The path of the topology's path `index` (`None`: it has no stages).
    pub fn link_path(&self, index: usize) -> Option<&Path> {
        self.links.get(index).copied().flatten().map(|id| &self.paths[id.index()].path)
    }

    pub fn schedule(&self) -> &StateSchedule {
        &self.schedule
    }

    /// What every path records of its events.
    pub fn set_recording(&mut self, recording: Recording) {
        for p in &mut self.paths {
            p.path.set_recording(recording);
        }
    }

    /// Samples stage `stage`'s queue classes at every change from now on
    /// ([`Path::record_classes`]); whether a path has that stage.
    pub fn record_classes(&mut self, stage: &str) -> bool {
        let mut found = false;
        for p in &mut self.paths {
            found |= p.path.record_classes(stage);
        }
        found
    }

    /// The earliest time a path or the state schedule needs a call.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let paths = self.paths.iter().filter_map(|p| p.path.next_wakeup());
        paths.chain(self.schedule.next_wakeup()).min()
    }

    /// Whether a stage has a series with `at_end = "end"`
    /// ([`Path::may_end_run`]).
    pub fn may_end_run(&self) -> bool {
        self.paths.iter().any(|p| p.path.may_end_run())
    }

    /// Where the first series with `at_end = "end"` ends the run.
    pub fn series_end(&self) -> Option<Instant> {
        self.paths.iter().filter_map(|p| p.path.series_end()).min()
    }

    /// Whether no packet is inside any path.
    pub fn is_empty(&self) -> bool {
        self.paths.iter().all(|p| p.path.stats().in_flight == 0)
    }

    pub fn stats(&self) -> Vec<PathStats> {
        self.paths.iter().map(|p| p.path.stats()).collect()
    }

    /// The path `packet` leaves `host` on (`None`: no route).
    #[inline]
    pub fn first_path(&self, host: HostIndex, packet: &Packet) -> Option<PathId> {
        self.routes.next_for(host, packet)
    }

    /// The path a packet at `from` takes towards host `to` (`None`: no
    /// route): for an engine that knows the hosts a packet goes between
    /// by other means than its addresses (an inline box's clients, by
    /// MAC).
    #[inline]
    pub fn next_path(&self, from: HostIndex, to: HostIndex) -> Option<PathId> {
        self.routes.next_path(from, to)
    }

    /// `host` sends `packet` at `now` on `first` (its
    /// [`Self::first_path`]): through the host's processing delay for
    /// what it sends, if it has one, then onto the link.
    #[inline]
    pub fn send<H: Hooks>(&mut self, now: Instant, host: HostIndex, packet: Packet, first: PathId, hooks: &mut H) {
        match self.output[host] {
            Some(output) => self.push(now, output, packet, hooks),
            None => {
                hooks.departs(now, host, &packet, true);
                self.push(now, first, packet, hooks);
            }
        }
    }

    /// Path `from` delivered `packet` at `now` to its far host. Returns
    /// the packet if it reached the host it is for (or an agent there
    /// claimed it); otherwise it went on into its next path, or left the
    /// network ([`Hooks::no_route`]).
    #[inline]
    pub fn arrive<H: Hooks>(&mut self, now: Instant, from: PathId, packet: Packet, hooks: &mut H) -> Option<Arrival> {
        let p = &mut self.paths[from.index()];
        let (host, role) = (p.to, p.role);
        hooks.left(now, from, role, &mut p.path, &packet);
        let local = match role {
            PathRole::Link(_) => {
                let local = self.routes.is_local(host, &packet);
                let input = self.input[host];
                hooks.reached(now, host, &packet, local, input.is_some());
                if let Some(input) = input {
                    self.push(now, input, packet, hooks);
                    return None;
                }
                local
            }
            PathRole::Input => self.routes.is_local(host, &packet),
            PathRole::Output => {
                let origin = self.routes.bridge || self.routes.addresses[host].has(packet.flow.src);
                self.onto_link(now, host, packet, origin, hooks);
                return None;
            }
        };
        let delayed = role == PathRole::Input;
        if local {
            return Some(Arrival { at: now, host, packet, claimed: false, delayed });
        }
        if hooks.claims(host, &packet) {
            return Some(Arrival { at: now, host, packet, claimed: true, delayed });
        }
        match self.output[host] {
            // Through the host's delay for what it forwards, if there is
            // a way on.
            Some(output) if self.routes.next_for(host, &packet).is_some() => self.push(now, output, packet, hooks),
            _ => self.onto_link(now, host, packet, false, hooks),
        }
        None
    }

    /// Every packet due by `now`, from the links' paths in order, then
    /// the hosts' delays for what they receive, then for what they send:
    /// each goes on through the fabric, and those that reach the host
    /// they are for go to [`Hooks::arrived`].
    pub fn poll<H: Hooks>(&mut self, now: Instant, hooks: &mut H) {
        let roles = [|r: PathRole| matches!(r, PathRole::Link(_)), |r| r == PathRole::Input, |r| r == PathRole::Output];
        for is in roles {
            for i in 0..self.paths.len() {
                if !is(self.paths[i].role) {
                    continue;
                }
                while let Some(d) = self.paths[i].path.poll(now) {
                    if let Some(arrival) = self.arrive(d.at, PathId(i as u32), d.packet, hooks) {
                        hooks.arrived(arrival);
                    }
                }
            }
        }
    }

    /// Enters every state due by `now`, in time order: each change goes
    /// to every path.
    pub fn enter_due_states<H: Hooks>(&mut self, now: Instant, hooks: &mut H) -> Result<u32, StateStorm> {
        let mut entered = 0;
        while let Some(due) = self.schedule.poll(now) {
            entered += 1;
            if entered > Self::MAX_STATES_PER_INSTANT {
                return Err(StateStorm { at: now });
            }
            apply(&mut self.paths, now, due.at, due.state, hooks);
        }
        Ok(entered)
    }

    /// Enters `state` from outside (`squall ctl`) at `now`, as if due at
    /// `at`.
    pub fn enter_state<H: Hooks>(&mut self, now: Instant, at: Instant, state: &State, hooks: &mut H) {
        apply(&mut self.paths, now, at, state, hooks);
    }

    /// `packet` leaves `host` at `now` onto the link towards its
    /// destination.
    #[inline]
    fn onto_link<H: Hooks>(&mut self, now: Instant, host: HostIndex, packet: Packet, origin: bool, hooks: &mut H) {
        match self.routes.next_for(host, &packet) {
            Some(next) => {
                hooks.departs(now, host, &packet, origin);
                self.push(now, next, packet, hooks);
            }
            None => hooks.no_route(now, host, packet),
        }
    }

    /// `packet` enters path `id` at `now`.
    #[inline]
    fn push<H: Hooks>(&mut self, now: Instant, id: PathId, packet: Packet, hooks: &mut H) {
        hooks.entering(now, id, &packet);
        let path = &mut self.paths[id.index()].path;
        path.push(now, packet);
        hooks.entered(now, id, path);
    }
}

fn apply<H: Hooks>(paths: &mut [FabricPath], now: Instant, at: Instant, state: &State, hooks: &mut H) {
    hooks.entering_state(at, state, paths);
    for change in &state.changes {
        for p in paths.iter_mut() {
            p.path.apply(now, change);
        }
    }
    hooks.entered_state(at, state, paths);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift).
    fn rand(x: &mut u64, n: u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x % n
    }

    /// A host is found by each of its addresses, IPv4 or IPv6, whether the
    /// hosts are few (a list) or many (a hash map); another address finds
    /// none, or the outside host where there is one.
    #[test]
    fn hosts_are_found_by_address_in_a_list_or_a_map() {
        for hosts in [1usize, 2, 4, 5, 30] {
            let addresses: Vec<Addresses> = (0..hosts)
                .map(|i| Addresses {
                    v4: Some(Ipv4Addr::new(10, 0, (i / 256) as u8, (i % 256) as u8)),
                    v6: (i % 2 == 0).then(|| Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, i as u16 + 1)),
                })
                .collect();
            let pairs = addresses.iter().map(|a| a.iter().count()).sum::<usize>();
            let routes = Routes::new(addresses.clone(), None, RouteTable::build(hosts, |_, _| {}));
            assert_eq!(matches!(routes.by_address, AddressIndex::Few(_)), pairs <= AddressIndex::FEW, "{hosts} hosts");
            for (i, a) in addresses.iter().enumerate() {
                for address in a.iter() {
                    assert_eq!(routes.host_of(address), Some(i), "{address} of host {i} of {hosts}");
                }
            }
            let stranger: IpAddr = Ipv4Addr::new(192, 0, 2, 1).into();
            assert_eq!(routes.host_of(stranger), None);
            assert_eq!(routes.host_of(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0xffff).into()), None);
            let with_outside = Routes::new(addresses, Some(hosts - 1), RouteTable::build(hosts, |_, _| {}));
            assert_eq!(with_outside.destination(stranger), Some(hosts - 1));
        }
    }

    /// Every pair's lookup against the dense table the routes came from,
    /// for tables of random routes (a few paths per host, some pairs
    /// without a route) and of a star (one row full, the leaves' one
    /// default each).
    #[test]
    fn a_route_table_answers_as_the_table_of_every_pair() {
        let mut x = 0x9e37_79b9_7f4a_7c15;
        for case in 0..300 {
            let hosts = 1 + rand(&mut x, 40) as usize;
            let star = case % 3 == 0;
            let mut dense = vec![NO_ROUTE; hosts * hosts];
            for from in 0..hosts {
                let choices = 1 + rand(&mut x, 4) as u32;
                for to in (0..hosts).filter(|&to| to != from) {
                    dense[from * hosts + to] = if star {
                        // Host 0 the centre: path `to` out of it, path 0 from each leaf.
                        if from == 0 { to as u32 } else { 0 }
                    } else if rand(&mut x, 10) == 0 {
                        NO_ROUTE
                    } else {
                        100 * from as u32 + rand(&mut x, choices as u64) as u32
                    };
                }
            }
            let mut calls = 0;
            let table = RouteTable::build(hosts, |to, next| {
                calls += 1;
                for (from, n) in next.iter_mut().enumerate() {
                    *n = dense[from * hosts + to];
                }
            });
            assert_eq!(calls, 2 * hosts);
            for from in 0..hosts {
                for to in 0..hosts {
                    let want = Some(dense[from * hosts + to]).filter(|&p| p != NO_ROUTE);
                    assert_eq!(table.get(from, to), want, "case {case}: {from} -> {to} of {hosts}");
                }
                assert_eq!(table.get(from, hosts), None, "beyond the table");
            }
            assert_eq!(table.get(hosts, 0), None);
            if star && hosts > 4 {
                // The centre's row is full (hosts - 1 exceptions), each
                // leaf holds no exception: 4 bytes a host for the centre.
                assert!(matches!(table.rows[0], RouteRow::Full(_)));
                assert!(
                    table.rows[1..].iter().all(|r| matches!(r, RouteRow::Default { except, .. } if except.is_empty()))
                );
                assert_eq!(table.heap_bytes(), hosts * std::mem::size_of::<RouteRow>() + 4 * hosts);
            }
            // Renamed paths answer renamed; a path renamed to none has no route.
            let renamed = table.clone().rename(|p| (p % 7 != 3).then_some(p + 1));
            for from in 0..hosts {
                for to in 0..hosts {
                    let want = table.get(from, to).and_then(|p| (p % 7 != 3).then_some(p + 1));
                    assert_eq!(renamed.get(from, to), want);
                }
            }
        }
    }
}
