//! `[[record]]` output vectors (seed 004 §5) end to end: vectors.csv
//! against the files the run writes anyway (the TCP trace file, the
//! report's stage occupancy from events.csv), the sampling grid, and the
//! time-averaged cwnd in summary.json against the trace file's.

use std::path::Path;

mod common;
use common::squall;

const SCENARIO: &str = r#"name = "vectors"
duration = "3 s"
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
rate = "2 Mbit/s"
delay = "20 ms"
queue = { packets = 20 }
[[links.uplink]]
name = "up"
rate = "2 Mbit/s"
delay = "20 ms"
[[workload.tcp]]
name = "bulk"
from = "fixed"
to = "mobile"
app = { bulk = "300 KB" }
[[record]]
flow = "bulk"
quantity = "cwnd"
[[record]]
stage = "down"
quantity = "queue_packets"
[[record]]
stage = "down"
quantity = "drops_queue_overflow"
[[record]]
stage = "down"
quantity = "queue_bytes"
every = "10 ms"
"#;

/// Runs SCENARIO (with `extra` appended) into `dir`/out.
fn run(dir: &Path, extra: &str) -> std::path::PathBuf {
    let file = dir.join("s.toml");
    std::fs::write(&file, format!("{SCENARIO}{extra}")).unwrap();
    let out = dir.join("out");
    let o = squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "squall sim failed: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// vectors.csv's rows of (source, name): (time as written, value).
fn vector(dir: &Path, source: &str, name: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("vectors.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_s,source,name,value"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[1] == source && f[2] == name)
        .map(|f| (f[0].to_string(), f[3].to_string()))
        .collect()
}

/// Consecutive repeats left out: the changes of a step function.
fn changes<T: PartialEq + Clone>(rows: &[(T, String)]) -> Vec<(T, String)> {
    let mut out: Vec<(T, String)> = Vec::new();
    for r in rows {
        if out.last().is_none_or(|l| l.1 != r.1) {
            out.push(r.clone());
        }
    }
    out
}

#[test]
fn the_cwnd_vector_is_the_trace_files_cwnd_column_at_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run(dir.path(), "").join("rep-0");
    let trace = std::fs::read_to_string(rep.join("tcp-bulk-0-client.csv")).unwrap();
    let mut lines = trace.lines();
    assert_eq!(lines.next(), Some("time,cwnd,ssthresh,srtt,rttvar,rto,in_flight"));
    let column: Vec<(String, String)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let expected = changes(&column);
    let recorded = vector(&rep, "bulk/0/client", "cwnd");
    // Slow start, a loss at the 20-packet queue and recovery: many changes.
    assert!(expected.len() > 20, "{expected:?}");
    assert_eq!(recorded, expected);
}

#[test]
fn a_stage_vector_at_every_change_matches_the_reports_stage_occupancy() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run(dir.path(), "").join("rep-0");
    let hosts = [("fixed", [10, 0, 0, 1]), ("mobile", [10, 0, 1, 1])]
        .map(|(n, a)| squall_analysis::RunHost { name: n.into(), address: a.into() });
    let detail = squall_analysis::detail::run_detail(&rep, &hosts).unwrap();
    let down = detail.occupancy.iter().find(|s| s.name == "down").expect("occupancy of down");
    let mut expected = vec![("0.000000000".to_string(), "0".to_string())];
    expected.extend(down.points.iter().map(|&(t, n)| (format!("{t:.9}"), format!("{n}"))));
    let expected = changes(&expected);
    let recorded = vector(&rep, "down", "queue_packets");
    assert!(recorded.len() > 100, "{recorded:?}");
    assert_eq!(recorded.len(), expected.len());
    for (r, e) in recorded.iter().zip(&expected) {
        // The report reads times as f64 seconds: equal to the nanosecond.
        assert!((r.0.parse::<f64>().unwrap() - e.0.parse::<f64>().unwrap()).abs() < 1e-9, "{r:?} {e:?}");
        assert_eq!(r.1, e.1);
    }
    // Overflow drops, cumulative: one step per drop in events.csv.
    let events = std::fs::read_to_string(rep.join("events.csv")).unwrap();
    let overflow = events.lines().filter(|l| l.contains(",down,") && l.contains("queue_overflow")).count();
    let drops = vector(&rep, "down", "drops_queue_overflow");
    assert!(overflow > 0);
    assert_eq!(drops.last().unwrap().1, overflow.to_string());
    assert_eq!(drops.len(), overflow + 1, "the 0 at the start, then each drop");
}

#[test]
fn every_10_ms_gives_a_sample_each_10_ms_over_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run(dir.path(), "").join("rep-0");
    let rows = vector(&rep, "down", "queue_bytes");
    // 0, 10 ms, ..., 3 s: 301 samples, each exactly k·10 ms.
    assert_eq!(rows.len(), 301);
    for (k, (t, _)) in rows.iter().enumerate() {
        assert_eq!(*t, format!("{}.{:09}", k / 100, (k % 100) * 10_000_000));
    }
    // Each sample is the byte count the stage-at-every-change vector has
    // in force at its instant.
    let packets = vector(&rep, "down", "queue_packets");
    let in_force = |t: f64| {
        let i = packets.partition_point(|(pt, _)| pt.parse::<f64>().unwrap() <= t + 1e-12);
        packets[i - 1].1.parse::<u64>().unwrap()
    };
    for (t, bytes) in &rows {
        let n = in_force(t.parse().unwrap());
        let b: u64 = bytes.parse().unwrap();
        // Data segments of 1 500 B and 40-byte ACK-less SYN/FIN: empty
        // exactly when no packet is inside.
        assert_eq!(b == 0, n == 0, "at {t}: {b} B, {n} packets");
        assert!(b <= n * 1500, "at {t}: {b} B in {n} packets");
    }
}

#[test]
fn the_average_cwnd_in_the_summary_is_the_trace_files_time_average() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let run0 = &summary["runs"][0];
    assert_eq!(run0["tcp_flows"][0]["completed"], true);
    let avg = &run0["cwnd_average"][0];
    assert_eq!(avg["flow"], "bulk");
    assert_eq!(avg["endpoint"], "client");
    // From the trace file: each window held until the next row, over the
    // first row to the last (the transfer completed).
    let trace = std::fs::read_to_string(out.join("rep-0/tcp-bulk-0-client.csv")).unwrap();
    let rows: Vec<(f64, f64)> = trace
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap())
        })
        .collect();
    let area: f64 = rows.windows(2).map(|w| w[0].1 * (w[1].0 - w[0].0)).sum();
    let (first, last) = (rows[0].0, rows[rows.len() - 1].0);
    let expected = area / (last - first);
    let bytes = avg["bytes"].as_f64().unwrap();
    assert!((bytes - expected).abs() < 1e-6 * expected, "{bytes} against {expected}");
    assert_eq!(avg["from"].as_f64().unwrap(), first);
    assert_eq!(avg["to"].as_f64().unwrap(), last);
    // Between the initial window and the largest one.
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    assert!(bytes > rows[0].1 && bytes < max, "{bytes}");
}

#[test]
fn without_a_cwnd_record_the_summary_has_no_average_and_no_vectors_file_without_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let plain = SCENARIO.split("[[record]]").next().unwrap();
    std::fs::write(&file, plain).unwrap();
    let out = dir.path().join("out");
    let o = squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join("rep-0/vectors.csv").exists());
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(!summary.contains("cwnd_average"));
    assert!(!summary.contains("record"));
}
