//! Per-packet loss decisions replayed in order (issue 30): `error = {
//! sequence = { file = "loss.txt" } }` loses exactly the packets its file
//! names, in `squall sim` and in `squall emu` (ping's sequence numbers).
//! The emulator's test needs root and network namespaces: without them it
//! is skipped with a message, except under CI=true, where it fails.

use std::path::Path;

mod common;
use common::{UDP_A_TO_B, events, namespaces_available, path_scenario, squall as run};

/// The decisions: keep, keep, lose, lose, keep, looping; the 0-based
/// packet k is lost when k mod 5 is 2 or 3.
const DECISIONS: &str = "# measured on a path, one per packet\nkeep\nkeep\ndrop\n1 # a burst of two\n0\n";

fn lost_by_hand(k: u64) -> bool {
    matches!(k % 5, 2 | 3)
}

/// A path from `a` (10.0.0.1) to `b` (10.0.1.1) whose downlink stage
/// `path` takes its losses from `error` (loss.txt holds [`DECISIONS`]),
/// with the UDP flow when `udp`.
fn scenario(dir: &Path, error: &str, udp: bool) -> std::path::PathBuf {
    let workload = if udp { UDP_A_TO_B } else { "" };
    path_scenario(dir, ("loss-sequence", "2 s"), "", &format!("error = {error}"), workload, &[("loss.txt", DECISIONS)])
}

/// The 0-based positions (in order of entry to stage `path`) of the
/// packets it lost, and how many entered, from a run's events.csv.
fn lost_positions(file: &Path) -> (Vec<u64>, u64) {
    lost_positions_at(file, "path")
}

fn lost_positions_at(file: &Path, stage: &str) -> (Vec<u64>, u64) {
    let mut order = std::collections::HashMap::new();
    let mut lost = Vec::new();
    for r in events(file, Some(stage)) {
        let p: u64 = r["packet"].parse().unwrap();
        match r["event"].as_str() {
            "enqueue" => {
                let n = order.len() as u64;
                order.insert(p, n);
            }
            "drop" => {
                assert_eq!(r["reason"], "error", "{r:?}");
                lost.push(order[&p]);
            }
            _ => {}
        }
    }
    lost.sort();
    (lost, order.len() as u64)
}

/// One 100-byte packet every 20 ms for 2 s: 100 packets, of which exactly
/// the 40 at positions 2, 3, 7, 8, ... are lost. The run's resolved
/// scenario keeps the decisions (`pattern = "00110"`) and replays the same
/// losses without the file.
#[test]
fn the_simulator_loses_exactly_the_packets_the_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), r#"{ sequence = { file = "loss.txt" } }"#, true);
    let out = dir.path().join("run");
    let o = run(&["sim", s.to_str().unwrap(), "--no-pcap", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (lost, entered) = lost_positions(&out.join("rep-0/events.csv"));
    assert_eq!(entered, 100);
    let expected: Vec<u64> = (0..entered).filter(|&k| lost_by_hand(k)).collect();
    assert_eq!(expected.len(), 40);
    assert_eq!(lost, expected);
    let resolved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(resolved.contains("pattern = \"00110\""), "{resolved}");
    // Replayed from the resolved scenario in another directory (no loss.txt).
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::copy(out.join("scenario.toml"), elsewhere.path().join("again.toml")).unwrap();
    let again = elsewhere.path().join("run");
    let o = run(&[
        "sim",
        elsewhere.path().join("again.toml").to_str().unwrap(),
        "--no-pcap",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lost_positions(&again.join("rep-0/events.csv")).0, expected);
    // The same decisions inline.
    let s = scenario(dir.path(), r#"{ sequence = { pattern = "00110" } }"#, true);
    let inline = dir.path().join("inline");
    let o = run(&["sim", s.to_str().unwrap(), "--no-pcap", "--out", inline.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lost_positions(&inline.join("rep-0/events.csv")).0, expected);
}

/// A bad decision file is refused with the scenario's key, the file, the
/// line and what was expected; a bad inline pattern at its key.
#[test]
fn a_bad_decision_file_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), r#"{ sequence = { file = "loss.txt" } }"#, true);
    for (text, expected) in [
        ("0\n1\nlost\n", "loss.txt:3: `lost` is not a decision; expected 0 or keep (gets through), 1 or drop (lost)"),
        ("# none\n", "loss.txt: no decisions; expected one per line"),
        ("0\n0.5\n", "loss.txt:2: `0.5` is not a decision"),
    ] {
        std::fs::write(dir.path().join("loss.txt"), text).unwrap();
        let o = run(&["sim", s.to_str().unwrap(), "--out", dir.path().join("x").to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(expected), "{e}");
        assert!(e.contains("s.toml") && e.contains("error.sequence.file"), "{e}");
    }
    let s = scenario(dir.path(), r#"{ sequence = { pattern = "0012" } }"#, true);
    let o = run(&["sim", s.to_str().unwrap(), "--out", dir.path().join("x").to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("only 0 (kept) and 1 (lost)") && e.contains("character 4"), "{e}");
}

/// The emulator: ping sends 20 echo requests from `a` to `b` across the
/// downlink stage (the only packets that cross it: the hosts' IPv6 is
/// off); requests 3, 4, 8, 9, 13, 14, 18 and 19 (icmp_seq, from 1) are
/// lost, so ping hears exactly the other 12 replies.
#[test]
fn the_emulator_loses_exactly_the_pings_the_file_names() {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Without the simulator's UDP flow: ping is the only traffic.
    let s = scenario(dir.path(), r#"{ sequence = { file = "loss.txt" } }"#, false);
    let out = dir.path().join("emu");
    let o = run(&[
        "emu",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--run",
        "a@0.2s=ping -c 20 -i 0.05 -W 1 10.0.1.1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ping = std::fs::read_to_string(out.join("rep-0/workloads/0-a.stdout")).unwrap();
    let heard: Vec<u64> =
        ping.lines().filter_map(|l| l.split("icmp_seq=").nth(1)?.split_whitespace().next()?.parse().ok()).collect();
    let expected: Vec<u64> = (1..=20).filter(|&s| !lost_by_hand(s - 1)).collect();
    assert_eq!(heard, expected, "{ping}");
    let (lost, entered) = lost_positions(&out.join("rep-0/events.csv"));
    assert_eq!(entered, 20);
    assert_eq!(lost, (0..20).filter(|&k| lost_by_hand(k)).collect::<Vec<_>>());
}

/// scenarios/loss-decisions.toml: 100 packets a second for 20 s meet the
/// first 2000 decisions of traces/gilbert-loss.txt (read here line by
/// line: `#` comments, then 0 or 1), and the stage loses exactly the
/// packets whose decision is 1, no others (its 2 Mbit/s carry the
/// 160 kbit/s flow without queueing drops).
#[test]
fn the_shipped_loss_decisions_scenario_loses_the_files_packets() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let decisions: Vec<u64> = std::fs::read_to_string(scenarios.join("traces/gilbert-loss.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.parse().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let file = scenarios.join("loss-decisions.toml");
    let o = run(&["sim", file.to_str().unwrap(), "--no-pcap", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (lost, entered) = lost_positions_at(&out.join("rep-0/events.csv"), "radio-down");
    assert_eq!(entered, 2000);
    let expected: Vec<u64> = (0..entered).filter(|&k| decisions[k as usize] == 1).collect();
    println!("{} of {entered} lost", lost.len());
    assert_eq!(lost, expected);
}
