//! Link-level flow control between pipelined stages (seed 000, "Seawind: a
//! Wireless Network Emulator", §4.2: the receiving element controls the
//! sending one with a sliding window). A fast stage feeding a slow stage
//! with a small buffer: without flow control the slow stage drops; with a
//! window no larger than its buffer it drops nothing, the packets wait (or
//! are dropped) upstream, and the path carries the slow stage's rate.

mod common;

use common::*;
use squall_link::*;

/// 100 Mbit/s "fast" with a queue of `upstream` packets, then 10 Mbit/s
/// "slow" with a queue of 5 and, if `window`, flow control of that many
/// packets.
fn fast_then_slow(upstream: u32, window: Option<u32>) -> Path {
    let mut fast = StageConfig::named("fast");
    fast.rate = Some(Rate::from_bits_per_sec(100_000_000));
    fast.queue.packets = Some(upstream);
    let mut slow = StageConfig::named("slow");
    slow.rate = Some(Rate::from_bits_per_sec(10_000_000));
    slow.queue.packets = Some(5);
    slow.flow_control = window.map(|n| FlowControl { window: BufferLimit::Packets(n) });
    path(vec![fast, slow])
}

struct Outcome {
    out: Vec<Delivery>,
    fast: StageStats,
    slow: StageStats,
    stats: PathStats,
}

/// 20 Mbit/s offered for 1 s: 2500 packets of 1000 B, one every 0.4 ms,
/// alternating between two flows; then the path drains.
fn offer(mut p: Path) -> Outcome {
    let mut out = Vec::new();
    for i in 0..2500u64 {
        let at = Instant::from_micros(i * 400);
        while let Some(d) = p.poll(at) {
            out.push(d);
        }
        p.push(at, Packet::new(PacketId(i), 1000, flow(1 + (i % 2) as u16)));
        assert!(p.stats().conserved(), "{:?}", p.stats());
    }
    out.extend(drain(&mut p));
    let st = p.stage_stats(Instant::from_secs(10));
    Outcome { out, fast: st[0].clone(), slow: st[1].clone(), stats: p.stats() }
}

fn in_flow_order(out: &[Delivery]) -> bool {
    [1, 2].iter().all(|&port| {
        let ids: Vec<u64> = out.iter().filter(|d| d.packet.flow.src_port == port).map(|d| d.packet.id.0).collect();
        ids.windows(2).all(|w| w[0] < w[1])
    })
}

/// Delivered rate while the slow stage is backlogged, over [0.1 s, 1 s].
fn backlogged_rate(out: &[Delivery]) -> f64 {
    let (from, to) = (Instant::from_millis(100), Instant::from_millis(1000));
    let bits: f64 = out.iter().filter(|d| d.at > from && d.at <= to).map(|d| d.packet.size as f64 * 8.0).sum();
    bits / 0.9
}

#[test]
fn without_flow_control_the_slow_stage_drops() {
    let o = offer(fast_then_slow(3000, None));
    let slow_drops = o.slow.dropped.get(DropReason::QueueOverflow);
    println!("no flow control: slow drops {slow_drops}, fast drops {}", o.fast.dropped_total());
    // The slow stage finishes 1249 packets by the last arrival (one every
    // 0.8 ms from 0.08 ms) and then holds 5 queued + 1 on its link: 2500 -
    // 1249 - 6 = 1245 are dropped there.
    assert!(slow_drops.abs_diff(1245) <= 2, "slow drops {slow_drops}, hand count 1245");
    assert_eq!(o.fast.dropped_total(), 0);
    assert_eq!(o.stats.entered, o.stats.delivered + o.stats.dropped);
    assert!(in_flow_order(&o.out));
}

/// The window equals the slow stage's queue: it can never overflow, and
/// the fast stage's large queue holds the excess; everything arrives.
#[test]
fn with_flow_control_the_packets_wait_upstream() {
    let o = offer(fast_then_slow(3000, Some(5)));
    let rate = backlogged_rate(&o.out);
    println!("flow control, room upstream: rate {rate} bit/s, max slow queue {}", o.slow.max_queue_len);
    assert_eq!(o.slow.dropped_total(), 0);
    assert_eq!(o.fast.dropped_total(), 0);
    assert_eq!(o.out.len(), 2500);
    assert!(o.slow.max_queue_len <= 5, "the window bounds the slow queue: {}", o.slow.max_queue_len);
    assert!(o.fast.max_queue_len > 1000, "the excess waits upstream: {}", o.fast.max_queue_len);
    assert!((rate - 10e6).abs() <= 0.01 * 10e6, "{rate} bit/s, the slow stage's rate is 10 Mbit/s");
    assert_eq!(o.stats.entered, o.stats.delivered + o.stats.dropped);
    assert!(in_flow_order(&o.out));
}

/// With a small upstream queue the drops move upstream. The path holds at
/// most 500 (fast queue), 1 (fast send buffer, waiting for the window),
/// 5 (window) and 1 (slow link): 507 packets. The slow stage finishes a
/// packet every 0.8 ms from 0.08 ms, 1249 of them by the last arrival at
/// 999.6 ms; so 2500 - 1249 - 507 = 744 are dropped, all upstream.
#[test]
fn with_flow_control_and_a_small_upstream_queue_the_drops_move_upstream() {
    let o = offer(fast_then_slow(500, Some(5)));
    let fast_drops = o.fast.dropped.get(DropReason::QueueOverflow);
    println!("flow control, small upstream queue: fast drops {fast_drops}, delivered {}", o.out.len());
    assert_eq!(o.slow.dropped_total(), 0);
    assert!(fast_drops.abs_diff(744) <= 2, "fast drops {fast_drops}, hand count 744");
    assert_eq!(o.stats.entered, o.stats.delivered + o.stats.dropped);
    assert_eq!(o.stats.dropped, fast_drops);
    let rate = backlogged_rate(&o.out);
    assert!((rate - 10e6).abs() <= 0.01 * 10e6, "{rate} bit/s");
    assert!(in_flow_order(&o.out));
}

/// A window larger than the slow stage's buffer protects nothing: a
/// packet dropped there frees its place in the window, so the slow stage
/// drops as many as without flow control (hand count as above).
#[test]
fn a_window_larger_than_the_buffer_still_overflows_it() {
    let o = offer(fast_then_slow(3000, Some(20)));
    let slow_drops = o.slow.dropped.get(DropReason::QueueOverflow);
    assert!(slow_drops.abs_diff(1245) <= 2, "slow drops {slow_drops}, hand count 1245");
    assert_eq!(o.fast.dropped_total(), 0);
}

#[test]
fn flow_control_that_cannot_run_is_refused_by_key() {
    let mut first = StageConfig::named("first");
    first.flow_control = Some(FlowControl { window: BufferLimit::Packets(4) });
    let e = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![first] }, 1).unwrap_err();
    assert_eq!(e.key, "first.flow_control");
    let mut zero = StageConfig::named("zero");
    zero.flow_control = Some(FlowControl { window: BufferLimit::Packets(0) });
    assert_eq!(zero.validate().unwrap_err().key, "zero.flow_control.window");
}

/// A state change announces the window at 500 ms: the slow stage drops
/// until then and not after; the fast stage's queue takes the excess.
#[test]
fn a_state_change_turns_flow_control_on() {
    let mut p = fast_then_slow(3000, None);
    let change = Instant::from_millis(500);
    let patch = StagePatch::default()
        .with("flow_control", |c| c.flow_control = Some(FlowControl { window: BufferLimit::Packets(5) }));
    let mut drops_at_change = None;
    let mut delivered = 0;
    for i in 0..2500u64 {
        let at = Instant::from_micros(i * 400);
        if at == change {
            assert!(p.apply(change, &Change::Set { stage: "slow".into(), patch: Box::new(patch.clone()) }));
            drops_at_change = Some(p.stage_stats(change)[1].dropped_total());
        }
        while p.poll(at).is_some() {
            delivered += 1;
        }
        p.push(at, Packet::new(PacketId(i), 1000, flow(1)));
    }
    delivered += drain(&mut p).len();
    let st = p.stage_stats(Instant::from_secs(10));
    let before = drops_at_change.unwrap();
    assert!(before > 500, "{before}");
    assert_eq!(st[1].dropped_total(), before, "no drops at the slow stage after the change");
    assert_eq!(st[0].dropped_total(), 0);
    assert_eq!(delivered as u64 + before, 2500);
}
