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
    let run = compare(&[file.to_str().unwrap(), "--replications", "2", "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    for f in ["compare.csv", "compare.html", "scenario.toml"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    for engine in ["sim", "emu"] {
        for r in 0..2 {
            for host in ["fixed", "mobile"] {
                assert!(out.join(format!("{engine}/rep-{r}/{host}.pcap")).exists(), "{engine} rep-{r} {host}.pcap");
            }
        }
    }
    let rows = read_csv(&out.join("compare.csv"));
    let metrics: Vec<&str> = rows.iter().map(|r| r["metric"].as_str()).collect();
    assert_eq!(metrics, ["goodput_bps", "retransmitted_pct", "rtt_mean", "elapsed"]);
    let mut failed = 0;
    for row in &rows {
        assert_eq!(row["flow"], "download");
        assert_eq!((row["sim_n"].as_str(), row["emu_n"].as_str()), ("2", "2"), "{row:?}");
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
    let e = refused(&good, &["--set", "links.0.downlink.0.rate=fast"]);
    assert!(e.contains("rate"), "{e}");

    let run = compare(&["/nonexistent/scenario.toml"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("/nonexistent/scenario.toml"));
}
