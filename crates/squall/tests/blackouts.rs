//! Random, repeating blackouts (issue 31; seed 000 §3, "temporal
//! interruptions of service"): their starts and lengths drawn from the
//! run's seed, the same in both engines, and nothing crosses a stage while
//! it is blacked out.

use std::path::Path;

mod common;
use common::{csv_rows, namespaces_available, run_engine};

/// A 10 Mbit/s link carrying one 500 B datagram every 10 ms downstream;
/// blackouts in drop mode about every 10 s (exponential, start to start),
/// 1 to 3 s long (uniform).
fn scenario(duration: &str) -> String {
    format!(
        r#"name = "tunnels"
duration = "{duration}"
seed = 3
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
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "10 ms"
[[blackouts]]
at = {{ kind = "exponential", mean = "10 s" }}
every = {{ kind = "exponential", mean = "10 s" }}
duration = {{ kind = "uniform", low = "1 s", high = "3 s" }}
direction = "downlink"
mode = "drop"
[[workload.udp]]
name = "cbr"
from = "fixed"
to = "mobile"
size = "500 B"
interval = "10 ms"
"#
    )
}

/// The (start, end) of every blackout in a run's events.csv, seconds.
fn blackouts(out: &Path) -> Vec<(f64, f64)> {
    let rows = csv_rows(&std::fs::read_to_string(out.join("rep-0/events.csv")).unwrap());
    let changes: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r["event"] == "state_change" && r["stage"].starts_with("blackout-0-"))
        .map(|r| (r["stage"].clone(), r["time"].parse().unwrap()))
        .collect();
    assert!(changes.iter().zip(["blackout-0-start", "blackout-0-end"].iter().cycle()).all(|((n, _), w)| n == w));
    changes.chunks(2).filter(|c| c.len() == 2).map(|c| (c[0].1, c[1].1)).collect()
}

#[test]
fn random_blackouts_drop_exactly_what_they_cover_in_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tunnels.toml");
    std::fs::write(&file, scenario("120 s")).unwrap();
    let summary = run_engine(dir.path(), "sim", &file, &[]);
    let windows = blackouts(&dir.path().join("sim"));
    // About 120/12 ≈ 10 blackouts (a start every 10 s on average, merged
    // when inside the previous one); each 1 to 3 s unless merged, never
    // overlapping.
    assert!((4..=20).contains(&windows.len()), "{windows:?}");
    assert!(windows.windows(2).all(|w| w[0].1 < w[1].0), "overlap: {windows:?}");
    assert!(windows.iter().all(|(s, e)| e - s >= 1.0), "{windows:?}");
    assert!(windows.iter().filter(|(s, e)| e - s <= 3.0).count() * 10 >= windows.len() * 8, "{windows:?}");
    // Datagram k enters the stage at k·10 ms: every one inside a window is
    // dropped for the blackout, and no other.
    let inside = (0..12_000u64)
        .filter(|k| {
            let t = *k as f64 * 0.01;
            windows.iter().any(|(s, e)| t >= *s && t < *e)
        })
        .count() as u64;
    let stage = &summary["runs"][0]["stages"][0];
    assert_eq!(stage["name"], "down");
    assert_eq!(stage["dropped"]["blackout"].as_u64().unwrap_or(0), inside, "{windows:?}");
    assert!(inside > 500, "{inside}");
    // Another seed, other blackouts.
    let again = dir.path().join("again");
    std::fs::create_dir(&again).unwrap();
    run_engine(&again, "sim", &file, &["--seed", "4"]);
    assert_ne!(blackouts(&again.join("sim")), windows);
}

/// The emulator draws the same blackouts from the same seed: the
/// schedule is the model's.
#[test]
fn random_blackouts_are_the_simulators_in_the_emulator() {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tunnels.toml");
    std::fs::write(&file, scenario("20 s")).unwrap();
    run_engine(dir.path(), "sim", &file, &[]);
    run_engine(dir.path(), "emu", &file, &[]);
    let sim = blackouts(&dir.path().join("sim"));
    let emu = blackouts(&dir.path().join("emu"));
    assert!(!sim.is_empty());
    assert_eq!(emu, sim);
}
