//! The one place that names `std::sync`, `std::thread`, `portable_atomic` or `loom`.
//!
//! Normally: the standard library, plus [`AtomicPair`], a 16-byte word over `portable-atomic`'s
//! `AtomicU128` (lock-free `cmpxchg16b` on x86_64), loaded with inline `movdqa` (16 bytes; its
//! low half is the value half by default, predicted by an 8-byte load that decides nothing)
//! or, with the `value-half-load` feature, `mov` (the 8-byte value half) where every write is
//! known to be a `lock cmpxchg16b` (see `imp::x86` for why those loads are atomic loads of
//! the pair, and what the 8-byte one assumes). Under
//! `--cfg loom`: loom's replacements, and an `AtomicPair` (and `AtomicWord`) whose bits stay in
//! the object, each operation one step under a loom mutex that every word shares, behind the
//! same functions (the feature changes nothing there).
//!
//! Why the Mutex stand-in is faithful: the Mirror protocol (paper Figure 4) uses the 16-byte
//! word only through two operations, an atomic 16-byte load and a 16-byte compare-and-swap, both
//! `SeqCst` here. Each is one indivisible step on the whole pair; a lock held for the duration of
//! one read or one read-compare-write is exactly that (one lock for all words: `SeqCst` is a
//! single total order over all of them anyway), and loom explores every interleaving at
//! each lock acquisition, i.e. before every pair operation. Sequential consistency is what
//! `lock cmpxchg16b` provides on x86, so the model loses no behaviour the hardware allows.
//! What the model does not see is torn 8-byte halves, which the hardware never produces for a
//! 16-byte atomic (only a crash can tear a pair, and crash tests cover that).

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicPtr, Ordering};
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
    /// assembly where the writes are known to be `lock cmpxchg16b` (see [`x86`]),
    /// `portable-atomic`'s load otherwise.
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
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if x86::wide_loads_known_atomic() {
                // SAFETY:
                // - `self.0.as_ptr()` is a valid, 16-aligned `u128` (an `AtomicU128`);
                // - `wide_loads_known_atomic()`: every write to this word is a `lock
                //   cmpxchg16b` and AVX makes `movdqa` one atomic 16-byte access (`x86`
                //   module docs).
                return unsafe { x86::load_u128(self.0.as_ptr()) };
            }
            self.load_checked()
        }

        /// [`load`](Self::load) when the CPU is not yet known to allow the inline load: checks
        /// it (detecting it the first time), else `portable-atomic`'s load. Out of line on
        /// x86_64, so that the fallback's call does not weigh on the callers' loops.
        #[cfg_attr(all(target_arch = "x86_64", not(miri)), cold, inline(never))]
        #[cfg_attr(not(all(target_arch = "x86_64", not(miri))), inline(always))]
        fn load_checked(&self) -> u128 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if x86::wide_loads_are_atomic() {
                // SAFETY: as in `load`, with the condition checked here.
                return unsafe { x86::load_u128(self.0.as_ptr()) };
            }
            // SeqCst: the paper's std::atomic default; pairs with every `compare_exchange` on
            // either replica (the protocol reads rep_p then rep_v and relies on a total order).
            self.0.load(Ordering::SeqCst)
        }

        /// The low 8 bytes (the value half of a Mirror pair) of an atomic 16-byte load: the
        /// Figure 5 load. Checks the CPU on each call (a cached byte); the traversal path
        /// uses [`load_low_in`](Self::load_low_in), which needs no check with the
        /// `value-half-load` feature.
        #[inline(always)]
        pub(crate) fn load_low(&self) -> u64 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if x86::low_loads_are_atomic() {
                // SAFETY: a valid, 16-aligned pair; `low_loads_are_atomic()` is the condition
                // of `x86::load_low_at`.
                return unsafe { x86::load_low_at(self.0.as_ptr().cast::<u8>(), 0) };
            }
            self.load() as u64
        }

        /// [`load_low`](Self::load_low) for a caller that holds proof that
        /// [`require_native_pairs`] succeeded (a `Space` of a mirrored heap): with the
        /// `value-half-load` feature no CPU check at all; without it one test of `how`. The
        /// address is given to the instruction as `base + (self - base)`, so when the caller
        /// computed `self` from `base` the compiler folds the offset into the addressing mode
        /// (as it does for the volatile flavor's plain load).
        ///
        /// `how` is the CPU check made once for the whole traversal ([`LowLoads::now`]), so
        /// the per-load test is of a register (none with the feature), not of the CPU cache,
        /// which the compiler reads again after every load (each is an `asm!` block that may
        /// write memory, as far as it knows).
        ///
        /// # Safety
        ///
        /// [`require_native_pairs`] returned `Ok` in this process.
        #[inline(always)]
        pub(crate) unsafe fn load_low_in(&self, base: *const u8, how: LowLoads) -> u64 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if how.inline() {
                let off = (self.0.as_ptr() as usize).wrapping_sub(base as usize);
                // SAFETY: `base + off` is this pair's (valid, 16-aligned) address;
                // `require_native_pairs` succeeded (caller), so `pairs_are_lock_free()`
                // holds, and without the feature `how.inline()` is
                // `wide_loads_known_atomic()` as `LowLoads::now` read it (a fact that never
                // reverts): the condition of `x86::load_low_at`.
                return unsafe { x86::load_low_at(base, off) };
            }
            let _ = (base, how);
            self.load_checked() as u64
        }

        /// Atomic 16-byte compare-and-swap (Figure 4's DWCAS): `Ok(old)` or `Err(observed)`.
        #[inline(always)]
        pub(crate) fn compare_exchange(&self, current: u128, new: u128) -> Result<u128, u128> {
            // SeqCst: see `load`.
            self.0
                .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
        }
    }

    /// How a traversal loads the value half of a pair ([`AtomicPair::load_low_in`]): the CPU
    /// check read once, at the start of an operation, into a value the compiler keeps in a
    /// register.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct LowLoads {
        /// `x86::wide_loads_known_atomic()` when read (false off x86_64 and under Miri).
        wide: bool,
    }

    impl LowLoads {
        /// Whether [`AtomicPair::load_low_in`] loads inline: always with the `value-half-load`
        /// feature (on x86_64), else when AVX was known to make 16-byte loads atomic.
        #[inline(always)]
        pub(crate) fn inline(self) -> bool {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            return x86::VALUE_HALF_LOAD || self.wide;
            #[cfg(not(all(target_arch = "x86_64", not(miri))))]
            self.wide
        }

        /// The check as it stands now (it only ever turns from false to true).
        #[inline(always)]
        pub(crate) fn now() -> Self {
            Self {
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                wide: x86::wide_loads_known_atomic(),
                #[cfg(not(all(target_arch = "x86_64", not(miri))))]
                wide: false,
            }
        }
    }

    /// Checks, once per process, that `portable-atomic`'s `AtomicU128` is lock-free (its
    /// public `is_lock_free`), i.e. on x86_64 that every 16-byte CAS is one `lock cmpxchg16b`:
    /// `Err` with the missing instruction otherwise (x86_64 CPUs before about 2006, or a build
    /// in which `portable-atomic` uses its lock-based fallback). On other targets, and under
    /// Miri, loads go through `portable-atomic` and this always succeeds.
    pub(crate) fn require_native_pairs() -> Result<(), &'static str> {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if !x86::pairs_are_lock_free() {
            return Err("cmpxchg16b");
        }
        Ok(())
    }

    /// The inline pair loads and the facts they rest on.
    ///
    /// Every write to a pair after it is published is `portable-atomic`'s `compare_exchange`
    /// (the crate issues no other store to a shared pair). The inline loads are used only when
    /// `portable_atomic::AtomicU128::is_lock_free()` holds (its public API, checked once;
    /// `portable-atomic` is pinned in the workspace `Cargo.toml`): on x86_64 its only
    /// lock-free 16-byte read-modify-write is `lock cmpxchg16b`, so every write to a pair is
    /// then one `lock cmpxchg16b`. Given that:
    ///
    /// - **16-byte load** (`movdqa`, only with AVX): Intel SDM vol. 3A §9.1.1 and AMD APM
    ///   vol. 2 §7.3.2 guarantee that aligned 16-byte SSE/AVX loads are single atomic accesses
    ///   on processors with AVX, so it is the atomic 16-byte load `portable-atomic` itself
    ///   issues on such CPUs (there behind a function pointer: a call per load). Same operand
    ///   size as the `cmpxchg16b` writes: sound by the manuals. Without AVX,
    ///   `portable-atomic`'s own load (a `lock cmpxchg16b`).
    /// - **The value half, default build**: the same `movdqa`, keeping the low 8 bytes
    ///   (`movq`), so the traversal path pays one check of the cached AVX bit per load (none
    ///   when AVX is enabled at compile time); beside it an 8-byte `mov` of the same half,
    ///   kept only when it equals the `movdqa`'s half (`low_half_hinted`):
    ///   the result is always the 16-byte load's, and a search's next address waits only for
    ///   the `mov` (the equality branch is predicted).
    /// - **The value half with the `value-half-load` feature** (`mov`, the Figure 5 load on
    ///   the traversal path, with no CPU check): one aligned 8-byte load of the low half.
    ///   What it **assumes**: that an aligned 8-byte load racing with a `lock cmpxchg16b` on
    ///   the 16 bytes containing it returns the low half of the pair as it was before or after
    ///   that instruction, never a mix, in the same order as a 16-byte load would. The
    ///   manuals say that an aligned 8-byte load is a single atomic access (SDM §9.1.1) and
    ///   that locked operations are atomic with respect to all other memory operations (SDM
    ///   §9.1.2.2), but they leave accesses of *different sizes* to the same location
    ///   unspecified (SDM §9.1.2.2 recommends identical operand lengths for semaphores): no
    ///   vendor promises this, though no x86 CPU is known to break it (the tests check it on
    ///   the CPU they run on). Given the assumption, the `mov` returns precisely what "a
    ///   16-byte atomic load, keep the low half" returns, and that operation is what the asm
    ///   block stands for in the language's memory model. (Written as a Rust 8-byte atomic
    ///   load it would be a mixed-size race, which the memory model leaves undefined; the asm
    ///   block is not that operation but the 16-byte one, whose result it computes.) It is
    ///   the cheaper load: the crate README's table gives what each costs.
    ///
    /// The blocks are neither `pure` nor `readonly`, so the compiler orders every other
    /// memory access around them as around an unknown call; SeqCst needs nothing more on x86
    /// for a load (the locked CAS is the fence).
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    pub(super) mod x86 {
        use super::Ordering;

        /// Whether the `value-half-load` feature is on (the value half read by an 8-byte
        /// `mov`, see the module docs for what that assumes).
        pub(super) const VALUE_HALF_LOAD: bool = cfg!(feature = "value-half-load");

        /// Cache of the CPU checks: bit [`KNOWN`] once computed, then [`LOCK_FREE`] and
        /// [`WIDE`].
        static CPU: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
        const KNOWN: u8 = 1;
        const LOCK_FREE: u8 = 2;
        const WIDE: u8 = 4;

        /// The cache, detecting the CPU the first time.
        #[inline(always)]
        fn cpu() -> u8 {
            // Relaxed: a cache of a fact about the CPU; every thread computes the same value.
            let c = CPU.load(Ordering::Relaxed);
            if c & KNOWN != 0 {
                c
            } else {
                detect()
            }
        }

        #[cold]
        #[inline(never)]
        fn detect() -> u8 {
            let lock_free = portable_atomic::AtomicU128::is_lock_free();
            let avx = std::arch::is_x86_feature_detected!("avx");
            let c = KNOWN
                | if lock_free { LOCK_FREE } else { 0 }
                | if lock_free && avx { WIDE } else { 0 };
            // Relaxed: see `cpu`.
            CPU.store(c, Ordering::Relaxed);
            c
        }

        /// `portable-atomic`'s `AtomicU128` is lock-free: every pair write is a `lock
        /// cmpxchg16b` (module docs).
        #[inline(always)]
        pub(super) fn pairs_are_lock_free() -> bool {
            portable_atomic::AtomicU128::is_always_lock_free() || cpu() & LOCK_FREE != 0
        }

        /// [`pairs_are_lock_free`] and AVX (16-byte vector loads are atomic).
        #[inline(always)]
        pub(super) fn wide_loads_are_atomic() -> bool {
            wide_at_compile_time() || cpu() & WIDE != 0
        }

        /// [`wide_loads_are_atomic`] as far as known without detecting the CPU: one test of
        /// the cached byte (false until the first detection; the callers then take the path
        /// that detects). Nothing at all when known at compile time.
        #[inline(always)]
        pub(super) fn wide_loads_known_atomic() -> bool {
            // Relaxed: see `cpu`.
            wide_at_compile_time() || CPU.load(Ordering::Relaxed) & WIDE != 0
        }

        /// AVX and `cmpxchg16b` enabled at compile time (e.g. `-C target-cpu=native`).
        #[inline(always)]
        fn wide_at_compile_time() -> bool {
            cfg!(target_feature = "avx") && portable_atomic::AtomicU128::is_always_lock_free()
        }

        /// The condition of [`load_low_at`]: [`pairs_are_lock_free`] with the
        /// `value-half-load` feature, [`wide_loads_known_atomic`] without it.
        #[inline(always)]
        pub(super) fn low_loads_are_atomic() -> bool {
            if VALUE_HALF_LOAD {
                pairs_are_lock_free()
            } else {
                wide_loads_known_atomic()
            }
        }

        /// One atomic 16-byte load (`movdqa`), both halves.
        ///
        /// # Safety
        ///
        /// - `src` is valid for reads of 16 bytes and 16-aligned;
        /// - [`wide_loads_are_atomic`] (or [`wide_loads_known_atomic`]) holds.
        #[inline(always)]
        pub(super) unsafe fn load_u128(src: *const u128) -> u128 {
            let (lo, hi): (u64, u64);
            // SAFETY:
            // - `src` is readable and 16-aligned (caller), as `movdqa` requires;
            // - the access is one atomic 16-byte load racing only with `lock cmpxchg16b`
            //   (caller; module docs), i.e. the pair's atomic load in the memory model.
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

        /// The low half of a pair at `base + off`: by default the low 8 bytes of one atomic
        /// 16-byte load (`movdqa`), predicted by an 8-byte load (`low_half_hinted`); with
        /// the `value-half-load` feature one aligned 8-byte `mov` (module docs for what it
        /// assumes).
        ///
        /// `base` is passed in `r12`, named in the asm (in both forms): a load address
        /// `[base + index]` whose base is `r13` or `rbp` must be encoded with a displacement byte
        /// (`[r13 + index + 0]`), and on the Zen 2 VM of the crate README a load with base,
        /// index and displacement takes one cycle more than one with base and index (a
        /// pointer chase over 64 nodes in L1: 1.42 against 1.18 ns a hop, with any
        /// displacement; `rbx` or `r12` as base, no displacement, 1.18). The register
        /// allocator chose `r13` for the list's search through a `Base` (issue 23): one
        /// cycle more on every hop's critical load, 15 % slower lookups. Naming the register
        /// takes the choice away (`Base` in the list then ran as fast as `Heap::get`; crate
        /// README, run 18).
        ///
        /// # Safety
        ///
        /// - `base + off` is a pair: valid for reads of 16 bytes and 16-aligned;
        /// - [`low_loads_are_atomic`] holds (by default [`wide_loads_known_atomic`], with the
        ///   feature [`pairs_are_lock_free`]).
        #[inline(always)]
        pub(super) unsafe fn load_low_at(base: *const u8, off: usize) -> u64 {
            let lo: u64;
            #[cfg(not(feature = "value-half-load"))]
            {
                // SAFETY:
                // - the pair at `base + off` is readable and 16-aligned, and the hint is its
                //   own low half (readable, 8-aligned) (caller);
                // - `wide_loads_known_atomic()` holds (caller).
                lo = unsafe { low_half_hinted(base, off, off) };
            }
            // SAFETY:
            // - `base + off` is readable and 8-aligned (caller);
            // - every write to the pair is one `lock cmpxchg16b` (caller), so this is the
            //   pair's atomic 16-byte load in the memory model under the assumption the
            //   module docs state for `mov`.
            #[cfg(feature = "value-half-load")]
            unsafe {
                core::arch::asm!(
                    "mov {lo}, qword ptr [r12 + {o}]",
                    in("r12") base,
                    o = in(reg) off,
                    lo = out(reg) lo,
                    options(nostack, preserves_flags),
                );
            }
            lo
        }

        /// The default value-half load: the low half of one atomic 16-byte load (`movdqa`)
        /// of the pair at `base + off`, with an 8-byte load at `base + hint_off` (the pair's
        /// own low half, `hint_off == off`, in the crate) as a **prediction** of it.
        ///
        /// The result is always the 16-byte load's low half: the hint is returned only when
        /// it is equal to it, bit for bit, and the 16-byte load's own low half otherwise. So
        /// nothing rests on what the 8-byte load returns (a mixed-size access whose
        /// atomicity the manuals leave open, see the module docs): it is sound by the
        /// manuals, as the plain `movdqa` + `movq` is.
        ///
        /// Why: on a search the next node's address is this load's result. The choice is a
        /// branch (`je`), not a data dependence, so the CPU predicts it (always equal unless
        /// a CAS lands between the two loads) and the next hop starts from the 8-byte
        /// load's result (about 4-5 cycles from L1) instead of waiting for the vector load
        /// and its move to a general register (about 7-8 + 3 cycles on Zen 2); the 16-byte
        /// load and the compare run beside the chain and only check it. A mismatch costs a
        /// branch misprediction, nothing else.
        ///
        /// # Safety
        ///
        /// - `base + off` and `base + hint_off` are readable for 16 and 8 bytes; `base + off`
        ///   is a pair, 16-aligned, and `base + hint_off` 8-aligned;
        /// - [`wide_loads_known_atomic`] (or [`wide_loads_are_atomic`]) holds.
        #[cfg(not(feature = "value-half-load"))]
        #[inline(always)]
        pub(in crate::sync) unsafe fn low_half_hinted(
            base: *const u8,
            off: usize,
            hint_off: usize,
        ) -> u64 {
            let lo: u64;
            // SAFETY:
            // - `base + off` and `base + hint_off` are readable and aligned as each
            //   instruction requires (caller);
            // - every write to the pair is one `lock cmpxchg16b` and AVX makes `movdqa` one
            //   atomic 16-byte access (caller; module docs), so the result, always the
            //   `movdqa`'s low half (the `mov` is kept only when equal to it), is the pair's
            //   atomic 16-byte load in the memory model; the `mov` only reads.
            unsafe {
                core::arch::asm!(
                    "mov {lo}, qword ptr [r12 + {ho}]",
                    "movdqa {x}, xmmword ptr [r12 + {o}]",
                    "movq {t}, {x}",
                    "cmp {t}, {lo}",
                    "je 2f",
                    "mov {lo}, {t}",
                    "2:",
                    in("r12") base,
                    o = in(reg) off,
                    ho = in(reg) hint_off,
                    x = out(xmm_reg) _,
                    t = out(reg) _,
                    lo = out(reg) lo,
                    options(nostack),
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
    pub(crate) use loom::sync::atomic::{AtomicPtr, Ordering};
    pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
    #[cfg(test)]
    pub(crate) use loom::{model, thread};

    use core::cell::UnsafeCell;

    loom::lazy_static! {
        /// The lock every word operation of a model execution takes (see [`AtomicPair`]).
        static ref WORDS: loom::sync::Mutex<()> = loom::sync::Mutex::new(());
    }

    /// Runs `f` under [`WORDS`]: one indivisible, `SeqCst` step of the model.
    fn step<R>(f: impl FnOnce() -> R) -> R {
        let _words = WORDS
            .lock()
            .expect("invariant: no panic while the word lock is held");
        f()
    }

    /// One load step on a word or pair.
    fn read<T: Copy>(cell: &UnsafeCell<T>) -> T {
        // SAFETY: under the word lock, which every access to the cell takes.
        step(|| unsafe { *cell.get() })
    }

    /// One read-modify-write step on a word or pair: `f` maps the value to the new one and
    /// the result; the value is written back.
    fn update<T: Copy, R>(cell: &UnsafeCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: under the word lock, which every access to the cell takes.
        step(|| f(unsafe { &mut *cell.get() }))
    }

    /// One compare-and-swap step: `Ok(current)` or `Err(observed)`.
    fn cas<T: Copy + PartialEq>(cell: &UnsafeCell<T>, current: T, new: T) -> Result<T, T> {
        update(cell, |w| {
            if *w == current {
                *w = new;
                Ok(current)
            } else {
                Err(*w)
            }
        })
    }

    /// Under loom: the pair's 16 bytes, as in the normal build, each operation one step under
    /// a lock that every word of the model shares (loom has no 16-byte atomic; see the module
    /// doc for why a lock-protected load or CAS is faithful).
    ///
    /// The bits live in the object itself, not in a loom object, because the heap treats its
    /// memory as bytes: `Heap::alloc` moves a node into the volatile arena, Mirror's `publish`
    /// copies it byte for byte to the region, and `Space::twin_pair` reads the copy as a pair.
    /// With plain bits each copy is an independent replica, as on the hardware (a loom object
    /// copied by bytes would be two handles on one object). One lock for every word makes all
    /// word operations totally ordered: exact for the pairs (`SeqCst` in both builds), stronger
    /// than the normal build for [`AtomicWord`]'s Acquire/Release users (the Volatile and
    /// Izraelevitz flavors, chunk headers), which the models do not exercise.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct AtomicPair(UnsafeCell<u128>);

    // SAFETY: the cell is only read or written inside `step`, under the model's word lock.
    unsafe impl Sync for AtomicPair {}

    impl AtomicPair {
        pub(crate) fn new(v: u128) -> Self {
            Self(UnsafeCell::new(v))
        }

        pub(crate) fn load(&self) -> u128 {
            read(&self.0)
        }

        pub(crate) fn load_low(&self) -> u64 {
            self.load() as u64
        }

        /// # Safety
        ///
        /// None under loom (kept `unsafe` to match the normal build).
        pub(crate) unsafe fn load_low_in(&self, _base: *const u8, _how: LowLoads) -> u64 {
            self.load() as u64
        }

        pub(crate) fn compare_exchange(&self, current: u128, new: u128) -> Result<u128, u128> {
            cas(&self.0, current, new)
        }
    }

    /// Under loom: nothing to check (every pair operation is the model's own step).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct LowLoads;

    impl LowLoads {
        pub(crate) fn now() -> Self {
            Self
        }
    }

    /// Under loom: an 8-byte word in the object itself, each operation one step under the
    /// model's word lock (see [`AtomicPair`]).
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct AtomicWord(UnsafeCell<u64>);

    // SAFETY: the cell is only read or written inside `step`, under the model's word lock.
    unsafe impl Sync for AtomicWord {}

    impl AtomicWord {
        pub(crate) fn new(v: u64) -> Self {
            Self(UnsafeCell::new(v))
        }
        pub(crate) fn load(&self, _: Ordering) -> u64 {
            read(&self.0)
        }
        pub(crate) fn store(&self, v: u64, _: Ordering) {
            update(&self.0, |w| *w = v)
        }
        pub(crate) fn compare_exchange(&self, c: u64, n: u64, _: Ordering) -> Result<u64, u64> {
            cas(&self.0, c, n)
        }
        pub(crate) fn fetch_add(&self, v: u64, _: Ordering) -> u64 {
            update(&self.0, |w| {
                let old = *w;
                *w = old.wrapping_add(v);
                old
            })
        }
    }
}

/// Under loom every pair operation is the model's own: nothing to require.
#[cfg(loom)]
pub(crate) fn require_native_pairs() -> Result<(), &'static str> {
    Ok(())
}

pub(crate) use imp::*;

/// Locks `m`, ignoring poisoning: every critical section of this crate leaves its data valid
/// at every step (free lists are only pushed to and popped from).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small number identifying the calling thread (a hash of its `ThreadId`, cached), used to
/// pick an allocator shard.
#[cfg(not(loom))]
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

/// Under loom: 0 for every thread, so a model's allocator path (which shard, hence a fresh
/// chunk or a free block) does not depend on the id of the OS thread the test harness gave it.
/// One shard also makes every freed block the next one any thread allocates, the most reuse a
/// model can see.
#[cfg(loom)]
pub(crate) fn thread_hint() -> usize {
    0
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
    use super::{AtomicPair, LowLoads};

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
        super::require_native_pairs().expect("this CPU has cmpxchg16b");
        let base = (&p as *const AtomicPair).cast::<u8>().wrapping_sub(4096);
        // SAFETY: `require_native_pairs` succeeded above.
        assert_eq!(unsafe { p.load_low_in(base, LowLoads::now()) }, hi);
    }

    /// Once the CPU is known (after the first pair load), the check a traversal reads once
    /// ([`LowLoads::now`]) takes the inline load where a single load would: on a CPU with AVX
    /// (the x86_64 machines these tests run on), and always with the `value-half-load`
    /// feature.
    #[test]
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    fn low_loads_read_once_take_the_inline_load() {
        super::require_native_pairs().expect("this CPU has cmpxchg16b");
        let _ = AtomicPair::new(1).load();
        if std::arch::is_x86_feature_detected!("avx") || cfg!(feature = "value-half-load") {
            assert!(LowLoads::now().inline(), "the inline load is off");
        }
    }

    /// The default value-half load returns the pair's low half whatever its 8-byte
    /// prediction read (`x86::low_half_hinted`): the
    /// prediction when it is equal, the 16-byte load's half when it is not. The hint is
    /// pointed at another word here so that it disagrees (in the crate it is the pair's own
    /// low half, which disagrees only when a CAS lands between the two loads); returning it
    /// fails the test.
    #[test]
    #[cfg(all(target_arch = "x86_64", not(miri), not(feature = "value-half-load")))]
    fn a_wrong_prediction_never_decides_the_value_half() {
        super::require_native_pairs().expect("this CPU has cmpxchg16b");
        if !std::arch::is_x86_feature_detected!("avx") {
            eprintln!("skipped: no AVX, the default build does not use the inline load");
            return;
        }
        let pair = AtomicPair::new((0x2222_u128 << 64) | 0x1111);
        let other = AtomicPair::new((0x4444_u128 << 64) | 0x3333);
        let base = (&pair as *const AtomicPair).cast::<u8>();
        // The prediction read from `other`, addressed from the pair (as the crate addresses
        // every load from the space's start).
        let wrong_off = ((&other as *const AtomicPair) as usize).wrapping_sub(base as usize);
        // SAFETY: `base` and `base + wrong_off` are valid, 16-aligned pairs written only by
        // CAS (none here), and the CPU has AVX and `cmpxchg16b` (checked above).
        let (wrong, right) = unsafe {
            (
                super::imp::x86::low_half_hinted(base, 0, wrong_off),
                super::imp::x86::low_half_hinted(base, 0, 0),
            )
        };
        assert_eq!(wrong, 0x1111, "the wrong prediction was returned");
        assert_eq!(right, 0x1111);
        assert!(pair
            .compare_exchange(pair.load(), (0x2223_u128 << 64) | 0x5555)
            .is_ok());
        // SAFETY: as above.
        let after = unsafe { super::imp::x86::low_half_hinted(base, 0, wrong_off) };
        assert_eq!(
            after, 0x5555,
            "the wrong prediction was returned after a CAS"
        );
    }

    /// The value-half loads (the 8-byte `mov` with the `value-half-load` feature, the low
    /// half of a 16-byte load without it), racing with 16-byte CASes that step
    /// `{value k, sequence k ^ SEQ}` to `{k + 1, (k + 1) ^ SEQ}`, return the value half (never
    /// the sequence half: it differs in every step), see values in modification order (never
    /// smaller than an earlier read) and only written ones (never past the writer); the
    /// 16-byte load never sees the halves disagree. A torn pair, loads out of order or a
    /// load of the wrong half fail it (how much the two threads overlap depends on the
    /// scheduler, so it is not asserted: under load the writer can run all its steps between
    /// two reads).
    #[test]
    fn value_half_loads_follow_the_pair_cas_order() {
        const STEPS: u64 = 200_000;
        /// XORed into the sequence half, so that no step has equal halves.
        const SEQ: u64 = 0x5e90_0000_0000_0000;
        let pair_of = |k: u64| (u128::from(k ^ SEQ) << 64) | u128::from(k);
        let pair = AtomicPair::new(pair_of(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                for k in 0..STEPS {
                    assert!(pair.compare_exchange(pair_of(k), pair_of(k + 1)).is_ok());
                }
            });
            super::require_native_pairs().expect("this CPU has cmpxchg16b");
            let mut last = 0;
            while last < STEPS {
                // SAFETY: `require_native_pairs` succeeded above.
                let v = unsafe { pair.load_low_in(core::ptr::null(), LowLoads::now()) };
                let w = pair.load_low();
                let full = pair.load();
                assert!(v >= last && w >= v && w <= STEPS, "{last} {v:#x} {w:#x}");
                assert_eq!(
                    full as u64 ^ SEQ,
                    (full >> 64) as u64,
                    "torn pair {full:#x}"
                );
                assert!(full as u64 >= w);
                last = full as u64;
            }
        });
    }
}
