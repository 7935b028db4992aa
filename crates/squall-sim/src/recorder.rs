//! Where a run's records go while it runs. A run of any length keeps its
//! memory bounded (the project's standard: outputs stream to disk), so the
//! engine hands its model events and each host's captured packets on as it
//! makes them, to a [`RunRecorder`]:
//!
//! - [`run`](crate::run) keeps them in memory, in the [`RunResult`]
//!   (crate::RunResult) (tests, validation cases, short runs);
//! - [`FileRecorder`] writes them to events.csv and HOST.pcap as they come
//!   (`squall sim`, `squall run`).
//!
//! Events reach a recorder in time order, equal times in the order the
//! model drained them: the same order [`run`](crate::run) gives, so a
//! streamed events.csv is byte for byte the one written from memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use squall_link::{Event, EventKind, Instant, Packet};
use squall_tcp::Segment;
use squall_trace::{EventLogWriter, PcapWriter};

use crate::result::{CaptureDirection, TcpSample, TcpTrace, tcp_header_info};
use crate::vectors::{CwndLife, VectorWriter};

/// Takes a run's records as the engine makes them.
pub trait RunRecorder: Send {
    /// The run's hosts, in the order `capture` numbers them; called once,
    /// before anything else.
    fn start(&mut self, hosts: &[String]);
    /// Model events, in time order across calls.
    fn events(&mut self, events: &[Event]);
    /// A packet `host` sent or received at `at` (in time order per host),
    /// with its TCP header if it is a TCP segment.
    fn capture(
        &mut self,
        host: usize,
        at: Instant,
        direction: CaptureDirection,
        packet: &Packet,
        tcp: Option<&Segment>,
    );
    /// Samples of one TCP connection end's congestion state (those of
    /// `trace.samples` follow the `trace.handed` given before), in time
    /// order; only ends that sent data.
    fn tcp_samples(&mut self, trace: &TcpTrace);
    /// Samples of stages' queue classes (`[[record]]` of a class), in time
    /// order per stage.
    fn class_samples(&mut self, samples: &[squall_link::ClassSample]) {
        let _ = samples;
    }
    /// `trace` has no more samples.
    fn tcp_trace_done(&mut self, trace: &TcpTrace) {
        let _ = trace;
    }
    /// After the run, before `finish`: the `[[record]]` vectors sampled up
    /// to the run's `end` and written out, with the cwnd lives of the ends
    /// whose flow has `cwnd` recorded (none without `[[record]]`).
    fn finish_vectors(&mut self, end: Instant) -> Result<Vec<CwndLife>, String> {
        let _ = end;
        Ok(Vec::new())
    }
    /// After the run: writes out what is buffered; the first error met.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// The name of a TCP trace file without `.csv`: tcp-FLOW-CONNECTION-ENDPOINT,
/// with anything in the flow's name but letters, digits, `-` and `_` as `_`.
pub fn tcp_trace_stem(flow: &str, connection: u32, endpoint: &str) -> String {
    let safe: String =
        flow.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("tcp-{safe}-{connection}-{endpoint}")
}

/// Appends a tcp-*.csv row: time (s), cwnd and ssthresh (bytes; no
/// ssthresh while it is still "infinite"), srtt, rttvar and rto (s),
/// bytes in flight.
fn write_tcp_sample(w: &mut impl Write, s: &TcpSample) -> std::io::Result<()> {
    let secs = |ns: u64| ns as f64 / 1e9;
    let ssthresh = if s.ssthresh >= u64::MAX / 8 { String::new() } else { s.ssthresh.to_string() };
    writeln!(
        w,
        "{},{},{},{},{},{},{}",
        s.time,
        s.cwnd,
        ssthresh,
        secs(s.srtt),
        secs(s.rttvar),
        secs(s.rto),
        s.in_flight
    )
}

/// Which events a [`FileRecorder`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventFilter {
    All,
    /// Drops, corruptions, state changes and blackouts (`squall run
    /// --events drops`).
    Drops,
}

impl EventFilter {
    fn keeps(self, kind: &EventKind) -> bool {
        use EventKind::*;
        self == EventFilter::All || matches!(kind, Drop(_) | Corrupt { .. } | StateChange | BlackoutStart | BlackoutEnd)
    }
}

/// Writes events.csv, one HOST.pcap per host and (with the events) the TCP
/// trace files (tcp-FLOW-CONNECTION-ENDPOINT.csv) into a directory as the
/// run goes on. The first error stops the writing and is returned by
/// [`RunRecorder::finish`]; the run itself goes on.
pub struct FileRecorder {
    dir: PathBuf,
    events: Option<EventFilter>,
    pcap: bool,
    log: Option<(PathBuf, EventLogWriter<File>)>,
    pcaps: Vec<(PathBuf, PcapWriter<BufWriter<File>>)>,
    /// The open TCP trace files, by file stem.
    traces: std::collections::BTreeMap<String, (PathBuf, BufWriter<File>)>,
    /// vectors.csv, when the scenario has `[[record]]` entries.
    vectors: Option<VectorWriter>,
    error: Option<String>,
}

impl FileRecorder {
    /// Writes events.csv (if `events`, with the events it keeps) and the
    /// pcaps (if `pcap`) into `dir`, which must exist.
    pub fn new(dir: &Path, events: Option<EventFilter>, pcap: bool) -> Self {
        let traces = Default::default();
        FileRecorder {
            dir: dir.to_path_buf(),
            events,
            pcap,
            log: None,
            pcaps: Vec::new(),
            traces,
            vectors: None,
            error: None,
        }
    }

    /// Also writes the `[[record]]` vectors (vectors.csv) from the events
    /// and TCP samples it is handed; the run must record events
    /// (`RunOptions::record_events`) for them to come.
    pub fn with_vectors(mut self, vectors: Option<VectorWriter>) -> Self {
        self.vectors = vectors;
        self
    }

    /// Keeps the first error, with every cause under it (a pcap writer's
    /// error says "writing pcap", its source "No space left on device").
    fn fail(&mut self, path: &Path, e: impl std::error::Error) {
        if self.error.is_none() {
            let mut text = format!("cannot write {}: {e}", path.display());
            let mut source = e.source();
            while let Some(cause) = source {
                let cause_text = cause.to_string();
                if !text.contains(&cause_text) {
                    text.push_str(&format!(": {cause_text}"));
                }
                source = cause.source();
            }
            self.error = Some(text);
        }
    }

    fn open(&mut self, hosts: &[String]) -> Result<(), String> {
        let create = |name: &str| {
            let path = self.dir.join(name);
            let file = File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            Ok::<_, String>((path, file))
        };
        if self.events.is_some() {
            let (path, file) = create("events.csv")?;
            let log = EventLogWriter::new(file).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            self.log = Some((path, log));
        }
        if self.pcap {
            // One file per host with what it sent and received, as tcpdump
            // on the host's interface would record.
            for host in hosts {
                let (path, file) = create(&format!("{host}.pcap"))?;
                let pcap = PcapWriter::new(BufWriter::with_capacity(256 * 1024, file))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                self.pcaps.push((path, pcap));
            }
        }
        Ok(())
    }
}

impl RunRecorder for FileRecorder {
    fn start(&mut self, hosts: &[String]) {
        if let Err(e) = self.open(hosts) {
            self.error = Some(e);
        }
    }

    fn events(&mut self, events: &[Event]) {
        if let (Some(v), None) = (self.vectors.as_mut(), &self.error)
            && let Err(e) = v.events(events)
        {
            self.error = Some(e);
        }
        let (Some(filter), None) = (self.events, &self.error) else { return };
        let Some((path, log)) = self.log.as_mut() else { return };
        for e in events.iter().filter(|e| filter.keeps(&e.kind)) {
            if let Err(err) = log.write_event(e) {
                let path = path.clone();
                return self.fail(&path, err);
            }
        }
    }

    fn class_samples(&mut self, samples: &[squall_link::ClassSample]) {
        if let (Some(v), None) = (self.vectors.as_mut(), &self.error)
            && let Err(e) = v.class_samples(samples)
        {
            self.error = Some(e);
        }
    }

    fn finish_vectors(&mut self, end: Instant) -> Result<Vec<CwndLife>, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.vectors.take().map_or(Ok(Vec::new()), |mut v| v.finish(end))
    }

    /// Flushes the files; the first error met while writing, naming its
    /// file.
    fn finish(&mut self) -> Result<(), String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some((path, log)) = self.log.as_mut() {
            log.flush().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        for (path, pcap) in self.pcaps.drain(..) {
            pcap.into_inner().flush().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        for (_, (path, mut w)) in std::mem::take(&mut self.traces) {
            w.flush().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// One file per connection end that sent data, sampled on change
    /// (written with the events).
    fn tcp_samples(&mut self, trace: &TcpTrace) {
        if let (Some(v), None) = (self.vectors.as_mut(), &self.error)
            && let Err(e) = v.tcp_samples(trace)
        {
            self.error = Some(e);
        }
        if self.events.is_none() || self.error.is_some() {
            return;
        }
        let stem = tcp_trace_stem(&trace.flow, trace.connection, trace.endpoint);
        if !self.traces.contains_key(&stem) {
            let path = self.dir.join(format!("{stem}.csv"));
            let opened = File::create(&path).and_then(|file| {
                let mut w = BufWriter::new(file);
                writeln!(w, "time,cwnd,ssthresh,srtt,rttvar,rto,in_flight")?;
                Ok(w)
            });
            match opened {
                Ok(w) => self.traces.insert(stem.clone(), (path, w)),
                Err(e) => return self.fail(&path, e),
            };
        }
        let Some((path, w)) = self.traces.get_mut(&stem) else { return };
        if let Some(Err(e)) = trace.samples.iter().map(|s| write_tcp_sample(w, s)).find(Result::is_err) {
            let path = path.clone();
            self.fail(&path, e);
        }
    }

    fn tcp_trace_done(&mut self, trace: &TcpTrace) {
        let stem = tcp_trace_stem(&trace.flow, trace.connection, trace.endpoint);
        if let Some((path, mut w)) = self.traces.remove(&stem)
            && let Err(e) = w.flush()
        {
            self.fail(&path, e);
        }
    }

    fn capture(&mut self, host: usize, at: Instant, _: CaptureDirection, packet: &Packet, tcp: Option<&Segment>) {
        if self.error.is_some() {
            return;
        }
        let Some((path, pcap)) = self.pcaps.get_mut(host) else { return };
        // TCP segments get real headers (seq/ack/flags/window/options).
        let written = match tcp {
            Some(seg) => pcap.write_tcp_packet(at, packet, &tcp_header_info(seg)),
            None => pcap.write_packet(at, packet),
        };
        if let Err(err) = written {
            let path = path.clone();
            self.fail(&path, err);
        }
    }
}
