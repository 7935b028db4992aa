//! How a scenario writes its state series (`state_series = { ... }`; the
//! file's reading and checks are [`crate::state_series`]'s). A leaf, so the
//! schema can hold it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use squall_link::Duration;

/// What the series does after its last row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateSeriesEnd {
    /// The last row's state stays.
    #[default]
    Hold,
    /// The last row's time is the period; the series starts again.
    Loop,
}

/// `state_series = { file = "states.csv", at_end = "loop" }`, or the rows
/// inline: `{ times_ns = [0, 2000000000], states = ["good", "bad"] }`. A
/// run's resolved scenario keeps the rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSeriesSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default)]
    pub at_end: StateSeriesEnd,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub times_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
}

impl StateSeriesSpec {
    /// Each state's entry times, and the period when the series loops.
    pub fn entries(&self) -> (BTreeMap<&str, Vec<Duration>>, Option<Duration>) {
        let (rows, period) = match self.at_end {
            StateSeriesEnd::Hold => (self.times_ns.len(), None),
            StateSeriesEnd::Loop => (self.times_ns.len().saturating_sub(1), self.times_ns.last().copied()),
        };
        let mut at: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
        for (t, name) in self.times_ns.iter().zip(&self.states).take(rows) {
            at.entry(name.as_str()).or_default().push(Duration::from_nanos(*t));
        }
        (at, period.map(Duration::from_nanos))
    }
}
