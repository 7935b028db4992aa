//! `squall bench sim` (issue 35) and the `squall bench measure` it times
//! each simulator with: the usage measured is the child's own (a shell
//! holding 50 MB, against `true`), the single-flow point runs
//! `squall bench tcp`'s scenario (the same packets delivered, counted
//! another way), the many-flows points stay under the link's capacity, and
//! bad arguments are named.

mod common;
use common::{ok, squall};

fn measure(dir: &std::path::Path, command: &[&str]) -> (serde_json::Value, String) {
    let stdout = dir.join("stdout.txt");
    let mut args = vec!["bench", "measure", "--stdout", stdout.to_str().unwrap(), "--"];
    args.extend(command);
    let out = ok(squall(&args));
    let usage = serde_json::from_slice(&out.stdout).unwrap();
    (usage, std::fs::read_to_string(stdout).unwrap())
}

#[test]
fn measure_reports_the_childs_own_peak_memory_and_exit() {
    let dir = tempfile::tempdir().unwrap();
    // A shell that holds a 50 000 000-byte string: its peak RSS is at
    // least 50e6 / 1024 = 48 828 kB, whatever squall's own.
    let (big, out) = measure(dir.path(), &["sh", "-c", "x=$(head -c 50000000 /dev/zero | tr '\\0' a); echo ${#x}"]);
    assert_eq!(out.trim(), "50000000", "the child's stdout goes to --stdout");
    assert_eq!(big["exit_code"], 0);
    let big_kb = big["max_rss_kb"].as_u64().unwrap();
    assert!(big_kb >= 48_828, "{big}");
    assert!(big["wall_seconds"].as_f64().unwrap() > 0.0, "{big}");
    // `true` alone: a few hundred kB, not the shell's 50 MB nor squall's.
    let (small, _) = measure(dir.path(), &["true"]);
    let small_kb = small["max_rss_kb"].as_u64().unwrap();
    assert!(small_kb > 0 && small_kb < 8_000, "{small}");
    let (failed, _) = measure(dir.path(), &["sh", "-c", "exit 3"]);
    assert_eq!(failed["exit_code"], 3);
}

#[test]
fn the_points_run_their_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    ok(squall(&["bench", "sim", "--flows", "1,10", "--no-ns3", "--json", json.to_str().unwrap()]));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = report["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);

    // One flow: `squall bench tcp`'s single-flow scenario (in-process,
    // counted from the flow's metrics rather than the stage's) delivers
    // the same packets on the data direction with the same seed.
    let tcp_json = dir.path().join("tcp.json");
    ok(squall(&["bench", "tcp", "--runs", "1", "--seed", "1", "--json", tcp_json.to_str().unwrap()]));
    let tcp: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tcp_json).unwrap()).unwrap();
    let one = &points[0]["squall"];
    assert_eq!(points[0]["point"]["flows"], 1);
    assert_eq!(one["delivered_packets"], tcp["runs"][0]["link_packets"], "{one} {tcp}");

    // Ten flows on 100 Mbit/s for 3 s: at most 100e6 * 3 / 8 / 1500 =
    // 25 000 full-size packets fit through the link; the flows open with
    // two segments each and double per RTT of ~40 ms, so far more than a
    // tenth of that is carried.
    let ten = &points[1]["squall"];
    let delivered = ten["delivered_packets"].as_u64().unwrap();
    assert!((2_500..=25_000).contains(&delivered), "{ten}");
    let us = ten["wall_us_per_packet"].as_f64().unwrap();
    let wall = ten["wall_seconds"].as_f64().unwrap();
    assert!((us - wall * 1e6 / delivered as f64).abs() < 1e-6 * us, "{ten}");
    assert!(ten["max_rss_kb"].as_u64().unwrap() > 0);
    assert!(points[1]["ns3"].is_null());
}

#[test]
fn bad_arguments_are_named() {
    let out = squall(&["bench", "sim", "--flows", "10,0", "--no-ns3"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--flows") && err.contains("at least 1"), "{err}");
    let out = squall(&["bench", "sim", "--flows", "ten"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--flows") && err.contains("ten"), "{err}");
    let out = squall(&["bench", "sim", "--ns3", "/nonexistent/many_flows", "--flows", "10"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/many_flows") && err.contains("no such program"), "{err}");
}

/// More flows than one host has ports (64 512 from 1024 to 65535) take a
/// second sender: 70 000 flows failed the server-port check before
/// (`dst_port + k` past 65 535 from one host).
#[test]
fn more_flows_than_one_host_has_ports_run_from_two_senders() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    ok(squall(&["bench", "sim", "--flows", "70000", "--no-ns3", "--json", json.to_str().unwrap()]));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let point = &report["points"][0];
    // ceil(70 000 / 50 000) = 2 hosts.
    assert_eq!(point["point"]["senders"], 2, "{point}");
    // 100 Mbit/s for 3 s: 37.5 MB, at most 625 000 of the smallest
    // (60-byte) packets; the run carries packets.
    let delivered = point["squall"]["delivered_packets"].as_u64().unwrap();
    assert!((1..=625_000).contains(&delivered), "{point}");
}
