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
