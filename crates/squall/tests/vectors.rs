//! `[[record]]` output vectors (seed 004 §5) end to end: vectors.csv
//! against the files the run writes anyway (the TCP trace file, the
//! report's stage occupancy from events.csv), the sampling grid, and the
//! time-averaged cwnd in summary.json against the trace file's.

use std::path::Path;

mod common;
use common::{events, path_scenario, squall};

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
    let hosts =
        [("fixed", [10, 0, 0, 1]), ("mobile", [10, 0, 1, 1])].map(|(n, a)| squall_analysis::RunHost::v4(n, a.into()));
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
    let overflow =
        events(&rep.join("events.csv"), Some("down")).iter().filter(|r| r["reason"] == "queue_overflow").count();
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

/// A stage's `rate` vector steps exactly where the states that set it
/// are entered, to the rate each sets (by hand from the scenario); a
/// state that sets another key of the stage leaves it alone.
#[test]
fn the_rate_vector_follows_the_states_that_set_the_stage() {
    let dir = tempfile::tempdir().unwrap();
    let states = "[[record]]\nstage = \"down\"\nquantity = \"rate\"\n\
                  [[states]]\nname = \"slow\"\nat = \"1 s\"\nset.down = { rate = \"500 kbit/s\" }\n\
                  [[states]]\nname = \"later\"\nat = \"1.5 s\"\nset.down = { delay = \"40 ms\" }\n\
                  [[states]]\nname = \"fast\"\nat = \"2.25 s\"\nset.down = { rate = \"4 Mbit/s\" }\n";
    let rep = run(dir.path(), states).join("rep-0");
    let rows = vector(&rep, "down", "rate");
    let expected = [("0.000000000", "2000000"), ("1.000000000", "500000"), ("2.250000000", "4000000")]
        .map(|(t, v)| (t.to_string(), v.to_string()));
    assert_eq!(rows, expected);
}

/// Deliveries of the stage's events.csv, (time s, bytes).
fn deliveries(rep: &Path, stage: &str) -> Vec<(f64, f64)> {
    events(&rep.join("events.csv"), Some(stage))
        .into_iter()
        .filter(|r| r["event"] == "deliver")
        .map(|r| (r["time"].parse().unwrap(), r["size"].parse().unwrap()))
        .collect()
}

/// A stage's `throughput` over 100 ms windows is, window by window, the
/// bytes of events.csv's deliveries in (t − 100 ms, t] in bit/s, its
/// `delivered_bytes` their running sum; the windows of the saturated
/// 2 Mbit/s link carry at most its rate plus one 1 500-byte packet
/// (120 kbit/s over 100 ms), and in all exactly the bytes delivered.
#[test]
fn a_stage_throughput_is_its_deliveries_per_window() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[[record]]\nstage = \"down\"\nquantity = \"throughput\"\nevery = \"100 ms\"\n\
                 [[record]]\nstage = \"down\"\nquantity = \"delivered_bytes\"\n";
    let rep = run(dir.path(), extra).join("rep-0");
    let delivered = deliveries(&rep, "down");
    let rows = vector(&rep, "down", "throughput");
    // Windows (0, 0.1], ..., (2.9, 3.0]: 30 samples, none at 0.
    assert_eq!(rows.len(), 30, "{rows:?}");
    let mut busy = 0;
    for (k, (t, v)) in rows.iter().enumerate() {
        let end = (k + 1) as f64 * 0.1;
        assert!((t.parse::<f64>().unwrap() - end).abs() < 1e-9, "{t}");
        let bytes: f64 =
            delivered.iter().filter(|(at, _)| *at > end - 0.1 + 1e-12 && *at <= end + 1e-12).map(|d| d.1).sum();
        let bps: f64 = v.parse().unwrap();
        assert!((bps - bytes * 8.0 / 0.1).abs() < 1e-6, "window ending {end}: {bps} bit/s, events {bytes} B");
        assert!(bps <= 2e6 + 120e3, "window ending {end}: {bps} bit/s over a 2 Mbit/s link");
        busy += usize::from(bps > 1.8e6);
    }
    // 300 KB at 2 Mbit/s is 1.2 s of sending: the link is busy in most
    // windows of the transfer.
    assert!(busy >= 8, "{busy} busy windows: {rows:?}");
    let total: f64 = delivered.iter().map(|d| d.1).sum();
    let from_windows: f64 = rows.iter().map(|(_, v)| v.parse::<f64>().unwrap() * 0.1 / 8.0).sum();
    assert!((from_windows - total).abs() < 1e-3, "{from_windows} against {total}");
    let running = vector(&rep, "down", "delivered_bytes");
    assert_eq!(running.first().unwrap(), &("0.000000000".to_string(), "0".to_string()));
    assert_eq!(running.last().unwrap().1, format!("{total}"));
}

/// A TCP flow's `delivered_bytes` ends at the 300 KB its application
/// sent (every byte acknowledged), and its `throughput` windows add up to
/// them. What is acknowledged by the end of a window was delivered by the
/// downlink stage by then (events.csv, IP bytes: at least the payload);
/// a window may carry more than the link's rate, when one cumulative ACK
/// covers a repaired hole and the SACKed data above it.
#[test]
fn a_flow_throughput_adds_up_to_its_acknowledged_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[[record]]\nflow = \"bulk\"\nquantity = \"throughput\"\nevery = \"100 ms\"\n\
                 [[record]]\nflow = \"bulk\"\nquantity = \"delivered_bytes\"\n";
    let rep = run(dir.path(), extra).join("rep-0");
    let running = vector(&rep, "bulk/0/client", "delivered_bytes");
    assert_eq!(running.last().unwrap().1, "300000", "{running:?}");
    let mut previous = 0.0;
    for (t, v) in &running {
        let v: f64 = v.parse().unwrap();
        assert!(v > previous || previous == 0.0, "at {t}: {v} after {previous}");
        previous = v;
    }
    let rows = vector(&rep, "bulk/0/client", "throughput");
    let delivered = deliveries(&rep, "down");
    let mut acked = 0.0;
    for (t, v) in &rows {
        acked += v.parse::<f64>().unwrap() * 0.1 / 8.0;
        let end: f64 = t.parse().unwrap();
        let through: f64 = delivered.iter().filter(|(at, _)| *at <= end + 1e-12).map(|d| d.1).sum();
        assert!(acked <= through + 1e-3, "by {t}: {acked} B acknowledged, {through} B delivered");
    }
    assert!((acked - 300_000.0).abs() < 1e-3, "{acked}: {rows:?}");
}

#[test]
fn throughput_without_a_window_and_the_rate_of_a_stage_without_one_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let check = |extra: &str| {
        std::fs::write(&file, format!("{SCENARIO}{extra}")).unwrap();
        let out = dir.path().join("out");
        let o = squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(!o.status.success(), "accepted: {extra}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let lines = SCENARIO.lines().count();
    let e = check("[[record]]\nstage = \"down\"\nquantity = \"throughput\"\n");
    assert!(e.contains(&format!("s.toml:{}", lines + 3)) && e.contains("record[4].quantity"), "{e}");
    assert!(e.contains("every = \"100 ms\""), "{e}");
    let e = check(
        "[[record]]\nstage = \"down\"\nquantity = \"rate\"\n[[states]]\nname = \"s\"\nat = \"1 s\"\n\
         set.down = { service_time = \"1 ms\" }\n",
    );
    assert!(e.contains("record[4].quantity") && e.contains("a service time"), "{e}");
    assert!(e.contains("`throughput`"), "{e}");
}

/// A TCP flow's `delivery_rate` (Linux's `tcpi_delivery_rate`) on the
/// saturated 2 Mbit/s link is the link's rate of segments times the MSS:
/// 2 Mbit/s / 1 500 B per packet = 166.7 packets/s, each of MSS payload
/// bytes (1 448: the linux profile's timestamps take 12 of 1 460), so
/// 1.9307 Mbit/s. No kept sample is above it by more than one segment
/// over the sample's interval, which is at least the minimum RTT (46 ms:
/// 40 ms of propagation and one segment; tcp_rate.c `tcp_rate_gen`
/// discards shorter ones): the packets a sample counts all crossed the
/// link within its interval, at most one more than the interval holds
/// segment times (6 ms), so at most 6/46 = 13 % above it. Two kinds of
/// sample come near that: the ACK that fills a hole after a loss (the
/// retransmission, sent at the interval's start, counted with everything
/// SACKed since), and the last, the ACK of the transfer's short final
/// segment (300 KB leave 264 bytes), which tcp_rate.c counts as one packet
/// and `tcp_compute_delivery_rate` (tcp.c) as a whole MSS though it took
/// a fifth of a segment's time. From 0.3 s to
/// the transfer's end the rate in force is within 0.5% of it for most of
/// the time (below it while a drop at the 20-packet queue is repaired).
/// Recording it leaves the flow's sending unchanged (its trace file is
/// the same byte for byte), for a congestion control that does not read
/// the samples.
#[test]
fn a_flow_delivery_rate_is_the_bottleneck_rate_of_payload() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["a", "b"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let plain = run(&dir.path().join("a"), "");
    let extra = "[[record]]\nflow = \"bulk\"\nquantity = \"delivery_rate\"\n";
    let rep = run(&dir.path().join("b"), extra).join("rep-0");
    let trace = |rep: &Path| std::fs::read_to_string(rep.join("tcp-bulk-0-client.csv")).unwrap();
    assert_eq!(trace(&rep), trace(&plain.join("rep-0")));
    let rows: Vec<(f64, f64)> = vector(&rep, "bulk/0/client", "delivery_rate")
        .iter()
        .map(|(t, v)| (t.parse().unwrap(), v.parse().unwrap()))
        .collect();
    let expected = 2e6 / 1500.0 * 1448.0;
    assert!(rows.iter().all(|r| r.1 <= expected * (1.0 + 6.0 / 46.0)), "{rows:?}");
    // The last sample: the ACK of the transfer's last segments.
    let end = rows.last().unwrap().0;
    let (from, mut near) = (0.3, 0.0);
    for w in rows.windows(2).filter(|w| w[1].0 > from && w[0].0 < end) {
        let held = w[1].0.min(end) - w[0].0.max(from);
        if (w[0].1 / expected - 1.0).abs() < 0.005 {
            near += held;
        }
    }
    let share = near / (end - from);
    assert!(share > 0.5, "within 0.5% of {expected} bit/s for {share} of ({from}, {end}) s: {rows:?}");
}

/// The packets inside a stage whose drops take packets that had entered
/// (a head-drop queue) or refuse arrivals at enqueue under another reason
/// than an overflow (PIE): the `queue_packets` vector's last value is the
/// stage's own count of packets that entered and neither left nor were
/// dropped (summary.json: entered − delivered − every drop), and it never
/// exceeds the queue's limit plus the packets the link can hold. Before
/// squall_link::Inside, a drop's reason alone decided whether the packet
/// had entered: PIE's drops at enqueue took packets out that never came in
/// (the count stuck at 0), and a head drop left the head in (the count
/// grew past the limit).
#[test]
fn the_packets_inside_follow_head_drops_and_drops_at_enqueue() {
    for (label, queue, limit) in [
        ("head drop", r#"queue = { packets = 20, drop = "head" }"#, 20),
        ("pie", r#"queue = { packets = 50, pie = { target = "5 ms" } }"#, 50),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let flood = "[[workload.udp]]\nname = \"flood\"\nfrom = \"a\"\nto = \"b\"\nsize = \"1000 B\"\n\
                     interval = \"4 ms\"\n[[record]]\nstage = \"path\"\nquantity = \"queue_packets\"\n";
        let file =
            path_scenario(dir.path(), ("inside", "5 s"), "", &format!("rate = \"1 Mbit/s\"\n{queue}"), flood, &[]);
        let out = dir.path().join("out");
        let o = squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-pcap", "--seed", "1"]);
        assert!(o.status.success(), "{label}: squall sim failed: {}", String::from_utf8_lossy(&o.stderr));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        let stage = &summary["runs"][0]["stages"][0];
        assert_eq!(stage["name"], "path");
        let dropped: u64 = stage["dropped"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
        let (entered, delivered) = (stage["entered"].as_u64().unwrap(), stage["delivered"].as_u64().unwrap());
        // 2 Mbit/s offered to 1 Mbit/s for 5 s: about half is dropped.
        assert!(dropped > entered / 4, "{label}: {dropped} of {entered} dropped: the queue was not overloaded");
        let rows = vector(&out.join("rep-0"), "path", "queue_packets");
        let values: Vec<u64> = rows.iter().map(|(_, v)| v.parse().unwrap()).collect();
        assert_eq!(*values.last().unwrap(), entered - delivered - dropped, "{label}: last value {rows:?}");
        // On the link: one being sent, and those in the 5 ms of delay
        // after it, one sent every 8 ms (1 000 B at 1 Mbit/s): at most 1.
        let max = *values.iter().max().unwrap();
        assert!(max <= limit + 2, "{label}: {max} packets inside a queue of {limit} and a link of 2");
        assert!(max >= limit / 2, "{label}: never more than {max} packets inside an overloaded queue of {limit}");
    }
}
