//! `squall run --shard I/N` (issue 33): the shards of any N are a
//! disjoint slice each and together the whole experiment, whether run
//! one after another or at once into one directory; `squall report`
//! merges what has finished and names what is missing.

use std::path::Path;
use std::process::Command;

mod common;
use common::{SQUALL, ok, squall};

/// 2 sweep points × 5 replications = 10 short runs.
const EXPERIMENT: &str = r#"
name = "sharded"
[[sets]]
name = "sweep"
scenario = "builtin:gsm-udp"
replications = 5
set = { duration = "5 s" }
[sets.sweep]
"stage.gsm-down.rate" = ["4800 bit/s", "9600 bit/s"]
"#;
const RUNS: usize = 10;

fn experiment(dir: &Path) -> String {
    let path = dir.join("sharded.toml");
    std::fs::write(&path, EXPERIMENT).unwrap();
    path.to_str().unwrap().to_string()
}

fn results(out: &Path) -> String {
    std::fs::read_to_string(out.join("results.csv")).unwrap()
}

/// The run directories (SET/pP/rep-R) listed in `out`'s runs.log, each
/// line once per time it ran.
fn logged(out: &Path) -> Vec<String> {
    let mut runs: Vec<String> =
        std::fs::read_to_string(out.join("runs.log")).unwrap_or_default().lines().map(String::from).collect();
    runs.sort();
    runs
}

#[test]
fn the_union_of_the_shards_is_the_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path());
    let plain = dir.path().join("plain");
    ok(squall(&["run", &exp, "--out", plain.to_str().unwrap()]));
    let expected = results(&plain);
    // One row per run and flow (2 flows), from the plain run's own report.
    assert_eq!(expected.lines().count(), 1 + RUNS * 2, "{expected}");
    for n in [1, 3, 7] {
        let out = dir.path().join(format!("shards-{n}"));
        let out_s = out.to_str().unwrap();
        let mut done = 0;
        for i in 0..n {
            let o = ok(squall(&["run", &exp, "--out", out_s, "--shard", &format!("{i}/{n}")]));
            // Shard i of n runs runs i, i+n, i+2n, ... of the 10.
            let mine = (i..RUNS).step_by(n).count();
            done += mine;
            assert_eq!(logged(&out).len(), done, "shard {i}/{n}");
            assert!(!out.join("results.csv").exists(), "shard {i}/{n} wrote the report");
            let said = String::from_utf8_lossy(&o.stderr);
            assert!(said.contains(&format!("{done} of the experiment's {RUNS} runs are done")), "{said}");
        }
        let mut once = logged(&out);
        once.dedup();
        assert_eq!(once.len(), RUNS, "every run exactly once over {n} shards");
        ok(squall(&["report", out_s]));
        assert_eq!(results(&out), expected, "{n} shards");
    }
}

#[test]
fn shards_run_at_once_into_one_directory_give_the_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path());
    let plain = dir.path().join("plain");
    ok(squall(&["run", &exp, "--out", plain.to_str().unwrap()]));
    let out = dir.path().join("shared");
    let out_s = out.to_str().unwrap();
    let n = 4;
    let children: Vec<_> = (0..n)
        .map(|i| {
            Command::new(SQUALL)
                .args(["run", &exp, "--out", out_s, "--jobs", "1", "--shard", &format!("{i}/{n}")])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        ok(child.wait_with_output().unwrap());
    }
    let mut once = logged(&out);
    assert_eq!(once.len(), RUNS);
    once.dedup();
    assert_eq!(once.len(), RUNS);
    ok(squall(&["report", out_s]));
    assert_eq!(results(&out), results(&plain));
}

#[test]
fn a_report_of_part_names_what_is_missing_and_a_failed_shard_reruns_alone() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path());
    let plain = dir.path().join("plain");
    ok(squall(&["run", &exp, "--out", plain.to_str().unwrap()]));
    let out = dir.path().join("part");
    let out_s = out.to_str().unwrap();
    // Shards 0 and 2 of 3 finish; shard 1 (runs 1, 4, 7: sweep/p0/rep-1,
    // p0/rep-4, p1/rep-2) does not.
    ok(squall(&["run", &exp, "--out", out_s, "--shard", "0/3"]));
    ok(squall(&["run", &exp, "--out", out_s, "--shard", "2/3"]));
    let part = squall(&["report", out_s]);
    assert_eq!(part.status.code(), Some(1), "a report of part of an experiment");
    let said = String::from_utf8_lossy(&part.stderr);
    assert!(
        said.contains("3 of 10 runs missing") && said.contains("sweep/p0/rep-1, sweep/p0/rep-4, sweep/p1/rep-2"),
        "{said}"
    );
    // Its results.csv holds the 7 finished runs: the plain run's rows less
    // those of the 3 missing ones.
    let all = results(&plain);
    let expected: Vec<&str> = all
        .lines()
        .enumerate()
        .filter(|(i, _)| *i == 0 || ![1, 4, 7].contains(&((i - 1) / 2)))
        .map(|(_, l)| l)
        .collect();
    assert_eq!(results(&out).lines().collect::<Vec<_>>(), expected);
    // The missing shard alone completes the experiment.
    ok(squall(&["run", &exp, "--out", out_s, "--shard", "1/3"]));
    ok(squall(&["report", out_s]));
    assert_eq!(results(&out), results(&plain));
    // A shard rerun after it finished runs nothing again.
    ok(squall(&["run", &exp, "--out", out_s, "--shard", "1/3"]));
    assert_eq!(logged(&out).len(), RUNS);
}

#[test]
fn bad_shards_and_another_experiment_in_the_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path());
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    for (bad, says) in [
        ("3/3", "the last of 3 is 2/3"),
        ("0/0", "the shard count is 0"),
        ("1", "no `/` in `1`"),
        ("x/2", "the shard index `x` is not a whole number"),
    ] {
        let o = squall(&["run", &exp, "--out", out_s, "--shard", bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains("--shard") && err.contains(says), "{bad}: {err}");
    }
    assert!(!out.exists(), "a refused shard wrote {}", out.display());
    ok(squall(&["run", &exp, "--out", out_s, "--shard", "0/5"]));
    // The same directory for an edited experiment.
    std::fs::write(&exp, EXPERIMENT.replace("5 s", "6 s")).unwrap();
    let o = squall(&["run", &exp, "--out", out_s, "--shard", "1/5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("holds the runs of another experiment"), "{err}");
    // A directory that holds something else.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let o = squall(&["run", &exp, "--out", other.to_str().unwrap(), "--shard", "0/2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("holds no squall run"), "{err}");
}
