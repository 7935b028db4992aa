//! Timing accuracy (seed 000 §6): each delivery's scheduled time (the
//! model's `Delivery::at`) against the time squall actually wrote it to
//! the destination device. Deliveries later than a threshold are counted
//! and the run is flagged, so its results can be discarded.

use serde::Serialize;
use squall_link::{Duration, Instant};

/// Departure-time errors of one run.
#[derive(Clone, Debug)]
pub struct TimingRecorder {
    threshold: Duration,
    errors_ns: Vec<u64>,
    late: u64,
    worst_ns: u64,
    worst_at: Instant,
}

/// What summary.json reports about timing.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimingSummary {
    pub deliveries: u64,
    /// Departure-time error (actual − scheduled), seconds.
    pub error_p50: f64,
    pub error_p99: f64,
    pub error_p999: f64,
    pub error_max: f64,
    /// Scheduled time of the worst delivery, seconds since the start.
    pub error_max_at: f64,
    pub late_threshold: f64,
    /// Deliveries later than `late_threshold`.
    pub late: u64,
    /// True when no delivery was late: the run kept its schedule.
    pub on_time: bool,
}

impl TimingRecorder {
    pub fn new(threshold: Duration) -> Self {
        TimingRecorder { threshold, errors_ns: Vec::new(), late: 0, worst_ns: 0, worst_at: Instant::ZERO }
    }

    /// Records one delivery scheduled at `scheduled` and written at
    /// `actual`; says whether it was late.
    pub fn record(&mut self, scheduled: Instant, actual: Instant) -> bool {
        let error = actual.saturating_since(scheduled);
        if self.errors_ns.is_empty() || error.as_nanos() > self.worst_ns {
            self.worst_ns = error.as_nanos();
            self.worst_at = scheduled;
        }
        self.errors_ns.push(error.as_nanos());
        let late = error > self.threshold;
        self.late += u64::from(late);
        late
    }

    pub fn late(&self) -> u64 {
        self.late
    }

    pub fn summary(&self) -> TimingSummary {
        let mut sorted = self.errors_ns.clone();
        sorted.sort_unstable();
        let pct = |q: f64| -> f64 {
            if sorted.is_empty() {
                return 0.0;
            }
            let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[i] as f64 / 1e9
        };
        TimingSummary {
            deliveries: sorted.len() as u64,
            error_p50: pct(0.5),
            error_p99: pct(0.99),
            error_p999: pct(0.999),
            error_max: sorted.last().map_or(0.0, |&m| m as f64 / 1e9),
            error_max_at: self.worst_at.as_secs_f64(),
            late_threshold: self.threshold.as_secs_f64(),
            late: self.late,
            on_time: self.late == 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_late_count() {
        let mut t = TimingRecorder::new(Duration::from_millis(1));
        for i in 1..=1000u64 {
            t.record(Instant::from_secs(1), Instant::from_secs(1) + Duration::from_micros(i));
        }
        assert!(t.record(Instant::from_secs(2), Instant::from_secs(2) + Duration::from_millis(5)));
        let s = t.summary();
        assert_eq!(s.deliveries, 1001);
        assert!((s.error_p50 - 501e-6).abs() < 1e-9, "{}", s.error_p50);
        assert!((s.error_max - 5e-3).abs() < 1e-12);
        assert_eq!(s.error_max_at, 2.0);
        assert_eq!(s.late, 1);
        assert!(!s.on_time);
    }
}
