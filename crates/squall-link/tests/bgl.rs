//! Background load forwarded over Seawind's BGL channel (seed 000,
//! "Seawind: a Wireless Network Emulator", §5.1 and Figure 4): virtual
//! packets generated at one stage take queue space and link time at every
//! later stage of the path and are consumed at its end, never delivered.

mod common;

use common::*;
use squall_link::*;

fn cbr_bg(rate: &str, forward: bool) -> BackgroundConfig {
    BackgroundConfig { forward, ..cbr("bg", rate, 1000) }
}

/// A 100 Mbit/s router with a CBR background of `r` feeding a radio stage
/// of C = 10 Mbit/s.
fn two_stages(forward: bool) -> Path {
    let router = StageConfig {
        rate: Some(Rate::from_bits_per_sec(100_000_000)),
        background: vec![cbr_bg("4 Mbit/s", forward)],
        ..StageConfig::named("router")
    };
    let radio = StageConfig { rate: Some(Rate::from_bits_per_sec(10_000_000)), ..StageConfig::named("radio") };
    path(vec![router, radio])
}

/// A saturating foreground that never overflows a queue: 20 packets of
/// 1000 B kept in the path (a new one enters when one leaves), for
/// `horizon`. Returns the foreground deliveries.
fn closed_loop(p: &mut Path, horizon: Instant) -> Vec<Delivery> {
    let mut next_id = 0;
    for _ in 0..20 {
        p.push(Instant::ZERO, packet(next_id, 1000));
        next_id += 1;
    }
    let mut out = Vec::new();
    while let Some(t) = p.next_wakeup().filter(|&t| t <= horizon) {
        while let Some(d) = p.poll(t) {
            p.push(d.at, packet(next_id, 1000));
            next_id += 1;
            out.push(d);
        }
    }
    out
}

/// Forwarded, the 4 Mbit/s of background take their share of the radio
/// stage too: the foreground gets C - r = 6 Mbit/s there. Not forwarded,
/// the background ends at the router (which has room to spare) and the
/// foreground gets all of C = 10 Mbit/s.
#[test]
fn forwarded_background_leaves_c_minus_r_at_the_next_stage() {
    let horizon = Instant::from_secs(10);
    for (forward, expect) in [(true, 6e6), (false, 10e6)] {
        let mut p = two_stages(forward);
        let out = closed_loop(&mut p, horizon);
        let fg = out.iter().map(|d| d.packet.size as f64 * 8.0).sum::<f64>() / horizon.as_secs_f64();
        println!("forward {forward}: foreground {fg} bit/s");
        assert!((fg - expect).abs() <= 0.01 * expect, "forward {forward}: foreground {fg} bit/s, expected {expect}");
        assert!(out.iter().all(|d| !d.packet.background), "a virtual packet reached a host");
        let st = p.stage_stats(horizon);
        let (router, radio) = (st[0].background, st[1].background);
        // 10 s of 4 Mbit/s in 1000 B packets, the first at time zero.
        assert_eq!(router.generated, 5001);
        assert_eq!(radio.generated, 0);
        if forward {
            assert_eq!(router.served, 0, "forwarded load is not consumed at the router");
            assert!(router.generated - router.forwarded <= 1, "{router:?}");
            assert_eq!(radio.received, router.forwarded);
            // The radio stage serves what it received, less what waits in
            // its FIFO queue beside the 20 real packets: in the ratio of
            // the rates, 20 r / (C - r) = 13.3.
            let inside = (radio.received - radio.served) as f64;
            assert!((inside - 20.0 * 4.0 / 6.0).abs() <= 1.0, "{radio:?}");
            assert_eq!(radio.forwarded, 0, "the last stage consumes it");
            // Real packets only in the radio's counters.
            assert_eq!(st[1].entered, st[0].delivered);
        } else {
            assert_eq!((router.forwarded, radio.received), (0, 0));
        }
        assert_eq!(router.dropped + radio.dropped, 0);
        let ps = p.stats();
        assert!(ps.conserved(), "{ps:?}");
        assert_eq!(ps.in_flight, 20, "the window, less nothing: virtual packets are not counted");
    }
}

/// Forwarded load that meets a full queue downstream is dropped there and
/// counted as background, not as real drops.
#[test]
fn forwarded_background_is_dropped_downstream_as_background() {
    let router = StageConfig {
        rate: Some(Rate::from_bits_per_sec(100_000_000)),
        background: vec![cbr_bg("20 Mbit/s", true)],
        ..StageConfig::named("router")
    };
    let mut radio = StageConfig { rate: Some(Rate::from_bits_per_sec(10_000_000)), ..StageConfig::named("radio") };
    radio.queue.packets = Some(10);
    let mut p = path(vec![router, radio]);
    let horizon = Instant::from_secs(1);
    while let Some(t) = p.next_wakeup().filter(|&t| t <= horizon) {
        assert!(p.poll(t).is_none(), "a virtual packet was delivered");
    }
    let st = p.stage_stats(horizon);
    let radio = st[1].background;
    // 20 Mbit/s into 10 Mbit/s: about half is dropped at the radio.
    assert!(radio.dropped.abs_diff(radio.received / 2) <= 12, "{radio:?}");
    assert_eq!(st[1].dropped_total(), 0, "virtual drops are not real drops");
    assert_eq!(p.stats(), PathStats::default());
}

#[test]
fn forward_from_the_last_stage_is_refused_by_key() {
    let s = StageConfig { background: vec![cbr_bg("1 Mbit/s", true)], ..StageConfig::named("last") };
    let e = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![s] }, 1).unwrap_err();
    assert_eq!(e.key, "last.background[0].forward");
    assert!(e.message.contains("no next stage"), "{e}");
}
