//! netem's delay distribution tables (tc-netem(8) `delay D J distribution
//! normal|pareto|paretonormal`), generated here from the definitions in
//! iproute2's `netem/normal.c`, `netem/pareto.c` and
//! `netem/paretonormal.c` rather than read from the `.dist` files tc
//! installs.
//!
//! Each table holds 4096 values of an inverse cumulative distribution,
//! scaled by `NETEM_DIST_SCALE` (8192, include/uapi/linux/pkt_sched.h) and
//! kept in an `s16` (clamped to −32768..=32767). The kernel draws one
//! entry uniformly and makes the delay `mu + sigma · t / 8192`
//! (net/sched/sch_netem.c `tabledist()`, with `mu` the delay and `sigma`
//! the jitter); a negative result makes the packet due at once (its
//! `time_to_send` is before now), which [`NetemTable::delay`] returns as 0.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// `NETEM_DIST_SCALE` (include/uapi/linux/pkt_sched.h).
pub const NETEM_DIST_SCALE: f64 = 8192.0;

/// Entries per table: iproute2 steps its index by 4 over 16384 (normal,
/// paretonormal) or by 16 over 65536 (pareto).
const ENTRIES: usize = 4096;

/// netem's named delay distributions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetemTable {
    /// iproute2 `netem/normal.c`: the standard normal's inverse CDF.
    Normal,
    /// iproute2 `netem/pareto.c`: a Pareto of shape 3 and minimum 1,
    /// shifted by −1.5 (its mean) and scaled by 4/3, clamped above at 4.
    Pareto,
    /// iproute2 `netem/paretonormal.c`: ¼ normal + ¾ Pareto, taken at the
    /// same quantile.
    Paretonormal,
}

impl NetemTable {
    pub const ALL: [NetemTable; 3] = [NetemTable::Normal, NetemTable::Pareto, NetemTable::Paretonormal];

    pub fn as_str(self) -> &'static str {
        match self {
            NetemTable::Normal => "normal",
            NetemTable::Pareto => "pareto",
            NetemTable::Paretonormal => "paretonormal",
        }
    }

    /// The 4096 table entries, in iproute2's order.
    pub fn entries(self) -> &'static [i16] {
        static TABLES: [OnceLock<Vec<i16>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let (slot, make): (usize, fn() -> Vec<i16>) = match self {
            NetemTable::Normal => (0, normal_table),
            NetemTable::Pareto => (1, pareto_table),
            NetemTable::Paretonormal => (2, paretonormal_table),
        };
        TABLES[slot].get_or_init(make)
    }

    /// The delay netem gives a packet for table entry number `index`
    /// (`tabledist()`: `mu + sigma · t / NETEM_DIST_SCALE`), in the unit
    /// of `mu` and `sigma`; never negative.
    pub fn delay(self, index: usize, mu: f64, sigma: f64) -> f64 {
        table_delay(self.entries(), index, mu, sigma)
    }

    pub fn len(self) -> usize {
        ENTRIES
    }

    pub fn is_empty(self) -> bool {
        false
    }
}

/// The most entries a table may have: tc's `MAX_DIST` (iproute2
/// `tc/q_netem.c`, 16 × 1024), what one netlink message carries.
pub const MAX_ENTRIES: usize = 16 * 1024;

/// The delay for entry number `index` (modulo the table's length) of a
/// table of `entries` (sch_netem.c `tabledist()`: `mu + sigma · t /
/// NETEM_DIST_SCALE` for `t = table[rnd % size]`), in the unit of `mu` and
/// `sigma`; never negative. `entries` is not empty.
#[inline]
pub fn table_delay(entries: &[i16], index: usize, mu: f64, sigma: f64) -> f64 {
    let t = f64::from(entries[index % entries.len()]);
    (mu + sigma * t / NETEM_DIST_SCALE).max(0.0)
}

/// Why [`maketable`] cannot build a table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MakeTableError {
    #[error("no samples; expected at least two numbers")]
    TooFew,
    #[error(
        "the samples are all equal ({0}), so they have no spread to scale by; expected at least two different values"
    )]
    NoSpread(f64),
}

/// iproute2's `maketable` (netem/maketable.c, from NIST Net): a netem
/// table of 4096 entries from measured samples, as `makedist`,
/// `cumulativedist`, `inverttable` and `interpolatetable` build it. Each
/// sample is normalised by the samples' mean μ and deviation σ (n − 1 in
/// the denominator, `arraystats`), put in one of 8 · 50 000 bins over
/// [−4, 4); the cumulative count at each bin puts that bin's value
/// (`rint(x · 8192)`, within −32767..=32767) at entry `rint(F · 4096)`
/// (the last bin to land on an entry wins); the entries no bin landed on
/// are filled by C's integer linear interpolation between their
/// neighbours (towards 32767 after the last). Replayed with `delay μ σ
/// distribution FILE`, the table gives back the samples' distribution,
/// with maketable's quirk kept: every bin past the largest sample has the
/// cumulative share 1 and lands on the last entry, so that entry is
/// always the domain's top, 32767 (+4σ), and 1 draw in 4096 gets it.
pub fn maketable(samples: &[f64]) -> Result<Vec<i16>, MakeTableError> {
    const TABLESIZE: usize = ENTRIES;
    const MINSHORT: i32 = -32768;
    const MAXSHORT: i32 = 32767;
    const DOMAIN: i32 = MAXSHORT / 8192 + 1;
    const GRANULARITY: i32 = 50_000;
    const BINS: usize = (DOMAIN * GRANULARITY * 2) as usize;
    let n = samples.len();
    if n < 2 {
        return Err(MakeTableError::TooFew);
    }
    let mu = samples.iter().sum::<f64>() / n as f64;
    let sumsquare: f64 = samples.iter().map(|x| x * x).sum();
    let sigma = ((sumsquare - n as f64 * mu * mu) / (n as f64 - 1.0)).sqrt();
    if !(sigma > 0.0 && sigma.is_finite()) {
        return Err(MakeTableError::NoSpread(samples[0]));
    }
    // makedist: a histogram of the normalised samples.
    let mut bins = vec![0u32; BINS];
    for &x in samples {
        let input = (x - mu) / sigma;
        let index = rint((input + f64::from(DOMAIN)) * f64::from(GRANULARITY));
        let index = if index.is_nan() { 0 } else { index.clamp(0.0, (BINS - 1) as f64) as usize };
        bins[index] += 1;
    }
    // cumulativedist, then inverttable.
    let mut inverse = vec![MINSHORT; TABLESIZE];
    let mut accum = 0u64;
    let total = n as f64;
    for (i, &count) in bins.iter().enumerate() {
        accum += u64::from(count);
        let findex = i as f64 / f64::from(GRANULARITY) - f64::from(DOMAIN);
        let fvalue = accum as f64 / total;
        let at = (rint(fvalue * TABLESIZE as f64) as usize).min(TABLESIZE - 1);
        let value = (rint(findex * NETEM_DIST_SCALE) as i32).clamp(MINSHORT + 1, MAXSHORT);
        inverse[at] = value;
    }
    // interpolatetable: C's int arithmetic, division towards zero.
    let (mut last, mut lasti) = (MINSHORT, -1i32);
    for i in 0..TABLESIZE {
        if inverse[i] == MINSHORT {
            let (next, target) = match (i..TABLESIZE).find(|&j| inverse[j] != MINSHORT) {
                Some(j) => (j as i32, inverse[j]),
                None => (TABLESIZE as i32, MAXSHORT),
            };
            inverse[i] = last + (i as i32 - lasti) * (target - last) / (next - lasti);
        } else {
            last = inverse[i];
            lasti = i as i32;
        }
    }
    Ok(inverse.into_iter().map(|v| v as i16).collect())
}

/// A table in iproute2's `.dist` text format, as `maketable` prints it:
/// a comment line, then the entries eight to a line.
pub fn format_dist(entries: &[i16]) -> String {
    let mut out = String::from("# This is the distribution table for the experimental distribution.\n");
    for (i, v) in entries.iter().enumerate() {
        out.push_str(&v.to_string());
        out.push(if i % 8 == 7 { '\n' } else { ' ' });
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn clamp_s16(v: f64) -> i16 {
    v.clamp(f64::from(i16::MIN), f64::from(i16::MAX)) as i16
}

/// C's `rint` in the default rounding mode: to nearest, ties to even.
fn rint(v: f64) -> f64 {
    v.round_ties_even()
}

/// normal.c's `table`: for x from −10 in steps of 0.00005 up to 10.05,
/// `table[rint(16384 · Φ(x))] = x` (the last x wins), Φ from erf as
/// normal.c computes it. The step is added to a double as normal.c does,
/// so the same x values are visited.
fn normal_quantiles() -> Vec<f64> {
    const SIZE: usize = 16384;
    let mut table = vec![0.0; SIZE + 1];
    let mut x = -10.0_f64;
    while x < 10.05 {
        let phi = 0.5 + 0.5 * libm::erf(x / std::f64::consts::SQRT_2);
        let i = rint(SIZE as f64 * phi) as usize;
        table[i.min(SIZE)] = x;
        x += 0.00005;
    }
    table
}

/// normal.c: every fourth quantile, `rint(x · 8192)` clamped to an s16.
fn normal_table() -> Vec<i16> {
    let q = normal_quantiles();
    (0..16384).step_by(4).map(|i| clamp_s16(rint(q[i] * NETEM_DIST_SCALE))).collect()
}

/// pareto.c and paretonormal.c's `paretovalue`: for `u` in (0, 1],
/// `(u^(-1/3) − 1.5) · 4/3 · 8192`, capped at 32767, rounded.
fn pareto_value(u: f64) -> i32 {
    const SHAPE: f64 = 3.0;
    let v = (1.0 / u.powf(1.0 / SHAPE) - 1.5) * (4.0 / 3.0) * NETEM_DIST_SCALE;
    rint(v.min(32767.0)) as i32
}

/// pareto.c: i from 65536 down to 16 in steps of 16, u = i / 65536.
fn pareto_table() -> Vec<i16> {
    (0..ENTRIES).map(|k| clamp_s16(f64::from(pareto_value(f64::from(65536 - 16 * k as i32) / 65536.0)))).collect()
}

/// paretonormal.c: for i = 0, 4, …, 16380, `(normal + 3 · pareto) / 4` in
/// C's integer division (towards zero), with the Pareto value at
/// u = (65536 − 4i) / 65536, then clamped to an s16.
fn paretonormal_table() -> Vec<i16> {
    let q = normal_quantiles();
    (0..16384)
        .step_by(4)
        .map(|i| {
            let normal = rint(q[i] * NETEM_DIST_SCALE) as i32;
            let pareto = pareto_value(f64::from(65536 - 4 * i as i32) / 65536.0);
            clamp_s16(f64::from((normal + 3 * pareto) / 4))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean and standard deviation of a table's t / 8192 (every entry is
    /// equally likely).
    fn moments(t: NetemTable) -> (f64, f64) {
        let xs: Vec<f64> = t.entries().iter().map(|&v| f64::from(v) / NETEM_DIST_SCALE).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn tables_have_iproute2_shape() {
        for t in NetemTable::ALL {
            assert_eq!(t.entries().len(), 4096, "{t:?}");
            assert!(t.entries().windows(2).all(|w| w[0] <= w[1]), "{t:?} is an inverse CDF, so ascending");
        }
        // pareto.c's first entry: u = 1, (1 − 1.5) · 4/3 · 8192 = −5461.33 → −5461;
        // its last, u = 16/65536: 16 − 1.5 = 14.5 → capped at 32767.
        assert_eq!(NetemTable::Pareto.entries()[0], -5461);
        assert_eq!(NetemTable::Pareto.entries()[4095], 32767);
        // normal.c's middle entry is Φ⁻¹(0.5) = 0.
        assert_eq!(NetemTable::Normal.entries()[2048], 0);
    }

    /// The normal table against the standard normal: mean 0, deviation 1
    /// (its 4096 quantiles stop near ±3.7 σ, which takes 0.3 % off).
    #[test]
    fn normal_table_is_standard_normal() {
        let (mean, sd) = moments(NetemTable::Normal);
        assert!(mean.abs() < 2e-3, "{mean}");
        assert!((sd - 1.0).abs() < 5e-3, "{sd}");
    }

    /// The pareto table against its closed form: X Pareto (minimum 1,
    /// shape 3) capped where (X − 1.5) · 4/3 reaches 32767/8192 (X = 4.5
    /// within rounding); E[min(X, c)] = 1 + (1 − c⁻²)/2 and
    /// E[min(X, c)²] = 1 + 2(1 − 1/c), both by hand from P(X > x) = x⁻³.
    #[test]
    fn pareto_table_matches_closed_form() {
        let c = 1.5 + 32767.0 / NETEM_DIST_SCALE * 0.75;
        let m1 = 1.0 + (1.0 - c.powi(-2)) / 2.0;
        let m2 = 1.0 + 2.0 * (1.0 - 1.0 / c);
        let mean = (m1 - 1.5) * 4.0 / 3.0;
        let sd = (m2 - m1 * m1).sqrt() * 4.0 / 3.0;
        let (m, s) = moments(NetemTable::Pareto);
        assert!((m - mean).abs() < 2e-3, "mean {m}, closed form {mean}");
        assert!((s - sd).abs() < 2e-3, "sd {s}, closed form {sd}");
    }

    /// maketable from known samples, replayed as netem replays a table
    /// (`delay μ σ distribution FILE` with the samples' μ and σ): 10 000
    /// samples at the mid-quantiles of an exponential of mean 10 ms, x_k =
    /// −10 ln(1 − (k + ½)/10 000) ms; 100 000 draws. The draws' p-quantiles
    /// must hold the exponential's, −10 ln(1 − p) ms by hand (1.0536,
    /// 6.9315, 16.094, 23.026 ms at 10, 50, 80, 90 %), within 4 standard
    /// errors of a sample quantile, √(p(1 − p)/n) / f(x_p) with f(x) =
    /// e^(−x/10)/10, plus 0.02 ms for the table's steps (1/4096 in
    /// probability: f · Δx ≤ 1/4096 gives Δx ≤ 0.0244 ms at the median).
    #[test]
    fn a_table_made_from_samples_gives_back_their_quantiles() {
        let n = 10_000;
        let samples: Vec<f64> = (0..n).map(|k| -10.0 * (1.0 - (k as f64 + 0.5) / n as f64).ln()).collect();
        let table = maketable(&samples).unwrap();
        assert_eq!(table.len(), 4096);
        assert!(table.windows(2).all(|w| w[0] <= w[1]), "an inverse CDF ascends");
        let mu = samples.iter().sum::<f64>() / n as f64;
        let sigma = (samples.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (n as f64 - 1.0)).sqrt();
        let ms = |v: f64| crate::time::Duration::from_nanos_f64(v * 1e6);
        let dist = crate::dist::Distribution::NetemTable {
            table: None,
            file: None,
            entries: table,
            mu: ms(mu),
            sigma: ms(sigma),
        };
        dist.validate().unwrap();
        let mut sampler = crate::dist::Sampler::new(dist, crate::rng::stream(7, "table"));
        let draws = 100_000;
        let mut got: Vec<f64> = (0..draws).map(|_| sampler.sample().as_nanos() as f64 / 1e6).collect();
        got.sort_by(f64::total_cmp);
        for p in [0.1_f64, 0.5, 0.8, 0.9] {
            let expect = -10.0 * (1.0 - p).ln();
            let density = (-expect / 10.0).exp() / 10.0;
            let tolerance = 4.0 * (p * (1.0 - p) / draws as f64).sqrt() / density + 0.02;
            let q = got[(p * draws as f64) as usize];
            assert!((q - expect).abs() < tolerance, "{p}-quantile {q} ms, exponential's {expect} ms ± {tolerance}");
        }
    }

    #[test]
    fn maketable_refuses_samples_without_spread() {
        assert_eq!(maketable(&[]), Err(MakeTableError::TooFew));
        assert_eq!(maketable(&[3.0]), Err(MakeTableError::TooFew));
        assert_eq!(maketable(&[3.0, 3.0, 3.0]), Err(MakeTableError::NoSpread(3.0)));
    }

    #[test]
    fn delay_is_mu_plus_sigma_t_clamped() {
        // Entry 0 of pareto: −5461 / 8192 · 20 ms + 100 ms.
        let d = NetemTable::Pareto.delay(0, 100e6, 20e6);
        assert!((d - (100e6 - 5461.0 / 8192.0 * 20e6)).abs() < 1e-3, "{d}");
        // A jitter larger than the delay: never below zero.
        assert_eq!(NetemTable::Pareto.delay(0, 1e6, 20e6), 0.0);
    }
}
