//! squall's time-series files (issue 30): a stage parameter's values over
//! time, for `series.rate = { file = "rate.csv" }` and the other keys of
//! [`squall_link::series::StageSeries`].
//!
//! A CSV file: `#` comment lines and blank lines are skipped; the first
//! other line is a header naming each column's unit, then one row per
//! point, `time,value`:
//!
//! ```text
//! # 10 -> 1 -> 10 Mbit/s, one second each
//! time (ms),rate (Mbit/s)
//! 0,10
//! 1000,1
//! 2000,10
//! 3000,10
//! ```
//!
//! - time units: `ns`, `us`, `ms`, `s`; times are whole numbers of that
//!   unit (so `ns` gives nanosecond resolution), the first 0, then
//!   increasing; the last is the series' end (its period when it loops);
//! - value units: rate `bit/s`, `kbit/s`, `Mbit/s`, `Gbit/s`; delay and
//!   jitter `ns`, `us`, `ms`, `s`; loss and corrupt `probability` (0..=1)
//!   or `%` (0..=100). The column's name before the unit is free text.
//!
//! Every error names the file and line and what was expected. A line is
//! read with a bound of [`MAX_LINE_BYTES`], so a file of one 1 GB line is
//! refused without being held in memory.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use squall_link::series::{MAX_SERIES_NS, ParameterSeries, SeriesKey};

use crate::bounded_lines::{LineRead, next_line};
use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;

/// The longest line read, in bytes.
pub const MAX_LINE_BYTES: usize = 256;

/// What is wrong with a series file, located at its file and line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum SeriesFileError {
    #[error("{file}: cannot read the series: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error(
        "{file}: the series has no rows; expected a header such as `time (ms),rate (Mbit/s)` and then rows `time,value`, the first at time 0"
    )]
    Empty { file: PathBuf },
    #[error("{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected `time,value`, e.g. `1000,10`")]
    LineTooLong { file: PathBuf, line: u64 },
    #[error("{file}:{line}: bad header `{found}`; expected `time (UNIT),NAME (UNIT)`, e.g. `{example}`{why}")]
    Header { file: PathBuf, line: u64, found: String, example: &'static str, why: String },
    #[error("{file}:{line}: `{found}`: {why}; expected `time,value`, e.g. `1000,10`")]
    Row { file: PathBuf, line: u64, found: String, why: String },
    #[error("{file}:{line}: the first row is at {found}; expected the first row at time 0")]
    FirstNotZero { file: PathBuf, line: u64, found: u64 },
    #[error(
        "{file}:{line}: time {value} does not come after {previous} on line {previous_line}; expected increasing times"
    )]
    Unsorted { file: PathBuf, line: u64, value: u64, previous: u64, previous_line: u64 },
}

impl SeriesFileError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            SeriesFileError::Read { .. } | SeriesFileError::Empty { .. } => None,
            SeriesFileError::LineTooLong { line, .. }
            | SeriesFileError::Header { line, .. }
            | SeriesFileError::Row { line, .. }
            | SeriesFileError::FirstNotZero { line, .. }
            | SeriesFileError::Unsorted { line, .. } => Some(*line),
        }
    }
}

/// A series read from a file: times in ns, values in the base unit (bit/s,
/// ns, probability).
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesFile {
    pub times_ns: Vec<u64>,
    pub values: Vec<f64>,
}

fn example(key: SeriesKey) -> &'static str {
    match key {
        SeriesKey::Rate => "time (ms),rate (Mbit/s)",
        SeriesKey::Delay => "time (ms),delay (ms)",
        SeriesKey::Jitter => "time (ms),jitter (ms)",
        SeriesKey::Loss => "time (ms),loss (probability)",
        SeriesKey::Corrupt => "time (ms),corrupt (%)",
    }
}

pub(crate) fn time_scale(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    })
}

/// The factor from a value in `unit` to the key's base unit.
fn value_scale(key: SeriesKey, unit: &str) -> Option<f64> {
    match key {
        SeriesKey::Rate => Some(match unit {
            "bit/s" => 1.0,
            "kbit/s" => 1e3,
            "Mbit/s" => 1e6,
            "Gbit/s" => 1e9,
            _ => return None,
        }),
        SeriesKey::Delay | SeriesKey::Jitter => time_scale(unit).map(|s| s as f64),
        SeriesKey::Loss | SeriesKey::Corrupt => match unit {
            "probability" => Some(1.0),
            "%" => Some(0.01),
            _ => None,
        },
    }
}

fn value_units(key: SeriesKey) -> &'static str {
    match key {
        SeriesKey::Rate => "bit/s, kbit/s, Mbit/s or Gbit/s",
        SeriesKey::Delay | SeriesKey::Jitter => "ns, us, ms or s",
        SeriesKey::Loss | SeriesKey::Corrupt => "probability or %",
    }
}

/// `NAME (UNIT)` → UNIT.
pub(crate) fn unit_of(column: &str) -> Option<&str> {
    let column = column.trim();
    let open = column.rfind('(')?;
    let inner = column[open + 1..].strip_suffix(')')?;
    Some(inner.trim())
}

impl SeriesFile {
    /// Reads the series in the file `path`, for the parameter `key`.
    pub fn read(path: &Path, key: SeriesKey) -> Result<Self, SeriesFileError> {
        let f = std::fs::File::open(path).map_err(|source| SeriesFileError::Read { file: path.to_owned(), source })?;
        Self::parse(std::io::BufReader::new(f), path, key)
    }

    /// Reads a series from `input`; errors name `file`.
    pub fn parse(mut input: impl BufRead, file: &Path, key: SeriesKey) -> Result<Self, SeriesFileError> {
        let mut buf = Vec::with_capacity(MAX_LINE_BYTES + 1);
        let mut line = 0u64;
        let mut units: Option<(u64, f64)> = None;
        let (mut times_ns, mut values) = (Vec::new(), Vec::new());
        let mut last_line = 0;
        let f = || file.to_owned();
        loop {
            let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
                .map_err(|source| SeriesFileError::Read { file: f(), source })?;
            if read == LineRead::End {
                break;
            }
            line += 1;
            if read == LineRead::TooLong {
                return Err(SeriesFileError::LineTooLong { file: f(), line });
            }
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let Some((time_unit, value_unit)) = units else {
                let header = |why: String| SeriesFileError::Header {
                    file: f(),
                    line,
                    found: text.to_string(),
                    example: example(key),
                    why,
                };
                let cols: Vec<&str> = text.split(',').collect();
                if cols.len() != 2 {
                    return Err(header(format!(" ({} columns)", cols.len())));
                }
                let t = unit_of(cols[0]).ok_or_else(|| header(" (no unit in brackets in the time column)".into()))?;
                let t = time_scale(t).ok_or_else(|| header(format!(" (time unit `{t}`: ns, us, ms or s)")))?;
                let v = unit_of(cols[1]).ok_or_else(|| header(" (no unit in brackets in the value column)".into()))?;
                let v = value_scale(key, v)
                    .ok_or_else(|| header(format!(" (a {} series' unit `{v}`: {})", key.as_str(), value_units(key))))?;
                units = Some((t, v));
                continue;
            };
            let row = |why: String| SeriesFileError::Row { file: f(), line, found: text.to_string(), why };
            let Some((t, v)) = text.split_once(',') else {
                return Err(row("one column".into()));
            };
            let (t, v) = (t.trim(), v.trim());
            if v.contains(',') {
                return Err(row("more than two columns".into()));
            }
            if t.starts_with('-') {
                return Err(row("the time is negative".into()));
            }
            let too_large = || format!("the time is too large (at most {MAX_SERIES_NS} ns, about 116 days)");
            let time: u64 = t.parse().map_err(|_| {
                row(match t.parse::<f64>() {
                    _ if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => too_large(),
                    Ok(_) => "the time is not a whole number of the header's unit".into(),
                    Err(_) => format!("the time `{t}` is not a number"),
                })
            })?;
            let time = time.checked_mul(time_unit).filter(|&ns| ns <= MAX_SERIES_NS).ok_or_else(|| row(too_large()))?;
            let value: f64 = v.parse().map_err(|_| row(format!("the value `{v}` is not a number")))?;
            if !value.is_finite() {
                return Err(row(format!("the value `{v}` is not a finite number")));
            }
            if value < 0.0 {
                return Err(row("the value is negative".into()));
            }
            let base = value * value_unit;
            let max = key.max_value();
            if base > max {
                let why = match key {
                    SeriesKey::Loss | SeriesKey::Corrupt => "a probability above 1 (100 %)".to_string(),
                    SeriesKey::Rate => "the rate is above 10 Tbit/s".to_string(),
                    SeriesKey::Delay | SeriesKey::Jitter => "the time is above one day".to_string(),
                };
                return Err(row(why));
            }
            match times_ns.last() {
                None if time != 0 => return Err(SeriesFileError::FirstNotZero { file: f(), line, found: time }),
                Some(&previous) if time <= previous => {
                    return Err(SeriesFileError::Unsorted {
                        file: f(),
                        line,
                        value: time / time_unit,
                        previous: previous / time_unit,
                        previous_line: last_line,
                    });
                }
                _ => {}
            }
            last_line = line;
            times_ns.push(time);
            values.push(base);
        }
        if times_ns.is_empty() {
            return Err(SeriesFileError::Empty { file: f() });
        }
        Ok(SeriesFile { times_ns, values })
    }

    /// The series in the file format, times in ns and values in `unit`
    /// (with its factor to the base unit).
    pub fn to_csv(&self, comment: &str, column: &str, unit: &str, scale: f64) -> String {
        let mut out = String::new();
        for l in comment.lines() {
            out.push_str(&format!("# {l}\n"));
        }
        out.push_str(&format!("time (ns),{column} ({unit})\n"));
        for (t, v) in self.times_ns.iter().zip(&self.values) {
            out.push_str(&format!("{t},{}\n", v / scale));
        }
        out
    }
}

/// Reads every stage series' file into its points (relative to the
/// scenario file's directory). A series whose points are already in the
/// scenario (a run's resolved scenario) is used as it is.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let root = KeyPath::root();
    for (i, link) in s.links.iter_mut().enumerate() {
        for (dir, stages) in [("downlink", &mut link.downlink), ("uplink", &mut link.uplink)] {
            for (j, st) in stages.iter_mut().enumerate() {
                for which in SeriesKey::ALL {
                    let Some(series) = st.series.get_mut(which) else { continue };
                    if !series.times_ns.is_empty() {
                        continue;
                    }
                    let key = root.key("links").index(i).key(dir).index(j).key("series").key(which.as_str());
                    let Some(file) = series.file.clone() else {
                        return Err(src.error(
                            ErrorKind::TraceFile,
                            &key,
                            format!(
                                "the {} series has no file; expected {{ file = \"{}.csv\" }}",
                                which.as_str(),
                                which.as_str()
                            ),
                        ));
                    };
                    fill(series, &base_dir.join(&file), which).map_err(|e| {
                        let label = match e.line() {
                            Some(line) => format!("bad line {line} in this file"),
                            None => "cannot use this file".to_string(),
                        };
                        src.error(ErrorKind::TraceFile, &key, e.to_string()).label(label)
                    })?;
                }
            }
        }
    }
    Ok(())
}

fn fill(series: &mut ParameterSeries, path: &Path, which: SeriesKey) -> Result<(), SeriesFileError> {
    let read = SeriesFile::read(path, which)?;
    series.times_ns = read.times_ns;
    series.values = read.values;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn parse(text: &str, key: SeriesKey) -> Result<SeriesFile, SeriesFileError> {
        SeriesFile::parse(text.as_bytes(), Path::new("rate.csv"), key)
    }

    fn error(text: &str, key: SeriesKey) -> String {
        parse(text, key).expect_err("a bad series").to_string()
    }

    #[test]
    fn reads_units_from_the_header() {
        let s =
            parse("# steps\ntime (ms),rate (Mbit/s)\n0,10\n1000,1\n2000,10\r\n\n3000,10\n", SeriesKey::Rate).unwrap();
        assert_eq!(s.times_ns, [0, 1_000_000_000, 2_000_000_000, 3_000_000_000]);
        assert_eq!(s.values, [10e6, 1e6, 10e6, 10e6]);
        let s = parse("time (ns),loss (%)\n0,1.5\n7,100\n", SeriesKey::Loss).unwrap();
        assert_eq!(s.times_ns, [0, 7]);
        assert_eq!(s.values, [0.015, 1.0]);
        let s = parse("time (s),delay (us)\n0,250\n2,0\n", SeriesKey::Delay).unwrap();
        assert_eq!(s.values, [250_000.0, 0.0]);
    }

    #[test]
    fn bad_series_are_located_errors() {
        use SeriesKey::*;
        let h = "time (ms),rate (Mbit/s)\n";
        let cases: &[(&str, SeriesKey, &str)] = &[
            ("", Rate, "rate.csv: the series has no rows; expected a header"),
            ("# only a comment\ntime (ms),rate (Mbit/s)\n", Rate, "rate.csv: the series has no rows"),
            ("time,rate\n0,1\n", Rate, "rate.csv:1: bad header `time,rate`; expected `time (UNIT),NAME (UNIT)`"),
            (
                "time (min),rate (Mbit/s)\n",
                Rate,
                "rate.csv:1: bad header `time (min),rate (Mbit/s)`; expected `time (UNIT),NAME (UNIT)`, e.g. `time (ms),rate (Mbit/s)` (time unit `min`: ns, us, ms or s)",
            ),
            ("time (ms),rate (ms)\n", Rate, "(a rate series' unit `ms`: bit/s, kbit/s, Mbit/s or Gbit/s)"),
            ("time (ms),loss (Mbit/s)\n", Loss, "(a loss series' unit `Mbit/s`: probability or %)"),
            (
                &format!("{h}0,10\n1000,1\n1000,10\n"),
                Rate,
                "rate.csv:4: time 1000 does not come after 1000 on line 3; expected increasing times",
            ),
            (&format!("{h}0,10\n1000,1\n500,10\n"), Rate, "rate.csv:4: time 500 does not come after 1000 on line 3"),
            (&format!("{h}5,10\n"), Rate, "rate.csv:2: the first row is at 5000000; expected the first row at time 0"),
            (&format!("{h}0,10\n-5,1\n"), Rate, "rate.csv:3: `-5,1`: the time is negative; expected `time,value`"),
            (&format!("{h}0,-10\n"), Rate, "rate.csv:2: `0,-10`: the value is negative"),
            (&format!("{h}0,ten\n"), Rate, "rate.csv:2: `0,ten`: the value `ten` is not a number"),
            (&format!("{h}zero,10\n"), Rate, "rate.csv:2: `zero,10`: the time `zero` is not a number"),
            (
                &format!("{h}0.5,10\n"),
                Rate,
                "rate.csv:2: `0.5,10`: the time is not a whole number of the header's unit",
            ),
            (&format!("{h}0,NaN\n"), Rate, "rate.csv:2: `0,NaN`: the value `NaN` is not a finite number"),
            (&format!("{h}0,inf\n"), Rate, "rate.csv:2: `0,inf`: the value `inf` is not a finite number"),
            (&format!("{h}0,1e300\n"), Rate, "rate.csv:2: `0,1e300`: the rate is above 10 Tbit/s"),
            (
                &format!("{h}0,1\n99999999999999999999,1\n"),
                Rate,
                "rate.csv:3: `99999999999999999999,1`: the time is too large",
            ),
            (
                &format!("{h}0,1\n18446744073709551,1\n"),
                Rate,
                "rate.csv:3: `18446744073709551,1`: the time is too large",
            ),
            (
                "time (ms),loss (probability)\n0,0.5\n10,1.5\n",
                Loss,
                "rate.csv:3: `10,1.5`: a probability above 1 (100 %)",
            ),
            ("time (ms),corrupt (%)\n0,101\n", Corrupt, "rate.csv:2: `0,101`: a probability above 1 (100 %)"),
            ("time (ms),delay (s)\n0,100000\n", Delay, "rate.csv:2: `0,100000`: the time is above one day"),
            (&format!("{h}0\n"), Rate, "rate.csv:2: `0`: one column"),
            (&format!("{h}0,1,2\n"), Rate, "rate.csv:2: `0,1,2`: more than two columns"),
        ];
        for (text, key, expected) in cases {
            let e = error(text, *key);
            assert!(e.contains(expected), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_line_of_a_gigabyte_is_refused_without_reading_it_whole() {
        // An endless line: the reader stops after MAX_LINE_BYTES + 1 bytes.
        let endless = std::io::repeat(b'7').take(1 << 30);
        let input = std::io::BufReader::new(b"time (ms),rate (Mbit/s)\n0,".chain(endless));
        let e = SeriesFile::parse(input, Path::new("big.csv"), SeriesKey::Rate).expect_err("too long").to_string();
        assert_eq!(e, "big.csv:2: line longer than 256 bytes; expected `time,value`, e.g. `1000,10`");
    }

    #[test]
    fn written_series_read_back_the_same() {
        let s = SeriesFile { times_ns: vec![0, 1, 1_000_000_000], values: vec![10e6, 1e6, 2.5e6] };
        let text = s.to_csv("made by a test", "rate", "Mbit/s", 1e6);
        assert_eq!(parse(&text, SeriesKey::Rate).unwrap(), s);
    }
}
