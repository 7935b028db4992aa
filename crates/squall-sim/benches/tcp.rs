//! `cargo bench -p squall-sim --bench tcp`: how fast the simulate engine
//! runs TCP (a plain harness; it prints its figures).
//!
//! 1. One bulk NewReno flow, 10 Mbit/s, 30 ms one way, 0.1% packet loss on
//!    the data direction, 100 simulated seconds: delivered data segments
//!    (bytes received in order / MSS) per wall-clock second, best and
//!    median of 5 runs. The scenario is in common/single_flow.rs, shared
//!    with `squall bench tcp`; bench/ns3/ runs it in ns-3 too.
//! 2. 10 000 concurrent bulk flows through one 1 Gbit/s bottleneck for 10
//!    simulated seconds: wall time and the process's peak resident memory
//!    (VmHWM).
//!
//! `BENCH_FLOWS=N` changes the flow count of part 2.

use std::time::Instant;

use squall_scenario::Scenario;
use squall_sim::{RunOptions, run};

#[path = "common/single_flow.rs"]
mod single_flow;

fn scenario(text: &str) -> Scenario {
    let s: Scenario = toml::from_str(text).expect("bench scenario parses");
    s.check().expect("bench scenario checks");
    s
}

const HOSTS: &str = r#"
[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.1.1"
"#;

fn many_flows(n: usize) -> Scenario {
    let mut text = format!(
        r#"
name = "bench-many"
duration = "10 s"
{HOSTS}
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "bottleneck"
rate = "1 Gbit/s"
delay = "10 ms"
queue = {{ packets = 20000 }}
[[links.uplink]]
name = "up"
rate = "1 Gbit/s"
delay = "10 ms"
queue = {{ packets = 20000 }}
"#
    );
    for i in 0..n {
        text.push_str(&format!(
            "[[workload.tcp]]\nname = \"f{i}\"\nprofile = \"rfc\"\nfrom = \"a\"\nto = \"b\"\napp = {{ bulk_for = \"10 s\" }}\n\
             src_port = {}\ndst_port = {}\nstart = \"{} ms\"\n",
            10_000 + i,
            30_000 + i,
            i % 1000
        ));
    }
    scenario(&text)
}

/// Peak resident set of this process, kB (Linux), or None.
fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    // `cargo test --benches` runs this binary with `--bench` absent: keep
    // that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let options = RunOptions::default();

    let s = single_flow::scenario();
    let mut rates = Vec::new();
    for seed in 1..=(if quick { 1 } else { 5 }) {
        let m = single_flow::measure(&s, seed);
        rates.push(m.segments_per_wall_second);
        println!("{m}");
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "single flow: best {:.0}, median {:.0} delivered segments per wall-clock second (target >= 800000)",
        rates[rates.len() - 1],
        rates[rates.len() / 2]
    );

    let n = std::env::var("BENCH_FLOWS").ok().and_then(|v| v.parse().ok()).unwrap_or(if quick { 100 } else { 10_000 });
    let before = vm_hwm_kb();
    let t = Instant::now();
    let s = many_flows(n);
    let built = t.elapsed().as_secs_f64();
    let r = run(&s, 1, options).expect("many-flow run");
    let wall = t.elapsed().as_secs_f64();
    let delivered: u64 = r.tcp_flows.iter().map(|f| f.delivered_bytes).sum();
    let segments: u64 = r.flows.iter().filter(|f| f.name.ends_with(":c2s")).map(|f| f.delivered_packets).sum();
    println!(
        "{n} flows through one 1 Gbit/s bottleneck, 10 s simulated: {:.2} s wall ({built:.2} s building the scenario), \
         {segments} packets delivered ({:.0}/s wall), {:.1} Mbit/s aggregate goodput, peak RSS (VmHWM) {} kB \
         (before: {} kB)",
        wall,
        segments as f64 / wall,
        delivered as f64 * 8.0 / 10.0 / 1e6,
        vm_hwm_kb().map_or("?".into(), |v| v.to_string()),
        before.map_or("?".into(), |v| v.to_string()),
    );
}
