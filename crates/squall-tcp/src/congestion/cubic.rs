//! CUBIC (RFC 9438): the window follows W_cubic(t) = C·(t − K)³ + W_max
//! after a congestion event, never below what Reno would have (the
//! Reno-friendly region, §4.3). Read RFC 9438 §4 before changing this file.
//!
//! Windows are kept in bytes; the cubic function works in segments and
//! seconds as the RFC writes it, with RFC 5681's slow start and no
//! HyStart. The `linux` profile runs [`super::LinuxCubic`] instead.

use squall_link::{Duration, Instant};

use super::{
    AckSample, CongestionControl, LossRecovery, window_at_fast_retransmit, window_on_partial_ack,
    window_on_recovery_dupack,
};

/// C, segments per second³ (RFC 9438 §5.1).
const C: f64 = 0.4;
/// β_cubic, the multiplicative decrease factor (§4.6).
const BETA: f64 = 0.7;

#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    cwnd: u64,
    ssthresh: u64,
    max_window: u64,
    /// W_max in segments: the window before the last reduction.
    w_max: f64,
    /// Start of the current congestion-avoidance epoch, and its state.
    epoch: Option<Epoch>,
    /// The latest smoothed RTT seen in an ACK.
    srtt: Duration,
}

#[derive(Clone, Debug, PartialEq)]
struct Epoch {
    start: Instant,
    /// K, seconds.
    k: f64,
    /// W_est of the Reno-friendly region, segments.
    w_est: f64,
}

impl Cubic {
    pub fn new(initial_window: u64, initial_ssthresh: u64, max_window: u64) -> Self {
        Cubic {
            cwnd: initial_window.min(max_window),
            ssthresh: initial_ssthresh,
            max_window,
            w_max: 0.0,
            epoch: None,
            srtt: Duration::ZERO,
        }
    }

    fn set_cwnd(&mut self, cwnd: u64, mss: u32) {
        self.cwnd = cwnd.clamp(mss as u64, self.max_window.max(mss as u64));
    }

    /// A congestion event: remember W_max (with fast convergence, §4.7)
    /// and reduce ssthresh by β.
    fn reduce(&mut self, mss: u32) {
        let segments = self.cwnd as f64 / mss as f64;
        self.w_max = if segments < self.w_max { segments * (1.0 + BETA) / 2.0 } else { segments };
        self.ssthresh = ((self.cwnd as f64 * BETA) as u64).max(2 * mss as u64);
        self.epoch = None;
    }

    /// W_cubic(t), segments.
    fn w_cubic(&self, t: f64, k: f64) -> f64 {
        C * (t - k).powi(3) + self.w_max
    }
}

impl CongestionControl for Cubic {
    fn window(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        if sack { LossRecovery::Sack } else { LossRecovery::NewReno }
    }

    fn on_ack(&mut self, now: Instant, ack: &AckSample) {
        if let Some(srtt) = ack.srtt {
            self.srtt = srtt;
        }
        let mss = ack.mss as f64;
        if self.cwnd < self.ssthresh {
            self.set_cwnd(self.cwnd + ack.bytes_acked.min(ack.mss as u64), ack.mss);
            return;
        }
        let segments_acked = ack.bytes_acked as f64 / mss;
        let cwnd = self.cwnd as f64 / mss;
        let epoch = self.epoch.get_or_insert_with(|| {
            // §4.2: K from the window at the start of the epoch.
            let k = if self.w_max > cwnd { ((self.w_max - cwnd) / C).cbrt() } else { 0.0 };
            Epoch { start: now, k, w_est: cwnd }
        });
        if self.w_max < cwnd && epoch.k == 0.0 {
            // No reduction yet (or the window passed W_max): the plateau is
            // the current window.
            self.w_max = self.w_max.max(cwnd);
        }
        // §4.3: W_est grows by α_cubic per window of acknowledged segments.
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        epoch.w_est += alpha * segments_acked / cwnd;
        let (k, w_est) = (epoch.k, epoch.w_est);
        let t = (now - epoch.start).as_secs_f64();
        let target = self.w_cubic(t + self.srtt.as_secs_f64(), k).clamp(cwnd, 1.5 * cwnd);
        let next = if self.w_cubic(t, k) < w_est {
            w_est.max(cwnd)
        } else {
            // §4.4: (target − cwnd)/cwnd per ACK.
            cwnd + (target - cwnd) / cwnd * segments_acked.max(1.0)
        };
        let next_bytes = (next * mss) as u64;
        self.set_cwnd(next_bytes.max(self.cwnd), ack.mss);
    }

    fn on_fast_retransmit(
        &mut self,
        _now: Instant,
        _flight_size: u64,
        mss: u32,
        dupthresh: u32,
        recovery: LossRecovery,
    ) {
        self.reduce(mss);
        self.set_cwnd(window_at_fast_retransmit(self.ssthresh, mss, dupthresh, recovery), mss);
    }

    fn on_recovery_dupack(&mut self, _now: Instant, mss: u32, recovery: LossRecovery) {
        self.set_cwnd(window_on_recovery_dupack(self.cwnd, mss, recovery), mss);
    }

    fn on_partial_ack(&mut self, _now: Instant, acked: u64, mss: u32) {
        self.set_cwnd(window_on_partial_ack(self.cwnd, acked, mss), mss);
    }

    fn on_recovery_end(&mut self, _now: Instant, _flight_size: u64, mss: u32, _recovery: LossRecovery) {
        self.set_cwnd(self.ssthresh, mss);
    }

    fn on_timeout(&mut self, _now: Instant, _flight_size: u64, mss: u32, repeat: bool) {
        if !repeat {
            self.reduce(mss);
        }
        self.epoch = None;
        self.set_cwnd(mss as u64, mss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    #[test]
    fn reduction_is_beta_and_window_returns_to_w_max_after_k() {
        let mut cc = Cubic::new(100_000, 50_000, u64::MAX);
        let t0 = Instant::ZERO;
        cc.on_fast_retransmit(t0, 100_000, MSS, 3, LossRecovery::Sack);
        assert_eq!((cc.window(), cc.ssthresh()), (70_000, 70_000), "β = 0.7");
        // K = cbrt(W_max(1-β)/C) = cbrt(100·0.3/0.4) = 4.217 s. ACK one
        // window per 100 ms with a zero RTT until well past K.
        let k = (100.0f64 * 0.3 / 0.4).cbrt();
        let mut now = t0;
        let mut at_k = None;
        for _ in 0..100 {
            now += Duration::from_millis(100);
            let w = cc.window();
            let ack = AckSample {
                bytes_acked: w,
                delivered: w,
                rtt: None,
                srtt: None,
                flight_size: w,
                mss: MSS,
                rate: None,
                snd_una: 0,
                snd_nxt: 0,
            };
            cc.on_ack(now, &ack);
            if at_k.is_none() && now.as_secs_f64() >= k {
                at_k = Some(cc.window());
            }
        }
        let w_k = at_k.unwrap() as f64 / MSS as f64;
        assert!((w_k - 100.0).abs() < 3.0, "W(K) ≈ W_max = 100 segments, got {w_k}");
        // At 10 s: W(9.9 s) = 0.4·(9.9 − 4.217)³ + 100 ≈ 173 segments.
        let w = cc.window() as f64 / MSS as f64;
        assert!((w - 173.4).abs() < 3.0, "convex growth beyond W_max, got {w}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut cc = Cubic::new(100_000, 50_000, u64::MAX);
        cc.on_fast_retransmit(Instant::ZERO, 0, MSS, 3, LossRecovery::Sack);
        cc.on_fast_retransmit(Instant::ZERO, 0, MSS, 3, LossRecovery::Sack);
        // Second loss at 70 segments < W_max 100: W_max = 70·1.7/2 = 59.5.
        assert!((cc.w_max - 59.5).abs() < 1e-9);
    }
}
