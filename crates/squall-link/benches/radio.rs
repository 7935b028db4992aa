//! Radio model speed (issue 6): the channel generator must run at least
//! 100× faster than real time, i.e. well above 1500 slots/s of 25
//! sub-channels (seed 002 Table I). Criterion's throughput is in slots/s;
//! divide by 1500 for the real-time ratio.
//!
//! Run: `cargo bench -p squall-link --bench radio`

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use squall_link::radio::prediction::Predictor;
use squall_link::radio::*;
use squall_link::rng::stream;
use squall_link::*;

const SLOTS: u64 = 15_000;

/// 10 s of the seed's channel: 12-tap typical urban at 75 km/h, 25
/// sub-channels, AR(1) shadowing, true and NMSE-0.1 predicted SNR.
fn generate(seed: u64, nmse: f64) -> f64 {
    let config = FadingConfig::default();
    let mut channel =
        FadingChannel::new(&config, 1500, Predictor::new(nmse, seed, "p"), stream(seed, "f"), stream(seed, "s"));
    let mut slot = SlotChannel::default();
    let mut sum = 0.0;
    for n in 0..SLOTS {
        channel.slot(n, &mut slot);
        sum += slot.snr[0] + slot.predicted[24];
    }
    sum
}

/// 10 s of a saturated link: adaptive modulation, best sub-channel,
/// prediction NMSE `nmse`, ARQ with 5 retries, 1500-byte packets.
fn saturated_link(seed: u64, nmse: f64) -> u64 {
    let config = RadioConfig {
        modulation: ModulationChoice::Adaptive,
        scheduling: Scheduling::Best,
        prediction_nmse: nmse,
        arq: ArqConfig { delay: Duration::from_millis(2), retries: 5 },
        ..Default::default()
    };
    let mut link = RadioLink::new(&config, "radio", Direction::Downlink, seed).unwrap();
    link.set_recording(Recording::Off);
    let flow = FlowKey {
        protocol: Protocol::Tcp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 80,
        dst_port: 5001,
    };
    let end = Instant::from_secs(10);
    // The link's log (recording is off: it stays empty).
    let mut events = Vec::new();
    let mut id = 0;
    let mut delivered = 0;
    while let Some(t) = link.next_wakeup().or(Some(Instant::ZERO)).filter(|&t| t < end) {
        while link.backlog() < 2 {
            link.push(t, Packet::new(PacketId(id), 1500, flow), &mut events);
            id += 1;
        }
        while link.poll(t, &mut events).is_some() {
            delivered += 1;
        }
    }
    delivered
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("radio_channel_25_subchannels");
    g.throughput(Throughput::Elements(SLOTS));
    g.sample_size(20);
    g.bench_function("slots_perfect_prediction", |b| b.iter(|| black_box(generate(1, 0.0))));
    g.bench_function("slots_nmse_0.1", |b| b.iter(|| black_box(generate(1, 0.1))));
    g.finish();
    let mut g = c.benchmark_group("radio_link_saturated");
    g.throughput(Throughput::Elements(SLOTS));
    g.sample_size(10);
    g.bench_function("slots_adaptive_best_perfect", |b| b.iter(|| black_box(saturated_link(1, 0.0))));
    g.bench_function("slots_adaptive_best_nmse_0.1", |b| b.iter(|| black_box(saturated_link(1, 0.1))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
