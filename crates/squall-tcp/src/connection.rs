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

use squall_link::{Duration, Instant};

use crate::config::{DelayedAck, LossDetection, RtoVariant, TcpConfig, WindowGrowth};
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
mod receive;
mod recovery;
mod rtx_queue;
mod send;
mod timers;
mod units;
use pacing::Pacer;
use rack::Rack;
use rate::{DeliveryRate, TxState};
use rcv_space::{INITIAL_WINDOW, ReceiveSpace};
use rtx_queue::RtxQueue;
use timers::{Timer, TimerTable};

/// Most ACKs sent at once in quick-ACK mode (`TCP_MAX_QUICKACKS`).
const MAX_QUICKACKS: u32 = 16;
/// SACK compression (`__tcp_ack_snd_check`): ACKs sent at once for one
/// `rcv_nxt` before compressing (`TCP_FASTRETRANS_THRESH`), the longest
/// wait (`tcp_comp_sack_delay_ns`), the timer's slack
/// (`tcp_comp_sack_slack_ns`: a range timer fires at its end when nothing
/// else wakes the CPU), and the most ACKs held (`tcp_comp_sack_nr`).
const COMP_SACK_IMMEDIATE: u32 = 3;
const COMP_SACK_DELAY: Duration = Duration::from_millis(1);
const COMP_SACK_SLACK: Duration = Duration::from_micros(100);
const COMP_SACK_NR: u32 = 44;
/// SACK blocks an ACK is expected to carry (`TCP_SACK_BLOCKS_EXPECTED`):
/// data for a block further down sends a held ACK at once.
const SACK_BLOCKS_EXPECTED: usize = 2;
/// Added to a loss probe's timeout when one segment is outstanding, for
/// the peer's delayed ACK (`TCP_RTO_MIN` in tcp_schedule_loss_probe);
/// otherwise [`rack::TIMEOUT_MIN`].
const TLP_DELAYED_ACK_ALLOWANCE: Duration = Duration::from_millis(200);

/// How much later than its segment's arrival the application reads it
/// when the receive path sent that segment's ACK at once: Linux wakes the
/// reader (`tcp_data_ready`) after `__tcp_ack_snd_check`, and the reader's
/// `lock_sock` waits for that softirq to end (tcp_input.c
/// `tcp_rcv_established`). The ACK's cost is some microseconds on the
/// emulator's hosts (their ACKs leave 12–43 µs after the data); the model
/// keeps 1 µs, enough to order the read after the ACK where the
/// simulator's exact times would make a tie (`receive.rs` `read_adjust`).
const ACK_BEFORE_READ: Duration = Duration::from_micros(1);

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
    /// "recover", RFC 6675 "RecoveryPoint"). RFC 6675's HighRxt, the end
    /// of the highest range retransmitted, is kept by the retransmission
    /// queue ([`RtxQueue::high_rxt`]), which counts pipe with it.
    point: u64,
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
    /// Every timer of the connection, one slot each.
    timers: TimerTable,

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
    sent: RtxQueue,
    cc: AnyCongestionControl,
    rtt: RttEstimator,
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
    persist_backoff: u32,
    probe_pending: bool,
    /// End of the byte of an unanswered zero-window probe.
    probe_end: Option<u64>,
    /// Bytes delivered (acknowledged or SACKed) and when the count last grew.
    delivered: u64,
    delivered_time: Instant,
    /// The pacer (its next departure is the `Pace` timer).
    pacer: Pacer,
    /// Delivery-rate samples in packets (tcp_rate.c), and whether the
    /// connection is in Linux's Loss state (after a timeout, until what
    /// was outstanding then is acknowledged), for model-based algorithms.
    rate: DeliveryRate,
    in_loss: bool,
    /// The delivery rate kept (`tp->rate_delivered`, packets, over
    /// `tp->rate_interval_us`), as `tcpi_delivery_rate` reports it.
    delivery_rate: (u64, Duration),
    /// RACK-TLP (RFC 8985): the RACK state (its timers are `Reorder` and
    /// `LossProbe`), a probe to send, and the probe outstanding
    /// (TLPRxtOut's end, `tlp_high_seq`) with whether it was a
    /// retransmission.
    rack: Rack,
    tlp_pending: bool,
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    /// Proportional rate reduction during SACK recovery (RFC 6937).
    prr: Option<Prr>,
    /// Transmit units ([`TcpConfig::transmit_units`]): the unit being
    /// sent, where the writer's buffer at the head of the write queue
    /// ends, and when data last left (`tcp_wstamp_ns`).
    unit: Option<units::Unit>,
    buffer_end: u64,
    last_data_sent: Option<Instant>,
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
    /// Linux's delayed-ACK engine: quick ACKs left to send at once
    /// (`icsk_ack.quick`), when data last arrived (`lrcvtime`), and the
    /// adaptive ACK timeout (`ato`; zero before the first data).
    quick_acks: u32,
    last_data_at: Option<Instant>,
    ato: Duration,
    /// Data arrived since the last ACK (`inet_csk_ack_scheduled`): that
    /// ACK uses up a quick ACK.
    ack_scheduled: bool,
    /// A full-sized segment with PSH arrived since the last ACK
    /// (`ICSK_ACK_PUSHED`, [`TcpConfig::ack_pushed`]).
    ack_pushed: bool,
    /// SACK compression: ACKs held (`compressed_ack`), ACKs sent at once
    /// for `rcv_nxt` = `compressed_ack_rcv_nxt` (`dup_ack_counter`), and
    /// an ACK built before a segment changed the SACK blocks, to go first
    /// (`tcp_sack_compress_send_ack`).
    compressed_acks: u32,
    sack_dupacks: u32,
    compressed_ack_rcv_nxt: u64,
    flushed_ack: Option<Segment>,
    /// Linux's receive-window growth (`rcv_ssthresh`, dynamic
    /// right-sizing), from the first data on, when configured.
    rcv_space: Option<ReceiveSpace>,
    /// The window this end's SYN offered, where Linux's `rcv_ssthresh`
    /// starts (`grow_window` profiles only).
    syn_window: u64,

    stats: TcpStats,
}

impl Connection {
    /// This end's timestamp clock at `now` (RFC 7323 §5.4): milliseconds,
    /// as Linux's `TCP_TS_HZ`, ticking where the host's clock does
    /// ([`TcpConfig::clock_phase`]: that far into its millisecond at time
    /// zero), plus one so that no TSval is 0 (Linux ignores a zero echo).
    fn ts_clock(&self, now: Instant) -> u32 {
        (((now.as_nanos() + self.config.clock_phase.as_nanos()) / 1_000_000) as u32).wrapping_add(1)
    }

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
            timers: TimerTable::default(),
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
            sent: RtxQueue::default(),
            cc,
            rtt,
            dupacks: 0,
            limited_sent: 0,
            recovery: None,
            recover: iss,
            retransmit_now: None,
            syn_pending: false,
            syn_transmitted: false,
            peer_window_scale: false,
            persist_backoff: 0,
            probe_pending: false,
            probe_end: None,
            delivered: 0,
            delivered_time: Instant::ZERO,
            pacer: Pacer::default(),
            rate: DeliveryRate::default(),
            delivery_rate: (0, Duration::ZERO),
            in_loss: false,
            rack: Rack::default(),
            tlp_pending: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            prr: None,
            unit: None,
            buffer_end: 0,
            last_data_sent: None,
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
            quick_acks: 0,
            rcv_space: None,
            syn_window: INITIAL_WINDOW,
            last_data_at: None,
            ato: Duration::ZERO,
            ack_scheduled: false,
            ack_pushed: false,
            compressed_acks: 0,
            sack_dupacks: 0,
            compressed_ack_rcv_nxt: 0,
            flushed_ack: None,
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

    /// Queues `bytes` more bytes for sending.
    pub fn send(&mut self, bytes: u64) -> Result<(), SendError> {
        let open = matches!(self.state, State::SynSent | State::SynReceived | State::Established | State::CloseWait);
        if self.fin_queued || !open {
            return Err(SendError::Closed);
        }
        if self.samples_rate() {
            // `tcp_rate_check_app_limited`, at the application's write.
            let unsent_below_mss = self.app_end.saturating_sub(self.snd_max) < self.snd_mss as u64;
            let cwnd = self.cc.window() / self.snd_mss.max(1) as u64;
            let lost_unrepaired = self.sent.lost_unrepaired() > 0;
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
            // `__tcp_cleanup_rbuf`: this read emptied the receive queue
            // and pushed data is waiting for its ACK.
            if self.ack_pushed && self.ack_scheduled && self.readable() == 0 {
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
    /// The delivery rate, bit/s, as Linux's `tcpi_delivery_rate` gives it
    /// (tcp.c `tcp_compute_delivery_rate`: the kept sample's packets times
    /// the MSS over its interval), once a sample was kept; only when the
    /// connection samples it (a model-based algorithm, or
    /// [`crate::TcpConfig::rate_samples`]).
    pub fn delivery_rate(&self) -> Option<f64> {
        let (delivered, interval) = self.delivery_rate;
        (!interval.is_zero()).then(|| delivered as f64 * f64::from(self.snd_mss) * 8.0 / interval.as_secs_f64())
    }
    /// Bytes of data cumulatively acknowledged so far (the sequence space
    /// below snd_una, without the SYN and the FIN).
    pub fn acked_total(&self) -> u64 {
        self.snd_una.min(self.app_end).saturating_sub(self.iss + 1)
    }
    /// Every byte queued has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.unacked() == 0
    }

    pub fn snapshot(&self) -> CcSnapshot {
        let in_flight = match self.recovery {
            Some(r) if r.kind == LossRecovery::Sack => self.in_flight(),
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
}

impl Flags {
    fn empty_flags() -> Flags {
        Flags(0)
    }
}

#[cfg(test)]
mod tests;
