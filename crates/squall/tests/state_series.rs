//! A time series of the scenario's states (issue 30): `state_series = {
//! file = "states.csv" }` enters the named `[[states]]` at the file's
//! times, looping or holding, in `squall sim` and `squall emu`. The
//! emulator's test needs root and network namespaces: without them it is
//! skipped with a message, except under CI=true, where it fails.

use std::path::Path;

mod common;
use common::{UDP_A_TO_B, events, namespaces_available, path_scenario, squall as run};

/// Stage `path` (a → b) is `open` (no loss) or `closed` (every packet
/// lost), as `states` (the series file) says, with `at_end`.
fn scenario(dir: &Path, states: &str, at_end: &str, duration: &str, udp: bool) -> std::path::PathBuf {
    let tail = format!(
        "[[states]]\nname = \"open\"\nset.path = {{ error = \"none\" }}\n[[states]]\nname = \"closed\"\n\
         set.path = {{ error = {{ packet = 1.0 }} }}\n{}",
        if udp { UDP_A_TO_B } else { "" }
    );
    path_scenario(
        dir,
        ("state-series", duration),
        &format!("state_series = {{ file = \"states.csv\", at_end = \"{at_end}\" }}"),
        "",
        &tail,
        &[("states.csv", states)],
    )
}

/// The times (ms, rounded) at which stage `path` dropped a packet, and
/// how many packets entered it.
fn drops_ms(file: &Path) -> (Vec<u64>, usize) {
    let rows = events(file, Some("path"));
    let entered = rows.iter().filter(|r| r["event"] == "enqueue").count();
    let drops = rows
        .iter()
        .filter(|r| r["event"] == "drop")
        .map(|r| (r["time"].parse::<f64>().unwrap() * 1e3).round() as u64)
        .collect();
    (drops, entered)
}

/// A packet every 20 ms from 0 for 4 s (200 packets); the series is
/// open at 0, closed at 510 ms, open at 1 010 ms, looped every 2 000 ms:
/// by hand the packets at 520, 540, ..., 1 000 ms and 2 520, ..., 3 000
/// ms are lost, 25 a loop, 50 in all. Held (`at_end = "hold"`, the last
/// row `2000,closed`), the link closes at 2 000 ms for good: 25 + 100.
/// The run's resolved scenario keeps the rows and replays the same.
#[test]
fn the_simulator_enters_the_states_at_the_series_times() {
    let dir = tempfile::tempdir().unwrap();
    let rows =
        "# open, closed for 0.5 s, open; period 2 s\ntime (ms),state\n0,open\n510,closed\n1010,open\n2000,open\n";
    let s = scenario(dir.path(), rows, "loop", "4 s", true);
    let out = dir.path().join("loop");
    let o = run(&["sim", s.to_str().unwrap(), "--no-pcap", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (drops, entered) = drops_ms(&out.join("rep-0/events.csv"));
    assert_eq!(entered, 200);
    let expected: Vec<u64> = (0..200u64).map(|k| k * 20).filter(|t| (520..=1000).contains(&(t % 2000))).collect();
    assert_eq!(expected.len(), 50);
    assert_eq!(drops, expected);
    // From the resolved scenario, elsewhere (no states.csv there).
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::copy(out.join("scenario.toml"), elsewhere.path().join("again.toml")).unwrap();
    let again = elsewhere.path().join("run");
    let again_toml = elsewhere.path().join("again.toml");
    let o = run(&["sim", again_toml.to_str().unwrap(), "--no-pcap", "--out", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(drops_ms(&again.join("rep-0/events.csv")).0, expected);

    let rows = "time (ms),state\n0,open\n510,closed\n1010,open\n2000,closed\n";
    let s = scenario(dir.path(), rows, "hold", "4 s", true);
    let out = dir.path().join("hold");
    let o = run(&["sim", s.to_str().unwrap(), "--no-pcap", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected: Vec<u64> = (0..200u64).map(|k| k * 20).filter(|t| (520..=1000).contains(t) || *t >= 2000).collect();
    assert_eq!(expected.len(), 125);
    assert_eq!(drops_ms(&out.join("rep-0/events.csv")).0, expected);
}

/// Errors name the file and line (a state that does not exist, times not
/// increasing), or the key (a state with `at` in the series).
#[test]
fn a_bad_state_series_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    for (rows, expected) in [
        (
            "time (ms),state\n0,open\n500,shut\n",
            "states.csv:3: no state named `shut`; expected the name of one of the scenario's [[states]] (open, closed)",
        ),
        (
            "time (ms),state\n0,open\n500,closed\n400,open\n",
            "states.csv:4: time 400 does not come after 500 on the row before",
        ),
        ("time,state\n0,open\n", "states.csv:1: bad header `time,state`"),
        ("", "states.csv: the state series has no rows"),
    ] {
        let s = scenario(dir.path(), rows, "hold", "1 s", true);
        let o = run(&["sim", s.to_str().unwrap(), "--out", dir.path().join("x").to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(expected) && e.contains("state_series.file"), "{e}");
    }
    let s = scenario(dir.path(), "time (ms),state\n0,open\n", "hold", "1 s", true);
    let text = std::fs::read_to_string(&s).unwrap().replace("name = \"open\"\n", "name = \"open\"\nat = \"1 s\"\n");
    std::fs::write(&s, text).unwrap();
    let o = run(&["sim", s.to_str().unwrap(), "--out", dir.path().join("x").to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("state `open` has `at` or `hold`"), "{e}");
}

/// The emulator: ping sends 20 requests a → b about every 50 ms from
/// 0.22 s; the series closes the path from 0.5 s to 1.0 s. ping's own
/// clock drifts (its 19 intervals took 1 005 ms in one run), so the
/// requests lost are read from when each entered the stage (events.csv):
/// exactly those that entered within [0.5 s, 1.0 s) are dropped, about
/// 10, and ping hears exactly the others.
#[test]
fn the_emulator_enters_the_states_at_the_series_times() {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rows = "time (ms),state\n0,open\n500,closed\n1000,open\n";
    let s = scenario(dir.path(), rows, "hold", "3 s", false);
    let out = dir.path().join("emu");
    let o = run(&[
        "emu",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--run",
        "a@0.22s=ping -c 20 -i 0.05 -W 1 10.0.1.1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = events(&out.join("rep-0/events.csv"), Some("path"));
    let entered: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r["event"] == "enqueue")
        .map(|r| (r["packet"].clone(), r["time"].parse::<f64>().unwrap()))
        .collect();
    assert_eq!(entered.len(), 20);
    let dropped: Vec<&String> = rows.iter().filter(|r| r["event"] == "drop").map(|r| &r["packet"]).collect();
    let closed = |t: f64| (0.5..1.0).contains(&t);
    let expected: Vec<&String> = entered.iter().filter(|(_, t)| closed(*t)).map(|(p, _)| p).collect();
    assert_eq!(dropped, expected, "entered at {entered:?}");
    assert!((8..=11).contains(&dropped.len()), "{} dropped", dropped.len());
    let ping = std::fs::read_to_string(out.join("rep-0/workloads/0-a.stdout")).unwrap();
    let heard: Vec<usize> =
        ping.lines().filter_map(|l| l.split("icmp_seq=").nth(1)?.split_whitespace().next()?.parse().ok()).collect();
    let kept: Vec<usize> = (1..=20).filter(|&k| !closed(entered[k - 1].1)).collect();
    assert_eq!(heard, kept, "{ping}");
}

/// scenarios/state-series.toml: the rows of traces/train-states.csv (read
/// here: `time (ms),state`, the last row's time the period) say for each
/// instant whether the radio stage is in a tunnel (the last row at or
/// before it, in the loop); a packet that enters the stage in a tunnel is
/// lost, any other gets through.
#[test]
fn the_shipped_state_series_scenario_follows_its_file() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let text = std::fs::read_to_string(scenarios.join("traces/train-states.csv")).unwrap();
    let rows: Vec<(f64, bool)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| {
            let (t, state) = l.split_once(',').unwrap();
            (t.parse::<f64>().unwrap() / 1e3, state == "tunnel")
        })
        .collect();
    let period = rows.last().unwrap().0;
    let in_tunnel = |t: f64| rows.iter().rev().find(|(at, _)| *at <= t % period).unwrap().1;
    assert!(rows.iter().any(|r| r.1) && rows.iter().any(|r| !r.1), "{rows:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let file = scenarios.join("state-series.toml");
    let o = run(&["sim", file.to_str().unwrap(), "--no-pcap", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = events(&out.join("rep-0/events.csv"), Some("radio-down"));
    let mut entered = std::collections::HashMap::new();
    let (mut lost, mut expected) = (Vec::new(), Vec::new());
    for r in &rows {
        let t: f64 = r["time"].parse().unwrap();
        match r["event"].as_str() {
            "enqueue" => {
                entered.insert(r["packet"].clone(), t);
                if in_tunnel(t) {
                    expected.push(r["packet"].clone());
                }
            }
            "drop" => lost.push(r["packet"].clone()),
            _ => {}
        }
    }
    println!("{} of {} lost", lost.len(), entered.len());
    assert_eq!(entered.len(), 5000, "1 Mbit/s of 1000 B for 40 s");
    assert!(!expected.is_empty());
    assert_eq!(lost, expected);
}
