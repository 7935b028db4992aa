//! Replication sets and the queue that runs them unattended.
//!
//! A set made in the page becomes an experiment file,
//! experiments/NAME.toml (seed 000 §4.1: any network × any workload × N
//! replications, swept over keys), and is run as the command line runs it:
//! the `squall` binary itself, `squall run experiments/NAME.toml --out
//! results/NAME --jobs N`, in a child process, so a run made here is a
//! `squall run` directory, byte for byte, and can be repeated or resumed
//! from a shell. Sets run one after another; a simulation set's
//! replications run on `--jobs` threads. Progress is read from the files
//! `squall run` writes: experiment.json (every run planned) and runs.log
//! (one line per finished replication).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::workspace::{Kind, check_name, write_atomic};
use crate::{AppState, JsonBody};

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

#[derive(Clone, Debug, Serialize)]
pub struct Job {
    pub id: u64,
    /// The experiment file's name (experiments/NAME.toml) and the
    /// results directory's (results/NAME).
    pub name: String,
    pub state: JobState,
    /// Replications planned and finished.
    pub total: u64,
    pub done: u64,
    /// Seconds since the set started running.
    pub elapsed_s: f64,
    /// Estimated seconds left: elapsed / done × (total − done).
    pub eta_s: Option<f64>,
    /// Continue a run left unfinished (`squall run --resume`).
    pub resume: bool,
    /// The command's error output when it failed.
    pub error: Option<String>,
    #[serde(skip)]
    started: Option<Instant>,
    #[serde(skip)]
    cancel: bool,
}

#[derive(Default)]
pub struct Queue {
    jobs: tokio::sync::Mutex<Vec<Job>>,
    wake: tokio::sync::Notify,
}

impl Queue {
    pub async fn push(&self, name: String, resume: bool) -> Result<Job, ApiError> {
        let mut jobs = self.jobs.lock().await;
        if jobs.iter().any(|j| j.name == name && matches!(j.state, JobState::Queued | JobState::Running)) {
            return Err(ApiError::conflict(format!("`{name}` is already queued or running")));
        }
        let job = Job {
            id: jobs.len() as u64 + 1,
            name,
            state: JobState::Queued,
            total: 0,
            done: 0,
            elapsed_s: 0.0,
            eta_s: None,
            resume,
            error: None,
            started: None,
            cancel: false,
        };
        jobs.push(job.clone());
        self.wake.notify_one();
        Ok(job)
    }

    async fn next(&self) -> Job {
        loop {
            let notified = self.wake.notified();
            {
                let mut jobs = self.jobs.lock().await;
                if let Some(j) = jobs.iter_mut().find(|j| j.state == JobState::Queued) {
                    j.state = JobState::Running;
                    j.started = Some(Instant::now());
                    return j.clone();
                }
            }
            notified.await;
        }
    }

    async fn update(&self, id: u64, f: impl FnOnce(&mut Job)) {
        if let Some(j) = self.jobs.lock().await.iter_mut().find(|j| j.id == id) {
            f(j);
            if let Some(s) = j.started {
                j.elapsed_s = s.elapsed().as_secs_f64();
            }
            j.eta_s =
                (j.done > 0 && j.total >= j.done).then(|| j.elapsed_s / j.done as f64 * (j.total - j.done) as f64);
        }
    }

    async fn cancelled(&self, id: u64) -> bool {
        self.jobs.lock().await.iter().any(|j| j.id == id && j.cancel)
    }
}

/// Runs the queue's sets one after another, for ever.
pub async fn worker(app: Arc<AppState>) {
    loop {
        let job = app.queue.next().await;
        let outcome = run_one(&app, &job).await;
        app.queue
            .update(job.id, |j| match outcome {
                Ok(()) if j.cancel => j.state = JobState::Cancelled,
                Ok(()) => j.state = JobState::Done,
                Err(e) => {
                    j.state = if j.cancel { JobState::Cancelled } else { JobState::Failed };
                    j.error = Some(e);
                }
            })
            .await;
    }
}

/// (planned, finished) replications of results/NAME, from its files.
pub fn progress(out: &std::path::Path) -> (u64, u64) {
    let total = std::fs::read_to_string(out.join("experiment.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map_or(0, |m| runs_in_manifest(&m).len() as u64);
    let done =
        std::fs::read_to_string(out.join("runs.log")).map_or(0, |t| t.lines().filter(|l| !l.is_empty()).count()) as u64;
    (total, done)
}

/// Every (run directory, replication, seed) of an experiment.json.
pub fn runs_in_manifest(m: &serde_json::Value) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    for set in m["sets"].as_array().into_iter().flatten() {
        for point in set["points"].as_array().into_iter().flatten() {
            for run in point["runs"].as_array().into_iter().flatten() {
                let dir = run[2].as_str().unwrap_or_default().to_string();
                out.push((dir, run[0].as_u64().unwrap_or(0), run[1].as_u64().unwrap_or(0)));
            }
        }
    }
    out
}

async fn run_one(app: &AppState, job: &Job) -> Result<(), String> {
    let file = app.workspace.file(Kind::Experiment, &job.name).map_err(|e| e.message)?;
    let out = app.workspace.results_dir(&job.name).map_err(|e| e.message)?;
    // A set with engine `emu` waits for the emulator slot (an emulation
    // started from the Live tab ends first) and holds it to its end: its
    // replications run one at a time (`squall run` runs them so), each a
    // `squall emu` the Live tab lists and watches.
    let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read experiments/{}.toml: {e}", job.name))?;
    let _slot = match emulation_set(&job.name, &text).map_err(|e| e.message)? {
        Some(set) => Some(app.launcher.take(format!("set `{set}` of job {} (engine emu)", job.id)).await),
        None => None,
    };
    let mut cmd = tokio::process::Command::new(&app.squall);
    cmd.arg("run").arg(&file).arg("--out").arg(&out).arg("--jobs").arg(app.jobs.to_string());
    if job.resume {
        cmd.arg("--resume");
    }
    // Its own process group, so that a cancel reaches the `squall emu`
    // it runs as well: SIGTERM, on which `squall emu` removes its
    // namespaces and ends its workloads (docs/emulation.md).
    cmd.current_dir(app.workspace.root())
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", app.squall.display()))?;
    let group = child.id().map(|id| nix::unistd::Pid::from_raw(id as i32));
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let errors = tokio::spawn(async move {
        use tokio::io::AsyncReadExt as _;
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = tick.tick() => {
                let (total, done) = progress(&out);
                app.queue.update(job.id, |j| { j.total = total; j.done = done; }).await;
                if app.queue.cancelled(job.id).await
                    && let Some(group) = group
                {
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
                }
            }
        }
    };
    // What `squall run` started may outlive it (a cancelled `squall emu`
    // cleaning up): the slot is given back once the whole group is gone.
    if let Some(group) = group {
        let deadline = Instant::now() + GROUP_GRACE;
        while nix::sys::signal::killpg(group, None).is_ok() {
            if Instant::now() > deadline {
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let (total, done) = progress(&out);
    app.queue
        .update(job.id, |j| {
            j.total = total;
            j.done = done;
        })
        .await;
    let text = errors.await.unwrap_or_default();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => {
            let last: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let tail = last[last.len().saturating_sub(20)..].join("\n");
            Err(format!("`squall run experiments/{}.toml` failed ({s}):\n{tail}", job.name))
        }
        Err(e) => Err(format!("waiting for `squall run`: {e}")),
    }
}

pub async fn list(State(app): State<Arc<AppState>>) -> Json<Vec<Job>> {
    let mut jobs = app.queue.jobs.lock().await.clone();
    for j in &mut jobs {
        if let (JobState::Running, Some(s)) = (j.state, j.started) {
            j.elapsed_s = s.elapsed().as_secs_f64();
        }
    }
    Json(jobs)
}

pub async fn cancel(State(app): State<Arc<AppState>>, Path(id): Path<u64>) -> Result<Json<Job>, ApiError> {
    let mut jobs = app.queue.jobs.lock().await;
    let job = jobs.iter_mut().find(|j| j.id == id).ok_or_else(|| ApiError::not_found(format!("no job {id}")))?;
    match job.state {
        JobState::Queued => job.state = JobState::Cancelled,
        JobState::Running => job.cancel = true,
        s => return Err(ApiError::conflict(format!("job {id} is {s:?}, nothing to cancel").to_lowercase())),
    }
    Ok(Json(job.clone()))
}

/// A replication set to make: written as experiments/NAME.toml, then run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRequest {
    /// The experiment's (and results directory's) name.
    name: String,
    /// networks/NETWORK.toml
    network: String,
    /// workloads/WORKLOAD.toml; none: the network's own workload.
    #[serde(default)]
    workload: Option<String>,
    replications: u32,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default = "sim")]
    engine: String,
    /// Scenario keys set for every run (`--set` keys).
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
    /// Scenario key → the values it takes (a cartesian sweep).
    #[serde(default)]
    sweep: BTreeMap<String, Vec<toml::Value>>,
}

fn sim() -> String {
    "sim".into()
}

/// The experiment file of a set, as a person would write it.
pub fn experiment_text(r: &SetRequest) -> Result<String, toml::ser::Error> {
    let mut doc = toml::Table::new();
    doc.insert("name".into(), r.name.clone().into());
    let mut networks = toml::Table::new();
    networks.insert(r.network.clone(), format!("../networks/{}.toml", r.network).into());
    doc.insert("networks".into(), networks.into());
    if let Some(w) = &r.workload {
        let mut workloads = toml::Table::new();
        workloads.insert(w.clone(), format!("../workloads/{w}.toml").into());
        doc.insert("workloads".into(), workloads.into());
    }
    let mut set = toml::Table::new();
    set.insert("name".into(), r.name.clone().into());
    set.insert("networks".into(), toml::Value::Array(vec![r.network.clone().into()]));
    if let Some(w) = &r.workload {
        set.insert("workloads".into(), toml::Value::Array(vec![w.clone().into()]));
    }
    set.insert("engine".into(), r.engine.clone().into());
    set.insert("replications".into(), i64::from(r.replications).into());
    if let Some(seed) = r.seed {
        set.insert("seed".into(), toml::Value::Integer(seed as i64));
    }
    if !r.set.is_empty() {
        set.insert("set".into(), toml::Value::Table(r.set.clone().into_iter().collect()));
    }
    if !r.sweep.is_empty() {
        let sweep: toml::Table = r.sweep.iter().map(|(k, v)| (k.clone(), toml::Value::Array(v.clone()))).collect();
        set.insert("sweep".into(), toml::Value::Table(sweep));
    }
    doc.insert("sets".into(), toml::Value::Array(vec![toml::Value::Table(set)]));
    toml::to_string(&doc)
}

pub async fn create_set(
    State(app): State<Arc<AppState>>,
    JsonBody(r): JsonBody<SetRequest>,
) -> Result<(axum::http::StatusCode, Json<serde_json::Value>), ApiError> {
    check_name(&r.name)?;
    check_name(&r.network)?;
    if let Some(w) = &r.workload {
        check_name(w)?;
    }
    match r.engine.as_str() {
        "sim" => {}
        "emu" => need_root(&r.name)?,
        other => return Err(ApiError::bad_request(format!("engine `{other}`: expected \"sim\" or \"emu\""))),
    }
    if r.replications == 0 || r.replications > 100_000 {
        return Err(ApiError::bad_request(format!(
            "replications {}: expected 1 to 100000 (more: write the experiment file and use `squall run \
             --allow-many-runs`)",
            r.replications
        )));
    }
    if r.seed.is_some_and(|s| s > i64::MAX as u64) {
        return Err(ApiError::bad_request(format!("seed: expected at most {} (TOML integers are signed)", i64::MAX)));
    }
    for (what, kind, name) in
        [("network", Kind::Network, Some(&r.network)), ("workload", Kind::Workload, r.workload.as_ref())]
    {
        if let Some(name) = name
            && !app.workspace.file(kind, name)?.is_file()
        {
            return Err(ApiError::bad_request(format!("{what} `{name}`: no {}/{name}.toml", kind.dir())));
        }
    }
    let text = experiment_text(&r).map_err(|e| ApiError::internal(format!("cannot write the experiment: {e}")))?;
    let path = app.workspace.file(Kind::Experiment, &r.name)?;
    let out = app.workspace.results_dir(&r.name)?;
    {
        let _lock = app.write_lock.lock().await;
        if path.exists() {
            return Err(ApiError::conflict(format!(
                "experiments/{}.toml exists already: choose another name, or run it (POST /api/runs)",
                r.name
            )));
        }
        if out.exists() {
            return Err(ApiError::conflict(format!("results/{}/ exists already: choose another name", r.name)));
        }
        check_points(&app, &r, &text)?;
        write_atomic(&path, text.as_bytes())
            .map_err(|e| ApiError::internal(format!("cannot write experiments/{}.toml: {e}", r.name)))?;
    }
    let job = app.queue.push(r.name.clone(), false).await?;
    Ok((axum::http::StatusCode::CREATED, Json(serde_json::json!({ "job": job, "experiment": text }))))
}

/// Sweep points checked before a set is queued (a larger sweep is
/// checked at its first points; `squall run` checks the rest as it
/// starts).
const CHECKED_POINTS: usize = 1_000;

/// The experiment `text` checked as the command line reads it, then
/// every sweep point of its set resolved as `squall run` resolves it
/// (run_cmd.rs: the `set` and sweep keys applied to the network's text,
/// then parsed), so that a key the network lacks or a value it refuses is
/// a 400 naming it now, not a failed job later.
fn check_points(app: &AppState, r: &SetRequest, text: &str) -> Result<(), ApiError> {
    let file = format!("experiments/{}.toml", r.name);
    let experiment = squall_scenario::parse_experiment(&file, text).map_err(|e| {
        ApiError::bad_request(format!(
            "the set makes an invalid experiment: {}",
            crate::library::Problem::from(&e).report
        ))
    })?;
    let Some(set) = experiment.sets.first() else { return Ok(()) };
    let source = crate::library::scenario_source(app, &r.network, r.workload.as_deref())?;
    for point in set.points().take(CHECKED_POINTS) {
        let refused = |e: squall_scenario::ScenarioError| {
            let at: Vec<String> = point.params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let e = crate::library::located(e);
            let message = format!("sweep point {} ({}): {}", point.index, at.join(", "), e.message);
            ApiError { message, ..e }
        };
        set.scenario_at(&source.source, &source.text, &source.dir, &point).map_err(refused)?;
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// experiments/EXPERIMENT.toml, run into results/EXPERIMENT.
    experiment: String,
    /// Continue the replications a stopped run left (`squall run --resume`).
    #[serde(default)]
    resume: bool,
}

/// Queues an experiment file of the library (written by hand or by a set).
pub async fn run_experiment(
    State(app): State<Arc<AppState>>,
    JsonBody(r): JsonBody<RunRequest>,
) -> Result<(axum::http::StatusCode, Json<Job>), ApiError> {
    let name = check_name(&r.experiment)?.to_string();
    if !app.workspace.file(Kind::Experiment, &name)?.is_file() {
        return Err(ApiError::not_found(format!("no experiments/{name}.toml")));
    }
    let text = std::fs::read_to_string(app.workspace.file(Kind::Experiment, &name)?)
        .map_err(|e| ApiError::internal(format!("cannot read experiments/{name}.toml: {e}")))?;
    if let Some(set) = emulation_set(&name, &text)? {
        need_root(&set)?;
    }
    if !r.resume && app.workspace.results_dir(&name)?.exists() {
        return Err(ApiError::conflict(format!(
            "results/{name}/ exists already: send \"resume\": true to continue it"
        )));
    }
    Ok((axum::http::StatusCode::CREATED, Json(app.queue.push(name, r.resume).await?)))
}

/// How long a cancelled set's processes get to end (a `squall emu`
/// removing its namespaces) before they are killed.
const GROUP_GRACE: Duration = Duration::from_secs(30);

/// The first set of the experiment `text` with engine `emu`, if any. A
/// file that does not parse is refused with the command line's error.
fn emulation_set(name: &str, text: &str) -> Result<Option<String>, ApiError> {
    let file = format!("experiments/{name}.toml");
    let experiment = squall_scenario::parse_experiment(&file, text)
        .map_err(|e| ApiError::bad_request(format!("{file} is not a valid experiment: {e}")))?;
    Ok(experiment.sets.iter().find(|s| s.engine == squall_scenario::Engine::Emu).map(|s| s.name.clone()))
}

/// An emulation set needs the server to run as root (namespaces, TUN
/// devices), as starting an emulation does: 403 otherwise, nothing
/// written or queued.
fn need_root(set: &str) -> Result<(), ApiError> {
    if crate::live::running_as_root() {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "set `{set}` has engine emu: emulations need root (network namespaces, TUN devices); start `squall \
             serve` as root to run it, or `squall run` from a root shell"
        )))
    }
}

/// The squall binary the server runs sets with.
pub fn squall_binary(given: Option<PathBuf>) -> std::io::Result<PathBuf> {
    given.map_or_else(std::env::current_exe, Ok)
}
