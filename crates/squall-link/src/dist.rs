//! Random distributions for parameters (seed 000 §5.1, "Random
//! distributions"): constant, uniform, exponential, normal, Pareto, Cauchy
//! truncated at 0, a two-state Markov process, and an empirical distribution
//! whose values come from a file (read by the scenario loader, not here).
//!
//! A distribution is typed by the quantity it yields ([`Duration`],
//! [`Bytes`] or a plain number), so its parameters carry their units in a
//! scenario file: `{ kind = "exponential", mean = "2 s" }`.

use std::fmt;

use rand::Rng;
use rand_distr::{Distribution as _, Exp, Normal};
use serde::{Deserialize, Serialize};

pub mod correlated;
pub mod netem_table;

pub use netem_table::NetemTable;

use crate::rng::StreamRng;
use crate::time::Duration;
use crate::units::Bytes;

/// A quantity a distribution can yield; sampling works on its value as a
/// float in its base unit (nanoseconds, bytes).
pub trait Quantity: Copy + fmt::Debug + PartialEq {
    fn to_base(self) -> f64;
    fn from_base(v: f64) -> Self;
}

impl Quantity for Duration {
    fn to_base(self) -> f64 {
        self.as_nanos() as f64
    }
    fn from_base(v: f64) -> Self {
        Duration::from_nanos_f64(v)
    }
}

impl Quantity for Bytes {
    fn to_base(self) -> f64 {
        self.0 as f64
    }
    fn from_base(v: f64) -> Self {
        Bytes(if v.is_finite() && v > 0.0 { v.round() as u64 } else { 0 })
    }
}

impl Quantity for f64 {
    fn to_base(self) -> f64 {
        self
    }
    fn from_base(v: f64) -> Self {
        v
    }
}

/// A distribution of `Q`. Samples that would be negative are redrawn
/// (Cauchy, normal) or clamped at zero by the quantity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Distribution<Q> {
    Constant {
        value: Q,
    },
    Uniform {
        low: Q,
        high: Q,
    },
    Exponential {
        mean: Q,
    },
    Normal {
        mean: Q,
        std_dev: Q,
    },
    /// Pareto with minimum `scale` and tail index `shape` (> 0).
    Pareto {
        scale: Q,
        shape: f64,
    },
    /// Cauchy with `location` and `scale`, truncated at 0 (seed 000 §5.1).
    Cauchy {
        location: Q,
        scale: Q,
    },
    /// Alternates between two values: from `a` it moves to `b` with
    /// probability `p_ab` per sample, from `b` to `a` with `p_ba`.
    TwoStateMarkov {
        a: Q,
        b: Q,
        p_ab: f64,
        p_ba: f64,
    },
    /// netem's table distributions (tc-netem(8) `delay MU SIGMA
    /// distribution normal|pareto|paretonormal|FILE`): an entry `t` of the
    /// table drawn uniformly, the value `mu + sigma · t / 8192`
    /// (sch_netem.c `tabledist()`), 0 when that is negative. Either
    /// `table` names one of netem's tables (generated from iproute2's
    /// definitions, [`netem_table`]), or `file` names a table in iproute2's
    /// `.dist` format (what `maketable` and `squall trace maketable`
    /// write), which the scenario loader reads into `entries`.
    NetemTable {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        table: Option<NetemTable>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        /// The table's entries (from `file`), each scaled by 8192.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        entries: Vec<i16>,
        mu: Q,
        sigma: Q,
    },
    /// Draws uniformly among measured values, or (`order = "sequence"`)
    /// replays them in their order, looping: a measured path's per-packet
    /// delays, or a background load's stored pattern (seed 003 §2.2: the
    /// degrader's patterns "uploaded onto the board"). In a scenario file,
    /// `file` names a text file with one value per line; the loader fills
    /// `values`.
    Empirical {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        #[serde(default = "Vec::new")]
        values: Vec<Q>,
        #[serde(default, skip_serializing_if = "is_random")]
        order: Order,
    },
    /// A cumulative distribution given by its points, as the flow-size
    /// CDF files of transport studies give it (the web-search and
    /// data-mining workloads of pFabric, HPCC and Homa): `points` are
    /// `[value, share]` pairs, the value in the quantity's base unit
    /// (bytes for sizes), values and shares in increasing order, the last
    /// share 1. Between two points the values are spread evenly (the CDF
    /// is linear, as ns-3's `EmpiricalRandomVariable` interpolates); a
    /// first share above 0 is that share at exactly its value. In a
    /// scenario file `file` names a `SIZE CDF` file; the loader fills
    /// `points`.
    Cdf {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        #[serde(default = "Vec::new")]
        points: Vec<[f64; 2]>,
    },
}

/// How far a CDF's last share may be from 1 (a file's rounding).
pub const CDF_END_TOLERANCE: f64 = 1e-6;

/// Whether `points` make a CDF: values 0 or more, shares within 0..=1,
/// both in increasing order, the last share 1.
pub fn is_cdf(points: &[[f64; 2]]) -> bool {
    let Some(last) = points.last() else { return false };
    points.iter().all(|[v, c]| v.is_finite() && *v >= 0.0 && (0.0..=1.0).contains(c))
        && points.windows(2).all(|w| w[0][0] <= w[1][0] && w[0][1] <= w[1][1])
        && (last[1] - 1.0).abs() <= CDF_END_TOLERANCE
}

/// The CDF of `points` at `x` (`below`: just below `x`, the left limit).
pub fn cdf_at(points: &[[f64; 2]], x: f64, below: bool) -> f64 {
    let i = points.partition_point(|p| if below { p[0] < x } else { p[0] <= x });
    match i {
        0 => 0.0,
        i if i == points.len() => points[i - 1][1],
        i => {
            let ([v0, c0], [v1, c1]) = (points[i - 1], points[i]);
            c0 + (c1 - c0) * (x - v0) / (v1 - v0)
        }
    }
}

/// The value at which the CDF of `points` reaches `u` (0..1): the
/// inverse transform of a uniform draw.
pub fn cdf_quantile(points: &[[f64; 2]], u: f64) -> f64 {
    let i = points.partition_point(|p| p[1] < u);
    match i {
        0 => points.first().map_or(0.0, |p| p[0]),
        i if i == points.len() => points[i - 1][0],
        i => {
            let ([v0, c0], [v1, c1]) = (points[i - 1], points[i]);
            v0 + (v1 - v0) * (u - c0) / (c1 - c0)
        }
    }
}

/// The mean of the CDF of `points`: the first share at its value, then
/// each segment's share at its midpoint.
pub fn cdf_mean(points: &[[f64; 2]]) -> f64 {
    let first = points.first().map_or(0.0, |p| p[0] * p[1]);
    first + points.windows(2).map(|w| (w[1][1] - w[0][1]) * (w[0][0] + w[1][0]) / 2.0).sum::<f64>()
}

/// How an empirical distribution uses its values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Each draw is one of the values, uniformly, independently.
    #[default]
    Random,
    /// The draws are the values in the file's order, from the first again
    /// after the last.
    Sequence,
}

fn is_random(o: &Order) -> bool {
    *o == Order::Random
}

/// Why a distribution's parameters are impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistributionError {
    #[error("uniform needs low <= high")]
    UniformBounds,
    #[error("{0} must be positive")]
    NotPositive(&'static str),
    #[error("{0} must be a probability between 0 and 1")]
    NotProbability(&'static str),
    #[error("an empirical distribution needs at least one value")]
    EmptyEmpirical,
    #[error("a netem table needs either `table` (normal, pareto, paretonormal) or a `file`, not both")]
    NetemTableSource,
    #[error("a cdf needs points [value, share] in increasing order, shares within 0..1, the last 1")]
    BadCdf,
}

/// The entries of a netem table distribution: the named table's, or the
/// ones read from its file.
#[inline]
pub fn netem_entries<'a>(table: &Option<NetemTable>, entries: &'a [i16]) -> &'a [i16] {
    match table {
        Some(t) => t.entries(),
        None => entries,
    }
}

impl<Q: Quantity> Distribution<Q> {
    pub fn constant(value: Q) -> Self {
        Distribution::Constant { value }
    }

    /// The value of a constant; `None` for any other distribution.
    pub fn as_constant(&self) -> Option<Q> {
        match self {
            Distribution::Constant { value } => Some(*value),
            _ => None,
        }
    }

    /// Checks the parameters; a distribution that passes never panics when
    /// sampled.
    pub fn validate(&self) -> Result<(), DistributionError> {
        use DistributionError::*;
        match self {
            Distribution::Constant { .. } => Ok(()),
            Distribution::Uniform { low, high } => {
                if low.to_base() <= high.to_base() {
                    Ok(())
                } else {
                    Err(UniformBounds)
                }
            }
            Distribution::Exponential { mean } => positive(mean.to_base(), "mean"),
            Distribution::Normal { std_dev, .. } => {
                if std_dev.to_base() >= 0.0 {
                    Ok(())
                } else {
                    Err(NotPositive("std_dev"))
                }
            }
            Distribution::Pareto { scale, shape } => {
                positive(scale.to_base(), "scale")?;
                positive(*shape, "shape")
            }
            Distribution::Cauchy { scale, .. } => positive(scale.to_base(), "scale"),
            Distribution::TwoStateMarkov { p_ab, p_ba, .. } => {
                probability(*p_ab, "p_ab")?;
                probability(*p_ba, "p_ba")
            }
            Distribution::NetemTable { table, entries, mu, sigma, .. } => {
                if table.is_some() != entries.is_empty() || entries.len() > netem_table::MAX_ENTRIES {
                    Err(NetemTableSource)
                } else if mu.to_base() >= 0.0 && sigma.to_base() >= 0.0 {
                    Ok(())
                } else {
                    Err(NotPositive("mu and sigma"))
                }
            }
            Distribution::Empirical { values, .. } => {
                if values.is_empty() {
                    Err(EmptyEmpirical)
                } else {
                    Ok(())
                }
            }
            Distribution::Cdf { points, .. } => {
                if is_cdf(points) {
                    Ok(())
                } else {
                    Err(BadCdf)
                }
            }
        }
    }

    /// The mean of the distribution where it has a simple closed form
    /// (used for RED's idle-time estimate and for reports).
    pub fn mean(&self) -> Option<f64> {
        Some(match self {
            Distribution::Constant { value } => value.to_base(),
            Distribution::Uniform { low, high } => (low.to_base() + high.to_base()) / 2.0,
            Distribution::Exponential { mean } => mean.to_base(),
            Distribution::Normal { mean, .. } => mean.to_base(),
            Distribution::Pareto { scale, shape } if *shape > 1.0 => shape * scale.to_base() / (shape - 1.0),
            Distribution::TwoStateMarkov { a, b, p_ab, p_ba } => {
                let pa = p_ba / (p_ab + p_ba);
                pa * a.to_base() + (1.0 - pa) * b.to_base()
            }
            Distribution::NetemTable { table, entries, mu, sigma, .. } => {
                let (mu, sigma) = (mu.to_base(), sigma.to_base());
                let t = netem_entries(table, entries);
                if t.is_empty() {
                    return None;
                }
                (0..t.len()).map(|i| netem_table::table_delay(t, i, mu, sigma)).sum::<f64>() / t.len() as f64
            }
            Distribution::Empirical { values, .. } if !values.is_empty() => {
                values.iter().map(|v| v.to_base()).sum::<f64>() / values.len() as f64
            }
            Distribution::Cdf { points, .. } if !points.is_empty() => cdf_mean(points),
            _ => return None,
        })
    }
}

fn positive(v: f64, name: &'static str) -> Result<(), DistributionError> {
    if v > 0.0 && v.is_finite() { Ok(()) } else { Err(DistributionError::NotPositive(name)) }
}

fn probability(v: f64, name: &'static str) -> Result<(), DistributionError> {
    if (0.0..=1.0).contains(&v) { Ok(()) } else { Err(DistributionError::NotProbability(name)) }
}

/// A distribution with its own generator and, for the Markov process, its
/// current state.
#[derive(Clone, Debug)]
pub struct Sampler<Q> {
    dist: Distribution<Q>,
    rng: StreamRng,
    in_b: bool,
    /// The next value of a sequence (`order = "sequence"`).
    next: usize,
}

impl<Q: Quantity> Sampler<Q> {
    /// `dist` must have passed [`Distribution::validate`].
    pub fn new(dist: Distribution<Q>, rng: StreamRng) -> Self {
        Sampler { dist, rng, in_b: false, next: 0 }
    }

    pub fn distribution(&self) -> &Distribution<Q> {
        &self.dist
    }

    /// Replaces the distribution (a state change) and keeps the generator;
    /// a sequence starts from its first value.
    pub fn set_distribution(&mut self, dist: Distribution<Q>) {
        self.dist = dist;
        self.in_b = false;
        self.next = 0;
    }

    pub fn sample(&mut self) -> Q {
        Q::from_base(self.sample_base())
    }

    fn sample_base(&mut self) -> f64 {
        let rng = &mut self.rng;
        match &self.dist {
            Distribution::Constant { value } => value.to_base(),
            Distribution::Uniform { low, high } => {
                let (l, h) = (low.to_base(), high.to_base());
                l + (h - l) * unit(rng)
            }
            Distribution::Exponential { mean } => Exp::new(1.0 / mean.to_base()).map(|e| e.sample(rng)).unwrap_or(0.0),
            Distribution::Normal { mean, std_dev } => {
                let n = Normal::new(mean.to_base(), std_dev.to_base());
                let Ok(n) = n else { return mean.to_base() };
                // Truncated at 0: redraw negative samples (bounded, then clamp).
                for _ in 0..64 {
                    let v = n.sample(rng);
                    if v >= 0.0 {
                        return v;
                    }
                }
                0.0
            }
            Distribution::Pareto { scale, shape } => {
                // Inverse transform: x = scale / U^(1/shape), U in (0, 1].
                scale.to_base() / (1.0 - unit(rng)).powf(1.0 / shape)
            }
            Distribution::Cauchy { location, scale } => {
                for _ in 0..64 {
                    let u = unit(rng);
                    let v = location.to_base() + scale.to_base() * (std::f64::consts::PI * (u - 0.5)).tan();
                    if v >= 0.0 && v.is_finite() {
                        return v;
                    }
                }
                0.0
            }
            Distribution::TwoStateMarkov { a, b, p_ab, p_ba } => {
                let switch = unit(rng) < if self.in_b { *p_ba } else { *p_ab };
                if switch {
                    self.in_b = !self.in_b;
                }
                if self.in_b { b.to_base() } else { a.to_base() }
            }
            Distribution::NetemTable { table, entries, mu, sigma, .. } => {
                let t = netem_entries(table, entries);
                if t.is_empty() {
                    return 0.0;
                }
                let i = (unit(rng) * t.len() as f64) as usize;
                netem_table::table_delay(t, i.min(t.len() - 1), mu.to_base(), sigma.to_base())
            }
            Distribution::Empirical { values, order, .. } => {
                if values.is_empty() {
                    return 0.0;
                }
                if *order == Order::Sequence {
                    let v = values[self.next % values.len()].to_base();
                    self.next = (self.next + 1) % values.len();
                    return v;
                }
                let i = (unit(rng) * values.len() as f64) as usize;
                values[i.min(values.len() - 1)].to_base()
            }
            Distribution::Cdf { points, .. } => cdf_quantile(points, unit(rng)),
        }
    }
}

/// Serde helpers for fields that take either a plain quantity (a constant:
/// `size = "1000 B"`) or a distribution table
/// (`size = { kind = "exponential", mean = "500 B" }`).
pub mod constant_or_table {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer};

    use super::{Distribution, Quantity};

    struct V<Q>(PhantomData<Q>);

    impl<'de, Q: Quantity + Deserialize<'de>> Visitor<'de> for V<Q> {
        type Value = Distribution<Q>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(
                "a value with its unit (a constant) or a distribution table like \
                 { kind = \"exponential\", mean = \"10 ms\" }; kinds: constant, uniform, exponential, \
                 normal, pareto, cauchy, two_state_markov, netem_table, empirical, cdf",
            )
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            let de: de::value::StrDeserializer<'_, E> = v.into_deserializer();
            Q::deserialize(de).map(Distribution::constant)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Q::deserialize(v.into_deserializer()).map(Distribution::constant)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Q::deserialize(v.into_deserializer()).map(Distribution::constant)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Q::deserialize(v.into_deserializer()).map(Distribution::constant)
        }
        fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Self::Value, M::Error> {
            Distribution::<Q>::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }

    pub fn deserialize<'de, D, Q>(d: D) -> Result<Distribution<Q>, D::Error>
    where
        D: Deserializer<'de>,
        Q: Quantity + Deserialize<'de>,
    {
        d.deserialize_any(V(PhantomData))
    }

    /// Writes a constant as its plain value (`"5 s"`), the way it may be
    /// read, and any other distribution as its table.
    pub fn serialize<S, Q>(d: &Distribution<Q>, s: S) -> Result<S::Ok, S::Error>
    where
        S: serde::Serializer,
        Q: Quantity + serde::Serialize,
    {
        match d {
            Distribution::Constant { value } => value.serialize(s),
            other => serde::Serialize::serialize(other, s),
        }
    }

    /// The same for an optional field (use with `#[serde(default)]`).
    pub mod option {
        use super::*;
        pub fn deserialize<'de, D, Q>(d: D) -> Result<Option<Distribution<Q>>, D::Error>
        where
            D: Deserializer<'de>,
            Q: Quantity + Deserialize<'de>,
        {
            super::deserialize(d).map(Some)
        }

        /// [`super::serialize`] for an optional field (with
        /// `skip_serializing_if = "Option::is_none"`).
        pub fn serialize<S, Q>(d: &Option<Distribution<Q>>, s: S) -> Result<S::Ok, S::Error>
        where
            S: serde::Serializer,
            Q: Quantity + serde::Serialize,
        {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }
    }
}

/// A uniform float in [0, 1) with 53 random bits.
pub fn unit(rng: &mut StreamRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn mean_of(d: Distribution<f64>, n: usize) -> f64 {
        let mut s = Sampler::new(d, stream(1, "test"));
        (0..n).map(|_| s.sample()).sum::<f64>() / n as f64
    }

    /// A CDF of three points by hand: a fifth of the draws at exactly
    /// 100, then 0.2..0.6 spread over 100..500, 0.6..1 over 500..1500.
    #[test]
    fn a_cdf_by_hand() {
        let points = vec![[100.0, 0.2], [500.0, 0.6], [1500.0, 1.0]];
        assert!(is_cdf(&points));
        assert_eq!(cdf_at(&points, 99.0, false), 0.0);
        assert_eq!((cdf_at(&points, 100.0, true), cdf_at(&points, 100.0, false)), (0.0, 0.2));
        assert!((cdf_at(&points, 300.0, false) - 0.4).abs() < 1e-12);
        assert!((cdf_at(&points, 1000.0, false) - 0.8).abs() < 1e-12);
        assert_eq!(cdf_at(&points, 2000.0, false), 1.0);
        assert_eq!(cdf_quantile(&points, 0.1), 100.0);
        assert!((cdf_quantile(&points, 0.4) - 300.0).abs() < 1e-9);
        assert!((cdf_quantile(&points, 0.8) - 1000.0).abs() < 1e-9);
        // 0.2·100 + 0.4·300 + 0.4·1000 = 540.
        assert!((cdf_mean(&points) - 540.0).abs() < 1e-9);
        // Draws: mean within 4 standard errors, KS distance below the 1%
        // critical value 1.628/sqrt(n).
        let n = 100_000;
        let mut sampler = Sampler::new(Distribution::Cdf { file: None, points: points.clone() }, stream(1, "cdf"));
        let mut draws: Vec<f64> = (0..n).map(|_| sampler.sample()).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((mean - 540.0).abs() < 4.0 * (var / n as f64).sqrt(), "mean {mean}");
        draws.sort_by(f64::total_cmp);
        // Ties (the mass at 100): the empirical CDF at x counts every draw <= x.
        let d = draws
            .iter()
            .map(|&x| {
                let lo = draws.partition_point(|&v| v < x) as f64 / n as f64;
                let hi = draws.partition_point(|&v| v <= x) as f64 / n as f64;
                (hi - cdf_at(&points, x, false)).abs().max((lo - cdf_at(&points, x, true)).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 1.628 / (n as f64).sqrt(), "KS D = {d}");
        // Not CDFs: empty, unsorted, not ending at 1, a share above 1.
        for bad in [vec![], vec![[5.0, 0.5], [4.0, 1.0]], vec![[1.0, 0.2], [2.0, 0.9]], vec![[1.0, 1.5]]] {
            assert!(!is_cdf(&bad), "{bad:?}");
            assert_eq!(Distribution::<f64>::Cdf { file: None, points: bad }.validate(), Err(DistributionError::BadCdf));
        }
    }

    #[test]
    fn sample_means_match_theory() {
        let n = 200_000;
        let close = |a: f64, b: f64, tol: f64| assert!((a - b).abs() < tol, "{a} vs {b}");
        close(mean_of(Distribution::Exponential { mean: 2.0 }, n), 2.0, 0.03);
        close(mean_of(Distribution::Uniform { low: 1.0, high: 3.0 }, n), 2.0, 0.01);
        close(mean_of(Distribution::Normal { mean: 10.0, std_dev: 1.0 }, n), 10.0, 0.01);
        // Pareto mean = shape·scale/(shape-1) = 3·1/2 = 1.5
        close(mean_of(Distribution::Pareto { scale: 1.0, shape: 3.0 }, n), 1.5, 0.02);
        // Markov stationary share of b: p_ab/(p_ab+p_ba) = 0.2 → mean 0.2·10
        close(mean_of(Distribution::TwoStateMarkov { a: 0.0, b: 10.0, p_ab: 0.05, p_ba: 0.2 }, n), 2.0, 0.1);
        close(
            mean_of(Distribution::Empirical { file: None, values: vec![1.0, 2.0, 6.0], order: Order::Random }, n),
            3.0,
            0.03,
        );
    }

    #[test]
    fn cauchy_is_truncated_at_zero() {
        let mut s = Sampler::new(Distribution::Cauchy { location: 0.0, scale: 1.0 }, stream(3, "c"));
        for _ in 0..10_000 {
            assert!(s.sample() >= 0.0);
        }
    }

    #[test]
    fn validation_rejects_impossible_parameters() {
        assert!(Distribution::Uniform { low: 2.0, high: 1.0 }.validate().is_err());
        assert!(Distribution::Exponential { mean: -1.0 }.validate().is_err());
        assert!(
            Distribution::<f64>::Empirical { file: None, values: vec![], order: Order::Sequence }.validate().is_err()
        );
        assert!(Distribution::TwoStateMarkov { a: 0.0, b: 1.0, p_ab: 1.5, p_ba: 0.1 }.validate().is_err());
    }

    #[test]
    fn a_sequence_replays_its_values_in_order_and_loops() {
        let d = Distribution::Empirical { file: None, values: vec![3.0, 1.0, 2.0], order: Order::Sequence };
        let mut s = Sampler::new(d.clone(), crate::rng::stream(1, "seq"));
        let drawn: Vec<f64> = (0..7).map(|_| s.sample()).collect();
        assert_eq!(drawn, [3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        // A state change restarts it from the first value.
        s.set_distribution(d);
        assert_eq!(s.sample(), 3.0);
        // Random order draws the same values, not in their order.
        let r = Distribution::Empirical { file: None, values: vec![3.0, 1.0, 2.0], order: Order::Random };
        let mut s = Sampler::new(r, crate::rng::stream(1, "seq"));
        let drawn: Vec<f64> = (0..30).map(|_| s.sample()).collect();
        assert!(drawn.iter().all(|v| [1.0, 2.0, 3.0].contains(v)));
        assert_ne!(drawn[..7], [3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    }
}
