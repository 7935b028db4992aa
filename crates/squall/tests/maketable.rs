//! `squall trace maketable` (iproute2's maketable) and the table it writes
//! replayed by `--link "delay MU SIGMA distribution FILE"` in the
//! simulator.

use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{SQUALL, csv_rows};

fn squall_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(SQUALL).current_dir(dir).args(args).output().unwrap()
}

/// Samples uniform over [40, 60] ms (the mid-points of 1000 equal steps):
/// mean 50 ms and deviation 20/√12 · √(1000/999) = 5.7764 ms by hand. The
/// table, replayed with that mean and deviation, delays packets uniformly
/// over [40, 60] ms: a p-quantile of 40 + 20p ms. With 10 s of `--udp "1
/// Mbit/s"` (1041 packets of 1200 B) a sample quantile's standard error
/// is at most √(p(1 − p)/1041) · 20 ms = 0.31 ms; the check allows 1.5 ms.
#[test]
fn a_table_made_from_samples_delays_packets_as_the_samples_spread() {
    let dir = tempfile::tempdir().unwrap();
    let samples: Vec<String> = (0..1000).map(|k| format!("{}", 40.0 + 20.0 * (k as f64 + 0.5) / 1000.0)).collect();
    std::fs::write(dir.path().join("samples.txt"), samples.join("\n") + "\n").unwrap();
    let o = squall_in(dir.path(), &["trace", "maketable", "samples.txt", "-o", "uniform.dist"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("from 1000 samples: mean 50.000000, deviation 5.776"), "{said}");
    let sd: f64 = said.split("deviation ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((sd - 5.7764).abs() < 1e-3, "{said}");
    let table = std::fs::read_to_string(dir.path().join("uniform.dist")).unwrap();
    assert!(table.starts_with("# This is the distribution table"), "{table:.80}");
    assert_eq!(table.lines().skip(1).map(|l| l.split_whitespace().count()).sum::<usize>(), 4096);

    let line = format!("delay 50ms {sd:.4}ms distribution ./uniform.dist");
    let o = squall_in(
        dir.path(),
        &["sim", "--link", &line, "--udp", "1 Mbit/s", "--set", "duration=\"10 s\"", "--no-pcap", "--out", "out"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let events = std::fs::read_to_string(dir.path().join("out/rep-0/events.csv")).unwrap();
    let mut entered: BTreeMap<String, f64> = BTreeMap::new();
    let mut delays = Vec::new();
    for row in csv_rows(&events).into_iter().filter(|r| r["stage"] == "netem-down") {
        let t: f64 = row["time"].parse().unwrap();
        match row["event"].as_str() {
            "enqueue" => {
                entered.insert(row["packet"].clone(), t);
            }
            "deliver" => delays.push((t - entered[&row["packet"]]) * 1e3),
            _ => {}
        }
    }
    assert!(delays.len() > 1000, "{} deliveries", delays.len());
    delays.sort_by(f64::total_cmp);
    for p in [0.1, 0.25, 0.5, 0.75, 0.9] {
        let q = delays[(p * delays.len() as f64) as usize];
        let expect = 40.0 + 20.0 * p;
        assert!((q - expect).abs() < 1.5, "{p}-quantile {q} ms, uniform's {expect} ms");
    }
    // maketable's last entry is always its domain's top, +4σ (73 ms here):
    // every bin past the largest sample has the cumulative share 1 and
    // lands on it, the last bin winning; the entries before it are
    // interpolated up to it. So about 1/4096 of the draws go above 60 ms.
    let outside = delays.iter().filter(|&&d| !(40.0 - 0.1..=60.0 + 0.1).contains(&d)).count();
    assert!(outside * 100 <= delays.len(), "{outside} of {} delays outside [40, 60] ms", delays.len());
    assert!(*delays.last().unwrap() <= 50.0 + 4.0 * sd + 0.1, "{:?}", delays.last());
}

#[test]
fn maketable_names_the_bad_sample() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("samples.txt"), "# delays in ms\n12.5 13\n14 1e\n").unwrap();
    let o = squall_in(dir.path(), &["trace", "maketable", "samples.txt"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("samples.txt:3: `1e` is not a number"), "{err}");
    std::fs::write(dir.path().join("one.txt"), "5\n").unwrap();
    let o = squall_in(dir.path(), &["trace", "maketable", "one.txt"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected at least two numbers"), "{o:?}");
}

/// scenarios/netem-table.toml replays traces/path-delays.dist (made by
/// `squall trace maketable` from traces/path-delays.txt, as
/// scenarios/traces/README.md says) with the mean and deviation maketable
/// printed: the delays it gives spread as the measured samples do. For the
/// samples' p-quantile q_p (read here from path-delays.txt), the share of
/// the run's delays at or below q_p is p within 4.5 binomial σ (p = 0.1,
/// 0.25, 0.5, 0.75, 0.9; about 2 000 delays), and the mean is the
/// samples' within 4.5 σ/√n.
#[test]
fn the_shipped_table_scenario_delays_as_the_samples_spread() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut samples: Vec<f64> = std::fs::read_to_string(root.join("scenarios/traces/path-delays.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap().parse::<f64>().unwrap() / 1e9)
        .collect();
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let sd = (samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    assert!((mean - 0.378872).abs() < 1e-6 && (sd - 0.448825).abs() < 1e-6, "{mean} {sd}");

    let dir = tempfile::tempdir().unwrap();
    let scenario = root.join("scenarios/netem-table.toml");
    let o = squall_in(dir.path(), &["sim", scenario.to_str().unwrap(), "--no-pcap", "--out", "run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.path().join("run/rep-0/events.csv")).unwrap();
    let mut entered: BTreeMap<String, f64> = BTreeMap::new();
    let mut delays = Vec::new();
    for r in csv_rows(&text).into_iter().filter(|r| r["stage"] == "measured-spread") {
        let t: f64 = r["time"].parse().unwrap();
        match r["event"].as_str() {
            "enqueue" => {
                entered.insert(r["packet"].clone(), t);
            }
            "deliver" => delays.push(t - entered[&r["packet"]]),
            _ => {}
        }
    }
    // Packets sent in the last 2.2 s may not be delivered: keep only those
    // whose delay could have ended in the run (the ones that entered in
    // the first 3.8 s), so long delays are not missing.
    let early: Vec<f64> = {
        let mut v = Vec::new();
        for r in csv_rows(&text).into_iter().filter(|r| r["stage"] == "measured-spread" && r["event"] == "deliver") {
            let d = r["time"].parse::<f64>().unwrap() - entered[&r["packet"]];
            if entered[&r["packet"]] < 3.8 {
                v.push(d);
            }
        }
        v
    };
    let sent_early = entered.values().filter(|&&t| t < 3.8).count();
    assert_eq!(early.len(), sent_early, "every packet that entered before 3.8 s is delivered");
    let m = early.len() as f64;
    assert!(m > 1200.0, "{m} delays");
    for p in [0.1, 0.25, 0.5, 0.75, 0.9] {
        let q = samples[((p * n).ceil() as usize).min(samples.len()) - 1];
        let share = early.iter().filter(|&&d| d <= q + 1e-6).count() as f64 / m;
        let half = 4.5 * (p * (1.0 - p) / m).sqrt();
        assert!((share - p).abs() <= half, "p {p}: {share} of the delays at or below {q} s (± {half})");
    }
    let run_mean = early.iter().sum::<f64>() / m;
    assert!((run_mean - mean).abs() < 4.5 * sd / m.sqrt(), "mean delay {run_mean} s, samples' {mean} s");
    println!("{} delays of {} delivered, mean {run_mean} s", early.len(), delays.len());
}
