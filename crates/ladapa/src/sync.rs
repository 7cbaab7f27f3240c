//! The one place that names `std::sync`, `std::thread` or `loom`.
//!
//! Every atomic, lock and thread the store synchronizes through comes from here: the standard
//! library normally, `loom`'s model-checked replacements under `--cfg loom`. `clippy.toml`
//! forbids the standard versions everywhere else in the crate, so nothing escapes the model
//! checker. Under loom a spin is a yield, so the checker can schedule the thread being waited
//! for.

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(not(loom))]
mod imp {
    /// The store's reclamation domain and its guards (`epoch-domain`: a `crossbeam-epoch`
    /// collector of the store's own).
    pub(crate) use epoch_domain::{Domain, Guard};
    pub(crate) use std::sync::atomic::{fence, Ordering};
    pub(crate) use std::sync::{
        Arc, LockResult, MutexGuard, RwLockReadGuard, RwLockWriteGuard, TryLockResult,
    };

    /// Wraps a std atomic in a distinct type so that `clippy.toml` can forbid the std type
    /// everywhere else; every method is a forwarding `#[inline(always)]` call.
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
                #[inline(always)]
                pub(crate) fn swap(&self, v: $int, o: Ordering) -> $int {
                    self.0.swap(v, o)
                }
                #[inline(always)]
                pub(crate) fn compare_exchange(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.0.compare_exchange(current, new, success, failure)
                }
            }
        };
    }

    /// Arithmetic and bit operations of the integer wrappers.
    macro_rules! atomic_int_ops {
        ($name:ident, $int:ty) => {
            #[allow(dead_code)] // not every wrapper uses every operation
            impl $name {
                #[inline(always)]
                pub(crate) fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                    self.0.fetch_add(v, o)
                }
                #[inline(always)]
                pub(crate) fn fetch_sub(&self, v: $int, o: Ordering) -> $int {
                    self.0.fetch_sub(v, o)
                }
                #[inline(always)]
                pub(crate) fn fetch_or(&self, v: $int, o: Ordering) -> $int {
                    self.0.fetch_or(v, o)
                }
                #[inline(always)]
                pub(crate) fn fetch_and(&self, v: $int, o: Ordering) -> $int {
                    self.0.fetch_and(v, o)
                }
            }
        };
    }

    atomic_wrapper!(AtomicBool, AtomicBool, bool);
    atomic_wrapper!(AtomicU64, AtomicU64, u64);
    atomic_wrapper!(AtomicUsize, AtomicUsize, usize);
    atomic_int_ops!(AtomicU64, u64);
    atomic_int_ops!(AtomicUsize, usize);

    /// `std::sync::Mutex` under a distinct name (see `atomic_wrapper`).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(std::sync::Mutex::new(value))
        }
        #[inline(always)]
        pub(crate) fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
            self.0.lock()
        }
    }

    /// `std::sync::RwLock` under a distinct name (see `atomic_wrapper`).
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(std::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(std::sync::RwLock::new(value))
        }
        #[inline(always)]
        pub(crate) fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
            self.0.read()
        }
        #[inline(always)]
        pub(crate) fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
            self.0.write()
        }
        #[inline(always)]
        pub(crate) fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
            self.0.try_write()
        }
    }

    /// `std::sync::Condvar` under a distinct name (see `atomic_wrapper`).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(std::sync::Condvar);

    impl Condvar {
        pub(crate) fn wait<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
        ) -> LockResult<MutexGuard<'a, T>> {
            self.0.wait(guard)
        }
        pub(crate) fn notify_one(&self) {
            self.0.notify_one()
        }
    }

    /// Runs `free` once every guard of the store's domain pinned now has been dropped.
    pub(crate) fn defer_reclaim<F: FnOnce() + Send + 'static>(guard: &Guard, free: F) {
        guard.defer(free);
    }

    /// Spawns a named OS thread.
    pub(crate) fn spawn_named<F>(name: String, f: F) -> std::io::Result<JoinHandle<()>>
    where
        F: FnOnce() + Send + 'static,
    {
        std::thread::Builder::new().name(name).spawn(f)
    }

    /// A joinable thread.
    pub(crate) type JoinHandle<T> = std::thread::JoinHandle<T>;

    /// Yields the CPU.
    pub(crate) fn yield_now() {
        std::thread::yield_now();
    }

    /// Sleeps for about `duration` (a yield under loom, which has no clock).
    pub(crate) fn doze(duration: std::time::Duration) {
        std::thread::sleep(duration);
    }

    /// Waits on `condvar` for at most `timeout` (a plain wait under loom, which has no clock).
    pub(crate) fn wait_timeout<'a, T>(
        condvar: &Condvar,
        guard: MutexGuard<'a, T>,
        timeout: std::time::Duration,
    ) -> MutexGuard<'a, T> {
        match condvar.0.wait_timeout(guard, timeout) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        }
    }
}

#[cfg(loom)]
mod imp {
    use std::marker::PhantomData;

    /// Under loom: a domain whose pins are no model steps. The models never reuse a retired
    /// block (`defer_reclaim` drops the free), so pins would protect nothing and only multiply
    /// the interleavings loom explores (1.8 times the iterations of `tests/loom_store.rs` with
    /// `epoch-domain`'s loom-visible stand-in). Same API as `epoch_domain::Domain`.
    #[derive(Debug, Default)]
    pub(crate) struct Domain;

    impl Domain {
        pub(crate) fn new() -> Self {
            Self
        }
        pub(crate) fn pin(&self) -> Guard {
            Guard(PhantomData)
        }
    }

    /// Under loom: a guard that protects nothing (nothing is reclaimed); not `Send`, as the
    /// real one.
    #[derive(Debug)]
    pub(crate) struct Guard(PhantomData<*const ()>);

    impl Guard {
        pub(crate) fn flush(&self) {}
    }

    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::sync::{
        Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    };

    /// Under loom a retired block is never reused (see [`Domain`]): the models check the
    /// metadata protocol; reclamation's safety is the epoch argument in `pool.rs`.
    pub(crate) fn defer_reclaim<F: FnOnce() + Send + 'static>(_guard: &Guard, free: F) {
        drop(free);
    }

    /// Spawns a model thread (loom threads have no names).
    pub(crate) fn spawn_named<F>(_name: String, f: F) -> std::io::Result<JoinHandle<()>>
    where
        F: FnOnce() + Send + 'static,
    {
        Ok(loom::thread::spawn(f))
    }

    /// A joinable model thread.
    pub(crate) type JoinHandle<T> = loom::thread::JoinHandle<T>;

    pub(crate) use loom::thread::yield_now;

    /// Loom has no clock: a doze is a yield.
    pub(crate) fn doze(_duration: std::time::Duration) {
        loom::thread::yield_now();
    }

    /// Loom has no clock: a timed wait is a plain wait (the model explores every wake-up).
    pub(crate) fn wait_timeout<'a, T>(
        condvar: &Condvar,
        guard: MutexGuard<'a, T>,
        _timeout: std::time::Duration,
    ) -> MutexGuard<'a, T> {
        match condvar.wait(guard) {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

pub(crate) use imp::*;

/// Locks `mutex`, ignoring poison: every critical section in this crate leaves its data
/// consistent before anything in it can panic (no user code runs under these locks).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
