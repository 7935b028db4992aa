//! The few numerical pieces the radio model needs, written out so that
//! squall-link depends on no math crate: complex gains, the complementary
//! error function and Gaussian Q function (symbol error rates), the
//! exponentially scaled Bessel function I0 (Rician densities for imperfect
//! prediction) and circular complex Gaussian samples.

use std::ops::{Add, AddAssign, Mul};

use rand_distr::{Distribution as _, StandardNormal};

use crate::rng::StreamRng;

/// A complex channel gain (dimensionless amplitude).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Complex {
    pub re: f64,
    pub im: f64,
}

impl Complex {
    pub const ZERO: Complex = Complex { re: 0.0, im: 0.0 };

    pub const fn new(re: f64, im: f64) -> Self {
        Complex { re, im }
    }
    /// e^{jφ}.
    pub fn from_phase(phase: f64) -> Self {
        let (s, c) = phase.sin_cos();
        Complex { re: c, im: s }
    }
    /// |z|², the power gain.
    pub fn norm_sqr(self) -> f64 {
        self.re * self.re + self.im * self.im
    }
    pub fn conj(self) -> Self {
        Complex { re: self.re, im: -self.im }
    }
    pub fn scale(self, k: f64) -> Self {
        Complex { re: self.re * k, im: self.im * k }
    }
}

impl Add for Complex {
    type Output = Complex;
    fn add(self, o: Complex) -> Complex {
        Complex { re: self.re + o.re, im: self.im + o.im }
    }
}
impl AddAssign for Complex {
    fn add_assign(&mut self, o: Complex) {
        self.re += o.re;
        self.im += o.im;
    }
}
impl Mul for Complex {
    type Output = Complex;
    fn mul(self, o: Complex) -> Complex {
        Complex { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }
}

/// A circular complex Gaussian sample with E|z|² = `power`.
pub fn complex_gaussian(rng: &mut StreamRng, power: f64) -> Complex {
    let s = (power / 2.0).sqrt();
    let re: f64 = StandardNormal.sample(rng);
    let im: f64 = StandardNormal.sample(rng);
    Complex { re: re * s, im: im * s }
}

/// A standard normal sample.
pub fn standard_normal(rng: &mut StreamRng) -> f64 {
    StandardNormal.sample(rng)
}

const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;

/// The complementary error function, relative error below 1e-13 for
/// x ≤ 26 (and 0 beyond, where erfc underflows).
///
/// For |x| < 2 the series erf(x) = 2/√π·e^{-x²}·Σ 2ⁿx^{2n+1}/(1·3···(2n+1))
/// (positive terms, no cancellation); above, the continued fraction
/// erfc(x) = e^{-x²}/√π · 1/(x + ½/(x + 1/(x + 3⁄2/(x + …)))), evaluated
/// from the tail (Abramowitz & Stegun 7.1.6 and 7.1.14).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.0 {
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x2 / (2.0 * n + 1.0);
            sum += term;
        }
        return 1.0 - 2.0 * FRAC_1_SQRT_PI * (-x2).exp() * sum;
    }
    if x > 27.0 {
        return 0.0;
    }
    // 65 terms at x = 2, 16 at x = 6: enough for full double precision.
    let depth = 10 + (220.0 / (x * x)) as usize;
    let mut tail = x;
    for k in (1..=depth).rev() {
        tail = x + (k as f64 / 2.0) / tail;
    }
    FRAC_1_SQRT_PI * (-x * x).exp() / tail
}

/// The Gaussian tail probability Q(x) = P(N(0,1) > x) = ½·erfc(x/√2).
pub fn q_function(x: f64) -> f64 {
    0.5 * erfc(x / std::f64::consts::SQRT_2)
}

/// e^{-z}·I0(z) for z ≥ 0, the exponentially scaled modified Bessel
/// function of the first kind, order 0 (relative error below 1e-10):
/// power series Σ (z/2)^{2m}/(m!)² up to z = 50, the asymptotic expansion
/// 1/√(2πz)·Σ ((2k-1)!!)²/(k!·(8z)^k) beyond (A&S 9.6.12 and 9.7.1).
pub fn bessel_i0_scaled(z: f64) -> f64 {
    let z = z.abs();
    if z <= 50.0 {
        let q = z * z / 4.0;
        let mut term = 1.0;
        let mut sum = 1.0;
        let mut m = 0.0;
        while term > sum * 1e-17 {
            m += 1.0;
            term *= q / (m * m);
            sum += term;
        }
        sum * (-z).exp()
    } else {
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..8 {
            let odd = (2 * k - 1) as f64;
            term *= odd * odd / (k as f64 * 8.0 * z);
            sum += term;
        }
        sum / (2.0 * std::f64::consts::PI * z).sqrt()
    }
}

/// Decibels to a linear power ratio.
pub fn db_to_linear(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// A linear power ratio to decibels.
pub fn linear_to_db(x: f64) -> f64 {
    10.0 * x.log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn erfc_matches_tabulated_values() {
        // Reference values from Abramowitz & Stegun Table 7.1 / high-precision tables.
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (1.999_999, 0.004_677_755_648_073_953),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (10.0, 2.088_487_583_762_545e-45),
            (-1.0, 1.842_700_792_949_715),
        ] {
            assert!(rel(erfc(x), want) < 1e-12, "erfc({x}) = {} want {want}", erfc(x));
        }
    }

    #[test]
    fn q_function_matches_normal_tail() {
        for (x, want) in
            [(1.0, 0.158_655_253_931_457_05), (2.0, 0.022_750_131_948_179_2), (4.0, 3.167_124_183_311_998e-5)]
        {
            assert!(rel(q_function(x), want) < 1e-12, "Q({x})");
        }
    }

    #[test]
    fn scaled_i0_is_continuous_and_correct() {
        // I0(1) = 1.2660658777520082, I0(10) = 2815.716628466254.
        assert!(rel(bessel_i0_scaled(1.0), 1.266_065_877_752_008_2 * (-1f64).exp()) < 1e-13);
        assert!(rel(bessel_i0_scaled(10.0), 2_815.716_628_466_254 * (-10f64).exp()) < 1e-12);
        assert!(rel(bessel_i0_scaled(50.0), bessel_i0_scaled(50.000_001)) < 1e-7);
    }
}
