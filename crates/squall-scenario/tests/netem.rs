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
        ("delay 100ms reorder 25% 50%", "reorder", 13, "`reorder` is not supported"),
        ("delay 10ms duplicate 1%", "duplicate", 12, "netem's `duplicate` is not supported"),
        ("delay 10ms loss 1% 25%", "loss correlation", 20, "loss correlation (25%) is not supported"),
        ("delay 10ms 5ms 25%", "delay correlation", 16, "delay correlation (25%) is not supported"),
        ("loss 1% corrupt 1%", "corrupt", 9, "give `corrupt` or `loss`, not both"),
        ("rate fast", "rate", 6, "\"fast\" is not a rate; expected tc's spelling, like 10mbit"),
        ("delay soon", "delay", 7, "\"soon\" is not a time; expected tc's spelling, like 50ms"),
        ("loss 150%", "loss", 6, "expected one between 0% and 100%, like 1%"),
        ("limit -3", "limit", 7, "expected a positive whole number, like `limit 100`"),
        ("limit 100000000000", "limit", 7, "100000000000 packets is too large: at most 4294967295"),
        ("rate 10mbps", "rate", 6, "tc reads \"10mbps\" as 10 megabytes/s (80 Mbit/s), others as 10 Mbit/s"),
        ("delay 1ms rate 5Mbps", "rate", 16, "tc reads \"5Mbps\" as 5 megabytes/s (40 Mbit/s), others as 5 Mbit/s"),
        ("delay", "delay", 1, "`delay` needs a time, like `delay 50ms`"),
        ("delay 10ms 1ms distribution pareto", "distribution", 29, "distribution `pareto` is not supported"),
        ("loss state 1% 2%", "loss state", 6, "four-state loss model is not supported"),
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
        s.hosts.iter().map(|h| (h.name.as_str(), h.address.to_string())).collect::<Vec<_>>(),
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
    let err = scenario_from_netem("delay 300ms", Some("delay 20ms reorder 5%")).unwrap_err();
    assert!(err.to_string().starts_with("netem (uplink):1:12: `reorder`"), "{err}");
}
