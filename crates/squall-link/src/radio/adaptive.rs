//! Adaptive modulation: switching levels on the predicted SNR that maximise
//! the expected number of bits a frame delivers (seed 002 §III.A footnote 4,
//! after Sternad & Falahati, PIMRC 2004, seed 002 ref. \[19\]).
//!
//! For modulation m with k bits per symbol and N symbols per frame, a frame
//! sent at predicted SNR γ̂ delivers on average
//!
//! T_m(γ̂) = k·N·E[(1 − SER_m(γ))^N | γ̂].
//!
//! With perfect prediction γ = γ̂. With prediction NMSE ν the true gain is
//! CN(ĥ, ν) given the prediction ĥ ([`super::prediction`]), so |h| is Rician
//! around |ĥ| = √(γ̂/P), P the local mean SNR, and γ = P·|h|². The
//! expectation is a one-dimensional integral over |h| (Simpson's rule).
//!
//! The levels are where the best m changes; they depend on P when ν > 0,
//! so tables are built per 0.5 dB of local mean and cached.

use std::collections::BTreeMap;

use super::math::{bessel_i0_scaled, db_to_linear, linear_to_db};
use super::modulation::{Modulation, frame_error_from_ser};

/// Lowest and highest predicted SNR, dB, searched for switching levels.
const SEARCH_DB: (f64, f64) = (-20.0, 80.0);
/// Grid step of the first search, dB.
const GRID_DB: f64 = 1.0;
/// Simpson intervals over the Rician amplitude.
const INTERVALS: usize = 64;
/// Local-mean buckets per dB.
const BUCKETS_PER_DB: f64 = 2.0;

/// Probability that a frame of `symbols` symbols sent at predicted SNR
/// `predicted` (linear) arrives without error, for every modulation: the
/// expectation of 1 − FER over the true SNR given the prediction, with local
/// mean SNR `local_mean` (linear) and prediction NMSE `nmse`.
pub fn expected_frame_success(predicted: f64, local_mean: f64, nmse: f64, symbols: u32) -> [f64; 8] {
    let success = |snr: f64| Modulation::ALL.map(|m| 1.0 - frame_error_from_ser(m.symbol_error_rate(snr), symbols));
    let mut total = [0.0; 8];
    let norm = rician_quadrature(predicted, local_mean, nmse, |w, snr| {
        for (t, s) in total.iter_mut().zip(success(snr)) {
            *t += w * s;
        }
    });
    match norm {
        Some(norm) => total.map(|t| t / norm),
        None => success(predicted),
    }
}

/// Expected bits per frame for each modulation, k·N·E[1 − FER].
pub fn expected_bits_per_frame(predicted: f64, local_mean: f64, nmse: f64, symbols: u32) -> [f64; 8] {
    let s = expected_frame_success(predicted, local_mean, nmse, symbols);
    Modulation::ALL.map(|m| m.bits_per_symbol() as f64 * symbols as f64 * s[m.index()])
}

/// Expected bits per frame for a few formats only (cheaper than all 8).
fn expected_bits_for(formats: &[Modulation; 2], predicted: f64, local_mean: f64, nmse: f64, symbols: u32) -> [f64; 2] {
    let success = |m: Modulation, snr: f64| 1.0 - frame_error_from_ser(m.symbol_error_rate(snr), symbols);
    let bits = |m: Modulation| m.bits_per_symbol() as f64 * symbols as f64;
    let mut total = [0.0; 2];
    let norm = rician_quadrature(predicted, local_mean, nmse, |w, snr| {
        for (t, &m) in total.iter_mut().zip(formats) {
            *t += w * success(m, snr);
        }
    });
    match norm {
        Some(norm) => [0, 1].map(|i| bits(formats[i]) * total[i] / norm),
        None => formats.map(|m| bits(m) * success(m, predicted)),
    }
}

/// Calls `visit(weight, true_snr)` at Simpson nodes of the Rician density of
/// |h| given the prediction; returns the total weight, or `None` for
/// perfect prediction (the true SNR is the predicted one).
fn rician_quadrature(predicted: f64, local_mean: f64, nmse: f64, mut visit: impl FnMut(f64, f64)) -> Option<f64> {
    if nmse <= 0.0 || local_mean <= 0.0 {
        return None;
    }
    // f(r) = (2r/ν)·exp(−(r − a)²/ν)·e^{−2ar/ν}I0(2ar/ν), h ~ CN(a, ν).
    let a = (predicted.max(0.0) / local_mean).sqrt();
    let spread = 6.0 * nmse.sqrt();
    let (lo, hi) = ((a - spread).max(0.0), a + spread);
    let step = (hi - lo) / INTERVALS as f64;
    let mut norm = 0.0;
    for i in 0..=INTERVALS {
        let r = lo + step * i as f64;
        let simpson = if i == 0 || i == INTERVALS {
            1.0
        } else if i % 2 == 1 {
            4.0
        } else {
            2.0
        };
        let w = simpson * 2.0 * r / nmse * (-(r - a) * (r - a) / nmse).exp() * bessel_i0_scaled(2.0 * a * r / nmse);
        if w > 0.0 {
            norm += w;
            visit(w, local_mean * r * r);
        }
    }
    (norm > 0.0).then_some(norm)
}

/// The smallest x in [lo, hi] (to `iterations` halvings) where the
/// monotone predicate `above` holds; `hi` if it holds nowhere below.
fn bisect(mut lo: f64, mut hi: f64, iterations: u32, above: impl Fn(f64) -> bool) -> f64 {
    if above(lo) {
        return f64::NEG_INFINITY;
    }
    if !above(hi) {
        return f64::INFINITY;
    }
    for _ in 0..iterations {
        let mid = (lo + hi) / 2.0;
        if above(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Predicted-SNR thresholds: modulation i is used from `levels_db[i]` up to
/// the next level (seed 002 §II.B: "a high SNR enables higher modulation").
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchingLevels {
    /// dB; `levels_db[0]` is −∞ (BPSK is the floor), +∞ for a modulation
    /// that is never the best. Non-decreasing.
    levels_db: [f64; 8],
    levels: [f64; 8],
}

impl SwitchingLevels {
    /// The levels for local mean SNR `local_mean` (linear), prediction NMSE
    /// `nmse` and frames of `symbols` symbols.
    ///
    /// Each level is where a format starts to beat the one below it
    /// (bisection on the predicted SNR in dB); if that leaves them out of
    /// order (a format never best), a grid search over all formats decides.
    pub fn design(local_mean: f64, nmse: f64, symbols: u32) -> Self {
        let mut levels_db = [f64::NEG_INFINITY; 8];
        for (k, level) in levels_db.iter_mut().enumerate().skip(1) {
            let pair = [Modulation::ALL[k - 1], Modulation::ALL[k]];
            let better = |db: f64| {
                let bits = expected_bits_for(&pair, db_to_linear(db), local_mean, nmse, symbols);
                bits[1] > bits[0]
            };
            *level = bisect(SEARCH_DB.0, SEARCH_DB.1, 24, better);
        }
        if levels_db.windows(2).any(|w| w[0] > w[1]) {
            levels_db = Self::design_by_grid(local_mean, nmse, symbols);
        }
        SwitchingLevels { levels: levels_db.map(db_to_linear), levels_db }
    }

    fn design_by_grid(local_mean: f64, nmse: f64, symbols: u32) -> [f64; 8] {
        let best = |db: f64| {
            let bits = expected_bits_per_frame(db_to_linear(db), local_mean, nmse, symbols);
            // Ties go to the lower (more robust) format.
            (0..8).fold(0, |b, i| if bits[i] > bits[b] { i } else { b })
        };
        let mut levels_db = [f64::INFINITY; 8];
        levels_db[0] = f64::NEG_INFINITY;
        let steps = ((SEARCH_DB.1 - SEARCH_DB.0) / GRID_DB) as usize;
        let mut prev_db = SEARCH_DB.0;
        let mut prev_best = best(prev_db);
        // Formats already best below the search range are used from −∞.
        for level in &mut levels_db[1..=prev_best] {
            *level = f64::NEG_INFINITY;
        }
        for s in 1..=steps {
            let db = SEARCH_DB.0 + GRID_DB * s as f64;
            let now_best = best(db);
            for (i, level) in levels_db.iter_mut().enumerate().take(now_best + 1).skip(prev_best + 1) {
                *level = bisect(prev_db, db, 14, |mid| best(mid) >= i);
            }
            prev_best = prev_best.max(now_best);
            if prev_best == 7 {
                break;
            }
            prev_db = db;
        }
        // Formats skipped over start where the next used one does.
        for i in (1..7).rev() {
            if levels_db[i] > levels_db[i + 1] {
                levels_db[i] = levels_db[i + 1];
            }
        }
        levels_db
    }

    pub fn levels_db(&self) -> [f64; 8] {
        self.levels_db
    }

    /// The format for predicted SNR `predicted` (linear).
    pub fn choose(&self, predicted: f64) -> Modulation {
        let i = self.levels.iter().rposition(|&l| l <= predicted).unwrap_or(0);
        Modulation::ALL[i]
    }
}

/// Chooses each frame's modulation, caching switching levels per 0.5 dB of
/// local mean SNR when prediction is imperfect.
#[derive(Clone, Debug)]
pub struct AdaptiveModulator {
    nmse: f64,
    symbols: u32,
    tables: BTreeMap<i64, SwitchingLevels>,
}

impl AdaptiveModulator {
    pub fn new(nmse: f64, symbols: u32) -> Self {
        AdaptiveModulator { nmse, symbols, tables: BTreeMap::new() }
    }

    /// The levels in use at local mean SNR `local_mean` (linear).
    pub fn levels(&mut self, local_mean: f64) -> &SwitchingLevels {
        let key = if self.nmse > 0.0 {
            let db = linear_to_db(local_mean);
            if db.is_finite() { (db * BUCKETS_PER_DB).round() as i64 } else { i64::MIN }
        } else {
            0
        };
        let (nmse, symbols) = (self.nmse, self.symbols);
        self.tables.entry(key).or_insert_with(|| {
            let mean = if key == i64::MIN { 0.0 } else { db_to_linear(key as f64 / BUCKETS_PER_DB) };
            SwitchingLevels::design(mean, nmse, symbols)
        })
    }

    /// Designs the tables for local means from `lo_db` to `hi_db` now, so
    /// that a real-time driver never waits for one (each takes a few ms).
    pub fn prepare(&mut self, lo_db: f64, hi_db: f64) {
        let mut db = lo_db;
        while db <= hi_db {
            self.levels(db_to_linear(db));
            db += 1.0 / BUCKETS_PER_DB;
        }
    }

    pub fn choose(&mut self, predicted: f64, local_mean: f64) -> Modulation {
        self.levels(local_mean).choose(predicted)
    }
}
