//! `squall report DIR`: analyse an experiment's runs from their files and
//! (re)write results.csv, summary.csv, plots/ and report.html.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use squall_analysis::detail::run_detail;
use squall_analysis::report::{RunRecord, SetInfo, detail_points, metric, write_report};
use squall_analysis::{RunHost, analyse_run, by_workload, jain_index, summarize};

use crate::run_cmd::Manifest;

#[derive(Args)]
pub struct ReportArgs {
    /// An experiment's output directory (it holds experiment.json).
    pub dir: PathBuf,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    build(&args.dir)?;
    Ok(ExitCode::SUCCESS)
}

pub fn build(out: &Path) -> Result<()> {
    let path = out.join("experiment.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let manifest: Manifest =
        serde_json::from_str(&text).with_context(|| format!("{} is not an experiment manifest", path.display()))?;
    let mut runs = Vec::new();
    let mut sets = Vec::new();
    for set in &manifest.sets {
        let hosts: Vec<RunHost> =
            set.hosts.iter().map(|(name, address)| RunHost { name: name.clone(), address: *address }).collect();
        let mut details = BTreeMap::new();
        let detailed = detail_points(set.points.len());
        for (pi, point) in set.points.iter().enumerate() {
            for (replication, seed, dir) in &point.runs {
                let dir = out.join(dir);
                let flows = analyse_run(&dir, &hosts).with_context(|| format!("analysing {}", dir.display()))?;
                // One row per workload: a web page's connections together.
                let mut flows = by_workload(flows);
                mark_unfinished(&dir, &mut flows);
                let throughputs: Vec<f64> = flows.iter().map(|f| f.throughput_bps).collect();
                if *replication == 0 && detailed.contains(&pi) {
                    details.insert(pi, run_detail(&dir, &hosts).with_context(|| format!("reading {}", dir.display()))?);
                }
                runs.push(RunRecord {
                    set: set.name.clone(),
                    point: pi,
                    replication: *replication,
                    seed: *seed,
                    flows,
                    fairness: jain_index(&throughputs),
                });
            }
        }
        sets.push(SetInfo {
            name: set.name.clone(),
            engine: set.engine.clone(),
            scenario: set.scenario.clone(),
            points: set.points.iter().map(|p| p.params.clone()).collect(),
            details,
        });
    }
    write_report(out, &manifest.experiment, &sets, &runs)?;
    print_summary(&sets, &runs);
    println!("\nwrote {0}/report.html, {0}/results.csv, {0}/summary.csv and {0}/plots/", out.display());
    Ok(())
}

/// A run whose TCP application did not finish by the end of the run
/// (result.json of a simulated run: a `tcp_flows` entry not `completed`,
/// seed 003 §3's failed download; of an emulated run: a foreground
/// workload stopped at the end of the run, `emu.workloads` with no exit
/// code) has its TCP workloads' elapsed time run to the end of the run:
/// what the captures show is only how far it got. One that gave up (a
/// foreground workload that exited with an error: wget whose files the
/// server stopped serving) failed as a simulated download that never
/// finishes does: its elapsed time runs to the scenario's duration.
/// Returns whether it did either.
pub(crate) fn mark_unfinished(dir: &Path, flows: &mut [squall_analysis::FlowStats]) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("result.json")) else { return false };
    let Ok(result) = serde_json::from_str::<serde_json::Value>(&text) else { return false };
    let simulated = result["tcp_flows"]
        .as_array()
        .is_some_and(|flows| flows.iter().any(|f| f["completed"].as_bool() == Some(false)));
    let foreground = || {
        result["emu"]["workloads"].as_array().into_iter().flatten().filter(|w| w["background"].as_bool() == Some(false))
    };
    let cut = foreground().any(|w| w["exit_code"].is_null());
    let gave_up = foreground().any(|w| w["exit_code"].as_i64().is_some_and(|c| c != 0));
    let Some(mut end) = result["end"].as_f64().or_else(|| result["runs"][0]["end"].as_f64()) else { return false };
    if gave_up
        && let Some(duration) =
            result["resolved_scenario"]["duration"].as_str().and_then(|d| d.parse::<squall_link::Duration>().ok())
    {
        end = end.max(duration.as_secs_f64());
    }
    if !(simulated || cut || gave_up) {
        return false;
    }
    for f in flows.iter_mut().filter(|f| f.label.starts_with("tcp ")) {
        f.elapsed = f.elapsed.max(end - f.opened);
    }
    true
}

/// Seed 000 Table 2 on the terminal: per set, point and flow.
fn print_summary(sets: &[SetInfo], runs: &[RunRecord]) {
    println!(
        "\n{:<14} {:<28} {:<34} {:>4} {:>9} {:>9} {:>9} {:>11} {:>7} {:>7}",
        "set", "point", "flow", "n", "el. p10", "median", "p90", "kbit/s", "rexmit", "dropped"
    );
    for set in sets {
        for (pi, params) in set.points.iter().enumerate() {
            let label: Vec<String> =
                params.iter().map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k))).collect();
            let mut by_flow: BTreeMap<&str, Vec<&squall_analysis::FlowStats>> = BTreeMap::new();
            for r in runs.iter().filter(|r| r.set == set.name && r.point == pi) {
                for f in &r.flows {
                    by_flow.entry(&f.label).or_default().push(f);
                }
            }
            for (flow, fs) in by_flow {
                let m = |k: &str| summarize(&fs.iter().map(|f| metric(f, k)).collect::<Vec<_>>());
                let e = m("elapsed");
                println!(
                    "{:<14} {:<28} {:<34} {:>4} {:>9.2} {:>9.2} {:>9.2} {:>11.2} {:>7.1} {:>7.1}",
                    set.name,
                    label.join(" "),
                    flow,
                    e.n,
                    e.p10,
                    e.median,
                    e.p90,
                    m("throughput_bps").mean / 1e3,
                    m("retransmitted").mean,
                    m("dropped").mean
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elapsed time of a `tcp` flow opened at 1 s and last seen at
    /// 20 s, after `mark_unfinished` read an emulated run whose wget
    /// ended at 30 s with `exit_code` (the run's end), in a scenario of
    /// 900 s.
    fn elapsed_after(exit_code: serde_json::Value) -> (bool, f64) {
        let dir = tempfile::tempdir().unwrap();
        let result = serde_json::json!({
            "resolved_scenario": { "duration": "900 s" },
            "runs": [{ "end": 30.0 }],
            "emu": { "workloads": [
                { "host": "server", "background": true, "exit_code": 0 },
                { "host": "client", "background": false, "exit_code": exit_code },
            ] },
        });
        std::fs::write(dir.path().join("result.json"), result.to_string()).unwrap();
        let mut flows = [squall_analysis::FlowStats {
            label: "tcp server:80 > client:*".into(),
            opened: 1.0,
            elapsed: 19.0,
            ..Default::default()
        }];
        let marked = mark_unfinished(dir.path(), &mut flows);
        (marked, flows[0].elapsed)
    }

    #[test]
    fn a_download_that_gave_up_counts_the_whole_duration_and_one_cut_runs_to_the_end() {
        // wget finished: nothing changes.
        assert_eq!(elapsed_after(0.into()), (false, 19.0));
        // wget exited 4 (network failure): failed, as a simulated download
        // not in by the duration: 900 s - 1 s.
        assert_eq!(elapsed_after(4.into()), (true, 899.0));
        // wget stopped at the run's end: as far as it got, 30 s - 1 s.
        assert_eq!(elapsed_after(serde_json::Value::Null), (true, 29.0));
    }
}
