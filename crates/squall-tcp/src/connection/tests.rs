//! Hand-worked segment sequences (smoltcp's `send!`/`recv!` style): the
//! connection under test talks to a scripted peer, and every expected
//! sequence number, window and timer value is computed by hand in the
//! comments. A virtual-time pair driver with a step bound (quinn's
//! `drive_bounded`) checks whole transfers.

use super::*;
use crate::config::{CcKind, DelayedAck, TcpConfig};

const MSS: u32 = 1000;
/// The scripted peer's initial sequence number.
const PEER_ISS: u64 = 50_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn config(cc: CcKind) -> TcpConfig {
    TcpConfig {
        cc,
        mss: MSS,
        rcv_buf: 64_000,
        window_scaling: false,
        sack: false,
        delayed_ack: DelayedAck::Off,
        min_rto: ms(200),
        initial_window: 10,
        // The sequences below count segments without RFC 3042; limited
        // transmit has a test of its own.
        limited_transmit: false,
        iss: 0,
        ..TcpConfig::default()
    }
}

/// A passive end that has answered the scripted peer's SYN (MSS 1000):
/// SYN-RECEIVED, its SYN-ACK already taken.
fn answered_syn(cfg: TcpConfig) -> Connection {
    let mut server = Connection::listen(cfg);
    let syn = Segment { seq: PEER_ISS, flags: Flags::SYN, window: 65_535, mss: Some(1000), ..Default::default() };
    server.handle_segment(at(0), &syn);
    assert!(server.poll_transmit(at(0)).is_some_and(|s| s.syn()), "a SYN-ACK");
    assert!(server.poll_transmit(at(0)).is_none(), "and nothing else");
    server
}

/// `len` bytes from the scripted peer at `seq`, acknowledging our SYN.
fn peer_data(seq: u64, len: u32) -> Segment {
    Segment { seq, ack: 1, flags: Flags::ACK, window: 65_535, len, ..Default::default() }
}

/// Every segment the connection has to send now.
macro_rules! send {
    ($c:expr, $now:expr) => {{
        let mut out = Vec::new();
        while let Some(s) = $c.poll_transmit($now) {
            out.push(s);
            assert!(out.len() < 10_000, "poll_transmit does not stop");
        }
        out
    }};
}

/// A segment from the peer: an ACK with `ack`, window `wnd` (field value),
/// optional payload `len` and SACK blocks.
macro_rules! recv {
    ($c:expr, $now:expr, ack = $ack:expr, wnd = $wnd:expr) => {
        recv!($c, $now, ack = $ack, wnd = $wnd, sack = [])
    };
    ($c:expr, $now:expr, ack = $ack:expr, wnd = $wnd:expr, sack = [$($b:expr),*]) => {{
        #[allow(unused_mut)]
        let mut seg = Segment { seq: PEER_ISS + 1, ack: $ack, flags: Flags::ACK, window: $wnd, ..Default::default() };
        $( seg.sack.push($b); )*
        $c.handle_segment($now, &seg);
    }};
}

/// Data starts at sequence 1 (ISS 0); segment k (from 0) starts at 1 + k·MSS.
fn seg_start(k: u64) -> u64 {
    1 + k * MSS as u64
}

fn data(segs: &[Segment]) -> Vec<(u64, u32)> {
    segs.iter().filter(|s| s.len > 0).map(|s| (s.seq, s.len)).collect()
}

/// A client that completed the handshake at 100 ms (RTT sample 100 ms:
/// SRTT 100, RTTVAR 50, RTO max(100 + 200, 200) = 300 ms) with a peer
/// offering `window` bytes, and has `bytes` queued.
fn established(cfg: TcpConfig, window: u16, bytes: u64, peer_sack: bool) -> Connection {
    established_at(cfg, at(100), window, bytes, peer_sack)
}

/// [`established`] with the SYN-ACK arriving at `synack_at` (the handshake's
/// RTT sample).
fn established_at(mut cfg: TcpConfig, synack_at: Instant, window: u16, bytes: u64, peer_sack: bool) -> Connection {
    cfg.sack = cfg.sack || peer_sack;
    let mut c = Connection::connect(cfg, at(0));
    let syn = send!(c, at(0));
    assert_eq!(syn.len(), 1);
    assert!(syn[0].syn() && !syn[0].has_ack());
    let synack = Segment {
        seq: PEER_ISS,
        ack: 1,
        flags: Flags::SYN | Flags::ACK,
        window,
        mss: Some(MSS as u16),
        sack_permitted: peer_sack,
        ..Default::default()
    };
    c.handle_segment(synack_at, &synack);
    assert_eq!(c.state(), State::Established);
    c.send(bytes).unwrap();
    c
}

#[test]
fn handshake_announces_options_and_acks_the_syn_ack() {
    let mut cfg = config(CcKind::Reno);
    cfg.window_scaling = true;
    cfg.sack = true;
    cfg.rcv_buf = 1 << 20;
    let mut c = Connection::connect(cfg, at(0));
    let syn = send!(c, at(0));
    // 2^20 >> 4 = 65536 does not fit 16 bits; >> 5 does: shift 5.
    assert_eq!(syn[0].window_scale, Some(5));
    assert_eq!((syn[0].mss, syn[0].sack_permitted, syn[0].window), (Some(1000), true, 65_535));
    assert_eq!(syn[0].ip_size(), 40 + 12);
    assert_eq!(c.poll_timeout(), Some(at(1000)), "initial RTO 1 s (RFC 6298 §2.1)");
    let synack = Segment {
        seq: PEER_ISS,
        ack: 1,
        flags: Flags::SYN | Flags::ACK,
        window: 40_000,
        mss: Some(536),
        window_scale: Some(7),
        sack_permitted: true,
        ..Default::default()
    };
    c.handle_segment(at(100), &synack);
    let ack = send!(c, at(100));
    assert_eq!(ack.len(), 1);
    assert_eq!((ack[0].seq, ack[0].ack, ack[0].len), (1, PEER_ISS + 1, 0));
    // Our window after the handshake is scaled: 2^20 >> 5 = 32768.
    assert_eq!(ack[0].window, 32_768);
    assert_eq!(c.send_mss(), 536, "the smaller MSS");
    assert_eq!(c.snapshot().srtt, Some(ms(100)));
    // The peer's window field is scaled by its shift 7: 100 << 7 = 12800
    // bytes = 23 segments of 536 and a bit.
    c.send(100_000).unwrap();
    recv!(c, at(110), ack = 1, wnd = 100);
    assert_eq!(c.snd_wnd, 12_800);
}

#[test]
fn no_window_scaling_unless_both_offer_it() {
    let mut cfg = config(CcKind::Reno);
    cfg.window_scaling = true;
    cfg.rcv_buf = 1 << 20;
    let mut server = Connection::listen(cfg);
    let syn = Segment { seq: PEER_ISS, flags: Flags::SYN, window: 65_535, mss: Some(1460), ..Default::default() };
    server.handle_segment(at(0), &syn);
    assert_eq!(server.state(), State::SynReceived);
    let synack = send!(server, at(0));
    assert_eq!(synack.len(), 1);
    assert!(synack[0].syn() && synack[0].has_ack());
    assert_eq!(synack[0].window_scale, None, "not offered by the SYN, so not on the SYN-ACK");
    assert_eq!(synack[0].window, 65_535, "buffer clamped to what 16 bits hold");
    assert_eq!(server.send_mss(), 1000);
}

#[test]
fn slow_start_sends_initial_window_then_two_per_ack() {
    let mut cfg = config(CcKind::Reno);
    cfg.initial_window = 2;
    let mut c = established(cfg, 65_535, 100_000, false);
    assert_eq!(data(&send!(c, at(100))), vec![(seg_start(0), 1000), (seg_start(1), 1000)]);
    recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
    // cwnd 3000, 1000 in flight: two more.
    assert_eq!(data(&send!(c, at(200))), vec![(seg_start(2), 1000), (seg_start(3), 1000)]);
}

/// Ten segments out (IW 10), segment 1 lost. Hand-worked for Reno:
/// ACK of segment 0 grows cwnd to 11000 → segments 10 and 11 go (snd_max
/// 12001). Three duplicate ACKs: FlightSize = 12001 − 1001 = 11000,
/// ssthresh 5500, cwnd 5500 + 3·1000 = 8500, segment 1 retransmitted.
/// Each further duplicate ACK adds 1000; at cwnd 12500 one new segment
/// fits (11000 + 1000 ≤ 12500). The ACK of everything ends recovery with
/// cwnd = ssthresh.
#[test]
fn reno_fast_retransmit_after_three_dupacks_and_fast_recovery() {
    let mut c = established(config(CcKind::Reno), 65_535, 1_000_000, false);
    assert_eq!(send!(c, at(100)).len(), 10);
    recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(200))), vec![(seg_start(10), 1000), (seg_start(11), 1000)]);
    for i in 0..2 {
        recv!(c, at(201 + i), ack = seg_start(1), wnd = 65_535);
        assert!(send!(c, at(201 + i)).is_empty(), "no retransmission before the third duplicate");
    }
    recv!(c, at(203), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(203))), vec![(seg_start(1), 1000)]);
    assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (8500, 5500));
    assert_eq!((c.stats().fast_retransmits, c.stats().retransmitted_segments), (1, 1));
    for i in 0..3 {
        recv!(c, at(204 + i), ack = seg_start(1), wnd = 65_535);
        assert!(send!(c, at(204 + i)).is_empty());
    }
    assert_eq!(c.snapshot().cwnd, 11_500);
    recv!(c, at(207), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(207))), vec![(seg_start(12), 1000)]);
    recv!(c, at(300), ack = seg_start(12), wnd = 65_535);
    assert_eq!(c.snapshot().cwnd, 5500, "deflated to ssthresh");
    assert!(c.recovery.is_none());
}

/// `dupack_threshold` N (RFC 5681 §3.2's DupThresh) on the Reno sequence
/// above: segment 1 lost, cwnd 11000 full (segments 1..=11 out) when the
/// duplicates start. Duplicates 1..N−1 send nothing; the Nth retransmits
/// segment 1. FlightSize 11000, so ssthresh 5500 and cwnd 5500 + N·1000
/// (the N segments that left the network; ns-3's `EnterRecovery`), which
/// for N = 1, 3, 5 is 6500, 8500, 10500, all below the 11000 outstanding:
/// the retransmission is the only segment sent.
#[test]
fn fast_retransmit_at_exactly_the_nth_duplicate_ack() {
    for n in [1u32, 3, 5] {
        let mut cfg = config(CcKind::Reno);
        cfg.dupack_threshold = n;
        let mut c = established(cfg, 65_535, 1_000_000, false);
        assert_eq!(send!(c, at(100)).len(), 10);
        recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
        assert_eq!(data(&send!(c, at(200))), vec![(seg_start(10), 1000), (seg_start(11), 1000)]);
        for i in 1..n as u64 {
            recv!(c, at(200 + i), ack = seg_start(1), wnd = 65_535);
            assert!(send!(c, at(200 + i)).is_empty(), "N = {n}: nothing at duplicate {i}");
        }
        recv!(c, at(200 + n as u64), ack = seg_start(1), wnd = 65_535);
        assert_eq!(data(&send!(c, at(200 + n as u64))), vec![(seg_start(1), 1000)], "N = {n}");
        assert_eq!(c.stats().dupacks_received, n as u64);
        assert_eq!((c.stats().fast_retransmits, c.stats().retransmitted_segments), (1, 1));
        assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (5500 + n as u64 * 1000, 5500), "N = {n}");
    }
}

/// An invalid threshold is refused by the configuration, not run.
#[test]
fn a_zero_dupack_threshold_is_refused() {
    let cfg = TcpConfig { dupack_threshold: 0, ..TcpConfig::default() };
    assert_eq!(cfg.validate().unwrap_err().field, "dupack_threshold");
}

/// Limited transmit (RFC 3042) on the Reno sequence above: cwnd 11000
/// is full (segments 1..=11 outstanding) when the duplicates start. The
/// first and second duplicate each let one new segment out beyond cwnd
/// (12, then 13); the third retransmits segment 1 and ssthresh leaves the
/// two limited segments out of FlightSize (RFC 5681 §3.2 step 2): 11000/2
/// = 5500, cwnd 5500 + 3·1000 = 8500, exactly as without limited transmit.
#[test]
fn limited_transmit_sends_a_new_segment_on_each_of_the_first_two_duplicates() {
    let mut with_lt = config(CcKind::Reno);
    with_lt.limited_transmit = true;
    let mut c = established(with_lt, 65_535, 1_000_000, false);
    assert_eq!(send!(c, at(100)).len(), 10);
    recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(200))), vec![(seg_start(10), 1000), (seg_start(11), 1000)]);
    recv!(c, at(201), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(201))), vec![(seg_start(12), 1000)]);
    recv!(c, at(202), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(202))), vec![(seg_start(13), 1000)]);
    assert_eq!(c.snapshot().cwnd, 11_000, "limited transmit leaves cwnd alone");
    recv!(c, at(203), ack = seg_start(1), wnd = 65_535);
    assert_eq!(data(&send!(c, at(203))), vec![(seg_start(1), 1000)]);
    assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (8500, 5500));
    // A fourth duplicate inflates cwnd to 9500, still below the 13000
    // outstanding: limited transmit is over, nothing new goes out.
    recv!(c, at(204), ack = seg_start(1), wnd = 65_535);
    assert!(send!(c, at(204)).is_empty());
}

/// Segments 1 and 4 lost out of ten. After the fast retransmit of 1, the
/// ACK for it acknowledges up to segment 4 (a partial ACK: recover =
/// 12001). NewReno retransmits segment 4 at once and deflates: cwnd 8500
/// − 3000 acked + 1000 = 6500. Reno leaves recovery instead (cwnd 5500)
/// and sends no retransmission.
#[test]
fn newreno_retransmits_on_partial_ack_where_reno_leaves_recovery() {
    for cc in [CcKind::NewReno, CcKind::Reno] {
        let mut c = established(config(cc), 65_535, 1_000_000, false);
        send!(c, at(100));
        recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
        send!(c, at(200));
        for i in 0..3 {
            recv!(c, at(201 + i), ack = seg_start(1), wnd = 65_535);
        }
        assert_eq!(data(&send!(c, at(203))), vec![(seg_start(1), 1000)]);
        recv!(c, at(300), ack = seg_start(4), wnd = 65_535);
        let out = data(&send!(c, at(300)));
        match cc {
            CcKind::NewReno => {
                assert_eq!(out, vec![(seg_start(4), 1000)]);
                assert_eq!(c.snapshot().cwnd, 6500);
                assert!(c.recovery.is_some());
                // Full ACK: cwnd = min(ssthresh 5500, max(FlightSize, MSS) + MSS).
                recv!(c, at(400), ack = seg_start(12), wnd = 65_535);
                assert!(c.recovery.is_none());
                assert_eq!(c.snapshot().cwnd, 1000 + 1000, "FlightSize 0 after the full ACK → MSS + MSS");
            }
            _ => {
                assert!(out.iter().all(|&(s, _)| s >= seg_start(12)), "Reno does not retransmit: {out:?}");
                assert_eq!(c.snapshot().ssthresh, 5500);
                assert!(c.recovery.is_none());
            }
        }
    }
}

/// Tahoe: three duplicate ACKs → ssthresh = 11000/2, cwnd one segment,
/// and the sender goes back to segment 1.
#[test]
fn tahoe_goes_back_to_one_segment() {
    let mut c = established(config(CcKind::Tahoe), 65_535, 1_000_000, false);
    send!(c, at(100));
    recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
    send!(c, at(200));
    for i in 0..3 {
        recv!(c, at(201 + i), ack = seg_start(1), wnd = 65_535);
    }
    assert_eq!(data(&send!(c, at(203))), vec![(seg_start(1), 1000)]);
    assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (1000, 5500));
    // The ACK of segment 1 (segments 2.. were received): cwnd 2000, and
    // Tahoe resends 2 and 3 (go-back-N), counted as retransmissions.
    recv!(c, at(300), ack = seg_start(2), wnd = 65_535);
    assert_eq!(data(&send!(c, at(300))), vec![(seg_start(2), 1000), (seg_start(3), 1000)]);
    assert_eq!(c.stats().retransmitted_segments, 3);
}

/// RFC 6675 scoreboard. Segments 1 and 4 lost of ten, SACK on. The
/// receiver's duplicate ACKs carry SACK blocks as segments 2, 3, 5, 6, 7
/// arrive. On the third: segment 1 has 3 SACKed segments above → lost;
/// FlightSize 11000 → cwnd = ssthresh = 5500; retransmit 1 (HighRxt 2001).
/// pipe = 1000 (1, retransmitted) + 1000 (4) + 6000 (6..11) = 8000.
/// With 5..7 SACKed segment 4 is lost: pipe = 1000 + 0 + 4000 (8..11)... at
/// 5..8 SACKed, pipe = 1000 + 3000 = 4000 ≤ 5500 − 1000: NextSeg rule 1
/// retransmits segment 4, before any partial ACK.
#[test]
fn sack_scoreboard_marks_losses_and_retransmits_the_second_hole() {
    let mut c = established(config(CcKind::Sack), 65_535, 1_000_000, true);
    assert!(c.sack_ok);
    send!(c, at(100));
    recv!(c, at(200), ack = seg_start(1), wnd = 65_535);
    send!(c, at(200));
    let s = |k: u64| seg_start(k);
    recv!(c, at(201), ack = s(1), wnd = 65_535, sack = [(s(2), s(3))]);
    recv!(c, at(202), ack = s(1), wnd = 65_535, sack = [(s(2), s(4))]);
    assert!(send!(c, at(202)).is_empty());
    recv!(c, at(203), ack = s(1), wnd = 65_535, sack = [(s(5), s(6)), (s(2), s(4))]);
    assert_eq!(data(&send!(c, at(203))), vec![(s(1), 1000)]);
    assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (5500, 5500));
    assert_eq!(c.snapshot().in_flight, 8000, "pipe");
    assert!(!c.sent[c.index_of(s(4)).unwrap()].lost);
    recv!(c, at(204), ack = s(1), wnd = 65_535, sack = [(s(5), s(7)), (s(2), s(4))]);
    assert!(send!(c, at(204)).is_empty());
    recv!(c, at(205), ack = s(1), wnd = 65_535, sack = [(s(5), s(8)), (s(2), s(4))]);
    assert!(c.sent[c.index_of(s(4)).unwrap()].lost, "three SACKed segments above");
    assert_eq!(c.snapshot().in_flight, 1000 + 4000);
    assert!(send!(c, at(205)).is_empty(), "cwnd − pipe = 500 < MSS");
    recv!(c, at(206), ack = s(1), wnd = 65_535, sack = [(s(5), s(9)), (s(2), s(4))]);
    assert_eq!(data(&send!(c, at(206))), vec![(s(4), 1000)]);
    assert_eq!(c.stats().fast_retransmits, 1);
    // Everything acknowledged: recovery ends, cwnd = ssthresh.
    recv!(c, at(300), ack = s(12), wnd = 65_535);
    assert!(c.recovery.is_none());
    assert_eq!(c.snapshot().cwnd, 5500);
}

/// RTO 300 ms after the handshake sample. Nothing comes back: the segment
/// is retransmitted at 300 ms after it was sent, then after 600, 1200, …
/// doubling up to 64× (19.2 s) and staying there. The ACK of the
/// retransmission gives no sample (Karn); the next new segment's does and
/// resets the backoff.
#[test]
fn rto_backoff_doubles_to_64x_and_karn_ignores_retransmissions() {
    let mut cfg = config(CcKind::NewReno);
    cfg.initial_window = 1;
    let mut c = established(cfg, 65_535, 2000, false);
    assert_eq!(data(&send!(c, at(100))), vec![(1, 1000)]);
    let mut now = at(100);
    let mut gaps = vec![];
    for _ in 0..8 {
        let t = c.poll_timeout().unwrap();
        gaps.push((t - now).as_nanos() / 1_000_000);
        now = t;
        c.handle_timeout(now);
        assert_eq!(data(&send!(c, now)), vec![(1, 1000)]);
    }
    assert_eq!(gaps, vec![300, 600, 1200, 2400, 4800, 9600, 19200, 19200]);
    assert_eq!((c.stats().timeouts, c.stats().retransmitted_segments), (8, 8));
    assert_eq!(c.snapshot().cwnd, 1000, "loss window");
    let srtt = c.snapshot().srtt;
    recv!(c, now + ms(100), ack = 1001, wnd = 65_535);
    assert_eq!(c.snapshot().srtt, srtt, "no sample from a retransmitted segment");
    assert_eq!(c.rtt.backoff(), 64, "backed-off RTO kept until a valid sample");
    let t = now + ms(100);
    assert_eq!(data(&send!(c, t)), vec![(1001, 1000)]);
    recv!(c, t + ms(100), ack = 2001, wnd = 65_535);
    assert_eq!(c.rtt.backoff(), 1);
    assert_eq!(c.stats().rtt_samples, 2);
}

/// Zero window: the peer acknowledges everything with window 0. The
/// persist timer (base RTO 1 s here) backs off 1, 2, 4, 8, 16, 32, 64 s
/// bounded to 5..60 s: probes at +5, +5, +5, +8, +16, +32, +60 s, each one
/// byte at the next unsent sequence number. A window update restarts
/// sending and stops the timer.
#[test]
fn persist_timer_probes_with_one_byte_and_backs_off_within_5_to_60_s() {
    let mut cfg = config(CcKind::Reno);
    cfg.min_rto = Duration::from_secs(1);
    cfg.initial_window = 2;
    let mut c = established(cfg, 65_535, 10_000, false);
    send!(c, at(100));
    recv!(c, at(200), ack = 2001, wnd = 0);
    assert!(send!(c, at(200)).is_empty());
    let mut now = at(200);
    let mut gaps = vec![];
    for _ in 0..7 {
        let t = c.poll_timeout().expect("persist timer armed");
        gaps.push((t - now).as_nanos() / 1_000_000_000);
        now = t;
        c.handle_timeout(now);
        let out = send!(c, now);
        assert_eq!(data(&out), vec![(2001, 1)], "a one-byte probe");
        recv!(c, now + ms(100), ack = 2001, wnd = 0);
        now += ms(100);
        assert!(send!(c, now).is_empty());
    }
    // The first interval is measured from the zero-window ACK, the others
    // from the previous probe's answer (100 ms after it was sent).
    assert_eq!(gaps, vec![5, 4, 4, 7, 15, 31, 59]);
    assert_eq!(c.stats().window_probes, 7);
    recv!(c, now + ms(1), ack = 2001, wnd = 4000);
    // cwnd grew to 3000 with the ACK of the first 2000 bytes.
    assert_eq!(data(&send!(c, now + ms(1))), vec![(2001, 1000), (3001, 1000), (4001, 1000)]);
    assert_eq!(c.timers.get(Timer::Persist), None);
}

/// The receiver's side of a zero window: the application does not read,
/// the window closes; a probe is refused with an ACK of window 0; reading
/// half the buffer sends a window update.
#[test]
fn receiver_closes_window_refuses_probe_and_sends_window_update() {
    let mut cfg = config(CcKind::Reno);
    cfg.rcv_buf = 4000;
    let mut server = answered_syn(cfg);
    let d = peer_data;
    server.handle_segment(at(10), &d(PEER_ISS + 1, 0));
    assert_eq!(server.state(), State::Established);
    let mut last = None;
    for k in 0..4 {
        server.handle_segment(at(20 + k), &d(PEER_ISS + 1 + k * 1000, 1000));
        last = send!(server, at(20 + k)).pop();
    }
    let last = last.unwrap();
    assert_eq!((last.ack, last.window), (PEER_ISS + 4001, 0), "buffer full");
    server.handle_segment(at(100), &d(PEER_ISS + 4001, 1));
    let refused = send!(server, at(100));
    assert_eq!((refused[0].ack, refused[0].window), (PEER_ISS + 4001, 0), "probe refused");
    assert_eq!(server.stats().duplicate_segments, 1);
}

#[test]
fn window_update_after_reading_from_a_closed_window() {
    let mut cfg = config(CcKind::Reno);
    cfg.rcv_buf = 4000;
    let mut server = answered_syn(cfg);
    let d = peer_data;
    for k in 0..4 {
        server.handle_segment(at(20 + k), &d(PEER_ISS + 1 + k * 1000, 1000));
        send!(server, at(20 + k));
    }
    // min(buffer/2, MSS) = 1000: reading 1000 bytes opens the window by
    // one segment, from zero: an update at once.
    assert_eq!(server.read(1000), 1000);
    let update = send!(server, at(200));
    assert_eq!(update.len(), 1);
    assert_eq!((update[0].ack, update[0].window, update[0].len), (PEER_ISS + 4001, 1000, 0));
}

/// Delayed ACKs (RFC 1122, RFC 5681 §4.2, seed 004 §4.2.2): one segment
/// waits for the timer; the second full segment is acknowledged at once;
/// an out-of-order segment at once (duplicate ACK); the segment filling
/// the hole at once.
#[test]
fn delayed_ack_rules() {
    let mut cfg = config(CcKind::Reno);
    cfg.delayed_ack = DelayedAck::On(ms(200));
    let mut server = answered_syn(cfg);
    let d = |k: u64| peer_data(PEER_ISS + 1 + k * 1000, 1000);
    server.handle_segment(at(10), &d(0));
    assert!(send!(server, at(10)).is_empty(), "first segment: ACK delayed");
    assert_eq!(server.poll_timeout(), Some(at(210)));
    server.handle_segment(at(20), &d(1));
    let acks = send!(server, at(20));
    assert_eq!(acks.len(), 1, "second full segment: ACK at once");
    assert_eq!(acks[0].ack, PEER_ISS + 2001);
    assert_eq!(server.poll_timeout(), None, "timer stopped");

    server.handle_segment(at(30), &d(2));
    assert!(send!(server, at(30)).is_empty());
    server.handle_timeout(at(230));
    let timed = send!(server, at(230));
    assert_eq!((timed.len(), timed[0].ack), (1, PEER_ISS + 3001), "the timer sends the ACK");
    server.handle_segment(at(240), &d(1)); // a duplicate
    assert_eq!(send!(server, at(240)).len(), 1, "a duplicate segment gets an ACK at once");

    server.handle_segment(at(300), &d(4)); // segment 3 missing
    let ooo = send!(server, at(300));
    assert_eq!(ooo.len(), 1, "out of order: ACK at once");
    assert_eq!(ooo[0].ack, PEER_ISS + 3001, "a duplicate ACK");
    server.handle_segment(at(310), &d(3)); // fills the hole
    let filled = send!(server, at(310));
    assert_eq!(filled.len(), 1, "hole filled: ACK at once");
    assert_eq!(filled[0].ack, PEER_ISS + 5001);
}

#[test]
fn delayed_ack_timer_fires() {
    let mut cfg = config(CcKind::Reno);
    cfg.delayed_ack = DelayedAck::On(ms(40));
    let mut server = answered_syn(cfg);
    let seg = peer_data(PEER_ISS + 1, 300);
    server.handle_segment(at(10), &seg);
    assert!(send!(server, at(10)).is_empty());
    server.handle_timeout(at(49));
    assert!(send!(server, at(49)).is_empty(), "early call is a no-op");
    server.handle_timeout(at(50));
    let ack = send!(server, at(50));
    assert_eq!((ack.len(), ack[0].ack), (1, PEER_ISS + 301));
}

#[test]
fn sack_blocks_most_recent_first() {
    let mut cfg = config(CcKind::Sack);
    cfg.sack = true;
    let mut server = Connection::listen(cfg);
    let syn = Segment {
        seq: PEER_ISS,
        flags: Flags::SYN,
        window: 65_535,
        mss: Some(1000),
        sack_permitted: true,
        ..Default::default()
    };
    server.handle_segment(at(0), &syn);
    assert!(send!(server, at(0))[0].sack_permitted);
    let d = |k: u64| peer_data(PEER_ISS + 1 + k * 1000, 1000);
    server.handle_segment(at(1), &d(0));
    server.handle_segment(at(2), &d(2));
    server.handle_segment(at(3), &d(5));
    server.handle_segment(at(4), &d(3));
    let acks = send!(server, at(4));
    let b = |k: u64| PEER_ISS + 1 + k * 1000;
    assert_eq!(acks.last().unwrap().sack.as_slice(), &[(b(2), b(4)), (b(5), b(6))]);
    assert_eq!(acks.last().unwrap().ip_size(), 40 + 4 + 16);
}

// ----------------------------------------------------------------------
// Two ends in virtual time
// ----------------------------------------------------------------------

struct Wire {
    delay: Duration,
    /// (arrival, to_server, segment)
    in_flight: Vec<(Instant, bool, Segment)>,
    sent: u64,
}

/// Drives a client sending `bytes` then closing, and a server reading
/// everything and closing when the client's FIN arrives, over a wire with
/// one-way `delay`; `lose(n, segment)` drops the n-th segment sent.
/// Fails after `max_steps` steps (livelock guard).
fn transfer(
    client_cfg: TcpConfig,
    server_cfg: TcpConfig,
    bytes: u64,
    delay: Duration,
    mut lose: impl FnMut(u64, &Segment) -> bool,
    max_steps: u32,
) -> (Connection, Connection, Instant) {
    let mut client = Connection::connect(client_cfg, Instant::ZERO);
    client.send(bytes).unwrap();
    client.close();
    let mut server = Connection::listen(server_cfg);
    let mut wire = Wire { delay, in_flight: Vec::new(), sent: 0 };
    let mut now = Instant::ZERO;
    let mut server_closed = false;
    for _ in 0..max_steps {
        // Deliver what is due.
        wire.in_flight.sort_by_key(|(t, _, _)| *t);
        while wire.in_flight.first().is_some_and(|(t, _, _)| *t <= now) {
            let (_, to_server, seg) = wire.in_flight.remove(0);
            if to_server {
                server.handle_segment(now, &seg);
            } else {
                client.handle_segment(now, &seg);
            }
        }
        for c in [&mut client, &mut server] {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
        server.read(u64::MAX);
        if server.peer_closed() && !server_closed {
            server.close();
            server_closed = true;
        }
        for (to_server, c) in [(true, &mut client), (false, &mut server)] {
            while let Some(seg) = c.poll_transmit(now) {
                wire.sent += 1;
                if !lose(wire.sent, &seg) {
                    wire.in_flight.push((now + wire.delay, to_server, seg));
                }
            }
        }
        if client.is_closed() && server.is_closed() {
            return (client, server, now);
        }
        let next = [wire.in_flight.iter().map(|x| x.0).min(), client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) => now = t.max(now),
            None => panic!("stuck at {now}: client {:?}, server {:?}", client.state(), server.state()),
        }
    }
    panic!("not done after {max_steps} steps: client {:?}, server {:?}", client.state(), server.state());
}

#[test]
fn short_flow_handshake_data_close_and_time_wait() {
    let mut cfg = config(CcKind::NewReno);
    cfg.time_wait = Duration::from_secs(2);
    let (client, server, end) = transfer(cfg.clone(), cfg, 5000, ms(50), |_, _| false, 1000);
    assert_eq!(server.stats().bytes_received, 5000);
    assert_eq!(client.stats().bytes_acked, 5000);
    assert!(!client.was_reset() && !server.was_reset());
    // SYN at 0, SYN-ACK at 50, data with the ACK at 100 (IW 10 holds all
    // 5000 bytes and the FIN), ACK + FIN at 150, last ACK at 200; the
    // client then waits 2 s in TIME-WAIT.
    assert_eq!(end, at(2200));
    assert_eq!(client.stats().retransmitted_segments, 0);
}

#[test]
fn every_variant_completes_a_transfer_through_periodic_loss() {
    for cc in [CcKind::Tahoe, CcKind::Reno, CcKind::NewReno, CcKind::Sack, CcKind::Cubic] {
        for delayed in [DelayedAck::Off, DelayedAck::On(ms(200))] {
            let mut cfg = config(cc);
            cfg.sack = matches!(cc, CcKind::Sack | CcKind::Cubic);
            cfg.delayed_ack = delayed;
            cfg.rcv_buf = 20_000;
            let (client, server, _) =
                transfer(cfg.clone(), cfg, 300_000, ms(20), |n, _| n % 13 == 0 || n % 29 == 0, 200_000);
            assert_eq!(server.stats().bytes_received, 300_000, "{cc:?} {delayed:?}");
            assert_eq!(client.stats().bytes_acked, 300_000, "{cc:?} {delayed:?}");
            assert!(client.stats().retransmitted_segments > 0);
        }
    }
}

#[test]
fn lost_syn_and_syn_ack_are_retransmitted() {
    let cfg = config(CcKind::Reno);
    // Lose the first SYN and the first SYN-ACK: the client's timer (1 s)
    // resends the SYN, the server's resends the SYN-ACK.
    let mut synack_lost = false;
    let lose = move |n: u64, s: &Segment| {
        if n == 1 {
            return true;
        }
        if s.syn() && s.has_ack() && !synack_lost {
            synack_lost = true;
            return true;
        }
        false
    };
    let (client, server, _) = transfer(cfg.clone(), cfg, 1000, ms(10), lose, 1000);
    assert_eq!((client.stats().timeouts, server.stats().timeouts), (1, 1));
    assert_eq!((client.stats().retransmitted_segments, server.stats().retransmitted_segments), (1, 1));
    assert_eq!(client.stats().bytes_acked, 1000);
}

/// The Linux profile ([`TcpConfig::linux`]): each behaviour against a
/// figure worked out by hand from the RFC or the kernel's formula.
mod linux {
    use super::*;
    use crate::congestion::HyStartExit;

    /// Linux's settings with the scripted peer's MSS of 1000 bytes.
    fn linux() -> TcpConfig {
        TcpConfig { mss: MSS, iss: 0, ..TcpConfig::linux() }
    }

    /// RFC 6928's IW10, and RFC 7323 timestamps taking 12 bytes of each
    /// segment: with an MSS of 1460 the payload is 1448 and the packet 1500
    /// bytes (Linux's `tcp_current_mss`).
    #[test]
    fn ten_segments_of_1448_bytes_in_the_first_rtt() {
        let cfg = TcpConfig { iss: 0, ..TcpConfig::linux() };
        let mut c = Connection::connect(cfg, at(0));
        let syn = send!(c, at(0));
        let ts = syn[0].timestamp.expect("the SYN offers timestamps");
        assert_eq!(syn[0].ip_size(), 60, "MSS, SACK-permitted + timestamps, window scale: 20 option bytes");
        let synack = Segment {
            seq: PEER_ISS,
            ack: 1,
            flags: Flags::SYN | Flags::ACK,
            window: 65_535,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamp: Some(Timestamp { value: 7000, echo: ts.value }),
            ..Default::default()
        };
        c.handle_segment(at(100), &synack);
        c.send(1_000_000).unwrap();
        let out = send!(c, at(100));
        let sizes: Vec<(u32, u32)> = out.iter().filter(|s| s.len > 0).map(|s| (s.len, s.ip_size())).collect();
        assert_eq!(sizes, vec![(1448, 1500); 10]);
        assert!(out.iter().all(|s| s.timestamp.is_some_and(|t| t.echo == 7000)), "every segment echoes TS.Recent");
        assert_eq!(c.send_mss(), 1448);
    }

    /// The kernel's RTO after the SYN-ACK's 100 ms sample: SRTT 100,
    /// rttvar max(2·100, rto_min 200) = 200, RTO 300 ms. The loss probe
    /// (RFC 8985 §7.2) is armed at 2·SRTT + 2 ms = 202 ms after the
    /// flight of 10 segments, before that RTO.
    #[test]
    fn rto_and_probe_timeout_after_the_handshake() {
        let mut c = established(linux(), 65_535, 100_000, true);
        assert_eq!(c.snapshot().rto, ms(300));
        assert_eq!(data(&send!(c, at(100))).len(), 10);
        assert_eq!(c.timers.get(Timer::Rto), Some(at(400)));
        assert_eq!(c.poll_timeout(), Some(at(302)));
    }

    /// RACK (RFC 8985 §6.2): ten segments sent at 100 ms; the 8th (k = 7)
    /// is lost. The ACK at 200 of the first seven gives RACK.min_rtt 100.
    /// SACKs of k = 8 (at 201) and k = 8..9 (at 202) are only two
    /// duplicate ACKs: RFC 5681 would wait for the RTO. RACK: k = 7 was
    /// sent no later than the delivered k = 9, so it is lost at 100 +
    /// RACK.rtt (102) + reo_wnd (min_rtt/4 = 25, fewer than 3 SACKed
    /// segments) = 227 ms; the reordering timer is armed for the wait
    /// (25 ms) plus 2 ms at 202: the retransmission leaves at 229 ms.
    #[test]
    fn rack_retransmits_after_the_reordering_window_with_two_dupacks() {
        let mut c = established(linux(), 65_535, 10_000, true);
        assert_eq!(data(&send!(c, at(100))).len(), 10);
        let s = seg_start;
        recv!(c, at(200), ack = s(7), wnd = 65_535);
        assert!(send!(c, at(200)).is_empty());
        recv!(c, at(201), ack = s(7), wnd = 65_535, sack = [(s(8), s(9))]);
        recv!(c, at(202), ack = s(7), wnd = 65_535, sack = [(s(8), s(10))]);
        assert!(send!(c, at(202)).is_empty());
        assert_eq!(c.stats().dupacks_received, 2);
        assert_eq!(c.poll_timeout(), Some(at(229)));
        c.handle_timeout(at(229));
        assert_eq!(data(&send!(c, at(229))), vec![(s(7), 1000)]);
        assert_eq!((c.stats().fast_retransmits, c.stats().timeouts), (1, 0));
        // PRR (RFC 6937) on entering recovery: nothing else in flight
        // (k = 8, 9 SACKed), so the window is the one retransmission.
        assert_eq!(c.snapshot().cwnd, 1000);
        // Recovery ends with everything acknowledged: cwnd = ssthresh =
        // half of the 17-segment window (10 + 7 in slow start) = 8.
        recv!(c, at(330), ack = s(10), wnd = 65_535);
        assert!(c.recovery.is_none());
        assert_eq!(c.snapshot().cwnd, 8000);
    }

    /// The duplicate threshold is RACK's too (RFC 8985 §6.2 step 4; Linux
    /// `tcp_rack_reo_wnd` compares sacked_out with tp->reordering, which
    /// net.ipv4.tcp_reordering sets): on the sequence above with
    /// `dupack_threshold` 2, the second SACKed segment makes reo_wnd zero,
    /// so k = 7 (sent at 100, RACK.rtt 102) is lost at 202 ms, at once,
    /// instead of at 229 ms.
    #[test]
    fn rack_reordering_window_closes_at_the_duplicate_threshold() {
        let mut cfg = linux();
        cfg.dupack_threshold = 2;
        let mut c = established(cfg, 65_535, 10_000, true);
        assert_eq!(data(&send!(c, at(100))).len(), 10);
        let s = seg_start;
        recv!(c, at(200), ack = s(7), wnd = 65_535);
        recv!(c, at(201), ack = s(7), wnd = 65_535, sack = [(s(8), s(9))]);
        assert!(send!(c, at(201)).is_empty(), "one SACKed segment: reo_wnd is still 25 ms");
        recv!(c, at(202), ack = s(7), wnd = 65_535, sack = [(s(8), s(10))]);
        assert_eq!(data(&send!(c, at(202))), vec![(s(7), 1000)]);
        assert_eq!(c.stats().fast_retransmits, 1);
    }

    /// PRR (RFC 6937) in a connection: ten segments at 100 ms, the first
    /// lost, the others SACKed one per ms from 200 ms. The first two SACKs
    /// let one new segment each go (k = 10, 11: RFC 3042, as Linux's
    /// in-flight count does). The third finds segment 0 lost (RACK's
    /// reo_wnd is 0 with 3 SACKed): recovery, ssthresh = 10/2 = 5 segments
    /// (Linux halves cwnd), prior_cwnd 10. Then per SACK, with pipe =
    /// the retransmission + unSACKed segments:
    ///
    /// | SACK | delivered | pipe | sndcnt | sent |
    /// | --- | --- | --- | --- | --- |
    /// | 3 | 1 | 8 > 5 | ⌈1·5/10⌉ − 0 = 1 | segment 0 again |
    /// | 4 | 2 | 8 | ⌈2·5/10⌉ − 1 = 0 | — |
    /// | 5 | 3 | 7 | ⌈3·5/10⌉ − 1 = 1 | 12 |
    /// | 6 | 4 | 7 | 2 − 2 = 0 | — |
    /// | 7 | 5 | 6 | ⌈5·5/10⌉ − 2 = 1 | 13 |
    /// | 8 | 6 | 6 | 3 − 3 = 0 | — |
    /// | 9 | 7 | 5 ≤ 5 | min(5 − 5, max(0, 1)) = 0 | — |
    ///
    /// one segment per two delivered while pipe > ssthresh.
    ///
    /// Without transmit units: with them the second SACK comes 1 ms after
    /// segment 10 left, while segment 0's ACK is overdue, so Linux's
    /// `tcp_tso_should_defer` would hold segment 11 (the deferral has its
    /// own test below); this test is about PRR.
    #[test]
    fn prr_sends_one_segment_per_two_delivered_in_recovery() {
        let cfg = TcpConfig { transmit_units: false, ..linux() };
        let mut c = established(cfg, 65_535, 1_000_000, true);
        assert_eq!(data(&send!(c, at(100))).len(), 10);
        let s = seg_start;
        let mut sent = vec![];
        for k in 1..=9u64 {
            recv!(c, at(199 + k), ack = s(0), wnd = 65_535, sack = [(s(1), s(k + 1))]);
            sent.push(data(&send!(c, at(199 + k))));
        }
        assert_eq!(sent[0], vec![(s(10), 1000)]);
        assert_eq!(sent[1], vec![(s(11), 1000)]);
        assert_eq!(c.stats().fast_retransmits, 1);
        assert_eq!(c.snapshot().ssthresh, 5000);
        let counts: Vec<usize> = sent[2..].iter().map(Vec::len).collect();
        assert_eq!(counts, vec![1, 0, 1, 0, 1, 0, 0]);
        assert_eq!(sent[2], vec![(s(0), 1000)]);
        assert_eq!((sent[4][0].0, sent[6][0].0), (s(12), s(13)));
    }

    /// TLP (RFC 8985 §7): the last two of ten segments are lost. The ACK of
    /// the first eight comes at 200 ms (SRTT 100 ms, RTO 300 ms); the probe
    /// goes at 200 + 2·100 + 2 = 402 ms (RTO would be at 500), resending
    /// the last segment. Its SACK at 502 (an RTT later) lets RACK find the
    /// other one lost at once: retransmitted at 502, no timeout.
    #[test]
    fn tail_loss_probe_recovers_before_the_rto() {
        let mut c = established(linux(), 65_535, 10_000, true);
        assert_eq!(data(&send!(c, at(100))).len(), 10);
        let s = seg_start;
        recv!(c, at(200), ack = s(8), wnd = 65_535);
        assert!(send!(c, at(200)).is_empty());
        assert_eq!(c.timers.get(Timer::Rto), Some(at(500)));
        assert_eq!(c.poll_timeout(), Some(at(402)));
        c.handle_timeout(at(402));
        assert_eq!(data(&send!(c, at(402))), vec![(s(9), 1000)], "the probe resends the last segment");
        assert_eq!(c.stats().loss_probes, 1);
        recv!(c, at(502), ack = s(8), wnd = 65_535, sack = [(s(9), s(10))]);
        assert_eq!(data(&send!(c, at(502))), vec![(s(8), 1000)]);
        recv!(c, at(602), ack = s(10), wnd = 65_535);
        assert!(c.all_acked());
        assert_eq!(c.stats().timeouts, 0);
    }

    /// Quick-ACK mode (Linux `tcp_incr_quickack`): the offered window of
    /// 65535 bytes holds 32 two-segment pairs, so the first data starts
    /// min(32, 16) = 16 quick ACKs: one ACK per segment. Then an ACK every
    /// second full segment, and a lone segment waits 40 ms. Data out of
    /// order is ACKed at once (the peer has no SACK, so nothing is
    /// compressed), so is the segment that fills the hole (RFC 5681 §4.2),
    /// but as in Linux 6.x (`tcp_data_queue_ofo`) quick-ACK mode does not
    /// start again: the next lone segment waits. (The old rule, quick-ACK
    /// mode after reordering, fails the last assertion.)
    #[test]
    fn first_segments_are_acked_at_once_then_every_second_or_after_40_ms() {
        let mut server = answered_syn(linux());
        let base = PEER_ISS + 1;
        let seg = |k: u64| peer_data(base + k * 1000, 1000);
        for k in 0..16 {
            server.handle_segment(at(100 + k), &seg(k));
            let acks = send!(server, at(100 + k));
            assert_eq!(acks.len(), 1, "segment {k} is ACKed at once");
        }
        server.handle_segment(at(120), &seg(16));
        assert!(send!(server, at(120)).is_empty(), "the 17th waits");
        server.handle_segment(at(121), &seg(17));
        assert_eq!(send!(server, at(121)).len(), 1, "two full segments");
        server.handle_segment(at(130), &seg(18));
        assert!(send!(server, at(130)).is_empty());
        assert_eq!(server.poll_timeout(), Some(at(170)), "40 ms delayed-ACK timer");
        server.handle_timeout(at(170));
        assert_eq!(send!(server, at(170)).len(), 1);
        // A gap: k = 20 before 19.
        server.handle_segment(at(200), &seg(20));
        assert_eq!(send!(server, at(200)).len(), 1, "a duplicate ACK at once");
        server.handle_segment(at(201), &seg(19));
        assert_eq!(send!(server, at(201)).len(), 1, "the hole filled: at once");
        server.handle_segment(at(202), &seg(21));
        assert!(send!(server, at(202)).is_empty(), "no quick-ACK mode after the reordering");
    }

    /// SACK compression (tcp_input.c `__tcp_ack_snd_check`,
    /// `tcp_compressed_ack_kick`). The peer offers SACK and timestamps;
    /// our SYN-ACK leaves at 0 with TSval 1 (`ts_clock`), the peer's data
    /// comes every 5 ms from 20 ms echoing it: SRTT 20 ms (the SYN-ACK's
    /// sample) and a receiver RTT of 20 ms (the first echo), so a held
    /// ACK waits min(1 ms, 20/20 ms) + 100 µs slack = 1.1 ms. Segments
    /// 0–19 arrive in order (the first 16 quick-ACKed, then every second;
    /// 4 segments per 20 ms RTT never grow the window, so no quick ACK
    /// from that). Segment 20 is lost: 21, 22 and 23 are ACKed at once
    /// (`TCP_FASTRETRANS_THRESH`), 24 at 141.1 ms, 1.1 ms after it; 25
    /// and 26 come 0.5 ms apart and share one ACK at 150 + 1.1 ms, with
    /// the SACK block 21..27. The retransmitted 20 fills the hole: ACKed
    /// at once. Without compression (`sack_compression = false`, as
    /// before) 24 is ACKed at its arrival.
    #[test]
    fn sack_compression_holds_the_fourth_duplicate_ack_for_a_twentieth_of_the_rtt() {
        for compress in [true, false] {
            let cfg = TcpConfig { sack_compression: compress, ..linux() };
            let mut server = Connection::listen(cfg);
            let syn = Segment {
                seq: PEER_ISS,
                flags: Flags::SYN,
                window: 65_535,
                mss: Some(1000),
                sack_permitted: true,
                timestamp: Some(Timestamp { value: 500, echo: 0 }),
                ..Default::default()
            };
            server.handle_segment(at(0), &syn);
            let synack = send!(server, at(0));
            let tsval = synack[0].timestamp.expect("timestamps on").value;
            assert_eq!(tsval, 1);
            let base = PEER_ISS + 1;
            let seg = |k: u64| Segment {
                timestamp: Some(Timestamp { value: 600 + k as u32, echo: tsval }),
                ..peer_data(base + k * 1000, 1000)
            };
            let us = |n: u64| Instant::ZERO + Duration::from_micros(n);
            let mut acks = Vec::new();
            for k in 0..20u64 {
                server.handle_segment(at(20 + 5 * k), &seg(k));
                acks.extend(send!(server, at(20 + 5 * k)));
            }
            assert_eq!(acks.len(), 16 + 2, "16 quick ACKs, then one per two segments");
            assert_eq!(server.rtt.srtt(), Some(ms(20)));
            let arrive = |server: &mut Connection, t: Instant, k: u64| {
                server.handle_segment(t, &seg(k));
                send!(server, t)
            };
            for (k, t) in [(21, 125), (22, 130), (23, 135)] {
                assert_eq!(arrive(&mut server, at(t), k).len(), 1, "segment {k}: a duplicate ACK at once");
            }
            let held = arrive(&mut server, at(140), 24);
            if !compress {
                assert_eq!(held.len(), 1, "without compression, at once");
                continue;
            }
            assert!(held.is_empty(), "the fourth duplicate ACK is held");
            assert_eq!(server.poll_timeout(), Some(us(141_100)));
            server.handle_timeout(us(141_100));
            let ack = send!(server, us(141_100));
            assert_eq!(ack.len(), 1);
            assert_eq!(ack[0].ack, base + 20_000);
            assert!(arrive(&mut server, at(150), 25).is_empty());
            assert!(arrive(&mut server, us(150_500), 26).is_empty());
            assert_eq!(server.poll_timeout(), Some(us(151_100)), "the timer of 25, not restarted by 26");
            server.handle_timeout(us(151_100));
            let ack = send!(server, us(151_100));
            assert_eq!(ack.len(), 1, "one ACK for 25 and 26");
            assert_eq!(ack[0].sack.as_slice().first(), Some(&(base + 21_000, base + 27_000)));
            let filled = arrive(&mut server, at(155), 20);
            assert_eq!(filled.len(), 1);
            assert_eq!(filled[0].ack, base + 27_000);
        }
    }

    /// Whole transfers through periodic loss, with and without timestamps
    /// on the peer, finish (RACK, TLP, PRR and the RTO together do not
    /// livelock) and retransmit.
    #[test]
    fn linux_transfers_complete_through_periodic_loss() {
        for cc in [CcKind::Reno, CcKind::Cubic] {
            for timestamps in [true, false] {
                let cfg = TcpConfig { cc, timestamps, rcv_buf: 20_000, ..linux() };
                let (client, server, _) =
                    transfer(cfg.clone(), cfg, 300_000, ms(20), |n, _| n % 13 == 0 || n % 29 == 0, 200_000);
                assert_eq!(server.stats().bytes_received, 300_000, "{cc:?} {timestamps}");
                assert_eq!(client.stats().bytes_acked, 300_000, "{cc:?} {timestamps}");
                assert!(client.stats().retransmitted_segments > 0);
            }
        }
    }

    /// Linux's adaptive ACK timeout (`tcp_event_data_recv`,
    /// `tcp_delack_timer_handler`, `tcp_send_delayed_ack`). The handshake's
    /// 100 ms sample gives SRTT 100 ms and RTO 300 ms. After the 16 quick
    /// ACKs (segments 1 ms apart keep ato at 40 ms), a lone segment at
    /// 130 ms waits the 40 ms floor; the timer firing doubles ato to 80
    /// ms. The next lone segment (at 300, a gap of 170 ms: above ato, below
    /// the RTO, ato unchanged) waits min(80, SRTT 100, 500) = 80 ms. After
    /// that timer ato is min(160, RTO 300) = 160; a segment after a gap of
    /// 350 ms > RTO restarts quick-ACK mode: ACKed at once.
    #[test]
    fn a_missed_delayed_ack_doubles_the_ack_timeout() {
        let mut server = answered_syn(linux());
        let base = PEER_ISS + 1;
        let seg = |k: u64| peer_data(base + k * 1000, 1000);
        for k in 0..16 {
            server.handle_segment(at(100 + k), &seg(k));
            assert_eq!(send!(server, at(100 + k)).len(), 1);
        }
        assert_eq!(server.ato, ms(40));
        server.handle_segment(at(130), &seg(16));
        assert!(send!(server, at(130)).is_empty());
        assert_eq!(server.poll_timeout(), Some(at(170)));
        server.handle_timeout(at(170));
        assert_eq!(send!(server, at(170)).len(), 1);
        assert_eq!(server.ato, ms(80));
        server.handle_segment(at(300), &seg(17));
        assert!(send!(server, at(300)).is_empty());
        assert_eq!(server.poll_timeout(), Some(at(380)));
        server.handle_timeout(at(380));
        assert_eq!(send!(server, at(380)).len(), 1);
        assert_eq!(server.ato, ms(160));
        server.handle_segment(at(730), &seg(18));
        assert_eq!(send!(server, at(730)).len(), 1, "quick-ACK mode after a silence longer than the RTO");
    }

    /// A sender behind a bottleneck: `rate` bytes per second, a FIFO of
    /// `queue` packets, `delay` each way; ACKs come back without queueing.
    /// Returns the client after `until` and the packets the queue dropped.
    fn through_bottleneck(
        cfg: TcpConfig,
        rate: u64,
        queue: usize,
        delay: Duration,
        until: Instant,
    ) -> (Connection, Connection, u64) {
        let mut client = Connection::connect(cfg.clone(), Instant::ZERO);
        client.send(1 << 40).unwrap();
        let mut server = Connection::listen(cfg);
        // (arrival time, to server, segment); the bottleneck's departures.
        let mut wire: Vec<(Instant, bool, Segment)> = Vec::new();
        let mut departures: VecDeque<Instant> = VecDeque::new();
        let mut free_at = Instant::ZERO;
        let mut drops = 0;
        let mut now = Instant::ZERO;
        for _ in 0..2_000_000 {
            wire.sort_by_key(|(t, _, _)| *t);
            while wire.first().is_some_and(|(t, _, _)| *t <= now) {
                let (_, to_server, seg) = wire.remove(0);
                if to_server { server.handle_segment(now, &seg) } else { client.handle_segment(now, &seg) }
            }
            for c in [&mut client, &mut server] {
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
            }
            server.read(u64::MAX);
            while departures.front().is_some_and(|&t| t <= now) {
                departures.pop_front();
            }
            while let Some(seg) = client.poll_transmit(now) {
                if departures.len() >= queue {
                    drops += 1;
                    continue;
                }
                let tx = Duration::from_nanos(seg.ip_size() as u64 * 1_000_000_000 / rate);
                free_at = free_at.max(now) + tx;
                departures.push_back(free_at);
                wire.push((free_at + delay, true, seg));
            }
            while let Some(seg) = server.poll_transmit(now) {
                wire.push((now + delay, false, seg));
            }
            let next = [wire.iter().map(|x| x.0).min(), client.poll_timeout(), server.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .expect("something to do");
            now = next.max(now);
            if now >= until {
                return (client, server, drops);
            }
        }
        panic!("step bound reached at {now}");
    }

    /// HyStart (Linux tcp_cubic.c): 10 Mbit/s (1.25 MB/s), 30 ms each way,
    /// 1500-byte packets (1.2 ms each), a 200-packet queue. The pipe holds
    /// 50 packets. The receiver's window grows all through slow start
    /// (`tcp_grow_window`), so it ACKs every segment: ACKs 1.2 ms apart,
    /// within the 2 ms of an ACK train. From the round that starts with
    /// more than 50 packets out the link never idles, the round's ACKs
    /// form one train, and it outlasts half the minimum RTT (61/2 ms) at
    /// the round's 26th ACK: slow start ends at about 100 packets, well
    /// below the 250 of pipe and queue. CUBIC's first epoch then grows 5 %
    /// per RTT (`cnt` ≤ 20 before any loss), which does not fill them in
    /// 2 s. Without HyStart slow start runs on to ~330 packets and
    /// overflows the queue (hundreds of drops by 3 s, the first at 0.51 s).
    #[test]
    fn hystart_leaves_slow_start_before_the_queue_overflows() {
        let cubic = TcpConfig { cc: CcKind::Cubic, mss: 1460, ..linux() };
        let (with, _, drops_with) = through_bottleneck(cubic.clone(), 1_250_000, 200, ms(30), at(2000));
        let AnyCongestionControl::LinuxCubic(cc) = &with.cc else { panic!("cubic") };
        assert_eq!(cc.hystart_exit(), Some(HyStartExit::AckTrain));
        assert!((50..=130).contains(&(cc.ssthresh() / 1448)), "ssthresh {} B", cc.ssthresh());
        let without = TcpConfig { hystart: false, ..cubic };
        let (plain, _, drops_without) = through_bottleneck(without, 1_250_000, 200, ms(30), at(3000));
        assert_eq!(drops_with, 0, "no loss with HyStart in the first 2 s");
        assert!(drops_without > 10, "plain slow start overflows the queue: {drops_without} drops");
        assert!(plain.stats().retransmitted_segments > 10);
    }

    /// Linux's receiver ACKs every segment that grows its window
    /// (`tcp_grow_window`: `icsk_ack.quick |= 1`). Reno through the same
    /// bottleneck for 0.5 s (before slow start overflows the queue): slow
    /// start doubles the data per receiver RTT
    /// every round, so the clamp keeps rising and nearly every segment is
    /// ACKed at once; without the growth model only the first 16 are, then
    /// every second one.
    #[test]
    fn a_receiver_whose_window_grows_acks_every_segment() {
        let acks_per_segment = |grow_window| {
            let cfg = TcpConfig { cc: CcKind::Reno, mss: 1460, grow_window, ..linux() };
            let (_, server, drops) = through_bottleneck(cfg, 1_250_000, 200, ms(30), at(500));
            assert_eq!(drops, 0);
            server.stats().acks_sent as f64 / server.stats().data_segments_received as f64
        };
        let (with, without) = (acks_per_segment(true), acks_per_segment(false));
        assert!(with > 0.9, "ACKs per segment with a growing window: {with}");
        assert!(without < 0.6, "ACKs per segment with delayed ACKs: {without}");
    }

    /// Linux's tcp_fastretrans_alert (tcp_input.c) on an ACK that covers
    /// the recovery point while a segment sent after it is still marked
    /// lost: step D sets Open, step E finds the loss proven
    /// (tcp_time_to_recover: `lost_out`) and enters recovery again, before
    /// BBR's `cong_control` runs, so BBR sees one recovery (no packet
    /// conservation again, no window restored). Ten segments at 100 ms,
    /// segment 0 lost: its third SACK (202) starts recovery with the point
    /// at segment 12 (10 and 11 went at 200); 0 and 12 go at 204, 13–17
    /// paced at 215–230. At 310 a SACK of 13–15 marks 12 lost (and the
    /// retransmission of 0, sent with it); both go again. At 311 the ACK of
    /// 0–11 covers the point: recovery again at once, to segment 18.
    #[test]
    fn bbr_recovery_goes_on_while_a_loss_is_outstanding() {
        let cfg = TcpConfig { cc: CcKind::Bbr, ..linux() };
        let mut c = established(cfg, 65_535, 1_000_000, true);
        let s = seg_start;
        assert_eq!(data(&send!(c, at(100))).len(), 10);
        for k in 1..=9u64 {
            recv!(c, at(199 + k), ack = s(0), wnd = 65_535, sack = [(s(1), s(k + 1))]);
            send!(c, at(199 + k));
        }
        assert_eq!(c.recovery.map(|r| r.point), Some(s(12)));
        let later: Vec<_> = [215, 220, 230].iter().flat_map(|&t| data(&send!(c, at(t)))).collect();
        assert_eq!(later.iter().map(|d| d.0).collect::<Vec<_>>(), (13..18).map(s).collect::<Vec<_>>());
        recv!(c, at(310), ack = s(0), wnd = 65_535, sack = [(s(1), s(12)), (s(13), s(16))]);
        assert_eq!(data(&send!(c, at(310))), vec![(s(0), 1000), (s(12), 1000)]);
        recv!(c, at(311), ack = s(12), wnd = 65_535, sack = [(s(13), s(16))]);
        assert!(c.lost_out(), "segment 12 is marked lost, its retransmission out");
        assert_eq!(c.recovery.map(|r| r.point), Some(s(18)), "recovery again at once");
        assert_eq!(c.stats().fast_retransmits, 2);
    }

    /// Linux 6.18's first receive windows (net/ipv4/tcp_input.c
    /// `tcp_measure_rcv_mss`, `tcp_grow_window`, `tcp_incr_quickack`;
    /// include/net/tcp.h `tcp_dec_quickack_mode`). A peer with MSS 1460
    /// and window scaling sends 10 segments, then 14 more an RTT later,
    /// each read at once. The first data starts quick-ACK mode with
    /// min(16, window / 2 MSS) = 16 ACKs. It also sets `scaling_ratio` to
    /// 1460·256/2304 = 162, so the window clamp becomes 131 072·162/256 =
    /// 82 944 B: with the segment queued, `rcv_ssthresh` grows from
    /// 65 536 to 82 944 − 1460 = 81 484 in five steps of 2920 and one of
    /// 1348. Each growth sets `quick |= 1` (16 → 17) before its ACK takes
    /// one back, so the count is still 16 after six segments, and 12
    /// after ten: the next round's segments 10..21 are ACKed one by one
    /// (HyStart's ACK train at 20 ms RTT: an ACK every 1.2 ms at
    /// 10 Mbit/s), then every second one. With the clamp at 64 KiB (no
    /// growth) only 6 would be left.
    #[test]
    fn the_first_window_growth_keeps_quick_acks_for_the_second_round() {
        let mut server = Connection::listen(linux());
        let syn = Segment {
            seq: PEER_ISS,
            flags: Flags::SYN,
            window: 65_535,
            mss: Some(1460),
            window_scale: Some(7),
            ..Default::default()
        };
        server.handle_segment(at(0), &syn);
        assert_eq!(send!(server, at(0)).len(), 1, "a SYN-ACK");
        let seg = |k: u64| peer_data(PEER_ISS + 1 + k * 1460, 1460);
        let mut acks = Vec::new();
        let mut take = |server: &mut Connection, now: Instant, k: u64| {
            server.handle_segment(now, &seg(k));
            server.read(u64::MAX);
            if !send!(server, now).is_empty() {
                acks.push(k);
            }
        };
        for k in 0..10 {
            take(&mut server, at(100 + k), k);
        }
        assert_eq!(server.quick_acks, 12);
        for k in 10..24 {
            take(&mut server, at(200 + k), k);
        }
        let expected: Vec<u64> = (0..22).chain([23]).collect();
        assert_eq!(acks, expected);
        assert_eq!(server.rcv_space.as_ref().map(ReceiveSpace::window_cap), Some(81_484));
    }

    /// Dynamic right-sizing as Linux 6.18 runs it (tcp_input.c
    /// `tcp_rcv_space_adjust` from `tcp_recvmsg`, `tcp_rcvbuf_grow`,
    /// `tcp_grow_window` at the segment's arrival): rounds of 10, 20 and
    /// 30 segments of 1448 bytes 100 ms apart (segments 1 ms apart), each
    /// read at once, timestamps giving a receiver RTT of 100 ms. The
    /// first segment sets the clamp to 81 920 B (ratio 160), the window
    /// grows to 80 472 B. The second round's first read finds 100 ms since
    /// the measurement began: 11 segments (15 928 B) against 10, rcvwin
    /// 2·15 928 + 2·⌊31 856·1448/14 480⌋ = 38 226, below the clamp. The
    /// third round's first read (segment 30): 20 segments (28 960 B)
    /// against 11: 57 920 + 2·⌊57 920·13 032/15 928⌋ = 152 698 B, the
    /// figure a replay of these rules gives for Linux's captures at
    /// 60 ms. Segment 30 itself was taken before that read, so it does not
    /// grow the window and waits (a delayed ACK); from segment 31 the
    /// window grows by 2896 B per segment up to 152 698 − 1448: 25
    /// segments ACKed one by one (31..=55), then one ACK per two.
    #[test]
    fn the_clamp_moves_at_the_read_and_the_next_segment_grows_the_window() {
        let mut server = Connection::listen(linux());
        let syn = Segment {
            seq: PEER_ISS,
            flags: Flags::SYN,
            window: 65_535,
            mss: Some(1460),
            window_scale: Some(7),
            timestamp: Some(Timestamp { value: 1, echo: 0 }),
            ..Default::default()
        };
        server.handle_segment(at(0), &syn);
        let synack = send!(server, at(0));
        let echo = synack[0].timestamp.expect("timestamps on").value;
        // Segment k at `now`, echoing `echo`, read at once: ACKed now?
        let take = |server: &mut Connection, now: Instant, k: u64, echo: u32| {
            let seg = Segment {
                timestamp: Some(Timestamp { value: 2 + k as u32, echo }),
                ..peer_data(PEER_ISS + 1 + k * 1448, 1448)
            };
            server.handle_segment(now, &seg);
            server.read(u64::MAX);
            !send!(server, now).is_empty()
        };
        for k in 0..10 {
            take(&mut server, at(100 + k), k, echo);
        }
        // Each round echoes the ACK the receiver sent at its start: 100 ms.
        for k in 10..30 {
            take(&mut server, at(190 + k), k, echo + 100);
        }
        assert_eq!(server.rcv_space.as_ref().map(|s| s.window_cap()), Some(80_472));
        let acked: Vec<u64> = (30..60).filter(|&k| take(&mut server, at(270 + k), k, echo + 200)).collect();
        let expected: Vec<u64> = (31..=55).chain([57, 59]).collect();
        assert_eq!(acked, expected);
        assert_eq!(server.rcv_space.as_ref().map(|s| s.window_cap()), Some(152_698 - 1448));
    }

    /// A passive Linux end past its 16 quick ACKs (the first data's
    /// quick-ACK mode, see above): segments k = 0..16 taken and ACKed.
    fn past_quick_acks(cfg: TcpConfig) -> Connection {
        let mut server = answered_syn(cfg);
        for k in 0..16 {
            server.handle_segment(at(100 + k), &peer_data(PEER_ISS + 1 + k * 1000, 1000));
            assert_eq!(send!(server, at(100 + k)).len(), 1, "quick ACK {k}");
        }
        server
    }

    /// `tcp_measure_rcv_mss` and `__tcp_cleanup_rbuf`: a lone full
    /// segment with PSH is ACKed as soon as the application has read all
    /// the data, not after the 40 ms delayed-ACK timer; without PSH, or
    /// while data is left unread, it waits for the timer as before; the
    /// RFC profile ignores PSH.
    #[test]
    fn a_pushed_full_segment_is_acked_once_read() {
        let pushed = |k: u64| Segment { flags: Flags::ACK | Flags::PSH, ..peer_data(PEER_ISS + 1 + k * 1000, 1000) };
        let mut server = past_quick_acks(linux());
        server.read(u64::MAX);
        server.handle_segment(at(120), &pushed(16));
        assert!(send!(server, at(120)).is_empty(), "not before the application reads");
        assert_eq!(server.read(u64::MAX), 1000);
        let ack = send!(server, at(120));
        assert_eq!(ack.len(), 1, "the read sends the pushed ACK");
        assert_eq!(ack[0].ack, PEER_ISS + 1 + 17 * 1000);
        // The same segment without PSH waits for the timer.
        server.handle_segment(at(130), &peer_data(PEER_ISS + 1 + 17 * 1000, 1000));
        server.read(u64::MAX);
        assert!(send!(server, at(130)).is_empty());
        assert_eq!(server.poll_timeout(), Some(at(170)));
        // A read that leaves data unread does not send it.
        server.handle_timeout(at(170));
        assert_eq!(send!(server, at(170)).len(), 1);
        server.handle_segment(at(180), &pushed(18));
        assert_eq!(server.read(500), 500);
        assert!(send!(server, at(180)).is_empty(), "500 bytes still unread");
        assert_eq!(server.read(u64::MAX), 500);
        assert_eq!(send!(server, at(180)).len(), 1);
        // Without the rule (RFC profile's setting) PSH changes nothing.
        let mut server = past_quick_acks(TcpConfig { ack_pushed: false, ..linux() });
        server.read(u64::MAX);
        server.handle_segment(at(120), &pushed(16));
        server.read(u64::MAX);
        assert!(send!(server, at(120)).is_empty());
    }

    /// `tcp_tso_autosize` with `tcp_update_pacing_rate`: after the
    /// handshake's 100 ms sample, cwnd 10 in slow start paces at 200 % of
    /// 10·1000 B / 100 ms = 200 000 B/s; >> 10 is 195 bytes, less than a
    /// segment, so a unit is `tcp_min_tso_segs` = 2 segments and the
    /// initial window goes as five units, PSH on k = 1, 3, 5, 7, 9. With a
    /// 1 ms handshake the rate is 20 000 000 B/s, >> 10 = 19 531 bytes:
    /// units of 19 segments, but `tcp_cwnd_test` lets out at most half the
    /// window (5 segments) at a time: two units of 5, each a GSO packet
    /// with PSH (`__tcp_transmit_skb`) on k = 4 and 9.
    #[test]
    fn transmit_units_follow_the_pacing_rate_and_end_with_psh() {
        let mut c = established(linux(), 65_535, 1_000_000, true);
        assert_eq!(c.linux_pacing_rate(), Some(200_000));
        assert_eq!(c.unit_bytes(), 2000);
        let out = send!(c, at(100));
        let psh: Vec<bool> = out.iter().filter(|s| s.len > 0).map(|s| s.flags.contains(Flags::PSH)).collect();
        assert_eq!(psh, (0..10).map(|k| k % 2 == 1).collect::<Vec<_>>());

        let mut c = established_at(linux(), at(1), 65_535, 1_000_000, true);
        assert_eq!(c.linux_pacing_rate(), Some(20_000_000));
        assert_eq!(c.unit_bytes(), 19_000);
        let out = send!(c, at(1));
        let psh: Vec<bool> = out.iter().filter(|s| s.len > 0).map(|s| s.flags.contains(Flags::PSH)).collect();
        assert_eq!(psh, (0..10).map(|k| k == 4 || k == 9).collect::<Vec<_>>());
    }

    /// `tcp_tso_should_defer`. Handshake at 10 ms (SRTT 10 ms), ssthresh
    /// 10 segments (congestion avoidance from the start), units of 2
    /// segments (120 % of 10·1000 B / 10 ms = 1.2 MB/s, >> 10 = 1171 B).
    /// The first window, k = 0..9, leaves at 10 ms; each ACK below
    /// acknowledges one segment, so the window lets out one segment of a
    /// two-segment unit:
    ///
    /// - at 20 ms (k = 0 ACKed) nothing has left for 10 ms: k = 10 goes
    ///   alone, a one-segment unit without PSH;
    /// - at 20.5 ms (k = 1) data left 0.5 ms ago, the room (1000) is below
    ///   a third of the window (10 000 / 3), and the oldest segment out,
    ///   k = 2, sent at 10 ms, is due at 10 + SRTT (10.06 ms after the
    ///   10.5 ms sample) = 20.06 ms, within min(SRTT/2, 1 ms) of now: the
    ///   segment waits;
    /// - at 21 ms (k = 2) the room is two segments: the unit k = 11..12
    ///   leaves whole, PSH on k = 12.
    ///
    /// k = 10 carries no PSH (`__tcp_transmit_skb` forces it only on
    /// packets of more than one segment).
    ///
    /// At 23 ms instead of 20.5 (more than 1 ms after the last send)
    /// k = 11 goes at once.
    #[test]
    fn a_unit_the_window_cuts_waits_for_the_next_ack() {
        let start = |cfg: TcpConfig| {
            let mut c = established_at(cfg, at(10), 65_535, 1_000_000, true);
            assert_eq!(c.unit_bytes(), 2000);
            assert_eq!(data(&send!(c, at(10))).len(), 10);
            c
        };
        let cfg = TcpConfig { initial_ssthresh: 10_000, ..linux() };
        let s = seg_start;
        let us = |n: u64| Instant::from_micros(n);
        let mut c = start(cfg.clone());
        recv!(c, at(20), ack = s(1), wnd = 65_535);
        let out = send!(c, at(20));
        assert_eq!(data(&out), vec![(s(10), 1000)]);
        assert!(!out[0].flags.contains(Flags::PSH));
        recv!(c, us(20_500), ack = s(2), wnd = 65_535);
        assert!(send!(c, us(20_500)).is_empty(), "k = 11 waits for the next ACK");
        recv!(c, at(21), ack = s(3), wnd = 65_535);
        let out = send!(c, at(21));
        assert_eq!(data(&out), vec![(s(11), 1000), (s(12), 1000)]);
        assert!(!out[0].flags.contains(Flags::PSH) && out[1].flags.contains(Flags::PSH));

        let mut c = start(cfg);
        recv!(c, at(20), ack = s(1), wnd = 65_535);
        send!(c, at(20));
        recv!(c, at(23), ack = s(2), wnd = 65_535);
        assert_eq!(data(&send!(c, at(23))), vec![(s(11), 1000)]);
    }
    /// A unit the window cuts and does not hold is a unit of its own,
    /// PSH on its last segment, as Linux's captures at 50 Mbit/s show (PSH
    /// gaps of 2 and 3 segments between the 4-segment units). Handshake at
    /// 10 ms (SRTT 10 ms), 35 segments in congestion avoidance (ssthresh
    /// 10): 120 % of 35·1000 B / 10 ms = 4.2 MB/s, >> 10 = 4101 bytes,
    /// units of 4 segments; the first window (half of it at most, 17)
    /// goes as eight units of 4 and one of 3, PSH on k = 3, 7, …, 31, 34.
    ///
    /// - at 20 ms the ACK of k = 0..1 leaves room for two segments, and
    ///   nothing has left for 10 ms (`tcp_tso_should_defer` sends): k = 35
    ///   and 36 go as one unit, PSH on k = 36;
    /// - at 20.5 ms (k = 2..3 ACKed) data left 0.5 ms ago, the room
    ///   (2000) is below a third of min(35 000, 65 535), and the oldest
    ///   segment out (k = 4, sent at 10 ms) is due at 10 + 10 = 20 ms,
    ///   before now + min(5, 1) ms: the two segments wait;
    /// - at 21 ms (k = 4..5) the room is four segments, a whole unit:
    ///   k = 37..40, PSH on k = 40.
    #[test]
    fn a_unit_the_window_cuts_ends_with_psh() {
        let cfg = TcpConfig { initial_window: 35, initial_ssthresh: 10_000, ..linux() };
        let mut c = established_at(cfg, at(10), 65_535, 1_000_000, true);
        assert_eq!(c.unit_bytes(), 4000);
        let s = seg_start;
        let pushed = |out: &[Segment]| -> Vec<u64> {
            out.iter().filter(|x| x.flags.contains(Flags::PSH)).map(|x| (x.seq - 1) / 1000).collect()
        };
        let out = send!(c, at(10));
        assert_eq!(data(&out).len(), 35);
        assert_eq!(pushed(&out), vec![3, 7, 11, 15, 19, 23, 27, 31, 34]);
        recv!(c, at(20), ack = s(2), wnd = 65_535);
        let out = send!(c, at(20));
        assert_eq!(data(&out), vec![(s(35), 1000), (s(36), 1000)]);
        assert_eq!(pushed(&out), vec![36]);
        recv!(c, Instant::from_micros(20_500), ack = s(4), wnd = 65_535);
        assert!(send!(c, Instant::from_micros(20_500)).is_empty(), "held for the next ACK");
        recv!(c, at(21), ack = s(6), wnd = 65_535);
        let out = send!(c, at(21));
        assert_eq!(data(&out), (37..41).map(|k| (s(k), 1000)).collect::<Vec<_>>());
        assert_eq!(pushed(&out), vec![40]);
    }
}
