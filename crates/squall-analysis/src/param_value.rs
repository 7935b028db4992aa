//! A swept parameter's text as a number with its unit, for CSV columns
//! that a spreadsheet or pandas reads as numbers: "0.5%" is the fraction
//! 0.005 in a `KEY_fraction` column, "2 Mbit/s" is 2000000 in
//! `KEY_bit_per_s`, "300 ms" is 0.3 in `KEY_s`, "100 KB" is 100000 in
//! `KEY_B`. The units are read as scenario files read them
//! (squall-link's `units`).

use std::str::FromStr;

use squall_link::{Bytes, Duration, Probability, Rate};

/// The unit of a parameter's numeric column, as its name's suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamUnit {
    /// A probability or share written as "0.5%" (or 0..1).
    Fraction,
    BitPerSecond,
    Seconds,
    Bytes,
    /// A number without a unit (a count, a seed).
    Number,
}

impl ParamUnit {
    /// The column name's suffix: `KEY_fraction`, `KEY_bit_per_s`, ….
    pub fn suffix(self) -> &'static str {
        match self {
            ParamUnit::Fraction => "fraction",
            ParamUnit::BitPerSecond => "bit_per_s",
            ParamUnit::Seconds => "s",
            ParamUnit::Bytes => "B",
            ParamUnit::Number => "number",
        }
    }
}

/// `text` (a swept value as the experiment file wrote it, TOML quotes
/// removed) as a number in SI base units, with its unit; `None` for a
/// value that is not a quantity ("cubic", a table).
pub fn param_value(text: &str) -> Option<(f64, ParamUnit)> {
    let t = text.trim().trim_matches('"').trim();
    if let Ok(x) = t.parse::<f64>() {
        return x.is_finite().then_some((x, ParamUnit::Number));
    }
    if t.ends_with('%') {
        return Probability::from_str(t).ok().map(|p| (p.get(), ParamUnit::Fraction));
    }
    if let Ok(d) = Duration::from_str(t) {
        return Some((d.as_secs_f64(), ParamUnit::Seconds));
    }
    // A rate says "/s", "ps" or "bit" ("10mbit"); without them "100 KB"
    // is a size (Rate alone would read it as bytes per second).
    if t.ends_with("/s") || t.ends_with("ps") || t.ends_with("bit") {
        return Rate::from_str(t).ok().map(|r| (r.bits_per_sec() as f64, ParamUnit::BitPerSecond));
    }
    Bytes::from_str(t).ok().map(|b| (b.0 as f64, ParamUnit::Bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_become_numbers_in_base_units() {
        assert_eq!(param_value("0.5%"), Some((0.005, ParamUnit::Fraction)));
        assert_eq!(param_value("\"2 Mbit/s\""), Some((2e6, ParamUnit::BitPerSecond)));
        assert_eq!(param_value("10mbit"), Some((1e7, ParamUnit::BitPerSecond)));
        assert_eq!(param_value("300 ms"), Some((0.3, ParamUnit::Seconds)));
        assert_eq!(param_value("100 KB"), Some((100_000.0, ParamUnit::Bytes)));
        assert_eq!(param_value("8"), Some((8.0, ParamUnit::Number)));
        assert_eq!(param_value("\"cubic\""), None);
    }
}
