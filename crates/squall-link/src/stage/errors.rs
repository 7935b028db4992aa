//! The error process of a link: decides, frame by frame, whether a
//! transmission was hit (seed 000 §4.3; VALIDATION cases 7–9).

use crate::config::ErrorModel;
use crate::dist::correlated::{Correlated, Correlation};
use crate::dist::unit;
use crate::netem::FourState;
use crate::rng::StreamRng;

#[derive(Debug)]
pub struct ErrorProcess {
    model: ErrorModel,
    rng: StreamRng,
    /// Gilbert-Elliott: currently in the bad state.
    bad: bool,
    /// The four-state model's state.
    four: LossState,
    /// Correlated per-packet draws (`error_correlation`), on their own
    /// stream; `None` while there is no correlation.
    correlated: Option<Correlated>,
}

/// The states of the four-state loss model ([`FourState`]; sch_netem.c
/// `loss_4state()`, Salsano et al. 2012 §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LossState {
    /// 1: good reception within a gap (the initial state).
    TxInGap,
    /// 2: good reception within a burst.
    TxInBurst,
    /// 3: loss within a burst.
    LostInBurst,
    /// 4: an isolated loss.
    LostInGap,
}

impl ErrorProcess {
    pub fn new(model: ErrorModel, rng: StreamRng) -> Self {
        ErrorProcess { model, rng, bad: false, four: LossState::TxInGap, correlated: None }
    }

    pub fn set_model(&mut self, model: ErrorModel) {
        self.model = model;
    }

    /// Correlates the per-packet draws (`error_correlation`); `rng` is the
    /// correlation's own stream, used only when one is first set.
    pub fn set_correlation(&mut self, correlation: Option<Correlation>, rng: impl FnOnce() -> StreamRng) {
        match (&mut self.correlated, correlation) {
            (None, None) => {}
            (Some(c), c2) => c.set_correlation(c2),
            (None, Some(c)) => self.correlated = Some(Correlated::new(Some(c), rng())),
        }
    }

    /// One step of the four-state chain: the state entered decides the
    /// frame (sch_netem.c `loss_4state()`, one uniform draw per frame).
    fn four_state_hit(&mut self, f: &FourState) -> bool {
        let u = unit(&mut self.rng);
        let (p13, p31, p32, p23, p14) = (f.p13.get(), f.p31.get(), f.p32.get(), f.p23.get(), f.p14.get());
        self.four = match self.four {
            LossState::TxInGap if u < p14 => LossState::LostInGap,
            LossState::TxInGap if u < p13 + p14 => LossState::LostInBurst,
            LossState::TxInGap => LossState::TxInGap,
            LossState::TxInBurst if u < p23 => LossState::LostInBurst,
            LossState::TxInBurst => LossState::TxInBurst,
            LossState::LostInBurst if u < p32 => LossState::TxInBurst,
            LossState::LostInBurst if u < p31 + p32 => LossState::TxInGap,
            LossState::LostInBurst => LossState::LostInBurst,
            LossState::LostInGap => LossState::TxInGap,
        };
        matches!(self.four, LossState::LostInBurst | LossState::LostInGap)
    }

    /// Whether a frame of `wire_bytes` bytes is hit.
    pub fn frame_hit(&mut self, wire_bytes: u64) -> bool {
        match &self.model {
            ErrorModel::None => false,
            ErrorModel::Packet(p) => match &mut self.correlated {
                Some(c) => c.happens(p.get()),
                None => unit(&mut self.rng) < p.get(),
            },
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
            ErrorModel::FourState(f) => {
                let f = f.clone();
                self.four_state_hit(&f)
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

    /// The four-state model with p13 = 1%, p31 = 30%, p32 = 20%, p23 = 40%,
    /// p14 = 0.5%, worked by hand from the balance equations: r = p13/p31
    /// = 1/30, π1 = 1/(1 + p14 + r(1 + p32/p23)) = 1/1.055, loss =
    /// (r + p14)·π1 = 0.038333/1.055 = 0.036335. Runs of losses in state
    /// 3 end with probability p31 + p32 = 0.5 per frame: mean length 2.
    /// Isolated losses (state 4) always last one frame and state 3 is
    /// entered from 1 and 2, so the mean run of consecutive losses counts
    /// both: checked here on the loss rate only, with 2·10⁶ frames;
    /// σ ≈ √(L(1−L)·(1+2·2)/n) = 0.00030 (runs of mean 2 inflate the
    /// variance about fivefold), tolerance 0.0015 (5σ).
    #[test]
    fn four_state_loss_matches_the_stationary_loss() {
        let p = |v| Probability::new(v).unwrap();
        let f = FourState { p13: p(0.01), p31: p(0.3), p32: p(0.2), p23: p(0.4), p14: p(0.005) };
        let expected = f.stationary_loss();
        assert!((expected - 0.038333333 / 1.055).abs() < 1e-6);
        let mut e = ErrorProcess::new(ErrorModel::FourState(f), crate::rng::stream(9, "test/4state"));
        let n = 2_000_000;
        let lost = (0..n).filter(|_| e.frame_hit(200)).count();
        let loss = lost as f64 / n as f64;
        assert!((loss - expected).abs() < 0.0015, "loss {loss}, expected {expected}");
    }
}
