//! One TCP connection end, sans-IO (quinn-proto's shape).
//!
//! Before working on this file read, at least: RFC 9293 (the state machine,
//! §3.3.2 and §3.10), RFC 5681 (congestion control, duplicate ACKs, §4.2
//! ACK generation), RFC 6298 (the retransmission timer), RFC 6582
//! (NewReno), RFC 2018 and RFC 6675 (SACK and its loss recovery), RFC 7323
//! §2 (window scaling), RFC 1122 §4.2.2.17 and §4.2.3 (persist timer,
//! delayed ACKs, silly window syndrome), and seed 004 §4.2.2–4.2.3. The
//! Linux profile's parts ([`TcpConfig::linux`]) add RFC 7323 §3–4
//! (timestamps), RFC 8985 (RACK-TLP, `rack.rs` and the loss probe here),
//! RFC 6937 (PRR) and Linux's net/ipv4/tcp_input.c (quick-ACK mode, the RTT
//! samples), each cited where it is used.
//!
//! The driver calls:
//!
//! - [`Connection::handle_segment`] when a segment arrives;
//! - [`Connection::poll_transmit`] until it returns `None`, after every
//!   other call, and sends what it returns;
//! - [`Connection::poll_timeout`] to learn when to call
//!   [`Connection::handle_timeout`] (a call before that time is a no-op).
//!
//! The application calls [`Connection::send`] (bytes to send),
//! [`Connection::read`] (bytes taken from the receive buffer, which limits
//! the window) and [`Connection::close`]. Data is virtual: byte counts.
//!
//! Sequence numbers are 64-bit and never wrap in the model.

use std::collections::VecDeque;

use squall_link::{Duration, Instant};

use crate::config::{DelayedAck, LossDetection, RtoVariant, TcpConfig};
use crate::congestion::{
    AckSample, AnyCongestionControl, CaState, CongestionControl, LossRecovery, ModelAck, Prr, RateSample,
};
use crate::rtt::RttEstimator;
use crate::segment::{
    Flags, MAX_SACK_BLOCKS, MAX_SACK_BLOCKS_WITH_TIMESTAMPS, SackBlocks, Segment, TIMESTAMP_OPTION_LEN, Timestamp,
};

mod pacing;
mod rack;
mod rate;
mod rcv_space;
use pacing::Pacer;
use rack::Rack;
use rate::{DeliveryRate, TxState};
use rcv_space::ReceiveSpace;

/// Most ACKs sent at once in quick-ACK mode (`TCP_MAX_QUICKACKS`).
const MAX_QUICKACKS: u32 = 16;
/// Added to a loss probe's timeout when one segment is outstanding, for
/// the peer's delayed ACK (`TCP_RTO_MIN` in tcp_schedule_loss_probe);
/// otherwise [`rack::TIMEOUT_MIN`].
const TLP_DELAYED_ACK_ALLOWANCE: Duration = Duration::from_millis(200);

/// MSS assumed when the peer's SYN has no MSS option (RFC 9293 §3.7.1).
const DEFAULT_MSS: u32 = 536;

/// The connection states of RFC 9293 §3.3.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl State {
    /// Whether the handshake is over (RFC 9293's synchronized states).
    pub fn is_synchronized(self) -> bool {
        !matches!(self, State::Closed | State::Listen | State::SynSent | State::SynReceived)
    }
    pub fn name(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Listen => "LISTEN",
            State::SynSent => "SYN-SENT",
            State::SynReceived => "SYN-RECEIVED",
            State::Established => "ESTABLISHED",
            State::FinWait1 => "FIN-WAIT-1",
            State::FinWait2 => "FIN-WAIT-2",
            State::CloseWait => "CLOSE-WAIT",
            State::Closing => "CLOSING",
            State::LastAck => "LAST-ACK",
            State::TimeWait => "TIME-WAIT",
        }
    }
}

/// Why the application cannot send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// `close()` was called, or the connection is closed.
    Closed,
}

/// Counters of one connection end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Every segment sent, ACKs included.
    pub segments_sent: u64,
    /// Segments that carried data (retransmissions included), and their
    /// payload bytes.
    pub data_segments_sent: u64,
    pub data_bytes_sent: u64,
    /// Segments sent again (data, SYN or FIN), by any mechanism.
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    /// Retransmission timer expirations.
    pub timeouts: u64,
    /// Fast retransmits (entries into loss recovery by duplicate ACKs or
    /// the SACK scoreboard).
    pub fast_retransmits: u64,
    pub dupacks_received: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// Pure ACKs sent (no data, SYN or FIN).
    pub acks_sent: u64,
    pub segments_received: u64,
    /// Data segments received, those out of order, and those entirely
    /// duplicate.
    pub data_segments_received: u64,
    pub out_of_order_segments: u64,
    pub duplicate_segments: u64,
    /// Payload bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Payload bytes received in order.
    pub bytes_received: u64,
    /// Valid RTT samples taken.
    pub rtt_samples: u64,
    /// Tail loss probes sent (RFC 8985 §7).
    pub loss_probes: u64,
    /// Data segments acknowledged, and the sum of the times from their
    /// first transmission to the ACK that covered them, ns (seed 001 §4's
    /// packet delay).
    pub acked_segments: u64,
    pub ack_delay_sum_ns: u128,
}

/// The congestion state at one moment, for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcSnapshot {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub srtt: Option<Duration>,
    pub rttvar: Duration,
    pub rto: Duration,
    /// Bytes sent and not acknowledged (pipe during SACK recovery).
    pub in_flight: u64,
}

/// A segment sent and not yet cumulatively acknowledged.
#[derive(Clone, Copy, Debug)]
struct Sent {
    start: u64,
    /// End of its sequence space (SYN and FIN included).
    end: u64,
    syn: bool,
    fin: bool,
    first_sent: Instant,
    last_sent: Instant,
    /// Sent more than once (Karn: no RTT sample from it).
    retransmitted: bool,
    /// Retransmitted by the timer since its last (re)transmission.
    timer_retransmitted: bool,
    sacked: bool,
    lost: bool,
    /// RACK: its latest retransmission is in flight (Linux's
    /// TCPCB_SACKED_RETRANS); cleared when RACK marks it lost again.
    rack_rtx: bool,
    /// Delivery state when it was last sent, for rate samples.
    delivered: u64,
    delivered_time: Instant,
    /// The same in packets, for model-based algorithms (tcp_rate.c).
    tx: TxState,
}

impl Sent {
    fn data_len(&self) -> u64 {
        self.end - self.start - self.syn as u64 - self.fin as u64
    }
}

/// Fast recovery in progress.
#[derive(Clone, Copy, Debug)]
struct Recovery {
    kind: LossRecovery,
    /// Highest sequence number sent when recovery began (RFC 6582
    /// "recover", RFC 6675 "RecoveryPoint").
    point: u64,
    /// RFC 6675 HighRxt: end of the highest retransmitted range.
    high_rxt: u64,
    /// The first partial ACK has restarted the timer (RFC 6582 §3.2 step 5).
    partial_seen: bool,
}

/// What an ACK's SACK blocks newly covered: bytes, the newest segment
/// among them (send time and delivery state, for rate samples), and the
/// RTT of the oldest one sent only once (Linux's `sack_rtt_us`).
#[derive(Clone, Copy, Debug, Default)]
struct Sacked {
    bytes: u64,
    newest: Option<(Instant, u64, Instant)>,
    oldest_rtt: Option<Duration>,
}

/// The timestamp clock (RFC 7323 §5.4): milliseconds, as Linux's
/// `TCP_TS_HZ`, plus one so that no TSval is 0 (Linux ignores a zero echo).
fn ts_clock(now: Instant) -> u32 {
    ((now.as_nanos() / 1_000_000) as u32).wrapping_add(1)
}

/// A block of data received out of order, with when it last grew.
#[derive(Clone, Copy, Debug)]
struct OooBlock {
    start: u64,
    end: u64,
    touched: u64,
}

/// One end of a TCP connection.
#[derive(Clone, Debug)]
pub struct Connection {
    config: TcpConfig,
    state: State,
    /// Reset by the peer (RST received).
    reset: bool,

    // --- send side (RFC 9293 §3.3.1) ---
    iss: u64,
    snd_una: u64,
    /// Next sequence number to send; below `snd_max` only while going back
    /// after a timeout.
    snd_nxt: u64,
    /// Highest sequence number sent, plus one.
    snd_max: u64,
    /// The peer's window, bytes (scaled).
    snd_wnd: u64,
    snd_wl1: u64,
    snd_wl2: u64,
    max_snd_wnd: u64,
    snd_mss: u32,
    /// Shift applied to the peer's window fields.
    snd_shift: u8,
    sack_ok: bool,
    /// Application bytes handed to `send`, as the sequence number after the
    /// last of them.
    app_end: u64,
    /// `close()` called: send a FIN after the data.
    fin_queued: bool,
    sent: VecDeque<Sent>,
    cc: AnyCongestionControl,
    rtt: RttEstimator,
    rto_at: Option<Instant>,
    dupacks: u32,
    /// Bytes sent beyond the congestion window by limited transmit since
    /// the last new ACK (left out of ssthresh, RFC 5681 §3.2 step 2).
    limited_sent: u64,
    recovery: Option<Recovery>,
    /// NewReno/Tahoe "recover": no new fast retransmit until an ACK
    /// passes it (RFC 6582 §3.2 step 2).
    recover: u64,
    /// A segment to retransmit now whatever the window (fast retransmit,
    /// partial ACK).
    retransmit_now: Option<u64>,
    /// A SYN (or SYN-ACK) to send, and whether one was sent before.
    syn_pending: bool,
    syn_transmitted: bool,
    /// The peer's SYN offered window scaling.
    peer_window_scale: bool,
    persist_at: Option<Instant>,
    persist_backoff: u32,
    probe_pending: bool,
    /// End of the byte of an unanswered zero-window probe.
    probe_end: Option<u64>,
    /// Bytes delivered (acknowledged or SACKed) and when the count last grew.
    delivered: u64,
    delivered_time: Instant,
    /// Earliest time the pacer lets the next segment go.
    pace_at: Option<Instant>,
    pacer: Pacer,
    /// Delivery-rate samples in packets (tcp_rate.c), and whether the
    /// connection is in Linux's Loss state (after a timeout, until what
    /// was outstanding then is acknowledged), for model-based algorithms.
    rate: DeliveryRate,
    in_loss: bool,
    /// RACK-TLP (RFC 8985): the RACK state, the reordering timer, the
    /// loss probe's timer, a probe to send, and the probe outstanding
    /// (TLPRxtOut's end, `tlp_high_seq`) with whether it was a
    /// retransmission.
    rack: Rack,
    rack_at: Option<Instant>,
    tlp_at: Option<Instant>,
    tlp_pending: bool,
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    /// Proportional rate reduction during SACK recovery (RFC 6937).
    prr: Option<Prr>,
    /// Timestamps (RFC 7323 §3) are in use, and TS.Recent (§4.3).
    ts_ok: bool,
    ts_recent: u32,

    // --- receive side ---
    irs: u64,
    rcv_nxt: u64,
    /// Right edge of the window last advertised.
    rcv_adv: u64,
    /// Sequence number of the next byte the application reads.
    rcv_read: u64,
    rcv_buf: u64,
    rcv_shift: u8,
    /// Largest payload received so far (RFC 1122's "full-sized").
    rcv_mss: u32,
    ooo: Vec<OooBlock>,
    ooo_clock: u64,
    /// Where the peer's FIN is, once seen.
    fin_at: Option<u64>,
    fin_received: bool,
    /// `rcv_nxt` in the last ACK sent.
    last_ack_sent: u64,
    ack_now: bool,
    delack_at: Option<Instant>,
    /// Linux's delayed-ACK engine: quick ACKs left to send at once
    /// (`icsk_ack.quick`), when data last arrived (`lrcvtime`), and the
    /// adaptive ACK timeout (`ato`; zero before the first data).
    quick_acks: u32,
    last_data_at: Option<Instant>,
    ato: Duration,
    /// Linux's receive-window growth (`rcv_ssthresh`, dynamic
    /// right-sizing), from the first data on, when configured.
    rcv_space: Option<ReceiveSpace>,
    time_wait_at: Option<Instant>,

    stats: TcpStats,
}

impl Connection {
    fn new(config: TcpConfig, state: State) -> Self {
        let iss = config.iss;
        let rtt = RttEstimator::new(
            config.rto_variant,
            config.min_rto,
            config.max_rto,
            config.initial_rto,
            config.granularity,
            config.max_backoff,
        );
        let cc = AnyCongestionControl::new(&config, config.mss);
        let rcv_buf = if config.window_scaling { config.rcv_buf } else { config.rcv_buf.min(65_535) };
        Connection {
            state,
            reset: false,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            max_snd_wnd: 0,
            snd_mss: config.mss,
            snd_shift: 0,
            sack_ok: false,
            app_end: iss + 1,
            fin_queued: false,
            sent: VecDeque::new(),
            cc,
            rtt,
            rto_at: None,
            dupacks: 0,
            limited_sent: 0,
            recovery: None,
            recover: iss,
            retransmit_now: None,
            syn_pending: false,
            syn_transmitted: false,
            peer_window_scale: false,
            persist_at: None,
            persist_backoff: 0,
            probe_pending: false,
            probe_end: None,
            delivered: 0,
            delivered_time: Instant::ZERO,
            pace_at: None,
            pacer: Pacer::default(),
            rate: DeliveryRate::default(),
            in_loss: false,
            rack: Rack::default(),
            rack_at: None,
            tlp_at: None,
            tlp_pending: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            prr: None,
            ts_ok: false,
            ts_recent: 0,
            irs: 0,
            rcv_nxt: 0,
            rcv_adv: 0,
            rcv_read: 0,
            rcv_buf,
            rcv_shift: 0,
            rcv_mss: config.mss,
            ooo: Vec::new(),
            ooo_clock: 0,
            fin_at: None,
            fin_received: false,
            last_ack_sent: 0,
            ack_now: false,
            delack_at: None,
            quick_acks: 0,
            rcv_space: None,
            last_data_at: None,
            ato: Duration::ZERO,
            time_wait_at: None,
            stats: TcpStats::default(),
            config,
        }
    }

    /// An active open (RFC 9293 §3.10.1): the connection sends a SYN at the
    /// next [`Self::poll_transmit`].
    pub fn connect(config: TcpConfig, now: Instant) -> Self {
        let mut c = Connection::new(config, State::SynSent);
        c.queue_syn(now);
        c
    }

    /// A passive open: waits in LISTEN for a SYN.
    pub fn listen(config: TcpConfig) -> Self {
        Connection::new(config, State::Listen)
    }

    fn queue_syn(&mut self, now: Instant) {
        self.sent.push_back(Sent {
            start: self.iss,
            end: self.iss + 1,
            syn: true,
            fin: false,
            first_sent: now,
            last_sent: now,
            retransmitted: false,
            timer_retransmitted: false,
            sacked: false,
            lost: false,
            rack_rtx: false,
            delivered: 0,
            delivered_time: now,
            tx: TxState::default(),
        });
        self.snd_max = self.iss + 1;
        self.snd_nxt = self.iss + 1;
        self.syn_pending = true;
    }

    // ------------------------------------------------------------------
    // Application interface
    // ------------------------------------------------------------------

    /// Queues `bytes` more bytes for sending.
    pub fn send(&mut self, bytes: u64) -> Result<(), SendError> {
        let open = matches!(self.state, State::SynSent | State::SynReceived | State::Established | State::CloseWait);
        if self.fin_queued || !open {
            return Err(SendError::Closed);
        }
        if self.cc.is_model_based() {
            // `tcp_rate_check_app_limited`, at the application's write.
            let unsent_below_mss = self.app_end.saturating_sub(self.snd_max) < self.snd_mss as u64;
            let cwnd = self.cc.window() / self.snd_mss.max(1) as u64;
            let lost_unrepaired = self.sent.iter().any(|s| s.lost && !s.rack_rtx && !s.sacked);
            self.rate.check_app_limited(unsent_below_mss, self.packets_in_flight(), cwnd, lost_unrepaired);
        }
        self.app_end += bytes;
        Ok(())
    }

    /// Takes up to `max` bytes from the receive buffer; returns how many.
    /// Opening the window may make an ACK due (a window update).
    pub fn read(&mut self, max: u64) -> u64 {
        let n = self.readable().min(max);
        if n == 0 {
            return 0;
        }
        let offered = self.rcv_adv.saturating_sub(self.rcv_nxt);
        self.rcv_read += n;
        if self.state.is_synchronized() || self.state == State::SynReceived {
            // Send a window update when the window would at least double
            // and grow by a segment or half the buffer (RFC 1122
            // §4.2.3.3's receiver SWS avoidance; Linux's rule).
            let window = self.rcv_window();
            if window > offered && window >= 2 * offered {
                self.ack_now = true;
            }
        }
        n
    }

    /// Bytes received in order so far (read or not).
    pub fn received_total(&self) -> u64 {
        self.stats.bytes_received
    }

    /// Drops the queued bytes not sent yet (an application that stops
    /// writing); what was sent is still delivered.
    pub fn discard_unsent(&mut self) {
        let sent = self.snd_max.max(self.iss + 1).min(self.app_end);
        if !self.fin_queued {
            self.app_end = sent;
        }
    }

    /// Bytes received in order and not read yet.
    pub fn readable(&self) -> u64 {
        self.data_end().saturating_sub(self.rcv_read)
    }

    /// No more data will be sent after what is queued: a FIN follows it.
    /// In SYN-SENT with nothing queued, or in LISTEN, the connection just
    /// closes (RFC 9293 §3.10.4); otherwise the FIN is queued behind the
    /// data, to be sent once ESTABLISHED.
    pub fn close(&mut self) {
        match self.state {
            State::Listen => self.enter_closed(),
            State::SynSent if self.app_end == self.iss + 1 => self.enter_closed(),
            State::Closed | State::TimeWait => {}
            _ => self.fin_queued = true,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// Whether the connection reached CLOSED (or was reset).
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    pub fn was_reset(&self) -> bool {
        self.reset
    }
    /// Whether the peer's FIN has arrived (all its data is in).
    pub fn peer_closed(&self) -> bool {
        self.fin_received
    }
    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }
    pub fn config(&self) -> &TcpConfig {
        &self.config
    }
    /// The sender's MSS once the handshake is over.
    pub fn send_mss(&self) -> u32 {
        self.snd_mss
    }
    /// Bytes queued by `send` and not yet acknowledged.
    pub fn unacked(&self) -> u64 {
        self.app_end.saturating_sub(self.snd_una.max(self.iss + 1))
    }
    /// Every byte queued has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.unacked() == 0
    }

    pub fn snapshot(&self) -> CcSnapshot {
        let in_flight = match self.recovery {
            Some(r) if r.kind == LossRecovery::Sack => self.in_flight(r),
            _ => self.snd_max - self.snd_una,
        };
        CcSnapshot {
            cwnd: self.cwnd(),
            ssthresh: self.cc.ssthresh(),
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            rto: self.rtt.rto(),
            in_flight,
        }
    }

    // ------------------------------------------------------------------
    // Timers
    // ------------------------------------------------------------------

    /// When [`Self::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let pace = self.pace_at.filter(|_| self.has_data_to_send());
        [self.rto_at, self.delack_at, self.persist_at, self.time_wait_at, pace, self.rack_at, self.tlp_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.time_wait_at.is_some_and(|t| t <= now) {
            self.time_wait_at = None;
            self.enter_closed();
            return;
        }
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.ack_now = true;
            if self.config.quick_ack {
                // `tcp_delack_timer_handler`: "Delayed ACK missed: inflate
                // ATO", up to the RTO.
                self.ato = self.ato.saturating_mul(2).min(self.rtt.rto());
            }
        }
        if self.rack_at.is_some_and(|t| t <= now) {
            self.rack_at = None;
            self.on_reordering_timeout(now);
        }
        if self.tlp_at.is_some_and(|t| t <= now) {
            self.tlp_at = None;
            // RFC 8985 §7.3: the probe goes at the next poll_transmit.
            if self.recovery.is_none() && self.snd_una < self.snd_max && self.tlp_high_seq.is_none() {
                self.tlp_pending = true;
            }
        }
        if self.rto_at.is_some_and(|t| t <= now) && !self.tlp_pending {
            self.rto_at = None;
            self.on_retransmission_timeout(now);
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            if self.snd_wnd == 0 && self.has_new_data() {
                self.probe_pending = true;
                self.persist_backoff = (self.persist_backoff + 1).min(16);
            }
        }
        if self.pace_at.is_some_and(|t| t <= now) {
            self.pace_at = None;
        }
    }

    fn persist_interval(&self) -> Duration {
        // The normal exponential backoff, bounded to 5..60 s (seed 004
        // §4.2.3, RFC 1122 §4.2.2.17).
        let base = self.rtt.base_rto().saturating_mul(1u64 << self.persist_backoff.min(16));
        base.clamp(self.config.persist_min, self.config.persist_max)
    }

    fn on_retransmission_timeout(&mut self, now: Instant) {
        if self.snd_una >= self.snd_max || self.sent.is_empty() {
            return;
        }
        self.stats.timeouts += 1;
        let repeat = self.sent.front().is_some_and(|s| s.timer_retransmitted);
        self.rtt.back_off();
        if !self.state.is_synchronized() {
            // SYN or SYN-ACK lost: send it again.
            self.syn_pending = true;
            if let Some(s) = self.sent.front_mut() {
                s.timer_retransmitted = true;
            }
            return;
        }
        let flight = self.snd_max - self.snd_una;
        if self.cc.is_model_based() {
            // `tcp_enter_loss` marks everything outstanding lost.
            self.rate.lost += self.sent.iter().filter(|s| !s.sacked && !s.lost).count() as u64;
            self.in_loss = true;
        }
        self.cc.on_timeout(now, flight, self.snd_mss, repeat);
        self.recovery = None;
        self.prr = None;
        self.rack_at = None;
        self.tlp_at = None;
        self.tlp_pending = false;
        self.tlp_high_seq = None;
        self.retransmit_now = None;
        self.dupacks = 0;
        self.limited_sent = 0;
        self.recover = self.snd_max;
        // Go back to the first unacknowledged segment (BSD, Fall and Floyd
        // 1996); SACKed segments are skipped.
        self.snd_nxt = self.snd_una;
        if let Some(s) = self.sent.front_mut() {
            s.timer_retransmitted = true;
        }
    }

    fn arm_rto(&mut self, now: Instant) {
        self.rto_at = Some(now + self.rtt.rto());
    }

    // ------------------------------------------------------------------
    // Incoming segments (RFC 9293 §3.10.7)
    // ------------------------------------------------------------------

    /// Processes a segment that arrived at `now`.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        self.stats.segments_received += 1;
        match self.state {
            State::Closed => {}
            State::Listen => self.on_segment_listen(now, seg),
            State::SynSent => self.on_segment_syn_sent(now, seg),
            _ => self.on_segment_synchronized(now, seg),
        }
    }

    fn on_segment_listen(&mut self, now: Instant, seg: &Segment) {
        if seg.rst() || seg.has_ack() || !seg.syn() {
            return;
        }
        self.take_syn_options(seg);
        self.irs = seg.seq;
        self.rcv_nxt = seg.seq + 1;
        self.rcv_read = self.rcv_nxt;
        self.last_ack_sent = self.rcv_nxt;
        self.snd_wnd = seg.window as u64;
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = seg.seq;
        self.state = State::SynReceived;
        self.queue_syn(now);
        // Data on the SYN is not taken (no TFO).
    }

    fn on_segment_syn_sent(&mut self, now: Instant, seg: &Segment) {
        let ack_ok = seg.has_ack() && seg.ack == self.iss + 1;
        if seg.has_ack() && !ack_ok {
            return;
        }
        if seg.rst() {
            if ack_ok {
                self.reset = true;
                self.enter_closed();
            }
            return;
        }
        if !seg.syn() {
            return;
        }
        self.take_syn_options(seg);
        self.irs = seg.seq;
        self.rcv_nxt = seg.seq + 1;
        self.rcv_read = self.rcv_nxt;
        self.snd_wl1 = seg.seq;
        self.snd_wl2 = seg.ack;
        // The window of a SYN is never scaled (RFC 7323 §2.2).
        self.snd_wnd = seg.window as u64;
        self.max_snd_wnd = self.snd_wnd;
        if ack_ok {
            self.ack_syn(now);
            self.state = State::Established;
            self.ack_now = true;
        } else {
            // Simultaneous open.
            self.state = State::SynReceived;
            self.syn_pending = true;
        }
    }

    /// Options of the peer's SYN: MSS, window scale, SACK-permitted.
    fn take_syn_options(&mut self, seg: &Segment) {
        let peer_mss = seg.mss.map_or(DEFAULT_MSS, u32::from).max(1);
        self.snd_mss = self.config.mss.min(peer_mss);
        self.rcv_mss = self.snd_mss;
        self.peer_window_scale = seg.window_scale.is_some();
        match (self.config.window_scaling, seg.window_scale) {
            (true, Some(shift)) => {
                self.snd_shift = shift.min(14);
                self.rcv_shift = self.config.window_shift();
            }
            _ => {
                self.snd_shift = 0;
                self.rcv_shift = 0;
                self.rcv_buf = self.rcv_buf.min(65_535);
            }
        }
        self.sack_ok = self.config.sack && seg.sack_permitted;
        // RFC 7323 §3.2: timestamps on every segment once both SYNs carry
        // them; Linux takes their 12 bytes out of the payload
        // (tcp_current_mss).
        self.ts_ok = self.config.timestamps && seg.timestamp.is_some();
        if let Some(ts) = seg.timestamp.filter(|_| self.ts_ok) {
            self.ts_recent = ts.value;
            self.snd_mss = self.snd_mss.saturating_sub(TIMESTAMP_OPTION_LEN).max(1);
            self.rcv_mss = self.snd_mss;
        }
        self.cc = AnyCongestionControl::new(&self.config, self.snd_mss);
    }

    /// Our SYN was acknowledged: take the RTT sample and drop it from the
    /// retransmission queue.
    fn ack_syn(&mut self, now: Instant) {
        if let Some(syn) = self.sent.pop_front()
            && !syn.retransmitted
        {
            self.rtt.sample_at(now - syn.first_sent, self.iss + 1, self.iss + 1);
            self.rate.on_rtt(now - syn.first_sent);
            self.stats.rtt_samples += 1;
        }
        self.snd_una = self.iss + 1;
        self.syn_pending = false;
        self.rto_at = None;
        self.delivered_time = now;
    }

    fn on_segment_synchronized(&mut self, now: Instant, seg: &Segment) {
        // A retransmitted SYN while our SYN-ACK is unacknowledged: the
        // SYN-ACK was lost, send it again.
        if self.state == State::SynReceived && seg.syn() && !seg.has_ack() && seg.seq == self.irs {
            self.syn_pending = true;
            return;
        }
        if !self.acceptable(seg) {
            if !seg.rst() {
                if seg.len > 0 {
                    self.stats.duplicate_segments += 1;
                    if self.config.quick_ack {
                        // `tcp_send_dupack`: an old segment (the sender's
                        // RTO) enters quick-ACK mode.
                        self.incr_quickack();
                    }
                }
                self.ack_now = true;
            }
            if self.state == State::TimeWait && seg.fin() {
                self.time_wait_at = Some(now + self.config.time_wait);
            }
            return;
        }
        if seg.rst() {
            self.reset = true;
            self.enter_closed();
            return;
        }
        if let Some(ts) = seg.timestamp.filter(|_| self.ts_ok)
            && seg.seq <= self.last_ack_sent
            && ts.value >= self.ts_recent
        {
            // RFC 7323 §4.3: TS.Recent from the segment the next ACK covers.
            self.ts_recent = ts.value;
        }
        if seg.syn() {
            // A SYN in a synchronized state: challenge ACK (RFC 5961 §4).
            self.ack_now = true;
            return;
        }
        if !seg.has_ack() {
            return;
        }
        if self.state == State::SynReceived {
            if seg.ack <= self.iss || seg.ack > self.snd_max {
                return;
            }
            self.ack_syn(now);
            self.state = State::Established;
            self.snd_wnd = (seg.window as u64) << self.snd_shift;
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = seg.ack;
        }
        if !self.on_ack(now, seg) {
            return;
        }
        // Our FIN acknowledged?
        let fin_acked = self.fin_queued && self.snd_una == self.app_end + 1;
        match self.state {
            State::FinWait1 if fin_acked => self.state = State::FinWait2,
            State::Closing if fin_acked => self.enter_time_wait(now),
            State::LastAck if fin_acked => {
                self.enter_closed();
                return;
            }
            _ => {}
        }
        if seg.len > 0 && matches!(self.state, State::Established | State::FinWait1 | State::FinWait2) {
            self.on_data(now, seg);
        }
        if seg.fin() {
            self.fin_at = Some(seg.seq + seg.len as u64);
        }
        if let Some(fin) = self.fin_at
            && !self.fin_received
            && self.rcv_nxt == fin
        {
            self.fin_received = true;
            self.rcv_nxt += 1;
            self.ack_now = true;
            match self.state {
                State::Established => self.state = State::CloseWait,
                State::FinWait1 => self.state = State::Closing,
                State::FinWait2 => self.enter_time_wait(now),
                _ => {}
            }
        }
    }

    /// RFC 9293 §3.10.7.4's acceptability test, against the right edge we
    /// advertised.
    fn acceptable(&self, seg: &Segment) -> bool {
        let len = seg.seq_len();
        let wnd = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let (start, nxt) = (seg.seq, self.rcv_nxt);
        match (len, wnd) {
            (0, 0) => start == nxt,
            (0, _) => nxt <= start && start < nxt + wnd,
            (_, 0) => false,
            (_, _) => {
                let end = start + len - 1;
                (nxt <= start && start < nxt + wnd) || (nxt <= end && end < nxt + wnd)
            }
        }
    }

    /// The ACK field and window of `seg` (RFC 9293 §3.10.7.4, fifth check;
    /// RFC 5681 §3.2 and §2 for duplicate ACKs). Returns false if the
    /// segment is to be dropped.
    fn on_ack(&mut self, now: Instant, seg: &Segment) -> bool {
        let ack = seg.ack;
        if let Some(end) = self.probe_end.take()
            && ack == end
            && ack == self.snd_max + 1
        {
            // The zero-window probe's byte was taken: it counts as sent
            // (no RTT sample from it).
            self.sent.push_back(Sent {
                start: self.snd_max,
                end,
                syn: false,
                fin: false,
                first_sent: now,
                last_sent: now,
                retransmitted: true,
                timer_retransmitted: false,
                sacked: false,
                lost: false,
                rack_rtx: false,
                delivered: self.delivered,
                delivered_time: self.delivered_time,
                tx: TxState::default(),
            });
            self.snd_max = end;
            self.snd_nxt = self.snd_nxt.max(end);
        }
        if ack > self.snd_max {
            // Acknowledges something not sent yet.
            self.ack_now = true;
            return false;
        }
        let window = (seg.window as u64) << self.snd_shift;
        let window_changed = window != self.snd_wnd;
        if self.snd_wl1 < seg.seq || (self.snd_wl1 == seg.seq && self.snd_wl2 <= ack) {
            self.snd_wnd = window;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
            self.snd_wl1 = seg.seq;
            self.snd_wl2 = ack;
        }
        if self.snd_wnd > 0 {
            self.persist_at = None;
            self.persist_backoff = 0;
            self.probe_pending = false;
        }
        let prior_in_flight = if self.cc.is_model_based() { self.packets_in_flight() } else { 0 };
        let sacked = if self.sack_ok { self.take_sack(now, seg) } else { Sacked::default() };
        let una_before = self.snd_una;
        let mut lost_bytes = 0;
        self.rate.ack_rtt = sacked.oldest_rtt;
        let mut delivered = sacked.bytes;
        if ack > self.snd_una {
            delivered += self.on_new_ack(now, ack, &sacked, seg.timestamp.filter(|_| self.ts_ok));
        } else {
            if let Some(r) = sacked.oldest_rtt.filter(|_| self.config.rto_variant == RtoVariant::Linux) {
                // Linux takes an RTT sample from newly SACKed data too
                // (tcp_ack_update_rtt's sack_rtt_us).
                self.rtt.sample_at(r, self.snd_una, self.snd_max);
                self.stats.rtt_samples += 1;
            }
            if ack == self.snd_una
                && self.snd_max > self.snd_una
                && seg.len == 0
                && !seg.syn()
                && !seg.fin()
                && !window_changed
            {
                self.on_duplicate_ack(now, sacked.bytes > 0);
            }
        }
        if self.rack_on() {
            self.on_tlp_ack(now, ack, ack > una_before);
            let newly_lost = if delivered > 0 { self.rack_detect_loss(now) } else { 0 };
            lost_bytes = newly_lost;
            if newly_lost > 0 && self.recovery.is_none() && self.snd_una >= self.recover {
                self.enter_loss_recovery(now, LossRecovery::Sack);
            }
            self.prr_on_ack(delivered, ack > una_before, newly_lost > 0);
            self.schedule_tlp(now, ack > una_before);
        } else {
            self.prr_on_ack(delivered, ack > una_before, false);
        }
        if self.cc.is_model_based() {
            self.model_ack(now, prior_in_flight, lost_bytes);
        }
        true
    }

    /// Linux's `cong_control` step of `tcp_ack` for a model-based
    /// algorithm: the rate sample (`tcp_rate_gen`) and the ACK's counts.
    fn model_ack(&mut self, now: Instant, prior_in_flight: u64, lost_bytes: u64) {
        let mss = self.snd_mss.max(1);
        let rtt = self.rate.ack_rtt.take();
        if let Some(r) = rtt {
            self.rate.on_rtt(r);
        }
        let (acked_sacked, sample) = self.rate.generate(now, lost_bytes.div_ceil(mss as u64));
        if self.in_loss && self.snd_una >= self.recover {
            self.in_loss = false;
        }
        let ca_state = match (self.recovery, self.in_loss) {
            (Some(_), _) => CaState::Recovery,
            (None, true) => CaState::Loss,
            (None, false) => CaState::Open,
        };
        let in_flight = self.packets_in_flight();
        let ack = ModelAck {
            rate: sample,
            acked_sacked,
            losses: lost_bytes.div_ceil(mss as u64),
            prior_in_flight,
            in_flight,
            delivered: self.rate.delivered,
            lost: self.rate.lost,
            delivered_time: self.rate.delivered_time.unwrap_or(now),
            rtt,
            srtt: self.rtt.srtt(),
            min_rtt: self.rate.min_rtt,
            maybe_delayed: acked_sacked == 1,
            ca_state,
            pacing_wait: self.pacer.next_departure(now).map_or(Duration::ZERO, |t| t - now),
            mss,
        };
        self.cc.on_model_ack(now, &ack);
        if self.cc.wants_app_limited() {
            self.rate.set_app_limited(in_flight);
        }
    }

    /// The delivery state a segment sent now carries, for model-based
    /// algorithms only: the others never read it, and the sender's hot
    /// path skips it for them.
    fn tx_state(&mut self, now: Instant, nothing_outstanding: bool) -> TxState {
        if self.cc.is_model_based() { self.rate.on_send(now, nothing_outstanding) } else { TxState::default() }
    }

    /// Packets in flight as Linux counts them (`tcp_packets_in_flight`):
    /// outstanding, less SACKed and lost, plus retransmissions in flight;
    /// after a timeout, what lies beyond the go-back point is lost.
    fn packets_in_flight(&self) -> u64 {
        let resend_from = (self.snd_nxt < self.snd_max).then_some(self.snd_nxt);
        self.sent
            .iter()
            .filter(|s| !s.sacked && resend_from.is_none_or(|n| s.start < n))
            .map(|s| if s.lost { s.rack_rtx as u64 } else { 1 })
            .sum()
    }

    /// Marks SACKed segments (and tells RACK, RFC 8985 §6.2 step 2).
    fn take_sack(&mut self, now: Instant, seg: &Segment) -> Sacked {
        let mut out = Sacked::default();
        let mut oldest_sent: Option<Instant> = None;
        let rack = &mut self.rack;
        let mut rate = self.cc.is_model_based().then_some(&mut self.rate);
        for &(left, right) in seg.sack.as_slice() {
            if right <= self.snd_una || left >= right {
                continue;
            }
            let first = self.sent.partition_point(|s| s.end <= left);
            for s in self.sent.range_mut(first..) {
                if s.start >= right {
                    break;
                }
                if !s.sacked && s.start >= left && s.end <= right {
                    s.sacked = true;
                    out.bytes += s.end - s.start;
                    if out.newest.is_none_or(|(t, _, _)| s.last_sent > t) {
                        out.newest = Some((s.last_sent, s.delivered, s.delivered_time));
                    }
                    if !s.retransmitted && oldest_sent.is_none_or(|t| s.last_sent < t) {
                        oldest_sent = Some(s.last_sent);
                    }
                    rack.on_delivered(now, s.last_sent, s.end, s.retransmitted);
                    if let Some(rate) = rate.as_deref_mut() {
                        rate.on_delivered(&mut s.tx, s.last_sent, s.end, true);
                    }
                }
            }
        }
        out.oldest_rtt = oldest_sent.map(|t| now - t);
        out
    }

    /// Returns the bytes newly delivered by the cumulative ACK (not SACKed
    /// before).
    fn on_new_ack(&mut self, now: Instant, ack: u64, sacked: &Sacked, ts: Option<Timestamp>) -> u64 {
        let flight_before = self.snd_max - self.snd_una;
        let acked = ack - self.snd_una;
        let mut rtt_sample = None;
        // Linux (tcp_clean_rtx_queue): the sample is from the oldest
        // segment acknowledged (`first_ackt`), and none if any of them was
        // retransmitted.
        let (mut oldest_rtt, mut any_retransmitted) = (None, false);
        let mut newest = sacked.newest;
        let mut newly_delivered = 0;
        let mut data_acked = 0;
        let model_based = self.cc.is_model_based();
        while let Some(front) = self.sent.front_mut() {
            if front.end <= ack {
                let mut s = self.sent.pop_front().expect("front exists");
                if !s.sacked {
                    newly_delivered += s.end - s.start;
                    self.rack.on_delivered(now, s.last_sent, s.end, s.retransmitted);
                    if model_based {
                        self.rate.on_delivered(&mut s.tx, s.last_sent, s.end, false);
                    }
                }
                data_acked += s.data_len();
                if s.data_len() > 0 {
                    self.stats.acked_segments += 1;
                    self.stats.ack_delay_sum_ns += (now - s.first_sent).as_nanos() as u128;
                }
                // Karn's rule: only segments sent once give a sample; the
                // newest acknowledged one is the least delayed by the ACK.
                rtt_sample = if s.retransmitted { None } else { Some(now - s.last_sent) };
                any_retransmitted |= s.retransmitted;
                if !s.retransmitted && oldest_rtt.is_none() {
                    oldest_rtt = Some(now - s.last_sent);
                }
                if newest.is_none_or(|(t, _, _)| s.last_sent > t) {
                    newest = Some((s.last_sent, s.delivered, s.delivered_time));
                }
            } else {
                if front.start < ack {
                    // Partly acknowledged (the receiver trimmed it).
                    let part = ack - front.start;
                    newly_delivered += part;
                    data_acked += part;
                    front.start = ack;
                }
                break;
            }
        }
        self.stats.bytes_acked += data_acked;
        // RFC 7323 §4: the echoed timestamp times the segment that caused
        // the ACK, retransmitted or not (millisecond clock, at least 1 ms
        // as Linux rounds it).
        let ts_rtt =
            ts.filter(|t| t.echo != 0).map(|t| Duration::from_millis(ts_clock(now).wrapping_sub(t.echo).max(1) as u64));
        let estimator_sample = if self.config.rto_variant == RtoVariant::Linux {
            let seq = if any_retransmitted { None } else { oldest_rtt };
            seq.or(sacked.oldest_rtt).or(ts_rtt)
        } else {
            rtt_sample.or(ts_rtt)
        };
        let ack_rtt = rtt_sample.or(ts_rtt);
        self.rate.ack_rtt = ack_rtt;
        let delivered_now = sacked.bytes + newly_delivered;
        self.delivered += delivered_now;
        self.delivered_time = now;
        let rate =
            newest.map(|(_, delivered, at)| RateSample { delivered: self.delivered - delivered, interval: now - at });
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        if let Some(r) = estimator_sample {
            self.rtt.sample_at(r, self.snd_una, self.snd_max);
            self.stats.rtt_samples += 1;
        }
        self.dupacks = 0;
        self.limited_sent = 0;
        let mss = self.snd_mss;
        match self.recovery {
            None => {
                let sample = AckSample {
                    bytes_acked: acked,
                    delivered: delivered_now,
                    rtt: ack_rtt,
                    srtt: self.rtt.srtt(),
                    flight_size: flight_before,
                    mss,
                    rate,
                    snd_una: self.snd_una,
                    snd_nxt: self.snd_max,
                };
                self.cc.on_ack(now, &sample);
            }
            Some(rec) => {
                let flight = self.snd_max - self.snd_una;
                match rec.kind {
                    LossRecovery::Reno => {
                        self.cc.on_recovery_end(now, flight, mss, rec.kind);
                        self.recovery = None;
                    }
                    LossRecovery::NewReno | LossRecovery::Sack if ack >= rec.point => {
                        self.cc.on_recovery_end(now, flight, mss, rec.kind);
                        self.recovery = None;
                        self.prr = None;
                    }
                    LossRecovery::NewReno => {
                        // Partial ACK: the next hole is lost too.
                        self.retransmit_now = Some(self.snd_una);
                        self.cc.on_partial_ack(now, acked, mss);
                        if !rec.partial_seen {
                            self.arm_rto(now);
                        }
                        if let Some(r) = &mut self.recovery {
                            r.partial_seen = true;
                        }
                    }
                    LossRecovery::Sack => {
                        if let Some(r) = &mut self.recovery {
                            r.high_rxt = r.high_rxt.max(self.snd_una);
                        }
                    }
                    LossRecovery::None => self.recovery = None,
                }
            }
        }
        if self.sack_ok && !self.rack_on() {
            self.mark_lost();
        }
        // RFC 6298 §5.2–5.3.
        if self.snd_una >= self.snd_max {
            self.rto_at = None;
        } else if !matches!(self.recovery, Some(r) if r.kind == LossRecovery::NewReno) {
            self.arm_rto(now);
        }
        newly_delivered
    }

    fn on_duplicate_ack(&mut self, now: Instant, sacked_more: bool) {
        self.dupacks += 1;
        self.stats.dupacks_received += 1;
        let mss = self.snd_mss;
        let kind = self.cc.recovery(self.sack_ok);
        if let Some(rec) = self.recovery {
            self.cc.on_recovery_dupack(now, mss, rec.kind);
            if rec.kind == LossRecovery::Sack && !self.rack_on() {
                self.mark_lost();
            }
            return;
        }
        if self.rack_on() {
            // RACK alone decides what is lost (RFC 8985 §6; Linux's
            // tcp_time_to_recover with RACK counts no duplicate ACKs).
            return;
        }
        let _ = sacked_more;
        if kind == LossRecovery::Sack {
            self.mark_lost();
        }
        let threshold_reached = self.dupacks == self.config.dupack_threshold
            || (kind == LossRecovery::Sack && self.sent.front().is_some_and(|s| s.lost));
        // Only once per window of data (RFC 6582 §3.2 step 2; RFC 6675
        // §5 uses RecoveryPoint the same way). Reno per RFC 5681 has no
        // such guard.
        let guarded = kind != LossRecovery::Reno && self.snd_una < self.recover;
        if !threshold_reached || guarded {
            return;
        }
        self.enter_loss_recovery(now, kind);
    }

    fn enter_loss_recovery(&mut self, now: Instant, kind: LossRecovery) {
        let mss = self.snd_mss;
        let flight = self.snd_max - self.snd_una - self.limited_sent;
        let prior_cwnd = self.cc.window();
        self.stats.fast_retransmits += 1;
        self.cc.on_fast_retransmit(now, flight, mss, self.config.dupack_threshold, kind);
        self.recover = self.snd_max;
        self.tlp_at = None;
        self.tlp_pending = false;
        match kind {
            LossRecovery::None => {
                // Tahoe: go back to the lost segment with a window of one.
                self.snd_nxt = self.snd_una;
            }
            _ => {
                self.recovery =
                    Some(Recovery { kind, point: self.snd_max, high_rxt: self.snd_una, partial_seen: false });
                if !(kind == LossRecovery::Sack && self.rack_on()) {
                    self.retransmit_now = Some(self.snd_una);
                }
                if kind == LossRecovery::Sack && self.config.prr && !self.cc.is_model_based() {
                    self.prr = Some(Prr::new(prior_cwnd, self.cc.ssthresh()));
                }
            }
        }
        self.arm_rto(now);
    }

    /// RFC 6675 §4 IsLost over the whole scoreboard: a segment is lost when
    /// DupThresh segments, or more than (DupThresh − 1)·SMSS bytes, above it
    /// are SACKed.
    fn mark_lost(&mut self) {
        let threshold = self.config.dupack_threshold as u64;
        let byte_limit = (threshold - 1) * self.snd_mss as u64;
        let (mut segments, mut bytes) = (0u64, 0u64);
        for s in self.sent.iter_mut().rev() {
            if s.sacked {
                segments += 1;
                bytes += s.end - s.start;
            } else if segments >= threshold || bytes > byte_limit {
                s.lost = true;
            }
        }
    }

    /// RFC 6675 §4 SetPipe: unSACKed bytes not deemed lost, plus bytes
    /// retransmitted (below HighRxt).
    fn pipe(&self, high_rxt: u64) -> u64 {
        self.sent
            .iter()
            .filter(|s| !s.sacked)
            .map(|s| {
                let len = s.end - s.start;
                (if s.lost { 0 } else { len }) + (if s.end <= high_rxt && s.retransmitted { len } else { 0 })
            })
            .sum()
    }

    /// Bytes in flight during SACK recovery: RFC 6675's pipe, or with RACK
    /// Linux's `tcp_packets_in_flight` (outstanding, less SACKed and lost,
    /// plus retransmissions in flight).
    fn in_flight(&self, rec: Recovery) -> u64 {
        if !self.rack_on() {
            return self.pipe(rec.high_rxt);
        }
        self.sent
            .iter()
            .filter(|s| !s.sacked)
            .map(|s| {
                let len = s.end - s.start;
                (if s.lost { 0 } else { len }) + (if s.lost && s.rack_rtx { len } else { 0 })
            })
            .sum()
    }

    /// The congestion window in force: PRR's during its recovery, the
    /// algorithm's otherwise.
    fn cwnd(&self) -> u64 {
        match (&self.prr, self.recovery) {
            (Some(prr), Some(_)) => prr.window(),
            _ => self.cc.window(),
        }
    }

    /// RACK-TLP is on: configured, and both ends permitted SACK.
    fn rack_on(&self) -> bool {
        self.config.loss_detection == LossDetection::Rack && self.sack_ok
    }

    /// RFC 8985 §6.2 steps 4–5 after an ACK that delivered data, or when
    /// the reordering timer fires: marks losses and arms the timer for the
    /// segments not due yet (`tcp_rack_mark_lost`: the wait rounded up to
    /// whole milliseconds plus two). Returns the bytes newly marked lost.
    fn rack_detect_loss(&mut self, now: Instant) -> u64 {
        let sacked_segments = self.sent.iter().filter(|s| s.sacked).count() as u64;
        let reo_wnd = self.rack.reo_wnd(
            self.rtt.srtt(),
            self.recovery.is_some(),
            sacked_segments,
            self.config.dupack_threshold as u64,
        );
        let (lost, wait) = self.rack.detect_loss(now, &mut self.sent, reo_wnd);
        self.rack_at = wait.map(|w| {
            let ms = w.as_nanos().div_ceil(1_000_000);
            now + Duration::from_millis(ms) + rack::TIMEOUT_MIN
        });
        lost
    }

    /// The reordering timer (`tcp_rack_reo_timeout`): losses found now
    /// start recovery as if one segment had been delivered.
    fn on_reordering_timeout(&mut self, now: Instant) {
        if !self.rack_on() || self.snd_una >= self.snd_max {
            return;
        }
        let lost = self.rack_detect_loss(now);
        if lost == 0 {
            return;
        }
        self.rate.lost += lost.div_ceil(self.snd_mss.max(1) as u64);
        if self.recovery.is_none() && self.snd_una >= self.recover {
            self.enter_loss_recovery(now, LossRecovery::Sack);
            self.prr_on_ack(self.snd_mss as u64, false, false);
        }
    }

    /// RFC 6937 on an ACK during SACK recovery that delivered `delivered`
    /// bytes.
    fn prr_on_ack(&mut self, delivered: u64, una_advanced: bool, newly_lost: bool) {
        let Some(rec) = self.recovery else { return };
        if self.prr.is_none() {
            return;
        }
        let in_flight = self.in_flight(rec);
        let mss = self.snd_mss;
        if let Some(prr) = &mut self.prr {
            prr.on_ack(delivered, in_flight, mss, una_advanced, newly_lost);
        }
    }

    /// Arms the tail loss probe (RFC 8985 §7.2; Linux tcp_output.c
    /// `tcp_schedule_loss_probe`): in Linux's Open state (no recovery,
    /// nothing SACKed: RACK handles holes) with data outstanding and no
    /// probe out, PTO = 2·SRTT plus 200 ms when one segment is out
    /// (the peer's delayed ACK) or 2 ms otherwise (1 s without an RTT
    /// sample), but never after the RTO would fire. `advancing_rto` when
    /// the RTO is being restarted now (an ACK of new data).
    fn schedule_tlp(&mut self, now: Instant, advancing_rto: bool) {
        self.tlp_at = None;
        if !self.rack_on()
            || self.recovery.is_some()
            || self.snd_una >= self.snd_max
            || self.tlp_high_seq.is_some()
            || !self.state.is_synchronized()
            || self.sent.iter().any(|s| s.sacked)
        {
            return;
        }
        let mut pto = match self.rtt.srtt() {
            Some(srtt) => {
                let one_out = self.snd_max - self.snd_una <= self.snd_mss as u64;
                srtt.saturating_mul(2) + if one_out { TLP_DELAYED_ACK_ALLOWANCE } else { rack::TIMEOUT_MIN }
            }
            None => self.config.initial_rto,
        };
        let rto_left = if advancing_rto { Some(self.rtt.rto()) } else { self.rto_at.map(|t| t.saturating_since(now)) };
        if let Some(left) = rto_left.filter(|l| !l.is_zero()) {
            pto = pto.min(left);
        }
        self.tlp_at = Some(now + pto);
    }

    /// The ACK side of a loss probe (RFC 8985 §7.4; Linux
    /// `tcp_process_tlp_ack`): a probe of new data, or an ACK that only
    /// duplicates, ends the episode; an ACK beyond a retransmitted probe
    /// means the probe repaired a loss, and the window is reduced once as
    /// for a fast retransmit.
    fn on_tlp_ack(&mut self, now: Instant, ack: u64, una_advanced: bool) {
        let Some(high) = self.tlp_high_seq else { return };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || !una_advanced {
            self.tlp_high_seq = None;
        } else if ack > high {
            let flight = self.snd_max - self.snd_una;
            let mss = self.snd_mss;
            self.cc.on_fast_retransmit(now, flight, mss, self.config.dupack_threshold, LossRecovery::Sack);
            self.cc.on_recovery_end(now, flight, mss, LossRecovery::Sack);
            self.tlp_high_seq = None;
        }
    }

    fn on_data(&mut self, now: Instant, seg: &Segment) {
        self.stats.data_segments_received += 1;
        self.rcv_mss = self.rcv_mss.max(seg.len);
        if self.config.quick_ack {
            self.on_data_timing(now);
            // `tcp_data_queue`: a duplicate or out-of-order segment enters
            // quick-ACK mode (`tcp_enter_quickack_mode`).
            if seg.seq != self.rcv_nxt {
                self.incr_quickack();
            }
        }
        if self.config.grow_window {
            let (now_ms, full_sized) = (ts_clock(now), seg.len >= self.rcv_mss);
            let space =
                self.rcv_space.get_or_insert_with(|| ReceiveSpace::new(now, self.rcv_buf, self.rcv_nxt, self.rcv_mss));
            if let Some(ts) = seg.timestamp.filter(|_| self.ts_ok) {
                space.on_timestamp_echo(now_ms, ts.echo, full_sized);
            }
        }
        // Keep what fits in the window we advertised.
        let right = self.rcv_adv.max(self.rcv_nxt);
        let start = seg.seq.max(self.rcv_nxt);
        let end = (seg.seq + seg.len as u64).min(right);
        if end <= start {
            self.stats.duplicate_segments += 1;
            self.ack_now = true;
            return;
        }
        if start == self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt = end;
            self.stats.bytes_received += end - start;
            // Blocks received earlier that now join the in-order data.
            while let Some(b) = self.ooo.first().copied() {
                if b.start > self.rcv_nxt {
                    break;
                }
                if b.end > self.rcv_nxt {
                    self.stats.bytes_received += b.end - self.rcv_nxt;
                    self.rcv_nxt = b.end;
                }
                self.ooo.remove(0);
            }
            self.grow_window(now, seg.len);
            if had_holes {
                // Filling all or part of a gap: ACK at once (RFC 5681 §4.2,
                // seed 004 §4.2.2).
                self.ack_now = true;
            } else {
                match self.config.delayed_ack {
                    DelayedAck::Off => self.ack_now = true,
                    // Linux's quick-ACK mode: ACK at once.
                    DelayedAck::On(_) if self.quick_acks > 0 => self.ack_now = true,
                    DelayedAck::On(delay) => {
                        // At least every second full-sized segment.
                        if self.rcv_nxt - self.last_ack_sent >= 2 * self.rcv_mss as u64 {
                            self.ack_now = true;
                        } else if self.delack_at.is_none() {
                            let wait = if self.config.quick_ack { self.delayed_ack_timeout(delay) } else { delay };
                            self.delack_at = Some(now + wait);
                        }
                    }
                }
            }
        } else {
            // Out of order: keep it and ACK at once (duplicate ACK).
            self.stats.out_of_order_segments += 1;
            self.insert_ooo(start, end);
            self.grow_window(now, seg.len);
            self.ack_now = true;
        }
    }

    /// Linux's receive-window growth on a segment of `len` bytes taken
    /// in: the clamp follows the data per RTT (`tcp_rcv_space_adjust`),
    /// and while `rcv_ssthresh` grows (`tcp_grow_window`) the segment is
    /// ACKed at once (`icsk_ack.quick |= 1`).
    fn grow_window(&mut self, now: Instant, len: u32) {
        let free = self.rcv_buf.saturating_sub(self.data_end().saturating_sub(self.rcv_read));
        let (rcv_nxt, mss) = (self.rcv_nxt, self.rcv_mss);
        let Some(space) = self.rcv_space.as_mut() else { return };
        space.on_delivered(now, rcv_nxt, mss);
        if space.on_segment(len, mss, free) {
            self.quick_acks |= 1;
        }
    }

    /// Linux's `tcp_event_data_recv` on data arriving at `now`: the first
    /// data starts quick-ACK mode with ato at its floor (the configured
    /// delay, `TCP_ATO_MIN`); after that ato follows the gaps m between
    /// arrivals: m ≤ floor/2 → ato/2 + floor/2; m < ato → ato/2 + m (at most
    /// the RTO); m > RTO (a silence) → quick-ACK mode again.
    fn on_data_timing(&mut self, now: Instant) {
        let floor = match self.config.delayed_ack {
            DelayedAck::On(delay) => delay,
            DelayedAck::Off => Duration::ZERO,
        };
        let half = |d: Duration| Duration::from_nanos(d.as_nanos() / 2);
        match self.last_data_at {
            _ if self.ato.is_zero() => {
                self.incr_quickack();
                self.ato = floor;
            }
            None => {}
            Some(last) => {
                let m = now - last;
                if m <= half(floor) {
                    self.ato = half(self.ato) + half(floor);
                } else if m < self.ato {
                    self.ato = (half(self.ato) + m).min(self.rtt.rto());
                } else if m > self.rtt.rto() {
                    self.incr_quickack();
                }
            }
        }
        self.last_data_at = Some(now);
    }

    /// Linux's `tcp_send_delayed_ack`: the timer is ato, but above the
    /// floor at most the smoothed RTT (itself at least the floor) and
    /// 500 ms (HZ/2).
    fn delayed_ack_timeout(&self, floor: Duration) -> Duration {
        let ato = self.ato.max(floor);
        if ato <= floor {
            return ato;
        }
        let mut max_ato = Duration::from_millis(500);
        if let Some(srtt) = self.rtt.srtt() {
            max_ato = max_ato.min(srtt.max(floor));
        }
        ato.min(max_ato)
    }

    /// `tcp_incr_quickack`: up to 16 quick ACKs, at most half the offered
    /// window in full segments (2 if that is none).
    fn incr_quickack(&mut self) {
        let window = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let mut quick = (window / (2 * self.rcv_mss.max(1) as u64)) as u32;
        if quick == 0 {
            quick = 2;
        }
        self.quick_acks = self.quick_acks.max(quick.min(MAX_QUICKACKS));
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        self.ooo_clock += 1;
        let clock = self.ooo_clock;
        let i = self.ooo.partition_point(|b| b.end < start);
        let mut block = OooBlock { start, end, touched: clock };
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].start <= end {
            block.start = block.start.min(self.ooo[j].start);
            block.end = block.end.max(self.ooo[j].end);
            j += 1;
        }
        self.ooo.splice(i..j, [block]);
    }

    /// End of the data received in order (the FIN excluded).
    fn data_end(&self) -> u64 {
        self.rcv_nxt - self.fin_received as u64
    }

    /// The receive window to offer now: the free buffer, but grown only by
    /// at least min(buffer/2, MSS) at a time, and never shrinking the right
    /// edge (RFC 9293 §3.8.6.2.2).
    fn rcv_window(&self) -> u64 {
        let mut free = self.rcv_buf.saturating_sub(self.data_end().saturating_sub(self.rcv_read));
        if let Some(space) = &self.rcv_space {
            // Linux offers at most `rcv_ssthresh` (`__tcp_select_window`).
            free = free.min(space.window_cap());
        }
        let offered = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let step = (self.rcv_buf / 2).min(self.rcv_mss as u64).max(1);
        if free >= offered + step { free } else { offered }
    }

    fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.time_wait_at = Some(now + self.config.time_wait);
        self.rto_at = None;
        self.persist_at = None;
    }

    fn enter_closed(&mut self) {
        self.state = State::Closed;
        self.rto_at = None;
        self.persist_at = None;
        self.delack_at = None;
        self.time_wait_at = None;
        self.ack_now = false;
        self.syn_pending = false;
        self.retransmit_now = None;
        self.probe_pending = false;
    }

    // ------------------------------------------------------------------
    // Outgoing segments
    // ------------------------------------------------------------------

    fn has_new_data(&self) -> bool {
        self.snd_max < self.app_end && self.snd_max > self.iss
    }

    fn has_data_to_send(&self) -> bool {
        self.has_new_data() || self.snd_nxt < self.snd_max || self.retransmit_now.is_some()
    }

    /// The next segment to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        match self.state {
            State::Closed | State::Listen => return None,
            State::SynSent | State::SynReceived => {
                if self.syn_pending {
                    return Some(self.transmit_syn(now));
                }
                if self.state == State::SynSent {
                    return None;
                }
            }
            _ => {}
        }
        let pacing_rate = self.cc.pacing_rate().filter(|&r| r > 0);
        if pacing_rate.is_some() {
            self.pace_at = self.pacer.next_departure(now);
        }
        if self.pace_at.is_some_and(|t| t > now) {
            return self.pure_ack_if_due(now);
        }
        if self.state.is_synchronized() && self.state != State::TimeWait {
            if let Some(seg) = self.transmit_data(now) {
                if let Some(rate) = pacing_rate {
                    self.pacer.on_send(now, seg.len, rate, self.cc.burst_segments(self.snd_mss));
                    self.pace_at = self.pacer.next_departure(now);
                }
                return Some(seg);
            }
            if let Some(rate) = pacing_rate {
                self.pacer.flush(rate);
                self.pace_at = self.pacer.next_departure(now);
            }
            if self.probe_pending {
                return Some(self.transmit_probe(now));
            }
            self.start_persist_if_needed(now);
        }
        self.pure_ack_if_due(now)
    }

    fn pure_ack_if_due(&mut self, now: Instant) -> Option<Segment> {
        if !self.ack_now {
            return None;
        }
        let mut seg = self.segment(self.snd_max, 0, Flags::ACK);
        self.fill_ack(now, &mut seg);
        self.stats.acks_sent += 1;
        self.stats.segments_sent += 1;
        Some(seg)
    }

    fn segment(&self, seq: u64, len: u32, flags: Flags) -> Segment {
        Segment { seq, ack: 0, flags, window: 0, len, ..Default::default() }
    }

    /// Sets the ACK field, window and SACK blocks, and clears pending ACKs:
    /// every segment after the handshake acknowledges.
    fn fill_ack(&mut self, now: Instant, seg: &mut Segment) {
        seg.flags |= Flags::ACK;
        seg.ack = self.rcv_nxt;
        let window = self.rcv_window();
        let mut field = (window >> self.rcv_shift).min(65_535);
        if (field << self.rcv_shift) + self.rcv_nxt < self.rcv_adv {
            // Rounding down would pull the right edge back: round up.
            field = (window.div_ceil(1 << self.rcv_shift)).min(65_535);
        }
        seg.window = field as u16;
        self.rcv_adv = self.rcv_adv.max(self.rcv_nxt + (field << self.rcv_shift));
        if self.ts_ok {
            seg.timestamp = Some(Timestamp { value: ts_clock(now), echo: self.ts_recent });
        }
        if self.sack_ok && !self.ooo.is_empty() {
            // Most recently changed block first (RFC 2018 §4).
            let mut blocks: Vec<&OooBlock> = self.ooo.iter().collect();
            blocks.sort_by_key(|b| std::cmp::Reverse(b.touched));
            let mut sack = SackBlocks::default();
            let room = if self.ts_ok { MAX_SACK_BLOCKS_WITH_TIMESTAMPS } else { MAX_SACK_BLOCKS };
            for b in blocks.into_iter().take(room) {
                sack.push((b.start, b.end));
            }
            seg.sack = sack;
        }
        if self.rcv_nxt > self.last_ack_sent && self.quick_acks > 0 {
            // `tcp_dec_quickack_mode`: one quick ACK used per ACK of new
            // data; leaving the mode deflates ato to its floor.
            self.quick_acks -= 1;
            if self.quick_acks == 0
                && let DelayedAck::On(floor) = self.config.delayed_ack
            {
                self.ato = floor;
            }
        }
        self.last_ack_sent = self.rcv_nxt;
        self.ack_now = false;
        self.delack_at = None;
    }

    fn transmit_syn(&mut self, now: Instant) -> Segment {
        self.syn_pending = false;
        let mut seg = self.segment(self.iss, 0, Flags::SYN);
        seg.mss = Some(self.config.mss.min(65_535) as u16);
        let listener_side = self.state == State::SynReceived;
        // On a SYN-ACK, options only if the SYN offered them (RFC 7323 §1.3,
        // RFC 2018 §2).
        if self.config.window_scaling && (!listener_side || self.peer_window_scale) {
            seg.window_scale = Some(self.config.window_shift());
        }
        if self.config.sack && (!listener_side || self.sack_ok) {
            seg.sack_permitted = true;
        }
        if self.config.timestamps && (!listener_side || self.ts_ok) {
            let echo = if listener_side { self.ts_recent } else { 0 };
            seg.timestamp = Some(Timestamp { value: ts_clock(now), echo });
        }
        // The window of a SYN is not scaled.
        let window = self.rcv_buf.min(65_535);
        if listener_side {
            seg.flags |= Flags::ACK;
            seg.ack = self.rcv_nxt;
            self.rcv_adv = self.rcv_nxt + window;
            self.last_ack_sent = self.rcv_nxt;
            self.ack_now = false;
        }
        seg.window = window as u16;
        if let Some(s) = self.sent.front_mut() {
            if self.syn_transmitted {
                s.retransmitted = true;
                self.stats.retransmitted_segments += 1;
            } else {
                s.first_sent = now;
            }
            s.last_sent = now;
        }
        self.syn_transmitted = true;
        self.stats.segments_sent += 1;
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
        seg
    }

    /// Retransmissions first, then new data, within the windows.
    fn transmit_data(&mut self, now: Instant) -> Option<Segment> {
        if self.tlp_pending {
            self.tlp_pending = false;
            if let Some(seg) = self.transmit_loss_probe(now) {
                return Some(seg);
            }
        }
        if let Some(seq) = self.retransmit_now.take()
            && let Some(i) = self.index_of(seq)
        {
            if let Some(r) = &mut self.recovery {
                r.high_rxt = r.high_rxt.max(self.sent[i].end);
            }
            return Some(self.retransmit(now, i));
        }
        if let Some(rec) = self.recovery
            && rec.kind == LossRecovery::Sack
        {
            return self.transmit_sack_recovery(now, rec);
        }
        // Going back after a timeout (or Tahoe's fast retransmit).
        while self.snd_nxt < self.snd_max {
            let Some(i) = self.index_of(self.snd_nxt) else {
                // Not a segment boundary (cannot happen): resume new data.
                self.snd_nxt = self.snd_max;
                break;
            };
            let s = self.sent[i];
            if s.sacked {
                self.snd_nxt = s.end;
                continue;
            }
            if !self.window_allows(self.snd_nxt - self.snd_una, s.end - s.start) {
                return None;
            }
            self.snd_nxt = s.end;
            return Some(self.retransmit(now, i));
        }
        let outstanding = self.snd_max - self.snd_una;
        self.transmit_new(now, outstanding, false)
    }

    /// RFC 6675 §5 step (C): while cwnd − pipe ≥ 1 SMSS, send NextSeg.
    fn transmit_sack_recovery(&mut self, now: Instant, rec: Recovery) -> Option<Segment> {
        let pipe = self.in_flight(rec);
        let cwnd = self.cwnd();
        if cwnd < pipe + self.snd_mss as u64 {
            return None;
        }
        if self.rack_on() {
            return self.transmit_rack_recovery(now);
        }
        let highest_sacked = self.sent.iter().rev().find(|s| s.sacked).map_or(self.snd_una, |s| s.end);
        // (1) the first lost, unSACKed segment above HighRxt.
        let lost = self.sent.iter().position(|s| s.start >= rec.high_rxt && !s.sacked && s.lost);
        // (2) new data.
        // (3) an unSACKed segment above HighRxt below the highest SACK.
        let rule3 = || self.sent.iter().position(|s| s.start >= rec.high_rxt && !s.sacked && s.end <= highest_sacked);
        let pick = match lost {
            Some(i) => Some(i),
            None if self.has_new_data() => None,
            None => rule3(),
        };
        match pick {
            Some(i) => {
                if let Some(r) = &mut self.recovery {
                    r.high_rxt = self.sent[i].end;
                }
                Some(self.retransmit(now, i))
            }
            None => {
                let seg = self.transmit_new(now, 0, false)?;
                Some(seg)
            }
        }
    }

    /// Recovery with RACK (Linux `tcp_xmit_retransmit_queue`): the first
    /// segment marked lost and not retransmitted since, else new data.
    fn transmit_rack_recovery(&mut self, now: Instant) -> Option<Segment> {
        let seg = match self.sent.iter().position(|s| s.lost && !s.rack_rtx && !s.sacked) {
            Some(i) => Some(self.retransmit(now, i)),
            None => self.transmit_new(now, 0, false),
        }?;
        if let Some(prr) = &mut self.prr {
            prr.on_send(seg.len.max(1) as u64);
        }
        Some(seg)
    }

    /// The tail loss probe (RFC 8985 §7.3; Linux `tcp_send_loss_probe`):
    /// one new segment if the receive window allows, whatever the
    /// congestion window; else the last segment sent again. The RTO
    /// restarts from the probe.
    fn transmit_loss_probe(&mut self, now: Instant) -> Option<Segment> {
        let outstanding = self.snd_max - self.snd_una;
        let seg = match self.transmit_new(now, outstanding, true) {
            Some(seg) => {
                self.tlp_retrans = false;
                seg
            }
            None => {
                let i = self.sent.iter().rposition(|s| !s.sacked && !s.syn)?;
                self.tlp_retrans = true;
                self.retransmit(now, i)
            }
        };
        self.tlp_high_seq = Some(self.snd_max);
        self.stats.loss_probes += 1;
        self.arm_rto(now);
        Some(seg)
    }

    /// RFC 3042 §2: on the first and second duplicate ACK outside loss
    /// recovery, up to one more segment each beyond the congestion window
    /// (the window itself is unchanged).
    fn limited_transmit_allowance(&self) -> u64 {
        if !self.config.limited_transmit || self.recovery.is_some() || self.dupacks >= self.config.dupack_threshold {
            return 0;
        }
        self.dupacks.min(2) as u64 * self.snd_mss as u64
    }

    fn index_of(&self, seq: u64) -> Option<usize> {
        let i = self.sent.partition_point(|s| s.start < seq);
        (i < self.sent.len() && self.sent[i].start == seq).then_some(i)
    }

    /// Whether a retransmission of `len` bytes fits in the congestion
    /// window after `outstanding` bytes (the receiver's window held it
    /// when it was first sent, and its right edge never moves back).
    fn window_allows(&self, outstanding: u64, len: u64) -> bool {
        let cwnd = self.cc.window().min(self.config.max_window);
        outstanding == 0 || outstanding + len <= cwnd
    }

    fn retransmit(&mut self, now: Instant, i: usize) -> Segment {
        let (delivered, delivered_time) = (self.delivered, self.delivered_time);
        let tx = self.tx_state(now, false);
        let s = &mut self.sent[i];
        s.tx = tx;
        s.retransmitted = true;
        s.rack_rtx = true;
        s.last_sent = now;
        s.delivered = delivered;
        s.delivered_time = delivered_time;
        let s = *s;
        let mut flags = Flags::empty_flags();
        if s.fin {
            flags |= Flags::FIN;
        }
        let len = s.data_len() as u32;
        let mut seg = self.segment(s.start, len, flags);
        self.fill_ack(now, &mut seg);
        self.stats.retransmitted_segments += 1;
        self.stats.retransmitted_bytes += len as u64;
        self.count_sent(&seg);
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
        seg
    }

    /// A new segment from `snd_max`, if the windows and sender-side SWS
    /// avoidance (RFC 9293 §3.8.6.2.1, Nagle when on) allow.
    /// `ignore_cwnd` for a loss probe (RFC 8985 §7.3).
    fn transmit_new(&mut self, now: Instant, outstanding: u64, ignore_cwnd: bool) -> Option<Segment> {
        let fin_pending = self.fin_queued && self.snd_max == self.app_end;
        if !self.has_new_data() && !fin_pending {
            return None;
        }
        let base_cwnd = self.cc.window().min(self.config.max_window);
        let cwnd = if ignore_cwnd { u64::MAX / 4 } else { base_cwnd + self.limited_transmit_allowance() };
        let wnd_right = self.snd_una + self.snd_wnd;
        let cwnd_room = cwnd.saturating_sub(outstanding);
        let rwnd_room = wnd_right.saturating_sub(self.snd_max);
        let room = cwnd_room.min(rwnd_room);
        let remaining = self.app_end - self.snd_max;
        let mss = self.snd_mss as u64;
        let len = remaining.min(mss).min(room);
        if remaining > 0 {
            let nothing_outstanding = self.snd_max == self.snd_una;
            let full = len == mss;
            let all = len == remaining && (!self.config.nagle || nothing_outstanding);
            let half_window = self.max_snd_wnd > 0 && len >= self.max_snd_wnd / 2;
            let override_small = nothing_outstanding && len > 0;
            if len == 0 || !(full || all || half_window || override_small) {
                return None;
            }
        } else if self.snd_max > self.snd_una && cwnd_room == 0 {
            // A lone FIN waits for room like data does.
            return None;
        }
        self.limited_sent += len.saturating_sub(base_cwnd.saturating_sub(outstanding));
        let start = self.snd_max;
        let tx = self.tx_state(now, self.snd_max == self.snd_una);
        let mut flags = Flags::empty_flags();
        let fin = self.fin_queued && start + len == self.app_end;
        if fin {
            flags |= Flags::FIN;
            match self.state {
                State::Established => self.state = State::FinWait1,
                State::CloseWait => self.state = State::LastAck,
                _ => {}
            }
        }
        if len > 0 && start + len == self.app_end {
            flags |= Flags::PSH;
        }
        let end = start + len + fin as u64;
        self.sent.push_back(Sent {
            start,
            end,
            syn: false,
            fin,
            first_sent: now,
            last_sent: now,
            retransmitted: false,
            timer_retransmitted: false,
            sacked: false,
            lost: false,
            rack_rtx: false,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            tx,
        });
        self.snd_max = end;
        self.snd_nxt = self.snd_nxt.max(end);
        let mut seg = self.segment(start, len as u32, flags);
        self.fill_ack(now, &mut seg);
        self.count_sent(&seg);
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
        if !ignore_cwnd && self.rack_on() {
            // Linux re-arms the loss probe after sending new data.
            self.schedule_tlp(now, false);
        }
        Some(seg)
    }

    fn count_sent(&mut self, seg: &Segment) {
        self.stats.segments_sent += 1;
        if seg.len > 0 {
            self.stats.data_segments_sent += 1;
            self.stats.data_bytes_sent += seg.len as u64;
        }
    }

    /// Zero window with data waiting and nothing in flight: arm the
    /// persist timer (RFC 9293 §3.8.6.1).
    fn start_persist_if_needed(&mut self, now: Instant) {
        if self.snd_wnd == 0 && self.has_new_data() && self.snd_una == self.snd_max && self.persist_at.is_none() {
            self.persist_at = Some(now + self.persist_interval());
        }
    }

    /// A one-byte probe beyond the zero window (seed 004 §4.2.3).
    fn transmit_probe(&mut self, now: Instant) -> Segment {
        self.probe_pending = false;
        let mut seg = self.segment(self.snd_max, 1, Flags::empty_flags());
        self.fill_ack(now, &mut seg);
        self.probe_end = Some(self.snd_max + 1);
        self.stats.window_probes += 1;
        self.count_sent(&seg);
        self.persist_at = Some(now + self.persist_interval());
        seg
    }
}

impl Flags {
    fn empty_flags() -> Flags {
        Flags(0)
    }
}

#[cfg(test)]
mod tests;
