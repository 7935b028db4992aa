//! A log-linear histogram of nanosecond values with fixed memory: the
//! timing report's departure errors ([`crate::engine::timing`]) and the
//! data plane's wake-up overshoots ([`crate::engine::wakeup`]) both keep
//! one, whatever a run's length.

/// Counts of values (ns) in log-linear buckets: exact below 128, then
/// 128 buckets per power of two, so a bucket is at most 1/128 of its
/// values wide. 7,296 buckets cover all of `u64`; the memory is fixed.
#[derive(Clone, Debug)]
pub struct ErrorHistogram {
    counts: Vec<u64>,
    total: u64,
}

/// Bits of each value kept below its leading one.
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;

impl Default for ErrorHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl ErrorHistogram {
    pub fn new() -> Self {
        ErrorHistogram { counts: vec![0; SUB + (64 - SUB_BITS as usize) * SUB], total: 0 }
    }

    fn bucket(value: u64) -> usize {
        if value < SUB as u64 {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros(); // >= SUB_BITS
        let shift = exponent - SUB_BITS;
        let mantissa = ((value >> shift) as usize) & (SUB - 1);
        SUB + shift as usize * SUB + mantissa
    }

    /// The largest value that falls in bucket `index`.
    fn upper_edge(index: usize) -> u64 {
        if index < SUB {
            return index as u64;
        }
        let shift = ((index - SUB) / SUB) as u32;
        let mantissa = ((index - SUB) % SUB) as u64;
        let low = (SUB as u64 + mantissa) << shift;
        low + ((1u64 << shift) - 1)
    }

    pub fn record(&mut self, value: u64) {
        self.counts[Self::bucket(value)] += 1;
        self.total += 1;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// Empty again, keeping its memory.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.total = 0;
    }

    /// The upper edge of the bucket holding the value of rank
    /// ceil(q × count) (the nearest-rank percentile); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::upper_edge(i);
            }
        }
        // The counts sum to the total: not reached.
        Self::upper_edge(self.counts.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_at_most_one_128th_wide_and_cover_u64() {
        for v in [0, 1, 127, 128, 129, 255, 256, 1000, 501_000, 12_345_678, u64::MAX / 3, u64::MAX] {
            let b = ErrorHistogram::bucket(v);
            let hi = ErrorHistogram::upper_edge(b);
            assert!(hi >= v, "{v}: edge {hi}");
            assert!(b == 0 || ErrorHistogram::upper_edge(b - 1) < v, "{v} belongs in an earlier bucket");
            assert!((hi - v) as f64 <= v as f64 / 128.0, "{v}: edge {hi}");
        }
        assert_eq!(ErrorHistogram::bucket(u64::MAX), ErrorHistogram::new().counts.len() - 1);
    }

    #[test]
    fn histogram_percentiles_match_sorted_values_within_resolution() {
        let mut h = ErrorHistogram::new();
        let mut values: Vec<u64> = (0..10_000u64).map(|i| (i * 7919 % 10_007) * 37 + i % 5).collect();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.001, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
            let got = h.quantile(q);
            assert!(got >= exact && (got - exact) as f64 <= exact as f64 / 128.0, "q {q}: {got} vs {exact}");
        }
    }
}
