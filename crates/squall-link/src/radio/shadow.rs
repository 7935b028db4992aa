//! Shadow (slow) fading: an AR(1) process in dB added to the received power
//! (seed 002 §II.C and §III.A: "an AR(1) process provided shadow samples at
//! an interval of 2 meter. The standard deviation σ was set to 4 dB and the
//! pole a at 0.74").
//!
//! The seed's pole is per `pole_distance` of travel; per slot the terminal
//! moves d = v/slots_per_second (1/72 m at 75 km/h and 1500 slots/s), so the
//! per-slot pole is a^(d/pole_distance). That keeps the correlation at a
//! lag of 2 m exactly a (an exponential correlation in distance, Gudmundson
//! 1991), and the innovation σ·√(1 − a_slot²) keeps the variance σ².

use serde::{Deserialize, Serialize};

use super::math::standard_normal;
use crate::rng::StreamRng;

/// Shadow fading parameters; `std_dev_db = 0` turns it off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShadowingConfig {
    /// Standard deviation of the shadow term, dB (seed 002: 4).
    #[serde(default = "ShadowingConfig::default_std_dev_db")]
    pub std_dev_db: f64,
    /// Correlation between samples `pole_distance_m` apart, in [0, 1)
    /// (seed 002: 0.74).
    #[serde(default = "ShadowingConfig::default_pole")]
    pub pole: f64,
    /// Travel distance, metres, at which the correlation is `pole`
    /// (seed 002: 2 m).
    #[serde(default = "ShadowingConfig::default_pole_distance_m")]
    pub pole_distance_m: f64,
}

impl ShadowingConfig {
    fn default_std_dev_db() -> f64 {
        4.0
    }
    fn default_pole() -> f64 {
        0.74
    }
    fn default_pole_distance_m() -> f64 {
        2.0
    }
    /// No shadow fading.
    pub fn off() -> Self {
        ShadowingConfig { std_dev_db: 0.0, ..Default::default() }
    }
    /// The pole per step of `step_m` metres: a^(step/pole_distance).
    pub fn pole_per_step(&self, step_m: f64) -> f64 {
        self.pole.powf(step_m / self.pole_distance_m)
    }
}

impl Default for ShadowingConfig {
    fn default() -> Self {
        ShadowingConfig {
            std_dev_db: Self::default_std_dev_db(),
            pole: Self::default_pole(),
            pole_distance_m: Self::default_pole_distance_m(),
        }
    }
}

/// The shadow process, one value per slot, advanced in slot order from its
/// own stream (so it does not depend on which slots carry traffic).
#[derive(Clone, Debug)]
pub struct Shadowing {
    pole: f64,
    innovation_db: f64,
    value_db: f64,
    /// The slot `value_db` belongs to.
    slot: u64,
    rng: StreamRng,
}

impl Shadowing {
    /// Starts in the stationary distribution N(0, σ²) at slot 0.
    pub fn new(config: &ShadowingConfig, step_m: f64, mut rng: StreamRng) -> Self {
        let sigma = config.std_dev_db;
        let pole = if sigma > 0.0 { config.pole_per_step(step_m) } else { 0.0 };
        let value_db = if sigma > 0.0 { sigma * standard_normal(&mut rng) } else { 0.0 };
        Shadowing { pole, innovation_db: sigma * (1.0 - pole * pole).sqrt(), value_db, slot: 0, rng }
    }

    /// The per-slot pole a_slot.
    pub fn pole(&self) -> f64 {
        self.pole
    }

    /// The shadow term of `slot`, dB. Slots must not go backwards; an
    /// earlier slot returns the current value.
    pub fn at(&mut self, slot: u64) -> f64 {
        if self.innovation_db == 0.0 {
            return self.value_db;
        }
        while self.slot < slot {
            self.value_db = self.pole * self.value_db + self.innovation_db * standard_normal(&mut self.rng);
            self.slot += 1;
        }
        self.value_db
    }
}
