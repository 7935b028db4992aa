//! Samples that `squall trace maketable` builds a netem table from (as
//! iproute2's `netem/maketable.c` reads them with `fscanf("%lf")`):
//! numbers separated by blanks or lines, in any one unit; `#` starts a
//! comment. Read one line at a time with a bound of [`MAX_LINE_BYTES`],
//! and at most [`MAX_SAMPLES`] samples, so that neither a file of one
//! 1 GB line nor an endless one is held in memory; every error names the
//! file and line.
//!
//! Where squall differs from maketable, on purpose: maketable's `fscanf`
//! stops silently at the first word that is not a number and builds the
//! table from what came before; squall refuses the word. NaN and
//! infinities are refused.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::bounded_lines::{LineRead, next_line};

/// The longest line read, in bytes.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The most samples read (80 MB of them): far more than a measured
/// delay distribution needs for a 4 096-entry table.
pub const MAX_SAMPLES: usize = 10_000_000;

/// What is wrong with a samples file, located at its file and line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum SamplesError {
    #[error("{file}: cannot read the samples: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{file}: {count} samples; expected at least two numbers to build a table from")]
    TooFew { file: PathBuf, count: usize },
    #[error(
        "{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected numbers separated by blanks, like 12.5 13"
    )]
    LineTooLong { file: PathBuf, line: u64 },
    #[error("{file}:{line}: `{found}` is not a number; expected samples as plain numbers, like 12.5")]
    NotANumber { file: PathBuf, line: u64, found: String },
    #[error("{file}:{line}: more than {MAX_SAMPLES} samples; expected at most {MAX_SAMPLES}")]
    TooMany { file: PathBuf, line: u64 },
}

impl SamplesError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            SamplesError::Read { .. } | SamplesError::TooFew { .. } => None,
            SamplesError::LineTooLong { line, .. }
            | SamplesError::NotANumber { line, .. }
            | SamplesError::TooMany { line, .. } => Some(*line),
        }
    }
}

/// Reads the samples in the file `path`.
pub fn read(path: &Path) -> Result<Vec<f64>, SamplesError> {
    let f = std::fs::File::open(path).map_err(|source| SamplesError::Read { file: path.to_owned(), source })?;
    parse(std::io::BufReader::new(f), path)
}

/// Reads samples from `input`; errors name `file`.
pub fn parse(mut input: impl BufRead, file: &Path) -> Result<Vec<f64>, SamplesError> {
    let mut values = Vec::new();
    let mut buf = Vec::with_capacity(256);
    let mut line = 0u64;
    loop {
        let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| SamplesError::Read { file: file.to_owned(), source })?;
        match read {
            LineRead::End => break,
            LineRead::TooLong => return Err(SamplesError::LineTooLong { file: file.to_owned(), line: line + 1 }),
            LineRead::Line => line += 1,
        }
        let content = buf.split(|&b| b == b'#').next().unwrap_or(&[]);
        for word in content.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
            let value = std::str::from_utf8(word).ok().and_then(|w| w.parse::<f64>().ok()).filter(|v| v.is_finite());
            let Some(value) = value else {
                let found = String::from_utf8_lossy(word).chars().take(40).collect();
                return Err(SamplesError::NotANumber { file: file.to_owned(), line, found });
            };
            if values.len() == MAX_SAMPLES {
                return Err(SamplesError::TooMany { file: file.to_owned(), line });
            }
            values.push(value);
        }
    }
    if values.len() < 2 {
        return Err(SamplesError::TooFew { file: file.to_owned(), count: values.len() });
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Vec<f64>, SamplesError> {
        parse(text.as_bytes(), Path::new("s.txt"))
    }

    #[test]
    fn numbers_on_lines_and_between_blanks_with_comments() {
        assert_eq!(parse_str("# ms\n12.5 13\n\n14\t-1e-3 # last\n").unwrap(), [12.5, 13.0, 14.0, -0.001]);
    }

    /// Each bad input is refused with its file and line: empty, one
    /// sample, a word, NaN, infinity, a line past the bound (read no
    /// further than it), bytes that are not UTF-8.
    #[test]
    fn bad_samples_are_refused_at_their_line() {
        let e = parse_str("").unwrap_err();
        assert_eq!(e.to_string(), "s.txt: 0 samples; expected at least two numbers to build a table from");
        assert!(matches!(parse_str("# x\n5\n").unwrap_err(), SamplesError::TooFew { count: 1, .. }));
        let e = parse_str("1 2\n3 fast 4\n").unwrap_err();
        assert_eq!(e.to_string(), "s.txt:2: `fast` is not a number; expected samples as plain numbers, like 12.5");
        for bad in ["NaN", "inf", "-inf", "1e999", "0x10"] {
            assert_eq!(parse_str(&format!("1\n2\n{bad}\n")).unwrap_err().line(), Some(3), "{bad}");
        }
        let long = format!("1\n{}\n", "1 ".repeat(MAX_LINE_BYTES));
        let e = parse_str(&long).unwrap_err();
        assert!(matches!(e, SamplesError::LineTooLong { line: 2, .. }), "{e}");
        let e = parse(&b"1\n2 \xff\n"[..], Path::new("s.txt")).unwrap_err();
        assert_eq!(e.line(), Some(2), "{e}");
        // One sample past the most, on the last line.
        let many = format!("{}1 1\n", "1\n".repeat(MAX_SAMPLES - 1));
        let e = parse_str(&many).unwrap_err();
        assert!(matches!(e, SamplesError::TooMany { line, .. } if line == MAX_SAMPLES as u64), "{e}");
        assert_eq!(parse_str(&"1\n".repeat(MAX_SAMPLES)).unwrap().len(), MAX_SAMPLES);
    }
}
