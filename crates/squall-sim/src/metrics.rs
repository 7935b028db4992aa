//! Per-flow measures (seed 001 §4): packets and bytes sent and delivered,
//! drops by reason, one-way delay, throughput, inter-arrival time and its
//! standard deviation, and RFC 3550's interarrival jitter.
//!
//! Delays are kept as integer nanoseconds, one per delivered packet, so
//! percentiles are exact; inter-arrival sums are exact integers, so a
//! constant-rate flow has an inter-arrival standard deviation of exactly
//! zero, and a constant delay an RFC 3550 jitter of exactly zero.

use std::collections::BTreeMap;

use squall_link::{DropReason, FlowKey, Instant};

use crate::result::{FlowResult, HopResult};

#[derive(Debug)]
pub(crate) struct FlowMetrics {
    name: String,
    key: FlowKey,
    pub sent_packets: u64,
    /// Copies a stage made of the flow's packets (`duplicate`).
    pub copies: u64,
    sent_bytes: u64,
    pub delivered_packets: u64,
    delivered_bytes: u64,
    pub dropped: [u64; DropReason::ALL.len()],
    corrupted: u64,
    first_send: Option<Instant>,
    last_delivery: Option<Instant>,
    /// One-way delay of every delivered packet, ns, in delivery order.
    delays: Vec<u64>,
    delay_sum: u128,
    /// Inter-arrival times at the destination: count, sum and sum of
    /// squares, ns.
    gaps: u64,
    gap_sum: u128,
    gap_squares: u128,
    /// RFC 3550 interarrival jitter ([`Rfc3550Jitter`]) over the
    /// deliveries in the order they happen.
    jitter: Rfc3550Jitter,
    /// Per path the flow's packets took: (path index, entered, delivered).
    hops: Vec<(u32, u64, u64)>,
}

impl FlowMetrics {
    pub fn new(name: String, key: FlowKey) -> Self {
        FlowMetrics {
            name,
            key,
            sent_packets: 0,
            copies: 0,
            sent_bytes: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
            dropped: [0; DropReason::ALL.len()],
            corrupted: 0,
            first_send: None,
            last_delivery: None,
            delays: Vec::new(),
            delay_sum: 0,
            gaps: 0,
            gap_sum: 0,
            gap_squares: 0,
            jitter: Rfc3550Jitter::default(),
            hops: Vec::new(),
        }
    }

    pub fn key(&self) -> FlowKey {
        self.key
    }

    /// Sets the key's source port if it had none (0: a TCP flow whose
    /// client port is ephemeral, known when it connects).
    pub fn set_src_port(&mut self, port: u16) {
        if self.key.src_port == 0 {
            self.key.src_port = port;
        }
    }

    /// Sets the key's destination port if it had none (0).
    pub fn set_dst_port(&mut self, port: u16) {
        if self.key.dst_port == 0 {
            self.key.dst_port = port;
        }
    }

    #[inline]
    pub fn on_send(&mut self, now: Instant, size: u32) {
        self.sent_packets += 1;
        self.sent_bytes += size as u64;
        self.first_send.get_or_insert(now);
    }

    /// A packet sent at `sent` left the network at `now`.
    #[inline]
    pub fn on_delivery(&mut self, now: Instant, sent: Instant, size: u32, corrupted: bool) {
        self.delivered_packets += 1;
        self.delivered_bytes += size as u64;
        self.corrupted += corrupted as u64;
        let delay = (now - sent).as_nanos();
        self.delays.push(delay);
        self.delay_sum += delay as u128;
        self.jitter.on_transit(delay);
        if let Some(last) = self.last_delivery {
            let gap = (now - last).as_nanos() as u128;
            self.gaps += 1;
            self.gap_sum += gap;
            self.gap_squares += gap * gap;
        }
        self.last_delivery = Some(now);
    }

    /// A packet of the flow entered (`entered`) or left path `path`.
    #[inline]
    pub fn on_hop(&mut self, path: u32, entered: bool) {
        let hop = match self.hops.iter().position(|h| h.0 == path) {
            Some(i) => &mut self.hops[i],
            None => {
                self.hops.push((path, 0, 0));
                self.hops.last_mut().expect("just pushed")
            }
        };
        if entered {
            hop.1 += 1;
        } else {
            hop.2 += 1;
        }
    }

    #[inline]
    pub fn on_drop(&mut self, reason: DropReason) {
        self.dropped[reason.index()] += 1;
    }

    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// The flow's results; `in_flight` is what the ledger still holds,
    /// `path_labels` names each path.
    pub fn finish(mut self, in_flight: u64, path_labels: &[String]) -> FlowResult {
        let secs = |ns: f64| ns / 1e9;
        let n = self.delays.len();
        let (delay_p50, delay_p99) =
            (secs(percentile(&mut self.delays, 0.50) as f64), secs(percentile(&mut self.delays, 0.99) as f64));
        let delay_mean = if n == 0 { 0.0 } else { secs(self.delay_sum as f64 / n as f64) };
        let throughput_bps = match (self.first_send, self.last_delivery) {
            (Some(first), Some(last)) if last > first => {
                self.delivered_bytes as f64 * 8.0 / (last - first).as_secs_f64()
            }
            _ => 0.0,
        };
        let (interarrival_mean, interarrival_sd) = gap_mean_and_std_dev(self.gaps, self.gap_sum, self.gap_squares);
        FlowResult {
            name: self.name,
            key: self.key,
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            delivered_packets: self.delivered_packets,
            delivered_bytes: self.delivered_bytes,
            dropped: DropReason::ALL
                .iter()
                .filter(|r| self.dropped[r.index()] > 0)
                .map(|&r| (r, self.dropped[r.index()]))
                .collect::<BTreeMap<_, _>>(),
            in_flight,
            corrupted: self.corrupted,
            throughput_bps,
            delay_mean,
            delay_p50,
            delay_p99,
            interarrival_sd: secs(interarrival_sd),
            jitter_rfc3550: secs(self.jitter.nanos()),
            interarrival_mean: secs(interarrival_mean),
            hops: self
                .hops
                .iter()
                .map(|&(p, entered, delivered)| HopResult {
                    path: path_labels.get(p as usize).cloned().unwrap_or_default(),
                    entered,
                    delivered,
                })
                .collect(),
        }
    }
}

/// RFC 3550 §6.4.1's interarrival jitter: the mean deviation of the
/// difference D in transit time between successive packets, smoothed
/// with gain 1/16 as the RFC's estimator, J += (|D(i−1,i)| − J)/16, in
/// the order packets arrive (RFC 3550 §A.8 computes it per packet as it
/// is received). The transit time is the one-way delay: sender and
/// receiver share one clock here, so the RFC's unknown clock offset is
/// zero. Constant transit gives exactly zero whatever the spacing of the
/// packets, unlike the standard deviation of inter-arrival times.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rfc3550Jitter {
    last_transit: Option<u64>,
    /// J, nanoseconds.
    jitter: f64,
}

impl Rfc3550Jitter {
    /// The next packet arrived `transit` ns after it was sent.
    #[inline]
    pub fn on_transit(&mut self, transit: u64) {
        if let Some(last) = self.last_transit {
            let d = transit.abs_diff(last) as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// J after the packets so far, nanoseconds (zero before the second).
    pub fn nanos(&self) -> f64 {
        self.jitter
    }
}

/// The `p`-quantile by the nearest-rank method: the smallest sample with
/// at least a fraction `p` of the samples at or below it (the
/// ⌈p·n⌉-th smallest). Zero without samples. Reorders `samples`.
pub(crate) fn percentile(samples: &mut [u64], p: f64) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    let rank = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    *samples.select_nth_unstable(rank - 1).1
}

/// Mean and population standard deviation (ns) from a count, a sum and a
/// sum of squares. Exact in integers while they fit (n·Σx² − (Σx)² ≥ 0),
/// so equal gaps give exactly zero.
fn gap_mean_and_std_dev(n: u64, sum: u128, squares: u128) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    let mean = sum as f64 / nf;
    let exact = (n as u128).checked_mul(squares).zip(sum.checked_mul(sum)).map(|(a, b)| a.saturating_sub(b));
    let variance = match exact {
        Some(v) => v as f64 / (nf * nf),
        None => (squares as f64 / nf - mean * mean).max(0.0),
    };
    (mean, variance.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&mut v, 0.5), 50);
        assert_eq!(percentile(&mut v, 0.99), 99);
        assert_eq!(percentile(&mut v, 1.0), 100);
        assert_eq!(percentile(&mut [7], 0.99), 7);
        assert_eq!(percentile(&mut [], 0.5), 0);
        assert_eq!(percentile(&mut [3, 1, 2], 0.5), 2);
    }

    #[test]
    fn rfc3550_jitter_by_hand() {
        // Transit times 10, 14, 12, 12, 20 ns: |D| = 4, 2, 0, 8.
        // J1 = 4/16 = 0.25; J2 = 0.25 + (2 − 0.25)/16 = 0.359375;
        // J3 = 0.359375 − 0.359375/16 = 0.336914…;
        // J4 = J3 + (8 − J3)/16 = 0.815857…  (RFC 3550 §6.4.1).
        let mut j = Rfc3550Jitter::default();
        let mut seen = Vec::new();
        for t in [10, 14, 12, 12, 20] {
            j.on_transit(t);
            seen.push(j.nanos());
        }
        let j3 = 0.359375 - 0.359375 / 16.0;
        let expected = [0.0, 0.25, 0.359375, j3, j3 + (8.0 - j3) / 16.0];
        for (got, want) in seen.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{seen:?} against {expected:?}");
        }
        assert!((expected[4] - 0.815_857_1).abs() < 1e-6);
    }

    #[test]
    fn rfc3550_jitter_of_constant_delay_is_zero() {
        let mut j = Rfc3550Jitter::default();
        for _ in 0..1000 {
            j.on_transit(50_000_000);
        }
        assert_eq!(j.nanos(), 0.0);
    }

    #[test]
    fn gap_statistics() {
        assert_eq!(gap_mean_and_std_dev(3, 30, 300), (10.0, 0.0));
        // Gaps 1 and 3: mean 2, population std dev 1.
        assert_eq!(gap_mean_and_std_dev(2, 4, 10), (2.0, 1.0));
    }
}
