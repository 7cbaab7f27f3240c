//! The one place that names `std::sync`, `std::thread` or `loom`.
//!
//! Everything the crate synchronizes through comes from here: the standard library normally,
//! `loom`'s model-checked replacements under `--cfg loom`. `clippy.toml` forbids the standard
//! versions everywhere else in the crate.
//!
//! Two kinds of shared state exist in this crate:
//!
//! - the simulator's bookkeeping (media image, pending write-backs, event counter), behind one
//!   [`Mutex`]; under loom this is loom's mutex, so a model that drives a simulated region sees
//!   every event as a synchronization point;
//! - the *contents* of a region (mapped file, anonymous mapping or simulated view), accessed by
//!   the crate only through [`load_word`], [`store_word`] and [`cas_word`]. Those are std atomics
//!   created over raw memory in both builds: loom cannot model memory it did not allocate, and
//!   region memory is shared with code outside the model (the kernel, other processes).

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::{Arc, MutexGuard};
    pub(crate) use std::thread::ThreadId;

    /// `std::sync::Mutex` behind a distinct type (so `clippy.toml` can forbid the std type
    /// elsewhere), with poisoning ignored: the simulator completes every state update before
    /// anything can panic, so a panic elsewhere while the lock is held (a failing assertion in
    /// a test thread) leaves consistent state.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(std::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }

    /// The id of the calling thread (the simulator keys pending write-backs by it).
    pub(crate) fn current_thread_id() -> ThreadId {
        std::thread::current().id()
    }

    /// A full memory fence (the fence-only persistence mode on non-x86 targets).
    #[allow(dead_code)] // used only on non-x86 targets
    pub(crate) fn full_fence() {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::{Arc, MutexGuard};
    pub(crate) use loom::thread::ThreadId;

    /// loom's mutex with the same API as the std build's wrapper.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }

    /// The id of the calling (loom) thread.
    pub(crate) fn current_thread_id() -> ThreadId {
        loom::thread::current().id()
    }

    /// A full memory fence, modelled by loom.
    #[allow(dead_code)] // used only on non-x86 targets
    pub(crate) fn full_fence() {
        loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

pub(crate) use imp::*;

/// A process-wide set of keys behind std's mutex, in both builds: it records OS-level state
/// (the files this process's regions own), which loom neither models nor could hold in a
/// `static` (loom's objects belong to one model execution). Poisoning is ignored: every
/// update is one `insert` or `remove`, complete before anything can panic.
#[derive(Debug)]
pub(crate) struct ProcessSet<K>(std::sync::Mutex<std::collections::BTreeSet<K>>);

impl<K: Ord> ProcessSet<K> {
    pub(crate) const fn new() -> Self {
        Self(std::sync::Mutex::new(std::collections::BTreeSet::new()))
    }

    /// Adds `key`; `false` when it was already there.
    pub(crate) fn insert(&self, key: K) -> bool {
        self.lock().insert(key)
    }

    /// Removes `key`; `false` when it was not there.
    pub(crate) fn remove(&self, key: &K) -> bool {
        self.lock().remove(key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<K>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(not(loom))]
use std::sync::atomic::AtomicU64 as ClockWord;

#[cfg(loom)]
use loom::sync::atomic::AtomicU64 as ClockWord;

/// A shared counter whose every access is `SeqCst` (the simulator's event clock).
#[derive(Debug)]
pub(crate) struct Clock(ClockWord);

impl Clock {
    pub(crate) fn new() -> Self {
        Self(ClockWord::new(0))
    }

    /// Adds one, returning the value before.
    pub(crate) fn tick(&self) -> u64 {
        // SeqCst: see `Clock`'s users: a read that sees a value `<= t` precedes the tick that
        // returned `t` in the single total order of SeqCst operations.
        self.0.fetch_add(1, Ordering::SeqCst)
    }

    pub(crate) fn read(&self) -> u64 {
        // SeqCst: pairs with the SeqCst `fetch_add` in `tick`.
        self.0.load(Ordering::SeqCst)
    }
}

/// Atomically loads the 8-byte word at `ptr`.
///
/// # Safety
///
/// - `ptr` is valid for reads of 8 bytes for the duration of the call and 8-byte aligned;
/// - every concurrent access to that word is atomic (or the caller accepts the documented
///   aliasing assumption of the simulator: an aligned 8-byte load on x86 never tears).
#[inline(always)]
pub(crate) unsafe fn load_word(ptr: *const u64, order: Ordering) -> u64 {
    // SAFETY:
    // - validity and alignment of `ptr` for the call are the caller's precondition;
    // - `from_ptr` only needs the pointer to stay valid while the reference lives (this call).
    let word = unsafe { std::sync::atomic::AtomicU64::from_ptr(ptr.cast_mut()) };
    word.load(order)
}

/// Atomically stores `value` into the 8-byte word at `ptr`.
///
/// # Safety
///
/// - `ptr` is valid for writes of 8 bytes for the duration of the call and 8-byte aligned;
/// - every concurrent access to that word is atomic.
#[inline(always)]
pub(crate) unsafe fn store_word(ptr: *mut u64, value: u64, order: Ordering) {
    // SAFETY:
    // - validity and alignment of `ptr` for the call are the caller's precondition.
    let word = unsafe { std::sync::atomic::AtomicU64::from_ptr(ptr) };
    word.store(value, order);
}

/// Atomically compares the word at `ptr` with `current` and, if equal, replaces it by `new`.
///
/// # Safety
///
/// - `ptr` is valid for reads and writes of 8 bytes for the duration of the call and 8-byte
///   aligned;
/// - every concurrent access to that word is atomic.
#[inline(always)]
pub(crate) unsafe fn cas_word(
    ptr: *mut u64,
    current: u64,
    new: u64,
    success: Ordering,
    failure: Ordering,
) -> Result<u64, u64> {
    // SAFETY:
    // - validity and alignment of `ptr` for the call are the caller's precondition.
    let word = unsafe { std::sync::atomic::AtomicU64::from_ptr(ptr) };
    word.compare_exchange(current, new, success, failure)
}
