//! netem distribution tables in iproute2's `.dist` format (tc-netem(8)
//! `distribution FILE`; read as iproute2 `tc/q_netem.c`
//! `get_distribution` reads them; written by iproute2's `maketable` and
//! `squall trace maketable`).
//!
//! Lines that are empty or start with `#` are skipped; every other line
//! holds whitespace-separated signed integers, each an entry of the table
//! scaled by `NETEM_DIST_SCALE` (8192, include/uapi/linux/pkt_sched.h),
//! so within an `s16`: −32768..=32767. A table has 1 to 16 384 entries
//! (tc's `MAX_DIST`). The kernel draws an entry `t` uniformly and delays
//! the packet by `mu + sigma · t / 8192` (net/sched/sch_netem.c
//! `tabledist()`).
//!
//! Where squall differs from tc, on purpose: every error names the file,
//! line and column; tc's `strtol` stops silently at the first word that is
//! not a number and drops the rest of the line, squall refuses it (a `#`
//! after the numbers starts a comment); a value outside an `s16`, which tc
//! truncates, is refused; tc reads `0x1f` as hexadecimal and `010` as
//! octal (`strtol` in base 0), squall reads decimal only and refuses both
//! rather than give them another meaning; a line is read with a bound of
//! [`MAX_LINE_BYTES`], so a file of one 1 GB line is refused without being
//! held in memory.

use crate::bounded_lines::{LineRead, next_line};
use std::io::BufRead;
use std::path::{Path, PathBuf};

pub use squall_link::dist::netem_table::MAX_ENTRIES;

/// The longest line read, in bytes: room for a whole table of
/// [`MAX_ENTRIES`] entries of up to 7 characters on one line.
pub const MAX_LINE_BYTES: usize = 128 * 1024;

/// What is wrong with a table file, located at its file, line and column
/// (1-based).
#[derive(Debug, thiserror::Error)]
pub enum DistTableError {
    #[error("{file}: cannot read the distribution table: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error(
        "{file}: the distribution table has no entries; expected lines of whole numbers scaled by 8192, like `-8192 0 8192` (iproute2's .dist format)"
    )]
    Empty { file: PathBuf },
    #[error(
        "{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected whole numbers separated by blanks, like `-8192 0 8192`"
    )]
    LineTooLong { file: PathBuf, line: u64 },
    #[error(
        "{file}:{line}:{column}: `{found}` is not a whole number; expected a decimal integer scaled by 8192, like `-8192` or `4096`{hint}"
    )]
    NotANumber { file: PathBuf, line: u64, column: usize, found: String, hint: &'static str },
    #[error(
        "{file}:{line}:{column}: {found} is out of range; expected an entry between -32768 and 32767 (a 16-bit table entry, 8192 = one sigma)"
    )]
    OutOfRange { file: PathBuf, line: u64, column: usize, found: String },
    #[error(
        "{file}:{line}: more than {MAX_ENTRIES} entries; expected at most {MAX_ENTRIES} (tc's MAX_DIST; maketable writes 4096)"
    )]
    TooMany { file: PathBuf, line: u64 },
}

impl DistTableError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            DistTableError::Read { .. } | DistTableError::Empty { .. } => None,
            DistTableError::LineTooLong { line, .. }
            | DistTableError::NotANumber { line, .. }
            | DistTableError::OutOfRange { line, .. }
            | DistTableError::TooMany { line, .. } => Some(*line),
        }
    }
}

/// Reads the table in the file `path`.
/// Only a regular file is read (a device or a pipe named by a netem line
/// could block or never end).
pub fn read(path: &Path) -> Result<Vec<i16>, DistTableError> {
    let err = |source| DistTableError::Read { file: path.to_owned(), source };
    let f = std::fs::File::open(path).map_err(err)?;
    if !f.metadata().map_err(err)?.is_file() {
        return Err(err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")));
    }
    parse(std::io::BufReader::new(f), path)
}

/// Reads a table from `input`; errors name `file`. Lines are read with a
/// bound of [`MAX_LINE_BYTES`].
pub fn parse(mut input: impl BufRead, file: &Path) -> Result<Vec<i16>, DistTableError> {
    let mut entries = Vec::new();
    let mut buf = Vec::with_capacity(256);
    let mut line = 0u64;
    loop {
        let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| DistTableError::Read { file: file.to_owned(), source })?;
        if read == LineRead::End {
            break;
        }
        line += 1;
        if read == LineRead::TooLong {
            return Err(DistTableError::LineTooLong { file: file.to_owned(), line });
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.split('#').next().unwrap_or("");
        let mut column = 0;
        for word in text.split_inclusive(|c: char| c.is_ascii_whitespace()) {
            let start = column + 1;
            column += word.len();
            let word = word.trim_matches(|c: char| c.is_ascii_whitespace());
            if word.is_empty() {
                continue;
            }
            let at = |hint| DistTableError::NotANumber {
                file: file.to_owned(),
                line,
                column: start,
                found: word.chars().take(40).collect(),
                hint,
            };
            let digits = word.strip_prefix(['-', '+']).unwrap_or(word);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                let hint = if digits.starts_with("0x") || digits.starts_with("0X") {
                    " (tc would read it as hexadecimal; write it in decimal)"
                } else {
                    ""
                };
                return Err(at(hint));
            }
            if digits.len() > 1 && digits.starts_with('0') {
                return Err(at(" without leading zeros (tc would read it as octal)"));
            }
            let value = word.parse::<i64>().ok().and_then(|v| i16::try_from(v).ok()).ok_or_else(|| {
                DistTableError::OutOfRange {
                    file: file.to_owned(),
                    line,
                    column: start,
                    found: word.chars().take(40).collect(),
                }
            })?;
            if entries.len() == MAX_ENTRIES {
                return Err(DistTableError::TooMany { file: file.to_owned(), line });
            }
            entries.push(value);
        }
    }
    if entries.is_empty() {
        return Err(DistTableError::Empty { file: file.to_owned() });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn parse_str(s: &str) -> Result<Vec<i16>, DistTableError> {
        parse(s.as_bytes(), Path::new("t.dist"))
    }

    #[test]
    fn reads_maketable_output_with_comments_and_blank_lines() {
        let t = parse_str("# This is the distribution table\n-8192 0 8192\n\n  4096\t-4096 # two more\r\n").unwrap();
        assert_eq!(t, vec![-8192, 0, 8192, 4096, -4096]);
        let entries: Vec<i16> = (-2000..2096).map(|v| v as i16).collect();
        let text = squall_link::dist::netem_table::format_dist(&entries);
        assert_eq!(parse_str(&text).unwrap(), entries, "what format_dist writes reads back");
    }

    /// Each bad table gives its own error at its line and column.
    #[test]
    fn bad_tables_give_located_errors() {
        let e = parse_str("# only a comment\n\n").unwrap_err();
        assert!(matches!(e, DistTableError::Empty { .. }), "{e}");
        assert_eq!(e.to_string().split(':').next(), Some("t.dist"));

        let e = parse_str("1 2\n3 x4 5\n").unwrap_err();
        assert!(matches!(&e, DistTableError::NotANumber { line: 2, column: 3, found, .. } if found == "x4"), "{e}");
        assert!(e.to_string().starts_with("t.dist:2:3: `x4` is not a whole number"), "{e}");

        let e = parse_str("1.5\n").unwrap_err();
        assert!(matches!(e, DistTableError::NotANumber { line: 1, column: 1, .. }), "{e}");
        let e = parse_str("0x10\n").unwrap_err();
        assert!(e.to_string().contains("hexadecimal"), "{e}");
        let e = parse_str("010\n").unwrap_err();
        assert!(e.to_string().contains("octal"), "{e}");
        let e = parse_str("-\n").unwrap_err();
        assert!(matches!(e, DistTableError::NotANumber { .. }), "{e}");

        let e = parse_str("0\n1 32768\n").unwrap_err();
        assert!(matches!(e, DistTableError::OutOfRange { line: 2, column: 3, .. }), "{e}");
        let e = parse_str("-32769\n").unwrap_err();
        assert!(matches!(e, DistTableError::OutOfRange { line: 1, .. }), "{e}");
        assert_eq!(parse_str("-32768 32767\n").unwrap(), vec![-32768, 32767], "the s16 bounds are in range");
        let e = parse_str("99999999999999999999999\n").unwrap_err();
        assert!(matches!(e, DistTableError::OutOfRange { .. }), "{e}");

        let many = "1\n".repeat(MAX_ENTRIES + 1);
        let e = parse_str(&many).unwrap_err();
        assert!(matches!(e, DistTableError::TooMany { line, .. } if line == MAX_ENTRIES as u64 + 1), "{e}");
        assert_eq!(parse_str(&"1\n".repeat(MAX_ENTRIES)).unwrap().len(), MAX_ENTRIES, "tc's limit itself is fine");
    }

    /// A 1 GB line (streamed, never built) is refused once the bound is
    /// passed, with its line number.
    #[test]
    fn a_huge_line_is_refused_without_being_read_whole() {
        let line_of_gigabyte = std::io::repeat(b'1').take(1 << 30);
        let input = std::io::BufReader::new(b"1 2 3\n".chain(line_of_gigabyte));
        let e = parse(input, Path::new("huge.dist")).unwrap_err();
        assert!(matches!(e, DistTableError::LineTooLong { line: 2, .. }), "{e}");
        assert!(e.to_string().starts_with("huge.dist:2: line longer than"), "{e}");
    }
}
