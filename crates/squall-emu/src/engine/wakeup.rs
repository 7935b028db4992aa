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
//! Spinning only helps while the thread keeps its CPU. On a shared
//! machine (two cores, a compiler on each) a thread that spins uses up
//! its share and the scheduler runs the others in its place for a whole
//! slice (CFS: a thread that slept is placed ahead on wake-up, one that
//! ran is not; kernel/sched/fair.c `place_entity`), so the longer the
//! spin the later the delivery: there a sleeping loop beat `auto` at its
//! 2 ms cap (`squall bench timing`, load 5–8: p99 1.84 ms against 4.46).
//! The tuner therefore keeps a ceiling on its choice, moved every
//! [`PERIOD`] spins by what the spins and the late deliveries showed:
//! halved when the spins lost more than [`STOLEN_HIGH`] of their time to
//! other threads or most late deliveries were put down to preemption;
//! doubled back (to [`CAP`]) after [`RAISE_AFTER`] periods in a row whose
//! spins kept their CPU (less than [`STOLEN_LOW`] lost) and had no
//! delivery late for preemption. On an idle machine the ceiling stays at
//! the cap and the choice is as before.
//!
//! [`LateCauses`] says, for each late delivery, what made it late:
//! the wake-up itself, the thread losing its CPU while it spun, the
//! wake-up's earlier writes to other devices, or the loop being busy with
//! other work.

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
/// Spins towards a deadline between two moves of the ceiling.
pub const PERIOD: usize = 32;
/// A gap at least this long between two clock readings of a spin is time
/// the thread did not run (one turn of the spin reads every device, a few
/// µs).
pub const STOLEN_GAP: Duration = Duration::from_micros(50);
/// The share of the spins' time lost to other threads above which the
/// ceiling is halved ...
pub const STOLEN_HIGH: f64 = 0.25;
/// ... and below which (with no delivery late for preemption) a period
/// is clean: after [`RAISE_AFTER`] clean periods in a row it is doubled.
pub const STOLEN_LOW: f64 = 0.05;
/// Clean periods in a row before the ceiling is doubled: it comes down in
/// one period and goes up in four, so a machine that takes the CPU from a
/// spin now and then keeps it low.
pub const RAISE_AFTER: u32 = 4;

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
    /// The most the choice may be: lowered while spinning loses the CPU.
    ceiling: Duration,
    /// This period's spins and late deliveries ([`SpinPeriod`]).
    period: SpinPeriod,
    /// The run's spins: their time and the part of it lost.
    spun: Duration,
    stolen: Duration,
    /// Times the ceiling was halved.
    lowered: u64,
    /// Clean periods since the ceiling last moved or a period was not.
    clean: u32,
}

/// What the spins of one period showed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SpinPeriod {
    spins: usize,
    spun: Duration,
    stolen: Duration,
    late_preemption: u64,
    late_wakeup: u64,
}

/// How the ceiling moves at the end of a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    Lower,
    Raise,
    Stay,
}

impl SpinPeriod {
    fn stolen_share(&self) -> f64 {
        if self.spun.is_zero() { 0.0 } else { self.stolen.as_nanos() as f64 / self.spun.as_nanos() as f64 }
    }

    fn verdict(&self) -> Move {
        let share = self.stolen_share();
        if share > STOLEN_HIGH || self.late_preemption > self.late_wakeup {
            Move::Lower
        } else if share < STOLEN_LOW && self.late_preemption == 0 {
            Move::Raise
        } else {
            Move::Stay
        }
    }
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
            ceiling: CAP,
            period: SpinPeriod::default(),
            spun: Duration::ZERO,
            stolen: Duration::ZERO,
            lowered: 0,
            clean: 0,
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
            self.update();
        }
    }

    /// The loop spun `spun` towards a deadline (after its early wake-up),
    /// of which `stolen` went in gaps of at least [`STOLEN_GAP`]: time
    /// the thread did not run.
    pub fn spun(&mut self, spun: Duration, stolen: Duration) {
        self.spun += spun;
        self.stolen += stolen;
        let p = &mut self.period;
        p.spins += 1;
        p.spun += spun;
        p.stolen += stolen;
        if p.spins < PERIOD {
            return;
        }
        let verdict = p.verdict();
        self.period = SpinPeriod::default();
        if self.mode != EarlyWakeup::Auto {
            return;
        }
        match verdict {
            Move::Lower => {
                self.ceiling = Duration::from_nanos(self.ceiling.as_nanos() / 2).max(FLOOR);
                self.lowered += 1;
                self.clean = 0;
            }
            Move::Raise => {
                self.clean += 1;
                if self.clean >= RAISE_AFTER {
                    self.ceiling = (self.ceiling + self.ceiling).min(CAP);
                    self.clean = 0;
                }
            }
            Move::Stay => self.clean = 0,
        }
        self.update();
    }

    /// A delivery was late for `cause`.
    pub fn late(&mut self, cause: LateCause) {
        match cause {
            LateCause::Preemption => self.period.late_preemption += 1,
            LateCause::WakeupLatency => self.period.late_wakeup += 1,
            LateCause::SlowWrite | LateCause::Overload => {}
        }
    }

    /// The choice from the overshoots (the first [`WINDOW`] sleeps
    /// before any: [`START`]), under the ceiling.
    fn update(&mut self) {
        let wanted = if self.window.is_empty() { START } else { Self::choose(&self.window) };
        self.current = wanted.min(self.ceiling);
        self.lowest = self.lowest.min(self.current);
        self.highest = self.highest.max(self.current);
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
            ceiling: self.ceiling.as_secs_f64(),
            ceiling_lowered: self.lowered,
            spun: self.spun.as_secs_f64(),
            spin_stolen_share: if self.spun.is_zero() {
                0.0
            } else {
                self.stolen.as_nanos() as f64 / self.spun.as_nanos() as f64
            },
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
    /// The ceiling on the choice at the end, and how many times it was
    /// halved because spinning lost the CPU.
    pub ceiling: f64,
    pub ceiling_lowered: u64,
    /// The spins towards deadlines: their total time, and the share of
    /// it the thread did not run.
    pub spun: f64,
    pub spin_stolen_share: f64,
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
    /// The wake-up's earlier writes (to other hosts' devices) took most
    /// of the lateness.
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
    /// The gaps of at least [`STOLEN_GAP`] in its spin, summed.
    pub stolen: Duration,
}

/// Why a delivery due at `scheduled` whose write started at `actual` is
/// late, given the loop's last wait and how long the wake-up's earlier
/// writes took (`writing`).
pub fn classify(
    scheduled: squall_link::Instant,
    actual: squall_link::Instant,
    wait: LastWait,
    writing: Duration,
) -> LateCause {
    let late = actual.saturating_since(scheduled);
    if writing.as_nanos() * 2 >= late.as_nanos() {
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

    /// `PERIOD` spins of `spun` µs each losing `stolen` µs.
    fn period(t: &mut WakeupTuner, spun: u64, stolen: u64) {
        for _ in 0..PERIOD {
            t.spun(us(spun), us(stolen));
        }
    }

    #[test]
    fn spinning_that_loses_the_cpu_lowers_the_ceiling() {
        let mut t = WakeupTuner::new(EarlyWakeup::Auto);
        // A machine that wakes threads 1.2 ms late: 1.22 ms early.
        for _ in 0..WINDOW {
            t.slept(us(1200));
        }
        assert_eq!(t.early(), us(1220));
        // Spins that keep their CPU (no gap of 50 µs or more): the
        // ceiling stays at the cap, the choice as before.
        period(&mut t, 1200, 0);
        assert_eq!((t.early(), t.ceiling), (us(1220), CAP));
        // Spins that lose 40 % of their time (> 25 %): the ceiling is
        // halved, 2 ms -> 1 ms, under the 1.22 ms the overshoots want.
        period(&mut t, 1000, 400);
        assert_eq!(t.early(), us(1000));
        period(&mut t, 1000, 400);
        assert_eq!(t.early(), us(500));
        // 10 % lost: between 5 % and 25 %, the ceiling stays.
        period(&mut t, 500, 50);
        assert_eq!(t.early(), us(500));
        // Spins that lose nothing but most late deliveries were
        // preempted (3 against 1 woken late): halved, 250 µs.
        for cause in [LateCause::Preemption, LateCause::Preemption, LateCause::Preemption, LateCause::WakeupLatency] {
            t.late(cause);
        }
        // Slow writes and overload do not count for or against.
        t.late(LateCause::SlowWrite);
        t.late(LateCause::Overload);
        period(&mut t, 500, 0);
        assert_eq!(t.early(), us(250));
        // Woken late more often than preempted, nothing lost:
        t.late(LateCause::Preemption);
        t.late(LateCause::WakeupLatency);
        t.late(LateCause::WakeupLatency);
        period(&mut t, 250, 0);
        // 1 preemption is not more than 2 wake-ups (not lowered), but
        // one preemption makes the period not clean: it stays.
        assert_eq!(t.early(), us(250));
        // Clean periods (1 % lost, under 5 %): the fourth in a row
        // doubles the ceiling, 500 µs; four more each: 1 ms, then the cap,
        // under which the overshoots' 1.22 ms is chosen again.
        for _ in 0..RAISE_AFTER - 1 {
            period(&mut t, 250, 2);
        }
        assert_eq!(t.early(), us(250));
        period(&mut t, 250, 2);
        assert_eq!(t.early(), us(500));
        for _ in 0..RAISE_AFTER {
            period(&mut t, 500, 0);
        }
        assert_eq!(t.early(), us(1000));
        // A period that is not clean starts the count again.
        for _ in 0..RAISE_AFTER - 1 {
            period(&mut t, 1000, 0);
        }
        period(&mut t, 1000, 100);
        assert_eq!(t.early(), us(1000));
        for _ in 0..RAISE_AFTER {
            period(&mut t, 1000, 0);
        }
        assert_eq!((t.early(), t.ceiling), (us(1220), CAP));
        // Lowered without end: the floor, 2 ms / 2^6 = 31.25 µs < 50 µs.
        for _ in 0..10 {
            period(&mut t, 100, 90);
        }
        assert_eq!((t.early(), t.ceiling), (FLOOR, FLOOR));
        let r = t.report(Duration::ZERO, Duration::from_secs(1));
        assert_eq!(r.ceiling_lowered, 3 + 10);
        assert_eq!(r.ceiling, FLOOR.as_secs_f64());
        // Every spin's time and loss, summed over the periods of 32 spins:
        // 1200 + 1000·2 + 500·2 + 250 + 250·4 + 500·4 + 1000·8 + 100·10 =
        // 16 450 µs, lost 400·2 + 50 + 2·4 + 100 + 90·10 = 1 858 µs.
        let spun = 32.0 * 16_450e-6;
        assert!((r.spun - spun).abs() < 1e-9, "{}", r.spun);
        assert!((r.spin_stolen_share - 1858.0 / 16_450.0).abs() < 1e-9, "{}", r.spin_stolen_share);
    }

    #[test]
    fn a_fixed_early_wakeup_stays() {
        let mut t = WakeupTuner::new("300 us".parse().unwrap());
        for _ in 0..WINDOW {
            t.slept(us(1500));
        }
        assert_eq!(t.early(), us(300));
        // Spins that lose their CPU do not move a fixed choice either.
        period(&mut t, 300, 200);
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
        let early = LastWait { woke_at: Some(at(800)), longest_spin_gap: us(1900), ..none };
        assert_eq!(classify(at(1000), at(3000), early, us(10)), LateCause::Preemption);
        let mut c = LateCauses::default();
        assert_eq!(c.dominant(), None);
        c.count(LateCause::Preemption);
        c.count(LateCause::WakeupLatency);
        c.count(LateCause::WakeupLatency);
        assert_eq!(c.dominant(), Some("the machine woke the data plane late"));
    }
}
