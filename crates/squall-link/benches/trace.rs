//! Trace-driven stages' speed (issue 30, "Done when": a trace-driven stage
//! at ≥ 1 M packets/s): packets per second through one stage whose link
//! follows a Mahimahi trace of delivery opportunities, and through one
//! whose rate follows a rate series (stepwise, looped).
//!
//! Run: `cargo bench -p squall-link --bench trace`

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use squall_link::series::{AtEnd, Between, ParameterSeries, SeriesStart};
use squall_link::*;

const PACKETS: u64 = 100_000;

/// A Mahimahi trace of 10 opportunities in each ms over a 10 ms loop
/// (10 · 1 504 B per ms: 120.3 Mbit/s), behind a 1000-packet queue.
fn mahimahi_stage() -> PathConfig {
    let mut s = StageConfig::named("trace");
    s.queue.packets = Some(1000);
    s.trace = Some(DeliveryTrace::from_millis((1..=10).flat_map(|ms| std::iter::repeat_n(ms, 10)).collect()));
    PathConfig { direction: Direction::Downlink, stages: vec![s] }
}

/// A rate series stepping 100, 50, 100, 50 Mbit/s every 10 ms, looped
/// (mean 75 Mbit/s), behind a 1000-packet queue.
fn rate_series_stage() -> PathConfig {
    let mut s = StageConfig::named("series");
    s.queue.packets = Some(1000);
    s.rate = Some("100 Mbit/s".parse().unwrap());
    s.series.rate = Some(Box::new(ParameterSeries {
        file: None,
        between: Between::default(),
        at_end: AtEnd::Loop,
        start: SeriesStart::Run,
        times_ns: vec![0, 10_000_000, 20_000_000, 30_000_000, 40_000_000],
        values: vec![100e6, 50e6, 100e6, 50e6, 100e6],
    }));
    PathConfig { direction: Direction::Downlink, stages: vec![s] }
}

/// Pushes `PACKETS` packets of `size` bytes every `gap` and drains the
/// path; returns the deliveries (so nothing is optimised away).
fn run(config: &PathConfig, size: u32, gap: Duration) -> u64 {
    let mut path = Path::new(config, 1).unwrap();
    path.set_recording(Recording::Off);
    let flow = FlowKey {
        protocol: Protocol::Udp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 1,
        dst_port: 2,
    };
    let mut now = Instant::ZERO;
    let mut delivered = 0;
    for i in 0..PACKETS {
        while let Some(t) = path.next_wakeup().filter(|&t| t <= now) {
            while path.poll(t).is_some() {
                delivered += 1;
            }
        }
        path.push(now, Packet::new(PacketId(i), size, flow));
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
    let mahimahi = mahimahi_stage();
    let series = rate_series_stage();
    let mut g = c.benchmark_group("trace_driven_stage");
    g.throughput(Throughput::Elements(PACKETS));
    g.sample_size(10);
    // 1500 B every 111 us: 108 Mbit/s, 90% of the trace's capacity.
    g.bench_function("mahimahi_trace", |b| b.iter(|| black_box(run(&mahimahi, 1500, Duration::from_micros(111)))));
    // 1000 B every 120 us: 66.7 Mbit/s, 89% of the series' mean rate.
    g.bench_function("rate_series", |b| b.iter(|| black_box(run(&series, 1000, Duration::from_micros(120)))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
