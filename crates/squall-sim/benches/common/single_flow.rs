//! The single-flow TCP speed benchmark: one bulk NewReno flow, 10 Mbit/s,
//! 30 ms one way, 0.1% packet loss on the data direction, 100 simulated
//! seconds; the figure is delivered segments per wall-clock second.
//!
//! One definition, used by `cargo bench -p squall-sim --bench tcp` (as a
//! module) and by `squall bench tcp` (crates/squall/src/bench_cmd.rs, by
//! `#[path]`). bench/ns3/tcp_bulk.cc runs the same scenario in ns-3: keep
//! the two in step.

use std::time::Instant;

use serde::Serialize;
use squall_link::DropReason;
use squall_scenario::Scenario;
use squall_sim::{RunOptions, run};

/// Payload of a full segment, bytes (the scenario's `mss`).
pub const MSS: u64 = 1460;

/// Every TCP setting that matters is spelled out, even where it is the
/// default, so that the ns-3 twin can be checked against it.
pub const SCENARIO: &str = r#"
name = "bench-single"
duration = "100 s"

[[hosts]]
name = "a"
address = "10.0.0.1"
[[hosts]]
name = "b"
address = "10.0.1.1"

# Downlink: a -> b, the data direction.
[[links]]
between = ["a", "b"]
[[links.downlink]]
name = "down"
rate = "10 Mbit/s"
delay = "30 ms"
queue = { packets = 100 }
error = { packet = "0.1%" }
[[links.uplink]]
name = "up"
rate = "10 Mbit/s"
delay = "30 ms"
queue = { packets = 100 }

[[workload.tcp]]
name = "bulk"
profile = "rfc"
from = "a"
to = "b"
app = { bulk_for = "100 s" }
cc = "newreno"
mss = "1460 B"
rwnd = "1 MB"
window_scaling = true
sack = false
delayed_ack = "200 ms"
min_rto = "1 s"
limited_transmit = true
initial_window = 2
"#;

/// The scenario, parsed and checked.
pub fn scenario() -> Scenario {
    let s: Scenario = toml::from_str(SCENARIO).expect("bench scenario parses");
    s.check().expect("bench scenario checks");
    s
}

/// One timed run.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub seed: u64,
    /// Bytes the receiving application got in order, divided by the MSS.
    pub segments: u64,
    pub delivered_bytes: u64,
    /// Packets of the data direction the link delivered to b (segments,
    /// retransmissions that arrived, SYN and FIN).
    pub link_packets: u64,
    pub retransmitted_segments: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    /// Data-direction packets lost to the error model and to the full
    /// queue.
    pub error_drops: u64,
    pub queue_drops: u64,
    /// delivered_bytes·8 over the flow's time, bits per second.
    pub goodput_bps: f64,
    /// Virtual time at which the run ended, seconds.
    pub sim_seconds: f64,
    /// Wall-clock time of `squall_sim::run`, seconds.
    pub wall_seconds: f64,
    /// CPU time this thread spent in it (Linux schedstat), seconds: less
    /// disturbed than the wall time on a busy machine.
    pub cpu_seconds: Option<f64>,
    /// segments / wall_seconds.
    pub segments_per_wall_second: f64,
}

/// Runs `scenario` once with `seed` and times it.
pub fn measure(scenario: &Scenario, seed: u64) -> Measurement {
    let cpu = thread_cpu_seconds();
    let t = Instant::now();
    let r = run(scenario, seed, RunOptions::default()).expect("single-flow run");
    let wall_seconds = t.elapsed().as_secs_f64();
    let cpu_seconds = thread_cpu_seconds().zip(cpu).map(|(after, before)| after - before);
    let f = &r.tcp_flows[0];
    let segments = f.delivered_bytes / MSS;
    let c2s = r.flows.iter().find(|x| x.name == "bulk:c2s");
    let dropped = |reason| c2s.and_then(|x| x.dropped.get(&reason).copied()).unwrap_or(0);
    Measurement {
        seed,
        segments,
        delivered_bytes: f.delivered_bytes,
        link_packets: c2s.map_or(0, |x| x.delivered_packets),
        retransmitted_segments: f.sender.retransmitted_segments,
        timeouts: f.sender.timeouts,
        fast_retransmits: f.sender.fast_retransmits,
        error_drops: dropped(DropReason::Error),
        queue_drops: dropped(DropReason::QueueOverflow),
        goodput_bps: f.goodput_bps,
        sim_seconds: r.end.as_secs_f64(),
        wall_seconds,
        cpu_seconds,
        segments_per_wall_second: segments as f64 / wall_seconds,
    }
}

/// CPU time of the calling thread so far, seconds (the first field of
/// /proc/thread-self/schedstat, nanoseconds), or None off Linux.
fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

impl std::fmt::Display for Measurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "single NewReno flow, seed {}: {} segments delivered ({:.3} Mbit/s goodput; {} lost to errors, {} to \
             the queue; {} resent, {} fast retransmits, {} timeouts) in {:.3} s simulated, {:.3} s wall{}: {:.0} \
             segments/s",
            self.seed,
            self.segments,
            self.goodput_bps / 1e6,
            self.error_drops,
            self.queue_drops,
            self.retransmitted_segments,
            self.fast_retransmits,
            self.timeouts,
            self.sim_seconds,
            self.wall_seconds,
            self.cpu_seconds.map_or(String::new(), |c| format!(" ({c:.3} s CPU)")),
            self.segments_per_wall_second
        )
    }
}
