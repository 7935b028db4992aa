//! Quantities with their units written out, as scenario files spell them:
//! `"9600 bit/s"`, `"200 ms"`, `"100 KB"`, `"1%"`.
//!
//! Parsing is pure (no I/O), so the model's configuration types deserialize
//! straight from a scenario file and serialize back to the same spelling in
//! a run's resolved scenario.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::time::Duration;

/// Why a quantity could not be read; the message names what was expected
/// and gives an example.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found:?} is not {expected}")]
pub struct UnitError {
    pub found: String,
    pub expected: std::borrow::Cow<'static, str>,
}

/// Why a rate spelling is refused although both readings exist: tc (and
/// so netem) reads `bps`, `kbps`, `mbps`, `gbps` and `tbps` in any case
/// as **bytes** per second (iproute2 `tc/tc_util.c` `get_rate`, its
/// `suffixes` table), while most people and tools read `Mbps` as bits.
/// squall gives such a spelling no meaning of its own and says so with
/// both readings and the spellings to use instead (issue 28). `MB/s`,
/// `MBps`, `Mbit/s`, `mbit` and `kbit` have one meaning and are
/// accepted.
pub fn ambiguous_rate(s: &str) -> Option<String> {
    let (value, unit) = split_number(s)?;
    let (scale, prefix, bytes_unit) = match unit {
        "bps" => (1.0, "", "B/s"),
        "kbps" | "Kbps" => (1e3, "k", "kB/s"),
        "mbps" | "Mbps" => (1e6, "m", "MB/s"),
        "gbps" | "Gbps" => (1e9, "g", "GB/s"),
        "tbps" | "Tbps" => (1e12, "t", "TB/s"),
        _ => return None,
    };
    let s = s.trim();
    let number = s[..s.len() - unit.len()].trim();
    let bits = Rate((value * scale).round().max(1.0) as u64);
    let as_bytes = Rate((value * scale * 8.0).round().max(1.0) as u64);
    let word = match prefix {
        "" => "bytes/s",
        "k" => "kilobytes/s",
        "m" => "megabytes/s",
        "g" => "gigabytes/s",
        _ => "terabytes/s",
    };
    Some(format!(
        "a rate with one meaning: tc reads {s:?} as {number} {word} ({as_bytes}), others as {bits}; \
         write \"{number}{prefix}bit\" or \"{bits}\" for bits, \"{tc_bytes}\" or \"{number} {bytes_unit}\" for bytes",
        tc_bytes = tc_spelling(as_bytes),
    ))
}

/// A rate as tc spells it in bits: `80mbit`, `512kbit`, `9600bit`.
fn tc_spelling(r: Rate) -> String {
    let b = r.0;
    for (unit, scale) in [("gbit", 1_000_000_000u64), ("mbit", 1_000_000), ("kbit", 1_000)] {
        if b >= scale && b.is_multiple_of(scale) {
            return format!("{}{unit}", b / scale);
        }
    }
    format!("{b}bit")
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
        .unwrap_or(s.len());
    // "e" may start a unit ("0 ebit" does not exist, but keep exponents only when followed by digits)
    let (mut num, mut rest) = s.split_at(end);
    if num.ends_with(['e', 'E']) {
        num = &num[..num.len() - 1];
        rest = &s[num.len()..];
    }
    let value: f64 = num.parse().ok()?;
    Some((value, rest.trim()))
}

/// A line rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    const EXPECTED: &'static str = "a positive rate with a unit, like \"9600 bit/s\", \"10 Mbit/s\" or \"10mbit\"";

    pub const fn from_bits_per_sec(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn bits_per_sec(self) -> u64 {
        self.0
    }
    /// Time to put `bytes` on the wire at this rate, rounded up to the next
    /// nanosecond so that a link is never faster than its rate.
    pub fn transmission_time(self, bytes: u64) -> Duration {
        let bits = bytes as u128 * 8 * 1_000_000_000;
        let rate = self.0.max(1) as u128;
        Duration::from_nanos(bits.div_ceil(rate).min(u64::MAX as u128) as u64)
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError { found: s.to_string(), expected: Self::EXPECTED.into() };
        if let Some(why) = ambiguous_rate(s) {
            return Err(UnitError { found: s.to_string(), expected: why.into() });
        }
        let (value, unit) = split_number(s).ok_or_else(err)?;
        let unit = unit.trim_end_matches("/s").trim_end_matches("ps");
        // "bit", "kbit", "Mbit", "Gbit" (netem: kbit, mbit, gbit), "B", "KB", "MB" (bytes per second)
        let scale = match unit {
            "bit" | "b" => 1.0,
            "kbit" | "Kbit" | "kb" => 1e3,
            "Mbit" | "mbit" | "Mb" | "mb" => 1e6,
            "Gbit" | "gbit" | "Gb" | "gb" => 1e9,
            "B" | "byte" | "bytes" => 8.0,
            "KB" | "kB" => 8e3,
            "MB" => 8e6,
            "GB" => 8e9,
            _ => return Err(err()),
        };
        let bps = value * scale;
        if !(bps.is_finite() && bps >= 1.0) {
            return Err(err());
        }
        Ok(Rate(bps.round() as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, scale) in [("Gbit/s", 1_000_000_000u64), ("Mbit/s", 1_000_000), ("kbit/s", 1_000)] {
            if b >= scale && b.is_multiple_of(scale) {
                return write!(f, "{} {unit}", b / scale);
            }
        }
        write!(f, "{b} bit/s")
    }
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    const EXPECTED: &'static str =
        "a size with a unit, like \"1500 B\", \"100 KB\" or \"1 MiB\" (KB = 1000 bytes, KiB = 1024)";
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError { found: s.to_string(), expected: Self::EXPECTED.into() };
        let (value, unit) = split_number(s).ok_or_else(err)?;
        let scale = match unit {
            "B" | "byte" | "bytes" => 1.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            _ => return Err(err()),
        };
        let bytes = value * scale;
        if !(bytes.is_finite() && bytes >= 0.0) || bytes.fract() != 0.0 {
            return Err(err());
        }
        Ok(Bytes(bytes as u64))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError {
            found: s.to_string(),
            expected: "a non-negative time with a unit, like \"200 ms\", \"1.5 s\" or \"40us\"".into(),
        };
        let (value, unit) = split_number(s).ok_or_else(err)?;
        let scale = match unit {
            "s" | "sec" | "secs" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            "min" => 60e9,
            "h" => 3600e9,
            _ => return Err(err()),
        };
        let nanos = value * scale;
        if !(nanos.is_finite() && nanos >= 0.0) {
            return Err(err());
        }
        Ok(Duration::from_nanos_f64(nanos))
    }
}

/// A probability, 0..=1. Written as a fraction (`0.01`) or a percentage
/// (`"1%"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Probability(f64);

impl Probability {
    pub const ZERO: Probability = Probability(0.0);
    pub const ONE: Probability = Probability(1.0);
    const EXPECTED: &'static str = "a probability between 0 and 1, like 0.01 or \"1%\"";

    /// `None` unless `0 <= p <= 1`.
    pub fn new(p: f64) -> Option<Self> {
        (0.0..=1.0).contains(&p).then_some(Probability(p))
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

impl FromStr for Probability {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError { found: s.to_string(), expected: Self::EXPECTED.into() };
        let (value, unit) = split_number(s).ok_or_else(err)?;
        let p = match unit {
            "%" => value / 100.0,
            "" => value,
            _ => return Err(err()),
        };
        Probability::new(p).ok_or_else(err)
    }
}

impl fmt::Display for Probability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Serde support: every quantity reads from its string form (and
/// probabilities also from a bare number), and writes its string form.
macro_rules! string_serde {
    ($ty:ty, $accept_number:expr) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(<$ty>::expected())
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(|e: UnitError| E::custom(e))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        if $accept_number {
                            v.to_string().parse().map_err(|e: UnitError| E::custom(e))
                        } else {
                            Err(E::custom(format!("{v} has no unit: expected {}", <$ty>::expected())))
                        }
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        self.visit_f64(v as f64)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        self.visit_f64(v as f64)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

impl Rate {
    fn expected() -> &'static str {
        Self::EXPECTED
    }
}
impl Bytes {
    fn expected() -> &'static str {
        Self::EXPECTED
    }
}
impl Duration {
    fn expected() -> &'static str {
        "a time with a unit, like \"200 ms\""
    }
}
impl Probability {
    fn expected() -> &'static str {
        Self::EXPECTED
    }
}

string_serde!(Rate, false);
string_serde!(Bytes, false);
string_serde!(Duration, false);
string_serde!(Probability, true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_scenario_and_netem_spelling() {
        assert_eq!("9600 bit/s".parse::<Rate>().unwrap().bits_per_sec(), 9600);
        assert_eq!("10 Mbit/s".parse::<Rate>().unwrap().bits_per_sec(), 10_000_000);
        assert_eq!("10mbit".parse::<Rate>().unwrap().bits_per_sec(), 10_000_000);
        assert_eq!("28.8 kbit/s".parse::<Rate>().unwrap().bits_per_sec(), 28_800);
        assert_eq!("1 MB/s".parse::<Rate>().unwrap().bits_per_sec(), 8_000_000);
        assert!("-5 Mbit/s".parse::<Rate>().is_err());
        assert!("0 bit/s".parse::<Rate>().is_err());
        assert!("10 parsecs".parse::<Rate>().is_err());
        assert!("fast".parse::<Rate>().is_err());
    }

    /// tc reads "10mbps" as 10 megabytes/s (iproute2 tc_util.c: "mbps" is
    /// 1000000 bytes, ×8 bits): 80 Mbit/s; most others read 10 Mbit/s.
    #[test]
    fn ambiguous_rate_spellings_are_refused_with_both_readings() {
        let e = "10mbps".parse::<Rate>().unwrap_err().to_string();
        assert_eq!(
            e,
            "\"10mbps\" is not a rate with one meaning: tc reads \"10mbps\" as 10 megabytes/s (80 Mbit/s), \
             others as 10 Mbit/s; write \"10mbit\" or \"10 Mbit/s\" for bits, \"80mbit\" or \"10 MB/s\" for bytes"
        );
        for s in ["5 Mbps", "64kbps", "1Gbps", "9600 bps", "2 Kbps"] {
            assert!(s.parse::<Rate>().unwrap_err().to_string().contains("tc reads"), "{s}");
        }
        let e = "512 kbps".parse::<Rate>().unwrap_err().to_string();
        assert!(e.contains("512 kilobytes/s (4096 kbit/s), others as 512 kbit/s"), "{e}");
        // One meaning each: kept.
        assert_eq!("10 MB/s".parse::<Rate>().unwrap().bits_per_sec(), 80_000_000);
        assert_eq!("10 MBps".parse::<Rate>().unwrap().bits_per_sec(), 80_000_000);
        assert_eq!("10 Bps".parse::<Rate>().unwrap().bits_per_sec(), 80);
        assert_eq!("10mbit".parse::<Rate>().unwrap().bits_per_sec(), 10_000_000);
        assert_eq!("10 Mbit/s".parse::<Rate>().unwrap().bits_per_sec(), 10_000_000);
        assert_eq!("64 kbit/s".parse::<Rate>().unwrap().bits_per_sec(), 64_000);
    }

    #[test]
    fn transmission_time_is_exact_and_rounds_up() {
        // 1500 bytes at 10 Mbit/s: 1.2 ms exactly.
        let r: Rate = "10 Mbit/s".parse().unwrap();
        assert_eq!(r.transmission_time(1500), Duration::from_micros(1200));
        // 1 byte at 3 bit/s: 8/3 s, rounded up to the nanosecond.
        assert_eq!(Rate(3).transmission_time(1).as_nanos(), 2_666_666_667);
    }

    #[test]
    fn sizes_times_and_probabilities() {
        assert_eq!("100 KB".parse::<Bytes>().unwrap(), Bytes(100_000));
        assert_eq!("1 KiB".parse::<Bytes>().unwrap(), Bytes(1024));
        assert!("1.5 B".parse::<Bytes>().is_err());
        assert_eq!("200 ms".parse::<Duration>().unwrap(), Duration::from_millis(200));
        assert_eq!("1.5s".parse::<Duration>().unwrap(), Duration::from_millis(1500));
        assert_eq!("1e-3 s".parse::<Duration>().unwrap(), Duration::from_millis(1));
        assert!("-1 ms".parse::<Duration>().is_err());
        assert!("200".parse::<Duration>().is_err());
        assert_eq!("1%".parse::<Probability>().unwrap().get(), 0.01);
        assert_eq!("0.25".parse::<Probability>().unwrap().get(), 0.25);
        assert!("150%".parse::<Probability>().is_err());
        assert!("1.5".parse::<Probability>().is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["9600 bit/s", "10 Mbit/s", "28800 bit/s"] {
            let r: Rate = s.parse().unwrap();
            assert_eq!(r.to_string().parse::<Rate>().unwrap(), r);
        }
        for d in [Duration::from_millis(200), Duration::from_nanos(1_234_567)] {
            assert_eq!(d.to_string().parse::<Duration>().unwrap(), d);
        }
    }
}
