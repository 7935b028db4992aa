//! `--downlink-trace` / `--uplink-trace` (mm-link's DOWNLINK-TRACE and
//! UPLINK-TRACE) on a `--link` one-liner: a Mahimahi trace stage follows
//! the netem stage, in the simulator here (both engines share the loader).

use std::process::Command;

mod common;
use common::SQUALL;

#[test]
fn a_link_one_liner_takes_mahimahi_traces() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("12mbit.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let out = dir.path().join("out");
    let o = Command::new(SQUALL)
        .args(["sim", "--link", "delay 10ms", "--udp", "20 Mbit/s", "--set", "duration=\"10 s\"", "--downlink-trace"])
        .arg(&trace)
        .arg("--uplink-trace")
        .arg(&trace)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let link = &s["resolved_scenario"]["links"][0];
    assert_eq!(link["downlink"][1]["name"], "trace-down");
    assert_eq!(link["uplink"][1]["name"], "trace-up");
    assert_eq!(link["uplink"][1]["trace"]["opportunities_ms"], serde_json::json!([1]));
    // The 1200-byte packets of --udp reach the trace stage from 10 ms on:
    // 9 990 opportunities of 1 504 B to 10 s, each packet costing 1 204 B:
    // 9 990 · 1 504 / 1 204 = 12 479.4 packets (one is partly sent at the end).
    let stages = s["runs"][0]["stages"].as_array().unwrap();
    let trace_down = stages.iter().find(|st| st["name"] == "trace-down").unwrap();
    let delivered = trace_down["delivered"].as_f64().unwrap();
    assert!((delivered - 9990.0 * 1504.0 / 1204.0).abs() <= 1.0, "trace-down delivered {delivered}");

    // A bad trace names the flag, the file and the line.
    std::fs::write(&trace, "2\n1\n").unwrap();
    let o =
        Command::new(SQUALL).args(["sim", "--link", "delay 10ms", "--downlink-trace"]).arg(&trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("--downlink-trace") && err.contains("12mbit.trace:2: 1 ms comes after 2 ms"), "{err}");
    // Only with --link.
    let o = Command::new(SQUALL).args(["sim", "builtin:gsm-udp", "--downlink-trace"]).arg(&trace).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("in a scenario file give the stage `trace"), "{err}");
}
