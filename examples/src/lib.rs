//! Shared code for the runnable examples: a plain sequential key-value map and the
//! [`Dispatch`] implementation that makes it usable with [`nr_core::NodeReplicated`].
//!
//! # Examples
//!
//! ```
//! use examples::{KvMap, KvRead, KvWrite};
//! use nr_core::{Dispatch, NodeReplicated};
//!
//! let nr = NodeReplicated::builder().replicas(2).build(|_| KvMap::with_keys(100))?;
//! let mut h = nr.register(1)?;
//! assert_eq!(h.execute_mut(KvWrite::Put(7, 70))?, Some(7));
//! assert_eq!(h.execute(KvRead::Get(7))?, Some(70));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use nr_core::Dispatch;

pub mod demo_cli;

/// A sequential map from `u64` to `u64`: the structure the demo makes concurrent.
#[derive(Debug, Clone, Default)]
pub struct KvMap {
    map: HashMap<u64, u64>,
}

impl KvMap {
    /// A map holding keys `0..n`, each mapped to itself.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = examples::KvMap::with_keys(10);
    /// assert_eq!(m.get(3), Some(3));
    /// ```
    pub fn with_keys(n: u64) -> Self {
        Self {
            map: (0..n).map(|k| (k, k)).collect(),
        }
    }

    /// The value of `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(examples::KvMap::default().get(1), None);
    /// ```
    pub fn get(&self, key: u64) -> Option<u64> {
        self.map.get(&key).copied()
    }

    /// Sets `key` to `value`, returning the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut m = examples::KvMap::default();
    /// assert_eq!(m.put(1, 2), None);
    /// assert_eq!(m.put(1, 3), Some(2));
    /// ```
    pub fn put(&mut self, key: u64, value: u64) -> Option<u64> {
        self.map.insert(key, value)
    }
}

/// Read operations of [`KvMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvRead {
    /// Look a key up.
    Get(u64),
}

/// Write operations of [`KvMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvWrite {
    /// Set a key, returning its old value.
    Put(u64, u64),
}

impl Dispatch for KvMap {
    type ReadOperation<'a> = KvRead;
    type WriteOperation = KvWrite;
    type Response = Option<u64>;

    fn dispatch(&self, op: KvRead) -> Option<u64> {
        match op {
            KvRead::Get(k) => self.get(k),
        }
    }

    fn dispatch_mut(&mut self, op: KvWrite) -> Option<u64> {
        match op {
            KvWrite::Put(k, v) => self.put(k, v),
        }
    }
}

/// A small, fast, seedable pseudo-random generator (xorshift64*) for workloads.
///
/// # Examples
///
/// ```
/// let mut r = examples::Rng::new(1);
/// assert!(r.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; zero is remapped).
    ///
    /// # Examples
    ///
    /// ```
    /// let _ = examples::Rng::new(0);
    /// ```
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A uniformly distributed value in `0..n` (`n > 0`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = examples::Rng::new(3);
    /// assert!(r.below(5) < 5);
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % n
    }
}

/// The workspace README's code blocks, compiled and run as doctests so they cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
