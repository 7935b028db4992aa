//! End-to-end runs of the engine on small scenarios with hand-computed
//! answers. Every run is bounded (`max_wakeups`), so a livelock fails the
//! test instead of hanging it (quinn's `drive_bounded`).

use squall_link::{Ecn, EventKind, Instant};
use squall_scenario::Scenario;
use squall_sim::{CaptureDirection, RunOptions, RunResult, SimError, run_bounded, run_replications};

const BOUND: u64 = 20_000_000;

fn scenario(toml: &str) -> Scenario {
    toml::from_str(toml).expect("test scenario parses")
}

fn all() -> RunOptions {
    RunOptions { record_events: true, record_packets: true, record_captures: true }
}

fn counters() -> RunOptions {
    RunOptions::default()
}

/// Every run in these tests is bounded.
fn run(s: &Scenario, seed: u64, options: RunOptions) -> Result<RunResult, SimError> {
    run_bounded(s, seed, options, BOUND)
}

fn run_ok(s: &Scenario, seed: u64, options: RunOptions) -> RunResult {
    run(s, seed, options).expect("run succeeds")
}

const TWO_HOSTS: &str = r#"
name = "two-hosts"
duration = "1 s"
[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "down"
rate = "1 Mbit/s"
delay = "10 ms"
[[links.uplink]]
name = "up"
rate = "1 Mbit/s"
delay = "10 ms"
"#;

/// VALIDATION case 4 through the engine: every packet of a CBR flow on an
/// idle 1 Mbit/s, 10 ms stage arrives after exactly 1000·8/1e6 s + 10 ms.
#[test]
fn cbr_packets_take_serialisation_plus_propagation_exactly() {
    let s = scenario(&format!(
        "{TWO_HOSTS}
[[workload.udp]]
name = \"cbr\"
from = \"fixed\"
to = \"mobile\"
size = \"1000 B\"
rate = \"500 kbit/s\"
"
    ));
    let r = run_ok(&s, 1, all());
    // Gap 1000·8/500e3 = 16 ms: sends at 0, 16, ..., 992 ms (63 packets).
    // Delay 8 ms + 10 ms = 18 ms: the last one (992 + 18 > 1000) is still
    // on its way when the run ends.
    let f = &r.flows[0];
    assert_eq!((f.sent_packets, f.delivered_packets, f.in_flight), (63, 62, 1));
    assert_eq!(f.sent_bytes, 63_000);
    assert!(f.dropped.is_empty());
    for (k, p) in r.packets.iter().enumerate() {
        assert_eq!(p.sent, Instant::from_millis(16 * k as u64));
        if k < 62 {
            assert_eq!(p.delivered, Some(Instant::from_millis(16 * k as u64 + 18)), "packet {k}");
        } else {
            assert_eq!(p.delivered, None);
        }
    }
    assert_eq!((f.delay_mean, f.delay_p50, f.delay_p99), (0.018, 0.018, 0.018));
    assert_eq!((f.interarrival_mean, f.interarrival_sd), (0.016, 0.0));
    // 62 000 bytes from the first send (0) to the last delivery (994 ms).
    assert!((f.throughput_bps - 62_000.0 * 8.0 / 0.994).abs() < 1e-6);
    assert_eq!(f.key.src_port, 10_000);
    assert_eq!(f.key.dst_port, 5001);
    // Captures: the fixed host sent 63, the mobile host received 62.
    let sent = r.captures[0].packets.iter().filter(|c| c.1 == CaptureDirection::Sent).count();
    let received = r.captures[1].packets.iter().filter(|c| c.1 == CaptureDirection::Received).count();
    assert_eq!((sent, received), (63, 62));
    // Stage statistics cover both directions; the uplink was idle.
    assert_eq!(r.stages.len(), 2);
    assert_eq!((r.stages[0].entered, r.stages[0].delivered, r.stages[1].entered), (63, 62, 0));
}

/// Multi-hop forwarding: fixed -- bs -- mobile. The base station forwards
/// packets that are not addressed to it; delays add up exactly, both ways.
#[test]
fn forwarding_through_a_base_station_adds_the_delays() {
    let s = scenario(
        r#"
name = "three-hosts"
duration = "2 s"
[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "bs"
address = "10.0.0.254"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["fixed", "bs"]
[[links.downlink]]
name = "wired-down"
rate = "1.5 Mbit/s"
delay = "10 ms"
[[links.uplink]]
name = "wired-up"
rate = "1.5 Mbit/s"
delay = "10 ms"
[[links]]
between = ["bs", "mobile"]
[[links.downlink]]
name = "radio-down"
rate = "800 kbit/s"
delay = "100 ms"
[[links.uplink]]
name = "radio-up"
rate = "800 kbit/s"
delay = "100 ms"
[[workload.udp]]
name = "down"
from = "fixed"
to = "mobile"
size = "1000 B"
interval = "100 ms"
[[workload.udp]]
name = "up"
from = "mobile"
to = "fixed"
size = "40 B"
interval = "100 ms"
dst_port = 6000
"#,
    );
    let r = run_ok(&s, 7, all());
    // 1000 B: 8000/1.5e6 s = 5 333 333.3 ns, rounded up to the next ns
    // (a link is never faster than its rate), + 10 ms + 8000/0.8e6 s
    // (10 ms exactly) + 100 ms.
    let down = 5_333_334 + 10_000_000 + 10_000_000 + 100_000_000;
    // 40 B: 320/0.8e6 = 400 us + 100 ms + 320/1.5e6 = 213 333.3 -> 213 334 ns + 10 ms.
    let up = 400_000 + 100_000_000 + 213_334 + 10_000_000;
    for p in &r.packets {
        let want = if p.flow == 0 { down } else { up };
        if let Some(d) = p.delivered {
            assert_eq!((d - p.sent).as_nanos(), want, "packet {:?} of flow {}", p.id, p.flow);
        }
    }
    // Sends every 100 ms over [0, 2 s): 20 per flow; the ones sent after
    // 2 s minus the delay are still inside.
    for (f, delay) in r.flows.iter().zip([down, up]) {
        let delivered = (0..20).filter(|k| k * 100_000_000 + delay <= 2_000_000_000).count() as u64;
        assert_eq!((f.sent_packets, f.delivered_packets, f.in_flight), (20, delivered, 20 - delivered));
        assert_eq!(f.delay_p99, delay as f64 / 1e9);
    }
    // The base station saw each forwarded packet come in and go out.
    let bs = &r.captures[1];
    assert_eq!(bs.host, "bs");
    let bs_in = bs.packets.iter().filter(|c| c.1 == CaptureDirection::Received).count();
    let bs_out = bs.packets.iter().filter(|c| c.1 == CaptureDirection::Sent).count();
    assert_eq!(bs_in, bs_out);
    // Every packet reached the base station by 2 s except the last uplink
    // one (sent at 1.9 s, at the base station 100.4 ms later).
    assert_eq!((bs_in, bs_out), (39, 39));
}

/// A Poisson source's gaps are exponential with the configured mean: over
/// 100 000 packets the mean gap is within 2 % (the standard error is
/// 0.3 %) and the coefficient of variation is near 1.
#[test]
fn poisson_source_mean_gap_matches() {
    for pace in ["interval = \"1 ms\"", "rate = \"8 Mbit/s\""] {
        let s = scenario(&format!(
            r#"
name = "poisson"
duration = "200 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.0.2"
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "fast"
[[links.uplink]]
name = "back"
[[workload.udp]]
name = "poisson"
from = "a"
to = "b"
size = "1000 B"
{pace}
arrivals = "poisson"
count = 100000
"#
        ));
        let r = run_ok(&s, 3, RunOptions { record_packets: true, ..counters() });
        assert_eq!(r.packets.len(), 100_000);
        let gaps: Vec<f64> = r.packets.windows(2).map(|w| (w[1].sent - w[0].sent).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean / 1e-3 - 1.0).abs() < 0.02, "{pace}: mean gap {mean}");
        assert!((var.sqrt() / mean - 1.0).abs() < 0.03, "{pace}: cv {}", var.sqrt() / mean);
        // An instant link: the inter-arrival times at the sink are the gaps.
        assert!((r.flows[0].interarrival_mean - mean).abs() < 1e-9);
    }
}

const LOSSY: &str = r#"
name = "weak-signal"
duration = "80 s"
[[hosts]]
name = "fixed"
address = "10.0.0.1"
[[hosts]]
name = "mobile"
address = "10.0.1.1"
[[links]]
between = ["fixed", "mobile"]
[[links.downlink]]
name = "radio"
rate = "10 Mbit/s"
delay = "5 ms"
error = { packet = "1%" }
[[links.uplink]]
name = "radio-up"
rate = "10 Mbit/s"
[[states]]
name = "weak"
at = "40 s"
set.radio = { error = { packet = "10%" } }
[[workload.udp]]
name = "cbr"
from = "fixed"
to = "mobile"
size = "1000 B"
rate = "4 Mbit/s"
"#;

/// A state at 40 s raises the loss from 1 % to 10 %: 20 000 packets on
/// each side, tolerance 0.3 and 1 percentage points (over 4 standard
/// deviations).
#[test]
fn state_at_40_s_changes_the_loss_rate() {
    let r = run_ok(&scenario(LOSSY), 11, all());
    let split = Instant::from_secs(40);
    let rate = |before: bool| {
        let ps: Vec<_> =
            r.packets.iter().filter(|p| (p.sent < split) == before && p.sent < Instant::from_secs(79)).collect();
        ps.iter().filter(|p| p.dropped.is_some()).count() as f64 / ps.len() as f64
    };
    let (before, after) = (rate(true), rate(false));
    assert!((before - 0.01).abs() < 0.003, "loss before {before}");
    assert!((after - 0.10).abs() < 0.01, "loss after {after}");
    let f = &r.flows[0];
    let errors = f.dropped[&squall_link::DropReason::Error];
    assert_eq!(f.dropped.len(), 1);
    assert_eq!(errors, r.packets.iter().filter(|p| p.dropped.is_some()).count() as u64);
    assert_eq!(f.sent_packets, f.delivered_packets + errors + f.in_flight);
    // The state change is in the event log at 40 s, and the log is in time order.
    let changes: Vec<_> = r.events.iter().filter(|e| e.kind == EventKind::StateChange).collect();
    assert_eq!(changes.len(), 1);
    assert_eq!((changes[0].time, &*changes[0].stage), (split, "weak"));
    assert!(r.events.windows(2).all(|w| w[0].time <= w[1].time));
    let drops = r.events.iter().filter(|e| matches!(e.kind, EventKind::Drop(_))).count() as u64;
    assert_eq!(drops, errors);
}

/// Same scenario and seed: the same results and events, bit for bit; another
/// seed gives other losses.
#[test]
fn runs_are_deterministic() {
    let s = scenario(LOSSY);
    let a = run_ok(&s, 5, all());
    let b = run_ok(&s, 5, all());
    assert_eq!(a, b);
    assert!(!a.events.is_empty());
    let c = run_ok(&s, 6, all());
    assert_ne!(a.flows[0].dropped, c.flows[0].dropped);
    // Recording changes nothing but what is kept.
    let d = run_ok(&s, 5, counters());
    assert_eq!(a.flows, d.flows);
    assert_eq!(a.stages, d.stages);
}

/// A flow faster than its link overflows the queue; every packet is
/// delivered, dropped with a reason, or still inside.
#[test]
fn overflow_drops_are_charged_to_the_flow() {
    let s = scenario(&format!(
        "{}
queue = {{ packets = 5 }}
[[workload.udp]]
name = \"flood\"
from = \"fixed\"
to = \"mobile\"
size = \"1000 B\"
rate = \"2 Mbit/s\"
ecn = true
",
        TWO_HOSTS
            .replace("[[links.uplink]]\nname = \"up\"\nrate = \"1 Mbit/s\"\ndelay = \"10 ms\"\n", "")
            .replace("[[links.downlink]]", "[[links.uplink]]\nname = \"up\"\n[[links.downlink]]")
    ));
    let r = run_ok(&s, 1, all());
    let f = &r.flows[0];
    let overflow = f.dropped[&squall_link::DropReason::QueueOverflow];
    assert!(overflow > 0);
    assert_eq!(f.sent_packets, f.delivered_packets + overflow + f.in_flight);
    // The link delivers at its rate: 1000 B every 8 ms after the first 18 ms.
    assert_eq!(f.delivered_packets, (1000 - 18) / 8 + 1);
    assert!(r.captures[1].packets.iter().all(|c| c.2.ecn == Ecn::Ect0));
    assert_eq!(r.packets.iter().filter(|p| p.dropped.is_some()).count() as u64, overflow);
}

/// On/off source: sends only in its on periods, each starting with a packet.
#[test]
fn on_off_source_is_silent_when_off() {
    let s = scenario(&format!(
        "{TWO_HOSTS}
[[workload.udp]]
name = \"talk\"
from = \"fixed\"
to = \"mobile\"
size = \"125 B\"
rate = \"10 kbit/s\"
on = \"300 ms\"
off = \"200 ms\"
start = \"100 ms\"
"
    ));
    let r = run_ok(&s, 1, all());
    // Gap 100 ms; on [100, 400), [600, 900): 3 packets in each.
    let sent: Vec<u64> = r.packets.iter().map(|p| p.sent.as_nanos() / 1_000_000).collect();
    assert_eq!(sent, vec![100, 200, 300, 600, 700, 800]);
}

#[test]
fn stop_and_count_end_the_source() {
    for (limit, n) in [("stop = \"50 ms\"", 4), ("count = 2", 2)] {
        let s = scenario(&format!(
            "{TWO_HOSTS}
[[workload.udp]]
name = \"short\"
from = \"fixed\"
to = \"mobile\"
size = \"1000 B\"
interval = \"15 ms\"
{limit}
"
        ));
        assert_eq!(run_ok(&s, 1, counters()).flows[0].sent_packets, n, "{limit}");
    }
}

#[test]
fn bad_scenarios_are_errors_not_panics() {
    let flow = |extra: &str| {
        scenario(&format!(
            "{TWO_HOSTS}
[[workload.udp]]
name = \"f\"
from = \"fixed\"
to = \"mobile\"
size = \"1000 B\"
{extra}
"
        ))
    };
    let err = |s: &Scenario| match run(s, 1, counters()) {
        Err(SimError::Scenario(m)) => m,
        other => panic!("expected a scenario error, got {other:?}"),
    };
    assert!(err(&flow("")).contains("exactly one of `rate` and `interval`"));
    assert!(err(&flow("interval = \"0 s\"")).contains("under 1 ns"));
    assert!(err(&flow("rate = \"1 Mbit/s\"\non = \"1 s\"")).contains("both `on` and `off`"));
    let mut s = flow("rate = \"1 Mbit/s\"");
    s.workload.udp[0].to = "nowhere".into();
    assert!(err(&s).contains("`nowhere`"));
    let mut s = flow("rate = \"1 Mbit/s\"");
    s.links[0].uplink.clear();
    s.workload.udp[0].from = "mobile".into();
    s.workload.udp[0].to = "fixed".into();
    assert!(err(&s).contains("no route"));
    let mut s = flow("rate = \"1 Mbit/s\"");
    s.hosts[1].address = s.hosts[0].address;
    assert!(err(&s).contains("address"));
    let s = scenario(&format!(
        "{TWO_HOSTS}
[[states]]
name = \"x\"
at = \"1 s\"
set.nope = {{ delay = \"1 ms\" }}
"
    ));
    assert!(err(&s).contains("`nope`"));
    // A cycle of states held for zero time would enter states forever at 0.
    let s = scenario(&format!(
        "{TWO_HOSTS}
[[states]]
name = \"a\"
hold = \"0 s\"
set.down = {{ delay = \"1 ms\" }}
[[states]]
name = \"b\"
hold = \"0 s\"
set.down = {{ delay = \"2 ms\" }}
"
    ));
    assert!(err(&s).contains("zero holding times"));
}

/// The wakeup bound stops a run that is not over, as a livelock would be.
#[test]
fn wakeup_bound_stops_an_unfinished_run() {
    let s = scenario(LOSSY);
    match run_bounded(&s, 1, RunOptions::default(), 1000) {
        Err(SimError::Livelock { wakeups, .. }) => assert_eq!(wakeups, 1000),
        other => panic!("expected the bound to stop the run, got {other:?}"),
    }
}

/// A blackout in drop mode: packets reaching the stage during it are dropped
/// with the reason "blackout"; two flows to the same port share one sink
/// and are measured apart.
#[test]
fn blackout_drops_are_charged_to_each_flow() {
    let s = scenario(&format!(
        "{TWO_HOSTS}
[[blackouts]]
at = \"200 ms\"
duration = \"200 ms\"
direction = \"downlink\"
mode = \"drop\"
[[workload.udp]]
name = \"a\"
from = \"fixed\"
to = \"mobile\"
size = \"500 B\"
interval = \"20 ms\"
[[workload.udp]]
name = \"b\"
from = \"fixed\"
to = \"mobile\"
size = \"500 B\"
interval = \"20 ms\"
start = \"10 ms\"
"
    ));
    let r = run_ok(&s, 1, all());
    assert_eq!((r.flows[0].key.src_port, r.flows[1].key.src_port), (10_000, 10_001));
    for f in &r.flows {
        // 500 B take 4 ms: nothing waits, so exactly the packets sent in
        // [200, 400) ms are lost: 10 per flow.
        assert_eq!(f.dropped.get(&squall_link::DropReason::Blackout), Some(&10), "{}", f.name);
        assert_eq!(f.dropped.len(), 1);
        assert_eq!(f.sent_packets, 50);
        assert_eq!(f.sent_packets, f.delivered_packets + 10 + f.in_flight);
    }
    for p in &r.packets {
        let in_blackout = p.sent >= Instant::from_millis(200) && p.sent < Instant::from_millis(400);
        assert_eq!(p.dropped.is_some(), in_blackout, "{p:?}");
    }
    let kinds: Vec<_> = r.events.iter().filter(|e| e.kind == EventKind::StateChange).map(|e| &*e.stage).collect();
    assert_eq!(kinds, vec!["blackout-0-start", "blackout-0-end"]);
}

/// Replication i runs with seed `scenario.seed + i`, whatever the number of
/// threads.
#[test]
fn replications_use_consecutive_seeds_on_any_number_of_threads() {
    let mut s = scenario(LOSSY);
    s.duration = squall_link::Duration::from_secs(5);
    s.replications = 3;
    s.seed = 40;
    let one = run_replications(&s, counters(), 1).unwrap();
    let three = run_replications(&s, counters(), 3).unwrap();
    assert_eq!(one, three);
    assert_eq!(one.iter().map(|r| r.seed).collect::<Vec<_>>(), vec![40, 41, 42]);
    assert_eq!(one[1], run_ok(&s, 41, counters()));
}
