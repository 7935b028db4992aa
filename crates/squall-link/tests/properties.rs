//! Invariants over random paths and traffic (docs/validation.md, property tests): no packet is
//! created or lost without a reason, each flow keeps its order unless the
//! stage allows reordering, and the same seed gives the same events.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use proptest::prelude::*;
use squall_link::*;

fn arb_stage(name: String) -> impl Strategy<Value = StageConfig> {
    (
        (prop::option::of(1u32..20), prop::option::of(1_000u64..30_000), any::<bool>(), prop::option::of(1u64..200)),
        (prop::option::of(8_000u64..10_000_000), 0u64..50, prop::option::of(0u64..30), any::<bool>()),
        (0u8..5, 0.0f64..0.5, 0u8..3, 0u32..4),
        (prop::option::of((50u64..600, 0u64..40)), 1u32..5, prop::option::of(1u32..6), prop::option::of(0u64..20)),
        prop::option::of((2usize..9, 0u8..3, 0u8..4, 1u32..4)),
        (prop::option::of((1u64..20, 0u64..10)), prop::option::of(1u32..8)),
    )
        .prop_map(move |(q, l, e, b, classes, extras)| {
            let (packets, bytes, head, sojourn) = q;
            let (rate, delay, jitter, reorder) = l;
            let (model, p, mode, retries) = e;
            let (frag, send, receive, alloc) = b;
            let mut s = StageConfig::named(&name);
            s.queue.packets = packets;
            s.queue.bytes = bytes.map(Bytes);
            s.queue.drop = if head { DropPolicy::Head } else { DropPolicy::Tail };
            s.queue.max_sojourn = sojourn.map(ms);
            s.rate = rate.map(Rate::from_bits_per_sec);
            s.delay = ms(delay);
            s.jitter = jitter.map(|j| Distribution::Uniform { low: ms(0), high: ms(j) });
            s.reorder = reorder;
            let p = Probability::new(p).unwrap();
            s.error = match model {
                0 => ErrorModel::None,
                1 => ErrorModel::Packet(p),
                2 => ErrorModel::Bit(Probability::new(p.get() / 1000.0).unwrap()),
                3 => ErrorModel::GilbertElliott(GilbertElliott {
                    p: Probability::new(0.05).unwrap(),
                    r: Probability::new(0.3).unwrap(),
                    h: Probability::ZERO,
                    k: Probability::ONE,
                }),
                _ => ErrorModel::BerPerByte(Probability::new(p.get() / 1000.0).unwrap()),
            };
            s.error_mode = match mode {
                0 => ErrorMode::Drop,
                1 => ErrorMode::Corrupt,
                _ => ErrorMode::Arq(ArqConfig { delay: ms(3), retries }),
            };
            s.fragmentation =
                frag.map(|(f, h)| Fragmentation { frame_payload: Bytes(f), frame_header: Bytes(h), compression: 1.0 });
            s.send_buffer = BufferLimit::Packets(send);
            s.receive_buffer = receive.map(BufferLimit::Packets);
            s.allocation_delay = alloc.map(|a| Distribution::constant(ms(a)));
            // A server with vacations (seed 003 §2.2); flow control toward
            // the stage before (seed 000 §4.2; ignored on the first stage by
            // arb_path).
            let (vacation, window) = extras;
            s.vacation = vacation.map(|(serving, length)| VacationConfig {
                serving: Distribution::Exponential { mean: ms(serving) },
                length: Distribution::constant(ms(length)),
            });
            s.flow_control = window.map(|n| FlowControl { window: BufferLimit::Packets(n) });
            if let Some((n, scheduler, aqm, weight)) = classes {
                s.queue = classful(&s.queue, n, scheduler, aqm, weight);
            }
            s
        })
}

/// `n` classes, each with `base`'s limits and no AQM, CoDel or PIE (`aqm`
/// 0, 1, 2); flow k (source port k) goes to class k-1, the rest to the
/// last class.
fn classful(base: &QueueConfig, n: usize, scheduler: u8, aqm: u8, weight: u32) -> QueueConfig {
    let scheduler = [Scheduler::StrictPriority, Scheduler::Wrr, Scheduler::Drr][scheduler as usize];
    let classes = (0..n)
        .map(|i| ClassConfig {
            name: format!("c{i}"),
            // FQ-CoDel (aqm 3) sets its own limit.
            packets: base.packets.filter(|_| aqm != 3),
            bytes: base.bytes.filter(|_| aqm != 3),
            drop: base.drop,
            codel: (aqm == 1).then(CodelConfig::default),
            pie: (aqm == 2).then(PieConfig::default),
            max_sojourn: base.max_sojourn.filter(|_| aqm != 3),
            weight: (scheduler == Scheduler::Wrr).then_some(weight + i as u32),
            quantum: (scheduler == Scheduler::Drr).then_some(Bytes(300 * (i as u64 + 1))),
            fq_codel: (aqm == 3).then(|| FqCodelConfig { flows: 4, ..FqCodelConfig::default() }),
            ..ClassConfig::default()
        })
        .collect();
    let rules = (0..n - 1)
        .map(|i| Rule {
            class: format!("c{i}"),
            ip_version: None,
            protocol: None,
            dscp: None,
            tos: None,
            ecn: None,
            src: None,
            dst: None,
            src_port: Some(PortRange::One(i as u16 + 1)),
            dst_port: None,
            min_size: None,
            max_size: None,
        })
        .collect();
    QueueConfig { classes, scheduler, rules, ..QueueConfig::default() }
}

fn arb_path() -> impl Strategy<Value = PathConfig> {
    (1usize..4).prop_flat_map(|n| (0..n).map(|i| arb_stage(format!("s{i}"))).collect::<Vec<_>>()).prop_map(
        |mut stages| {
            // The first stage has no stage before it to announce a window to.
            stages[0].flow_control = None;
            PathConfig { direction: Direction::Downlink, stages }
        },
    )
}

/// Packets as (arrival ms, flow, size).
type Traffic = Vec<(u64, u16, u32)>;
/// Blackouts as (start ms, length ms, drop rather than hold).
type Blackouts = Vec<(u64, u64, bool)>;

fn arb_traffic() -> impl Strategy<Value = (Traffic, Blackouts)> {
    (
        prop::collection::vec((0u64..2_000, 1u16..4, 40u32..1500), 1..300),
        prop::collection::vec((0u64..2_000, 1u64..300, any::<bool>()), 0..3),
    )
}

#[derive(Debug, PartialEq)]
struct Outcome {
    deliveries: Vec<(Instant, u64)>,
    events: Vec<(Instant, String, String, Option<u64>)>,
}

fn run(
    config: &PathConfig,
    traffic: &[(u64, u16, u32)],
    blackouts: &[(u64, u64, bool)],
    seed: u64,
) -> (Outcome, Path, Vec<Event>) {
    let mut path = Path::new(config, seed).unwrap();
    let mut inputs: Vec<(Instant, u8, usize)> =
        traffic.iter().enumerate().map(|(i, &(t, _, _))| (Instant::from_millis(t), 1, i)).collect();
    for (i, &(t, len, _)) in blackouts.iter().enumerate() {
        inputs.push((Instant::from_millis(t), 0, i));
        inputs.push((Instant::from_millis(t + len), 2, i));
    }
    inputs.sort();
    let mut deliveries = Vec::new();
    let mut events = Vec::new();
    let stage_names: Vec<String> = path.stage_names().map(String::from).collect();
    let poll_until = |path: &mut Path, now: Instant, deliveries: &mut Vec<Delivery>| {
        while let Some(t) = path.next_wakeup().filter(|&t| t <= now) {
            while let Some(d) = path.poll(t) {
                deliveries.push(d);
            }
        }
    };
    let mut delivered = Vec::new();
    for (t, kind, i) in inputs {
        poll_until(&mut path, t, &mut delivered);
        match kind {
            1 => {
                let (_, f, size) = traffic[i];
                let mut p = Packet::new(PacketId(i as u64), size, flow(f));
                p.payload = Some(vec![0; size as usize].into());
                path.push(t, p);
            }
            0 => {
                let mode = if blackouts[i].2 { BlackoutMode::Drop } else { BlackoutMode::Hold };
                for s in &stage_names {
                    path.apply(t, &Change::BlackoutStart { stage: s.clone(), mode });
                }
            }
            _ => {
                for s in &stage_names {
                    path.apply(t, &Change::BlackoutEnd { stage: s.clone() });
                }
            }
        }
        assert!(path.stats().conserved(), "{:?}", path.stats());
        events.extend(path.drain_events());
    }
    delivered.extend(drain(&mut path));
    events.extend(path.drain_events());
    for d in delivered {
        deliveries.push((d.at, d.packet.id.0, d.packet.flow.src_port));
    }
    let outcome = Outcome {
        deliveries: deliveries.iter().map(|&(t, id, _)| (t, id)).collect(),
        events: events
            .iter()
            .map(|e| (e.time, e.stage.to_string(), format!("{:?}", e.kind), e.packet.map(|p| p.0)))
            .collect(),
    };
    (outcome, path, events)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_packet_is_delivered_or_dropped_once_with_a_reason(config in arb_path(), (traffic, blackouts) in arb_traffic()) {
        let (outcome, path, events) = run(&config, &traffic, &blackouts, 1);
        let stats = path.stats();
        prop_assert!(stats.conserved());
        prop_assert_eq!(stats.in_flight, 0, "path idle but packets inside");
        let delivered: Vec<u64> = outcome.deliveries.iter().map(|d| d.1).collect();
        let dropped: Vec<u64> = events.iter().filter(|e| matches!(e.kind, EventKind::Drop(_))).filter_map(|e| e.packet.map(|p| p.0)).collect();
        let mut fates: BTreeMap<u64, u32> = BTreeMap::new();
        for id in delivered.iter().chain(&dropped) {
            *fates.entry(*id).or_default() += 1;
        }
        prop_assert_eq!(fates.len(), traffic.len(), "some packet has no fate");
        prop_assert!(fates.values().all(|&n| n == 1), "a packet has two fates");
        prop_assert_eq!(stats.dropped as usize, dropped.len());
    }

    #[test]
    fn each_flow_keeps_its_order_unless_reordering_is_allowed(config in arb_path(), (traffic, _) in arb_traffic()) {
        let (outcome, _, _) = run(&config, &traffic, &[], 2);
        if config.stages.iter().all(|s| !s.reorder) {
            // Ids are arrival order; sizes/flows from the traffic table.
            let mut last: BTreeMap<u16, (u64, Instant)> = BTreeMap::new();
            // Arrival order of equal-time packets is their index order.
            let order: BTreeMap<u64, (u64, usize)> = traffic.iter().enumerate().map(|(i, &(t, _, _))| (i as u64, (t, i))).collect();
            for &(_, id) in &outcome.deliveries {
                let f = traffic[id as usize].1;
                if let Some(&(prev, _)) = last.get(&f) {
                    prop_assert!(order[&prev] < order[&id], "flow {} reordered: {} after {}", f, id, prev);
                }
                last.insert(f, (id, Instant::ZERO));
            }
        }
        let times: Vec<Instant> = outcome.deliveries.iter().map(|d| d.0).collect();
        prop_assert!(times.windows(2).all(|w| w[0] <= w[1]), "deliveries out of time order");
    }

    #[test]
    fn same_seed_same_events(config in arb_path(), (traffic, blackouts) in arb_traffic()) {
        let (a, _, _) = run(&config, &traffic, &blackouts, 9);
        let (b, _, _) = run(&config, &traffic, &blackouts, 9);
        prop_assert_eq!(a, b);
    }
}

#[test]
fn different_seeds_give_different_error_patterns() {
    let mut s = StageConfig::named("s");
    s.error = ErrorModel::Packet(Probability::new(0.5).unwrap());
    let config = PathConfig { direction: Direction::Downlink, stages: vec![s] };
    let traffic: Vec<(u64, u16, u32)> = (0..100).map(|i| (i, 1, 100)).collect();
    let ids = |seed| run(&config, &traffic, &[], seed).0.deliveries.iter().map(|d| d.1).collect::<BTreeSet<_>>();
    assert_ne!(ids(1), ids(2));
}
