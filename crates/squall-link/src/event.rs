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

/// Declares [`DropReason`] from the AQM registry
/// (`crate::stage::qdisc::aqm::with_aqms!`): a reason per AQM, named after
/// its variant and written as its key.
///
/// The reasons' order is the order of the summaries' `dropped_*` columns
/// and of a flow's `dropped` map, kept as it was when RED was the only
/// AQM: overflow, the first AQM (RED), the link's and the queue's own
/// reasons, then the other AQMs in the registry's order. A new AQM goes
/// last in the registry, so no existing column moves.
macro_rules! drop_reasons {
    (
        #[doc = $first_doc:literal] $first_key:ident : $first:ident($($first_rest:tt)*),
        $(#[doc = $doc:literal] $key:ident : $variant:ident($($rest:tt)*)),* $(,)?
    ) => {
        /// Why a packet was dropped. Every packet that enters a path is
        /// delivered or dropped with one of these.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum DropReason {
            /// The input queue was full (tail drop: the arriving packet; head drop:
            /// the oldest queued one).
            QueueOverflow,
            #[doc = concat!("Dropped by ", $first_doc, " (its file under stage/qdisc/aqm/ says when; an ECN-capable packet may be marked instead).")]
            $first,
            /// A transmission error in "drop" error mode.
            Error,
            /// Link ARQ gave up after its retry limit.
            ArqLimit,
            /// The link was in a blackout in "drop" mode.
            Blackout,
            /// The packet waited in the queue longer than the maximum sojourn time.
            SojournLimit,
            $(
                #[doc = concat!("Dropped by ", $doc, " (its file under stage/qdisc/aqm/ says when; an ECN-capable packet may be marked instead).")]
                $variant,
            )*
        }

        impl DropReason {
            /// Every reason, in the order of their columns.
            pub const ALL: [DropReason; 6 + [$(stringify!($variant)),*].len()] = [
                DropReason::QueueOverflow,
                DropReason::$first,
                DropReason::Error,
                DropReason::ArqLimit,
                DropReason::Blackout,
                DropReason::SojournLimit,
                $(DropReason::$variant,)*
            ];

            /// Its name in events.csv and the summaries: an AQM's is its
            /// scenario key.
            pub fn as_str(self) -> &'static str {
                match self {
                    DropReason::QueueOverflow => "queue_overflow",
                    DropReason::$first => stringify!($first_key),
                    DropReason::Error => "error",
                    DropReason::ArqLimit => "arq_limit",
                    DropReason::Blackout => "blackout",
                    DropReason::SojournLimit => "sojourn_limit",
                    $(DropReason::$variant => stringify!($key),)*
                }
            }
        }
    };
}

crate::stage::qdisc::aqm::with_aqms!(drop_reasons);

impl DropReason {
    /// Its place in [`DropReason::ALL`].
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
    #[inline]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason's place, name and serde name agree: `index` is its place
    /// in `ALL`, and serde writes the name events.csv uses (an AQM's
    /// variant must be its key in CamelCase).
    #[test]
    fn every_reason_has_one_name_and_its_own_column() {
        for (i, r) in DropReason::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{}\"", r.as_str()));
        }
        // The columns of every summary written so far, in their order.
        let names: Vec<&str> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names[..8],
            ["queue_overflow", "red", "error", "arq_limit", "blackout", "sojourn_limit", "codel", "pie"]
        );
    }
}
