//! CUBIC as Linux computes it (RFC 9438; net/ipv4/tcp_cubic.c, with
//! net/ipv4/tcp_cong.c's `tcp_slow_start` and `tcp_cong_avoid_ai`). Read
//! RFC 9438 §4 and tcp_cubic.c before changing this file.
//!
//! The RFC's real-valued W_cubic(t) = C·(t − K)³ + W_max (§4.2) in the
//! kernel's integer arithmetic: windows in whole segments, time in jiffies
//! (HZ = 1000, so milliseconds) converted to units of 1/1024 s
//! (`BICTCP_HZ`), C = 410/1024 (`bic_scale` 41 × 10), β = 717/1024, and K
//! from a table-and-Newton cube root (`cubic_root`). The window does not
//! jump to the target: `bictcp_update` turns the target one RTT ahead into
//! `cnt`, the segments to deliver for one more segment of window, and
//! `tcp_cong_avoid_ai` counts them (`snd_cwnd_cnt`). What differs from
//! [`super::Cubic`] (the RFC's real numbers) and matters for goodput:
//! the time is t + the minimum RTT (`delay_min`), not t + SRTT; `cnt` is
//! recomputed at most once per jiffy and, while the window does not
//! change, at most every HZ/32; before the first loss the window grows at
//! least 5 % per RTT (`cnt` ≤ 20); and a timeout forgets W_max
//! (`cubictcp_state` → `bictcp_reset`).

use squall_link::{Duration, Instant};

use super::{AckSample, CongestionControl, HyStart, HyStartExit, LossRecovery, window_at_fast_retransmit};

/// `BICTCP_BETA_SCALE`: β is `BETA / BETA_SCALE`.
const BETA_SCALE: u64 = 1024;
/// β_cubic (RFC 9438 §4.6), ×1024: 717/1024 ≈ 0.7 (`beta`).
const BETA: u64 = 717;
/// `BICTCP_HZ`: time inside the cubic function is in units of 2⁻¹⁰ s.
const BICTCP_HZ: u32 = 10;
/// Jiffies per second (HZ = 1000: a jiffy is a millisecond).
const HZ: u64 = 1000;
/// `cube_rtt_scale` = `bic_scale` × 10 = 410: C = 410/1024 ≈ 0.4
/// segments/s³ (RFC 9438 §5.1).
const CUBE_RTT_SCALE: u64 = 41 * 10;
/// `cube_factor` = 2^(10 + 3·BICTCP_HZ) / (bic_scale × 10): 1/C in the
/// fixed point of K³, so that K = cubic_root(cube_factor·(W_max − cwnd)) is
/// in units of 2⁻¹⁰ s.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;
/// `beta_scale` = 8·(1024 + β)/3/(1024 − β) = 15: the Reno estimate gains
/// one segment per cwnd·15/8 segments delivered, 1/α_cubic with
/// α_cubic = 3(1 − β)/(1 + β) ≈ 0.53 (RFC 9438 §4.3).
const FRIENDLY_SCALE: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// Before the first loss `cnt` is at most this: 5 % growth per RTT.
const FIRST_EPOCH_MAX_CNT: u64 = 20;

/// `cubic_root`: the cube root of `a` by a table lookup and one
/// Newton-Raphson step (average error ~0.2 %), as tcp_cubic.c computes it.
pub fn cubic_root(a: u64) -> u64 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168, 170, 173, 176,
        179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224,
        225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    // fls64: the 1-based index of the highest set bit, 0 for 0.
    let b = 64 - a.leading_zeros();
    if b < 7 {
        return (V[a as usize] as u64 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let x = (((V[shift] as u32 + 10) << b) >> 6) as u64;
    // x = (2x + a/x²)/3, the kernel's /(x·(x − 1)) and ·341/1024.
    let x = 2 * x + a / (x * (x - 1)).max(1);
    (x * 341) >> 10
}

/// CUBIC with Linux's arithmetic. Windows count segments of `mss` bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct LinuxCubic {
    /// Congestion window and ssthresh, segments (`snd_cwnd`,
    /// `snd_ssthresh`).
    cwnd: u64,
    ssthresh: u64,
    /// Segments delivered toward the next increase (`snd_cwnd_cnt`).
    cwnd_cnt: u64,
    /// Bytes delivered not yet counted as a whole segment.
    carry: u64,
    /// Largest window, segments (`snd_cwnd_clamp`).
    clamp: u64,
    mss: u64,
    /// Segments to deliver per segment of window growth (`cnt`).
    cnt: u64,
    /// W_max, segments; 0 before the first loss and after a timeout
    /// (`last_max_cwnd`).
    last_max_cwnd: u64,
    /// The window and the jiffy of the last `cnt` computation
    /// (`last_cwnd`, `last_time`).
    last_cwnd: u64,
    last_time: u64,
    /// The window the cubic function returns to at K, segments
    /// (`bic_origin_point`).
    origin_point: u64,
    /// K, units of 2⁻¹⁰ s (`bic_K`).
    k: u64,
    /// The smallest RTT seen (`delay_min`).
    delay_min: Option<Duration>,
    /// Jiffy at which the congestion-avoidance epoch began; none after a
    /// reduction (`epoch_start` = 0).
    epoch_start: Option<u64>,
    /// Segments delivered toward the Reno estimate (`ack_cnt`), and the
    /// Reno estimate W_est, segments (`tcp_cwnd`; RFC 9438 §4.3).
    ack_cnt: u64,
    tcp_cwnd: u64,
    hystart: Option<HyStart>,
}

/// `tcp_jiffies32` at HZ = 1000.
fn jiffies(now: Instant) -> u64 {
    now.as_nanos() / 1_000_000
}

impl LinuxCubic {
    /// Windows in bytes, counted in segments of `mss` bytes; HyStart if
    /// given (`cubictcp_init`).
    pub fn new(
        initial_window: u64,
        initial_ssthresh: u64,
        max_window: u64,
        mss: u32,
        hystart: Option<HyStart>,
    ) -> Self {
        let mss = mss.max(1) as u64;
        let clamp = (max_window / mss).max(1);
        LinuxCubic {
            cwnd: (initial_window / mss).clamp(1, clamp),
            ssthresh: (initial_ssthresh / mss).max(2),
            cwnd_cnt: 0,
            carry: 0,
            clamp,
            mss,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin_point: 0,
            k: 0,
            delay_min: None,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            hystart,
        }
    }

    /// How HyStart ended slow start, if it did.
    pub fn hystart_exit(&self) -> Option<HyStartExit> {
        self.hystart.as_ref()?.found()
    }

    /// `bictcp_reset`: everything but HyStart's state forgotten.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.origin_point = 0;
        self.k = 0;
        self.delay_min = None;
        self.epoch_start = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
    }

    /// `cubictcp_acked`: an RTT sample updates the minimum RTT, except in
    /// the first second of an epoch (the samples right after recovery),
    /// and feeds HyStart in slow start.
    fn on_rtt_sample(&mut self, now: Instant, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        if self.epoch_start.is_some_and(|e| jiffies(now).saturating_sub(e) < HZ) {
            return;
        }
        let delay = rtt.max(Duration::from_micros(1));
        if self.delay_min.is_none_or(|d| d > delay) {
            self.delay_min = Some(delay);
        }
        if self.cwnd < self.ssthresh
            && let Some(h) = self.hystart.as_mut()
        {
            // Linux's default pacing rate in slow start: 200 % of
            // cwnd/SRTT, bytes per second.
            let cwnd_bytes = self.cwnd * self.mss;
            let pacing = ack.srtt.filter(|s| !s.is_zero()).map(|s| 2.0 * cwnd_bytes as f64 / s.as_secs_f64());
            if h.on_ack(now, rtt, self.cwnd, ack.snd_una, ack.snd_nxt, pacing).is_some() {
                // `hystart_update`: slow start ends at this window.
                self.ssthresh = self.cwnd;
            }
        }
    }

    /// `tcp_slow_start`: one segment per segment delivered, up to
    /// ssthresh (RFC 9438 §4.10 leaves slow start to the implementation;
    /// this is RFC 3465 without the limit L). Returns the segments left
    /// over for congestion avoidance.
    fn slow_start(&mut self, acked: u64) -> u64 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd.min(self.clamp);
        left
    }

    /// `bictcp_update`: `cnt` from the cubic function one minimum RTT
    /// ahead (RFC 9438 §4.2, §4.4, §4.5) and the Reno estimate (§4.3).
    fn update_cnt(&mut self, now: Instant, acked: u64) {
        let cwnd = self.cwnd;
        let now = jiffies(now);
        self.ack_cnt += acked;
        // Nothing changed and less than HZ/32 since the last computation.
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        // At most once per jiffy; a reduction (no epoch) forces it.
        if !(self.epoch_start.is_some() && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            let epoch_start = match self.epoch_start {
                Some(e) => e,
                None => {
                    // A new epoch (§4.2): K from W_max and this window.
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.k = 0;
                        self.origin_point = cwnd;
                    } else {
                        self.k = cubic_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd));
                        self.origin_point = self.last_max_cwnd;
                    }
                    self.epoch_start = Some(now);
                    now
                }
            };
            // t: the epoch's age plus the minimum RTT in whole jiffies
            // (`usecs_to_jiffies` rounds up), in units of 2⁻¹⁰ s. §4.4's
            // target is W_cubic(t + RTT).
            let min_rtt_jiffies = self.delay_min.map_or(0, |d| d.as_nanos().div_ceil(1_000_000));
            let t = ((now - epoch_start + min_rtt_jiffies) << BICTCP_HZ) / HZ;
            let offs = t.abs_diff(self.k) as u128;
            let delta = ((CUBE_RTT_SCALE as u128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)).min(u32::MAX as u128);
            let delta = delta as u64;
            let target = if t < self.k { self.origin_point.saturating_sub(delta) } else { self.origin_point + delta };
            // §4.4 (concave) and §4.5 (convex): (target − cwnd)/cwnd per
            // segment delivered, as a count of segments per increase.
            self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
            if self.last_max_cwnd == 0 {
                self.cnt = self.cnt.min(FIRST_EPOCH_MAX_CNT);
            }
        }
        // §4.3, the Reno-friendly region: W_est gains a segment per
        // cwnd·15/8 segments delivered; below it, grow as fast as W_est.
        let per_segment = ((cwnd * FRIENDLY_SCALE) >> 3).max(1);
        if self.ack_cnt > per_segment {
            let gained = (self.ack_cnt - 1) / per_segment;
            self.ack_cnt -= gained * per_segment;
            self.tcp_cwnd += gained;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // At most one segment per two delivered: 1.5× per RTT (§4.4's
        // bound on the target).
        self.cnt = self.cnt.max(2);
    }

    /// `tcp_cong_avoid_ai` with w = `cnt`.
    fn additive_increase(&mut self, acked: u64) {
        let w = self.cnt.max(1);
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

    /// `cubictcp_recalc_ssthresh`: the epoch ends; W_max is this window,
    /// or with fast convergence (§4.7) (1 + β)/2 of it when the window
    /// did not reach the previous W_max; ssthresh is β·cwnd (§4.6), at
    /// least 2.
    fn recalc_ssthresh(&mut self) {
        self.epoch_start = None;
        self.last_max_cwnd =
            if self.cwnd < self.last_max_cwnd { self.cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE) } else { self.cwnd };
        self.ssthresh = (self.cwnd * BETA / BETA_SCALE).max(2);
    }
}

impl CongestionControl for LinuxCubic {
    fn window(&self) -> u64 {
        self.cwnd * self.mss
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh.saturating_mul(self.mss)
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        if sack { LossRecovery::Sack } else { LossRecovery::NewReno }
    }

    /// `cubictcp_acked` then `cubictcp_cong_avoid`, as tcp_ack calls them.
    fn on_ack(&mut self, now: Instant, ack: &AckSample) {
        self.on_rtt_sample(now, ack);
        let bytes = self.carry + ack.delivered;
        let mut acked = bytes / self.mss;
        self.carry = bytes % self.mss;
        if acked == 0 {
            return;
        }
        if self.cwnd < self.ssthresh {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update_cnt(now, acked);
        self.additive_increase(acked);
    }

    fn on_fast_retransmit(
        &mut self,
        _now: Instant,
        _flight_size: u64,
        mss: u32,
        dupthresh: u32,
        recovery: LossRecovery,
    ) {
        self.recalc_ssthresh();
        let bytes = window_at_fast_retransmit(self.ssthresh(), mss, dupthresh, recovery);
        self.cwnd = (bytes / self.mss).clamp(1, self.clamp);
        self.cwnd_cnt = 0;
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

    /// `tcp_enter_loss`: ssthresh from the window (unless this is the
    /// same loss again), a window of one segment, and `cubictcp_state`
    /// on TCP_CA_Loss: `bictcp_reset` (W_max and the minimum RTT
    /// forgotten) and `bictcp_hystart_reset`.
    fn on_timeout(&mut self, _now: Instant, _flight_size: u64, _mss: u32, repeat: bool) {
        if !repeat {
            self.recalc_ssthresh();
        }
        self.cwnd = 1;
        self.cwnd_cnt = 0;
        self.reset();
        if let Some(h) = self.hystart.as_mut() {
            h.reset();
        }
    }

    fn set_loss_window(&mut self, segments: u64) {
        self.cwnd = segments.clamp(1, self.clamp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn delivered(segments: u64, rtt: Option<Duration>) -> AckSample {
        AckSample {
            bytes_acked: segments * MSS as u64,
            delivered: segments * MSS as u64,
            rtt,
            srtt: rtt,
            flight_size: 0,
            mss: MSS,
            rate: None,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A window of `cwnd` segments in congestion avoidance after a loss at
    /// `w_max` segments.
    fn after_loss(w_max: u64) -> LinuxCubic {
        let mut cc = LinuxCubic::new(w_max * MSS as u64, 2 * MSS as u64, u64::MAX / 4, MSS, None);
        cc.on_fast_retransmit(Instant::ZERO, 0, MSS, 3, LossRecovery::Sack);
        cc.on_recovery_end(Instant::ZERO, 0, MSS, LossRecovery::Sack);
        cc
    }

    #[test]
    fn cube_root_is_the_kernels() {
        // Exact cubes and the table's small values.
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(1), 1);
        assert_eq!(cubic_root(27), 3);
        assert_eq!(cubic_root(1_000_000), 100);
        // Large arguments within the kernel's 0.2 %.
        for a in [75u64 << 30, 1 << 40, 123_456_789_012] {
            let exact = (a as f64).cbrt();
            let got = cubic_root(a) as f64;
            assert!((got - exact).abs() / exact < 0.005, "cbrt({a}) = {got}, exact {exact}");
        }
    }

    #[test]
    fn reduction_is_717_over_1024_and_k_is_the_cube_root_of_w_max_minus_cwnd_over_c() {
        let mut cc = after_loss(100);
        // β: 100·717/1024 = 70.02 → 70 segments.
        assert_eq!((cc.window(), cc.ssthresh()), (70_000, 70_000));
        assert_eq!(cc.last_max_cwnd, 100);
        // The first ACK in congestion avoidance starts the epoch:
        // K = ∛((100 − 70)/C) with C = 410/1024: ∛74.93 = 4.2157 s, i.e.
        // 4316.9 units of 2⁻¹⁰ s; the kernel's root is within 0.2 %.
        cc.on_ack(Instant::ZERO + ms(1000), &delivered(1, None));
        let exact = (30.0f64 * 1024.0 / 410.0).cbrt() * 1024.0;
        assert!((cc.k as f64 - exact).abs() < 0.002 * exact, "K = {} units, by hand {exact:.1}", cc.k);
        assert_eq!(cc.origin_point, 100);
        // No minimum RTT yet: t = 0, target = 100 − ⌊410·K³/2⁴⁰⌋; the
        // rounded-down K makes that 100 − 29 = 71, one above cwnd: the
        // concave region's flat start, cnt = 70/(71 − 70) = 70.
        let delta = (410 * cc.k.pow(3)) >> 40;
        assert_eq!(delta, 29);
        assert_eq!(cc.cnt, 70);
    }

    #[test]
    fn window_after_a_given_time_follows_the_cubic_function() {
        // W_max 100 → cwnd 70, K ≈ 4.216 s. Deliver one window per 100 ms
        // (RTT 100 ms, minimum RTT 100 ms) for 10 s: the target one RTT
        // ahead at 10 s is W(10.1 s) = 0.4·(10.1 − 4.216)³ + 100 ≈ 181.5;
        // cwnd lags it by at most one RTT's growth.
        let mut cc = after_loss(100);
        let mut now = Instant::ZERO;
        let mut at_k = None;
        for _ in 0..100 {
            now += ms(100);
            let w = cc.window() / MSS as u64;
            // One ACK per 2 segments, as a delayed-ACK receiver sends.
            for _ in 0..w / 2 {
                cc.on_ack(now, &delivered(2, Some(ms(100))));
            }
            if at_k.is_none() && now >= Instant::ZERO + ms(4216) {
                at_k = Some(cc.window() / MSS as u64);
            }
        }
        let w_k = at_k.unwrap();
        assert!((99..=104).contains(&w_k), "W(K) ≈ W_max = 100 segments, got {w_k}");
        let w = cc.window() / MSS as u64;
        // W(10.0 s) = 0.4·5.784³ + 100 = 177.4; W(10.1 s) = 181.5.
        assert!((170..=182).contains(&w), "convex growth beyond W_max, got {w}");
    }

    #[test]
    fn friendly_region_grows_as_reno_with_alpha() {
        // A small window after a loss (W_max 10 → 7): the cubic target
        // barely moves for seconds (K = ∛(3/0.4) = 1.96 s), but the Reno
        // estimate gains a segment per 7·15/8 = 13 segments delivered, so
        // cnt is capped at cwnd/(W_est − cwnd). Deliver 7 segments per
        // 10 ms RTT for 1 s: W_est ≈ 7 + 100·7/13 ≈ 50 (α ≈ 0.53 per RTT
        // at 7, less as the window grows); cwnd follows W_est, far above
        // the cubic function's W(1 s) = 10 − 0.4·0.96³ ≈ 9.6.
        let mut cc = after_loss(10);
        assert_eq!(cc.window(), 7_000);
        let mut now = Instant::ZERO;
        for _ in 0..100 {
            now += ms(10);
            let w = cc.window() / MSS as u64;
            for _ in 0..w {
                cc.on_ack(now, &delivered(1, Some(ms(10))));
            }
        }
        let w = cc.window() / MSS as u64;
        // Reno with α 0.53 from 7 over 100 RTTs: W ≈ 7 + 0.53·100 = 60,
        // within a few segments of the estimate's lag.
        assert!((45..=62).contains(&w), "Reno-friendly growth, got {w}");
        assert!(cc.tcp_cwnd >= w - 1, "cwnd follows W_est {}", cc.tcp_cwnd);
    }

    #[test]
    fn fast_convergence_and_cnt_bounds() {
        let mut cc = after_loss(100);
        cc.on_fast_retransmit(Instant::ZERO, 0, MSS, 3, LossRecovery::Sack);
        // Second loss at 70 < W_max 100: W_max = 70·1741/2048 = 59.5 → 59.
        assert_eq!(cc.last_max_cwnd, 59);
        assert_eq!(cc.ssthresh(), 49_000, "70·717/1024 = 49.01");
        // Before any loss cnt ≤ 20 (5 % per RTT); never below 2.
        let mut cc = LinuxCubic::new(40_000, 40_000, u64::MAX / 4, MSS, None);
        cc.on_ack(Instant::ZERO, &delivered(1, Some(ms(100))));
        assert_eq!(cc.cnt, 20);
        // Far past K the target is huge: cnt = 2, one segment per two.
        let mut cc = after_loss(100);
        cc.on_ack(Instant::ZERO + ms(1000), &delivered(1, None));
        cc.on_ack(Instant::ZERO + ms(60_000), &delivered(1, None));
        assert_eq!(cc.cnt, 2);
    }

    #[test]
    fn slow_start_counts_segments_and_a_timeout_forgets_w_max() {
        let mut cc = LinuxCubic::new(10_000, 14_000, u64::MAX / 4, MSS, None);
        // 3 segments with ssthresh 14 from 10: all in slow start; 3 more:
        // one reaches ssthresh, two go to congestion avoidance.
        cc.on_ack(Instant::ZERO, &delivered(3, None));
        assert_eq!(cc.window(), 13_000);
        cc.on_ack(Instant::ZERO, &delivered(3, None));
        assert_eq!((cc.window(), cc.cwnd_cnt), (14_000, 2));
        let mut cc = after_loss(100);
        cc.on_timeout(Instant::ZERO, 0, MSS, false);
        assert_eq!((cc.window(), cc.ssthresh(), cc.last_max_cwnd), (1_000, 49_000, 0));
    }
}
