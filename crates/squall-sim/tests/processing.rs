//! A host's processing delay (`[[hosts]] processing`, issue 31; seed 004's
//! router and host processing delay) in the measured one-way delays of
//! UDP probes, against the configured distribution.

use squall_scenario::Scenario;
use squall_sim::{CaptureDirection, RunOptions, RunResult, run_bounded};

const BOUND: u64 = 50_000_000;

/// Three hosts in a line, 10 ms each way on both links, UDP probes of 100
/// B every `interval` from `a` to `b` through `r`; `processing` goes on
/// the router `r`.
fn scenario(processing: &str, interval: &str, count: u32) -> Scenario {
    let text = text(processing, interval, count);
    squall_scenario::parse("processing.toml", &text, std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// [`scenario`]'s file.
fn text(processing: &str, interval: &str, count: u32) -> String {
    format!(
        r#"
name = "processing"
duration = "200 s"
seed = 3
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "r"
address = "10.0.0.254"
{processing}
[[hosts]]
name = "b"
address = "10.0.1.1"
[[links]]
between = ["a", "r"]
[[links.downlink]]
name = "ar"
delay = "10 ms"
[[links.uplink]]
name = "ra"
delay = "10 ms"
[[links]]
between = ["r", "b"]
[[links.downlink]]
name = "rb"
delay = "10 ms"
[[links.uplink]]
name = "br"
delay = "10 ms"
[[workload.udp]]
name = "probe"
from = "a"
to = "b"
size = "100 B"
interval = "{interval}"
count = {count}
"#
    )
}

fn run(s: &Scenario) -> RunResult {
    let options = RunOptions { record_events: false, record_packets: true, record_captures: true };
    run_bounded(s, s.seed, options, BOUND).expect("run succeeds")
}

/// One-way delays in ms minus the 20 ms of the two links, in send order.
fn processing_ms(r: &RunResult) -> Vec<f64> {
    r.packets.iter().map(|p| (p.delivered.expect("delivered") - p.sent).as_secs_f64() * 1e3 - 20.0).collect()
}

/// A uniform processing delay on [1 ms, 9 ms] at the router's input, with
/// probes 10 ms apart (no probe can catch up with the one before): each
/// one-way delay is 20 ms + a draw. Checks: every delay in [21, 29] ms;
/// the mean of the extra within ±0.1 ms of 5 ms (3σ: σ of the mean over
/// 5 000 draws is 8/√12/√5000 = 0.033 ms); the Kolmogorov–Smirnov distance to the uniform CDF below 1.63/√n
/// (the 1% critical value). Without the key, every delay is 20 ms exactly.
#[test]
fn input_processing_delay_shows_its_distribution_in_the_one_way_delays() {
    let plain = run(&scenario("", "10 ms", 5000));
    assert!(processing_ms(&plain).iter().all(|d| d.abs() < 1e-9));

    let r = run(&scenario(
        r#"processing = { delay = { kind = "uniform", low = "1 ms", high = "9 ms" }, at = "input" }"#,
        "10 ms",
        5000,
    ));
    let mut extra = processing_ms(&r);
    assert_eq!(extra.len(), 5000);
    assert!(extra.iter().all(|d| (1.0 - 1e-9..=9.0 + 1e-9).contains(d)), "a delay outside [21, 29] ms");
    let mean = extra.iter().sum::<f64>() / extra.len() as f64;
    assert!((mean - 5.0).abs() < 0.1, "mean processing delay {mean} ms, configured 5 ms");
    extra.sort_by(f64::total_cmp);
    let n = extra.len() as f64;
    let ks = extra
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let cdf = (d - 1.0) / 8.0;
            (cdf - i as f64 / n).abs().max((cdf - (i + 1) as f64 / n).abs())
        })
        .fold(0.0, f64::max);
    assert!(ks < 1.63 / n.sqrt(), "KS distance {ks} to uniform(1 ms, 9 ms)");
}

/// At the output, a constant 3 ms: the router forwards after it, so every
/// delay is 23 ms exactly, and the router's capture shows the packet
/// arriving at t and leaving at t + 3 ms (tcpdump on its interfaces).
#[test]
fn output_processing_delay_holds_forwarded_packets_and_captures_show_it() {
    let r = run(&scenario(r#"processing = { delay = "3 ms", at = "output" }"#, "10 ms", 100));
    assert!(processing_ms(&r).iter().all(|d| (d - 3.0).abs() < 1e-9), "{:?}", &processing_ms(&r)[..5]);
    let router = r.captures.iter().find(|c| c.host == "r").expect("router capture");
    let received: Vec<_> = router
        .packets
        .iter()
        .filter(|(_, d, _)| *d == CaptureDirection::Received)
        .map(|(t, _, p)| (p.id, *t))
        .collect();
    let sent: Vec<_> =
        router.packets.iter().filter(|(_, d, _)| *d == CaptureDirection::Sent).map(|(t, _, p)| (p.id, *t)).collect();
    assert_eq!(received.len(), 100);
    assert_eq!(sent.len(), 100);
    for ((id_in, t_in), (id_out, t_out)) in received.iter().zip(&sent) {
        assert_eq!(id_in, id_out);
        assert_eq!((*t_out - *t_in).as_nanos(), 3_000_000);
    }
}

/// The order rule: with a delay uniform on [0, 20 ms] and probes 1 ms
/// apart, draws would reorder most probes; the host keeps a flow's order
/// (a packet leaves no earlier than the one before it), so the probes
/// arrive in send order, each no earlier than its own draw allows and no
/// later than the latest possible (20 ms + 20 ms).
#[test]
fn processing_keeps_a_flows_order() {
    let r =
        run(&scenario(r#"processing = { delay = { kind = "uniform", low = "0 ms", high = "20 ms" } }"#, "1 ms", 2000));
    let arrivals: Vec<_> = r.packets.iter().map(|p| p.delivered.expect("delivered")).collect();
    assert!(arrivals.windows(2).all(|w| w[0] <= w[1]), "probes arrived out of order");
    let extra = processing_ms(&r);
    assert!(extra.iter().all(|d| (-1e-9..=20.0 + 1e-9).contains(d)));
    // Stretched: the mean exceeds the draws' 10 ms.
    let mean = extra.iter().sum::<f64>() / extra.len() as f64;
    assert!(mean > 10.5, "mean {mean} ms");
}

/// A stack delay (`[[hosts]] stack_delay`, the simulator's model of a real
/// stack's turnaround) at the receiving host `b`, from a file of three
/// values (10, 30, 50 µs) beside the scenario, drawn per packet: each
/// one-way delay is 20 ms + one of them (probes 10 ms apart never wait
/// for each other), each value a Binomial(3 000, 1/3) share within 3.5
/// standard errors (1 000 ± 90). The router's processing delay from the
/// same file adds one more draw before it. Before the loader read a host's
/// distribution files, both were refused as empty.
#[test]
fn a_stack_delay_from_a_file_delays_what_the_host_receives() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("turnaround.txt"), "# µs\n10 us\n30 us\n50 us\n").unwrap();
    let text = text("", "10 ms", 3000);
    let file = dir.path().join("stack.toml");
    let with_b = text.replacen(
        "address = \"10.0.1.1\"",
        "address = \"10.0.1.1\"\nstack_delay = { kind = \"empirical\", file = \"turnaround.txt\" }",
        1,
    );
    assert_ne!(with_b, text, "the receiver's address line");
    std::fs::write(&file, &with_b).unwrap();
    let s = squall_scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let extra_us: Vec<f64> = processing_ms(&run(&s)).iter().map(|d| d * 1e3).collect();
    assert_eq!(extra_us.len(), 3000);
    for v in [10.0, 30.0, 50.0] {
        let n = extra_us.iter().filter(|d| (*d - v).abs() < 1e-3).count();
        assert!((n as f64 - 1000.0).abs() <= 3.5 * (3000.0f64 / 3.0 * 2.0 / 3.0).sqrt(), "{n} delays of {v} µs");
    }
    assert!(extra_us.iter().all(|d| [10.0, 30.0, 50.0].iter().any(|v| (d - v).abs() < 1e-3)), "{:?}", &extra_us[..5]);

    let both = with_b.replacen(
        "address = \"10.0.0.254\"",
        "address = \"10.0.0.254\"\nprocessing = { delay = { kind = \"empirical\", file = \"turnaround.txt\" } }",
        1,
    );
    std::fs::write(&file, &both).unwrap();
    let s = squall_scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let extra_us: Vec<f64> = processing_ms(&run(&s)).iter().map(|d| d * 1e3).collect();
    assert!(extra_us.iter().all(|d| (20.0 - 1e-3..=100.0 + 1e-3).contains(d)), "{:?}", &extra_us[..5]);
    let mean = extra_us.iter().sum::<f64>() / extra_us.len() as f64;
    // Two independent draws of mean 30 µs (σ of one 16.33 µs): 60 ± 3.5 · 16.33 · √2 / √3000.
    assert!((mean - 60.0).abs() <= 3.5 * 16.33 * 2f64.sqrt() / 3000f64.sqrt(), "mean extra {mean} µs");
}

/// A bad stack delay is refused at its key: a uniform with low above high.
#[test]
fn a_bad_stack_delay_is_refused_at_its_key() {
    let bad = text("", "10 ms", 10).replacen(
        "address = \"10.0.1.1\"",
        "address = \"10.0.1.1\"\nstack_delay = { kind = \"uniform\", low = \"50 us\", high = \"10 us\" }",
        1,
    );
    let e = squall_scenario::parse("stack.toml", &bad, std::path::Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("hosts[2].stack_delay") && e.contains("low <= high"), "{e}");
    let bad =
        text("", "10 ms", 10).replacen("address = \"10.0.1.1\"", "address = \"10.0.1.1\"\nstack_delay = \"soon\"", 1);
    let e = squall_scenario::parse("stack.toml", &bad, std::path::Path::new(".")).unwrap_err().to_string();
    assert!(e.contains("stack_delay"), "{e}");
}
