//! netem one-liners, with values checked by hand against tc-netem(8).

use std::path::Path;

use squall_link::{Distribution, Duration, ErrorMode, ErrorModel, GilbertElliott, Probability, Rate};
use squall_scenario::{ErrorKind, parse, parse_netem, scenario_from_netem};

fn p(x: f64) -> Probability {
    Probability::new(x).unwrap()
}

#[test]
fn rate_delay_jitter_loss_limit() {
    let s = parse_netem("rate 10mbit delay 50ms 10ms loss 1% limit 100").unwrap();
    assert_eq!(s.rate, Some(Rate::from_bits_per_sec(10_000_000)));
    // netem: uniform in 50±10 ms = 40 ms fixed + uniform [0, 20 ms]; mean 50 ms.
    assert_eq!(s.delay, Duration::from_millis(40));
    let jitter = s.jitter.clone().unwrap();
    assert_eq!(jitter, Distribution::Uniform { low: Duration::ZERO, high: Duration::from_millis(20) });
    assert_eq!(s.delay.as_nanos() as f64 + jitter.mean().unwrap(), 50e6);
    assert_eq!(s.error, ErrorModel::Packet(p(0.01)));
    assert_eq!(s.error_mode, ErrorMode::Drop);
    assert_eq!(s.queue.packets, Some(100));
    s.validate().unwrap();
}

#[test]
fn spellings() {
    // `jitter` keyword, leading `netem`, `loss random`, bytes per second
    // (`MBps`: bytes in tc and in squall alike), a bare percentage, netem's
    // default limit.
    let s = parse_netem("netem delay 100ms jitter 5ms loss random 0.5 rate 1MBps").unwrap();
    assert_eq!(s.delay, Duration::from_millis(95));
    assert_eq!(s.jitter, Some(Distribution::Uniform { low: Duration::ZERO, high: Duration::from_millis(10) }));
    assert_eq!(s.error, ErrorModel::Packet(p(0.005)));
    assert_eq!(s.rate, Some(Rate::from_bits_per_sec(8_000_000)));
    assert_eq!(s.queue.packets, Some(1000));
    // Plain delay, microseconds by default.
    let s = parse_netem("delay 250").unwrap();
    assert_eq!((s.delay, s.jitter), (Duration::from_micros(250), None));
}

/// netem draws each packet's delay on its own and sends packets in the
/// order of their times (tfifo), so jitter reorders; with a rate each
/// packet is timed from the one before it (sch_netem.c `netem_enqueue`).
#[test]
fn jitter_reorders_unless_a_rate_is_set() {
    assert!(parse_netem("delay 100ms 50ms").unwrap().reorder);
    assert!(!parse_netem("rate 10mbit delay 100ms 50ms").unwrap().reorder);
    assert!(!parse_netem("delay 100ms").unwrap().reorder);
    let s = scenario_from_netem("delay 100ms 50ms", None).unwrap();
    assert!(s.links[0].uplink[0].reorder, "the default uplink takes the downlink's jitter, and reorders");
    let s = scenario_from_netem("rate 10mbit delay 100ms 50ms", None).unwrap();
    assert!(!s.links[0].downlink[0].reorder);
    assert!(s.links[0].uplink[0].reorder, "the default uplink has no rate");
}

#[test]
fn jitter_larger_than_delay_keeps_delays_non_negative() {
    let s = parse_netem("delay 5ms 10ms").unwrap();
    assert_eq!(s.delay, Duration::ZERO);
    assert_eq!(s.jitter, Some(Distribution::Uniform { low: Duration::ZERO, high: Duration::from_millis(15) }));
}

#[test]
fn normal_jitter_keeps_the_mean() {
    let s = parse_netem("delay 50ms 10ms distribution normal").unwrap();
    // 50 - 3·10 = 20 ms fixed, N(30 ms, 10 ms).
    assert_eq!(s.delay, Duration::from_millis(20));
    assert_eq!(
        s.jitter,
        Some(Distribution::Normal { mean: Duration::from_millis(30), std_dev: Duration::from_millis(10) })
    );
}

/// Mean and standard deviation of 200 000 delays of a netem stage
/// (fixed part plus its jitter's draw), in ms.
fn delay_moments(spec: &str) -> (f64, f64) {
    let s = parse_netem(spec).unwrap();
    let jitter = s.jitter.clone().unwrap();
    jitter.validate().unwrap();
    let mut sampler = squall_link::Sampler::new(jitter, squall_link::rng::stream(7, "netem-test"));
    let n = 200_000;
    let xs: Vec<f64> = (0..n).map(|_| (s.delay + sampler.sample()).as_nanos() as f64 / 1e6).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    (mean, sd)
}

/// `distribution normal`: mean D, deviation J (tc-netem(8)).
#[test]
fn normal_distribution_has_mean_delay_and_deviation_jitter() {
    let (mean, sd) = delay_moments("delay 100ms 20ms distribution normal");
    // Standard errors: 20/√200000 = 0.045 ms for the mean, about 0.03 ms for the sd.
    assert!((mean - 100.0).abs() < 0.25, "mean {mean} ms");
    assert!((sd - 20.0).abs() < 0.25, "sd {sd} ms");
}

/// netem's pareto table (iproute2 netem/pareto.c): t = (X − 1.5) · 4/3 ·
/// 8192 for X Pareto of minimum 1 and shape 3, capped at 32767, and the
/// delay D + J · t / 8192 (sch_netem.c tabledist). By hand, from
/// P(X > x) = x⁻³ and the cap c = 1.5 + 0.75 · 32767/8192:
/// E[min(X, c)] = 1 + (1 − c⁻²)/2, E[min(X, c)²] = 1 + 2(1 − 1/c).
#[test]
fn pareto_distribution_matches_netem_closed_form() {
    let c: f64 = 1.5 + 0.75 * 32767.0 / 8192.0;
    let m1 = 1.0 + (1.0 - c.powi(-2)) / 2.0;
    let m2 = 1.0 + 2.0 * (1.0 - 1.0 / c);
    let (d, j): (f64, f64) = (100.0, 20.0);
    let expected_mean = d + j * (m1 - 1.5) * 4.0 / 3.0;
    let expected_sd = j * (m2 - m1 * m1).sqrt() * 4.0 / 3.0;
    let (mean, sd) = delay_moments("delay 100ms 20ms distribution pareto");
    // expected: 99.34 ms and 16.4 ms; standard error of the mean 0.04 ms.
    assert!((mean - expected_mean).abs() < 0.2, "mean {mean} ms, closed form {expected_mean}");
    assert!((sd - expected_sd).abs() < 0.3, "sd {sd} ms, closed form {expected_sd}");
    // The uniform default's mean is D; pareto's sits below it by the cap.
    assert!(mean < 99.6, "{mean}");
}

/// netem's paretonormal table (iproute2 netem/paretonormal.c): ¼ of the
/// normal's and ¾ of the Pareto's value at the same quantile p. The
/// expectation integrates t(p) = (Φ⁻¹(p) + 3 · Q(p)) / 4 over p with
/// statrs's inverse normal, Q(p) = min(((1 − p)^(−1/3) − 1.5) · 4/3, 32767/8192).
#[test]
fn paretonormal_distribution_matches_netem_definition() {
    use statrs::distribution::{ContinuousCDF, Normal};
    let normal = Normal::standard();
    let steps = 1_000_000;
    let (mut m1, mut m2) = (0.0, 0.0);
    for k in 0..steps {
        let p = (k as f64 + 0.5) / steps as f64;
        let z = normal.inverse_cdf(p).clamp(-32768.0 / 8192.0, 32767.0 / 8192.0);
        let q = (((1.0 - p).powf(-1.0 / 3.0) - 1.5) * 4.0 / 3.0).min(32767.0 / 8192.0);
        let t = (z + 3.0 * q) / 4.0;
        m1 += t / steps as f64;
        m2 += t * t / steps as f64;
    }
    let (d, j): (f64, f64) = (100.0, 20.0);
    let (expected_mean, expected_sd) = (d + j * m1, j * (m2 - m1 * m1).sqrt());
    let (mean, sd) = delay_moments("delay 100ms 20ms distribution paretonormal");
    assert!((mean - expected_mean).abs() < 0.2, "mean {mean} ms, expected {expected_mean}");
    assert!((sd - expected_sd).abs() < 0.3, "sd {sd} ms, expected {expected_sd}");
    // A jitter above the delay: no negative delays (netem sends at once).
    let s = parse_netem("delay 5ms 20ms distribution paretonormal").unwrap();
    assert_eq!(s.delay, Duration::ZERO);
}

#[test]
fn gilbert_elliott() {
    // tc: p r 1-h 1-k; squall's h and k are the chances to get through.
    let s = parse_netem("loss gemodel 1% 10% 70% 0.1%").unwrap();
    let ErrorModel::GilbertElliott(GilbertElliott { p: gp, r, h, k }) = s.error else { panic!("{:?}", s.error) };
    assert_eq!((gp.get(), r.get()), (0.01, 0.1));
    assert!((h.get() - 0.3).abs() < 1e-12, "{h:?}");
    assert!((k.get() - 0.999).abs() < 1e-12, "{k:?}");
    // Defaults: r = 1-p, 1-h = 100% (all lost in bad), 1-k = 0.
    let s = parse_netem("loss gemodel 5%").unwrap();
    assert_eq!(s.error, ErrorModel::GilbertElliott(GilbertElliott { p: p(0.05), r: p(0.95), h: p(0.0), k: p(1.0) }));
}

#[test]
fn corrupt_delivers_damaged_packets() {
    let s = parse_netem("corrupt 0.1%").unwrap();
    assert_eq!(s.error, ErrorModel::Packet(p(0.001)));
    assert_eq!(s.error_mode, ErrorMode::Corrupt);
}

#[test]
fn unsupported_options_are_clear_errors() {
    for (spec, key, column, expected) in [
        ("reorder 25% 50%", "reorder", 1, "reordering needs a delay for the other packets"),
        ("delay 10ms gap 0", "gap", 16, "expected a whole number of packets from 1, like `gap 5`"),
        ("delay 10ms loss 1% ecn corrupt 1%", "corrupt", 24, "give `corrupt` or `loss`, not both"),
        ("delay 10ms ecn", "ecn", 12, "`ecn` marks packets a loss model would drop"),
        ("delay 10ms slot 5ms 2ms", "slot", 21, "the longest slot \"2ms\" is shorter than the shortest \"5ms\""),
        ("slot soon", "slot", 6, "\"soon\" is not a slot time; expected `slot MIN [MAX]`"),
        ("slot 1ms 2x", "slot", 10, "\"2x\" is not a time"),
        ("slot distribution lognormal 1ms 1ms", "slot distribution", 19, "distribution `lognormal` is not known"),
        ("slot distribution normal 1ms 0", "slot jitter", 30, "needs a positive jitter"),
        ("slot distribution normal 1ms", "slot", 1, "`slot` needs a jitter after the slot time"),
        ("slot distribution normal", "slot", 1, "`slot` needs the mean slot time and its jitter"),
        ("slot 1ms packets 0", "slot packets", 18, "\"0\" is not a number of packets"),
        ("slot 1ms packets", "packets", 10, "`packets` needs a number of packets per slot"),
        ("slot 1ms bytes 3q", "slot bytes", 16, "\"3q\" is not a size"),
        ("slot 1ms bytes 4g", "slot bytes", 16, "\"4g\" is not a size"),
        ("slot", "slot", 1, "`slot` needs slot times"),
        ("delay 10ms seed 7", "seed", 12, "give `--seed S` instead"),
        ("delay 10ms loss 1% 125%", "loss correlation", 20, "\"125%\" is not a loss correlation"),
        ("delay 10ms 5ms 1x", "delay correlation", 16, "\"1x\" is not a delay correlation"),
        ("rate 1mbit 20 -5", "rate", 15, "\"-5\" is not a cell size"),
        ("loss state 60% 50% 60%", "loss state", 6, "p13 + p14 and p31 + p32 must each be at most 100%"),
        ("duplicate 1% duplicate 2%", "duplicate", 14, "given twice"),
        ("loss 1% corrupt 1%", "corrupt", 9, "give `corrupt` or `loss`, not both"),
        ("rate fast", "rate", 6, "\"fast\" is not a rate; expected tc's spelling, like 10mbit"),
        ("delay soon", "delay", 7, "\"soon\" is not a time; expected tc's spelling, like 50ms"),
        ("loss 150%", "loss", 6, "expected one between 0% and 100%, like 1%"),
        ("limit -3", "limit", 7, "expected a positive whole number, like `limit 100`"),
        ("limit 100000000000", "limit", 7, "100000000000 packets is too large: at most 4294967295"),
        ("rate 10mbps", "rate", 6, "tc reads \"10mbps\" as 10 megabytes/s (80 Mbit/s), others as 10 Mbit/s"),
        ("delay 1ms rate 5Mbps", "rate", 16, "tc reads \"5Mbps\" as 5 megabytes/s (40 Mbit/s), others as 5 Mbit/s"),
        ("delay", "delay", 1, "`delay` needs a time, like `delay 50ms`"),
        ("delay 10ms 1ms distribution lognormal", "distribution", 29, "distribution `lognormal` is not known"),
        ("delay 1ms delay 2ms", "delay", 11, "`delay` is given twice"),
        ("jitter 5ms", "jitter", 1, "unknown netem option `jitter`; expected one of rate, delay"),
    ] {
        let err = parse_netem(spec).unwrap_err();
        let msg = err.to_string();
        println!("{msg}");
        assert_eq!(err.kind(), ErrorKind::Netem);
        assert_eq!(err.key_path(), key, "{msg}");
        assert_eq!((err.line(), err.column()), (Some(1), Some(column)), "{msg}");
        assert!(msg.starts_with(&format!("netem:1:{column}: `{key}`: ")), "{msg}");
        assert!(msg.contains(expected), "{expected:?} missing from {msg}");
    }
}

#[test]
fn two_host_scenario() {
    let s = scenario_from_netem("rate 10mbit delay 50ms 10ms loss 1%", None).unwrap();
    s.check().unwrap();
    assert_eq!(
        s.hosts.iter().map(|h| (h.name.as_str(), h.address.unwrap().to_string())).collect::<Vec<_>>(),
        [("fixed", "10.0.0.1".to_string()), ("mobile", "10.0.1.1".to_string())]
    );
    let (down, up) = (&s.links[0].downlink[0], &s.links[0].uplink[0]);
    assert_eq!((down.name.as_str(), up.name.as_str()), ("netem-down", "netem-up"));
    // The uplink: the same delay and jitter, no rate limit, no loss.
    assert_eq!((up.delay, &up.jitter), (down.delay, &down.jitter));
    assert_eq!((up.rate, &up.error), (None, &ErrorModel::None));
    assert!(s.workload.udp.is_empty());
    // It reads back from its TOML form.
    let text = toml::to_string(&s).unwrap();
    assert_eq!(parse("netem.toml", &text, Path::new(".")).unwrap(), s);

    let s = scenario_from_netem("delay 300ms", Some("delay 20ms loss 2%")).unwrap();
    assert_eq!(s.links[0].uplink[0].delay, Duration::from_millis(20));
    assert_eq!(s.links[0].uplink[0].error, ErrorModel::Packet(p(0.02)));
    let err = scenario_from_netem("delay 300ms", Some("loss 2% reorder 5%")).unwrap_err();
    assert!(err.to_string().starts_with("netem (uplink):1:9: `reorder`"), "{err}");
}

/// Every tc-netem(8) option beyond rate, delay, loss, corrupt and limit,
/// with tc's defaults (iproute2 `tc/q_netem.c`).
#[test]
fn every_netem_option_maps_to_a_stage_key() {
    use squall_link::{Correlation, CorrelationGenerator, Duplicate, FourState, RateOverhead, SendEarly};
    let netem = |c| Some(Correlation { correlation: p(c), generator: CorrelationGenerator::Netem });
    let s = parse_netem("delay 100ms 10ms 25% loss 1% 30% ecn duplicate 2% 40% reorder 25% 50% gap 3").unwrap();
    assert_eq!(s.jitter_correlation, netem(0.25));
    assert_eq!((s.error.clone(), s.error_correlation), (ErrorModel::Packet(p(0.01)), netem(0.3)));
    assert!(s.error_ecn);
    assert_eq!(s.duplicate, Some(Duplicate { probability: p(0.02), correlation: netem(0.4) }));
    assert_eq!(s.send_early, Some(SendEarly { probability: p(0.25), correlation: netem(0.5), gap: 3 }));
    assert!(s.reorder, "packets sent early overtake");
    s.validate().unwrap();
    // A correlation of 0 is none; `reorder` alone has gap 1.
    let s = parse_netem("delay 10ms reorder 5% 0").unwrap();
    assert_eq!(s.send_early, Some(SendEarly { probability: p(0.05), correlation: None, gap: 1 }));
    // `gap` alone: every Nth packet at once (the kernel's reorder = 100 %).
    let s = parse_netem("gap 5 delay 10ms").unwrap();
    assert_eq!(s.send_early, Some(SendEarly { probability: p(1.0), correlation: None, gap: 5 }));
    // Four-state with tc's defaults: p31 = 1 − p13, p32 = 0, p23 = 1, p14 = 0.
    let s = parse_netem("loss state 1%").unwrap();
    assert_eq!(
        s.error,
        ErrorModel::FourState(FourState { p13: p(0.01), p31: p(0.99), p32: p(0.0), p23: p(1.0), p14: p(0.0) })
    );
    let s = parse_netem("loss state 1% 30% 20% 40% 0.5%").unwrap();
    assert_eq!(
        s.error,
        ErrorModel::FourState(FourState { p13: p(0.01), p31: p(0.3), p32: p(0.2), p23: p(0.4), p14: p(0.005) })
    );
    // Rate overheads, the last ones optional and signed.
    let s = parse_netem("rate 5kbit 20 100 5").unwrap();
    assert_eq!(s.rate_overhead, Some(RateOverhead { packet: 20, cell_size: 100, cell: 5 }));
    let s = parse_netem("rate 1gbit -14").unwrap();
    assert_eq!(s.rate_overhead, Some(RateOverhead { packet: -14, cell_size: 0, cell: 0 }));
    assert_eq!(parse_netem("rate 1gbit").unwrap().rate_overhead, None);
}

/// The new keys in a scenario file, and their located errors.
#[test]
fn netem_keys_in_a_scenario_file() {
    let file = |stage: &str| {
        format!(
            "name = \"n\"\nduration = \"1 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\naddress = \"10.0.1.1\"\n[[links]]\nbetween = [\"a\", \"b\"]\n[[links.downlink]]\nname = \"s\"\n{stage}\n[[links.uplink]]\nname = \"u\"\n"
        )
    };
    let ok = file(
        "delay = \"10 ms\"\njitter = { kind = \"uniform\", low = \"0 ms\", high = \"5 ms\" }\njitter_correlation = { correlation = \"25%\" }\nerror = { four_state = { p13 = \"1%\", p31 = \"30%\" } }\nduplicate = { probability = \"1%\" }\nsend_early = { probability = \"25%\", gap = 5 }\nreorder = true\nrate = \"5 kbit/s\"\nrate_overhead = { packet = 20, cell_size = 100, cell = 5 }",
    );
    let s = parse("ok.toml", &ok, Path::new(".")).unwrap();
    let d = &s.links[0].downlink[0];
    assert_eq!(d.send_early.as_ref().map(|e| e.gap), Some(5));
    assert!(matches!(d.error, ErrorModel::FourState(_)));
    for (stage, key) in [
        ("send_early = { probability = \"25%\" }", "send_early"),
        ("send_early = { probability = \"25%\", gap = 0 }\nreorder = true", "send_early.gap"),
        ("rate_overhead = { packet = 20 }", "rate_overhead"),
        ("error_ecn = true", "error_ecn"),
        ("error = { bit = 1e-5 }\nerror_correlation = { correlation = \"25%\" }", "error_correlation"),
        ("error = { four_state = { p13 = \"60%\", p31 = \"30%\", p14 = \"50%\" } }", "error.four_state"),
    ] {
        let err = parse("bad.toml", &file(stage), Path::new(".")).unwrap_err();
        assert!(err.to_string().contains(&format!("`links[0].downlink[0].{key}`")), "{key}: {err}");
    }
}

/// tc-netem(8)'s `slot` forms (iproute2 `tc/q_netem.c`): MAX defaults to
/// MIN, `packets` and `bytes` in either order after the times only as tc
/// reads them (packets first), sizes in tc's units (`get_size`: k = 1024).
#[test]
fn slot_forms() {
    use squall_link::{Bytes, NetemTable, Slot};
    let ms = Duration::from_millis;
    let s = parse_netem("slot 800us 1ms packets 32 bytes 64k").unwrap();
    assert_eq!(
        s.slot,
        Some(Slot {
            interval: Distribution::Uniform { low: Duration::from_micros(800), high: ms(1) },
            packets: Some(32),
            bytes: Some(Bytes(65_536)),
        })
    );
    s.validate().unwrap();
    let s = parse_netem("delay 10ms slot 2ms").unwrap();
    assert_eq!(s.slot, Some(Slot { interval: Distribution::Constant { value: ms(2) }, packets: None, bytes: None }));
    assert_eq!(s.delay, ms(10));
    let s = parse_netem("slot distribution pareto 1ms 500us bytes 1500 rate 1mbit").unwrap();
    assert_eq!(
        s.slot,
        Some(Slot {
            interval: Distribution::NetemTable {
                table: Some(NetemTable::Pareto),
                file: None,
                entries: Vec::new(),
                mu: ms(1),
                sigma: Duration::from_micros(500)
            },
            packets: None,
            bytes: Some(Bytes(1500)),
        })
    );
    assert_eq!(s.rate, Some(Rate::from_bits_per_sec(1_000_000)));
    // The scenario key reads back what the line made.
    let sc = scenario_from_netem("slot 8ms 12ms packets 4", None).unwrap();
    let text = toml::to_string(&sc).unwrap();
    assert!(text.contains("slot"), "{text}");
    assert_eq!(parse("netem.toml", &text, Path::new(".")).unwrap(), sc);
}

/// A scenario's `slot` key: located errors for a budget of 0.
#[test]
fn slot_key_errors_are_located() {
    let text = |slot: &str| {
        format!(
            "name = \"s\"\nduration = \"1 s\"\n[[hosts]]\nname = \"a\"\naddress = \"10.0.0.1\"\n[[hosts]]\nname = \"b\"\naddress = \"10.0.1.1\"\n[[links]]\nbetween = [\"a\", \"b\"]\n[[links.downlink]]\nname = \"d\"\nslot = {slot}\n[[links.uplink]]\nname = \"u\"\n"
        )
    };
    for (slot, expected) in [
        (
            "{ interval = \"1 ms\", packets = 0 }",
            "slot.toml:13:29: `links[0].downlink[0].slot.packets`: must be at least 1 packet",
        ),
        ("{ interval = \"1 ms\", bytes = \"0 B\" }", "`links[0].downlink[0].slot.bytes`: must be at least 1 B"),
        ("{ interval = \"1 ms\", pakets = 3 }", "pakets"),
        ("{ packets = 3 }", "interval"),
    ] {
        let err = parse("slot.toml", &text(slot), Path::new(".")).unwrap_err().to_string();
        assert!(err.contains(expected), "{expected:?} missing from {err}");
        assert!(err.starts_with("slot.toml:13:"), "{err}");
    }
    parse("slot.toml", &text("{ interval = \"1 ms\", packets = 2 }"), Path::new(".")).unwrap();
}

/// Every `tc qdisc ... netem ...` line of tc-netem(8)'s EXAMPLES (iproute2
/// `man/man8/tc-netem.8` at ee2a4a8, 2026-06-28), pasted whole, and lines
/// people paste from elsewhere, with the stage each gives, worked out by
/// hand from the man page and `tc/q_netem.c` (a delay D ± J uniform is
/// D − J fixed plus [0, 2J]; `distribution normal` D − 3J plus N(3J, J)).
#[test]
fn tc_command_lines_resolve_to_netem_meanings() {
    use squall_link::{Correlation, CorrelationGenerator, Duplicate, FourState, RateOverhead, SendEarly, Slot};
    let ms = Duration::from_millis;
    let uniform = |low: u64, high: u64| Some(Distribution::Uniform { low: ms(low), high: ms(high) });
    let normal = |mean: u64, sd: u64| Some(Distribution::Normal { mean: ms(mean), std_dev: ms(sd) });
    let netem = |c| Some(Correlation { correlation: p(c), generator: CorrelationGenerator::Netem });
    let base = |line: &str| {
        let s = parse_netem(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        s.validate().unwrap_or_else(|e| panic!("{line}: {e}"));
        if !line.contains("limit") {
            assert_eq!(s.queue.packets, Some(1000), "{line}: netem's default limit");
        }
        s
    };
    // The man page's EXAMPLES, in its order.
    let s = base("tc qdisc add dev eth0 root netem delay 100ms");
    assert_eq!((s.delay, &s.jitter, s.reorder), (ms(100), &None, false));
    let s = base("tc qdisc change dev eth0 root netem delay 100ms 10ms 25%");
    assert_eq!((s.delay, &s.jitter, s.jitter_correlation), (ms(90), &uniform(0, 20), netem(0.25)));
    let s = base("tc qdisc change dev eth0 root netem delay 100ms 20ms distribution normal");
    assert_eq!((s.delay, &s.jitter, s.reorder), (ms(40), &normal(60, 20), true));
    let s = base("tc qdisc change dev eth0 root netem loss 0.1%");
    assert_eq!((&s.error, s.error_correlation, s.error_mode), (&ErrorModel::Packet(p(0.001)), None, ErrorMode::Drop));
    let s = base("tc qdisc change dev eth0 root netem duplicate 1%");
    assert_eq!(s.duplicate, Some(Duplicate { probability: p(0.01), correlation: None }));
    let s = base("tc qdisc change dev eth0 root netem loss 0.3% 25%");
    assert_eq!((&s.error, s.error_correlation), (&ErrorModel::Packet(p(0.003)), netem(0.25)));
    let s = base("tc qdisc change dev eth0 root netem gap 5 delay 10ms");
    assert_eq!((s.delay, s.reorder), (ms(10), true));
    assert_eq!(s.send_early, Some(SendEarly { probability: p(1.0), correlation: None, gap: 5 }));
    let s = base("tc qdisc change dev eth0 root netem delay 10ms reorder 25% 50%");
    assert_eq!(s.send_early, Some(SendEarly { probability: p(0.25), correlation: netem(0.5), gap: 1 }));
    let s = base("tc qdisc change dev eth0 root netem delay 100ms 75ms");
    assert_eq!((s.delay, &s.jitter, s.reorder), (ms(25), &uniform(0, 150), true));
    // D < J: the fixed part is 0 and the range [0, D + J].
    let s = base("tc qdisc add dev eth0 root handle 1: netem delay 10ms 100ms");
    assert_eq!((s.delay, &s.jitter), (ms(0), &uniform(0, 110)));
    let s = base("tc qdisc add dev eth0 root netem rate 5kbit 20 100 5");
    assert_eq!(s.rate, Some(Rate::from_bits_per_sec(5_000)));
    assert_eq!(s.rate_overhead, Some(RateOverhead { packet: 20, cell_size: 100, cell: 5 }));
    // The netem under a tbf, with the shell's line continuation.
    let s = base("tc qdisc add dev eth0 parent 30:1 handle 31: \\\n   netem delay 200ms 10ms distribution normal");
    assert_eq!((s.delay, &s.jitter), (ms(170), &normal(30, 10)));

    // Lines pasted from elsewhere.
    let s = base("sudo tc qdisc replace dev wlan0 root netem delay 100ms 20ms 25% distribution normal");
    assert_eq!((s.delay, &s.jitter, s.jitter_correlation), (ms(40), &normal(60, 20), netem(0.25)));
    let s = base("tc qdisc add dev eth0 root netem rate 1mbit 20 100 5");
    assert_eq!(s.rate, Some(Rate::from_bits_per_sec(1_000_000)));
    assert_eq!(s.rate_overhead, Some(RateOverhead { packet: 20, cell_size: 100, cell: 5 }));
    let s = base("tc qdisc add dev eth0 root netem loss gemodel 1% 10% 70% 0.1%");
    let ErrorModel::GilbertElliott(GilbertElliott { p: gp, r, h, k }) = s.error else { panic!("{:?}", s.error) };
    assert_eq!((gp, r), (p(0.01), p(0.1)));
    assert!((h.get() - 0.3).abs() < 1e-12 && (k.get() - 0.999).abs() < 1e-12, "{h:?} {k:?}");
    let s = base("tc qdisc add dev eth0 root netem loss state 1% 30% 20% 40% 0.5%");
    assert_eq!(
        s.error,
        ErrorModel::FourState(FourState { p13: p(0.01), p31: p(0.3), p32: p(0.2), p23: p(0.4), p14: p(0.005) })
    );
    let s = base("tc qdisc add dev eth0 root netem delay 10ms loss 1% ecn");
    assert_eq!((&s.error, s.error_ecn), (&ErrorModel::Packet(p(0.01)), true));
    let s = base("tc qdisc add dev eth0 root netem corrupt 0.1%");
    assert_eq!((&s.error, s.error_mode), (&ErrorModel::Packet(p(0.001)), ErrorMode::Corrupt));
    let s = base("tc qdisc add dev eth0 root netem slot 800us 1ms packets 32 bytes 64k");
    assert_eq!(
        s.slot,
        Some(Slot {
            interval: Distribution::Uniform { low: Duration::from_micros(800), high: ms(1) },
            packets: Some(32),
            bytes: Some(squall_link::Bytes(65_536)),
        })
    );
    let s = base("tc qdisc add dev eth0 root netem delay 100ms 10ms reorder 25% 50% gap 5 limit 50");
    assert_eq!(s.send_early, Some(SendEarly { probability: p(0.25), correlation: netem(0.5), gap: 5 }));
    assert_eq!(s.queue.packets, Some(50), "limit 50");
}

/// The EXAMPLES' lines that set up other qdiscs (`pfifo`, `prio`, `tbf`)
/// or a filter carry no netem options: refused at the word that is not
/// netem, saying what squall reads instead (docs/guide netem-mahimahi.md).
#[test]
fn tc_command_lines_without_netem_are_located_errors() {
    for (line, key, column, expected) in [
        ("tc qdisc add dev eth0 parent 1:1 pfifo limit 1000", "pfifo", 34, "`pfifo` is not netem"),
        ("tc qdisc add dev eth0 root handle 1: prio", "prio", 38, "`prio` is not netem"),
        (
            "tc qdisc add dev eth0 parent 1:3 handle 30: \\\n   tbf rate 20kbit buffer 1600 limit  3000",
            "tbf",
            4,
            "`tbf` is not netem",
        ),
        ("tc filter add dev eth0 protocol ip parent 1:0 prio 3 u32", "filter", 4, "sets no netem options"),
        ("tc qdisc del dev eth0 root", "del", 10, "expected add, change or replace"),
        ("tc qdisc add dev eth0 root", "root", 23, "ends before `netem`"),
        ("tc qdisc add dev", "dev", 14, "`dev` needs a value after `dev`"),
        ("sudo ip link", "ip", 6, "expected `tc` after `sudo`"),
    ] {
        let err = parse_netem(line).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.key_path(), key, "{msg}");
        assert_eq!(err.column(), Some(column), "{msg}");
        assert!(msg.contains(expected), "{expected:?} missing from {msg}");
    }
}
