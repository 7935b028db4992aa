//! The packets inside one stage, as its events tell them: what the
//! report's queue plot, the replay of a run and the `queue_packets` /
//! `queue_bytes` output vectors count.
//!
//! A packet is inside from its `enqueue` to its `deliver` or to a drop
//! that takes it. A drop of a packet that never entered — refused on
//! arrival by the queue's tail drop, RED or PIE (which decide at enqueue:
//! Linux net/sched/sch_red.c and sch_pie.c `*_enqueue`) — leaves the count
//! as it was, while a drop that takes a packet already inside — a
//! head-drop queue making room (`drop = "head"`), CoDel at dequeue, a
//! frame error, a blackout clearing the queue — removes it. Which is
//! which is not a property of the drop's reason (an overflow drops the
//! arrival or the head, as the queue is set), so each stage keeps the ids
//! of the packets inside: the memory is that of its queue.
//!
//! A netem duplicate (`duplicate`) enters with the id of its original; a
//! refused copy whose original is inside is taken for the original, so
//! that count is one low until the original leaves (the copy's refusal
//! and the original's exit are then both counted, and the count is right
//! again).

use std::collections::HashMap;

use crate::event::{Event, EventKind};
use crate::packet::PacketId;

/// The packets inside one stage and their bytes.
#[derive(Clone, Debug, Default)]
pub struct Inside {
    /// Each packet inside (a duplicate's id counts twice).
    ids: HashMap<PacketId, u32>,
    packets: u64,
    bytes: u64,
}

impl Inside {
    /// Packets inside.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Their bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Takes one event of this stage into account; true when the count
    /// changed.
    pub fn apply(&mut self, e: &Event) -> bool {
        let Some(id) = e.packet else { return false };
        match e.kind {
            EventKind::Enqueue => {
                *self.ids.entry(id).or_insert(0) += 1;
                self.packets += 1;
                self.bytes += u64::from(e.size);
                true
            }
            EventKind::Deliver | EventKind::Drop(_) => {
                let Some(n) = self.ids.get_mut(&id) else { return false };
                *n -= 1;
                if *n == 0 {
                    self.ids.remove(&id);
                }
                self.packets -= 1;
                self.bytes = self.bytes.saturating_sub(u64::from(e.size));
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Direction, DropReason};
    use crate::time::Instant;

    fn event(kind: EventKind, id: u64, size: u32) -> Event {
        Event {
            time: Instant::ZERO,
            stage: "s".into(),
            direction: Direction::Downlink,
            kind,
            packet: Some(PacketId(id)),
            flow: None,
            size,
        }
    }

    /// A tail drop of an arrival leaves the count alone; a head drop, an
    /// AQM drop at dequeue and a delivery each take one packet out;
    /// PIE's drop at enqueue (no `enqueue` before it) changes nothing.
    #[test]
    fn only_a_packet_that_entered_can_leave() {
        let mut inside = Inside::default();
        for id in 1..=3 {
            assert!(inside.apply(&event(EventKind::Enqueue, id, 100)));
        }
        // Tail drop: the 4th arrival is refused.
        assert!(!inside.apply(&event(EventKind::Drop(DropReason::QueueOverflow), 4, 100)));
        assert_eq!((inside.packets(), inside.bytes()), (3, 300));
        // Head drop: packet 1 leaves to make room for packet 5.
        assert!(inside.apply(&event(EventKind::Drop(DropReason::QueueOverflow), 1, 100)));
        assert!(inside.apply(&event(EventKind::Enqueue, 5, 50)));
        assert_eq!((inside.packets(), inside.bytes()), (3, 250));
        // PIE refuses packet 6 at enqueue; CoDel drops packet 2 at dequeue.
        assert!(!inside.apply(&event(EventKind::Drop(DropReason::Pie), 6, 100)));
        assert!(inside.apply(&event(EventKind::Drop(DropReason::Codel), 2, 100)));
        assert!(inside.apply(&event(EventKind::Deliver, 3, 100)));
        assert!(!inside.apply(&event(EventKind::TransmitStart { frame: 0 }, 5, 50)));
        assert_eq!((inside.packets(), inside.bytes()), (1, 50));
        assert!(inside.apply(&event(EventKind::Deliver, 5, 50)));
        assert_eq!((inside.packets(), inside.bytes(), inside.ids.len()), (0, 0, 0));
    }

    /// A duplicate and its original (one id) are two packets inside.
    #[test]
    fn a_duplicate_counts_apart_from_its_original() {
        let mut inside = Inside::default();
        inside.apply(&event(EventKind::Enqueue, 7, 100));
        inside.apply(&event(EventKind::Enqueue, 7, 100));
        inside.apply(&event(EventKind::Deliver, 7, 100));
        assert_eq!(inside.packets(), 1);
        inside.apply(&event(EventKind::Deliver, 7, 100));
        assert_eq!(inside.packets(), 0);
    }
}
