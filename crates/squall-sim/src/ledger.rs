//! The ledger of packets inside the network: every packet an agent sent
//! that has neither left the network nor been dropped, with its send time
//! and the flow it counts for.
//!
//! Packet ids are handed out in order, so the ledger is a window over the
//! ids from the oldest unresolved packet to the newest: lookups are an
//! index, and the window slides forward as old packets resolve. Its length
//! is bounded by how many packets are sent while the oldest one is still
//! inside (a few per in-flight packet in practice), not by the run length.

use std::collections::VecDeque;

use squall_link::{Instant, PacketId};
use squall_tcp::Segment;

/// Marks a packet that counts for no workload flow, or has no record.
pub(crate) const NONE: u32 = u32::MAX;

/// What the ledger knows about one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub sent: Instant,
    /// Index of the workload flow, or [`NONE`].
    pub flow: u32,
    /// Index into the run's packet records, or [`NONE`].
    pub record: u32,
    /// The TCP header carried beside the packet (squall-link's packets are
    /// protocol-agnostic).
    pub tcp: Option<Segment>,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    entry: Entry,
    live: bool,
    /// Copies of the packet inside the network besides it (a stage's
    /// `duplicate`): each resolves once before the entry does.
    copies: u32,
}

#[derive(Debug)]
pub(crate) struct PacketLedger {
    /// Id of `slots[0]`.
    base: u64,
    slots: VecDeque<Slot>,
    live: u64,
}

impl PacketLedger {
    /// The first packet gets id 1.
    pub fn new() -> Self {
        PacketLedger { base: 1, slots: VecDeque::new(), live: 0 }
    }

    /// Records a packet sent now and returns its id.
    #[inline]
    pub fn insert(&mut self, entry: Entry) -> PacketId {
        let id = self.base + self.slots.len() as u64;
        self.slots.push_back(Slot { entry, live: true, copies: 0 });
        self.live += 1;
        PacketId(id)
    }

    /// Takes the packet out of the ledger (it was delivered or dropped);
    /// `None` if it is not inside the network.
    #[inline]
    pub fn resolve(&mut self, id: PacketId) -> Option<Entry> {
        let index = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        let slot = self.slots.get_mut(index)?;
        if !slot.live {
            return None;
        }
        if slot.copies > 0 {
            slot.copies -= 1;
            self.live -= 1;
            return Some(slot.entry);
        }
        slot.live = false;
        self.live -= 1;
        let entry = slot.entry;
        while self.slots.front().is_some_and(|s| !s.live) {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(entry)
    }

    /// A stage made a copy of packet `id` (inside the network): the copy
    /// is delivered or dropped with the packet's entry. `false` if the
    /// packet is not inside.
    pub fn copy(&mut self, id: PacketId) -> bool {
        let Some(index) = id.0.checked_sub(self.base).and_then(|i| usize::try_from(i).ok()) else { return false };
        match self.slots.get_mut(index) {
            Some(slot) if slot.live => {
                slot.copies += 1;
                self.live += 1;
                true
            }
            _ => false,
        }
    }

    /// The entry of a packet inside the network.
    #[inline]
    pub fn get(&self, id: PacketId) -> Option<&Entry> {
        let index = usize::try_from(id.0.checked_sub(self.base)?).ok()?;
        self.slots.get(index).filter(|s| s.live).map(|s| &s.entry)
    }

    /// Packets inside the network.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// Packets inside the network, per flow (`flows` flows).
    pub fn live_per_flow(&self, flows: usize) -> Vec<u64> {
        let mut n = vec![0; flows];
        for s in self.slots.iter().filter(|s| s.live) {
            if let Some(c) = n.get_mut(s.entry.flow as usize) {
                *c += 1 + u64::from(s.copies);
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(flow: u32) -> Entry {
        Entry { sent: Instant::ZERO, flow, record: NONE, tcp: None }
    }

    #[test]
    fn window_slides_as_packets_resolve_in_any_order() {
        let mut l = PacketLedger::new();
        let ids: Vec<PacketId> = (0..4).map(|i| l.insert(entry(i % 2))).collect();
        assert_eq!(ids, vec![PacketId(1), PacketId(2), PacketId(3), PacketId(4)]);
        assert_eq!(l.resolve(PacketId(2)).unwrap().flow, 1);
        assert!(l.resolve(PacketId(2)).is_none(), "resolved twice");
        assert_eq!(l.slots.len(), 4);
        assert!(l.resolve(PacketId(1)).is_some());
        assert_eq!((l.base, l.slots.len()), (3, 2), "1 and 2 left the window");
        assert_eq!(l.live_per_flow(2), vec![1, 1]);
        assert!(l.resolve(PacketId(9)).is_none());
        assert!(l.resolve(PacketId(0)).is_none());
        assert_eq!(l.live(), 2);
    }
}
