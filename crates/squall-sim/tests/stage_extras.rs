//! The shipped scenarios of issue 12's stage extras, run in the engine:
//! a server with vacations (seed 003 §2.2), background load forwarded over
//! Seawind's BGL channel (seed 000 §5.1) and link-level flow control
//! between stages (seed 000 §4.2). The exact model figures are tested in
//! squall-link (tests/vacation.rs, bgl.rs, flow_control.rs); these check
//! that the scenario keys reach the model in a run.

use std::path::PathBuf;

use squall_link::DropReason;
use squall_sim::{RunOptions, RunResult, run_bounded};

const BOUND: u64 = 200_000_000;

fn run(file: &str) -> RunResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let s = squall_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let options = RunOptions { record_events: false, record_packets: false, record_captures: false };
    run_bounded(&s, s.seed, options, BOUND).expect("run succeeds")
}

/// 12 Mbit/s offered into 10 Mbit/s with vacations: 1000 B take 0.8 ms, so
/// 10 packets leave per 10 ms cycle for the first 5 s (5000) and 5 per
/// cycle after the state change (2500): 7500 in 10 s, less the few still
/// propagating (5 ms) at the end.
#[test]
fn degrader_vacations_carry_the_service_fraction() {
    let r = run("degrader-vacations.toml");
    let down = r.flows.iter().find(|f| f.name == "down").unwrap();
    println!("down: delivered {} packets", down.delivered_packets);
    assert!(down.delivered_packets.abs_diff(7500) <= 75, "delivered {}, hand count 7500", down.delivered_packets);
    assert!(down.dropped[&DropReason::QueueOverflow] > 0);
    assert_eq!(down.sent_packets, down.delivered_packets + down.dropped.values().sum::<u64>() + down.in_flight);
}

/// 1 Mbit/s of background forwarded from the router takes its share of the
/// 2 Mbit/s radio stage, which the 1.5 Mbit/s flow then overloads; without
/// it the flow would fit.
#[test]
fn seawind_bgl_load_reaches_the_radio_stage() {
    let r = run("seawind-bgl.toml");
    let router = r.stages.iter().find(|s| s.name == "router").unwrap();
    let radio = r.stages.iter().find(|s| s.name == "radio-down").unwrap();
    println!("router {:?}, radio {:?}", router.background, radio.background);
    // 20 s of 1 Mbit/s in 500 B packets, the first at 0.
    assert_eq!(router.background.generated, 5001);
    assert_eq!(router.background.served, 0);
    assert!(radio.background.received.abs_diff(5001) <= 1);
    let video = r.flows.iter().find(|f| f.name == "video").unwrap();
    // The radio stage is saturated: the video and the forwarded load it
    // serves (500 B each) fill its 2 Mbit/s; alone, the 1.5 Mbit/s video
    // would fit.
    let got = video.delivered_bytes as f64 * 8.0 / 20.0;
    let background = radio.background.served as f64 * 500.0 * 8.0 / 20.0;
    println!("video: {got} bit/s, background served at the radio: {background} bit/s");
    assert!((got + background - 2e6).abs() <= 0.01 * 2e6, "{got} + {background} bit/s");
    assert!(got < 0.9 * 1.5e6, "{got} bit/s");
}

/// The radio stage's window of 8 keeps its 8-packet queue from
/// overflowing: the router holds the excess of 2 Mbit/s over 1 Mbit/s.
#[test]
fn seawind_flow_control_moves_the_queue_upstream() {
    let r = run("seawind-flow-control.toml");
    let router = r.stages.iter().find(|s| s.name == "router").unwrap();
    let radio = r.stages.iter().find(|s| s.name == "radio-down").unwrap();
    println!("router max queue {}, radio max queue {}", router.max_queue_len, radio.max_queue_len);
    assert_eq!(radio.dropped_total(), 0);
    assert_eq!(router.dropped_total(), 0);
    assert!(radio.max_queue_len <= 8);
    // 2 s at 2 Mbit/s is 500 packets of 1000 B; the radio has sent about
    // 250 of them by 2 s, so the router held about 240.
    assert!(router.max_queue_len > 200, "{}", router.max_queue_len);
    let bulk = r.flows.iter().find(|f| f.name == "bulk").unwrap();
    assert_eq!(bulk.delivered_packets, bulk.sent_packets);
}
