//! Files of per-packet loss decisions (issue 30; read into
//! [`squall_link::LossSequence`]): `error = { sequence = { file =
//! "loss.txt" } }`, read relative to the scenario file.
//!
//! One decision per line, in the order of the frames the stage sends:
//! `0` or `keep` (the frame gets through), `1` or `drop` (it is lost, or
//! corrupted with `error_mode = "corrupt"`), with blanks around it; `#`
//! starts a comment; blank lines are skipped (a CRLF line end is a blank). A file holds 1 to
//! [`MAX_DECISIONS`] decisions; lines are read with a bound of
//! [`MAX_LINE_BYTES`], so a file of one 1 GB line is refused without being
//! held in memory.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use squall_link::ErrorModel;
use squall_link::loss_sequence::{Decisions, MAX_DECISIONS};

use crate::bounded_lines::{LineRead, next_line};
use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;

/// The longest line read, in bytes (a decision and a short comment).
pub const MAX_LINE_BYTES: usize = 256;

/// What is wrong with a decision file, located at its file and line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum SequenceError {
    #[error("{file}: cannot read the loss decisions: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{file}: no decisions; expected one per line: 0 or keep (gets through), 1 or drop (lost)")]
    Empty { file: PathBuf },
    #[error("{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected one decision: 0, 1, keep or drop")]
    LineTooLong { file: PathBuf, line: u64 },
    #[error("{file}:{line}: `{found}` is not a decision; expected 0 or keep (gets through), 1 or drop (lost){hint}")]
    NotADecision { file: PathBuf, line: u64, found: String, hint: &'static str },
    #[error(
        "{file}:{line}: more than {MAX_DECISIONS} decisions; expected at most {MAX_DECISIONS} (the sequence loops)"
    )]
    TooMany { file: PathBuf, line: u64 },
}

impl SequenceError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            SequenceError::Read { .. } | SequenceError::Empty { .. } => None,
            SequenceError::LineTooLong { line, .. }
            | SequenceError::NotADecision { line, .. }
            | SequenceError::TooMany { line, .. } => Some(*line),
        }
    }
}

/// Reads the decisions in the file `path` (`true`: lost).
pub fn read(path: &Path) -> Result<Vec<bool>, SequenceError> {
    let f = std::fs::File::open(path).map_err(|source| SequenceError::Read { file: path.to_owned(), source })?;
    parse(std::io::BufReader::new(f), path)
}

/// Reads decisions from `input`; errors name `file`.
pub fn parse(mut input: impl BufRead, file: &Path) -> Result<Vec<bool>, SequenceError> {
    let mut lost = Vec::new();
    let mut buf = Vec::with_capacity(MAX_LINE_BYTES + 1);
    let mut line = 0u64;
    loop {
        let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| SequenceError::Read { file: file.to_owned(), source })?;
        match read {
            LineRead::End => break,
            LineRead::TooLong => return Err(SequenceError::LineTooLong { file: file.to_owned(), line: line + 1 }),
            LineRead::Line => line += 1,
        }
        let content = buf.split(|&b| b == b'#').next().unwrap_or(&[]);
        let word = content.trim_ascii();
        let decision = match word {
            b"" => continue,
            b"0" | b"keep" => false,
            b"1" | b"drop" => true,
            _ => {
                let hint = if word.iter().all(|b| matches!(b, b'0' | b'1')) {
                    " (one decision per line, not several)"
                } else {
                    ""
                };
                let found = String::from_utf8_lossy(word).into_owned();
                return Err(SequenceError::NotADecision { file: file.to_owned(), line, found, hint });
            }
        };
        if lost.len() == MAX_DECISIONS {
            return Err(SequenceError::TooMany { file: file.to_owned(), line });
        }
        lost.push(decision);
    }
    if lost.is_empty() {
        return Err(SequenceError::Empty { file: file.to_owned() });
    }
    Ok(lost)
}

/// Reads the file of every `error = { sequence = { file } }` (in a stage
/// or a state's `set`) into its pattern, unless the pattern is there
/// already (a run's resolved scenario).
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let root = KeyPath::root();
    for (i, link) in s.links.iter_mut().enumerate() {
        for (dir, stages) in [("downlink", &mut link.downlink), ("uplink", &mut link.uplink)] {
            for (j, st) in stages.iter_mut().enumerate() {
                let key = root.key("links").index(i).key(dir).index(j).key("error");
                fill(&mut st.error, &key, base_dir, src)?;
            }
        }
    }
    for (i, state) in s.states.iter_mut().enumerate() {
        for (stage, patch) in state.set.iter_mut() {
            if let Some(error) = patch.error_mut() {
                let key = root.key("states").index(i).key("set").key(stage).key("error");
                fill(error, &key, base_dir, src)?;
            }
        }
    }
    Ok(())
}

fn fill(error: &mut ErrorModel, key: &KeyPath, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let ErrorModel::Sequence(seq) = error else { return Ok(()) };
    let Some(file) = seq.file.as_ref().filter(|_| seq.pattern.is_empty()) else { return Ok(()) };
    let lost = read(&base_dir.join(file)).map_err(|e| {
        let label = match e.line() {
            Some(line) => format!("bad line {line} in this file"),
            None => "cannot use this file".to_string(),
        };
        src.error(ErrorKind::TraceFile, &key.key("sequence").key("file"), e.to_string()).label(label)
    })?;
    seq.pattern = Decisions::from(lost);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse(text.as_bytes(), Path::new("loss.txt")).expect_err("a bad file").to_string()
    }

    #[test]
    fn reads_decisions_words_comments_and_blank_lines() {
        let lost = parse("# measured\n0\nkeep\n\n 1 # lost\ndrop\n0".as_bytes(), Path::new("l")).unwrap();
        assert_eq!(lost, vec![false, false, true, true, false]);
        // A CRLF line end is a blank after the decision.
        assert_eq!(parse("0\r\n1\r\n".as_bytes(), Path::new("l")).unwrap(), vec![false, true]);
    }

    #[test]
    fn bad_files_are_located_errors() {
        assert_eq!(
            error("# nothing\n\n"),
            "loss.txt: no decisions; expected one per line: 0 or keep (gets through), 1 or drop (lost)"
        );
        assert_eq!(
            error("0\n1\nlost\n"),
            "loss.txt:3: `lost` is not a decision; expected 0 or keep (gets through), 1 or drop (lost)"
        );
        assert_eq!(
            error("0\n-1\n"),
            "loss.txt:2: `-1` is not a decision; expected 0 or keep (gets through), 1 or drop (lost)"
        );
        assert_eq!(
            error("0\n2\n"),
            "loss.txt:2: `2` is not a decision; expected 0 or keep (gets through), 1 or drop (lost)"
        );
        assert!(error("0\n0110\n").ends_with("(one decision per line, not several)"), "{}", error("0\n0110\n"));
    }

    /// 10⁷ decisions are read; one more is refused at its line.
    #[test]
    fn more_than_the_most_decisions_is_refused_at_its_line() {
        let mut text = "0\n".repeat(MAX_DECISIONS);
        assert_eq!(parse(text.as_bytes(), Path::new("l")).unwrap().len(), MAX_DECISIONS);
        text.push_str("# a comment is not a decision\n1\n");
        let e = parse(text.as_bytes(), Path::new("big.txt")).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "big.txt:{}: more than 10000000 decisions; expected at most 10000000 (the sequence loops)",
                MAX_DECISIONS + 2
            )
        );
    }

    /// A reader of `left` bytes of `0`, counting what was read.
    struct Endless {
        left: u64,
        read: u64,
    }

    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.left) as usize;
            buf[..n].fill(b'0');
            self.left -= n as u64;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn a_line_of_1_gb_is_refused_without_being_read_whole() {
        let mut source = Endless { left: 1 << 30, read: 0 };
        let reader = std::io::BufReader::with_capacity(4096, &mut source);
        let e = parse(reader, Path::new("big.txt")).expect_err("too long").to_string();
        assert_eq!(e, "big.txt:1: line longer than 256 bytes; expected one decision: 0, 1, keep or drop");
        assert!(source.read <= 4096, "read {} bytes", source.read);
    }

    #[test]
    fn a_missing_file_names_it() {
        let e = read(Path::new("/nonexistent/squall/loss.txt")).expect_err("missing").to_string();
        assert!(e.starts_with("/nonexistent/squall/loss.txt: cannot read the loss decisions: "), "{e}");
    }
}
