//! What a simulated run produces.

use std::collections::BTreeMap;

use serde::Serialize;
use squall_link::{DropReason, Event, FlowKey, Instant, Packet, PacketId, StageStats};

/// One replication's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    pub seed: u64,
    /// Virtual time at which the run ended.
    pub end: Instant,
    pub flows: Vec<FlowResult>,
    pub stages: Vec<StageStats>,
    /// Model events in time order (if recorded).
    #[serde(skip)]
    pub events: Vec<Event>,
    /// One record per packet sent by an agent (if recorded).
    #[serde(skip)]
    pub packets: Vec<PacketRecord>,
    /// Per host, every packet it sent or received (if recorded).
    #[serde(skip)]
    pub captures: Vec<HostCapture>,
    /// Per `[[workload.tcp]]` flow, in scenario order.
    pub tcp_flows: Vec<TcpFlowResult>,
    /// Congestion-state samples of every TCP connection end that sent data
    /// (recorded with the events).
    #[serde(skip)]
    pub tcp_traces: Vec<TcpTrace>,
    /// Where the millisecond TCP timestamp clock of each host with a TCP
    /// connection end ticks (`[[hosts]] clock_phase`, or drawn from the
    /// seed), by host name.
    #[serde(skip)]
    pub clock_phases: BTreeMap<String, squall_link::Duration>,
}

/// Per-flow results (seed 001 §4 measures, for UDP).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowResult {
    /// The workload entry's name.
    pub name: String,
    pub key: FlowKey,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Drops by reason (reasons with no drop are absent).
    pub dropped: BTreeMap<DropReason, u64>,
    /// Packets still inside the network when the run ended.
    pub in_flight: u64,
    /// Delivered packets that carried bit errors ("corrupt" mode).
    pub corrupted: u64,
    /// Delivered IP bytes per second over the flow's active time (first
    /// send to last delivery), bits per second.
    pub throughput_bps: f64,
    /// One-way delay from send to delivery, seconds (0 when nothing was
    /// delivered). Percentiles are exact, by the nearest-rank method.
    pub delay_mean: f64,
    pub delay_p50: f64,
    pub delay_p99: f64,
    /// Population standard deviation of the inter-arrival time at the
    /// sink, seconds (seed 001 §4 calls it jitter; it measures how evenly
    /// packets arrive, not how their delay varies: docs/metrics.md).
    pub interarrival_sd: f64,
    /// RFC 3550 §6.4.1 interarrival jitter of the one-way delay (J +=
    /// (|D| − J)/16 over successive deliveries), seconds; zero for a
    /// constant delay.
    pub jitter_rfc3550: f64,
    /// Mean inter-arrival time at the sink, seconds.
    pub interarrival_mean: f64,
    /// Per path (hop) the flow's packets crossed, in the order first used:
    /// packets that entered it and packets delivered out of it (seed 001
    /// §4's per-link goodput is delivered / entered).
    pub hops: Vec<HopResult>,
}

/// One hop of a flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HopResult {
    /// The path's label, like "links[0] downlink (fixed -> bs)".
    pub path: String,
    pub entered: u64,
    pub delivered: u64,
}

/// What became of one packet an agent sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PacketRecord {
    pub id: PacketId,
    /// Index into `RunResult::flows`.
    pub flow: usize,
    pub size: u32,
    pub sent: Instant,
    /// When it reached its destination host, if it did.
    pub delivered: Option<Instant>,
    pub dropped: Option<DropReason>,
}

/// Whether a captured packet left or reached the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CaptureDirection {
    Sent,
    Received,
}

/// Everything one host sent and received, in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCapture {
    pub host: String,
    pub packets: Vec<(Instant, CaptureDirection, Packet)>,
    /// The TCP header of each packet (same order), for pcap files with
    /// real TCP headers.
    pub tcp: Vec<Option<squall_tcp::Segment>>,
}

impl HostCapture {
    /// Writes the capture as a pcap file: TCP packets with their real
    /// headers, others with synthesised IPv4/UDP headers.
    pub fn write_pcap<W: std::io::Write>(&self, writer: W) -> Result<W, squall_trace::PcapWriteError> {
        let mut pcap = squall_trace::PcapWriter::new(writer)?;
        for (i, (t, _, p)) in self.packets.iter().enumerate() {
            match self.tcp.get(i).copied().flatten() {
                Some(seg) => pcap.write_tcp_packet(*t, p, &tcp_header_info(&seg))?,
                None => pcap.write_packet(*t, p)?,
            }
        }
        Ok(pcap.into_inner())
    }
}

/// The header fields squall-trace writes for a segment.
pub fn tcp_header_info(seg: &squall_tcp::Segment) -> squall_trace::TcpHeaderInfo {
    use squall_trace::TcpFlags;
    let mut flags = TcpFlags::default();
    for (ours, theirs) in [
        (squall_tcp::Flags::FIN, TcpFlags::FIN),
        (squall_tcp::Flags::SYN, TcpFlags::SYN),
        (squall_tcp::Flags::RST, TcpFlags::RST),
        (squall_tcp::Flags::PSH, TcpFlags::PSH),
        (squall_tcp::Flags::ACK, TcpFlags::ACK),
    ] {
        if seg.flags.contains(ours) {
            flags = flags | theirs;
        }
    }
    squall_trace::TcpHeaderInfo {
        seq: seg.wire_seq(),
        ack: if seg.has_ack() { seg.wire_ack() } else { 0 },
        flags,
        window: seg.window,
        mss: seg.mss,
        window_scale: seg.window_scale,
        sack_permitted: seg.sack_permitted,
        sack_blocks: seg.sack.as_slice().iter().map(|&(l, r)| (l as u32, r as u32)).collect(),
        timestamps: seg.timestamp.map(|t| (t.value, t.echo)),
    }
}

/// One sample of a TCP connection end's congestion state, taken whenever
/// it changed (after each segment or timer it handled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TcpSample {
    pub time: Instant,
    /// Congestion window and slow-start threshold, bytes.
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Smoothed RTT, its variation and the RTO (backoff included), ns;
    /// `srtt` is 0 before the first sample.
    pub srtt: u64,
    pub rttvar: u64,
    pub rto: u64,
    /// Bytes sent and not acknowledged (pipe during SACK recovery).
    pub in_flight: u64,
    /// Bytes of data cumulatively acknowledged so far (not in
    /// tcp-*.csv: for the `delivered_bytes` and `throughput` vectors).
    #[serde(skip)]
    pub acked: u64,
    /// The delivery rate, bit/s rounded to the nearest, as Linux's
    /// `tcpi_delivery_rate` (only when the flow records it or its
    /// congestion control is model-based; not in tcp-*.csv).
    #[serde(skip)]
    pub delivery_rate: Option<u64>,
}

/// The samples of one connection end that sent data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TcpTrace {
    /// The workload flow's name.
    pub flow: String,
    /// Connection number within the flow (and agent).
    pub connection: u32,
    /// "client", "server", "proxy-wired" or "proxy-wireless".
    pub endpoint: &'static str,
    pub samples: Vec<TcpSample>,
    /// Samples handed to the run's recorder already (a streamed run), in
    /// front of `samples`.
    #[serde(skip)]
    pub handed: u64,
}

/// Sender-side TCP counters of a group of connection ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TcpSenderResult {
    /// Data segments sent (retransmissions included) and their bytes.
    pub data_segments_sent: u64,
    pub data_bytes_sent: u64,
    /// Segments sent again, by any mechanism.
    pub retransmitted_segments: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    /// Bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Useful data over all data sent: bytes acknowledged / bytes sent
    /// (seed 001 §4's goodput of the link this sender feeds).
    pub goodput: f64,
    /// Mean time from a data segment's first transmission to the ACK that
    /// covered it, seconds (seed 001 §4's average packet delay).
    pub packet_delay_mean: f64,
}

/// Per-flow TCP results (seed 001 §4 measures).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TcpFlowResult {
    /// The workload entry's name.
    pub name: String,
    pub cc: &'static str,
    pub connections: u32,
    /// Whether the application finished (every byte delivered).
    pub completed: bool,
    /// When the first connection was opened, seconds.
    pub start: f64,
    /// From `start` until the last byte reached the receiving application
    /// (or the end of the run if it did not), seconds.
    pub transfer_time: f64,
    /// Bytes of the main direction (client → server for bulk transfers,
    /// server → client for responses) received in order.
    pub delivered_bytes: u64,
    /// delivered_bytes·8 / transfer_time.
    pub goodput_bps: f64,
    /// Data segments arriving at the receiver per second of transfer time
    /// (seed 001 §4's throughput, packets per second).
    pub throughput_pps: f64,
    /// Mean and population standard deviation of the time between data
    /// segments arriving at the receiver, seconds.
    pub interarrival_mean: f64,
    pub interarrival_sd: f64,
    /// The sender of the main direction, the receiver's side, and the
    /// split-TCP proxy (both halves) if there is one.
    pub sender: TcpSenderResult,
    pub receiver_acks_sent: u64,
    pub proxy: Option<TcpSenderResult>,
    /// Segments discarded for a bad checksum (corrupted on a link).
    pub corrupted_discarded: u64,
    /// Delivered bytes per 100 ms of the run (for steady-state rates).
    #[serde(skip)]
    pub delivered: DeliverySeries,
}

/// Width of the delivered-bytes buckets of a flow, ns.
pub const BUCKET_NS: u64 = 100_000_000;

/// In-order bytes delivered to a flow's receiving application per bucket
/// of [`BUCKET_NS`], kept only for the buckets that received
/// something: memory grows with deliveries, never with the run's length or
/// a flow's start time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliverySeries {
    /// (bucket index, bytes), bucket indices strictly increasing.
    buckets: Vec<(u64, u64)>,
}

impl DeliverySeries {
    /// `bytes` delivered at `now`; calls come in time order.
    pub fn add(&mut self, now: Instant, bytes: u64) {
        let bucket = now.as_nanos() / BUCKET_NS;
        match self.buckets.last_mut() {
            Some((last, sum)) if *last == bucket => *sum += bytes,
            _ => self.buckets.push((bucket, bytes)),
        }
    }

    /// Adds another series bucket by bucket.
    pub fn merge(&mut self, other: &DeliverySeries) {
        self.buckets.extend_from_slice(&other.buckets);
        // Two sorted runs: the stable sort merges them in linear time.
        self.buckets.sort_by_key(|&(bucket, _)| bucket);
        self.buckets.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
    }

    /// Bytes delivered in buckets `first..end`.
    pub fn bytes_in_buckets(&self, first: u64, end: u64) -> u64 {
        let from = self.buckets.partition_point(|&(b, _)| b < first);
        self.buckets[from..].iter().take_while(|&&(b, _)| b < end).map(|&(_, n)| n).sum()
    }
}
