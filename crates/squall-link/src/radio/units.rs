//! Radio quantities with their units written out, as scenario files spell
//! them: `"1900 MHz"`, `"200 kHz"`, `"75 km/h"`.

use std::fmt;
use std::str::FromStr;

use crate::units::UnitError;

/// Splits "75 km/h" into (75.0, "km/h").
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    Some((num.parse().ok()?, unit.trim()))
}

/// A frequency in hertz (a carrier, a sub-channel width, a Doppler shift).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Frequency(f64);

impl Frequency {
    const EXPECTED: &'static str = "a frequency with a unit, like \"1900 MHz\", \"200 kHz\" or \"1.9 GHz\"";

    pub const fn from_hz(hz: f64) -> Self {
        Frequency(hz)
    }
    pub const fn hz(self) -> f64 {
        self.0
    }
}

impl FromStr for Frequency {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError { found: s.to_string(), expected: Self::EXPECTED.into() };
        let (value, unit) = number_and_unit(s).ok_or_else(err)?;
        let scale = match unit {
            "Hz" | "hz" => 1.0,
            "kHz" | "khz" => 1e3,
            "MHz" | "mhz" => 1e6,
            "GHz" | "ghz" => 1e9,
            _ => return Err(err()),
        };
        let hz = value * scale;
        if !(hz.is_finite() && hz >= 0.0) {
            return Err(err());
        }
        Ok(Frequency(hz))
    }
}

impl fmt::Display for Frequency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, scale) in [("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3)] {
            if self.0 >= scale {
                return write!(f, "{} {unit}", self.0 / scale);
            }
        }
        write!(f, "{} Hz", self.0)
    }
}

/// A speed in metres per second (of the mobile terminal).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Speed(f64);

impl Speed {
    const EXPECTED: &'static str = "a speed with a unit, like \"75 km/h\" or \"20 m/s\"";

    pub const fn from_meters_per_sec(v: f64) -> Self {
        Speed(v)
    }
    pub fn from_km_per_hour(v: f64) -> Self {
        Speed(v / 3.6)
    }
    pub const fn meters_per_sec(self) -> f64 {
        self.0
    }
}

impl FromStr for Speed {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let err = || UnitError { found: s.to_string(), expected: Self::EXPECTED.into() };
        let (value, unit) = number_and_unit(s).ok_or_else(err)?;
        let mps = match unit {
            "m/s" => value,
            "km/h" | "kmh" | "kph" => value / 3.6,
            _ => return Err(err()),
        };
        if !(mps.is_finite() && mps >= 0.0) {
            return Err(err());
        }
        Ok(Speed(mps))
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} km/h", self.0 * 3.6)
    }
}

serde_via_string!(Frequency, Speed);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scenario_spellings() {
        assert_eq!("1900 MHz".parse::<Frequency>().unwrap().hz(), 1.9e9);
        assert_eq!("200 kHz".parse::<Frequency>().unwrap().hz(), 2e5);
        assert_eq!("1.9GHz".parse::<Frequency>().unwrap().hz(), 1.9e9);
        assert!("-5 MHz".parse::<Frequency>().is_err());
        assert!("5 parsecs".parse::<Frequency>().is_err());
        assert!(("75 km/h".parse::<Speed>().unwrap().meters_per_sec() - 20.833_333).abs() < 1e-5);
        assert_eq!("20 m/s".parse::<Speed>().unwrap().meters_per_sec(), 20.0);
        assert!("fast".parse::<Speed>().is_err());
        let f = Frequency::from_hz(1.9e9);
        assert_eq!(f.to_string().parse::<Frequency>().unwrap(), f);
    }
}
