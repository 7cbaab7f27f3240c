//! The one place that names `std::sync` and `std::thread`.
//!
//! nr-durable has no lock-free protocol of its own (the group-commit handshake is nr-core's,
//! model-checked there; its one lock of its own, [`SpinLock`], is a test-and-test-and-set lock,
//! tested at run time below), so it has no loom build: the shim keeps every lock, atomic and thread
//! of the crate in one file, as the house style asks (`clippy.toml` forbids the std types
//! elsewhere), so that one can be added without touching the rest.

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub(crate) use std::sync::atomic::Ordering;
pub(crate) use std::sync::{Arc, Condvar, MutexGuard};
pub(crate) use std::thread::JoinHandle;

/// A mutex (std's, behind a distinct type so that `clippy.toml` can forbid std's elsewhere).
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::sync::Mutex::new(value))
    }
}

/// Locks `m`, taking the data of a poisoned lock as it is: every critical section of this
/// crate leaves its data consistent at each step (a panic inside one is a bug reported by the
/// panic itself, and the object is poisoned by nr-core, not by this lock).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.0.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A spin lock whose release is a plain `Release` store (on x86 a `mov`, no locked
/// instruction), for the persistent-memory medium's state.
///
/// Why not [`Mutex`]: a commit ends with `psync` (x86: `sfence`) while it holds the state, and on
/// the CPUs measured the wait for the write-backs' drain is paid by the next *locked* instruction,
/// which with std's mutex is the unlock's `xchg` right after the fence. Released by a store, the
/// drain overlaps with the work that follows (nr-core's replay and apply of the write, which hold
/// no lock of this crate and use no locked instruction until the combiner publishes the batch).
/// Waiting spins, then yields, then sleeps for bounded times: a holder holds it for one commit's
/// copy and drain, or a checkpoint's copy of the live log; no holder waits for anything while
/// holding it. A panic while holding it releases it (like [`lock`], no poisoning).
pub(crate) struct SpinLock<T> {
    held: std::sync::atomic::AtomicBool,
    data: std::cell::UnsafeCell<T>,
}

// SAFETY: the data is reached only through a `SpinGuard`, and `held` admits one guard at a time
// (the Acquire CAS in `lock` pairs with the Release store in the guard's drop), so sharing the
// lock shares `T` between threads one at a time: `T: Send` suffices, as for std's `Mutex`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> std::fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinLock").finish_non_exhaustive()
    }
}

/// Tries of [`SpinLock::lock`] that spin before it yields.
const SPIN_TRIES: u32 = 64;
/// Tries that yield before it sleeps.
const YIELD_TRIES: u32 = 64;

/// The holder of a [`SpinLock`]; releases it when dropped. Like std's `MutexGuard`, it is
/// `Sync` only for `T: Sync` (a shared guard hands out `&T`) and never `Send` (the raw-pointer
/// marker): the auto traits would otherwise make it `Sync` for any `T: Send`.
pub(crate) struct SpinGuard<'a, T>(&'a SpinLock<T>, std::marker::PhantomData<*const ()>);

// SAFETY: a shared `SpinGuard` gives only `&T` (`Deref`), so sharing it shares `&T` between
// threads, which `T: Sync` allows.
unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

impl<T> SpinLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self {
            held: std::sync::atomic::AtomicBool::new(false),
            data: std::cell::UnsafeCell::new(value),
        }
    }

    /// Takes the lock: spins a few times, then yields between tries, then sleeps between
    /// them (spin, yield, park, as the house style asks of every wait).
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let mut tries = 0u32;
        loop {
            // Acquire: pairs with the Release store in `SpinGuard::drop`, so the previous
            // holder's changes to the data are seen.
            if !self.held.load(std::sync::atomic::Ordering::Relaxed)
                && self
                    .held
                    .compare_exchange_weak(
                        false,
                        true,
                        std::sync::atomic::Ordering::Acquire,
                        std::sync::atomic::Ordering::Relaxed,
                    )
                    .is_ok()
            {
                return SpinGuard(self, std::marker::PhantomData);
            }
            tries = tries.saturating_add(1);
            if tries < SPIN_TRIES {
                std::hint::spin_loop();
            } else if tries < SPIN_TRIES + YIELD_TRIES {
                std::thread::yield_now();
            } else {
                // A long hold (a checkpoint copying the live log) or a descheduled holder:
                // sleep, 10 µs doubling up to 640 µs. Bounded, so no wake-up is needed: a release
                // costs a sleeping waiter latency, never progress.
                let doublings = (tries - SPIN_TRIES - YIELD_TRIES).min(6);
                std::thread::park_timeout(std::time::Duration::from_micros(10 << doublings));
            }
        }
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no other reference to the data exists.
        unsafe { &*self.0.data.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.0.data.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire CAS in `SpinLock::lock`. A plain store, not a locked
        // instruction (see `SpinLock`).
        self.0
            .held
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

/// Wraps a std atomic in a distinct type (see [`Mutex`]); every method forwards.
macro_rules! atomic_wrapper {
    ($name:ident, $std:ident, $int:ty) => {
        #[derive(Debug, Default)]
        #[repr(transparent)]
        pub(crate) struct $name(std::sync::atomic::$std);

        #[allow(dead_code)] // not every wrapper uses every operation
        impl $name {
            #[inline(always)]
            pub(crate) const fn new(v: $int) -> Self {
                Self(std::sync::atomic::$std::new(v))
            }
            #[inline(always)]
            pub(crate) fn load(&self, o: Ordering) -> $int {
                self.0.load(o)
            }
            #[inline(always)]
            pub(crate) fn store(&self, v: $int, o: Ordering) {
                self.0.store(v, o)
            }
        }
    };
}

atomic_wrapper!(AtomicBool, AtomicBool, bool);
atomic_wrapper!(AtomicU64, AtomicU64, u64);

impl AtomicU64 {
    #[inline(always)]
    pub(crate) fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
        self.0.fetch_add(v, o)
    }
}

/// Starts a named background thread.
pub(crate) fn spawn_named<F>(name: &str, f: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new().name(name.to_owned()).spawn(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads, started together, add 1 under the lock 500,000 times each to a plain
    /// (non-atomic) counter, reading and writing it a spin hint apart: none of the additions is
    /// lost. Fails if the lock admits two holders at once (lost updates) and hangs if a guard
    /// does not release it.
    #[test]
    fn the_spin_lock_admits_one_holder_at_a_time() {
        const ADDS: u64 = 500_000;
        let counter = SpinLock::new(0u64);
        let start = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..ADDS {
                        let mut g = counter.lock();
                        let v = *g;
                        std::hint::spin_loop();
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(*counter.lock(), 2 * ADDS);
    }

    /// A waiter that reaches the sleeping phase (the holder keeps the lock for 200 ms, far past
    /// the spins and yields) still takes the lock once it is released, and sees the holder's
    /// change. Hangs if a sleep is not bounded (nobody wakes a sleeping waiter).
    #[test]
    fn a_waiter_past_its_spins_and_yields_still_takes_the_lock() {
        let lock = SpinLock::new(0u64);
        let held = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = lock.lock();
                held.wait();
                std::thread::sleep(std::time::Duration::from_millis(200));
                *g = 7;
            });
            // The waiter is a thread of its own: the scope's owner is unparked when a scoped
            // thread ends, which would hide an unbounded sleep.
            s.spawn(|| {
                held.wait();
                let mut g = lock.lock();
                assert_eq!(*g, 7, "the waiter took the lock before its holder let go");
                *g += 1;
            });
        });
        assert_eq!(*lock.lock(), 8);
    }
}
