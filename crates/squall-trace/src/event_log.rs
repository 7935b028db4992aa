//! The event log, `events.csv`: one row per [`Event`] the model reported,
//! and a reader that turns such a file back into [`Event`]s.
//!
//! Times are seconds with exactly nine decimals, written from the integer
//! nanoseconds (never through `f64`), so a row's time is the event's time.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use squall_link::{Direction, DropReason, Event, EventKind, FlowKey, Instant, PacketId, Protocol};

/// The header row, and the columns of every row in this order.
pub const HEADER: [&str; 10] =
    ["time", "stage", "direction", "event", "packet", "flow", "size", "reason", "frame", "attempt"];

/// Why the event log could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum EventLogError {
    /// The underlying writer failed.
    #[error("writing event log: {0}")]
    Write(#[from] std::io::Error),
    /// The file is not valid CSV, has a row of the wrong length, or could
    /// not be read.
    #[error("event log line {line}: {source}")]
    Read { line: u64, source: csv::Error },
    /// The first line is not [`HEADER`].
    #[error(
        "event log line 1: header is `{found}`, expected `time,stage,direction,event,packet,flow,size,reason,frame,attempt`"
    )]
    Header { found: String },
    /// A field does not hold what its column needs.
    #[error("event log line {line}: column `{column}` is `{value}`, expected {expected}")]
    Field { line: u64, column: &'static str, value: String, expected: &'static str },
}

/// Writes events as CSV rows under a [`HEADER`] row, through a buffer of
/// its own (hand it the file itself).
///
/// Rows are put together here rather than field by field through a CSV
/// writer: the emulator's recording thread writes a million rows a second
/// beside the data plane (`cargo bench -p squall-trace --bench event_log`).
/// Only the stage name can need quoting (RFC 4180 §2); every other column
/// is a number, a name of ours or a flow, none with a comma or a quote.
pub struct EventLogWriter<W: Write> {
    out: std::io::BufWriter<W>,
    /// The row being put together.
    row: Vec<u8>,
    /// The last stage written and its field, quoted if it needs to be.
    stage: Option<(Arc<str>, String)>,
    /// The last flow written and its text: a flow's events come in runs,
    /// so its addresses are formatted once per run, not once per row.
    flow: Option<(FlowKey, String)>,
}

impl<W: Write> EventLogWriter<W> {
    /// Writes the header row.
    pub fn new(writer: W) -> Result<Self, EventLogError> {
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, writer);
        out.write_all(HEADER.join(",").as_bytes())?;
        out.write_all(b"\n")?;
        Ok(EventLogWriter { out, row: Vec::with_capacity(128), stage: None, flow: None })
    }

    /// Writes one row. Columns that do not apply to the event are empty:
    /// packet and flow for events without a packet, reason except for
    /// drops and corruptions (for a corruption: the number of bits its
    /// frame's errors flipped in the packet), frame except for frame events, attempt except for
    /// retransmissions.
    pub fn write_event(&mut self, event: &Event) -> Result<(), EventLogError> {
        let mut count = itoa::Buffer::new();
        let (reason, frame, attempt) = match event.kind {
            EventKind::Drop(reason) => (Some(reason.as_str()), None, None),
            EventKind::Corrupt { bits } => (Some(count.format(bits)), None, None),
            EventKind::TransmitStart { frame } | EventKind::TransmitEnd { frame } | EventKind::FrameError { frame } => {
                (None, Some(frame), None)
            }
            EventKind::Retransmit { frame, attempt } => (None, Some(frame), Some(attempt)),
            _ => (None, None, None),
        };
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        push_seconds(&mut row, event.time);
        row.push(b',');
        row.extend_from_slice(self.stage_field(&event.stage).as_bytes());
        for text in [event.direction.as_str(), event.kind.name()] {
            row.push(b',');
            row.extend_from_slice(text.as_bytes());
        }
        put_number(&mut row, event.packet.map(|p| p.0));
        row.push(b',');
        if let Some(flow) = event.flow {
            row.extend_from_slice(self.flow_text(flow).as_bytes());
        }
        put_number(&mut row, Some(event.size));
        row.push(b',');
        row.extend_from_slice(reason.unwrap_or("").as_bytes());
        put_number(&mut row, frame);
        put_number(&mut row, attempt);
        row.push(b'\n');
        let written = self.out.write_all(&row);
        self.row = row;
        Ok(written?)
    }

    /// The stage's field: its name, quoted if it holds a comma, a quote or
    /// a line break (RFC 4180 §2), its quotes doubled.
    fn stage_field(&mut self, stage: &Arc<str>) -> &str {
        match &mut self.stage {
            Some((last, _)) if Arc::ptr_eq(last, stage) || **last == **stage => {}
            cached => {
                let field = if stage.contains([',', '"', '\r', '\n']) {
                    format!("\"{}\"", stage.replace('"', "\"\""))
                } else {
                    stage.to_string()
                };
                *cached = Some((stage.clone(), field));
            }
        }
        self.stage.as_ref().map_or("", |(_, f)| f.as_str())
    }

    fn flow_text(&mut self, flow: FlowKey) -> &str {
        match &mut self.flow {
            Some((last, _)) if *last == flow => {}
            cached => *cached = Some((flow, flow.to_string())),
        }
        self.flow.as_ref().map_or("", |(_, t)| t.as_str())
    }

    /// Writes buffered rows through to the underlying writer.
    pub fn flush(&mut self) -> Result<(), EventLogError> {
        Ok(self.out.flush()?)
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> Result<W, EventLogError> {
        let mut inner = self.out.into_inner().map_err(|e| EventLogError::Write(e.into_error()))?;
        inner.flush()?;
        Ok(inner)
    }
}

/// Appends `time` as seconds with exactly nine decimals, from its integer
/// nanoseconds (as [`Instant`]'s `Display` writes it, without its
/// formatting machinery).
pub fn push_seconds(row: &mut Vec<u8>, time: Instant) {
    let nanos = time.as_nanos();
    let mut digits = itoa::Buffer::new();
    row.extend_from_slice(digits.format(nanos / 1_000_000_000).as_bytes());
    row.push(b'.');
    let fraction = digits.format(nanos % 1_000_000_000).as_bytes();
    row.extend(std::iter::repeat_n(b'0', 9 - fraction.len()));
    row.extend_from_slice(fraction);
}

/// A comma, then the number if there is one.
fn put_number(row: &mut Vec<u8>, n: Option<impl itoa::Integer>) {
    row.push(b',');
    if let Some(n) = n {
        row.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }
}

/// Reads an event log back, one [`Event`] per row. Stops after the first
/// error.
pub struct EventLogReader<R: Read> {
    csv: csv::Reader<R>,
    record: csv::StringRecord,
    /// The last stage name seen, shared by the rows that repeat it.
    stage: Arc<str>,
    done: bool,
}

impl<R: Read> EventLogReader<R> {
    /// Reads and checks the header row.
    pub fn new(reader: R) -> Result<Self, EventLogError> {
        let mut csv = csv::ReaderBuilder::new().has_headers(false).from_reader(reader);
        let mut record = csv::StringRecord::new();
        let found = match csv.read_record(&mut record) {
            Ok(true) => record.iter().collect::<Vec<_>>().join(","),
            Ok(false) => String::new(),
            Err(source) => return Err(EventLogError::Read { line: 1, source }),
        };
        if record.iter().ne(HEADER) {
            return Err(EventLogError::Header { found });
        }
        Ok(EventLogReader { csv, record, stage: Arc::from(""), done: false })
    }

    fn parse(&mut self) -> Result<Event, EventLogError> {
        let line = self.record.position().map_or(0, |p| p.line());
        let record = &self.record;
        let field = |i: usize| record.get(i).unwrap_or("");
        let bad = |i: usize, expected: &'static str| EventLogError::Field {
            line,
            column: HEADER[i],
            value: field(i).to_string(),
            expected,
        };
        let optional = |i: usize| Some(field(i)).filter(|s| !s.is_empty());
        let number = |i: usize| optional(i).map(|s| s.parse::<u32>().map_err(|_| bad(i, "a whole number")));

        let time = parse_time(field(0)).ok_or_else(|| bad(0, "seconds with 9 decimals, like 40.000000001"))?;
        if *self.stage != *field(1) {
            self.stage = Arc::from(field(1));
        }
        let direction = match field(2) {
            "downlink" => Direction::Downlink,
            "uplink" => Direction::Uplink,
            _ => return Err(bad(2, "downlink or uplink")),
        };
        let frame = number(8).transpose()?;
        let attempt = number(9).transpose()?;
        let needs_frame = || frame.ok_or_else(|| bad(8, "a frame index for this event"));
        let kind = match field(3) {
            "enqueue" => EventKind::Enqueue,
            "drop" => {
                let reason = DropReason::ALL.into_iter().find(|r| r.as_str() == field(7));
                EventKind::Drop(reason.ok_or_else(|| bad(7, "a drop reason, like queue_overflow"))?)
            }
            "ecn_mark" => EventKind::EcnMark,
            "hold" => EventKind::Hold,
            "tx_start" => EventKind::TransmitStart { frame: needs_frame()? },
            "tx_end" => EventKind::TransmitEnd { frame: needs_frame()? },
            "frame_error" => EventKind::FrameError { frame: needs_frame()? },
            "retransmit" => EventKind::Retransmit {
                frame: needs_frame()?,
                attempt: attempt.ok_or_else(|| bad(9, "an attempt number for a retransmit"))?,
            },
            // Files written before the count was recorded leave the field
            // empty: read as 0, "not recorded" (a corruption flips at least
            // one bit, so 0 is never a count).
            "corrupt" => EventKind::Corrupt {
                bits: match field(7) {
                    "" => 0,
                    f => f.parse().map_err(|_| bad(7, "the number of bits flipped, like 8"))?,
                },
            },
            "deliver" => EventKind::Deliver,
            "state_change" => EventKind::StateChange,
            "blackout_start" => EventKind::BlackoutStart,
            "blackout_end" => EventKind::BlackoutEnd,
            _ => return Err(bad(3, "an event name, like enqueue or deliver")),
        };
        let packet = match optional(4) {
            Some(s) => Some(PacketId(s.parse().map_err(|_| bad(4, "a packet id"))?)),
            None => None,
        };
        let flow = match optional(5) {
            Some(s) => Some(parse_flow(s).ok_or_else(|| bad(5, "a flow, like udp:10.0.0.1:5000>10.0.0.2:6000"))?),
            None => None,
        };
        let size = field(6).parse().map_err(|_| bad(6, "a size in bytes"))?;
        Ok(Event { time, stage: self.stage.clone(), direction, kind, packet, flow, size })
    }
}

impl<R: Read> Iterator for EventLogReader<R> {
    type Item = Result<Event, EventLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let result = match self.csv.read_record(&mut self.record) {
            Ok(false) => {
                self.done = true;
                return None;
            }
            Ok(true) => self.parse(),
            Err(source) => {
                let line = source.position().map_or(self.csv.position().line(), |p| p.line());
                Err(EventLogError::Read { line, source })
            }
        };
        self.done = result.is_err();
        Some(result)
    }
}

/// Parses `secs.nanos` with exactly nine decimals.
fn parse_time(s: &str) -> Option<Instant> {
    let (secs, nanos) = s.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(secs) || nanos.len() != 9 || !digits(nanos) {
        return None;
    }
    let total = secs.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(nanos.parse().ok()?)?;
    Some(Instant::from_nanos(total))
}

/// Parses what `FlowKey`'s `Display` writes: `udp:10.0.0.1:5000>10.0.0.2:6000`,
/// or with IPv6 addresses in brackets, `tcp:[fd00::1]:5000>[fd00::2]:80`.
fn parse_flow(s: &str) -> Option<FlowKey> {
    let (protocol, rest) = s.split_once(':')?;
    let (src, dst) = rest.split_once('>')?;
    let (src, dst) = (src.parse::<SocketAddr>().ok()?, dst.parse::<SocketAddr>().ok()?);
    if src.is_ipv6() != dst.is_ipv6() {
        return None;
    }
    let protocol = match protocol {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        "icmp" => Protocol::Icmp,
        other => Protocol::Other(other.strip_prefix("ip")?.parse().ok()?),
    };
    Some(FlowKey { protocol, src: src.ip(), dst: dst.ip(), src_port: src.port(), dst_port: dst.port() })
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn event(nanos: u64, kind: EventKind) -> Event {
        let flow = FlowKey {
            protocol: Protocol::Udp,
            src: Ipv4Addr::new(10, 0, 0, 1).into(),
            dst: Ipv4Addr::new(10, 0, 0, 2).into(),
            src_port: 5000,
            dst_port: 6000,
        };
        Event {
            time: Instant::from_nanos(nanos),
            stage: Arc::from("gprs"),
            direction: Direction::Downlink,
            kind,
            packet: Some(PacketId(7)),
            flow: Some(flow),
            size: 1500,
        }
    }

    fn write(events: &[Event]) -> String {
        let mut w = EventLogWriter::new(Vec::new()).unwrap();
        for e in events {
            w.write_event(e).unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    fn read(csv: &str) -> Result<Vec<Event>, EventLogError> {
        EventLogReader::new(csv.as_bytes())?.collect()
    }

    #[test]
    fn rows_have_exact_times_and_empty_columns_that_do_not_apply() {
        let mut state = event(0, EventKind::StateChange);
        (state.packet, state.flow, state.size, state.stage) = (None, None, 0, Arc::from("handover"));
        let csv = write(&[
            event(40_000_000_001, EventKind::Drop(DropReason::QueueOverflow)),
            event(1_500, EventKind::Retransmit { frame: 2, attempt: 1 }),
            event(2_000, EventKind::Corrupt { bits: 11 }),
            state,
        ]);
        assert_eq!(
            csv,
            "time,stage,direction,event,packet,flow,size,reason,frame,attempt\n\
             40.000000001,gprs,downlink,drop,7,udp:10.0.0.1:5000>10.0.0.2:6000,1500,queue_overflow,,\n\
             0.000001500,gprs,downlink,retransmit,7,udp:10.0.0.1:5000>10.0.0.2:6000,1500,,2,1\n\
             0.000002000,gprs,downlink,corrupt,7,udp:10.0.0.1:5000>10.0.0.2:6000,1500,11,,\n\
             0.000000000,handover,downlink,state_change,,,0,,,\n"
        );
    }

    /// A corrupt row from before the count was recorded (empty `reason`)
    /// still reads, as 0 bits ("not recorded"); a word there is an error.
    #[test]
    fn a_corrupt_row_without_a_count_reads_as_not_recorded() {
        let header = "time,stage,direction,event,packet,flow,size,reason,frame,attempt\n";
        let old = format!("{header}0.000002000,gprs,downlink,corrupt,7,udp:10.0.0.1:5000>10.0.0.2:6000,1500,,,\n");
        assert_eq!(read(&old).unwrap()[0].kind, EventKind::Corrupt { bits: 0 });
        let bad = format!("{header}0.000002000,gprs,downlink,corrupt,7,udp:10.0.0.1:5000>10.0.0.2:6000,1500,many,,\n");
        assert!(read(&bad).is_err());
    }

    #[test]
    fn every_kind_round_trips() {
        let mut kinds = vec![
            EventKind::Enqueue,
            EventKind::EcnMark,
            EventKind::Hold,
            EventKind::TransmitStart { frame: 0 },
            EventKind::TransmitEnd { frame: 3 },
            EventKind::FrameError { frame: 4 },
            EventKind::Retransmit { frame: 5, attempt: 2 },
            EventKind::Corrupt { bits: 8 },
            EventKind::Deliver,
            EventKind::StateChange,
            EventKind::BlackoutStart,
            EventKind::BlackoutEnd,
        ];
        kinds.extend(DropReason::ALL.map(EventKind::Drop));
        let mut events: Vec<_> = kinds.into_iter().enumerate().map(|(i, k)| event(i as u64 * 999_999_999, k)).collect();
        events[0].stage = Arc::from("queue, \"quoted\"");
        events[1].direction = Direction::Uplink;
        events[2].flow.as_mut().unwrap().protocol = Protocol::Other(47);
        events[3].packet = None;
        events[3].flow = None;
        assert_eq!(read(&write(&events)).unwrap(), events);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let good = "1.000000000,s,uplink,enqueue,1,,40,,,\n";
        let err = read(&format!("{}\n{good}1.5,s,uplink,enqueue,1,,40,,,\n", HEADER.join(","))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "event log line 3: column `time` is `1.5`, expected seconds with 9 decimals, like 40.000000001"
        );
        let err =
            read(&format!("{}\n{good}{good}1.000000000,s,uplink,tx_end,1,,40,,,\n", HEADER.join(","))).unwrap_err();
        assert!(err.to_string().starts_with("event log line 4: column `frame`"), "{err}");
        let err = read(&format!("{}\n1.000000000,s\n", HEADER.join(","))).unwrap_err();
        assert!(matches!(err, EventLogError::Read { line: 2, .. }), "{err}");
        assert!(matches!(read("time,stage\n"), Err(EventLogError::Header { .. })));
        assert!(matches!(read(""), Err(EventLogError::Header { .. })));
    }

    #[test]
    fn time_parsing_is_exact_and_strict() {
        assert_eq!(parse_time("40.000000001"), Some(Instant::from_nanos(40_000_000_001)));
        assert_eq!(parse_time("18446744073.709551615"), Some(Instant::FAR_FUTURE));
        for bad in ["18446744073.709551616", "1.00000000", "-1.000000000", ".000000000", "1e3.000000000"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
