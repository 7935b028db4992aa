//! Errors in scenario files, reported miette-style: the file, line and
//! column, the key, what was expected and an example (docs/design.md, "Scenario files").

use std::fmt;
use std::ops::Range;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};

/// What went wrong, for callers that react differently (exit codes, tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The scenario file could not be read.
    Read,
    /// Not valid TOML.
    Syntax,
    /// Valid TOML, but a key or value does not fit the schema (unknown
    /// key, wrong type, a quantity without its unit, ...).
    Schema,
    /// An empirical distribution's file is unreadable or has a bad line.
    DistributionFile,
    /// A measured radio channel's SNR file is unreadable, malformed, or
    /// does not match its predicted file.
    ChannelFile,
    /// A trace stage's Mahimahi trace file is unreadable or has a bad line.
    TraceFile,
    /// The values fit the schema but not each other (unknown names,
    /// duplicates, no route, ...).
    Check,
    /// A `--set key=value` override names no key or does not fit.
    Override,
    /// A netem one-liner uses an option squall does not know or support.
    Netem,
}

/// A dotted key path: `links[0].downlink[0].rate`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyPath(pub(crate) Vec<Segment>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

impl KeyPath {
    pub(crate) fn root() -> Self {
        KeyPath(Vec::new())
    }
    pub(crate) fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.to_string()));
        p
    }
    pub(crate) fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }
    /// Appends a dotted key as written by squall-link's `ConfigError`
    /// (`queue.red.weight`).
    pub(crate) fn dotted(&self, dotted: &str) -> Self {
        let mut p = self.clone();
        // `queue.classes[1].weight`: a key may carry array indices.
        for part in dotted.split('.').filter(|s| !s.is_empty()) {
            let mut pieces = part.split('[');
            let key = pieces.next().unwrap_or_default();
            if !key.is_empty() {
                p.0.push(Segment::Key(key.to_string()));
            }
            for index in pieces {
                match index.trim_end_matches(']').parse() {
                    Ok(n) => p.0.push(Segment::Index(n)),
                    Err(_) => p.0.push(Segment::Key(format!("[{index}"))),
                }
            }
        }
        p
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                // A key with dots in it (a sysctl) is quoted, as in TOML.
                Segment::Key(k) if k.contains('.') => write!(f, "{}\"{k}\"", if i == 0 { "" } else { "." })?,
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A place in a text: byte span, and 1-based line and column (in
/// characters) of its start.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub(crate) span: Range<usize>,
    pub(crate) line: usize,
    pub(crate) column: usize,
}

impl Place {
    pub(crate) fn in_text(text: &str, span: Range<usize>) -> Self {
        let start = floor_char_boundary(text, span.start.min(text.len()));
        let end = floor_char_boundary(text, span.end.clamp(start, text.len()));
        let before = &text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..start].chars().count() + 1;
        Place { span: start..end, line, column }
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// An error in a scenario file (or an override, or a netem one-liner).
///
/// Its `Display` is one line, `file:line:column: `key`: message`, that
/// says what was expected and gives an example; as a miette
/// [`Diagnostic`] it also shows the source with the offending key
/// underlined (and, for an empirical distribution's file, that file's
/// line). Its `Debug` is the same line followed by the source line with
/// the key marked, so that `{:?}` (as in `anyhow`'s report) is readable
/// without a miette handler.
pub struct ScenarioError(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    file: String,
    place: Option<Place>,
    key: String,
    message: String,
    label: String,
    help: Option<String>,
    source: Option<NamedSource<String>>,
    related: Vec<ScenarioError>,
}

impl ScenarioError {
    /// An error in `file` (whose text is `text`, if known) at `span`.
    pub(crate) fn new(kind: ErrorKind, file: &str, text: Option<&str>, span: Option<Range<usize>>) -> Self {
        let place = match (text, span) {
            (Some(t), Some(s)) => Some(Place::in_text(t, s)),
            _ => None,
        };
        ScenarioError(Box::new(Inner {
            kind,
            file: file.to_string(),
            place,
            key: String::new(),
            message: String::new(),
            label: String::new(),
            help: None,
            source: text.map(|t| NamedSource::new(file, t.to_string()).with_language("TOML")),
            related: Vec::new(),
        }))
    }

    pub(crate) fn key(mut self, key: impl fmt::Display) -> Self {
        self.0.key = key.to_string();
        self
    }

    pub(crate) fn message(mut self, message: impl Into<String>) -> Self {
        self.0.message = message.into();
        self
    }

    pub(crate) fn label(mut self, label: impl Into<String>) -> Self {
        self.0.label = label.into();
        self
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.0.help = Some(help.into());
        self
    }

    pub(crate) fn related(mut self, other: ScenarioError) -> Self {
        self.0.related.push(other);
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }
    /// The file (or source name) the error is in.
    pub fn file(&self) -> &str {
        &self.0.file
    }
    /// 1-based line of the offending key, when known.
    pub fn line(&self) -> Option<usize> {
        self.0.place.as_ref().map(|p| p.line)
    }
    /// 1-based column (in characters) of the offending key, when known.
    pub fn column(&self) -> Option<usize> {
        self.0.place.as_ref().map(|p| p.column)
    }
    /// Byte span of the offending key or value in the source.
    pub fn span(&self) -> Option<Range<usize>> {
        self.0.place.as_ref().map(|p| p.span.clone())
    }
    /// The key path, like `links[0].downlink[0].rate` (empty when the
    /// error is not about one key, e.g. a TOML syntax error).
    pub fn key_path(&self) -> &str {
        &self.0.key
    }
    /// What is wrong and what was expected, without the location.
    pub fn reason(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "{}", e.file)?;
        if let Some(p) = &e.place {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        if !e.key.is_empty() {
            write!(f, ": `{}`", e.key)?;
        }
        write!(f, ": {}", e.message)
    }
}

impl fmt::Debug for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")?;
        self.snippet(f)?;
        if let Some(h) = &self.0.help {
            write!(f, "\n  help: {h}")?;
        }
        for r in &self.0.related {
            write!(f, "\n  in {}", r.0.file)?;
            if let Some(p) = &r.0.place {
                write!(f, ":{}:{}", p.line, p.column)?;
            }
            r.snippet(f)?;
        }
        Ok(())
    }
}

impl ScenarioError {
    /// The source line of the error with its span underlined.
    fn snippet(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Some(src), Some(p)) = (&self.0.source, &self.0.place) else { return Ok(()) };
        let text = src.inner().as_str();
        let line_start = text[..p.span.start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
        let line = text[line_start..line_end].trim_end_matches('\r');
        let width = text[p.span.start..p.span.end.min(line_end).max(p.span.start)].chars().count().max(1);
        let number = p.line.to_string();
        let pad = " ".repeat(number.len());
        write!(f, "\n {pad} |\n {number} | {line}\n {pad} | {}{}", " ".repeat(p.column - 1), "^".repeat(width))?;
        if !self.0.label.is_empty() {
            write!(f, " {}", self.0.label)?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

impl Diagnostic for ScenarioError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let code = match self.0.kind {
            ErrorKind::Read => "squall::scenario::read",
            ErrorKind::Syntax => "squall::scenario::syntax",
            ErrorKind::Schema => "squall::scenario::schema",
            ErrorKind::DistributionFile => "squall::scenario::distribution_file",
            ErrorKind::ChannelFile => "squall::scenario::channel_file",
            ErrorKind::TraceFile => "squall::scenario::trace_file",
            ErrorKind::Check => "squall::scenario::check",
            ErrorKind::Override => "squall::scenario::override",
            ErrorKind::Netem => "squall::scenario::netem",
        };
        Some(Box::new(code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.0.source.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.0.source.as_ref()?;
        let p = self.0.place.as_ref()?;
        let label = if self.0.label.is_empty() { None } else { Some(self.0.label.clone()) };
        Some(Box::new(std::iter::once(LabeledSpan::new_primary_with_span(label, p.span.clone()))))
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        if self.0.related.is_empty() {
            return None;
        }
        Some(Box::new(self.0.related.iter().map(|e| e as &dyn Diagnostic)))
    }
}
