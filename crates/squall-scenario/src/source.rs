//! The scenario text being read and how an error is placed in it
//! ([`Source`]), with the reading of a text file every parser shares. A
//! leaf: the loader and every file parser use it, it uses none of them.

use std::ops::Range;
use std::path::Path;

use crate::error::{ErrorKind, KeyPath, ScenarioError, Segment};
use crate::spans::Spans;

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

/// The scenario text being read, to place errors in it.
pub(crate) struct Source<'a> {
    pub(crate) name: &'a str,
    pub(crate) text: &'a str,
    pub(crate) spans: Spans,
    /// Where the hosts and links made by patterns come from in the text.
    pub(crate) origins: Origins,
}

impl<'a> Source<'a> {
    /// The text `text` of the scenario named `name`, its hosts and links
    /// as written (no pattern expanded yet).
    pub(crate) fn new(name: &'a str, text: &'a str) -> Self {
        Source { name, text, spans: Spans::new(text), origins: Origins::default() }
    }

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

    pub(crate) fn syntax_error(&self, e: &toml::de::Error) -> ScenarioError {
        let message = e.message().trim_end().to_string();
        let message = format!("invalid TOML: {message}");
        self.error_at(ErrorKind::Syntax, &KeyPath::root(), e.span(), message)
    }

    pub(crate) fn schema_error(&self, e: &serde_path_to_error::Error<toml::de::Error>) -> ScenarioError {
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

/// Where each host and link of an expanded scenario came from in the
/// file, to place an error about it there.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins {
    /// Hosts written as `[[hosts]]` (the first ones); the others are
    /// group members, `(group index, host name)` each, in order.
    pub(crate) explicit_hosts: usize,
    pub(crate) members: Vec<(usize, String)>,
    /// Per link of the expanded list: its entry in the file and, for a
    /// pattern's link, the host it was made for.
    pub(crate) links: Vec<(usize, Option<String>)>,
}

impl Origins {
    /// The key in the file that `path` (a key of the expanded scenario)
    /// comes from, and the host a pattern made it for.
    pub(crate) fn in_file(&self, path: &KeyPath) -> (KeyPath, Option<String>) {
        let mut out = path.clone();
        match path.0.as_slice() {
            [Segment::Key(k), Segment::Index(j), ..] if k == "links" => {
                if let Some((file, member)) = self.links.get(*j) {
                    out.0[1] = Segment::Index(*file);
                    return (out, member.clone());
                }
            }
            [Segment::Key(k), Segment::Index(j), rest @ ..] if k == "hosts" && *j >= self.explicit_hosts => {
                if let Some((group, name)) = self.members.get(j - self.explicit_hosts) {
                    let mut p = KeyPath::root().key("host_groups").index(*group);
                    p.0.extend(rest.iter().cloned());
                    return (p, Some(name.clone()));
                }
            }
            _ => {}
        }
        (out, None)
    }
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
