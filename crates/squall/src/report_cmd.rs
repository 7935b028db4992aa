//! `squall report DIR`: analyse a directory's runs from their files and
//! (re)write its report.html. An experiment (`squall run`, experiment.json)
//! gets results.csv, summary.csv, plots/ and a page per sweep point under
//! runs/; a `squall sim` or `squall emu` output (summary.json) or one run
//! of an experiment (result.json) gets its figures over time
//! ([`squall_analysis::run_report`]) and report-series.csv.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use squall_analysis::buckets::{bucket_rows, bucket_table_html, bucket_table_section, bucket_table_text};
use squall_analysis::detail::run_detail;
use squall_analysis::report::{RunRecord, SetInfo, detail_points, metric, write_report};
use squall_analysis::run_report::{self, run_figures};
use squall_analysis::summary_file::{engine, read_result, read_with_scenario, toml_to_json};
use squall_analysis::{RunHost, analyse_run, by_workload, jain_index, summarize};

use crate::output::outln;

use crate::manifest::Manifest;

#[derive(Args)]
pub struct ReportArgs {
    /// An output directory: of `squall run` (experiment.json), of `squall
    /// sim` or `squall emu` (summary.json), or one run of an experiment
    /// (result.json).
    pub dir: PathBuf,
    /// Which replication of a `squall sim` output to draw (its rep-N/).
    #[arg(long, default_value_t = 0)]
    pub replication: u32,
    /// How to print an experiment's summary table: aligned `table`, or
    /// `json` / `csv` with plain numbers and the unit in each name (as
    /// `squall sim --format`).
    #[arg(long, value_enum, default_value_t = crate::output::Format::Table)]
    pub format: crate::output::Format,
}

/// What kind of output directory a report is asked of.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// `squall run`: experiment.json.
    Experiment,
    /// `squall sim` / `squall emu`: summary.json and rep-N/.
    Run,
    /// One run of an experiment: result.json beside its files.
    OneRun,
}

fn kind(dir: &Path) -> Result<Kind> {
    if !dir.is_dir() {
        bail!(
            "{}: no such directory; give the output directory of squall run, squall sim or squall emu",
            dir.display()
        );
    }
    if dir.join("experiment.json").is_file() {
        Ok(Kind::Experiment)
    } else if dir.join("summary.json").is_file() {
        Ok(Kind::Run)
    } else if dir.join("result.json").is_file() {
        Ok(Kind::OneRun)
    } else {
        bail!(
            "{} is not a squall output directory: it has no experiment.json (written by squall run), \
             no summary.json (squall sim, squall emu) and no result.json (one run of an experiment)",
            dir.display()
        )
    }
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    match kind(&args.dir)? {
        Kind::Experiment => {
            // A report of part of an experiment is written, and says so
            // with status 1 (a Slurm report job then shows as failed).
            if build(&args.dir, args.format)? > 0 {
                return Ok(ExitCode::FAILURE);
            }
        }
        Kind::Run => run_report(&args.dir, args.replication)?,
        Kind::OneRun => {
            let (result, scenario, hosts, end) = read_result(&args.dir.join("result.json"), 0)?;
            let title = format!("{} ({} engine)", result["scenario"].as_str().unwrap_or("run"), engine(&result));
            write_run_page(&args.dir, &args.dir, &title, "", &scenario, &hosts, end, false)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `squall report DIR` on a `squall sim` or `squall emu` output: the
/// figures of replication `replication` (DIR/rep-N) in DIR/report.html.
fn run_report(dir: &Path, replication: u32) -> Result<()> {
    let (summary, scenario, hosts, end) = read_result(&dir.join("summary.json"), replication)?;
    let rep = dir.join(format!("rep-{replication}"));
    if !rep.is_dir() {
        let mut have: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("rep-"))
            .collect();
        have.sort();
        bail!(
            "--replication {replication}: {} has no {}; it has {}",
            dir.display(),
            rep.display(),
            if have.is_empty() { "no rep-N/ directory".to_string() } else { have.join(", ") }
        );
    }
    let runs = summary["runs"].as_array().map_or(0, Vec::len);
    let title = format!(
        "{}: replication {replication} of {runs} ({} engine)",
        summary["scenario"].as_str().unwrap_or("run"),
        engine(&summary)
    );
    let mut intro = format!(
        "<p>Source: <code>{}</code>, seed {}. Other replications: <code>squall report {} --replication N</code>.</p>",
        squall_analysis::report::html(summary["source"].as_str().unwrap_or("")),
        summary["runs"][replication as usize]["seed"].as_u64().map_or_else(|| "?".into(), |s| s.to_string()),
        squall_analysis::report::html(&dir.display().to_string())
    );
    // The open-loop table (count and arrivals entries) is over all the
    // replications, and needs no capture or event file.
    let buckets = bucket_rows(&summary);
    if !buckets.is_empty() {
        outln!("FCT and slowdown by size bucket, over {runs} replication(s) (mean ±95% CI half width):");
        outln!("{}", bucket_table_text(&buckets).trim_end());
        intro += &bucket_table_html(&buckets);
    }
    write_run_page(dir, &rep, &title, &intro, &scenario, &hosts, end, !buckets.is_empty())
}

/// Draws run `rep` into `out`/report.html and `out`/report-series.csv.
/// `has_table`: `intro` holds a table of its own, so a run without
/// captures or events still gets a page (the table alone).
#[allow(clippy::too_many_arguments)]
fn write_run_page(
    out: &Path,
    rep: &Path,
    title: &str,
    intro: &str,
    scenario: &serde_json::Value,
    hosts: &[RunHost],
    end: f64,
    has_table: bool,
) -> Result<()> {
    let figures = run_figures(rep, hosts, scenario, end).with_context(|| format!("reading {}", rep.display()))?;
    if figures.timeline.read.is_empty() && has_table {
        let page = run_report::page(title, intro, "");
        let html_path = out.join("report.html");
        run_report::write_atomically(&html_path, &page)
            .with_context(|| format!("cannot write {}", html_path.display()))?;
        outln!("wrote {} (the table; no figures: the run has no captures or events)", html_path.display());
        return Ok(());
    }
    if figures.timeline.read.is_empty() {
        bail!(
            "{} has none of the files a report is drawn from ({}, events.csv); was it run with --no-pcap and --no-events?",
            rep.display(),
            hosts.iter().map(|h| format!("{}.pcap", h.name)).collect::<Vec<_>>().join(", ")
        );
    }
    let page = run_report::page(title, intro, &run_report::figures_html(&figures));
    let html_path = out.join("report.html");
    run_report::write_atomically(&html_path, &page).with_context(|| format!("cannot write {}", html_path.display()))?;
    let csv_path = out.join("report-series.csv");
    run_report::write_atomically(&csv_path, &run_report::series_csv(&figures))
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    outln!("wrote {} ({} figures) and {}", html_path.display(), figures.figures.len(), csv_path.display());
    Ok(())
}

/// Analyses the finished runs of the experiment in `out` (those with a
/// result.json) and writes its report; the runs not finished are named on
/// stderr, and their number returned.
pub fn build(out: &Path, format: crate::output::Format) -> Result<usize> {
    let path = out.join("experiment.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let manifest: Manifest =
        serde_json::from_str(&text).with_context(|| format!("{} is not an experiment manifest", path.display()))?;
    // The points' pages are rebuilt whole: none of an earlier report may linger.
    let pages = out.join("runs");
    if pages.exists() {
        std::fs::remove_dir_all(&pages).with_context(|| format!("cannot clear {}", pages.display()))?;
    }
    let mut runs = Vec::new();
    let mut sets = Vec::new();
    let mut missing = Vec::new();
    // Each point's FCT/slowdown table by size bucket (count and arrivals
    // entries): set, point, its label, the table's rows.
    let mut bucket_tables = Vec::new();
    for set in &manifest.sets {
        let hosts: Vec<RunHost> = RunHost::gather(set.hosts.iter().map(|(name, address)| (name, address)));
        let mut details = BTreeMap::new();
        let mut run_pages = BTreeMap::new();
        let mut set_buckets = BTreeMap::new();
        let detailed = detail_points(set.points.len());
        for (pi, point) in set.points.iter().enumerate() {
            let mut point_counts = Vec::new();
            let point_hosts: Vec<RunHost>;
            let hosts = if point.hosts.is_empty() {
                &hosts
            } else {
                point_hosts = RunHost::gather(point.hosts.iter().map(|(name, address)| (name, address)));
                &point_hosts
            };
            for (replication, seed, run_dir) in &point.runs {
                let dir = out.join(run_dir);
                // A run not finished (result.json is written last, its
                // directory renamed into place whole): reported missing.
                if !dir.join("result.json").is_file() {
                    missing.push(run_dir.clone());
                    continue;
                }
                point_counts.push(run_tcp_counts(&dir.join("result.json"))?);
                let flows = analyse_run(&dir, hosts).with_context(|| format!("analysing {}", dir.display()))?;
                // One row per workload: a web page's connections together.
                let mut flows = by_workload(flows);
                let completed = !mark_unfinished(&dir, &mut flows);
                let throughputs: Vec<f64> = flows.iter().map(|f| f.throughput_bps).collect();
                if *replication == 0 && detailed.contains(&pi) {
                    details.insert(pi, run_detail(&dir, hosts).with_context(|| format!("reading {}", dir.display()))?);
                }
                if *replication == 0 {
                    // A point's page is an addition to the report: one that
                    // cannot be drawn is said, and the report goes on.
                    match point_page(out, &manifest.experiment, &set.name, pi, point, &dir) {
                        Ok(page) => {
                            run_pages.insert(pi, page);
                        }
                        Err(e) => eprintln!("squall report: no page for set {} point {pi}: {e:#}", set.name),
                    }
                }
                runs.push(RunRecord {
                    set: set.name.clone(),
                    point: pi,
                    replication: *replication,
                    seed: *seed,
                    flows,
                    fairness: jain_index(&throughputs),
                    completed,
                });
            }
            let rows = bucket_rows(&bucket_aggregate(&point_counts));
            if !rows.is_empty() {
                let heading =
                    format!("<h4>FCT and slowdown by size bucket, over {} replication(s)</h4>", point_counts.len());
                set_buckets.insert(pi, bucket_table_section(&rows, &heading));
                let label: Vec<String> = point.params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                bucket_tables.push((set.name.clone(), pi, label.join(", "), point_counts.len(), rows));
            }
        }
        sets.push(SetInfo {
            name: set.name.clone(),
            engine: set.engine.clone(),
            scenario: set.scenario.clone(),
            points: set.points.iter().map(|p| p.params.clone()).collect(),
            details,
            run_pages,
            bucket_tables: set_buckets,
        });
    }
    let total = manifest.sets.iter().flat_map(|s| &s.points).map(|p| p.runs.len()).sum::<usize>();
    if runs.is_empty() {
        bail!(
            "{}: none of the experiment's {total} runs has finished (no */rep-N/result.json); nothing to report yet",
            out.display()
        );
    }
    write_report(out, &manifest.experiment, &sets, &runs)?;
    let wrote = format!("wrote {0}/report.html, {0}/results.csv, {0}/summary.csv and {0}/plots/", out.display());
    if format == crate::output::Format::Table {
        print_summary(&sets, &runs);
        for (set, point, label, n, rows) in &bucket_tables {
            let at = if label.is_empty() { String::new() } else { format!(" ({label})") };
            outln!(
                "\nset {set}, point {point}{at}: FCT and slowdown by size bucket, over {n} replication(s) \
                 (mean ±95% CI half width):"
            );
            outln!("{}", bucket_table_text(rows).trim_end());
        }
        outln!("\n{wrote}");
    } else {
        // With json or csv, stdout holds the data alone.
        summary_rows(&sets, &runs).print(format);
        eprintln!("{wrote}");
    }
    if !missing.is_empty() {
        const SHOWN: usize = 10;
        let more = if missing.len() > SHOWN { format!(" and {} more", missing.len() - SHOWN) } else { String::new() };
        eprintln!(
            "squall report: {} of {total} runs missing from the report (not finished): {}{more}; rerun the shard(s) \
             that hold them, or `squall run EXPERIMENT --out {} --resume`, then `squall report` again",
            missing.len(),
            missing[..missing.len().min(SHOWN)].join(", "),
            out.display()
        );
    }
    Ok(missing.len())
}

/// The summaries of the `count` and `arrivals` entries in one run's
/// result.json: `tcp_counts` of a simulated run (one replication's
/// summary), `runs[0].tcp_counts` of an emulated one (the child's
/// summary.json); null if the run has none.
pub(crate) fn run_tcp_counts(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    Ok(match &v["tcp_counts"] {
        serde_json::Value::Null => v["runs"][0]["tcp_counts"].clone(),
        counts => counts.clone(),
    })
}

/// The metrics of a size bucket that are summarised over replications,
/// as `squall sim` does for its `aggregate.tcp_count_buckets`
/// (squall-outputs `count_out::aggregate_buckets`).
const BUCKET_METRICS: [&str; 8] =
    ["flows", "completed", "fct_mean", "fct_p50", "fct_p99", "slowdown_mean", "slowdown_p50", "slowdown_p99"];

/// `{"aggregate": {"tcp_count_buckets": …}}` over the replications'
/// `tcp_counts` (`runs`): entry → bucket → metric → statistics over the
/// replications with flows in the bucket, the shape
/// [`bucket_rows`] reads from a `squall sim` summary.json.
pub(crate) fn bucket_aggregate(runs: &[serde_json::Value]) -> serde_json::Value {
    let mut samples: BTreeMap<String, BTreeMap<String, BTreeMap<&str, Vec<f64>>>> = BTreeMap::new();
    for entries in runs.iter().filter_map(serde_json::Value::as_array) {
        for c in entries {
            let entry = c["entry"].as_str().unwrap_or_default().to_string();
            for b in c["buckets"].as_array().into_iter().flatten() {
                let bucket = b["bucket"].as_str().unwrap_or_default().to_string();
                let m = samples.entry(entry.clone()).or_default().entry(bucket).or_default();
                for k in BUCKET_METRICS {
                    // A mean of no flow is NaN, written as null.
                    m.entry(k).or_default().push(b[k].as_f64().unwrap_or(f64::NAN));
                }
            }
        }
    }
    let buckets: BTreeMap<String, BTreeMap<String, BTreeMap<&str, squall_analysis::stats::Summary>>> = samples
        .into_iter()
        .map(|(e, b)| {
            (e, b.into_iter().map(|(b, m)| (b, m.into_iter().map(|(k, xs)| (k, summarize(&xs))).collect())).collect())
        })
        .collect();
    serde_json::json!({ "aggregate": { "tcp_count_buckets": buckets } })
}

/// The page of sweep point `point` of set `set`: the figures over time
/// of its first replication (run directory `run`), in
/// `out`/runs/SET-pPOINT.html; returns its path relative to `out`. Each
/// page is bounded as a run's report is ([`run_report`]), and
/// report.html only links them.
fn point_page(
    out: &Path,
    experiment: &str,
    set: &str,
    point: usize,
    point_info: &crate::manifest::ManifestPoint,
    run: &Path,
) -> Result<String> {
    let params = &point_info.params;
    let path = run.join("result.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let scenario = toml_to_json(&point_info.scenario)
        .with_context(|| format!("experiment.json: set {set} point {point}: its scenario is not TOML"))?;
    let (_, scenario, hosts, end) = read_with_scenario(&path, v, scenario, 0)?;
    let figures = run_figures(run, &hosts, &scenario, end).with_context(|| format!("reading {}", run.display()))?;
    let at: Vec<String> = params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    let title = format!(
        "{experiment}, set {set}, point {point}{}",
        if at.is_empty() { String::new() } else { format!(": {}", at.join(", ")) }
    );
    let intro =
        "<p><a href=\"../report.html\">Back to the experiment's report</a>. First replication of this point.</p>";
    let page = run_report::page(&title, intro, &run_report::figures_html(&figures));
    let name = format!("{}-p{point}.html", set.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
    let dir = out.join("runs");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    run_report::write_atomically(&dir.join(&name), &page)
        .with_context(|| format!("cannot write {}", dir.join(&name).display()))?;
    Ok(format!("runs/{name}"))
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
/// The summary table as `--format json|csv` rows: per set, point and
/// flow, the number of replications, the elapsed time's p10, median and
/// p90 and the means of throughput, retransmitted and dropped packets
/// over the replications (the figures summary.csv holds per metric).
fn summary_rows(sets: &[SetInfo], runs: &[RunRecord]) -> crate::output::Rows {
    use crate::output::Cell;
    let mut rows = crate::output::Rows::new(&[
        "set",
        "point",
        "params",
        "flow",
        "replications",
        "elapsed_p10_s",
        "elapsed_p50_s",
        "elapsed_p90_s",
        "throughput_bit_per_s",
        "retransmitted_packets",
        "dropped_packets",
    ]);
    for set in sets {
        for (pi, params) in set.points.iter().enumerate() {
            let label: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut by_flow: BTreeMap<&str, Vec<&squall_analysis::FlowStats>> = BTreeMap::new();
            for r in runs.iter().filter(|r| r.set == set.name && r.point == pi) {
                for f in &r.flows {
                    by_flow.entry(&f.label).or_default().push(f);
                }
            }
            for (flow, fs) in by_flow {
                let m = |k: &str| summarize(&fs.iter().map(|f| metric(f, k)).collect::<Vec<_>>());
                let e = m("elapsed");
                rows.push(vec![
                    Cell::from(set.name.as_str()),
                    Cell::Num(pi as f64),
                    Cell::from(label.join(" ")),
                    Cell::from(flow),
                    Cell::Num(e.n as f64),
                    Cell::Num(e.p10),
                    Cell::Num(e.median),
                    Cell::Num(e.p90),
                    Cell::Num(m("throughput_bps").mean),
                    Cell::Num(m("retransmitted").mean),
                    Cell::Num(m("dropped").mean),
                ]);
            }
        }
    }
    rows
}

fn print_summary(sets: &[SetInfo], runs: &[RunRecord]) {
    let label = |params: &[(String, String)]| -> String {
        params.iter().map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k))).collect::<Vec<_>>().join(" ")
    };
    // The text columns as wide as their longest entry (a crossed set's
    // `network=… workload=…` labels are long).
    let set_w = sets.iter().map(|s| s.name.chars().count()).max().unwrap_or(0).max(14);
    let point_w =
        sets.iter().flat_map(|s| s.points.iter().map(|p| label(p).chars().count())).max().unwrap_or(0).max(28);
    let flow_w = runs.iter().flat_map(|r| r.flows.iter().map(|f| f.label.chars().count())).max().unwrap_or(0).max(34);
    outln!(
        "\n{:<set_w$} {:<point_w$} {:<flow_w$} {:>4} {:>9} {:>9} {:>9} {:>11} {:>7} {:>7}",
        "set",
        "point",
        "flow",
        "n",
        "el. p10",
        "median",
        "p90",
        "kbit/s",
        "rexmit",
        "dropped"
    );
    for set in sets {
        for (pi, params) in set.points.iter().enumerate() {
            let label = label(params);
            let mut by_flow: BTreeMap<&str, Vec<&squall_analysis::FlowStats>> = BTreeMap::new();
            for r in runs.iter().filter(|r| r.set == set.name && r.point == pi) {
                for f in &r.flows {
                    by_flow.entry(&f.label).or_default().push(f);
                }
            }
            for (flow, fs) in by_flow {
                let m = |k: &str| summarize(&fs.iter().map(|f| metric(f, k)).collect::<Vec<_>>());
                let e = m("elapsed");
                outln!(
                    "{:<set_w$} {:<point_w$} {:<flow_w$} {:>4} {:>9.2} {:>9.2} {:>9.2} {:>11.2} {:>7.1} {:>7.1}",
                    set.name,
                    label,
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
    let failed: Vec<String> =
        runs.iter().filter(|r| !r.completed).map(|r| format!("{} p{} rep {}", r.set, r.point, r.replication)).collect();
    if !failed.is_empty() {
        outln!(
            "\n{} of {} runs did not complete (a failed download: not in by the duration, cut at the end, or the \
             client gave up; completed = 0 in results.csv, its elapsed time runs to the duration): {}",
            failed.len(),
            runs.len(),
            failed.join(", ")
        );
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
