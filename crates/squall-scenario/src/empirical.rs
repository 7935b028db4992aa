//! Empirical distributions (seed 000 §5.1): a `{ kind = "empirical", file =
//! "delays.txt" }` anywhere in the scenario is filled from that file, read
//! relative to the scenario file's directory. One value per line with the
//! quantity's unit (`12 ms`, `1500 B`; plain numbers for ratios); blank
//! lines and `#` comments are allowed. When `values` are given as well (a
//! run's resolved scenario), they are used and the file is not read. The
//! same file replays per-packet delays and background patterns in order
//! (`order = "sequence"`).
//!
//! A file is read one line at a time with a bound of [`MAX_LINE_BYTES`] a
//! line and [`MAX_VALUES`] values, so that neither a file of one 1 GB line
//! nor an endless one (`/dev/zero`, a pipe) is held in memory; every error
//! names the file and its line.

use std::io::{BufRead, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use squall_link::dist::Quantity;
use squall_link::keys::{DistributionMut, KeyPart};
use squall_link::{Bytes, Distribution, Duration};

use crate::bounded_lines::{LineRead, next_line};
use crate::error::{ErrorKind, KeyPath, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;

/// The longest line read, in bytes (a value with its unit and a comment).
pub const MAX_LINE_BYTES: usize = 256;

/// The most values read from one file (80 MB of them): far more than a
/// measured path's per-packet delays over hours.
pub const MAX_VALUES: usize = 10_000_000;

/// How far into a file a bad value may be for its line to be shown beside
/// the error (the file is read again up to it).
const SHOWN_BYTES: usize = 1 << 20;

/// What is wrong with an empirical distribution's file, located at its
/// file and line (1-based); `example` is a value of the quantity asked for.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    #[error("{file}: cannot read the empirical distribution file: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{file} has no values; expected one value per line, like {example}")]
    Empty { file: PathBuf, example: String },
    #[error("{file}:{line}: line longer than {MAX_LINE_BYTES} bytes; expected one value per line, like {example}")]
    LineTooLong { file: PathBuf, line: u64, example: String },
    #[error("{file}:{line}: the line is not UTF-8 text; expected one value per line, like {example}")]
    NotUtf8 { file: PathBuf, line: u64, example: String },
    /// `span`: the value's bytes in the file.
    #[error("{file}:{line}: {why}")]
    Value { file: PathBuf, line: u64, why: String, span: Range<usize> },
    #[error("{file}:{line}: more than {max} values; expected at most {max}")]
    TooMany { file: PathBuf, line: u64, max: usize },
}

impl ValuesError {
    /// The line the error is on, if it is on one.
    pub fn line(&self) -> Option<u64> {
        match self {
            ValuesError::Read { .. } | ValuesError::Empty { .. } => None,
            ValuesError::LineTooLong { line, .. }
            | ValuesError::NotUtf8 { line, .. }
            | ValuesError::Value { line, .. }
            | ValuesError::TooMany { line, .. } => Some(*line),
        }
    }
}

/// A quantity that can be read from one line of a distribution file.
pub trait LineQuantity: Quantity + Sized {
    fn parse_line(s: &str) -> Result<Self, String>;
    /// An example value with its unit, for messages.
    fn example(n: u32) -> String;
    /// Whether a flow-size CDF file (`SIZE CDF` lines, sizes in bytes)
    /// may give this quantity.
    const FROM_CDF: bool = false;
}

impl LineQuantity for Duration {
    fn parse_line(s: &str) -> Result<Self, String> {
        s.parse().map_err(|e: squall_link::units::UnitError| e.to_string())
    }
    fn example(n: u32) -> String {
        format!("\"{n} ms\"")
    }
}

impl LineQuantity for Bytes {
    const FROM_CDF: bool = true;
    fn parse_line(s: &str) -> Result<Self, String> {
        s.parse().map_err(|e: squall_link::units::UnitError| e.to_string())
    }
    fn example(n: u32) -> String {
        format!("\"{n}00 B\"")
    }
}

impl LineQuantity for f64 {
    fn parse_line(s: &str) -> Result<Self, String> {
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("{s:?} is not a plain number, like 0.5 or 12")),
        }
    }
    fn example(n: u32) -> String {
        format!("{n}")
    }
}

/// Reads every empirical distribution's file into its `values`.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let root = KeyPath::root();
    for (i, link) in s.links.iter_mut().enumerate() {
        for (dir, stages) in [("downlink", &mut link.downlink), ("uplink", &mut link.uplink)] {
            for (j, st) in stages.iter_mut().enumerate() {
                let p = root.key("links").index(i).key(dir).index(j);
                fill_all(st.distributions_in_mut(&|_| true), &p, base_dir, src)?;
            }
        }
    }
    for (i, host) in s.hosts.iter_mut().enumerate() {
        let p = root.key("hosts").index(i);
        if let Some(processing) = &mut host.processing {
            fill_one(&mut processing.delay, &p.key("processing").key("delay"), base_dir, src)?;
        }
        fill(&mut host.stack_delay, &p.key("stack_delay"), base_dir, src)?;
    }
    for (i, state) in s.states.iter_mut().enumerate() {
        let p = root.key("states").index(i);
        fill(&mut state.hold, &p.key("hold"), base_dir, src)?;
        for (stage, patch) in state.set.iter_mut() {
            let p = p.key("set").key(stage);
            fill_all(patch.distributions_mut(), &p, base_dir, src)?;
        }
    }
    for (i, b) in s.blackouts.iter_mut().enumerate() {
        let p = root.key("blackouts").index(i);
        fill_one(&mut b.at, &p.key("at"), base_dir, src)?;
        fill_one(&mut b.duration, &p.key("duration"), base_dir, src)?;
        fill(&mut b.every, &p.key("every"), base_dir, src)?;
    }
    for (i, flow) in s.workload.udp.iter_mut().enumerate() {
        let p = root.key("workload").key("udp").index(i);
        fill_one(&mut flow.size, &p.key("size"), base_dir, src)?;
        fill(&mut flow.interval, &p.key("interval"), base_dir, src)?;
        fill(&mut flow.on, &p.key("on"), base_dir, src)?;
        fill(&mut flow.off, &p.key("off"), base_dir, src)?;
    }
    for (i, flow) in s.workload.tcp.iter_mut().enumerate() {
        let p = root.key("workload").key("tcp").index(i);
        fill_one(&mut flow.start, &p.key("start"), base_dir, src)?;
        if let Some(a) = &mut flow.arrivals {
            fill(&mut a.gap, &p.key("arrivals").key("gap"), base_dir, src)?;
        }
        match &mut flow.app {
            crate::schema::TcpApp::Web(web) => {
                fill(&mut web.size, &p.key("app").key("web").key("size"), base_dir, src)?;
            }
            crate::schema::TcpApp::Bulk(size) => fill_one(size, &p.key("app").key("bulk"), base_dir, src)?,
            _ => {}
        }
    }
    Ok(())
}

/// The key path of a part of a stage at `base`.
pub(crate) fn key_path(base: &KeyPath, at: &[KeyPart]) -> KeyPath {
    at.iter().fold(base.clone(), |p, part| match part {
        KeyPart::Key(k) => p.key(k),
        KeyPart::Index(i) => p.index(*i),
    })
}

/// Fills every distribution found in a stage (recognised by its type),
/// at its key path from `base`.
fn fill_all(
    found: Vec<(Vec<KeyPart>, DistributionMut<'_>)>,
    base: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    for (at, d) in found {
        let path = key_path(base, &at);
        match d {
            DistributionMut::Duration(d) => fill_one(d, &path, base_dir, src)?,
            DistributionMut::Bytes(d) => fill_one(d, &path, base_dir, src)?,
            DistributionMut::Ratio(d) => fill_one(d, &path, base_dir, src)?,
        }
    }
    Ok(())
}

fn fill<Q: LineQuantity>(
    d: &mut Option<Distribution<Q>>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    match d {
        Some(d) => fill_one(d, path, base_dir, src),
        None => Ok(()),
    }
}

fn fill_one<Q: LineQuantity>(
    d: &mut Distribution<Q>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    if let Distribution::NetemTable { file: Some(file), entries, .. } = d {
        return fill_table(file, entries, path, base_dir, src);
    }
    if let Distribution::Cdf { file, points } = d {
        return fill_cdf::<Q>(file.as_deref(), points, path, base_dir, src);
    }
    let Distribution::Empirical { file: Some(file), values, .. } = d else { return Ok(()) };
    if !values.is_empty() {
        // A run's resolved scenario keeps the file's name and its values;
        // the values are what ran, so they win.
        return Ok(());
    }
    let file_key = path.key("file");
    let full = base_dir.join(file.as_str());
    let shown = full.display().to_string();
    let opened = std::fs::File::open(&full).map_err(|e| {
        let err = src.error(
            ErrorKind::DistributionFile,
            &file_key,
            format!(
                "cannot read the empirical distribution file {shown}: {e}; expected a text file with one value per line, like {}",
                Q::example(12)
            ),
        );
        err.label("cannot read this file")
    })?;
    *values = read_values(std::io::BufReader::new(opened), &full).map_err(|e| {
        let label = match e.line() {
            Some(line) => format!("bad value on line {line} of this file"),
            None => "cannot use this file".to_string(),
        };
        let err = src.error(ErrorKind::DistributionFile, &file_key, e.to_string()).label(label);
        // The file's bad line is shown too, when it is near the start.
        let ValuesError::Value { why, span, .. } = &e else { return err };
        match file_start(&full, span.end) {
            Some(text) => err.related(
                ScenarioError::new(ErrorKind::DistributionFile, &shown, Some(&text), Some(span.clone()))
                    .message(why.clone())
                    .label("this line"),
            ),
            None => err,
        }
    })?;
    Ok(())
}

/// The text of the file `path` from its start to the end of the line that
/// holds byte `end`, if that is within [`SHOWN_BYTES`] and UTF-8.
fn file_start(path: &Path, end: usize) -> Option<String> {
    if end > SHOWN_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take((end + MAX_LINE_BYTES + 1) as u64).read_to_end(&mut bytes).ok()?;
    let from = end.min(bytes.len());
    let cut = bytes[from..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| from + i);
    bytes.truncate(cut);
    String::from_utf8(bytes).ok()
}

/// Reads a netem table distribution's `.dist` file into its `entries`
/// ([`crate::dist_table`]), unless they are there already (a run's
/// resolved scenario).
fn fill_table(
    file: &str,
    entries: &mut Vec<i16>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    if !entries.is_empty() {
        return Ok(());
    }
    let full = base_dir.join(file);
    *entries = crate::dist_table::read(&full).map_err(|e| {
        let label = match e.line() {
            Some(line) => format!("bad line {line} in this file"),
            None => "cannot use this file".to_string(),
        };
        src.error(ErrorKind::DistributionFile, &path.key("file"), e.to_string()).label(label)
    })?;
    Ok(())
}

/// Reads a cdf distribution's file ([`crate::flow_cdf`]) into its
/// `points`, unless they are there already (a run's resolved scenario);
/// only sizes come from such a file.
fn fill_cdf<Q: LineQuantity>(
    file: Option<&str>,
    points: &mut Vec<[f64; 2]>,
    path: &KeyPath,
    base_dir: &Path,
    src: &Source,
) -> Result<(), ScenarioError> {
    if !Q::FROM_CDF {
        return Err(src.error(
            ErrorKind::DistributionFile,
            &path.key("kind"),
            format!(
                "a cdf gives sizes in bytes (a flow-size CDF); this key takes values like {}: use another kind",
                Q::example(12)
            ),
        ));
    }
    let Some(file) = file else { return Ok(()) };
    if !points.is_empty() {
        return Ok(());
    }
    let full = base_dir.join(file);
    let read = crate::flow_cdf::read(&full).map_err(|e| {
        let label = match e.line() {
            Some(line) => format!("bad line {line} in this file"),
            None => "cannot use this file".to_string(),
        };
        src.error(ErrorKind::DistributionFile, &path.key("file"), e.to_string()).label(label)
    })?;
    *points = read.into_iter().map(|p| [p.bytes, p.cdf]).collect();
    Ok(())
}

/// The values of a distribution file read from `input` (one per line,
/// `#` comments and blank lines skipped), at least one; errors name
/// `file` and the line.
pub fn read_values<Q: LineQuantity>(input: impl BufRead, file: &Path) -> Result<Vec<Q>, ValuesError> {
    read_at_most(input, file, MAX_VALUES)
}

/// [`read_values`] with at most `max` values.
fn read_at_most<Q: LineQuantity>(mut input: impl BufRead, file: &Path, max: usize) -> Result<Vec<Q>, ValuesError> {
    let mut values = Vec::new();
    let mut buf = Vec::with_capacity(MAX_LINE_BYTES + 1);
    let mut line = 0u64;
    // Bytes before the line being read.
    let mut offset = 0;
    let f = || file.to_owned();
    loop {
        let read = next_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| ValuesError::Read { file: f(), source })?;
        match read {
            LineRead::End => break,
            LineRead::TooLong => {
                return Err(ValuesError::LineTooLong { file: f(), line: line + 1, example: Q::example(12) });
            }
            LineRead::Line => line += 1,
        }
        let start = offset;
        offset += buf.len() + 1;
        let content = buf.split(|&b| b == b'#').next().unwrap_or(&[]);
        let Ok(content) = std::str::from_utf8(content) else {
            return Err(ValuesError::NotUtf8 { file: f(), line, example: Q::example(12) });
        };
        let value = content.trim();
        if value.is_empty() {
            continue;
        }
        let lead = start + content.len() - content.trim_start().len();
        let span = lead..lead + value.len();
        let v = Q::parse_line(value).map_err(|why| ValuesError::Value { file: f(), line, why, span })?;
        if values.len() == max {
            return Err(ValuesError::TooMany { file: f(), line, max });
        }
        values.push(v);
    }
    if values.is_empty() {
        return Err(ValuesError::Empty { file: f(), example: Q::example(12) });
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values<Q: LineQuantity>(text: &str) -> Result<Vec<Q>, ValuesError> {
        read_values(text.as_bytes(), Path::new("d.txt"))
    }

    #[test]
    fn reads_values_with_comments_and_blank_lines() {
        let v: Vec<Duration> = values("# delays\n12 ms\n\n  13 ms # measured\r\n1 s").unwrap();
        assert_eq!(v, vec![Duration::from_millis(12), Duration::from_millis(13), Duration::from_secs(1)]);
        let v: Vec<f64> = values("0.5\n2\n").unwrap();
        assert_eq!(v, vec![0.5, 2.0]);
    }

    /// Each bad file is refused with its file and line and what was
    /// expected: a bad value, a value without its unit, infinity, bytes
    /// that are not UTF-8, a long line, no values at all, one value too
    /// many.
    #[test]
    fn names_the_bad_line() {
        let e = values::<Bytes>("1500 B\n\n  40 X\n").unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(matches!(&e, ValuesError::Value { span, .. } if *span == (10..14)), "{e:?}");
        assert!(e.to_string().starts_with("d.txt:3: \"40 X\""), "{e}");
        let e = values::<Duration>("1 ms\n12\n").unwrap_err().to_string();
        assert!(e.starts_with("d.txt:2: ") && e.contains("12"), "{e}");
        assert_eq!(
            values::<f64>("inf\n").unwrap_err().to_string(),
            "d.txt:1: \"inf\" is not a plain number, like 0.5 or 12"
        );
        let e = read_values::<f64>(&b"1\n2 # \xff comment\n\xff3\n"[..], Path::new("d.txt")).unwrap_err();
        assert_eq!(e.to_string(), "d.txt:3: the line is not UTF-8 text; expected one value per line, like 12");
        let long = format!("1 ms\n{} ms\n", "1".repeat(MAX_LINE_BYTES));
        assert_eq!(
            values::<Duration>(&long).unwrap_err().to_string(),
            "d.txt:2: line longer than 256 bytes; expected one value per line, like \"12 ms\""
        );
        // Exactly the bound is a line.
        let at_bound = format!("{}\n", "1".repeat(MAX_LINE_BYTES));
        assert_eq!(values::<f64>(&at_bound).unwrap().len(), 1);
        assert_eq!(
            values::<Duration>("# nothing\n\n").unwrap_err().to_string(),
            "d.txt has no values; expected one value per line, like \"12 ms\""
        );
        let e = read_at_most::<f64>(&b"1\n2\n# c\n3\n4\n"[..], Path::new("d.txt"), 3).unwrap_err();
        assert_eq!(e.to_string(), "d.txt:5: more than 3 values; expected at most 3");
        assert_eq!(read_at_most::<f64>(&b"1\n2\n3\n"[..], Path::new("d.txt"), 3).unwrap(), [1.0, 2.0, 3.0]);
    }

    /// A reader that counts the bytes taken from it.
    struct Counted<R> {
        inner: R,
        taken: u64,
    }

    impl<R: Read> Read for Counted<R> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(out)?;
            self.taken += n as u64;
            Ok(n)
        }
    }

    impl<R: BufRead> BufRead for Counted<R> {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            self.inner.fill_buf()
        }
        fn consume(&mut self, n: usize) {
            self.taken += n as u64;
            self.inner.consume(n);
        }
    }

    /// An endless line (a gigabyte of digits after a good line): refused
    /// at line 2 after taking MAX_LINE_BYTES + 1 bytes of it, not read
    /// whole (as `read_to_string` would, up to the 1 GiB file bound).
    #[test]
    fn a_line_of_a_gigabyte_is_refused_after_its_bound() {
        let first: &[u8] = b"12 ms\n";
        let endless = std::io::repeat(b'7').take(1 << 30);
        let mut input = Counted { inner: std::io::BufReader::new(first.chain(endless)), taken: 0 };
        let e = read_values::<Duration>(&mut input, Path::new("big.txt")).unwrap_err().to_string();
        assert_eq!(e, "big.txt:2: line longer than 256 bytes; expected one value per line, like \"12 ms\"");
        assert_eq!(input.taken, (first.len() + MAX_LINE_BYTES + 1) as u64);
    }
}
