//! The library: network, workload and experiment files listed, read,
//! written (with If-Match, RFC 9110 §13.1.1, so that two editors never
//! lose an edit silently) and deleted; texts checked with the command
//! line's own located errors; built-in scenarios as templates.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use squall_scenario::{ConfigText, ScenarioError};

use crate::error::ApiError;
use crate::workspace::{Kind, etag, write_atomic};
use crate::{AppState, JsonBody};

/// A built-in scenario offered as a template (`squall scenarios`).
#[derive(Clone, Debug)]
pub struct Template {
    pub name: String,
    pub summary: String,
    pub text: String,
}

#[derive(Serialize)]
pub struct FileEntry {
    name: String,
    etag: String,
    size: u64,
    modified_unix: u64,
}

fn modified_unix(meta: &std::fs::Metadata) -> u64 {
    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs())
}

pub async fn list(
    State(app): State<Arc<AppState>>,
    Path(kind): Path<String>,
) -> Result<Json<Vec<FileEntry>>, ApiError> {
    let kind = Kind::parse(&kind)?;
    let dir = app.workspace.kind_dir(kind)?;
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(&dir).map_err(|e| ApiError::internal(format!("cannot list {}/: {e}", kind.dir())))?;
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".toml") else { continue };
        // Only what the API could name, and links only into the workspace.
        let Ok(path) = app.workspace.file(kind, name) else { continue };
        let (Ok(bytes), Ok(meta)) = (std::fs::read(&path), std::fs::metadata(&path)) else { continue };
        out.push(FileEntry {
            name: name.to_string(),
            etag: etag(&bytes),
            size: meta.len(),
            modified_unix: modified_unix(&meta),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(out))
}

#[derive(Serialize)]
struct FileText {
    name: String,
    text: String,
    etag: String,
    problems: Vec<Problem>,
}

fn with_etag(etag: &str, body: impl IntoResponse) -> Response {
    let mut r = body.into_response();
    if let Ok(v) = HeaderValue::from_str(etag) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

pub async fn read(
    State(app): State<Arc<AppState>>,
    Path((kind, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let kind = Kind::parse(&kind)?;
    let path = app.workspace.file(kind, &name)?;
    let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ApiError::not_found(format!("{}/{name}.toml does not exist", kind.dir())),
        _ => ApiError::internal(format!("cannot read {}/{name}.toml: {e}", kind.dir())),
    })?;
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| ApiError::bad_request(format!("{}/{name}.toml is not UTF-8 text", kind.dir())))?;
    let tag = etag(&bytes);
    let problems = check(&app, kind, &format!("{}/{name}.toml", kind.dir()), &text);
    Ok(with_etag(
        &tag.clone(),
        Json(FileText { name: name.trim_end_matches(".toml").into(), text, etag: tag, problems }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBody {
    /// The file's whole new text.
    text: String,
}

/// PUT: creates the file (`If-None-Match: *`, or no precondition when it
/// does not exist) or replaces it (`If-Match: ETAG` of the text the
/// editor started from). A stale or missing precondition on an existing
/// file is 409 with the file's current etag: nothing is written.
pub async fn write(
    State(app): State<Arc<AppState>>,
    Path((kind, name)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<WriteBody>,
) -> Result<Response, ApiError> {
    let kind = Kind::parse(&kind)?;
    let path = app.workspace.file(kind, &name)?;
    let shown = format!("{}/{}.toml", kind.dir(), name.trim_end_matches(".toml"));
    let if_match = headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok());
    let if_none = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok());
    let _lock = app.write_lock.lock().await;
    let current = std::fs::read(&path).ok().map(|b| etag(&b));
    match (&current, if_match, if_none) {
        (Some(cur), _, Some("*")) => {
            return Err(ApiError::conflict(format!("{shown} already exists; load it and send If-Match with its etag"))
                .with(serde_json::json!({ "etag": cur })));
        }
        (Some(cur), Some(m), _) if m != cur && m != "*" => {
            return Err(ApiError::conflict(format!(
                "{shown} was changed by someone else since you loaded it (your version {m}, now {cur}); \
                 reload it and apply your edit again: nothing was written"
            ))
            .with(serde_json::json!({ "etag": cur })));
        }
        (Some(cur), None, _) => {
            return Err(ApiError::conflict(format!(
                "{shown} exists; send If-Match with the etag of the version you edited so that no one's edit is \
                 lost: nothing was written"
            ))
            .with(serde_json::json!({ "etag": cur })));
        }
        (None, Some(m), _) if m != "*" => {
            return Err(ApiError::conflict(format!("{shown} was deleted since you loaded it: nothing was written")));
        }
        _ => {}
    }
    write_atomic(&path, body.text.as_bytes()).map_err(|e| ApiError::internal(format!("cannot write {shown}: {e}")))?;
    let tag = etag(body.text.as_bytes());
    let problems = check(&app, kind, &shown, &body.text);
    let status = if current.is_some() { axum::http::StatusCode::OK } else { axum::http::StatusCode::CREATED };
    let name = name.trim_end_matches(".toml").to_string();
    Ok(with_etag(&tag.clone(), (status, Json(FileText { name, text: body.text, etag: tag, problems }))))
}

pub async fn delete(
    State(app): State<Arc<AppState>>,
    Path((kind, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let kind = Kind::parse(&kind)?;
    let path = app.workspace.file(kind, &name)?;
    let shown = format!("{}/{}.toml", kind.dir(), name.trim_end_matches(".toml"));
    let _lock = app.write_lock.lock().await;
    let Ok(bytes) = std::fs::read(&path) else { return Err(ApiError::not_found(format!("{shown} does not exist"))) };
    let cur = etag(&bytes);
    if let Some(m) = headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok())
        && m != cur
        && m != "*"
    {
        return Err(ApiError::conflict(format!("{shown} was changed since you loaded it: not deleted"))
            .with(serde_json::json!({ "etag": cur })));
    }
    std::fs::remove_file(&path).map_err(|e| ApiError::internal(format!("cannot delete {shown}: {e}")))?;
    Ok(axum::http::StatusCode::NO_CONTENT.into_response())
}

/// A located error of a file's text, as the command line reports it.
#[derive(Serialize, Debug)]
pub struct Problem {
    pub file: String,
    /// 1-based line and column (characters) of the offending key or value.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Key path like `links[0].downlink[0].rate`; empty for syntax errors.
    pub key: String,
    pub message: String,
    /// The command line's whole report (with the underlined source line).
    pub report: String,
}

impl From<&ScenarioError> for Problem {
    fn from(e: &ScenarioError) -> Self {
        Problem {
            file: e.file().to_string(),
            line: e.line(),
            column: e.column(),
            key: e.key_path().to_string(),
            message: e.reason().to_string(),
            report: format!("{e:?}"),
        }
    }
}

/// Checks `text` as a file of `kind` would be checked by the command
/// line: a network with squall_scenario::parse (paths read from
/// networks/), a workload with check_workload, an experiment with
/// parse_experiment.
pub fn check(app: &AppState, kind: Kind, source: &str, text: &str) -> Vec<Problem> {
    let dir = app.workspace.root().join(kind.dir());
    let result = match kind {
        Kind::Network => squall_scenario::parse(source, text, &dir).map(|_| ()),
        Kind::Workload => squall_scenario::check_workload(&ConfigText {
            source: source.to_string(),
            text: text.to_string(),
            dir: dir.clone(),
        }),
        Kind::Experiment => squall_scenario::parse_experiment(source, text).map(|_| ()),
    };
    match result {
        Ok(()) => Vec::new(),
        Err(e) => vec![Problem::from(&e)],
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateBody {
    /// networks, workloads or experiments.
    kind: String,
    text: String,
    /// The file name shown in the errors (default: `<kind>/untitled.toml`).
    #[serde(default)]
    name: Option<String>,
}

pub async fn validate(
    State(app): State<Arc<AppState>>,
    JsonBody(body): JsonBody<ValidateBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let kind = Kind::parse(&body.kind)?;
    let name = match &body.name {
        Some(n) => crate::workspace::check_name(n)?.to_string(),
        None => "untitled".into(),
    };
    let problems = check(&app, kind, &format!("{}/{name}.toml", kind.dir()), &body.text);
    Ok(Json(serde_json::json!({ "ok": problems.is_empty(), "problems": problems })))
}

/// The `[workload]` table of a scenario's text as a workload file's text
/// (with the scenario's description), or None if it has none.
pub fn workload_of(text: &str) -> Option<String> {
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    let workload = doc.get("workload")?.clone();
    let mut out = toml_edit::DocumentMut::new();
    out.insert("workload", workload);
    Some(out.to_string())
}

pub async fn templates(State(app): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let list: Vec<_> = app
        .templates
        .iter()
        .map(|t| serde_json::json!({ "name": t.name, "summary": t.summary, "has_workload": workload_of(&t.text).is_some() }))
        .collect();
    Json(serde_json::Value::Array(list))
}

/// A template's texts: `network` is the built-in scenario's file as it
/// is (its own workload is replaced when it joins a workload), `workload`
/// its `[workload]` table alone.
pub async fn template(
    State(app): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let name = name.trim_start_matches("builtin:");
    let t =
        app.templates.iter().find(|t| t.name == name).ok_or_else(|| {
            ApiError::not_found(format!("no built-in scenario `{name}`; GET /api/templates lists them"))
        })?;
    Ok(Json(serde_json::json!({
        "name": t.name, "summary": t.summary, "network": t.text, "workload": workload_of(&t.text),
    })))
}

/// The scenario text of `network` with `workload` in place of its own
/// (composed as `squall run` composes a set's network and workload), read
/// from the workspace. A missing file is 400; a fault is 400 with the
/// located report.
pub(crate) fn scenario_source(app: &AppState, network: &str, workload: Option<&str>) -> Result<ConfigText, ApiError> {
    let read = |kind: Kind, name: &str| -> Result<ConfigText, ApiError> {
        let path = app.workspace.file(kind, name)?;
        let shown = format!("{}/{name}.toml", kind.dir());
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ApiError::bad_request(format!("{} `{name}`: no {shown}", kind.dir().trim_end_matches('s')))
            } else {
                ApiError::internal(format!("cannot read {shown}: {e}"))
            }
        })?;
        Ok(ConfigText { source: shown, text, dir: app.workspace.root().join(kind.dir()) })
    };
    let net = read(Kind::Network, network)?;
    match workload {
        Some(w) => squall_scenario::compose(&net, &read(Kind::Workload, w)?).map_err(located),
        None => Ok(net),
    }
}

/// A scenario error as 400 with its located report.
pub(crate) fn located(e: squall_scenario::ScenarioError) -> ApiError {
    let p = Problem::from(&e);
    ApiError::bad_request(format!("{}: {}", p.file, p.report)).with(serde_json::json!({ "problems": [p] }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn workload_of_a_scenario_is_its_workload_table() {
        let text = "name = \"x\"\n[[links]]\nbetween = [\"a\", \"b\"]\n[[workload.udp]]\nname = \"u\"\n";
        let w = super::workload_of(text).unwrap();
        let parsed: toml::Table = w.parse().unwrap();
        assert_eq!(parsed.keys().collect::<Vec<_>>(), ["workload"]);
        assert_eq!(parsed["workload"]["udp"][0]["name"].as_str(), Some("u"));
        assert!(super::workload_of("name = \"x\"").is_none());
    }
}
