//! PIE, Proportional Integral controller Enhanced (RFC 8033). Before
//! working on this file, read RFC 8033 §4 (the algorithm) and §5.1 (ECN).
//!
//! The drop probability is recomputed every `t_update` from the queueing
//! delay, taken as the sojourn time of the last packet that left (RFC 8033
//! §4.2 allows a timestamp estimate instead of Little's law). Updates are
//! done lazily: each call first runs the updates whose time has passed.

use crate::classes::PieConfig;
use crate::dist::unit;
use crate::rng::StreamRng;
use crate::time::{Duration, Instant};

/// PIE's verdict on an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PieVerdict {
    Enqueue,
    /// Drop, or mark if the packet is ECN-capable and `markable`.
    Drop {
        markable: bool,
    },
}

#[derive(Debug)]
pub(crate) struct Pie {
    drop_prob: f64,
    /// Queue delay at the previous update, seconds.
    qdelay_old: f64,
    /// Current queue delay estimate, seconds.
    qdelay: f64,
    burst_allowance: Duration,
    /// Accumulated probability since the last drop (RFC 8033 §4.1,
    /// de-randomisation).
    accu_prob: f64,
    next_update: Option<Instant>,
    rng: StreamRng,
}

impl Pie {
    pub(crate) fn new(rng: StreamRng) -> Self {
        Pie {
            drop_prob: 0.0,
            qdelay_old: 0.0,
            qdelay: 0.0,
            burst_allowance: Duration::ZERO,
            accu_prob: 0.0,
            next_update: None,
            rng,
        }
    }

    /// A packet left the queue after waiting `sojourn`; `empty` if the
    /// queue is empty now.
    pub(crate) fn on_dequeue(&mut self, now: Instant, sojourn: Duration, empty: bool, c: &PieConfig) {
        self.catch_up(now, c);
        self.qdelay = if empty { 0.0 } else { sojourn.as_secs_f64() };
    }

    /// Runs the periodic updates due by `now` (RFC 8033 §4.2).
    fn catch_up(&mut self, now: Instant, c: &PieConfig) {
        let next = match self.next_update {
            Some(t) => t,
            None => {
                // RFC 8033 §4.4: a new queue may take a burst.
                self.burst_allowance = c.max_burst;
                *self.next_update.insert(now + c.t_update)
            }
        };
        if now < next {
            return;
        }
        let mut at = next;
        // After a long idle period the updates only decay: bound the work.
        let mut steps = 0;
        while at <= now && steps < 10_000 {
            self.update(c);
            at += c.t_update;
            steps += 1;
        }
        self.next_update = Some(if at <= now { now + c.t_update } else { at });
    }

    /// `calculate_drop_prob` (RFC 8033 §4.2 and §5.2's auto-tuning).
    fn update(&mut self, c: &PieConfig) {
        let target = c.target.as_secs_f64();
        let (qdelay, old) = (self.qdelay, self.qdelay_old);
        let mut p = c.alpha * (qdelay - target) + c.beta * (qdelay - old);
        p /= match self.drop_prob {
            d if d < 0.000_001 => 2048.0,
            d if d < 0.000_01 => 512.0,
            d if d < 0.000_1 => 128.0,
            d if d < 0.001 => 32.0,
            d if d < 0.01 => 8.0,
            d if d < 0.1 => 2.0,
            _ => 1.0,
        };
        // Cap the rise at high probability (RFC 8033 §4.2).
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        if qdelay == 0.0 && old == 0.0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.qdelay_old = qdelay;
        self.burst_allowance = self.burst_allowance.saturating_sub(c.t_update);
        if self.drop_prob == 0.0 && qdelay < target / 2.0 && old < target / 2.0 {
            self.burst_allowance = c.max_burst;
        }
    }

    /// `drop_early` for a packet arriving at `now` to a queue holding
    /// `bytes` (RFC 8033 §4.1): no drop during a burst allowance, at low
    /// delay and probability, or with under two packets queued.
    pub(crate) fn on_enqueue(&mut self, now: Instant, bytes: u64, mean_packet: u64, c: &PieConfig) -> PieVerdict {
        self.catch_up(now, c);
        let target = c.target.as_secs_f64();
        if !self.burst_allowance.is_zero()
            || (self.qdelay_old < target / 2.0 && self.drop_prob < 0.2)
            || bytes <= 2 * mean_packet
        {
            return PieVerdict::Enqueue;
        }
        if self.drop_prob == 0.0 {
            self.accu_prob = 0.0;
        }
        self.accu_prob += self.drop_prob;
        if self.accu_prob < 0.85 {
            return PieVerdict::Enqueue;
        }
        let markable = c.ecn && self.drop_prob <= 0.1;
        if self.accu_prob >= 8.5 {
            self.accu_prob = 0.0;
            return PieVerdict::Drop { markable };
        }
        if unit(&mut self.rng) < self.drop_prob {
            self.accu_prob = 0.0;
            return PieVerdict::Drop { markable };
        }
        PieVerdict::Enqueue
    }
}
