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
