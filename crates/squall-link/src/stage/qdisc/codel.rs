//! CoDel, Controlled Delay (RFC 8289). Before working on this file, read
//! RFC 8289 §5 (the pseudocode this follows: `dodequeue`, `dequeue`,
//! `control_law`).
//!
//! The queue asks [`Codel::ok_to_drop`] about every packet it takes from
//! its head and runs the drop state machine of RFC 8289 §5.5 around it
//! ([`super::Fifo`]).

use crate::classes::CodelConfig;
use crate::time::{Duration, Instant};

/// CoDel's state (RFC 8289 §5.2 names).
#[derive(Debug, Default)]
pub(crate) struct Codel {
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

    /// The queue was empty at dequeue (RFC 8289 §5.4).
    pub(crate) fn on_empty(&mut self) {
        self.first_above_time = None;
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
