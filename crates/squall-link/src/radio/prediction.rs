//! Channel prediction with a given normalised mean square error (seed 002
//! §III.C: "a prediction error of 0.1 NMSE"; Sternad & Falahati, PIMRC
//! 2004, seed 002 ref. \[19\]).
//!
//! The predictor is modelled as an unbiased MMSE predictor of the complex
//! gain h (unit mean power): the prediction ĥ and its error are
//! uncorrelated, so h = ĥ + ε with ε ~ CN(0, ν) independent of ĥ, and
//! E|h − ĥ|² / E|h|² = ν. Drawn from the true gain as
//!
//! ĥ = (1 − ν)·h + √(ν(1 − ν))·w,  w ~ CN(0, 1),
//!
//! which gives exactly that joint distribution. Given a prediction, the
//! true gain is CN(ĥ, ν): what [`super::adaptive`] averages over.
//!
//! Errors are drawn from a generator seeded per slot, so the predicted
//! channel of a slot is the same whichever slots carried traffic before.

use rand::SeedableRng;

use super::math::{Complex, complex_gaussian};
use crate::rng::{StreamRng, stream};

#[derive(Clone, Debug)]
pub struct Predictor {
    nmse: f64,
    /// Mixed into every slot's seed.
    base: u64,
}

impl Predictor {
    /// `nmse` = ν in [0, 1); 0 is perfect prediction.
    pub fn new(nmse: f64, seed: u64, name: &str) -> Self {
        let base = rand::Rng::next_u64(&mut stream(seed, name));
        Predictor { nmse, base }
    }

    pub fn nmse(&self) -> f64 {
        self.nmse
    }

    /// The same predictor (same per-slot error streams) with NMSE `nmse`:
    /// a state that changes the prediction error changes the slots after
    /// it exactly as if the run had started with `nmse`.
    pub fn with_nmse(&self, nmse: f64) -> Self {
        Predictor { nmse, base: self.base }
    }

    /// The generator of slot `slot`'s prediction errors.
    pub fn slot_rng(&self, slot: u64) -> StreamRng {
        StreamRng::seed_from_u64(self.base ^ slot.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The prediction of unit-power gain `h`.
    pub fn predict(&self, h: Complex, rng: &mut StreamRng) -> Complex {
        if self.nmse == 0.0 {
            return h;
        }
        let nu = self.nmse;
        h.scale(1.0 - nu) + complex_gaussian(rng, nu * (1.0 - nu))
    }
}
