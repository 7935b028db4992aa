//! The checks of the TCP workload: `count` entries, Poisson `arrivals`,
//! the hosts a flow joins, its IP version and its pairing with a server.

use super::*;

/// The checks of a `[[workload.tcp]]` entry with `count = n`
/// (crate::count): at least one flow, ports from the host's range, a
/// server port for each.
fn check_count(c: &Checker, f: &crate::schema::TcpFlow, entry: usize, n: u32, p: &KeyPath) -> Check {
    if n == 0 {
        return Err(c.fail(&p.key("count"), "an entry stands for at least one flow, like count = 100"));
    }
    if f.src_port.is_some() {
        return Err(c.fail(
            &p.key("src_port"),
            "the flows of a `count` entry take their client ports from the host's ephemeral_ports range; leave \
             src_port out",
        ));
    }
    let first = crate::count::first_server_port(f, entry).unwrap_or(u32::MAX);
    if !f.server_ports.is_per_flow() && first > 65_535 {
        return Err(c.fail(
            &p.key("count"),
            format!("the server port 5000 + {entry} is past 65535; give dst_port, like dst_port = 5000"),
        ));
    }
    if f.server_ports.is_per_flow() && u64::from(first) + u64::from(n) - 1 > 65_535 {
        let key = if f.dst_port.is_some() { "dst_port" } else { "count" };
        return Err(c.fail(
            &p.key(key),
            format!(
                "{n} flows need the server ports {first} to {} (dst_port + flow index), past 65535; let them \
                 share one listening port, server_ports = \"shared\", or give a lower dst_port, like dst_port = \
                 1024, or a smaller count",
                u64::from(first) + u64::from(n) - 1
            ),
        ));
    }
    Ok(())
}

/// The most flows an `arrivals` entry may expect (its window over its
/// mean gap): more is a typo in a gap or a load, not an experiment.
const MAX_EXPECTED_ARRIVALS: f64 = 1e6;

/// The checks of a `[[workload.tcp]]` entry with `arrivals`
/// (crate::count): bulk flows with ephemeral client ports, exactly one
/// of `poisson` and `gap`, gaps that move time on, a window in the run.
fn check_arrivals(
    c: &Checker,
    s: &Scenario,
    f: &crate::schema::TcpFlow,
    a: &crate::schema::FlowArrivals,
    p: &KeyPath,
) -> Check {
    let ap = p.key("arrivals");
    if f.count.is_some() {
        return Err(c.fail(&p.key("count"), "an entry has either count or arrivals, not both; leave count out"));
    }
    if f.src_port.is_some() {
        return Err(c.fail(
            &p.key("src_port"),
            "the flows of an `arrivals` entry take their client ports from the host's ephemeral_ports range; \
             leave src_port out",
        ));
    }
    if f.start != Distribution::constant(Duration::ZERO) {
        return Err(c.fail(
            &p.key("start"),
            "with arrivals, flows start within the arrivals window; leave start out and give arrivals' from, like \
             arrivals = { gap = \"10 ms\", from = \"1 s\" }",
        ));
    }
    let crate::schema::TcpApp::Bulk(size) = &f.app else {
        return Err(c.fail(
            &p.key("app"),
            "arrivals start bulk flows; give their size or its distribution, like app = { bulk = { kind = \
             \"empirical\", file = \"sizes.txt\" } }",
        ));
    };
    let mean_gap = match (&a.poisson, &a.gap) {
        (None, None) => {
            return Err(c.fail(
                &ap,
                "arrivals need a process: poisson = { load = \"60%\", of = \"STAGE\" } or gap = DISTRIBUTION",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(c.fail(&ap.key("gap"), "arrivals have either poisson or gap, not both; leave one out"));
        }
        (None, Some(gap)) => {
            c.dist(gap, &ap.key("gap"))?;
            if gap.mean() == Some(0.0) {
                return Err(c.fail(
                    &ap.key("gap"),
                    "gaps of 0 s start every flow at once, forever; give gaps with a positive mean, like gap = { \
                     kind = \"exponential\", mean = \"10 ms\" }",
                ));
            }
            gap.mean().map(|ns| ns / 1e9)
        }
        (Some(poisson), None) => {
            let pp = ap.key("poisson");
            if poisson.load.get() <= 0.0 {
                return Err(c.fail(&pp.key("load"), "the load must be above 0, like load = \"60%\""));
            }
            let Some(rate) = crate::count::stage_rate(s, &poisson.of) else {
                return Err(c.fail(
                    &pp.key("of"),
                    format!(
                        "`{}` is not a stage with a rate; the load is a share of a stage's rate, like of = \
                         \"bottleneck\" for a stage named so with rate = \"10 Mbit/s\"",
                        poisson.of
                    ),
                ));
            };
            let Some(gap) = size.mean().and_then(|m| crate::count::poisson_mean_gap(m, poisson.load.get(), rate))
            else {
                return Err(c.fail(
                    &p.key("app").key("bulk"),
                    "a load needs sizes with a positive mean (a Pareto shape above 1, an empirical file with a \
                     size above 0 B)",
                ));
            };
            Some(gap.as_secs_f64())
        }
    };
    let until = a.until.unwrap_or(s.duration);
    if a.until.is_some_and(|u| u > s.duration) {
        return Err(c.fail(
            &ap.key("until"),
            format!(
                "until is after the run's end ({}); give a time within it, like until = \"{}\"",
                s.duration, s.duration
            ),
        ));
    }
    if a.from >= until {
        return Err(
            c.fail(&ap.key("from"), format!("the window is empty: from ({}) must be before until ({until})", a.from))
        );
    }
    if let Some(g) = mean_gap {
        let expected = (until - a.from).as_secs_f64() / g;
        if expected > MAX_EXPECTED_ARRIVALS {
            return Err(c.fail(
                &ap,
                format!(
                    "{expected:.0} flows expected (the window over a mean gap of {g:e} s), more than {MAX_EXPECTED_ARRIVALS:e}; \
                     a longer gap, a lower load or a shorter window"
                ),
            ));
        }
    }
    Ok(())
}

/// The checks of one `[[workload.tcp]]` entry.
pub(super) fn check_tcp(
    c: &Checker,
    s: &Scenario,
    f: &crate::schema::TcpFlow,
    entry: usize,
    p: &KeyPath,
    host_index: &BTreeMap<&str, usize>,
    topology: &Topology,
) -> Check {
    let host_names = || names(s.hosts.iter().map(|h| h.name.as_str()));
    let many = f.count.is_some() || f.arrivals.is_some();
    if f.pairing.is_some() && !many {
        return Err(c.fail(
            &p.key("pairing"),
            "pairing is for the flows of a `count` or `arrivals` entry between host groups; leave it out, or give \
             count = N",
        ));
    }
    for (k, h) in [("from", Some(&f.from)), ("to", Some(&f.to)), ("proxy", f.proxy.as_ref())] {
        if let Some(h) = h
            && !host_index.contains_key(h.as_str())
        {
            if k != "proxy" && crate::pattern::is_group(s, h) {
                if f.pairing.is_none() {
                    return Err(c.fail(
                        &p.key(k),
                        format!(
                            "`{h}` is a host group: the flows of a `count` or `arrivals` entry run between groups by \
                             a rule, like pairing = \"all_to_one\" (or \"pairs\", \"random\"); one flow names a host"
                        ),
                    ));
                }
                continue;
            }
            return Err(c.fail(&p.key(k), format!("no host named `{h}`; the hosts are {}", host_names())));
        }
    }
    if let Some(rule) = f.pairing {
        if f.ip_version.is_some_and(|v| v != 4) {
            return Err(
                c.fail(&p.key("ip_version"), "host groups' members have IPv4 addresses only: leave it out or give 4")
            );
        }
        check_pairing(c, s, f, rule, p, topology)?;
    } else {
        check_ends(c, f, p, topology)?;
    }
    check_tcp_keys(c, s, f, entry, p)
}

/// A flow's two ends: different hosts with a route both ways.
fn check_ends(c: &Checker, f: &crate::schema::TcpFlow, p: &KeyPath, topology: &Topology) -> Check {
    if f.from == f.to {
        return Err(
            c.fail(&p.key("to"), "a flow goes between two different hosts, like from = \"fixed\", to = \"mobile\"")
        );
    }
    if let Some(proxy) = &f.proxy
        && (proxy == &f.from || proxy == &f.to)
    {
        return Err(c.fail(
            &p.key("proxy"),
            "the split-TCP proxy is a host between the two ends, like proxy = \"base-station\"",
        ));
    }
    check_ip_version(c, p, &f.from, &f.to, f.ip_version, topology)?;
    // Data one way, acknowledgements the other.
    if !route_exists(topology, &f.from, &f.to) || !route_exists(topology, &f.to, &f.from) {
        return Err(c.fail(
            &p.key("to"),
            format!(
                "no route from `{}` to `{}` over the links; add a link like [[links]] with between = [\"{}\", \"{}\"]",
                f.from, f.to, f.from, f.to
            ),
        ));
    }
    Ok(())
}

/// A flow's IP version: 4 or 6, and one both ends have an address of
/// (left out: any family both have).
pub(super) fn check_ip_version(
    c: &Checker,
    p: &KeyPath,
    from: &str,
    to: &str,
    ip_version: Option<u8>,
    topology: &Topology,
) -> Check {
    if ip_version.is_some_and(|v| v != 4 && v != 6) {
        return Err(c.fail(&p.key("ip_version"), "must be 4 or 6, like ip_version = 6"));
    }
    let (Some(a), Some(b)) = (topology.host_index(from), topology.host_index(to)) else { return Ok(()) };
    if topology.flow_addresses(a, b, ip_version).is_some() {
        return Ok(());
    }
    let (key, message) = match ip_version {
        Some(4) => ("ip_version", format!("`{from}` and `{to}` need an IPv4 address each (address = \"10.0.0.1\")")),
        Some(_) => ("ip_version", format!("`{from}` and `{to}` need an IPv6 address each (address6 = \"fd00::1\")")),
        None => (
            "to",
            format!(
                "`{from}` and `{to}` have no IP version in common: give both an IPv4 address (address) or both an \
                 IPv6 one (address6)"
            ),
        ),
    };
    Err(c.fail(&p.key(key), message))
}

/// The host pairs of an entry with `pairing` (crate::count): `to` one host
/// for `all_to_one`, groups of one size for `pairs`, and routes both ways
/// for every pair the rule can make (for `random`, between the first
/// hosts of each side; the engines name any other pair without a route).
fn check_pairing(
    c: &Checker,
    s: &Scenario,
    f: &crate::schema::TcpFlow,
    rule: crate::schema::Pairing,
    p: &KeyPath,
    topology: &Topology,
) -> Check {
    use crate::schema::Pairing;
    let hosts = |name: &str| -> Vec<String> {
        let g = crate::pattern::group_hosts(s, name);
        if g.is_empty() { vec![name.to_string()] } else { g.iter().map(|h| h.name.clone()).collect() }
    };
    let (from, to) = (hosts(&f.from), hosts(&f.to));
    let pairs: Vec<(&String, &String)> = match rule {
        Pairing::AllToOne => {
            if to.len() > 1 {
                return Err(c.fail(
                    &p.key("to"),
                    format!(
                        "all_to_one sends every flow to one host, and `{}` is a group of {}; name one host, or use \
                         pairing = \"pairs\" or \"random\"",
                        f.to,
                        to.len()
                    ),
                ));
            }
            from.iter().map(|h| (h, &to[0])).collect()
        }
        Pairing::Pairs => {
            if from.len() != to.len() {
                return Err(c.fail(
                    &p.key("pairing"),
                    format!(
                        "pairs joins host k of `from` to host k of `to`, and `{}` has {} hosts, `{}` {}; give groups \
                         of one size, or use pairing = \"random\"",
                        f.from,
                        from.len(),
                        f.to,
                        to.len()
                    ),
                ));
            }
            from.iter().zip(&to).collect()
        }
        Pairing::Random => {
            if from.len() == 1 && to.len() == 1 {
                return check_ends(c, f, p, topology);
            }
            let other = to.iter().find(|h| **h != from[0]).unwrap_or(&to[0]);
            vec![(&from[0], other)]
        }
    };
    for (a, b) in pairs {
        if a == b {
            return Err(c.fail(
                &p.key("pairing"),
                format!("the rule makes a flow from `{a}` to itself; a flow goes between two different hosts"),
            ));
        }
        if !route_exists(topology, a, b) || !route_exists(topology, b, a) {
            return Err(c.fail(
                &p.key("to"),
                format!("no route both ways between `{a}` and `{b}`, a pair the rule makes; add links between them"),
            ));
        }
    }
    Ok(())
}

/// The checks of a `[[workload.tcp]]` entry's own keys.
fn check_tcp_keys(c: &Checker, s: &Scenario, f: &crate::schema::TcpFlow, entry: usize, p: &KeyPath) -> Check {
    use crate::schema::{DelayedAckSpec, TcpApp};
    let mss = f.mss().0;
    if !(1..=65_495).contains(&mss) {
        return Err(c.fail(&p.key("mss"), "the MSS must be between 1 and 65495 bytes, like mss = \"1460 B\""));
    }
    if f.rwnd().0 == 0 || f.rwnd().0 > (65_535u64 << 14) {
        return Err(c.fail(&p.key("rwnd"), "the receive window must be between 1 B and 1 GiB, like rwnd = \"64 KiB\""));
    }
    if f.initial_window == Some(0) {
        return Err(
            c.fail(&p.key("initial_window"), "the initial window needs at least one segment, like initial_window = 2")
        );
    }
    if f.dupack_threshold == Some(0) {
        return Err(c.fail(
            &p.key("dupack_threshold"),
            "fast retransmit needs at least one duplicate ACK, like dupack_threshold = 3 (RFC 5681)",
        ));
    }
    if let Some(w) = f.initial_ssthresh
        && w.bytes(mss) < 2 * mss
    {
        return Err(
            c.fail(&p.key("initial_ssthresh"), "ssthresh must be at least 2 segments, like initial_ssthresh = 32")
        );
    }
    for (k, w) in [("max_window", f.max_window), ("proxy_buffer", f.proxy_buffer)] {
        if let Some(w) = w
            && w.bytes(mss) < mss
        {
            return Err(c.fail(&p.key(k), format!("{k} must hold at least one segment, like {k} = 50")));
        }
    }
    if f.proxy_buffer.is_some() && f.proxy.is_none() {
        return Err(c.fail(&p.key("proxy_buffer"), "proxy_buffer needs a proxy, like proxy = \"base-station\""));
    }
    if matches!(f.delayed_ack, Some(DelayedAckSpec::Timer(t)) if t == Duration::ZERO) {
        return Err(c.fail(
            &p.key("delayed_ack"),
            "the delayed-ACK timer must be positive, like delayed_ack = \"200 ms\" (or false)",
        ));
    }
    c.dist(&f.start, &p.key("start"))?;
    if !f.server_ports.is_per_flow() {
        if f.count.is_none() && f.arrivals.is_none() {
            return Err(c.fail(
                &p.key("server_ports"),
                "server_ports is for the flows of a `count` or `arrivals` entry; leave it out, or give count = N",
            ));
        }
        if f.proxy.is_some() {
            return Err(c.fail(
                &p.key("server_ports"),
                "a split-TCP proxy takes a flow by its server port, so flows through a proxy need ports of their \
                 own; leave server_ports out",
            ));
        }
    }
    if let Some(n) = f.count {
        check_count(c, f, entry, n, p)?;
    }
    if let Some(a) = &f.arrivals {
        check_arrivals(c, s, f, a, p)?;
    }
    let app = p.key("app");
    match &f.app {
        TcpApp::Bulk(size) => c.dist(size, &app.key("bulk"))?,
        TcpApp::BulkFor(d) if *d == Duration::ZERO => {
            return Err(
                c.fail(&app.key("bulk_for"), "bulk_for needs a positive time, like app = { bulk_for = \"60 s\" }")
            );
        }
        TcpApp::BulkFor(_) => {}
        TcpApp::RequestResponse(rr) => {
            let rp = app.key("request_response");
            if rr.count == 0 {
                return Err(c.fail(&rp.key("count"), "at least one exchange, like count = 10"));
            }
            if rr.request.0 == 0 {
                return Err(c.fail(&rp.key("request"), "a request has at least one byte, like request = \"300 B\""));
            }
        }
        TcpApp::Web(web) => {
            let wp = app.key("web");
            match (&web.size, &web.site) {
                (Some(_), Some(_)) => {
                    return Err(c.fail(&wp.key("site"), "give either `size` or `site`, not both"));
                }
                (None, None) => {
                    return Err(c.fail(
                        &wp.key("size"),
                        "a page needs object sizes: size = \"3 KB\" (or a distribution), or site = \"site.csv\"",
                    ));
                }
                (Some(size), None) => {
                    if web.objects.is_none() {
                        return Err(c.fail(&wp.key("objects"), "how many objects of `size`, like objects = 10"));
                    }
                    c.dist(size, &wp.key("size"))?;
                }
                (None, Some(_)) => {
                    if let Some(n) = web.objects
                        && n as usize > web.site_files.len()
                    {
                        return Err(c.fail(
                            &wp.key("objects"),
                            format!(
                                "the site has {} files; objects may be at most that (or left out: every file)",
                                web.site_files.len()
                            ),
                        ));
                    }
                }
            }
            if web.object_count() == 0 {
                return Err(c.fail(&wp.key("objects"), "a page has at least one object, like objects = 10"));
            }
            if web.request.0 == 0 {
                return Err(c.fail(&wp.key("request"), "a request has at least one byte, like request = \"300 B\""));
            }
            if !web.keep_alive && web.max_requests > 0 {
                return Err(c.fail(
                    &wp.key("max_requests"),
                    "limits requests per persistent connection: needs keep_alive = true (without keep-alive every connection carries one)",
                ));
            }
            if web.keep_alive_timeout.is_some_and(|t| t == Duration::ZERO) {
                return Err(c.fail(
                    &wp.key("keep_alive_timeout"),
                    "must be positive, like keep_alive_timeout = \"15 s\" (Apache's default), or left out: no limit",
                ));
            }
            if !web.keep_alive && web.keep_alive_timeout.is_some() {
                return Err(c.fail(&wp.key("keep_alive_timeout"), "needs keep_alive = true"));
            }
            if web.server_timeout.is_some_and(|t| t == Duration::ZERO) {
                return Err(c.fail(
                    &wp.key("server_timeout"),
                    "must be positive, like server_timeout = \"300 s\" (Apache's Timeout), or left out: no limit",
                ));
            }
        }
    }
    Ok(())
}
