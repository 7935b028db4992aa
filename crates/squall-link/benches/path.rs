//! Link-model speed: packets per second through a 3-stage path with a
//! queue, fragmentation and errors (issue: foundation, "Done when"), and
//! through one stage with a single queue beside one with 8 classes, DRR
//! and CoDel (issue 12).
//!
//! Run: `cargo bench -p squall-link --bench path`

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use squall_link::*;

const PACKETS: u64 = 100_000;

fn three_stage_path() -> PathConfig {
    let mut router = StageConfig::named("router");
    router.rate = Some("100 Mbit/s".parse().unwrap());
    router.delay = Duration::from_millis(5);
    router.queue.packets = Some(100);

    let mut radio = StageConfig::named("radio");
    radio.rate = Some("50 Mbit/s".parse().unwrap());
    radio.delay = Duration::from_millis(20);
    radio.queue.packets = Some(200);
    radio.fragmentation = Some(Fragmentation { frame_payload: Bytes(500), frame_header: Bytes(8), compression: 1.0 });
    radio.send_buffer = BufferLimit::Packets(4);
    radio.error = ErrorModel::Packet(Probability::new(0.01).unwrap());
    radio.error_mode = ErrorMode::Arq(ArqConfig { delay: Duration::from_millis(2), retries: 3 });

    let mut core = StageConfig::named("core");
    core.rate = Some("1 Gbit/s".parse().unwrap());
    core.delay = Duration::from_millis(10);
    core.error = ErrorModel::Bit(Probability::new(1e-7).unwrap());

    PathConfig { direction: Direction::Downlink, stages: vec![router, radio, core] }
}

/// Pushes `PACKETS` 1500-byte packets at 90% of the bottleneck rate and
/// drains the path; returns the deliveries (so nothing is optimised away).
fn run(config: &PathConfig, record_events: bool) -> u64 {
    let mut path = Path::new(config, 1).unwrap();
    path.set_recording(if record_events { Recording::All } else { Recording::Off });
    let flow = FlowKey {
        protocol: Protocol::Udp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 1,
        dst_port: 2,
    };
    // 1500 B with 3 frames of 8 B headers on 50 Mbit/s: 243.84 us; send every 271 us.
    let gap = Duration::from_micros(271);
    let mut now = Instant::ZERO;
    let mut delivered = 0;
    for i in 0..PACKETS {
        while let Some(t) = path.next_wakeup().filter(|&t| t <= now) {
            while path.poll(t).is_some() {
                delivered += 1;
            }
        }
        path.push(now, Packet::new(PacketId(i), 1500, flow));
        if record_events {
            black_box(path.drain_events());
        }
        now += gap;
    }
    while let Some(t) = path.next_wakeup() {
        while path.poll(t).is_some() {
            delivered += 1;
        }
    }
    assert!(path.stats().conserved());
    delivered
}

fn bench(c: &mut Criterion) {
    let config = three_stage_path();
    let mut g = c.benchmark_group("link_model_3_stage");
    g.throughput(Throughput::Elements(PACKETS));
    g.sample_size(10);
    g.bench_function("packets_no_event_log", |b| b.iter(|| black_box(run(&config, false))));
    g.bench_function("packets_with_event_log", |b| b.iter(|| black_box(run(&config, true))));
    g.finish();
}

/// One stage at 1 Gbit/s: a single tail-drop queue, or 8 classes (rules on
/// the destination port) served by DRR, each with CoDel.
fn one_stage(classes: bool) -> PathConfig {
    let mut s = StageConfig::named("qdisc");
    s.rate = Some("1 Gbit/s".parse().unwrap());
    s.queue.packets = Some(1000);
    if classes {
        s.queue = QueueConfig {
            scheduler: Scheduler::Drr,
            classes: (0..8)
                .map(|i| ClassConfig {
                    name: format!("c{i}"),
                    packets: Some(1000),
                    bytes: None,
                    drop: DropPolicy::Tail,
                    codel: Some(CodelConfig::default()),
                    quantum: Some(Bytes(1500)),
                    ..ClassConfig::default()
                })
                .collect(),
            rules: (0..8)
                .map(|i| Rule {
                    class: format!("c{i}"),
                    ip_version: None,
                    protocol: None,
                    dscp: None,
                    tos: None,
                    ecn: None,
                    src: None,
                    dst: None,
                    src_port: None,
                    dst_port: Some(PortRange::One(5000 + i)),
                    min_size: None,
                    max_size: None,
                })
                .collect(),
            ..QueueConfig::default()
        };
    }
    PathConfig { direction: Direction::Downlink, stages: vec![s] }
}

/// Pushes `PACKETS` packets of 8 flows (one per class) at 1.1 times the
/// stage's rate, so queues build and CoDel acts, and drains the path.
fn run_one_stage(config: &PathConfig) -> u64 {
    let mut path = Path::new(config, 1).unwrap();
    path.set_recording(Recording::Off);
    let flow = |i: u16| FlowKey {
        protocol: Protocol::Udp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 1,
        dst_port: 5000 + i,
    };
    // 1000 B at 1 Gbit/s: 8 us; send every 7.27 us.
    let gap = Duration::from_nanos(7_270);
    let mut now = Instant::ZERO;
    let mut delivered = 0;
    for i in 0..PACKETS {
        while let Some(t) = path.next_wakeup().filter(|&t| t <= now) {
            while path.poll(t).is_some() {
                delivered += 1;
            }
        }
        path.push(now, Packet::new(PacketId(i), 1000, flow((i % 8) as u16)));
        now += gap;
    }
    while let Some(t) = path.next_wakeup() {
        while path.poll(t).is_some() {
            delivered += 1;
        }
    }
    assert!(path.stats().conserved());
    delivered
}

fn bench_classes(c: &mut Criterion) {
    let single = one_stage(false);
    let classes = one_stage(true);
    let mut g = c.benchmark_group("stage_qdisc");
    g.throughput(Throughput::Elements(PACKETS));
    g.sample_size(10);
    g.bench_function("single_queue", |b| b.iter(|| black_box(run_one_stage(&single))));
    g.bench_function("8_classes_drr_codel", |b| b.iter(|| black_box(run_one_stage(&classes))));
    g.finish();
}

/// The inline emulator's busiest case: an open stage (no rate, no delay, a
/// 10 000-packet queue, as `squall bench bridge` uses) carrying flights of
/// 45 wire segments that arrive together, as one 64 KB TCP super-frame
/// read from a socket does, each flight polled out before the next.
fn forward_flights(flights: u64) -> u64 {
    let mut s = StageConfig::named("down");
    s.queue.packets = Some(10_000);
    let config = PathConfig { direction: Direction::Downlink, stages: vec![s] };
    let mut path = Path::new(&config, 1).unwrap();
    path.set_recording(Recording::Off);
    let flow = FlowKey {
        protocol: Protocol::Tcp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 40000,
        dst_port: 5201,
    };
    let mut now = Instant::ZERO;
    let mut delivered = 0;
    let mut id = 0;
    for _ in 0..flights {
        for _ in 0..FLIGHT {
            path.push(now, Packet::new(PacketId(id), 1500, flow));
            id += 1;
        }
        while let Some(d) = path.poll(now) {
            delivered += 1;
            black_box(d);
        }
        now += Duration::from_micros(12);
    }
    assert!(path.stats().conserved());
    delivered
}

/// Wire segments in a 64 KB flight of 1448-byte segments.
const FLIGHT: u64 = 45;

fn bench_forwarding(c: &mut Criterion) {
    let flights = PACKETS / FLIGHT;
    let mut g = c.benchmark_group("open_stage");
    g.throughput(Throughput::Elements(flights * FLIGHT));
    g.sample_size(20);
    g.bench_function("flights_of_45", |b| b.iter(|| black_box(forward_flights(flights))));
    g.finish();
}

criterion_group!(benches, bench, bench_classes, bench_forwarding);
criterion_main!(benches);
