//! State changes on a radio stage (seed 002's knobs changed mid-run): each
//! takes effect at the slot that starts at the state's time, loses and
//! repeats nothing, and keeps a run reproducible. Expectations come from
//! outside the code under test: the Table II formula, closed-form error
//! rates (Q by numerical integration here), and exact slot arithmetic.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::Ipv4Addr;

use squall_link::dist::unit;
use squall_link::radio::channel::Channel;
use squall_link::radio::prediction::Predictor;
use squall_link::radio::*;
use squall_link::rng::{StreamRng, stream};
use squall_link::*;

// ---------------------------------------------------------------- helpers

fn flow() -> FlowKey {
    FlowKey {
        protocol: Protocol::Udp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 1, 1).into(),
        src_port: 4000,
        dst_port: 5001,
    }
}

/// Q(x) = ∫ₓ^∞ φ(t) dt by Simpson's rule over [x, x + 12].
fn q(x: f64) -> f64 {
    let n = 20_000;
    let h = 12.0 / n as f64;
    let phi = |t: f64| (-t * t / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let mut sum = phi(x) + phi(x + 12.0);
    for i in 1..n {
        sum += phi(x + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

fn db(v: f64) -> f64 {
    10f64.powf(v / 10.0)
}

/// Frame error rate of `symbols` symbols with symbol error rate `ser`.
fn fer(ser: f64, symbols: i32) -> f64 {
    1.0 - (1.0 - ser).powi(symbols)
}

/// A measured channel: every slot the same SNRs (one per sub-channel).
fn constant(snr_db: &[f64]) -> ChannelConfig {
    ChannelConfig::Measured(MeasuredSnr { snr_db: vec![snr_db.to_vec()], ..Default::default() })
}

fn radio_stage(radio: RadioConfig) -> StageConfig {
    let mut s = StageConfig::named("radio");
    s.queue.packets = Some(50);
    s.radio = Some(radio);
    s
}

fn path(radio: RadioConfig, seed: u64) -> Path {
    Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![radio_stage(radio)] }, seed).unwrap()
}

fn set(patch: RadioPatch) -> Change {
    Change::Set { stage: "radio".into(), patch: Box::new(StagePatch::radio(patch)) }
}

struct Run {
    deliveries: Vec<Delivery>,
    events: Vec<Event>,
    pushed: u64,
    stats: PathStats,
}

/// Drives `path` until `end` like an engine: states due at a time first,
/// then deliveries, then the sender, which keeps `backlog` packets of
/// `size(id)` bytes inside the path (so the link never idles).
fn drive(
    path: &mut Path,
    end: Instant,
    changes: Vec<(Instant, Change)>,
    backlog: u64,
    mut size: impl FnMut(u64) -> u32,
) -> Run {
    let mut changes = VecDeque::from(changes);
    let (mut now, mut id) = (Instant::ZERO, 0u64);
    let (mut deliveries, mut events) = (Vec::new(), Vec::new());
    for _ in 0..50_000_000 {
        while changes.front().is_some_and(|c| c.0 <= now) {
            let (_, change) = changes.pop_front().unwrap();
            assert!(path.apply(now, &change));
        }
        while let Some(d) = path.poll(now) {
            deliveries.push(d);
        }
        while path.stats().in_flight < backlog {
            path.push(now, Packet::new(PacketId(id), size(id), flow()));
            id += 1;
        }
        path.drain_events_into(&mut events);
        let next = [path.next_wakeup(), changes.front().map(|c| c.0)].into_iter().flatten().min();
        match next {
            Some(t) if t <= end => now = now.max(t),
            _ => {
                return Run { deliveries, events, pushed: id, stats: path.stats() };
            }
        }
    }
    panic!("the path did not reach {end:?}: livelock?");
}

/// Start of slot `n` at 1500 slots per second.
fn slot_start(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000_000 / 1500)
}

/// The slot that starts at `t` (t on a slot boundary).
fn slot_at(t: Instant) -> u64 {
    let n = (t.as_nanos() as u128 * 1500).div_ceil(1_000_000_000) as u64;
    assert_eq!(slot_start(n), t, "not a slot start");
    n
}

/// Slots whose frame was hit: a frame error is logged when its slot ends,
/// at the next slot's start.
fn error_slots(events: &[Event]) -> Vec<u64> {
    events.iter().filter(|e| matches!(e.kind, EventKind::FrameError { .. })).map(|e| slot_at(e.time) - 1).collect()
}

// ------------------------------------------------------------ modulation

#[test]
fn switching_bpsk_to_16qam_at_10_s_changes_capacity_at_that_slot() {
    // Error-free channel (40 dB: Q(√(2·10⁴)) underflows to 0), fixed BPSK,
    // 54-byte packets: 432 bits, four BPSK frames or one 16-QAM frame, no
    // padding. Table II: 1500 frames/s × 108 symbols × log2 M.
    let config = RadioConfig {
        channel: constant(&[40.0]),
        modulation: ModulationChoice::Fixed(Modulation::Bpsk),
        ..Default::default()
    };
    let change = set(RadioPatch { modulation: Some(ModulationChoice::Fixed(Modulation::Qam16)), ..Default::default() });
    let mut p = path(config, 1);
    let run = drive(&mut p, Instant::from_secs(20), vec![(Instant::from_secs(10), change)], 6, |_| 54);
    // Application bits delivered in each second (k, k + 1].
    let mut per_second = [0u64; 20];
    for d in &run.deliveries {
        let k = (d.at.as_nanos() - 1) / 1_000_000_000;
        per_second[k as usize] += d.packet.size as u64 * 8;
    }
    let table_ii = |bits_per_symbol: u64| 1500 * 108 * bits_per_symbol;
    println!("bits per second: {per_second:?}");
    for (k, &bits) in per_second.iter().enumerate() {
        let want = if k < 10 { table_ii(1) } else { table_ii(4) };
        assert_eq!(bits, want, "second {k}");
    }
    // Frame by frame: the 15000 slots before 10 s carry BPSK frames (four
    // per packet), the slot starting at 10 s the first 16-QAM frame.
    let mut frames: HashMap<PacketId, (Instant, u32)> = HashMap::new();
    for e in &run.events {
        if let EventKind::TransmitStart { .. } = e.kind {
            let f = frames.entry(e.packet.unwrap()).or_insert((e.time, 0));
            f.1 += 1;
        }
    }
    let starts: Vec<_> = frames.values().filter(|f| f.0 < Instant::from_secs(20)).collect();
    assert!(starts.iter().all(|&&(t, n)| n == if t < Instant::from_secs(10) { 4 } else { 1 }));
    let at_ten = frames.values().find(|f| f.0 == Instant::from_secs(10)).expect("a frame starts at 10 s");
    assert_eq!(at_ten.1, 1, "the slot at 10 s is 16-QAM");
    assert!(run.stats.conserved());
}

#[test]
fn a_change_mid_packet_cuts_the_rest_with_the_new_modulation() {
    // 1500-byte packets: 12 000 bits. At 16-QAM (432-bit frames) a packet
    // takes 28 frames; switching to 256-QAM (864 bits) after 10 frames
    // leaves 12 000 − 4320 = 7680 bits: 9 more frames.
    let config = RadioConfig {
        channel: constant(&[60.0]),
        modulation: ModulationChoice::Fixed(Modulation::Qam16),
        ..Default::default()
    };
    let change =
        set(RadioPatch { modulation: Some(ModulationChoice::Fixed(Modulation::Qam256)), ..Default::default() });
    let mut p = path(config, 1);
    let run = drive(&mut p, slot_start(40), vec![(slot_start(10), change)], 1, |_| 1500);
    let first: Vec<_> =
        run.events.iter().filter(|e| e.packet == Some(PacketId(0)) && e.kind.name() == "tx_start").collect();
    assert_eq!(first.len(), 19);
    let delivered = run.deliveries.iter().find(|d| d.packet.id == PacketId(0)).unwrap();
    assert_eq!(delivered.at, slot_start(19));
}

// --------------------------------------------------------------- channel

#[test]
fn mean_snr_change_on_a_measured_trace_gives_the_new_error_rate() {
    // 4-QAM, one 216-bit frame per 27-byte packet, no retransmissions. At
    // 40 dB no frame is hit; from 1 s the trace is shifted to 8 dB, where
    // SER = 2Q(√γ) − Q(√γ)² (Proakis 5.2.79) and FER = 1 − (1 − SER)^108.
    let config = RadioConfig {
        channel: constant(&[40.0]),
        modulation: ModulationChoice::Fixed(Modulation::Qam4),
        arq: ArqConfig { delay: Duration::from_millis(2), retries: 0 },
        residual: ResidualErrors::Drop,
        ..Default::default()
    };
    let change = set(RadioPatch { channel: Some(ChannelPatch { mean_snr_db: 8.0 }), ..Default::default() });
    let mut p = path(config, 3);
    let mut run = drive(&mut p, Instant::from_secs(11), vec![(Instant::from_secs(1), change)], 4, |_| 27);
    run.events.retain(|e| e.time <= Instant::from_secs(11));
    let errors = error_slots(&run.events);
    assert!(errors.iter().all(|&s| s >= 1500), "a frame before 1 s was hit");
    let frames = 15_000.0;
    let measured = errors.len() as f64 / frames;
    let qv = q(db(8.0).sqrt());
    let want = fer(2.0 * qv - qv * qv, 108);
    let sd = (want * (1.0 - want) / frames).sqrt();
    println!("FER after the change {measured:.4}, theory {want:.4} (sd {sd:.4})");
    assert!((measured - want).abs() < 4.0 * sd);
}

#[test]
fn mean_snr_change_on_a_fading_channel_scales_the_same_fading() {
    // The channel after the change is the channel before, times the new
    // mean over the old: same Rayleigh taps, same shadowing.
    let config = FadingConfig { sub_channels: 4, ..Default::default() };
    let new =
        |seed| FadingChannel::new(&config, 1500, Predictor::new(0.0, seed, "p"), stream(seed, "f"), stream(seed, "s"));
    let (mut a, mut b) = (new(9), new(9));
    let (mut sa, mut sb) = (SlotChannel::default(), SlotChannel::default());
    for slot in 0..3000 {
        if slot == 1000 {
            b.set_mean_snr_db(10.0);
        }
        a.slot(slot, &mut sa);
        b.slot(slot, &mut sb);
        let factor = if slot < 1000 { 1.0 } else { db(10.0 - 16.0) };
        for (x, y) in sa.snr.iter().zip(&sb.snr) {
            assert!((y / x - factor).abs() < 1e-9, "slot {slot}");
        }
    }
}

#[test]
fn prediction_nmse_change_predicts_as_if_configured_from_the_start() {
    // The predictor's error streams are per slot: after the change, the
    // predicted channel is exactly that of a channel built with the new
    // NMSE.
    let config = FadingConfig::default();
    let new = |nmse| {
        Channel::Fading(Box::new(FadingChannel::new(
            &config,
            1500,
            Predictor::new(nmse, 4, "radio/prediction"),
            stream(4, "f"),
            stream(4, "s"),
        )))
    };
    let (mut changed, mut reference, mut perfect) = (new(0.0), new(0.1), new(0.0));
    let (mut c, mut r, mut p) = (SlotChannel::default(), SlotChannel::default(), SlotChannel::default());
    let mut differed = false;
    for slot in 0..2000 {
        if slot == 700 {
            let predictor = changed.predictor().with_nmse(0.1);
            changed.set_predictor(predictor);
        }
        changed.slot(slot, &mut c);
        reference.slot(slot, &mut r);
        perfect.slot(slot, &mut p);
        assert_eq!(c.snr, r.snr);
        if slot < 700 {
            assert_eq!(c.predicted, c.snr, "perfect prediction before the change");
        } else {
            assert_eq!(c.predicted, r.predicted, "slot {slot}");
            differed |= c.predicted != p.predicted;
        }
    }
    assert!(differed);
}

// ------------------------------------------------------------------- ARQ

#[test]
fn more_retries_from_a_state_on_lower_the_residual_loss_to_f_to_the_n_plus_1() {
    // VALIDATION case 9 before and after the change: one-frame packets
    // (13 bytes in a 108-bit BPSK frame) at 5.5 dB, frame error rate
    // f = 1 − (1 − Q(√(2γ)))^108. Residual loss f with no retries, then
    // f⁴ with 3 for packets first sent after the change.
    let snr_db = 5.5;
    let f = fer(q((2.0 * db(snr_db)).sqrt()), 108);
    let config = RadioConfig {
        channel: constant(&[snr_db]),
        modulation: ModulationChoice::Fixed(Modulation::Bpsk),
        arq: ArqConfig { delay: Duration::from_millis(2), retries: 0 },
        residual: ResidualErrors::Drop,
        ..Default::default()
    };
    let t = Instant::from_secs(10);
    let change = set(RadioPatch { arq: Some(ArqPatch { retries: Some(3), delay: None }), ..Default::default() });
    let mut p = path(config, 11);
    let run = drive(&mut p, Instant::from_secs(25), vec![(t, change)], 4, |_| 13);
    let mut first_sent: HashMap<PacketId, Instant> = HashMap::new();
    for e in &run.events {
        if e.kind.name() == "tx_start" {
            first_sent.entry(e.packet.unwrap()).or_insert(e.time);
        }
    }
    let dropped: HashSet<PacketId> = run
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Drop(DropReason::ArqLimit))
        .map(|e| e.packet.unwrap())
        .collect();
    let delivered: HashSet<PacketId> = run.deliveries.iter().map(|d| d.packet.id).collect();
    // Packets decided before the end: sent in [0, 9.9 s) or [10 s, 24 s).
    let phase = |lo: Instant, hi: Instant| {
        let ids: Vec<_> = first_sent.iter().filter(|&(_, &s)| s >= lo && s < hi).map(|(id, _)| *id).collect();
        assert!(ids.iter().all(|id| dropped.contains(id) != delivered.contains(id)), "decided once");
        let lost = ids.iter().filter(|id| dropped.contains(id)).count();
        (lost as f64 / ids.len() as f64, ids.len() as f64)
    };
    for ((loss, n), want) in
        [(phase(Instant::ZERO, Instant::from_millis(9_900)), f), (phase(t, Instant::from_secs(24)), f.powi(4))]
    {
        let sd = (want * (1.0 - want) / n).sqrt();
        println!("f = {f:.4}: loss {loss:.5} over {n} packets, theory {want:.5} (sd {sd:.5})");
        assert!((loss - want).abs() < 4.0 * sd);
    }
    assert!(run.events.iter().all(|e| !matches!(e.kind, EventKind::Retransmit { .. }) || e.time > t));
}

// ------------------------------------------------------------ scheduling

#[test]
fn switching_to_best_channel_scheduling_leaves_a_dead_sub_channel_at_that_slot() {
    // Sub-channel 0 is dead (−10 dB: BPSK FER rounds to 1), sub-channel 1
    // clean (40 dB: FER 0). Static 0 loses every frame until 1 s; from the
    // slot at 1 s the best sub-channel carries every frame.
    let config = RadioConfig {
        channel: constant(&[-10.0, 40.0]),
        modulation: ModulationChoice::Fixed(Modulation::Bpsk),
        scheduling: Scheduling::Static(0),
        arq: ArqConfig { delay: Duration::from_millis(2), retries: 0 },
        residual: ResidualErrors::Drop,
        ..Default::default()
    };
    let t = Instant::from_secs(1);
    let mut p = path(config, 1);
    let change = set(RadioPatch { scheduling: Some(Scheduling::Best), ..Default::default() });
    let run = drive(&mut p, Instant::from_secs(2), vec![(t, change)], 4, |_| 13);
    let errors = error_slots(&run.events);
    assert_eq!(errors, (0..1500).collect::<Vec<_>>());
    let delivered: Vec<_> = run.deliveries.iter().map(|d| slot_at(d.at) - 1).collect();
    assert_eq!(delivered, (1500..3000).collect::<Vec<_>>());
}

// ----------------------------------------------------- conservation

/// A uniform integer in `lo..hi`.
fn below(rng: &mut StreamRng, lo: u64, hi: u64) -> u64 {
    lo + (unit(rng) * (hi - lo) as f64) as u64
}

/// A uniform float in `lo..hi`.
fn within(rng: &mut StreamRng, lo: f64, hi: f64) -> f64 {
    lo + unit(rng) * (hi - lo)
}

/// A run over the seed's fading channel with 40 random radio changes at
/// random times (mid-packet, with retransmissions pending).
fn random_changes_run(seed: u64) -> Run {
    let config = RadioConfig { prediction_nmse: 0.05, ..Default::default() };
    let mut rng = stream(seed, "test/changes");
    let mut changes = Vec::new();
    for i in 0..40u64 {
        let at = Instant::from_micros(i * 250_000 + below(&mut rng, 0, 250_000));
        let r = &mut rng;
        let patch = RadioPatch {
            channel: (unit(r) < 0.5).then(|| ChannelPatch { mean_snr_db: within(r, 4.0, 24.0) }),
            prediction_nmse: (unit(r) < 0.3).then(|| within(r, 0.0, 0.3)),
            modulation: (unit(r) < 0.5).then(|| match below(r, 0, 4) {
                0 => ModulationChoice::Adaptive,
                k => ModulationChoice::Fixed(Modulation::ALL[k as usize]),
            }),
            scheduling: (unit(r) < 0.3)
                .then(|| if unit(r) < 0.5 { Scheduling::Best } else { Scheduling::Static(below(r, 0, 25) as u32) }),
            arq: (unit(r) < 0.4).then(|| ArqPatch {
                retries: Some(below(r, 0, 8) as u32),
                delay: (unit(r) < 0.5).then(|| Duration::from_micros(below(r, 500, 5000))),
            }),
            residual: (unit(r) < 0.2)
                .then(|| if unit(r) < 0.5 { ResidualErrors::Drop } else { ResidualErrors::Deliver }),
        };
        changes.push((at, set(patch)));
    }
    let mut sizes = stream(seed, "test/sizes");
    let mut p = path(config, seed);
    drive(&mut p, Instant::from_secs(10), changes, 8, move |_| below(&mut sizes, 40, 1500) as u32)
}

#[test]
fn changes_lose_and_repeat_nothing_and_a_run_repeats_from_its_seed() {
    let run = random_changes_run(21);
    let delivered: Vec<PacketId> = run.deliveries.iter().map(|d| d.packet.id).collect();
    let unique: HashSet<_> = delivered.iter().collect();
    assert_eq!(unique.len(), delivered.len(), "a packet delivered twice");
    let dropped: HashSet<PacketId> =
        run.events.iter().filter(|e| matches!(e.kind, EventKind::Drop(_))).map(|e| e.packet.unwrap()).collect();
    assert!(unique.iter().all(|id| !dropped.contains(id)), "a dropped packet delivered");
    let s = &run.stats;
    assert!(s.conserved());
    assert_eq!(s.entered, run.pushed);
    assert_eq!(s.delivered as usize, delivered.len());
    assert_eq!(s.dropped as usize, dropped.len());
    println!(
        "{} packets: {} delivered, {} dropped, {} inside; {} events",
        run.pushed,
        s.delivered,
        s.dropped,
        s.in_flight,
        run.events.len()
    );
    // Both ends of the ARQ exercised: packets through and packets dropped.
    assert!(s.delivered > 300 && s.dropped > 100);
    // Same seed, same everything.
    let again = random_changes_run(21);
    assert_eq!(again.deliveries, run.deliveries);
    assert_eq!(again.events, run.events);
}

// ------------------------------------------------------------- refusals

#[test]
fn invalid_radio_patches_are_refused_with_their_key() {
    let radio = RadioConfig::default();
    let stage = radio_stage(radio.clone());
    let check = |patch: RadioPatch| StagePatch::radio(patch).check(&stage);
    let e = check(RadioPatch { prediction_nmse: Some(1.5), ..Default::default() }).unwrap_err();
    assert_eq!(e.key, "radio.radio.prediction_nmse");
    let e = check(RadioPatch { scheduling: Some(Scheduling::Static(25)), ..Default::default() }).unwrap_err();
    assert_eq!(e.key, "radio.radio.scheduling");
    let e =
        check(RadioPatch { channel: Some(ChannelPatch { mean_snr_db: f64::NAN }), ..Default::default() }).unwrap_err();
    assert_eq!(e.key, "radio.radio.channel.mean_snr_db");
    let plain = StageConfig::named("wire");
    let e = StagePatch::radio(RadioPatch::default()).check(&plain).unwrap_err();
    assert_eq!(e.key, "wire.radio");
    // A channel-link key on a radio stage.
    let e =
        StagePatch::default().with("rate", |c| c.rate = Some("1 Mbit/s".parse().unwrap())).check(&stage).unwrap_err();
    assert_eq!(e.key, "radio.rate");
    // The link itself refuses and keeps its parameters.
    let mut link = RadioLink::new(&radio, "radio", Direction::Downlink, 1).unwrap();
    assert!(
        link.apply(Instant::ZERO, &RadioPatch { prediction_nmse: Some(-0.1), ..Default::default() }, &mut Vec::new())
            .is_err()
    );
    assert_eq!(link.config(), &radio);
}

#[test]
fn a_patch_shifts_a_measured_trace_to_the_new_mean() {
    let mut m = MeasuredSnr {
        snr_db: vec![vec![10.0, 20.0], vec![0.0, 30.0]],
        predicted_snr_db: Some(vec![vec![11.0, 19.0], vec![1.0, 29.0]]),
        ..Default::default()
    };
    // Mean linear SNR: (10 + 100 + 1 + 1000) / 4 = 277.75.
    let mean = 10.0 * (1111.0f64 / 4.0).log10();
    assert!((m.mean_snr_db().unwrap() - mean).abs() < 1e-12);
    m.shift_mean_to(12.0);
    assert!((m.mean_snr_db().unwrap() - 12.0).abs() < 1e-9);
    let offset = 12.0 - mean;
    assert!((m.snr_db[1][1] - (30.0 + offset)).abs() < 1e-9);
    assert!((m.predicted_snr_db.as_ref().unwrap()[0][0] - (11.0 + offset)).abs() < 1e-9);
}
