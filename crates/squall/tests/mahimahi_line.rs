//! Mahimahi's shells typed on `--link` (`mm-delay 20 mm-loss downlink 0.1
//! mm-link up down`): the stages squall builds (the resolved scenario),
//! what a run over them delivers, and the located errors. Both engines
//! load `--link` the same way (`sim_cmd::load_with`); the simulator runs
//! here.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{SQUALL, summary};

/// `squall sim --link LINK EXTRA --no-pcap --out DIR/out` in `dir`.
fn sim(dir: &Path, link: &str, extra: &[&str]) -> Output {
    Command::new(SQUALL)
        .current_dir(dir)
        .args(["sim", "--link", link, "--no-pcap", "--out", "out"])
        .args(extra)
        .output()
        .unwrap()
}

/// `mm-delay 20 mm-loss downlink 0.1` (mm-delay outside mm-loss): the
/// downlink crosses mm-delay then mm-loss, the uplink only mm-delay (no
/// loss, as mm-loss names the downlink). A 1 Mbit/s flow of 1 200-byte
/// packets for 20 s: 2 083 packets, each lost with probability 0.1
/// (within 3.5 binomial standard errors), each delivered 20 ms after it
/// was sent (no rate: delay alone).
#[test]
fn mm_delay_and_mm_loss_are_stages_in_crossing_order() {
    let dir = tempfile::tempdir().unwrap();
    let o = sim(dir.path(), "mm-delay 20 mm-loss downlink 0.1", &["--udp", "1 Mbit/s", "--set", "duration=\"20 s\""]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.starts_with(
            "--link: downlink mm-delay-down (delay 20 ms, no loss) -> mm-loss-down (delay 0 ms, loss 10%); uplink mm-delay-up (delay 20 ms, no loss)\n"
        ),
        "{stderr}"
    );
    let s = summary(&dir.path().join("out"));
    let link = &s["resolved_scenario"]["links"][0];
    let names = |dir: &str| -> Vec<String> {
        link[dir].as_array().unwrap().iter().map(|st| st["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names("downlink"), ["mm-delay-down", "mm-loss-down"]);
    assert_eq!(names("uplink"), ["mm-delay-up"]);
    assert_eq!(link["downlink"][0]["delay"], "20 ms");
    assert_eq!(link["downlink"][1]["error"], serde_json::json!({ "packet": "0.1" }));
    let flow = &s["runs"][0]["flows"][0];
    let n = |k: &str| flow[k].as_f64().unwrap();
    // Those still on the way at the end are neither lost nor delivered.
    let (sent, received) = (n("sent_packets") - n("in_flight"), n("delivered_packets"));
    let lost = 1.0 - received / sent;
    println!("sent {sent}, received {received}, lost {lost}; delay {}", flow["delay_mean"]);
    assert!((lost - 0.1).abs() <= 3.5 * (0.1f64 * 0.9 / sent).sqrt(), "lost {lost} of {sent}");
    assert!((flow["delay_mean"].as_f64().unwrap() - 0.020).abs() < 1e-9, "{flow}");
}

/// `mm-delay 10 mm-link up down --downlink-queue=droptail
/// --downlink-queue-args=packets=50`, both traces `1` (one 1 504-byte
/// opportunity per ms), under 20 Mbit/s of 1 200-byte packets for 10 s:
/// the downlink's mm-link stage, behind 10 ms of mm-delay, sends from
/// 10 ms on, 9 990 opportunities, each packet costing 1 204 B: 9 990 ·
/// 1 504 / 1 204 = 12 479.4 packets (as `--downlink-trace` after a 10 ms
/// `--link` stage, tests/trace_flags.rs); its queue holds 50 packets.
#[test]
fn mm_link_nested_in_mm_delay_replays_its_traces() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("up.trace"), "1\n").unwrap();
    std::fs::write(dir.path().join("down.trace"), "1\n").unwrap();
    let o = sim(
        dir.path(),
        "mm-delay 10 mm-link up.trace down.trace --downlink-queue=droptail --downlink-queue-args=packets=50",
        &["--udp", "20 Mbit/s", "--set", "duration=\"10 s\""],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&dir.path().join("out"));
    let link = &s["resolved_scenario"]["links"][0];
    assert_eq!(link["downlink"][1]["name"], "mm-link-down");
    assert_eq!(link["downlink"][1]["trace"]["opportunities_ms"], serde_json::json!([1]));
    assert_eq!(link["downlink"][1]["queue"]["packets"], 50);
    assert_eq!(link["uplink"][0]["name"], "mm-link-up");
    assert_eq!(link["uplink"][1]["name"], "mm-delay-up");
    let stages = s["runs"][0]["stages"].as_array().unwrap();
    let down = stages.iter().find(|st| st["name"] == "mm-link-down").unwrap();
    let delivered = down["delivered"].as_f64().unwrap();
    println!("mm-link downlink delivered {delivered}");
    assert!((delivered - 9990.0 * 1504.0 / 1204.0).abs() <= 1.0, "mm-link delivered {delivered}");
}

/// Errors name `--link`, the column of the word and what was expected.
#[test]
fn bad_mahimahi_lines_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let err = |link: &str, extra: &[&str]| {
        let o = sim(dir.path(), link, extra);
        assert!(!o.status.success(), "{link} ran");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = err("mm-delay 20ms", &[]);
    assert!(e.contains("--link:1:10: `mm-delay`: `20ms` is not a whole number of milliseconds"), "{e}");
    let e = err("mm-loss uplink 10%", &[]);
    assert!(
        e.contains("--link:1:16: `mm-loss`: `10%` is a percentage; mm-loss takes a probability (10% is 0.1)"),
        "{e}"
    );
    let e = err("mm-link missing.up missing.down", &[]);
    assert!(e.contains("--link:1:9: `mm-link`: uplink trace: ") && e.contains("missing.up"), "{e}");
    let e = err("mm-delay 20 ping -c 3 10.0.0.1", &[]);
    assert!(e.contains("`ping` is not a Mahimahi shell; expected a Mahimahi shell"), "{e}");
    let e = err("mm-delay 20", &["--uplink", "delay 5ms"]);
    assert!(e.contains("a line of Mahimahi shells gives both directions"), "{e}");
}
