//! BBR against hand computations from tcp_bbr.c's formulas. Each test
//! feeds ACKs built by hand (`ModelAck`), as the connection would.

use super::*;
use crate::congestion::DeliveryRateSample;

const MSS: u32 = 1000;

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// An ACK at `now` of `acked` packets, with a valid sample of `delivered`
/// packets over `interval_ms` whose segment was sent when `prior`
/// packets had been delivered; `delivered` total so far.
struct Feed {
    delivered: u64,
}

impl Feed {
    #[allow(clippy::too_many_arguments)]
    fn ack(
        &mut self,
        bbr: &mut Bbr,
        now: Instant,
        acked: u64,
        prior: u64,
        interval_ms: u64,
        rtt_ms: u64,
        in_flight: u64,
    ) {
        self.delivered += acked;
        let ack = ModelAck {
            rate: Some(DeliveryRateSample {
                prior_delivered: prior,
                delivered: self.delivered - prior,
                interval: Duration::from_millis(interval_ms),
                // The connection marks samples app-limited in PROBE_RTT.
                is_app_limited: bbr.wants_app_limited(),
            }),
            acked_sacked: acked,
            losses: 0,
            prior_in_flight: in_flight + acked,
            in_flight,
            delivered: self.delivered,
            lost: 0,
            delivered_time: now,
            rtt: Some(Duration::from_millis(rtt_ms)),
            srtt: Some(Duration::from_millis(rtt_ms)),
            min_rtt: Some(Duration::from_millis(rtt_ms)),
            maybe_delayed: false,
            ca_state: CaState::Open,
            pacing_wait: Duration::ZERO,
            mss: MSS,
        };
        bbr.on_model_ack(now, &ack);
    }

    /// `n` ACKs of 10 packets, one every 11 ms from `t_us` (µs), each
    /// with a sample of 100 packets over 100 ms (1 packet per ms) and 100
    /// in flight. The ACKs come a little slower than the estimate (as a
    /// real ACK clock jitters), so BBR's ACK-aggregation epoch restarts
    /// and the excess it keeps settles at one ACK's 10 packets once the
    /// larger excess of STARTUP's ACKs has aged out of its 5–10 round
    /// window. Returns the last ACK's time.
    fn cruise(&mut self, bbr: &mut Bbr, mut t_us: u64, n: usize) -> u64 {
        for _ in 0..n {
            t_us += 11_000;
            let prior = self.delivered.saturating_sub(90);
            self.ack(bbr, Instant::from_micros(t_us), 10, prior, 100, 100, 100);
        }
        t_us
    }
}

fn bbr() -> Bbr {
    Bbr::new(10 * MSS as u64, u64::MAX / 4, MSS, 1)
}

/// STARTUP grows the window by every packet delivered while it is below
/// 2.885·BDP: with a path faster than the sender (each round's samples
/// show the rate doubling), a round of 10, 20, 40 packets takes the
/// window to 20, 40, 80 — slow start's doubling.
#[test]
fn startup_doubles_the_window_each_round() {
    let mut b = bbr();
    let mut f = Feed { delivered: 0 };
    let mut t = 0;
    for (round, expect) in [(10u64, 20u64), (20, 40), (40, 80)] {
        let prior = f.delivered;
        t += 100;
        for i in 0..round {
            // Each ACK: one packet; the sample covers the packets
            // delivered since the round's first was sent, over 100 ms.
            f.ack(&mut b, at(t) + Duration::from_micros(i), 1, prior, 100, 100, round - i - 1);
        }
        assert_eq!(b.cwnd_packets(), expect, "after a round of {round}");
        assert_eq!(b.mode(), BbrMode::Startup);
    }
}

/// Full-bandwidth detection (`bbr_check_full_bw_reached`): one sample
/// per round with rates 10, 20, 40, 45, 46, 47 packets per second. 20 ≥
/// 1.25·10 and 40 ≥ 1.25·20 reset the count; 45, 46 and 47 are each below
/// 1.25·40 = 50, so the pipe is full at the third of them, the sixth
/// round, and not before. STARTUP then gives way to DRAIN, whose ssthresh
/// is one BDP plus the quantization budget.
#[test]
fn the_pipe_is_full_after_three_rounds_without_25_percent_growth() {
    let mut b = bbr();
    let mut f = Feed { delivered: 0 };
    for (round, rate) in [10u64, 20, 40, 45, 46, 47].into_iter().enumerate() {
        let prior = f.delivered;
        // A sample of `rate` packets over 1 s, at a round start, with a
        // large flight so that DRAIN does not end at once.
        f.ack(&mut b, at(1000 * (round as u64 + 1)), rate, prior, 1000, 100, 10_000);
        assert_eq!(b.full_bw_reached(), round == 5, "round {}", round + 1);
    }
    assert_eq!(b.mode(), BbrMode::Drain);
    assert_eq!(b.pacing_gain(), DRAIN_GAIN);
    // max bw = 47 packets/s = ⌊47·2²⁴/10⁶⌋ = 788; BDP over min_rtt
    // 100 ms = ⌈788·100 000/2²⁴⌉ = ⌈4.70⌉ = 5 packets. The pacing rate
    // never falls in STARTUP: it is still the initial 2.885·10 packets per
    // 100 ms·1000 B·0.99 ≈ 286 kB/s, above 1.2 Mbit/s (150 kB/s), so
    // bursts are two segments: budget 3·2 → 11, even → 12 packets.
    assert_eq!(b.ssthresh(), 12 * MSS as u64);
}

/// Drive BBR to PROBE_BW on a clean path of 1 packet per ms and 100 ms
/// min RTT: samples of 100 packets per 100 ms until full bandwidth, and
/// a small flight so that DRAIN ends at once.
fn probe_bw(b: &mut Bbr, f: &mut Feed) -> u64 {
    let mut t = 0;
    while b.mode() != BbrMode::ProbeBw {
        t += 100;
        let prior = f.delivered;
        f.ack(b, at(t), 100, prior, 100, 100, 50);
        assert!(t < 2_000, "never left STARTUP/DRAIN");
    }
    t
}

/// PROBE_BW on a clean path: pacing rate = gain · bw · 0.99. With bw =
/// 1 packet per ms of 1000 bytes, bw in BBR's units is
/// ⌊100·2²⁴/100 000⌋ = 16 777 packets/µs·2⁻²⁴, and the rate at gain 1 is
/// ⌊16 777·1000·990 000 / 2²⁴⌋ = 989 987 B/s (1 MB/s less 1%). The window
/// converges to 2·BDP plus the quantization budget: ⌈2·16 777·100 000/2²⁴⌉
/// = 200 packets, plus the ACK-aggregation allowance (each ACK here
/// delivers 10 packets at once: 10), plus 3·2 (two-segment bursts at
/// ~1 MB/s): 216, even; in the 1.25 phase 2 more.
#[test]
fn probe_bw_paces_at_the_bandwidth_and_holds_two_bdp() {
    let mut b = bbr();
    let mut f = Feed { delivered: 0 };
    let mut t = probe_bw(&mut b, &mut f) * 1000;
    let mut seen = Vec::new();
    for _ in 0..400 {
        t = f.cruise(&mut b, t, 1);
        seen.push((b.cycle_index(), b.pacing_gain(), b.cwnd_packets(), b.pacing_rate().unwrap()));
    }
    let &(idx, gain, cwnd, rate) = seen.last().unwrap();
    assert_eq!(gain, PACING_GAIN[idx]);
    let expect_rate = (16_777u64 * 1000 * gain / UNIT * 990_000) >> 24;
    assert_eq!(rate, expect_rate, "phase {idx}");
    let unit_rate = seen.iter().find(|s| s.1 == UNIT).map(|s| s.3).expect("a gain-1 phase");
    assert_eq!(unit_rate, 989_987);
    let expect_cwnd = if idx == 0 { 218 } else { 216 };
    assert_eq!(cwnd, expect_cwnd);
}

/// The gain cycle (`bbr_pacing_gain`): phases advance every min_rtt
/// (100 ms here) of delivery time in the gain-1 phases, and the 8 phases
/// come in order 1.25, 0.75, 1, 1, 1, 1, 1, 1 from a random start that is
/// never the 0.75 phase; different seeds start at different phases.
#[test]
fn the_gain_cycle_visits_eight_phases_in_order_from_a_random_start() {
    let mut starts = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let mut b = Bbr::new(10 * MSS as u64, u64::MAX / 4, MSS, seed);
        let mut f = Feed { delivered: 0 };
        let mut t = probe_bw(&mut b, &mut f);
        let start = b.cycle_index();
        assert_ne!(start, 1, "seed {seed} started draining");
        starts.insert(start);
        let mut phases = vec![start];
        for _ in 0..2000 {
            t += 5;
            let prior = f.delivered.saturating_sub(95);
            // In flight above 1.25·BDP in the probing phase (so it ends
            // after one min_rtt), at the BDP otherwise (so the draining
            // phase ends at once).
            let in_flight = if b.pacing_gain() > UNIT { 140 } else { 100 };
            f.ack(&mut b, at(t), 5, prior, 100, 100, in_flight);
            if *phases.last().unwrap() != b.cycle_index() {
                phases.push(b.cycle_index());
            }
            if phases.len() == 9 {
                break;
            }
        }
        let want: Vec<usize> = (0..9).map(|k| (start + k) % 8).collect();
        assert_eq!(phases, want, "seed {seed}");
    }
    assert!(starts.len() >= 5, "starts {starts:?}");
}

/// PROBE_RTT (`bbr_update_min_rtt`): min_rtt set at 100 ms at t ≈ 0.2 s;
/// later samples are all 150 ms. Once the estimate is more than 10 s old
/// BBR enters PROBE_RTT with a window of 4; once no more than 4 packets
/// are in flight it waits 200 ms and one round, then returns to PROBE_BW
/// with the window from before, and min_rtt is the new 150 ms.
#[test]
fn probe_rtt_comes_after_ten_seconds_and_lasts_200_ms() {
    let mut b = bbr();
    let mut f = Feed { delivered: 0 };
    let mut t = probe_bw(&mut b, &mut f);
    let stamp = t;
    let before = loop {
        t += 10;
        let prior = f.delivered.saturating_sub(90);
        f.ack(&mut b, at(t), 10, prior, 100, 150, 100);
        if b.mode() == BbrMode::ProbeRtt {
            break t;
        }
        assert!(t < 20_000);
    };
    // Entered at the first ACK more than 10 s after the stamp.
    assert!(before > stamp + 10_000 && before <= stamp + 10_010, "entered at {before}, stamp {stamp}");
    assert_eq!(b.cwnd_packets(), CWND_MIN_TARGET);
    // Flight drains to 4 at `before` + 10 ms: the 200 ms start there.
    t += 10;
    let prior = f.delivered.saturating_sub(4);
    f.ack(&mut b, at(t), 4, prior, 100, 150, 4);
    let drained = t;
    let exit = loop {
        t += 10;
        let prior = f.delivered.saturating_sub(4);
        f.ack(&mut b, at(t), 4, prior, 100, 150, 4);
        if b.mode() != BbrMode::ProbeRtt {
            break t;
        }
        assert!(t < drained + 1_000);
    };
    assert_eq!(exit, drained + 210, "the first ACK after 200 ms (strictly later, as `after()`)");
    assert_eq!(b.mode(), BbrMode::ProbeBw);
    assert!(b.cwnd_packets() >= 206, "window restored: {}", b.cwnd_packets());
    assert_eq!(b.min_rtt(), Some(Duration::from_millis(150)));
}

/// Loss recovery (`bbr_set_cwnd_to_recover_or_restore`): entering
/// recovery sets the window to what is in flight plus what this ACK
/// delivered (packet conservation) and keeps it there for the round;
/// leaving recovery restores the window saved at the fast retransmit.
#[test]
fn recovery_conserves_packets_then_restores_the_window() {
    let mut b = bbr();
    let mut f = Feed { delivered: 0 };
    let start = probe_bw(&mut b, &mut f) * 1000;
    let t = f.cruise(&mut b, start, 400) / 1000 + 1;
    let saved = b.cwnd_packets();
    b.on_fast_retransmit(at(t), 0, MSS, 3, LossRecovery::Sack);
    // The ACK that starts recovery: 2 packets SACKed, 3 lost, 150 in flight.
    f.delivered += 2;
    let mut ack = ModelAck {
        rate: None,
        acked_sacked: 2,
        losses: 3,
        prior_in_flight: 155,
        in_flight: 150,
        delivered: f.delivered,
        lost: 3,
        delivered_time: at(t + 1),
        rtt: None,
        srtt: Some(Duration::from_millis(100)),
        min_rtt: Some(Duration::from_millis(100)),
        maybe_delayed: false,
        ca_state: CaState::Recovery,
        pacing_wait: Duration::ZERO,
        mss: MSS,
    };
    b.on_model_ack(at(t + 1), &ack);
    assert_eq!(b.cwnd_packets(), 152);
    // Next ACK in the same round: in flight 140, 1 delivered → max(152, 141).
    ack.acked_sacked = 1;
    ack.losses = 0;
    ack.in_flight = 140;
    b.on_model_ack(at(t + 2), &ack);
    assert_eq!(b.cwnd_packets(), 152);
    // Recovery over: back to the saved window.
    ack.ca_state = CaState::Open;
    b.on_model_ack(at(t + 3), &ack);
    assert!((216..=218).contains(&saved), "{saved}");
    assert!((216..=218).contains(&b.cwnd_packets()), "{} vs {saved}", b.cwnd_packets());
}
