//! States change the keys of the link's own parts mid-run (issue 29): the
//! fragmentation, the link send and receive buffers and reordering, each
//! against a hand computation. A change applies to the packets that enter
//! the link after it; packets already on the link keep what they took.

mod common;

use common::*;
use squall_link::*;

fn set(p: &mut Path, at: Instant, patch: StagePatch) {
    assert!(p.apply(at, &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
}

fn times(d: &[Delivery]) -> Vec<(u64, Instant)> {
    d.iter().map(|d| (d.packet.id.0, d.at)).collect()
}

fn frames(f: u64, header: u64) -> Option<Fragmentation> {
    Some(Fragmentation { frame_payload: Bytes(f), frame_header: Bytes(header), compression: 1.0 })
}

#[test]
fn fragmentation_changes_for_packets_that_enter_after_the_state() {
    // 64 kbit/s = 8000 B/s. From 0: frames of 300 B + 20 B header, so a
    // 1000 B packet is 3·320 + 120 = 1080 B = 135 ms. At 50 ms (packet 1
    // in its second frame) frames become 1000 B with no header: packet 1
    // keeps its four frames (ends at 135 ms); packet 2, waiting in the
    // queue, enters at 135 ms as one 1000 B frame = 125 ms: 260 ms.
    let mut p = path(vec![stage(|s| {
        s.rate = Some("64 kbit/s".parse().unwrap());
        s.fragmentation = frames(300, 20);
    })]);
    p.push(Instant::ZERO, packet(1, 1000));
    p.push(Instant::ZERO, packet(2, 1000));
    set(
        &mut p,
        Instant::from_millis(50),
        StagePatch::default().with("fragmentation", |c| c.fragmentation = frames(1000, 0)),
    );
    let d = drain(&mut p);
    assert_eq!(times(&d), vec![(1, Instant::from_millis(135)), (2, Instant::from_millis(260))]);
    let starts = p.drain_events().iter().filter(|e| matches!(e.kind, EventKind::TransmitStart { .. })).count();
    assert_eq!(starts, 4 + 1);
}

#[test]
fn send_buffer_changes_what_the_stage_holds() {
    // A 2-packet queue and a 1-packet send buffer hold 3 of a burst of
    // 10; after the state, a 4-packet send buffer holds 2 + 4 = 6
    // (seed 000 §7: queue plus link send buffer).
    let mut p = path(vec![stage(|s| {
        s.rate = Some("9600 bit/s".parse().unwrap());
        s.queue.packets = Some(2);
    })]);
    for i in 0..10 {
        p.push(Instant::ZERO, packet(i, 300));
    }
    assert_eq!(drain(&mut p).len(), 3);
    set(
        &mut p,
        Instant::from_secs(10),
        StagePatch::default().with("send_buffer", |c| c.send_buffer = BufferLimit::Packets(4)),
    );
    for i in 10..20 {
        p.push(Instant::from_secs(10), packet(i, 300));
    }
    assert_eq!(drain(&mut p).len(), 6);
    assert_eq!(p.drops_by_reason()[DropReason::QueueOverflow.index()].1, 7 + 4);
    assert!(p.stats().conserved());
}

#[test]
fn a_smaller_receive_buffer_holds_the_next_packet_from_that_moment() {
    // 1500 B at 1 Mbit/s = 12 ms, 100 ms propagation, no receive-buffer
    // limit: packets 1 and 2 start at 0 and 12 ms (arrive 112, 124). At
    // 20 ms the buffer becomes one packet: both stay on their way, and
    // packet 3 starts only when the buffer is empty at 124 ms, arriving
    // at 124 + 12 + 100 = 236 ms (it would have arrived at 136).
    let mut p = path(vec![stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.delay = ms(100);
        s.send_buffer = BufferLimit::Packets(3);
    })]);
    for i in 1..=3 {
        p.push(Instant::ZERO, packet(i, 1500));
    }
    set(
        &mut p,
        Instant::from_millis(20),
        StagePatch::default().with("receive_buffer", |c| c.receive_buffer = Some(BufferLimit::Packets(1))),
    );
    assert_eq!(
        times(&drain(&mut p)),
        vec![(1, Instant::from_millis(112)), (2, Instant::from_millis(124)), (3, Instant::from_millis(236))]
    );
}

#[test]
fn reorder_lets_later_packets_overtake_from_the_state_on() {
    // Packet 1 starts at 0 with 100 ms propagation: arrives at 112 ms. At
    // 5 ms propagation drops to 10 ms; packet 2 enters the link at 12 ms
    // and arrives at 24 + 10 = 34 ms. In order (the default) it waits for
    // packet 1 and leaves at 112 ms; with `reorder` set by the same state
    // it leaves at 34 ms.
    let run = |reorder: bool| {
        let mut p = path(vec![stage(|s| {
            s.rate = Some("1 Mbit/s".parse().unwrap());
            s.delay = ms(100);
        })]);
        p.push(Instant::ZERO, packet(1, 1500));
        p.push(Instant::ZERO, packet(2, 1500));
        let mut patch = StagePatch::default().with("delay", |c| c.delay = ms(10));
        if reorder {
            patch = patch.with("reorder", |c| c.reorder = true);
        }
        set(&mut p, Instant::from_millis(5), patch);
        times(&drain(&mut p))
    };
    assert_eq!(run(false), vec![(1, Instant::from_millis(112)), (2, Instant::from_millis(112))]);
    assert_eq!(run(true), vec![(2, Instant::from_millis(34)), (1, Instant::from_millis(112))]);
}

#[test]
fn a_patch_gives_the_stage_keys_it_names_and_no_other() {
    let base = stage(|s| {
        s.rate = Some("1 Mbit/s".parse().unwrap());
        s.delay = ms(7);
        s.reorder = true;
    });
    let patch = StagePatch::default().with("send_buffer", |c| c.send_buffer = BufferLimit::Frames(16));
    let c = patch.applied_to(&base);
    let mut expected = base.clone();
    expected.send_buffer = BufferLimit::Frames(16);
    assert_eq!(c, expected);
    assert_eq!(patch.keys().collect::<Vec<_>>(), vec!["send_buffer"]);
    // Setting the service time removes the rate (one transmission time).
    let st = StagePatch::default().with("service_time", |c| c.service_time = Some(Distribution::constant(ms(3))));
    assert_eq!(st.applied_to(&base).rate, None);
    // A state cannot rename a stage.
    let e = StagePatch::default().with("name", |c| c.name = "t".into()).check(&base).unwrap_err();
    assert_eq!(e.key, "s.name");
}
