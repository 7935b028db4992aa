//! A connection's settings. Defaults are RFC values; each field says which
//! RFC or seed section it comes from and its unit.

use squall_link::Duration;

/// How the retransmission timeout is computed from the RTT estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RtoVariant {
    /// RFC 6298 §2: RTO = SRTT + max(G, 4·RTTVAR), RTTVAR updated before
    /// SRTT, at least `min_rto`.
    #[default]
    Rfc6298,
    /// Seed 001 §3.2.1 (Fall and Floyd 1996): SRTT updated first, then
    /// RTTVAR from the new SRTT; RTO = backoff·(SRTT + 4·RTTVAR + 1 tick),
    /// the tick being `granularity`; at least `min_rto`.
    Seed001,
    /// Linux's estimator (net/ipv4/tcp_input.c `tcp_rtt_estimator` and
    /// `tcp_set_rto`, include/net/tcp.h `__tcp_set_rto`): SRTT as RFC 6298
    /// §2.3; the deviation `mdev` gains 1/4, but only 1/32 when the sample
    /// is below SRTT; `rttvar` is the largest `mdev` of the last window of
    /// data, at least `min_rto`, and decays by a quarter of its excess once
    /// per window; RTO = SRTT + rttvar, rounded up to whole milliseconds
    /// (jiffies at HZ = 1000). The first sample R gives SRTT = R and
    /// rttvar = max(2R, min_rto).
    Linux,
}

/// How lost segments are detected (the connection's job; the congestion
/// control only hears that a loss happened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossDetection {
    /// `dupack_threshold` duplicate ACKs (RFC 5681 §3.2), or as many
    /// SACKed segments above a hole (RFC 6675 §4 IsLost).
    #[default]
    DupAck,
    /// RACK-TLP (RFC 8985; Linux net/ipv4/tcp_recovery.c and
    /// tcp_output.c `tcp_schedule_loss_probe`): a segment is lost when one
    /// sent after it is delivered and a reordering window has passed
    /// since; a tail loss probe two SRTTs after the last send makes the
    /// receiver SACK a lost tail instead of waiting for the RTO. Needs SACK;
    /// a connection without SACK falls back to duplicate ACKs.
    Rack,
}

/// How the congestion window grows per acknowledged data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowGrowth {
    /// RFC 5681 §3.1: at most one SMSS per ACK in slow start, SMSS²/cwnd
    /// per ACK in congestion avoidance.
    #[default]
    Rfc5681,
    /// Linux (net/ipv4/tcp_cong.c `tcp_slow_start`, `tcp_cong_avoid_ai`):
    /// the window counts in segments; slow start adds one segment per
    /// segment acknowledged or SACKed, without RFC 3465's limit L, and
    /// stops at ssthresh; congestion avoidance adds one segment per cwnd
    /// segments delivered. The reduction on loss halves the congestion
    /// window, not FlightSize (`tcp_reno_ssthresh`).
    Linux,
}

/// Which congestion control and loss recovery a connection uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CcKind {
    /// Slow start, congestion avoidance, fast retransmit; every loss
    /// brings the window back to one segment (Jacobson 1988; seed 001
    /// §3.2.1).
    Tahoe,
    /// Tahoe plus fast recovery, which ends at the first new ACK (RFC 5681).
    Reno,
    /// Reno whose fast recovery lasts until every segment outstanding at
    /// its start is acknowledged, retransmitting on partial ACKs (RFC 6582).
    #[default]
    NewReno,
    /// Reno's window with RFC 6675's SACK-based loss recovery (RFC 2018
    /// options, the scoreboard, pipe and NextSeg).
    Sack,
    /// CUBIC window growth (RFC 9438), with SACK loss recovery when both
    /// ends permit SACK and NewReno's otherwise.
    Cubic,
    /// TCP Vegas (Brakmo and Peterson 1995; Linux net/ipv4/tcp_vegas.c):
    /// the window follows the segments queued in the network, α = 2 to
    /// β = 4; Reno's reaction to loss, SACK or NewReno recovery.
    Vegas,
    /// BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion
    /// Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control-00)
    /// as Linux's net/ipv4/tcp_bbr.c: a model of the bottleneck bandwidth
    /// and round-trip time sets the pacing rate and the window; SACK or
    /// NewReno loss recovery.
    Bbr,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Tahoe => "tahoe",
            CcKind::Reno => "reno",
            CcKind::NewReno => "newreno",
            CcKind::Sack => "sack",
            CcKind::Cubic => "cubic",
            CcKind::Vegas => "vegas",
            CcKind::Bbr => "bbr",
        }
    }
}

/// Delayed acknowledgments (RFC 1122 §4.2.3.2, RFC 5681 §4.2, seed 004
/// §4.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayedAck {
    /// Every data segment is acknowledged at once.
    Off,
    /// At least every second full-sized segment is acknowledged at once;
    /// otherwise the ACK waits at most this long (200 ms classic, 40 ms
    /// Linux's minimum).
    On(Duration),
}

/// The window scale Linux 6.18 announces with its default `tcp_rmem[2]`
/// of 32 MiB (33 554 432, as this machine's
/// /proc/sys/net/ipv4/tcp_rmem reads): ilog2 25 − 15.
pub const LINUX_WINDOW_SCALE: u8 = 10;

/// Settings of one connection end.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    pub cc: CcKind,
    /// Largest payload this end sends and announces it can receive, bytes
    /// (RFC 9293 §3.7.1). The send MSS is the smaller of this and the peer's.
    pub mss: u32,
    /// Receive buffer, bytes: the most the receive window can offer.
    pub rcv_buf: u64,
    /// Offer window scaling (RFC 7323 §2); used when both ends offer it.
    /// Without it the window is at most 65535 bytes.
    pub window_scaling: bool,
    /// The smallest window scale this end announces (RFC 7323 §2.3); it
    /// is larger when `rcv_buf` needs it, and with `None` just that. Linux derives it from its
    /// largest buffer in memory, not in window bytes: `ilog2` of
    /// `tcp_rmem[2]` less 15 (`tcp_select_initial_window`), 10 with Linux
    /// 6.18's 32 MiB default.
    pub window_scale: Option<u8>,
    /// Offer SACK (RFC 2018); used when both ends offer it.
    pub sack: bool,
    pub delayed_ack: DelayedAck,
    /// Linux's delayed-ACK engine (net/ipv4/tcp_input.c, tcp_timer.c,
    /// tcp_output.c): quick-ACK mode (`tcp_incr_quickack`,
    /// `tcp_enter_quickack_mode`: every data segment
    /// is ACKed at once for up to 16 ACKs, at most half the receive window
    /// in segments, at the connection's first data, after data out of
    /// order or duplicate, and after a silence longer than the RTO), and
    /// the adaptive ACK timeout `ato` (`tcp_event_data_recv`,
    /// `tcp_delack_timer_handler`, `tcp_send_delayed_ack`: it follows the
    /// gaps between arrivals, doubles when the timer fires, and waits at
    /// most SRTT and 500 ms), with `delayed_ack`'s delay as its floor.
    /// As in Linux 6.x, data out of order does not enter quick-ACK mode
    /// (`tcp_data_queue_ofo`); a duplicate segment does.
    pub quick_ack: bool,
    /// Linux's SACK compression (net/ipv4/tcp_input.c
    /// `__tcp_ack_snd_check`, `tcp_sack_new_ofo_skb`; tcp_timer.c
    /// `tcp_compressed_ack_kick`; the sysctls `tcp_comp_sack_delay_ns`
    /// = 1 ms, `tcp_comp_sack_slack_ns` = 100 µs, `tcp_comp_sack_nr` =
    /// 44): while data is out of order, the first 3 ACKs for one `rcv_nxt`
    /// go at once (`TCP_FASTRETRANS_THRESH`); after them an ACK waits
    /// min(1 ms, 5 % of the receiver's RTT) plus the 100 µs slack, and
    /// covers what arrived meanwhile (at most 44 ACKs held). Needs SACK
    /// and delayed ACKs (without them every segment is ACKed at once).
    pub sack_compression: bool,
    /// Linux's receive-window growth (net/ipv4/tcp_input.c
    /// `tcp_grow_window`, `tcp_measure_rcv_mss`, `tcp_rcv_space_adjust`,
    /// `tcp_rcvbuf_grow`, as in Linux 6.18): the offered window is at most
    /// `rcv_ssthresh`, which starts at 64 KiB and grows by two segments per
    /// segment received up to a clamp: at the first segment the 128 KiB
    /// initial buffer in window bytes (times payload over buffer memory,
    /// about 80 KB for 1448-byte segments), then twice the data delivered
    /// per receiver RTT, more while that grows (at most `rcv_buf`); each
    /// segment that grows it is ACKed at once, so a receiver whose window
    /// grows ACKs every segment.
    pub grow_window: bool,
    /// Linux's ACK of pushed data (net/ipv4/tcp_input.c
    /// `tcp_measure_rcv_mss`, net/ipv4/tcp.c `__tcp_cleanup_rbuf`, as in
    /// Linux 6.x): a full-sized segment in order with PSH set marks the
    /// pending ACK pushed (`ICSK_ACK_PUSHED`), and once the application
    /// has read all the data received, that ACK goes at once instead of
    /// waiting for a second segment or the delayed-ACK timer. A Linux
    /// sender ends each of its transmit units of more than one segment
    /// with PSH ([`TcpConfig::transmit_units`]), so a receiver that reads
    /// at once ACKs each such unit: a lone segment is ACKed when it ends
    /// one.
    pub ack_pushed: bool,
    /// Linux's transmit units (net/ipv4/tcp_output.c `tcp_write_xmit`,
    /// `tcp_tso_autosize`, `tcp_cwnd_test`, `tcp_tso_should_defer`,
    /// `__tcp_transmit_skb`; `tcp_update_pacing_rate` in tcp_input.c), for
    /// the window-based algorithms:
    /// - each send lets out at most one unit at a time: min(the room the
    ///   windows leave, half the congestion window, max(rate >> 10 bytes
    ///   / MSS, 2) segments) (`tcp_cwnd_test`, `sk_pacing_shift` 10,
    ///   `tcp_min_tso_segs` 2), the rate being max(cwnd, segments
    ///   out)·MSS/SRTT at 200 % below half ssthresh and 120 % above
    ///   (`tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio`), at most 64 KiB
    ///   (`GSO_LEGACY_MAX_SIZE`); 64 KiB before an RTT sample;
    /// - a unit of more than one segment ends with PSH: Linux forces it on
    ///   every GSO packet (`__tcp_transmit_skb`, since 5.4), so a unit the
    ///   window cut to two segments ends with PSH too, and a lone segment
    ///   has none;
    /// - when the window lets out only part of a unit, the part waits for
    ///   the next ACK (`tcp_tso_should_defer`) if data left less than 1 ms
    ///   ago, the room is below a third of min(cwnd, peer's window), and
    ///   the ACK of the oldest segment outstanding is due within
    ///   min(SRTT/2, 1 ms) (its send time plus SRTT); never during
    ///   recovery or after a timeout.
    ///
    /// connection/units.rs names what is left out (the write queue's
    /// buffer boundaries, an application-limited tail's deferral, the
    /// minimum-RTT term of `tcp_tso_autosize`).
    pub transmit_units: bool,
    /// Offer the timestamp option (RFC 7323 §3); used when both ends offer
    /// it. Its 12 option bytes (with two NOPs) come out of each segment's
    /// payload, as in Linux (1448 bytes with an MSS of 1460), and every
    /// ACK echoes a timestamp, which gives RTT samples even for
    /// retransmitted data (RFC 7323 §4).
    pub timestamps: bool,
    /// Where the host's millisecond timestamp clock ticks: its value is
    /// ⌊(t + `clock_phase`) / 1 ms⌋ (RFC 7323 §5.4; Linux's
    /// `tcp_time_stamp_ms`, `TCP_TS_HZ` = 1000), so it ticks at
    /// `1 ms − clock_phase` past every whole millisecond of the run. A
    /// real host's clock ticks at no particular moment of a network's
    /// events; the receiver's RTT estimate (`tcp_rcv_rtt_measure_ts`), and
    /// with it the window clamp and how many segments it ACKs one by one,
    /// depend on where. Below 1 ms.
    pub clock_phase: Duration,
    pub loss_detection: LossDetection,
    /// Proportional rate reduction during SACK loss recovery (RFC 6937;
    /// Linux net/ipv4/tcp_input.c `tcp_cwnd_reduction`) instead of RFC 6675's
    /// cwnd = ssthresh at the start of recovery.
    pub prr: bool,
    pub window_growth: WindowGrowth,
    /// HyStart for `cubic` (Ha and Rhee 2011; Linux net/ipv4/tcp_cubic.c
    /// `hystart_update`): slow start ends at an ACK train as long as half
    /// the minimum RTT, or when the round's minimum RTT rises by 1/8 of
    /// the minimum (4 to 16 ms), from 16 segments on.
    pub hystart: bool,
    /// Lower bound of the RTO (1 s in RFC 6298 §2.4; 200 ms in Linux).
    pub min_rto: Duration,
    /// Upper bound of the RTO, backoff included (RFC 6298 §2.5: at least
    /// 60 s; Linux 120 s).
    pub max_rto: Duration,
    /// RTO before the first RTT sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// Clock granularity G, the "+1 tick" of the seed 001 variant.
    pub granularity: Duration,
    pub rto_variant: RtoVariant,
    /// Largest backoff factor of the RTO (Karn's algorithm; 64 in seed 001).
    pub max_backoff: u32,
    /// Initial congestion window, segments (RFC 5681 §3.1 allows 2..=4;
    /// seed 001 uses 1, RFC 6928 10).
    pub initial_window: u32,
    /// Initial slow-start threshold, bytes (RFC 5681: arbitrarily high;
    /// seed 001: 32 segments).
    pub initial_ssthresh: u64,
    /// Upper bound of the congestion window, bytes (seed 001: 50 segments).
    pub max_window: u64,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dupack_threshold: u32,
    /// Limited transmit (RFC 3042): on each of the first two duplicate
    /// ACKs send one new segment beyond the congestion window, so that a
    /// small window still gathers three duplicates for fast retransmit.
    /// On in Linux and ns-3.
    pub limited_transmit: bool,
    /// Nagle's algorithm (RFC 896): hold a short segment while data is
    /// unacknowledged. Off means TCP_NODELAY.
    pub nagle: bool,
    /// Persist timer bounds (seed 004 §4.2.3: 5 s and 60 s).
    pub persist_min: Duration,
    pub persist_max: Duration,
    /// How long an actively closed connection stays in TIME-WAIT (2·MSL,
    /// RFC 9293 §3.4.2).
    pub time_wait: Duration,
    /// Initial send sequence number.
    pub iss: u64,
    /// Seed of the connection's random stream (BBR's first gain-cycle
    /// phase, tcp_bbr.c `bbr_reset_probe_bw_mode`); the simulator derives
    /// it from the replication seed and the flow's name.
    pub seed: u64,
    /// Take delivery-rate samples (Linux tcp_rate.c) though the congestion
    /// control does not read them (model-based ones always do): for a
    /// recorded `delivery_rate`. Sending and recovery are unchanged.
    pub rate_samples: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcKind::NewReno,
            mss: 1460,
            rcv_buf: 65_535,
            window_scaling: true,
            sack: true,
            delayed_ack: DelayedAck::On(Duration::from_millis(200)),
            quick_ack: false,
            sack_compression: false,
            grow_window: false,
            window_scale: None,
            ack_pushed: false,
            transmit_units: false,
            timestamps: false,
            clock_phase: Duration::ZERO,
            loss_detection: LossDetection::DupAck,
            prr: false,
            window_growth: WindowGrowth::Rfc5681,
            hystart: false,
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(120),
            initial_rto: Duration::from_secs(1),
            granularity: Duration::from_millis(1),
            rto_variant: RtoVariant::Rfc6298,
            max_backoff: 64,
            initial_window: 2,
            initial_ssthresh: u64::MAX / 4,
            max_window: u64::MAX / 4,
            dupack_threshold: 3,
            limited_transmit: true,
            nagle: false,
            persist_min: Duration::from_secs(5),
            persist_max: Duration::from_secs(60),
            time_wait: Duration::from_secs(60),
            iss: 0,
            seed: 0,
            rate_samples: false,
        }
    }
}

/// A set of defaults: the RFCs' or Linux's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// [`TcpConfig::default`]: RFC values.
    #[default]
    Rfc,
    /// [`TcpConfig::linux`]: what Linux 6.x does with its default sysctls.
    Linux,
}

impl TcpConfig {
    /// The defaults of `profile`.
    pub fn profile(profile: Profile) -> Self {
        match profile {
            Profile::Rfc => TcpConfig::default(),
            Profile::Linux => TcpConfig::linux(),
        }
    }

    /// Linux 6.x with default sysctls, as far as the model goes:
    ///
    /// - initial window 10 segments (RFC 6928; include/net/tcp.h
    ///   `TCP_INIT_CWND`);
    /// - min RTO 200 ms, max RTO 120 s, initial RTO 1 s (`TCP_RTO_MIN`,
    ///   `TCP_RTO_MAX`, `TCP_TIMEOUT_INIT`), Linux's RTO estimator
    ///   ([`RtoVariant::Linux`]) and exponential backoff without a limit
    ///   below the 120 s cap;
    /// - delayed ACKs from 40 ms (`TCP_ATO_MIN`) with Linux's adaptive
    ///   timeout, an ACK every second full segment, and quick-ACK mode,
    ///   also for every segment that grows the receive window
    ///   ([`TcpConfig::grow_window`]); SACKs of data out of order
    ///   compressed ([`TcpConfig::sack_compression`]); a full segment with
    ///   PSH ACKed once read ([`TcpConfig::ack_pushed`]);
    /// - data sent in transmit units of at most `tcp_tso_autosize`
    ///   segments, PSH ending each of more than one segment, a unit the
    ///   window would cut held for the next ACK
    ///   ([`TcpConfig::transmit_units`]);
    /// - SACK (RFC 2018), window scaling and timestamps (RFC 7323);
    /// - RACK-TLP loss detection (RFC 8985), PRR (RFC 6937) and Linux's
    ///   per-segment window growth; HyStart for `cubic`;
    /// - a receive buffer of 3 MiB: what receive-buffer autotuning
    ///   reaches with `tcp_rmem`'s 6 MiB maximum, half of it for the window.
    pub fn linux() -> Self {
        TcpConfig {
            rcv_buf: 3 << 20,
            window_scaling: true,
            sack: true,
            delayed_ack: DelayedAck::On(Duration::from_millis(40)),
            quick_ack: true,
            sack_compression: true,
            grow_window: true,
            window_scale: Some(LINUX_WINDOW_SCALE),
            ack_pushed: true,
            transmit_units: true,
            timestamps: true,
            loss_detection: LossDetection::Rack,
            prr: true,
            window_growth: WindowGrowth::Linux,
            hystart: true,
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            initial_rto: Duration::from_secs(1),
            rto_variant: RtoVariant::Linux,
            max_backoff: 1 << 15,
            initial_window: 10,
            ..TcpConfig::default()
        }
    }
}

/// A setting the model cannot run with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The field, as named in [`TcpConfig`].
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

impl TcpConfig {
    /// Checks the settings; the first problem is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |field, message: &str| Err(ConfigError { field, message: message.to_string() });
        if !(1..=65_495).contains(&self.mss) {
            return fail("mss", "must be between 1 and 65495 bytes");
        }
        if self.rcv_buf == 0 {
            return fail("rcv_buf", "must be at least 1 byte");
        }
        if self.rcv_buf > (65_535u64 << 14) {
            return fail("rcv_buf", "must be at most 65535·2^14 bytes (window scale 14, RFC 7323)");
        }
        if let Some(shift) = self.window_scale
            && shift > 14
        {
            return fail("window_scale", "must be at most 14 (RFC 7323 §2.3)");
        }
        if self.initial_window == 0 {
            return fail("initial_window", "must be at least 1 segment");
        }
        if self.max_window < self.mss as u64 {
            return fail("max_window", "must hold at least one segment");
        }
        if self.initial_ssthresh < 2 * self.mss as u64 {
            return fail("initial_ssthresh", "must be at least 2 segments");
        }
        if self.dupack_threshold == 0 {
            return fail("dupack_threshold", "must be at least 1");
        }
        if self.max_backoff == 0 || !self.max_backoff.is_power_of_two() {
            return fail("max_backoff", "must be a power of two, like 64");
        }
        if self.initial_rto.is_zero() || self.max_rto.is_zero() {
            return fail("initial_rto", "the RTO bounds must be positive");
        }
        if self.min_rto > self.max_rto {
            return fail("min_rto", "must not exceed max_rto");
        }
        if let DelayedAck::On(t) = self.delayed_ack
            && t.is_zero()
        {
            return fail("delayed_ack", "the delayed-ACK timer must be positive (or turn delayed ACKs off)");
        }
        if self.clock_phase >= Duration::from_millis(1) {
            return fail("clock_phase", "must be below 1 ms (a phase of the millisecond timestamp clock)");
        }
        if self.persist_min.is_zero() || self.persist_min > self.persist_max {
            return fail("persist_min", "must be positive and at most persist_max");
        }
        Ok(())
    }

    /// The window scale this end announces: the smallest shift, at least
    /// `window_scale`, that lets the 16-bit field hold the whole receive
    /// buffer (RFC 7323 §2.3).
    pub fn window_shift(&self) -> u8 {
        let mut shift = self.window_scale.unwrap_or(0).min(14);
        while shift < 14 && (self.rcv_buf >> shift) > 65_535 {
            shift += 1;
        }
        shift
    }
}
