//! A server with vacations (seed 003, the FPGA network "quality degrader",
//! whose copy has no title; §1 and §2.2: the degrader's alternative to
//! background traffic, "the queue server takes vacations that correspond
//! to servicing the other streams"). The link serves for a while, then goes on vacation: it starts
//! no new transmission (one in progress finishes) and packets wait in the
//! queue, dropped by it when it is full with its usual reason.
//!
//! ```toml
//! vacation = { serving = "9 ms", length = "1 ms" }     # away 10 % of the time
//! # serving: how long the link works between vacations; length: each vacation
//! vacation = { serving = { kind = "exponential", mean = "18 ms" }, length = { kind = "exponential", mean = "2 ms" } }
//! ```

use serde::{Deserialize, Serialize};

use crate::dist::{Distribution, constant_or_table};
use crate::error::ConfigError;
use crate::time::Duration;

/// Alternating service and vacation periods, the first service period
/// starting at time zero (or at the state change that set them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VacationConfig {
    /// How long the link serves between two vacations.
    #[serde(deserialize_with = "constant_or_table::deserialize")]
    pub serving: Distribution<Duration>,
    /// How long each vacation lasts. A constant zero turns vacations off
    /// (from a state, say).
    #[serde(deserialize_with = "constant_or_table::deserialize")]
    pub length: Distribution<Duration>,
}

impl VacationConfig {
    /// Whether the link ever goes on vacation.
    pub fn is_off(&self) -> bool {
        self.length == Distribution::constant(Duration::ZERO)
    }

    /// The long-run fraction of time on vacation, E[length] / (E[serving] +
    /// E[length]), where both means have a closed form.
    pub fn away_fraction(&self) -> Option<f64> {
        let (s, l) = (self.serving.mean()?, self.length.mean()?);
        Some(l / (s + l))
    }

    /// Checks the two distributions; `key` is `stage.vacation`.
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let k = |f: &str| format!("{key}.{f}");
        self.serving.validate().map_err(|e| ConfigError::new(&k("serving"), &e.to_string()))?;
        self.length.validate().map_err(|e| ConfigError::new(&k("length"), &e.to_string()))?;
        // Zero-length service periods back to back would never let time move.
        if self.serving.mean().is_some_and(|m| m <= 0.0) {
            return Err(ConfigError::new(
                &k("serving"),
                "needs a mean service period above zero (a server that never serves), like serving = \"9 ms\"",
            ));
        }
        Ok(())
    }
}

crate::keys::struct_distributions!(VacationConfig { serving, length });
