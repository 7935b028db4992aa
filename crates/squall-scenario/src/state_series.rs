//! A time series of the scenario's states (issue 30: "squall's own time
//! series ... for ... a stage's state"): `state_series = { file =
//! "states.csv" }` enters the named `[[states]]` at the file's times.
//!
//! A CSV file: `#` comment lines and blank lines are skipped; the first
//! other line is a header naming the time unit, then one row per change,
//! `time,state`:
//!
//! ```text
//! # a train: a good cell, a tunnel, the next cell
//! time (s),state
//! 0,good
//! 20,tunnel
//! 26,good
//! 60,good
//! ```
//!
//! Times are whole numbers of the unit (`ns`, `us`, `ms`, `s`), the first
//! 0, then increasing. With `at_end = "hold"` (the default) the last
//! row's state is entered and stays; with `"loop"` the last row's time is
//! the period (its state is not entered) and the series starts again, as
//! a stage's time series loops. A state named in the series is entered
//! only by it (it has no `at` or `hold`). Every error names the file and
//! line; lines are read with a bound of [`MAX_LINE_BYTES`].

use std::io::BufRead;
use std::path::{Path, PathBuf};

use squall_link::series::MAX_SERIES_NS;

use crate::bounded_lines::{LineRead, next_line};
use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::series_file::{time_scale, unit_of};
use crate::source::Source;
pub use crate::state_series_spec::{StateSeriesEnd, StateSeriesSpec};

/// The longest line read, in bytes.
pub const MAX_LINE_BYTES: usize = 256;

/// What is wrong with a state series file, located at its file and line.
#[derive(Debug, thiserror::Error)]
pub enum StateSeriesError {
    #[error("{file}: cannot read the state series: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error(
        "{file}: the state series has no rows; expected a header such as `time (s),state` and then rows `time,state`, the first at time 0"
    )]
    Empty { file: PathBuf },
    #[error("{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected `time,state`, e.g. `20,tunnel`")]
    LineTooLong { file: PathBuf, line: u64 },
    #[error(
        "{file}:{line}: bad header `{found}`; expected `time (UNIT),state` with UNIT ns, us, ms or s, e.g. `time (s),state`"
    )]
    Header { file: PathBuf, line: u64, found: String },
    #[error("{file}:{line}: `{found}`: {why}; expected `time,state`, e.g. `20,tunnel`")]
    Row { file: PathBuf, line: u64, found: String, why: String },
    #[error("{file}:{line}: the first row is at {found}; expected the first row at time 0")]
    FirstNotZero { file: PathBuf, line: u64, found: u64 },
    #[error("{file}:{line}: time {value} does not come after {previous} on the row before; expected increasing times")]
    Unsorted { file: PathBuf, line: u64, value: u64, previous: u64 },
}

impl StateSeriesError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            StateSeriesError::Read { .. } | StateSeriesError::Empty { .. } => None,
            StateSeriesError::LineTooLong { line, .. }
            | StateSeriesError::Header { line, .. }
            | StateSeriesError::Row { line, .. }
            | StateSeriesError::FirstNotZero { line, .. }
            | StateSeriesError::Unsorted { line, .. } => Some(*line),
        }
    }
}

/// Rows read from a file: times in ns, state names, and each row's line.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct StateRows {
    pub times_ns: Vec<u64>,
    pub states: Vec<String>,
    pub lines: Vec<u64>,
}

/// Reads the state series in the file `path`.
pub fn read(path: &Path) -> Result<StateRows, StateSeriesError> {
    let f = std::fs::File::open(path).map_err(|source| StateSeriesError::Read { file: path.to_owned(), source })?;
    parse(std::io::BufReader::new(f), path)
}

/// Reads a state series from `input`; errors name `file`.
pub fn parse(mut input: impl BufRead, file: &Path) -> Result<StateRows, StateSeriesError> {
    let mut buf = Vec::with_capacity(MAX_LINE_BYTES + 1);
    let (mut line, mut unit) = (0u64, None);
    let mut rows = StateRows::default();
    let f = || file.to_owned();
    loop {
        let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| StateSeriesError::Read { file: f(), source })?;
        match read {
            LineRead::End => break,
            LineRead::TooLong => return Err(StateSeriesError::LineTooLong { file: f(), line: line + 1 }),
            LineRead::Line => line += 1,
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let Some(scale) = unit else {
            let header = || StateSeriesError::Header { file: f(), line, found: text.to_string() };
            let (t, _) = text.split_once(',').ok_or_else(header)?;
            unit = Some(unit_of(t).and_then(time_scale).ok_or_else(header)?);
            continue;
        };
        let row = |why: String| StateSeriesError::Row { file: f(), line, found: text.to_string(), why };
        let (t, name) = text.split_once(',').ok_or_else(|| row("one column".into()))?;
        let (t, name) = (t.trim(), name.trim());
        if name.contains(',') {
            return Err(row("more than two columns".into()));
        }
        if name.is_empty() {
            return Err(row("no state name".into()));
        }
        if t.starts_with('-') {
            return Err(row("the time is negative".into()));
        }
        let too_large = || format!("the time is too large (at most {MAX_SERIES_NS} ns, about 116 days)");
        let time: u64 = t.parse().map_err(|_| {
            row(if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                too_large()
            } else {
                format!("the time `{t}` is not a whole number of the header's unit")
            })
        })?;
        let time = time.checked_mul(scale).filter(|&ns| ns <= MAX_SERIES_NS).ok_or_else(|| row(too_large()))?;
        match rows.times_ns.last() {
            None if time != 0 => return Err(StateSeriesError::FirstNotZero { file: f(), line, found: time / scale }),
            Some(&previous) if time <= previous => {
                return Err(StateSeriesError::Unsorted {
                    file: f(),
                    line,
                    value: time / scale,
                    previous: previous / scale,
                });
            }
            _ => {}
        }
        rows.times_ns.push(time);
        rows.states.push(name.to_string());
        rows.lines.push(line);
    }
    if rows.times_ns.is_empty() {
        return Err(StateSeriesError::Empty { file: f() });
    }
    Ok(rows)
}

/// Reads the state series' file into its rows (unless they are there, a
/// run's resolved scenario), each state name checked at its line.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let names: Vec<String> = s.states.iter().map(|st| st.name.clone()).collect();
    let Some(spec) = s.state_series.as_mut() else { return Ok(()) };
    let Some(file) = spec.file.as_ref().filter(|_| spec.times_ns.is_empty()) else { return Ok(()) };
    let key = KeyPath::root().key("state_series").key("file");
    let full = base_dir.join(file);
    let fail = |message: String, line: Option<u64>| {
        let label = line.map_or("cannot use this file".to_string(), |l| format!("bad line {l} in this file"));
        src.error(ErrorKind::TraceFile, &key, message).label(label)
    };
    let rows = read(&full).map_err(|e| fail(e.to_string(), e.line()))?;
    for (name, line) in rows.states.iter().zip(&rows.lines) {
        if !names.contains(name) {
            let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err(fail(
                format!(
                    "{}:{line}: no state named `{name}`; expected the name of one of the scenario's [[states]] ({known})",
                    full.display()
                ),
                Some(*line),
            ));
        }
    }
    spec.times_ns = rows.times_ns;
    spec.states = rows.states;
    Ok(())
}

/// The checks of a state series' rows and states (inline or read).
pub(crate) fn check(s: &Scenario) -> Result<(), (KeyPath, String)> {
    let Some(spec) = &s.state_series else { return Ok(()) };
    let key = KeyPath::root().key("state_series");
    if spec.times_ns.is_empty() {
        return Err((key, "no rows: give `file = \"states.csv\"` or `times_ns` and `states`".into()));
    }
    if spec.times_ns.len() != spec.states.len() {
        let n = (spec.times_ns.len(), spec.states.len());
        return Err((key.key("states"), format!("{} times but {} states; expected one state per time", n.0, n.1)));
    }
    if spec.times_ns[0] != 0 || spec.times_ns.windows(2).any(|w| w[1] <= w[0]) {
        return Err((key.key("times_ns"), "expected increasing times from 0, like [0, 2000000000]".into()));
    }
    if spec.at_end == StateSeriesEnd::Loop && spec.times_ns.len() < 2 {
        return Err((key.key("at_end"), "a series that loops needs at least two rows (the last is its period)".into()));
    }
    for name in &spec.states {
        match s.states.iter().find(|st| &st.name == name) {
            None => return Err((key.key("states"), format!("no state named `{name}` in [[states]]"))),
            Some(st) if st.at.is_some() || st.hold.is_some() => {
                return Err((
                    key.key("states"),
                    format!(
                        "state `{name}` has `at` or `hold`; a state in the state series is entered only by it: remove them"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse(text.as_bytes(), Path::new("states.csv")).expect_err("a bad file").to_string()
    }

    #[test]
    fn reads_rows_in_the_header_unit() {
        let rows = parse("# train\ntime (ms),state\n0,good\n\n2500, tunnel \n".as_bytes(), Path::new("s")).unwrap();
        assert_eq!(rows.times_ns, vec![0, 2_500_000_000]);
        assert_eq!(rows.states, vec!["good", "tunnel"]);
        assert_eq!(rows.lines, vec![3, 5]);
    }

    #[test]
    fn bad_files_are_located_errors() {
        assert!(error("# none\n").starts_with("states.csv: the state series has no rows"));
        assert!(error("time,state\n").starts_with("states.csv:1: bad header `time,state`"));
        assert!(error("time (h),state\n").starts_with("states.csv:1: bad header"));
        assert_eq!(
            error("time (s),state\n0,good\n-5,bad\n"),
            "states.csv:3: `-5,bad`: the time is negative; expected `time,state`, e.g. `20,tunnel`"
        );
        assert!(
            error("time (s),state\n0,good\nx,bad\n").contains("states.csv:3: `x,bad`: the time `x` is not a whole")
        );
        assert!(error("time (s),state\n0,good\n1.5,bad\n").contains(":3: `1.5,bad`: the time `1.5` is not a whole"));
        assert!(
            error("time (s),state\n0,good\n99999999999999999999,bad\n")
                .contains(":3: `99999999999999999999,bad`: the time is too large")
        );
        assert!(error("time (s),state\n0,good\n20000000000,bad\n").contains("the time is too large"));
        assert_eq!(
            error("time (s),state\n0,good\n5,bad\n5,good\n"),
            "states.csv:4: time 5 does not come after 5 on the row before; expected increasing times"
        );
        assert_eq!(
            error("time (s),state\n3,good\n"),
            "states.csv:2: the first row is at 3; expected the first row at time 0"
        );
        assert!(error("time (s),state\n0,\n").contains(":2: `0,`: no state name"));
        assert!(error("time (s),state\n0\n").contains(":2: `0`: one column"));
    }

    #[test]
    fn a_line_of_1_gb_is_refused_without_being_read_whole() {
        struct Endless(u64, u64);
        impl std::io::Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = (buf.len() as u64).min(self.0) as usize;
                buf[..n].fill(b'7');
                self.0 -= n as u64;
                self.1 += n as u64;
                Ok(n)
            }
        }
        let mut source = Endless(1 << 30, 0);
        let e = parse(std::io::BufReader::with_capacity(4096, &mut source), Path::new("big.csv")).unwrap_err();
        assert_eq!(e.to_string(), "big.csv:1: line longer than 256 bytes; expected `time,state`, e.g. `20,tunnel`");
        assert!(source.1 <= 4096, "read {} bytes", source.1);
    }
}
