//! The one place that names `std::sync` and `std::thread`.
//!
//! nr-durable has no lock-free protocol of its own (the group-commit handshake is nr-core's,
//! model-checked there), so it has no loom build: the shim only keeps every lock, atomic and
//! thread of the crate in one file, as the house style asks, so that one can be added.

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
pub(crate) use std::thread::JoinHandle;

/// Starts a named background thread.
pub(crate) fn spawn_named<F>(name: &str, f: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new().name(name.to_owned()).spawn(f)
}

/// Locks `m`, taking the data of a poisoned lock as it is: every critical section of this
/// crate leaves its data consistent at each step (a panic inside one is a bug reported by the
/// panic itself, and the object is poisoned by nr-core, not by this lock).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
