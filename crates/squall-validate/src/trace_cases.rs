//! Trace cases of docs/validation.md (issue 30): a trace recorded from a
//! run, replayed, reproduces the run's departures (case 29).

use squall_link::{DeliveryTrace, EventKind, Instant, PacketId, StageConfig};
use squall_scenario::Scenario;
use squall_sim::{RunOptions, RunResult};

use crate::Check;

/// The stage of case 29 whose departures are recorded.
const STAGE: &str = "rec";

/// The stage's departures (packet, instant, IP size) and its drops
/// (packet, instant), from a run's events.
type Record = (Vec<(PacketId, Instant, u32)>, Vec<(PacketId, Instant)>);

fn departures_and_drops(run: &RunResult) -> Record {
    let mut departures = Vec::new();
    let mut drops = Vec::new();
    for e in run.events.iter().filter(|e| &*e.stage == STAGE) {
        match (e.kind, e.packet) {
            (EventKind::Deliver, Some(p)) => departures.push((p, e.time, e.size)),
            (EventKind::Drop(_), Some(p)) => drops.push((p, e.time)),
            _ => {}
        }
    }
    (departures, drops)
}

/// `scenario` with the stage `rec` replaced by a trace stage playing
/// `opportunities_ms` once, with the same queue.
fn replay_scenario(scenario: &Scenario, opportunities_ms: Vec<u64>) -> Scenario {
    let mut replay = scenario.clone();
    for link in &mut replay.links {
        for stage in link.downlink.iter_mut().chain(link.uplink.iter_mut()).filter(|s| s.name == STAGE) {
            let mut trace_stage = StageConfig::named(STAGE);
            trace_stage.queue = stage.queue.clone();
            trace_stage.trace =
                Some(DeliveryTrace { once: true, ..DeliveryTrace::from_millis(opportunities_ms.clone()) });
            *stage = trace_stage;
        }
    }
    replay
}

/// Case 29: each replication's departures from stage `rec` (a rate
/// series stepping 12 → 6 → 3 → 12 Mbit/s, kept busy by 1 500-byte
/// packets, so departures fall on whole milliseconds) are recorded as a
/// Mahimahi trace ([`squall_link::trace::record_departures`], what `squall
/// trace record` writes) and replayed once by a trace stage with the same
/// queue, same seed. By the trace link's rules (one 1 504-byte opportunity
/// serves one 1 500-byte packet that arrived before it), every packet
/// departs at the instant it did and the queue drops the same packets:
/// the departures (packet id and nanosecond) and drops must be identical.
pub fn trace_record(scenario: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    const EVENTS: RunOptions = RunOptions { record_events: true, record_packets: false, record_captures: false };
    let mut recorded = 0usize;
    let mut lines = 0usize;
    let mut differing_departures = 0usize;
    let mut differing_drops = 0usize;
    let mut drops = 0usize;
    let mut failures = Vec::new();
    for run in runs {
        let (departures, dropped) = departures_and_drops(run);
        let opportunities = squall_link::trace::record_departures(departures.iter().map(|&(_, t, s)| (t, s)));
        recorded += departures.len();
        drops += dropped.len();
        lines += opportunities.len();
        let replay = replay_scenario(scenario, opportunities);
        match squall_sim::run(&replay, run.seed, EVENTS) {
            Ok(again) => {
                let (departures_again, dropped_again) = departures_and_drops(&again);
                let n = departures.len().max(departures_again.len());
                differing_departures +=
                    n - departures.iter().zip(&departures_again).filter(|(a, b)| (a.0, a.1) == (b.0, b.1)).count();
                let m = dropped.len().max(dropped_again.len());
                differing_drops += m - dropped.iter().zip(&dropped_again).filter(|(a, b)| a == b).count();
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    let mut checks = vec![
        // 5 s: 1 000 + 500 + 250 + 2 000 = 3 750 departures per replication,
        // less the one in flight at the end.
        Check::within("departures recorded per replication", 3750.0, recorded as f64 / runs.len() as f64, None, 1.0),
        Check::exact("trace lines: one per 1500 B departure", recorded as f64, lines as f64),
        Check::exact("replayed departures at another instant, or missing", 0.0, differing_departures as f64),
        Check::exact("replayed drops that differ", 0.0, differing_drops as f64),
        // 13 Mbit/s of 1 500 B from 0 to 5 s: 5 417 packets sent; at the
        // end the 50-packet queue is full and one packet is on the link.
        Check::within(
            "drops per replication: 5417 sent - 3750 departed - 51 held",
            5417.0 - 3750.0 - 51.0,
            drops as f64 / runs.len() as f64,
            None,
            2.0,
        ),
    ];
    if !failures.is_empty() {
        checks.push(Check::exact(format!("replays that failed: {}", failures.join("; ")), 0.0, failures.len() as f64));
    }
    checks
}
