//! Mahimahi's link trace format, read as `mm-link` reads it (Netravali et
//! al., "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015;
//! `src/frontend/link_queue.cc`, the `LinkQueue` constructor, and
//! `src/util/ezio.cc` `myatoi`).
//!
//! One integer per line: the millisecond, from the trace's start, of one
//! opportunity to send 1 504 bytes. A repeated line is several
//! opportunities in that millisecond. Lines must not decrease; the file
//! loops with a period of its last value, which must not be 0. As `myatoi`
//! (`strtol` in base 10, then nothing may follow), a line may start with
//! blanks and a `+`, and nothing may follow the digits (not a blank, not a
//! `\r` of a CRLF line end, not a comment). An empty line is an error,
//! except that the file may end with one newline.
//!
//! Where squall differs from mm-link, on purpose: every error names the
//! line; a negative value is refused (mm-link stores `-1` as 2^64−1); a
//! value above [`MAX_MILLISECONDS`] is refused (squall's clock must hold
//! many loops of the trace); a line is read with a bound of
//! [`MAX_LINE_BYTES`], so a file of one 1 GB line is refused without being
//! held in memory (mm-link reads the whole line first).

use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::bounded_lines::{LineRead, next_line};
use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;

/// The largest time a line may give, in ms: 10^10 ms (about 116 days), so
/// that squall's clock (`u64` nanoseconds, 584 years) holds 1 800 loops of
/// the longest trace.
pub const MAX_MILLISECONDS: u64 = 10_000_000_000;

/// The longest line read, in bytes (a blank-padded number fits easily).
pub const MAX_LINE_BYTES: usize = 64;

/// The bytes one delivery opportunity carries: an MTU of 1 500 bytes plus
/// the 4-byte packet-information header mm-link's TUN device adds to each
/// packet (`link_queue.hh` `PACKET_SIZE`; the device is opened without
/// `IFF_NO_PI`, `src/util/netdevice.cc`).
pub const OPPORTUNITY_BYTES: u64 = 1504;

/// A Mahimahi trace: the opportunities' times within one loop, in ms, not
/// decreasing; the last is the loop's period and is above 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MahimahiTrace {
    opportunities: Vec<u64>,
}

/// What is wrong with a trace, located at its file and line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{file}: cannot read the trace: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{file}: the trace is empty; expected one opportunity per line, in ms from the trace's start, e.g. `1`")]
    Empty { file: PathBuf },
    #[error("{file}:{line}: empty line; expected a whole number of milliseconds, e.g. `12`")]
    EmptyLine { file: PathBuf, line: u64 },
    #[error(
        "{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected a whole number of milliseconds, e.g. `12`"
    )]
    LineTooLong { file: PathBuf, line: u64 },
    #[error("{file}:{line}: `{found}` is not a whole number of milliseconds; expected digits only, e.g. `12`{hint}")]
    NotANumber { file: PathBuf, line: u64, found: String, hint: &'static str },
    #[error("{file}:{line}: `{found}` is negative; expected a time of 0 ms or more from the trace's start")]
    Negative { file: PathBuf, line: u64, found: String },
    #[error("{file}:{line}: `{found}` ms is too large; expected at most {MAX_MILLISECONDS} ms (about 116 days)")]
    TooLarge { file: PathBuf, line: u64, found: String },
    #[error("{file}:{line}: {value} ms comes after {previous} ms on line {}; expected times that do not decrease", line - 1)]
    Unsorted { file: PathBuf, line: u64, value: u64, previous: u64 },
    #[error(
        "{file}:{line}: the last opportunity is at 0 ms, so the trace lasts no time; expected a last line above 0 (its value is the loop's period)"
    )]
    ZeroLength { file: PathBuf, line: u64 },
}

impl TraceError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            TraceError::Read { .. } | TraceError::Empty { .. } => None,
            TraceError::EmptyLine { line, .. }
            | TraceError::LineTooLong { line, .. }
            | TraceError::NotANumber { line, .. }
            | TraceError::Negative { line, .. }
            | TraceError::TooLarge { line, .. }
            | TraceError::Unsorted { line, .. }
            | TraceError::ZeroLength { line, .. } => Some(*line),
        }
    }
}

impl MahimahiTrace {
    /// Reads the trace in the file `path`.
    pub fn read(path: &Path) -> Result<Self, TraceError> {
        let f = std::fs::File::open(path).map_err(|source| TraceError::Read { file: path.to_owned(), source })?;
        Self::parse(std::io::BufReader::new(f), path)
    }

    /// Reads a trace from `input`; errors name `file`. Lines are read with
    /// a bound of [`MAX_LINE_BYTES`].
    pub fn parse(mut input: impl BufRead, file: &Path) -> Result<Self, TraceError> {
        let mut opportunities = Vec::new();
        let mut buf = Vec::with_capacity(MAX_LINE_BYTES + 1);
        let mut line = 0u64;
        // A line that was empty, kept until the next one shows it was not
        // the file's final newline.
        let mut empty_at: Option<u64> = None;
        loop {
            let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
                .map_err(|source| TraceError::Read { file: file.to_owned(), source })?;
            if read == LineRead::End {
                break;
            }
            line += 1;
            if read == LineRead::TooLong {
                return Err(TraceError::LineTooLong { file: file.to_owned(), line });
            }
            if let Some(at) = empty_at {
                return Err(TraceError::EmptyLine { file: file.to_owned(), line: at });
            }
            if buf.is_empty() {
                empty_at = Some(line);
                continue;
            }
            let value = parse_line(&buf).map_err(|e| e.at(file, line))?;
            if let Some(&previous) = opportunities.last()
                && value < previous
            {
                return Err(TraceError::Unsorted { file: file.to_owned(), line, value, previous });
            }
            opportunities.push(value);
        }
        // One empty line at the end is the file's final newline followed by
        // another newline: mm-link refuses it too (`getline` reads it).
        if let Some(at) = empty_at {
            return Err(TraceError::EmptyLine { file: file.to_owned(), line: at });
        }
        match opportunities.last() {
            None => Err(TraceError::Empty { file: file.to_owned() }),
            Some(0) => Err(TraceError::ZeroLength { file: file.to_owned(), line }),
            Some(_) => Ok(MahimahiTrace { opportunities }),
        }
    }

    /// The opportunities' times within one loop, in ms, not decreasing.
    pub fn opportunities(&self) -> &[u64] {
        &self.opportunities
    }

    /// The loop's period in ms: the last line's value (mm-link adds it to
    /// its base time at each wrap, `use_a_delivery_opportunity`).
    pub fn period_ms(&self) -> u64 {
        *self.opportunities.last().expect("a trace has an opportunity")
    }

    /// The trace's capacity in bytes per second, counted as mm-link counts
    /// them (1 504 bytes per opportunity, 4 of them the TUN header).
    pub fn capacity_bytes_per_second(&self) -> f64 {
        self.opportunities.len() as f64 * OPPORTUNITY_BYTES as f64 * 1000.0 / self.period_ms() as f64
    }
}

/// Reads every trace stage's file into its opportunities (`trace =
/// "cell.down"`, relative to the scenario file's directory). A trace whose
/// opportunities are already in the scenario (a run's resolved scenario)
/// is used as it is and its file is not read.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let root = KeyPath::root();
    for (i, link) in s.links.iter_mut().enumerate() {
        for (dir, stages) in [("downlink", &mut link.downlink), ("uplink", &mut link.uplink)] {
            for (j, st) in stages.iter_mut().enumerate() {
                let Some(trace) = st.trace.as_mut() else { continue };
                let Some(file) = trace.file.as_ref().filter(|_| trace.opportunities_ms.is_empty()) else { continue };
                let key = root.key("links").index(i).key(dir).index(j).key("trace");
                let full = base_dir.join(file);
                let read = MahimahiTrace::read(&full).map_err(|e| {
                    let label = match e.line() {
                        Some(line) => format!("bad line {line} in this file"),
                        None => "cannot use this file".to_string(),
                    };
                    src.error(ErrorKind::TraceFile, &key, e.to_string()).label(label)
                })?;
                trace.opportunities_ms = read.opportunities;
            }
        }
    }
    Ok(())
}

/// Appends a stage replaying the Mahimahi trace in `file` to the first
/// link's downlink (`downlink`) or uplink: mm-link's `UPLINK-TRACE
/// DOWNLINK-TRACE` for a `--link` one-liner (`--downlink-trace`,
/// `--uplink-trace`). The stage is named `trace-down` or `trace-up`; its
/// queue is the default stage queue. `once` plays it once (mm-link's
/// `--once`).
pub fn append_trace_stage(scenario: &mut Scenario, downlink: bool, file: &Path, once: bool) -> Result<(), TraceError> {
    let trace = MahimahiTrace::read(file)?;
    let (name, stages) = match scenario.links.first_mut() {
        Some(link) if downlink => ("trace-down", &mut link.downlink),
        Some(link) => ("trace-up", &mut link.uplink),
        None => return Ok(()),
    };
    let mut stage = squall_link::StageConfig::named(name);
    stage.trace = Some(squall_link::DeliveryTrace {
        file: Some(file.display().to_string()),
        opportunities_ms: trace.opportunities,
        once,
    });
    stages.push(stage);
    Ok(())
}

/// Why one line is not a time, before it is located.
enum LineError {
    NotANumber(String, &'static str),
    Negative(String),
    TooLarge(String),
}

impl LineError {
    fn at(self, file: &Path, line: u64) -> TraceError {
        let file = file.to_owned();
        match self {
            LineError::NotANumber(found, hint) => TraceError::NotANumber { file, line, found, hint },
            LineError::Negative(found) => TraceError::Negative { file, line, found },
            LineError::TooLarge(found) => TraceError::TooLarge { file, line, found },
        }
    }
}

/// One line as `myatoi` reads it: blanks, an optional sign, digits, and
/// nothing after them.
fn parse_line(bytes: &[u8]) -> Result<u64, LineError> {
    let text = || String::from_utf8_lossy(bytes).into_owned();
    let trimmed = bytes.trim_ascii_start();
    let (negative, digits) = match trimmed.first() {
        Some(b'+') => (false, &trimmed[1..]),
        Some(b'-') => (true, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
    if end == 0 || end < digits.len() {
        let hint = match digits.get(end) {
            Some(b'\r') => " (the line ends in \\r: convert CRLF line ends to LF)",
            Some(b'.') => " (fractions of a millisecond are not part of the format)",
            Some(b' ' | b'\t') => " (nothing may follow the number, not even a blank)",
            _ => "",
        };
        return Err(LineError::NotANumber(text(), hint));
    }
    let value = digits.iter().try_fold(0u64, |v, &d| v.checked_mul(10)?.checked_add(u64::from(d - b'0')));
    match value {
        Some(0) => Ok(0),
        Some(_) if negative => Err(LineError::Negative(text())),
        Some(v) if v <= MAX_MILLISECONDS => Ok(v),
        _ if negative => Err(LineError::Negative(text())),
        _ => Err(LineError::TooLarge(text())),
    }
}

impl fmt::Display for MahimahiTrace {
    /// The trace in its file format (one line per opportunity).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.opportunities {
            writeln!(f, "{t}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn parse(text: &str) -> Result<MahimahiTrace, TraceError> {
        MahimahiTrace::parse(text.as_bytes(), Path::new("lte.down"))
    }

    fn error(text: &str) -> String {
        parse(text).expect_err("a bad trace").to_string()
    }

    #[test]
    fn reads_opportunities_repeats_and_the_loop_period() {
        let t = parse("0\n1\n1\n5\n").unwrap();
        assert_eq!(t.opportunities(), &[0, 1, 1, 5]);
        assert_eq!(t.period_ms(), 5);
        // As myatoi: leading blanks and a plus sign; a last line without a
        // newline.
        assert_eq!(parse("  +3\n\t7").unwrap().opportunities(), &[3, 7]);
    }

    /// mm-link's accounting: the one-line trace `1` is one 1 504-byte
    /// opportunity per ms, 1 504 000 B/s (12.032 Mbit/s with the TUN
    /// header; 12.000 Mbit/s of 1 500-byte IP packets); `1 1 2` (rattan's
    /// "24Mbps" sample) is 3 opportunities per 2 ms.
    #[test]
    fn capacity_counts_1504_bytes_per_opportunity_over_the_last_value() {
        assert_eq!(parse("1\n").unwrap().capacity_bytes_per_second(), 1_504_000.0);
        assert_eq!(parse("1\n1\n2\n").unwrap().capacity_bytes_per_second(), 2_256_000.0);
    }

    #[test]
    fn bad_traces_are_located_errors() {
        assert_eq!(
            error(""),
            "lte.down: the trace is empty; expected one opportunity per line, in ms from the trace's start, e.g. `1`"
        );
        assert_eq!(error("1\n\n2\n"), "lte.down:2: empty line; expected a whole number of milliseconds, e.g. `12`");
        assert_eq!(error("1\n\n"), "lte.down:2: empty line; expected a whole number of milliseconds, e.g. `12`");
        assert_eq!(
            error("1\n5\n3\n"),
            "lte.down:3: 3 ms comes after 5 ms on line 2; expected times that do not decrease"
        );
        assert_eq!(
            error("1\n-4\n"),
            "lte.down:2: `-4` is negative; expected a time of 0 ms or more from the trace's start"
        );
        assert_eq!(
            error("1\nx2\n"),
            "lte.down:2: `x2` is not a whole number of milliseconds; expected digits only, e.g. `12`"
        );
        assert!(error("1\r\n2\r\n").starts_with("lte.down:1: `1\r` is not a whole number"), "{}", error("1\r\n"));
        assert!(error("1\r\n").ends_with("(the line ends in \\r: convert CRLF line ends to LF)"));
        assert!(error("1.5\n").ends_with("(fractions of a millisecond are not part of the format)"));
        assert!(error("1 \n").ends_with("(nothing may follow the number, not even a blank)"));
        assert_eq!(
            error("1\n10000000001\n"),
            "lte.down:2: `10000000001` ms is too large; expected at most 10000000000 ms (about 116 days)"
        );
        assert_eq!(
            error("99999999999999999999999999\n"),
            "lte.down:1: `99999999999999999999999999` ms is too large; expected at most 10000000000 ms (about 116 days)"
        );
        assert!(error("0\n0\n").starts_with("lte.down:2: the last opportunity is at 0 ms"));
    }

    /// A reader that yields `len` bytes of `b'7'` and counts what was
    /// read: a 1 GB line is refused after the bound, not held whole.
    struct Endless {
        left: u64,
        read: u64,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.left) as usize;
            buf[..n].fill(b'7');
            self.left -= n as u64;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn a_line_of_1_gb_is_refused_without_being_read_whole() {
        let mut source = Endless { left: 1 << 30, read: 0 };
        let reader = std::io::BufReader::with_capacity(4096, &mut source);
        let e = MahimahiTrace::parse(reader, Path::new("big.trace")).expect_err("too long").to_string();
        assert_eq!(e, "big.trace:1: line longer than 64 bytes; expected a whole number of milliseconds, e.g. `12`");
        assert!(source.read <= 4096, "read {} bytes", source.read);
    }

    #[test]
    fn written_traces_read_back_the_same() {
        let t = parse("0\n3\n3\n8\n").unwrap();
        assert_eq!(parse(&t.to_string()).unwrap(), t);
    }

    #[test]
    fn a_missing_file_names_it() {
        let e = MahimahiTrace::read(Path::new("/nonexistent/squall/lte.down")).expect_err("missing").to_string();
        assert!(e.starts_with("/nonexistent/squall/lte.down: cannot read the trace: "), "{e}");
    }
}
