//! Topologies by pattern and host pairs by rule (issue 35): host groups
//! expanded into hosts, a link with a group at one end into a link per
//! host, the flows of a `count` entry between groups; located errors for
//! bad patterns.

use std::path::Path;

use squall_scenario::count::expand_tcp;
use squall_scenario::{Scenario, parse};

/// A dumbbell: `n` hosts each side, each joined to its router, and the
/// bottleneck between the routers; `extra` after.
fn dumbbell(n: u32, prefix: &str, extra: &str) -> String {
    format!(
        r#"name = "dumbbell"
duration = "1 s"
[[hosts]]
name = "r1"
address = "10.0.0.1"
[[hosts]]
name = "r2"
address = "10.0.0.2"
[[host_groups]]
name = "left"
count = {n}
prefix = "{prefix}"
[[host_groups]]
name = "right"
count = {n}
prefix = "10.2.0.0/16"
[[links]]
between = ["left", "r1"]
downlink = [{{ name = "lu", rate = "1 Gbit/s" }}]
uplink = [{{ name = "ld", rate = "1 Gbit/s" }}]
[[links]]
between = ["r1", "r2"]
downlink = [{{ name = "bottleneck", rate = "100 Mbit/s", delay = "20 ms" }}]
uplink = [{{ name = "back", rate = "100 Mbit/s", delay = "20 ms" }}]
[[links]]
between = ["r2", "right"]
downlink = [{{ name = "rd", rate = "1 Gbit/s" }}]
uplink = [{{ name = "ru", rate = "1 Gbit/s" }}]
{extra}"#
    )
}

fn load(text: &str) -> Result<Scenario, String> {
    parse("d.toml", text, Path::new(".")).map_err(|e| format!("{e:?}"))
}

/// The line of `text` that starts with `start` (1-based).
fn line_of(text: &str, start: &str) -> usize {
    text.lines().position(|l| l.starts_with(start)).expect("the line") + 1
}

#[test]
fn groups_and_group_links_expand_in_full_and_the_result_reads_back_alike() {
    let s = load(&dumbbell(3, "10.1.0.0/16", "")).unwrap();
    let names: Vec<(&str, String, Option<&str>)> =
        s.hosts.iter().map(|h| (h.name.as_str(), h.address.unwrap().to_string(), h.group.as_deref())).collect();
    assert_eq!(
        names,
        [
            ("r1", "10.0.0.1".into(), None),
            ("r2", "10.0.0.2".into(), None),
            ("left-0", "10.1.0.1".into(), Some("left")),
            ("left-1", "10.1.0.2".into(), Some("left")),
            ("left-2", "10.1.0.3".into(), Some("left")),
            ("right-0", "10.2.0.1".into(), Some("right")),
            ("right-1", "10.2.0.2".into(), Some("right")),
            ("right-2", "10.2.0.3".into(), Some("right")),
        ]
    );
    assert!(s.host_groups.is_empty());
    let links: Vec<([&str; 2], &str, &str)> = s
        .links
        .iter()
        .map(|l| {
            ([l.between[0].as_str(), l.between[1].as_str()], l.downlink[0].name.as_str(), l.uplink[0].name.as_str())
        })
        .collect();
    assert_eq!(
        links,
        [
            (["left-0", "r1"], "lu-0", "ld-0"),
            (["left-1", "r1"], "lu-1", "ld-1"),
            (["left-2", "r1"], "lu-2", "ld-2"),
            (["r1", "r2"], "bottleneck", "back"),
            (["r2", "right-0"], "rd-0", "ru-0"),
            (["r2", "right-1"], "rd-1", "ru-1"),
            (["r2", "right-2"], "rd-2", "ru-2"),
        ]
    );
    // The scenario a run writes out lists every host and link, and reads
    // back as the same scenario.
    let written = toml::to_string(&s).unwrap();
    assert!(!written.contains("host_groups"));
    assert_eq!(written.matches("[[hosts]]").count(), 8);
    assert_eq!(load(&written).unwrap(), s);
}

/// A group with `prefix6` gives each host an IPv6 address too, the
/// network's + 1 + k as for IPv4 (worked by hand: fd00:1::1, ::2, ::3);
/// one without gives none. The flows between the groups then run over
/// IPv6 when both ends have one (RFC 8305 §4's preference).
#[test]
fn a_group_with_prefix6_gives_ipv6_addresses_too() {
    let text = dumbbell(3, "10.1.0.0/16", "").replacen(
        "prefix = \"10.1.0.0/16\"\n",
        "prefix = \"10.1.0.0/16\"\nprefix6 = \"fd00:1::/64\"\n",
        1,
    );
    let s = load(&text).unwrap();
    let v6: Vec<(&str, Option<String>)> =
        s.hosts.iter().map(|h| (h.name.as_str(), h.address6.map(|a| a.to_string()))).collect();
    assert_eq!(
        v6,
        [
            ("r1", None),
            ("r2", None),
            ("left-0", Some("fd00:1::1".into())),
            ("left-1", Some("fd00:1::2".into())),
            ("left-2", Some("fd00:1::3".into())),
            ("right-0", None),
            ("right-1", None),
            ("right-2", None),
        ]
    );
    let written = toml::to_string(&s).unwrap();
    assert_eq!(written.matches("address6 = ").count(), 3);
    assert_eq!(load(&written).unwrap(), s);
    // Bad IPv6 networks, each at its key.
    let cases = [
        ("fd00:1::/127", "3 hosts do not fit in fd00:1::/127, which has 1 host addresses"),
        ("fd00:1::5/64", "host bits set: the network is fd00:1::/64"),
        ("10.1.0.0/16", "not an IPv6 network"),
        ("ff05::/64", "multicast"),
    ];
    for (prefix6, expect) in cases {
        let bad = dumbbell(3, "10.1.0.0/16", "").replacen(
            "prefix = \"10.1.0.0/16\"\n",
            &format!("prefix = \"10.1.0.0/16\"\nprefix6 = \"{prefix6}\"\n"),
            1,
        );
        let e = load(&bad).expect_err(expect);
        assert!(e.contains(expect), "{expect:?} not in {e}");
        assert!(e.contains(&format!("d.toml:{}:", line_of(&bad, "prefix6 = "))), "{e}");
    }
    // Addresses another host or group has.
    let clash = text.replacen("address = \"10.0.0.2\"\n", "address = \"10.0.0.2\"\naddress6 = \"fd00:1::2\"\n", 1);
    let e = load(&clash).expect_err("a host's address6 in the group's range");
    assert!(e.contains("include hosts[1]'s address6 fd00:1::2"), "{e}");
    let both = text.replacen("prefix = \"10.2.0.0/16\"\n", "prefix = \"10.2.0.0/16\"\nprefix6 = \"fd00:1::/120\"\n", 1);
    let e = load(&both).expect_err("overlapping groups");
    assert!(e.contains("overlap those of host_groups[0] (`left`)"), "{e}");
}

#[test]
fn count_flows_pick_their_hosts_by_the_rule() {
    let flows = |rule: &str, to: &str| {
        let text = dumbbell(
            4,
            "10.1.0.0/16",
            &format!(
                "[[workload.tcp]]\nname = \"f\"\nfrom = \"left\"\nto = \"{to}\"\ncount = 10\npairing = \"{rule}\"\n\
                 app = {{ bulk = \"10 KB\" }}\n"
            ),
        );
        let s = load(&text).unwrap();
        expand_tcp(&s, 0, 7).into_iter().map(|m| (m.flow.from, m.flow.to)).collect::<Vec<_>>()
    };
    let all = flows("all_to_one", "right-3");
    assert_eq!(all.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(), {
        let mut v = Vec::new();
        for k in 0..10 {
            v.push(["left-0", "left-1", "left-2", "left-3"][k % 4]);
        }
        v
    });
    assert!(all.iter().all(|(_, t)| t == "right-3"));
    let pairs = flows("pairs", "right");
    for (k, (f, t)) in pairs.iter().enumerate() {
        assert_eq!((f.as_str(), t.as_str()), (format!("left-{}", k % 4).as_str(), format!("right-{}", k % 4).as_str()));
    }
    // Random: the same draws for the same seed, every host a member, and
    // not all the same pair.
    let random = flows("random", "right");
    assert_eq!(random, flows("random", "right"));
    assert!(random.iter().all(|(f, t)| f.starts_with("left-") && t.starts_with("right-")));
    assert!(random.iter().any(|p| *p != random[0]));
}

/// Random pairs within one group never join a host to itself, and every
/// ordered pair turns up about as often (2 000 flows over 4 hosts: 12
/// pairs, 166.7 each; each count within 5 standard deviations,
/// sqrt(2000 · 1/12 · 11/12) = 12.4).
#[test]
fn random_pairs_in_one_group_are_uniform_and_never_a_host_with_itself() {
    let text = dumbbell(
        4,
        "10.1.0.0/16",
        "[[links]]\nbetween = [\"r1\", \"hub\"]\ndownlink = [{ name = \"h1\", rate = \"1 Gbit/s\" }]\n\
         uplink = [{ name = \"h2\", rate = \"1 Gbit/s\" }]\n[[hosts]]\nname = \"hub\"\naddress = \"10.0.0.3\"\n\
         [[workload.tcp]]\nname = \"f\"\nfrom = \"left\"\nto = \"left\"\ncount = 2000\npairing = \"random\"\n\
         server_ports = \"shared\"\napp = { bulk = \"10 KB\" }\n",
    );
    let s = load(&text).unwrap();
    let mut counts = std::collections::BTreeMap::new();
    for m in expand_tcp(&s, 0, 3) {
        assert_ne!(m.flow.from, m.flow.to);
        *counts.entry((m.flow.from, m.flow.to)).or_insert(0u32) += 1;
    }
    assert_eq!(counts.len(), 12);
    for (pair, n) in counts {
        assert!((f64::from(n) - 2000.0 / 12.0).abs() < 5.0 * 12.4, "{pair:?}: {n}");
    }
}

#[test]
fn bad_patterns_are_located() {
    let flow = |keys: &str| {
        format!(
            "[[workload.tcp]]\nname = \"f\"\nfrom = \"left\"\nto = \"right\"\napp = {{ bulk = \"1 KB\" }}\n{keys}\n"
        )
    };
    // (text, the start of the line the error is on, a part of the message)
    let cases = [
        (
            dumbbell(300, "10.1.0.0/24", ""),
            "prefix = \"10.1.0.0/24\"",
            "300 hosts do not fit in 10.1.0.0/24, which has 254",
        ),
        (dumbbell(3, "10.1.0.5/16", ""), "prefix = \"10.1.0.5/16\"", "host bits set"),
        (dumbbell(3, "10.1.0.0/x", ""), "prefix = \"10.1.0.0/x\"", "not an IPv4 network"),
        (dumbbell(3, "10.0.0.0/16", ""), "prefix = \"10.0.0.0/16\"", "include hosts[0]'s address 10.0.0.1"),
        (dumbbell(3, "10.2.0.0/24", ""), "prefix = \"10.2.0.0/16\"", "overlap those of host_groups[0]"),
        (dumbbell(0, "10.1.0.0/16", ""), "count = 0", "at least one host"),
        (
            dumbbell(
                3,
                "10.1.0.0/16",
                "[[links]]\nbetween = [\"left\", \"right\"]\ndownlink = [{ name = \"x\" }]\nuplink = [{ name = \"y\" }]\n",
            ),
            "between = [\"left\", \"right\"]",
            "both host groups",
        ),
        (
            // A stage the pattern names rd-1 for right-1 is a name taken.
            dumbbell(3, "10.1.0.0/16", "").replace("name = \"bottleneck\"", "name = \"rd-1\""),
            "downlink = [{ name = \"rd\"",
            "for `right-1`",
        ),
        (dumbbell(3, "10.1.0.0/16", &flow("count = 3")), "from = \"left\"", "is a host group"),
        (dumbbell(3, "10.1.0.0/16", &flow("pairing = \"pairs\"")), "pairing = ", "for the flows of a `count`"),
        (
            dumbbell(3, "10.1.0.0/16", &flow("count = 3\npairing = \"all_to_one\"")),
            "to = \"right\"",
            "all_to_one sends every flow to one host",
        ),
        (dumbbell(3, "10.1.0.0/16", &flow("count = 3\npairing = \"any\"")), "pairing = ", "all_to_one"),
    ];
    for (text, line, expect) in cases {
        let e = load(&text).expect_err(expect);
        assert!(e.contains(expect), "{expect:?} not in {e}");
        let at = format!("d.toml:{}:", line_of(&text, line));
        assert!(e.contains(&at), "{expect:?}: {at} not in {e}");
    }
    // Groups of different sizes cannot be paired.
    let text = dumbbell(3, "10.1.0.0/16", &flow("count = 3\npairing = \"pairs\"")).replacen(
        "count = 3\nprefix = \"10.2",
        "count = 2\nprefix = \"10.2",
        1,
    );
    let e = load(&text).expect_err("unequal pairs");
    assert!(e.contains("`left` has 3 hosts, `right` 2"), "{e}");
}
