//! Parking an idle background thread and waking it without losing a wake-up.
//!
//! The producer publishes work (pushes a notification), then [`Doorbell::ring`]s; the worker
//! finds no work, then [`Doorbell::wait`]s. The classic lost wake-up — the worker checks its
//! queue, the producer pushes and rings before the worker is asleep, the worker sleeps
//! forever — is excluded because both sides change one state word with read-modify-writes,
//! so they are totally ordered on it:
//!
//! | state | meaning |
//! |---|---|
//! | `IDLE` (0) | nothing pending, worker awake |
//! | `RUNG` (1) | work was published since the worker last consumed a ring |
//! | `SLEEPING` (2) | the worker is (about to be) blocked on the condition variable |
//!
//! - `ring`: `swap(RUNG)`; if it replaced `SLEEPING`, lock the mutex and notify.
//! - `wait`: `swap(IDLE)`; if it replaced `RUNG`, return (work is pending). Otherwise lock the
//!   mutex, `compare_exchange(IDLE → SLEEPING)`: failure means a ring came in between, so
//!   return; success means any later ring sees `SLEEPING` and notifies, and it can only do so
//!   by taking the mutex, which the worker holds until it is inside `Condvar::wait`. On waking,
//!   `compare_exchange(SLEEPING → IDLE)` (a timeout or a spurious wake-up), leaving a `RUNG`
//!   for the next `wait` to consume.
//!
//! The producer's `swap` is a release and the worker's consuming `swap` an acquire on the same
//! word, so the work published before a ring is visible once the worker consumed that ring (or
//! a later one: the read-modify-writes form one release sequence). Spurious and timed-out
//! returns are harmless: the worker re-checks its queue and loops. (A two-flag Dekker version
//! with SeqCst stores and loads is correct in C++ but cannot be checked by loom, which models
//! SeqCst accesses as acquire/release; this one is checked in `tests/loom_doorbell.rs`.)

use std::time::Duration;

use crate::sync::{lock, wait_timeout, AtomicUsize, Condvar, Mutex, Ordering};

const IDLE: usize = 0;
const RUNG: usize = 1;
const SLEEPING: usize = 2;

/// One background thread's doorbell.
#[derive(Debug, Default)]
pub(crate) struct Doorbell {
    /// `IDLE`, `RUNG` or `SLEEPING` (module table).
    state: AtomicUsize,
    mutex: Mutex<()>,
    condvar: Condvar,
}

impl Doorbell {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Wakes the worker if it sleeps, or keeps it from falling asleep. Call after publishing
    /// the work.
    #[inline]
    pub(crate) fn ring(&self) {
        // AcqRel: the release publishes the work pushed before this ring to the worker's
        // acquiring swap in `wait`; the acquire pairs with the worker's release CAS to
        // SLEEPING, so we see it asleep.
        if self.state.swap(RUNG, Ordering::AcqRel) == SLEEPING {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        // The worker holds the mutex from its CAS to SLEEPING until it waits: taking it here
        // orders the notification after the worker is waiting.
        let _guard = lock(&self.mutex);
        self.condvar.notify_one();
    }

    /// Sleeps until rung (or `timeout` passes, or spuriously). Returns at once if the bell
    /// was rung since the last wait.
    pub(crate) fn wait(&self, timeout: Option<Duration>) {
        // AcqRel: consumes a ring; the acquire pairs with the release swap in `ring`.
        if self.state.swap(IDLE, Ordering::AcqRel) == RUNG {
            return;
        }
        let guard = lock(&self.mutex);
        // AcqRel on success: pairs with the acquire in `ring`'s swap. Acquire on failure: the
        // value is a RUNG whose work must be visible.
        if self
            .state
            .compare_exchange(IDLE, SLEEPING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let guard = match timeout {
            Some(timeout) => wait_timeout(&self.condvar, guard, timeout),
            None => match self.condvar.wait(guard) {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            },
        };
        // Timed out or woken spuriously: no longer asleep. If a ring replaced SLEEPING, this
        // fails and leaves RUNG for the next `wait` to consume.
        // Acquire on failure: the RUNG's work is visible to the caller's re-check.
        let _ = self
            .state
            .compare_exchange(SLEEPING, IDLE, Ordering::AcqRel, Ordering::Acquire);
        drop(guard);
    }
}

/// Counts the notes published to a queue and not yet processed, so that a producer rings the
/// doorbell only when the count leaves 0 (one wake-up per burst instead of one per note: on a
/// 2-core machine a wake-up per write costs more than the write).
///
/// Protocol: a producer counts its note *before* pushing it ([`Pending::publish`]) and rings
/// if the count was 0; if the push fails it uncounts. The consumer uncounts a note after
/// processing it, and parks only when its queue is empty **and** the count is 0
/// ([`Pending::is_idle`]); an empty queue with a non-zero count means a producer is between
/// counting and pushing, so the consumer yields and looks again. No wake-up is lost: a
/// producer that did not ring saw a count above 0, and the count returns to 0 only after its
/// own note has been processed. Counting before pushing also keeps the count from going
/// below 0 (a note is popped only after it was counted).
#[derive(Debug, Default)]
pub(crate) struct Pending(AtomicUsize);

impl Pending {
    /// Counts a note about to be pushed; `true` when the consumer must be rung after the push
    /// (the count was 0).
    #[inline]
    pub(crate) fn publish(&self) -> bool {
        // AcqRel: pairs with the consumer's fetch_sub in `Consumed::drop` and its load in
        // `is_idle` (one modification order of read-modify-writes on the count).
        self.0.fetch_add(1, Ordering::AcqRel) == 0
    }

    /// Uncounts a note whose push failed.
    #[inline]
    pub(crate) fn unpublish(&self) {
        // AcqRel: as in `publish`.
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether no note is counted: the consumer may park.
    #[inline]
    pub(crate) fn is_idle(&self) -> bool {
        // Acquire: pairs with the release in `publish`.
        self.0.load(Ordering::Acquire) == 0
    }

    /// Uncounts one note when the returned guard drops (after the note is processed).
    #[inline]
    pub(crate) fn consumed_on_drop(&self) -> Consumed<'_> {
        Consumed(self)
    }
}

/// Uncounts a processed note on drop (see [`Pending`]).
#[derive(Debug)]
pub(crate) struct Consumed<'a>(&'a Pending);

impl Drop for Consumed<'_> {
    fn drop(&mut self) {
        // AcqRel: pairs with the AcqRel fetch_add in `Pending::published`.
        self.0 .0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(all(test, loom))]
#[path = "tests/loom_doorbell.rs"]
mod loom_doorbell;
