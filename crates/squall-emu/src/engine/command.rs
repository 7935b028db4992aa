//! What the control socket and the live view's sampler ask of the data
//! plane ([`crate::engine::dataplane`]): a request with where to send the
//! answer, handled between two wake-ups of the dataplane loop.

use std::sync::mpsc::Sender;

use serde::{Deserialize, Serialize};
use squall_link::{BlackoutMode, Rate};
use squall_scenario::BlackoutDirection;

/// A request from the control socket.
#[derive(Clone, Debug, PartialEq)]
pub enum ControlRequest {
    Status,
    /// Enter the named state of the scenario.
    EnterState(String),
    /// Start (`Some(mode)`) or end (`None`) a blackout on every stage of
    /// the direction(s).
    Blackout {
        mode: Option<BlackoutMode>,
        direction: BlackoutDirection,
    },
    /// Start, stop or re-rate a background generator of a stage.
    Background {
        stage: String,
        generator: String,
        action: BackgroundAction,
    },
    /// The live view's counters now, with the state switches numbered
    /// above `since` ([`crate::engine::watch::LiveCounters::sample`]).
    Sample {
        since: u64,
    },
}

/// What `squall ctl background` does to one generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundAction {
    /// Start a generator stopped before, with the configuration it had.
    Start,
    /// Stop it; the others run on as they were.
    Stop,
    /// Set its mean rate (a generator given by `rate`, running or stopped).
    Rate(Rate),
}

/// A request with where to send the answer.
pub struct ControlMessage {
    pub request: ControlRequest,
    pub reply: Sender<Result<serde_json::Value, String>>,
}
