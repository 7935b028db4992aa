//! The eight uncoded modulation formats of the Wireless IP downlink (seed
//! 002 §II.B: BPSK, 4-, 8-, 16-, 32-, 64-, 128- and 256-QAM) and their
//! symbol error rates on an AWGN channel at a given SNR per symbol (Es/N0).
//!
//! Closed forms, for constellations on a square grid of spacing d with
//! minimum-distance detection (Proakis, *Digital Communications*, 4th ed.,
//! §5.2.8–5.2.9):
//!
//! - BPSK: Pₛ = Q(√(2γ)), exact.
//! - The QAM formats, by per-point products of the per-axis errors:
//!   Pₛ = 1 − mean over points of (1 − nₓ·q)(1 − n_y·q) = (n̄ₓ + n̄_y)·q − (nₓn_y)‾·q²,
//!   with q = Q(d/√(2N0)) = Q(√(2γ/E)), E = Es/(d/2)² the mean energy of the
//!   odd-integer constellation, and nₓ, n_y ∈ {1, 2} a point's neighbours
//!   along each axis. Exact for square (4, 16, 64, 256: the textbook
//!   1 − (1 − 2(1 − 1/√M)·Q(√(3γ/(M−1))))²) and for 8-QAM as a 4×2
//!   rectangle; for the cross 32- and 128-QAM exact except in the
//!   triangles at the cut corners (tests/radio.rs checks every format
//!   against a Monte Carlo constellation).
//!
//! The sums are formed as a + b − ab rather than 1 − (1 − a)(1 − b), so
//! tiny error rates keep their precision.

use std::fmt;
use std::str::FromStr;

use super::math::q_function;
use crate::units::UnitError;

/// A modulation format, ordered by bits per symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Modulation {
    Bpsk,
    Qam4,
    Qam8,
    Qam16,
    Qam32,
    Qam64,
    Qam128,
    Qam256,
}

impl Modulation {
    /// All formats, from 1 to 8 bits per symbol.
    pub const ALL: [Modulation; 8] = [
        Modulation::Bpsk,
        Modulation::Qam4,
        Modulation::Qam8,
        Modulation::Qam16,
        Modulation::Qam32,
        Modulation::Qam64,
        Modulation::Qam128,
        Modulation::Qam256,
    ];

    /// log2(M): bits carried by one symbol, 1..=8.
    pub const fn bits_per_symbol(self) -> u32 {
        self as u32 + 1
    }

    /// The number of constellation points M.
    pub const fn points(self) -> u32 {
        1 << self.bits_per_symbol()
    }

    /// The format with `k` bits per symbol (1..=8).
    pub fn from_bits_per_symbol(k: u32) -> Option<Self> {
        Modulation::ALL.get((k as usize).checked_sub(1)?).copied()
    }

    /// Position in [`Modulation::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The scenario-file name: "bpsk", "4qam", …, "256qam".
    pub const fn name(self) -> &'static str {
        match self {
            Modulation::Bpsk => "bpsk",
            Modulation::Qam4 => "4qam",
            Modulation::Qam8 => "8qam",
            Modulation::Qam16 => "16qam",
            Modulation::Qam32 => "32qam",
            Modulation::Qam64 => "64qam",
            Modulation::Qam128 => "128qam",
            Modulation::Qam256 => "256qam",
        }
    }

    /// Symbol error probability, 0..=1, at `snr` = Es/N0 (linear, ≥ 0).
    pub fn symbol_error_rate(self, snr: f64) -> f64 {
        let snr = if snr.is_nan() { 0.0 } else { snr.max(0.0) };
        // (n̄ₓ + n̄_y, (nₓn_y)‾, E) per format.
        let (linear, quadratic, energy) = match self {
            Modulation::Bpsk => return q_function((2.0 * snr).sqrt()),
            Modulation::Qam8 => (2.5, 1.5, 6.0),
            Modulation::Qam32 => (3.25, 2.75, 20.0),
            Modulation::Qam128 => (3.625, 3.3125, 82.0),
            square => {
                // √M points per axis, (√M − 1)/√M·2 neighbours on average.
                let side = (square.points() as f64).sqrt();
                let per_axis = 2.0 * (1.0 - 1.0 / side);
                (2.0 * per_axis, per_axis * per_axis, 2.0 * (square.points() as f64 - 1.0) / 3.0)
            }
        };
        let q = q_function((2.0 * snr / energy).sqrt());
        let p = linear * q - quadratic * q * q;
        p.clamp(0.0, 1.0)
    }

    /// Probability that a frame of `symbols` symbols has at least one
    /// symbol error, 1 − (1 − SER)^symbols (seed 002 §II.C), computed
    /// without cancellation for small SER.
    pub fn frame_error_rate(self, snr: f64, symbols: u32) -> f64 {
        frame_error_from_ser(self.symbol_error_rate(snr), symbols)
    }
}

/// 1 − (1 − `ser`)^`symbols`.
pub fn frame_error_from_ser(ser: f64, symbols: u32) -> f64 {
    if ser >= 1.0 {
        return if symbols == 0 { 0.0 } else { 1.0 };
    }
    (-f64::exp_m1(symbols as f64 * f64::ln_1p(-ser))).clamp(0.0, 1.0)
}

impl fmt::Display for Modulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Modulation {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let key: String = s.chars().filter(|c| !matches!(c, '-' | '_' | ' ')).collect::<String>().to_lowercase();
        Modulation::ALL.into_iter().find(|m| m.name() == key).ok_or_else(|| UnitError {
            found: s.to_string(),
            expected: "a modulation: bpsk, 4qam, 8qam, 16qam, 32qam, 64qam, 128qam or 256qam".into(),
        })
    }
}

/// How the modulation of each frame is chosen (seed 002 §II.C and
/// footnote 2): `"adaptive"` or a fixed format like `"4qam"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModulationChoice {
    /// From the predicted SNR, with switching levels that maximise the
    /// expected bits per frame ([`super::adaptive`]).
    #[default]
    Adaptive,
    Fixed(Modulation),
}

impl FromStr for ModulationChoice {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        if s.trim().eq_ignore_ascii_case("adaptive") {
            return Ok(ModulationChoice::Adaptive);
        }
        s.parse().map(ModulationChoice::Fixed).map_err(|_| UnitError {
            found: s.to_string(),
            expected: "\"adaptive\" or a modulation: bpsk, 4qam, 8qam, 16qam, 32qam, 64qam, 128qam, 256qam".into(),
        })
    }
}

impl fmt::Display for ModulationChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModulationChoice::Adaptive => f.write_str("adaptive"),
            ModulationChoice::Fixed(m) => m.fmt(f),
        }
    }
}

serde_via_string!(Modulation, ModulationChoice);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bits() {
        for (k, m) in Modulation::ALL.iter().enumerate() {
            assert_eq!(m.bits_per_symbol(), k as u32 + 1);
            assert_eq!(m.name().parse::<Modulation>().unwrap(), *m);
            assert_eq!(Modulation::from_bits_per_symbol(k as u32 + 1), Some(*m));
        }
        assert_eq!("16-QAM".parse::<Modulation>().unwrap(), Modulation::Qam16);
        assert_eq!("adaptive".parse::<ModulationChoice>().unwrap(), ModulationChoice::Adaptive);
        assert!("17qam".parse::<Modulation>().is_err());
        assert_eq!(Modulation::from_bits_per_symbol(0), None);
    }

    #[test]
    fn zero_snr_is_a_random_guess_for_exact_forms() {
        // With no signal, the detector picks one of M points: SER = 1 − 1/M.
        for m in [Modulation::Bpsk, Modulation::Qam4, Modulation::Qam8, Modulation::Qam16, Modulation::Qam256] {
            let want = 1.0 - 1.0 / m.points() as f64;
            assert!((m.symbol_error_rate(0.0) - want).abs() < 1e-15, "{m}");
        }
    }

    #[test]
    fn frame_error_rate_of_small_ser_has_no_cancellation() {
        let f = frame_error_from_ser(1e-15, 108);
        assert!((f - 108e-15).abs() < 1e-25);
        assert_eq!(frame_error_from_ser(0.0, 108), 0.0);
        assert_eq!(frame_error_from_ser(1.0, 108), 1.0);
    }
}
