//! A run hands its events and captures on while it goes (the project's
//! standard: memory stays bounded for runs of any length), and what it
//! hands on is what the run keeps in memory when asked to.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use squall_link::{Event, Instant, Packet};
use squall_scenario::Scenario;
use squall_sim::{
    CaptureDirection, EventFilter, FileRecorder, RunOptions, RunRecorder, TcpSample, TcpTrace, run, run_recorded,
};
use squall_tcp::Segment;
use squall_trace::EventLogWriter;

mod common;

/// A bulk TCP transfer from a to b over 10 Mbit/s with 20 ms each way and
/// 0.1% packet errors on the downlink, and a UDP flow the other way (the
/// flow's keys end its table, so a second table may follow), for
/// `seconds`.
fn scenario(seconds: u32) -> Scenario {
    let duration = format!("{seconds} s");
    let two_hosts = common::TwoHosts {
        name: "streamed",
        duration: &duration,
        delay: "20 ms",
        down_extra: r#"error = { packet = "0.1%" }"#,
        flow: r#"app = { bulk = "1 GB" }
[[workload.udp]]
name = "voice"
from = "b"
to = "a"
rate = "64 kbit/s"
size = "200 B""#,
    };
    two_hosts.scenario()
}

const ALL: RunOptions = RunOptions { record_events: true, record_packets: false, record_captures: true };

/// What a recorder was handed: each `events` call's events, and per host
/// the capture times.
#[derive(Default)]
struct Seen {
    batches: Vec<Vec<Event>>,
    captures: Vec<Vec<Instant>>,
    /// Per TCP trace (flow, connection, end): its samples, and how many
    /// times some were handed on.
    traces: BTreeMap<(String, u32, &'static str), (Vec<TcpSample>, usize)>,
}

struct Watch(Arc<Mutex<Seen>>);

impl RunRecorder for Watch {
    fn start(&mut self, hosts: &[String]) {
        self.0.lock().unwrap().captures = hosts.iter().map(|_| Vec::new()).collect();
    }
    fn events(&mut self, events: &[Event]) {
        self.0.lock().unwrap().batches.push(events.to_vec());
    }
    fn capture(&mut self, host: usize, at: Instant, _: CaptureDirection, _: &Packet, _: Option<&Segment>) {
        self.0.lock().unwrap().captures[host].push(at);
    }
    fn tcp_samples(&mut self, trace: &TcpTrace) {
        let mut seen = self.0.lock().unwrap();
        let entry = seen.traces.entry((trace.flow.clone(), trace.connection, trace.endpoint)).or_default();
        assert_eq!(entry.0.len() as u64, trace.handed, "samples handed on before these");
        entry.0.extend_from_slice(&trace.samples);
        entry.1 += 1;
    }
}

/// 60 s of a 10 Mbit/s TCP transfer makes about 200 000 events: they are
/// handed on in many batches during the run, never more than the bound
/// plus one wakeup's worth at once, in time order across batches; and they
/// are exactly the events the in-memory run keeps, in the same order.
#[test]
fn events_are_handed_on_in_time_order_while_the_run_goes() {
    let scenario = scenario(60);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (streamed, _) = run_recorded(&scenario, 7, ALL, Box::new(Watch(seen.clone()))).unwrap();
    let kept = run(&scenario, 7, ALL).unwrap();
    assert!(streamed.events.is_empty() && streamed.captures.is_empty(), "a streamed run keeps nothing");
    assert_eq!(streamed.flows, kept.flows, "recording does not change the run");

    let seen = seen.lock().unwrap();
    let all: Vec<Event> = seen.batches.concat();
    assert!(all.len() > 150_000, "{} events", all.len());
    assert!(seen.batches.len() >= 3, "{} batches: nothing was handed on before the end", seen.batches.len());
    let largest = seen.batches.iter().map(Vec::len).max().unwrap();
    assert!(largest < 70_000, "a batch of {largest} events");
    assert!(all.windows(2).all(|w| w[0].time <= w[1].time), "events out of time order");
    assert!(all == kept.events, "the streamed events are not the ones kept in memory");

    // TCP traces: the sender's in several batches, the same samples.
    assert!(streamed.tcp_traces.is_empty());
    let kept_traces: BTreeMap<_, _> =
        kept.tcp_traces.iter().map(|t| ((t.flow.clone(), t.connection, t.endpoint), t.samples.clone())).collect();
    let streamed_traces: BTreeMap<_, _> = seen.traces.iter().map(|(k, (s, _))| (k.clone(), s.clone())).collect();
    assert!(streamed_traces == kept_traces, "the streamed TCP traces are not the ones kept");
    assert!(seen.traces.values().any(|(_, handed)| *handed >= 3), "no trace was handed on before the end");

    // Captures: per host, in time order, as many as the run kept.
    for (host, times) in seen.captures.iter().enumerate() {
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "host {host}'s captures out of order");
        assert_eq!(times.len(), kept.captures[host].packets.len(), "host {host}'s captures");
    }
}

/// The files a streamed run writes are byte for byte the ones written from
/// the same run kept in memory.
#[test]
fn streamed_files_are_the_files_written_from_memory() {
    let scenario = scenario(20);
    let dir = tempfile::tempdir().unwrap();
    let recorder = FileRecorder::new(dir.path(), Some(EventFilter::All), true);
    let (_, mut recorder) = run_recorded(&scenario, 7, ALL, Box::new(recorder)).unwrap();
    recorder.finish().unwrap();

    let kept = run(&scenario, 7, ALL).unwrap();
    let mut log = EventLogWriter::new(Vec::new()).unwrap();
    for e in &kept.events {
        log.write_event(e).unwrap();
    }
    let events = log.into_inner().unwrap();
    assert!(std::fs::read(dir.path().join("events.csv")).unwrap() == events, "events.csv differs");
    for trace in &kept.tcp_traces {
        let name = squall_sim::tcp_trace_stem(&trace.flow, trace.connection, trace.endpoint);
        let file = std::fs::read_to_string(dir.path().join(format!("{name}.csv"))).unwrap();
        assert_eq!(file.lines().next(), Some("time,cwnd,ssthresh,srtt,rttvar,rto,in_flight"));
        assert_eq!(file.lines().count(), 1 + trace.samples.len(), "{name}.csv");
        let last = trace.samples.last().unwrap();
        assert!(file.lines().last().unwrap().starts_with(&format!("{},{},", last.time, last.cwnd)), "{name}.csv");
    }
    for capture in &kept.captures {
        let pcap = capture.write_pcap(Vec::new()).unwrap();
        let file = std::fs::read(dir.path().join(format!("{}.pcap", capture.host))).unwrap();
        assert!(file == pcap, "{}.pcap differs", capture.host);
        assert!(pcap.len() > 100_000, "{}.pcap has {} bytes", capture.host, pcap.len());
    }
}

/// `squall run --events drops`: only drops, corruptions, states and
/// blackouts reach events.csv.
#[test]
fn a_drops_filter_keeps_only_drops() {
    let scenario = scenario(60);
    let dir = tempfile::tempdir().unwrap();
    let recorder = FileRecorder::new(dir.path(), Some(EventFilter::Drops), false);
    let (run, mut recorder) = run_recorded(&scenario, 7, ALL, Box::new(recorder)).unwrap();
    recorder.finish().unwrap();
    let file = std::fs::File::open(dir.path().join("events.csv")).unwrap();
    let events: Vec<Event> = squall_trace::EventLogReader::new(file).unwrap().map(Result::unwrap).collect();
    let dropped: u64 = run.stages.iter().map(|s| s.dropped_total()).sum();
    assert!(dropped > 10, "{dropped} drops");
    assert_eq!(events.len() as u64, dropped);
    assert!(events.iter().all(|e| matches!(e.kind, squall_link::EventKind::Drop(_))));
    assert!(!dir.path().join("a.pcap").exists(), "no pcap was asked for");
}
