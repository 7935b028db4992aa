//! Reno as Linux runs it (net/ipv4/tcp_cong.c `tcp_reno_cong_avoid`,
//! `tcp_slow_start`, `tcp_cong_avoid_ai`, `tcp_reno_ssthresh`;
//! net/ipv4/tcp_input.c `tcp_end_cwnd_reduction`, `tcp_enter_loss`).
//!
//! The window counts segments. Slow start adds one segment per segment
//! delivered (acknowledged or SACKed), which is RFC 3465's byte counting
//! without its limit L, and stops at ssthresh; the rest of the ACK goes to
//! congestion avoidance, which adds one segment per window of segments
//! delivered (RFC 5681 §3.1's "one segment per RTT", counted exactly). A
//! loss sets ssthresh to half the congestion window (not of FlightSize),
//! at least 2 segments; the window during recovery is the connection's
//! (PRR, RFC 6937) and is ssthresh when recovery ends. A timeout leaves a
//! window of one segment.

use squall_link::Instant;

use super::{AckSample, CongestionControl, LossRecovery, window_at_fast_retransmit};

#[derive(Clone, Debug, PartialEq)]
pub struct LinuxReno {
    /// Congestion window and ssthresh, segments (`snd_cwnd`,
    /// `snd_ssthresh`).
    pub(super) cwnd: u64,
    pub(super) ssthresh: u64,
    /// Segments delivered toward the next increase (`snd_cwnd_cnt`).
    pub(super) cwnd_cnt: u64,
    /// Bytes delivered not yet counted as a whole segment.
    pub(super) carry: u64,
    /// Largest window, segments (`snd_cwnd_clamp`).
    pub(super) clamp: u64,
    pub(super) mss: u64,
}

impl LinuxReno {
    /// Windows in bytes, counted in segments of `mss` bytes.
    pub fn new(initial_window: u64, initial_ssthresh: u64, max_window: u64, mss: u32) -> Self {
        let mss = mss.max(1) as u64;
        let clamp = (max_window / mss).max(1);
        LinuxReno {
            cwnd: (initial_window / mss).clamp(1, clamp),
            ssthresh: (initial_ssthresh / mss).max(2),
            cwnd_cnt: 0,
            carry: 0,
            clamp,
            mss,
        }
    }

    /// `tcp_slow_start`: returns the segments left over for congestion
    /// avoidance.
    pub(super) fn slow_start(&mut self, acked: u64) -> u64 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd.min(self.clamp);
        left
    }

    /// `tcp_cong_avoid_ai` with w = cwnd.
    fn additive_increase(&mut self, acked: u64) {
        let w = self.cwnd;
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.clamp);
    }

    /// `tcp_in_slow_start`: cwnd below ssthresh.
    pub(super) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Whole segments in `bytes` delivered, the rest carried to the next
    /// ACK.
    pub(super) fn count_segments(&mut self, bytes: u64) -> u64 {
        let bytes = self.carry + bytes;
        self.carry = bytes % self.mss;
        bytes / self.mss
    }

    fn set_ssthresh_on_loss(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(2);
    }
}

impl CongestionControl for LinuxReno {
    fn window(&self) -> u64 {
        self.cwnd * self.mss
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh.saturating_mul(self.mss)
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        if sack { LossRecovery::Sack } else { LossRecovery::NewReno }
    }

    fn on_ack(&mut self, _now: Instant, ack: &AckSample) {
        let mut acked = self.count_segments(ack.delivered);
        if self.in_slow_start() {
            acked = self.slow_start(acked);
        }
        if acked > 0 {
            self.additive_increase(acked);
        }
    }

    fn on_fast_retransmit(
        &mut self,
        _now: Instant,
        _flight_size: u64,
        mss: u32,
        dupthresh: u32,
        recovery: LossRecovery,
    ) {
        self.set_ssthresh_on_loss();
        let bytes = window_at_fast_retransmit(self.ssthresh(), mss, dupthresh, recovery);
        self.cwnd = (bytes / self.mss).clamp(1, self.clamp);
    }

    fn on_recovery_dupack(&mut self, _now: Instant, _mss: u32, recovery: LossRecovery) {
        if recovery == LossRecovery::NewReno {
            self.cwnd = (self.cwnd + 1).min(self.clamp);
        }
    }

    fn on_partial_ack(&mut self, _now: Instant, acked: u64, _mss: u32) {
        let back = if acked >= self.mss { 1 } else { 0 };
        self.cwnd = (self.cwnd.saturating_sub(acked / self.mss) + back).clamp(1, self.clamp);
    }

    fn on_recovery_end(&mut self, _now: Instant, _flight_size: u64, _mss: u32, _recovery: LossRecovery) {
        // `tcp_end_cwnd_reduction`: cwnd = ssthresh.
        self.cwnd = self.ssthresh.clamp(1, self.clamp);
        self.cwnd_cnt = 0;
    }

    fn on_timeout(&mut self, _now: Instant, _flight_size: u64, _mss: u32, repeat: bool) {
        if !repeat {
            self.set_ssthresh_on_loss();
        }
        self.cwnd = 1;
        self.cwnd_cnt = 0;
    }

    fn set_loss_window(&mut self, segments: u64) {
        self.cwnd = segments.clamp(1, self.clamp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn delivered(segments: u64) -> AckSample {
        AckSample {
            bytes_acked: segments * MSS as u64,
            delivered: segments * MSS as u64,
            rtt: None,
            srtt: None,
            flight_size: 0,
            mss: MSS,
            rate: None,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    #[test]
    fn slow_start_counts_every_segment_delivered() {
        // IW 10; an ACK of 2 segments adds 2 (RFC 5681 would add 1).
        let mut cc = LinuxReno::new(10_000, u64::MAX / 4, u64::MAX / 4, MSS);
        cc.on_ack(Instant::ZERO, &delivered(2));
        assert_eq!(cc.window(), 12_000);
        // An ACK of 3 segments with ssthresh 14: 2 to reach it in slow
        // start, the third counted toward congestion avoidance.
        let mut cc = LinuxReno::new(12_000, 14_000, u64::MAX / 4, MSS);
        cc.on_ack(Instant::ZERO, &delivered(3));
        assert_eq!((cc.window(), cc.cwnd_cnt), (14_000, 1));
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window_delivered() {
        let mut cc = LinuxReno::new(20_000, 20_000, u64::MAX / 4, MSS);
        // 19 segments delivered: no increase yet; the 20th adds one.
        for _ in 0..19 {
            cc.on_ack(Instant::ZERO, &delivered(1));
        }
        assert_eq!(cc.window(), 20_000);
        cc.on_ack(Instant::ZERO, &delivered(1));
        assert_eq!(cc.window(), 21_000);
        // Half a window in one stretch ACK of 2 segments per ACK: 21
        // segments → one more.
        for _ in 0..11 {
            cc.on_ack(Instant::ZERO, &delivered(2));
        }
        assert_eq!(cc.window(), 22_000);
    }

    #[test]
    fn loss_halves_the_congestion_window() {
        let mut cc = LinuxReno::new(20_000, u64::MAX / 4, u64::MAX / 4, MSS);
        // FlightSize 6 segments (application-limited): Linux halves cwnd.
        cc.on_fast_retransmit(Instant::ZERO, 6_000, MSS, 3, LossRecovery::Sack);
        assert_eq!(cc.ssthresh(), 10_000);
        cc.on_recovery_end(Instant::ZERO, 0, MSS, LossRecovery::Sack);
        assert_eq!(cc.window(), 10_000);
        cc.on_timeout(Instant::ZERO, 10_000, MSS, false);
        assert_eq!((cc.window(), cc.ssthresh()), (1000, 5000));
    }
}
