//! Errors of the API: a status and a message, sent as `{"error": "…"}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An API error: what went wrong and what was expected, in `message`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Extra fields sent beside `error` (the file's current etag on 409).
    pub extra: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), extra: None }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
    pub fn with(mut self, extra: serde_json::Value) -> Self {
        self.extra = Some(extra);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "error": self.message });
        if let (Some(serde_json::Value::Object(extra)), serde_json::Value::Object(b)) = (self.extra, &mut body) {
            b.extend(extra);
        }
        (self.status, Json(body)).into_response()
    }
}

/// Errors of starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "--bind {0}: not a loopback address, so anyone who can reach this machine could reach the control tool \
         (its token is the only guard); add --allow-remote to mean it, or bind 127.0.0.1"
    )]
    RemoteNotAllowed(std::net::IpAddr),
    /// The workspace directory cannot be opened or created.
    #[error("workspace {dir}: {source}")]
    Workspace { dir: String, source: std::io::Error },
    /// The listening socket cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    /// No random bytes for the access token.
    #[error("cannot draw the access token from the system's random source: {0}")]
    Random(String),
    /// The async runtime or the server failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}
