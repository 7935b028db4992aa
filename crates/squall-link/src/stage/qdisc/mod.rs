//! The queue discipline: what a stage does with packets before its link
//! takes them (docs/design.md, "A stage"; ns-3's `QueueDisc`, smoltcp's
//! `AnyController`).
//!
//! Every call gets `now`. [`QueueDisc::enqueue`] may drop (the arrival on
//! tail drop, RED; the oldest packets on head drop); [`QueueDisc::dequeue`]
//! may drop (packets that waited too long) and is told what the link can
//! take. Dropped packets are handed back with their reason, in the order
//! they were dropped; the stage counts and records them.

mod classful;
mod codel;
mod fifo;
mod fq_codel;
mod pie;
mod red;

pub(crate) use classful::Classful;
pub(crate) use fifo::Fifo;
pub(crate) use fq_codel::FqCodel;

use crate::config::QueueConfig;
use crate::event::DropReason;
use crate::packet::Packet;
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
    /// Takes a new configuration (a state change); waiting packets stay.
    fn set_config(&mut self, config: &QueueConfig);
}

/// Every queue discipline, for static dispatch. One per stage: the single
/// queue, on every packet's path in most scenarios, stays inline.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyQueueDisc {
    /// One queue: limits, drop policy, RED, CoDel or PIE, maximum sojourn.
    Fifo(Fifo),
    /// A classifier, a queue per class and a scheduler between them.
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

    /// The queue discipline `config` describes; `rng(component)` gives the
    /// stage's random stream of that name.
    pub(crate) fn new(config: &QueueConfig, rng: impl FnMut(&str) -> StreamRng) -> Self {
        if let Some(fq) = &config.fq_codel {
            AnyQueueDisc::FqCodel(FqCodel::new(fq))
        } else if config.classes.is_empty() {
            AnyQueueDisc::Fifo(Fifo::new(config.clone(), rng))
        } else {
            AnyQueueDisc::Classful(Classful::new(config, rng))
        }
    }

    /// Takes a new configuration (a state change). Waiting packets stay
    /// when the shape is the same (one queue, or the same classes by
    /// name); otherwise they are moved, in order, into the new queue
    /// discipline (into `class_of(packet)` where that names a class: a
    /// background source's own), and those it refuses are returned as drops.
    pub(crate) fn reconfigure(
        &mut self,
        now: Instant,
        config: &QueueConfig,
        link: LinkHint,
        rng: impl FnMut(&str) -> StreamRng,
        class_of: impl Fn(&Packet) -> Option<usize>,
        drops: &mut Vec<Dropped>,
    ) {
        let same_shape = match self {
            AnyQueueDisc::Fifo(_) => config.classes.is_empty() && config.fq_codel.is_none(),
            AnyQueueDisc::Classful(c) => c.has_classes_of(config) && config.fq_codel.is_none(),
            AnyQueueDisc::FqCodel(f) => config.fq_codel.as_ref().is_some_and(|n| f.has_flows(n.flows)),
        };
        if same_shape {
            self.set_config(config);
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
    fn set_config(&mut self, config: &QueueConfig) {
        dispatch!(self, q => q.set_config(config))
    }
}
