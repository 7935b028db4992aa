//! Both engines route alike (issue 14): a packet from one host to another
//! crosses the same stages in `squall sim` as the emulator's route table
//! sends it through. The simulator is run (a one-packet UDP flow per
//! ordered pair of hosts; its events name the stages each flow crossed);
//! the emulator's side is its `Routing`, which its data plane forwards by
//! hop by hop. The root-only test at the end sends real pings through the
//! emulator in the four-link example.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use squall_link::EventKind;
use squall_scenario::Scenario;

/// A scenario of `hosts` hosts (h0, h1, ...) and `links` as (a, b) pairs,
/// each direction one stage named `a-b` / `b-a` (with the link index, as
/// two links may join the same hosts), and a one-packet UDP flow per
/// ordered pair of connected hosts.
fn scenario(hosts: usize, links: &[(usize, usize)]) -> Scenario {
    let mut t = String::from("name = \"routes\"\nduration = \"100 s\"\n");
    for h in 0..hosts {
        t.push_str(&format!("[[hosts]]\nname = \"h{h}\"\naddress = \"10.0.{}.{}\"\n", h / 200, 1 + h % 200));
    }
    for (i, (a, b)) in links.iter().enumerate() {
        t.push_str(&format!(
            "[[links]]\nbetween = [\"h{a}\", \"h{b}\"]\ndownlink = [{{ name = \"l{i}:h{a}-h{b}\", rate = \"1 Mbit/s\" }}]\n\
             uplink = [{{ name = \"l{i}:h{b}-h{a}\", rate = \"1 Mbit/s\" }}]\n"
        ));
    }
    let s = squall_scenario::parse("routes.toml", &t, Path::new(".")).unwrap();
    let topology = squall_scenario::Topology::new(&s).unwrap();
    for from in 0..hosts {
        for to in topology.reachable(from) {
            t.push_str(&format!(
                "[[workload.udp]]\nname = \"h{from}-h{to}\"\nfrom = \"h{from}\"\nto = \"h{to}\"\nsize = \"100 B\"\n\
                 interval = {{ kind = \"constant\", value = \"1 s\" }}\ncount = 1\nstart = \"{} s\"\n",
                1 + from * hosts + to
            ));
        }
    }
    squall_scenario::parse("routes.toml", &t, Path::new(".")).unwrap()
}

/// The stages each flow (by name) crossed in a simulation.
fn simulated_routes(s: &Scenario) -> BTreeMap<String, BTreeSet<String>> {
    let options = squall_sim::RunOptions { record_events: true, ..Default::default() };
    let r = squall_sim::run(s, 1, options).unwrap();
    let name_of: BTreeMap<_, _> = r.flows.iter().map(|f| (f.key, f.name.clone())).collect();
    let mut routes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in r.events.iter().filter(|e| e.kind == EventKind::Enqueue) {
        let flow = name_of[&e.flow.unwrap()].clone();
        routes.entry(flow).or_default().insert(e.stage.to_string());
    }
    routes
}

/// The stages the emulator's route table sends each flow through.
fn emulated_routes(s: &Scenario) -> BTreeMap<String, BTreeSet<String>> {
    let routing = squall_emu::routing::Routing::new(s).unwrap();
    let mut routes = BTreeMap::new();
    for f in &s.workload.udp {
        let host = |name: &str| routing.names.iter().position(|n| n == name).unwrap();
        let (mut at, to) = (host(&f.from), host(&f.to));
        let mut stages = BTreeSet::new();
        while at != to {
            let p = routing.next_path(at, to).expect("a route");
            let ends = &routing.paths[p];
            let link = &s.links[ends.link];
            let stage = if ends.direction == squall_link::Direction::Downlink { &link.downlink } else { &link.uplink };
            stages.extend(stage.iter().map(|st| st.name.clone()));
            at = ends.to;
        }
        routes.insert(f.name.clone(), stages);
    }
    routes
}

#[test]
fn the_four_link_example_routes_alike_in_both_engines() {
    // A=h0, B=h1, C=h2, D=h3; links (A,C), (B,D), (A,B), (C,D).
    let s = scenario(4, &[(0, 2), (1, 3), (0, 1), (2, 3)]);
    let sim = simulated_routes(&s);
    assert_eq!(sim, emulated_routes(&s));
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(sim["h0-h3"], set(&["l2:h0-h1", "l1:h1-h3"]), "A -> B -> D");
    assert_eq!(sim["h3-h0"], set(&["l3:h3-h2", "l0:h2-h0"]), "D -> C -> A");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]
    #[test]
    fn random_topologies_route_alike_in_both_engines(
        hosts in 2usize..7,
        raw in proptest::collection::vec((0usize..7, 1usize..7), 1..10),
    ) {
        // Two different hosts per link: b is 1..hosts-1 steps after a.
        let links: Vec<(usize, usize)> =
            raw.iter().map(|&(a, step)| (a % hosts, (a % hosts + 1 + step % (hosts - 1)) % hosts)).collect();
        let s = scenario(hosts, &links);
        prop_assert_eq!(simulated_routes(&s), emulated_routes(&s));
    }
}
