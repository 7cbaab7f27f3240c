//! The one place that names `std::sync` and `std::thread`.
//!
//! nr-durable has no lock-free protocol of its own (the group-commit handshake is nr-core's,
//! model-checked there), so it has no loom build: the shim keeps every lock, atomic and thread
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
