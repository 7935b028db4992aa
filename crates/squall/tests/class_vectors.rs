//! `[[record]]` vectors of a class of a stage's classful queue (issue 31:
//! "a stage's (or class's) queue length in packets and bytes, drops by
//! reason"), against a hand computation and against the stage's own
//! event-based vectors, in the simulator; and the same vectors from
//! `squall emu`, whose data plane drives the same model.

use std::path::Path;

mod common;
use common::squall;

/// A 1 Mbit/s stage (1 000-byte packets take 8 ms: 125 packets/s) with
/// two classes served by strict priority: `hi` gets background CBR load
/// of 400 kbit/s (50 packets/s, no events: virtual packets), `lo` a UDP
/// CBR flow of 800 kbit/s (100 packets/s) into a 20-packet queue.
const SCENARIO: &str = r#"name = "class-vectors"
duration = "10 s"
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
background = [{ name = "hi-load", rate = "400 kbit/s", size = "1000 B", class = "hi" }]
[links.downlink.queue]
scheduler = "strict_priority"
default_class = "lo"
classes = [{ name = "hi", packets = 20 }, { name = "lo", packets = 20 }]
[[links.uplink]]
name = "up"
rate = "1 Mbit/s"
delay = "10 ms"
[[record]]
stage = "down"
class = "lo"
quantity = "queue_packets"
[[record]]
stage = "down"
class = "lo"
quantity = "queue_bytes"
[[record]]
stage = "down"
class = "lo"
quantity = "drops_queue_overflow"
[[record]]
stage = "down"
class = "lo"
quantity = "sent"
[[record]]
stage = "down"
class = "hi"
quantity = "queue_packets"
[[record]]
stage = "down"
class = "hi"
quantity = "sent_bytes"
[[record]]
stage = "down"
class = "hi"
quantity = "drops"
every = "1 s"
[[record]]
stage = "down"
quantity = "drops_queue_overflow"
"#;

const CBR: &str = r#"[[workload.udp]]
name = "cbr"
from = "fixed"
to = "mobile"
size = "1000 B"
rate = "800 kbit/s"
"#;

/// vectors.csv's rows of (source, name): (time s, value).
fn vector(rep: &Path, source: &str, name: &str) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(rep.join("vectors.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_s,source,name,value"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[1] == source && f[2] == name)
        .map(|f| (f[0].parse().unwrap(), f[3].parse().unwrap()))
        .collect()
}

/// The value in force at `t` of an at-every-change vector.
fn at(v: &[(f64, f64)], t: f64) -> f64 {
    let i = v.partition_point(|&(vt, _)| vt <= t);
    v[i - 1].1
}

fn run_sim(dir: &Path, text: &str) -> std::path::PathBuf {
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("sim");
    let o = squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "squall sim failed: {}", String::from_utf8_lossy(&o.stderr));
    out.join("rep-0")
}

/// By hand: `hi` has priority and 50 of the link's 125 packets/s, so `lo`
/// is served at 75/s while 100/s arrive. Its queue grows by 25/s and is
/// full (20) from about 0.8 s; from then on 25 arrivals a second
/// overflow. `hi` never waits for more than the `lo` packet on the link
/// (8 ms < its 20 ms spacing): at most 1 packet queued, no drop, its 50
/// packets/s all sent. Checked at every whole second from 2 s.
#[test]
fn a_class_vector_follows_the_hand_computation_of_strict_priority() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run_sim(dir.path(), &format!("{SCENARIO}{CBR}"));
    let lo_q = vector(&rep, "down/lo", "queue_packets");
    let lo_bytes = vector(&rep, "down/lo", "queue_bytes");
    let lo_drops = vector(&rep, "down/lo", "drops_queue_overflow");
    let lo_sent = vector(&rep, "down/lo", "sent");
    let hi_q = vector(&rep, "down/hi", "queue_packets");
    let hi_sent = vector(&rep, "down/hi", "sent_bytes");
    // Every at-change vector starts from the class's counters at 0.
    for v in [&lo_q, &lo_bytes, &lo_drops, &lo_sent, &hi_q, &hi_sent] {
        assert_eq!(v[0], (0.0, 0.0));
    }
    assert!(lo_q.len() > 500, "{}", lo_q.len());
    // The queue fills at 25/s: 10 ± 2 packets at 0.4 s, full from 1 s.
    assert!((at(&lo_q, 0.4) - 10.0).abs() <= 2.0, "{}", at(&lo_q, 0.4));
    for s in 2..10 {
        let t = s as f64;
        assert!(at(&lo_q, t) >= 19.0 && at(&lo_q, t) <= 20.0, "lo queue at {t}: {}", at(&lo_q, t));
        // Sent at 75/s, dropped at 25/s from ~0.8 s (20 filled the queue).
        assert!((at(&lo_sent, t) - 75.0 * t).abs() <= 3.0, "lo sent at {t}: {}", at(&lo_sent, t));
        let drops = 100.0 * t - 75.0 * t - 20.0;
        assert!((at(&lo_drops, t) - drops).abs() <= 3.0, "lo drops at {t}: {} against {drops}", at(&lo_drops, t));
        assert!((at(&hi_sent, t) - 50_000.0 * t).abs() <= 2_000.0, "hi sent bytes at {t}: {}", at(&hi_sent, t));
    }
    assert!(hi_q.iter().all(|&(_, n)| n <= 1.0), "hi queue above 1");
    // 1 000-byte packets: bytes are 1 000 times the packets at every change.
    assert_eq!(lo_bytes.len(), lo_q.len());
    for (b, q) in lo_bytes.iter().zip(&lo_q) {
        assert_eq!((b.0, b.1), (q.0, q.1 * 1000.0));
    }
    // `hi` drops nothing: its sampled vector is 0 at 0, 1, ..., 10 s.
    assert_eq!(vector(&rep, "down/hi", "drops"), (0..=10).map(|s| (s as f64, 0.0)).collect::<Vec<_>>());
    // Only `lo` overflows: its drops are the stage's, which come from
    // events.csv (real packets), step for step.
    assert_eq!(lo_drops, vector(&rep, "down", "drops_queue_overflow"));
}

/// The background load has no events: without the UDP flow the `hi`
/// class's vectors still follow it (50 packets/s sent, never more than
/// one waiting), and `lo` stays empty.
#[test]
fn background_packets_are_in_a_class_vector_though_they_have_no_events() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run_sim(dir.path(), SCENARIO);
    let hi_sent = vector(&rep, "down/hi", "sent_bytes");
    // CBR from 0: packets at 0, 20 ms, ..., 10 s (501), each sent at once.
    assert_eq!(hi_sent.last().unwrap().1, 501_000.0);
    assert_eq!(hi_sent.len(), 502);
    let hi_q = vector(&rep, "down/hi", "queue_packets");
    // Each packet is enqueued (1) and taken by the idle link (0) at its
    // arrival instant, k·20 ms: both changes are in the vector.
    assert_eq!(hi_q.len(), 1 + 2 * 501);
    for (k, pair) in hi_q[1..].chunks(2).enumerate() {
        let t = pair[0].0;
        assert!((t - k as f64 * 0.02).abs() < 1e-9, "packet {k} at {t}");
        assert_eq!((pair[0].1, pair[1]), (1.0, (t, 0.0)), "packet {k}");
    }
    assert_eq!(vector(&rep, "down/lo", "sent"), [(0.0, 0.0)]);
    let events = std::fs::read_to_string(rep.join("events.csv")).unwrap();
    assert_eq!(events.lines().filter(|l| l.contains(",down,")).count(), 0, "background packets have no events");
}

#[test]
fn class_entries_get_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("stage = \"down\"\nclass = \"mid\"\nquantity = \"sent\"\n", "record[8].class", "no class `mid`"),
        ("stage = \"up\"\nclass = \"lo\"\nquantity = \"sent\"\n", "record[8].class", "stage `up` has no classes"),
        (
            "stage = \"down\"\nclass = \"lo\"\nquantity = \"rate\"\n",
            "record[8].quantity",
            "a class has no quantity `rate`",
        ),
        ("stage = \"down\"\nquantity = \"sent\"\n", "record[8].quantity", "a stage has no quantity `sent`"),
    ];
    for (entry, key, message) in cases {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, format!("{SCENARIO}[[record]]\n{entry}")).unwrap();
        let out = dir.path().join("out");
        let o = squall(&["sim", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "accepted: {entry}");
        assert!(err.contains(key) && err.contains(message), "{entry}: {err}");
        assert!(err.contains("bad.toml:"), "no line: {err}");
    }
}

/// `squall emu` drives the same model: the class vectors it writes (from
/// the samples its data plane streams to classes.csv) are the
/// simulator's, row for row. Background load only (no workload), so
/// nothing real-time can make them differ. Needs root and network
/// namespaces (skipped without them, except under CI=true).
#[test]
fn squall_emu_writes_the_simulators_class_vectors() {
    if !common::namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = SCENARIO.replace("duration = \"10 s\"", "duration = \"2 s\"");
    let file = dir.path().join("s.toml");
    std::fs::write(&file, &text).unwrap();
    common::run_engine(dir.path(), "emu", &file, &[]);
    let sim = run_sim(dir.path(), &text);
    let emu = dir.path().join("emu/rep-0");
    let header = squall_trace::class_log_header();
    let classes = std::fs::read_to_string(emu.join("classes.csv")).unwrap();
    assert_eq!(classes.lines().next(), Some(header.as_str()));
    let rows = |rep: &Path| {
        let text = std::fs::read_to_string(rep.join("vectors.csv")).unwrap();
        let mut rows: Vec<String> = text.lines().filter(|l| l.contains(",down/")).map(String::from).collect();
        rows.sort();
        rows
    };
    let (e, s) = (rows(&emu), rows(&sim));
    // hi: 101 packets in 2 s, each 1 then 0 in queue_packets, and its
    // sent bytes; hi's drops every second; lo's 4 vectors at 0.
    assert!(s.len() > 300, "{}", s.len());
    assert_eq!(e, s);
}
