//! The [`Fabric`] of a scenario, built once the scenario is checked, the
//! same for both engines: a path per link direction that has stages, a
//! path of one stage per host processing delay, the route table of the
//! [`Topology`] and the state schedule, all seeded from the replication's
//! seed.

use squall_link::fabric::{Fabric, FabricPath, PathId, PathRole, Routes};
use squall_link::{ConfigError, Direction, Path, PathConfig, StageConfig, StateSchedule};

use crate::{ProcessingAt, Scenario, Topology};

/// A path the model refused (the scenario's check lets none through).
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct FabricError {
    /// The path, as its label says ("links[0] downlink (fixed -> mobile)").
    pub what: String,
    pub source: ConfigError,
}

/// Whether the fabric routes addresses beyond the scenario to its outside
/// host (`outside_interface`): the emulator does, the simulator has no
/// outside world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outside {
    Routed,
    None,
}

/// The fabric of `scenario` for the replication with `seed`.
pub fn build(scenario: &Scenario, topology: &Topology, seed: u64, outside: Outside) -> Result<Fabric, FabricError> {
    let mut paths = Vec::new();
    // The fabric's path of each topology path that has stages.
    let mut ids = Vec::with_capacity(topology.paths.len());
    for lp in scenario.link_paths() {
        for config in [&lp.downlink, &lp.uplink] {
            let index = ids.len();
            let ends = &topology.paths[index];
            if config.stages.is_empty() {
                ids.push(None);
                continue;
            }
            let label = format!(
                "links[{}] {} ({} -> {})",
                lp.link, config.direction, topology.names[ends.from], topology.names[ends.to]
            );
            let path = Path::new(config, seed).map_err(|source| FabricError { what: label.clone(), source })?;
            ids.push(Some(PathId(paths.len() as u32)));
            paths.push(FabricPath { path, to: ends.to, role: PathRole::Link(index), label });
        }
    }
    for (i, h) in scenario.hosts.iter().enumerate() {
        let Some(processing) = &h.processing else { continue };
        paths.push(processing_path(processing, &h.name, i, seed)?);
    }
    let outside = match outside {
        Outside::Routed => scenario.outside_host().map(|(i, _)| i),
        Outside::None => None,
    };
    let next = topology.route_table().clone().rename(|p| ids[p as usize].map(|id| id.0));
    let routes = Routes::new(topology.addresses.clone(), outside, next);
    Ok(Fabric::new(paths, routes, StateSchedule::new(scenario.schedule(), seed)))
}

/// A host's processing delay (`hosts[i].processing`) as a path of one
/// stage named `HOST.processing`: no queue limit and no rate (nothing
/// waits for a server), a propagation delay drawn per packet from
/// `delay` on the stage's own random stream, and `reorder = false`, so a
/// packet leaves no earlier than the one of its flow before it.
fn processing_path(
    processing: &crate::Processing,
    host: &str,
    index: usize,
    seed: u64,
) -> Result<FabricPath, FabricError> {
    let (role, direction, at) = match processing.at {
        ProcessingAt::Input => (PathRole::Input, Direction::Downlink, "input"),
        ProcessingAt::Output => (PathRole::Output, Direction::Uplink, "output"),
    };
    let mut stage = StageConfig::named(&format!("{host}.processing"));
    stage.jitter = Some(processing.delay.clone());
    let label = format!("host `{host}`'s processing delay ({at})");
    let path = Path::new(&PathConfig { direction, stages: vec![stage] }, seed)
        .map_err(|source| FabricError { what: label.clone(), source })?;
    Ok(FabricPath { path, to: index, role, label })
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use squall_link::fabric::{Arrival, Hooks, HostIndex};
    use squall_link::{FlowKey, Instant, Packet, PacketId, Protocol};

    use super::*;

    /// server — router — mobile; each link's downlink delays 10 ms (WAN)
    /// and 30 ms (air), uplinks 1 ms.
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
delay = "10 ms"
[[links.uplink]]
name = "wan-up"
delay = "1 ms"
[[links]]
between = ["router", "mobile"]
[[links.downlink]]
name = "air-down"
delay = "30 ms"
[[links.uplink]]
name = "air-up"
delay = "1 ms"
"#;

    /// What the fabric told its hooks, in order.
    #[derive(Default)]
    struct Log {
        steps: Vec<String>,
        arrivals: Vec<(u64, HostIndex, bool)>,
    }

    impl Hooks for Log {
        fn reached(&mut self, now: Instant, host: HostIndex, _: &Packet, local: bool, delayed: bool) {
            self.steps
                .push(format!("{} ms: reached {host} local={local} delayed={delayed}", now.as_nanos() / 1_000_000));
        }
        fn departs(&mut self, now: Instant, host: HostIndex, _: &Packet, origin: bool) {
            self.steps.push(format!("{} ms: departs {host} origin={origin}", now.as_nanos() / 1_000_000));
        }
        fn arrived(&mut self, a: Arrival) {
            self.arrivals.push((a.at.as_nanos() / 1_000_000, a.host, a.delayed));
        }
    }

    fn fabric(text: &str, outside: Outside) -> Fabric {
        let s = crate::parse("t.toml", text, std::path::Path::new(".")).unwrap();
        build(&s, &Topology::new(&s).unwrap(), 1, outside).unwrap()
    }

    fn packet(src: [u8; 4], dst: [u8; 4]) -> Packet {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: Ipv4Addr::from(src).into(),
            dst: Ipv4Addr::from(dst).into(),
            src_port: 1,
            dst_port: 2,
        };
        Packet::new(PacketId(0), 100, flow)
    }

    /// Runs the fabric to `until` in steps of its own wake-ups.
    fn run(f: &mut Fabric, log: &mut Log, until: Instant) {
        while let Some(at) = f.next_wakeup().filter(|&at| at <= until) {
            f.poll(at, log);
        }
    }

    #[test]
    fn a_packet_is_forwarded_at_an_intermediate_host() {
        let mut f = fabric(THREE_HOSTS, Outside::None);
        let p = packet([10, 0, 0, 1], [10, 0, 1, 1]);
        let first = f.first_path(0, &p).unwrap();
        assert_eq!(f.path(first).label, "links[0] downlink (server -> router)");
        let mut log = Log::default();
        f.send(Instant::ZERO, 0, p, first, &mut log);
        run(&mut f, &mut log, Instant::from_millis(100));
        // 10 ms over the WAN, then 30 ms over the air: by hand, 40 ms.
        assert_eq!(log.arrivals, vec![(40, 2, false)]);
        assert_eq!(
            log.steps,
            [
                "0 ms: departs 0 origin=true",
                "10 ms: reached 1 local=false delayed=false",
                "10 ms: departs 1 origin=false",
                "40 ms: reached 2 local=true delayed=false",
            ]
        );
        assert!(f.is_empty());
        // Back up the uplinks: 1 + 1 ms.
        let p = packet([10, 0, 1, 1], [10, 0, 0, 1]);
        let first = f.first_path(2, &p).unwrap();
        f.send(Instant::from_millis(100), 2, p, first, &mut log);
        run(&mut f, &mut log, Instant::from_millis(200));
        assert_eq!(log.arrivals[1], (102, 0, false));
    }

    #[test]
    fn a_processing_delay_holds_what_a_host_receives_and_forwards() {
        let text = THREE_HOSTS.replacen(
            "address = \"10.0.0.2\"",
            "address = \"10.0.0.2\"\nprocessing = { delay = \"5 ms\", at = \"input\" }",
            1,
        );
        let mut f = fabric(&text, Outside::None);
        let p = packet([10, 0, 0, 1], [10, 0, 1, 1]);
        let first = f.first_path(0, &p).unwrap();
        let mut log = Log::default();
        f.send(Instant::ZERO, 0, p, first, &mut log);
        run(&mut f, &mut log, Instant::from_millis(100));
        // 10 ms, 5 ms at the router, 30 ms.
        assert_eq!(log.arrivals, vec![(45, 2, false)]);
        assert_eq!(log.steps[1], "10 ms: reached 1 local=false delayed=true");
        assert_eq!(log.steps[2], "15 ms: departs 1 origin=false");
        // For the router itself: it arrives past the delay.
        let p = packet([10, 0, 0, 1], [10, 0, 0, 2]);
        f.send(Instant::from_millis(100), 0, p, first, &mut log);
        run(&mut f, &mut log, Instant::from_millis(200));
        assert_eq!(log.arrivals[1], (115, 1, true));
    }

    #[test]
    fn addresses_beyond_the_scenario_go_to_the_outside_host() {
        let text =
            THREE_HOSTS.replacen("address = \"10.0.0.1\"", "address = \"10.0.0.1\"\noutside_interface = \"eth0\"", 1);
        let internet = packet([10, 0, 1, 1], [8, 8, 8, 8]);
        // The simulator has no outside world: no route.
        assert_eq!(fabric(&text, Outside::None).first_path(2, &internet), None);
        let mut f = fabric(&text, Outside::Routed);
        // From the mobile host, the Internet is up the air link, then the WAN.
        let first = f.first_path(2, &internet).unwrap();
        assert_eq!(f.path(first).label, "links[1] uplink (mobile -> router)");
        let mut log = Log::default();
        f.send(Instant::ZERO, 2, internet, first, &mut log);
        run(&mut f, &mut log, Instant::from_millis(100));
        assert_eq!(log.arrivals, vec![(2, 0, false)]);
        // A scenario address is not the outside host's.
        assert_eq!(f.routes().destination(Ipv4Addr::new(10, 0, 1, 1).into()), Some(2));
        assert_eq!(f.routes().destination(Ipv4Addr::new(192, 0, 2, 9).into()), Some(0));
    }

    #[test]
    fn a_state_changes_every_path_at_its_time() {
        let text = format!(
            "{THREE_HOSTS}\n[[states]]\nname = \"slow\"\nat = \"20 ms\"\nset.air-down = {{ delay = \"100 ms\" }}\n"
        );
        let mut f = fabric(&text, Outside::None);
        let mut log = Log::default();
        assert_eq!(f.next_wakeup(), Some(Instant::from_millis(20)));
        assert_eq!(f.enter_due_states(Instant::from_millis(19), &mut log), Ok(0));
        assert_eq!(f.enter_due_states(Instant::from_millis(20), &mut log), Ok(1));
        let p = packet([10, 0, 0, 1], [10, 0, 1, 1]);
        let first = f.first_path(0, &p).unwrap();
        f.send(Instant::from_millis(20), 0, p, first, &mut log);
        run(&mut f, &mut log, Instant::from_millis(500));
        // 20 + 10 + 100 ms.
        assert_eq!(log.arrivals, vec![(130, 2, false)]);
    }
}
