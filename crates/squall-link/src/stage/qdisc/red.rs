//! Random Early Detection (Floyd & Jacobson 1993) on the average queue
//! length in packets, with ECN marking instead of an early drop for
//! ECN-capable packets (RFC 3168 §7).

use crate::config::RedConfig;
use crate::dist::unit;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// What RED decided for an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedVerdict {
    Pass,
    /// Probabilistic early drop: may be an ECN mark instead.
    Early,
    /// Average above the maximum threshold: always a drop.
    Forced,
}

/// RED's running state.
#[derive(Debug)]
pub(crate) struct Red {
    avg: f64,
    /// Packets since the last mark or drop (Floyd & Jacobson's `count`).
    count: i64,
    /// When the queue last became empty, for the idle-time decay of `avg`.
    idle_since: Option<Instant>,
    rng: StreamRng,
}

impl Red {
    pub(crate) fn new(rng: StreamRng) -> Self {
        Red { avg: 0.0, count: 0, idle_since: Some(Instant::ZERO), rng }
    }

    /// A packet was queued: the queue is no longer idle.
    pub(crate) fn on_enqueue(&mut self) {
        self.idle_since = None;
    }

    /// The queue became empty at `now`.
    pub(crate) fn on_empty(&mut self, now: Instant) {
        self.idle_since = Some(now);
    }

    /// Decides on a packet arriving at `now` to a queue of `len` packets.
    /// `typical_tx` is the time the link takes to send a typical packet
    /// (the idle-time decay of the average).
    pub(crate) fn decide(&mut self, now: Instant, len: usize, red: &RedConfig, typical_tx: Duration) -> RedVerdict {
        let w = red.weight;
        let q = len as f64;
        match self.idle_since {
            None => self.avg = (1.0 - w) * self.avg + w * q,
            Some(since) => {
                // The queue was empty: decay avg as if m small packets had
                // been sent in the idle time (Floyd & Jacobson §4).
                let m = now.saturating_since(since).as_nanos() as f64 / typical_tx.as_nanos().max(1) as f64;
                self.avg *= (1.0 - w).powf(m);
            }
        }
        let (avg, min, max, max_p) = (self.avg, red.min_threshold, red.max_threshold, red.max_p.get());
        let pb = if avg < min {
            self.count = -1;
            return RedVerdict::Pass;
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if red.gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            self.count = 0;
            return RedVerdict::Forced;
        };
        self.count += 1;
        let pa = if self.count as f64 * pb >= 1.0 { 1.0 } else { pb / (1.0 - self.count as f64 * pb) };
        if unit(&mut self.rng) < pa {
            self.count = 0;
            RedVerdict::Early
        } else {
            RedVerdict::Pass
        }
    }
}
