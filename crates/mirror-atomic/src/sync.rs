//! The one place that names `std::sync`, `std::thread`, `portable_atomic` or `loom`.
//!
//! Normally: the standard library, plus [`AtomicPair`], a 16-byte word over `portable-atomic`'s
//! `AtomicU128` (lock-free `cmpxchg16b` on x86_64). Under `--cfg loom`: loom's replacements, and
//! an `AtomicPair` that is a loom `Mutex<u128>` behind the same functions.
//!
//! Why the Mutex stand-in is faithful: the Mirror protocol (paper Figure 4) uses the 16-byte
//! word only through two operations, an atomic 16-byte load and a 16-byte compare-and-swap, both
//! `SeqCst` here. Each is one indivisible step on the whole pair; a lock held for the duration of
//! one read or one read-compare-write is exactly that, and loom explores every interleaving at
//! each lock acquisition, i.e. before every pair operation. Sequential consistency is what
//! `lock cmpxchg16b` provides on x86, so the model loses no behaviour the hardware allows.
//! What the model does not see is torn 8-byte halves, which the hardware never produces for a
//! 16-byte atomic (only a crash can tear a pair, and crash tests cover that).

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::Ordering;
    pub(crate) use std::sync::{Arc, MutexGuard};

    /// `std::sync::Mutex` in a distinct type, so `clippy.toml` can forbid the std one elsewhere.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) const fn new(v: T) -> Self {
            Self(std::sync::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> std::sync::LockResult<MutexGuard<'_, T>> {
            self.0.lock()
        }
    }

    /// A 16-byte atomic word: `{ low: value, high: sequence }` in the Mirror pair.
    ///
    /// `portable-atomic` is used instead of `core::arch::x86_64::cmpxchg16b`: that intrinsic is
    /// unstable (`stdarch_x86_has_cmpxchg16b`) and x86-only, and a hand-written `lock
    /// cmpxchg16b` would need its own CPUID detection and fallback. `portable-atomic` detects
    /// the instruction at run time (or at compile time with `-C target-feature=+cmpxchg16b`),
    /// uses `vmovdqa` for 16-byte loads where AVX makes them atomic, and keeps a correct
    /// fallback on other targets.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct AtomicPair(portable_atomic::AtomicU128);

    impl AtomicPair {
        #[inline(always)]
        pub(crate) const fn new(v: u128) -> Self {
            Self(portable_atomic::AtomicU128::new(v))
        }

        /// Atomic 16-byte load.
        #[inline(always)]
        pub(crate) fn load(&self) -> u128 {
            // SeqCst: the paper's std::atomic default; pairs with every `compare_exchange` on
            // either replica (the protocol reads rep_p then rep_v and relies on a total order).
            self.0.load(Ordering::SeqCst)
        }

        /// Atomic 16-byte compare-and-swap (Figure 4's DWCAS): `Ok(old)` or `Err(observed)`.
        #[inline(always)]
        pub(crate) fn compare_exchange(&self, current: u128, new: u128) -> Result<u128, u128> {
            // SeqCst: see `load`.
            self.0
                .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
        }
    }

    /// An 8-byte atomic word (the volatile and Izraelevitz flavors).
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct AtomicWord(std::sync::atomic::AtomicU64);

    impl AtomicWord {
        #[inline(always)]
        pub(crate) const fn new(v: u64) -> Self {
            Self(std::sync::atomic::AtomicU64::new(v))
        }
        #[inline(always)]
        pub(crate) fn load(&self, o: Ordering) -> u64 {
            self.0.load(o)
        }
        #[inline(always)]
        pub(crate) fn store(&self, v: u64, o: Ordering) {
            self.0.store(v, o)
        }
        #[inline(always)]
        pub(crate) fn compare_exchange(&self, c: u64, n: u64, o: Ordering) -> Result<u64, u64> {
            self.0.compare_exchange(c, n, o, Ordering::Acquire)
        }
        #[inline(always)]
        pub(crate) fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
            self.0.fetch_add(v, o)
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::Ordering;
    pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
    #[cfg(test)]
    pub(crate) use loom::{model, thread};

    /// Under loom: the pair is a `Mutex<u128>` (loom has no 16-byte atomic; see the module doc
    /// for why this stays faithful).
    #[derive(Debug, Default)]
    pub(crate) struct AtomicPair(loom::sync::Mutex<u128>);

    impl AtomicPair {
        pub(crate) fn new(v: u128) -> Self {
            Self(loom::sync::Mutex::new(v))
        }

        pub(crate) fn load(&self) -> u128 {
            *self
                .0
                .lock()
                .expect("invariant: no panic while the pair lock is held")
        }

        pub(crate) fn compare_exchange(&self, current: u128, new: u128) -> Result<u128, u128> {
            let mut w = self
                .0
                .lock()
                .expect("invariant: no panic while the pair lock is held");
            if *w == current {
                *w = new;
                Ok(current)
            } else {
                Err(*w)
            }
        }
    }

    /// Under loom: loom's `AtomicU64`.
    #[derive(Debug)]
    pub(crate) struct AtomicWord(loom::sync::atomic::AtomicU64);

    impl AtomicWord {
        pub(crate) fn new(v: u64) -> Self {
            Self(loom::sync::atomic::AtomicU64::new(v))
        }
        pub(crate) fn load(&self, o: Ordering) -> u64 {
            self.0.load(o)
        }
        pub(crate) fn store(&self, v: u64, o: Ordering) {
            self.0.store(v, o)
        }
        pub(crate) fn compare_exchange(&self, c: u64, n: u64, o: Ordering) -> Result<u64, u64> {
            self.0.compare_exchange(c, n, o, Ordering::Acquire)
        }
        pub(crate) fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
            self.0.fetch_add(v, o)
        }
    }
}

pub(crate) use imp::*;

/// Locks `m`, ignoring poisoning: every critical section of this crate leaves its data valid
/// at every step (free lists are only pushed to and popped from).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small number identifying the calling thread (a hash of its `ThreadId`, cached), used to
/// pick an allocator shard.
pub(crate) fn thread_hint() -> usize {
    use std::hash::{Hash, Hasher};
    std::thread_local! {
        static HINT: usize = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::thread::current().id().hash(&mut h);
            h.finish() as usize
        };
    }
    HINT.with(|h| *h)
}

/// A per-thread pseudo-random number (xorshift64*, seeded from the thread hint): the skip
/// list draws tower heights with it. Not for anything that needs unpredictability.
pub(crate) fn thread_random() -> u64 {
    std::thread_local! {
        static STATE: std::cell::Cell<u64> = std::cell::Cell::new(thread_hint() as u64 | 1);
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}
