//! netem's `slot` under a load its slots cannot carry: the packets waiting
//! for a slot count against the stage's queue limit, as every packet in
//! netem's tfifo counts against its `limit` (Linux net/sched/sch_netem.c
//! `netem_enqueue`: `sch->q.qlen >= sch->limit` drops the arrival).

mod common;

use common::*;
use squall_link::*;

/// A packet every 1 ms for 2 s (2000 arrivals) into slots 10 ms apart
/// carrying 3 packets each, with `queue = { packets = 50 }`, no delay, no
/// rate. By hand (sch_netem.c `netem_dequeue`, `get_slot_next`): the first
/// slot starts at 0 and carries packet 0 alone; packet 1, due at 1 ms
/// after that slot started, makes the next start at 11 ms; from then on
/// the line never empties, so each slot carries 3 and the next starts
/// 10 ms later: slots at 11, 21, ..., 1991 ms (199 slots) before the last
/// arrival at 1999 ms, so 1 + 199 · 3 = 598 departures. The line reaches
/// 50 (at 0.7 packets a millisecond it does so in about 70 ms) and stays
/// full, so at 1999 ms 50 are held and 2000 − 598 − 50 = 1352 were
/// dropped, each recorded as a queue overflow. Before the limit counted
/// the slot's packets, 1402 were held and none dropped.
#[test]
fn packets_waiting_for_slots_count_against_the_queue_limit() {
    const LIMIT: u64 = 50;
    let s = stage(|s| {
        s.queue.packets = Some(LIMIT as u32);
        s.slot = Some(Slot { interval: Distribution::constant(ms(10)), packets: Some(3), bytes: None });
    });
    let mut p = path(vec![s]);
    let mut departed = 0u64;
    let mut most_held = 0u64;
    for i in 0..2000u64 {
        let now = Instant::ZERO + ms(i);
        while p.poll(now).is_some() {
            departed += 1;
        }
        p.push(now, packet(i, 1000));
        while p.poll(now).is_some() {
            departed += 1;
        }
        let held = p.stats().in_flight;
        assert!(held <= LIMIT, "{held} packets held at {i} ms, more than the limit of {LIMIT}");
        most_held = most_held.max(held);
    }
    let stats = p.stats();
    assert!(stats.conserved());
    assert_eq!(departed, 598, "hand count: packet 0, then 3 per slot at 11, 21, ..., 1991 ms");
    assert_eq!(stats.in_flight, LIMIT, "saturated: the line is full");
    assert_eq!(most_held, LIMIT);
    assert_eq!(stats.dropped, 2000 - 598 - LIMIT, "drops = arrivals − departures − held");
    let overflows =
        p.drain_events().iter().filter(|e| matches!(e.kind, EventKind::Drop(DropReason::QueueOverflow))).count() as u64;
    assert_eq!(overflows, 2000 - 598 - LIMIT, "each drop is recorded as a queue overflow");
}

/// The same with a 100 ms delay in front of the slots: the packets being
/// delayed are in netem's tfifo too, so they count; the limit still holds.
#[test]
fn delayed_packets_count_too_under_slots() {
    const LIMIT: u64 = 40;
    let s = stage(|s| {
        s.queue.packets = Some(LIMIT as u32);
        s.delay = ms(100);
        s.slot = Some(Slot { interval: Distribution::constant(ms(10)), packets: Some(2), bytes: None });
    });
    let mut p = path(vec![s]);
    for i in 0..1000u64 {
        let now = Instant::ZERO + ms(i);
        while p.poll(now).is_some() {}
        p.push(now, packet(i, 1000));
        let held = p.stats().in_flight;
        assert!(held <= LIMIT, "{held} packets held at {i} ms, more than the limit of {LIMIT}");
    }
    assert_eq!(p.stats().in_flight, LIMIT);
    assert!(p.stats().conserved());
}
