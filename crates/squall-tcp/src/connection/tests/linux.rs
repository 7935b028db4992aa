//! The Linux profile ([`TcpConfig::linux`]): each behaviour against a
//! figure worked out by hand from the RFC or the kernel's formula.

use std::collections::VecDeque;

use super::*;
use crate::congestion::HyStartExit;

/// Linux's settings with the scripted peer's MSS of 1000 bytes.
fn linux() -> TcpConfig {
    TcpConfig { mss: MSS, iss: 0, ..TcpConfig::linux() }
}

/// Ten segments at 100 ms, the first lost: at 199 + k ms (k = 1..=9) an
/// ACK of nothing new SACKs segments 1..=k, and the connection sends what
/// it may after each. Returns what each of those nine sends let out.
fn first_of_ten_lost(c: &mut Connection) -> Vec<Vec<(u64, u32)>> {
    let s = seg_start;
    assert_eq!(data(&send!(c, at(100))).len(), 10);
    (1..=9u64)
        .map(|k| {
            recv!(c, at(199 + k), ack = s(0), wnd = 65_535, sack = [(s(1), s(k + 1))]);
            data(&send!(c, at(199 + k)))
        })
        .collect()
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

/// The ACK that ends recovery also grows the window (Linux 6.18
/// tcp_input.c `tcp_ack`: `tcp_fastretrans_alert` leaves Recovery first,
/// `tcp_try_undo_recovery` setting Open and `tcp_end_cwnd_reduction`
/// cwnd = ssthresh; then `tcp_cong_control`, the state no longer reducing
/// the window, calls `tcp_cong_avoid` with the ACK's delivered segments).
/// The sequence above: recovery ends at 330 with the ACK of the
/// retransmitted k = 7 (k = 8, 9 were SACKed), one segment delivered:
/// cwnd = ssthresh = 8, then `tcp_cong_avoid_ai(w = 8, acked = 1)`:
/// snd_cwnd_cnt = 1 (it was zeroed when recovery began,
/// `tcp_init_cwnd_reduction`). Eight new segments go; ACKs of one
/// segment each then count 2, 3, …: the seventh makes it 8 = w and cwnd
/// 9. Without that first count the seventh leaves cwnd at 8 (7 < 8).
#[test]
fn the_ack_that_ends_recovery_counts_toward_the_next_increase() {
    let mut c = established(linux(), 65_535, 10_000, true);
    assert_eq!(data(&send!(c, at(100))).len(), 10);
    let s = seg_start;
    recv!(c, at(200), ack = s(7), wnd = 65_535);
    recv!(c, at(201), ack = s(7), wnd = 65_535, sack = [(s(8), s(9))]);
    recv!(c, at(202), ack = s(7), wnd = 65_535, sack = [(s(8), s(10))]);
    c.handle_timeout(at(229));
    assert_eq!(data(&send!(c, at(229))), vec![(s(7), 1000)]);
    recv!(c, at(330), ack = s(10), wnd = 65_535);
    assert!(c.recovery.is_none());
    assert_eq!(c.snapshot().cwnd, 8000);
    c.send(20_000).unwrap();
    assert_eq!(data(&send!(c, at(330))).len(), 8);
    for k in 1..=6u64 {
        recv!(c, at(430 + k), ack = s(10 + k), wnd = 65_535);
        send!(c, at(430 + k));
    }
    assert_eq!(c.snapshot().cwnd, 8000, "six segments after the recovery's one: 7 < 8");
    recv!(c, at(437), ack = s(17), wnd = 65_535);
    assert_eq!(c.snapshot().cwnd, 9000, "the seventh: 1 + 7 = 8 = w");
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
    let s = seg_start;
    let sent = first_of_ten_lost(&mut c);
    assert_eq!(sent[0], vec![(s(10), 1000)]);
    assert_eq!(sent[1], vec![(s(11), 1000)]);
    assert_eq!(c.stats().fast_retransmits, 1);
    assert_eq!(c.snapshot().ssthresh, 5000);
    let counts: Vec<usize> = sent[2..].iter().map(Vec::len).collect();
    assert_eq!(counts, vec![1, 0, 1, 0, 1, 0, 0]);
    assert_eq!(sent[2], vec![(s(0), 1000)]);
    assert_eq!((sent[4][0].0, sent[6][0].0), (s(12), s(13)));
}

/// Outside recovery Linux's window test counts what is in flight, not
/// what is outstanding (net/ipv4/tcp_output.c `tcp_write_xmit` →
/// `tcp_cwnd_test`: room = cwnd − `tcp_packets_in_flight`, include/net/
/// tcp.h: packets_out − (sacked_out + lost_out) + retrans_out). Ten
/// segments at 100 ms; k = 1 is lost. At 200 the receiver, holding k = 0
/// for a delayed ACK, answers k = 2 at once: ACK of k = 0 with a SACK of
/// k = 2. That ACK moves SND.UNA (no duplicate, no RFC 3042 allowance)
/// and delivers two segments: slow start takes cwnd from 10 to 12
/// (`tcp_cong_avoid` gets acked_sacked = 2). Linux, in Disorder
/// (`tcp_try_keep_open`: sacked_out > 0), counts 9 out − 1 SACKed = 8 in
/// flight: room 12 − 8 = 4, segments 10–13 go (counting the SACKed one
/// too, the room would be 12 − 9 = 3). At 202 the SACK of k = 3 (a
/// duplicate ACK, cwnd unchanged: `tcp_may_raise_cwnd` needs
/// FLAG_DATA_ACKED): 13 out − 2 SACKed = 11, room 1, segment 14 goes
/// (RFC 3042 would give 13 outstanding against 12 + 1 segments: none).
/// k = 1 is not lost yet: RACK's deadline is 100 + 102 + 25 = 227 ms.
///
/// Without transmit units, whose deferral would hold the segments the
/// room cuts from a unit (its own tests are below); this test is about the
/// window.
#[test]
fn sacked_segments_leave_room_for_new_ones_outside_recovery() {
    let cfg = TcpConfig { transmit_units: false, ..linux() };
    let mut c = established(cfg, 65_535, 1_000_000, true);
    let s = seg_start;
    assert_eq!(data(&send!(c, at(100))).len(), 10);
    recv!(c, at(200), ack = s(1), wnd = 65_535, sack = [(s(2), s(3))]);
    assert_eq!(c.snapshot().cwnd, 12 * MSS as u64);
    let sent: Vec<_> = data(&send!(c, at(200))).iter().map(|d| d.0).collect();
    assert_eq!(sent, [s(10), s(11), s(12), s(13)]);
    recv!(c, at(202), ack = s(1), wnd = 65_535, sack = [(s(2), s(4))]);
    assert_eq!(c.snapshot().cwnd, 12 * MSS as u64);
    assert_eq!(data(&send!(c, at(202))), vec![(s(14), 1000)]);
    assert!(c.recovery.is_none());
    assert_eq!(c.stats().fast_retransmits, 0);
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

/// A lost retransmission of the first unacknowledged segment, found by
/// RACK, restarts the RTO when it is sent again (net/ipv4/tcp_output.c
/// `tcp_xmit_retransmit_queue`: `if (skb == rtx_head ...) rearm_timer
/// = true`, then `tcp_reset_xmit_timer(sk, ICSK_TIME_RETRANS,
/// icsk_rto, ...)`). Eleven segments; ten go at 100 ms (SRTT 100, RTO
/// 300 from the handshake), the first is lost. The SACK of k = 1..=9
/// at 200 (RTT sample 100: SRTT 100, RTO stays 300) makes k = 0 lost
/// (RACK.rtt 100, reo_wnd 0 with 9 SACKed: deadline 100 + 100 = 200):
/// recovery, k = 0 again and k = 10 at 200 (PRR: pipe 0 below ssthresh
/// 5000, sndcnt = min(5000, 9000) = 5000), RTO at 200 + 300 = 500.
/// That retransmission is lost too. The SACK of k = 10 at 300 (sent at
/// 200, RTT 100) makes it lost (deadline 200 + 100 + 0 = 300): k = 0
/// goes a third time at 300 and the RTO moves to 300 + 300 = 600. Its
/// ACK, delayed by a queue, comes at 550: no timeout. (With the RTO
/// left at 500, as RFC 6298 §5.1 alone would keep it, it fires 50 ms
/// before that ACK.)
#[test]
fn a_retransmission_of_the_first_segment_restarts_the_rto() {
    let cfg = TcpConfig { transmit_units: false, ..linux() };
    let mut c = established(cfg, 65_535, 11_000, true);
    let s = seg_start;
    assert_eq!(data(&send!(c, at(100))).len(), 10);
    recv!(c, at(200), ack = s(0), wnd = 65_535, sack = [(s(1), s(10))]);
    assert_eq!(data(&send!(c, at(200))), vec![(s(0), 1000), (s(10), 1000)]);
    assert_eq!(c.snapshot().rto, ms(300));
    assert_eq!(c.timers.get(Timer::Rto), Some(at(500)));
    recv!(c, at(300), ack = s(0), wnd = 65_535, sack = [(s(1), s(11))]);
    assert_eq!(data(&send!(c, at(300))), vec![(s(0), 1000)], "the lost retransmission, found by RACK");
    assert_eq!(c.timers.get(Timer::Rto), Some(at(600)));
    c.handle_timeout(at(500));
    assert!(send!(c, at(500)).is_empty());
    recv!(c, at(550), ack = s(11), wnd = 65_535);
    assert!(c.all_acked());
    assert_eq!((c.stats().fast_retransmits, c.stats().timeouts), (1, 0));
    assert_eq!(c.stats().retransmitted_segments, 2);
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

/// The scripted peer's SYN offering SACK, with MSS `mss`, window scale
/// `window_scale` and, with `tsval`, timestamps.
fn peer_sack_syn(mss: u16, window_scale: Option<u8>, tsval: Option<u32>) -> Segment {
    Segment {
        seq: PEER_ISS,
        flags: Flags::SYN,
        window: 65_535,
        mss: Some(mss),
        window_scale,
        sack_permitted: true,
        timestamp: tsval.map(|value| Timestamp { value, echo: 0 }),
        ..Default::default()
    }
}

/// The peer's data segment `k` (1448 bytes after its SYN) with TSval
/// 2 + k echoing `echo`, arriving at `now`; returns what `server` sends
/// at once, then reads everything.
fn take_segment(server: &mut Connection, now: Instant, echo: u32, k: u64) -> Vec<Segment> {
    let seg = Segment {
        timestamp: Some(Timestamp { value: 2 + k as u32, echo }),
        ..peer_data(PEER_ISS + 1 + k * 1448, 1448)
    };
    server.handle_segment(now, &seg);
    let sent = send!(server, now);
    server.read(u64::MAX);
    sent
}

/// A passive end with `cfg` that took the scripted peer's SYN at 0
/// (MSS 1000, SACK-permitted, TSval 500) and sent its SYN-ACK; returns it
/// and the SYN-ACK's TSval.
fn accepted_with_sack_and_timestamps(cfg: TcpConfig) -> (Connection, u32) {
    let mut server = Connection::listen(cfg);
    server.handle_segment(at(0), &peer_sack_syn(1000, None, Some(500)));
    let synack = send!(server, at(0));
    (server, synack[0].timestamp.expect("timestamps on").value)
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
        let (mut server, tsval) = accepted_with_sack_and_timestamps(cfg);
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
            completes_through_periodic_loss(cfg, &format!("{cc:?} {timestamps}"));
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
    first_of_ten_lost(&mut c);
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

/// Dynamic right-sizing's rounds (tests below): a passive end with
/// timestamps takes rounds of 10 and 20 segments of 1448 bytes at 100 ms
/// and 200 ms (segments 1 ms apart), then 40 more from `third` ms, each
/// read at once, each round echoing the ACK the receiver sent at its
/// start (a receiver RTT of 100 ms). Returns the third round's segments
/// ACKed at once and the window cap it ends with.
fn drs_third_round(third: u64) -> (Vec<u64>, Option<u64>) {
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
    for k in 10..30 {
        take(&mut server, at(190 + k), k, echo + 100);
    }
    assert_eq!(server.rcv_space.as_ref().map(|s| s.window_cap()), Some(80_472));
    let acked = (30..70).filter(|&k| take(&mut server, at(third - 30 + k), k, echo + 200)).collect();
    (acked, server.rcv_space.as_ref().map(|s| s.window_cap()))
}

/// Dynamic right-sizing as Linux 6.18 runs it (tcp_input.c
/// `tcp_rcv_space_adjust` from `tcp_recvmsg`, `tcp_rcvbuf_grow`,
/// `tcp_grow_window` at the segment's arrival), rounds of
/// [`drs_third_round`] with the third from 301 ms. The first segment sets
/// the clamp to 81 920 B (ratio 160), the window grows to 80 472 B. The
/// second round's first read (segment 10, 200 ms) finds 100 ms since the
/// measurement began: 11 segments (15 928 B) against 10, rcvwin
/// 2·15 928 + 2·⌊31 856·1448/14 480⌋ = 38 226, below the clamp. The third round's
/// first read (segment 30, 301 ms; the 101 ms sample moves the receiver's
/// RTT to 100.125 ms): 20 segments (28 960 B) against 11: 57 920 +
/// 2·⌊57 920·13 032/15 928⌋ = 152 698 B, the figure a replay of these
/// rules gives for Linux's captures at 60 ms. Segment 30 itself was taken
/// before that read, so it does not grow the window and waits (a delayed
/// ACK); from segment 31 the window grows by 2896 B per segment up to
/// 152 698 − 1448: 25 segments ACKed one by one (31..=55), then one ACK
/// per two.
#[test]
fn the_clamp_moves_at_the_read_and_the_next_segment_grows_the_window() {
    let (acked, cap) = drs_third_round(301);
    let expected: Vec<u64> = (31..=55).chain((57..70).step_by(2)).collect();
    assert_eq!(acked, expected);
    assert_eq!(cap, Some(152_698 - 1448));
}

/// The read follows the receive path's ACK (tcp_input.c
/// `tcp_rcv_established`: `__tcp_ack_snd_check`, then `tcp_data_ready`
/// wakes the reader; Linux 6.18's `tcp_rcv_space_adjust` refreshes
/// `tcp_mstamp` at the read). Rounds of [`drs_third_round`] with the
/// third from 300 ms, exactly one receiver RTT (100 ms) after the
/// second's first segment: that segment (10) was ACKed at once (a quick
/// ACK), so the measurement began at its read, 1 µs after 200 ms.
/// Segment 30 waits for its ACK and is read at 300 ms: 1 µs short of the
/// RTT, no adjustment. Segment 31 is ACKed at once (two segments
/// unacknowledged) and read 1 µs after 301 ms: 21 segments (30 408 B)
/// against 11: rcvwin 60 816 + 2·⌊60 816·14 480/15 928⌋ = 171 390 B.
/// From segment 32 the window grows by 2896 B per segment up to
/// 171 390 − 1448 = 169 942: ⌈89 470/2896⌉ = 31 segments ACKed one by
/// one (32..=62), then one per two. Linux's receivers at 10 Mbit/s and
/// 20 ms, where 20 segments take 24.000 ms of link time and the
/// receiver's RTT is 24 ms, offered a last window of 166·1024 after
/// the same 31 growths in 12 of 14 runs. A read at the arrival in both
/// cases made a tie that adjusted at segment 30 (20 segments: 152 698
/// B, 25 growths, 31..=55).
#[test]
fn a_read_after_an_ack_at_once_ends_the_receivers_rtt_later() {
    let (acked, cap) = drs_third_round(300);
    let expected: Vec<u64> = (31..=62).chain((64..70).step_by(2)).collect();
    assert_eq!(acked, expected);
    assert_eq!(cap, Some(171_390 - 1448));
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

/// `tcp_tso_should_defer` sends at once when the rest of the writer's
/// buffer at the head of the write queue fits the room ("Middle in queue
/// won't get any more data, full sendable already?"), the rest first
/// grown to the unit from the next buffer (`tcp_write_xmit`'s
/// `tcp_grow_skb`). Peer window 65 535: buffers of min(65 215, 65 535 /
/// 2) = 32 767 bytes, 32 segments (`tcp_xmit_size_goal`,
/// `tcp_bound_to_half_wnd`): k = 0..31, 32..63. Handshake at 10 ms (SRTT
/// 10 ms), 30 segments in congestion avoidance: 120 % of 30·1000 B / 10
/// ms = 3.6 MB/s, >> 10 = 3515 bytes, units of 3 segments.
///
/// - at 20 ms the ACK of k = 0 leaves room for one segment and nothing
///   has left for 10 ms: k = 30 goes alone, no PSH;
/// - at 20.5 ms (k = 1..2 ACKed) the room is two segments, data left
///   0.5 ms ago, 2000 < 30 000 / 3, and the ACK of k = 3 (sent at 10 ms)
///   is due at 20 ms, within min(5, 1) ms: the ACK-soon rule alone would
///   hold them (as k = 11 in `a_unit_the_window_cuts_waits_for_the_next_ack`),
///   but the buffer has one segment left, k = 31, which fits: grown by k
///   = 32 from the next buffer, the unit k = 31..32 goes, PSH on 32.
#[test]
fn the_rest_of_a_buffer_that_fits_goes_at_once() {
    let cfg = TcpConfig { initial_window: 30, initial_ssthresh: 10_000, ..linux() };
    let mut c = established_at(cfg, at(10), 65_535, 1_000_000, true);
    assert_eq!(c.unit_bytes(), 3000);
    assert_eq!(data(&send!(c, at(10))).len(), 30);
    let s = seg_start;
    recv!(c, at(20), ack = s(1), wnd = 65_535);
    let out = send!(c, at(20));
    assert_eq!(data(&out), vec![(s(30), 1000)]);
    assert!(!out[0].flags.contains(Flags::PSH));
    recv!(c, Instant::from_micros(20_500), ack = s(3), wnd = 65_535);
    let out = send!(c, Instant::from_micros(20_500));
    assert_eq!(data(&out), vec![(s(31), 1000), (s(32), 1000)]);
    assert!(!out[0].flags.contains(Flags::PSH) && out[1].flags.contains(Flags::PSH));
}

/// A one-segment unit that ends the writer's buffer carries the buffer's
/// PSH (tcp.c `tcp_sendmsg_locked` marks a buffer with `tcp_mark_push`;
/// tcp_output.c `tso_fragment` leaves the mark on the tail, the part not
/// yet sent). Buffers k = 0..31, 32..63 as above, 30 segments in
/// congestion avoidance at 10 ms. At 20 ms the ACK of k = 0 leaves room
/// for one segment: k = 30 goes alone, no PSH (not a buffer's end). At 22
/// ms the ACK of k = 1: room for one again, data last left 2 ms ago (no
/// deferral): k = 31, the buffer's last segment, goes alone with PSH.
#[test]
fn a_one_segment_unit_that_ends_a_buffer_carries_psh() {
    let cfg = TcpConfig { initial_window: 30, initial_ssthresh: 10_000, ..linux() };
    let mut c = established_at(cfg, at(10), 65_535, 1_000_000, true);
    assert_eq!(data(&send!(c, at(10))).len(), 30);
    let s = seg_start;
    recv!(c, at(20), ack = s(1), wnd = 65_535);
    let out = send!(c, at(20));
    assert_eq!(data(&out), vec![(s(30), 1000)]);
    assert!(!out[0].flags.contains(Flags::PSH));
    recv!(c, at(22), ack = s(2), wnd = 65_535);
    let out = send!(c, at(22));
    assert_eq!(data(&out), vec![(s(31), 1000)]);
    assert!(out[0].flags.contains(Flags::PSH), "k = 31 ends the buffer k = 0..31");
}

/// The same rule for a window-based algorithm (tcp_input.c
/// `tcp_fastretrans_alert`: step D's `tcp_end_cwnd_reduction` sets
/// cwnd = ssthresh and `tcp_try_undo_recovery` sets Open; step E's
/// `tcp_time_to_recover` finds `lost_out` and `tcp_enter_recovery` takes
/// a new ssthresh at once). Cubic, ten segments at 100 ms, segment 0
/// lost: the third SACK (202) starts recovery with the point at segment
/// 11 (10 went at 200 by limited transmit); ssthresh = 10·717/1024 = 7
/// (tcp_cubic.c `cubictcp_recalc_ssthresh`). PRR (`tcp_cwnd_reduction`)
/// sends 0 again at 202 and 11–15 at 204–208, one per SACK: after 208
/// prr_delivered 7, prr_out 6. The retransmission of 0 and segment 11 are
/// lost: at 306 a SACK of 10 and 12–13 (3 delivered) marks both lost
/// (sent before 13, RACK's reordering window 0 in recovery); in flight
/// 14, 15 = 2, delta 7 − 2 = 5, sndcnt min(5, max(10 − 6, 3)) = 4: 0, 11,
/// 16, 17 go. At 307 the SACK of 14–15: in flight 0, 11, 16, 17 = 4,
/// sndcnt min(3, max(12 − 10, 2)) = 2: 18, 19 go. At 406 the ACK of 0–10
/// covers the point while 11, retransmitted at 306, is still marked lost.
/// Linux: cwnd = ssthresh = 7, then a new recovery to segment 20 with
/// prior_cwnd 7 and ssthresh 7·717/1024 = 4; in flight 11, 16–19 = 5 >
/// 4, so sndcnt = ⌈4·1/7⌉ − 0 = 1: cwnd 6, new segment 20 goes. Waiting
/// for a new loss instead leaves the connection Open with cwnd 7 against
/// 9 segments outstanding (11–19, SACKed ones counted), sending nothing
/// until the cumulative ACK that opens a burst.
#[test]
fn cubic_recovery_starts_again_while_a_loss_is_outstanding() {
    let cfg = TcpConfig { cc: CcKind::Cubic, ..linux() };
    let mut c = established(cfg, 65_535, 1_000_000, true);
    let s = seg_start;
    first_of_ten_lost(&mut c);
    assert_eq!(c.recovery.map(|r| r.point), Some(s(11)));
    assert_eq!(c.snapshot().ssthresh, 7 * MSS as u64);
    recv!(c, at(306), ack = s(0), wnd = 65_535, sack = [(s(1), s(11)), (s(12), s(14))]);
    let resent: Vec<_> = data(&send!(c, at(306))).iter().map(|d| d.0).collect();
    assert_eq!(resent, [s(0), s(11), s(16), s(17)]);
    recv!(c, at(307), ack = s(0), wnd = 65_535, sack = [(s(1), s(11)), (s(12), s(16))]);
    assert_eq!(data(&send!(c, at(307))), vec![(s(18), 1000), (s(19), 1000)]);
    recv!(c, at(406), ack = s(11), wnd = 65_535, sack = [(s(12), s(16))]);
    assert_eq!(c.recovery.map(|r| r.point), Some(s(20)), "recovery again at once");
    assert_eq!(c.stats().fast_retransmits, 2);
    assert_eq!(c.snapshot().ssthresh, 4 * MSS as u64);
    assert_eq!(data(&send!(c, at(406))), vec![(s(20), 1000)]);
    assert_eq!(c.snapshot().cwnd, 6 * MSS as u64);
}

/// The Loss state after a timeout, worked from Linux 6.18
/// (net/ipv4/tcp_input.c `tcp_enter_loss`, `tcp_timeout_mark_lost`,
/// `tcp_process_loss`; net/ipv4/tcp_output.c `tcp_xmit_retransmit_queue`,
/// `tcp_cwnd_test`; include/net/tcp.h `tcp_packets_in_flight` =
/// packets_out − (sacked_out + lost_out) + retrans_out). Reno, 14
/// segments k = 0..=13, MSS 1000, RTT 100 ms, no transmit units.
///
/// - 100: k = 0..=9 go (IW 10).
/// - 200: ACK of nothing, SACK of k = 3..=6. RACK.rtt 100, reo_wnd 0
///   (4 SACKed ≥ 3): k = 0..=2 lost. Recovery, ssthresh 10/2 = 5; PRR:
///   in flight 10 − 4 − 3 = 3 below ssthresh, sndcnt = min(5 − 3, 4) = 2:
///   k = 0 and 1 go again, the RTO is at 200 + 300 = 500. Those two and
///   k = 7..=9 are lost.
/// - 500, the RTO, in Recovery (no F-RTO: `new_recovery` is false and
///   `icsk_retransmits` 0): every segment not SACKed is marked lost (all
///   were sent over RACK.rtt ago), the retransmissions of k = 0 and 1
///   with them: lost_out 6, retrans_out 0, in flight 0. ssthresh stays 5
///   (Recovery's high_seq, k = 10, is above SND.UNA); cwnd = 0 + 1 = 1;
///   k = 0 goes again.
/// - 600, ACK of k = 0 with the SACK: slow start, cwnd 2; in flight 0:
///   `tcp_xmit_retransmit_queue` sends k = 1 and 2.
/// - 700, ACK of k = 1 (k = 2's retransmission still on its way): cwnd 3;
///   in flight 1 (k = 2, lost and retransmitted), room 2: k = 3..=6 are
///   SACKed and skipped, k = 7 and 8 go. (Counting the SACKed segments
///   between SND.UNA and the next to send, as a go-back does, 5
///   segments would be out against 3: nothing would go.)
/// - 701, ACK of k = 2, through k = 6: cwnd 4 (one segment delivered;
///   k = 3..=6 were counted when SACKed); in flight 2 (k = 7, 8): k = 9
///   goes, then new data under the same count: k = 10.
/// - 800, ACK of k = 7: cwnd 5 = ssthresh; in flight 3 (k = 8, 9, 10):
///   every lost segment is out (retrans_out 2 ≥ lost_out 2), new k = 11
///   and 12. Nothing is SACKed any more, but no loss probe is armed in
///   the Loss state (`tcp_schedule_loss_probe` wants Open or CWR).
/// - 801, ACK of k = 8: congestion avoidance, cwnd 5; in flight 4: k = 13.
/// - 802, ACK of k = 9: SND.UNA reaches high_seq (k = 10): Loss ends.
#[test]
fn the_loss_state_skips_sacked_segments_and_counts_what_is_in_flight() {
    let cfg = TcpConfig { cc: CcKind::Reno, transmit_units: false, ..linux() };
    let mut c = established(cfg, 65_535, 14_000, true);
    let s = seg_start;
    let sent_at = |c: &mut Connection, t: u64| data(&send!(c, at(t))).iter().map(|d| d.0).collect::<Vec<_>>();
    assert_eq!(sent_at(&mut c, 100), (0..10).map(s).collect::<Vec<_>>());
    recv!(c, at(200), ack = s(0), wnd = 65_535, sack = [(s(3), s(7))]);
    assert_eq!(sent_at(&mut c, 200), [s(0), s(1)]);
    assert_eq!(c.snapshot().ssthresh, 5 * MSS as u64);
    assert_eq!(c.timers.get(Timer::Rto), Some(at(500)));
    c.handle_timeout(at(500));
    assert_eq!(c.stats().timeouts, 1);
    assert_eq!(sent_at(&mut c, 500), [s(0)]);
    assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (MSS as u64, 5 * MSS as u64));
    recv!(c, at(600), ack = s(1), wnd = 65_535, sack = [(s(3), s(7))]);
    assert_eq!(sent_at(&mut c, 600), [s(1), s(2)]);
    recv!(c, at(700), ack = s(2), wnd = 65_535, sack = [(s(3), s(7))]);
    assert_eq!(c.snapshot().cwnd, 3 * MSS as u64);
    assert_eq!(sent_at(&mut c, 700), [s(7), s(8)]);
    recv!(c, at(701), ack = s(7), wnd = 65_535);
    assert_eq!(c.snapshot().cwnd, 4 * MSS as u64);
    assert_eq!(sent_at(&mut c, 701), [s(9), s(10)]);
    recv!(c, at(800), ack = s(8), wnd = 65_535);
    assert_eq!(sent_at(&mut c, 800), [s(11), s(12)]);
    assert_eq!(c.timers.get(Timer::LossProbe), None);
    recv!(c, at(801), ack = s(9), wnd = 65_535);
    assert_eq!(c.snapshot().cwnd, 5 * MSS as u64);
    assert_eq!(sent_at(&mut c, 801), [s(13)]);
    assert!(c.in_loss);
    recv!(c, at(802), ack = s(10), wnd = 65_535);
    assert!(!c.in_loss && c.recovery.is_none(), "the Loss state ends at high_seq");
    assert_eq!((c.stats().timeouts, c.stats().fast_retransmits), (1, 1));
}

/// A timeout leaves what was sent within the last RACK.rtt in flight, and
/// the window counts it (tcp_input.c `tcp_timeout_mark_lost`: `skb !=
/// head && tcp_rack_skb_timeout(tp, skb, 0) > 0` is skipped;
/// `tcp_enter_loss`: cwnd = `tcp_packets_in_flight` + 1). Reno: k =
/// 0..=9 at 100, all ACKed at 200 (RACK.rtt 100, cwnd 20): k = 10..=14
/// go at 200 and are lost. The loss probe at 200 + 2·100 + 2 = 402
/// resends k = 14 and moves the RTO to 402 + 300 = 702. At 690 the
/// application writes one more segment, k = 15. At 702, the RTO: k =
/// 10..=13 and the probe's k = 14 were sent over 100 ms ago and are
/// marked lost, k = 15 (12 ms ago) is not; k = 14 keeps its
/// retransmission flag (`tcp_mark_skb_lost` only clears it on a segment
/// already lost), so packets_out 6 − lost_out 5 + retrans_out 1 = 2 are
/// in flight: cwnd 3, ssthresh 20/2 = 10, and k = 10 goes again (in
/// flight 3, nothing more). At 802 the ACK of k = 10 (RACK.rtt 100;
/// reo_wnd 0 from Recovery on, the Loss state included:
/// `tcp_rack_reo_wnd`) finds the probe's k = 14 (due at 502) and k = 15
/// (sent at 690, before k = 10's retransmission: due at 790, where
/// Open's reo_wnd of min_rtt/4 would make it 815) lost. A retransmission
/// lost (FLAG_LOST_RETRANS): Recovery starts at once (F-RTO, which Linux
/// would run for a timeout in Open, is not modelled; this fall-through
/// comes after it in `tcp_fastretrans_alert`). PRR: ssthresh 2, in
/// flight 0, delivered 1, newly lost 2: sndcnt = min(2 − 0, max(1, 1)) =
/// 1, k = 11 goes.
#[test]
fn a_timeout_leaves_the_segments_sent_within_rack_rtt_in_flight() {
    let cfg = TcpConfig { cc: CcKind::Reno, transmit_units: false, ..linux() };
    let mut c = established(cfg, 65_535, 15_000, true);
    let s = seg_start;
    assert_eq!(data(&send!(c, at(100))).len(), 10);
    recv!(c, at(200), ack = s(10), wnd = 65_535);
    assert_eq!(data(&send!(c, at(200))).len(), 5);
    assert_eq!(c.poll_timeout(), Some(at(402)));
    c.handle_timeout(at(402));
    assert_eq!(data(&send!(c, at(402))), vec![(s(14), 1000)], "the probe");
    assert_eq!(c.timers.get(Timer::Rto), Some(at(702)));
    c.send(1000).unwrap();
    assert_eq!(data(&send!(c, at(690))), vec![(s(15), 1000)]);
    assert_eq!(c.poll_timeout(), Some(at(702)));
    c.handle_timeout(at(702));
    assert_eq!(c.stats().timeouts, 1);
    let marks: Vec<(bool, bool)> = c.sent.iter().map(|x| (x.lost, x.rack_rtx)).collect();
    assert_eq!(marks, [(true, false), (true, false), (true, false), (true, false), (true, true), (false, false)]);
    assert_eq!((c.snapshot().cwnd, c.snapshot().ssthresh), (3 * MSS as u64, 10 * MSS as u64));
    assert_eq!(data(&send!(c, at(702))), vec![(s(10), 1000)]);
    recv!(c, at(802), ack = s(11), wnd = 65_535);
    assert!(!c.in_loss);
    assert_eq!(c.recovery.map(|r| r.point), Some(s(16)));
    assert!(c.sent.iter().all(|x| x.lost && !x.rack_rtx), "k = 11..=15 lost");
    assert_eq!(data(&send!(c, at(802))), vec![(s(11), 1000)]);
}

/// In the Loss state a retransmission that RACK finds lost starts
/// Recovery at once (tcp_input.c `tcp_identify_packet_loss` sets
/// FLAG_LOST_RETRANS, and `tcp_fastretrans_alert` falls through from
/// TCP_CA_Loss to `tcp_time_to_recover` and `tcp_enter_recovery`),
/// whatever high_seq. The start of
/// [`the_loss_state_skips_sacked_segments_and_counts_what_is_in_flight`]
/// to 600, where k = 1 and 2 go again with cwnd 2. The retransmission of
/// k = 1 is lost, k = 2's arrives: at 700 the ACK still asks for k = 1
/// and SACKs k = 2..=6. RACK: k = 2 sent at 600 and delivered, RACK.rtt
/// 100, reo_wnd 0 (state ≥ Recovery): k = 1, sent at 600 before it, is
/// due at 700 and lost again. Recovery: ssthresh max(2/2, 2) = 2, PRR
/// with prior_cwnd 2; in flight 9 − 5 SACKed − 4 lost = 0, delivered 1:
/// sndcnt = min(2 − 0, max(1 − 0, 1)) = 1, k = 1 goes a third time.
#[test]
fn a_lost_retransmission_in_the_loss_state_starts_recovery() {
    let cfg = TcpConfig { cc: CcKind::Reno, transmit_units: false, ..linux() };
    let mut c = established(cfg, 65_535, 14_000, true);
    let s = seg_start;
    assert_eq!(data(&send!(c, at(100))).len(), 10);
    recv!(c, at(200), ack = s(0), wnd = 65_535, sack = [(s(3), s(7))]);
    assert_eq!(data(&send!(c, at(200))).len(), 2);
    c.handle_timeout(at(500));
    assert_eq!(data(&send!(c, at(500))), vec![(s(0), 1000)]);
    recv!(c, at(600), ack = s(1), wnd = 65_535, sack = [(s(3), s(7))]);
    assert_eq!(data(&send!(c, at(600))), vec![(s(1), 1000), (s(2), 1000)]);
    recv!(c, at(700), ack = s(1), wnd = 65_535, sack = [(s(2), s(7))]);
    assert!(!c.in_loss);
    assert_eq!(c.recovery.map(|r| r.point), Some(s(10)));
    assert_eq!((c.stats().fast_retransmits, c.snapshot().ssthresh), (2, 2 * MSS as u64));
    assert_eq!(data(&send!(c, at(700))), vec![(s(1), 1000)]);
}

/// The timestamp clock's phase ([`TcpConfig::clock_phase`]): the clock
/// reads ⌊(t + phase)/1 ms⌋ + 1 (RFC 7323 §5.4, Linux's millisecond
/// `tcp_time_stamp_ms`), so with 0.4 ms it ticks 0.6 ms past each
/// millisecond: an ACK sent at 24.3 ms carries 25, one at 24.6 ms 26.
/// The receiver's RTT comes in those ticks (`tcp_rcv_rtt_measure_ts`):
/// the SYN-ACK leaves at 0 with TSval 1 whatever the phase below 1 ms;
/// data echoing it arrives at 24.3 ms: 25 − 1 = 24 ms with phase 0 or
/// 0.4 ms, 26 − 1 = 25 ms with 0.8 ms (24.3 + 0.8 = 25.1).
#[test]
fn the_timestamp_clock_ticks_at_its_phase() {
    let us = |n: u64| Instant::ZERO + Duration::from_micros(n);
    for (phase_us, tsvals, rcv_rtt_ms) in [(0, [25, 25], 24), (400, [25, 26], 24), (800, [26, 26], 25)] {
        let cfg = TcpConfig { clock_phase: Duration::from_micros(phase_us), ..linux() };
        let (mut server, tsval) = accepted_with_sack_and_timestamps(cfg);
        assert_eq!(tsval, 1, "phase {phase_us} µs");
        let base = PEER_ISS + 1;
        let seg = |k: u64| Segment {
            timestamp: Some(Timestamp { value: 600 + k as u32, echo: 1 }),
            ..peer_data(base + k * 1000, 1000)
        };
        let mut got = Vec::new();
        for (k, t) in [24_300, 24_600].into_iter().enumerate() {
            server.handle_segment(us(t), &seg(k as u64));
            let acks = send!(server, us(t));
            assert_eq!(acks.len(), 1, "quick ACK of segment {k}");
            got.push(acks[0].timestamp.expect("timestamps on").value);
        }
        assert_eq!(got, tsvals, "phase {phase_us} µs");
        let rcv_rtt = server.rcv_space.as_ref().and_then(|s| s.rcv_rtt());
        assert_eq!(rcv_rtt, Some(ms(rcv_rtt_ms)), "phase {phase_us} µs");
    }
    let bad = TcpConfig { clock_phase: Duration::from_millis(1), ..linux() };
    assert_eq!(bad.validate().map_err(|e| e.field), Err("clock_phase"));
}

/// A FIN held out of order is part of its SACK block: Linux queues the
/// segment with an `end_seq` that counts the FIN (`tcp_v4_fill_cb`: seq +
/// SYN + FIN + len; `tcp_data_queue_ofo` passes it to
/// `tcp_sack_new_ofo_skb`). With segment 1 lost, segment 2 carrying the
/// FIN (1448 bytes from base + 2896) is SACKed up to base + 4345, so the
/// sender sees it delivered whole (its FIN counted) and RACK can mark
/// segment 1 lost; a block ending at base + 4344 leaves it unSACKed and
/// the sender waits for the probe and the RTO. Once segment 1 arrives
/// the FIN is taken: the ACK is base + 4345 with no block.
#[test]
fn a_fin_held_out_of_order_is_in_its_sack_block() {
    let mut server = Connection::listen(TcpConfig { mss: 1460, ..linux() });
    server.handle_segment(at(0), &peer_sack_syn(1460, Some(7), None));
    send!(server, at(0));
    let base = PEER_ISS + 1;
    server.handle_segment(at(100), &peer_data(base, 1448));
    send!(server, at(100));
    let last = Segment { flags: Flags::ACK | Flags::PSH | Flags::FIN, ..peer_data(base + 2896, 1448) };
    server.handle_segment(at(101), &last);
    let ack = send!(server, at(101));
    assert_eq!(ack.len(), 1);
    assert_eq!(ack[0].ack, base + 1448);
    assert_eq!(ack[0].sack.as_slice(), &[(base + 2896, base + 4345)]);
    server.handle_segment(at(102), &peer_data(base + 1448, 1448));
    let ack = send!(server, at(102));
    assert_eq!(ack.last().map(|a| a.ack), Some(base + 4345));
    assert!(ack.last().is_some_and(|a| a.sack.as_slice().is_empty()));
}

/// Out-of-order data takes room in Linux's receive buffer (Linux 6.18:
/// include/net/tcp.h `tcp_space` is `sk_rcvbuf − sk_rmem_alloc`, which
/// `tcp_data_queue_ofo` charges with `skb_set_owner_r`; tcp_output.c
/// `__tcp_select_window` offers min(`tcp_space`, `rcv_ssthresh`), the
/// latter aligned up to the window scale's unit, and `tcp_select_window`
/// never moves the right edge back). A passive end with SACK and
/// timestamps takes 1448-byte segments, each read at once; the clamp is
/// 81 920 B (ratio 160), the window scale 10 (Linux 6.18's 32 MiB
/// `tcp_rmem[2]`), `rcv_ssthresh` starts at the SYN-ACK's 65 160
/// (45·1448). Segment 0 grows it by 2896 to 68 056, and the ACK offers
/// 68 608 (67·1024, aligned up; Linux's first ACK in the emulated BBR
/// runs offers the same). Segments 1 and 4 are lost; 2, 3, 5, 6, 7
/// arrive out of order. `tcp_grow_window` runs for each (SACK) before
/// the segment is charged, room = min(clamp, 81 920 − held) −
/// rcv_ssthresh: 2: 13 864 → 70 952; 3: 80 472 − 70 952 → 73 848; 5:
/// 79 024 − 73 848 → 76 744; 6: 77 576 − 76 744 = 832 → 77 576; 7:
/// 76 128, none. The offers: rcv_ssthresh aligned up while the free
/// space 81 920 − held is above it: 71 680, 74 752, 76 800; then the
/// free space 76 128 and 74 680, below the offered 76 800: it stays
/// (right edge 1448 + 76 800). Without the rule the window grew to
/// 80 896, by segment 7. The retransmitted 1 joins 2 and 3 (rcv_nxt
/// 5792) and is ACKed at once, before the read: 3 segments unread and 3
/// held, free 81 920 − 8688 = 73 232, more than the 72 456 left of the
/// right edge: 71 units of 1024, 72 704. Once read, free is 81 920 −
/// 4344 = 77 576, rcv_ssthresh: the window to offer. `tcp_rcvbuf_grow`
/// at each segment held wants 2·14 480 + at most 8688 < 81 920, and the
/// read of segment 1 at 300 ms measures nothing (what it released is
/// still queued: `copied -= inq`): the clamp stays.
#[test]
fn data_held_out_of_order_takes_room_from_the_window() {
    let mut server = Connection::listen(TcpConfig { mss: 1460, ..linux() });
    server.handle_segment(at(0), &peer_sack_syn(1460, Some(7), Some(1)));
    let synack = send!(server, at(0));
    let echo = synack[0].timestamp.expect("timestamps on").value;
    // Segment k at `now`, ACKed at once, then read: the ACK's window.
    let take = |server: &mut Connection, now: Instant, k: u64| {
        let ack = take_segment(server, now, echo, k);
        assert_eq!(ack.len(), 1, "segment {k} ACKed at once");
        (ack[0].window as u64) << 10
    };
    let cap = |server: &Connection| server.rcv_space.as_ref().map(ReceiveSpace::window_cap);
    assert_eq!(synack[0].window, 65_160);
    assert_eq!(synack[0].window_scale, Some(10));
    assert_eq!(take(&mut server, at(100), 0), 68_608);
    assert_eq!(cap(&server), Some(68_056));
    let offers: Vec<u64> = [2, 3, 5, 6, 7].iter().map(|&k| take(&mut server, at(100 + k), k)).collect();
    assert_eq!(offers, [71_680, 74_752, 76_800, 76_800, 76_800]);
    assert_eq!(cap(&server), Some(77_576));
    assert_eq!(server.rcv_adv - (PEER_ISS + 1), 1448 + 76_800);
    assert_eq!(take(&mut server, at(300), 1), 72_704);
    assert_eq!(server.rcv_window(), 77_576);
    assert_eq!(server.rcv_space.as_ref().map(ReceiveSpace::buffer), Some(81_920));
}

/// Data out of order wakes no reader (`tcp_data_queue_ofo` calls no
/// `tcp_data_ready`), so no `tcp_rcv_space_adjust` ends the receiver's
/// measurement there. The SYN-ACK leaves at 1 ms (TSval 2: whole
/// milliseconds plus one); segment 0 echoes it at 101 ms (102): RTT 100 ms, the measurement starts (rcv_nxt,
/// 101 ms). Segment 1 is lost; 2..=5 arrive at 202..=205 ms, the
/// retransmitted 1 at 250 ms fills the hole and the read that takes it
/// ends the measurement (149 ms ≥ 100) with nothing counted: what it
/// released is still queued (`copied -= inq`); it starts again after
/// segment 1 at 250 ms. Segments 6..=20 arrive at 303..=317 ms and
/// 351 ms, each read at once: at 351 ms (101 ms on) 19 segments were
/// read since segment 1 (27 512 B > 14 480): rcvwin = 2·27 512 +
/// 2·⌊55 024·13 032/14 480⌋ = 154 066, the new clamp. Had segment 2 at
/// 202 ms ended the measurement (101 ms after the start, 1448 B), the
/// read at 303 ms would have ended the next one with 6 segments (no
/// growth), and at 351 ms only 48 ms would have passed: the clamp
/// would still be 81 920.
#[test]
fn data_out_of_order_does_not_end_the_receivers_measurement() {
    let mut server = Connection::listen(TcpConfig { mss: 1460, ..linux() });
    server.handle_segment(at(1), &peer_sack_syn(1460, Some(7), Some(1)));
    let synack = send!(server, at(1));
    let echo = synack[0].timestamp.expect("timestamps on").value;
    assert_eq!(echo, 2);
    let take = |server: &mut Connection, now: Instant, k: u64| {
        take_segment(server, now, echo, k);
    };
    let buffer = |server: &Connection| server.rcv_space.as_ref().map(ReceiveSpace::buffer);
    take(&mut server, at(101), 0);
    for k in 2..=5 {
        take(&mut server, at(200 + k), k);
    }
    take(&mut server, at(250), 1);
    for k in 6..=19 {
        take(&mut server, at(297 + k), k);
    }
    assert_eq!(buffer(&server), Some(81_920));
    take(&mut server, at(351), 20);
    assert_eq!(buffer(&server), Some(154_066));
}
