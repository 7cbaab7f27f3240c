//! The one place that names `std::sync`, `std::thread`, `portable_atomic` or `loom`.
//!
//! Normally: the standard library, plus [`AtomicPair`], a 16-byte word over `portable-atomic`'s
//! `AtomicU128` (lock-free `cmpxchg16b` on x86_64), loaded with an inline `movdqa` where that is
//! atomic (AVX and `cmpxchg16b` detected once; see `wide_loads_are_atomic`). Under `--cfg loom`: loom's replacements, and
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
    /// the instruction at run time (or at compile time with `-C target-feature=+cmpxchg16b`)
    /// and keeps a correct fallback on other targets. Loads are this module's own inline
    /// `movdqa` where it is atomic (the same instruction `portable-atomic` picks, without its
    /// per-load indirect call), `portable-atomic`'s load otherwise.
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
            #[cfg(target_arch = "x86_64")]
            if wide_loads_are_atomic() {
                // SAFETY:
                // - `self.0.as_ptr()` is a valid, 16-aligned `u128` (an `AtomicU128`);
                // - `wide_loads_are_atomic()`: AVX makes `movdqa` one atomic 16-byte access,
                //   and `cmpxchg16b` exists, so every write to this word is `portable-atomic`'s
                //   lock-free `lock cmpxchg16b` (never its lock-based fallback), i.e. atomic.
                return unsafe { x86::load_u128(self.0.as_ptr()) };
            }
            // SeqCst: the paper's std::atomic default; pairs with every `compare_exchange` on
            // either replica (the protocol reads rep_p then rep_v and relies on a total order).
            self.0.load(Ordering::SeqCst)
        }

        /// The low 8 bytes (the value half of a Mirror pair) of an atomic 16-byte load: the
        /// Figure 5 load. Still one 16-byte access (never an 8-byte access to part of the
        /// word, which the Rust memory model leaves undefined when it races with the 16-byte
        /// CAS); the high half is simply not moved to a general register.
        #[inline(always)]
        pub(crate) fn load_low(&self) -> u64 {
            #[cfg(target_arch = "x86_64")]
            if wide_loads_are_atomic() {
                // SAFETY: as in `load`.
                return unsafe { x86::load_u128_low(self.0.as_ptr()) };
            }
            // SeqCst: see `load`.
            self.0.load(Ordering::SeqCst) as u64
        }

        /// Atomic 16-byte compare-and-swap (Figure 4's DWCAS): `Ok(old)` or `Err(observed)`.
        #[inline(always)]
        pub(crate) fn compare_exchange(&self, current: u128, new: u128) -> Result<u128, u128> {
            // SeqCst: see `load`.
            self.0
                .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
        }
    }

    /// Whether a 16-byte aligned `movdqa` load is atomic here and may be mixed with
    /// `portable-atomic`'s 16-byte CAS: AVX (Intel SDM vol. 3A §9.1.1 and AMD APM vol. 2
    /// §7.3.2 guarantee 16-byte atomicity of aligned SSE/AVX loads on processors with AVX) and
    /// `cmpxchg16b` (so `portable-atomic` writes with it, not with its lock-based fallback).
    /// Detected once; `portable-atomic` makes the same test, but behind a function pointer
    /// that costs a call per load (the traversal's critical path).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn wide_loads_are_atomic() -> bool {
        // Without compile-time `cmpxchg16b`, `portable-atomic` (1.x, `src/imp/mod.rs`) uses
        // its lock-based `AtomicU128` whatever CPUID says when built with
        // `--cfg portable_atomic_no_outline_atomics`, for SGX, or under Miri: its writes are
        // then not single 16-byte atomic accesses, and a `movdqa` beside them would race.
        if cfg!(all(
            any(portable_atomic_no_outline_atomics, target_env = "sgx", miri),
            not(target_feature = "cmpxchg16b")
        )) {
            return false;
        }
        if cfg!(all(target_feature = "avx", target_feature = "cmpxchg16b")) {
            return true; // known at compile time (e.g. `-C target-cpu=native`): no check
        }
        // Relaxed: a cache of a fact about the CPU; every thread computes the same value.
        match x86::WIDE_LOAD.load(Ordering::Relaxed) {
            x86::YES => true,
            x86::NO => false,
            _ => x86::detect(),
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use super::Ordering;

        /// `wide_loads_are_atomic`'s cache: [`UNKNOWN`], [`YES`] or [`NO`].
        pub(super) static WIDE_LOAD: std::sync::atomic::AtomicU8 =
            std::sync::atomic::AtomicU8::new(UNKNOWN);
        pub(super) const UNKNOWN: u8 = 0;
        pub(super) const YES: u8 = 1;
        pub(super) const NO: u8 = 2;

        #[cold]
        #[inline(never)]
        pub(super) fn detect() -> bool {
            let yes = std::arch::is_x86_feature_detected!("avx")
                && std::arch::is_x86_feature_detected!("cmpxchg16b");
            // Relaxed: see `wide_loads_are_atomic`.
            WIDE_LOAD.store(if yes { YES } else { NO }, Ordering::Relaxed);
            yes
        }

        /// One atomic 16-byte load (`movdqa`), both halves.
        ///
        /// # Safety
        ///
        /// - `src` is valid for reads of 16 bytes and 16-aligned;
        /// - `wide_loads_are_atomic()` returned true, and every concurrent write to `src` is a
        ///   16-byte atomic access.
        #[inline(always)]
        pub(super) unsafe fn load_u128(src: *const u128) -> u128 {
            let (lo, hi): (u64, u64);
            // SAFETY:
            // - `src` is readable and 16-aligned (caller), as `movdqa` requires;
            // - the access is atomic (caller: AVX) and races only with 16-byte atomic writes
            //   (caller), so it is an atomic load of the whole word in the memory model;
            // - SeqCst: on x86 a SeqCst load is a plain load (the locked CAS is the fence);
            //   the asm block is not `readonly`/`pure`, so the compiler orders every other
            //   memory access around it as around an unknown call (as `portable-atomic`'s).
            unsafe {
                core::arch::asm!(
                    "movdqa {x}, xmmword ptr [{src}]",
                    "movq {lo}, {x}",
                    "punpckhqdq {x}, {x}",
                    "movq {hi}, {x}",
                    src = in(reg) src,
                    x = out(xmm_reg) _,
                    lo = out(reg) lo,
                    hi = out(reg) hi,
                    options(nostack, preserves_flags),
                );
            }
            (u128::from(hi) << 64) | u128::from(lo)
        }

        /// The low half of one atomic 16-byte load (`movdqa`).
        ///
        /// # Safety
        ///
        /// As [`load_u128`].
        #[inline(always)]
        pub(super) unsafe fn load_u128_low(src: *const u128) -> u64 {
            let lo: u64;
            // SAFETY: as in `load_u128`: one atomic 16-byte load; only the low half leaves
            // the vector register.
            unsafe {
                core::arch::asm!(
                    "movdqa {x}, xmmword ptr [{src}]",
                    "movq {lo}, {x}",
                    src = in(reg) src,
                    x = out(xmm_reg) _,
                    lo = out(reg) lo,
                    options(nostack, preserves_flags),
                );
            }
            lo
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

        pub(crate) fn load_low(&self) -> u64 {
            self.load() as u64
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::AtomicPair;

    /// The inline 16-byte load returns both halves in their places (value low, sequence
    /// high), before and after a 16-byte CAS.
    #[test]
    fn pair_load_returns_both_halves_in_place() {
        let lo = 0x0123_4567_89ab_cdef_u64;
        let hi = 0xfedc_ba98_7654_3210_u64;
        let p = AtomicPair::new((u128::from(hi) << 64) | u128::from(lo));
        assert_eq!(p.load(), (u128::from(hi) << 64) | u128::from(lo));
        assert_eq!(p.load_low(), lo);
        let next = (u128::from(lo) << 64) | u128::from(hi);
        assert!(p.compare_exchange(p.load(), next).is_ok());
        assert_eq!(p.load(), next);
        assert_eq!(p.load_low(), hi);
    }
}
