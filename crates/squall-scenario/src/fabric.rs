//! The [`Fabric`] of a scenario, built once the scenario is checked, the
//! same for both engines but where they differ ([`Engine`]): a path per
//! link direction that has stages, a path per host input and output with
//! its processing delay (and in the simulator its stack's), the route
//! table of the [`Topology`] and the state schedule, all seeded from the
//! replication's seed.

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

/// The engine a fabric is for, where the two differ: the emulator routes
/// addresses beyond the scenario to its outside host
/// (`outside_interface`), and its hosts are real stacks with a
/// turnaround of their own; the simulator has no outside world, and
/// models a host's stack by its `stack_delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Simulator,
    Emulator,
}

/// The fabric of `scenario` for the replication with `seed`, in `engine`.
pub fn build(scenario: &Scenario, topology: &Topology, seed: u64, engine: Engine) -> Result<Fabric, FabricError> {
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
        paths.extend(host_paths(h, i, seed, engine)?);
    }
    let outside = match engine {
        Engine::Emulator => scenario.outside_host().map(|(i, _)| i),
        Engine::Simulator => None,
    };
    let next = topology.route_table().clone().rename(|p| ids[p as usize].map(|id| id.0));
    let routes = Routes::new(topology.addresses.clone(), outside, next);
    Ok(Fabric::new(paths, routes, StateSchedule::new(scenario.schedule(), seed)))
}

/// A host's paths: at its input its processing delay (`processing`, `at
/// = "input"`, a stage named `HOST.processing`) and then, in the
/// simulator, its stack's (`stack_delay`, `HOST.stack`); at its output its
/// processing delay (`at = "output"`). Each stage has no queue limit and no
/// rate (nothing waits for a server), a propagation delay drawn per packet
/// on the stage's own random stream, and `reorder = false`, so a packet
/// leaves no earlier than the one of its flow before it.
fn host_paths(host: &crate::Host, index: usize, seed: u64, engine: Engine) -> Result<Vec<FabricPath>, FabricError> {
    let name = &host.name;
    let delay_stage = |kind: &'static str, delay: &squall_link::Distribution<squall_link::Duration>| {
        let mut config = StageConfig::named(&format!("{name}.{kind}"));
        config.jitter = Some(delay.clone());
        (kind, config)
    };
    let (mut input, mut output) = (Vec::new(), Vec::new());
    if let Some(p) = &host.processing {
        match p.at {
            ProcessingAt::Input => input.push(delay_stage("processing", &p.delay)),
            ProcessingAt::Output => output.push(delay_stage("processing", &p.delay)),
        }
    }
    if let (Some(delay), Engine::Simulator) = (&host.stack_delay, engine) {
        input.push(delay_stage("stack", delay));
    }
    let mut paths = Vec::new();
    for (stages, role, direction, at) in [
        (input, PathRole::Input, Direction::Downlink, "input"),
        (output, PathRole::Output, Direction::Uplink, "output"),
    ] {
        if stages.is_empty() {
            continue;
        }
        let (kinds, stages): (Vec<&str>, Vec<StageConfig>) = stages.into_iter().unzip();
        let label = format!("host `{name}`'s {} delay ({at})", kinds.join(" and "));
        let path = Path::new(&PathConfig { direction, stages }, seed)
            .map_err(|source| FabricError { what: label.clone(), source })?;
        paths.push(FabricPath { path, to: index, role, label });
    }
    Ok(paths)
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

    fn fabric(text: &str, engine: Engine) -> Fabric {
        let s = crate::parse("t.toml", text, std::path::Path::new(".")).unwrap();
        build(&s, &Topology::new(&s).unwrap(), 1, engine).unwrap()
    }

    /// Sends a packet from the server (10.0.0.1) to the mobile host
    /// (10.0.1.1) at 0 and runs `f` to 100 ms; returns the server's first
    /// path.
    fn server_to_mobile(f: &mut Fabric, log: &mut Log) -> PathId {
        let p = packet([10, 0, 0, 1], [10, 0, 1, 1]);
        let first = f.first_path(0, &p).unwrap();
        f.send(Instant::ZERO, 0, p, first, log);
        run(f, log, Instant::from_millis(100));
        first
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
        let mut f = fabric(THREE_HOSTS, Engine::Simulator);
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
        let mut f = fabric(&text, Engine::Simulator);
        let mut log = Log::default();
        let first = server_to_mobile(&mut f, &mut log);
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

    /// A stack delay follows the processing delay at the host's input, in
    /// the simulator only: 10 ms, 5 + 2 ms at the router, 30 ms; the
    /// emulator's hosts are real stacks, so there only the 5 ms.
    #[test]
    fn a_stack_delay_adds_to_the_input_in_the_simulator_only() {
        let text = THREE_HOSTS.replacen(
            "address = \"10.0.0.2\"",
            "address = \"10.0.0.2\"\nprocessing = { delay = \"5 ms\" }\nstack_delay = \"2 ms\"",
            1,
        );
        for (engine, arrival, stages) in [(Engine::Simulator, 47, 2), (Engine::Emulator, 45, 1)] {
            let mut f = fabric(&text, engine);
            let mut log = Log::default();
            server_to_mobile(&mut f, &mut log);
            assert_eq!(log.arrivals, vec![(arrival, 2, false)], "{engine:?}");
            let input = f.paths().iter().find(|p| p.role == PathRole::Input).expect("the router's input path");
            assert_eq!(input.path.stage_names().count(), stages, "{engine:?}: {}", input.label);
        }
        // Alone, in the simulator: 10 ms, 2 ms, 30 ms.
        let text = THREE_HOSTS.replacen("address = \"10.0.0.2\"", "address = \"10.0.0.2\"\nstack_delay = \"2 ms\"", 1);
        let mut f = fabric(&text, Engine::Simulator);
        let mut log = Log::default();
        server_to_mobile(&mut f, &mut log);
        assert_eq!(log.arrivals, vec![(42, 2, false)]);
        assert!(fabric(&text, Engine::Emulator).paths().iter().all(|p| p.role != PathRole::Input));
    }

    #[test]
    fn addresses_beyond_the_scenario_go_to_the_outside_host() {
        let text =
            THREE_HOSTS.replacen("address = \"10.0.0.1\"", "address = \"10.0.0.1\"\noutside_interface = \"eth0\"", 1);
        let internet = packet([10, 0, 1, 1], [8, 8, 8, 8]);
        // The simulator has no outside world: no route.
        assert_eq!(fabric(&text, Engine::Simulator).first_path(2, &internet), None);
        let mut f = fabric(&text, Engine::Emulator);
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
        let mut f = fabric(&text, Engine::Simulator);
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
