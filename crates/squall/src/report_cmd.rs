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
/// what the captures show is only how far it got. Returns whether it did.
pub(crate) fn mark_unfinished(dir: &Path, flows: &mut [squall_analysis::FlowStats]) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("result.json")) else { return false };
    let Ok(result) = serde_json::from_str::<serde_json::Value>(&text) else { return false };
    let simulated = result["tcp_flows"]
        .as_array()
        .is_some_and(|flows| flows.iter().any(|f| f["completed"].as_bool() == Some(false)));
    let emulated = result["emu"]["workloads"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w["background"].as_bool() == Some(false) && w["exit_code"].is_null()));
    let Some(end) = result["end"].as_f64().or_else(|| result["runs"][0]["end"].as_f64()) else { return false };
    if !(simulated || emulated) {
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
