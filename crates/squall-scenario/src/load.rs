//! Reading a scenario file: TOML syntax, the schema (serde with the key
//! path of every error), empirical distribution files and measured SNR
//! files, then the checks serde cannot make.

use std::ops::Range;
use std::path::Path;

use crate::error::{ErrorKind, KeyPath, ScenarioError, Segment};
use crate::schema::Scenario;
use crate::spans::Spans;
use crate::{check, empirical, loss_sequence, mahimahi, overrides, pattern, series_file, site, snr_file, state_series};

/// Reads, checks and resolves the scenario file at `path`. Empirical
/// distribution files and measured SNR files are read relative to the
/// scenario file's directory.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_with_overrides::<&str, &str>(path, &[])
}

/// [`load`] with `--set key=value` overrides applied to the text first
/// (see [`apply_overrides`](crate::apply_overrides)).
pub fn load_with_overrides<K: AsRef<str>, V: AsRef<str>>(
    path: &Path,
    overrides: &[(K, V)],
) -> Result<Scenario, ScenarioError> {
    let name = path.display().to_string();
    let text = read_text(path).map_err(|e| {
        ScenarioError::new(ErrorKind::Read, &name, None, None).message(format!("cannot read the scenario file: {e}"))
    })?;
    let base_dir = path.parent().unwrap_or(Path::new("."));
    parse_with_overrides(&name, &text, overrides, base_dir)
}

/// Parses scenario text with `--set` overrides applied. An error the
/// overrides cause is reported against the `--set` argument that caused
/// it (its key and value), not against a line of the edited text that is
/// not in the file; an error of the file itself keeps its file:line:col.
pub fn parse_with_overrides<K: AsRef<str>, V: AsRef<str>>(
    source_name: &str,
    text: &str,
    overrides: &[(K, V)],
    base_dir: &Path,
) -> Result<Scenario, ScenarioError> {
    if overrides.is_empty() {
        return parse(source_name, text, base_dir);
    }
    let edited = overrides::apply_overrides(source_name, text, overrides)?;
    let edited_error = match parse(source_name, &edited, base_dir) {
        Ok(scenario) => return Ok(scenario),
        Err(e) => e,
    };
    let same = |a: &ScenarioError, b: &ScenarioError| a.reason() == b.reason() && a.key_path() == b.key_path();
    // The file's own error, unchanged by the overrides: its own place.
    let original = match parse(source_name, text, base_dir).err() {
        Some(e) if same(&e, &edited_error) => return Err(e),
        other => other,
    };
    // The first override after which the text fails differently.
    for n in 1..=overrides.len() {
        let partial = overrides::apply_overrides(source_name, text, &overrides[..n])?;
        let Err(e) = parse(source_name, &partial, base_dir) else { continue };
        if original.as_ref().is_some_and(|o| same(o, &e)) {
            continue;
        }
        let (key, value) = (overrides[n - 1].0.as_ref(), overrides[n - 1].1.as_ref());
        let reason = if e.key_path().is_empty() {
            e.reason().to_string()
        } else {
            format!("`{}`: {}", e.key_path(), e.reason())
        };
        return Err(ScenarioError::new(ErrorKind::Override, &format!("--set {key}={value}"), None, None)
            .message(format!("{reason} (in {source_name} with this --set)")));
    }
    Err(edited_error)
}

/// Parses and checks scenario text. `source_name` names it in errors (the
/// file name); `base_dir` is where empirical distribution files and
/// measured SNR files are looked up.
pub fn parse(source_name: &str, text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    let mut source = Source { name: source_name, text, spans: Spans::new(text), origins: Default::default() };
    let de = toml::Deserializer::parse(text).map_err(|e| source.syntax_error(&e))?;
    let mut scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| source.schema_error(&e))?;
    source.origins = pattern::expand(&mut scenario, &source)?;
    empirical::resolve(&mut scenario, base_dir, &source)?;
    snr_file::resolve(&mut scenario, base_dir, &source)?;
    mahimahi::resolve(&mut scenario, base_dir, &source)?;
    loss_sequence::resolve(&mut scenario, base_dir, &source)?;
    series_file::resolve(&mut scenario, base_dir, &source)?;
    state_series::resolve(&mut scenario, base_dir, &source)?;
    site::resolve(&mut scenario, base_dir, &source)?;
    check::check(&scenario, &source)?;
    Ok(scenario)
}

/// The largest file squall reads as text (scenario, experiment, empirical
/// and SNR files), bytes: a path such as /dev/zero is refused instead of
/// filling memory.
pub const MAX_TEXT_FILE: u64 = 1 << 30;

/// Reads a whole text file of at most [`MAX_TEXT_FILE`] bytes.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)?.take(MAX_TEXT_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {} MiB, the most squall reads", MAX_TEXT_FILE >> 20),
        ));
    }
    Ok(text)
}

impl Scenario {
    /// The seed of replication `r`: `seed + r`, wrapping past u64::MAX so
    /// that every seed can start a replication set.
    pub fn replication_seed(&self, r: u32) -> u64 {
        self.seed.wrapping_add(r.into())
    }

    /// The checks [`parse`] makes after deserializing, for a scenario built
    /// in code (from a netem one-liner, or edited for a sweep). Errors name
    /// the key but no line. Empirical distributions must hold their values.
    pub fn check(&self) -> Result<(), ScenarioError> {
        let source = Source { name: "<scenario>", text: "", spans: Spans::new(""), origins: Default::default() };
        check::check(self, &source)
    }
}

/// The scenario text being read, to place errors in it.
pub(crate) struct Source<'a> {
    pub(crate) name: &'a str,
    pub(crate) text: &'a str,
    spans: Spans,
    /// Where the hosts and links made by patterns come from in the text.
    pub(crate) origins: pattern::Origins,
}

impl Source<'_> {
    /// An error about the key at `path` (placed at its key and value).
    pub(crate) fn error(&self, kind: ErrorKind, path: &KeyPath, message: impl Into<String>) -> ScenarioError {
        // A host or link a pattern made is placed at its pattern.
        let (path, made_for) = self.origins.in_file(path);
        let span = self.spans.find(&path);
        let message = match made_for {
            Some(member) => format!("{} (in the pattern's link or host for `{member}`)", message.into()),
            None => message.into(),
        };
        self.error_at(kind, &path, span, message)
    }

    pub(crate) fn error_at(
        &self,
        kind: ErrorKind,
        path: &KeyPath,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> ScenarioError {
        let message = message.into();
        let label = short_label(&message);
        ScenarioError::new(kind, self.name, Some(self.text), span).key(path).message(message).label(label)
    }

    fn syntax_error(&self, e: &toml::de::Error) -> ScenarioError {
        let message = e.message().trim_end().to_string();
        let message = format!("invalid TOML: {message}");
        self.error_at(ErrorKind::Syntax, &KeyPath::root(), e.span(), message)
    }

    fn schema_error(&self, e: &serde_path_to_error::Error<toml::de::Error>) -> ScenarioError {
        let mut path = KeyPath::root();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => path.0.push(Segment::Index(*index)),
                serde_path_to_error::Segment::Map { key } => path.0.push(Segment::Key(key.clone())),
                serde_path_to_error::Segment::Enum { variant } => path.0.push(Segment::Key(variant.clone())),
                serde_path_to_error::Segment::Unknown => break,
            }
        }
        let inner = e.inner();
        let raw = inner.message().trim_end();
        let unknown_key = raw.starts_with("unknown field");
        let span =
            if unknown_key { self.spans.find_key(&path) } else { self.spans.find(&path) }.or_else(|| inner.span());
        let mut message = raw.to_string();
        let hint = did_you_mean(raw).filter(|_| unknown_key);
        if let Some(hint) = &hint {
            message = format!("{message}; {hint}");
        } else if let Some(example) = example_for(&path, &message) {
            message.push_str(&format!("; for example {example}"));
        }
        // A missing key is placed at its table but named in full.
        let missing = raw.strip_prefix("missing field `").and_then(|m| m.split('`').next());
        let shown = match missing {
            Some(field) => path.key(field),
            None => path,
        };
        let err = self.error_at(ErrorKind::Schema, &shown, span, message);
        match hint {
            Some(hint) => err.help(hint),
            None => err,
        }
    }
}

/// A short label for the underlined span: the message up to its first
/// clause (before "; ", ": " or ", expected").
fn short_label(message: &str) -> String {
    let cut = ["; ", ": ", ", expected"].iter().filter_map(|p| message.find(p)).min().unwrap_or(message.len());
    message[..cut].trim().to_string()
}

/// An example of the key's right form, for messages that do not give one.
fn example_for(path: &KeyPath, message: &str) -> Option<String> {
    if message.contains("like ") || message.contains("for example") {
        return None;
    }
    // The last key that is a field name (an error inside `set.<stage>`
    // names the stage, inside `error.packet` the variant).
    let key = path.0.iter().rev().find_map(|s| match s {
        Segment::Key(k) => Some(k.as_str()),
        Segment::Index(_) => None,
    });
    let key = key.unwrap_or("");
    let missing = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()).unwrap_or(key);
    let in_channel = path.0.iter().any(|s| matches!(s, Segment::Key(k) if k == "channel"));
    let in_processing = path.0.iter().any(|s| matches!(s, Segment::Key(k) if k == "processing"));
    let example = match missing {
        "kind" if in_channel => "kind = \"measured\" (or \"fading\")",
        "file" if in_channel => "file = \"traces/snr.csv\"",
        "at" if in_processing => "at = \"input\" (or \"output\")",
        "processing" => "processing = { delay = \"50 us\", at = \"input\" }",
        "name" => match path.0.first() {
            Some(Segment::Key(k)) if k == "hosts" => "name = \"mobile\"",
            Some(Segment::Key(k)) if k == "links" => "name = \"gsm-down\"",
            Some(Segment::Key(k)) if k == "states" => "name = \"weak-signal\"",
            Some(Segment::Key(k)) if k == "workload" => "name = \"cbr\"",
            _ => "name = \"gsm-case-study\"",
        },
        "description" => "description = \"GSM data over a 9.6 kbit/s circuit\"",
        "duration" => "duration = \"300 s\"",
        "seed" => "seed = 1",
        "replications" => "replications = 10",
        "hosts" => "[[hosts]] with name = \"fixed\" and address = \"10.0.0.1\"",
        "address" => "address = \"10.0.0.1\"",
        "links" => "[[links]] with between = [\"fixed\", \"mobile\"]",
        "between" => "between = [\"fixed\", \"mobile\"]",
        "downlink" | "uplink" => "[[links.downlink]] with name = \"down\" and rate = \"10 Mbit/s\"",
        "rate" => "rate = \"10 Mbit/s\"",
        "delay" => "delay = \"200 ms\"",
        "jitter" | "service_time" | "allocation_delay" | "hold" | "interval" | "on" | "off" => {
            "`{ kind = \"exponential\", mean = \"10 ms\" }` or \"10 ms\""
        }
        "size" => "size = \"1000 B\" or { kind = \"uniform\", low = \"40 B\", high = \"1500 B\" }",
        "queue" => "queue = { packets = 100, bytes = \"150 KB\" }",
        "packets" => "packets = 100",
        "bytes" => "bytes = \"150 KB\"",
        "send_buffer" | "receive_buffer" => "send_buffer = \"4 packets\"",
        "error" => "error = { packet = \"1%\" } or { bit = 1e-5 }",
        "packet" | "bit" | "ber_per_byte" | "p" | "r" | "h" | "k" | "max_p" => "\"1%\" or 0.01",
        "error_mode" => "error_mode = \"corrupt\" or { arq = { delay = \"50 ms\", retries = 3 } }",
        "retries" => "retries = 3",
        "at" | "start" | "stop" | "max_sojourn" => "at = \"40 s\"",
        "set" => "set.gsm-down = { rate = \"4800 bit/s\" }",
        "direction" => "direction = \"downlink\" (or \"uplink\", \"both\")",
        "mode" => "mode = \"hold\" (or \"drop\")",
        "stages" => "stages = [\"gsm-down\"]",
        "from" | "to" => "from = \"fixed\"",
        "arrivals" => "arrivals = \"poisson\" (or \"constant\")",
        "count" => "count = 1000",
        "src_port" | "dst_port" => "dst_port = 5001",
        "ecn" | "reorder" | "gentle" => "ecn = true",
        "file" => "file = \"delays.txt\"",
        "kind" => "kind = \"exponential\"",
        "fragmentation" => "fragmentation = { frame_payload = \"30 B\", frame_header = \"2 B\" }",
        "frame_payload" | "frame_header" => "frame_payload = \"30 B\"",
        "compression" => "compression = 0.5",
        "red" => "red = { min_threshold = 5.0, max_threshold = 15.0, max_p = \"10%\" }",
        "udp" => "[[workload.udp]] with name, from, to, size and rate",
        "tcp" => "[[workload.tcp]] with name, from, to and app = { bulk = \"100 KB\" }",
        "app" => "app = { bulk = \"100 KB\" } (or bulk_for, request_response, web)",
        "cc" => "cc = \"reno\" (or tahoe, newreno, sack, cubic, vegas, bbr)",
        "rto" => "rto = \"rfc6298\" (or \"seed001\", \"linux\")",
        "profile" => "profile = \"linux\" (or \"rfc\")",
        "delayed_ack" => "delayed_ack = \"200 ms\" (or false)",
        "initial_ssthresh" | "max_window" | "proxy_buffer" => "max_window = 50 (segments) or \"64 KB\"",
        "radio" => "radio = { modulation = \"16qam\", arq = { retries = 10, delay = \"2 ms\" } }",
        "channel" => "channel = { kind = \"measured\", file = \"traces/snr.csv\" } (or kind = \"fading\")",
        "mean_snr_db" => "mean_snr_db = 16",
        "prediction_nmse" => "prediction_nmse = 0.1",
        "modulation" => "modulation = \"16qam\" (or \"adaptive\", \"bpsk\", \"4qam\" ... \"256qam\")",
        "scheduling" => "scheduling = \"best\" (or { static = 12 })",
        "residual" => "residual = \"deliver\" (or \"drop\")",
        "snr" | "predicted" => "file = { snr = \"traces/snr.csv\", predicted = \"traces/snr-predicted.csv\" }",
        _ => return None,
    };
    Some(example.to_string())
}

/// For "unknown field `ratee`, expected one of `name`, `rate`, ...": the
/// closest expected key, if it is close.
fn did_you_mean(message: &str) -> Option<String> {
    let mut parts = message.split('`');
    let found = parts.nth(1)?;
    let best = message.split('`').skip(3).step_by(2).map(|k| (edit_distance(found, k), k)).min()?;
    (best.0 <= 2).then(|| format!("did you mean `{}`?", best.1))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_keys() {
        let m = "unknown field `ratee`, expected one of `name`, `queue`, `rate`, `delay`";
        assert_eq!(did_you_mean(m).as_deref(), Some("did you mean `rate`?"));
        assert_eq!(did_you_mean("unknown field `zzzzzz`, expected `name`"), None);
    }
}
