//! Running emulations, seen and changed through their control sockets
//! (issue 32's live view), as `squall ctl` does: the server is one more
//! client of the socket, never of the data plane (docs/design.md, "the
//! control tool is a client of the same library").
//!
//! - `GET /api/emulations`: the runs `squall ctl list` finds.
//! - `GET /api/emulations/{id}/watch`: the `squall ctl watch` lines as
//!   Server-Sent Events (one `data:` line each, WHATWG HTML §9.2), until
//!   the run ends or the browser leaves.
//! - `POST /api/emulations/{id}/state`: `squall ctl state ID NAME`.
//! - `POST /api/emulations/{id}/blackout`: `squall ctl blackout ID on|off`.
//! - `POST /api/emulations/{id}/background`: `squall ctl background`.
//! - `POST /api/emulations`: starts an emulation of a workspace network
//!   (and workload) as a `squall emu` child process into results/NAME,
//!   the way sets run `squall run` ([`start`]); one at a time.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use serde::{Deserialize, Serialize};
use squall_emu::control::{self, Request};
use squall_emu::naming::RunId;

use crate::error::ApiError;
use crate::workspace::check_name;
use crate::{AppState, JsonBody};

/// Lines held for one browser before newer ones are dropped (the socket
/// side drops too: a slow page never holds up the emulation).
const BROWSER_LINES: usize = 16;

/// The run `id` if it is running, else 404.
fn running(id: u32) -> Result<RunId, ApiError> {
    let run = RunId(id);
    if control::list().contains(&run) {
        Ok(run)
    } else {
        Err(ApiError::not_found(format!("no running emulation {id}: GET /api/emulations lists them")))
    }
}

/// The running emulations; the one this server started last is listed
/// too while it starts (before its control socket answers) and after it
/// ended (with how), marked by its `launch`.
pub async fn list(State(app): State<Arc<AppState>>) -> Result<Json<Vec<serde_json::Value>>, ApiError> {
    let launch = app.launcher.current.lock().await.clone();
    let runs = tokio::task::spawn_blocking(move || {
        let mut runs: Vec<serde_json::Value> = control::list()
            .into_iter()
            .map(|id| {
                let mut run = match control::request(id, &Request::Info) {
                    Ok(info) => serde_json::json!({ "id": id.0, "info": info }),
                    Err(e) => serde_json::json!({ "id": id.0, "error": e.to_string() }),
                };
                if let Some(l) = launch.as_ref().filter(|l| l.id == id.0) {
                    run["launch"] = serde_json::json!(l);
                }
                run
            })
            .collect();
        if let Some(l) = launch
            && !runs.iter().any(|r| r["id"] == l.id)
        {
            runs.push(serde_json::json!({ "id": l.id, "launch": l }));
        }
        runs
    })
    .await
    .map_err(|e| ApiError::internal(format!("listing emulations: {e}")))?;
    Ok(Json(runs))
}

/// The runs being watched: one subscription to each run's control socket
/// (`squall ctl watch`), its lines broadcast to every page watching it,
/// so that N open pages cost the emulator one watcher, not N (each
/// watcher of the control socket is a writer thread in the emulator,
/// beside its data plane). A page that reads slowly loses lines, as it
/// did with a socket of its own; the last page gone ends the
/// subscription.
#[derive(Default)]
pub struct Watches {
    runs: std::sync::Mutex<std::collections::HashMap<u32, tokio::sync::broadcast::Sender<Arc<str>>>>,
}

impl Watches {
    fn subscribe(self: &Arc<Self>, run: RunId) -> tokio::sync::broadcast::Receiver<Arc<str>> {
        let mut runs = self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A subscription whose pages have all gone ends at its next line:
        // a new page starts a new one.
        if let Some(tx) = runs.get(&run.0).filter(|tx| tx.receiver_count() > 0) {
            return tx.subscribe();
        }
        let (tx, rx) = tokio::sync::broadcast::channel(BROWSER_LINES);
        runs.insert(run.0, tx.clone());
        let watches = self.clone();
        tokio::task::spawn_blocking(move || {
            let end = control::watch(run, |line| tx.send(Arc::from(line.to_string())).is_ok());
            let last = match end {
                Ok(()) => serde_json::json!({ "end": "the run ended" }),
                Err(e) => serde_json::json!({ "end": e.to_string() }),
            };
            let _ = tx.send(Arc::from(last.to_string()));
            let mut runs = watches.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if runs.get(&run.0).is_some_and(|t| t.same_channel(&tx)) {
                runs.remove(&run.0);
            }
        });
        rx
    }
}

pub async fn watch(
    State(app): State<Arc<AppState>>,
    Path(id): Path<u32>,
) -> Result<Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let run = running(id)?;
    let receiver = app.watches.subscribe(run);
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(line) => return Some((Ok(Event::default().data(&*line)), receiver)),
                // This page fell behind: the lines it missed are lost.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateRequest {
    /// A `[[states]]` name of the run's scenario.
    name: String,
}

/// Enters a state now, as `squall ctl state` does (logged in the run's
/// events.csv with its time by the emulator).
pub async fn enter_state(
    State(_): State<Arc<AppState>>,
    Path(id): Path<u32>,
    JsonBody(r): JsonBody<StateRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let run = running(id)?;
    ask(id, run, Request::State { name: r.name }).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackoutRequest {
    /// Start (true) or end (false) the blackout.
    on: bool,
    /// `hold` (packets wait, the default) or `drop` (seed 000 §3).
    #[serde(default)]
    mode: Option<squall_link::BlackoutMode>,
    /// `both` (the default), `downlink` or `uplink`.
    #[serde(default)]
    direction: Option<squall_scenario::BlackoutDirection>,
}

/// Starts or ends a blackout now, as `squall ctl blackout ID on|off` does
/// (logged in events.csv as blackout_start/blackout_end by the emulator).
pub async fn blackout(
    State(_): State<Arc<AppState>>,
    Path(id): Path<u32>,
    JsonBody(r): JsonBody<BlackoutRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let run = running(id)?;
    let request = Request::Blackout {
        on: r.on,
        mode: r.mode.unwrap_or(squall_link::BlackoutMode::Hold),
        direction: r.direction.unwrap_or(squall_scenario::BlackoutDirection::Both),
    };
    ask(id, run, request).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundRequest {
    /// The stage's name.
    stage: String,
    /// The generator's `name` in the stage's `background`.
    generator: String,
    /// `"start"`, `"stop"` or `{"rate": "2 Mbit/s"}`.
    action: squall_emu::dataplane::BackgroundAction,
}

/// Starts, stops or re-rates one background generator of a stage now, as
/// `squall ctl background` does (seed 003 §2.2).
pub async fn background(
    State(_): State<Arc<AppState>>,
    Path(id): Path<u32>,
    JsonBody(r): JsonBody<BackgroundRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let run = running(id)?;
    ask(id, run, Request::Background { stage: r.stage, generator: r.generator, action: r.action }).await
}

/// One request on the run's control socket; the data plane's refusal
/// (no such stage, state or generator) is 400 with its message.
async fn ask(id: u32, run: RunId, request: Request) -> Result<Json<serde_json::Value>, ApiError> {
    tokio::task::spawn_blocking(move || control::request(run, &request))
        .await
        .map_err(|e| ApiError::internal(format!("emulation {id}: {e}")))?
        .map(Json)
        .map_err(|e| ApiError::bad_request(format!("emulation {id}: {e}")))
}

/// The longest emulation the page starts, seconds (a longer one: `squall
/// emu` from a root shell).
pub const MAX_DURATION_S: f64 = 600.0;

/// The emulation this server started, if any, and the one emulator
/// slot: one emulation at a time, whether started from the Live tab or
/// by a replication set with engine `emu` (each holds the slot until its
/// last `squall emu` has ended), so that two runs never share the CPU
/// that keeps their departure times.
#[derive(Default)]
pub struct Launcher {
    current: tokio::sync::Mutex<Option<Launch>>,
    slot: Arc<tokio::sync::Mutex<()>>,
    /// What holds the slot, for the refusal's message.
    holder: std::sync::Mutex<String>,
}

/// The emulator slot, held while an emulation (or an emulation set) runs.
pub struct SlotGuard(#[allow(dead_code)] tokio::sync::OwnedMutexGuard<()>);

impl Launcher {
    /// The slot now, or a 409 naming what holds it.
    pub(crate) fn try_take(&self, holder: String) -> Result<SlotGuard, ApiError> {
        let guard = self.slot.clone().try_lock_owned().map_err(|_| {
            let by = self.holder.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            ApiError::conflict(format!("{by} is still running; one at a time: start this one when it has ended"))
        })?;
        *self.holder.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = holder;
        Ok(SlotGuard(guard))
    }

    /// The slot, once whatever holds it has ended.
    pub async fn take(&self, holder: String) -> SlotGuard {
        let guard = self.slot.clone().lock_owned().await;
        *self.holder.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = holder;
        SlotGuard(guard)
    }
}

/// Where an emulation started from the page is.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LaunchState {
    /// `squall emu` runs (its control socket may not answer yet).
    Running,
    /// It ended successfully; its files are in results/NAME.
    Done,
    Failed,
}

#[derive(Clone, Debug, Serialize)]
pub struct Launch {
    /// The `squall emu` process's id, which is its run id (`squall ctl`).
    pub id: u32,
    /// results/NAME
    pub name: String,
    pub network: String,
    pub workload: Option<String>,
    pub duration_s: f64,
    pub state: LaunchState,
    /// The last lines of its error output when it failed.
    pub error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    /// The results directory's name, results/NAME.
    name: String,
    /// networks/NETWORK.toml
    network: String,
    /// workloads/WORKLOAD.toml in place of the network's own `[workload]`.
    #[serde(default)]
    workload: Option<String>,
    /// How long it runs, seconds (default 20).
    #[serde(default = "twenty")]
    duration_s: f64,
}

fn twenty() -> f64 {
    20.0
}

/// What this server is and may do: its version, its workspace, and
/// whether it runs as root (emulations need it; the page disables their
/// actions otherwise and says why).
pub async fn server(State(app): State<Arc<AppState>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "workspace": app.workspace.root(),
        "root": running_as_root(),
    }))
}

/// Whether this process runs as root: /proc/self belongs to the
/// process's effective user (proc(5), "/proc/pid").
pub(crate) fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The scenario of `network` (with `workload` in place of its own), read
/// and checked as the command line does, and written back as TOML for
/// `squall emu`, as `squall run` hands an emulation its scenario
/// (run_cmd.rs `emulate`). A fault is 400 with the located report.
fn resolved_scenario(app: &AppState, network: &str, workload: Option<&str>) -> Result<String, ApiError> {
    let text = crate::library::scenario_source(app, network, workload)?;
    let scenario = squall_scenario::parse(&text.source, &text.text, &text.dir).map_err(crate::library::located)?;
    toml::to_string(&scenario).map_err(|e| ApiError::internal(format!("cannot write the resolved scenario: {e}")))
}

/// Starts an emulation of a workspace scenario: `squall emu SCENARIO
/// --out results/NAME --duration D` in a child process (the server's own
/// binary, as sets run `squall run`), so its results are the command
/// line's, byte for byte. Refused (nothing started, nothing written):
/// a bad name or scenario (400, with the located error), a server not
/// running as root (403: namespaces need it), results/NAME taken or an
/// emulation of this server still running (409).
pub async fn start(
    State(app): State<Arc<AppState>>,
    JsonBody(r): JsonBody<StartRequest>,
) -> Result<(axum::http::StatusCode, Json<Launch>), ApiError> {
    let name = check_name(&r.name)?.to_string();
    let network = check_name(&r.network)?.to_string();
    let workload = r.workload.as_deref().map(check_name).transpose()?.map(str::to_string);
    if !(r.duration_s.is_finite() && (1.0..=MAX_DURATION_S).contains(&r.duration_s)) {
        return Err(ApiError::bad_request(format!(
            "duration_s {}: expected 1 to {MAX_DURATION_S} seconds (longer: `squall emu` from a root shell)",
            r.duration_s
        )));
    }
    let scenario = resolved_scenario(&app, &network, workload.as_deref())?;
    if !running_as_root() {
        return Err(ApiError::forbidden(
            "emulations need root (network namespaces, TUN devices): start `squall serve` as root to start them \
             from the page",
        ));
    }
    let mut current = app.launcher.current.lock().await;
    let out = app.workspace.results_dir(&name)?;
    if out.exists() {
        return Err(ApiError::conflict(format!("results/{name}/ exists already: choose another name")));
    }
    let slot = app.launcher.try_take(format!("emulation `{name}`"))?;
    // The resolved scenario is read by `squall emu` (which writes its own
    // copy to results/NAME/scenario.toml) and removed when it ends. Its
    // error output goes to a file, not a pipe, so that the run outlives
    // the server (closing the page or stopping the server never stops a
    // run), and is kept as results/NAME/squall-emu.log.
    let temp = |ext: &str| std::env::temp_dir().join(format!("squall-serve-{}-{name}.{ext}", std::process::id()));
    let (input, log) = (temp("toml"), temp("log"));
    let log_file = std::fs::write(&input, scenario)
        .and_then(|()| std::fs::File::create(&log))
        .map_err(|e| ApiError::internal(format!("cannot write {}: {e}", input.display())))?;
    let mut cmd = tokio::process::Command::new(&app.squall);
    cmd.arg("emu")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .arg("--duration")
        .arg(format!("{} s", r.duration_s))
        .current_dir(app.workspace.root())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log_file);
    let mut child = cmd.spawn().map_err(|e| {
        let _ = std::fs::remove_file(&input);
        ApiError::internal(format!("cannot start {} emu: {e}", app.squall.display()))
    })?;
    let id = child.id().ok_or_else(|| ApiError::internal("`squall emu` ended before it could be watched"))?;
    let launch = Launch {
        id,
        name: name.clone(),
        network,
        workload,
        duration_s: r.duration_s,
        state: LaunchState::Running,
        error: None,
    };
    *app.launcher.holder.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
        format!("emulation `{name}` (run {id})");
    *current = Some(launch.clone());
    let app_for_end = app.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&input);
        if out.is_dir() && std::fs::write(out.join("squall-emu.log"), &text).is_ok() {
            let _ = std::fs::remove_file(&log);
        }
        let outcome = match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => {
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                let tail = lines[lines.len().saturating_sub(20)..].join("\n");
                Err(format!("`squall emu` of `{name}` failed ({s}):\n{tail}"))
            }
            Err(e) => Err(format!("waiting for `squall emu`: {e}")),
        };
        if let Some(l) = app_for_end.launcher.current.lock().await.as_mut().filter(|l| l.id == id) {
            match outcome {
                Ok(()) => l.state = LaunchState::Done,
                Err(e) => {
                    l.state = LaunchState::Failed;
                    l.error = Some(e);
                }
            }
        }
        drop(slot);
    });
    Ok((axum::http::StatusCode::CREATED, Json(launch)))
}
