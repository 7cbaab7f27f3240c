//! Seeded pseudo-random numbers and key distributions for workloads.

use std::sync::Arc;

/// A small, fast, seedable generator (xorshift64*), one per benchmark thread.
///
/// # Examples
///
/// ```
/// use benches::Rng;
///
/// let (mut a, mut b) = (Rng::new(7, 0), Rng::new(7, 0));
/// assert_eq!(a.next_u64(), b.next_u64(), "same seed and stream, same numbers");
/// assert!(a.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of thread `stream` for run seed `seed`: distinct streams give unrelated
    /// sequences.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = benches::Rng::new(1, 3);
    /// assert_ne!(r.next_u64(), benches::Rng::new(1, 4).next_u64());
    /// ```
    pub fn new(seed: u64, stream: u64) -> Self {
        // SplitMix64 finalizer over (seed, stream), so nearby seeds give unrelated states.
        let mut z = seed
            .wrapping_add(stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Self((z ^ (z >> 31)) | 1)
    }

    /// The next 64 random bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let _bits = benches::Rng::new(0, 0).next_u64();
    /// ```
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniformly distributed value in `0..n` (`n > 0`; Lemire's multiply-shift, bias below
    /// 2^-32 for the sizes used here).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = benches::Rng::new(3, 0);
    /// assert!((0..100).all(|_| r.below(5) < 5));
    /// ```
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform float in `[0, 1)`.
    ///
    /// # Examples
    ///
    /// ```
    /// let x = benches::Rng::new(5, 0).unit();
    /// assert!((0.0..1.0).contains(&x));
    /// ```
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `percent`/100.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = benches::Rng::new(5, 0);
    /// assert!(r.percent(100));
    /// assert!(!r.percent(0));
    /// ```
    #[inline]
    pub fn percent(&mut self, percent: u32) -> bool {
        self.below(100) < u64::from(percent)
    }
}

/// How keys are drawn from `0..n`.
///
/// # Examples
///
/// ```
/// use benches::{KeyDist, Rng};
///
/// let zipf = KeyDist::zipf(1000, 1.5);
/// let mut rng = Rng::new(1, 0);
/// assert!(zipf.sample(&mut rng) < 1000);
/// assert_eq!(zipf.to_string(), "zipf-1.5");
/// ```
#[derive(Clone, Debug)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform {
        /// Keys are `0..n`.
        n: u64,
    },
    /// Key `k` drawn with probability proportional to `1 / (k + 1)^s`: key 0 is the hottest.
    Zipf {
        /// Keys are `0..n`.
        n: u64,
        /// The exponent `s` (the NR paper's high-contention setting is 1.5).
        exponent: f64,
        /// `cdf[k]` = P(key <= k), shared by every thread's sampler.
        cdf: Arc<[f64]>,
    },
}

impl KeyDist {
    /// Uniform keys in `0..n`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(benches::KeyDist::uniform(10).to_string(), "uniform");
    /// ```
    pub fn uniform(n: u64) -> Self {
        Self::Uniform { n: n.max(1) }
    }

    /// Zipf-distributed keys in `0..n` with exponent `s`, sampled by binary search in a
    /// precomputed CDF (exact, `8n` bytes, `O(log n)` per sample).
    ///
    /// # Examples
    ///
    /// ```
    /// let d = benches::KeyDist::zipf(100, 0.99);
    /// assert_eq!(d.keys(), 100);
    /// ```
    pub fn zipf(n: u64, exponent: f64) -> Self {
        let n = n.max(1);
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|rank| {
                acc += (rank as f64).powf(-exponent);
                acc
            })
            .collect();
        for p in &mut cdf {
            *p /= acc;
        }
        Self::Zipf {
            n,
            exponent,
            cdf: cdf.into(),
        }
    }

    /// The number of distinct keys.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(benches::KeyDist::uniform(42).keys(), 42);
    /// ```
    pub fn keys(&self) -> u64 {
        match self {
            Self::Uniform { n } | Self::Zipf { n, .. } => *n,
        }
    }

    /// Draws one key.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = benches::Rng::new(9, 0);
    /// assert!(benches::KeyDist::uniform(3).sample(&mut rng) < 3);
    /// ```
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            Self::Uniform { n } => rng.below(*n),
            Self::Zipf { n, cdf, .. } => {
                let u = rng.unit();
                // First rank whose cumulative probability exceeds u.
                let k = cdf.partition_point(|&p| p <= u) as u64;
                k.min(n - 1)
            }
        }
    }
}

impl std::fmt::Display for KeyDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Uniform { .. } => f.write_str("uniform"),
            Self::Zipf { exponent, .. } => write!(f, "zipf-{exponent}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_covers_the_range() {
        let mut r = Rng::new(1, 0);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            seen[r.below(7) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
