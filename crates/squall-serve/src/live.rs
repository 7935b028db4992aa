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

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use serde::Deserialize;
use squall_emu::control::{self, Request};
use squall_emu::naming::RunId;

use crate::error::ApiError;
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

pub async fn list(State(_): State<Arc<AppState>>) -> Result<Json<Vec<serde_json::Value>>, ApiError> {
    let runs = tokio::task::spawn_blocking(|| {
        control::list()
            .into_iter()
            .map(|id| match control::request(id, &Request::Info) {
                Ok(info) => serde_json::json!({ "id": id.0, "info": info }),
                Err(e) => serde_json::json!({ "id": id.0, "error": e.to_string() }),
            })
            .collect()
    })
    .await
    .map_err(|e| ApiError::internal(format!("listing emulations: {e}")))?;
    Ok(Json(runs))
}

pub async fn watch(
    State(_): State<Arc<AppState>>,
    Path(id): Path<u32>,
) -> Result<Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let run = running(id)?;
    let (lines, receiver) = tokio::sync::mpsc::channel::<String>(BROWSER_LINES);
    tokio::task::spawn_blocking(move || {
        let end = control::watch(run, |line| match lines.try_send(line.to_string()) {
            Ok(()) | Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => true,
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => false,
        });
        let last = match end {
            Ok(()) => serde_json::json!({ "end": "the run ended" }),
            Err(e) => serde_json::json!({ "end": e.to_string() }),
        };
        let _ = lines.blocking_send(last.to_string());
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let line = receiver.recv().await?;
        Some((Ok(Event::default().data(line)), receiver))
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
    tokio::task::spawn_blocking(move || control::request(run, &Request::State { name: r.name }))
        .await
        .map_err(|e| ApiError::internal(format!("emulation {id}: {e}")))?
        .map(Json)
        .map_err(|e| ApiError::bad_request(format!("emulation {id}: {e}")))
}
