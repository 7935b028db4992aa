//! Additive increase, multiplicative decrease: the window of Tahoe, Reno,
//! NewReno and SACK TCP. Read RFC 5681 §3 (slow start, congestion
//! avoidance, fast retransmit/fast recovery), RFC 6582 §3.2 (NewReno's
//! partial ACKs) and RFC 6675 §5 (SACK recovery sets cwnd = ssthresh and
//! leaves the rest to pipe).

use squall_link::Instant;

use super::{
    AckSample, CongestionControl, LossRecovery, halved, window_at_fast_retransmit, window_on_partial_ack,
    window_on_recovery_dupack,
};

#[derive(Clone, Debug, PartialEq)]
pub struct Aimd {
    recovery: LossRecovery,
    cwnd: u64,
    ssthresh: u64,
    max_window: u64,
}

impl Aimd {
    /// `recovery` picks the variant: None = Tahoe, Reno, NewReno, Sack.
    pub fn new(recovery: LossRecovery, initial_window: u64, initial_ssthresh: u64, max_window: u64) -> Self {
        Aimd { recovery, cwnd: initial_window.min(max_window), ssthresh: initial_ssthresh, max_window }
    }

    fn set_cwnd(&mut self, cwnd: u64, mss: u32) {
        self.cwnd = cwnd.clamp(mss as u64, self.max_window.max(mss as u64));
    }
}

impl CongestionControl for Aimd {
    fn window(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        match self.recovery {
            LossRecovery::Sack if !sack => LossRecovery::NewReno,
            r => r,
        }
    }

    fn on_ack(&mut self, _now: Instant, ack: &AckSample) {
        let mss = ack.mss as u64;
        let inc = if self.cwnd < self.ssthresh {
            // Slow start: at most one SMSS per ACK (RFC 5681 eq. 2).
            ack.bytes_acked.min(mss)
        } else {
            // Congestion avoidance: SMSS·SMSS/cwnd per ACK (eq. 3), at least
            // one byte.
            (mss * mss / self.cwnd.max(1)).max(1)
        };
        self.set_cwnd(self.cwnd + inc, ack.mss);
    }

    fn on_fast_retransmit(
        &mut self,
        _now: Instant,
        flight_size: u64,
        mss: u32,
        dupthresh: u32,
        recovery: LossRecovery,
    ) {
        self.ssthresh = halved(flight_size, mss);
        self.set_cwnd(window_at_fast_retransmit(self.ssthresh, mss, dupthresh, recovery), mss);
    }

    fn on_recovery_dupack(&mut self, _now: Instant, mss: u32, recovery: LossRecovery) {
        self.set_cwnd(window_on_recovery_dupack(self.cwnd, mss, recovery), mss);
    }

    fn on_partial_ack(&mut self, _now: Instant, acked: u64, mss: u32) {
        self.set_cwnd(window_on_partial_ack(self.cwnd, acked, mss), mss);
    }

    fn on_recovery_end(&mut self, _now: Instant, flight_size: u64, mss: u32, recovery: LossRecovery) {
        let cwnd = match recovery {
            // RFC 6582 §3.2 step 6, option (1).
            LossRecovery::NewReno => self.ssthresh.min(flight_size.max(mss as u64) + mss as u64),
            _ => self.ssthresh,
        };
        self.set_cwnd(cwnd, mss);
    }

    fn on_timeout(&mut self, _now: Instant, flight_size: u64, mss: u32, repeat: bool) {
        if !repeat {
            self.ssthresh = halved(flight_size, mss);
        }
        // The loss window, one segment (RFC 5681 §3.1).
        self.set_cwnd(mss as u64, mss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ack(bytes: u64) -> AckSample {
        AckSample {
            bytes_acked: bytes,
            delivered: bytes,
            rtt: None,
            srtt: None,
            flight_size: 10_000,
            mss: MSS,
            rate: None,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    #[test]
    fn slow_start_then_linear_growth() {
        let mut cc = Aimd::new(LossRecovery::Reno, 1000, 4000, u64::MAX);
        let now = Instant::ZERO;
        for _ in 0..3 {
            cc.on_ack(now, &ack(1000));
        }
        assert_eq!(cc.window(), 4000, "one SMSS per ACK in slow start");
        cc.on_ack(now, &ack(2000));
        assert_eq!(cc.window(), 4250, "SMSS²/cwnd = 250 in congestion avoidance");
    }

    #[test]
    fn fast_retransmit_per_variant() {
        let now = Instant::ZERO;
        let mut tahoe = Aimd::new(LossRecovery::None, 10_000, u64::MAX, u64::MAX);
        tahoe.on_fast_retransmit(now, 10_000, MSS, 3, LossRecovery::None);
        assert_eq!((tahoe.window(), tahoe.ssthresh()), (1000, 5000));

        let mut reno = Aimd::new(LossRecovery::Reno, 10_000, u64::MAX, u64::MAX);
        reno.on_fast_retransmit(now, 10_000, MSS, 3, LossRecovery::Reno);
        assert_eq!(reno.window(), 8000, "ssthresh + 3 SMSS");
        reno.on_recovery_dupack(now, MSS, LossRecovery::Reno);
        assert_eq!(reno.window(), 9000);
        reno.on_recovery_end(now, 10_000, MSS, LossRecovery::Reno);
        assert_eq!(reno.window(), 5000);

        let mut newreno = Aimd::new(LossRecovery::NewReno, 10_000, u64::MAX, u64::MAX);
        newreno.on_fast_retransmit(now, 10_000, MSS, 3, LossRecovery::NewReno);
        newreno.on_partial_ack(now, 3000, MSS);
        assert_eq!(newreno.window(), 8000 - 3000 + 1000);
        newreno.on_recovery_end(now, 2000, MSS, LossRecovery::NewReno);
        assert_eq!(newreno.window(), 3000, "min(ssthresh, max(FlightSize, SMSS) + SMSS)");

        let mut sack = Aimd::new(LossRecovery::Sack, 10_000, u64::MAX, u64::MAX);
        assert_eq!(sack.recovery(false), LossRecovery::NewReno, "no SACK negotiated");
        sack.on_fast_retransmit(now, 10_000, MSS, 3, LossRecovery::Sack);
        sack.on_recovery_dupack(now, MSS, LossRecovery::Sack);
        assert_eq!(sack.window(), 5000, "pipe, not inflation, governs SACK recovery");
    }

    #[test]
    fn timeout_holds_ssthresh_when_repeated_and_window_is_capped() {
        let now = Instant::ZERO;
        let mut cc = Aimd::new(LossRecovery::Reno, 10_000, u64::MAX, 50_000);
        cc.on_timeout(now, 20_000, MSS, false);
        assert_eq!((cc.window(), cc.ssthresh()), (1000, 10_000));
        cc.on_timeout(now, 1000, MSS, true);
        assert_eq!(cc.ssthresh(), 10_000);
        for _ in 0..3000 {
            cc.on_ack(now, &ack(1000));
        }
        assert_eq!(cc.window(), 50_000, "max window");
    }
}
