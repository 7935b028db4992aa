//! `squall run EXPERIMENT`: every replication of every replication set,
//! each written when it finishes (so an interrupted experiment resumes
//! where it stopped), then analysed from its files into results.csv,
//! summary.csv and report.html (seed 000 §4.1, §5.2).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use squall_scenario::{Combination, ConfigText, Engine, Experiment, ReplicationSet, Scenario};
use squall_sim::EventFilter;

use crate::manifest::{Manifest, ManifestPoint, ManifestSet};
use crate::output;
pub use crate::run_args::RunArgs;
use crate::run_args::{EventLog, MANY_RUNS};
use crate::sim_cmd::{Outputs, scenario_text, simulate_replication};

struct Job {
    set: usize,
    point: usize,
    replication: u32,
    seed: u64,
    dir: String,
}

/// How many replications `experiment` makes, counted before any point is
/// built; refused past [`MANY_RUNS`] unless `allow_many`.
fn count_runs(experiment: &Experiment, file: &Path, base: &Path, allow_many: bool) -> Result<u64> {
    let mut total = 0u64;
    let mut per_set = Vec::new();
    for set in &experiment.sets {
        let combinations = set_sources(experiment, file, set, base)?;
        let mut replications = Vec::new();
        for (_, src) in &combinations {
            replications.push(match set.replications {
                Some(r) => r,
                None => {
                    squall_scenario::parse(&src.source, &src.text, &src.dir)
                        .map_err(|e| anyhow::anyhow!("set `{}`: {e:?}", set.name))?
                        .replications
                }
            });
        }
        let sweep = set.sweep.as_ref().map_or(String::from("no sweep"), |sw| {
            let lists: Vec<String> = sw.params.iter().map(|(k, v)| format!("{k} ({})", v.len())).collect();
            format!("sweep of {}", lists.join(" × "))
        });
        let reps: std::collections::BTreeSet<u32> = replications.iter().copied().collect();
        let reps: Vec<String> = reps.iter().map(u32::to_string).collect();
        let crossed =
            if combinations.len() > 1 { format!("{} combinations × ", combinations.len()) } else { String::new() };
        per_set.push(format!(
            "set `{}`: {crossed}{sweep} = {} point(s) × {} replication(s)",
            set.name,
            set.point_count().map_or("too many".to_string(), |p| p.to_string()),
            reps.join(" or ")
        ));
        let set_runs = replications.iter().try_fold(0u64, |n, r| n.checked_add(set.run_count(*r)?));
        total = match set_runs.and_then(|r| total.checked_add(r)) {
            Some(t) => t,
            None => bail!(
                "{}: set `{}`: its sweep makes more runs than can be counted (over {}); sweep fewer keys or values",
                file.display(),
                set.name,
                u64::MAX
            ),
        };
    }
    if total > MANY_RUNS && !allow_many {
        bail!(
            "{}: the experiment makes {total} runs (sweep points × replications), more than the {MANY_RUNS} that \
             run without asking; check its sweeps, or add --allow-many-runs to run them all\n  {}",
            file.display(),
            per_set.join("\n  ")
        );
    }
    Ok(total)
}

/// Every run of the experiment with its resolved scenario; more than
/// `limit` runs (a sweep of `replications` itself, which
/// [`count_runs`] cannot see) are refused before they are built.
fn plan(
    experiment: &Experiment,
    file: &Path,
    base: &Path,
    limit: u64,
) -> Result<(Manifest, Vec<Vec<Scenario>>, Vec<Job>)> {
    let mut sets = Vec::new();
    let mut scenarios = Vec::new();
    let mut jobs = Vec::new();
    for (si, set) in experiment.sets.iter().enumerate() {
        let mut points = Vec::new();
        let mut resolved = Vec::new();
        let crossed = !set.networks.is_empty();
        // Every sweep point of every combination; the points are numbered
        // on through the combinations, whose parameters come first.
        type Labelled = (Vec<(String, String)>, std::rc::Rc<ConfigText>);
        let sources: Vec<Labelled> = set_sources(experiment, file, set, base)?
            .into_iter()
            .map(|(c, src)| (c.params(), std::rc::Rc::new(src)))
            .collect();
        let sweep = sources.iter().flat_map(|(labels, src)| set.points().map(move |p| (labels, src, p)));
        for (index, (labels, src, sweep_point)) in sweep.enumerate() {
            let (source, text, dir) = (&src.source, &src.text, &src.dir);
            let scenario = set
                .scenario_at(source, text, dir, &sweep_point)
                .map_err(|e| anyhow::anyhow!("set `{}`: {e:?}", set.name))?;
            let point = squall_scenario::SweepPoint {
                index,
                params: labels.iter().cloned().chain(sweep_point.params).collect(),
            };
            if jobs.len() as u64 + u64::from(scenario.replications) > limit {
                bail!(
                    "set `{}`, sweep point {}: the experiment makes more than {limit} runs; add --allow-many-runs \
                     to run them all",
                    set.name,
                    point.index
                );
            }
            let runs: Vec<(u32, u64, String)> = (0..scenario.replications)
                .map(|r| (r, scenario.replication_seed(r), format!("{}/p{}/rep-{r}", set.name, point.index)))
                .collect();
            for (r, seed, d) in &runs {
                jobs.push(Job { set: si, point: point.index, replication: *r, seed: *seed, dir: d.clone() });
            }
            let hosts = if crossed { host_addresses(&scenario.hosts) } else { Vec::new() };
            points.push(ManifestPoint {
                params: point.params.clone(),
                hosts,
                scenario: toml::to_string(&scenario)?,
                runs,
            });
            resolved.push(scenario);
        }
        let hosts = host_addresses(&resolved[0].hosts);
        sets.push(ManifestSet {
            name: set.name.clone(),
            engine: match set.engine {
                Engine::Sim => "sim".into(),
                Engine::Emu => "emu".into(),
            },
            scenario: set.describe(),
            hosts,
            points,
        });
        scenarios.push(resolved);
    }
    Ok((Manifest { experiment: experiment.name.clone(), sets }, scenarios, jobs))
}

/// The scenario text of every network × workload combination of `set`
/// (seed 000 §4.1), in [`ReplicationSet::combinations`]' order: the
/// network's text (the set's `scenario`, or a `[networks]` entry: a file,
/// `builtin:NAME` or an inline table) with its workload replaced by the
/// combination's `[workloads]` entry, if any. Paths are relative to the
/// experiment file `file` (in `base`).
fn set_sources(
    experiment: &Experiment,
    file: &Path,
    set: &ReplicationSet,
    base: &Path,
) -> Result<Vec<(Combination, ConfigText)>> {
    let shown = file.display().to_string();
    let failed = |e: squall_scenario::ScenarioError| anyhow::anyhow!("set `{}`: {e:?}", set.name);
    let scenario = |spec: &str, what: String| -> Result<ConfigText> {
        let (source, text, dir) = scenario_text(spec, base).with_context(|| what)?;
        Ok(ConfigText { source, text, dir })
    };
    // Each network and workload the set names is read once, whatever the
    // number of combinations it takes part in.
    let own = set.scenario.as_deref().map(|spec| scenario(spec, format!("set `{}`", set.name))).transpose()?;
    let mut networks = BTreeMap::new();
    for n in &set.networks {
        let text = match &experiment.networks[n] {
            toml::Value::Table(t) => squall_scenario::compose::inline_network(&shown, n, t, base),
            v => scenario(v.as_str().unwrap_or_default(), format!("{shown}: networks.{n}"))?,
        };
        networks.insert(n.as_str(), text);
    }
    let mut workloads = BTreeMap::new();
    for w in &set.workloads {
        let text = match &experiment.workloads[w] {
            toml::Value::Table(t) => squall_scenario::compose::inline_workload(&shown, w, t, base),
            v => {
                let path = base.join(v.as_str().unwrap_or_default());
                let text = squall_scenario::read_text(&path).with_context(|| {
                    format!("{shown}: workloads.{w}: cannot read the workload file {}", path.display())
                })?;
                ConfigText {
                    source: path.display().to_string(),
                    text,
                    dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                }
            }
        };
        workloads.insert(w.as_str(), text);
    }
    let mut out = Vec::new();
    for c in set.combinations() {
        let network = match &c.network {
            Some(n) => &networks[n.as_str()],
            None => own.as_ref().with_context(|| format!("set `{}` has neither a scenario nor networks", set.name))?,
        };
        let src = match &c.workload {
            None => network.clone(),
            Some(w) => squall_scenario::compose(network, &workloads[w.as_str()]).map_err(failed)?,
        };
        out.push((c, src));
    }
    Ok(out)
}

/// One simulation replication, written into `dir` as `squall run` keeps
/// it: events.csv (`events` says which), one pcap per host, the TCP trace
/// files, flows.csv (flows of `count` and `arrivals` entries) and
/// result.json.
pub(crate) fn simulate(scenario: &Scenario, replication: u32, seed: u64, events: EventLog, dir: &Path) -> Result<()> {
    let filter = match events {
        EventLog::Drops => EventFilter::Drops,
        EventLog::All => EventFilter::All,
    };
    let summary =
        simulate_replication(scenario, replication, seed, dir, Outputs { events: true, pcap: true }, filter)??;
    // The flows of `count` and `arrivals` entries, one row each, as
    // `squall sim` writes them (they are not in result.json).
    if !summary.count_flows.is_empty() {
        let csv = squall_analysis::summary_file::count_flows_csv(&summary.count_flows);
        output::write_atomic(&dir.join("flows.csv"), csv)?;
    }
    output::write_atomic(&dir.join("result.json"), serde_json::to_string_pretty(&summary)?)?;
    Ok(())
}

/// The data-plane options a child `squall emu` is given (none: its
/// defaults).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EmuChildOptions {
    /// `squall emu --realtime`: the data plane's SCHED_FIFO priority.
    pub realtime: Option<i32>,
    /// `squall emu --late-threshold`: a delivery later than this flags
    /// the run.
    pub late_threshold: Option<squall_link::Duration>,
}

/// One emulation replication: `squall emu` in a child process on the
/// resolved scenario (its own namespaces, cleaned up when it ends), its
/// files moved into `dir` like a simulated run's (result.json is the
/// child's summary.json), with `squall emu`'s data-plane options.
pub(crate) fn emulate(scenario: &Scenario, seed: u64, dir: &Path, options: &EmuChildOptions) -> Result<()> {
    fs::create_dir_all(dir)?;
    let resolved = dir.join("scenario.toml");
    fs::write(&resolved, toml::to_string(scenario)?)?;
    let work = dir.join("emu");
    let status = std::process::Command::new(std::env::current_exe()?)
        .arg("emu")
        .arg(&resolved)
        .arg("--out")
        .arg(&work)
        .args(["--seed", &seed.to_string()])
        .arg("--files-moved-by-parent")
        // Its own work directory: what a failed attempt left there goes.
        .arg("--force")
        .args(options.realtime.map(|p| format!("--realtime={p}")))
        .args(options.late_threshold.map(|t| format!("--late-threshold={t}")))
        .status()
        .context("cannot start `squall emu`")?;
    if !status.success() {
        // A workload that exited with an error (wget's status 8 when the
        // server answered one) makes `squall emu` fail after it wrote the
        // run's files: the run is a result, a failed download (seed 003
        // §3), which the report counts (results.csv `completed` = 0).
        match failed_workload(&work.join("summary.json")) {
            Some(what) => eprintln!(
                "squall run: {}: {what}; the run is kept as a failed download (completed = 0 in results.csv)",
                // The run's final directory, not its `.partial` one.
                dir.with_extension("").display()
            ),
            None => bail!("`squall emu {}` failed ({status})", resolved.display()),
        }
    }
    for entry in fs::read_dir(work.join("rep-0"))? {
        let entry = entry?;
        fs::rename(entry.path(), dir.join(entry.file_name()))?;
    }
    fs::rename(work.join("summary.json"), dir.join("result.json"))?;
    // The flows of `count` and `arrivals` entries, as a simulated run's.
    if work.join("flows.csv").exists() {
        fs::rename(work.join("flows.csv"), dir.join("flows.csv"))?;
    }
    fs::remove_dir_all(&work)?;
    Ok(())
}

/// The first foreground workload that exited with an error, in words,
/// from an emulated run's summary.json; `None` when the file is missing
/// or unreadable (the emulation itself failed) or every foreground
/// workload exited with status 0.
fn failed_workload(summary: &Path) -> Option<String> {
    let text = fs::read_to_string(summary).ok()?;
    let summary: serde_json::Value = serde_json::from_str(&text).ok()?;
    summary["emu"]["workloads"].as_array()?.iter().filter(|w| w["background"].as_bool() == Some(false)).find_map(|w| {
        let code = w["exit_code"].as_i64().filter(|c| *c != 0)?;
        Some(format!(
            "`{}` on {} exited with status {code}",
            w["run"].as_str().unwrap_or_default(),
            w["host"].as_str().unwrap_or_default()
        ))
    })
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let experiment = squall_scenario::load_experiment(&args.experiment).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let base = args.experiment.parent().map(Path::to_path_buf).unwrap_or_default();
    let runs = count_runs(&experiment, &args.experiment, &base, args.allow_many_runs)?;
    eprintln!("squall run: {} makes {runs} run(s)", experiment.name);
    let limit = if args.allow_many_runs { u64::MAX } else { MANY_RUNS };
    let (manifest, scenarios, jobs) = plan(&experiment, &args.experiment, &base, limit)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("out").join(&experiment.name));
    let manifest_path = out.join("experiment.json");
    let manifest_text = serde_json::to_string_pretty(&manifest)?;
    if args.slurm.slurm {
        crate::slurm::check(&args, jobs.len())?;
    }
    if args.shard.is_some() {
        shared_out_dir(&out, &manifest_text, &args.experiment)?;
    } else if args.resume {
        fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    } else if manifest_path.exists() && !args.force {
        bail!(
            "{} already holds a run (experiment.json); --resume to continue it, --force to replace it, or --out \
             elsewhere",
            out.display()
        );
    } else {
        output::prepare_out_dir(&out, args.force)?;
    }
    output::write_atomic(&manifest_path, &manifest_text)?;
    if args.slurm.slurm {
        return crate::slurm::write_jobs(&args, &out, jobs.len());
    }
    let in_shard = |i: &usize| args.shard.is_none_or(|s| s.holds(*i));
    let todo: Vec<&Job> = jobs
        .iter()
        .enumerate()
        .filter(|(i, j)| in_shard(i) && !out.join(&j.dir).join("result.json").exists())
        .map(|(_, j)| j)
        .collect();
    let todo: Vec<&Job> = todo.into_iter().take(args.max_runs.unwrap_or(usize::MAX)).collect();
    eprintln!(
        "squall run: {} — {} set(s), {} replication(s), {} already done, {} to run now",
        experiment.name,
        manifest.sets.len(),
        jobs.len(),
        jobs.iter().filter(|j| out.join(&j.dir).join("result.json").exists()).count(),
        todo.len()
    );
    let bar = ProgressBar::new(todo.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} elapsed, ETA {eta} {msg}")
            .expect("valid template"),
    );
    let log = Mutex::new(fs::OpenOptions::new().create(true).append(true).open(out.join("runs.log"))?);
    let run_one = |job: &Job| -> Result<()> {
        let scenario = &scenarios[job.set][job.point];
        let final_dir = out.join(&job.dir);
        let tmp = out.join(format!("{}.partial", job.dir));
        if tmp.exists() {
            fs::remove_dir_all(&tmp)?;
        }
        match experiment.sets[job.set].engine {
            Engine::Sim => simulate(scenario, job.replication, job.seed, args.events, &tmp)?,
            Engine::Emu => emulate(scenario, job.seed, &tmp, &EmuChildOptions::default())?,
        }
        if final_dir.exists() {
            fs::remove_dir_all(&final_dir)?;
        }
        fs::rename(&tmp, &final_dir)?;
        writeln!(log.lock().expect("log lock"), "{}", job.dir)?;
        bar.inc(1);
        Ok(())
    };
    let (sim, emu): (Vec<&Job>, Vec<&Job>) =
        todo.into_iter().partition(|j| experiment.sets[j.set].engine == Engine::Sim);
    let threads = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.min(sim.len().max(1)) {
            s.spawn(|| {
                while failure.lock().expect("lock").is_none() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = sim.get(i) else { break };
                    if let Err(e) = run_one(job) {
                        failure.lock().expect("lock").get_or_insert(e.context(format!("run {}", job.dir)));
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().expect("lock") {
        return Err(e);
    }
    for job in emu {
        run_one(job).with_context(|| format!("run {}", job.dir))?;
    }
    bar.finish_and_clear();
    let missing = jobs.iter().filter(|j| !out.join(&j.dir).join("result.json").exists()).count();
    if let Some(shard) = args.shard {
        // Another shard may be writing the report's files now: the report
        // is `squall report`'s, run once after the shards.
        eprintln!(
            "squall run: shard {shard} done; {} of the experiment's {} runs are done; `squall report {}` builds \
             the report from what has finished",
            jobs.len() - missing,
            jobs.len(),
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if missing > 0 {
        eprintln!(
            "{missing} replication(s) still to run: `squall run {} --resume` continues",
            args.experiment.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    crate::report_cmd::build(&out, args.format)?;
    Ok(ExitCode::SUCCESS)
}

/// Makes `out` ready for one shard of many: created when missing, and
/// if another shard made it already, it must hold the same experiment
/// (the same experiment.json, `manifest`); nothing in it is removed.
/// experiment.json is then written atomically by every shard, so shards
/// starting together leave it whole.
fn shared_out_dir(out: &Path, manifest: &str, experiment: &Path) -> Result<()> {
    let path = out.join("experiment.json");
    match fs::read_to_string(&path) {
        Ok(existing) if existing != manifest => bail!(
            "--shard: {} holds the runs of another experiment (its experiment.json differs from what {} makes now: \
             another file, other sweeps or an edited scenario); give another --out, or remove it to start again",
            out.display(),
            experiment.display()
        ),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if out.is_file() {
                bail!("--out {}: is a file; give a directory", out.display());
            }
            fs::create_dir_all(out).with_context(|| format!("cannot create output directory {}", out.display()))?;
            // A mistyped --out (a home directory) is refused as a plain
            // run refuses it; another shard's temporary experiment.json
            // (.squall-*) is not a stranger's file.
            let strangers = fs::read_dir(out)
                .with_context(|| format!("cannot read output directory {}", out.display()))?
                .filter_map(|e| e.ok())
                .any(|e| !e.file_name().to_string_lossy().starts_with(".squall-"));
            if strangers && !path.exists() {
                bail!(
                    "{} is not empty and holds no squall run (no experiment.json); give a new or empty --out",
                    out.display()
                );
            }
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Each host's `(name, address)` pairs for the manifest: one per address
/// (a dual-stack host has two), IPv4 first.
fn host_addresses(hosts: &[squall_scenario::Host]) -> Vec<(String, std::net::IpAddr)> {
    hosts.iter().flat_map(|h| h.addresses().iter().map(|a| (h.name.clone(), a)).collect::<Vec<_>>()).collect()
}
