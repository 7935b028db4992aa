//! `squall serve`: the control tool (issue 32; Seawind's Control Tool,
//! seed 000 §4.1). An HTTP server with a JSON API and a page embedded in
//! the binary (no JavaScript toolchain, works offline), over a workspace
//! of the same files the command line reads and writes
//! ([`workspace`]): networks and workloads edited with the command
//! line's located errors, combined into replication sets run unattended
//! by `squall run`, and their results browsed; running emulations are
//! watched and switched through their control sockets ([`live`]).
//!
//! Security ([`security`]): loopback by default, a random token in the
//! printed URL, Host and Origin checks, bounded request bodies, paths
//! confined to the workspace, If-Match on every edit.

pub mod error;
mod form;
pub mod jobs;
pub mod library;
pub mod live;
mod openapi;
pub mod results;
pub mod security;
pub mod workspace;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};

pub use error::{ApiError, ServeError};
pub use library::Template;
use security::Guard;
use workspace::Workspace;

/// Request bodies larger than this are refused with 413 (a scenario file
/// is a few kilobytes; squall_scenario reads files of at most
/// MAX_TEXT_FILE).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// What `squall serve` was asked for.
#[derive(Clone, Debug)]
pub struct Config {
    pub workspace: PathBuf,
    pub bind: IpAddr,
    /// 0: any free port.
    pub port: u16,
    pub allow_remote: bool,
    /// Threads a simulation set's replications run on.
    pub jobs: usize,
    /// The squall binary that runs sets (the server's own by default).
    pub squall: Option<PathBuf>,
    pub templates: Vec<Template>,
}

pub struct AppState {
    pub workspace: Workspace,
    pub templates: Vec<Template>,
    pub queue: jobs::Queue,
    pub squall: PathBuf,
    pub jobs: usize,
    /// Held around every check-then-write of a file, so two edits of one
    /// version cannot both pass their If-Match.
    pub write_lock: tokio::sync::Mutex<()>,
    /// The emulation started from the page (one at a time).
    pub launcher: live::Launcher,
    /// One control-socket subscription per watched run, shared by its pages.
    pub watches: Arc<live::Watches>,
}

/// A JSON request body: any fault (not JSON, a missing or unknown field, a
/// wrong type) is 400 with serde's located message; nothing is done.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(IntoResponse::into_response)?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::bad_request(format!("request body: {e}; expected a JSON object as /api/openapi.json describes"))
                .into_response()
        })
    }
}

const INDEX: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/style.css");

async fn index(State(guard): State<Arc<Guard>>, request: Request) -> Response {
    let from_query = guard.query_token_ok(request.uri().query());
    if !from_query && !guard.has_token(request.headers()) {
        return (
            StatusCode::UNAUTHORIZED,
            Html(
                "<!doctype html><title>squall serve</title><p>Open the address <code>squall serve</code> printed, \
                  with its <code>?token=…</code>.",
            ),
        )
            .into_response();
    }
    let mut r = Html(INDEX).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if from_query && let Ok(v) = HeaderValue::from_str(&guard.set_cookie()) {
        h.insert(header::SET_COOKIE, v);
    }
    r
}

fn asset(mime: &'static str, text: &'static str) -> Response {
    ([(header::CONTENT_TYPE, mime)], text).into_response()
}

async fn no_route(request: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route {} {}: /api/openapi.json lists the API",
        request.method(),
        request.uri().path()
    ))
    .with(serde_json::json!({ "code": "no_route" }))
}

/// The whole application: page, API and the guard in front of both.
pub fn router(app: Arc<AppState>, guard: Arc<Guard>) -> Router {
    let api = Router::new()
        .route("/api/openapi.json", get(openapi::document))
        .route("/api/server", get(live::server))
        .route("/api/files/{kind}", get(library::list))
        .route("/api/files/{kind}/{name}", get(library::read).put(library::write).delete(library::delete))
        .route("/api/validate", post(library::validate))
        .route("/api/form", post(form::apply))
        .route("/api/templates", get(library::templates))
        .route("/api/templates/{name}", get(library::template))
        .route("/api/sets", post(jobs::create_set))
        .route("/api/runs", post(jobs::run_experiment))
        .route("/api/jobs", get(jobs::list))
        .route("/api/jobs/{id}/cancel", post(jobs::cancel))
        .route("/api/results", get(results::list))
        .route("/api/results/{name}", get(results::show))
        .route("/api/results/{name}/files/{*path}", get(results::file))
        .route("/api/results/{name}/replay", get(results::replay))
        .route("/api/emulations", get(live::list).post(live::start))
        .route("/api/emulations/{id}/watch", get(live::watch))
        .route("/api/emulations/{id}/state", post(live::enter_state))
        .route("/api/emulations/{id}/blackout", post(live::blackout))
        .route("/api/emulations/{id}/background", post(live::background))
        .with_state(app);
    Router::new()
        .route("/", get(index).with_state(guard.clone()))
        .route("/static/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/static/style.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .merge(api)
        .fallback(no_route)
        .layer(axum::middleware::from_fn_with_state(guard, security::guard))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
}

/// Starts the server and serves until interrupted. The URL with its token
/// is printed on stdout (one line starting with `http://`), warnings on
/// stderr.
pub fn serve(config: Config) -> Result<(), ServeError> {
    if !config.bind.is_loopback() && !config.allow_remote {
        return Err(ServeError::RemoteNotAllowed(config.bind));
    }
    let workspace = Workspace::open(&config.workspace)
        .map_err(|source| ServeError::Workspace { dir: config.workspace.display().to_string(), source })?;
    let squall = jobs::squall_binary(config.squall.clone())?;
    let token = security::new_token()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let addr = SocketAddr::new(config.bind, config.port);
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
        let port = listener.local_addr()?.port();
        let hosts = (!config.allow_remote).then(|| {
            let mut h = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
            if let IpAddr::V4(a) = config.bind {
                h.push(format!("{a}:{port}"));
            }
            h
        });
        if config.allow_remote {
            eprintln!(
                "warning: --allow-remote: listening on {} port {port}; anyone who can reach it and holds the token \
                 can read and write the workspace and run programs' experiments; traffic is plain HTTP, so use it \
                 only on a network you trust or through an SSH tunnel",
                config.bind
            );
        }
        let root = workspace.root().display().to_string();
        let app = Arc::new(AppState {
            workspace,
            templates: config.templates,
            queue: jobs::Queue::default(),
            squall,
            jobs: config.jobs.max(1),
            write_lock: tokio::sync::Mutex::new(()),
            launcher: live::Launcher::default(),
            watches: Arc::default(),
        });
        tokio::spawn(jobs::worker(app.clone()));
        let guard = Arc::new(Guard { token: token.clone(), hosts });
        let shown = match config.bind {
            IpAddr::V6(a) => format!("[{a}]"),
            IpAddr::V4(a) => a.to_string(),
        };
        {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            writeln!(out, "squall serve: workspace {root}")?;
            writeln!(out, "open this address (the token in it is the only key; keep it to yourself):")?;
            writeln!(out, "    http://{shown}:{port}/?token={token}")?;
            out.flush()?;
        }
        axum::serve(listener, router(app, guard))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}
