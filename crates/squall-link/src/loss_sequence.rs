//! Per-frame loss decisions replayed in order (issue 30, "a file of ...
//! per-packet loss/keep decisions replayed in order (what a measured path
//! gives)"): `error = { sequence = { file = "loss.txt" } }` hits the k-th
//! frame the stage's error process decides on if the k-th decision says
//! so, and starts again after the last one, where every other
//! [`ErrorModel`](crate::ErrorModel) draws.
//!
//! A decision is taken per frame sent (per packet when the stage does not
//! fragment), so a link ARQ retransmission takes the next decision, as a
//! measured path's next packet would.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::units::UnitError;

/// The most decisions a sequence holds: 10⁷ (10 MB in a run's resolved
/// scenario, one character each).
pub const MAX_DECISIONS: usize = 10_000_000;

/// `error = { sequence = { file = "loss.txt" } }` or `{ sequence = {
/// pattern = "0010" } }`: the decisions, read from `file` (relative to the
/// scenario file, one per line) or given inline. A run's resolved scenario
/// keeps both; the pattern is what ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossSequence {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// One character per frame, in order: `1` lost (hit), `0` kept.
    #[serde(default, skip_serializing_if = "Decisions::is_empty")]
    pub pattern: Decisions,
}

impl LossSequence {
    /// A sequence of the given decisions (`true`: lost).
    pub fn new(lost: &[bool]) -> Self {
        LossSequence { file: None, pattern: Decisions(lost.into()) }
    }

    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.pattern.is_empty() {
            let message = match &self.file {
                Some(f) => format!("the decisions of `{f}` were not read (a file is read when a scenario file is loaded)"),
                None => "no decisions: give `file = \"loss.txt\"` (one 0/1 or keep/drop per line) or `pattern = \"0010\"` (1 = lost)"
                    .to_string(),
            };
            return Err(ConfigError::new(&format!("{key}.pattern"), &message));
        }
        Ok(())
    }
}

/// Loss decisions in order, shared (cloning a stage's configuration, as
/// every state change does, copies no decision). Written as a string of
/// `0` (kept) and `1` (lost).
#[derive(Clone, Debug, Default)]
pub struct Decisions(Arc<[bool]>);

impl Decisions {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether the `k`-th frame (from 0, looping) is lost.
    pub fn lost(&self, k: u64) -> bool {
        self.0[(k % self.0.len() as u64) as usize]
    }
    /// The same decisions as `other`, without comparing them one by one
    /// when both share their storage.
    pub fn same(&self, other: &Decisions) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl From<Vec<bool>> for Decisions {
    fn from(v: Vec<bool>) -> Self {
        Decisions(v.into())
    }
}

impl PartialEq for Decisions {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
    }
}

impl FromStr for Decisions {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = |why: String| UnitError { found: s.chars().take(40).collect(), expected: why.into() };
        if s.len() > MAX_DECISIONS {
            return Err(err(format!("at most {MAX_DECISIONS} decisions")));
        }
        s.bytes()
            .enumerate()
            .map(|(i, b)| match b {
                b'0' => Ok(false),
                b'1' => Ok(true),
                _ => Err(err(format!(
                    "only 0 (kept) and 1 (lost), one per frame, like \"0010\" (character {} is not)",
                    i + 1
                ))),
            })
            .collect::<Result<Vec<bool>, _>>()
            .map(Decisions::from)
    }
}

impl fmt::Display for Decisions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: String = self.0.iter().map(|&l| if l { '1' } else { '0' }).collect();
        f.write_str(&s)
    }
}

serde_via_string!(Decisions);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_reads_and_writes_back_and_loops() {
        let d: Decisions = "0010".parse().unwrap();
        assert_eq!(d.to_string(), "0010");
        let lost: Vec<u64> = (0..10).filter(|&k| d.lost(k)).collect();
        assert_eq!(lost, vec![2, 6]);
        let e = "01x".parse::<Decisions>().unwrap_err().to_string();
        assert!(e.contains("character 3 is not"), "{e}");
        assert!(LossSequence::new(&[]).validate("s.error.sequence").is_err());
    }
}
