//! squall-analysis: statistics over runs and replications.
//!
//! Means, standard deviations, percentiles and Student-t confidence
//! intervals (seed 004 §2.2 reports 95% intervals over replications; seed
//! 000 §7 percentiles of elapsed time).

pub mod stats;

pub use stats::*;
