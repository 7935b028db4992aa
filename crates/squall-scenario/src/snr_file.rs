//! Measured SNR files for a radio stage's channel (seed 002 §II.C: "an
//! array of SNR sample values, one per bin", from channel sounding, ray
//! tracing or a model). A `channel = { kind = "measured", file = ... }`
//! anywhere in the scenario's stages is filled from its file(s), read
//! relative to the scenario file's directory.
//!
//! The format (also in the schema's documentation):
//!
//! - one line per slot, in time order; one value per sub-channel, the SNR
//!   per symbol (Es/N0) in dB, a finite decimal number like `16.5`, `-3`
//!   or `1.2e1`;
//! - values separated by commas (CSV), or, on a line without commas, by
//!   spaces or tabs (as MATLAB's `save -ascii` writes);
//! - every line the same number of values;
//! - `#` starts a comment, to the end of the line; blank lines are skipped;
//! - an optional header: the first line that is not blank or a comment may
//!   name the columns (no field of it a number), like `ch0,ch1,ch2`; it
//!   must have one name per sub-channel;
//! - a predicted-SNR file has the same format and must have the same
//!   number of slots and sub-channels.
//!
//! When the values are already in the scenario (`snr_db`, or
//! `predicted_snr_db`: a run's resolved scenario), they are used and the
//! file is not read.

use std::ops::Range;
use std::path::Path;

use squall_link::StageConfig;
use squall_link::radio::prediction::Predictor;
use squall_link::radio::{ChannelConfig, FadingChannel, FadingConfig, SlotChannel};
use squall_link::rng::stream;

use crate::error::{ErrorKind, KeyPath, Place, ScenarioError};
use crate::schema::Scenario;
use crate::source::Source;

/// An SNR table read from a file: one row per slot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SnrTable {
    /// SNR in dB, `rows[slot][sub_channel]`.
    pub rows: Vec<Vec<f64>>,
    /// Byte span of each row's values in the text (for messages).
    pub spans: Vec<Range<usize>>,
    /// Column names, when the file has a header.
    pub header: Option<Vec<String>>,
}

/// Why an SNR file cannot be read: the byte span of the offending value or
/// line, and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct SnrFileError {
    pub span: Range<usize>,
    pub message: String,
}

const EXAMPLE: &str = "one line per slot with one SNR in dB per sub-channel, like `16.5, 12.0, -3.2`";

/// The fields of a line's content (comment removed): byte spans relative
/// to the line and the trimmed text.
fn fields(content: &str) -> Vec<(Range<usize>, &str)> {
    let mut out = Vec::new();
    if content.contains(',') {
        let mut start = 0;
        for part in content.split(',') {
            let lead = part.len() - part.trim_start().len();
            let value = part.trim();
            out.push((start + lead..start + lead + value.len(), value));
            start += part.len() + 1;
        }
    } else {
        let mut start = None;
        for (i, c) in content.char_indices().chain(std::iter::once((content.len(), ' '))) {
            match (start, c.is_whitespace()) {
                (None, false) => start = Some(i),
                (Some(s), true) => {
                    out.push((s..i, &content[s..i]));
                    start = None;
                }
                _ => {}
            }
        }
    }
    out
}

/// Reads an SNR file's text (format in the module documentation). An
/// empty table (no slots) is not an error here.
pub fn parse_snr_csv(text: &str) -> Result<SnrTable, SnrFileError> {
    let mut table = SnrTable::default();
    let mut header_line: Option<Range<usize>> = None;
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let content = line.split('#').next().unwrap_or("");
        if content.trim().is_empty() {
            continue;
        }
        let lead = content.len() - content.trim_start().len();
        let line_span = start + lead..start + content.trim_end().len();
        let fields = fields(content);
        let numbers: Vec<Option<f64>> = fields.iter().map(|(_, f)| f.parse::<f64>().ok()).collect();
        if table.rows.is_empty() && header_line.is_none() && numbers.iter().all(Option::is_none) {
            if let Some((span, _)) = fields.iter().find(|(_, f)| f.is_empty()) {
                return Err(SnrFileError {
                    span: start + span.start..start + span.end,
                    message: "an empty column name in the header; name every column, like `ch0,ch1,ch2`".into(),
                });
            }
            table.header = Some(fields.iter().map(|(_, f)| f.to_string()).collect());
            header_line = Some(line_span);
            continue;
        }
        let mut row = Vec::with_capacity(fields.len());
        for ((span, field), number) in fields.iter().zip(&numbers) {
            let span = start + span.start..start + span.end;
            match number {
                _ if field.is_empty() => {
                    return Err(SnrFileError { span, message: format!("an empty value; expected {EXAMPLE}") });
                }
                None => {
                    return Err(SnrFileError {
                        span,
                        message: format!("`{field}` is not a number; expected an SNR in dB, like 16.5 or -3"),
                    });
                }
                Some(v) if !v.is_finite() => {
                    return Err(SnrFileError {
                        span,
                        message: format!("`{field}` is not a finite SNR; expected an SNR in dB, like 16.5 or -3"),
                    });
                }
                Some(v) => row.push(*v),
            }
        }
        let slot = table.rows.len();
        if let (Some(names), Some(h)) = (&table.header, &header_line)
            && row.len() != names.len()
        {
            return Err(SnrFileError {
                span: line_span,
                message: format!(
                    "slot {slot} has {} values, but the header (line {}) names {} columns; every line needs one SNR per sub-channel",
                    row.len(),
                    line_number(text, h.start),
                    names.len()
                ),
            });
        }
        if let (Some(first), Some(first_span)) = (table.rows.first(), table.spans.first())
            && row.len() != first.len()
        {
            return Err(SnrFileError {
                span: line_span,
                message: format!(
                    "slot {slot} has {} values, but the first slot (line {}) has {}; every line needs one SNR per sub-channel",
                    row.len(),
                    line_number(text, first_span.start),
                    first.len()
                ),
            });
        }
        table.rows.push(row);
        table.spans.push(line_span);
    }
    Ok(table)
}

fn line_number(text: &str, offset: usize) -> usize {
    Place::in_text(text, offset..offset).line
}

/// Writes rows of SNR (dB) in the file format: `comment` lines first (each
/// prefixed with `# `), a header `ch0,ch1,...`, then one line per slot
/// with `decimals` decimals.
pub fn write_snr_csv(comment: &str, rows: &[Vec<f64>], decimals: usize) -> String {
    let mut out = String::new();
    for line in comment.lines() {
        out.push_str(if line.is_empty() { "#" } else { "# " });
        out.push_str(line);
        out.push('\n');
    }
    let width = rows.first().map_or(0, Vec::len);
    let names: Vec<String> = (0..width).map(|c| format!("ch{c}")).collect();
    out.push_str(&names.join(","));
    out.push('\n');
    for row in rows {
        let values: Vec<String> = row.iter().map(|v| format!("{v:.decimals$}")).collect();
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out
}

/// `slots` slots of the model's fading channel (true and predicted SNR,
/// dB, `[slot][sub_channel]`) at `slots_per_second`, from replication seed
/// `seed`: what a measured trace of that channel would hold. Streams
/// "trace/fading", "trace/shadow" and "trace/prediction".
pub fn fading_trace(
    config: &FadingConfig,
    slots_per_second: u32,
    prediction_nmse: f64,
    seed: u64,
    slots: u64,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let mut channel = FadingChannel::new(
        config,
        slots_per_second,
        Predictor::new(prediction_nmse, seed, "trace/prediction"),
        stream(seed, "trace/fading"),
        stream(seed, "trace/shadow"),
    );
    let db = |v: &[f64]| v.iter().map(|x| 10.0 * x.log10()).collect::<Vec<f64>>();
    let mut slot = SlotChannel::default();
    let (mut snr, mut predicted) = (Vec::new(), Vec::new());
    for n in 0..slots {
        channel.slot(n, &mut slot);
        snr.push(db(&slot.snr));
        predicted.push(db(&slot.predicted));
    }
    (snr, predicted)
}

/// Reads every measured channel's file(s) into its values.
pub(crate) fn resolve(s: &mut Scenario, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let root = KeyPath::root();
    for (i, link) in s.links.iter_mut().enumerate() {
        for (dir, stages) in [("downlink", &mut link.downlink), ("uplink", &mut link.uplink)] {
            for (j, st) in stages.iter_mut().enumerate() {
                let p = root.key("links").index(i).key(dir).index(j).key("radio").key("channel");
                fill(st, &p, base_dir, src)?;
            }
        }
    }
    Ok(())
}

/// A file read and parsed: its name as shown, text and table.
struct Read {
    shown: String,
    text: String,
    table: SnrTable,
}

fn fill(stage: &mut StageConfig, path: &KeyPath, base_dir: &Path, src: &Source) -> Result<(), ScenarioError> {
    let Some(radio) = stage.radio.as_mut() else { return Ok(()) };
    let ChannelConfig::Measured(m) = &mut radio.channel else { return Ok(()) };
    let Some(files) = m.file.clone() else { return Ok(()) };
    let file_key = path.key("file");
    let (snr_key, predicted_key) = match files.predicted {
        Some(_) => (file_key.key("snr"), file_key.key("predicted")),
        None => (file_key.clone(), file_key.key("predicted")),
    };
    let mut snr_read = None;
    if m.snr_db.is_empty() {
        let read = read(&files.snr, &snr_key, base_dir, src)?;
        if read.table.rows.is_empty() {
            return Err(src
                .error(ErrorKind::ChannelFile, &snr_key, format!("{} has no slots; expected {EXAMPLE}", read.shown))
                .label("no slots in this file"));
        }
        m.snr_db = read.table.rows.clone();
        snr_read = Some(read);
    }
    let (Some(predicted), None) = (&files.predicted, &m.predicted_snr_db) else { return Ok(()) };
    let p = read(predicted, &predicted_key, base_dir, src)?;
    let (slots, width) = (m.snr_db.len(), m.snr_db[0].len());
    let snr_name = snr_read.as_ref().map_or_else(|| files.snr.clone(), |r| r.shown.clone());
    let shape = format!("{slots} slots × {width} sub-channels");
    let mismatch = if p.table.rows.is_empty() {
        Some((0..0, format!("{} has no slots, but {snr_name} has {shape}", p.shown)))
    } else if p.table.rows[0].len() != width {
        Some((
            p.table.spans[0].clone(),
            format!("{} sub-channels per slot, but {snr_name} has {width}", p.table.rows[0].len()),
        ))
    } else if p.table.rows.len() > slots {
        Some((p.table.spans[slots].clone(), format!("slot {slots} is one too many: {snr_name} has {slots} slots")))
    } else if p.table.rows.len() < slots {
        let last = p.table.rows.len() - 1;
        Some((
            p.table.spans[last].clone(),
            format!("the file ends after {} slots, but {snr_name} has {slots}", p.table.rows.len()),
        ))
    } else {
        None
    };
    if let Some((span, why)) = mismatch {
        let why = format!("{why}; a predicted SNR file needs the shape of the SNR file ({shape})");
        return Err(file_error(&p, span, why, &predicted_key, src));
    }
    m.predicted_snr_db = Some(p.table.rows);
    Ok(())
}

/// Reads and parses one SNR file; errors are placed at `key` in the
/// scenario, with the file's line attached.
fn read(file: &str, key: &KeyPath, base_dir: &Path, src: &Source) -> Result<Read, ScenarioError> {
    let full = base_dir.join(file);
    let shown = full.display().to_string();
    let text = crate::source::read_text(&full).map_err(|e| {
        src.error(
            ErrorKind::ChannelFile,
            key,
            format!("cannot read the SNR file {shown}: {e}; expected a text file with {EXAMPLE}"),
        )
        .label("cannot read this file")
    })?;
    let mut read = Read { shown, text, table: SnrTable::default() };
    match parse_snr_csv(&read.text) {
        Ok(t) => read.table = t,
        Err(e) => return Err(file_error(&read, e.span, e.message, key, src)),
    }
    Ok(read)
}

/// An error on `span` of a read file: `file:line:column: why`, placed at
/// `key` in the scenario, with the file's line attached.
fn file_error(read: &Read, span: Range<usize>, why: String, key: &KeyPath, src: &Source) -> ScenarioError {
    let place = Place::in_text(&read.text, span.clone());
    let detail = ScenarioError::new(ErrorKind::ChannelFile, &read.shown, Some(&read.text), Some(span))
        .message(why.clone())
        .label("this line");
    src.error(ErrorKind::ChannelFile, key, format!("{}:{}:{}: {why}", read.shown, place.line, place.column))
        .label(format!("bad line {} in this file", place.line))
        .related(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_csv_whitespace_comments_and_a_header() {
        let t = parse_snr_csv("# measured\nch0, ch1\n16.5, -3\n\n  1e1,2 # fast\n").unwrap();
        assert_eq!(t.rows, vec![vec![16.5, -3.0], vec![10.0, 2.0]]);
        assert_eq!(t.header, Some(vec!["ch0".to_string(), "ch1".to_string()]));
        let t = parse_snr_csv("1.5\t2.5  3\r\n4 5 6\r\n").unwrap();
        assert_eq!(t.rows, vec![vec![1.5, 2.5, 3.0], vec![4.0, 5.0, 6.0]]);
        assert_eq!(t.header, None);
        assert_eq!(parse_snr_csv("# nothing\n\n").unwrap().rows.len(), 0);
    }

    #[test]
    fn names_the_bad_value() {
        let text = "1, 2\n3, x4\n";
        let e = parse_snr_csv(text).unwrap_err();
        assert_eq!(&text[e.span.clone()], "x4");
        assert!(e.message.contains("`x4` is not a number"), "{}", e.message);
        let e = parse_snr_csv("1, NaN\n").unwrap_err();
        assert!(e.message.contains("`NaN` is not a finite SNR"), "{}", e.message);
        let e = parse_snr_csv("1,,2\n").unwrap_err();
        assert_eq!(e.span, 2..2);
        assert!(e.message.contains("an empty value"));
        let e = parse_snr_csv("a,b\n1,2,3\n").unwrap_err();
        assert!(e.message.contains("header (line 1) names 2 columns"), "{}", e.message);
        let text = "1 2\n# c\n3 4 5\n";
        let e = parse_snr_csv(text).unwrap_err();
        assert_eq!(&text[e.span.clone()], "3 4 5");
        assert!(e.message.contains("slot 1 has 3 values, but the first slot (line 1) has 2"), "{}", e.message);
        // A later line of names is a bad value, not a second header.
        assert!(parse_snr_csv("1\nch0\n").unwrap_err().message.contains("`ch0` is not a number"));
    }

    #[test]
    fn writes_what_it_reads() {
        let rows = vec![vec![16.25, -3.5], vec![0.0, 40.0]];
        let text = write_snr_csv("a trace\n\nsecond line", &rows, 2);
        assert!(text.starts_with("# a trace\n#\n# second line\nch0,ch1\n16.25,-3.50\n"), "{text}");
        assert_eq!(parse_snr_csv(&text).unwrap().rows, rows);
    }
}
