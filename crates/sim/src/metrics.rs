//! Measurements kept in memory that does not grow with the number of
//! packets: running moments, a log-bucketed histogram for percentiles, and
//! fixed-interval time series.

use ncmesh_proto::{Duration, Instant};

/// Mean and variance by Welford's update.
#[derive(Clone, Copy, Debug, Default)]
pub struct Moments {
    pub count: u64,
    mean: f64,
    m2: f64,
}

impl Moments {
    pub fn add(&mut self, x: f64) {
        self.count += 1;
        let d = x - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (x - self.mean);
    }

    /// NaN when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.mean
        }
    }

    /// Population standard deviation; NaN when empty.
    pub fn std(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            (self.m2 / self.count as f64).sqrt()
        }
    }
}

/// Sub-buckets per power of two: quantiles come out within 1/64 relative.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// A histogram of nanosecond durations with log-linear buckets (HDR style).
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u32]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS].into_boxed_slice(), total: 0 }
    }
}

impl Histogram {
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros();
        let shift = msb - SUB_BITS;
        (shift as usize + 1) * SUB + ((v >> shift) as usize & (SUB - 1))
    }

    /// The midpoint of a bucket's range.
    fn value(bucket: usize) -> f64 {
        if bucket < 2 * SUB {
            return bucket as f64;
        }
        let shift = (bucket / SUB - 1) as u32;
        let low = ((SUB + bucket % SUB) as u64) << shift;
        low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
    }

    pub fn add(&mut self, d: Duration) {
        let b = &mut self.counts[Self::bucket(d.as_nanos())];
        *b = b.saturating_add(1);
        self.total += 1;
    }

    /// The `q`-quantile in seconds (nearest rank); NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return Self::value(i) * 1e-9;
            }
        }
        unreachable!("the counts sum to the total")
    }
}

/// Bytes per fixed interval from time zero.
#[derive(Clone, Debug)]
pub struct Series {
    interval: Duration,
    bins: Vec<u64>,
}

impl Series {
    pub fn new(interval: Duration) -> Series {
        Series { interval, bins: Vec::new() }
    }

    pub fn add(&mut self, at: Instant, amount: u64) {
        let bin = (at.0 / self.interval.as_nanos().max(1)) as usize;
        if bin >= self.bins.len() {
            self.bins.resize(bin + 1, 0);
        }
        self.bins[bin] += amount;
    }

    /// (bin start, total) for every bin up to `end`, empty ones included.
    pub fn bins(&self, end: Instant) -> impl Iterator<Item = (Instant, u64)> + '_ {
        let step = self.interval.as_nanos().max(1);
        let n = end.0.div_ceil(step) as usize;
        (0..n).map(move |i| (Instant(i as u64 * step), self.bins.get(i).copied().unwrap_or(0)))
    }
}

/// Jain's fairness index, (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n
/// when one takes everything. NaN for no flows or all zero.
pub fn jain_index(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    sum * sum / (xs.len() as f64 * squares)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_match_two_pass_formulas() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mut m = Moments::default();
        xs.iter().for_each(|&x| m.add(x));
        assert_eq!(m.mean(), 5.0);
        assert!((m.std() - 2.0).abs() < 1e-12); // the textbook example
        assert!(Moments::default().mean().is_nan());
    }

    #[test]
    fn histogram_quantiles_are_within_bucket_precision() {
        let mut h = Histogram::default();
        for ms in 1..=1000u64 {
            h.add(Duration::from_millis(ms));
        }
        for (q, exact) in [(0.5, 0.5), (0.95, 0.95), (0.99, 0.99), (1.0, 1.0)] {
            let got = h.quantile(q);
            assert!((got - exact).abs() / exact < 1.0 / 64.0, "q{q}: {got} vs {exact}");
        }
        // Every bucket's midpoint maps back to that bucket.
        for v in [0u64, 1, 63, 64, 127, 128, 1_000_000, u64::MAX / 2] {
            let b = Histogram::bucket(v);
            assert_eq!(Histogram::bucket(Histogram::value(b) as u64), b, "{v}");
        }
    }

    #[test]
    fn series_fills_empty_bins() {
        let mut s = Series::new(Duration::from_secs(1));
        s.add(Instant::from_secs_f64(0.5), 10);
        s.add(Instant::from_secs_f64(2.1), 5);
        let bins: Vec<u64> = s.bins(Instant::from_secs_f64(4.0)).map(|(_, b)| b).collect();
        assert_eq!(bins, vec![10, 0, 5, 0]);
    }

    #[test]
    fn jain_index_limits() {
        assert_eq!(jain_index(&[3.0, 3.0, 3.0]), 1.0);
        assert_eq!(jain_index(&[1.0, 0.0, 0.0, 0.0]), 0.25);
    }
}
