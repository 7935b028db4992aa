//! What netem's correlated generator gives, computed from its definition
//! rather than by running it: the expectation the tests hold squall's
//! runs of `loss P C`, `duplicate P C`, `corrupt P C` and `reorder P C`
//! against; and, for `delay MU JITTER C`, the kernel's arithmetic run
//! ([`netem_delay_autocorrelation`]).
//!
//! Linux `net/sched/sch_netem.c` `get_crandom()` makes, per decision,
//! `x_n = ((2^32 − ρ′)·U_n + ρ′·x_{n−1}) >> 32` with `ρ′ ≈ ρ·2^32`: on
//! [0, 1), `x_n = (1 − ρ)·U_n + ρ·x_{n−1}`, and an event of probability
//! `p` happens when `x_n ≤ p` (`loss_event()`; the reorder test
//! `q->reorder < get_crandom()` delays, so a packet goes early when
//! `x_n ≤ p`). The chain's stationary `x` is `Σ_k (1 − ρ)ρ^k·U_k`, a sum
//! of independent uniforms on [0, (1 − ρ)ρ^k]: its distribution function
//! is built here by convolving those uniforms on a grid (each convolution
//! integrates the distribution function exactly, piecewise quadratic),
//! until the next width is below 10⁻¹³. The 32-bit rounding of the kernel
//! (2⁻³²) is far below the grid's step (10⁻⁵).

/// Grid cells on [0, 1].
const CELLS: usize = 100_000;

/// The stationary distribution function of netem's correlated value
/// with correlation `rho` (0 ≤ ρ < 1), on the grid `i / CELLS`.
fn stationary_cdf(rho: f64) -> Vec<f64> {
    let h = 1.0 / CELLS as f64;
    let x = |i: usize| i as f64 * h;
    let mut c: Vec<f64> = (0..=CELLS).map(|i| (x(i) / (1.0 - rho)).min(1.0)).collect();
    let mut width = (1.0 - rho) * rho;
    while width > 1e-13 {
        // C(t) by linear interpolation, 0 below 0.
        let at = |c: &[f64], t: f64| -> f64 {
            if t <= 0.0 {
                return 0.0;
            }
            let j = ((t / h) as usize).min(CELLS - 1);
            let f = t / h - j as f64;
            c[j] + (c[j + 1] - c[j]) * f
        };
        let next: Vec<f64> = if width < h {
            // Narrower than a cell: a shift by the uniform's mean.
            (0..=CELLS).map(|i| at(&c, x(i) - width / 2.0)).collect()
        } else {
            // D(t) = ∫₀ᵗ C: exact for a piecewise linear C.
            let mut d = vec![0.0; CELLS + 1];
            for i in 1..=CELLS {
                d[i] = d[i - 1] + (c[i] + c[i - 1]) / 2.0 * h;
            }
            let d_at = |t: f64| -> f64 {
                if t <= 0.0 {
                    return 0.0;
                }
                let j = ((t / h) as usize).min(CELLS - 1);
                let s = t - j as f64 * h;
                d[j] + c[j] * s + (c[j + 1] - c[j]) * s * s / (2.0 * h)
            };
            // The sum's distribution function: (D(t) − D(t − w)) / w.
            (0..=CELLS).map(|i| (d[i] - d_at(x(i) - width)) / width).collect()
        };
        c = next;
        width *= rho;
    }
    c
}

fn interpolate(c: &[f64], p: f64) -> f64 {
    let t = p * CELLS as f64;
    let j = (t as usize).min(CELLS - 1);
    c[j] + (c[j + 1] - c[j]) * (t - j as f64)
}

/// What netem's generator with correlation `rho` gives an event of
/// probability `p`, in the long run: `P(x ≤ p)` and `P(x_n ≤ p | x_{n−1}
/// ≤ p)`, the conditional from `x_n = (1 − ρ)U + ρx_{n−1}`:
/// `∫₀ᵖ P((1 − ρ)U ≤ p − ρy) dF(y) / F(p)`.
pub fn event_probabilities(rho: f64, p: f64) -> (f64, f64) {
    let c = stationary_cdf(rho);
    let marginal = interpolate(&c, p);
    let h = 1.0 / CELLS as f64;
    let mut joint = 0.0;
    for j in 0..CELLS {
        let mid = (j as f64 + 0.5) * h;
        if mid > p {
            break;
        }
        joint += (c[j + 1] - c[j]) * ((p - rho * mid) / (1.0 - rho)).clamp(0.0, 1.0);
    }
    (marginal, if marginal > 0.0 { joint / marginal } else { 0.0 })
}

/// The lag-`lag` autocorrelation of the delays netem gives `delay MU
/// JITTER RHO` without a table, by running sch_netem.c's arithmetic for
/// `draws` packets (not its definition worked out: the modulo below has
/// no closed form worth the trouble): `get_crandom()` in 64-bit integers,
/// `answer = (value·(2³² − ρ′) + last·ρ′) >> 32` with `ρ′` = tc's
/// percentage of `u32::MAX` + 1 (`tc/tc_util.c get_percent`,
/// `get_crandom`'s `rho + 1`), then `tabledist()`'s `(rnd % (2σ)) + μ −
/// σ` with σ = `jitter_ns`. The 32-bit value is reduced modulo 2σ (20 ms
/// is 2·10⁷ of 2³² ≈ 4.3·10⁹), which leaves almost nothing of the
/// correlation. `value` comes from SplitMix64's high half.
pub fn netem_delay_autocorrelation(rho: f64, jitter_ns: u32, lag: usize, draws: usize) -> f64 {
    let rho = (rho * f64::from(u32::MAX)).round() as u64 + 1;
    let modulus = 2 * u64::from(jitter_ns);
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) >> 32
    };
    let mut last = 0u64;
    let delays: Vec<f64> = (0..draws)
        .map(|_| {
            last = (next() * ((1u64 << 32) - rho) + last * rho) >> 32;
            (last % modulus) as f64
        })
        .collect();
    super::ping::autocorrelation(&delays, lag)
}
