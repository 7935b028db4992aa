//! What the model reports: every event on every packet, with its time.
//!
//! A path records events into a buffer that its driver drains
//! ([`crate::Path::drain_events`]); the model itself never writes anywhere.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::packet::{FlowKey, PacketId};
use crate::time::Instant;

/// Which way a path carries packets (seed 000 §4.3: a channel per direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Towards the mobile end.
    Downlink,
    /// Towards the fixed end.
    Uplink,
}

impl Direction {
    /// Its name in scenarios and events.csv.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Downlink => "downlink",
            Direction::Uplink => "uplink",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a packet was dropped. Every packet that enters a path is delivered
/// or dropped with one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The input queue was full (tail drop: the arriving packet; head drop:
    /// the oldest queued one).
    QueueOverflow,
    /// RED's early drop (a packet that is not ECN-capable).
    Red,
    /// A transmission error in "drop" error mode.
    Error,
    /// Link ARQ gave up after its retry limit.
    ArqLimit,
    /// The link was in a blackout in "drop" mode.
    Blackout,
    /// The packet waited in the queue longer than the maximum sojourn time.
    SojournLimit,
    /// CoDel's drop at dequeue (RFC 8289), for a packet that is not
    /// ECN-capable.
    Codel,
    /// PIE's drop at enqueue (RFC 8033), for a packet that is not
    /// ECN-capable or when the drop probability is above 10%.
    Pie,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::QueueOverflow,
        DropReason::Red,
        DropReason::Error,
        DropReason::ArqLimit,
        DropReason::Blackout,
        DropReason::SojournLimit,
        DropReason::Codel,
        DropReason::Pie,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueOverflow => "queue_overflow",
            DropReason::Red => "red",
            DropReason::Error => "error",
            DropReason::ArqLimit => "arq_limit",
            DropReason::Blackout => "blackout",
            DropReason::SojournLimit => "sojourn_limit",
            DropReason::Codel => "codel",
            DropReason::Pie => "pie",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Entered the stage's input queue.
    Enqueue,
    /// Dropped, and why.
    Drop(DropReason),
    /// An AQM (RED or PIE at enqueue, CoDel at dequeue) marked it Congestion
    /// Experienced instead of dropping it.
    EcnMark,
    /// Held at the stage by a blackout in "hold" mode.
    Hold,
    /// A link frame of it started transmission (frame index within packet).
    TransmitStart { frame: u32 },
    /// That frame's transmission ended.
    TransmitEnd { frame: u32 },
    /// The frame was hit by a transmission error.
    FrameError { frame: u32 },
    /// The frame is sent again by link ARQ (attempt number, 1 = first retry).
    Retransmit { frame: u32, attempt: u32 },
    /// Delivered with flipped bits ("corrupt" error mode): how many bits
    /// this frame's errors flipped in the packet (at least 1; 0 only when
    /// read from an events.csv written before the count was recorded).
    Corrupt { bits: u32 },
    /// Left the stage towards the next one or the receiving host.
    Deliver,
    /// A state of the schedule was entered (packet fields unused).
    StateChange,
    /// A blackout began (packet fields unused).
    BlackoutStart,
    /// A blackout ended (packet fields unused).
    BlackoutEnd,
}

impl EventKind {
    /// The event's name in events.csv.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Enqueue => "enqueue",
            EventKind::Drop(_) => "drop",
            EventKind::EcnMark => "ecn_mark",
            EventKind::Hold => "hold",
            EventKind::TransmitStart { .. } => "tx_start",
            EventKind::TransmitEnd { .. } => "tx_end",
            EventKind::FrameError { .. } => "frame_error",
            EventKind::Retransmit { .. } => "retransmit",
            EventKind::Corrupt { .. } => "corrupt",
            EventKind::Deliver => "deliver",
            EventKind::StateChange => "state_change",
            EventKind::BlackoutStart => "blackout_start",
            EventKind::BlackoutEnd => "blackout_end",
        }
    }
}

/// Which events a path keeps for its driver. Counters are kept either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recording {
    /// Every event (for events.csv).
    #[default]
    All,
    /// Only drops, so an engine can charge them to flows cheaply.
    Drops,
    /// Nothing.
    Off,
}

impl Recording {
    pub fn keeps(self, kind: &EventKind) -> bool {
        match self {
            Recording::All => true,
            Recording::Drops => matches!(kind, EventKind::Drop(_)),
            Recording::Off => false,
        }
    }
}

/// One event: when, where, what, to which packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub time: Instant,
    /// Name of the stage, or of the state for [`EventKind::StateChange`].
    pub stage: std::sync::Arc<str>,
    pub direction: Direction,
    pub kind: EventKind,
    pub packet: Option<PacketId>,
    pub flow: Option<FlowKey>,
    /// Packet size in bytes (0 for events without a packet).
    pub size: u32,
}
