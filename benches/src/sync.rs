//! The one place that names `std::sync::atomic`, `std::thread` or `std::cell::UnsafeCell`.
//!
//! The baselines (spinlock, flat combining) and the thread driver synchronize only through what
//! this module re-exports; `clippy.toml` forbids the standard versions everywhere else in the
//! crate. Unlike `nr-core`, this crate has no loom build: baselines are measured, not
//! model-checked (their linearizability is tested with `testkit` histories instead), so the shim
//! is std-only. Keeping the pattern means a loom build can be added here without touching the
//! algorithms.

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub(crate) use std::sync::atomic::Ordering;
pub(crate) use std::sync::Barrier;
pub(crate) use std::thread::ScopedJoinHandle;

/// Wraps `std`'s atomic in a distinct type, so that `clippy.toml` can forbid the std type
/// everywhere else; every method is a forwarding `#[inline(always)]` call.
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct AtomicBool(std::sync::atomic::AtomicBool);

impl AtomicBool {
    #[inline(always)]
    pub(crate) const fn new(v: bool) -> Self {
        Self(std::sync::atomic::AtomicBool::new(v))
    }
    #[inline(always)]
    pub(crate) fn load(&self, o: Ordering) -> bool {
        self.0.load(o)
    }
    #[inline(always)]
    pub(crate) fn store(&self, v: bool, o: Ordering) {
        self.0.store(v, o)
    }
    #[inline(always)]
    pub(crate) fn compare_exchange(
        &self,
        current: bool,
        new: bool,
        success: Ordering,
        failure: Ordering,
    ) -> Result<bool, bool> {
        self.0.compare_exchange(current, new, success, failure)
    }
    #[inline(always)]
    pub(crate) fn compare_exchange_weak(
        &self,
        current: bool,
        new: bool,
        success: Ordering,
        failure: Ordering,
    ) -> Result<bool, bool> {
        self.0.compare_exchange_weak(current, new, success, failure)
    }
}

/// `std`'s `AtomicUsize` under a distinct name (see [`AtomicBool`]).
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct AtomicUsize(std::sync::atomic::AtomicUsize);

impl AtomicUsize {
    #[inline(always)]
    pub(crate) const fn new(v: usize) -> Self {
        Self(std::sync::atomic::AtomicUsize::new(v))
    }
    #[inline(always)]
    pub(crate) fn load(&self, o: Ordering) -> usize {
        self.0.load(o)
    }
    #[inline(always)]
    pub(crate) fn fetch_add(&self, v: usize, o: Ordering) -> usize {
        self.0.fetch_add(v, o)
    }
    #[inline(always)]
    pub(crate) fn fetch_sub(&self, v: usize, o: Ordering) -> usize {
        self.0.fetch_sub(v, o)
    }
}

/// `std::thread::scope`: scoped threads that may borrow from the caller.
pub(crate) fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope std::thread::Scope<'scope, 'env>) -> T,
{
    std::thread::scope(f)
}

/// Yields the CPU to another thread.
#[inline]
pub(crate) fn yield_now() {
    std::thread::yield_now();
}

/// Spin-loop hint for the CPU (`PAUSE` on x86).
#[inline]
pub(crate) fn spin_loop() {
    std::hint::spin_loop();
}

/// Sleeps the calling thread for `d`.
pub(crate) fn sleep(d: std::time::Duration) {
    std::thread::sleep(d);
}

/// An `UnsafeCell` with loom's closure-based access API (the workspace's shim convention).
#[derive(Debug, Default)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with an exclusive raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Waiting policy shared by every baseline: spin with exponential backoff, then yield.
///
/// Yielding matters on this project's 2-core machines: with 4 or 8 threads, the thread being
/// waited for is often descheduled, and pure spinning would burn its time slice.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    /// Spin rounds double up to `2^SPIN_LIMIT` pause instructions, then every wait yields.
    const SPIN_LIMIT: u32 = 6;

    /// Waits a little longer than last time.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        if self.step <= Self::SPIN_LIMIT {
            for _ in 0..1u32 << self.step {
                spin_loop();
            }
            self.step += 1;
        } else {
            yield_now();
        }
    }
}

/// Wraps `std`'s atomic (as [`AtomicBool`]); for the partitioned map of the CNR peers and the
/// persistence counts of the durable benchmarks' `pcomb` subjects.
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct AtomicU64(std::sync::atomic::AtomicU64);

impl AtomicU64 {
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
    pub(crate) fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
        self.0.fetch_add(v, o)
    }
}

/// Wraps `std`'s `Mutex` (the durable benchmarks' `mutex-wal` baseline) in a distinct type, so
/// that `clippy.toml` can forbid the std type everywhere else; forwarding `#[inline]` calls.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    #[inline]
    pub(crate) const fn new(v: T) -> Self {
        Self(std::sync::Mutex::new(v))
    }
    #[inline]
    pub(crate) fn lock(&self) -> std::sync::LockResult<std::sync::MutexGuard<'_, T>> {
        self.0.lock()
    }
}
