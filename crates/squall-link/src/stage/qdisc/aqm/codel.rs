//! CoDel, Controlled Delay (RFC 8289). Before working on this file, read
//! RFC 8289 §5 (the pseudocode this follows: `dodequeue`, `dequeue`,
//! `control_law`).
//!
//! The queue hands CoDel every packet it takes from its head
//! ([`Aqm::on_dequeue`]); CoDel runs `dodequeue`'s verdict
//! ([`Codel::ok_to_drop`]) and the drop state machine of RFC 8289 §5.5
//! around it, one packet at a time: after a drop the queue offers the next
//! head in the same dequeue, as `dequeue`'s loop does.

use serde::{Deserialize, Serialize};

use super::{Aqm, QueueState, Verdict};
use crate::error::ConfigError;
use crate::event::DropReason;
use crate::packet::Packet;
use crate::time::{Duration, Instant};

/// CoDel, Controlled Delay (RFC 8289): drops (or marks, for ECN-capable
/// packets) at dequeue once packets have waited longer than `target` for
/// at least `interval`, then at intervals shrinking as 1/sqrt(count).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// Acceptable standing queue delay (RFC 8289 §4.3: 5 ms).
    #[serde(default = "CodelConfig::default_target")]
    pub target: Duration,
    /// Sliding window for the minimum delay, about a worst-case RTT
    /// (RFC 8289 §4.2: 100 ms).
    #[serde(default = "CodelConfig::default_interval")]
    pub interval: Duration,
    /// Mark ECN-capable packets instead of dropping them (RFC 8289 §5.6).
    #[serde(default = "yes")]
    pub ecn: bool,
}

fn yes() -> bool {
    true
}

impl CodelConfig {
    pub(crate) fn default_target() -> Duration {
        Duration::from_millis(5)
    }
    pub(crate) fn default_interval() -> Duration {
        Duration::from_millis(100)
    }
    pub(crate) fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.target.is_zero() || self.target >= self.interval {
            return Err(ConfigError::new(key, "needs 0 < target < interval (RFC 8289: target 5 ms, interval 100 ms)"));
        }
        Ok(())
    }
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig { target: Self::default_target(), interval: Self::default_interval(), ecn: true }
    }
}

/// Where CoDel is inside one dequeue (RFC 8289 §5.5's `dequeue`): the
/// packet it is offered next is the first, or the one after a drop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Step {
    /// The first packet of a dequeue.
    #[default]
    First,
    /// After a drop in the dropping state (the `while` loop).
    AfterDropping,
    /// After the drop that enters the dropping state.
    AfterEntering,
}

/// CoDel's state (RFC 8289 §5.2 names).
#[derive(Debug, Default)]
pub(crate) struct Codel {
    pub(super) config: CodelConfig,
    step: Step,
    /// When the sojourn time will have been above target for an interval.
    first_above_time: Option<Instant>,
    /// When the next drop is due in the dropping state.
    pub drop_next: Instant,
    /// Drops since entering the dropping state.
    pub count: u32,
    /// `count` when the dropping state was last left.
    pub lastcount: u32,
    pub dropping: bool,
}

impl Codel {
    pub(crate) fn new(config: CodelConfig) -> Self {
        Codel { config, ..Codel::default() }
    }

    /// `dodequeue`'s verdict on a packet that waited `sojourn`, leaving
    /// `bytes_left` bytes queued; `max_packet` is the largest packet seen
    /// (RFC 8289 §5.4: no drop when less than one packet is queued).
    pub(crate) fn ok_to_drop(
        &mut self,
        now: Instant,
        sojourn: Duration,
        bytes_left: u64,
        max_packet: u64,
        c: &CodelConfig,
    ) -> bool {
        if sojourn < c.target || bytes_left <= max_packet {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + c.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// In the dropping state, the drop due by `now` (RFC 8289 §5.5, the
    /// `while` loop): a mark for an ECN-capable packet when `ecn` is on
    /// (§5.6, as Linux does), which ends this dequeue, or a drop.
    fn drop_if_due(&mut self, now: Instant, packet: &Packet) -> Verdict {
        if !(self.dropping && now >= self.drop_next) {
            return Verdict::Pass;
        }
        self.count += 1;
        if self.config.ecn && packet.ecn.is_capable() {
            self.drop_next = Self::control_law(self.drop_next, self.count, &self.config);
            return Verdict::Mark;
        }
        self.step = Step::AfterDropping;
        Verdict::Drop(DropReason::Codel)
    }

    /// `control_law`: the next drop time, `interval / sqrt(count)` after
    /// `t` (RFC 8289 §5.3).
    pub(crate) fn control_law(t: Instant, count: u32, c: &CodelConfig) -> Instant {
        let gap = c.interval.as_nanos() as f64 / (count.max(1) as f64).sqrt();
        t + Duration::from_nanos(gap as u64)
    }

    /// Entering the dropping state at `now` after a first drop (RFC 8289
    /// §5.5): `count` restarts near its last value if the last dropping
    /// state ended recently.
    pub(crate) fn enter_dropping(&mut self, now: Instant, c: &CodelConfig) {
        self.dropping = true;
        let delta = self.count.saturating_sub(self.lastcount);
        self.count = 1;
        if delta > 1 && now.saturating_since(self.drop_next) < c.interval.saturating_mul(16) {
            self.count = delta;
        }
        self.drop_next = Self::control_law(now, self.count, c);
        self.lastcount = self.count;
    }
}

impl Aqm for Codel {
    /// RFC 8289 §5.5 `dequeue`, one packet at a time.
    fn on_dequeue(&mut self, now: Instant, head: Option<(&Packet, Duration)>, queue: &QueueState) -> Verdict {
        let step = std::mem::take(&mut self.step);
        let empty = queue.packets == 0;
        let Some((packet, sojourn)) = head else {
            // `dodequeue` found nothing (§5.4).
            if empty {
                self.first_above_time = None;
            }
            match step {
                Step::AfterEntering => self.enter_dropping(now, &self.config.clone()),
                Step::First | Step::AfterDropping if empty => self.dropping = false,
                Step::First | Step::AfterDropping => {}
            }
            return Verdict::Pass;
        };
        let config = self.config.clone();
        let ok = self.ok_to_drop(now, sojourn, queue.bytes, queue.max_packet, &config);
        match step {
            Step::First if self.dropping => {
                if !ok {
                    self.dropping = false;
                }
                self.drop_if_due(now, packet)
            }
            Step::First if ok => {
                if config.ecn && packet.ecn.is_capable() {
                    self.enter_dropping(now, &config);
                    return Verdict::Mark;
                }
                self.step = Step::AfterEntering;
                Verdict::Drop(DropReason::Codel)
            }
            Step::First => Verdict::Pass,
            Step::AfterDropping => {
                if ok {
                    self.drop_next = Self::control_law(self.drop_next, self.count, &config);
                } else {
                    self.dropping = false;
                }
                self.drop_if_due(now, packet)
            }
            Step::AfterEntering => {
                // The packet after the first drop leaves whatever it is.
                self.enter_dropping(now, &config);
                Verdict::Pass
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    /// RFC 8289 §5.3: the gap after the count-th drop is interval/√count;
    /// with the default 100 ms interval, 100/√4 = 50 ms exactly and
    /// 100/√2 = 70.710678 ms (truncated to the nanosecond).
    #[test]
    fn control_law_divides_the_interval_by_the_square_root_of_count() {
        let c = CodelConfig::default();
        assert_eq!(Codel::control_law(at_ms(1000), 1, &c), at_ms(1100));
        assert_eq!(Codel::control_law(at_ms(1000), 4, &c), at_ms(1050));
        assert_eq!(Codel::control_law(at_ms(1000), 2, &c), Instant::from_nanos(1_070_710_678));
        assert_eq!(Codel::control_law(at_ms(1000), 100, &c), at_ms(1010));
    }

    /// RFC 8289 §5.5 (the Linux re-entry rule its pseudocode follows):
    /// entering the dropping state within 16 intervals of the last
    /// `drop_next`, `count` restarts at the number of drops of the last
    /// episode beyond its first (`count − lastcount`) when that is above 1,
    /// else at 1.
    #[test]
    fn count_restarts_near_its_last_value_after_a_recent_episode() {
        let c = CodelConfig::default();
        // Last episode entered with count 3 and left after 6 more drops
        // (count 9), its next drop having been due at 1000 ms.
        let last = |drop_next| Codel { count: 9, lastcount: 3, drop_next, ..Codel::default() };
        // 500 ms later (< 16 × 100 ms): count = 9 − 3 = 6, next drop
        // 100/√6 = 40.824829 ms later.
        let mut k = last(at_ms(1000));
        k.enter_dropping(at_ms(1500), &c);
        assert!(k.dropping);
        assert_eq!((k.count, k.lastcount), (6, 6));
        assert_eq!(k.drop_next, Instant::from_nanos(1_540_824_829));
        // Exactly 16 intervals later the memory is gone: count 1, next
        // drop one interval later.
        let mut k = last(at_ms(1000));
        k.enter_dropping(at_ms(2600), &c);
        assert_eq!((k.count, k.lastcount, k.drop_next), (1, 1, at_ms(2700)));
        // One drop beyond the first (delta 1) is not remembered.
        let mut k = Codel { count: 4, lastcount: 3, drop_next: at_ms(1000), ..Codel::default() };
        k.enter_dropping(at_ms(1200), &c);
        assert_eq!((k.count, k.drop_next), (1, at_ms(1300)));
    }
}
