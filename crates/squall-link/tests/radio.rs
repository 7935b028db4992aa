//! The radio link against theory and seed 002 (VALIDATION cases 13 and 14).
//! Each expectation comes from outside the code under test: closed forms,
//! Monte Carlo constellations, or the seed's published numbers.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use squall_link::radio::fading::TYPICAL_URBAN_POWER_DB;
use squall_link::radio::math::{Complex, complex_gaussian, standard_normal};
use squall_link::radio::prediction::Predictor;
use squall_link::radio::*;
use squall_link::rng::stream;
use squall_link::*;

// ---------------------------------------------------------------- helpers

fn flow() -> FlowKey {
    FlowKey {
        protocol: Protocol::Tcp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 80,
        dst_port: 5001,
    }
}

fn constant_channel(snr_db: f64) -> ChannelConfig {
    ChannelConfig::Measured(MeasuredSnr { file: None, snr_db: vec![vec![snr_db]], predicted_snr_db: None })
}

fn link(config: &RadioConfig, seed: u64) -> RadioLink {
    RadioLink::new(config, "radio", Direction::Downlink, seed).expect("valid radio config")
}

/// Runs the link until idle (bounded, to catch livelock).
fn drain(link: &mut RadioLink, events: &mut Vec<Event>) -> Vec<Delivery> {
    let mut out = Vec::new();
    for _ in 0..50_000_000 {
        let Some(t) = link.next_wakeup() else { return out };
        while let Some(d) = link.poll(t, events) {
            out.push(d);
        }
    }
    panic!("radio link did not go idle");
}

// ------------------------------------------------ channel: taps and Doppler

#[test]
fn typical_urban_taps_are_3gpp_tux_paths_in_0_2_us_bins() {
    // 3GPP TR 25.943 typical urban (TUx), 20 paths: delay µs, power dB.
    let tux = [
        (0.0, -5.7),
        (0.217, -7.6),
        (0.512, -10.1),
        (0.514, -10.2),
        (0.517, -10.2),
        (0.674, -11.5),
        (0.882, -13.4),
        (1.230, -16.3),
        (1.287, -16.9),
        (1.311, -17.1),
        (1.349, -17.4),
        (1.533, -19.0),
        (1.535, -19.0),
        (1.622, -19.8),
        (1.818, -21.5),
        (1.836, -21.6),
        (1.884, -22.1),
        (1.943, -22.6),
        (2.048, -23.5),
        (2.140, -24.3),
    ];
    let mut bins = [0.0f64; 12];
    for (delay_us, power_db) in tux {
        bins[(delay_us / 0.2f64).round() as usize] += 10f64.powf(power_db / 10.0);
    }
    for (k, (&seed_db, &bin)) in TYPICAL_URBAN_POWER_DB.iter().zip(&bins).enumerate() {
        let binned_db = 10.0 * bin.log10();
        if seed_db.is_finite() {
            assert!((binned_db - seed_db).abs() < 1e-3, "tap {k}: {binned_db} vs seed {seed_db}");
        } else {
            assert_eq!(bin, 0.0, "tap {k} should be empty");
        }
    }
    let taps = typical_urban();
    assert_eq!(taps[11].delay, Duration::from_nanos(2200));
}

#[test]
fn doppler_at_75_kmh_and_1900_mhz_is_132_hz() {
    let f = FadingConfig::default();
    assert!((f.doppler_hz() - 132.0).abs() < 0.1, "{}", f.doppler_hz());
    // Slot of 0.667 ms at 75 km/h: 1.39 cm; 2 m is exactly 144 slots.
    let step = f.speed.meters_per_sec() / 1500.0;
    assert!((2.0 / step - 144.0).abs() < 1e-9);
}

// ------------------------------------------------- VALIDATION case 14

// Case 14 (Rayleigh envelope, J0 autocorrelation, shadowing σ and pole) is
// one implementation in squall-validate (`radio_cases::fading_statistics`),
// run by `squall validate --case 14` and by squall-validate's
// tests/cases.rs, on the channel of scenarios/validation/14-fading.toml.

#[test]
fn frequency_correlation_follows_the_delay_profile() {
    // E[H_c H*_{c+d}] = Σ p_k e^{j2π d·200kHz·τ_k} (normalised powers).
    let config = FadingConfig { shadowing: ShadowingConfig::off(), ..Default::default() };
    let p: Vec<(f64, f64)> = typical_urban()
        .iter()
        .filter(|t| t.power_db.is_finite())
        .map(|t| (10f64.powf(t.power_db / 10.0), t.delay.as_secs_f64()))
        .collect();
    let total: f64 = p.iter().map(|x| x.0).sum();
    for d in [1usize, 2, 5] {
        let mut acc = Complex::ZERO;
        let mut n = 0;
        for seed in 0..400u64 {
            let mut ch =
                FadingChannel::new(&config, 1500, Predictor::new(0.0, seed, "p"), stream(seed, "f"), stream(seed, "s"));
            for slot in [0u64, 3000, 6000] {
                let g = ch.gains(slot).to_vec();
                for c in 0..25 - d {
                    acc += g[c] * g[c + d].conj();
                    n += 1;
                }
            }
        }
        let got = acc.scale(1.0 / n as f64);
        let df = d as f64 * 200e3;
        let want = p.iter().fold(Complex::ZERO, |s, &(pk, tau)| {
            s + Complex::from_phase(2.0 * std::f64::consts::PI * df * tau).scale(pk / total)
        });
        println!("Δf = {} kHz: |R| = {:.3}, theory {:.3}", df / 1e3, got.norm_sqr().sqrt(), want.norm_sqr().sqrt());
        assert!((got.re - want.re).abs() < 0.05 && (got.im - want.im).abs() < 0.05, "Δf {df}");
    }
}

#[test]
fn prediction_error_has_the_configured_nmse_and_is_unbiased() {
    let predictor = Predictor::new(0.1, 1, "p");
    let mut rng = stream(1, "h");
    let (mut err, mut pow, mut cross) = (0.0, 0.0, Complex::ZERO);
    let n = 200_000;
    for slot in 0..n {
        let h = complex_gaussian(&mut rng, 1.0);
        let hat = predictor.predict(h, &mut predictor.slot_rng(slot));
        let e = h + hat.scale(-1.0);
        err += e.norm_sqr();
        pow += h.norm_sqr();
        cross += hat.conj() * e;
    }
    let nmse = err / pow;
    println!("NMSE {nmse:.4} (0.1), E[ĥ*ε] = {:.4}", cross.scale(1.0 / n as f64).norm_sqr().sqrt());
    assert!((nmse - 0.1).abs() < 0.003);
    assert!(cross.scale(1.0 / n as f64).norm_sqr().sqrt() < 0.005);
}

// ------------------------------------------------------ modulation

/// Symbol error rate of a constellation with minimum-distance detection in
/// AWGN at Es/N0 = `snr`, by simulation.
fn simulated_ser(points: &[(f64, f64)], snr: f64, symbols: usize, seed: u64) -> f64 {
    let es = points.iter().map(|(x, y)| x * x + y * y).sum::<f64>() / points.len() as f64;
    let sigma = (es / snr / 2.0).sqrt(); // N0/2 per dimension
    let mut rng = stream(seed, "mc");
    let mut errors = 0;
    for i in 0..symbols {
        let (x, y) = points[i % points.len()];
        let (rx, ry) = (x + sigma * standard_normal(&mut rng), y + sigma * standard_normal(&mut rng));
        let nearest = (0..points.len())
            .min_by(|&a, &b| {
                let d = |p: (f64, f64)| (p.0 - rx).powi(2) + (p.1 - ry).powi(2);
                d(points[a]).total_cmp(&d(points[b]))
            })
            .unwrap();
        errors += usize::from(points[nearest] != (x, y));
    }
    errors as f64 / symbols as f64
}

/// Odd-integer grid constellations: rectangles and crosses.
fn constellation(m: Modulation) -> Vec<(f64, f64)> {
    let axis = |n: i32| (0..n).map(move |i| (2 * i - n + 1) as f64);
    let grid = |nx: i32, ny: i32| axis(nx).flat_map(move |x| axis(ny).map(move |y| (x, y))).collect::<Vec<_>>();
    match m {
        Modulation::Bpsk => vec![(-1.0, 0.0), (1.0, 0.0)],
        Modulation::Qam8 => grid(4, 2),
        Modulation::Qam32 => grid(6, 6).into_iter().filter(|(x, y)| !(x.abs() > 4.0 && y.abs() > 4.0)).collect(),
        Modulation::Qam128 => grid(12, 12).into_iter().filter(|(x, y)| !(x.abs() > 8.0 && y.abs() > 8.0)).collect(),
        m => {
            let side = (m.points() as f64).sqrt() as i32;
            grid(side, side)
        }
    }
}

#[test]
fn symbol_error_rates_match_monte_carlo_constellations() {
    // SNR per format chosen so the SER is a few percent (≥ 4000 errors in
    // 2·10⁵ symbols: 1.6% relative standard error): within 6%.
    for m in Modulation::ALL {
        let pts = constellation(m);
        assert_eq!(pts.len(), m.points() as usize);
        let snr = match m {
            Modulation::Bpsk => 2.5,
            Modulation::Qam8 => 15.0,
            m => 5.0 * (m.points() as f64 - 1.0) / 3.0,
        };
        let sim = simulated_ser(&pts, snr, 200_000, m.index() as u64);
        let formula = m.symbol_error_rate(snr);
        println!("{m:>6} at {:5.2} dB: formula {formula:.5}, simulated {sim:.5}", 10.0 * snr.log10());
        assert!((formula - sim).abs() < 0.06 * sim, "{m}");
    }
}

#[test]
fn symbol_error_rates_match_textbook_values() {
    // BPSK needs Eb/N0 = 9.6 dB for a bit error rate of 1e-5.
    let p = Modulation::Bpsk.symbol_error_rate(10f64.powf(0.96));
    assert!((0.9e-5..1.1e-5).contains(&p), "{p}");
    // 4-QAM at Es/N0 = 10 dB: 2Q(√10) − Q(√10)², Q(√10) = 7.827e-4.
    let q = 7.827e-4;
    assert!((Modulation::Qam4.symbol_error_rate(10.0) - (2.0 * q - q * q)).abs() < 1e-6);
    // SER rises with M at a fixed SNR, falls with SNR for a fixed M.
    for w in Modulation::ALL.windows(2) {
        assert!(w[0].symbol_error_rate(100.0) < w[1].symbol_error_rate(100.0));
    }
    // Frame of 108 symbols: 1 − (1 − SER)^108.
    let s = Modulation::Qam16.symbol_error_rate(40.0);
    let f = Modulation::Qam16.frame_error_rate(40.0, 108);
    assert!((f - (1.0 - (1.0 - s).powi(108))).abs() < 1e-12);
}

#[test]
fn adaptive_switching_levels_are_monotone_and_maximise_bits_per_frame() {
    let perfect = SwitchingLevels::design(1.0, 0.0, 108);
    let l = perfect.levels_db();
    println!("perfect prediction levels (dB): {l:.2?}");
    assert!(l.windows(2).all(|w| w[0] <= w[1]));
    // Independent check: the level of format k+1 is where k·(1 − FER_k)
    // and (k+1)·(1 − FER_{k+1}) cross, found by bisection here.
    let bits =
        |m: Modulation, db: f64| m.bits_per_symbol() as f64 * (1.0 - m.frame_error_rate(10f64.powf(db / 10.0), 108));
    for w in Modulation::ALL.windows(2) {
        let (mut lo, mut hi) = (-10.0, 60.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if bits(w[1], mid) > bits(w[0], mid) { hi = mid } else { lo = mid }
        }
        assert!((l[w[1].index()] - hi).abs() < 0.01, "{}: {} vs {hi}", w[1], l[w[1].index()]);
    }
    // Imperfect prediction (NMSE 0.1 at 16 dB local mean P): given ĥ the
    // true gain is CN(ĥ, ν), so E[γ | γ̂] = γ̂ + P·ν. Where γ̂ ≫ P·ν (6 dB)
    // the spread only hurts and levels rise; below, the added mean power
    // lets 4-QAM in earlier.
    let cautious = SwitchingLevels::design(10f64.powf(1.6), 0.1, 108);
    let c = cautious.levels_db();
    println!("NMSE 0.1 levels at 16 dB (dB): {c:.2?}");
    assert!(c.windows(2).all(|w| w[0] <= w[1]));
    assert!(c[1] < l[1]);
    for k in 2..8 {
        assert!(c[k] > l[k], "format {k}: {} < {}", c[k], l[k]);
    }
    assert_eq!(perfect.choose(10f64.powf(0.5)), Modulation::Bpsk);
    assert_eq!(perfect.choose(1e6), Modulation::Qam256);
}

// -------------------------------------------------- VALIDATION case 13

fn error_free(m: Modulation) -> RadioConfig {
    RadioConfig { channel: constant_channel(300.0), modulation: ModulationChoice::Fixed(m), ..Default::default() }
}

#[test]
fn raw_capacity_is_table_ii_exactly() {
    // Seed 002 Table II column (2): 1500 frames/s × 108 symbols × log2 M.
    let table_ii = [162_000u64, 324_000, 486_000, 648_000, 810_000, 972_000, 1_134_000, 1_296_000];
    for m in Modulation::ALL {
        let mut l = link(&error_free(m), 1);
        let mut ev = Vec::new();
        for id in 0..2000 {
            l.push(Instant::ZERO, Packet::new(PacketId(id), 1500, flow()), &mut ev);
        }
        // Slots starting in [0, 1 s): exactly 1500.
        l.run_until(Instant::from_nanos(999_999_999), &mut ev);
        let s = l.stats();
        assert_eq!(s.frames_sent, 1500);
        assert_eq!(s.capacity_bits, table_ii[m.index()], "{m}");
        assert_eq!(s.frame_errors, 0);
    }
}

#[test]
fn truncation_overhead_and_application_throughput_match_table_ii() {
    // Seed 002 Table II column (3), application-level throughput measured
    // with TCP over 1500-byte packets (40 bytes of headers), bits/s.
    let measured = [156_416.0, 312_832.0, 460_992.0, 625_656.0, 761_672.0, 921_984.0, 1_094_904.0, 1_251_320.0];
    for m in Modulation::ALL {
        let frame_bits = 108 * m.bits_per_symbol() as u64;
        let mut l = link(&error_free(m), 1);
        let mut ev = Vec::new();
        let packets = 1500 * 10 / (12_000 / frame_bits + 1) + 10;
        for id in 0..packets {
            l.push(Instant::ZERO, Packet::new(PacketId(id), 1500, flow()), &mut ev);
        }
        let deliveries = drain(&mut l, &mut ev);
        let mut events = Vec::new();
        events.append(&mut ev);
        let mut frames_per_packet: HashMap<PacketId, u64> = HashMap::new();
        for e in &events {
            if let EventKind::TransmitStart { .. } = e.kind {
                *frames_per_packet.entry(e.packet.unwrap()).or_default() += 1;
            }
        }
        // Exact: wasted bits of the last frame = 108·k − (12000 mod 108·k).
        let want_waste = frame_bits - 12_000 % frame_bits;
        for (&id, &frames) in &frames_per_packet {
            assert_eq!(frames * frame_bits - 12_000, want_waste, "{m} packet {id:?}");
        }
        // VALIDATION 13: application throughput (1460 of 1500 bytes per
        // packet) from first to last delivery, as tcptrace measures it,
        // within 0.5% of the seed.
        let span = (deliveries.last().unwrap().at - deliveries[0].at).as_secs_f64();
        let app = (deliveries.len() - 1) as f64 * 1460.0 * 8.0 / span;
        let err = (app - measured[m.index()]) / measured[m.index()];
        println!(
            "{m:>6}: overhead {:.4}%, application {app:.0} bit/s vs seed {} ({:+.3}%)",
            100.0 * want_waste as f64 / 12_000.0,
            measured[m.index()],
            100.0 * err
        );
        assert!(err.abs() < 0.005, "{m}");
    }
}

// ------------------------------------------------------------------ ARQ

#[test]
fn arq_residual_loss_and_transmissions_match_theory() {
    // VALIDATION case 9 on the radio link: one-frame packets (13 bytes in a
    // 108-bit BPSK frame) on a constant channel with frame error rate f;
    // residual loss f^(n+1), mean transmissions (1 − f^(n+1))/(1 − f).
    let snr_db: f64 = 5.5;
    let f = Modulation::Bpsk.frame_error_rate(10f64.powf(snr_db / 10.0), 108);
    for retries in [0u32, 1, 3] {
        let config = RadioConfig {
            channel: constant_channel(snr_db),
            modulation: ModulationChoice::Fixed(Modulation::Bpsk),
            arq: ArqConfig { delay: Duration::from_millis(2), retries },
            residual: ResidualErrors::Drop,
            ..Default::default()
        };
        let n = 60_000u64;
        let mut l = link(&config, 7);
        let mut ev = Vec::new();
        l.set_recording(Recording::Off);
        for id in 0..n {
            l.push(Instant::ZERO, Packet::new(PacketId(id), 13, flow()), &mut ev);
        }
        let delivered = drain(&mut l, &mut ev).len() as u64;
        let s = l.stats().clone();
        assert_eq!(delivered + s.dropped, n, "conservation");
        let p = f.powi(retries as i32 + 1);
        let loss = s.dropped as f64 / n as f64;
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        let tx = s.frames_sent as f64 / n as f64;
        let tx_want = (1.0 - p) / (1.0 - f);
        println!("f = {f:.4}, n = {retries}: loss {loss:.5} vs {p:.5} (sd {sd:.5}), tx {tx:.4} vs {tx_want:.4}");
        assert!((loss - p).abs() < 4.0 * sd);
        assert!((tx - tx_want).abs() < 0.01 * tx_want);
    }
}

#[test]
fn pipelined_arq_reorders_packets_and_residual_errors_corrupt_them() {
    // Low SNR, few retries, deliver mode: every packet comes out, some
    // out of order (pipelining), some with bit errors.
    let config = RadioConfig {
        channel: constant_channel(4.0),
        modulation: ModulationChoice::Fixed(Modulation::Bpsk),
        arq: ArqConfig { delay: Duration::from_millis(2), retries: 1 },
        ..Default::default()
    };
    let mut l = link(&config, 3);
    let mut ev = Vec::new();
    for id in 0..2000 {
        let mut p = Packet::new(PacketId(id), 40, flow());
        p.payload = Some(vec![0; 40].into());
        l.push(Instant::from_millis(id), p, &mut ev);
    }
    let out = drain(&mut l, &mut ev);
    assert_eq!(out.len(), 2000);
    let reordered = out.windows(2).filter(|w| w[1].packet.id < w[0].packet.id).count();
    let corrupted = out.iter().filter(|d| d.packet.corrupted).count();
    let flipped = out.iter().filter(|d| d.packet.payload.as_ref().unwrap().bytes().iter().any(|&b| b != 0)).count();
    println!("reordered {reordered}, corrupted {corrupted}");
    assert!(reordered > 0 && corrupted > 0);
    assert_eq!(corrupted, flipped);
    assert_eq!(l.stats().corrupted as usize, corrupted);
    assert!(out.windows(2).all(|w| w[0].at <= w[1].at));
}

// -------------------------------------------------- driver and config

#[test]
fn same_seed_same_events_and_idle_link_sleeps() {
    let config = RadioConfig { scheduling: Scheduling::Best, prediction_nmse: 0.1, ..Default::default() };
    let run = |seed: u64| {
        let mut l = link(&config, seed);
        let mut ev = Vec::new();
        assert_eq!(l.next_wakeup(), None);
        for id in 0..300 {
            l.push(Instant::from_micros(id * 1700), Packet::new(PacketId(id), 1500, flow()), &mut ev);
            // Spurious polls are harmless.
            let _ = l.poll(Instant::from_micros(id * 1700), &mut ev);
        }
        let out = drain(&mut l, &mut ev);
        assert_eq!(l.next_wakeup(), None);
        let mut events = Vec::new();
        events.append(&mut ev);
        (out, events)
    };
    let (a, ea) = run(5);
    let (b, eb) = run(5);
    let (c, _) = run(6);
    assert_eq!(a, b);
    assert_eq!(ea, eb);
    assert_ne!(a.iter().map(|d| d.at).collect::<Vec<_>>(), c.iter().map(|d| d.at).collect::<Vec<_>>());
}

#[test]
fn frames_start_on_slot_boundaries() {
    let mut l = link(&error_free(Modulation::Qam16), 1);
    let mut ev = Vec::new();
    l.push(Instant::from_nanos(1), Packet::new(PacketId(1), 100, flow()), &mut ev);
    // Slot 1 starts at ⌊10⁹/1500⌋ = 666 666 ns. The 800-bit packet takes two
    // 432-bit 16-QAM frames, slots 1 and 2, and is delivered when slot 2
    // ends, at slot 3's start, 2 ms.
    let out = drain(&mut l, &mut ev);
    assert_eq!(out[0].at, Instant::from_nanos(2_000_000));
    let mut events = Vec::new();
    events.append(&mut ev);
    assert_eq!(events[0].time, Instant::from_nanos(666_666));
}

#[test]
fn bad_configurations_are_errors_not_panics() {
    let bad = [
        RadioConfig { slots_per_second: 0, ..Default::default() },
        RadioConfig { symbols_per_frame: 0, ..Default::default() },
        RadioConfig { prediction_nmse: 1.0, ..Default::default() },
        RadioConfig { scheduling: Scheduling::Static(25), ..Default::default() },
        RadioConfig {
            channel: ChannelConfig::Measured(MeasuredSnr {
                file: None,
                snr_db: vec![vec![1.0, 2.0], vec![1.0]],
                predicted_snr_db: None,
            }),
            ..Default::default()
        },
        RadioConfig { channel: ChannelConfig::Measured(MeasuredSnr::default()), ..Default::default() },
        RadioConfig {
            channel: ChannelConfig::Fading(FadingConfig {
                taps: vec![Tap { power_db: f64::NEG_INFINITY, delay: Duration::ZERO }],
                ..Default::default()
            }),
            ..Default::default()
        },
        RadioConfig {
            channel: ChannelConfig::Fading(FadingConfig {
                shadowing: ShadowingConfig { pole: 1.0, ..Default::default() },
                ..Default::default()
            }),
            ..Default::default()
        },
    ];
    for (i, c) in bad.iter().enumerate() {
        let e = RadioLink::new(c, "radio", Direction::Downlink, 1).err();
        assert!(e.is_some(), "config {i} accepted");
        println!("{}", e.unwrap());
    }
}

// ------------------------------------------------- seed 002 §III.C shape

/// Packet bits per second a saturated link delivers over `secs` seconds of
/// the seed's channel (16 dB, typical urban, 75 km/h, shadowing).
fn link_goodput(config: &RadioConfig, seed: u64, secs: u64) -> f64 {
    let mut l = link(config, seed);
    let mut ev = Vec::new();
    l.set_recording(Recording::Off);
    let end = Instant::from_secs(secs);
    let (mut id, mut bits) = (0, 0u64);
    let mut now = Instant::ZERO;
    while now < end {
        while l.backlog() < 2 {
            l.push(now, Packet::new(PacketId(id), 1500, flow()), &mut ev);
            id += 1;
        }
        while let Some(d) = l.poll(now, &mut ev) {
            bits += d.packet.size as u64 * 8;
        }
        now = l.next_wakeup().expect("saturated link is busy");
    }
    bits as f64 / secs as f64
}

#[test]
fn seed_002_orderings_hold_at_16_db() {
    // Figures 4, 5 and 7 (link level, no TCP): 4-QAM beats BPSK, adaptive
    // modulation beats the best fixed format, perfect prediction beats NMSE
    // 0.1, and best-channel scheduling beats a static channel.
    let with = |modulation: ModulationChoice, nmse: f64, scheduling: Scheduling| RadioConfig {
        modulation,
        prediction_nmse: nmse,
        scheduling,
        arq: ArqConfig { delay: Duration::from_millis(2), retries: 10 },
        ..Default::default()
    };
    let fixed = |m| with(ModulationChoice::Fixed(m), 0.0, Scheduling::Static(12));
    let adaptive = |nmse, s| with(ModulationChoice::Adaptive, nmse, s);
    let mean = |c: &RadioConfig| (1..=3).map(|seed| link_goodput(c, seed, 10)).sum::<f64>() / 3.0;
    let bpsk = mean(&fixed(Modulation::Bpsk));
    let qam4 = mean(&fixed(Modulation::Qam4));
    let perfect = mean(&adaptive(0.0, Scheduling::Static(12)));
    let predicted = mean(&adaptive(0.1, Scheduling::Static(12)));
    let best = mean(&adaptive(0.0, Scheduling::Best));
    println!(
        "goodput kbit/s: BPSK {:.0}, 4-QAM {:.0}, adaptive {:.0} (NMSE 0.1: {:.0}), best channel {:.0}",
        bpsk / 1e3,
        qam4 / 1e3,
        perfect / 1e3,
        predicted / 1e3,
        best / 1e3
    );
    assert!(qam4 > bpsk && perfect > qam4 && perfect > predicted && best > perfect);
}
