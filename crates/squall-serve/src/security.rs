//! Who may talk to the server.
//!
//! - **Token** (as Jupyter's): a random secret printed in the URL; the
//!   page is opened with `/?token=…`, which sets a `SameSite=Strict`,
//!   `HttpOnly` cookie; scripts send it in the `X-Squall-Token` header.
//!   Every `/api/` call without it gets 401.
//! - **Host** (DNS rebinding, as Jupyter's `allow_remote_access` check):
//!   on a loopback bind the `Host` header must name a loopback host, so a
//!   page of another site whose name was rebound to 127.0.0.1 is refused.
//! - **Origin** (cross-site requests, RFC 6454 §7.3, Fetch Metadata's
//!   `Sec-Fetch-Site`): a request whose `Origin` is not this server's, or
//!   that the browser marks `cross-site`, gets 403.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ServeError};

pub const TOKEN_HEADER: &str = "x-squall-token";
pub const COOKIE: &str = "squall_token";

/// 32 random bytes from the system's source, in hex.
pub fn new_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub struct Guard {
    pub token: String,
    /// `Host` values accepted; `None` (with --allow-remote): any.
    pub hosts: Option<Vec<String>>,
}

impl Guard {
    pub fn cookie_token(headers: &HeaderMap) -> Option<String> {
        headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(
            |kv| {
                let (k, v) = kv.trim().split_once('=')?;
                (k == COOKIE).then(|| v.to_string())
            },
        )
    }

    /// Whether `headers` carry the token (header or cookie).
    pub fn has_token(&self, headers: &HeaderMap) -> bool {
        let header = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        header.or_else(|| Self::cookie_token(headers)).is_some_and(|t| same(&t, &self.token))
    }

    pub fn query_token_ok(&self, query: Option<&str>) -> bool {
        query
            .unwrap_or_default()
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .any(|(k, v)| k == "token" && same(v, &self.token))
    }

    /// The `Set-Cookie` value that keeps the token in the browser.
    pub fn set_cookie(&self) -> String {
        format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", self.token)
    }

    fn check_host_and_origin(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if let Some(hosts) = &self.hosts
            && !hosts.iter().any(|h| h == host)
        {
            return Err(ApiError::forbidden(format!(
                "Host `{host}` refused: the control tool answers only to {} (a site whose name leads here \
                 — DNS rebinding — is not let in); serve with --allow-remote to answer other names",
                hosts.join(", ")
            )));
        }
        if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())
            && origin != format!("http://{host}")
        {
            return Err(ApiError::forbidden(format!(
                "Origin `{origin}` refused: only pages of http://{host} may call this server"
            )));
        }
        if headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site") {
            return Err(ApiError::forbidden("a cross-site request (Sec-Fetch-Site: cross-site) is refused"));
        }
        Ok(())
    }
}

/// The middleware every request passes: Host and Origin for all, the
/// token for `/api/` (the page and its scripts and styles hold no data;
/// `/` checks the token itself to set the cookie).
pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Err(e) = guard.check_host_and_origin(request.headers()) {
        return e.into_response();
    }
    let path = request.uri().path();
    if path.starts_with("/api/") && !guard.has_token(request.headers()) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(serde_json::json!({
                "error": "no valid access token: open the URL `squall serve` printed (…/?token=…), or send the \
                          token in the X-Squall-Token header"
            })),
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, header::HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, header::HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_differ() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; squall_token=abc; b=2".parse().unwrap());
        assert_eq!(Guard::cookie_token(&h).as_deref(), Some("abc"));
        assert!(!same("abc", "abd") && same("abc", "abc") && !same("abc", "ab"));
    }
}
