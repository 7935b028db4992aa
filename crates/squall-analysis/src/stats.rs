//! Summary statistics of samples.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Arithmetic mean; `NaN` for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n-1 in the denominator); 0 for fewer than
/// two samples.
pub fn std_dev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// The `q` quantile (0..=1) by linear interpolation between closest ranks
/// (the "R-7" definition, as numpy's default). `xs` need not be sorted.
pub fn percentile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    percentile_sorted(&v, q)
}

/// As [`percentile`], for samples already sorted ascending.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// A two-sided confidence interval for the mean.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ConfidenceInterval {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

impl ConfidenceInterval {
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// Student-t confidence interval of the mean of independent samples
/// (replications): mean ± t_{(1+level)/2, n-1} · s/√n. With one sample
/// the interval is the point itself.
pub fn confidence_interval(xs: &[f64], level: f64) -> ConfidenceInterval {
    let m = mean(xs);
    let n = xs.len();
    if n < 2 {
        return ConfidenceInterval { mean: m, low: m, high: m, level };
    }
    let t =
        StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n-1 >= 1 degrees of freedom").inverse_cdf((1.0 + level) / 2.0);
    let h = t * std_dev(xs) / (n as f64).sqrt();
    ConfidenceInterval { mean: m, low: m - h, high: m + h, level }
}

/// The summary of one metric over a replication set (seed 000 Table 2
/// style): mean, median, 10th and 90th percentiles, standard deviation and
/// 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub std_dev: f64,
    pub ci95: ConfidenceInterval,
}

pub fn summarize(xs: &[f64]) -> Summary {
    Summary {
        n: xs.len(),
        mean: mean(xs),
        median: percentile(xs, 0.5),
        p10: percentile(xs, 0.1),
        p90: percentile(xs, 0.9),
        std_dev: std_dev(xs),
        ci95: confidence_interval(xs, 0.95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b}");
    }

    #[test]
    fn mean_and_std_dev_by_hand() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        // Sum of squared deviations 32, n-1 = 7.
        close(std_dev(&xs), (32.0f64 / 7.0).sqrt(), 1e-12);
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let xs = [15.0, 20.0, 35.0, 40.0, 50.0];
        // numpy.percentile(xs, [10, 50, 90]) = [17, 35, 46]
        close(percentile(&xs, 0.1), 17.0, 1e-12);
        close(percentile(&xs, 0.5), 35.0, 1e-12);
        close(percentile(&xs, 0.9), 46.0, 1e-12);
        assert_eq!(percentile(&[3.0], 0.9), 3.0);
    }

    #[test]
    fn student_t_interval_by_hand() {
        // n = 5, mean 10, s = sqrt(2.5); t_{0.975,4} = 2.776445.
        let xs = [8.0, 9.0, 10.0, 11.0, 12.0];
        let ci = confidence_interval(&xs, 0.95);
        let h = 2.776445 * 2.5f64.sqrt() / 5f64.sqrt();
        close(ci.low, 10.0 - h, 1e-5);
        close(ci.high, 10.0 + h, 1e-5);
        assert!(ci.contains(10.0) && !ci.contains(12.0));
    }
}
