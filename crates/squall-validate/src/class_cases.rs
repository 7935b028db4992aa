//! Cases 15–19 of docs/validation.md: the multi-class stage (seed 003
//! §2.2; seed 000 §5.1) — schedulers, AQM and background load.

use std::collections::HashMap;

use squall_analysis::{confidence_interval, mean};
use squall_link::{EventKind, Instant, PacketId, Rate};
use squall_scenario::Scenario;
use squall_sim::RunResult;

use crate::Check;

/// Delivered IP bits per second of flow `name` between `from` and `until`
/// seconds (by delivery time). None when the run has no such flow.
fn flow_rate(run: &RunResult, name: &str, from: f64, until: f64) -> Option<f64> {
    let index = run.flows.iter().position(|f| f.name == name)?;
    let bits: f64 = run
        .packets
        .iter()
        .filter(|p| p.flow == index)
        .filter_map(|p| p.delivered.map(|d| (d.as_secs_f64(), p.size)))
        .filter(|&(t, _)| t >= from && t < until)
        .map(|(_, size)| size as f64 * 8.0)
        .sum();
    Some(bits / (until - from))
}

/// The mean over replications of `flow_rate`, or None if a run lacks the flow.
fn mean_rate(runs: &[RunResult], name: &str, from: f64, until: f64) -> Option<f64> {
    let rates: Option<Vec<f64>> = runs.iter().map(|r| flow_rate(r, name, from, until)).collect();
    rates.filter(|r| !r.is_empty()).map(|r| mean(&r))
}

/// Seconds each delivered packet of flow `name` spent beyond `fixed`
/// seconds (propagation and its own transmission): its queueing delay.
fn queueing_delays(run: &RunResult, name: &str, fixed: f64) -> Vec<f64> {
    let Some(index) = run.flows.iter().position(|f| f.name == name) else { return Vec::new() };
    run.packets
        .iter()
        .filter(|p| p.flow == index)
        .filter_map(|p| p.delivered.map(|d| (d - p.sent).as_secs_f64() - fixed))
        .collect()
}

/// Median time data packets (over 500 B) waited in stage `stage` between
/// entering its queue and starting transmission, counting packets that
/// entered after `after` seconds.
fn median_sojourn(run: &RunResult, stage: &str, after: f64) -> Option<f64> {
    let mut entered = HashMap::<PacketId, Instant>::new();
    let mut waits = Vec::new();
    let after = Instant::ZERO + squall_link::Duration::from_secs_f64(after);
    for e in run.events.iter().filter(|e| &*e.stage == stage && e.size > 500) {
        match (e.kind, e.packet) {
            (EventKind::Enqueue, Some(id)) => {
                entered.insert(id, e.time);
            }
            (EventKind::TransmitStart { frame: 0 }, Some(id)) => {
                if let Some(t) = entered.remove(&id).filter(|&t| t >= after) {
                    waits.push((e.time - t).as_secs_f64());
                }
            }
            _ => {}
        }
    }
    if waits.is_empty() {
        return None;
    }
    waits.sort_by(f64::total_cmp);
    Some(waits[waits.len() / 2])
}

/// A check that cannot be evaluated (a flow or stage missing).
fn missing(what: &str) -> Check {
    Check {
        name: format!("{what} present"),
        expected: 1.0,
        measured: 0.0,
        ci: None,
        tolerance: "exact".into(),
        pass: false,
    }
}

/// Passes when `low` ≤ measured ≤ `high`.
fn in_range(name: impl Into<String>, low: f64, high: f64, measured: f64) -> Check {
    Check {
        name: name.into(),
        expected: (low + high) / 2.0,
        measured,
        ci: None,
        tolerance: format!("in [{low}, {high}]"),
        pass: (low..=high).contains(&measured),
    }
}

/// Passes when measured ≤ `bound`.
fn at_most(name: impl Into<String>, bound: f64, measured: f64) -> Check {
    Check {
        name: name.into(),
        expected: bound,
        measured,
        ci: None,
        tolerance: "at most".into(),
        pass: measured <= bound,
    }
}

/// Passes when measured ≥ `bound`.
fn at_least(name: impl Into<String>, bound: f64, measured: f64) -> Check {
    Check {
        name: name.into(),
        expected: bound,
        measured,
        ci: None,
        tolerance: "at least".into(),
        pass: measured >= bound,
    }
}

fn transmission_s(bytes: u64, rate: &str) -> f64 {
    rate.parse::<Rate>().map_or(f64::NAN, |r| r.transmission_time(bytes).as_secs_f64())
}

/// Case 15, strict priority: the low class gets C − 3 Mbit/s = 7 Mbit/s
/// within 1%; the high class loses nothing and gets its 3 Mbit/s; a high
/// packet's queueing delay (beyond 10 ms propagation and its own 0.4 ms)
/// is at most one low packet's transmission, 1500 B at 10 Mbit/s = 1.2 ms.
pub fn strict_priority(s: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let until = s.duration.as_secs_f64() - 1.0;
    let (Some(low), Some(high)) = (mean_rate(runs, "bulk", 2.0, until), mean_rate(runs, "voice", 2.0, until)) else {
        return vec![missing("flows bulk and voice")];
    };
    let fixed = 0.010 + transmission_s(500, "10 Mbit/s");
    let one_low = transmission_s(1500, "10 Mbit/s");
    let longest = runs.iter().flat_map(|r| queueing_delays(r, "voice", fixed)).fold(0.0, f64::max);
    let voice_drops: u64 = runs
        .iter()
        .flat_map(|r| r.flows.iter().filter(|f| f.name == "voice"))
        .map(|f| f.dropped.values().sum::<u64>())
        .sum();
    vec![
        Check::within_relative("low class rate C - high (Mbit/s)", 7.0, low / 1e6, None, 0.01),
        Check::within_relative("high class rate, all it offers (Mbit/s)", 3.0, high / 1e6, None, 0.01),
        Check::exact("high class packets dropped", 0.0, voice_drops as f64),
        // Nanosecond rounding of the delays: 1 us of slack.
        at_most("high class longest queueing delay (ms)", one_low * 1e3 + 0.001, longest * 1e3),
        // The bound is reached: low packets are on the link when high ones arrive.
        at_least("high class longest queueing delay, half the bound (ms)", one_low * 1e3 / 2.0, longest * 1e3),
    ]
}

/// Case 16, WRR and DRR: with every class backlogged, WRR's packet shares
/// follow the weights 1:2:5 and DRR's byte shares are equal with 200, 700
/// and 1500 B packets; each share within 2% of its expected value.
pub fn wrr_drr(s: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let until = s.duration.as_secs_f64() - 1.0;
    let mut checks = Vec::new();
    let share = |names: &[&str]| -> Option<Vec<f64>> {
        let rates: Option<Vec<f64>> = names.iter().map(|n| mean_rate(runs, n, 2.0, until)).collect();
        let rates = rates?;
        let total: f64 = rates.iter().sum();
        Some(rates.into_iter().map(|r| r / total).collect())
    };
    // All WRR packets are 1000 B, so packet shares are byte shares.
    let Some(wrr) = share(&["wrr-w1", "wrr-w2", "wrr-w5"]) else { return vec![missing("flows wrr-w1/w2/w5")] };
    for (name, weight, got) in [("w1", 1.0, wrr[0]), ("w2", 2.0, wrr[1]), ("w5", 5.0, wrr[2])] {
        checks.push(Check::within_relative(
            format!("WRR share of {name} (weight {weight}/8)"),
            weight / 8.0,
            got,
            None,
            0.02,
        ));
    }
    let Some(drr) = share(&["drr-small", "drr-medium", "drr-large"]) else {
        return vec![missing("flows drr-small/medium/large")];
    };
    for (name, got) in [("200 B", drr[0]), ("700 B", drr[1]), ("1500 B", drr[2])] {
        checks.push(Check::within_relative(format!("DRR byte share of the {name} class"), 1.0 / 3.0, got, None, 0.02));
    }
    let total: f64 =
        ["drr-small", "drr-medium", "drr-large"].iter().filter_map(|n| mean_rate(runs, n, 2.0, until)).sum();
    checks.push(Check::within_relative("DRR link fully used (Mbit/s)", 10.0, total / 1e6, None, 0.01));
    checks
}

/// Case 17, CoDel and PIE: median sojourn of data packets after 5 s
/// (mean over replications; the scenario has one, TCP without random
/// loss being deterministic); CoDel's within [target, 2·target] = [5, 10] ms,
/// PIE's within [target/2, 1.5·target] = [7.5, 22.5] ms, both below a
/// tenth of the tail-drop queue's beside them.
pub fn aqm(_: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let medians = |stage: &str| -> Option<Vec<f64>> { runs.iter().map(|r| median_sojourn(r, stage, 5.0)).collect() };
    let (Some(codel), Some(pie), Some(tail)) = (medians("codel"), medians("pie"), medians("tail")) else {
        return vec![missing("sojourns in stages codel, pie and tail")];
    };
    let ms = |v: &[f64]| confidence_interval(&v.iter().map(|x| x * 1e3).collect::<Vec<_>>(), 0.95);
    let (codel, pie, tail) = (ms(&codel), ms(&pie), ms(&tail));
    vec![
        in_range("CoDel median sojourn (ms), target 5", 5.0, 10.0, codel.mean),
        in_range("PIE median sojourn (ms), target 15", 7.5, 22.5, pie.mean),
        at_least("tail drop median sojourn (ms): the queue fills", 50.0, tail.mean),
        at_most("CoDel median / tail drop median", 0.1, codel.mean / tail.mean),
        at_most("PIE median / tail drop median", 0.1, pie.mean / tail.mean),
    ]
}

/// Case 18, FQ-CoDel: every sparse packet gets through and waits less
/// than 1 ms — at most the bulk packet on the link (1500 B at 100 Mbit/s
/// = 120 us); through one CoDel queue the same packets wait more than
/// 2 ms on average.
pub fn fq_codel(_: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let fixed = 0.010 + transmission_s(200, "100 Mbit/s");
    let one_bulk = transmission_s(1500, "100 Mbit/s");
    let fq: Vec<f64> = runs.iter().flat_map(|r| queueing_delays(r, "fq-sparse", fixed)).collect();
    let single: Vec<f64> = runs.iter().flat_map(|r| queueing_delays(r, "single-sparse", fixed)).collect();
    if fq.is_empty() || single.is_empty() {
        return vec![missing("flows fq-sparse and single-sparse")];
    }
    let sent: u64 =
        runs.iter().flat_map(|r| r.flows.iter().filter(|f| f.name == "fq-sparse")).map(|f| f.sent_packets).sum();
    let longest = fq.iter().copied().fold(0.0, f64::max);
    vec![
        Check::exact("sparse packets delivered through FQ-CoDel", sent as f64, fq.len() as f64),
        at_most("sparse longest queueing delay (ms)", 1.0, longest * 1e3),
        at_most("sparse longest queueing delay (ms), one bulk packet", one_bulk * 1e3 + 0.001, longest * 1e3),
        at_least("sparse mean queueing delay through one CoDel queue (ms)", 2.0, mean(&single) * 1e3),
    ]
}

/// Case 19, background load: CBR at ρ = 0.3 above a saturating flow
/// leaves it 7 Mbit/s within 1% and makes exactly 375 packets/s; the
/// mixed Poisson queues match M/D/1 (Lq 0.45, Wq 0.75 ms) and M/M/1 (Lq
/// 0.9, Wq 1.5 ms) within their confidence intervals.
pub fn background(s: &Scenario, runs: &[RunResult]) -> Vec<Check> {
    let Some(fg) = mean_rate(runs, "flood", 2.0, 29.0) else { return vec![missing("flow flood")] };
    let stage = |r: &RunResult, name: &str| r.stages.iter().find(|st| st.name == name).cloned();
    let mut checks = vec![Check::within_relative("foreground rate (1 - rho) C (Mbit/s)", 7.0, fg / 1e6, None, 0.01)];
    let made = 375.0 * s.duration.as_secs_f64();
    let Some(cbr) = runs.iter().map(|r| stage(r, "cbr")).collect::<Option<Vec<_>>>() else {
        return vec![missing("stage cbr")];
    };
    let worst = cbr.iter().map(|st| (st.background.generated as f64 - made).abs()).fold(0.0, f64::max);
    // The last packet may be due exactly at the end of the run.
    checks.push(at_most("CBR packets generated, largest difference from 375/s", 1.0, worst));
    let (rho, mu) = (0.6, 1000.0);
    for (name, lq, wq) in [
        ("md1", rho * rho / (2.0 * (1.0 - rho)), rho / (2.0 * mu * (1.0 - rho))),
        ("mm1", rho * rho / (1.0 - rho), rho / (mu * (1.0 - rho))),
    ] {
        let Some(stages) = runs.iter().map(|r| stage(r, name)).collect::<Option<Vec<_>>>() else {
            return vec![missing(&format!("stage {name}"))];
        };
        let lqs: Vec<f64> = stages.iter().map(|st| st.mean_queue_len).collect();
        checks.push(Check::ci_contains(format!("{name}: mean number waiting Lq"), lq, confidence_interval(&lqs, 0.95)));
        // Service is 1 ms on average in both stages.
        let waits: Vec<f64> = runs.iter().map(|r| mean(&queueing_delays(r, name, 1.0 / mu)) * 1e3).collect();
        checks.push(Check::ci_contains(
            format!("{name}: real packets' mean wait Wq (ms)"),
            wq * 1e3,
            confidence_interval(&waits, 0.95),
        ));
    }
    checks
}
