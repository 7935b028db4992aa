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
    correlated: Option<Box<Correlated>>,
    /// [`ErrorModel::Sequence`]: the decisions taken so far.
    decided: u64,
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
        ErrorProcess { model, rng, bad: false, four: LossState::TxInGap, correlated: None, decided: 0 }
    }

    /// A new model (a state change). A sequence goes on where it was while
    /// the decisions stay the same, and starts from its first otherwise.
    pub fn set_model(&mut self, model: ErrorModel) {
        let same_sequence = matches!((&self.model, &model),
            (ErrorModel::Sequence(a), ErrorModel::Sequence(b)) if a.pattern.same(&b.pattern));
        if !same_sequence {
            self.decided = 0;
        }
        self.model = model;
    }

    /// Correlates the per-packet draws (`error_correlation`); `rng` is the
    /// correlation's own stream, used only when one is first set.
    pub fn set_correlation(&mut self, correlation: Option<Correlation>, rng: impl FnOnce() -> StreamRng) {
        match (&mut self.correlated, correlation) {
            (None, None) => {}
            (Some(c), c2) => c.set_correlation(c2),
            (None, Some(c)) => self.correlated = Some(Box::new(Correlated::new(Some(c), rng()))),
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
            ErrorModel::Sequence(s) => {
                let lost = s.pattern.lost(self.decided);
                self.decided += 1;
                lost
            }
        }
    }

    /// A bit position in `0..bits` to flip in a corrupted frame: one
    /// uniformly drawn bit, as tc-netem's `corrupt` does (sch_netem.c
    /// `netem_enqueue()`: `skb->data[get_random_u32_below(skb_headlen(skb))]
    /// ^= 1 << get_random_u32_below(8)`).
    pub fn bit_to_flip(&mut self, bits: u64) -> u64 {
        ((unit(&mut self.rng) * bits as f64) as u64).min(bits.saturating_sub(1))
    }

    /// The per-bit error probability while the model is [`ErrorModel::Bit`]:
    /// then a hit frame carries as many bit errors as the bits drew, not
    /// one ([`ErrorProcess::bit_errors_given_hit`]).
    pub fn bit_probability(&self) -> Option<f64> {
        match &self.model {
            ErrorModel::Bit(b) => Some(b.get()),
            _ => None,
        }
    }

    /// The bits in error of a frame of `n` bits that [`frame_hit`] found
    /// hit, each bit in error independently with probability `b` (seed 000
    /// §4.3, errors "evaluated … on per-bit basis"): calls `hit` with each
    /// offset in `0..n`, ascending, and returns how many there were. The
    /// count is binomial(n, b) conditioned on at least one, so over all
    /// frames (hit or not) it is binomial(n, b).
    ///
    /// Exact sampling of the Bernoulli process by its gaps (Devroye,
    /// *Non-Uniform Random Variate Generation*, 1986, §X.2: the gaps
    /// between successes are i.i.d. geometric, drawn by inversion as
    /// ⌊ln U / ln(1 − b)⌋): the first error at J with P(J = j) =
    /// (1 − b)^j·b / (1 − (1 − b)^n), j < n (the geometric law truncated
    /// to the frame, by inversion of its CDF, as the radio stage's
    /// residual errors do), then one geometric gap after another until
    /// the frame ends. The draws cost one per error, not one per bit.
    ///
    /// [`frame_hit`]: ErrorProcess::frame_hit
    pub fn bit_errors_given_hit(&mut self, n: u64, b: f64, mut hit: impl FnMut(u64)) -> u64 {
        if n == 0 {
            return 0;
        }
        if b >= 1.0 {
            (0..n).for_each(&mut hit);
            return n;
        }
        let ln_q = f64::ln_1p(-b);
        let frame_error = -f64::exp_m1(n as f64 * ln_q);
        let j = (f64::ln_1p(-unit(&mut self.rng) * frame_error) / ln_q).floor();
        let mut at = if j.is_finite() { (j.max(0.0) as u64).min(n - 1) } else { 0 };
        let mut count = 0;
        loop {
            hit(at);
            count += 1;
            // Correct bits before the next error: U in (0, 1].
            let gap = ((1.0 - unit(&mut self.rng)).ln() / ln_q).floor();
            if !gap.is_finite() || gap >= (n - at - 1) as f64 {
                return count;
            }
            at += 1 + gap as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GilbertElliott;
    use crate::units::Probability;

    /// ln of the binomial(n, b) probability of k errors.
    fn ln_binomial_pmf(n: u64, b: f64, k: u64) -> f64 {
        let ln_choose: f64 = (0..k).map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln()).sum();
        ln_choose + k as f64 * b.ln() + (n - k) as f64 * f64::ln_1p(-b)
    }

    /// 1 000-byte frames (n = 8 000 bits), b = 10⁻³: given the frame was
    /// hit, the number of bit errors is binomial(n, b) conditioned on ≥ 1,
    /// of mean n·b/(1 − (1 − b)^n) = 8/(1 − 0.999^8000) = 8.0027 (variance
    /// close to the binomial's 8). 200 000 hit frames: σ of the mean ≈
    /// √(8/2·10⁵) = 0.0063, tolerance
    /// ±0.025 (4σ). The counts against the conditional binomial
    /// probabilities: Pearson's χ² over the classes 1..=18 and ≥ 19 (18
    /// degrees of freedom; 0.999 quantile 42.3). Every offset is inside
    /// the frame and ascending (distinct bits); a third of them fall in
    /// each third of the frame (±1%, the mean offset (n − 1)/2 ± 0.5%).
    #[test]
    fn bit_errors_of_a_hit_frame_are_binomial_given_at_least_one() {
        let (n, b) = (8000u64, 1e-3);
        let mut e =
            ErrorProcess::new(ErrorModel::Bit(Probability::new(b).unwrap()), crate::rng::stream(3, "test/bits"));
        let frames = 200_000;
        let mut counts = vec![0u64; 64];
        let (mut total, mut offsets_sum, mut offsets) = (0u64, 0f64, 0u64);
        let mut thirds = [0u64; 3];
        for _ in 0..frames {
            let mut last: Option<u64> = None;
            let k = e.bit_errors_given_hit(n, b, |at| {
                assert!(at < n && last.is_none_or(|l| at > l), "offset {at} after {last:?}");
                last = Some(at);
                offsets_sum += at as f64;
                offsets += 1;
                thirds[(at * 3 / n) as usize] += 1;
            });
            assert!(k >= 1);
            total += k;
            counts[(k as usize).min(63)] += 1;
        }
        assert_eq!(total, offsets);
        let f = 1.0 - (1.0 - b).powi(n as i32);
        let mean = total as f64 / frames as f64;
        let expected_mean = n as f64 * b / f;
        assert!((expected_mean - 8.0027).abs() < 1e-3, "{expected_mean}");
        assert!((mean - expected_mean).abs() <= 0.025, "mean {mean}, expected {expected_mean}");
        let mut chi2 = 0.0;
        let mut tail_expected = 1.0;
        for k in 1..=18u64 {
            let p = ln_binomial_pmf(n, b, k).exp() / f;
            tail_expected -= p;
            let expected = p * frames as f64;
            chi2 += (counts[k as usize] as f64 - expected).powi(2) / expected;
        }
        let tail: u64 = counts[19..].iter().sum();
        let expected = tail_expected * frames as f64;
        chi2 += (tail as f64 - expected).powi(2) / expected;
        assert!(chi2 < 42.3, "χ² = {chi2} over 18 degrees of freedom");
        for third in thirds {
            let share = third as f64 / offsets as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.01, "{thirds:?}");
        }
        let mean_offset = offsets_sum / offsets as f64;
        assert!((mean_offset / ((n - 1) as f64 / 2.0) - 1.0).abs() < 0.005, "mean offset {mean_offset}");
    }

    /// Over every frame, hit or not, the number of bit errors is
    /// binomial(n, b): with n = 400 bits and b = 0.005, P(0) = 0.995^400 =
    /// 0.13475, the mean n·b = 2. 10⁵ frames: σ of the mean √(1.99/10⁵)
    /// = 0.0045, tolerance 0.018 (4σ); σ of P(0) 0.0011, tolerance 0.0043.
    #[test]
    fn frame_hit_then_bit_errors_is_binomial_over_all_frames() {
        let (n, b) = (400u64, 0.005);
        let mut e =
            ErrorProcess::new(ErrorModel::Bit(Probability::new(b).unwrap()), crate::rng::stream(4, "test/bits"));
        let frames = 100_000;
        let (mut zero, mut total) = (0u64, 0u64);
        for _ in 0..frames {
            if e.frame_hit(n / 8) {
                total += e.bit_errors_given_hit(n, b, |_| {});
            } else {
                zero += 1;
            }
        }
        let p0 = zero as f64 / frames as f64;
        let mean = total as f64 / frames as f64;
        assert!((p0 - 0.995f64.powi(400)).abs() < 0.0043, "P(0) {p0}");
        assert!((mean - 2.0).abs() < 0.018, "mean {mean}");
    }

    /// A sequence hits exactly the frames its decisions name, looping
    /// (`0 0 1 0 1`: frames 2, 4, 7, 9, 12 of 13); a state change that keeps
    /// the same decisions goes on where it was, new decisions start from
    /// their first.
    #[test]
    fn a_sequence_hits_the_frames_it_names_in_order() {
        use crate::loss_sequence::LossSequence;
        let seq = ErrorModel::Sequence(LossSequence::new(&[false, false, true, false, true]));
        let mut e = ErrorProcess::new(seq.clone(), crate::rng::stream(1, "test/seq"));
        let hit: Vec<u32> = (0..13).filter(|_| e.frame_hit(100)).collect();
        assert_eq!(hit, vec![2, 4, 7, 9, 12]);
        // Frame 13 is decision 3 (kept), 14 is decision 4 (lost).
        e.set_model(seq.clone());
        assert_eq!((e.frame_hit(100), e.frame_hit(100)), (false, true));
        e.set_model(ErrorModel::Sequence(LossSequence::new(&[true, false])));
        assert_eq!((e.frame_hit(100), e.frame_hit(100), e.frame_hit(100)), (true, false, true));
    }

    #[test]
    fn every_bit_is_in_error_when_b_is_one() {
        let mut e = ErrorProcess::new(ErrorModel::None, crate::rng::stream(5, "test/bits"));
        let mut seen = Vec::new();
        assert_eq!(e.bit_errors_given_hit(12, 1.0, |at| seen.push(at)), 12);
        assert_eq!(seen, (0..12).collect::<Vec<_>>());
    }

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

    /// The same chain where the burst's good state 2 holds most of the
    /// burst: p13 = 1%, p31 = 10%, p32 = 40%, p23 = 10%, p14 = 0.5%. By
    /// hand: r = p13/p31 = 0.1, π2 = (p32/p23)·r·π1 = 0.4·π1, π1 = 1/(1 +
    /// p14 + r + 0.4) = 1/1.505, loss = (r + p14)·π1 = 0.105/1.505 =
    /// 0.069767. Were p23 ignored (state 2 always back to 3, the mutant
    /// cargo-mutants found missed: mutants/RECORD.md), π1 = 1/(1.005 +
    /// 0.1 + 0.04) and the loss 0.091703. Tolerance 0.005 on 2·10⁶ frames
    /// (about six standard deviations of a process with cycles of ~130
    /// frames), a quarter of the difference.
    /// A state that changes `error_correlation` takes effect from the next
    /// frame, and one that removes it makes the draws independent again
    /// (the mutant `set_correlation` → `()` was missed: mutants/RECORD.md).
    /// Packet loss p = 0.1; with squall's Markov generator at ρ = 0.5,
    /// P(loss | loss before) = ρ + (1 − ρ)·p = 0.55 and the marginal stays
    /// p (dist/correlated.rs); independent, both are p. 200 000 frames a
    /// phase, ~20 000 after a loss: σ of the conditional ≈ 0.0035 at 0.55
    /// and 0.0021 at 0.1; of the marginal ≈ 0.0012 with the correlation
    /// (lag-1 correlation 0.5 triples the variance). Tolerances ≈ 5σ.
    #[test]
    fn a_state_change_of_error_correlation_takes_effect() {
        use crate::dist::correlated::CorrelationGenerator;
        let mut e =
            ErrorProcess::new(ErrorModel::Packet(Probability::new(0.1).unwrap()), crate::rng::stream(13, "test/c"));
        let phase = |e: &mut ErrorProcess| {
            let (n, mut lost, mut after_loss, mut both, mut previous) = (200_000u64, 0u64, 0u64, 0u64, false);
            for _ in 0..n {
                let hit = e.frame_hit(100);
                if previous {
                    after_loss += 1;
                    both += u64::from(hit);
                }
                lost += u64::from(hit);
                previous = hit;
            }
            (lost as f64 / n as f64, both as f64 / after_loss as f64)
        };
        let (m1, c1) = phase(&mut e);
        let rho = Correlation { correlation: Probability::new(0.5).unwrap(), generator: CorrelationGenerator::Markov };
        e.set_correlation(Some(rho), || crate::rng::stream(13, "test/c-correlation"));
        let (m2, c2) = phase(&mut e);
        e.set_correlation(None, || crate::rng::stream(13, "test/unused"));
        let (m3, c3) = phase(&mut e);
        for (what, got, want, tol) in [
            ("marginal before", m1, 0.1, 0.006),
            ("P(loss | loss) before", c1, 0.1, 0.011),
            ("marginal with rho 0.5", m2, 0.1, 0.006),
            ("P(loss | loss) with rho 0.5", c2, 0.55, 0.018),
            ("marginal after", m3, 0.1, 0.006),
            ("P(loss | loss) after", c3, 0.1, 0.011),
        ] {
            assert!((got - want).abs() <= tol, "{what}: {got}, expected {want} ± {tol}");
        }
    }

    #[test]
    fn four_state_loss_follows_p23_within_a_burst() {
        let p = |v| Probability::new(v).unwrap();
        let f = FourState { p13: p(0.01), p31: p(0.1), p32: p(0.4), p23: p(0.1), p14: p(0.005) };
        let expected = f.stationary_loss();
        assert!((expected - 0.105 / 1.505).abs() < 1e-9, "{expected}");
        let mut e = ErrorProcess::new(ErrorModel::FourState(f), crate::rng::stream(11, "test/4state-p23"));
        let n = 2_000_000;
        let loss = (0..n).filter(|_| e.frame_hit(200)).count() as f64 / n as f64;
        assert!((loss - expected).abs() < 0.005, "loss {loss}, expected {expected} (0.0917 if p23 were ignored)");
    }
}
