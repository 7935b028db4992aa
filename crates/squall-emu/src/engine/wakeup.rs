//! How early the data plane wakes before a delivery is due, and why a
//! delivery was late (issue 34).
//!
//! Seawind (seed 000 §6) woke its simulation process early "by an amount
//! the user calibrated with preliminary runs" and flagged events later than
//! a threshold. Here the loop calibrates itself: every sleep that ends by
//! its timeout tells how late this machine woke the thread (its
//! overshoot: the timer slack, the scheduler, a virtual machine's timer).
//! [`WakeupTuner`] keeps the last [`WINDOW`] overshoots and wakes the loop
//! early by their 99th percentile plus [`MARGIN`], within [`FLOOR`] and
//! [`CAP`], so that 99 in 100 sleeps end before the deadline; the loop
//! spins (reading its devices) for the rest. A quiet machine wakes threads
//! within ~60 µs and gets the floor; a shared 2-core KVM guest, whose
//! timers are 1.2 ms late at p99 (cyclictest), wakes 1.2 ms early. Only a
//! delivery's deadline is worth spinning for: the loop's 10 ms tick, when
//! nothing is due, sleeps to its end, so an idle run costs next to no CPU.
//!
//! [`LateCauses`] says, for each late delivery, what made it late:
//! the wake-up itself, the thread losing its CPU while it spun, the write
//! to the device, or the loop being busy with other work.

use std::str::FromStr;

use serde::Serialize;
use squall_link::Duration;

use crate::engine::histogram::ErrorHistogram;

/// Overshoots kept for the estimate: the last 512 timed sleeps (about 5 s
/// of an idle loop's 10 ms ticks, a fraction of a second under traffic).
pub const WINDOW: usize = 512;
/// The estimate is taken again after this many new sleeps.
const UPDATE_EVERY: usize = 32;
/// Added to the overshoot's p99: the loop's own work between the wake-up
/// and the write.
pub const MARGIN: Duration = Duration::from_micros(20);
/// The least early wake-up: Linux's default timer slack is 50 µs
/// (`prctl(PR_SET_TIMERSLACK)`, kernel/sys.c); the loop sets its own to
/// 1 ns, but a wake-up still costs tens of µs.
pub const FLOOR: Duration = Duration::from_micros(50);
/// The most: it bounds the CPU spent spinning before each deadline.
pub const CAP: Duration = Duration::from_millis(2);
/// Until the first estimate, the fixed default of earlier versions.
const START: Duration = Duration::from_micros(200);

/// `--early-wakeup`: `auto` (the default) or a fixed duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EarlyWakeup {
    #[default]
    Auto,
    Fixed(Duration),
}

impl FromStr for EarlyWakeup {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "auto" {
            return Ok(EarlyWakeup::Auto);
        }
        s.parse::<Duration>()
            .map(EarlyWakeup::Fixed)
            .map_err(|e| format!("{e}; expected `auto` or a duration such as \"200 us\""))
    }
}

impl std::fmt::Display for EarlyWakeup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EarlyWakeup::Auto => f.write_str("auto"),
            EarlyWakeup::Fixed(d) => write!(f, "{d}"),
        }
    }
}

/// Chooses the early wake-up from the overshoots of the loop's sleeps.
#[derive(Clone, Debug)]
pub struct WakeupTuner {
    mode: EarlyWakeup,
    /// The last [`WINDOW`] overshoots (ns, saturated at `u32::MAX`), a ring.
    window: Vec<u32>,
    next: usize,
    since_update: usize,
    current: Duration,
    lowest: Duration,
    highest: Duration,
    /// Every overshoot of the run.
    all: ErrorHistogram,
    worst_ns: u64,
}

impl WakeupTuner {
    pub fn new(mode: EarlyWakeup) -> Self {
        let current = match mode {
            EarlyWakeup::Auto => START,
            EarlyWakeup::Fixed(d) => d,
        };
        WakeupTuner {
            mode,
            window: Vec::with_capacity(WINDOW),
            next: 0,
            since_update: 0,
            current,
            lowest: current,
            highest: current,
            all: ErrorHistogram::new(),
            worst_ns: 0,
        }
    }

    /// How long before a deadline the loop ends its sleep.
    pub fn early(&self) -> Duration {
        self.current
    }

    /// A sleep ended by its timeout `overshoot` after it was asked to.
    pub fn slept(&mut self, overshoot: Duration) {
        let ns = overshoot.as_nanos();
        self.all.record(ns);
        self.worst_ns = self.worst_ns.max(ns);
        let kept = u32::try_from(ns).unwrap_or(u32::MAX);
        if self.window.len() < WINDOW {
            self.window.push(kept);
        } else {
            self.window[self.next] = kept;
        }
        self.next = (self.next + 1) % WINDOW;
        self.since_update += 1;
        if self.mode == EarlyWakeup::Auto && self.since_update >= UPDATE_EVERY {
            self.since_update = 0;
            self.current = Self::choose(&self.window);
            self.lowest = self.lowest.min(self.current);
            self.highest = self.highest.max(self.current);
        }
    }

    /// The p99 of `overshoots` (ns) plus [`MARGIN`], within
    /// [[`FLOOR`], [`CAP`]].
    fn choose(overshoots: &[u32]) -> Duration {
        let mut sorted = overshoots.to_vec();
        let rank = ((sorted.len() - 1) as f64 * 0.99).round() as usize;
        let (_, p99, _) = sorted.select_nth_unstable(rank);
        (Duration::from_nanos(u64::from(*p99)) + MARGIN).clamp(FLOOR, CAP)
    }

    /// What the tuner measured and chose, with the loop's CPU time over
    /// the run's wall time.
    pub fn report(&self, cpu: Duration, wall: Duration) -> WakeupReport {
        let pct = |q: f64| self.all.quantile(q).min(self.worst_ns) as f64 / 1e9;
        let sleeps = self.all.count();
        WakeupReport {
            mode: self.mode.to_string(),
            chosen: self.current.as_secs_f64(),
            lowest: self.lowest.as_secs_f64(),
            highest: self.highest.as_secs_f64(),
            sleeps,
            overshoot_p50: if sleeps == 0 { 0.0 } else { pct(0.5) },
            overshoot_p99: if sleeps == 0 { 0.0 } else { pct(0.99) },
            overshoot_max: self.worst_ns as f64 / 1e9,
            dataplane_cpu: cpu.as_secs_f64(),
            dataplane_cpu_share: if wall.is_zero() { 0.0 } else { cpu.as_secs_f64() / wall.as_secs_f64() },
        }
    }
}

/// summary.json's `timing.wakeup`: the machine's wake-up latency as the
/// data plane saw it, and the early wake-up chosen (seconds).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WakeupReport {
    /// `auto` or the fixed `--early-wakeup`.
    pub mode: String,
    /// The early wake-up in force at the end, and the least and most it
    /// was during the run.
    pub chosen: f64,
    pub lowest: f64,
    pub highest: f64,
    /// Sleeps that ended by their timeout, and how late they ended.
    pub sleeps: u64,
    pub overshoot_p50: f64,
    pub overshoot_p99: f64,
    pub overshoot_max: f64,
    /// The data plane thread's CPU time (user + system, getrusage(2)
    /// RUSAGE_THREAD), and its share of the run's wall time (1 = a core).
    pub dataplane_cpu: f64,
    pub dataplane_cpu_share: f64,
}

/// Why a delivery was late.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LateCause {
    /// The loop's sleep ended after the delivery was due: the machine's
    /// timer woke it late (raise `--early-wakeup`, or see `squall bench
    /// timing` for this machine's figures).
    WakeupLatency,
    /// The loop lost its CPU while it spun towards the deadline
    /// (another thread or the hypervisor ran): see `--pin`.
    Preemption,
    /// Writing the packets to their device took most of the lateness.
    SlowWrite,
    /// The loop was awake and on its CPU but busy with other packets.
    Overload,
}

/// summary.json's `timing.late_causes`: late deliveries by cause.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LateCauses {
    pub wakeup_latency: u64,
    pub preemption: u64,
    pub slow_write: u64,
    pub overload: u64,
}

impl LateCauses {
    pub fn count(&mut self, cause: LateCause) {
        *match cause {
            LateCause::WakeupLatency => &mut self.wakeup_latency,
            LateCause::Preemption => &mut self.preemption,
            LateCause::SlowWrite => &mut self.slow_write,
            LateCause::Overload => &mut self.overload,
        } += 1;
    }

    /// The cause of most late deliveries, in words (none when none was
    /// late).
    pub fn dominant(&self) -> Option<&'static str> {
        [
            (self.wakeup_latency, "the machine woke the data plane late"),
            (self.preemption, "the data plane lost its CPU while waiting to send"),
            (self.slow_write, "writes to the hosts' devices were slow"),
            (self.overload, "the data plane was busy with other packets"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .max_by_key(|(n, _)| *n)
        .map(|(_, what)| what)
    }
}

/// What ended the loop's last wait, for [`classify`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LastWait {
    /// When the wait's sleep ended, if it slept.
    pub woke_at: Option<squall_link::Instant>,
    /// The longest gap between two clock readings while it spun: time the
    /// thread was not running.
    pub longest_spin_gap: Duration,
}

/// Why a delivery due at `scheduled` and written at `actual` is late,
/// given the loop's last wait and how long the write took.
pub fn classify(
    scheduled: squall_link::Instant,
    actual: squall_link::Instant,
    wait: LastWait,
    write: Duration,
) -> LateCause {
    let late = actual.saturating_since(scheduled);
    if write.as_nanos() * 2 >= late.as_nanos() {
        LateCause::SlowWrite
    } else if wait.woke_at.is_some_and(|w| w > scheduled) {
        LateCause::WakeupLatency
    } else if wait.longest_spin_gap.as_nanos() * 2 >= late.as_nanos() {
        LateCause::Preemption
    } else {
        LateCause::Overload
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use squall_link::Instant;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn auto_wakes_early_by_the_overshoots_p99_and_margin() {
        let mut t = WakeupTuner::new(EarlyWakeup::Auto);
        assert_eq!(t.early(), START);
        // 100 sleeps: 99 overshoots of 100 µs, one of 5 ms. The p99 of 100
        // is rank round(99 · 0.99) = 98: 100 µs; + 20 µs.
        for i in 0..100 {
            t.slept(if i == 50 { us(5000) } else { us(100) });
        }
        assert_eq!(t.early(), us(120));
        // A machine whose timers turn late (1.2 ms at every sleep): after a
        // window of them the tuner wakes 1.22 ms early.
        for _ in 0..WINDOW {
            t.slept(us(1200));
        }
        assert_eq!(t.early(), us(1220));
        // Then quiet again (10 µs): the floor.
        for _ in 0..WINDOW {
            t.slept(us(10));
        }
        assert_eq!(t.early(), FLOOR);
        // Worse than the cap: the cap.
        for _ in 0..WINDOW {
            t.slept(Duration::from_millis(30));
        }
        assert_eq!(t.early(), CAP);
        let r = t.report(Duration::from_millis(10), Duration::from_secs(1));
        assert_eq!((r.lowest, r.highest, r.chosen), (FLOOR.as_secs_f64(), CAP.as_secs_f64(), CAP.as_secs_f64()));
        assert_eq!(r.sleeps, 100 + 3 * WINDOW as u64);
        assert_eq!(r.overshoot_max, 0.030);
        assert!((r.dataplane_cpu_share - 0.01).abs() < 1e-12);
    }

    #[test]
    fn a_fixed_early_wakeup_stays() {
        let mut t = WakeupTuner::new("300 us".parse().unwrap());
        for _ in 0..WINDOW {
            t.slept(us(1500));
        }
        assert_eq!(t.early(), us(300));
        assert_eq!(t.report(Duration::ZERO, Duration::ZERO).mode, "300 us");
        assert_eq!("auto".parse::<EarlyWakeup>().unwrap(), EarlyWakeup::Auto);
        let e = "soon".parse::<EarlyWakeup>().unwrap_err();
        assert!(e.contains("expected `auto` or a duration"), "{e}");
    }

    #[test]
    fn late_deliveries_are_put_down_to_their_cause() {
        let at = |n| Instant::ZERO + us(n);
        let none = LastWait::default();
        // Due at 1 000 µs, written at 3 000 µs (2 ms late).
        let write_took = |n| classify(at(1000), at(3000), none, us(n));
        assert_eq!(write_took(1500), LateCause::SlowWrite);
        assert_eq!(write_took(10), LateCause::Overload);
        let woke = LastWait { woke_at: Some(at(2900)), ..none };
        assert_eq!(classify(at(1000), at(3000), woke, us(10)), LateCause::WakeupLatency);
        let early = LastWait { woke_at: Some(at(800)), longest_spin_gap: us(1900) };
        assert_eq!(classify(at(1000), at(3000), early, us(10)), LateCause::Preemption);
        let mut c = LateCauses::default();
        assert_eq!(c.dominant(), None);
        c.count(LateCause::Preemption);
        c.count(LateCause::WakeupLatency);
        c.count(LateCause::WakeupLatency);
        assert_eq!(c.dominant(), Some("the machine woke the data plane late"));
    }
}
