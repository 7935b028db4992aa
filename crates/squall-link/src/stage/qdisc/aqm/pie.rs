//! PIE, Proportional Integral controller Enhanced (RFC 8033). Before
//! working on this file, read RFC 8033 §4 (the algorithm) and §5.1 (ECN).
//!
//! The drop probability is recomputed every `t_update` from the queueing
//! delay, taken as the sojourn time of the last packet that left (RFC 8033
//! §4.3 allows timestamps or Little's law over a measured departure rate,
//! §5.2). Updates are
//! done lazily: each call first runs the updates whose time has passed.
//!
//! Where the three implementations people compare with differ, squall
//! follows RFC 8033's pseudo-code (its §4 and Appendix A); Linux is
//! `net/sched/sch_pie.c` (6.x: `pie_drop_early`, `pie_process_dequeue`,
//! `pie_calculate_probability`; state in `include/net/pie.h`), ns-3 is
//! 3.44's `src/traffic-control/model/pie-queue-disc.cc`:
//!
//! - **Queue delay.** The sojourn time of the last packet dequeued, 0 when
//!   that departure emptied the queue: as Linux with `dq_rate_estimator`
//!   off (its default) and ns-3 with `UseDequeueRateEstimator` false (its
//!   default). RFC 8033 §4.3 allows either this or Little's law over a
//!   departure rate measured in 16 KB cycles (§5.2; Linux's and ns-3's
//!   option).
//! - **Scaling of the adjustment by ranges of p** (RFC 8033 §4.2: /2048
//!   below 0.0001 %, … , /2 below 10 %) and the **cap** of +2 % per update
//!   once p ≥ 10 % (§5.5): the same in all three (Linux by shifts of
//!   alpha and beta). Linux also adds 2 % per update while the delay is
//!   above 250 ms (`pie_calculate_probability`, "non-linear drop"); the RFC
//!   and ns-3 do not, nor does squall.
//! - **Decay when idle**: p × 0.98 per update while this and the previous
//!   delay are 0 (RFC 8033 §4.2, ns-3); Linux takes 1/64 off (× 0.984) and
//!   skips it while packets wait.
//! - **De-randomisation** (RFC 8033 §5.4 and Appendix A; Linux always):
//!   p accumulates per arrival; no drop below 0.85, a drop at 8.5, a random
//!   drop in between. ns-3's `UseDerandomization` is **false** by default:
//!   with the same p it drops at every arrival with probability p.
//! - **Burst allowance** (RFC 8033 §4.4, 150 ms in all three): no early
//!   drop while it lasts; it shrinks by `t_update` at each update (RFC,
//!   ns-3; Linux by the time between dequeues) and is granted again when p
//!   is 0 and both delays are below half the target. The drop probability
//!   goes on being computed meanwhile (RFC, Linux); ns-3 holds it at 0
//!   while an allowance lasts and grants a new allowance only after 1.5 s
//!   of such calm (`BURST_RESET_TIMEOUT`).
//! - **Early drop off** while the delay is below half the target and p
//!   below 20 %, or with at most two packets' bytes queued (RFC 8033 §4.1:
//!   `qdelay_old` and 2 × MEAN_PKTSIZE, squall's mean packet being the
//!   largest seen; ns-3: `qdelay_old` and 2 packets; Linux: the latest
//!   delay and 2 MTUs).
//! - **ECN** (§5.1): a packet that would be dropped is marked instead if it
//!   is ECN-capable and p ≤ 10 % (Linux `prob <= MAX_PROB / 10`; ns-3
//!   marks below `MarkEcnThreshold`, 0.1, with `UseEcn`, off by default).
//! - The accumulated probability restarts at 0 after an early drop (all
//!   three), but not after a drop by the queue's limit (RFC Appendix A,
//!   Linux's `pie_qdisc_enqueue` and ns-3 reset it there too): the limit
//!   is checked by the queue after PIE, so PIE does not see those drops.
//!
//! bench/ns3/aqm.sh runs squall's PIE, CoDel, FQ-CoDel and a FIFO beside
//! ns-3 3.44's on one scenario; docs/validation.md has its table.

use serde::{Deserialize, Serialize};

use super::{Aqm, QueueState, Verdict};
use crate::dist::unit;
use crate::error::ConfigError;
use crate::event::DropReason;
use crate::packet::Packet;
use crate::rng::StreamRng;
use crate::stage::qdisc::LinkHint;
use crate::time::{Duration, Instant};

fn yes() -> bool {
    true
}

/// PIE, Proportional Integral controller Enhanced (RFC 8033): drops (or
/// marks) at enqueue with a probability that a controller updates every
/// `t_update` from the queueing delay and its trend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// QDELAY_REF, the queueing delay PIE steers to (RFC 8033 §4.2: 15 ms).
    #[serde(default = "PieConfig::default_target")]
    pub target: Duration,
    /// T_UPDATE, how often the drop probability is recomputed (15 ms).
    #[serde(default = "PieConfig::default_target")]
    pub t_update: Duration,
    /// Weight of the delay error, per second (0.125).
    #[serde(default = "PieConfig::default_alpha")]
    pub alpha: f64,
    /// Weight of the delay trend, per second (1.25).
    #[serde(default = "PieConfig::default_beta")]
    pub beta: f64,
    /// Bursts this long pass without drops (RFC 8033 §4.4: 150 ms).
    #[serde(default = "PieConfig::default_max_burst")]
    pub max_burst: Duration,
    /// Mark ECN-capable packets instead of dropping them while the drop
    /// probability is at most 10% (RFC 8033 §5.1).
    #[serde(default = "yes")]
    pub ecn: bool,
}

impl PieConfig {
    fn default_target() -> Duration {
        Duration::from_millis(15)
    }
    fn default_alpha() -> f64 {
        0.125
    }
    fn default_beta() -> f64 {
        1.25
    }
    fn default_max_burst() -> Duration {
        Duration::from_millis(150)
    }
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.target.is_zero() || self.t_update.is_zero() {
            return Err(ConfigError::new(key, "needs target and t_update above zero (RFC 8033: 15 ms each)"));
        }
        if !(self.alpha >= 0.0 && self.alpha.is_finite() && self.beta >= 0.0 && self.beta.is_finite()) {
            return Err(ConfigError::new(key, "needs alpha and beta >= 0 (RFC 8033: 0.125 and 1.25 per second)"));
        }
        Ok(())
    }
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Self::default_target(),
            t_update: Self::default_target(),
            alpha: Self::default_alpha(),
            beta: Self::default_beta(),
            max_burst: Self::default_max_burst(),
            ecn: true,
        }
    }
}

/// PIE's verdict on an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PieVerdict {
    Enqueue,
    /// Drop, or mark if the packet is ECN-capable and `markable`.
    Drop {
        markable: bool,
    },
}

#[derive(Debug)]
pub(crate) struct Pie {
    pub(super) config: PieConfig,
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
    pub(crate) fn new(config: PieConfig, rng: StreamRng) -> Self {
        Pie {
            config,
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
    fn departed(&mut self, now: Instant, sojourn: Duration, empty: bool) {
        self.catch_up(now);
        self.qdelay = if empty { 0.0 } else { sojourn.as_secs_f64() };
    }

    /// Runs the periodic updates due by `now` (RFC 8033 §4.2).
    fn catch_up(&mut self, now: Instant) {
        let c = self.config.clone();
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
            self.update();
            at += c.t_update;
            steps += 1;
        }
        self.next_update = Some(if at <= now { now + c.t_update } else { at });
    }

    /// `calculate_drop_prob` (RFC 8033 §4.2 and §5.2's auto-tuning).
    fn update(&mut self) {
        let c = &self.config;
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
    fn drop_early(&mut self, now: Instant, bytes: u64, mean_packet: u64) -> PieVerdict {
        self.catch_up(now);
        let c = &self.config;
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

impl Aqm for Pie {
    /// A drop of an ECN-capable packet is a mark instead while the drop
    /// probability is at most 10% and `ecn` is on (RFC 8033 §5.1).
    fn on_enqueue(&mut self, now: Instant, packet: &Packet, queue: &QueueState, _link: LinkHint) -> Verdict {
        match self.drop_early(now, queue.bytes, queue.max_packet) {
            PieVerdict::Enqueue => Verdict::Pass,
            PieVerdict::Drop { markable } if markable && packet.ecn.is_capable() => Verdict::Mark,
            PieVerdict::Drop { .. } => Verdict::Drop(DropReason::Pie),
        }
    }

    /// The departure's sojourn time is the queueing delay (RFC 8033 §4.3,
    /// timestamps); an empty queue has none.
    fn on_dequeue(&mut self, now: Instant, head: Option<(&Packet, Duration)>, queue: &QueueState) -> Verdict {
        if let Some((_, sojourn)) = head {
            self.departed(now, sojourn, queue.packets == 0);
        }
        Verdict::Pass
    }
}
