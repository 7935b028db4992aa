//! TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End Congestion
//! Avoidance on a Global Internet", IEEE JSAC 13(8), 1995, §3.2), as
//! Linux runs it (net/ipv4/tcp_vegas.c, whose constants these are).
//!
//! Vegas compares the rate the window should give, cwnd/BaseRTT, with the
//! rate it gets, cwnd/RTT. Their difference times BaseRTT,
//!
//! ```text
//! diff = cwnd · (RTT − BaseRTT) / BaseRTT   (segments)
//! ```
//!
//! is the number of the flow's segments queued in the network (paper
//! §3.2: "extra data"). Once per RTT, in congestion avoidance, the window
//! grows by one segment while diff < α, shrinks by one while diff > β,
//! and stays between. In slow start the window grows as Reno's until diff
//! exceeds γ; then it is set to the rate measured times BaseRTT, plus one
//! (the paper doubles only every other RTT; Linux, and this model, double
//! every RTT). So on a clean path with a deep queue a single flow keeps
//! between α and β segments in the bottleneck queue.
//!
//! As in Linux:
//!
//! - BaseRTT is the smallest RTT sample of the connection, RTT the
//!   smallest of the last round (`minRTT`), both in whole microseconds
//!   plus one (`tcp_vegas_pkts_acked`);
//! - a round ends at the first ACK beyond the `snd_nxt` of the round's
//!   start (`beg_snd_nxt`); with two RTT samples or fewer in the round
//!   (delayed ACKs) the window grows as Reno's (`tcp_reno_cong_avoid`);
//! - losses are Reno's (ssthresh half the window, `tcp_reno_ssthresh`),
//!   and Vegas pauses during loss recovery and after a timeout
//!   (`tcp_vegas_state`: only in `TCP_CA_Open`), starting a fresh round
//!   when it resumes;
//! - after each adjustment ssthresh is at least ¾ of the window
//!   (include/net/tcp.h `tcp_current_ssthresh`).
//!
//! Linux also forgets BaseRTT when the connection restarts after an idle
//! period (`CA_EVENT_TX_START`, `CA_EVENT_CWND_RESTART`); the model keeps it
//! for the connection.

use squall_link::{Duration, Instant};

use super::{AckSample, CongestionControl, LinuxReno, LossRecovery};

/// Lower bound of the segments queued, α (`alpha` in tcp_vegas.c).
pub const ALPHA: u64 = 2;
/// Upper bound of the segments queued, β (`beta`).
pub const BETA: u64 = 4;
/// Segments queued that end slow start, γ (`gamma`).
pub const GAMMA: u64 = 1;

#[derive(Clone, Debug, PartialEq)]
pub struct Vegas {
    /// The window, ssthresh and Reno's growth, in segments.
    reno: LinuxReno,
    /// Vegas adjusts the window in this round (`doing_vegas_now`); false
    /// during loss recovery.
    active: bool,
    /// Vegas resumes at the next ACK (the connection left loss recovery).
    resume: bool,
    /// The round ends at the first ACK beyond this (`beg_snd_nxt`).
    round_end: u64,
    /// Smallest RTT of the connection and of this round, microseconds + 1
    /// (`baseRTT`, `minRTT`), and this round's samples (`cntRTT`).
    base_rtt: u64,
    min_rtt: u64,
    samples: u32,
}

impl Vegas {
    /// Windows in bytes, counted in segments of `mss` bytes.
    pub fn new(initial_window: u64, initial_ssthresh: u64, max_window: u64, mss: u32) -> Self {
        Vegas {
            reno: LinuxReno::new(initial_window, initial_ssthresh, max_window, mss),
            active: true,
            resume: false,
            round_end: 0,
            base_rtt: u64::MAX,
            min_rtt: u64::MAX,
            samples: 0,
        }
    }

    /// BaseRTT, if there was a sample.
    pub fn base_rtt(&self) -> Option<Duration> {
        (self.base_rtt != u64::MAX).then(|| Duration::from_micros(self.base_rtt - 1))
    }

    /// `vegas_enable`: a new round from `snd_nxt`.
    fn start_round(&mut self, snd_nxt: u64) {
        self.round_end = snd_nxt;
        self.samples = 0;
        self.min_rtt = u64::MAX;
    }

    /// The once-per-round adjustment (`tcp_vegas_cong_avoid`'s body).
    fn adjust(&mut self, acked: u64) {
        let r = &mut self.reno;
        let (rtt, base) = (self.min_rtt, self.base_rtt);
        let target = r.cwnd.saturating_mul(base) / rtt;
        let diff = r.cwnd.saturating_mul(rtt - base) / base;
        if diff > GAMMA && r.in_slow_start() {
            // Too fast: leave slow start at the rate measured.
            r.cwnd = r.cwnd.min(target + 1);
            r.ssthresh = r.ssthresh.min(r.cwnd);
        } else if r.in_slow_start() {
            r.slow_start(acked);
        } else if diff > BETA {
            r.cwnd -= 1;
            r.ssthresh = r.ssthresh.min(r.cwnd);
        } else if diff < ALPHA {
            r.cwnd += 1;
        }
        r.cwnd = r.cwnd.clamp(2, r.clamp.max(2));
        r.ssthresh = r.ssthresh.max((r.cwnd >> 1) + (r.cwnd >> 2));
    }
}

impl CongestionControl for Vegas {
    fn window(&self) -> u64 {
        self.reno.window()
    }
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        self.reno.recovery(sack)
    }

    fn on_ack(&mut self, now: Instant, ack: &AckSample) {
        if self.resume {
            self.resume = false;
            self.active = true;
            self.start_round(ack.snd_nxt);
        }
        if let Some(rtt) = ack.rtt {
            let v = rtt.as_nanos() / 1000 + 1;
            self.base_rtt = self.base_rtt.min(v);
            self.min_rtt = self.min_rtt.min(v);
            self.samples += 1;
        }
        if !self.active {
            self.reno.on_ack(now, ack);
            return;
        }
        if ack.snd_una > self.round_end {
            self.round_end = ack.snd_nxt;
            if self.samples <= 2 {
                self.reno.on_ack(now, ack);
            } else {
                let acked = self.reno.count_segments(ack.delivered);
                self.adjust(acked);
            }
            self.samples = 0;
            self.min_rtt = u64::MAX;
        } else if self.reno.in_slow_start() {
            let acked = self.reno.count_segments(ack.delivered);
            self.reno.slow_start(acked);
        } else {
            // Between adjustments the window stays; the bytes still count
            // toward whole segments.
            self.reno.count_segments(ack.delivered);
        }
    }

    fn on_fast_retransmit(&mut self, now: Instant, flight_size: u64, mss: u32, dupthresh: u32, recovery: LossRecovery) {
        self.active = false;
        self.reno.on_fast_retransmit(now, flight_size, mss, dupthresh, recovery);
    }
    fn on_recovery_dupack(&mut self, now: Instant, mss: u32, recovery: LossRecovery) {
        self.reno.on_recovery_dupack(now, mss, recovery);
    }
    fn on_partial_ack(&mut self, now: Instant, acked: u64, mss: u32) {
        self.reno.on_partial_ack(now, acked, mss);
    }
    fn on_recovery_end(&mut self, now: Instant, flight_size: u64, mss: u32, recovery: LossRecovery) {
        self.reno.on_recovery_end(now, flight_size, mss, recovery);
        self.resume = true;
    }
    fn on_timeout(&mut self, now: Instant, flight_size: u64, mss: u32, repeat: bool) {
        self.active = false;
        self.resume = true;
        self.reno.on_timeout(now, flight_size, mss, repeat);
    }
    fn set_loss_window(&mut self, segments: u64) {
        self.reno.set_loss_window(segments);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ack(snd_una: u64, snd_nxt: u64, delivered: u64, rtt_ms: u64) -> AckSample {
        AckSample {
            bytes_acked: delivered,
            delivered,
            rtt: Some(Duration::from_millis(rtt_ms)),
            srtt: None,
            flight_size: 0,
            mss: MSS,
            rate: None,
            snd_una,
            snd_nxt,
        }
    }

    fn segments(v: &Vegas) -> (u64, u64) {
        (v.window() / MSS as u64, v.ssthresh() / MSS as u64)
    }

    /// Congestion avoidance (cwnd 20 < ssthresh would be slow start, so
    /// ssthresh 10): BaseRTT 100 ms from a first round. A round whose
    /// smallest RTT is 105 ms: diff = 20·(105001 − 100001)/100001 = 0
    /// (integer) < α, one more segment. 115 ms: 21·15000/100001 = 3,
    /// between α and β, no change. 130 ms: 21·30000/100001 = 6 > β, one
    /// less. Within a round nothing changes.
    #[test]
    fn once_per_round_window_follows_the_queued_segments() {
        let mut v = Vegas::new(20 * MSS as u64, 10 * MSS as u64, u64::MAX / 4, MSS);
        // Round 1 ends at the first ACK beyond 0: three samples first.
        let mut una = 0;
        let round = |v: &mut Vegas, rtt: u64, una: &mut u64| {
            let nxt = *una + 20_000;
            for _ in 0..3 {
                *una += 1000;
                v.on_ack(Instant::ZERO, &ack(*una, nxt, 1000, rtt));
            }
        };
        round(&mut v, 100, &mut una);
        assert_eq!(v.base_rtt(), Some(Duration::from_millis(100)));
        // The first ACK beyond round_end (0) adjusted with one sample (≤ 2:
        // Reno's increase, 1000 of a 20-segment window: nothing yet).
        assert_eq!(segments(&v).0, 20);
        // Next rounds: the boundary is the snd_nxt of the ACK that ended
        // the previous round (1000 + 20000 = 21000): ACKs up to it, then
        // one beyond it ends the round.
        let mut step = |v: &mut Vegas, rtt: u64| {
            let end = v.round_end;
            while una < end {
                una += 1000;
                v.on_ack(Instant::ZERO, &ack(una, una + 20_000, 1000, rtt));
            }
            let before = segments(v).0;
            una += 1000;
            v.on_ack(Instant::ZERO, &ack(una, una + 20_000, 1000, rtt));
            (before, segments(v).0)
        };
        assert_eq!(step(&mut v, 100), (20, 21), "diff 0 < α");
        assert_eq!(step(&mut v, 115), (21, 21), "diff 3 in [α, β]");
        assert_eq!(step(&mut v, 130), (21, 20), "diff 6 > β");
    }

    /// Slow start: cwnd 10, ssthresh unbounded, BaseRTT 100 ms. Within a
    /// round each segment delivered adds one, to 20. At the round's end
    /// with RTT 120 ms: diff = 20·20000/100001 = 3 > γ, so cwnd =
    /// min(20, 20·100001/120001 + 1 = 16 + 1) = 17 and ssthresh = 17:
    /// congestion avoidance.
    #[test]
    fn slow_start_ends_when_more_than_gamma_segments_queue() {
        let mut v = Vegas::new(10 * MSS as u64, u64::MAX / 4, u64::MAX / 4, MSS);
        v.on_ack(Instant::ZERO, &ack(1000, 10_000, 1000, 100));
        // That ACK ended round 0 (beyond 0) with one sample: Reno's slow
        // start, cwnd 11; the round now ends beyond 10000.
        assert_eq!(segments(&v).0, 11);
        for k in 2..=10 {
            v.on_ack(Instant::ZERO, &ack(k * 1000, 30_000, 1000, 120));
        }
        assert_eq!(segments(&v).0, 20, "nine more segments, one each");
        // 120 ms samples so far: 9; the round's minimum is 120 ms.
        v.on_ack(Instant::ZERO, &ack(11_000, 30_000, 1000, 120));
        // cwnd was 20 at the adjustment: diff = 20·20000/100001 = 3 > γ;
        // target = 20·100001/120001 = 16, cwnd = 17, ssthresh = 17.
        assert_eq!(segments(&v), (17, 17));
    }

    /// A loss pauses Vegas: Reno's halving, and after recovery a fresh
    /// round (no adjustment from samples taken before).
    #[test]
    fn loss_is_renos_and_vegas_resumes_after_recovery() {
        let mut v = Vegas::new(20 * MSS as u64, 10 * MSS as u64, u64::MAX / 4, MSS);
        v.on_fast_retransmit(Instant::ZERO, 20_000, MSS, 3, LossRecovery::Sack);
        assert_eq!(segments(&v), (10, 10));
        v.on_recovery_end(Instant::ZERO, 0, MSS, LossRecovery::Sack);
        v.on_ack(Instant::ZERO, &ack(30_000, 40_000, 1000, 100));
        assert_eq!(v.round_end, 40_000);
        assert_eq!(segments(&v).0, 10, "no change before the round ends");
    }
}
