//! Random Early Detection (Floyd & Jacobson 1993; recommended by RFC 2309
//! §3) on the average queue length in packets, with ECN marking instead of
//! an early drop for ECN-capable packets (RFC 3168 §7).

use serde::{Deserialize, Serialize};

use super::{Aqm, QueueState, Verdict};
use crate::dist::unit;
use crate::error::ConfigError;
use crate::event::DropReason;
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::stage::qdisc::LinkHint;
use crate::time::{Duration, Instant};
use crate::units::Probability;

/// Random Early Detection on the average queue length in packets, with ECN
/// marking of ECN-capable packets instead of dropping (RFC 3168 §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Average queue length (packets) where early drops begin.
    pub min_threshold: f64,
    /// Average queue length (packets) where the drop probability reaches
    /// `max_p`; above it every packet is dropped (or, if `gentle`, the
    /// probability rises linearly to 1 at twice this).
    pub max_threshold: f64,
    pub max_p: Probability,
    /// Weight of the exponential moving average, w_q.
    #[serde(default = "RedConfig::default_weight")]
    pub weight: f64,
    #[serde(default)]
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them.
    #[serde(default = "yes")]
    pub ecn: bool,
}

fn yes() -> bool {
    true
}

impl RedConfig {
    fn default_weight() -> f64 {
        0.002
    }
}

impl RedConfig {
    /// Checks the thresholds and the weight; `key` is `stage.queue.red`.
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if !(self.min_threshold >= 0.0 && self.min_threshold < self.max_threshold) {
            return Err(ConfigError::new(key, "needs 0 <= min_threshold < max_threshold (in packets)"));
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return Err(ConfigError::new(&format!("{key}.weight"), "must be in (0, 1], like 0.002"));
        }
        Ok(())
    }
}

/// What RED decided for an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RedVerdict {
    Pass,
    /// Probabilistic early drop: may be an ECN mark instead.
    Early,
    /// Average above the maximum threshold: always a drop.
    Forced,
}

/// RED's running state.
#[derive(Debug)]
pub(crate) struct Red {
    pub(super) config: RedConfig,
    avg: f64,
    /// Packets since the last mark or drop (Floyd & Jacobson's `count`).
    count: i64,
    rng: StreamRng,
}

impl Red {
    pub(crate) fn new(config: RedConfig, rng: StreamRng) -> Self {
        Red { config, avg: 0.0, count: 0, rng }
    }

    /// Decides on a packet arriving at `now` to a queue of `len` packets,
    /// empty since `idle_since` if it is. `typical_tx` is the time the link
    /// takes to send a typical packet (the idle-time decay of the average).
    fn decide(&mut self, now: Instant, len: usize, idle_since: Option<Instant>, typical_tx: Duration) -> RedVerdict {
        let red = &self.config;
        let w = red.weight;
        let q = len as f64;
        match idle_since {
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

impl Aqm for Red {
    /// An early drop of an ECN-capable packet is a mark instead when `ecn`
    /// is on (RFC 3168 §7); a forced drop is always a drop.
    fn on_enqueue(&mut self, now: Instant, packet: &Packet, queue: &QueueState, link: LinkHint) -> Verdict {
        match self.decide(now, queue.packets, queue.idle_since, link.typical_tx) {
            RedVerdict::Pass => Verdict::Pass,
            RedVerdict::Early if self.config.ecn && packet.ecn.is_capable() => Verdict::Mark,
            RedVerdict::Early | RedVerdict::Forced => Verdict::Drop(DropReason::Red),
        }
    }
}
