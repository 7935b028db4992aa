//! Congestion control (RFC 5681) behind a small trait, with an enum for
//! static dispatch (smoltcp's `socket/tcp/congestion.rs` `AnyController`).
//!
//! The connection owns loss *detection* (duplicate ACKs, the SACK
//! scoreboard, the retransmission timer) and tells the algorithm what
//! happened; the algorithm owns the congestion window and ssthresh, and
//! says which loss recovery it wants ([`LossRecovery`]). Every callback
//! gets `now`. The [`AckSample`] carries a delivery-rate sample and the
//! algorithm may return a pacing rate, so a model-based algorithm (BBR)
//! fits the same trait.

mod aimd;
mod bbr;
mod cubic;
mod hystart;
mod linux_cubic;
mod linux_reno;
mod prr;
mod vegas;

pub use aimd::Aimd;
pub use bbr::{Bbr, BbrMode};
pub use cubic::Cubic;
pub use hystart::{HyStart, HyStartExit};
pub use linux_cubic::LinuxCubic;
pub use linux_reno::LinuxReno;
pub use prr::Prr;
pub use vegas::Vegas;

use squall_link::{Duration, Instant};

use crate::config::{CcKind, TcpConfig, WindowGrowth};

/// How lost segments are recovered after fast retransmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossRecovery {
    /// No fast recovery: after fast retransmit the window is one segment
    /// and the sender goes back to the first unacknowledged segment
    /// (Tahoe, as in Fall and Floyd 1996).
    None,
    /// Fast recovery ends at the first ACK of new data (RFC 5681 §3.2).
    Reno,
    /// Fast recovery ends when everything outstanding at its start is
    /// acknowledged; partial ACKs retransmit the next hole (RFC 6582).
    NewReno,
    /// Recovery by the SACK scoreboard, pipe and NextSeg (RFC 6675).
    Sack,
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation):
/// bytes delivered over an interval, for model-based algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    pub delivered: u64,
    pub interval: Duration,
}

impl RateSample {
    /// Bytes per second, if the interval is not zero.
    pub fn bytes_per_sec(&self) -> Option<f64> {
        (!self.interval.is_zero()).then(|| self.delivered as f64 / self.interval.as_secs_f64())
    }
}

/// What an ACK of new data tells the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// Bytes newly acknowledged cumulatively.
    pub bytes_acked: u64,
    /// Bytes newly delivered: acknowledged cumulatively or SACKed, each
    /// byte counted once (Linux's `acked_sacked`).
    pub delivered: u64,
    /// The RTT sample this ACK gave, if any (Karn's rule applied).
    pub rtt: Option<Duration>,
    /// The smoothed RTT after this ACK, if there is one.
    pub srtt: Option<Duration>,
    /// Bytes outstanding before the ACK (FlightSize, RFC 5681).
    pub flight_size: u64,
    /// Sender MSS, bytes.
    pub mss: u32,
    pub rate: Option<RateSample>,
    /// The cumulative ACK point after this ACK, and the next sequence
    /// number to send (HyStart's rounds).
    pub snd_una: u64,
    pub snd_nxt: u64,
}

/// A delivery-rate sample as Linux's net/ipv4/tcp_rate.c builds it
/// (`struct rate_sample`), valid only: packets delivered between the
/// transmission of the most recently sent segment an ACK delivered and
/// that ACK, over max(send interval, ACK interval).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryRateSample {
    /// The connection's delivered count when that segment was sent.
    pub prior_delivered: u64,
    /// Packets delivered over the interval.
    pub delivered: u64,
    pub interval: Duration,
    /// The segment was sent while the application left the window unused.
    pub is_app_limited: bool,
}

/// Linux's congestion states (include/net/tcp.h `tcp_ca_state`) as a
/// model-based algorithm sees them; Disorder and CWR count as Open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    #[default]
    Open,
    /// Fast recovery (`TCP_CA_Recovery`).
    Recovery,
    /// After a retransmission timeout, until everything outstanding then
    /// is acknowledged (`TCP_CA_Loss`).
    Loss,
}

/// What every ACK tells an algorithm that controls the window and pacing
/// rate itself (Linux's `cong_control` hook, called from `tcp_ack` through
/// `tcp_cong_control` after loss detection). Counts are in packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelAck {
    /// The rate sample, if the ACK gave a valid one.
    pub rate: Option<DeliveryRateSample>,
    /// Packets newly delivered (acknowledged or SACKed) by this ACK.
    pub acked_sacked: u64,
    /// Packets newly marked lost by this ACK.
    pub losses: u64,
    /// Packets in flight before and after the ACK (`tcp_packets_in_flight`).
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// The connection's totals: packets delivered, packets marked lost,
    /// and when `delivered` last grew (`tp->delivered_mstamp`).
    pub delivered: u64,
    pub lost: u64,
    pub delivered_time: Instant,
    /// This ACK's RTT sample, the smoothed RTT, and the smallest RTT of
    /// the connection (the handshake's included).
    pub rtt: Option<Duration>,
    pub srtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    /// The ACK acknowledged a single packet, so may have been delayed by
    /// the receiver (`FLAG_ACK_MAYBE_DELAYED`).
    pub maybe_delayed: bool,
    pub ca_state: CaState,
    /// How long until the pacer lets the next packet go (the earliest
    /// departure time less now, zero if it may go now).
    pub pacing_wait: Duration,
    pub mss: u32,
}

/// A congestion control algorithm. Windows are in bytes.
pub trait CongestionControl {
    /// The congestion window.
    fn window(&self) -> u64;
    /// The slow-start threshold.
    fn ssthresh(&self) -> u64;
    /// The loss recovery this algorithm runs; `sack` says whether both ends
    /// permitted SACK.
    fn recovery(&self, sack: bool) -> LossRecovery;
    /// New data acknowledged outside loss recovery: grow the window.
    fn on_ack(&mut self, now: Instant, ack: &AckSample);
    /// Loss detected by duplicate ACKs or the scoreboard: fast retransmit
    /// and (unless Tahoe) fast recovery begin. `dupthresh` is the
    /// connection's duplicate-ACK threshold (RFC 5681 §3.2's DupThresh,
    /// `dupack_threshold`): that many segments have left the network.
    fn on_fast_retransmit(&mut self, now: Instant, flight_size: u64, mss: u32, dupthresh: u32, recovery: LossRecovery);
    /// A duplicate ACK during fast recovery (Reno/NewReno inflate).
    fn on_recovery_dupack(&mut self, now: Instant, mss: u32, recovery: LossRecovery);
    /// A partial ACK during NewReno recovery acknowledging `acked` bytes.
    fn on_partial_ack(&mut self, now: Instant, acked: u64, mss: u32);
    /// Fast recovery is over (the ACK covered the recovery point).
    fn on_recovery_end(&mut self, now: Instant, flight_size: u64, mss: u32, recovery: LossRecovery);
    /// The retransmission timer expired. `repeat` is true when ssthresh is
    /// held: the segment had already been retransmitted by the timer (RFC
    /// 5681 §3.1), or, in the Linux profile, the timeout came in Recovery,
    /// whose reduction is "made inside this window" (`tcp_enter_loss`).
    fn on_timeout(&mut self, now: Instant, flight_size: u64, mss: u32, repeat: bool);
    /// After [`Self::on_timeout`] in the Linux profile: Linux's
    /// `tcp_enter_loss` sets the window to the packets still in flight
    /// plus one (`tcp_snd_cwnd_set(tp, tcp_packets_in_flight(tp) + 1)`),
    /// `segments` here. The algorithms with the RFCs' window growth keep
    /// RFC 5681's loss window of one segment.
    fn set_loss_window(&mut self, _segments: u64) {}
    /// Pacing rate in bytes per second, if the algorithm paces.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// The algorithm sets the window and pacing rate itself on every ACK
    /// ([`Self::on_model_ack`]), in loss recovery too, instead of the
    /// connection's PRR (Linux's `cong_control`).
    fn is_model_based(&self) -> bool {
        false
    }
    /// Every ACK, after loss detection, for a model-based algorithm.
    fn on_model_ack(&mut self, _now: Instant, _ack: &ModelAck) {}
    /// The connection should mark itself application-limited now (BBR's
    /// PROBE_RTT ignores its own low-rate samples).
    fn wants_app_limited(&self) -> bool {
        false
    }
    /// Segments the sender groups into one paced burst (Linux's TSO
    /// autosizing, `tcp_tso_autosize` with the algorithm's
    /// `min_tso_segs`).
    fn burst_segments(&self, _mss: u32) -> u32 {
        1
    }
}

/// Every algorithm, for static dispatch.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyCongestionControl {
    Tahoe(Aimd),
    Reno(Aimd),
    NewReno(Aimd),
    Sack(Aimd),
    Cubic(Cubic),
    /// `reno`, `newreno` or `sack` with Linux's window growth.
    LinuxReno(LinuxReno),
    /// `cubic` as Linux computes it.
    LinuxCubic(LinuxCubic),
    /// `vegas` as Linux computes it, with either window growth.
    Vegas(Vegas),
    /// BBR v1 as Linux's net/ipv4/tcp_bbr.c.
    Bbr(Box<Bbr>),
}

impl AnyCongestionControl {
    /// The algorithm `config.cc` names, with the configured initial window,
    /// initial ssthresh and maximum window, for a sender MSS of `mss`.
    pub fn new(config: &TcpConfig, mss: u32) -> Self {
        let iw = config.initial_window as u64 * mss as u64;
        let (ssthresh, max) = (config.initial_ssthresh, config.max_window);
        if config.window_growth == WindowGrowth::Linux {
            return match config.cc {
                // Linux has no Tahoe: this is the RFC window's Tahoe.
                CcKind::Tahoe => AnyCongestionControl::Tahoe(Aimd::new(LossRecovery::None, iw, ssthresh, max)),
                CcKind::Reno | CcKind::NewReno | CcKind::Sack => {
                    AnyCongestionControl::LinuxReno(LinuxReno::new(iw, ssthresh, max, mss))
                }
                CcKind::Vegas => AnyCongestionControl::Vegas(Vegas::new(iw, ssthresh, max, mss)),
                CcKind::Bbr => AnyCongestionControl::Bbr(Box::new(Bbr::new(iw, max, mss, config.seed))),
                CcKind::Cubic => AnyCongestionControl::LinuxCubic(LinuxCubic::new(
                    iw,
                    ssthresh,
                    max,
                    mss,
                    config.hystart.then(HyStart::default),
                )),
            };
        }
        match config.cc {
            CcKind::Tahoe => AnyCongestionControl::Tahoe(Aimd::new(LossRecovery::None, iw, ssthresh, max)),
            CcKind::Reno => AnyCongestionControl::Reno(Aimd::new(LossRecovery::Reno, iw, ssthresh, max)),
            CcKind::NewReno => AnyCongestionControl::NewReno(Aimd::new(LossRecovery::NewReno, iw, ssthresh, max)),
            CcKind::Sack => AnyCongestionControl::Sack(Aimd::new(LossRecovery::Sack, iw, ssthresh, max)),
            CcKind::Cubic => AnyCongestionControl::Cubic(Cubic::new(iw, ssthresh, max)),
            CcKind::Vegas => AnyCongestionControl::Vegas(Vegas::new(iw, ssthresh, max, mss)),
            CcKind::Bbr => AnyCongestionControl::Bbr(Box::new(Bbr::new(iw, max, mss, config.seed))),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $cc:ident => $e:expr) => {
        match $self {
            AnyCongestionControl::Tahoe($cc)
            | AnyCongestionControl::Reno($cc)
            | AnyCongestionControl::NewReno($cc)
            | AnyCongestionControl::Sack($cc) => $e,
            AnyCongestionControl::Cubic($cc) => $e,
            AnyCongestionControl::LinuxReno($cc) => $e,
            AnyCongestionControl::LinuxCubic($cc) => $e,
            AnyCongestionControl::Vegas($cc) => $e,
            AnyCongestionControl::Bbr($cc) => $e,
        }
    };
}

impl CongestionControl for AnyCongestionControl {
    fn window(&self) -> u64 {
        dispatch!(self, c => c.window())
    }
    fn ssthresh(&self) -> u64 {
        dispatch!(self, c => c.ssthresh())
    }
    fn recovery(&self, sack: bool) -> LossRecovery {
        dispatch!(self, c => c.recovery(sack))
    }
    fn on_ack(&mut self, now: Instant, ack: &AckSample) {
        dispatch!(self, c => c.on_ack(now, ack))
    }
    fn on_fast_retransmit(&mut self, now: Instant, flight_size: u64, mss: u32, dupthresh: u32, recovery: LossRecovery) {
        dispatch!(self, c => c.on_fast_retransmit(now, flight_size, mss, dupthresh, recovery))
    }
    fn on_recovery_dupack(&mut self, now: Instant, mss: u32, recovery: LossRecovery) {
        dispatch!(self, c => c.on_recovery_dupack(now, mss, recovery))
    }
    fn on_partial_ack(&mut self, now: Instant, acked: u64, mss: u32) {
        dispatch!(self, c => c.on_partial_ack(now, acked, mss))
    }
    fn on_recovery_end(&mut self, now: Instant, flight_size: u64, mss: u32, recovery: LossRecovery) {
        dispatch!(self, c => c.on_recovery_end(now, flight_size, mss, recovery))
    }
    fn on_timeout(&mut self, now: Instant, flight_size: u64, mss: u32, repeat: bool) {
        dispatch!(self, c => c.on_timeout(now, flight_size, mss, repeat))
    }
    fn set_loss_window(&mut self, segments: u64) {
        dispatch!(self, c => c.set_loss_window(segments))
    }
    fn pacing_rate(&self) -> Option<u64> {
        dispatch!(self, c => c.pacing_rate())
    }
    fn is_model_based(&self) -> bool {
        dispatch!(self, c => c.is_model_based())
    }
    fn on_model_ack(&mut self, now: Instant, ack: &ModelAck) {
        dispatch!(self, c => c.on_model_ack(now, ack))
    }
    fn wants_app_limited(&self) -> bool {
        dispatch!(self, c => c.wants_app_limited())
    }
    fn burst_segments(&self, mss: u32) -> u32 {
        dispatch!(self, c => c.burst_segments(mss))
    }
}

/// ssthresh after a loss: max(FlightSize/2, 2·SMSS) (RFC 5681 eq. 4).
pub(crate) fn halved(flight_size: u64, mss: u32) -> u64 {
    (flight_size / 2).max(2 * mss as u64)
}

/// The congestion window at fast retransmit, once ssthresh is set, for
/// every window-based algorithm: Tahoe goes back to one segment; Reno and
/// NewReno add the `dupthresh` segments that left the network (RFC 5681
/// §3.2 step 3 writes 3·SMSS for its DupThresh of 3; ns-3's
/// `TcpClassicRecovery::EnterRecovery` inflates by the duplicate ACKs
/// counted; RFC 6582); SACK recovery starts at ssthresh (RFC 6675 §5 step
/// 4.2).
pub(crate) fn window_at_fast_retransmit(ssthresh: u64, mss: u32, dupthresh: u32, recovery: LossRecovery) -> u64 {
    match recovery {
        LossRecovery::None => mss as u64,
        LossRecovery::Reno | LossRecovery::NewReno => ssthresh + dupthresh as u64 * mss as u64,
        LossRecovery::Sack => ssthresh,
    }
}

/// Each further duplicate ACK in Reno or NewReno fast recovery inflates the
/// window by one segment (RFC 5681 §3.2 step 4); SACK recovery counts pipe
/// instead.
pub(crate) fn window_on_recovery_dupack(cwnd: u64, mss: u32, recovery: LossRecovery) -> u64 {
    match recovery {
        LossRecovery::Reno | LossRecovery::NewReno => cwnd + mss as u64,
        LossRecovery::None | LossRecovery::Sack => cwnd,
    }
}

/// A partial ACK deflates the window by the amount acknowledged and adds
/// back one SMSS if at least one SMSS was acknowledged (RFC 6582 §3.2
/// step 5).
pub(crate) fn window_on_partial_ack(cwnd: u64, acked: u64, mss: u32) -> u64 {
    let back = if acked >= mss as u64 { mss as u64 } else { 0 };
    cwnd.saturating_sub(acked) + back
}
