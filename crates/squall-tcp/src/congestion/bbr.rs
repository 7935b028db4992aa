//! BBR v1 as Linux runs it: net/ipv4/tcp_bbr.c of Linux 6.18 (Cardwell,
//! Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016;
//! draft-cardwell-iccrg-bbr-congestion-control-00). Read that file before
//! changing this one; every function here names the one it follows.
//!
//! BBR keeps a model of the path: the bottleneck bandwidth, the largest
//! delivery rate of the last 10 rounds (a windowed max filter,
//! lib/win_minmax.c), and the propagation RTT, the smallest RTT of the
//! last 10 s. It paces at gain·bw and bounds what is in flight to
//! gain·bw·min_rtt plus a quantization budget. Its states (`BbrMode`):
//!
//! - STARTUP: pacing and window gain 2/ln 2 ≈ 2.885, so the rate doubles
//!   each round, until three rounds in a row grow the bandwidth by less
//!   than 25% (`bbr_check_full_bw_reached`);
//! - DRAIN: pacing gain ln 2/2 until what is in flight is down to one BDP;
//! - PROBE_BW: pacing gain cycling 1.25, 0.75, 1, 1, 1, 1, 1, 1, each
//!   phase about one min_rtt, from a random phase (never the 0.75 one);
//!   window gain 2;
//! - PROBE_RTT: when min_rtt is 10 s old, the window is 4 packets for at
//!   least 200 ms and one round, then back to the previous mode.
//!
//! Loss does not cut the model: the first round of fast recovery keeps
//! packet conservation, the window then grows back as in slow start, and
//! leaving recovery restores the window from before it
//! (`bbr_set_cwnd_to_recover_or_restore`). The long-term bandwidth
//! estimator (`lt_bw`) detects token-bucket policers: two sampling
//! intervals of at least 4 rounds with 20% loss and the same rate make
//! BBR pace at that rate for 48 rounds.
//!
//! Windows are counted in packets as in Linux and handed out in bytes.
//! Bandwidth is in packets per microsecond scaled by 2²⁴ (`BW_SCALE`),
//! gains are scaled by 2⁸ (`BBR_SCALE`). Not modelled: restart after idle
//! (`CA_EVENT_TX_START`: the model's flows are bulk or request/response
//! over a busy connection), and undo of a spurious recovery
//! (`bbr_undo_cwnd`; the connection does not detect spurious
//! retransmissions).

use rand::Rng;
use squall_link::rng::{StreamRng, stream};
use squall_link::{Duration, Instant};

use super::{AckSample, CaState, CongestionControl, LossRecovery, ModelAck};

/// Gains are fixed point with this unit (`BBR_UNIT`, 1 << `BBR_SCALE`).
pub const UNIT: u64 = 1 << 8;
/// Bandwidth is packets per µs << `BW_SCALE`.
const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
/// 2/ln 2, the smallest gain that doubles the sending rate each round
/// (`bbr_high_gain`).
pub const HIGH_GAIN: u64 = UNIT * 2885 / 1000 + 1;
/// Its inverse, to drain STARTUP's queue in about one round
/// (`bbr_drain_gain`).
pub const DRAIN_GAIN: u64 = UNIT * 1000 / 2885;
/// Window gain in PROBE_BW (`bbr_cwnd_gain`).
pub const CWND_GAIN: u64 = UNIT * 2;
/// The PROBE_BW pacing gain cycle (`bbr_pacing_gain`).
pub const PACING_GAIN: [u64; CYCLE_LEN] = [UNIT * 5 / 4, UNIT * 3 / 4, UNIT, UNIT, UNIT, UNIT, UNIT, UNIT];
const CYCLE_LEN: usize = 8;
/// The random first phase is drawn from this many (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Rounds of the max-bandwidth filter (`bbr_bw_rtts`).
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Age of min_rtt that starts PROBE_RTT (`bbr_min_rtt_win_sec`).
pub const MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// Least time at the PROBE_RTT window (`bbr_probe_rtt_mode_ms`).
pub const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
/// The smallest window outside loss recovery, and PROBE_RTT's
/// (`bbr_cwnd_min_target`).
pub const CWND_MIN_TARGET: u64 = 4;
/// Pacing below this (bits/s) sends single segments (`bbr_min_tso_rate`).
const MIN_TSO_RATE: u64 = 1_200_000;
/// Pacing is this much below the model's rate, percent
/// (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// STARTUP's bandwidth growth threshold and rounds (`bbr_full_bw_thresh`,
/// `bbr_full_bw_cnt`).
const FULL_BW_THRESH: u64 = UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
/// Long-term sampling (`bbr_lt_intvl_min_rtts`, `bbr_lt_loss_thresh`,
/// `bbr_lt_bw_ratio`, `bbr_lt_bw_diff` in bytes/s, `bbr_lt_bw_max_rtts`).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (`bbr_extra_acked_gain`, `bbr_extra_acked_win_rtts`,
/// `bbr_ack_epoch_acked_reset_thresh`, `bbr_extra_acked_max_us`).
const EXTRA_ACKED_GAIN: u64 = UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// Linux's initial window (`TCP_INIT_CWND`), BBR's cap before any RTT
/// sample.
const TCP_INIT_CWND: u64 = 10;
/// `sk_pacing_shift`: TSO autosizing aims at 1 ms of data per burst.
const PACING_SHIFT: u32 = 10;

/// BBR's states (tcp_bbr.c `enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Kathleen Nichols' windowed running maximum over three samples
/// (lib/win_minmax.c), with time in rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MaxFilter {
    s: [(u64, u64); 3],
}

impl MaxFilter {
    fn get(&self) -> u64 {
        self.s[0].1
    }
    fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }
    /// `minmax_running_max`.
    fn update(&mut self, win: u64, t: u64, v: u64) {
        let val = (t, v);
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // `minmax_subwin_update`.
        let dt = t - self.s[0].0;
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t - self.s[0].0 > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
    }
}

#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u32,
    /// Window, packets (`snd_cwnd`), its clamp, and ssthresh (infinite
    /// until DRAIN).
    cwnd: u64,
    clamp: u64,
    ssthresh: Option<u64>,
    /// Bytes per second (`sk_pacing_rate`).
    pacing_rate: u64,
    has_seen_rtt: bool,
    mode: BbrMode,
    bw: MaxFilter,
    /// Packet-timed rounds (`rtt_cnt`), the delivered count that ends
    /// this one, and whether this ACK started one.
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    /// µs; `None` before any sample (`~0U`).
    min_rtt_us: Option<u64>,
    min_rtt_stamp: Instant,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    pacing_gain: u64,
    cwnd_gain: u64,
    cycle_idx: usize,
    cycle_stamp: Instant,
    full_bw_reached: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_lost: u64,
    /// Milliseconds, as Linux keeps it.
    lt_last_stamp: u64,
    ack_epoch_stamp: Instant,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    rng: StreamRng,
    /// The last ACK's totals (the connection's `tp->delivered`, `tp->lost`,
    /// `tp->delivered_mstamp`), for the long-term sampler at a timeout.
    last: ModelAck,
}

impl PartialEq for Bbr {
    /// The state, not the random stream's position.
    fn eq(&self, other: &Self) -> bool {
        self.mode == other.mode
            && self.cwnd == other.cwnd
            && self.pacing_rate == other.pacing_rate
            && self.bw == other.bw
            && self.min_rtt_us == other.min_rtt_us
            && self.cycle_idx == other.cycle_idx
    }
}

fn us(d: Duration) -> u64 {
    d.as_nanos() / 1000
}

impl Bbr {
    /// Windows in bytes, counted in segments of `mss` bytes; `seed` seeds
    /// the random first gain phase (`bbr_init`).
    pub fn new(initial_window: u64, max_window: u64, mss: u32, seed: u64) -> Self {
        let m = mss.max(1) as u64;
        let mut b = Bbr {
            mss: mss.max(1),
            cwnd: (initial_window / m).max(1),
            clamp: (max_window / m).max(1),
            ssthresh: None,
            pacing_rate: 0,
            has_seen_rtt: false,
            mode: BbrMode::Startup,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt_us: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cycle_idx: 0,
            cycle_stamp: Instant::ZERO,
            full_bw_reached: false,
            full_bw: 0,
            full_bw_cnt: 0,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_lost: 0,
            lt_last_stamp: 0,
            ack_epoch_stamp: Instant::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            rng: stream(seed, "tcp/bbr"),
            last: ModelAck {
                rate: None,
                acked_sacked: 0,
                losses: 0,
                prior_in_flight: 0,
                in_flight: 0,
                delivered: 0,
                lost: 0,
                delivered_time: Instant::ZERO,
                rtt: None,
                srtt: None,
                min_rtt: None,
                maybe_delayed: false,
                ca_state: CaState::Open,
                pacing_wait: Duration::ZERO,
                mss,
            },
        };
        // `bbr_init_pacing_rate_from_rtt` with no RTT yet: 1 ms nominal.
        b.init_pacing_rate(None);
        b
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }
    /// Window in packets.
    pub fn cwnd_packets(&self) -> u64 {
        self.cwnd
    }
    /// The bandwidth estimate, bytes per second (`bbr_bw`, as
    /// `bbr_get_info` reports it).
    pub fn bandwidth(&self) -> u64 {
        ((self.bw() as u128 * self.mss as u128 * 1_000_000) >> BW_SCALE) as u64
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt_us.map(Duration::from_micros)
    }
    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }
    pub fn cycle_index(&self) -> usize {
        self.cycle_idx
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }
    fn bw(&self) -> u64 {
        if self.lt_use_bw { self.lt_bw } else { self.max_bw() }
    }

    /// `bbr_rate_bytes_per_sec`: bw·mss·gain less the pacing margin.
    fn rate_bytes_per_sec(&self, bw: u64, gain: u64) -> u64 {
        let r = (bw as u128 * self.mss as u128 * gain as u128) >> 8;
        let r = r * (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (r >> BW_SCALE) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain·cwnd/srtt.
    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        let rtt_us = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                us(s).max(1)
            }
            None => 1000,
        };
        let bw = self.cwnd * BW_UNIT / rtt_us;
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64, srtt: Option<Duration>) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self) -> u64 {
        if self.pacing_rate < MIN_TSO_RATE >> 3 { 1 } else { 2 }
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate.
    fn tso_segs_goal(&self) -> u64 {
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(65_536 - 1 - 320);
        (bytes / self.mss as u64).max(self.min_tso_segs()).min(0x7f)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// `bbr_bdp`: ⌈bw·min_rtt·gain⌉ packets.
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(min_rtt) = self.min_rtt_us else { return TCP_INIT_CWND };
        let w = bw as u128 * min_rtt as u128;
        (((w * gain as u128) >> 8) as u64).div_ceil(BW_UNIT)
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`.
    fn packets_in_net_at_edt(&self, inflight_now: u64, pacing_wait: Duration) -> u64 {
        let delivered = ((self.bw() as u128 * us(pacing_wait) as u128) >> BW_SCALE) as u64;
        let mut at_edt = inflight_now;
        if self.pacing_gain > UNIT {
            at_edt += self.tso_segs_goal();
        }
        at_edt.saturating_sub(delivered)
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.bw() * EXTRA_ACKED_MAX_US / BW_UNIT;
        let aggr = (EXTRA_ACKED_GAIN * self.extra_acked[0].max(self.extra_acked[1])) >> 8;
        aggr.min(max_aggr)
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: the window, and whether
    /// packet conservation holds it.
    fn recover_or_restore(&mut self, ack: &ModelAck) -> (u64, bool) {
        let (prev, state) = (self.prev_ca_state, ack.ca_state);
        let mut cwnd = self.cwnd;
        if ack.losses > 0 {
            cwnd = cwnd.saturating_sub(ack.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = ack.delivered;
            cwnd = ack.in_flight + ack.acked_sacked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(ack.in_flight + ack.acked_sacked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, ack: &ModelAck, bw: u64, gain: u64) {
        let acked = ack.acked_sacked;
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(ack);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || ack.delivered < TCP_INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        self.cwnd = cwnd.min(self.clamp);
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, ack: &ModelAck) -> bool {
        let full_length =
            ack.delivered_time.saturating_since(self.cycle_stamp) > self.min_rtt().unwrap_or(Duration::MAX);
        if self.pacing_gain == UNIT {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(ack.prior_in_flight, ack.pacing_wait);
        let bw = self.max_bw();
        if self.pacing_gain > UNIT {
            return full_length && (ack.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(bw, UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, delivered_time: Instant) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = delivered_time;
    }

    /// `bbr_reset_probe_bw_mode`: a random phase other than the draining
    /// one (`CYCLE_LEN − 1 − prandom_u32_max(bbr_cycle_rand)`, then one
    /// step).
    fn reset_probe_bw_mode(&mut self, delivered_time: Instant) {
        self.mode = BbrMode::ProbeBw;
        let r = (self.rng.next_u32() as u64 * CYCLE_RAND) >> 32;
        self.cycle_idx = CYCLE_LEN - 1 - r as usize;
        self.advance_cycle_phase(delivered_time);
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, delivered_time: Instant) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(delivered_time);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_interval(&mut self, ack: &ModelAck) {
        self.lt_last_stamp = ack.delivered_time.as_nanos() / 1_000_000;
        self.lt_last_delivered = ack.delivered;
        self.lt_last_lost = ack.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt(&mut self, ack: &ModelAck) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval(ack);
    }

    /// `bbr_lt_bw_interval_done`.
    fn lt_interval_done(&mut self, ack: &ModelAck, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * UNIT <= LT_BW_RATIO * self.lt_bw || self.rate_bytes_per_sec(diff, UNIT) <= LT_BW_DIFF {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(ack);
    }

    /// `bbr_lt_bw_sampling`: policer detection.
    fn lt_bw_sampling(&mut self, ack: &ModelAck, is_app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(ack);
                    self.reset_probe_bw_mode(ack.delivered_time);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if ack.losses == 0 {
                return;
            }
            self.reset_lt_interval(ack);
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt(ack);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(ack);
            return;
        }
        if ack.losses == 0 {
            return;
        }
        let lost = ack.lost - self.lt_last_lost;
        let delivered = ack.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << 8) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = (ack.delivered_time.as_nanos() / 1_000_000) as i64 - self.lt_last_stamp as i64;
        if t < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t as u64 * 1000);
        self.lt_interval_done(ack, bw);
    }

    /// `bbr_update_bw`.
    fn update_bw(&mut self, ack: &ModelAck) {
        self.round_start = false;
        let Some(rs) = ack.rate else { return };
        let interval_us = us(rs.interval);
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = ack.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(ack, rs.is_app_limited);
        let bw = rs.delivered * BW_UNIT / interval_us;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, ack: &ModelAck) {
        if ack.acked_sacked == 0 || ack.rate.is_none_or(|r| r.interval.is_zero()) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx = 1 - self.extra_acked_win_idx;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us(ack.delivered_time.saturating_since(self.ack_epoch_stamp));
        let mut expected = (self.bw() as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + ack.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = ack.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + ack.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, ack: &ModelAck) {
        let app_limited = ack.rate.is_some_and(|r| r.is_app_limited);
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> 8;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, ack: &ModelAck) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            self.ssthresh = Some(self.inflight(self.max_bw(), UNIT));
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_net_at_edt(ack.in_flight, ack.pacing_wait) <= self.inflight(self.max_bw(), UNIT)
        {
            self.reset_probe_bw_mode(ack.delivered_time);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: Instant, delivered_time: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|t| now <= t) {
            return;
        }
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(delivered_time);
    }

    /// `bbr_update_min_rtt`, and PROBE_RTT.
    fn update_min_rtt(&mut self, now: Instant, ack: &ModelAck) {
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = ack.rtt.map(us)
            && (self.min_rtt_us.is_none_or(|m| rtt <= m) || (expired && !ack.maybe_delayed))
        {
            self.min_rtt_us = Some(rtt);
            self.min_rtt_stamp = now;
        }
        if expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            if self.probe_rtt_done_stamp.is_none() && ack.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = ack.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, ack.delivered_time);
                }
            }
        }
        if ack.acked_sacked > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw => (if self.lt_use_bw { UNIT } else { PACING_GAIN[self.cycle_idx] }, CWND_GAIN),
            BbrMode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// `bbr_set_state` for TCP_CA_Loss (a retransmission timeout): the
    /// end of a round, and a loss for the long-term sampler.
    fn enter_loss(&mut self) {
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        let mut ack = self.last;
        ack.rate = None;
        ack.losses = 1;
        self.lt_bw_sampling(&ack, false);
    }
}

impl CongestionControl for Bbr {
    fn window(&self) -> u64 {
        self.cwnd * self.mss as u64
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh.map_or(u64::MAX / 4, |s| s * self.mss as u64)
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        if sack { LossRecovery::Sack } else { LossRecovery::NewReno }
    }
    /// BBR has no window growth of its own outside [`Self::on_model_ack`].
    fn on_ack(&mut self, _now: Instant, _ack: &AckSample) {}
    /// `bbr_ssthresh`: the window is remembered; ssthresh is unchanged
    /// and the window is set at the ACK (packet conservation).
    fn on_fast_retransmit(&mut self, _now: Instant, _flight: u64, _mss: u32, _dupthresh: u32, _r: LossRecovery) {
        self.save_cwnd();
    }
    fn on_recovery_dupack(&mut self, _now: Instant, _mss: u32, _recovery: LossRecovery) {}
    fn on_partial_ack(&mut self, _now: Instant, _acked: u64, _mss: u32) {}
    fn on_recovery_end(&mut self, _now: Instant, _flight: u64, _mss: u32, _recovery: LossRecovery) {}
    /// `tcp_enter_loss`: ssthresh (`bbr_ssthresh`, which saves the
    /// window), a window of one packet (one beyond what is still in flight
    /// in the Linux profile, [`Self::set_loss_window`]), and
    /// `bbr_set_state(TCP_CA_Loss)`.
    fn on_timeout(&mut self, now: Instant, _flight: u64, _mss: u32, repeat: bool) {
        if !repeat {
            self.save_cwnd();
        }
        let _ = now;
        self.cwnd = 1;
        self.enter_loss();
    }
    fn set_loss_window(&mut self, segments: u64) {
        self.cwnd = segments.clamp(1, self.clamp);
    }
    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }
    fn is_model_based(&self) -> bool {
        true
    }
    /// `bbr_main`.
    fn on_model_ack(&mut self, now: Instant, ack: &ModelAck) {
        self.last = *ack;
        if self.min_rtt_us.is_none() {
            // `bbr_init`: min_rtt from the connection's (the handshake's).
            self.min_rtt_us = ack.min_rtt.map(us);
            self.min_rtt_stamp = now;
        }
        if !self.has_seen_rtt && ack.srtt.is_some() {
            // `bbr_init` runs once the handshake gave SRTT.
            self.init_pacing_rate(ack.min_rtt.or(ack.srtt));
        }
        self.update_bw(ack);
        self.update_ack_aggregation(ack);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(ack) {
            self.advance_cycle_phase(ack.delivered_time);
        }
        self.check_full_bw_reached(ack);
        self.check_drain(ack);
        self.update_min_rtt(now, ack);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, ack.srtt);
        self.set_cwnd(ack, bw, self.cwnd_gain);
    }
    fn wants_app_limited(&self) -> bool {
        self.mode == BbrMode::ProbeRtt
    }
    /// `tcp_tso_autosize` with `bbr_min_tso_segs`: 1 ms of data at the
    /// pacing rate, at least two segments above 1.2 Mbit/s (the RTT term
    /// of Linux ≥ 5.18, `tcp_tso_rtt_log`, adds nothing above 16 ms).
    fn burst_segments(&self, _mss: u32) -> u32 {
        self.tso_segs_goal() as u32
    }
}

#[cfg(test)]
mod tests;
