//! squall-validate: the cases that prove the models right
//! (docs/validation.md). Each case is a scenario file shipped under
//! `scenarios/validation/` (built into the binary) and an evaluation that
//! compares what the simulator measured with theory, over enough
//! replications to give a 95% confidence interval.

pub mod arrival_cases;
mod cases;
pub mod class_cases;
mod measure;
pub mod netem_cases;
pub mod radio_cases;
pub mod tcp_cases;
pub mod trace_cases;

use std::fmt;

use serde::Serialize;
use squall_analysis::ConfidenceInterval;
use squall_scenario::Scenario;
use squall_sim::{RunOptions, RunResult};

pub use cases::cases;

/// One comparison of a measured figure with its expected value.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub name: String,
    pub expected: f64,
    pub measured: f64,
    /// 95% confidence interval of the measured mean over replications.
    pub ci: Option<ConfidenceInterval>,
    /// The tolerance in words ("exact", "±0.005", "CI contains expected").
    pub tolerance: String,
    pub pass: bool,
}

impl Check {
    /// Passes when |measured − expected| ≤ `abs`.
    pub fn within(
        name: impl Into<String>,
        expected: f64,
        measured: f64,
        ci: Option<ConfidenceInterval>,
        abs: f64,
    ) -> Self {
        Check {
            name: name.into(),
            expected,
            measured,
            ci,
            tolerance: format!("±{abs}"),
            pass: (measured - expected).abs() <= abs,
        }
    }

    /// Passes when |measured − expected| ≤ `rel`·|expected|.
    pub fn within_relative(
        name: impl Into<String>,
        expected: f64,
        measured: f64,
        ci: Option<ConfidenceInterval>,
        rel: f64,
    ) -> Self {
        Check {
            name: name.into(),
            expected,
            measured,
            ci,
            tolerance: format!("±{}%", rel * 100.0),
            pass: (measured - expected).abs() <= rel * expected.abs(),
        }
    }

    /// Passes when the confidence interval contains the expected value.
    pub fn ci_contains(name: impl Into<String>, expected: f64, ci: ConfidenceInterval) -> Self {
        Check {
            name: name.into(),
            expected,
            measured: ci.mean,
            ci: Some(ci),
            tolerance: "95% CI contains expected".into(),
            pass: ci.contains(expected),
        }
    }

    /// Passes only on exact equality (integer nanoseconds, counts).
    pub fn exact(name: impl Into<String>, expected: f64, measured: f64) -> Self {
        Check { name: name.into(), expected, measured, ci: None, tolerance: "exact".into(), pass: expected == measured }
    }
}

/// A validation case.
pub struct Case {
    /// Number in docs/validation.md.
    pub number: u32,
    pub name: &'static str,
    /// The scenario file's text and its path under the repository.
    pub scenario: &'static str,
    pub file: &'static str,
    pub options: RunOptions,
    pub evaluate: Evaluate,
}

/// How a case gets its measurements.
#[derive(Clone, Copy)]
pub enum Evaluate {
    /// Simulate the scenario's replications, then compare what they
    /// measured with theory.
    Runs(fn(&Scenario, &[RunResult]) -> Vec<Check>),
    /// Drive the model component the scenario configures directly, over
    /// many independent realisations (statistics of a random process, no
    /// packets: case 14's fading channel). Returns the number of
    /// realisations and the checks.
    Model(fn(&Scenario) -> (usize, Vec<Check>)),
}

/// A case's results.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    pub number: u32,
    pub name: &'static str,
    pub replications: usize,
    pub checks: Vec<Check>,
}

impl CaseReport {
    pub fn passed(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.pass)
    }
}

/// Why a case could not run (as opposed to failing its checks).
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error("{file}: {message}")]
    Scenario { file: &'static str, message: String },
    #[error("{file}: {source}")]
    Sim { file: &'static str, source: squall_sim::SimError },
}

impl Case {
    pub fn load(&self) -> Result<Scenario, ValidateError> {
        squall_scenario::parse(self.file, self.scenario, std::path::Path::new("scenarios/validation"))
            .map_err(|e| ValidateError::Scenario { file: self.file, message: format!("{e:?}") })
    }

    /// Runs every replication (on `jobs` threads) and evaluates.
    pub fn run(&self, jobs: usize) -> Result<CaseReport, ValidateError> {
        self.run_on(&self.load()?, jobs)
    }

    /// Runs and evaluates the case on `scenario`, a variant of its own
    /// (the tests change a parameter and expect a failure).
    pub fn run_on(&self, scenario: &Scenario, jobs: usize) -> Result<CaseReport, ValidateError> {
        let (replications, checks) = match self.evaluate {
            Evaluate::Runs(evaluate) => {
                let results = squall_sim::run_replications(scenario, self.options, jobs)
                    .map_err(|source| ValidateError::Sim { file: self.file, source })?;
                (results.len(), evaluate(scenario, &results))
            }
            Evaluate::Model(evaluate) => evaluate(scenario),
        };
        Ok(CaseReport { number: self.number, name: self.name, replications, checks })
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ci = self.ci.map_or("-".to_string(), |c| format!("[{:.6}, {:.6}]", c.low, c.high));
        write!(
            f,
            "{:<44} {:>12.6} {:>12.6} {:>28} {:>26} {}",
            self.name,
            self.expected,
            self.measured,
            ci,
            self.tolerance,
            if self.pass { "PASS" } else { "FAIL" }
        )
    }
}
