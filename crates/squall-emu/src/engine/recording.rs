//! What a run records — each host's pcap, the model's events (events.csv),
//! each delivery's timing (timing.csv) and the samples of the queue
//! classes a `[[record]]` entry names (classes.csv) — streamed to disk while the
//! run goes on, by a writer thread fed through a bounded queue (docs/design.md,
//! "The emulate engine"; seed 000: Seawind kept its logs without disturbing the
//! timing).
//!
//! The data plane never waits for the writer: when the queue is full, a
//! record is dropped and counted by kind ([`RecordCounts`]), and the
//! packet it describes is forwarded as if nothing had happened. The queue
//! is bounded twice: in records, and in the bytes they hold (a wake-up's
//! events are one record of any length). So the memory a run needs is the
//! queue's bound, whatever its length. A wake-up's records go to the
//! writer together ([`Recorder::flush`]): one hand-over, and at most one
//! wake-up of the writer thread, per wake-up of the data plane rather than
//! per packet (measured: waking the writer for every record took a third
//! of the data plane's time at 10 Gbit/s).
//!
//! events.csv stays in time order without holding the run's events: the
//! data plane sends each wake-up's events with a time before which no
//! later event can fall (every path has been advanced to it), and the
//! writer keeps only the events at or after that time, in a heap, until
//! a later batch settles them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

use serde::Serialize;
use squall_link::{ClassSample, Event, Instant};
use squall_trace::{EventLogWriter, PcapWriter, SNAPLEN};

use crate::engine::routing::HostIndex;
use crate::error::{Context, EmuError};

/// Default bound of the queue to the writer, in records (a captured
/// packet, one wake-up's events, or one delivery's timing). With whole
/// 1500-byte packets that is at most about 25 MB queued.
pub const DEFAULT_QUEUE: usize = 16_384;

/// Default bound of the bytes the queued records hold (packet bytes,
/// events, the records themselves).
pub const DEFAULT_QUEUE_BYTES: usize = 32 << 20;

/// What to record and where.
#[derive(Clone, Debug)]
pub struct RecordingOptions {
    /// The run's directory (rep-0): HOST.pcap, events.csv, timing.csv.
    pub dir: PathBuf,
    /// Write events.csv.
    pub events: bool,
    /// Write one pcap per host of what it sent and received.
    pub captures: bool,
    /// Write timing.csv.
    pub deliveries: bool,
    /// Write classes.csv: the model's samples of the stages' queue
    /// classes it was asked to sample (squall_link::Path::record_classes).
    pub classes: bool,
    /// Bytes of each packet kept in the pcaps (the records' original
    /// length stays the packet's); [`SNAPLEN`] for whole packets.
    pub snaplen: u32,
    /// Records the queue to the writer holds before new ones are dropped.
    pub queue: usize,
    /// Bytes the queued records may hold before new ones are dropped.
    pub queue_bytes: usize,
}

impl RecordingOptions {
    /// Everything, whole packets, the default queue, into `dir`.
    pub fn all(dir: impl Into<PathBuf>) -> Self {
        RecordingOptions {
            dir: dir.into(),
            events: true,
            captures: true,
            deliveries: true,
            classes: false,
            snaplen: SNAPLEN,
            queue: DEFAULT_QUEUE,
            queue_bytes: DEFAULT_QUEUE_BYTES,
        }
    }
}

/// Counts per kind of record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecordCounts {
    /// Packet records in the pcaps (a forwarded packet is captured twice:
    /// at its sender and at its receiver).
    pub packets: u64,
    /// Rows of events.csv.
    pub events: u64,
    /// Rows of timing.csv.
    pub deliveries: u64,
    /// Rows of classes.csv.
    #[serde(skip_serializing_if = "is_zero")]
    pub classes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RecordCounts {
    pub fn total(&self) -> u64 {
        self.packets + self.events + self.deliveries + self.classes
    }
}

pub use crate::error::RecordingError;

/// What the recording of a run did.
#[derive(Debug)]
pub struct RecordingReport {
    /// Records written to the files.
    pub written: RecordCounts,
    /// Records dropped because the queue was full (or the writer had
    /// failed).
    pub dropped: RecordCounts,
    /// The first write error, if any.
    pub error: Option<RecordingError>,
}

/// One wake-up's timing of a delivery, for timing.csv.
#[derive(Clone, Debug, Serialize)]
pub struct DeliveryRecord {
    pub packet: u64,
    pub host: HostIndex,
    pub size: u32,
    pub scheduled: Instant,
    pub actual: Instant,
}

enum Record {
    /// The first bytes (at most the snaplen) of a packet of `orig_len`
    /// bytes that `host`'s device passed at `time`.
    Capture {
        host: HostIndex,
        time: Instant,
        orig_len: u32,
        data: Vec<u8>,
    },
    /// Events of one wake-up; no event sent later is earlier than
    /// `settled`.
    Events {
        events: Vec<Event>,
        settled: Instant,
    },
    Delivery(DeliveryRecord),
    /// Class samples of one wake-up, in time order per stage.
    Classes(Vec<ClassSample>),
}

impl Record {
    /// Counts the record in `counts` by kind.
    fn count(&self, counts: &mut RecordCounts) {
        match self {
            Record::Capture { .. } => counts.packets += 1,
            Record::Events { events, .. } => counts.events += events.len() as u64,
            Record::Delivery(_) => counts.deliveries += 1,
            Record::Classes(samples) => counts.classes += samples.len() as u64,
        }
    }

    /// The memory the record holds, bytes.
    fn bytes(&self) -> usize {
        std::mem::size_of::<Record>()
            + match self {
                Record::Capture { data, .. } => data.capacity(),
                Record::Events { events, .. } => events.capacity() * std::mem::size_of::<Event>(),
                Record::Delivery(_) => 0,
                Record::Classes(samples) => samples.capacity() * std::mem::size_of::<ClassSample>(),
            }
    }
}

/// The data plane's end of the recording: hands records to the writer
/// thread without ever waiting.
pub struct Recorder {
    sender: Option<SyncSender<Vec<Record>>>,
    /// Records of the current wake-up, handed over by [`Self::flush`].
    batch: Vec<Record>,
    batch_bytes: usize,
    events: bool,
    captures: bool,
    deliveries: bool,
    classes: bool,
    snaplen: usize,
    /// Records and bytes held in the queue (added here, taken off by the
    /// writer), and their bounds.
    queued_records: Arc<AtomicUsize>,
    max_records: usize,
    queued_bytes: Arc<AtomicUsize>,
    max_bytes: usize,
    dropped: RecordCounts,
    writer: Option<JoinHandle<WriterResult>>,
}

impl Recorder {
    /// Records nothing.
    pub fn off() -> Self {
        Recorder {
            sender: None,
            batch: Vec::new(),
            batch_bytes: 0,
            events: false,
            captures: false,
            deliveries: false,
            classes: false,
            snaplen: 0,
            queued_records: Arc::default(),
            max_records: 0,
            queued_bytes: Arc::default(),
            max_bytes: 0,
            dropped: RecordCounts::default(),
            writer: None,
        }
    }

    /// Creates the files (so a directory that cannot be written fails the
    /// run before it starts) and starts the writer thread. `hosts` are the
    /// hosts' names, by index.
    pub fn start(options: &RecordingOptions, hosts: &[String]) -> Result<Self, EmuError> {
        let create = |name: &str| -> Result<(PathBuf, BufWriter<File>), EmuError> {
            let path = options.dir.join(name);
            let file = File::create(&path).context(|| format!("create {}", path.display()))?;
            Ok((path, BufWriter::with_capacity(1 << 20, file)))
        };
        let mut files = Files {
            events: None,
            pcaps: Vec::new(),
            timing: None,
            classes: None,
            hosts: hosts.to_vec(),
            row: Vec::new(),
        };
        if options.events {
            // The event log buffers its own writes.
            let (path, file) = create("events.csv")?;
            let file =
                file.into_inner().map_err(|e| RecordingError::Io { path: path.clone(), source: e.into_error() })?;
            let log =
                EventLogWriter::new(file).map_err(|source| RecordingError::Events { path: path.clone(), source })?;
            files.events = Some((path, log));
        }
        if options.captures {
            for host in hosts {
                let (path, file) = create(&format!("{host}.pcap"))?;
                let pcap = PcapWriter::with_snaplen(file, options.snaplen)
                    .map_err(|source| RecordingError::Pcap { path: path.clone(), source })?;
                files.pcaps.push((path, pcap));
            }
        }
        if options.deliveries {
            let (path, mut file) = create("timing.csv")?;
            writeln!(file, "packet,host,size,scheduled,actual,error_us")
                .map_err(|source| RecordingError::Io { path: path.clone(), source })?;
            files.timing = Some((path, file));
        }
        if options.classes {
            let (path, mut file) = create("classes.csv")?;
            squall_trace::write_class_header(&mut file)
                .map_err(|source| RecordingError::Io { path: path.clone(), source })?;
            files.classes = Some((path, file));
        }
        // Every batch holds a record at least: the record bound bounds the
        // batches.
        let (sender, receiver) = sync_channel(options.queue.max(1));
        let queued_records = Arc::new(AtomicUsize::new(0));
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let queued = (Arc::clone(&queued_records), Arc::clone(&queued_bytes));
        let writer = std::thread::Builder::new()
            .name("squall-recording".into())
            .spawn(move || write_records(files, receiver, &queued.0, &queued.1))
            .context(|| "start the recording thread".to_string())?;
        Ok(Recorder {
            sender: Some(sender),
            batch: Vec::new(),
            batch_bytes: 0,
            events: options.events,
            captures: options.captures,
            deliveries: options.deliveries,
            classes: options.classes,
            snaplen: options.snaplen.clamp(1, SNAPLEN) as usize,
            queued_records,
            max_records: options.queue.max(1),
            queued_bytes,
            max_bytes: options.queue_bytes,
            dropped: RecordCounts::default(),
            writer: Some(writer),
        })
    }

    pub fn records_events(&self) -> bool {
        self.events
    }

    pub fn records_captures(&self) -> bool {
        self.captures
    }

    pub fn records_deliveries(&self) -> bool {
        self.deliveries
    }

    /// Records dropped so far.
    pub fn dropped(&self) -> RecordCounts {
        self.dropped
    }

    /// A packet `host`'s device passed at `time`; only the first snaplen
    /// bytes are copied.
    pub fn capture(&mut self, host: HostIndex, time: Instant, bytes: &[u8]) {
        if !self.captures {
            return;
        }
        let data = bytes[..bytes.len().min(self.snaplen)].to_vec();
        self.send(Record::Capture { host, time, orig_len: bytes.len() as u32, data });
    }

    /// Like [`Self::capture`], taking the packet's bytes (no copy when the
    /// whole packet is kept).
    pub fn capture_owned(&mut self, host: HostIndex, time: Instant, mut bytes: Vec<u8>) {
        if !self.captures {
            return;
        }
        let orig_len = bytes.len() as u32;
        if bytes.len() > self.snaplen {
            // A short copy, so the queue holds only what will be written.
            bytes = bytes[..self.snaplen].to_vec();
        }
        self.send(Record::Capture { host, time, orig_len, data: bytes });
    }

    /// One wake-up's events (in any order); no later event may be earlier
    /// than `settled`.
    pub fn events(&mut self, events: Vec<Event>, settled: Instant) {
        if !self.events || events.is_empty() {
            return;
        }
        self.send(Record::Events { events, settled });
    }

    pub fn records_classes(&self) -> bool {
        self.classes
    }

    /// One wake-up's class samples (in time order per stage).
    pub fn class_samples(&mut self, samples: Vec<ClassSample>) {
        if !self.classes || samples.is_empty() {
            return;
        }
        self.send(Record::Classes(samples));
    }

    pub fn delivery(&mut self, record: DeliveryRecord) {
        if self.deliveries {
            self.send(Record::Delivery(record));
        }
    }

    /// Adds `record` to the wake-up's batch, or drops it (counted) when
    /// the queue with the batch would go beyond a bound.
    fn send(&mut self, record: Record) {
        if self.sender.is_none() {
            return record.count(&mut self.dropped);
        }
        let bytes = record.bytes();
        // Only this thread adds, so the bounds hold without a loop.
        let records = self.queued_records.load(Ordering::Relaxed) + self.batch.len() + 1;
        if records > self.max_records
            || self.queued_bytes.load(Ordering::Relaxed) + self.batch_bytes + bytes > self.max_bytes
        {
            return record.count(&mut self.dropped);
        }
        self.batch_bytes += bytes;
        self.batch.push(record);
    }

    /// Hands the wake-up's records to the writer in one message.
    pub fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let bytes = std::mem::take(&mut self.batch_bytes);
        let Some(sender) = &self.sender else {
            return batch.iter().for_each(|r| r.count(&mut self.dropped));
        };
        self.queued_records.fetch_add(batch.len(), Ordering::Relaxed);
        self.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
        let failed = match sender.try_send(batch) {
            Ok(()) => return,
            // Not while the record bound holds (a batch holds a record at
            // least), but counted if it happens.
            Err(TrySendError::Full(batch)) => batch,
            // The writer has stopped on an error: reported by finish.
            Err(TrySendError::Disconnected(batch)) => {
                self.sender = None;
                batch
            }
        };
        self.queued_records.fetch_sub(failed.len(), Ordering::Relaxed);
        self.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
        failed.iter().for_each(|r| r.count(&mut self.dropped));
    }

    /// Closes the queue, waits for the writer to write what is in it and
    /// flush the files, and reports.
    pub fn finish(mut self) -> RecordingReport {
        self.flush();
        drop(self.sender.take());
        let (written, lost, error) = match self.writer.take().map(JoinHandle::join) {
            None => (RecordCounts::default(), RecordCounts::default(), None),
            Some(Ok(result)) => result,
            Some(Err(_)) => (RecordCounts::default(), RecordCounts::default(), Some(RecordingError::Panicked)),
        };
        let dropped = RecordCounts {
            packets: self.dropped.packets + lost.packets,
            events: self.dropped.events + lost.events,
            deliveries: self.dropped.deliveries + lost.deliveries,
            classes: self.dropped.classes + lost.classes,
        };
        RecordingReport { written, dropped, error }
    }
}

/// The writer thread's files.
struct Files {
    events: Option<(PathBuf, EventLogWriter<File>)>,
    pcaps: Vec<(PathBuf, PcapWriter<BufWriter<File>>)>,
    timing: Option<(PathBuf, BufWriter<File>)>,
    classes: Option<(PathBuf, BufWriter<File>)>,
    hosts: Vec<String>,
    /// The timing row being put together.
    row: Vec<u8>,
}

/// An event waiting for the events before it, ordered by time, then by
/// arrival (so events at one time keep the order the paths gave them).
struct Pending {
    time: Instant,
    seq: u64,
    event: Event,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

/// What the writer thread did: records written, records it could not
/// write (after an error), and the first error.
type WriterResult = (RecordCounts, RecordCounts, Option<RecordingError>);

/// The writer thread: writes records until the queue is closed. On the
/// first error it stops writing and keeps draining the queue (so the data
/// plane is never blocked), counting what it drains as dropped, and
/// returns the error.
fn write_records(
    mut files: Files,
    receiver: Receiver<Vec<Record>>,
    queued_records: &AtomicUsize,
    queued_bytes: &AtomicUsize,
) -> WriterResult {
    let mut written = RecordCounts::default();
    let mut lost = RecordCounts::default();
    let mut pending: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut result = Ok(());
    for record in polled(&receiver).flatten() {
        queued_records.fetch_sub(1, Ordering::Relaxed);
        queued_bytes.fetch_sub(record.bytes(), Ordering::Relaxed);
        if result.is_err() {
            record.count(&mut lost);
            continue;
        }
        // The kind of the record, for the one a failed write loses (an
        // events record: the event being written; the rest wait in
        // `pending`).
        let mut one = RecordCounts::default();
        match &record {
            Record::Events { .. } => one.events = 1,
            r => r.count(&mut one),
        }
        result = match record {
            Record::Capture { host, time, orig_len, data } => match files.pcaps.get_mut(host) {
                Some((path, pcap)) => pcap
                    .write_captured(time, &data, orig_len)
                    .map(|()| written.packets += 1)
                    .map_err(|source| RecordingError::Pcap { path: path.clone(), source }),
                None => Ok(()),
            },
            Record::Events { events, settled } => {
                for event in events {
                    pending.push(Reverse(Pending { time: event.time, seq, event }));
                    seq += 1;
                }
                write_settled(&mut files, &mut pending, Some(settled), &mut written)
            }
            Record::Delivery(r) => write_delivery(&mut files, &r, &mut written),
            Record::Classes(samples) => write_classes(&mut files, &samples, &mut written),
        };
        if result.is_err() {
            lost.packets += one.packets;
            lost.events += one.events;
            lost.deliveries += one.deliveries;
            lost.classes += one.classes;
        }
    }
    drop(receiver);
    if result.is_ok() {
        result = write_settled(&mut files, &mut pending, None, &mut written);
        if result.is_err() {
            // The event whose write failed.
            lost.events += 1;
        }
    }
    if result.is_ok() {
        result = flush(&mut files);
    }
    if result.is_err() {
        // Events held back for their order, never written.
        lost.events += pending.len() as u64;
    }
    (written, lost, result.err())
}

/// The batches `receiver` yields until the data plane closes it, taken by
/// polling every millisecond when none waits rather than by blocking: a
/// blocked receiver makes each send a futex wake-up in the data plane
/// (measured: 3% of its time at 10 Gbit/s even with one send per turn).
/// The queue's bounds hold a millisecond of records at any rate squall
/// reaches.
fn polled(receiver: &Receiver<Vec<Record>>) -> impl Iterator<Item = Vec<Record>> + '_ {
    std::iter::from_fn(move || {
        loop {
            match receiver.try_recv() {
                Ok(batch) => return Some(batch),
                Err(std::sync::mpsc::TryRecvError::Empty) => std::thread::sleep(std::time::Duration::from_millis(1)),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
            }
        }
    })
}

/// Writes the pending events before `settled` (all of them for `None`).
fn write_settled(
    files: &mut Files,
    pending: &mut BinaryHeap<Reverse<Pending>>,
    settled: Option<Instant>,
    written: &mut RecordCounts,
) -> Result<(), RecordingError> {
    let Some((path, log)) = files.events.as_mut() else {
        pending.clear();
        return Ok(());
    };
    while let Some(Reverse(first)) = pending.peek() {
        if settled.is_some_and(|s| first.time >= s) {
            break;
        }
        let Some(Reverse(p)) = pending.pop() else { break };
        log.write_event(&p.event).map_err(|source| RecordingError::Events { path: path.clone(), source })?;
        written.events += 1;
    }
    Ok(())
}

fn write_delivery(files: &mut Files, r: &DeliveryRecord, written: &mut RecordCounts) -> Result<(), RecordingError> {
    let Some((path, w)) = files.timing.as_mut() else { return Ok(()) };
    let host = files.hosts.get(r.host).map_or("?", String::as_str);
    // Put together by hand, as events.csv's rows are (a million rows a
    // second beside the data plane); the lateness in µs with 3 decimals,
    // from integer ns: exact, and without float formatting.
    let late = r.actual.saturating_since(r.scheduled).as_nanos();
    let mut digits = itoa::Buffer::new();
    let row = &mut files.row;
    row.clear();
    row.extend_from_slice(digits.format(r.packet).as_bytes());
    row.push(b',');
    row.extend_from_slice(host.as_bytes());
    row.push(b',');
    row.extend_from_slice(digits.format(r.size).as_bytes());
    for time in [r.scheduled, r.actual] {
        row.push(b',');
        squall_trace::push_seconds(row, time);
    }
    row.push(b',');
    row.extend_from_slice(digits.format(late / 1000).as_bytes());
    let fraction = digits.format(late % 1000).as_bytes();
    row.push(b'.');
    row.extend(std::iter::repeat_n(b'0', 3 - fraction.len()));
    row.extend_from_slice(fraction);
    row.push(b'\n');
    w.write_all(row).map_err(|source| RecordingError::Io { path: path.clone(), source })?;
    written.deliveries += 1;
    Ok(())
}

fn write_classes(files: &mut Files, samples: &[ClassSample], written: &mut RecordCounts) -> Result<(), RecordingError> {
    let Some((path, w)) = files.classes.as_mut() else { return Ok(()) };
    for s in samples {
        squall_trace::write_class_sample(w, s).map_err(|source| RecordingError::Io { path: path.clone(), source })?;
        written.classes += 1;
    }
    Ok(())
}

fn flush(files: &mut Files) -> Result<(), RecordingError> {
    if let Some((path, log)) = files.events.as_mut() {
        log.flush().map_err(|source| RecordingError::Events { path: path.clone(), source })?;
    }
    for (path, pcap) in files.pcaps.drain(..) {
        pcap.into_inner().flush().map_err(|source| RecordingError::Io { path: path.clone(), source })?;
    }
    for (path, w) in [files.timing.as_mut(), files.classes.as_mut()].into_iter().flatten() {
        w.flush().map_err(|source| RecordingError::Io { path: path.clone(), source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use squall_link::{Direction, EventKind};
    use squall_trace::EventLogReader;

    use super::*;

    fn event(nanos: u64) -> Event {
        Event {
            time: Instant::from_nanos(nanos),
            stage: Arc::from("s"),
            direction: Direction::Downlink,
            kind: EventKind::Enqueue,
            packet: None,
            flow: None,
            size: nanos as u32,
        }
    }

    fn options(dir: &Path, queue: usize) -> RecordingOptions {
        RecordingOptions { queue, ..RecordingOptions::all(dir) }
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_too() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(dir.path(), 1_000_000);
        options.queue_bytes = 64 * 1024;
        let mut r = Recorder::start(&options, &["a".into()]).unwrap();
        let packet = vec![0x45u8; 1500];
        let sent = 20_000u64;
        for i in 0..sent {
            r.capture(0, Instant::from_nanos(i), &packet);
            assert!(r.queued_bytes.load(Ordering::Relaxed) <= 64 * 1024);
        }
        let report = r.finish();
        assert!(report.dropped.packets > 0);
        assert_eq!(report.written.packets + report.dropped.packets, sent);
    }

    /// timing.csv's rows, against their values written out by hand: times
    /// in seconds with nine decimals, the error in µs with three.
    #[test]
    fn timing_rows_are_exact() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Recorder::start(&options(dir.path(), 1024), &["fixed".into(), "mobile".into()]).unwrap();
        let at = |ns| Instant::from_nanos(ns);
        r.delivery(DeliveryRecord { packet: 0, host: 1, size: 60, scheduled: at(30_486_299), actual: at(30_672_585) });
        let late = DeliveryRecord { packet: 12_345, host: 0, size: 1500, scheduled: at(7), actual: at(2_000_000_012) };
        r.delivery(late);
        // Early (never, but the file must not go negative): error 0.
        r.delivery(DeliveryRecord { packet: 1, host: 0, size: 1, scheduled: at(5_000), actual: at(4_000) });
        r.flush();
        assert!(r.finish().error.is_none());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("timing.csv")).unwrap(),
            "packet,host,size,scheduled,actual,error_us\n\
             0,mobile,60,0.030486299,0.030672585,186.286\n\
             12345,fixed,1500,0.000000007,2.000000012,2000000.005\n\
             1,fixed,1,0.000005000,0.000004000,0.000\n"
        );
    }

    #[test]
    fn events_come_out_in_time_order_across_batches() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Recorder::start(&options(dir.path(), 1024), &["a".into()]).unwrap();
        // Each batch may hold events later than the next batch's, but none
        // earlier than the previous batch's `settled`.
        r.events(vec![event(30), event(10), event(50)], Instant::from_nanos(20));
        r.events(vec![event(40), event(20), event(20)], Instant::from_nanos(45));
        r.events(vec![event(45), event(60)], Instant::from_nanos(60));
        let report = r.finish();
        assert!(report.error.is_none());
        assert_eq!(report.written.events, 8);
        let file = File::open(dir.path().join("events.csv")).unwrap();
        let times: Vec<u64> = EventLogReader::new(file).unwrap().map(|e| e.unwrap().time.as_nanos()).collect();
        assert_eq!(times, [10, 20, 20, 30, 40, 45, 50, 60]);
    }

    #[test]
    fn after_a_write_error_every_record_is_still_counted() {
        // a.pcap is /dev/full: writes fail with ENOSPC once the 1 MB
        // buffer spills.
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.path().join("a.pcap")).unwrap();
        let mut options = options(dir.path(), 1_000_000);
        options.events = false;
        options.deliveries = false;
        let mut r = Recorder::start(&options, &["a".into()]).unwrap();
        let packet = vec![0x45u8; 1500];
        let sent = 5_000u64;
        for i in 0..sent {
            r.capture(0, Instant::from_nanos(i), &packet);
            if i % 10 == 9 {
                r.flush();
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        let report = r.finish();
        assert!(matches!(report.error, Some(RecordingError::Pcap { .. })), "{:?}", report.error);
        assert!(report.dropped.packets > 0);
        assert_eq!(report.written.packets + report.dropped.packets, sent, "{report:?}");
    }

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Recorder::start(&options(dir.path(), 1), &["a".into(), "b".into()]).unwrap();
        let sent = 20_000u64;
        let packet = vec![0x45u8; 1500];
        for i in 0..sent {
            r.capture(usize::from(i % 2 == 0), Instant::from_nanos(i), &packet);
        }
        let report = r.finish();
        assert!(report.error.is_none());
        assert!(report.dropped.packets > 0, "a one-record queue kept up with {sent} records");
        assert_eq!(report.written.packets + report.dropped.packets, sent);
    }
}
