//! Time series of a stage's parameters (issue 30): the stage's rate, delay,
//! jitter, loss or corruption probability follow a series of (time, value)
//! points in virtual time, as rattan's bandwidth, delay and loss traces do
//! (`stack-rs/rattan`, `rattan-core/src/cells/bandwidth/mod.rs`
//! `update_bw`; `cells/delay.rs`; `cells/loss.rs`) and as Seawind's state
//! changes do (seed 000 §5.1), without a state per point.
//!
//! In a scenario, a stage's `series` table names the parameters that
//! follow a file:
//!
//! ```toml
//! series.rate = { file = "rate.csv", between = "step", at_end = "loop", start = "run" }
//! series.delay = { file = "delay.csv", between = "linear", at_end = "hold" }
//! ```
//!
//! The file is read by squall-scenario (`series_file.rs`); this crate sees
//! the points, in base units (bit/s, ns, probability).
//!
//! The model (sans-IO): the stage asks for each series' value at the
//! instant of each of its events (a packet's arrival, a transmission's end,
//! a delivery) and, when it differs from the value in force, sets the key
//! as a state change would ([`crate::StagePatch`]). A change therefore acts
//! on what starts after it: a transmission under way keeps the time it was
//! given, as with a `[[states]]` change of `rate`. No wake-up is asked for
//! a point while the stage is idle. One exception needs a timer: a rate of
//! 0 holds the link (no transmission starts, as during a vacation), and
//! while packets wait the stage asks to be woken at the next point, where
//! the rate may rise again.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::time::Instant;

/// How the value goes from one point to the next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Between {
    /// A point's value holds until the next point.
    #[default]
    Step,
    /// The value moves on a straight line from one point to the next.
    Linear,
}

/// What happens after the series' last point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtEnd {
    /// The last point's value holds (rattan: `update_bw` keeps the last rate).
    #[default]
    Hold,
    /// The series starts again; its period is the last point's time
    /// (Mahimahi's loop: the last value is the period).
    Loop,
    /// The run ends at the last point's time (Mahimahi's `--once`).
    End,
}

/// Where the series' time 0 is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesStart {
    /// The run's start.
    #[default]
    Run,
    /// The instant the first real packet (not a background one) enters the
    /// stage, so that start-up chatter does not use up the series (rattan's
    /// `first-packet` feature, `rattan-core/src/core.rs`; in squall per
    /// stage, not one instant for all).
    FirstPacket,
}

/// One parameter's series: points (time from the series' start, value in
/// the parameter's base unit) and how to read between and after them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterSeries {
    /// The CSV file the points were read from, relative to the scenario
    /// file (read by the scenario loader when `times_ns` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default)]
    pub between: Between,
    #[serde(default)]
    pub at_end: AtEnd,
    #[serde(default)]
    pub start: SeriesStart,
    /// The points' times, ns from the series' start: the first is 0, then
    /// increasing. The last is the series' end (its period when it loops).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub times_ns: Vec<u64>,
    /// The points' values: bit/s (rate), ns (delay, jitter), probability
    /// 0..=1 (loss, corrupt).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<f64>,
}

/// The parameters of a stage that follow a series (`series.rate = {...}`).
/// Each is boxed: every stage's configuration holds a `StageSeries`, few
/// have a series (40 bytes where the series inline took 400).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSeries {
    /// Line rate, bit/s; 0 holds the link (no transmission starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Box<ParameterSeries>>,
    /// Fixed propagation delay, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Box<ParameterSeries>>,
    /// Jitter, ns: the random part of the delay, uniform in [0, value].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Box<ParameterSeries>>,
    /// Probability that a packet is lost (`error = { packet = P }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<Box<ParameterSeries>>,
    /// Probability that a packet is corrupted (`error = { packet = P }`
    /// with `error_mode = "corrupt"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrupt: Option<Box<ParameterSeries>>,
}

/// Which parameter a series drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKey {
    Rate,
    Delay,
    Jitter,
    Loss,
    Corrupt,
}

impl SeriesKey {
    pub const ALL: [SeriesKey; 5] =
        [SeriesKey::Rate, SeriesKey::Delay, SeriesKey::Jitter, SeriesKey::Loss, SeriesKey::Corrupt];

    pub fn as_str(self) -> &'static str {
        match self {
            SeriesKey::Rate => "rate",
            SeriesKey::Delay => "delay",
            SeriesKey::Jitter => "jitter",
            SeriesKey::Loss => "loss",
            SeriesKey::Corrupt => "corrupt",
        }
    }

    /// The largest value a point may hold, in the base unit.
    pub fn max_value(self) -> f64 {
        match self {
            // 10 Tbit/s.
            SeriesKey::Rate => 1e13,
            // One day: a delay far beyond any path, and far inside u64 ns.
            SeriesKey::Delay | SeriesKey::Jitter => 86_400e9,
            SeriesKey::Loss | SeriesKey::Corrupt => 1.0,
        }
    }
}

/// The longest series, ns (about 116 days, as a Mahimahi trace's period):
/// squall's `u64` nanosecond clock holds 1 800 loops of it.
pub const MAX_SERIES_NS: u64 = 10_000_000_000_000_000;

impl StageSeries {
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The series given, with their key.
    pub fn iter(&self) -> impl Iterator<Item = (SeriesKey, &ParameterSeries)> {
        SeriesKey::ALL.into_iter().filter_map(|k| self.get(k).map(|s| (k, s)))
    }

    pub fn get(&self, key: SeriesKey) -> Option<&ParameterSeries> {
        match key {
            SeriesKey::Rate => self.rate.as_deref(),
            SeriesKey::Delay => self.delay.as_deref(),
            SeriesKey::Jitter => self.jitter.as_deref(),
            SeriesKey::Loss => self.loss.as_deref(),
            SeriesKey::Corrupt => self.corrupt.as_deref(),
        }
    }

    pub fn get_mut(&mut self, key: SeriesKey) -> Option<&mut ParameterSeries> {
        match key {
            SeriesKey::Rate => self.rate.as_deref_mut(),
            SeriesKey::Delay => self.delay.as_deref_mut(),
            SeriesKey::Jitter => self.jitter.as_deref_mut(),
            SeriesKey::Loss => self.loss.as_deref_mut(),
            SeriesKey::Corrupt => self.corrupt.as_deref_mut(),
        }
    }

    /// Checks the points (the loader has located errors for files; these
    /// are for values given inline). `key` is the stage's `series` key.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        if self.loss.is_some() && self.corrupt.is_some() {
            return Err(ConfigError::new(
                &format!("{key}.corrupt"),
                "a stage has one error model: give `series.loss` or `series.corrupt`, not both (put the other in another stage)",
            ));
        }
        for (k, s) in self.iter() {
            s.validate(k, &format!("{key}.{}", k.as_str()))?;
        }
        Ok(())
    }
}

impl ParameterSeries {
    /// Checks the points; `key` names the series in errors.
    pub fn validate(&self, which: SeriesKey, key: &str) -> Result<(), ConfigError> {
        if self.times_ns.is_empty() {
            return Err(ConfigError::new(
                key,
                "the series has no points; give a file, e.g. { file = \"rate.csv\" } (docs/guide: Traces)",
            ));
        }
        if self.times_ns.len() != self.values.len() {
            return Err(ConfigError::new(
                key,
                &format!("{} times and {} values; expected one value per time", self.times_ns.len(), self.values.len()),
            ));
        }
        if self.times_ns[0] != 0 {
            return Err(ConfigError::new(&format!("{key}.times_ns[0]"), "expected the first point at time 0"));
        }
        if let Some(i) = self.times_ns.windows(2).position(|w| w[1] <= w[0]) {
            return Err(ConfigError::new(
                &format!("{key}.times_ns[{}]", i + 1),
                &format!(
                    "{} ns does not come after {} ns; expected increasing times",
                    self.times_ns[i + 1],
                    self.times_ns[i]
                ),
            ));
        }
        let last = *self.times_ns.last().expect("not empty");
        if last > MAX_SERIES_NS {
            return Err(ConfigError::new(
                key,
                &format!("the series lasts {last} ns; expected at most {MAX_SERIES_NS} ns"),
            ));
        }
        if last == 0 && self.at_end != AtEnd::Hold {
            return Err(ConfigError::new(
                key,
                "a series that loops or ends needs a last point after time 0 (its time is the period, or the end)",
            ));
        }
        let max = which.max_value();
        if let Some(i) = self.values.iter().position(|v| !(v.is_finite() && *v >= 0.0 && *v <= max)) {
            return Err(ConfigError::new(
                &format!("{key}.values[{i}]"),
                &format!("{} is out of range; expected a value from 0 to {max}", self.values[i]),
            ));
        }
        Ok(())
    }

    /// The series' time at `since_start` after its start (folded into one
    /// period when it loops).
    fn series_time(&self, since_start: u64) -> u64 {
        let last = *self.times_ns.last().expect("validated");
        match self.at_end {
            AtEnd::Loop if since_start >= last => since_start % last,
            _ => since_start.min(last),
        }
    }

    /// The value `since_start` ns after the series' start.
    pub fn value_at(&self, since_start: u64) -> f64 {
        let t = self.series_time(since_start);
        // The last point at or before t.
        let i = self.times_ns.partition_point(|&p| p <= t) - 1;
        match self.between {
            Between::Step => self.values[i],
            Between::Linear => match self.times_ns.get(i + 1) {
                None => self.values[i],
                Some(&next) => {
                    let (t0, v0, v1) = (self.times_ns[i], self.values[i], self.values[i + 1]);
                    let f = (t - t0) as f64 / (next - t0) as f64;
                    v0 + (v1 - v0) * f
                }
            },
        }
    }

    /// The next instant after `since_start` where a point is, as time from
    /// the series' start (`None` when no point follows: held at the end).
    pub fn next_point_after(&self, since_start: u64) -> Option<u64> {
        let last = *self.times_ns.last().expect("validated");
        match self.at_end {
            AtEnd::Loop => {
                let base = since_start - since_start % last;
                let within = since_start % last;
                let j = self.times_ns.partition_point(|&p| p <= within);
                // within < last, the last point: j names a point.
                Some(base + self.times_ns[j])
            }
            _ => self.times_ns.iter().copied().find(|&p| p > since_start),
        }
    }

    /// The series' length, ns: its end when `at_end = "end"`.
    pub fn length_ns(&self) -> u64 {
        *self.times_ns.last().expect("validated")
    }
}

/// The series of one stage being replayed: when each started.
#[derive(Debug)]
pub(crate) struct SeriesPlayer {
    pub config: StageSeries,
    /// Each key's start, once known (`start = "first_packet"` waits).
    starts: [Option<Instant>; 5],
    /// The values last set, per key.
    in_force: [Option<f64>; 5],
}

impl SeriesPlayer {
    pub(crate) fn new(config: &StageSeries) -> Self {
        let mut starts = [None; 5];
        for (i, k) in SeriesKey::ALL.iter().enumerate() {
            if config.get(*k).is_some_and(|s| s.start == SeriesStart::Run) {
                starts[i] = Some(Instant::ZERO);
            }
        }
        SeriesPlayer { config: config.clone(), starts, in_force: [None; 5] }
    }

    /// A real packet entered the stage at `now`: series waiting for the
    /// first packet start.
    pub(crate) fn packet_entered(&mut self, now: Instant) {
        for (i, k) in SeriesKey::ALL.iter().enumerate() {
            if self.starts[i].is_none() && self.config.get(*k).is_some() {
                self.starts[i] = Some(now);
            }
        }
    }

    /// The values that changed at `now`, with their key.
    pub(crate) fn changes(&mut self, now: Instant, out: &mut Vec<(SeriesKey, f64)>) {
        for (i, k) in SeriesKey::ALL.iter().enumerate() {
            let (Some(start), Some(s)) = (self.starts[i], self.config.get(*k)) else { continue };
            let v = s.value_at(now.saturating_since(start).as_nanos());
            if self.in_force[i] != Some(v) {
                self.in_force[i] = Some(v);
                out.push((*k, v));
            }
        }
    }

    /// The next point of the rate series after `now`, as an instant.
    pub(crate) fn next_rate_point(&self, now: Instant) -> Option<Instant> {
        let start = self.starts[0]?;
        let s = self.config.rate.as_ref()?;
        let since = now.saturating_since(start).as_nanos();
        s.next_point_after(since).map(|t| start + crate::time::Duration::from_nanos(t))
    }

    /// The instant a series with `at_end = "end"` ends the run, the
    /// earliest if several, once their starts are known.
    pub(crate) fn end(&self) -> Option<Instant> {
        SeriesKey::ALL
            .iter()
            .enumerate()
            .filter_map(|(i, k)| {
                let s = self.config.get(*k).filter(|s| s.at_end == AtEnd::End)?;
                Some(self.starts[i]? + crate::time::Duration::from_nanos(s.length_ns()))
            })
            .min()
    }
}

impl crate::keys::Distributions for StageSeries {}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(times_ns: &[u64], values: &[f64], between: Between, at_end: AtEnd) -> ParameterSeries {
        ParameterSeries {
            file: None,
            between,
            at_end,
            start: SeriesStart::Run,
            times_ns: times_ns.to_vec(),
            values: values.to_vec(),
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn step_holds_each_value_until_the_next_point() {
        let s = series(&[0, S, 2 * S, 3 * S], &[10e6, 1e6, 10e6, 10e6], Between::Step, AtEnd::Hold);
        assert_eq!(s.value_at(0), 10e6);
        assert_eq!(s.value_at(S - 1), 10e6);
        assert_eq!(s.value_at(S), 1e6);
        assert_eq!(s.value_at(2 * S - 1), 1e6);
        assert_eq!(s.value_at(2 * S), 10e6);
        assert_eq!(s.value_at(100 * S), 10e6);
    }

    #[test]
    fn linear_is_the_straight_line_between_points() {
        // 10 ms at 0, 50 ms at 1 s: 30 ms at 0.5 s, 20 ms at 0.25 s (by hand).
        let s = series(&[0, S], &[10e6, 50e6], Between::Linear, AtEnd::Hold);
        assert_eq!(s.value_at(S / 2), 30e6);
        assert_eq!(s.value_at(S / 4), 20e6);
        assert_eq!(s.value_at(2 * S), 50e6);
    }

    #[test]
    fn loop_folds_time_into_the_period_hold_keeps_the_last_value() {
        let looped = series(&[0, S, 2 * S], &[1.0, 2.0, 3.0], Between::Step, AtEnd::Loop);
        // Period 2 s: at 2.5 s the series is at 0.5 s (value 1), at 3.5 s at 1.5 s (2).
        assert_eq!(looped.value_at(2 * S + S / 2), 1.0);
        assert_eq!(looped.value_at(3 * S + S / 2), 2.0);
        assert_eq!(looped.next_point_after(2 * S + S / 2), Some(3 * S));
        assert_eq!(looped.next_point_after(3 * S + S / 2), Some(4 * S));
        let held = series(&[0, S, 2 * S], &[1.0, 2.0, 3.0], Between::Step, AtEnd::Hold);
        assert_eq!(held.value_at(2 * S + S / 2), 3.0);
        assert_eq!(held.next_point_after(2 * S + S / 2), None);
    }

    #[test]
    fn bad_inline_points_name_the_key() {
        let ok = series(&[0, S], &[1.0, 2.0], Between::Step, AtEnd::Loop);
        assert!(ok.validate(SeriesKey::Rate, "k").is_ok());
        let e = series(&[0, S, S], &[1.0, 2.0, 3.0], Between::Step, AtEnd::Hold)
            .validate(SeriesKey::Rate, "up.series.rate")
            .unwrap_err();
        assert_eq!(e.key, "up.series.rate.times_ns[2]");
        let e = series(&[0, S], &[0.5, 1.5], Between::Step, AtEnd::Hold)
            .validate(SeriesKey::Loss, "up.series.loss")
            .unwrap_err();
        assert_eq!(e.key, "up.series.loss.values[1]");
        let e = series(&[0], &[1.0], Between::Step, AtEnd::Loop).validate(SeriesKey::Rate, "k").unwrap_err();
        assert!(e.message.contains("after time 0"), "{}", e.message);
    }
}
