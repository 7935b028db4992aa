//! Time in the model: integer nanoseconds, never floating-point seconds.
//!
//! The model reads no clock. Engines hand it an [`Instant`] on every call:
//! the simulator its virtual time, the emulator the offset of the wall clock
//! from the start of the run.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    /// The start of the run.
    pub const ZERO: Instant = Instant(0);
    /// Later than any event a run can schedule (about 584 years).
    pub const FAR_FUTURE: Instant = Instant(u64::MAX);

    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros * 1_000)
    }
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis * 1_000_000)
    }
    pub const fn from_secs(secs: u64) -> Self {
        Instant(secs * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(nanos: u64) -> Self {
        Duration(nanos)
    }
    pub const fn from_micros(micros: u64) -> Self {
        Duration(micros * 1_000)
    }
    pub const fn from_millis(millis: u64) -> Self {
        Duration(millis * 1_000_000)
    }
    pub const fn from_secs(secs: u64) -> Self {
        Duration(secs * 1_000_000_000)
    }
    /// Rounds a non-negative number of seconds to the nearest nanosecond;
    /// negative and NaN values give zero, values past `Duration::MAX` saturate.
    pub fn from_secs_f64(secs: f64) -> Self {
        Self::from_nanos_f64(secs * 1e9)
    }
    /// Rounds nanoseconds given as a float, with the same clamping as
    /// [`Duration::from_secs_f64`].
    pub fn from_nanos_f64(nanos: f64) -> Self {
        if nanos.is_nan() || nanos <= 0.0 {
            Duration(0)
        } else if nanos >= u64::MAX as f64 {
            Duration(u64::MAX)
        } else {
            Duration(nanos.round() as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports and statistics only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    pub fn saturating_mul(self, factor: u64) -> Duration {
        Duration(self.0.saturating_mul(factor))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero: a time before `rhs` gives [`Duration::ZERO`].
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_since(rhs)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.0 / 1_000_000_000, self.0 % 1_000_000_000)
    }
}

impl fmt::Display for Duration {
    /// Written in the largest unit that keeps it exact, as scenario files
    /// spell it: "200 ms", "1.5 s", "40 ns".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
            if n >= scale {
                return if n.is_multiple_of(scale) {
                    write!(f, "{} {unit}", n / scale)
                } else {
                    write!(f, "{} {unit}", n as f64 / scale as f64)
                };
            }
        }
        write!(f, "{n} ns")
    }
}

/// In summaries and resolved scenarios an instant is seconds since the
/// start, as a number.
impl serde::Serialize for Instant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Instant::from_secs(1) - Instant::from_secs(2), Duration::ZERO);
        assert_eq!(Instant::FAR_FUTURE + Duration::from_secs(1), Instant::FAR_FUTURE);
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(0.2), Duration::from_millis(200));
    }

    #[test]
    fn display_uses_exact_units() {
        assert_eq!(Duration::from_millis(200).to_string(), "200 ms");
        assert_eq!(Duration::from_millis(1500).to_string(), "1.5 s");
        assert_eq!(Duration::from_nanos(40).to_string(), "40 ns");
        assert_eq!(Instant::from_millis(40_001).to_string(), "40.001000000");
    }
}
