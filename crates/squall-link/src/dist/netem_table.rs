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
        let t = f64::from(self.entries()[index % ENTRIES]);
        (mu + sigma * t / NETEM_DIST_SCALE).max(0.0)
    }

    pub fn len(self) -> usize {
        ENTRIES
    }

    pub fn is_empty(self) -> bool {
        false
    }
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

    #[test]
    fn delay_is_mu_plus_sigma_t_clamped() {
        // Entry 0 of pareto: −5461 / 8192 · 20 ms + 100 ms.
        let d = NetemTable::Pareto.delay(0, 100e6, 20e6);
        assert!((d - (100e6 - 5461.0 / 8192.0 * 20e6)).abs() < 1e-3, "{d}");
        // A jitter larger than the delay: never below zero.
        assert_eq!(NetemTable::Pareto.delay(0, 1e6, 20e6), 0.0);
    }
}
