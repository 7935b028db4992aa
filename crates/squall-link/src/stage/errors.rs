//! The error process of a link: decides, frame by frame, whether a
//! transmission was hit (seed 000 §4.3; VALIDATION cases 7–9).

use crate::config::ErrorModel;
use crate::dist::unit;
use crate::rng::StreamRng;

#[derive(Debug)]
pub struct ErrorProcess {
    model: ErrorModel,
    rng: StreamRng,
    /// Gilbert-Elliott: currently in the bad state.
    bad: bool,
}

impl ErrorProcess {
    pub fn new(model: ErrorModel, rng: StreamRng) -> Self {
        ErrorProcess { model, rng, bad: false }
    }

    pub fn set_model(&mut self, model: ErrorModel) {
        self.model = model;
    }

    /// Whether a frame of `wire_bytes` bytes is hit.
    pub fn frame_hit(&mut self, wire_bytes: u64) -> bool {
        match &self.model {
            ErrorModel::None => false,
            ErrorModel::Packet(p) => unit(&mut self.rng) < p.get(),
            ErrorModel::Bit(b) => {
                // 1-(1-b)^n computed without cancellation for small b.
                let p = -f64::exp_m1(wire_bytes as f64 * 8.0 * f64::ln_1p(-b.get()));
                unit(&mut self.rng) < p
            }
            ErrorModel::BerPerByte(b) => unit(&mut self.rng) < (b.get() * wire_bytes as f64).min(1.0),
            ErrorModel::GilbertElliott(ge) => {
                // The frame's fate is decided in the current state, then the
                // chain moves: stationary loss (p(1-h)+r(1-k))/(p+r).
                let survive = if self.bad { ge.h.get() } else { ge.k.get() };
                let hit = unit(&mut self.rng) >= survive;
                let flip = if self.bad { ge.r.get() } else { ge.p.get() };
                if unit(&mut self.rng) < flip {
                    self.bad = !self.bad;
                }
                hit
            }
        }
    }

    /// A bit position in `0..bits` to flip in a corrupted frame.
    pub fn bit_to_flip(&mut self, bits: u64) -> u64 {
        ((unit(&mut self.rng) * bits as f64) as u64).min(bits.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GilbertElliott;
    use crate::units::Probability;

    /// Gilbert-Elliott with loss in both states (h = 0.3 gets through in
    /// the bad state, k = 0.999 in the good one), p = 0.01, r = 0.1: the
    /// chain spends π_B = p/(p+r) = 1/11 of the frames in the bad state, so
    /// the stationary loss is (p(1−h) + r(1−k))/(p+r) = (0.007 + 0.0001)/0.11
    /// = 0.064545 (0.0909 if h and k were ignored, 0.0636 if only k were).
    /// Tolerance: the loss indicators are correlated through the state
    /// (second eigenvalue λ = 1 − p − r = 0.89), so the variance of one
    /// frame's contribution to the mean is L(1−L) + 2·π_G·π_B·(k−h)²·λ/(1−λ)
    /// = 0.0604 + 0.6534 = 0.714; over 10⁶ frames σ = 0.00085, and ±0.0034
    /// is 4σ.
    #[test]
    fn gilbert_elliott_loses_frames_in_both_states_as_h_and_k_say() {
        let ge = GilbertElliott {
            p: Probability::new(0.01).unwrap(),
            r: Probability::new(0.1).unwrap(),
            h: Probability::new(0.3).unwrap(),
            k: Probability::new(0.999).unwrap(),
        };
        let mut e = ErrorProcess::new(ErrorModel::GilbertElliott(ge), crate::rng::stream(7, "test/ge"));
        let n = 1_000_000;
        let lost = (0..n).filter(|_| e.frame_hit(200)).count();
        let loss = lost as f64 / n as f64;
        let expected = (0.01 * 0.7 + 0.1 * 0.001) / 0.11;
        assert!((loss - expected).abs() <= 0.0034, "loss {loss}, expected {expected} ± 0.0034");
    }
}
