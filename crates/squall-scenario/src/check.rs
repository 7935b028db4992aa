//! The checks serde cannot make: names that refer to other parts of the
//! scenario, uniqueness, routes, and each stage's own consistency
//! (`StageConfig::validate`). The first problem found is reported, placed
//! at its key.

use std::collections::BTreeMap;
use std::net::IpAddr;

use squall_link::dist::DistributionError;
use squall_link::keys::{DistributionRef, KeyPart};
use squall_link::{ConfigError, Distribution, Duration, StageConfig};

use crate::empirical::LineQuantity;
use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;
use crate::topology::Topology;

mod tcp;

use tcp::{check_ip_version, check_tcp};

type Check = Result<(), ScenarioError>;

struct Checker<'a, 's> {
    src: &'a Source<'s>,
}

impl Checker<'_, '_> {
    fn fail(&self, path: &KeyPath, message: impl Into<String>) -> ScenarioError {
        self.src.error(ErrorKind::Check, path, message)
    }

    fn dist<Q: LineQuantity>(&self, d: &Distribution<Q>, path: &KeyPath) -> Check {
        let Err(e) = d.validate() else { return Ok(()) };
        let (key, message) = match e {
            DistributionError::UniformBounds => (
                "low",
                format!(
                    "uniform needs low <= high, like {{ kind = \"uniform\", low = {}, high = {} }}",
                    Q::example(0),
                    Q::example(20)
                ),
            ),
            DistributionError::NotPositive(k) => {
                (k, format!("{k} must be positive, like {{ kind = \"exponential\", mean = {} }}", Q::example(10)))
            }
            DistributionError::NotProbability(k) => {
                (k, format!("{k} must be a probability between 0 and 1, like {k} = 0.05"))
            }
            DistributionError::EmptyEmpirical => (
                "values",
                format!(
                    "an empirical distribution needs at least one value, like \
                     {{ kind = \"empirical\", file = \"values.txt\" }} or values = [{}, {}]",
                    Q::example(10),
                    Q::example(12)
                ),
            ),
            DistributionError::BadCdf => (
                "points",
                "a cdf needs points [value, share] with values and shares in increasing order and the last share 1, \
                 like { kind = \"cdf\", file = \"sizes.cdf\" } (lines `SIZE CDF`)"
                    .to_string(),
            ),
            DistributionError::NetemTableSource => (
                "table",
                format!(
                    "a netem table needs one source: table = \"normal\" (or pareto, paretonormal) or a .dist file, \
                     like {{ kind = \"netem_table\", file = \"my.dist\", mu = {}, sigma = {} }}",
                    Q::example(100),
                    Q::example(20)
                ),
            ),
        };
        Err(self.fail(&path.key(key), message))
    }

    /// A `ConfigError` from squall-link names its key from the stage name
    /// (`gsm-down.queue.red`); `base` is where that stage is in the file.
    fn config(&self, e: ConfigError, stage_name: &str, base: &KeyPath) -> ScenarioError {
        let rest = e.key.strip_prefix(stage_name).map(|r| r.trim_start_matches('.')).unwrap_or(&e.key);
        self.fail(&base.dotted(rest), e.message)
    }

    /// Each distribution found, by its type, with its key path from `base`.
    fn distributions(&self, found: Vec<(Vec<KeyPart>, DistributionRef<'_>)>, base: &KeyPath) -> Check {
        for (at, d) in found {
            let path = crate::empirical::key_path(base, &at);
            match d {
                DistributionRef::Duration(d) => self.dist(d, &path)?,
                DistributionRef::Bytes(d) => self.dist(d, &path)?,
                DistributionRef::Ratio(d) => self.dist(d, &path)?,
            }
        }
        Ok(())
    }

    fn stage(&self, st: &StageConfig, path: &KeyPath) -> Check {
        self.distributions(st.distributions_in(&|_| true), path)?;
        st.validate().map_err(|e| self.config(e, &st.name, path))
    }
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    // A scenario of thousands of hosts (a generated dumbbell) would make
    // the message thousands of names long: the first ones, and how many
    // more.
    const SHOWN: usize = 12;
    let all: Vec<&str> = it.collect();
    let v: Vec<String> = all.iter().take(SHOWN).map(|n| format!("`{n}`")).collect();
    match all.len() {
        0 => "none".to_string(),
        n if n > SHOWN => format!("{} and {} more", v.join(", "), n - SHOWN),
        _ => v.join(", "),
    }
}

/// Checks a deserialized scenario whose empirical files have been read.
/// A host's sysctl key must name a setting that Linux keeps per network
/// namespace (`net.*`), written with dots, without a way out of
/// /proc/sys/net.
fn check_sysctl_key(key: &str) -> Result<(), String> {
    let well_formed = key
        .split('.')
        .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)));
    if !well_formed {
        return Err(format!(
            "`{key}` is not a sysctl name: dot-separated words of letters, digits, `_` and `-`, like \"net.ipv4.tcp_rmem\""
        ));
    }
    if !key.starts_with("net.") {
        return Err(format!(
            "`{key}` is not a network setting: only net.* sysctls belong to a host's network namespace; \
             others would change the whole machine, like \"kernel.pid_max\""
        ));
    }
    Ok(())
}

/// An interface name Linux accepts (`dev_valid_name`): 1 to 15 bytes, not
/// `.` or `..`, without `/`, `:` or white space.
fn check_interface_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 15
        && name != "."
        && name != ".."
        && !name.chars().any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control());
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a network interface name: 1 to 15 characters without `/`, `:` or spaces, like \
             outside_interface = \"eth0\""
        ))
    }
}

/// An `ip netns` name is a file name in /run/netns (iproute2's
/// ip/ipnetns.c, `is_valid_netns_name`: not empty, not `.` or `..`, no
/// `/`, shorter than NAME_MAX).
fn check_netns_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty() && name.len() < 255 && name != "." && name != ".." && !name.contains('/');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a network namespace name: 1 to 254 characters without `/`, as `ip netns list` shows \
             them, like netns = \"lab\""
        ))
    }
}

pub(crate) fn check(s: &Scenario, src: &Source) -> Check {
    let c = Checker { src };
    let root = KeyPath::root();

    if s.duration == Duration::ZERO {
        return Err(c.fail(&root.key("duration"), "the run needs a positive duration, like duration = \"300 s\""));
    }
    if s.replications == 0 {
        return Err(c.fail(&root.key("replications"), "needs at least 1 replication, like replications = 10"));
    }

    check_inline(&c, s)?;

    let host_index = check_hosts(&c, s)?;
    let host_names = || names(s.hosts.iter().map(|h| h.name.as_str()));
    let stage_at = check_links(&c, s, &host_index)?;
    check_inline_clients(&c, s, &host_index)?;
    // Hosts, addresses and links are checked: the topology both engines
    // route by.
    let topology = Topology::new(s).map_err(|e| c.fail(&root.key("links"), e.to_string()))?;
    let stage_names = || names(stage_at.keys().copied());
    let stages: BTreeMap<&str, &StageConfig> = s.stages().map(|st| (st.name.as_str(), st)).collect();

    // States.
    crate::state_series::check(s).map_err(|(key, message)| c.fail(&key, message))?;
    let mut state_names = BTreeMap::new();
    for (i, state) in s.states.iter().enumerate() {
        let p = root.key("states").index(i);
        if let Some(first) = state_names.insert(state.name.as_str(), i) {
            return Err(c.fail(
                &p.key("name"),
                format!("state name `{}` is already used by states[{first}]; state names must be unique", state.name),
            ));
        }
        if state.at.is_some() && state.hold.is_some() {
            return Err(c.fail(
                &p.key("hold"),
                "give either `at` (entered at that time) or `hold` (part of a cycle), not both",
            ));
        }
        if let Some(hold) = &state.hold {
            c.dist(hold, &p.key("hold"))?;
        }
        for (name, patch) in &state.set {
            let sp = p.key("set").key(name);
            let Some(base) = stages.get(name.as_str()) else {
                return Err(c.fail(&sp, format!("no stage named `{name}`; the stages are {}", stage_names())));
            };
            c.distributions(patch.distributions(), &sp)?;
            patch.check(base).map_err(|e| c.config(e, name, &sp))?;
            // What the patched stage asks of its neighbours (forwarding to a
            // next stage, a window for the stage before).
            for path in s.links.iter().flat_map(|l| [&l.downlink, &l.uplink]) {
                if let Some(j) = path.iter().position(|st| st.name == *name) {
                    let mut patched = path.clone();
                    patched[j] = patch.applied_to(base);
                    squall_link::check_stage_in_path(&patched, j).map_err(|e| c.config(e, name, &sp))?;
                }
            }
        }
    }

    // Blackouts.
    for (i, b) in s.blackouts.iter().enumerate() {
        let p = root.key("blackouts").index(i);
        c.dist(&b.at, &p.key("at"))?;
        c.dist(&b.duration, &p.key("duration"))?;
        if b.duration.as_constant() == Some(Duration::ZERO) {
            return Err(c.fail(&p.key("duration"), "a blackout needs a positive duration, like duration = \"5 s\""));
        }
        if let Some(every) = &b.every {
            c.dist(every, &p.key("every"))?;
            if every.mean().is_none_or(|m| m <= 0.0) {
                return Err(c.fail(
                    &p.key("every"),
                    "a repeating blackout needs a positive mean time between starts, like every = \"60 s\" or \
                     every = { kind = \"exponential\", mean = \"60 s\" }",
                ));
            }
        }
        if let Some(gap) = &b.gap {
            if b.every.is_some() {
                return Err(c.fail(
                    &p.key("gap"),
                    "a blackout repeats either `every` (start to start) or after a `gap` (end to start), not both; leave one out",
                ));
            }
            c.dist(gap, &p.key("gap"))?;
            if gap.mean().is_none_or(|m| m <= 0.0) {
                return Err(c.fail(
                    &p.key("gap"),
                    "an alternating blackout needs a positive mean time between one's end and the next's start, like \
                     gap = { kind = \"exponential\", mean = \"5 s\" }",
                ));
            }
        }
        for (k, name) in b.stages.iter().flatten().enumerate() {
            if !stages.contains_key(name.as_str()) {
                return Err(c.fail(
                    &p.key("stages").index(k),
                    format!("no stage named `{name}`; the stages are {}", stage_names()),
                ));
            }
        }
    }

    // Workload.
    let mut flow_names = BTreeMap::new();
    for (i, f) in s.workload.udp.iter().enumerate() {
        let p = root.key("workload").key("udp").index(i);
        if let Some(first) = flow_names.insert(f.name.as_str(), i) {
            return Err(c.fail(
                &p.key("name"),
                format!("flow name `{}` is already used by workload.udp[{first}]; flow names must be unique", f.name),
            ));
        }
        for (k, h) in [("from", &f.from), ("to", &f.to)] {
            if !host_index.contains_key(h.as_str()) {
                return Err(c.fail(&p.key(k), format!("no host named `{h}`; the hosts are {}", host_names())));
            }
        }
        if f.from == f.to {
            return Err(c.fail(
                &p.key("to"),
                "a flow goes between two different hosts, like from = \"fixed\", to = \"mobile\"",
            ));
        }
        check_ip_version(&c, &p, &f.from, &f.to, f.ip_version, &topology)?;
        match (&f.rate, &f.interval) {
            (Some(_), Some(_)) => {
                return Err(c.fail(
                    &p.key("interval"),
                    "give either `rate` (like rate = \"64 kbit/s\") or `interval` (like interval = \"20 ms\"), not both",
                ));
            }
            (None, None) => {
                return Err(c.fail(
                    &p,
                    "a flow needs a pace: `rate` (like rate = \"64 kbit/s\") or `interval` (like interval = \"20 ms\")",
                ));
            }
            _ => {}
        }
        match (&f.on, &f.off) {
            (Some(_), None) => {
                return Err(c.fail(&p.key("on"), "give `on` and `off` together, like on = \"1 s\", off = \"2 s\""));
            }
            (None, Some(_)) => {
                return Err(c.fail(&p.key("off"), "give `on` and `off` together, like on = \"1 s\", off = \"2 s\""));
            }
            _ => {}
        }
        c.dist(&f.size, &p.key("size"))?;
        if let Some(largest) = largest_size(&f.size).filter(|b| b.0 > MAX_IP_PACKET) {
            return Err(c.fail(
                &p.key("size"),
                format!(
                    "a UDP packet of {largest} is larger than an IPv4 packet can be ({MAX_IP_PACKET} bytes, RFC 791); \
                     `size` is the whole IP packet, like size = \"1200 B\""
                ),
            ));
        }
        for (k, d) in [("interval", &f.interval), ("on", &f.on), ("off", &f.off)] {
            if let Some(d) = d {
                c.dist(d, &p.key(k))?;
            }
        }
        if !route_exists(&topology, &f.from, &f.to) {
            return Err(c.fail(
                &p.key("to"),
                format!(
                    "no route from `{}` to `{}` over the links; add a link like [[links]] with between = [\"{}\", \"{}\"]",
                    f.from, f.to, f.from, f.to
                ),
            ));
        }
    }
    for (i, f) in s.workload.tcp.iter().enumerate() {
        let p = root.key("workload").key("tcp").index(i);
        if let Some(first) = flow_names.insert(f.name.as_str(), i) {
            return Err(c.fail(
                &p.key("name"),
                format!("flow name `{}` is already used by another workload flow (index {first}); flow names must be unique", f.name),
            ));
        }
        check_tcp(&c, s, f, i, &p, &host_index, &topology)?;
    }
    for (i, cmd) in s.workload.commands.iter().enumerate() {
        let p = root.key("workload").key("commands").index(i);
        if !host_index.contains_key(cmd.host.as_str()) {
            return Err(c.fail(&p.key("host"), format!("no host named `{}`; the hosts are {}", cmd.host, host_names())));
        }
        if cmd.run.trim().is_empty() {
            return Err(c.fail(&p.key("run"), "a command needs a command line, like run = \"iperf3 -s\""));
        }
    }
    check_records(&c, s, &stage_names())
}

/// The `[inline]` table: two different interfaces and rules that put
/// traffic through the link or straight across.
fn check_inline(c: &Checker, s: &Scenario) -> Check {
    let root = KeyPath::root();
    if let Some(inline) = &s.inline {
        let p = root.key("inline");
        let [a, b] = &inline.interfaces;
        for (i, name) in [a, b].into_iter().enumerate() {
            if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\0']) {
                return Err(c.fail(
                    &p.key("interfaces").index(i),
                    format!("`{name}` is not an interface name (1 to 15 bytes, no `/` or space), like \"eth1\""),
                ));
            }
        }
        if a == b {
            return Err(c.fail(&p.key("interfaces"), format!("needs two different interfaces, not `{a}` twice")));
        }
        for (i, rule) in inline.rules.iter().enumerate() {
            let key = p.key("rules").index(i);
            rule.validate_match("rule").map_err(|e| {
                let rest = e.key.strip_prefix("rule.").unwrap_or(&e.key);
                c.fail(&key.dotted(rest), e.message)
            })?;
            if rule.class != "link" && rule.class != "pass" {
                return Err(c.fail(
                    &p.key("rules").index(i).key("class"),
                    format!(
                        "inline rules put traffic in class \"link\" (through the link) or \"pass\" (straight \
                         across), not `{}`",
                        rule.class
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `[[inline.clients]]`: each a host of the scenario, named once, with a
/// MAC or a prefix to know its frames by; every link joins one client to
/// the one host on the other interface's side, and no other host is in
/// the scenario.
fn check_inline_clients(c: &Checker, s: &Scenario, host_index: &BTreeMap<&str, usize>) -> Check {
    let Some(inline) = s.inline.as_ref().filter(|i| !i.clients.is_empty()) else { return Ok(()) };
    let p = KeyPath::root().key("inline").key("clients");
    let host_names = || names(s.hosts.iter().map(|h| h.name.as_str()));
    let mut clients = BTreeMap::new();
    for (i, client) in inline.clients.iter().enumerate() {
        let key = p.index(i);
        if !host_index.contains_key(client.host.as_str()) {
            return Err(
                c.fail(&key.key("host"), format!("no host named `{}`; the hosts are {}", client.host, host_names()))
            );
        }
        if let Some(first) = clients.insert(client.host.as_str(), i) {
            return Err(c.fail(
                &key.key("host"),
                format!("host `{}` is already client {first} of inline.clients; each client once", client.host),
            ));
        }
        if client.mac.is_none() && client.prefix.is_none() {
            return Err(c.fail(
                &key,
                format!(
                    "client `{}` needs a `mac` or a `prefix` to know its frames by, like mac = \"02:00:00:00:00:01\" \
                     or prefix = \"10.9.0.1\"",
                    client.host
                ),
            ));
        }
    }
    let mut far: Option<&str> = None;
    let mut links_of = BTreeMap::new();
    for (j, link) in s.links.iter().enumerate() {
        let key = KeyPath::root().key("links").index(j).key("between");
        let [a, b] = [link.between[0].as_str(), link.between[1].as_str()];
        let other = match (clients.contains_key(a), clients.contains_key(b)) {
            (true, false) => b,
            (false, true) => a,
            _ => {
                return Err(c.fail(
                    &key,
                    format!(
                        "with inline.clients every link joins one client to the host on the other side; `{a}` and \
                         `{b}` are {}",
                        if clients.contains_key(a) { "both clients" } else { "neither a client" }
                    ),
                ));
            }
        };
        match far {
            Some(f) if f != other => {
                return Err(c.fail(
                    &key,
                    format!(
                        "with inline.clients every link ends at the one host on the second interface's side: `{f}` \
                         (links before this one), not `{other}` too"
                    ),
                ));
            }
            _ => far = Some(other),
        }
        let client = if clients.contains_key(a) { a } else { b };
        if let Some(first) = links_of.insert(client, j) {
            return Err(c.fail(&key, format!("client `{client}` already has links[{first}]; each client one link")));
        }
    }
    for (host, i) in &clients {
        if !links_of.contains_key(host) {
            return Err(c.fail(
                &p.index(*i).key("host"),
                format!("client `{host}` has no link; add [[links]] with between = [\"{host}\", ...]"),
            ));
        }
    }
    for (k, h) in s.hosts.iter().enumerate() {
        if !clients.contains_key(h.name.as_str()) && Some(h.name.as_str()) != far {
            return Err(c.fail(
                &KeyPath::root().key("hosts").index(k),
                format!(
                    "host `{}` is neither an inline client nor the host all their links end at; an inline box with \
                     clients has only those",
                    h.name
                ),
            ));
        }
    }
    Ok(())
}

/// The hosts: at least one, names and addresses unique, and each one's
/// sysctls, processing, namespace and outside interface. Returns each
/// host's index by name.
fn check_hosts<'a>(c: &Checker, s: &'a Scenario) -> Result<BTreeMap<&'a str, usize>, ScenarioError> {
    let root = KeyPath::root();
    if s.hosts.is_empty() {
        return Err(c.fail(
            &root.key("hosts"),
            "a scenario needs at least one host, like [[hosts]] with name = \"fixed\" and address = \"10.0.0.1\"",
        ));
    }
    let mut host_index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut addresses = BTreeMap::new();
    for (i, h) in s.hosts.iter().enumerate() {
        let p = root.key("hosts").index(i);
        if h.name.is_empty() {
            return Err(c.fail(&p.key("name"), "a host needs a non-empty name, like name = \"fixed\""));
        }
        if let Some(first) = host_index.insert(&h.name, i) {
            return Err(c.fail(
                &p.key("name"),
                format!("host name `{}` is already used by hosts[{first}]; every host needs its own name", h.name),
            ));
        }
        if h.address.is_none() && h.address6.is_none() {
            return Err(c.fail(
                &p.key("address"),
                "a host needs an address: address = \"10.0.0.1\" (IPv4), address6 = \"fd00::1\" (IPv6) or both",
            ));
        }
        for (key, a) in [("address", h.address.map(IpAddr::V4)), ("address6", h.address6.map(IpAddr::V6))] {
            let Some(a) = a else { continue };
            if a.is_unspecified() || a.is_multicast() {
                return Err(c.fail(
                    &p.key(key),
                    format!("{a} is not a host's address (unspecified or multicast); give a unicast one"),
                ));
            }
            if let Some(first) = addresses.insert(a, i) {
                return Err(c.fail(
                    &p.key(key),
                    format!("address {a} is already used by hosts[{first}]; every host needs its own address"),
                ));
            }
        }
        for key in h.sysctl.keys() {
            check_sysctl_key(key).map_err(|message| c.fail(&p.key("sysctl").key(key), message))?;
        }
        if let Some(processing) = &h.processing {
            c.dist(&processing.delay, &p.key("processing").key("delay"))?;
        }
        if let Some(delay) = &h.stack_delay {
            c.dist(delay, &p.key("stack_delay"))?;
        }
        if let Some(phase) = h.clock_phase
            && phase >= Duration::from_millis(1)
        {
            return Err(c.fail(
                &p.key("clock_phase"),
                format!(
                    "{phase} is not a phase of the millisecond timestamp clock: give a duration below 1 ms, like \"0.4 ms\""
                ),
            ));
        }
        if let Some(name) = &h.netns {
            check_netns_name(name).map_err(|message| c.fail(&p.key("netns"), message))?;
            if let Some(first) = s.hosts[..i].iter().position(|o| o.netns.as_ref() == Some(name)) {
                return Err(c.fail(
                    &p.key("netns"),
                    format!(
                        "hosts[{first}] (`{}`) is already namespace `{name}`; each host needs a namespace of its own",
                        s.hosts[first].name
                    ),
                ));
            }
        }
        let keys = [
            h.netns.is_some().then_some("netns"),
            h.netns_pid.is_some().then_some("netns_pid"),
            h.outside_interface.is_some().then_some("outside_interface"),
        ];
        let set: Vec<&str> = keys.into_iter().flatten().collect();
        if let [first, second, ..] = set[..] {
            return Err(c.fail(
                &p.key(second),
                format!(
                    "host `{}` has both `{first}` and `{second}`: a host is one namespace, an existing one (netns or \
                     netns_pid) or the outside (outside_interface); keep one",
                    h.name
                ),
            ));
        }
        if h.netns_pid == Some(0) {
            return Err(
                c.fail(&p.key("netns_pid"), "0 is no process id; name a running process, like netns_pid = 4242")
            );
        }
        if let Some(iface) = &h.outside_interface {
            check_interface_name(iface).map_err(|message| c.fail(&p.key("outside_interface"), message))?;
            if let Some(first) = s.hosts[..i].iter().position(|o| o.outside_interface.is_some()) {
                return Err(c.fail(
                    &p.key("outside_interface"),
                    format!(
                        "hosts[{first}] (`{}`) is already the outside host; one host stands for everything beyond \
                         the scenario",
                        s.hosts[first].name
                    ),
                ));
            }
        }
    }
    Ok(host_index)
}

/// The links: two different known hosts each, and every stage of either
/// path (unique names, the stage's own checks, its place in the path).
/// Returns each stage's key path by name.
fn check_links<'a>(
    c: &Checker,
    s: &'a Scenario,
    host_index: &BTreeMap<&str, usize>,
) -> Result<BTreeMap<&'a str, KeyPath>, ScenarioError> {
    let root = KeyPath::root();
    let host_names = || names(s.hosts.iter().map(|h| h.name.as_str()));
    let mut stage_at: BTreeMap<&str, KeyPath> = BTreeMap::new();
    for (i, link) in s.links.iter().enumerate() {
        let p = root.key("links").index(i);
        for (k, h) in link.between.iter().enumerate() {
            if !host_index.contains_key(h.as_str()) {
                return Err(
                    c.fail(&p.key("between").index(k), format!("no host named `{h}`; the hosts are {}", host_names()))
                );
            }
        }
        if link.between[0] == link.between[1] {
            return Err(
                c.fail(&p.key("between"), "a link joins two different hosts, like between = [\"fixed\", \"mobile\"]")
            );
        }
        for (dir, stages) in [("downlink", &link.downlink), ("uplink", &link.uplink)] {
            let dp = p.key(dir);
            if stages.is_empty() {
                return Err(c.fail(
                    &dp,
                    format!(
                        "a path needs at least one stage, like [[links.{dir}]] with name = \"{dir}\" and rate = \"10 Mbit/s\""
                    ),
                ));
            }
            for (j, st) in stages.iter().enumerate() {
                let sp = dp.index(j);
                if let Some(first) = stage_at.get(st.name.as_str()) {
                    return Err(c.fail(
                        &sp.key("name"),
                        format!(
                            "stage name `{}` is already used by {first}; stage names must be unique in the scenario, like \"{}-2\"",
                            st.name, st.name
                        ),
                    ));
                }
                c.stage(st, &sp)?;
                squall_link::check_stage_in_path(stages, j).map_err(|e| c.config(e, &st.name, &sp))?;
                stage_at.insert(&st.name, sp);
            }
        }
    }
    Ok(stage_at)
}

/// The checks of the `[[record]]` entries (crate::record): a known source
/// and a quantity it has, a positive `every`.
fn check_records(c: &Checker, s: &Scenario, stage_names: &str) -> Check {
    use crate::record::{CLASS_QUANTITIES, FLOW_QUANTITIES, Quantity, STAGE_QUANTITIES};
    let list = |q: &[&str]| q.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    for (i, r) in s.record.iter().enumerate() {
        let p = KeyPath::root().key("record").index(i);
        let (allowed, key) = match (&r.stage, &r.flow) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(c.fail(
                    &p,
                    "a record names one source: a stage (stage = \"bottleneck\") or a TCP flow (flow = \"bulk\")",
                ));
            }
            (Some(name), None) => {
                if s.stage(name).is_none() {
                    return Err(
                        c.fail(&p.key("stage"), format!("no stage named `{name}`; the stages are {stage_names}"))
                    );
                }
                match &r.class {
                    Some(class) => {
                        check_recorded_class(c, s, name, class, &p.key("class"))?;
                        (CLASS_QUANTITIES, "class")
                    }
                    None => (STAGE_QUANTITIES, "stage"),
                }
            }
            (None, Some(_)) if r.class.is_some() => {
                return Err(c.fail(
                    &p.key("class"),
                    "`class` names a class of a stage's queue: give the stage too (stage = \"bottleneck\", class = \
                     \"voice\"), not a flow",
                ));
            }
            (None, Some(name)) => {
                if !s.workload.tcp.iter().any(|f| f.name == *name) {
                    let what = if s.workload.udp.iter().any(|f| f.name == *name) {
                        format!("`{name}` is a UDP flow; flow quantities are a TCP sender's")
                    } else {
                        format!("no flow named `{name}`")
                    };
                    return Err(c.fail(
                        &p.key("flow"),
                        format!("{what}; the TCP flows are {}", names(s.workload.tcp.iter().map(|f| f.name.as_str()))),
                    ));
                }
                (FLOW_QUANTITIES, "flow")
            }
        };
        if !Quantity::parse(&r.quantity).is_some_and(|q| allowed.contains(&q.name().as_str())) {
            return Err(c.fail(
                &p.key("quantity"),
                format!("a {key} has no quantity `{}`; a {key}'s are {}", r.quantity, list(allowed)),
            ));
        }
        if r.every == Some(Duration::ZERO) {
            return Err(c.fail(
                &p.key("every"),
                "a sampling interval must be positive, like every = \"10 ms\" (or no `every`: a sample at every change)",
            ));
        }
        if r.every.is_none() && Quantity::parse(&r.quantity).is_some_and(Quantity::needs_interval) {
            return Err(c.fail(
                &p.key("quantity"),
                format!(
                    "`{}` is bits per second over a window: give the window as the sampling interval, like every = \
                     \"100 ms\"",
                    r.quantity
                ),
            ));
        }
        if let Some(name) = &r.stage
            && Quantity::parse(&r.quantity) == Some(Quantity::Rate)
        {
            check_recorded_rate(c, s, name, &p.key("quantity"))?;
        }
    }
    Ok(())
}

/// A recorded class is one of the stage's `queue.classes`.
fn check_recorded_class(c: &Checker, s: &Scenario, stage: &str, class: &str, p: &KeyPath) -> Check {
    let Some(config) = s.stage(stage) else {
        return Ok(());
    };
    let classes = &config.queue.classes;
    if classes.is_empty() {
        return Err(c.fail(
            p,
            format!(
                "stage `{stage}` has no classes (its queue has no `classes`); record the stage's own quantities \
                 without `class`, or give its queue classes"
            ),
        ));
    }
    if !classes.iter().any(|k| k.name == class) {
        return Err(c.fail(
            p,
            format!(
                "stage `{stage}` has no class `{class}`; its classes are {}",
                names(classes.iter().map(|k| k.name.as_str()))
            ),
        ));
    }
    Ok(())
}

/// A stage whose `rate` is recorded has its transmission time given by a
/// rate, in its configuration and in every state that sets it: a trace,
/// a radio, a rate series or a service time vary per packet or give no
/// rate, and their delivered rate is the stage's `throughput`.
fn check_recorded_rate(c: &Checker, s: &Scenario, name: &str, p: &KeyPath) -> Check {
    let Some(stage) = s.stage(name) else {
        return Ok(());
    };
    let how = if stage.trace.is_some() {
        Some("a delivery trace")
    } else if stage.radio.is_some() {
        Some("a radio link")
    } else if stage.series.rate.is_some() {
        Some("a rate series")
    } else if stage.service_time.is_some()
        || s.states.iter().any(|st| st.set.get(name).is_some_and(|patch| patch.sets("service_time")))
    {
        Some("a service time")
    } else {
        None
    };
    match how {
        Some(how) => Err(c.fail(
            p,
            format!(
                "stage `{name}` gives its transmission times by {how}, not a rate in force; record its \
                 `throughput` (every = \"100 ms\") instead"
            ),
        )),
        None => Ok(()),
    }
}

/// The largest IPv4 packet, bytes (RFC 791: a 16-bit total length).
const MAX_IP_PACKET: u64 = 65_535;

/// The largest value a size distribution can draw, where it has one.
fn largest_size(d: &Distribution<squall_link::Bytes>) -> Option<squall_link::Bytes> {
    match d {
        Distribution::Constant { value } => Some(*value),
        Distribution::Uniform { high, .. } => Some(*high),
        Distribution::TwoStateMarkov { a, b, .. } => Some((*a).max(*b)),
        Distribution::Empirical { values, .. } => values.iter().copied().max(),
        Distribution::Cdf { points, .. } => points.last().map(|p| squall_link::dist::Quantity::from_base(p[0])),
        _ => None,
    }
}

/// Whether packets from host `from` reach host `to` (both known hosts).
fn route_exists(topology: &Topology, from: &str, to: &str) -> bool {
    match (topology.host_index(from), topology.host_index(to)) {
        (Some(a), Some(b)) => topology.route(a, b).is_some(),
        _ => false,
    }
}
