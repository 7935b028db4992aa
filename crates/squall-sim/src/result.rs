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
    /// sink, seconds (seed 001 §4's jitter).
    pub jitter: f64,
    pub interarrival_mean: f64,
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
}
