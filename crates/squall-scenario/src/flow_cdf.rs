//! Flow-size CDF files, the format transport studies pass around for the
//! web-search and data-mining workloads (pFabric, HPCC's and Homa's
//! traffic generators): one point of the cumulative distribution a line,
//! `SIZE CDF`, the size in bytes and the share of flows no larger, from
//! the smallest size to the largest, the last share 1:
//!
//! ```text
//! # size (bytes)  cdf
//! 1000            0.5
//! 10000           0.9
//! 1000000         1
//! ```
//!
//! Between two points the sizes are spread evenly (the CDF is linear
//! between them, as ns-3's `EmpiricalRandomVariable` interpolates); a
//! first point with a share above 0 is that share of flows at exactly its
//! size. Blank lines and `#` comments are skipped. Equal sizes on two
//! lines are allowed (a step in the CDF), a size or share smaller than the
//! line before is not.
//!
//! Every error names the file and line (and the column of a bad word);
//! lines are read with a bound of [`MAX_LINE_BYTES`]
//! ([`crate::bounded_lines`]), so a file of one 1 GB line is refused
//! without being held in memory.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::bounded_lines::{LineRead, next_line};

/// The longest line read, in bytes (a line holds two numbers).
pub const MAX_LINE_BYTES: usize = 1024;

/// The most points a file may hold (16 MB of points).
pub const MAX_POINTS: usize = 1 << 20;

/// How far the last share may be from 1 (a file's rounding).
const END_TOLERANCE: f64 = 1e-6;

/// One point of a flow-size CDF: `cdf` of the flows have at most `bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CdfPoint {
    pub bytes: f64,
    pub cdf: f64,
}

/// What is wrong with a CDF file, at its file and line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum FlowCdfError {
    #[error("{file}: cannot read the flow-size CDF: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error(
        "{file}: the flow-size CDF has no points; expected lines `SIZE CDF` (bytes, share of flows), like `1000 0.5`"
    )]
    Empty { file: PathBuf },
    #[error("{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected `SIZE CDF`, like `1000 0.5`")]
    LineTooLong { file: PathBuf, line: u64 },
    #[error("{file}:{line}:{column}: `{found}` is not a number; expected {what}")]
    NotANumber { file: PathBuf, line: u64, column: usize, found: String, what: &'static str },
    #[error("{file}:{line}: one number; expected two, the size in bytes and its CDF, like `1000 0.5`")]
    MissingCdf { file: PathBuf, line: u64 },
    #[error(
        "{file}:{line}:{column}: `{found}` after the size and CDF; expected two numbers a line (`#` starts a comment)"
    )]
    ExtraWord { file: PathBuf, line: u64, column: usize, found: String },
    #[error("{file}:{line}:{column}: size {found} is negative; expected a size in bytes, 0 or more")]
    NegativeSize { file: PathBuf, line: u64, column: usize, found: String },
    #[error("{file}:{line}:{column}: CDF {found} is not a share; expected a number between 0 and 1")]
    NotAShare { file: PathBuf, line: u64, column: usize, found: String },
    #[error(
        "{file}:{line}: {what} {found} is smaller than {previous} on the line before; expected sizes and CDF values in increasing order"
    )]
    Unsorted { file: PathBuf, line: u64, what: &'static str, found: f64, previous: f64 },
    #[error(
        "{file}:{line}: the CDF ends at {last}; expected its last point at 1 (every flow is no larger than the largest size)"
    )]
    NotEndingAtOne { file: PathBuf, line: u64, last: f64 },
    #[error("{file}:{line}: more than {MAX_POINTS} points")]
    TooMany { file: PathBuf, line: u64 },
}

impl FlowCdfError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        use FlowCdfError::*;
        match self {
            Read { .. } | Empty { .. } => None,
            LineTooLong { line, .. }
            | NotANumber { line, .. }
            | MissingCdf { line, .. }
            | ExtraWord { line, .. }
            | NegativeSize { line, .. }
            | NotAShare { line, .. }
            | Unsorted { line, .. }
            | NotEndingAtOne { line, .. }
            | TooMany { line, .. } => Some(*line),
        }
    }
}

/// Reads the CDF in the file `path` (a regular file only: a device or a
/// pipe could block or never end).
pub fn read(path: &Path) -> Result<Vec<CdfPoint>, FlowCdfError> {
    let err = |source| FlowCdfError::Read { file: path.to_owned(), source };
    let f = std::fs::File::open(path).map_err(err)?;
    if !f.metadata().map_err(err)?.is_file() {
        return Err(err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")));
    }
    parse(std::io::BufReader::new(f), path)
}

/// Reads a CDF from `input`; errors name `file`.
pub fn parse(mut input: impl BufRead, file: &Path) -> Result<Vec<CdfPoint>, FlowCdfError> {
    let mut points: Vec<CdfPoint> = Vec::new();
    let mut buf = Vec::with_capacity(64);
    let (mut line, mut last_line) = (0u64, 0u64);
    loop {
        let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| FlowCdfError::Read { file: file.to_owned(), source })?;
        if read == LineRead::End {
            break;
        }
        line += 1;
        if read == LineRead::TooLong {
            return Err(FlowCdfError::LineTooLong { file: file.to_owned(), line });
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.split('#').next().unwrap_or("");
        // The words of the line with their 1-based columns.
        let mut words = Vec::with_capacity(2);
        let mut column = 0;
        for word in text.split_inclusive(|c: char| c.is_ascii_whitespace()) {
            let start = column + 1;
            column += word.len();
            let word = word.trim_matches(|c: char| c.is_ascii_whitespace());
            if !word.is_empty() {
                words.push((start, word));
            }
        }
        let found = |w: &str| w.chars().take(40).collect::<String>();
        let number = |(column, word): (usize, &str), what| match word.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(FlowCdfError::NotANumber { file: file.to_owned(), line, column, found: found(word), what }),
        };
        let (size_word, cdf_word) = match words[..] {
            [] => continue,
            [_] => return Err(FlowCdfError::MissingCdf { file: file.to_owned(), line }),
            [s, c] => (s, c),
            [_, _, (column, extra), ..] => {
                return Err(FlowCdfError::ExtraWord { file: file.to_owned(), line, column, found: found(extra) });
            }
        };
        let bytes = number(size_word, "a size in bytes, like `1000`")?;
        if bytes < 0.0 {
            let (column, word) = size_word;
            return Err(FlowCdfError::NegativeSize { file: file.to_owned(), line, column, found: found(word) });
        }
        let cdf = number(cdf_word, "a CDF value between 0 and 1, like `0.5`")?;
        if !(0.0..=1.0).contains(&cdf) {
            let (column, word) = cdf_word;
            return Err(FlowCdfError::NotAShare { file: file.to_owned(), line, column, found: found(word) });
        }
        if let Some(prev) = points.last() {
            let unsorted =
                |what, found, previous| FlowCdfError::Unsorted { file: file.to_owned(), line, what, found, previous };
            if bytes < prev.bytes {
                return Err(unsorted("size", bytes, prev.bytes));
            }
            if cdf < prev.cdf {
                return Err(unsorted("CDF", cdf, prev.cdf));
            }
        }
        if points.len() == MAX_POINTS {
            return Err(FlowCdfError::TooMany { file: file.to_owned(), line });
        }
        points.push(CdfPoint { bytes, cdf });
        last_line = line;
    }
    let Some(last) = points.last() else { return Err(FlowCdfError::Empty { file: file.to_owned() }) };
    if (last.cdf - 1.0).abs() > END_TOLERANCE {
        return Err(FlowCdfError::NotEndingAtOne { file: file.to_owned(), line: last_line, last: last.cdf });
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn parse_str(s: &str) -> Result<Vec<CdfPoint>, FlowCdfError> {
        parse(s.as_bytes(), Path::new("t.cdf"))
    }

    fn p(bytes: f64, cdf: f64) -> CdfPoint {
        CdfPoint { bytes, cdf }
    }

    #[test]
    fn reads_points_with_comments_blank_lines_and_steps() {
        let t = parse_str("# size cdf\n1000 0.5\n\n  10000\t0.9 # a comment\r\n10000 0.95\n1e6 1\n").unwrap();
        assert_eq!(t, vec![p(1000.0, 0.5), p(10000.0, 0.9), p(10000.0, 0.95), p(1e6, 1.0)]);
        // The last share may be off 1 by a file's rounding.
        assert_eq!(parse_str("6 0.15\n13 0.9999999\n").unwrap().len(), 2);
    }

    /// Each bad file gives its own error at its line (and column).
    #[test]
    fn bad_files_give_located_errors() {
        let e = parse_str("# only a comment\n\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::Empty { .. }), "{e}");
        assert!(e.to_string().starts_with("t.cdf: the flow-size CDF has no points"), "{e}");

        let e = parse_str("1000 0.5\n2000 0.4\n3000 1\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::Unsorted { line: 2, what: "CDF", .. }), "{e}");
        assert!(e.to_string().starts_with("t.cdf:2: CDF 0.4 is smaller than 0.5 on the line before"), "{e}");
        let e = parse_str("1000 0.5\n\n900 0.6\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::Unsorted { line: 3, what: "size", .. }), "{e}");

        let e = parse_str("1000 0.5\n2000 0.9\n# end\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::NotEndingAtOne { line: 2, .. }), "{e}");
        assert!(e.to_string().starts_with("t.cdf:2: the CDF ends at 0.9; expected its last point at 1"), "{e}");

        let e = parse_str("0 0\n-5 0.5\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::NegativeSize { line: 2, column: 1, .. }), "{e}");
        assert!(e.to_string().starts_with("t.cdf:2:1: size -5 is negative"), "{e}");
        let e = parse_str("10 -0.1\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::NotAShare { line: 1, column: 4, .. }), "{e}");
        let e = parse_str("10 1.5\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::NotAShare { .. }), "{e}");

        let e = parse_str("10 0.5\n20 half\n").unwrap_err();
        assert!(matches!(&e, FlowCdfError::NotANumber { line: 2, column: 4, found, .. } if found == "half"), "{e}");
        assert!(e.to_string().starts_with("t.cdf:2:4: `half` is not a number; expected a CDF value"), "{e}");
        let e = parse_str("10KB 1\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::NotANumber { line: 1, column: 1, .. }), "{e}");
        let e = parse_str("inf 1\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::NotANumber { .. }), "{e}");
        let e = parse_str("10\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::MissingCdf { line: 1, .. }), "{e}");
        let e = parse_str("10 0.5 7\n").unwrap_err();
        assert!(matches!(e, FlowCdfError::ExtraWord { line: 1, column: 8, .. }), "{e}");
    }

    /// A 1 GB line (streamed, never built) is refused once the bound is
    /// passed, with its line number.
    #[test]
    fn a_huge_line_is_refused_without_being_read_whole() {
        let line_of_gigabyte = std::io::repeat(b'1').take(1 << 30);
        let input = std::io::BufReader::new(b"10 0.5\n".chain(line_of_gigabyte));
        let e = parse(input, Path::new("huge.cdf")).unwrap_err();
        assert!(matches!(e, FlowCdfError::LineTooLong { line: 2, .. }), "{e}");
        assert!(e.to_string().starts_with("huge.cdf:2: line longer than 1024 bytes"), "{e}");
    }

    #[test]
    fn the_shipped_web_search_like_file_reads() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/flow-sizes-web.cdf");
        let t = read(&file).unwrap();
        assert_eq!(t.first().map(|p| p.cdf), Some(0.0));
        assert_eq!(t.last().map(|p| p.cdf), Some(1.0));
    }
}
