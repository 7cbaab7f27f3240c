//! The one place that names `std::sync` and `std::thread`.
//!
//! nr-raft has no lock-free protocol of its own (consensus is raft-rs's, replication within a
//! host nr-core's): its threads talk through channels and a few locks, all named here, so
//! that the rest of the crate never names std's primitives (house style, `STYLE.md` §2).

pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
pub(crate) use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
pub(crate) use std::sync::{Arc, MutexGuard};
pub(crate) use std::thread::JoinHandle;

/// A mutex whose poisoning is ignored: every critical section of this crate leaves its data
/// consistent at each step (a panic inside one is a bug reported by the panic itself).
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::sync::Mutex::new(value))
    }

    /// Locks, taking the data of a poisoned lock as it is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Starts a named thread.
pub(crate) fn spawn_named<F>(name: String, f: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new().name(name).spawn(f)
}

/// Sleeps the calling thread.
pub(crate) fn sleep(d: std::time::Duration) {
    std::thread::sleep(d)
}
