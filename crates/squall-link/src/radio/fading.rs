//! Rayleigh fading over a tapped delay line (seed 002 §III.A: "a Jakes
//! model with 12 taps set according to typical urban fading").
//!
//! Each tap is an independent sum-of-sinusoids process after Zheng and Xiao
//! ("Simulation models with correct statistical properties for Rayleigh
//! fading channels", IEEE Trans. Commun. 51(6), 2003):
//!
//! h(t) = √(2/M) · Σₙ e^{jψₙ} · cos(ω_d·t·cos αₙ + φ),  αₙ = (2πn − π + θ)/(4M),
//!
//! with θ, φ, ψₙ uniform on [−π, π) drawn per replication from the seeded
//! stream. Over replications, E|h|² = 1 and E[h(t+τ)h*(t)] = J0(ω_d τ)
//! exactly (Clarke's spectrum); the envelope tends to Rayleigh as M grows.
//! Unlike the original Jakes model, the phases are random, so every seed is
//! a new, statistically correct channel and taps are uncorrelated.
//!
//! The frequency response of sub-channel c at baseband offset f_c is
//! H_c(t) = Σ_k √p_k · h_k(t) · e^{−j2π f_c τ_k}, tap powers p_k normalised to
//! sum 1, so E|H_c|² = 1 on every sub-channel.

use std::f64::consts::PI;

use serde::{Deserialize, Serialize};

use super::math::{Complex, db_to_linear};
use crate::dist::unit;
use crate::rng::StreamRng;
use crate::time::Duration;

/// Speed of light in vacuum, m/s.
pub const SPEED_OF_LIGHT: f64 = 299_792_458.0;

/// The maximum Doppler shift f_d = v·f_c/c in Hz for a terminal moving at
/// `speed_mps` (m/s) on carrier `carrier_hz` (Hz): 75 km/h at 1900 MHz gives
/// 132.0 Hz.
pub fn max_doppler_hz(speed_mps: f64, carrier_hz: f64) -> f64 {
    speed_mps * carrier_hz / SPEED_OF_LIGHT
}

/// One path of the delay line: mean power relative to the total (dB, −∞
/// for an empty tap) and excess delay.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tap {
    pub power_db: f64,
    pub delay: Duration,
}

/// Seed 002 §III.A's 12-tap typical-urban power profile, dB.
pub const TYPICAL_URBAN_POWER_DB: [f64; 12] = [
    -5.7,
    -7.6,
    f64::NEG_INFINITY,
    -4.4428,
    -13.4,
    f64::NEG_INFINITY,
    -13.5793,
    -14.2371,
    -14.4794,
    -16.9543,
    -20.0164,
    -24.3,
];

/// Spacing of the typical-urban taps: 0.2 µs, the sample period of a
/// 5 MHz downlink. The seed gives powers only; they are exactly the 20
/// paths of the 3GPP TR 25.943 "TUx" profile (0, 0.217, 0.512 … 2.140 µs)
/// summed into 0.2 µs bins (tests/radio.rs checks this), so tap k sits at
/// k·0.2 µs.
pub const TYPICAL_URBAN_TAP_SPACING: Duration = Duration::from_nanos(200);

/// The seed's profile with its 0.2 µs delays.
pub fn typical_urban() -> Vec<Tap> {
    TYPICAL_URBAN_POWER_DB
        .iter()
        .enumerate()
        .map(|(k, &power_db)| Tap { power_db, delay: TYPICAL_URBAN_TAP_SPACING.saturating_mul(k as u64) })
        .collect()
}

/// One tap's fading process: M sinusoids with random phases.
#[derive(Clone, Debug)]
pub struct SumOfSinusoids {
    /// ω_d·cos αₙ, rad/s.
    angular_freq: Vec<f64>,
    /// √(2/M)·e^{jψₙ}.
    weight: Vec<Complex>,
    /// φ, common to all sinusoids.
    phase: f64,
}

impl SumOfSinusoids {
    /// `sinusoids` = M ≥ 1, `doppler_hz` = f_d.
    pub fn new(sinusoids: usize, doppler_hz: f64, rng: &mut StreamRng) -> Self {
        let m = sinusoids.max(1);
        let omega_d = 2.0 * PI * doppler_hz;
        let uniform_angle = |rng: &mut StreamRng| PI * (2.0 * unit(rng) - 1.0);
        let theta = uniform_angle(rng);
        let phase = uniform_angle(rng);
        let amplitude = (2.0 / m as f64).sqrt();
        let mut angular_freq = Vec::with_capacity(m);
        let mut weight = Vec::with_capacity(m);
        for n in 1..=m {
            let alpha = (2.0 * PI * n as f64 - PI + theta) / (4.0 * m as f64);
            angular_freq.push(omega_d * alpha.cos());
            weight.push(Complex::from_phase(uniform_angle(rng)).scale(amplitude));
        }
        SumOfSinusoids { angular_freq, weight, phase }
    }

    /// The complex gain h(t) at `t` seconds (E|h|² = 1).
    pub fn gain(&self, t: f64) -> Complex {
        let mut h = Complex::ZERO;
        for (w, f) in self.weight.iter().zip(&self.angular_freq) {
            h += w.scale((f * t + self.phase).cos());
        }
        h
    }
}

/// A multipath channel: independent fading taps, seen on a set of
/// sub-channels.
#[derive(Clone, Debug)]
pub struct TappedDelayLine {
    /// Taps with non-zero power.
    taps: Vec<SumOfSinusoids>,
    /// [sub-channel][tap]: √p_k · e^{−j2π f_c τ_k}.
    phasors: Vec<Vec<Complex>>,
}

impl TappedDelayLine {
    /// `taps` must hold at least one finite power; `offsets_hz` are the
    /// sub-channel centre frequencies relative to the carrier.
    pub fn new(taps: &[Tap], offsets_hz: &[f64], sinusoids: usize, doppler_hz: f64, rng: &mut StreamRng) -> Self {
        let live: Vec<&Tap> = taps.iter().filter(|t| t.power_db.is_finite()).collect();
        let total: f64 = live.iter().map(|t| db_to_linear(t.power_db)).sum();
        let phasors = offsets_hz
            .iter()
            .map(|&f| {
                live.iter()
                    .map(|t| {
                        let amp = (db_to_linear(t.power_db) / total).sqrt();
                        Complex::from_phase(-2.0 * PI * f * t.delay.as_secs_f64()).scale(amp)
                    })
                    .collect()
            })
            .collect();
        let taps = live.iter().map(|_| SumOfSinusoids::new(sinusoids, doppler_hz, rng)).collect();
        TappedDelayLine { taps, phasors }
    }

    pub fn sub_channels(&self) -> usize {
        self.phasors.len()
    }

    /// Number of taps with non-zero power.
    pub fn live_taps(&self) -> usize {
        self.taps.len()
    }

    /// Unit-power gain of live tap `k` at `t` seconds.
    pub fn tap_gain(&self, k: usize, t: f64) -> Complex {
        self.taps[k].gain(t)
    }

    /// Writes H_c(t) for every sub-channel into `out` (resized to fit).
    pub fn frequency_response(&self, t: f64, scratch: &mut Vec<Complex>, out: &mut Vec<Complex>) {
        scratch.clear();
        scratch.extend(self.taps.iter().map(|tap| tap.gain(t)));
        out.clear();
        out.extend(self.phasors.iter().map(|row| {
            let mut h = Complex::ZERO;
            for (p, g) in row.iter().zip(scratch.iter()) {
                h += *p * *g;
            }
            h
        }));
    }
}
