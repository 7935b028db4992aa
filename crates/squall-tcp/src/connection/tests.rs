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
            completes_through_periodic_loss(cfg, &format!("{cc:?} {delayed:?}"));
        }
    }
}

/// 300 000 bytes between two ends of `cfg` over 20 ms each way, every 13th
/// and 29th segment lost: the transfer completes (the server receives
/// every byte, the client sees all acknowledged) and has retransmitted.
fn completes_through_periodic_loss(cfg: TcpConfig, what: &str) {
    let (client, server, _) = transfer(cfg.clone(), cfg, 300_000, ms(20), |n, _| n % 13 == 0 || n % 29 == 0, 200_000);
    assert_eq!(server.stats().bytes_received, 300_000, "{what}");
    assert_eq!(client.stats().bytes_acked, 300_000, "{what}");
    assert!(client.stats().retransmitted_segments > 0, "{what}");
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
mod linux;

/// The retransmission queue's counts against the walks they replaced.
mod rtx_counts;
