//! Results: every `squall run` directory under results/ (found by
//! scanning, so a restarted server shows the runs it left), its summary
//! table (summary.csv), plots (plots/*.svg) and files to download.

use std::path::Path as FsPath;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::convert::Infallible;

use crate::AppState;
use crate::error::ApiError;
use crate::jobs::{progress, runs_in_manifest};

#[derive(Serialize)]
pub struct RunSummary {
    name: String,
    experiment: String,
    /// Each set with its engine, scenario, seeds.
    sets: Vec<serde_json::Value>,
    total: u64,
    done: u64,
    /// The report is written (summary.csv exists).
    complete: bool,
    /// When experiment.json was written, seconds since 1970.
    modified_unix: u64,
}

fn summary(name: &str, dir: &FsPath) -> Option<RunSummary> {
    let manifest_path = dir.join("experiment.json");
    let Some(text) = std::fs::read_to_string(&manifest_path).ok() else { return emulation_summary(name, dir) };
    let m: serde_json::Value = serde_json::from_str(&text).ok()?;
    let (total, done) = progress(dir);
    let sets = m["sets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let seeds: Vec<u64> = runs_in_manifest(&serde_json::json!({ "sets": [s] })).iter().map(|r| r.2).collect();
            serde_json::json!({
                "name": s["name"], "engine": s["engine"], "scenario": s["scenario"],
                "points": s["points"].as_array().map_or(0, Vec::len), "seeds": seeds,
            })
        })
        .collect();
    let modified_unix = std::fs::metadata(&manifest_path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    Some(RunSummary {
        name: name.to_string(),
        experiment: m["experiment"].as_str().unwrap_or_default().to_string(),
        sets,
        total,
        done,
        complete: dir.join("summary.csv").is_file(),
        modified_unix,
    })
}

/// A `squall emu --out` directory (an emulation started from the page):
/// the resolved scenario.toml it writes first, summary.json once done.
fn emulation_summary(name: &str, dir: &FsPath) -> Option<RunSummary> {
    let scenario_path = dir.join("scenario.toml");
    let scenario: toml::Table = std::fs::read_to_string(&scenario_path).ok()?.parse().ok()?;
    let seeds: Vec<u64> =
        scenario.get("seed").and_then(toml::Value::as_integer).map(|s| s as u64).into_iter().collect();
    let done = u64::from(dir.join("summary.json").is_file());
    let modified_unix = std::fs::metadata(&scenario_path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    Some(RunSummary {
        name: name.to_string(),
        experiment: "squall emu".into(),
        sets: vec![serde_json::json!({
            "name": name, "engine": "emu", "scenario": scenario.get("name").and_then(toml::Value::as_str),
            "points": 1, "seeds": seeds,
        })],
        total: 1,
        done,
        complete: done == 1,
        modified_unix,
    })
}

pub async fn list(State(app): State<Arc<AppState>>) -> Result<Json<Vec<RunSummary>>, ApiError> {
    let base = app.workspace.root().join("results");
    let mut out = Vec::new();
    for entry in
        std::fs::read_dir(&base).map_err(|e| ApiError::internal(format!("cannot list results/: {e}")))?.flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(dir) = app.workspace.results_dir(&name) else { continue };
        if let Some(s) = summary(&name, &dir) {
            out.push(s);
        }
    }
    out.sort_by(|a, b| b.modified_unix.cmp(&a.modified_unix).then(a.name.cmp(&b.name)));
    Ok(Json(out))
}

/// A CSV file as columns and rows of text.
fn table(path: &FsPath) -> Option<serde_json::Value> {
    let mut reader = csv::Reader::from_path(path).ok()?;
    let columns: Vec<String> = reader.headers().ok()?.iter().map(str::to_string).collect();
    let rows: Vec<Vec<String>> =
        reader.records().filter_map(Result::ok).map(|r| r.iter().map(str::to_string).collect()).collect();
    Some(serde_json::json!({ "columns": columns, "rows": rows }))
}

/// Every file below `dir` (relative paths), at most `limit`.
fn files(dir: &FsPath, limit: usize) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() && out.len() < limit {
                let rel = e.path().strip_prefix(dir).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
                if !rel.split('/').any(|c| c.starts_with('.')) {
                    out.push(serde_json::json!({ "path": rel, "size": meta.len() }));
                }
            }
        }
    }
    out.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    out
}

pub async fn show(
    State(app): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let dir = app.workspace.results_dir(&name)?;
    let s = summary(&name, &dir).ok_or_else(|| {
        ApiError::not_found(format!("results/{name}/ holds no experiment.json (nor a `squall emu` run)"))
    })?;
    let all = files(&dir, 10_000);
    let plots: Vec<&serde_json::Value> = all
        .iter()
        .filter(|f| f["path"].as_str().is_some_and(|p| p.starts_with("plots/") && p.ends_with(".svg")))
        .collect();
    Ok(Json(serde_json::json!({
        "run": s,
        "summary": table(&dir.join("summary.csv")),
        "results": table(&dir.join("results.csv")),
        "plots": plots,
        "files": all,
    })))
}

#[derive(Deserialize)]
pub struct FileQuery {
    /// Send as an attachment (the browser saves it).
    #[serde(default)]
    download: Option<String>,
}

pub async fn file(
    State(app): State<Arc<AppState>>,
    Path((name, path)): Path<(String, String)>,
    Query(q): Query<FileQuery>,
) -> Result<Response, ApiError> {
    let real = app.workspace.result_file(&name, &path)?;
    let bytes =
        std::fs::read(&real).map_err(|e| ApiError::internal(format!("cannot read results/{name}/{path}: {e}")))?;
    let ext = real.extension().and_then(|e| e.to_str()).unwrap_or_default();
    let mime = match ext {
        "svg" => "image/svg+xml",
        "html" => "text/html; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "json" => "application/json",
        "toml" | "log" | "txt" => "text/plain; charset=utf-8",
        "pcap" => "application/vnd.tcpdump.pcap",
        "png" => "image/png",
        _ => "application/octet-stream",
    };
    let mut r = bytes.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    // A result's files are data: no script of theirs runs with the
    // page's rights.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"),
    );
    if q.download.is_some() {
        let file = real.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let file: String = file.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')).collect();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{file}\"")) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
    }
    Ok(r)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayQuery {
    /// The run's directory inside the result (`rep-0`, or a `squall run`
    /// run's directory), holding its events.csv.
    run: String,
    /// Seconds of the run per second of replay (default 1).
    #[serde(default = "one")]
    speed: f64,
}

fn one() -> f64 {
    1.0
}

/// The fastest replay: a run's hour in under four seconds.
pub const MAX_SPEED: f64 = 1000.0;

/// Lines the replay reads ahead of the page.
const REPLAY_AHEAD: usize = 8;

/// `GET /api/results/{name}/replay?run=DIR&speed=S`: a finished run
/// (simulated or emulated) replayed from its events.csv as Server-Sent
/// Events shaped as `squall ctl watch`'s lines (squall-analysis
/// `replay`), a line every 200 ms of the run's time, sent every 200 ms /
/// S of wall-clock time; the last line is `{"end": ...}`. The page's live
/// view draws it as it draws a running emulation. Refused: a bad speed
/// (400), a run without events.csv or a result without its resolved
/// scenario (404), a path out of the result (400).
pub async fn replay(
    State(app): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(q): Query<ReplayQuery>,
) -> Result<Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    if !(q.speed.is_finite() && q.speed > 0.0 && q.speed <= MAX_SPEED) {
        return Err(ApiError::bad_request(format!(
            "speed {}: expected more than 0 and at most {MAX_SPEED} (seconds of the run per second)",
            q.speed
        )));
    }
    let events = app.workspace.result_file(&name, &format!("{}/events.csv", q.run))?;
    let dir = events.parent().map(FsPath::to_path_buf).unwrap_or_default();
    let scenario = resolved_scenario(&app, &name, &q.run)
        .ok_or_else(|| ApiError::not_found(format!("results/{name}: no resolved scenario for {}", q.run)))?;
    let interval = squall_emu::engine::watch::INTERVAL.as_secs_f64();
    let replay = squall_analysis::replay::Replay::open(&dir, &scenario, interval)
        .map_err(|e| ApiError::bad_request(format!("results/{name}/{}: {e}", q.run)))?;
    let (tx, rx) = tokio::sync::mpsc::channel::<serde_json::Value>(REPLAY_AHEAD);
    tokio::task::spawn_blocking(move || {
        let mut previous: Option<serde_json::Value> = None;
        for sample in replay {
            let line = match sample {
                Ok(sample) => {
                    let line = squall_emu::engine::watch::line(previous.as_ref(), &sample);
                    previous = Some(sample);
                    line
                }
                Err(e) => serde_json::json!({ "end": e.to_string() }),
            };
            // The page left: stop reading.
            if tx.blocking_send(line).is_err() {
                return;
            }
        }
        let _ = tx.blocking_send(serde_json::json!({ "end": "the replay ended" }));
    });
    let start = tokio::time::Instant::now();
    let speed = q.speed;
    let stream = futures_util::stream::unfold(rx, move |mut rx| async move {
        let line = rx.recv().await?;
        if let Some(t) = line["time"].as_f64() {
            tokio::time::sleep_until(start + std::time::Duration::from_secs_f64(t / speed)).await;
        }
        Some((Ok(Event::default().data(line.to_string())), rx))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The resolved scenario of run `run` of result `name`, as JSON: the
/// point's scenario in experiment.json for a `squall run` directory, or
/// summary.json's `resolved_scenario` for a `squall sim` or `squall emu`
/// one.
fn resolved_scenario(app: &AppState, name: &str, run: &str) -> Option<serde_json::Value> {
    let read = |relative: &str| -> Option<serde_json::Value> {
        let file = app.workspace.result_file(name, relative).ok()?;
        serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
    };
    if let Some(m) = read("experiment.json") {
        let points = m["sets"].as_array()?.iter().flat_map(|s| s["points"].as_array().into_iter().flatten());
        for point in points {
            if point["runs"].as_array().into_iter().flatten().any(|r| r[2].as_str() == Some(run)) {
                let scenario: toml::Value = toml::from_str(point["scenario"].as_str()?).ok()?;
                return serde_json::to_value(scenario).ok();
            }
        }
        return None;
    }
    read("summary.json").map(|s| s["resolved_scenario"].clone()).filter(serde_json::Value::is_object)
}
