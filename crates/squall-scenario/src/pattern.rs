//! Topologies by pattern (issue 35): host groups and the links that
//! join a whole group to one host.
//!
//! ```toml
//! [[host_groups]]
//! name = "left"            # hosts left-0, left-1, ..., left-999
//! count = 1000
//! prefix = "10.1.0.0/16"   # left-k has the address 10.1.0.0 + 1 + k
//! prefix6 = "fd00:1::/64"  # and, if given, the address6 fd00:1:: + 1 + k
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
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::error::{ErrorKind, KeyPath, ScenarioError};
pub use crate::prefix::{Ipv4Prefix, Ipv6Prefix};
pub use crate::schema::HostGroup;
use crate::schema::{Host, Link, Scenario};
use crate::source::{Origins, Source};

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
        s.hosts.iter().enumerate().filter_map(|(i, h)| Some((u32::from(h.address?), i))).collect();
    let mut group_names: BTreeMap<&str, usize> = BTreeMap::new();
    let host_addresses6: BTreeMap<u128, usize> =
        s.hosts.iter().enumerate().filter_map(|(i, h)| Some((u128::from(h.address6?), i))).collect();
    // Address ranges taken by earlier groups: first address -> (last, group).
    let mut ranges: Vec<(u32, u32, usize)> = Vec::new();
    let mut ranges6: Vec<(u128, u128, usize)> = Vec::new();
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
        if let Some(prefix6) = group.prefix6 {
            let at = p.key("prefix6");
            if u128::from(group.count) > prefix6.host_addresses() {
                return Err(fail(
                    src,
                    &at,
                    format!(
                        "{} hosts do not fit in {prefix6}, which has {} host addresses (the network's own \
                         excluded); give a shorter prefix, like prefix6 = \"fd00:1::/64\"",
                        group.count,
                        prefix6.host_addresses()
                    ),
                ));
            }
            let first = u128::from(prefix6.host(0));
            let last = first + u128::from(group.count - 1);
            if let Some((&a, &h)) = host_addresses6.range(first..=last).next() {
                return Err(fail(
                    src,
                    &at,
                    format!(
                        "the group's addresses {} to {} include hosts[{h}]'s address6 {}; every host needs its own \
                         address",
                        Ipv6Addr::from(first),
                        Ipv6Addr::from(last),
                        Ipv6Addr::from(a)
                    ),
                ));
            }
            if let Some(&(_, _, other)) = ranges6.iter().find(|(a, b, _)| first <= *b && *a <= last) {
                return Err(fail(
                    src,
                    &at,
                    format!(
                        "the group's addresses {} to {} overlap those of host_groups[{other}] (`{}`); every host \
                         needs its own address",
                        Ipv6Addr::from(first),
                        Ipv6Addr::from(last),
                        s.host_groups[other].name
                    ),
                ));
            }
            ranges6.push((first, last, g));
        }
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
            let address6 = group.prefix6.map(|p| p.host(k));
            let host = Host::member(&group.name, k, group.prefix.host(k), address6, group.ephemeral_ports);
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
