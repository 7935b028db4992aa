//! Radio stages over measured SNR files, and state changes of radio
//! parameters, from scenario files to the model's deliveries.
//!
//! Runs drive the downlink path the way the simulator does (states due at
//! an instant first, then deliveries, then the sender), with a sender that
//! keeps the link busy. Expectations are independent of the code under
//! test: the trace's own numbers, the Table II formula, slot arithmetic of
//! the ARQ rules, and closed-form error rates (Q by numerical integration).

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use squall_link::radio::{ChannelConfig, FadingConfig, Modulation, ModulationChoice, ResidualErrors, Scheduling};
use squall_link::*;
use squall_scenario::Scenario;
use squall_scenario::snr_file::{fading_trace, parse_snr_csv};

fn scenarios() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(file: &str) -> Scenario {
    squall_scenario::load(&scenarios().join(file)).unwrap_or_else(|e| panic!("{e:?}"))
}

fn flow() -> FlowKey {
    FlowKey {
        protocol: Protocol::Udp,
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 2, 1).into(),
        src_port: 4000,
        dst_port: 5001,
    }
}

struct Run {
    deliveries: Vec<Delivery>,
    events: Vec<Event>,
    stats: PathStats,
}

/// Runs link 0's downlink of `s` (its radio stage alone) for its
/// duration: states first at each instant, then deliveries, then the
/// sender, which keeps 6 packets of `size` bytes inside the path.
fn run_downlink(s: &Scenario, size: u32) -> Run {
    let paths = s.link_paths();
    assert_eq!(paths[0].downlink.stages.len(), 1, "the sender keeps the radio stage busy");
    let mut path = squall_link::Path::new(&paths[0].downlink, s.seed).unwrap();
    let mut schedule = StateSchedule::new(s.schedule(), s.seed);
    let end = Instant::ZERO + s.duration;
    let (mut now, mut id) = (Instant::ZERO, 0);
    let (mut deliveries, mut events) = (Vec::new(), Vec::new());
    for _ in 0..50_000_000 {
        while let Some(due) = schedule.poll(now) {
            for change in due.state.changes.clone() {
                path.apply(now, &change);
            }
        }
        while let Some(d) = path.poll(now) {
            deliveries.push(d);
        }
        while path.stats().in_flight < 6 {
            path.push(now, Packet::new(PacketId(id), size, flow()));
            id += 1;
        }
        path.drain_events_into(&mut events);
        match [path.next_wakeup(), schedule.next_wakeup()].into_iter().flatten().min() {
            Some(t) if t <= end => now = now.max(t),
            _ => return Run { deliveries, events, stats: path.stats() },
        }
    }
    panic!("livelock");
}

fn slot_start(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000_000 / 1500)
}

/// The slot starting at `t` (a slot boundary).
fn slot_at(t: Instant) -> u64 {
    let n = (t.as_nanos() as u128 * 1500).div_ceil(1_000_000_000) as u64;
    assert_eq!(slot_start(n), t);
    n
}

/// Slots whose frame was hit (logged when the slot ends).
fn error_slots(events: &[Event]) -> Vec<u64> {
    events.iter().filter(|e| matches!(e.kind, EventKind::FrameError { .. })).map(|e| slot_at(e.time) - 1).collect()
}

/// Q(x) = ∫ₓ^∞ φ(t) dt by Simpson's rule over [x, x + 12].
fn q(x: f64) -> f64 {
    let n = 2000;
    let h = 12.0 / n as f64;
    let phi = |t: f64| (-t * t / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let mut sum = phi(x) + phi(x + 12.0);
    for i in 1..n {
        sum += phi(x + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    sum * h / 3.0
}

/// A scratch directory with a `traces/` folder, removed when dropped.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("traces")).unwrap();
    dir
}

const SCENARIO: &str = r#"
name = "trace"
duration = "1 s"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.0.2"
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "radio"
radio = { modulation = "adaptive", scheduling = "best", channel = CHANNEL }
[[links.uplink]]
name = "up"
"#;

fn channel_of(s: &Scenario) -> &squall_link::radio::MeasuredSnr {
    match &s.links[0].downlink[0].radio.as_ref().unwrap().channel {
        ChannelConfig::Measured(m) => m,
        other => panic!("not measured: {other:?}"),
    }
}

// ------------------------------------------------------------- loading

#[test]
fn inline_values_still_load() {
    let text = SCENARIO.replace("CHANNEL", r#"{ kind = "measured", snr_db = [[16.5, 12.0], [15.9, 13.1]] }"#);
    let s = squall_scenario::parse("inline.toml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e:?}"));
    let m = channel_of(&s);
    assert_eq!(m.snr_db, vec![vec![16.5, 12.0], vec![15.9, 13.1]]);
    assert_eq!((m.file.as_ref(), m.predicted_snr_db.as_ref()), (None, None));
}

#[test]
fn files_fill_the_channel_and_the_resolved_scenario_reloads_without_them() {
    let dir = scratch();
    std::fs::write(dir.path().join("traces/snr.csv"), "# measured\nch0,ch1\n16.5, 12\n15.9,13.1 # fast\n-2.4,14\n")
        .unwrap();
    std::fs::write(dir.path().join("traces/pred.csv"), "16 12\n16 13\n-2 14\n").unwrap();
    let channel = r#"{ kind = "measured", file = { snr = "traces/snr.csv", predicted = "traces/pred.csv" } }"#;
    std::fs::write(dir.path().join("s.toml"), SCENARIO.replace("CHANNEL", channel)).unwrap();
    let s = squall_scenario::load(&dir.path().join("s.toml")).unwrap_or_else(|e| panic!("{e:?}"));
    let m = channel_of(&s);
    assert_eq!(m.snr_db, vec![vec![16.5, 12.0], vec![15.9, 13.1], vec![-2.4, 14.0]]);
    assert_eq!(m.predicted_snr_db, Some(vec![vec![16.0, 12.0], vec![16.0, 13.0], vec![-2.0, 14.0]]));
    let files = m.file.as_ref().unwrap();
    assert_eq!((files.snr.as_str(), files.predicted.as_deref()), ("traces/snr.csv", Some("traces/pred.csv")));
    // A run's resolved scenario keeps names and values; read elsewhere,
    // where the files are not, it is the same scenario.
    let resolved = toml::to_string(&s).unwrap();
    assert!(resolved.contains("predicted = \"traces/pred.csv\""), "{resolved}");
    let again = squall_scenario::parse("resolved.toml", &resolved, Path::new("/nonexistent"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(again, s);

    // The plain form: one file, predicted channel made with the NMSE.
    let channel = r#"{ kind = "measured", file = "traces/snr.csv" }"#;
    std::fs::write(dir.path().join("s.toml"), SCENARIO.replace("CHANNEL", channel)).unwrap();
    let s = squall_scenario::load(&dir.path().join("s.toml")).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(channel_of(&s).snr_db.len(), 3);
    assert!(toml::to_string(&s).unwrap().contains("file = \"traces/snr.csv\""));
}

#[test]
fn a_bad_file_key_is_a_located_schema_error() {
    for (channel, key, want) in [
        (r#"{ kind = "measured", file = 5 }"#, "file", "expected a file name like \"traces/snr.csv\""),
        (
            r#"{ kind = "measured", file = { snr = "a.csv", predictd = "b.csv" } }"#,
            "file.predictd",
            "did you mean `predicted`?",
        ),
    ] {
        let text = SCENARIO.replace("CHANNEL", channel);
        let e = squall_scenario::parse("inline.toml", &text, Path::new(".")).unwrap_err();
        println!("{e}");
        assert_eq!(e.line(), Some(14), "{e}");
        let _ = key;
        assert!(e.to_string().contains(want), "{e}");
    }
}

#[test]
fn the_shipped_fading_trace_is_the_model_s_channel() {
    // scenarios/traces/tu-75kmh-16db.csv, as its header says: seed 2, 3000
    // slots, 4 sub-channels, 16 dB, written with 2 decimals.
    let text = std::fs::read_to_string(scenarios().join("traces/tu-75kmh-16db.csv")).unwrap();
    let table = parse_snr_csv(&text).unwrap();
    let config = FadingConfig { sub_channels: 4, ..Default::default() };
    let (snr, _) = fading_trace(&config, 1500, 0.0, 2, 3000);
    assert_eq!(table.rows.len(), 3000);
    for (slot, (file, model)) in table.rows.iter().zip(&snr).enumerate() {
        for (a, b) in file.iter().zip(model) {
            assert!((a - b).abs() <= 0.005 + 1e-9, "slot {slot}: {a} vs {b}");
        }
    }
    let s = load("radio-measured.toml");
    assert_eq!(channel_of(&s).snr_db, table.rows);
}

// ---------------------------------------------------------------- runs

#[test]
fn a_deep_fade_in_the_trace_hits_exactly_its_slots() {
    // traces/deep-fade.csv: slots 600-699 of every 1500 at -10 dB, the
    // rest at 40 dB. Fixed 16-QAM, 54-byte packets (one 432-bit frame).
    let s = load("radio-deep-fade.toml");
    let text = std::fs::read_to_string(scenarios().join("traces/deep-fade.csv")).unwrap();
    let trace = parse_snr_csv(&text).unwrap().rows;
    let fade: Vec<usize> = (0..trace.len()).filter(|&k| trace[k][0] < 0.0).collect();
    assert_eq!(fade, (600..700).collect::<Vec<_>>(), "the file is what its header says");
    // Premise: the model's error rates at the trace's two levels.
    let fer = |db: f64| Modulation::Qam16.frame_error_rate(10f64.powf(db / 10.0), 108);
    assert_eq!((fer(40.0), fer(-10.0)), (0.0, 1.0));

    let run = run_downlink(&s, 54);
    // Three seconds: fades in slots 600-699, 2100-2199 and 3600-3699.
    let fades: Vec<u64> = [0u64, 1500, 3000].iter().flat_map(|p| (600..700).map(move |k| p + k)).collect();
    assert_eq!(error_slots(&run.events), fades, "frame errors exactly in the fades");
    let in_fade = |t: Instant| fades.contains(&(slot_at(t) - 1));
    assert!(run.deliveries.iter().all(|d| !in_fade(d.at)), "a packet got through the fade");
    // Outside the fades every slot delivers one packet: 1500 × 108 × 4
    // bits/s (Table II, 16-QAM). Between fades 1 and 2: slots 700..2100.
    let between = |lo: u64, hi: u64| {
        run.deliveries
            .iter()
            .filter(|d| (lo + 1..=hi).contains(&slot_at(d.at)))
            .map(|d| d.packet.size as u64 * 8)
            .sum::<u64>()
    };
    assert_eq!(between(0, 600), 600 * 432);
    assert_eq!(between(700, 2100) as f64 / (1400.0 / 1500.0), 1500.0 * 108.0 * 4.0);
    // ARQ (2 ms = 3 slots, retransmissions first): in a 100-slot fade four
    // frames take turns, each retried every 4th slot; a packet is dropped
    // after 4 failed slots. Each of the 4 turns has 25 slots: 6 packets
    // dropped, the 25th slot's frame retried after the fade and delivered.
    let drops = run.events.iter().filter(|e| e.kind == EventKind::Drop(DropReason::ArqLimit)).count();
    let retransmits: Vec<_> = run.events.iter().filter(|e| matches!(e.kind, EventKind::Retransmit { .. })).collect();
    println!("3 fades: {} frame errors, {drops} drops, {} retransmissions", fades.len(), retransmits.len());
    assert_eq!(drops, 3 * 4 * 6);
    assert_eq!(retransmits.len(), 3 * (100 - 4 * 6));
    // Turn l of a fade starting at slot f has slots f + l + 4j, j = 0..25:
    // new frames at j = 0, 4, ..., 24, retransmissions at the others and,
    // for the frame of j = 24, at f + 100 + l, just after the fade.
    let retransmit_slots: Vec<u64> = retransmits.iter().map(|e| slot_at(e.time)).collect();
    let mut expected = Vec::new();
    for f in [600u64, 2100, 3600] {
        expected.extend((0..100).filter(|k| (k / 4) % 4 != 0).map(|k| f + k));
        expected.extend(f + 100..f + 104);
    }
    assert_eq!(retransmit_slots, expected);
    assert!(run.stats.conserved());
}

#[test]
fn a_state_switches_the_modulation_at_10_s_as_the_scenario_says() {
    let s = load("radio-modulation-switch.toml");
    let run = run_downlink(&s, 54);
    let mut per_second = [0u64; 20];
    for d in &run.deliveries {
        per_second[((d.at.as_nanos() - 1) / 1_000_000_000) as usize] += d.packet.size as u64 * 8;
    }
    println!("bits per second: {per_second:?}");
    // Table II: 1500 × 108 × log2 M.
    let (bpsk, qam16) = (1500 * 108, 1500 * 108 * 4);
    assert_eq!(per_second[..10], [bpsk; 10]);
    assert_eq!(per_second[10..], [qam16; 10]);
    // The slot starting at 10 s carries a whole 54-byte packet (16-QAM).
    let mut frames: HashMap<PacketId, u32> = HashMap::new();
    for e in run.events.iter().filter(|e| e.kind.name() == "tx_start") {
        *frames.entry(e.packet.unwrap()).or_default() += 1;
    }
    let at_ten = run.events.iter().find(|e| e.kind.name() == "tx_start" && e.time == Instant::from_secs(10)).unwrap();
    assert_eq!(frames[&at_ten.packet.unwrap()], 1);
}

#[test]
fn frame_errors_follow_the_measured_fading_trace() {
    // radio-measured.toml's trace, made fixed: 4-QAM on sub-channel 0, no
    // retransmissions, no states. Each slot's frame is hit with
    // p = 1 − (1 − SER(γ))^108, γ the trace's SNR of that slot, SER =
    // 2Q(√γ) − Q(√γ)². The errors must sit where the trace says.
    let mut s = load("radio-measured.toml");
    s.states.clear();
    s.links[0].downlink.truncate(1);
    s.duration = Duration::from_secs(4);
    let radio = s.links[0].downlink[0].radio.as_mut().unwrap();
    radio.modulation = ModulationChoice::Fixed(Modulation::Qam4);
    radio.scheduling = Scheduling::Static(0);
    radio.arq.retries = 0;
    radio.residual = ResidualErrors::Drop;
    let trace: Vec<f64> = channel_of(&s).snr_db.iter().map(|r| r[0]).collect();
    let p: Vec<f64> = trace
        .iter()
        .map(|db| {
            let qv = q(10f64.powf(db / 20.0));
            1.0 - (1.0 - (2.0 * qv - qv * qv)).powi(108)
        })
        .collect();
    // 27-byte packets: one 216-bit 4-QAM frame each.
    let run = run_downlink(&s, 27);
    let hit: HashSet<u64> = error_slots(&run.events).into_iter().collect();
    let slots = 6000u64; // 4 s: the 3000-slot trace twice
    let (mut expected, mut variance, mut sure_hits, mut sure_misses) = (0.0, 0.0, 0, 0);
    for n in 0..slots {
        let pn = p[(n % 3000) as usize];
        expected += pn;
        variance += pn * (1.0 - pn);
        if pn > 1.0 - 1e-9 {
            sure_hits += 1;
            assert!(hit.contains(&n), "slot {n} at {:.2} dB got through", trace[(n % 3000) as usize]);
        }
        if pn < 1e-9 {
            sure_misses += 1;
            assert!(!hit.contains(&n), "slot {n} at {:.2} dB was hit", trace[(n % 3000) as usize]);
        }
    }
    let errors = hit.iter().filter(|&&n| n < slots).count() as f64;
    println!(
        "frame errors {errors}, expected {expected:.1} ± {:.1}; {sure_hits} certain hits, {sure_misses} certain misses",
        variance.sqrt()
    );
    assert!((errors - expected).abs() < 4.0 * variance.sqrt());
    assert!(sure_hits > 0 && sure_misses > 1000);
}
