//! Topologies by pattern (issue 35): host groups and the links that
//! join a whole group to one host.
//!
//! ```toml
//! [[host_groups]]
//! name = "left"            # hosts left-0, left-1, ..., left-999
//! count = 1000
//! prefix = "10.1.0.0/16"   # left-k has the address 10.1.0.0 + 1 + k
//!
//! [[links]]
//! between = ["left", "r1"] # one link per host of the group (a star
//! [[links.downlink]]       # around r1), each with these stages,
//! name = "left-up"         # named left-up-0, left-up-1, ...
//! rate = "1 Gbit/s"
//! [[links.uplink]]
//! name = "left-down"
//! rate = "1 Gbit/s"
//! ```
//!
//! A dumbbell is two groups, each joined to its router, and the link
//! between the routers. The loader expands the patterns before any check
//! ([`expand`]): the scenario the engines run, and the one a run writes
//! out as scenario.toml, lists every host (each with `group = NAME`) and
//! every link in full, so that file runs the same without the patterns.
//! An error in an expanded host or link is placed at the group or link
//! that made it ([`Origins`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, KeyPath, ScenarioError, Segment};
use crate::load::Source;
use crate::schema::{EphemeralPorts, Host, Link, Scenario};

/// `[[host_groups]]`: `count` hosts named `NAME-k` (0 ≤ k < count) with
/// consecutive addresses in `prefix`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostGroup {
    pub name: String,
    pub count: u32,
    /// The network the hosts' addresses come from: host k has the
    /// network's address + 1 + k, so the network and broadcast addresses
    /// stay unused (RFC 919, RFC 922).
    pub prefix: Ipv4Prefix,
    /// Each host's `ephemeral_ports` (see [`Host`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_ports: Option<EphemeralPorts>,
}

/// An IPv4 network, written `"10.1.0.0/16"` (RFC 4632 §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Prefix {
    pub address: Ipv4Addr,
    pub len: u8,
}

impl Ipv4Prefix {
    /// Addresses for hosts: all but the network and broadcast addresses
    /// (none for a /31 or /32 here).
    pub fn host_addresses(self) -> u64 {
        (1u64 << (32 - u32::from(self.len))).saturating_sub(2)
    }

    fn network(self) -> u32 {
        let mask = if self.len == 0 { 0 } else { u32::MAX << (32 - u32::from(self.len)) };
        u32::from(self.address) & mask
    }

    /// Host `k`'s address: the network's + 1 + k.
    pub fn host(self, k: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.network().wrapping_add(1).wrapping_add(k))
    }
}

impl std::fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.len)
    }
}

impl std::str::FromStr for Ipv4Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not an IPv4 network; write its address and length, like \"10.1.0.0/16\"");
        let (address, len) = s.split_once('/').ok_or_else(bad)?;
        let address: Ipv4Addr = address.trim().parse().map_err(|_| bad())?;
        let len: u8 = len.trim().parse().map_err(|_| bad())?;
        if len > 32 {
            return Err(bad());
        }
        let prefix = Ipv4Prefix { address, len };
        if u32::from(address) != prefix.network() {
            return Err(format!("`{s}` has host bits set: the network is {}/{len}", Ipv4Addr::from(prefix.network())));
        }
        Ok(prefix)
    }
}

impl Serialize for Ipv4Prefix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ipv4Prefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Where each host and link of an expanded scenario came from in the
/// file, to place an error about it there.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins {
    /// Hosts written as `[[hosts]]` (the first ones); the others are
    /// group members, `(group index, host name)` each, in order.
    explicit_hosts: usize,
    members: Vec<(usize, String)>,
    /// Per link of the expanded list: its entry in the file and, for a
    /// pattern's link, the host it was made for.
    links: Vec<(usize, Option<String>)>,
}

impl Origins {
    /// The key in the file that `path` (a key of the expanded scenario)
    /// comes from, and the host a pattern made it for.
    pub(crate) fn in_file(&self, path: &KeyPath) -> (KeyPath, Option<String>) {
        let mut out = path.clone();
        match path.0.as_slice() {
            [Segment::Key(k), Segment::Index(j), ..] if k == "links" => {
                if let Some((file, member)) = self.links.get(*j) {
                    out.0[1] = Segment::Index(*file);
                    return (out, member.clone());
                }
            }
            [Segment::Key(k), Segment::Index(j), rest @ ..] if k == "hosts" && *j >= self.explicit_hosts => {
                if let Some((group, name)) = self.members.get(j - self.explicit_hosts) {
                    let mut p = KeyPath::root().key("host_groups").index(*group);
                    p.0.extend(rest.iter().cloned());
                    return (p, Some(name.clone()));
                }
            }
            _ => {}
        }
        (out, None)
    }
}

fn fail(src: &Source, path: &KeyPath, message: String) -> ScenarioError {
    src.error(ErrorKind::Check, path, message)
}

/// Expands `[[host_groups]]` into hosts and links with a group at one end
/// into a link per host of the group, in place (the groups are emptied).
/// Errors: a bad group (no name, none or too many hosts for its prefix, a
/// name or address another host has) and a link between two groups.
pub(crate) fn expand(s: &mut Scenario, src: &Source) -> Result<Origins, ScenarioError> {
    let explicit_hosts = s.hosts.len();
    let mut origins =
        Origins { explicit_hosts, members: Vec::new(), links: (0..s.links.len()).map(|i| (i, None)).collect() };
    if s.host_groups.is_empty() {
        return Ok(origins);
    }
    let host_names: BTreeMap<&str, usize> = s.hosts.iter().enumerate().map(|(i, h)| (h.name.as_str(), i)).collect();
    let host_addresses: BTreeMap<u32, usize> =
        s.hosts.iter().enumerate().map(|(i, h)| (u32::from(h.address), i)).collect();
    let mut group_names: BTreeMap<&str, usize> = BTreeMap::new();
    // Address ranges taken by earlier groups: first address -> (last, group).
    let mut ranges: Vec<(u32, u32, usize)> = Vec::new();
    for (g, group) in s.host_groups.iter().enumerate() {
        let p = KeyPath::root().key("host_groups").index(g);
        if group.name.is_empty() {
            return Err(fail(src, &p.key("name"), "a host group needs a name, like name = \"left\"".into()));
        }
        if let Some(&h) = host_names.get(group.name.as_str()) {
            return Err(fail(
                src,
                &p.key("name"),
                format!("`{}` is already the name of hosts[{h}]; a group needs a name of its own", group.name),
            ));
        }
        if let Some(first) = group_names.insert(&group.name, g) {
            return Err(fail(
                src,
                &p.key("name"),
                format!("host group `{}` is already host_groups[{first}]; group names must be unique", group.name),
            ));
        }
        if group.count == 0 {
            return Err(fail(src, &p.key("count"), "a host group has at least one host, like count = 100".into()));
        }
        let room = group.prefix.host_addresses();
        if u64::from(group.count) > room {
            let needed = (0..=32u32).rev().find(|len| (1u64 << (32 - len)).saturating_sub(2) >= u64::from(group.count));
            return Err(fail(
                src,
                &p.key("prefix"),
                format!(
                    "{} hosts do not fit in {}, which has {room} host addresses (the network and broadcast \
                     addresses excluded); give a prefix of /{} or shorter, like prefix = \"{}/{}\"",
                    group.count,
                    group.prefix,
                    needed.unwrap_or(0),
                    group.prefix.address,
                    needed.unwrap_or(0)
                ),
            ));
        }
        let first = u32::from(group.prefix.host(0));
        let last = first + (group.count - 1);
        if let Some((&a, &h)) = host_addresses.range(first..=last).next() {
            return Err(fail(
                src,
                &p.key("prefix"),
                format!(
                    "the group's addresses {} to {} include hosts[{h}]'s address {}; every host needs its own address",
                    Ipv4Addr::from(first),
                    Ipv4Addr::from(last),
                    Ipv4Addr::from(a)
                ),
            ));
        }
        if let Some(&(_, _, other)) = ranges.iter().find(|(a, b, _)| first <= *b && *a <= last) {
            return Err(fail(
                src,
                &p.key("prefix"),
                format!(
                    "the group's addresses {} to {} overlap those of host_groups[{other}] (`{}`); every host needs \
                     its own address",
                    Ipv4Addr::from(first),
                    Ipv4Addr::from(last),
                    s.host_groups[other].name
                ),
            ));
        }
        ranges.push((first, last, g));
        // A member's name is NAME-k; an explicit host of that name clashes.
        if let Some((name, h)) = host_names
            .range(format!("{}-", group.name).as_str()..)
            .take_while(|(n, _)| n.starts_with(&format!("{}-", group.name)))
            .find(|(n, _)| n[group.name.len() + 1..].parse::<u32>().is_ok_and(|k| k < group.count))
        {
            return Err(fail(
                src,
                &p.key("name"),
                format!(
                    "the group's hosts are named {0}-0 to {0}-{1}, and hosts[{h}] is already `{name}`; give the \
                     group another name",
                    group.name,
                    group.count - 1
                ),
            ));
        }
    }
    for (g, group) in s.host_groups.iter().enumerate() {
        for k in 0..group.count {
            let host = Host::member(&group.name, k, group.prefix.host(k), group.ephemeral_ports);
            origins.members.push((g, host.name.clone()));
            s.hosts.push(host);
        }
    }
    // Links with a group at one end: one per member.
    let groups: BTreeMap<String, u32> = s.host_groups.iter().map(|g| (g.name.clone(), g.count)).collect();
    let mut links = Vec::with_capacity(s.links.len());
    origins.links.clear();
    for (i, link) in std::mem::take(&mut s.links).into_iter().enumerate() {
        let ends = [groups.get(&link.between[0]), groups.get(&link.between[1])];
        let (end, count) = match ends {
            [None, None] => {
                links.push(link);
                origins.links.push((i, None));
                continue;
            }
            [Some(_), Some(_)] => {
                return Err(fail(
                    src,
                    &KeyPath::root().key("links").index(i).key("between"),
                    format!(
                        "`{}` and `{}` are both host groups; a link pattern joins a group to one host, like \
                         between = [\"{}\", \"router\"]",
                        link.between[0], link.between[1], link.between[0]
                    ),
                ));
            }
            [Some(&n), None] => (0, n),
            [None, Some(&n)] => (1, n),
        };
        for k in 0..count {
            let mut l: Link = link.clone();
            let member = format!("{}-{k}", link.between[end]);
            l.between[end] = member.clone();
            for st in l.downlink.iter_mut().chain(l.uplink.iter_mut()) {
                st.name = format!("{}-{k}", st.name);
            }
            links.push(l);
            origins.links.push((i, Some(member)));
        }
    }
    s.links = links;
    s.host_groups.clear();
    Ok(origins)
}

/// The hosts of group `name` (those with `group = name`), in order.
pub fn group_hosts<'a>(s: &'a Scenario, name: &str) -> Vec<&'a Host> {
    s.hosts.iter().filter(|h| h.group.as_deref() == Some(name)).collect()
}

/// Whether `name` names a group of `s`'s hosts.
pub fn is_group(s: &Scenario, name: &str) -> bool {
    s.hosts.iter().any(|h| h.group.as_deref() == Some(name))
}

/// The names of the groups of `s`'s hosts.
pub fn group_names(s: &Scenario) -> BTreeSet<&str> {
    s.hosts.iter().filter_map(|h| h.group.as_deref()).collect()
}
