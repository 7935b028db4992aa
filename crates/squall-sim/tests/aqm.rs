//! AQM with TCP in the engine (issue 12): CoDel keeps the standing queue
//! of saturating TCP near its target (RFC 8289 §4.3: 5 ms) where a deep
//! tail-drop queue fills up.

use squall_link::{EventKind, Instant, PacketId};
use squall_scenario::Scenario;
use squall_sim::{RunOptions, run_bounded};

const BOUND: u64 = 200_000_000;

/// Two hosts, 10 Mbit/s down with a 1000-packet queue (`queue_extra`
/// added), 20 ms each way, and `flows` bulk TCP transfers.
fn scenario(queue_extra: &str, flows: usize) -> Scenario {
    let mut s = format!(
        r#"
name = "aqm"
duration = "30 s"
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
queue = {{ packets = 1000 {queue_extra} }}
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "20 ms"
"#
    );
    for i in 0..flows {
        s.push_str(&format!(
            "[[workload.tcp]]\nname = \"f{i}\"\nprofile = \"rfc\"\nfrom = \"a\"\nto = \"b\"\napp = {{ bulk = \"1 GB\" }}\nmss = \"1448 B\"\nrwnd = \"4 MB\"\n"
        ));
    }
    let s: Scenario = toml::from_str(&s).expect("test scenario parses");
    s.check().expect("test scenario checks");
    s
}

/// Median time data packets waited in the `down` stage's queue after the
/// first 5 s (slow start over), in seconds.
fn median_sojourn(s: &Scenario) -> f64 {
    let options = RunOptions { record_events: true, record_packets: false, record_captures: false };
    let r = run_bounded(s, 1, options, BOUND).expect("run succeeds");
    let mut entered = std::collections::HashMap::<PacketId, Instant>::new();
    let mut waits = Vec::new();
    for e in r.events.iter().filter(|e| &*e.stage == "down" && e.size > 500) {
        match e.kind {
            EventKind::Enqueue => {
                entered.insert(e.packet.unwrap(), e.time);
            }
            EventKind::TransmitStart { frame: 0 } => {
                if let Some(t) = entered.remove(&e.packet.unwrap())
                    && t >= Instant::from_secs(5)
                {
                    waits.push((e.time - t).as_secs_f64());
                }
            }
            _ => {}
        }
    }
    waits.sort_by(f64::total_cmp);
    assert!(waits.len() > 1000, "{} samples", waits.len());
    waits[waits.len() / 2]
}

#[test]
fn codel_keeps_the_median_sojourn_near_target_for_saturating_tcp() {
    let target = 0.005;
    for flows in [1, 4] {
        let codel = median_sojourn(&scenario(", codel = { target = \"5 ms\", interval = \"100 ms\" }", flows));
        let tail = median_sojourn(&scenario("", flows));
        println!("{flows} flow(s): median sojourn CoDel {codel} s, tail drop {tail} s");
        assert!(tail > 10.0 * target, "a 1000-packet tail-drop queue should fill: {tail} s");
        assert!(codel < tail / 10.0, "CoDel {codel} s is not far below tail drop {tail} s");
        assert!(codel <= 2.0 * target, "{flows} flow(s): CoDel median {codel} s above 2 x target");
        if flows > 1 {
            // Several flows keep a standing queue, which CoDel holds at
            // target. One Reno flow with a 33-packet BDP empties the queue
            // after each halving, so its median sits below target.
            assert!(codel >= target, "{flows} flows: CoDel median {codel} s below target");
        }
    }
}

#[test]
fn pie_steers_the_queueing_delay_of_saturating_tcp_to_its_target() {
    let target = 0.015;
    for flows in [1, 4] {
        let pie = median_sojourn(&scenario(", pie = { target = \"15 ms\" }", flows));
        println!("{flows} flow(s): median sojourn PIE {pie} s");
        // PIE's integral term drives the delay to target; its samples
        // spread around it with TCP's sawtooth.
        assert!((0.5 * target..=1.5 * target).contains(&pie), "{flows} flow(s): PIE median {pie} s, target {target} s");
    }
}

/// Classes and background load written in a scenario file: a CBR
/// background of half the link in a strict-priority class above the TCP
/// flow's class leaves the flow at most the other half (seed 003 §2.2);
/// the exact (1 - rho) C share is tested in squall-link's
/// tests/background.rs with a saturating foreground.
#[test]
fn background_class_in_a_scenario_takes_its_share_from_tcp() {
    let s = scenario_with(
        r#"queue = { scheduler = "strict_priority", default_class = "data", classes = [{ name = "bg", packets = 100 }, { name = "data", packets = 1000 }] }
background = [{ name = "cbr", rate = "5 Mbit/s", size = "1000 B", class = "bg" }]"#,
    );
    let options = RunOptions { record_events: false, record_packets: false, record_captures: false };
    let r = run_bounded(&s, 1, options, BOUND).expect("run succeeds");
    let goodput = r.tcp_flows[0].goodput_bps;
    let down = r.stages.iter().find(|st| st.name == "down").unwrap();
    println!("goodput {goodput} bit/s, background {:?}", down.background);
    // At most what the background leaves: (10 - 5) Mbit/s, less TCP/IP
    // headers (40 B per 1448 B of payload).
    let bound = 5e6 * 1448.0 / 1488.0;
    assert!(goodput <= bound, "goodput {goodput} bit/s above (1-rho)C {bound}");
    // 30 s of 5 Mbit/s in 1000 B packets, the first at 0; its class goes
    // first, so none is dropped and at most one is inside at the end.
    assert!(down.background.generated.abs_diff(18_750) <= 1, "{:?}", down.background);
    assert_eq!(down.background.dropped, 0);
    assert!(down.background.generated - down.background.served <= 101);
    // Without the background the same flow gets more than that bound.
    let alone = scenario_with(
        r#"queue = { default_class = "data", classes = [{ name = "bg", packets = 100 }, { name = "data", packets = 1000 }] }"#,
    );
    let r = run_bounded(&alone, 1, options, BOUND).expect("run succeeds");
    assert!(r.tcp_flows[0].goodput_bps > bound, "alone: {} bit/s", r.tcp_flows[0].goodput_bps);
}

/// [`scenario`]'s two hosts and one bulk TCP flow, with `down_keys` as
/// the downlink stage's queue and other keys.
fn scenario_with(down_keys: &str) -> Scenario {
    let s = format!(
        r#"
name = "classes"
duration = "30 s"
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
{down_keys}
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "20 ms"
[[workload.tcp]]
name = "f"
profile = "rfc"
from = "a"
to = "b"
app = {{ bulk = "1 GB" }}
mss = "1448 B"
rwnd = "4 MB"
"#
    );
    let s: Scenario = toml::from_str(&s).expect("test scenario parses");
    s.check().expect("test scenario checks");
    s
}
