//! Background load (seed 003 §2.2, seed 000 §5.1) against theory: a CBR
//! background of load rho leaves (1 - rho) C to a saturating foreground;
//! a Poisson background alone is an M/D/1 or M/M/1 queue; virtual packets
//! are counted apart and never leave the stage.

mod common;

use common::*;
use squall_link::*;

fn class(name: &str) -> ClassConfig {
    ClassConfig { name: name.into(), ..ClassConfig::default() }
}

/// Runs the path up to `horizon`, returning the deliveries.
fn run_until(path: &mut Path, horizon: Instant) -> Vec<Delivery> {
    let mut out = Vec::new();
    while let Some(t) = path.next_wakeup().filter(|&t| t <= horizon) {
        while let Some(d) = path.poll(t) {
            out.push(d);
        }
    }
    out
}

#[test]
fn cbr_background_at_load_rho_leaves_one_minus_rho_to_a_saturating_foreground() {
    for rho in [0.1, 0.3, 0.6] {
        let c = 10e6;
        let mut s = StageConfig::named("s");
        s.rate = Some(Rate::from_bits_per_sec(c as u64));
        // The background in its own class above the foreground (strict
        // priority), so it gets exactly its load.
        s.queue.classes = vec![class("bg"), class("fg")];
        let mut bg = cbr("bg", &format!("{} bit/s", rho * c), 1000);
        bg.class = Some("bg".into());
        s.background = vec![bg];
        let mut p = path(vec![s]);
        // The foreground: 1500 B packets, more than the link can carry in 10 s.
        for i in 0..10_000 {
            p.push(Instant::ZERO, packet(i, 1500));
        }
        let horizon = Instant::from_secs(10);
        let out = run_until(&mut p, horizon);
        let fg = out.iter().map(|d| d.packet.size as f64 * 8.0).sum::<f64>() / horizon.as_secs_f64();
        let expect = (1.0 - rho) * c;
        assert!((fg - expect).abs() <= 0.01 * expect, "rho {rho}: foreground {fg} bit/s, (1-rho)C = {expect}");
        assert!(out.iter().all(|d| !d.packet.background), "a virtual packet left the stage");
        let bg = p.stage_stats(horizon)[0].background;
        // 10 s of CBR at rho C with 1000 B packets, the first at time zero.
        let made = (10.0 * rho * c / 8000.0).round() as u64;
        assert!(bg.generated.abs_diff(made) <= 1, "generated {} for {made}", bg.generated);
    }
}

/// Mean number waiting in a queue fed only by a Poisson background of load
/// `rho` at 8 Mbit/s with 1000 B mean packets (1 ms mean service), over
/// `reps` seeds: (mean, 95% half-width).
fn poisson_queue(rho: f64, size: Distribution<Bytes>, reps: u64) -> (f64, f64) {
    batch_poisson_queue(rho, size, 1, reps)
}

/// As `poisson_queue`, with packets arriving in bursts of mean `burst`.
fn batch_poisson_queue(rho: f64, size: Distribution<Bytes>, burst: u32, reps: u64) -> (f64, f64) {
    let samples: Vec<f64> = (1..=reps)
        .map(|seed| {
            let mut s = StageConfig::named("s");
            s.rate = Some(Rate::from_bits_per_sec(8_000_000));
            s.background = vec![BackgroundConfig {
                arrivals: Arrivals::Poisson,
                size: size.clone(),
                burst: Some(burst),
                ..cbr("poisson", &format!("{} bit/s", rho * 8e6), 1000)
            }];
            let mut p = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![s] }, seed).unwrap();
            let horizon = Instant::from_secs(200);
            run_until(&mut p, horizon);
            p.stage_stats(horizon)[0].mean_queue_len
        })
        .collect();
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    // Student t, 9 degrees of freedom, 97.5%.
    (mean, 2.262 * (var / n).sqrt())
}

#[test]
fn poisson_background_with_fixed_sizes_is_an_md1_queue() {
    let rho: f64 = 0.6;
    let (mean, half) = poisson_queue(rho, Distribution::constant(Bytes(1000)), 10);
    // Pollaczek-Khinchine: Lq = rho^2 / (2 (1 - rho)).
    let theory = rho * rho / (2.0 * (1.0 - rho));
    println!("M/D/1 rho {rho}: Lq {mean} +- {half}, theory {theory}");
    assert!((mean - theory).abs() <= half, "M/D/1 Lq {mean} +- {half}, theory {theory}");
}

#[test]
fn poisson_background_with_exponential_sizes_is_an_mm1_queue() {
    let rho: f64 = 0.6;
    let (mean, half) = poisson_queue(rho, Distribution::Exponential { mean: Bytes(1000) }, 10);
    // Lq = rho^2 / (1 - rho).
    let theory = rho * rho / (1.0 - rho);
    println!("M/M/1 rho {rho}: Lq {mean} +- {half}, theory {theory}");
    assert!((mean - theory).abs() <= half, "M/M/1 Lq {mean} +- {half}, theory {theory}");
}

#[test]
fn poisson_bursts_with_fixed_sizes_are_an_mx_d1_queue() {
    // Batch Poisson arrivals with geometric batch sizes of mean b (M^X/D/1):
    // a packet waits for the work found (Pollaczek-Khinchine: rho S / (2 (1 -
    // rho))) plus the packets ahead of it in its own batch, whose mean number
    // is (E[X^2] - E[X]) / (2 E[X]) = b - 1 for the geometric law, each
    // stretched by 1 / (1 - rho). With Little's law, Lq = rho (rho / 2 + b -
    // 1) / (1 - rho) (Kleinrock, Queueing Systems vol. 1, §4.5).
    let rho: f64 = 0.6;
    for b in [1u32, 4] {
        let (mean, half) = batch_poisson_queue(rho, Distribution::constant(Bytes(1000)), b, 10);
        let theory = rho * (rho / 2.0 + b as f64 - 1.0) / (1.0 - rho);
        println!("M^X/D/1 rho {rho}, mean batch {b}: Lq {mean} +- {half}, theory {theory}");
        assert!((mean - theory).abs() <= half.max(0.02 * theory), "b {b}: Lq {mean} +- {half}, theory {theory}");
    }
}

#[test]
fn cbr_bursts_keep_the_mean_rate() {
    let mut s = StageConfig::named("s");
    s.rate = Some(Rate::from_bits_per_sec(10_000_000));
    s.background = vec![BackgroundConfig { burst: Some(8), ..cbr("bg", "3 Mbit/s", 1000) }];
    let mut p = path(vec![s]);
    let horizon = Instant::from_secs(10);
    run_until(&mut p, horizon);
    let stats = p.stage_stats(horizon)[0].clone();
    // 3 Mbit/s of 1000 B packets is 375/s: 3750 in 10 s, in bursts of 8
    // every 8/375 s, the first at time zero (469 bursts, 3752 packets).
    assert_eq!(stats.background.generated, 469 * 8);
    // Eight packets arriving together: while the first is sent the queue
    // holds 7, then 6, ... 0, each for a 0.8 ms transmission: 28 · 0.8 ms
    // of packets waiting per 8/375 s period, Lq = 1.05.
    let lq = 28.0 * 0.8e-3 / (8.0 / 375.0);
    assert!((stats.mean_queue_len - lq).abs() < 0.01 * lq, "mean queue {}, expected {lq}", stats.mean_queue_len);
}

#[test]
fn virtual_packets_are_counted_apart_and_real_ones_are_conserved() {
    let mut s = StageConfig::named("s");
    s.rate = Some("8 Mbit/s".parse().unwrap());
    s.queue.packets = Some(20);
    s.background = vec![BackgroundConfig { arrivals: Arrivals::Poisson, ..cbr("bg", "4 Mbit/s", 1000) }];
    let mut p = path(vec![s]);
    // Real traffic at 6 Mbit/s on top: 125% load, so both kinds are dropped.
    let horizon = Instant::from_secs(20);
    let mut t = Instant::ZERO;
    let mut id = 0;
    let mut out = Vec::new();
    while t < horizon {
        out.extend(run_until(&mut p, t));
        p.push(t, packet(id, 750));
        id += 1;
        t += Duration::from_millis(1);
    }
    out.extend(run_until(&mut p, horizon));
    let stats = p.stats();
    assert!(stats.conserved(), "{stats:?}");
    assert_eq!(stats.entered, id);
    assert!(stats.dropped > 0);
    let st = &p.stage_stats(horizon)[0];
    assert_eq!(st.entered, id, "virtual packets are not counted as entered");
    let bg = st.background;
    assert!(bg.dropped > 0 && bg.served > 0, "{bg:?}");
    assert!(bg.generated >= bg.served + bg.dropped);
    assert!(bg.generated - bg.served - bg.dropped <= 21, "at most a queue and a link of virtual packets inside");
    assert!(out.iter().all(|d| !d.packet.background));
    let events = p.drain_events();
    assert!(events.iter().all(|e| e.packet.is_none_or(|id| id.0 < 1 << 62)), "an event for a virtual packet");
    assert_eq!(events.iter().filter(|e| matches!(e.kind, EventKind::Drop(_))).count() as u64, stats.dropped);
}

#[test]
fn on_off_source_sends_only_in_its_on_periods() {
    let mut s = StageConfig::named("s");
    s.rate = Some("100 Mbit/s".parse().unwrap());
    // 1 packet per ms while on; on 300 ms, off 700 ms.
    s.background = vec![BackgroundConfig {
        on: Some(Distribution::constant(Duration::from_millis(300))),
        off: Some(Distribution::constant(Duration::from_millis(700))),
        ..cbr("onoff", "8 Mbit/s", 1000)
    }];
    let mut p = path(vec![s]);
    let horizon = Instant::from_millis(9_999);
    run_until(&mut p, horizon);
    // 10 on periods of 300 packets each (at 0, 1, ..., 299 ms of each).
    assert_eq!(p.stage_stats(horizon)[0].background.generated, 3_000);
}

#[test]
fn a_state_change_sets_a_new_background_rate() {
    let mut s = StageConfig::named("s");
    s.rate = Some("100 Mbit/s".parse().unwrap());
    s.background = vec![cbr("bg", "8 Mbit/s", 1000)];
    let mut p = path(vec![s]);
    run_until(&mut p, Instant::from_millis(999));
    let patch = StagePatch::default().with("background", |c| c.background = vec![cbr("bg", "16 Mbit/s", 1000)]);
    assert!(p.apply(Instant::from_secs(1), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    let horizon = Instant::from_millis(1_999);
    run_until(&mut p, horizon);
    // 1000 packets in the first second, 2000 in the next.
    assert_eq!(p.stage_stats(horizon)[0].background.generated, 3_000);
}

#[test]
fn a_change_to_one_generator_leaves_the_others_running_as_they_were() {
    let mut s = StageConfig::named("s");
    s.rate = Some("100 Mbit/s".parse().unwrap());
    // `a`: one 1000 B packet every 8 ms from 0; `b`: every 4 ms.
    s.background = vec![cbr("a", "1 Mbit/s", 1000), cbr("b", "2 Mbit/s", 1000)];
    let mut p = path(vec![s]);
    run_until(&mut p, Instant::from_millis(500));
    // At 501 ms `b` is re-rated, `a` is left as it was: `a` sends on at
    // 504, 512, ... (63 packets in [0, 500], 62 more by 996 ms); a
    // restarted `a` would send at 501 ms and every 8 ms after (63 more).
    let patch = StagePatch::default()
        .with("background", |c| c.background = vec![cbr("a", "1 Mbit/s", 1000), cbr("b", "4 Mbit/s", 1000)]);
    assert!(p.apply(Instant::from_millis(501), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    let horizon = Instant::from_millis(999);
    run_until(&mut p, horizon);
    // `b`: 126 packets in [0, 500] (0, 4, ..., 500), then from 501 one every
    // 2 ms up to 999: 250.
    assert_eq!(p.stage_stats(horizon)[0].background.generated, 63 + 62 + 126 + 250);
    // Stopping `b` leaves `a` alone too: 63 more from 1000 to 1496 ms.
    let stop_b = StagePatch::default().with("background", |c| c.background = vec![cbr("a", "1 Mbit/s", 1000)]);
    assert!(p.apply(Instant::from_millis(999), &Change::Set { stage: "s".into(), patch: Box::new(stop_b) }));
    let horizon = Instant::from_millis(1_499);
    run_until(&mut p, horizon);
    assert_eq!(p.stage_stats(horizon)[0].background.generated, 63 + 62 + 126 + 250 + 63);
}

#[test]
fn frame_errors_and_retransmissions_of_virtual_packets_are_counted_apart() {
    // Only background traffic over a link with 30% frame errors and 3 ARQ
    // retries: the stage's own counters (real packets) stay at zero; each
    // background frame error is either retransmitted or, after the third
    // retry, dropped (an exact identity), and retransmissions are about
    // n (f + f^2 + f^3) = 0.417 n (binomial, 4 sigma).
    let mut s = StageConfig::named("s");
    s.rate = Some("10 Mbit/s".parse().unwrap());
    s.error = ErrorModel::Packet(Probability::new(0.3).unwrap());
    s.error_mode = ErrorMode::Arq(ArqConfig { delay: Duration::from_millis(1), retries: 3 });
    s.background = vec![cbr("bg", "1 Mbit/s", 1000)];
    let mut p = path(vec![s]);
    let horizon = Instant::from_secs(20);
    run_until(&mut p, horizon);
    let st = &p.stage_stats(horizon)[0];
    assert_eq!((st.frame_errors, st.retransmissions), (0, 0), "{st:?}");
    let bg = st.background;
    assert_eq!(bg.frame_errors, bg.retransmissions + bg.dropped, "{bg:?}");
    let n = bg.generated as f64;
    let expect = n * (0.3 + 0.09 + 0.027);
    let sd = (n * 0.3 * 0.7).sqrt() * 2.0;
    assert!((bg.retransmissions as f64 - expect).abs() < 4.0 * sd, "{bg:?}, expected about {expect}");
}

#[test]
fn a_load_is_a_share_of_the_stage_rate_and_zero_sends_nothing() {
    // Seed 003 §3: the background's offered load from 0 to 100% of the link.
    for (load, packets) in [("40%", 2_000), ("0%", 0)] {
        let mut s = StageConfig::named("s");
        s.rate = Some("10 Mbit/s".parse().unwrap());
        s.background =
            vec![BackgroundConfig { rate: None, load: Some(load.parse().unwrap()), ..cbr("bg", "1 bit/s", 1000) }];
        s.validate().unwrap();
        let mut p = path(vec![s]);
        let horizon = Instant::from_millis(3_999);
        run_until(&mut p, horizon);
        // 4 Mbit/s of 1000-byte packets: one every 2 ms, from time 0.
        assert_eq!(p.stage_stats(horizon)[0].background.generated, packets, "load {load}");
    }
    // A load needs a stage rate to be a share of.
    let mut s = StageConfig::named("s");
    s.service_time = Some(Distribution::constant(Duration::from_millis(1)));
    s.background =
        vec![BackgroundConfig { rate: None, load: Some("50%".parse().unwrap()), ..cbr("bg", "1 bit/s", 1000) }];
    assert!(s.validate().is_err());
}

#[test]
fn a_load_follows_a_state_that_changes_the_stage_rate() {
    // 40% of 10 Mbit/s in 1000 B packets is one every 2 ms: 501 at 0, 2,
    // ..., 1000 ms (the stage catches up to the change's instant first). At
    // 1 s the rate doubles and the source starts again, with a packet at
    // once (a CBR source starts with one), then one every 1 ms: 1000 from
    // 1.000 s to 1.999 s. Without following the rate: 500 more, not 1000.
    let mut s = StageConfig::named("s");
    s.rate = Some("10 Mbit/s".parse().unwrap());
    s.background =
        vec![BackgroundConfig { rate: None, load: Some("40%".parse().unwrap()), ..cbr("bg", "1 bit/s", 1000) }];
    let mut p = path(vec![s]);
    run_until(&mut p, Instant::from_millis(999));
    let patch = StagePatch::default().with("rate", |c| c.rate = Some("20 Mbit/s".parse().unwrap()));
    assert!(p.apply(Instant::from_secs(1), &Change::Set { stage: "s".into(), patch: Box::new(patch) }));
    let horizon = Instant::from_millis(1_999);
    run_until(&mut p, horizon);
    assert_eq!(p.stage_stats(horizon)[0].background.generated, 501 + 1000);
}

#[test]
fn a_burst_of_no_packets_is_refused_by_name() {
    let mut s = StageConfig::named("s");
    s.rate = Some(Rate::from_bits_per_sec(10_000_000));
    s.background = vec![BackgroundConfig { burst: Some(0), ..cbr("bg", "3 Mbit/s", 1000) }];
    let err = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![s] }, 1).unwrap_err().to_string();
    assert!(err.contains("background[0].burst") && err.contains("at least 1"), "{err}");
}

/// Packets a 1 Mbit/s CBR source of 1000 B (one every 8 ms) with `phase`
/// has made by `horizon`, in a path with `seed`.
fn cbr_generated_by(phase: &str, seed: u64, horizon: Instant) -> u64 {
    let mut s = StageConfig::named("s");
    s.rate = Some("100 Mbit/s".parse().unwrap());
    s.background = vec![BackgroundConfig { phase: Some(phase.parse().unwrap()), ..cbr("a", "1 Mbit/s", 1000) }];
    let mut p = Path::new(&PathConfig { direction: Direction::Downlink, stages: vec![s] }, seed).unwrap();
    run_until(&mut p, horizon);
    p.stage_stats(horizon)[0].background.generated
}

#[test]
fn a_cbr_phase_delays_the_first_packet_and_a_random_one_is_uniform_within_a_gap() {
    // Phase 3 ms: packets at 3, 11, ..., 3 + 8k ms: 125 by 1002 ms (k ≤ 124),
    // 126 by 1003 ms.
    assert_eq!(cbr_generated_by("3 ms", 1, Instant::from_millis(1002)), 125);
    assert_eq!(cbr_generated_by("3 ms", 1, Instant::from_millis(1003)), 126);
    // A random phase φ, uniform in [0, 8 ms): by 1000 + x ms there are 126
    // packets when φ ≤ x, else 125, so P(126) = x / 8 ms. Over 400 seeds
    // the share is within 3.5 binomial σ of x / 8 for x = 2, 4, 6 ms.
    let seeds = 400u64;
    for x in [2u64, 4, 6] {
        let horizon = Instant::from_millis(1000 + x);
        let counts: Vec<u64> = (0..seeds).map(|seed| cbr_generated_by("random", seed, horizon)).collect();
        assert!(counts.iter().all(|&c| c == 125 || c == 126), "{counts:?}");
        let early = counts.iter().filter(|&&c| c == 126).count() as f64;
        let p = x as f64 / 8.0;
        let sigma = (seeds as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (early - seeds as f64 * p).abs() < 3.5 * sigma,
            "φ ≤ {x} ms in {early} of {seeds} seeds, expected {}",
            seeds as f64 * p
        );
    }
}

#[test]
fn an_on_off_load_is_a_long_run_mean_sent_at_load_over_the_on_share_while_on() {
    // 40% of 10 Mbit/s as a mean, on 300 ms of every 1000: 4 Mbit/s ÷ 0.3
    // = 13.33 Mbit/s while on, one 1000 B packet every 0.6 ms: 500 in each
    // 300 ms on period (at 0, 0.6, ..., 299.4 ms), 5000 in 10 s: the mean
    // is 4 Mbit/s.
    let mut s = StageConfig::named("s");
    s.rate = Some("10 Mbit/s".parse().unwrap());
    s.background = vec![BackgroundConfig {
        rate: None,
        load: Some("40%".parse().unwrap()),
        on: Some(Distribution::constant(Duration::from_millis(300))),
        off: Some(Distribution::constant(Duration::from_millis(700))),
        ..cbr("bg", "1 bit/s", 1000)
    }];
    s.validate().unwrap();
    let mut p = path(vec![s]);
    let horizon = Instant::from_millis(9_999);
    run_until(&mut p, horizon);
    assert_eq!(p.stage_stats(horizon)[0].background.generated, 5_000);

    // On periods without a finite mean cannot say what rate a load needs.
    let mut s = StageConfig::named("s");
    s.rate = Some("10 Mbit/s".parse().unwrap());
    s.background = vec![BackgroundConfig {
        rate: None,
        load: Some("40%".parse().unwrap()),
        on: Some(Distribution::Pareto { scale: Duration::from_millis(1), shape: 1.0 }),
        off: Some(Distribution::constant(Duration::from_millis(700))),
        ..cbr("bg", "1 bit/s", 1000)
    }];
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("finite means"), "{e}");
}

/// Arrival instants of a Poisson source of 2 Mbit/s, 1000 B, in a path
/// with seed 7, up to 2 s, with optional on/off periods.
fn poisson_arrivals(on_off: Option<(Distribution<Duration>, Distribution<Duration>)>) -> Vec<Instant> {
    let mut s = StageConfig::named("s");
    s.rate = Some("1 Gbit/s".parse().unwrap());
    let (on, off) = on_off.unzip();
    s.background = vec![BackgroundConfig { arrivals: Arrivals::Poisson, on, off, ..cbr("p", "2 Mbit/s", 1000) }];
    let mut p = path_with_seed(vec![s], 7);
    // Alone on a 1 Gbit/s stage each packet leaves 8 µs after it came.
    let mut at = Vec::new();
    let mut generated = 0;
    let horizon = Instant::from_secs(2);
    while let Some(t) = p.next_wakeup().filter(|&t| t <= horizon) {
        while p.poll(t).is_some() {}
        let now = p.stage_stats(t)[0].background.generated;
        if now > generated {
            at.push(t);
            generated = now;
        }
    }
    at
}

fn path_with_seed(stages: Vec<StageConfig>, seed: u64) -> Path {
    Path::new(&PathConfig { direction: Direction::Downlink, stages }, seed).unwrap()
}

#[test]
fn off_periods_of_zero_leave_the_source_as_if_always_on() {
    // Exponential on periods with no off time between them: the same
    // arrivals as the plain source (before, each on period's end pulled
    // the next arrival back to it, adding one per period).
    let plain = poisson_arrivals(None);
    let on = Distribution::Exponential { mean: Duration::from_millis(50) };
    let zero_off = poisson_arrivals(Some((on, Distribution::constant(Duration::ZERO))));
    assert!(plain.len() > 400, "{} arrivals", plain.len());
    assert_eq!(plain, zero_off);
}

/// The departures of 100-byte probes pushed at `probes_us` (µs) through
/// an 8 Mbit/s stage (1 byte per µs) whose one background source replays
/// `gaps` (µs) and `sizes` (B) with `order`, its first packet at 0; and
/// the source's packets generated by 17.9 ms.
fn probes_behind_a_pattern(order: squall_link::dist::Order, probes_us: &[u64]) -> (Vec<u64>, u64) {
    let us = Duration::from_micros;
    let gaps = vec![us(500), us(3000), us(2500)];
    let sizes = vec![Bytes(1500), Bytes(500), Bytes(1000)];
    let mut s = StageConfig::named("s");
    s.rate = Some("8 Mbit/s".parse().unwrap());
    s.background = vec![BackgroundConfig {
        gap: Some(Distribution::Empirical { file: None, values: gaps, order }),
        size: Distribution::Empirical { file: None, values: sizes, order },
        phase: Some(Phase::After(Duration::ZERO)),
        rate: None,
        ..cbr("pattern", "1 Mbit/s", 1000)
    }];
    let mut p = path(vec![s]);
    let mut out = Vec::new();
    for (i, &t) in probes_us.iter().enumerate() {
        let at = Instant::ZERO + us(t);
        out.extend(run_until(&mut p, at));
        p.push(at, packet(i as u64, 100));
    }
    let horizon = Instant::ZERO + us(17_900);
    out.extend(run_until(&mut p, horizon));
    let generated = p.stage_stats(horizon)[0].background.generated;
    (out.iter().map(|d| (d.at - Instant::ZERO).as_nanos() / 1000).collect(), generated)
}

/// A stored background pattern replayed in order (seed 003 §2.2: the
/// degrader's patterns "uploaded onto the board"; issue 30's per-packet
/// sequences): gaps 0.5, 3, 2.5 ms and sizes 1 500, 500, 1 000 B, in
/// that order and again, put background packets in at 0, 0.5, 3.5, 6,
/// 6.5, 9.5, 12, 12.5, 15.5 ms (9 by 17.9 ms), taking 1.5, 0.5, 1 ms of
/// the 8 Mbit/s link. By hand, the link is busy [0, 1.5] then [1.5, 2]
/// (the second waited), [3.5, 4.5], [6, 8], [9.5, 10.5], [12, 14], [15.5,
/// 16.5]; a 100-byte probe (0.1 ms) waits behind what is queued or in
/// service when it comes: pushed at 1, 4, 5, 13 and 15.6 ms it leaves at
/// 2.1, 4.6, 5.1, 14.1 and 16.6 ms. The same values drawn at random
/// (`order = "random"`) give other departures.
#[test]
fn a_background_pattern_is_replayed_in_order() {
    use squall_link::dist::Order;
    let probes = [1000, 4000, 5000, 13_000, 15_600];
    let (left, generated) = probes_behind_a_pattern(Order::Sequence, &probes);
    assert_eq!(left, vec![2100, 4600, 5100, 14_100, 16_600]);
    assert_eq!(generated, 9);
    let (random, _) = probes_behind_a_pattern(Order::Random, &probes);
    assert_ne!(random, left);
}

/// `start = "first_packet"` starts a series at the first real packet, not
/// at a background one (rattan's `first-packet`: start-up traffic does not
/// use the series up; squall_link::series::SeriesStart). The stage's rate
/// is 0 bit/s for the series' first 100 ms, then 12 Mbit/s; a 100 kbit/s
/// CBR background of 100-byte packets crosses it from 0 s. One real
/// 1 500-byte packet at 1 s: its series starts then, holds the link until
/// 1.100 s, and the packet takes 1 ms (behind at most one 67 µs background
/// packet): it leaves in [1.101, 1.1011] s. Had the first background packet
/// started the series, the rate would be 12 Mbit/s at 1 s and the packet
/// would leave by 1.002 s.
#[test]
fn a_first_packet_series_ignores_background_packets() {
    use squall_link::series::{AtEnd, Between, ParameterSeries, SeriesStart};
    let s = stage(|s| {
        s.background = vec![cbr("bg", "100 kbit/s", 100)];
        s.series.rate = Some(Box::new(ParameterSeries {
            file: None,
            between: Between::Step,
            at_end: AtEnd::Hold,
            start: SeriesStart::FirstPacket,
            times_ns: vec![0, 100_000_000],
            values: vec![0.0, 12e6],
        }));
    });
    let mut p = path(vec![s]);
    let at = Instant::ZERO + ms(1000);
    // The background runs alone for 1 s.
    while let Some(t) = p.next_wakeup().filter(|&t| t < at) {
        assert!(p.poll(t).is_none(), "a background packet left the stage");
    }
    p.push(at, packet(1, 1500));
    let out = drain_until(&mut p, Instant::ZERO + ms(1200));
    assert_eq!(out.len(), 1);
    let left = out[0].at.as_nanos();
    assert!((1_101_000_000..=1_101_100_000).contains(&left), "left at {left} ns");
}

/// Deliveries until `end` (a background source never lets the path go idle).
fn drain_until(p: &mut Path, end: Instant) -> Vec<Delivery> {
    let mut out = Vec::new();
    while let Some(t) = p.next_wakeup().filter(|&t| t <= end) {
        while let Some(d) = p.poll(t) {
            out.push(d);
        }
    }
    out
}
