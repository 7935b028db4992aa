//! Ephemeral ports (issue 35): a host hands each TCP connection that names
//! no port one from its range, keeps it through TIME-WAIT (Linux's
//! TCP_TIMEWAIT_LEN, 60 s) and refuses a connection only when every port
//! of the range is taken.

use squall_scenario::Scenario;
use squall_sim::{RunOptions, RunResult, SimError, run_bounded};

const BOUND: u64 = 50_000_000;

/// A client and a server on a 100 Mbit/s, 1 ms link each way (a
/// 1000-packet queue), with `client_keys` on the client host and
/// `flows` [[workload.tcp]] entries after; the run ends once every flow
/// is done or at `duration`.
fn scenario(duration: &str, client_keys: &str, flows: &str) -> Scenario {
    let s: Result<Scenario, _> = toml::from_str(&format!(
        r#"
name = "ports"
duration = "{duration}"
stop_when_done = true
[[hosts]]
name = "server"
address = "10.0.0.1"
[[hosts]]
name = "client"
address = "10.0.1.1"
{client_keys}
[[links]]
between = ["server", "client"]
downlink = [{{ name = "down", rate = "100 Mbit/s", delay = "1 ms", queue = {{ packets = 1000 }} }}]
uplink = [{{ name = "up", rate = "100 Mbit/s", delay = "1 ms", queue = {{ packets = 1000 }} }}]
{flows}
"#
    ));
    s.unwrap_or_else(|e| panic!("test scenario does not parse: {}", e.message()))
}

/// `n` bulk flows of `size` from the client to the server, flow i
/// starting at i·`gap_us` µs.
fn bulk_flows(n: usize, size: &str, gap_us: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[[workload.tcp]]\nname = \"f{i}\"\nfrom = \"client\"\nto = \"server\"\napp = {{ bulk = \"{size}\" }}\n\
                 start = \"{} us\"\n",
                i * gap_us
            )
        })
        .collect()
}

fn run(s: &Scenario) -> Result<RunResult, SimError> {
    run_bounded(s, 1, RunOptions::default(), BOUND)
}

/// The client port of TCP flow `name` in the results (its c2s key).
fn client_port(r: &RunResult, name: &str) -> u16 {
    let f = r.flows.iter().find(|f| f.name == format!("{name}:c2s")).expect("flow in the results");
    assert_eq!(f.key.src_port, r.flows.iter().find(|g| g.name == format!("{name}:s2c")).unwrap().key.dst_port);
    f.key.src_port
}

/// 1 000 flows from one host, none naming a port: the first 46 keep the
/// 20000 + 1000·i rule (earlier versions' outputs stay the same), the
/// other 954 take Linux's default range from its bottom, in the order they
/// connect, skipping the one port of that range (33000, flow 13's) the
/// rule gave a flow already: 32768..=32999, then 33001..=33722.
#[test]
fn a_thousand_flows_from_one_host_without_ports_all_complete() {
    let s = scenario("20 s", "", &bulk_flows(1000, "20 KB", 100));
    let r = run(&s).expect("1 000 flows run");
    assert_eq!(r.tcp_flows.len(), 1000);
    for f in &r.tcp_flows {
        assert!(f.completed, "{} did not complete", f.name);
        assert_eq!(f.delivered_bytes, 20_000, "{}", f.name);
    }
    let ports: Vec<u16> = (0..1000).map(|i| client_port(&r, &format!("f{i}"))).collect();
    let expected: Vec<u16> =
        (0..46u16).map(|i| 20_000 + 1000 * i).chain((32_768..=33_722).filter(|p| *p != 33_000)).collect();
    assert_eq!(ports, expected);
}

/// A host with `ephemeral_ports` gives every flow without a `src_port` a
/// port from it: ten long flows fill "40000-40009" (ports in connect
/// order), an eleventh while they run is refused with an error naming the
/// host, the flow, the range and the ten connections.
#[test]
fn exhausting_a_small_range_names_the_host_and_the_connections() {
    let range = "ephemeral_ports = \"40000-40009\"";
    let ten = scenario("2 s", range, &bulk_flows(10, "1 MB", 1000));
    let r = run(&ten).expect("ten flows fit in ten ports");
    let ports: Vec<u16> = (0..10).map(|i| client_port(&r, &format!("f{i}"))).collect();
    assert_eq!(ports, (40_000..=40_009).collect::<Vec<_>>());

    let eleven = scenario("2 s", range, &bulk_flows(11, "1 MB", 1000));
    match run(&eleven) {
        Err(e @ SimError::PortsExhausted { .. }) => {
            let SimError::PortsExhausted { ref host, ref flow, held, other, .. } = e else { unreachable!() };
            assert_eq!((host.as_str(), flow.as_str(), held, other), ("client", "f10", 10, 0));
            let msg = e.to_string();
            for part in ["host `client`", "40000-40009", "workload.tcp `f10`", "at 0.010000000 s", "10 connections"] {
                assert!(msg.contains(part), "{part:?} missing from: {msg}");
            }
        }
        other => panic!("expected the range to run out, got {:?}", other.map(|r| r.tcp_flows.len())),
    }
    // A flow that names its port does not need the range.
    let named = format!("{}src_port = 50000\n", bulk_flows(11, "1 MB", 1000));
    assert!(run(&scenario("2 s", range, &named)).is_ok());
}

/// One port, two flows one after the other: the first closes at once
/// (20 KB on an empty 100 Mbit/s path) and holds the port through
/// TIME-WAIT, 60 s (Linux's TCP_TIMEWAIT_LEN, include/net/tcp.h). The
/// second gets it when it starts at 61 s and is refused at 59 s.
#[test]
fn a_port_is_free_again_after_time_wait() {
    let second = |start: &str| {
        let flows = format!(
            "{}[[workload.tcp]]\nname = \"late\"\nfrom = \"client\"\nto = \"server\"\napp = {{ bulk = \"20 KB\" }}\n\
             start = \"{start}\"\n",
            bulk_flows(1, "20 KB", 0)
        );
        scenario("62 s", "ephemeral_ports = \"40000-40000\"", &flows)
    };
    let r = run(&second("61 s")).expect("the port is free at 61 s");
    assert_eq!((client_port(&r, "f0"), client_port(&r, "late")), (40_000, 40_000));
    assert!(r.tcp_flows.iter().all(|f| f.completed && f.delivered_bytes == 20_000));
    match run(&second("59 s")) {
        Err(SimError::PortsExhausted { flow, held: 1, .. }) => assert_eq!(flow, "late"),
        other => panic!("expected the port to be in TIME-WAIT at 59 s, got {:?}", other.map(|r| r.end)),
    }
}

/// A `count` entry of `n` bulk flows of `size` from the client, each
/// starting at a uniform draw in [0, 100 ms), with `keys` after.
fn count_entry(n: u32, size: &str, keys: &str) -> String {
    format!(
        "[[workload.tcp]]\nname = \"many\"\nfrom = \"client\"\nto = \"server\"\ncount = {n}\ndst_port = 7000\n\
         start = {{ kind = \"uniform\", low = \"0 s\", high = \"100 ms\" }}\napp = {{ bulk = \"{size}\" }}\n{keys}"
    )
}

/// `server_ports = "shared"`: the 300 flows of one `count` entry all
/// connect to port 7000, and the server's host hands each connection to
/// its own flow by its 4-tuple (client address and port), as Linux finds
/// an established socket before the listener. The flows are the same
/// flows as with a server port each (7000 + k): the ports change nothing
/// else in the model, so each flow's start, transfer time, bytes,
/// segments and retransmissions are equal, only the server port differs.
/// Without the 4-tuple look-up every packet to 7000 goes to flow 0's
/// server, which drops what is not its connection's, and 299 flows never
/// finish.
#[test]
fn flows_sharing_one_server_port_are_told_apart_by_their_4_tuples() {
    let per_flow = run(&scenario("10 s", "", &count_entry(300, "30 KB", ""))).expect("per-flow ports run");
    let shared =
        run(&scenario("10 s", "", &count_entry(300, "30 KB", "server_ports = \"shared\"\n"))).expect("shared runs");
    assert_eq!(shared.tcp_flows.len(), 300);
    for (k, (a, b)) in per_flow.tcp_flows.iter().zip(&shared.tcp_flows).enumerate() {
        assert_eq!(b.name, format!("many#{k}"));
        assert!(b.completed && b.delivered_bytes == 30_000, "{} did not complete", b.name);
        assert_eq!(
            (a.start, a.transfer_time, a.sender.data_segments_sent, a.sender.retransmitted_segments),
            (b.start, b.transfer_time, b.sender.data_segments_sent, b.sender.retransmitted_segments),
            "{}",
            b.name
        );
        let key = |r: &RunResult| r.flows.iter().find(|f| f.name == format!("many#{k}:c2s")).unwrap().key;
        assert_eq!(key(&per_flow).dst_port, 7000 + k as u16);
        assert_eq!(key(&shared).dst_port, 7000);
        assert_eq!(key(&shared).src_port, key(&per_flow).src_port);
    }
}

/// A shared server port with client ports reused: a one-port range and
/// the flows of an `arrivals` entry 61 s apart (more than TIME-WAIT,
/// 60 s), so each connects from port 40000 to port 7000: the same 4-tuple
/// each time, handed to the newest flow's server.
#[test]
fn a_reused_4_tuple_reaches_the_newest_flow() {
    let flows = "[[workload.tcp]]\nname = \"seq\"\nfrom = \"client\"\nto = \"server\"\ndst_port = 7000\n\
                 server_ports = \"shared\"\narrivals = { gap = \"61 s\" }\napp = { bulk = \"20 KB\" }\n";
    let r = run(&scenario("190 s", "ephemeral_ports = \"40000-40000\"", flows)).expect("three flows in turn");
    let starts: Vec<f64> = r.tcp_flows.iter().map(|f| f.start).collect();
    assert_eq!(starts, [61.0, 122.0, 183.0]);
    for f in &r.tcp_flows {
        assert!(f.completed && f.delivered_bytes == 20_000, "{} did not complete", f.name);
        assert_eq!(client_port(&r, &f.name), 40_000);
    }
}
