//! The connection's timers, one slot per kind (quinn-proto's `TimerTable`
//! shape): a timer is armed with the instant it fires, or stopped.
//!
//! Which timer fires first when several are due at once is the order of
//! [`Connection::handle_timeout`](super::Connection::handle_timeout), not
//! this table's.

use squall_link::Instant;

use super::*;

/// A timer of one TCP connection end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    /// The retransmission timer (RFC 6298).
    Rto,
    /// The delayed-ACK timer (RFC 1122 §4.2.3.2; Linux's `ato`).
    DelayedAck,
    /// The persist timer: a zero-window probe is due (RFC 1122
    /// §4.2.2.17).
    Persist,
    /// TIME-WAIT's end (RFC 9293 §3.10.7.4, 2·MSL).
    TimeWait,
    /// The pacer's next departure (Linux's `tcp_pacing_timer`).
    Pace,
    /// RACK's reordering timer (RFC 8985 §6.2 step 5).
    Reorder,
    /// The tail loss probe's timer (RFC 8985 §7.2).
    LossProbe,
    /// A held (compressed) SACK is due (Linux's `compressed_ack_timer`).
    CompressedAck,
}

impl Timer {
    const COUNT: usize = 8;
}

/// When each [`Timer`] fires, if armed.
#[derive(Clone, Debug, Default)]
pub(super) struct TimerTable {
    at: [Option<Instant>; Timer::COUNT],
}

impl TimerTable {
    /// When `timer` fires, if armed.
    pub(super) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer as usize]
    }

    pub(super) fn is_armed(&self, timer: Timer) -> bool {
        self.at[timer as usize].is_some()
    }

    /// `timer` is armed and its time has come.
    pub(super) fn is_due(&self, timer: Timer, now: Instant) -> bool {
        self.at[timer as usize].is_some_and(|t| t <= now)
    }

    /// Arms `timer` to fire at `at` (re-arming it if it was).
    pub(super) fn set(&mut self, timer: Timer, at: Instant) {
        self.at[timer as usize] = Some(at);
    }

    /// Arms `timer` at `at`, or stops it when `at` is `None`.
    pub(super) fn set_opt(&mut self, timer: Timer, at: Option<Instant>) {
        self.at[timer as usize] = at;
    }

    pub(super) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    /// The earliest armed timer's instant, leaving `skip` out.
    pub(super) fn next(&self, skip: Option<Timer>) -> Option<Instant> {
        let skip = skip.map_or(Timer::COUNT, |t| t as usize);
        self.at.iter().enumerate().filter(|&(i, _)| i != skip).filter_map(|(_, t)| *t).min()
    }
}

impl Connection {
    /// When [`Self::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // The pacing timer only matters while there is something to send.
        let skip_pace = self.timers.get(Timer::Pace).is_some() && !self.has_data_to_send();
        self.timers.next(if skip_pace { Some(Timer::Pace) } else { None })
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.timers.is_due(Timer::TimeWait, now) {
            self.timers.stop(Timer::TimeWait);
            self.enter_closed();
            return;
        }
        if self.timers.is_due(Timer::DelayedAck, now) {
            self.timers.stop(Timer::DelayedAck);
            self.ack_now = true;
            if self.config.quick_ack {
                // `tcp_delack_timer_handler`: "Delayed ACK missed: inflate
                // ATO", up to the RTO.
                self.ato = self.ato.saturating_mul(2).min(self.rtt.rto());
            }
        }
        if self.timers.is_due(Timer::CompressedAck, now) {
            self.timers.stop(Timer::CompressedAck);
            // `tcp_compressed_ack_kick`: the held ACK goes.
            if self.compressed_acks > 0 {
                self.ack_now = true;
            }
        }
        if self.timers.is_due(Timer::Reorder, now) {
            self.timers.stop(Timer::Reorder);
            self.on_reordering_timeout(now);
        }
        if self.timers.is_due(Timer::LossProbe, now) {
            self.timers.stop(Timer::LossProbe);
            // RFC 8985 §7.3: the probe goes at the next poll_transmit.
            if self.recovery.is_none() && self.snd_una < self.snd_max && self.tlp_high_seq.is_none() {
                self.tlp_pending = true;
            }
        }
        if self.timers.is_due(Timer::Rto, now) && !self.tlp_pending {
            self.timers.stop(Timer::Rto);
            self.on_retransmission_timeout(now);
        }
        if self.timers.is_due(Timer::Persist, now) {
            self.timers.stop(Timer::Persist);
            if self.snd_wnd == 0 && self.has_new_data() {
                self.probe_pending = true;
                self.persist_backoff = (self.persist_backoff + 1).min(16);
            }
        }
        if self.timers.is_due(Timer::Pace, now) {
            self.timers.stop(Timer::Pace);
        }
    }

    pub(super) fn persist_interval(&self) -> Duration {
        // The normal exponential backoff, bounded to 5..60 s (seed 004
        // §4.2.3, RFC 1122 §4.2.2.17).
        let base = self.rtt.base_rto().saturating_mul(1u64 << self.persist_backoff.min(16));
        base.clamp(self.config.persist_min, self.config.persist_max)
    }

    pub(super) fn on_retransmission_timeout(&mut self, now: Instant) {
        if self.snd_una >= self.snd_max || self.sent.is_empty() {
            return;
        }
        self.stats.timeouts += 1;
        let repeat = self.sent.front().is_some_and(|s| s.timer_retransmitted);
        self.rtt.back_off();
        if !self.state.is_synchronized() {
            // SYN or SYN-ACK lost: send it again.
            self.syn_pending = true;
            self.sent.update(0, |s| s.timer_retransmitted = true);
            return;
        }
        let flight = self.snd_max - self.snd_una;
        // The Linux profile runs Linux's `tcp_enter_loss`: the segments
        // not SACKed are marked lost (`tcp_timeout_mark_lost`); ssthresh
        // is not reduced again by a timeout in Recovery ("if it has not
        // yet been made inside this window": Recovery's `high_seq` is
        // above SND.UNA); the window is what is still in flight plus one;
        // and the first segment goes again at once (`tcp_retransmit_timer`),
        // the others as `tcp_xmit_retransmit_queue` lets them
        // (`transmit_data`). The RFC profile goes back to SND.UNA.
        let linux = self.rack_on();
        let ssthresh_held = repeat || (linux && self.recovery.is_some());
        if linux {
            let marked = self.timeout_mark_lost(now);
            if self.samples_rate() {
                self.rate.lost += marked;
            }
        } else if self.samples_rate() {
            // `tcp_enter_loss` marks everything outstanding lost.
            self.rate.lost += self.sent.unsacked_unlost();
        }
        if linux || self.samples_rate() {
            self.in_loss = true;
        }
        self.cc.on_timeout(now, flight, self.snd_mss, ssthresh_held);
        if linux {
            self.cc.set_loss_window(self.packets_in_flight() + 1);
        }
        self.recovery = None;
        self.prr = None;
        self.timers.stop(Timer::Reorder);
        self.timers.stop(Timer::LossProbe);
        self.tlp_pending = false;
        self.tlp_high_seq = None;
        self.retransmit_now = None;
        self.dupacks = 0;
        self.limited_sent = 0;
        self.recover = self.snd_max;
        if linux {
            self.retransmit_now = Some(self.snd_una);
        } else {
            // Go back to the first unacknowledged segment (BSD, Fall and
            // Floyd 1996); SACKed segments are skipped.
            self.snd_nxt = self.snd_una;
        }
        self.sent.update(0, |s| s.timer_retransmitted = true);
    }

    pub(super) fn arm_rto(&mut self, now: Instant) {
        self.timers.set(Timer::Rto, now + self.rtt.rto());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + squall_link::Duration::from_millis(ms)
    }

    #[test]
    fn next_is_the_earliest_armed_timer_but_the_skipped_one() {
        let mut t = TimerTable::default();
        assert_eq!(t.next(None), None);
        t.set(Timer::Rto, at(300));
        t.set(Timer::Pace, at(5));
        t.set(Timer::LossProbe, at(40));
        assert_eq!(t.next(None), Some(at(5)));
        assert_eq!(t.next(Some(Timer::Pace)), Some(at(40)));
        t.stop(Timer::LossProbe);
        assert_eq!(t.next(Some(Timer::Pace)), Some(at(300)));
        assert!(t.is_due(Timer::Rto, at(300)) && !t.is_due(Timer::Rto, at(299)));
        assert!(!t.is_due(Timer::DelayedAck, at(1_000)) && !t.is_armed(Timer::DelayedAck));
        t.set_opt(Timer::Rto, None);
        assert_eq!(t.next(None), Some(at(5)));
    }
}
