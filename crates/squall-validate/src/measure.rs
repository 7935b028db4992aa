//! Measurements over a run's packet records.

use squall_link::{DropReason, Instant};
use squall_sim::{PacketRecord, RunResult};

/// Seconds from send to delivery of each delivered packet.
pub fn delays(run: &RunResult) -> Vec<f64> {
    run.packets.iter().filter_map(|p| p.delivered.map(|d| (d - p.sent).as_secs_f64())).collect()
}

/// Exact nanoseconds from send to delivery of each delivered packet.
pub fn delays_ns(run: &RunResult) -> Vec<u64> {
    run.packets.iter().filter_map(|p| p.delivered.map(|d| (d - p.sent).as_nanos())).collect()
}

/// Time-average distribution of the number of packets in the network
/// (sent, not yet delivered or dropped), over [first send, last event]:
/// element n is the fraction of time with n packets inside.
pub fn number_in_system(packets: &[PacketRecord]) -> Vec<f64> {
    let mut changes: Vec<(Instant, i64)> = Vec::with_capacity(packets.len() * 2);
    for p in packets {
        changes.push((p.sent, 1));
        if let Some(d) = p.delivered {
            changes.push((d, -1));
        }
    }
    // Departures before arrivals at equal times.
    changes.sort_by_key(|&(t, c)| (t, c));
    let mut time_in: Vec<u128> = Vec::new();
    let mut n: i64 = 0;
    let Some(&(mut last, _)) = changes.first() else { return Vec::new() };
    let start = last;
    for (t, c) in changes {
        let dt = (t - last).as_nanos() as u128;
        let idx = n.max(0) as usize;
        if time_in.len() <= idx {
            time_in.resize(idx + 1, 0);
        }
        time_in[idx] += dt;
        n += c;
        last = t;
    }
    let total = (last - start).as_nanos() as f64;
    time_in.iter().map(|&t| t as f64 / total).collect()
}

/// Fraction of sent packets dropped for `reason`.
pub fn drop_fraction(run: &RunResult, reason: DropReason) -> f64 {
    let sent = run.packets.len() as f64;
    run.packets.iter().filter(|p| p.dropped == Some(reason)).count() as f64 / sent
}

/// Lengths of the runs of consecutive lost packets, in sending order.
pub fn loss_bursts(run: &RunResult) -> Vec<u64> {
    let mut bursts = Vec::new();
    let mut current = 0;
    for p in &run.packets {
        if p.dropped.is_some() {
            current += 1;
        } else if current > 0 {
            bursts.push(current);
            current = 0;
        }
    }
    if current > 0 {
        bursts.push(current);
    }
    bursts
}

/// Delivered IP bits per second in consecutive windows of `window` seconds
/// starting at `from` (whole windows before `until` only).
pub fn windowed_rate(run: &RunResult, from: f64, until: f64, window: f64) -> Vec<f64> {
    let n = ((until - from) / window).floor() as usize;
    let mut bits = vec![0.0; n];
    for p in &run.packets {
        if let Some(d) = p.delivered {
            let t = d.as_secs_f64() - from;
            if t >= 0.0 {
                let i = (t / window) as usize;
                if i < n {
                    bits[i] += p.size as f64 * 8.0;
                }
            }
        }
    }
    bits.into_iter().map(|b| b / window).collect()
}
