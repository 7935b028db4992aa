//! Timing accuracy (seed 000 §6): each delivery's scheduled time (the
//! model's `Delivery::at`) against the time squall started writing it to
//! the destination device (the write itself runs the receiving host's
//! stack, and its duration is reported apart: [`WriteTimes`]). Deliveries
//! later than a threshold are counted and the run is flagged, so its
//! results can be discarded.
//!
//! Memory stays the same however long a run is: errors go into a
//! log-linear histogram ([`ErrorHistogram`]) rather than a list. The
//! delivery count, the late count, the maximum and its time are exact;
//! the percentiles are the upper edge of the bucket holding the exact
//! rank, so they are exact below 128 ns and at most 1/128 (0.78%) above
//! the true value beyond, never below it (and never above the maximum).

use serde::Serialize;
use squall_link::{Duration, Instant};

use crate::engine::histogram::ErrorHistogram;
use crate::engine::wakeup::{LateCauses, WakeupReport};

/// How late this machine wakes a sleeping thread: the overshoot of
/// `samples` calls of `std::thread::sleep(1 ms)`, seconds. Linux adds the
/// thread's timer slack (50 µs by default, `prctl(PR_SET_TIMERSLACK)`,
/// kernel/sys.c) and whatever the scheduler and a virtual machine's timer
/// add; a quiet machine shows about 0.06 ms, a shared 2-core KVM guest
/// 1.2 ms at p99. Every deadline squall's data plane or a workload keeps
/// can be missed by as much, which is what a bound on real time may allow.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SleepOvershoot {
    pub samples: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Measures [`SleepOvershoot`] over `samples` sleeps (at least one).
pub fn sleep_overshoot(samples: usize) -> SleepOvershoot {
    let asked = std::time::Duration::from_millis(1);
    let late = (0..samples.max(1)).map(|_| one_sleep(asked)).collect();
    SleepOvershoot::of(late)
}

/// Runs `f` while another thread measures [`SleepOvershoot`] with 1 ms
/// sleeps, for as long as `f` runs (at least one sleep): how late the
/// machine woke threads while `f` ran.
pub fn sleep_overshoot_during<T>(f: impl FnOnce() -> T) -> (T, SleepOvershoot) {
    let asked = std::time::Duration::from_millis(1);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut late = vec![one_sleep(asked)];
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                late.push(one_sleep(asked));
            }
            SleepOvershoot::of(late)
        });
        let result = f();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (result, sampler.join().expect("the sleep sampler does not panic"))
    })
}

fn one_sleep(asked: std::time::Duration) -> f64 {
    let t = std::time::Instant::now();
    std::thread::sleep(asked);
    t.elapsed().saturating_sub(asked).as_secs_f64()
}

impl SleepOvershoot {
    fn of(mut late: Vec<f64>) -> SleepOvershoot {
        late.sort_by(f64::total_cmp);
        let at = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
        SleepOvershoot { samples: late.len(), p50: at(0.5), p99: at(0.99), max: at(1.0) }
    }
}

/// Departure-time errors of one run.
#[derive(Clone, Debug)]
pub struct TimingRecorder {
    threshold: Duration,
    errors: ErrorHistogram,
    late: u64,
    worst_ns: u64,
    worst_at: Instant,
    /// The errors since the live view's last sample; kept only once a
    /// watch asked for one ([`TimingRecorder::take_interval`]), so a run
    /// nobody watches pays nothing for it.
    interval: Option<Box<Interval>>,
}

/// Departure-time errors between two samples of the live view.
#[derive(Clone, Debug, Default)]
struct Interval {
    errors: ErrorHistogram,
    late: u64,
    worst_ns: u64,
}

/// The departure-time error of the deliveries since the previous sample,
/// as the live view shows it (`squall ctl watch`'s `departure_error`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct IntervalTiming {
    pub deliveries: u64,
    /// Percentiles as in [`TimingSummary`], microseconds; the maximum exact.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Deliveries later than the run's late threshold.
    pub late: u64,
}

/// What summary.json reports about timing.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimingSummary {
    pub deliveries: u64,
    /// Departure-time error (actual − scheduled), seconds. The
    /// percentiles come from a histogram: at most 0.78% above the exact
    /// value (exact below 128 ns); the maximum is exact.
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
    /// How late the machine woke the data plane, and how early it chose
    /// to wake ([`crate::engine::wakeup`]).
    pub wakeup: WakeupReport,
    /// Late deliveries by cause.
    pub late_causes: LateCauses,
    /// How long the writes to the hosts' devices took (after each
    /// delivery's departure, which is taken when its write starts).
    pub writes: WriteReport,
}

/// The durations of the data plane's writes to its devices (one write
/// per host and wake-up, a batch): a write to a TUN device runs the
/// receiving host's stack before it returns, so this is the hosts' time,
/// kept apart from the departure error.
#[derive(Clone, Debug)]
pub struct WriteTimes {
    threshold: Duration,
    durations: ErrorHistogram,
    worst_ns: u64,
    slow: u64,
}

/// summary.json's `timing.writes` (seconds).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WriteReport {
    pub writes: u64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    /// Writes that took longer than the run's late threshold: each would
    /// have made its deliveries late had their departure been taken when
    /// the write returned.
    pub slow: u64,
}

impl WriteTimes {
    /// `threshold`: the run's late threshold.
    pub fn new(threshold: Duration) -> Self {
        WriteTimes { threshold, durations: ErrorHistogram::new(), worst_ns: 0, slow: 0 }
    }

    pub fn record(&mut self, write: Duration) {
        self.durations.record(write.as_nanos());
        self.worst_ns = self.worst_ns.max(write.as_nanos());
        self.slow += u64::from(write > self.threshold);
    }

    pub fn report(&self) -> WriteReport {
        let pct = |q: f64| self.durations.quantile(q).min(self.worst_ns) as f64 / 1e9;
        WriteReport {
            writes: self.durations.count(),
            p50: pct(0.5),
            p99: pct(0.99),
            max: self.worst_ns as f64 / 1e9,
            slow: self.slow,
        }
    }
}

impl TimingRecorder {
    pub fn new(threshold: Duration) -> Self {
        TimingRecorder {
            threshold,
            errors: ErrorHistogram::new(),
            late: 0,
            worst_ns: 0,
            worst_at: Instant::ZERO,
            interval: None,
        }
    }

    /// The deliveries' errors since the previous call (none on the first:
    /// the interval starts then), and a new interval.
    pub fn take_interval(&mut self) -> IntervalTiming {
        let i = self.interval.get_or_insert_with(Box::default);
        let pct = |q: f64| i.errors.quantile(q).min(i.worst_ns) as f64 / 1e3;
        let taken = IntervalTiming {
            deliveries: i.errors.count(),
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            max_us: i.worst_ns as f64 / 1e3,
            late: i.late,
        };
        i.errors.clear();
        i.late = 0;
        i.worst_ns = 0;
        taken
    }

    /// Records one delivery scheduled at `scheduled` and written at
    /// `actual`; says whether it was late.
    pub fn record(&mut self, scheduled: Instant, actual: Instant) -> bool {
        let error = actual.saturating_since(scheduled);
        if self.errors.count() == 0 || error.as_nanos() > self.worst_ns {
            self.worst_ns = error.as_nanos();
            self.worst_at = scheduled;
        }
        self.errors.record(error.as_nanos());
        let late = error > self.threshold;
        self.late += u64::from(late);
        if let Some(i) = self.interval.as_mut() {
            i.errors.record(error.as_nanos());
            i.late += u64::from(late);
            i.worst_ns = i.worst_ns.max(error.as_nanos());
        }
        late
    }

    pub fn late(&self) -> u64 {
        self.late
    }

    pub fn summary(&self) -> TimingSummary {
        let pct = |q: f64| self.errors.quantile(q).min(self.worst_ns) as f64 / 1e9;
        let deliveries = self.errors.count();
        TimingSummary {
            deliveries,
            error_p50: pct(0.5),
            error_p99: pct(0.99),
            error_p999: pct(0.999),
            error_max: if deliveries == 0 { 0.0 } else { self.worst_ns as f64 / 1e9 },
            error_max_at: self.worst_at.as_secs_f64(),
            late_threshold: self.threshold.as_secs_f64(),
            late: self.late,
            on_time: self.late == 0,
            wakeup: WakeupReport::default(),
            late_causes: LateCauses::default(),
            writes: WriteReport::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_holds_the_deliveries_since_the_last_sample() {
        let mut t = TimingRecorder::new(Duration::from_micros(1000));
        let at = |us: u64| Instant::ZERO + Duration::from_micros(us);
        // Before the first sample nothing is kept for the interval.
        t.record(at(0), at(5000));
        assert_eq!(t.take_interval().deliveries, 0);
        // 100 deliveries 1..=100 µs late, then one 2 ms late.
        for e in 1..=100 {
            t.record(at(10_000), at(10_000 + e));
        }
        t.record(at(20_000), at(22_000));
        let i = t.take_interval();
        assert_eq!((i.deliveries, i.late), (101, 1));
        assert_eq!(i.max_us, 2000.0);
        // Nearest rank: the 51st of 101 is 51 µs, the 100th is 100 µs
        // (buckets are exact below 128 ns, then 1/128 wide: 51 µs ±0.4).
        assert!((i.p50_us - 51.0).abs() <= 0.4, "{i:?}");
        assert!((i.p99_us - 100.0).abs() <= 0.8, "{i:?}");
        let next = t.take_interval();
        assert_eq!((next.deliveries, next.late, next.max_us), (0, 0, 0.0));
        // The run's own figures keep everything.
        assert_eq!((t.summary().deliveries, t.summary().late), (102, 2));
    }

    #[test]
    fn writes_longer_than_the_threshold_are_slow() {
        let mut w = WriteTimes::new(Duration::from_millis(1));
        assert_eq!(w.report(), WriteReport::default());
        for us in [20, 30, 40, 1000, 1500] {
            w.record(Duration::from_micros(us));
        }
        let r = w.report();
        // 1 000 µs is not longer than the threshold; 1 500 µs is. The
        // median of five is the third, 40 µs (within 1/128).
        assert_eq!((r.writes, r.slow), (5, 1));
        assert!(r.p50 >= 40e-6 && r.p50 <= 40e-6 * (1.0 + 1.0 / 128.0), "{r:?}");
        assert_eq!((r.p99, r.max), (1.5e-3, 1.5e-3));
    }

    #[test]
    fn percentiles_and_late_count() {
        let mut t = TimingRecorder::new(Duration::from_millis(1));
        for i in 1..=1000u64 {
            t.record(Instant::from_secs(1), Instant::from_secs(1) + Duration::from_micros(i));
        }
        assert!(t.record(Instant::from_secs(2), Instant::from_secs(2) + Duration::from_millis(5)));
        let s = t.summary();
        assert_eq!(s.deliveries, 1001);
        // 501 us, to the histogram's resolution (1/128 above).
        assert!(s.error_p50 >= 501e-6 && s.error_p50 <= 501e-6 * (1.0 + 1.0 / 128.0), "{}", s.error_p50);
        assert!((s.error_max - 5e-3).abs() < 1e-12);
        assert_eq!(s.error_max_at, 2.0);
        assert_eq!(s.late, 1);
        assert!(!s.on_time);
    }
}
