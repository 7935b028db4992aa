//! squall._squall: the native half of the Python package. Each function
//! calls the code the `squall` binary calls (squall_scenario's
//! `parse_with_overrides` for `--set`, squall_outputs for `squall sim`'s
//! replications and files); the Python half (python/squall/) reads the
//! files into pandas DataFrames, as it reads the CLI's.

use std::path::{Path, PathBuf};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use squall_outputs::sim::{Outputs, scenario_text, simulate_into, write_resolved_scenario};
use squall_scenario::{Scenario, ScenarioError};

/// squall.ScenarioError (python/squall/_errors.py) for a scenario that
/// does not load: its file, line and column (1-based, None where the
/// error has no place in the text), key and the CLI's message.
fn scenario_error(py: Python<'_>, e: &ScenarioError) -> PyErr {
    let message = format!("{e:?}");
    // An override's error is placed at its `--set KEY=VALUE` (squall_scenario's
    // parse_with_overrides), whose key is the one to name.
    let set_key = e.file().strip_prefix("--set ").and_then(|kv| kv.split_once('=')).map(|(k, _)| k);
    let key = if e.key_path().is_empty() { set_key } else { Some(e.key_path()) };
    raise(py, &message, e.file(), e.line(), e.column(), key, Some(e.reason()))
}

fn raise(
    py: Python<'_>,
    message: &str,
    file: &str,
    line: Option<usize>,
    column: Option<usize>,
    key: Option<&str>,
    reason: Option<&str>,
) -> PyErr {
    let built = (|| -> PyResult<PyErr> {
        let class = py.import("squall._errors")?.getattr("ScenarioError")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("file", file)?;
        kwargs.set_item("line", line)?;
        kwargs.set_item("column", column)?;
        kwargs.set_item("key", key.filter(|k| !k.is_empty()))?;
        kwargs.set_item("reason", reason)?;
        let value = class.call((message,), Some(&kwargs))?;
        Ok(PyErr::from_value(value))
    })();
    built.unwrap_or_else(|e| e)
}

/// The scenario `spec` names (a path, or `builtin:NAME`) as the CLI finds
/// it: (source name, text, directory its file names are relative to).
#[pyfunction]
fn scenario_source(py: Python<'_>, spec: &str) -> PyResult<(String, String, String)> {
    match scenario_text(spec, Path::new("")) {
        Ok((source, text, base)) => Ok((source, text, base.display().to_string())),
        Err(e) => Err(raise(py, &format!("{e:#}"), spec, None, None, None, None)),
    }
}

fn parse(py: Python<'_>, source: &str, text: &str, base: &str, sets: &[(String, String)]) -> PyResult<Scenario> {
    squall_scenario::parse_with_overrides(source, text, sets, Path::new(base)).map_err(|e| scenario_error(py, &e))
}

/// The resolved scenario (its `--set` overrides applied, checked) as TOML,
/// the text `squall sim` writes as scenario.toml.
#[pyfunction]
fn resolve(py: Python<'_>, source: &str, text: &str, base: &str, sets: Vec<(String, String)>) -> PyResult<String> {
    let scenario = parse(py, source, text, base, &sets)?;
    toml::to_string(&scenario).map_err(|e| PyRuntimeError::new_err(format!("cannot write the resolved scenario: {e}")))
}

/// `squall sim` in this process: loads the scenario as the CLI does
/// (overrides, then seed and replications), then runs its replications
/// on `jobs` threads with the GIL released and writes summary.json,
/// scenario.toml and rep-N/ into `out` (which must be new or empty).
#[pyfunction]
#[pyo3(signature = (source, text, base, sets, out, replications=None, seed=None, events=false, pcap=false, jobs=None))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    source: String,
    text: &str,
    base: &str,
    sets: Vec<(String, String)>,
    out: PathBuf,
    replications: Option<u32>,
    seed: Option<u64>,
    events: bool,
    pcap: bool,
    jobs: Option<usize>,
) -> PyResult<()> {
    let mut scenario = parse(py, &source, text, base, &sets)?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    if let Some(r) = replications {
        if r == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("replications must be at least 1"));
        }
        scenario.replications = r;
    }
    if jobs == Some(0) {
        return Err(pyo3::exceptions::PyValueError::new_err("jobs must be at least 1"));
    }
    if let Some(why) = scenario.refuse_outside_host("the simulator") {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("{source}: {why}")));
    }
    let run = || -> anyhow::Result<()> {
        squall_outputs::files::prepare_out_dir(&out, false)?;
        write_resolved_scenario(&out, &scenario)?;
        let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let tcp_limits = squall_outputs::limits::tcp_limits(&scenario);
        let outputs = Outputs { events, pcap };
        simulate_into(scenario, source, &out, jobs, outputs, tcp_limits)?;
        Ok(())
    };
    py.detach(run).map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))
}

#[pymodule]
fn _squall(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scenario_source, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
