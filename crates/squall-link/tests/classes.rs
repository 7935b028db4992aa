//! Classes inside a stage against theory: shares of strict priority, WRR
//! and DRR computed from the configuration alone (seed 003 §2.2), and
//! CoDel's control law (RFC 8289 §5.3). Expectations are derived from the
//! parameters, never from a previous run.

mod common;

use std::collections::HashMap;

use common::*;
use squall_link::*;

/// A packet of flow `port` (the classes' rules match the source port).
fn pkt(id: u64, size: u32, port: u16) -> Packet {
    Packet::new(PacketId(id), size, flow(port))
}

fn class(name: &str, f: impl FnOnce(&mut ClassConfig)) -> ClassConfig {
    let mut c = ClassConfig { name: name.into(), ..ClassConfig::default() };
    f(&mut c);
    c
}

fn rule(class: &str, src_port: u16) -> Rule {
    Rule {
        class: class.into(),
        ip_version: None,
        protocol: None,
        dscp: None,
        tos: None,
        ecn: None,
        src: None,
        dst: None,
        src_port: Some(PortRange::One(src_port)),
        dst_port: None,
        min_size: None,
        max_size: None,
    }
}

/// A stage at `rate` with the classes, one rule per class matching source
/// ports 1, 2, 3, ... in order.
fn classful(rate: &str, scheduler: Scheduler, classes: Vec<ClassConfig>) -> Path {
    let rules = classes.iter().enumerate().map(|(i, c)| rule(&c.name, i as u16 + 1)).collect();
    path(vec![stage(|s| {
        s.rate = Some(rate.parse().unwrap());
        s.queue = QueueConfig { classes, scheduler, rules, ..QueueConfig::default() };
    })])
}

/// A delivery with the time its packet entered the path.
#[derive(Debug, Clone)]
struct Out {
    at: Instant,
    sent: Instant,
    port: u16,
    size: u32,
}

/// Feeds `arrivals` (time order) to the path and runs it until idle.
fn run(path: &mut Path, arrivals: Vec<(Instant, Packet)>) -> Vec<Out> {
    let mut sent = HashMap::new();
    let mut out = Vec::new();
    let collect = |path: &mut Path, until: Instant, sent: &HashMap<PacketId, Instant>, out: &mut Vec<Out>| {
        while let Some(t) = path.next_wakeup().filter(|&t| t <= until) {
            while let Some(d) = path.poll(t) {
                let p = d.packet;
                out.push(Out { at: d.at, sent: sent[&p.id], port: p.flow.src_port, size: p.size });
            }
        }
    };
    for (t, p) in arrivals {
        collect(path, t, &sent, &mut out);
        sent.insert(p.id, t);
        path.push(t, p);
    }
    collect(path, Instant::FAR_FUTURE, &sent, &mut out);
    out
}

/// `n` packets of each (size, port) at time zero, interleaved.
fn backlog(n: u64, kinds: &[(u32, u16)]) -> Vec<(Instant, Packet)> {
    let mut v = Vec::new();
    for i in 0..n {
        for (k, &(size, port)) in kinds.iter().enumerate() {
            v.push((Instant::ZERO, pkt(i * kinds.len() as u64 + k as u64, size, port)));
        }
    }
    v
}

fn within(x: f64, expect: f64, rel: f64) -> bool {
    (x - expect).abs() <= rel * expect
}

#[test]
fn wrr_shares_follow_packet_weights_with_every_class_backlogged() {
    let weights = [1u32, 2, 5];
    let classes = weights.iter().enumerate().map(|(i, &w)| class(&format!("c{i}"), |c| c.weight = Some(w))).collect();
    let mut p = classful("8 Mbit/s", Scheduler::Wrr, classes);
    // Every class holds 2000 packets; the first 2000 deliveries leave each
    // class backlogged (the largest share is 5/8 of them).
    let out = run(&mut p, backlog(2000, &[(1000, 1), (1000, 2), (1000, 3)]));
    let window = &out[..2000];
    let total: u32 = weights.iter().sum();
    // The classes' counters agree with what left the path.
    let classes = &p.stage_stats(Instant::FAR_FUTURE)[0].classes;
    assert_eq!(classes.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["c0", "c1", "c2"]);
    for (i, c) in classes.iter().enumerate() {
        let left = out.iter().filter(|o| o.port == i as u16 + 1).count() as u64;
        assert_eq!((c.enqueued, c.sent, c.dropped, c.sent_bytes), (2000, left, 0, left * 1000));
    }
    for (i, &w) in weights.iter().enumerate() {
        let got = window.iter().filter(|o| o.port == i as u16 + 1).count() as f64 / window.len() as f64;
        let expect = w as f64 / total as f64;
        assert!(within(got, expect, 0.02), "class {i}: share {got}, weights say {expect}");
    }
}

#[test]
fn drr_is_byte_fair_with_unequal_packet_sizes() {
    let classes = (0..3).map(|i| class(&format!("c{i}"), |c| c.quantum = Some(Bytes(1500)))).collect();
    let mut p = classful("100 Mbit/s", Scheduler::Drr, classes);
    // 200 B, 700 B and 1500 B packets: equal quanta give equal bytes, not
    // equal packets. 2 MB backlog per class; look at the first 3 MB sent.
    let mut arrivals = backlog(10_000, &[(200, 1)]);
    arrivals.extend(backlog(2_858, &[(700, 2)]).into_iter().map(|(t, mut p)| {
        p.id.0 += 100_000;
        (t, p)
    }));
    arrivals.extend(backlog(1_334, &[(1500, 3)]).into_iter().map(|(t, mut p)| {
        p.id.0 += 200_000;
        (t, p)
    }));
    let out = run(&mut p, arrivals);
    let mut bytes = [0u64; 3];
    let mut sent = 0u64;
    for o in &out {
        if sent >= 3_000_000 {
            break;
        }
        bytes[o.port as usize - 1] += o.size as u64;
        sent += o.size as u64;
    }
    for (i, b) in bytes.iter().enumerate() {
        let share = *b as f64 / sent as f64;
        assert!(within(share, 1.0 / 3.0, 0.02), "class {i}: byte share {share}, equal quanta say 1/3");
    }
}

#[test]
fn drr_byte_shares_follow_quanta() {
    let quanta = [500u64, 1500, 3000];
    let classes =
        quanta.iter().enumerate().map(|(i, &q)| class(&format!("c{i}"), |c| c.quantum = Some(Bytes(q)))).collect();
    let mut p = classful("100 Mbit/s", Scheduler::Drr, classes);
    let out = run(&mut p, backlog(3000, &[(1000, 1), (1000, 2), (1000, 3)]));
    // The largest share is 3000/5000 = 0.6: 3000 deliveries keep all backlogged.
    let window = &out[..3000];
    let total: u64 = quanta.iter().sum();
    for (i, &q) in quanta.iter().enumerate() {
        let got = window.iter().filter(|o| o.port == i as u16 + 1).map(|o| o.size as u64).sum::<u64>() as f64
            / window.iter().map(|o| o.size as u64).sum::<u64>() as f64;
        let expect = q as f64 / total as f64;
        assert!(within(got, expect, 0.02), "class {i}: byte share {got}, quanta say {expect}");
    }
}

#[test]
fn strict_priority_low_class_gets_what_high_leaves_and_high_waits_at_most_one_low_packet() {
    let classes = vec![class("high", |_| {}), class("low", |_| {})];
    let mut p = classful("8 Mbit/s", Scheduler::StrictPriority, classes);
    // High: 1000 B (1 ms on the link) every 4 ms, load 0.25. Low: 500 B
    // (0.5 ms) packets, backlogged for the whole 10 s.
    let (t_high, t_low) = (Duration::from_millis(1), Duration::from_micros(500));
    let horizon = Instant::from_secs(10);
    let mut arrivals = backlog(30_000, &[(500, 2)]);
    let mut id = 1_000_000;
    let mut t = Instant::from_micros(1_234);
    while t < horizon {
        arrivals.push((t, pkt(id, 1000, 1)));
        id += 1;
        t += Duration::from_millis(4);
    }
    arrivals.sort_by_key(|(t, _)| *t);
    let out = run(&mut p, arrivals);
    let in_horizon = |o: &&Out| o.at <= horizon;
    let low_bytes: u64 = out.iter().filter(in_horizon).filter(|o| o.port == 2).map(|o| o.size as u64).sum();
    let low_rate = low_bytes as f64 * 8.0 / horizon.as_secs_f64();
    let expect = (1.0 - 0.25) * 8e6;
    assert!(within(low_rate, expect, 0.01), "low class got {low_rate} bit/s, (1-rho)C = {expect}");
    let high: Vec<Duration> = out.iter().filter(|o| o.port == 1).map(|o| o.at - o.sent).collect();
    let worst = *high.iter().max().unwrap();
    assert!(worst <= t_high + t_low, "high waited {worst}, more than one low packet ({t_low}) beyond its own {t_high}");
    assert!(worst > t_high, "the low class is always busy, so some high packet must wait for it");
}

/// A CoDel stage at 8 Mbit/s (1000 B = 1 ms) fed `load` times its rate
/// with unresponsive 1000 B packets for `secs`.
fn codel_overload(load: f64, secs: u64, ecn: Ecn) -> (Vec<Out>, Vec<Event>) {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("8 Mbit/s".parse().unwrap());
        s.queue.codel = Some(CodelConfig::default());
    })]);
    let gap = Duration::from_nanos((1e6 / load) as u64);
    let mut arrivals = Vec::new();
    let mut t = Instant::ZERO;
    let mut id = 0;
    while t < Instant::from_secs(secs) {
        let mut p = pkt(id, 1000, 1);
        p.ecn = ecn;
        arrivals.push((t, p));
        id += 1;
        t += gap;
    }
    let out = run(&mut p, arrivals);
    (out, p.drain_events())
}

#[test]
fn codel_never_drops_without_a_standing_queue() {
    let (out, events) = codel_overload(0.9, 5, Ecn::NotEct);
    assert!(events.iter().all(|e| !matches!(e.kind, EventKind::Drop(_))));
    assert_eq!(out.len() as u64, 5_000_000 / 1_111 + 1);
}

#[test]
fn codel_drop_times_follow_the_control_law() {
    // 25% overload: the queue grows by 1 packet every 4 ms, so sojourn
    // passes target (5 ms) at about 20 ms and stays above it.
    let (_, events) = codel_overload(1.25, 2, Ecn::NotEct);
    let drops: Vec<Instant> =
        events.iter().filter(|e| e.kind == EventKind::Drop(DropReason::Codel)).map(|e| e.time).collect();
    assert!(drops.len() > 10, "{} drops", drops.len());
    // The first drop comes one interval (100 ms) after the sojourn time
    // first exceeded target, to within a packet time.
    let first = drops[0].as_secs_f64();
    assert!((0.100..0.100 + 0.030).contains(&first), "first drop at {first} s");
    // Then drops come interval/sqrt(count) apart (RFC 8289 §5.3), count
    // being 1 after the first drop, each rounded up to the next dequeue
    // (1 ms).
    for k in 1..6 {
        let gap = (drops[k] - drops[k - 1]).as_secs_f64();
        let law = 0.100 / (k as f64).sqrt();
        assert!(gap >= law - 1e-9 && gap <= law + 0.001 + 1e-9, "drop {k}: gap {gap} s, control law {law} s");
    }
}

/// A second dropping episode starts from the first one's drop rate (RFC
/// 8289 §5.5, the Linux rule its pseudocode follows): 25% overload for
/// 0.6 s, nothing for 0.3 s (the queue drains and CoDel leaves the
/// dropping state), then 25% overload again. Re-entering within 16
/// intervals of the last scheduled drop, count restarts at
/// delta = count − lastcount = (drops of episode 1) − 1, so episode 2's
/// drops are scheduled at t0, t0 + 100/√delta ms, then + 100/√(delta+1),
/// ..., each taken at the next dequeue (≤ 1 ms later).
#[test]
fn a_second_codel_episode_remembers_the_drop_rate_of_the_first() {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("8 Mbit/s".parse().unwrap());
        s.queue.codel = Some(CodelConfig::default());
    })]);
    // 1000 B packets every 0.8 ms (1.25 × the 1 ms service time).
    let mut arrivals = Vec::new();
    for (from_us, to_us) in [(0u64, 600_000u64), (900_000, 2_500_000)] {
        let mut t = from_us;
        while t < to_us {
            let id = arrivals.len() as u64;
            arrivals.push((Instant::from_micros(t), pkt(id, 1000, 1)));
            t += 800;
        }
    }
    run(&mut p, arrivals);
    let drops: Vec<Instant> =
        p.drain_events().iter().filter(|e| e.kind == EventKind::Drop(DropReason::Codel)).map(|e| e.time).collect();
    // Within an episode drops are at most one interval apart; the pause
    // separates the episodes by more.
    let split = 1 + drops.windows(2).position(|w| w[1] - w[0] > Duration::from_millis(150)).expect("two episodes");
    let (first, second) = drops.split_at(split);
    assert!(drops[split - 1] < Instant::from_millis(900) && drops[split] > Instant::from_millis(900));
    let delta = first.len() as u32 - 1;
    println!("episode 1: {} drops, ending at {}; episode 2 starts at {}", first.len(), drops[split - 1], drops[split]);
    assert!(delta > 1, "episode 1 must drop at least 3 packets for the memory to apply ({delta})");
    assert!(second.len() > 6, "{} drops in episode 2", second.len());
    let mut scheduled = second[0].as_secs_f64();
    for (j, &d) in second.iter().enumerate().take(6) {
        let at = d.as_secs_f64();
        assert!(
            at >= scheduled - 1e-9 && at <= scheduled + 0.001 + 1e-9,
            "episode 2 drop {j} at {at} s, scheduled at {scheduled} s (count from {delta})"
        );
        scheduled += 0.100 / ((delta + j as u32) as f64).sqrt();
    }
}

#[test]
fn codel_marks_ecn_capable_packets_instead_of_dropping() {
    let (out, events) = codel_overload(1.25, 2, Ecn::Ect0);
    assert!(events.iter().all(|e| !matches!(e.kind, EventKind::Drop(_))));
    let marks = events.iter().filter(|e| e.kind == EventKind::EcnMark).count();
    assert!(marks > 10, "{marks} marks");
    assert_eq!(out.len() as u64, 2_000_000 / 800);
}

#[test]
fn a_state_change_sets_new_weights_and_keeps_the_waiting_packets() {
    let classes = |w: [u32; 2]| -> Vec<ClassConfig> {
        w.iter().enumerate().map(|(i, &w)| class(&format!("c{i}"), |c| c.weight = Some(w))).collect()
    };
    let mut p = classful("8 Mbit/s", Scheduler::Wrr, classes([1, 1]));
    let arrivals = backlog(3000, &[(1000, 1), (1000, 2)]);
    let entered = arrivals.len();
    let mut sent = HashMap::new();
    for (t, pk) in arrivals {
        sent.insert(pk.id, t);
        p.push(t, pk);
    }
    // 1 ms per packet: change the weights to 1:3 at 1 s (1000 sent 1:1).
    let rules = (0..2).map(|i| rule(&format!("c{i}"), i as u16 + 1)).collect();
    let queue = QueueConfig { classes: classes([1, 3]), scheduler: Scheduler::Wrr, rules, ..QueueConfig::default() };
    let patch = StagePatch::default().with("queue", |c| c.queue = queue);
    let mut out = Vec::new();
    while let Some(t) = p.next_wakeup().filter(|&t| t < Instant::from_secs(1)) {
        while let Some(d) = p.poll(t) {
            out.push(d);
        }
    }
    assert!(p.apply(Instant::from_secs(1), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    out.extend(drain(&mut p));
    assert_eq!(out.len(), entered, "packets waiting at the change must stay");
    let share = |from: Instant, to: Instant| {
        let w: Vec<_> = out.iter().filter(|d| d.at > from && d.at <= to).collect();
        w.iter().filter(|d| d.packet.flow.src_port == 2).count() as f64 / w.len() as f64
    };
    assert!(within(share(Instant::ZERO, Instant::from_secs(1)), 0.5, 0.02));
    // After the change, class 2 sends 3 of every 4 packets while both are backlogged.
    assert!(within(share(Instant::from_secs(1), Instant::from_secs(3)), 0.75, 0.02));
}

/// Queueing delay of a sparse flow (200 B every 20 ms, port 1) beside a
/// bulk flow at 1.2 times a 100 Mbit/s link (1500 B, port 2), for 5 s:
/// how many sparse packets got through and the longest any waited before
/// its transmission.
fn sparse_beside_bulk(queue: QueueConfig) -> (usize, Duration) {
    let mut p = path(vec![stage(|s| {
        s.rate = Some("100 Mbit/s".parse().unwrap());
        s.queue = queue;
    })]);
    let mut arrivals = Vec::new();
    let horizon = Instant::from_secs(5);
    // Bulk: 1500 B every 100 us (120 Mbit/s).
    let mut t = Instant::ZERO;
    let mut id = 0;
    while t < horizon {
        arrivals.push((t, pkt(id, 1500, 2)));
        id += 1;
        t += Duration::from_micros(100);
    }
    let mut t = Instant::from_micros(1_037);
    while t < horizon {
        arrivals.push((t, pkt(id, 200, 1)));
        id += 1;
        t += Duration::from_millis(20);
    }
    arrivals.sort_by_key(|(t, _)| *t);
    let out = run(&mut p, arrivals);
    let own = Rate::from_bits_per_sec(100_000_000).transmission_time(200);
    let sparse: Vec<Duration> =
        out.iter().filter(|o| o.port == 1).map(|o| (o.at - o.sent).saturating_sub(own)).collect();
    (sparse.len(), sparse.iter().max().copied().unwrap_or(Duration::ZERO))
}

#[test]
fn fq_codel_keeps_a_sparse_flow_below_a_millisecond_beside_a_bulk_flow() {
    let (n, fq) =
        sparse_beside_bulk(QueueConfig { fq_codel: Some(FqCodelConfig::default()), ..QueueConfig::default() });
    assert_eq!(n, 250, "every sparse packet gets through");
    // RFC 8290 §4.2: a sparse flow's packet goes on the new list and waits
    // at most for the packet on the link (1500 B at 100 Mbit/s = 120 us).
    assert!(fq < Duration::from_millis(1), "sparse flow waited {fq}");
    assert!(fq <= Duration::from_micros(121), "sparse flow waited {fq}, more than one bulk packet");
    // The same traffic through one CoDel queue: the sparse flow waits
    // behind the bulk flow's standing queue.
    let (_, single) = sparse_beside_bulk(QueueConfig {
        packets: Some(1000),
        codel: Some(CodelConfig::default()),
        ..QueueConfig::default()
    });
    assert!(single > Duration::from_millis(2), "single CoDel queue: sparse flow waited only {single}");
}

/// FQ-CoDel as one class's queue (RFC 8290 inside a class): strict
/// priority with a high class (20 Mbit/s CBR of 1000 B) above a
/// best-effort FQ-CoDel class holding a bulk backlog (8000 packets of
/// 1500 B) and a sparse flow (100 B every 10 ms), on 100 Mbit/s. The sparse
/// flow is a new flow at each packet and goes before the bulk flow: it
/// waits at most for the packet in transmission (1500 B: 120 us) and a
/// high-class packet (80 us), under 1 ms. In a plain FIFO best-effort class
/// it waits behind the bulk backlog instead (seconds). The high class gets
/// its 20 Mbit/s either way.
#[test]
fn sparse_flow_in_an_fq_codel_class_under_strict_priority_sees_under_1_ms() {
    for fq in [true, false] {
        let be = class("be", |c| {
            if fq {
                c.fq_codel = Some(FqCodelConfig::default());
            } else {
                c.packets = Some(10_000);
            }
        });
        let mut p = classful("100 Mbit/s", Scheduler::StrictPriority, vec![class("high", |_| {}), be]);
        // Arrivals, in time order: (time, packet).
        let mut arrivals: Vec<(Instant, Packet)> = Vec::new();
        let mut id = 0;
        let mut next_id = || {
            id += 1;
            id
        };
        for _ in 0..8000 {
            arrivals.push((Instant::ZERO, pkt(next_id(), 1500, 2)));
        }
        for k in 0..2500u64 {
            arrivals.push((Instant::from_micros(400 * k), pkt(next_id(), 1000, 1)));
        }
        for k in 0..100u64 {
            arrivals.push((Instant::from_micros(5000 + 10_000 * k), pkt(next_id(), 100, 3)));
        }
        arrivals.sort_by_key(|(t, _)| *t);
        let sent: HashMap<u64, Instant> = arrivals.iter().map(|(t, p)| (p.id.0, *t)).collect();
        let mut out = Vec::new();
        for (t, packet) in arrivals {
            while let Some(d) = p.poll(t) {
                out.push(d);
            }
            p.push(t, packet);
        }
        let horizon = Instant::from_secs(1);
        while let Some(t) = p.next_wakeup().filter(|&t| t <= horizon) {
            while let Some(d) = p.poll(t) {
                out.push(d);
            }
        }
        // Queueing: time in the stage less the packet's own 8 us on the link.
        let waits: Vec<f64> = out
            .iter()
            .filter(|d| d.packet.flow.src_port == 3)
            .map(|d| (d.at.as_nanos() - sent[&d.packet.id.0].as_nanos()) as f64 * 1e-9 - 8e-6)
            .collect();
        let worst = waits.iter().cloned().fold(0.0, f64::max);
        let high_bits: f64 =
            out.iter().filter(|d| d.packet.flow.src_port == 1).map(|d| d.packet.size as f64 * 8.0).sum();
        println!("fq_codel class {fq}: sparse packets {} worst wait {worst} s, high {high_bits} bit/s", waits.len());
        assert!((high_bits - 20e6).abs() <= 0.01 * 20e6, "high class {high_bits} bit/s");
        if fq {
            assert_eq!(waits.len(), 100, "every sparse packet delivered");
            assert!(worst < 1e-3, "sparse flow waited {worst} s");
        } else {
            assert!(waits.is_empty() || worst > 0.1, "behind the FIFO backlog: {worst} s");
        }
    }
}

/// Runs the path up to `horizon` (inclusive), returning the deliveries.
fn run_to(p: &mut Path, horizon: Instant) -> Vec<Delivery> {
    let mut out = Vec::new();
    while let Some(t) = p.next_wakeup().filter(|&t| t <= horizon) {
        while let Some(d) = p.poll(t) {
            out.push(d);
        }
    }
    out
}

#[test]
fn a_new_queue_shape_keeps_each_waiting_packets_arrival_time() {
    // 1000 B at 800 kbit/s: one packet every 10 ms; ten arrive at 0 and
    // may wait 50 ms. Packet k starts at 10k ms, so packets 0..=5 are
    // sent (packet 5 waited exactly 50 ms) and 6..=9 are dropped for
    // their sojourn. At 30 ms the single queue becomes two classes with
    // the same limit: the packets keep their arrival time, so the same six
    // go out (counting from 30 ms instead, packets up to 8 would).
    let mut p = path(vec![stage(|s| {
        s.rate = Some("800 kbit/s".parse().unwrap());
        s.queue.max_sojourn = Some(ms(50));
    })]);
    for i in 0..10 {
        p.push(Instant::ZERO, packet(i, 1000));
    }
    let mut out = run_to(&mut p, Instant::from_millis(29));
    let classes = QueueConfig {
        classes: vec![class("a", |c| c.max_sojourn = Some(ms(50))), class("b", |c| c.max_sojourn = Some(ms(50)))],
        ..QueueConfig::default()
    };
    let patch = StagePatch::default().with("queue", |c| c.queue = classes);
    assert!(p.apply(Instant::from_millis(30), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    out.extend(drain(&mut p));
    let ids: Vec<u64> = out.iter().map(|d| d.packet.id.0).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
    let stage = &p.stage_stats(Instant::from_secs(1))[0];
    assert_eq!(stage.dropped.get(DropReason::SojournLimit), 4, "{stage:?}");
}

#[test]
fn background_follows_its_class_when_a_state_reorders_the_classes() {
    // A CBR source in class `bg`; at 100 ms the classes swap places. Its
    // packets must still go to `bg` (now the first class), never to `fg`.
    let mut s = StageConfig::named("s");
    s.rate = Some("100 Mbit/s".parse().unwrap());
    s.queue.classes = vec![class("fg", |_| {}), class("bg", |_| {})];
    s.background = vec![BackgroundConfig { class: Some("bg".into()), ..cbr("cbr", "8 Mbit/s", 1000) }];
    let mut p = path(vec![s]);
    run_to(&mut p, Instant::from_millis(99));
    let swapped = QueueConfig { classes: vec![class("bg", |_| {}), class("fg", |_| {})], ..QueueConfig::default() };
    let patch = StagePatch::default().with("queue", |c| c.queue = swapped);
    assert!(p.apply(Instant::from_millis(100), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    let horizon = Instant::from_millis(199);
    run_to(&mut p, horizon);
    let stats = &p.stage_stats(horizon)[0];
    let enqueued = |name: &str| stats.classes.iter().find(|c| c.name == name).unwrap().enqueued;
    // 1000 packets/s: those at 0..=100 ms come before the change (the one
    // at 100 ms too: the stage catches up to the change's instant first)
    // and are counted by the old classes; the 99 at 101..=199 ms all go to
    // `bg`. With the index from before the swap they would go to `fg`.
    assert_eq!(enqueued("fg"), 0, "{stats:?}");
    assert_eq!(enqueued("bg"), 99, "{stats:?}");
}

#[test]
fn waiting_background_packets_keep_their_class_when_the_classes_change() {
    // A 1 Mbit/s link and a CBR source of 2 Mbit/s in class `bg`: its
    // packets pile up in `bg`. At 100 ms the classes swap places (a new
    // shape: the waiting packets are moved). They must land in `bg` again;
    // the classifier would put them in the default class, now `fg`.
    let mut s = StageConfig::named("s");
    s.rate = Some("1 Mbit/s".parse().unwrap());
    s.queue.classes = vec![class("fg", |_| {}), class("bg", |_| {})];
    s.background = vec![BackgroundConfig { class: Some("bg".into()), ..cbr("cbr", "2 Mbit/s", 1000) }];
    let mut p = path(vec![s]);
    run_to(&mut p, Instant::from_millis(99));
    let swapped = QueueConfig { classes: vec![class("bg", |_| {}), class("fg", |_| {})], ..QueueConfig::default() };
    let patch = StagePatch::default().with("queue", |c| c.queue = swapped);
    assert!(p.apply(Instant::from_millis(100), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    let stats = &p.stage_stats(Instant::from_millis(100))[0];
    let enqueued = |name: &str| stats.classes.iter().find(|c| c.name == name).unwrap().enqueued;
    // By 100 ms: 26 made (one per 4 ms, 0 to 100 ms), 12 sent (8 ms each)
    // and one on the link, so 13 waiting, all moved into `bg`.
    assert_eq!(enqueued("fg"), 0, "{stats:?}");
    assert_eq!(enqueued("bg"), 13, "{stats:?}");
}
