//! A tiny deterministic random number generator.

/// SplitMix64 (Steele, Lea and Flood, *Fast splittable pseudorandom number generators*,
/// OOPSLA'14): a 64-bit state, one add and a mixing function per draw.
///
/// The structures of this crate keep one inside themselves to draw skip-list tower heights, so
/// the heights are part of the replica's state and every replica that applies the same operations
/// draws the same heights (see [`Dispatch`](nr_core::Dispatch#determinism)). Benchmarks can use it
/// to draw keys reproducibly from a seed.
///
/// # Examples
///
/// ```
/// use seqds::SplitMix64;
///
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = seqds::SplitMix64::new(1);
    /// let _ = rng.next_u64();
    /// ```
    #[inline]
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = seqds::SplitMix64::new(1);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.state)
    }

    /// A number in `0..bound`, nearly uniform (multiply-shift; the bias is below
    /// `bound / 2^64`). Returns 0 when `bound` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = seqds::SplitMix64::new(3);
    /// assert!((0..1000).all(|_| rng.below(6) < 6));
    /// assert_eq!(rng.below(0), 0);
    /// ```
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        scale(self.next_u64(), bound)
    }
}

/// The SplitMix64 output function: a bijective mix of the 64 bits of `z`.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Maps 64 random bits to `0..bound` by multiply-shift (Lemire), without a division.
#[inline]
fn scale(bits: u64, bound: u64) -> u64 {
    ((u128::from(bits) * u128::from(bound)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_different_seed_different_sequence() {
        let a: Vec<u64> = {
            let mut r = SplitMix64::new(42);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = SplitMix64::new(42);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = SplitMix64::new(43);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_covers_the_range() {
        let mut r = SplitMix64::new(9);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            seen[r.below(5) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
