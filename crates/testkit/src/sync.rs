//! The synchronisation primitives used by this crate, in one place.
//!
//! Unlike the production crates, `testkit` re-exports `std` even under
//! `--cfg loom`, on purpose:
//!
//! * the recorder's clock must not add schedule points of its own, or every
//!   loom model that records a history would explore the recorder's
//!   interleavings too;
//! * loom runs its modelled threads one at a time, so a `std` atomic clock
//!   read inside a loom model still yields the real order of the explored
//!   execution, which is exactly what the checker needs;
//! * the per-thread logs are `std` mutexes held only for a `Vec::push`, never
//!   across a loom operation, so they cannot deadlock a model.
//!
//! Changing that decision means changing only this file.

pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
pub(crate) use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, ignoring poisoning.
///
/// The recorder's mutexes guard plain `Vec`s that are only pushed to or
/// cloned, so a panic while one is held (a test thread failing an assertion
/// elsewhere cannot hold one) leaves no broken invariant behind.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
