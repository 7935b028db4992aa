//! classes.csv: the model's per-class samples of a run (squall_link::ClassSample,
//! a stage's queue classes sampled at every change), written by `squall
//! emu` while it runs and read back for the `[[record]]` vectors of a
//! class. One row per sample: time (s, nine decimals, from the integer
//! nanoseconds), stage, class, the class's packets and bytes waiting,
//! packets and bytes sent so far, then its drops so far per reason
//! (`drops_REASON`, in squall_link::DropReason::ALL order).

use std::io::{Read, Write};
use std::sync::Arc;

use squall_link::{ClassCounts, ClassSample, DropCounts, DropReason, Instant};

use crate::event_log::push_seconds;

/// The columns before the drops.
const FIRST: [&str; 7] = ["time", "stage", "class", "queue_packets", "queue_bytes", "sent", "sent_bytes"];

/// The header row.
pub fn header() -> String {
    let drops = DropReason::ALL.iter().map(|r| format!("drops_{}", r.as_str()));
    FIRST.iter().map(|s| s.to_string()).chain(drops).collect::<Vec<_>>().join(",")
}

/// Why classes.csv could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ClassLogError {
    #[error("writing class samples: {0}")]
    Write(#[from] std::io::Error),
    #[error("line {line}: {source}")]
    Read { line: u64, source: csv::Error },
    #[error("line 1: header is `{found}`, expected `{expected}`")]
    Header { found: String, expected: String },
    #[error("line {line}: column `{column}` is `{value}`, expected {expected}")]
    Field { line: u64, column: String, value: String, expected: &'static str },
}

/// A field: quoted when it holds a comma, a quote or a line break (RFC 4180 §2).
fn push_field(row: &mut Vec<u8>, s: &str) {
    row.push(b',');
    if s.contains([',', '"', '\n', '\r']) {
        row.push(b'"');
        row.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        row.push(b'"');
    } else {
        row.extend_from_slice(s.as_bytes());
    }
}

/// Writes the header row.
pub fn write_header(w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "{}", header())
}

/// Writes one sample's row.
pub fn write_sample(w: &mut impl Write, s: &ClassSample) -> std::io::Result<()> {
    let mut row = Vec::with_capacity(96);
    push_seconds(&mut row, s.time);
    push_field(&mut row, &s.stage);
    push_field(&mut row, &s.class);
    let c = &s.counts;
    let mut digits = itoa::Buffer::new();
    for n in [c.queued_packets, c.queued_bytes, c.sent, c.sent_bytes].into_iter().chain(c.drops.iter().map(|(_, n)| n))
    {
        row.push(b',');
        row.extend_from_slice(digits.format(n).as_bytes());
    }
    row.push(b'\n');
    w.write_all(&row)
}

/// Reads classes.csv back, one sample per row; stops after the first error.
pub struct ClassLogReader<R: Read> {
    rows: csv::StringRecordsIntoIter<R>,
    line: u64,
    failed: bool,
}

impl<R: Read> ClassLogReader<R> {
    /// Reads and checks the header row.
    pub fn new(reader: R) -> Result<Self, ClassLogError> {
        let mut csv = csv::ReaderBuilder::new().has_headers(true).from_reader(reader);
        let found = csv.headers().map_err(|source| ClassLogError::Read { line: 1, source })?.clone();
        let expected = header();
        if found.iter().collect::<Vec<_>>().join(",") != expected {
            return Err(ClassLogError::Header { found: found.iter().collect::<Vec<_>>().join(","), expected });
        }
        Ok(ClassLogReader { rows: csv.into_records(), line: 1, failed: false })
    }

    fn sample(&self, row: &csv::StringRecord) -> Result<ClassSample, ClassLogError> {
        let line = self.line;
        let number = |i: usize| -> Result<u64, ClassLogError> {
            let v = row.get(i).unwrap_or_default();
            v.parse().map_err(|_| ClassLogError::Field {
                line,
                column: header().split(',').nth(i).unwrap_or_default().to_string(),
                value: v.to_string(),
                expected: "a count (a whole number of 0 or more)",
            })
        };
        let time = row.get(0).unwrap_or_default();
        let nanos = parse_seconds(time).ok_or_else(|| ClassLogError::Field {
            line,
            column: "time".into(),
            value: time.to_string(),
            expected: "seconds with at most nine decimals",
        })?;
        let mut drops = DropCounts::default();
        for (i, r) in DropReason::ALL.iter().enumerate() {
            drops.add_n(*r, number(FIRST.len() + i)?);
        }
        Ok(ClassSample {
            time: Instant::from_nanos(nanos),
            stage: Arc::from(row.get(1).unwrap_or_default()),
            class: Arc::from(row.get(2).unwrap_or_default()),
            counts: ClassCounts {
                queued_packets: number(3)?,
                queued_bytes: number(4)?,
                sent: number(5)?,
                sent_bytes: number(6)?,
                drops,
            },
        })
    }
}

/// `S.NNNNNNNNN` (at most nine decimals) as nanoseconds.
fn parse_seconds(s: &str) -> Option<u64> {
    let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || fraction.len() > 9 || !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: u64 =
        if fraction.is_empty() { 0 } else { fraction.parse::<u64>().ok()? * 10u64.pow(9 - fraction.len() as u32) };
    whole.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(frac)
}

impl<R: Read> Iterator for ClassLogReader<R> {
    type Item = Result<ClassSample, ClassLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let row = self.rows.next()?;
        self.line += 1;
        let result = match row {
            Ok(row) => self.sample(&row),
            Err(source) => Err(ClassLogError::Read { line: self.line, source }),
        };
        self.failed = result.is_err();
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_reads_back_as_written() {
        let mut drops = DropCounts::default();
        drops.add_n(DropReason::QueueOverflow, 3);
        drops.add_n(DropReason::SojournLimit, 1);
        let s = ClassSample {
            time: Instant::from_nanos(1_000_000_007),
            stage: Arc::from("down,1"),
            class: Arc::from("voice"),
            counts: ClassCounts { queued_packets: 2, queued_bytes: 3000, sent: 9, sent_bytes: 13_500, drops },
        };
        let mut out = Vec::new();
        write_header(&mut out).unwrap();
        write_sample(&mut out, &s).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.lines().nth(1).unwrap().starts_with("1.000000007,\"down,1\",voice,2,3000,9,13500,3,"), "{text}");
        let back: Vec<ClassSample> = ClassLogReader::new(&out[..]).unwrap().map(Result::unwrap).collect();
        assert_eq!(back, [s]);
    }

    #[test]
    fn a_bad_field_names_its_line_and_column() {
        let text = format!(
            "{}\n0.5,down,voice,1,2,3,4{}\n0.6,down,voice,x,2,3,4{}\n",
            header(),
            ",0".repeat(DropReason::ALL.len()),
            ",0".repeat(DropReason::ALL.len())
        );
        let rows: Vec<_> = ClassLogReader::new(text.as_bytes()).unwrap().collect();
        assert!(rows[0].is_ok());
        let e = rows[1].as_ref().unwrap_err().to_string();
        assert_eq!(e, "line 3: column `queue_packets` is `x`, expected a count (a whole number of 0 or more)");
        assert_eq!(parse_seconds("1.5"), Some(1_500_000_000));
        assert_eq!(parse_seconds("1.1234567891"), None);
    }
}
