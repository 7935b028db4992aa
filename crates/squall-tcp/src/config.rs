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
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Tahoe => "tahoe",
            CcKind::Reno => "reno",
            CcKind::NewReno => "newreno",
            CcKind::Sack => "sack",
            CcKind::Cubic => "cubic",
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
    /// Offer SACK (RFC 2018); used when both ends offer it.
    pub sack: bool,
    pub delayed_ack: DelayedAck,
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
        if self.persist_min.is_zero() || self.persist_min > self.persist_max {
            return fail("persist_min", "must be positive and at most persist_max");
        }
        Ok(())
    }

    /// The window scale this end announces: the smallest shift that lets
    /// the 16-bit field hold the whole receive buffer (RFC 7323 §2.3).
    pub fn window_shift(&self) -> u8 {
        let mut shift = 0u8;
        while shift < 14 && (self.rcv_buf >> shift) > 65_535 {
            shift += 1;
        }
        shift
    }
}
