//! TCP in the engine: whole transfers over squall-link paths, checked
//! against hand-computed figures, and pcaps checked by tshark.

use squall_scenario::Scenario;
use squall_sim::{RunOptions, RunResult, run_bounded};

const BOUND: u64 = 50_000_000;

fn scenario(toml: &str) -> Scenario {
    let s: Scenario = toml::from_str(toml).expect("test scenario parses");
    s.check().expect("test scenario checks");
    s
}

fn run(s: &Scenario, seed: u64, options: RunOptions) -> RunResult {
    run_bounded(s, seed, options, BOUND).expect("run succeeds")
}

/// Two hosts, 10 Mbit/s down with `down_extra` added to the stage, 1 Mbit/s
/// up, 20 ms each way, and one TCP flow with `flow` keys.
fn two_hosts(down_extra: &str, flow: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "tcp-two-hosts"
duration = "60 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.1.1"
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "down"
rate = "10 Mbit/s"
delay = "20 ms"
queue = {{ packets = 100 }}
{down_extra}
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "20 ms"
queue = {{ packets = 100 }}
[[workload.tcp]]
name = "f"
from = "a"
to = "b"
{flow}
"#
    ))
}

#[test]
fn bulk_transfer_completes_with_hand_computed_segment_count() {
    let s = two_hosts("", "app = { bulk = \"100 KB\" }\nmss = \"1000 B\"\ndelayed_ack = false");
    let r = run(&s, 1, RunOptions::default());
    let t = &r.tcp_flows[0];
    assert!(t.completed, "{t:?}");
    assert_eq!(t.delivered_bytes, 100_000);
    // 100 segments of 1000 B, no loss: no retransmission, one ACK each.
    assert_eq!((t.sender.data_segments_sent, t.sender.retransmitted_segments), (100, 0));
    // The last data segment carries the FIN; the server's FIN acknowledges it.
    assert_eq!(t.receiver_acks_sent, 99);
    assert_eq!(t.sender.goodput, 1.0);
    // Generic flow counters: 100 data + SYN + ACK + FIN... client → server.
    let up = &r.flows[0];
    assert_eq!(up.name, "f:c2s");
    assert_eq!(up.sent_packets, up.delivered_packets);
}
