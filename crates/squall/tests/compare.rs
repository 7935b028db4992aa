//! `squall compare` end to end: a short bulk TCP scenario in both engines
//! (the emulator needs root and network namespaces: without them these
//! tests are skipped with a message, except under CI=true, where they
//! fail), a tolerance failure's exit status, and bad input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

mod common;
use common::{SQUALL, namespaces_available};

/// The emulator's data plane spins: two comparisons at once on two cores
/// would disturb each other's timing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Link rate of [`scenario`], bit/s.
const RATE: f64 = 10e6;

/// scenarios/emu/tcp-workload.toml trimmed to one Linux-profile bulk TCP
/// flow: 10 Mbit/s, 10 ms each way (20 ms RTT), a 100-packet queue, about
/// 4 s to send `bytes`.
fn scenario(dir: &Path, bytes: &str) -> PathBuf {
    let path = dir.join("compare-short.toml");
    let text = format!(
        r#"name = "compare-short"
duration = "15 s"
seed = 1

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
rate = "10 Mbit/s"
delay = "10 ms"
queue = {{ packets = 100, drop = "tail" }}
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "10 ms"
queue = {{ packets = 100, drop = "tail" }}

[[workload.tcp]]
name = "download"
from = "fixed"
to = "mobile"
profile = "linux"
cc = "cubic"
start = "0.2 s"
app = {{ bulk = "{bytes}" }}
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn compare(args: &[&str]) -> Output {
    let out = Command::new(SQUALL).arg("compare").args(args).output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// compare.csv as one map per row, by column name.
fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            header.iter().zip(fields).map(|(h, v)| (h.to_string(), v.to_string())).collect()
        })
        .collect()
}

fn num(row: &BTreeMap<String, String>, key: &str) -> f64 {
    row[key].parse().unwrap_or_else(|e| panic!("{key} = {:?}: {e}", row[key]))
}

/// No namespace of the emulated runs (their ids are in result.json) is left.
fn no_namespaces_left(dir: &Path, replications: u32) {
    let list = String::from_utf8(Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap();
    for r in 0..replications {
        let text = std::fs::read_to_string(dir.join(format!("emu/rep-{r}/result.json"))).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let id = v["emu"]["run_id"].as_u64().unwrap();
        assert!(!list.contains(&format!("squall-{id}-")), "namespaces of run {id} left: {list}");
    }
}

#[test]
fn compare_runs_both_engines_and_writes_a_consistent_report() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = scenario(tmp.path(), "5 MB");
    let out = tmp.path().join("out");
    // Four simulated runs (seeds 1–4), two emulated (1–2).
    let run = compare(&[
        file.to_str().unwrap(),
        "--replications",
        "2",
        "--sim-replications",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    for f in ["compare.csv", "compare.html", "scenario.toml"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    for (engine, runs) in [("sim", 4), ("emu", 2)] {
        for r in 0..runs {
            for host in ["fixed", "mobile"] {
                assert!(out.join(format!("{engine}/rep-{r}/{host}.pcap")).exists(), "{engine} rep-{r} {host}.pcap");
            }
        }
        assert!(!out.join(format!("{engine}/rep-{runs}")).exists(), "{engine} ran {runs} replications");
    }
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("4 replications in the simulator, 2 in the emulator from seed 1"), "{stderr}");
    let rows = read_csv(&out.join("compare.csv"));
    let metrics: Vec<&str> = rows.iter().map(|r| r["metric"].as_str()).collect();
    assert_eq!(metrics, ["goodput_bps", "retransmitted_pct", "rtt_mean", "elapsed"]);
    let mut failed = 0;
    for row in &rows {
        assert_eq!(row["flow"], "download");
        assert_eq!((row["sim_n"].as_str(), row["emu_n"].as_str()), ("4", "2"), "{row:?}");
        let (sim, emu) = (num(row, "sim_mean"), num(row, "emu_mean"));
        assert!(sim.is_finite() && emu.is_finite(), "{row:?}");
        for engine in ["sim", "emu"] {
            let (low, high) = (num(row, &format!("{engine}_ci95_low")), num(row, &format!("{engine}_ci95_high")));
            let mean = num(row, &format!("{engine}_mean"));
            assert!(low <= mean && mean <= high, "{engine}: {row:?}");
        }
        // The verdict, recomputed: |(emu − sim) / emu| ≤ tolerance.
        let d = if sim == emu { 0.0 } else { (emu - sim) / emu };
        assert!((num(row, "relative_difference") - d).abs() <= 1e-9 * d.abs().max(1.0), "{row:?}");
        let tolerance = num(row, "tolerance");
        assert_eq!(tolerance, 0.1);
        let pass = d.abs() <= tolerance;
        assert_eq!(row["verdict"], if pass { "pass" } else { "fail" }, "{row:?}");
        failed += usize::from(!pass);
        assert!(stdout.contains(if pass { "pass" } else { "fail" }), "{stdout}");
        // The engines must agree within the 10% tolerance on what the
        // link decides: the goodput and the transfer's duration (the
        // retransmission share and mean RTT depend on each TCP's details).
        if ["goodput_bps", "elapsed"].contains(&row["metric"].as_str()) {
            assert!(pass, "sim and emu disagree on {} by {d}: {row:?}", row["metric"]);
        }
    }
    let goodput = &rows[0];
    for engine in ["sim", "emu"] {
        let g = num(goodput, &format!("{engine}_mean"));
        // Within the physical bound (less the headers), and not far below.
        assert!(g <= RATE && g > 0.8 * RATE * 1448.0 / 1500.0, "{engine} goodput {g} bit/s");
        assert!(num(goodput, &format!("{engine}_ci95_high")) <= RATE * 1.001, "{engine}: {goodput:?}");
    }
    let elapsed = &rows[3];
    for engine in ["sim", "emu"] {
        // 5 MB at 10 Mbit/s takes at least 4 s.
        assert!(num(elapsed, &format!("{engine}_mean")) > 4.0, "{elapsed:?}");
    }
    // The exit status follows the verdicts.
    assert_eq!(run.status.code(), Some(if failed > 0 { 1 } else { 0 }), "{stdout}");
    let html = std::fs::read_to_string(out.join("compare.html")).unwrap();
    assert!(html.contains("<table") && html.contains("goodput") && html.contains("<svg"));
    for series in ["sim sent", "emu sent", "sim cwnd", "emu cwnd (Linux)", "sim srtt", "emu srtt (Linux)"] {
        assert!(html.contains(series), "compare.html has no `{series}`");
    }
    let plots = std::fs::read_dir(out.join("plots")).unwrap().count();
    assert_eq!(plots, 3, "a time-sequence, a cwnd and an RTT plot");
    no_namespaces_left(&out, 2);
}

#[test]
fn a_metric_outside_its_tolerance_exits_non_zero() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = scenario(tmp.path(), "1 MB");
    let out = tmp.path().join("out");
    let run = compare(&[
        file.to_str().unwrap(),
        "--replications",
        "1",
        "--tolerance",
        "0.001%",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("FAIL") && stderr.contains("download goodput"), "{stderr}");
    // The tolerance as given; one replication has no interval to show.
    assert!(stderr.contains("against a tolerance of 0.001%"), "{stderr}");
    // The emulated run's own "wrote …" line would name files compare has
    // moved; every path it prints is one that exists.
    assert!(!stderr.contains("wrote "), "{stderr}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("Mbit/s (1 run)") && !stdout.contains("± 0.000"), "{stdout}");
    let rows = read_csv(&out.join("compare.csv"));
    assert!(rows.iter().any(|r| r["verdict"] == "fail"));
    no_namespaces_left(&out, 1);
}

/// `--late-threshold` reaches every emulated run: at 1 ns every delivery
/// is late (the data plane cannot write a packet within a nanosecond of
/// its time), so the run is flagged and compare says so; result.json
/// records the threshold it was given.
#[test]
fn the_late_threshold_is_the_emulated_runs_own() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = scenario(tmp.path(), "1 MB");
    let out = tmp.path().join("out");
    let run = compare(&[
        file.to_str().unwrap(),
        "--replications",
        "1",
        "--late-threshold",
        "1 ns",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("warning: 1 emulated run(s) did not keep timing"), "{stderr}");
    let text = std::fs::read_to_string(out.join("emu/rep-0/result.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let timing = &v["runs"][0]["timing"];
    assert_eq!(timing["late_threshold"].as_f64(), Some(1e-9), "{timing}");
    assert_eq!(timing["on_time"].as_bool(), Some(false), "{timing}");
    assert_eq!(timing["late"], timing["deliveries"], "{timing}");
    no_namespaces_left(&out, 1);
}

/// Runs `squall compare` on `text` (a scenario) and returns its stderr,
/// checking it failed with status 2 and made no output directory.
fn refused(text: &str, extra: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("out");
    let mut args = vec![file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let run = compare(&args);
    assert_eq!(run.status.code(), Some(2), "{}", String::from_utf8_lossy(&run.stdout));
    assert!(!out.exists(), "nothing is written for bad input");
    String::from_utf8_lossy(&run.stderr).into_owned()
}

const LINK: &str = r#"name = "bad"
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
rate = "10 Mbit/s"
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
"#;

#[test]
fn bad_input_is_refused_with_the_file_and_the_key() {
    let e = refused(LINK, &[]);
    assert!(e.contains("bad.toml") && e.contains("no [[workload.tcp]] or [[workload.udp]]"), "{e}");

    let commands = format!("{LINK}[[workload.commands]]\nhost = \"mobile\"\nrun = \"iperf3 -s\"\n");
    let e = refused(&commands, &[]);
    assert!(e.contains("bad.toml") && e.contains("[[workload.commands]] `iperf3 -s`"), "{e}");
    assert!(e.contains("cannot run in the simulator"), "{e}");

    let tcp =
        |keys: &str| format!("{LINK}[[workload.tcp]]\nname = \"dl\"\nfrom = \"fixed\"\nto = \"mobile\"\n{keys}\n");
    // An entry compared flow by flow after an `arrivals` entry: its
    // server port in the emulator would change with the replication.
    let open = format!(
        "{LINK}[[workload.tcp]]\nname = \"web\"\nfrom = \"fixed\"\nto = \"mobile\"\napp = {{ bulk = \"5 KB\" }}\n\
         arrivals = {{ gap = \"1 s\" }}\n[[workload.tcp]]\nname = \"dl\"\nfrom = \"fixed\"\nto = \"mobile\"\n\
         app = {{ bulk = \"1 MB\" }}\n"
    );
    let e = refused(&open, &[]);
    assert!(e.contains("[[workload.tcp]] `dl` comes after the `arrivals` entry `web`"), "{e}");
    let e = refused(&tcp("app = { bulk_for = \"5 s\" }"), &[]);
    assert!(e.contains("[[workload.tcp]] `dl`") && e.contains("bulk_for") && e.contains("bulk = "), "{e}");
    let e = refused(&tcp("app = { bulk = \"1 MB\" }\ncc = \"tahoe\""), &[]);
    assert!(e.contains("[[workload.tcp]] `dl`") && e.contains("Tahoe"), "{e}");

    let good = tcp("app = { bulk = \"1 MB\" }");
    let e = refused(&good, &["--tolerance", "lots"]);
    assert!(e.contains("--tolerance \"lots\""), "{e}");
    let e = refused(&good, &["--tolerance", "speed=5%"]);
    assert!(e.contains("no metric `speed`"), "{e}");
    let e = refused(&good, &["--replications", "0"]);
    assert!(e.contains("--replications"), "{e}");
    let e = refused(&good, &["--late-threshold", "soon"]);
    assert!(e.contains("--late-threshold"), "{e}");
    let e = refused(&good, &["--replications", "3", "--sim-replications", "2"]);
    assert!(e.contains("--sim-replications 2 is below --replications 3"), "{e}");
    let e = refused(&good, &["--set", "links.0.downlink.0.rate=fast"]);
    assert!(e.contains("rate"), "{e}");

    let run = compare(&["/nonexistent/scenario.toml"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("/nonexistent/scenario.toml"));
}

/// An open-loop workload of ~20 flows (Poisson arrivals, mean gap
/// 0.6 s, sizes 5 KB or 40 KB) over 10 Mbit/s and 20 ms each way.
fn open_loop_scenario(dir: &Path) -> PathBuf {
    let path = dir.join("compare-open-loop.toml");
    let text = r#"name = "compare-open-loop"
duration = "12 s"
seed = 1

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
rate = "10 Mbit/s"
delay = "20 ms"
queue = { packets = 100, drop = "tail" }
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "20 ms"
queue = { packets = 100, drop = "tail" }

[[workload.tcp]]
name = "web"
from = "fixed"
to = "mobile"
profile = "linux"
cc = "reno"
app = { bulk = { kind = "empirical", values = ["5 KB", "40 KB"] } }
arrivals = { gap = { kind = "exponential", mean = "0.6 s" }, from = "0.5 s", until = "11 s" }
"#;
    std::fs::write(&path, text).unwrap();
    path
}

/// The FCT of a flow of `bytes` alone on [`open_loop_scenario`]'s path,
/// counted by hand (Linux: initial window 10, 1 448-byte payloads in
/// 1 500-byte packets with timestamps, 60-byte SYNs, 52-byte ACKs, one
/// ACK per segment in slow start). At R = 10 Mbit/s a full packet takes
/// τ = 1.2 ms, D = 20 ms each way:
/// - handshake: 2 · (60·8/R + D) = 40.096 ms;
/// - 5 KB = 4 segments, one round: 3τ + (656 + 52)·8/R + D
///   = 3.6 + 0.5664 + 20 ms, FCT 64.2624 ms;
/// - 40 KB = 28 segments, rounds of 10 and 18: the second starts one
///   segment round trip after the first, (τ + D) + (52·8/R + D)
///   = 41.2416 ms (more than the first round's 10τ = 12 ms), then
///   17τ + (904 + 52)·8/R + D = 20.4 + 0.7648 + 20 ms, FCT 122.5024 ms.
fn hand_fct(bytes: u64) -> f64 {
    match bytes {
        5_000 => 0.040_096 + 0.003_6 + 0.000_566_4 + 0.020,
        40_000 => 0.040_096 + 0.041_241_6 + 0.020_4 + 0.000_764_8 + 0.020,
        b => panic!("no hand count for {b} bytes"),
    }
}

#[test]
fn compare_tabulates_both_engines_fcts_by_size_bucket_against_a_hand_count() {
    let _lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !namespaces_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = open_loop_scenario(tmp.path());
    let out = tmp.path().join("out");
    let run = compare(&[file.to_str().unwrap(), "--replications", "2", "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{stdout}");
    eprintln!("{stdout}");
    assert!(stdout.contains("FCT and slowdown by size bucket"), "{stdout}");
    let mut isolated = BTreeMap::new();
    // Each engine's flows.csv, per replication.
    let mut per_engine: BTreeMap<&str, Vec<Vec<BTreeMap<String, String>>>> = BTreeMap::new();
    for engine in ["sim", "emu"] {
        for r in 0..2 {
            let rows = read_csv(&out.join(format!("{engine}/rep-{r}/flows.csv")));
            assert!(rows.len() >= 10, "{engine} rep-{r}: {} flows", rows.len());
            let starts: Vec<f64> = rows.iter().map(|f| num(f, "start_s")).collect();
            for (k, f) in rows.iter().enumerate() {
                assert_eq!(f["completed"], "true", "{engine} rep-{r}: {f:?}");
                // Alone on the path: no other flow starts within 0.25 s
                // (an FCT is at most ~0.13 s here).
                let alone = starts.iter().enumerate().all(|(j, s)| j == k || (s - starts[k]).abs() > 0.25);
                if !alone {
                    continue;
                }
                let (bytes, fct) = (num(f, "bytes") as u64, num(f, "fct_s"));
                let hand = hand_fct(bytes);
                // The simulator's TCP is the count's model: exact to the
                // nanosecond; Linux through the emulator within 10% (its
                // ACK and wake-up timing, the bulk tool's 8-byte header).
                let tolerance = if engine == "sim" { 1e-6 } else { 0.1 * hand };
                assert!(
                    (fct - hand).abs() <= tolerance,
                    "{engine} rep-{r} isolated flow: FCT {fct} s, hand count {hand} s: {f:?}"
                );
                let slowdown = num(f, "slowdown");
                assert!((slowdown - fct / hand).abs() < 1e-6, "{engine}: slowdown against the ideal FCT: {f:?}");
                *isolated.entry(engine).or_insert(0) += 1;
            }
            per_engine.entry(engine).or_default().push(rows);
        }
    }
    for engine in ["sim", "emu"] {
        assert!(isolated.get(engine).copied().unwrap_or(0) >= 8, "{engine}: isolated flows {isolated:?}");
    }
    // Both engines ran the same flows: sizes in order, starts within
    // the emulator's start-up latency.
    for (r, (sim, emu)) in per_engine["sim"].iter().zip(&per_engine["emu"]).enumerate() {
        assert_eq!(sim.len(), emu.len(), "rep-{r}");
        for (s, e) in sim.iter().zip(emu) {
            assert_eq!(s["bytes"], e["bytes"], "rep-{r}");
            assert!((num(s, "start_s") - num(e, "start_s")).abs() < 0.05, "rep-{r}: {s:?} {e:?}");
        }
    }
    // fct_buckets.csv: each engine's mean over the replications of each
    // replication's mean FCT (and slowdown) of the bucket, from the rows.
    let buckets = read_csv(&out.join("fct_buckets.csv"));
    assert_eq!(buckets.len(), 4, "two buckets in each engine: {buckets:?}");
    for b in &buckets {
        let (engine, bucket) = (b["engine"].as_str(), b["bucket"].as_str());
        let size = if bucket == "<10KB" { 5_000 } else { 40_000 };
        assert_eq!(bucket, if size == 5_000 { "<10KB" } else { "10KB-100KB" });
        let means = |column: &str| -> Vec<f64> {
            per_engine[engine]
                .iter()
                .map(|rows| {
                    let xs: Vec<f64> =
                        rows.iter().filter(|f| num(f, "bytes") as u64 == size).map(|f| num(f, column)).collect();
                    xs.iter().sum::<f64>() / xs.len() as f64
                })
                .collect()
        };
        let (fct, slowdown) = (means("fct_s"), means("slowdown"));
        assert!((num(b, "fct_mean_s") - (fct[0] + fct[1]) / 2.0).abs() < 1e-8, "{b:?} {fct:?}");
        assert!((num(b, "slowdown_mean") - (slowdown[0] + slowdown[1]) / 2.0).abs() < 1e-5, "{b:?}");
        // Two replications: t(0.975, 1) = 12.7062 times the standard
        // error |a − b| / 2.
        let half = 12.706_204_7 * (fct[0] - fct[1]).abs() / 2.0;
        assert!((num(b, "fct_ci95_half_s") - half).abs() < 1e-9 + 1e-6 * half, "{b:?} {fct:?}");
        // No flow beats its hand count; the bucket's mean FCT stays near it
        // (a few flows overlap and queue behind each other).
        let hand = hand_fct(size);
        let mean = num(b, "fct_mean_s");
        assert!(mean >= hand * 0.97 && mean <= hand * 1.3, "{engine} {bucket}: mean FCT {mean} s, hand count {hand} s");
    }
    no_namespaces_left(&out, 2);
}
