//! The queue discipline: what a stage does with packets before its link
//! takes them (docs/design.md, "A stage"; ns-3's `QueueDisc`, smoltcp's
//! `AnyController`).
//!
//! Every call gets `now`. [`QueueDisc::enqueue`] may drop (the arrival on
//! tail drop, RED; the oldest packets on head drop); [`QueueDisc::dequeue`]
//! may drop (packets that waited too long) and is told what the link can
//! take. Dropped packets are handed back with their reason, in the order
//! they were dropped; the stage counts and records them.

pub(crate) mod aqm;
mod classful;
pub(crate) mod fifo;
pub(crate) mod fq_codel;

pub(crate) use classful::Classful;
pub(crate) use fifo::Fifo;
pub(crate) use fq_codel::FqCodel;

use crate::event::DropReason;
use crate::packet::Packet;
use crate::queue::QueueKind;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// A packet the queue discipline dropped, and why.
#[derive(Debug)]
pub(crate) struct Dropped {
    pub packet: Packet,
    pub reason: DropReason,
}

/// What became of an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enqueued {
    /// Queued; `marked` when an AQM set Congestion Experienced on it.
    Queued { marked: bool },
    /// Refused: the packet is the last entry of the drops.
    Refused,
}

/// A packet leaving the queue discipline for the link.
#[derive(Debug)]
pub(crate) struct Dequeued {
    pub packet: Packet,
    /// An AQM set Congestion Experienced on it at dequeue (CoDel).
    pub marked: bool,
}

/// What the link tells the queue discipline about itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkHint {
    /// The time the link takes to send a typical packet (RED's idle-time
    /// decay).
    pub typical_tx: Duration,
}

/// A queue discipline.
pub(crate) trait QueueDisc {
    /// Offers a packet arriving at `now`. Packets dropped go to `drops`.
    fn enqueue(&mut self, now: Instant, packet: Packet, link: LinkHint, drops: &mut Vec<Dropped>) -> Enqueued;
    /// Offers a packet for class `class` (a background source's class),
    /// bypassing the classifier; without classes, or with `None`, the same
    /// as [`QueueDisc::enqueue`].
    fn enqueue_into(
        &mut self,
        now: Instant,
        packet: Packet,
        class: Option<usize>,
        link: LinkHint,
        drops: &mut Vec<Dropped>,
    ) -> Enqueued {
        let _ = class;
        self.enqueue(now, packet, link, drops)
    }
    /// The next packet for the link, if one is waiting and `fits(size)`
    /// says the link can take a packet of `size` bytes. Packets dropped on
    /// the way go to `drops`.
    fn dequeue(&mut self, now: Instant, fits: impl FnMut(u32) -> bool, drops: &mut Vec<Dropped>) -> Option<Dequeued>;
    /// Packets waiting.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Removes every waiting packet (a blackout in drop mode, a new queue
    /// shape), each with the time it arrived.
    fn drain(&mut self, now: Instant) -> Vec<(Packet, Instant)>;
}

/// Every queue discipline, for static dispatch. One per stage, and one
/// per class inside [`Classful`]: the single queue, on every packet's path
/// in most scenarios, stays inline.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyQueueDisc {
    /// One queue: limits, drop policy, at most one AQM, maximum sojourn.
    Fifo(Fifo),
    /// A classifier, a child queue discipline per class and a scheduler
    /// between them.
    Classful(Classful),
    /// Flow queues with CoDel and DRR (RFC 8290).
    FqCodel(FqCodel),
}

impl AnyQueueDisc {
    /// Each class's counters (empty without classes).
    pub(crate) fn class_stats(&self) -> Vec<crate::stage::ClassStats> {
        match self {
            AnyQueueDisc::Classful(c) => c.class_stats(),
            _ => Vec::new(),
        }
    }

    /// Each class's counters now, in class order, into `out` (emptied
    /// first; nothing without classes): what a [`crate::ClassSample`] holds.
    pub(crate) fn class_counts(&self, out: &mut Vec<crate::stage::ClassCounts>) {
        out.clear();
        if let AnyQueueDisc::Classful(c) = self {
            c.class_counts(out);
        }
    }

    /// The names of the classes, in class order (empty without classes).
    pub(crate) fn class_names(&self) -> Vec<String> {
        match self {
            AnyQueueDisc::Classful(c) => c.class_names(),
            _ => Vec::new(),
        }
    }

    /// Bytes waiting (background packets included).
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            AnyQueueDisc::Fifo(f) => f.bytes(),
            AnyQueueDisc::FqCodel(f) => f.bytes(),
            AnyQueueDisc::Classful(c) => c.bytes(),
        }
    }

    /// The queue discipline `config` describes; `rng(component)` gives the
    /// stage's random stream of that name.
    pub(crate) fn new(config: &QueueKind, rng: &mut dyn FnMut(&str) -> StreamRng) -> Self {
        match config {
            QueueKind::Fifo(f) => AnyQueueDisc::Fifo(Fifo::new(f, rng)),
            QueueKind::FqCodel(fq) => AnyQueueDisc::FqCodel(FqCodel::new(fq)),
            QueueKind::Classful(c) => AnyQueueDisc::Classful(Classful::new(c, rng)),
        }
    }

    /// Whether `config` describes a queue discipline of the same shape: of
    /// the same kind, with as many FQ-CoDel flow queues, with the same
    /// classes by name and order, each of the same shape. A state change
    /// then keeps it and its packets.
    pub(crate) fn same_shape(&self, config: &QueueKind) -> bool {
        match (self, config) {
            (AnyQueueDisc::Fifo(_), QueueKind::Fifo(_)) => true,
            (AnyQueueDisc::FqCodel(f), QueueKind::FqCodel(n)) => f.has_flows(n.flows),
            (AnyQueueDisc::Classful(c), QueueKind::Classful(n)) => c.has_classes_of(n),
            _ => false,
        }
    }

    /// Takes a new configuration of the same shape ([`Self::same_shape`]);
    /// waiting packets stay.
    pub(crate) fn set_config(&mut self, config: &QueueKind, rng: &mut dyn FnMut(&str) -> StreamRng) {
        match (self, config) {
            (AnyQueueDisc::Fifo(f), QueueKind::Fifo(n)) => f.set_config(n, rng),
            (AnyQueueDisc::FqCodel(f), QueueKind::FqCodel(n)) => f.set_config(n),
            (AnyQueueDisc::Classful(c), QueueKind::Classful(n)) => c.set_config(n, rng),
            _ => {}
        }
    }

    /// Takes a new configuration (a state change). Waiting packets stay
    /// when the shape is the same ([`Self::same_shape`]); otherwise they
    /// are moved, in order, into the new queue discipline (into
    /// `class_of(packet)` where that names a class: a background source's
    /// own), and those it refuses are returned as drops.
    pub(crate) fn reconfigure(
        &mut self,
        now: Instant,
        config: &QueueKind,
        link: LinkHint,
        rng: &mut dyn FnMut(&str) -> StreamRng,
        class_of: impl Fn(&Packet) -> Option<usize>,
        drops: &mut Vec<Dropped>,
    ) {
        if self.same_shape(config) {
            self.set_config(config, rng);
            return;
        }
        // In arrival order (classes and flow queues drain one after the
        // other), each with the time it arrived, so sojourn times (CoDel,
        // PIE, `max_sojourn`) go on counting from its arrival.
        let mut waiting = self.drain(now);
        waiting.sort_by_key(|&(_, since)| since);
        *self = AnyQueueDisc::new(config, rng);
        for (p, since) in waiting {
            let class = class_of(&p);
            self.enqueue_into(since, p, class, link, drops);
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQueueDisc::Fifo($q) => $e,
            AnyQueueDisc::Classful($q) => $e,
            AnyQueueDisc::FqCodel($q) => $e,
        }
    };
}

impl QueueDisc for AnyQueueDisc {
    #[inline]
    fn enqueue(&mut self, now: Instant, packet: Packet, link: LinkHint, drops: &mut Vec<Dropped>) -> Enqueued {
        dispatch!(self, q => q.enqueue(now, packet, link, drops))
    }
    fn enqueue_into(
        &mut self,
        now: Instant,
        packet: Packet,
        class: Option<usize>,
        link: LinkHint,
        drops: &mut Vec<Dropped>,
    ) -> Enqueued {
        dispatch!(self, q => q.enqueue_into(now, packet, class, link, drops))
    }
    #[inline]
    fn dequeue(&mut self, now: Instant, fits: impl FnMut(u32) -> bool, drops: &mut Vec<Dropped>) -> Option<Dequeued> {
        dispatch!(self, q => q.dequeue(now, fits, drops))
    }
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    fn drain(&mut self, now: Instant) -> Vec<(Packet, Instant)> {
        dispatch!(self, q => q.drain(now))
    }
}
