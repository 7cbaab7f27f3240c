//! Parking an idle background thread and waking it without losing a wake-up.
//!
//! The producer publishes work (pushes a notification), then [`Doorbell::ring`]s; the worker
//! finds no work, then [`Doorbell::wait`]s. The classic lost wake-up — the worker checks the
//! queue, the producer pushes and rings while the worker is not yet asleep, the worker sleeps
//! forever — is excluded by a Dekker-style pair of `SeqCst` accesses:
//!
//! | producer                         | worker                                  |
//! |----------------------------------|-----------------------------------------|
//! | push work                        | `rung.swap(false)` (found nothing)      |
//! | `rung.store(true)` (P1)          | lock; `sleeping.store(true)` (W1)       |
//! | `if sleeping.load()` (P2): lock, notify | `if !rung.load()` (W2): wait; unlock |
//!
//! The worker consumes a ring only with the acquiring `swap` at the top of `wait`, so the
//! work published before that ring is visible to the worker's next look at its queue.
//!
//! P1 and W1 are `SeqCst` stores, P2 and W2 `SeqCst` loads: in the single total order either
//! P1 precedes W2 (the worker sees the ring and does not sleep) or W1 precedes P2 (the producer
//! sees the sleeper; it takes the mutex, which the worker holds until it is inside `wait`, so
//! the notification reaches it). A worker always re-checks its queue after `wait` returns.
//! Spurious and timed-out wake-ups are harmless: the worker loops.

use std::time::Duration;

use crate::sync::{lock, wait_timeout, AtomicBool, Condvar, Mutex, Ordering};

/// One background thread's doorbell.
#[derive(Debug, Default)]
pub(crate) struct Doorbell {
    rung: AtomicBool,
    sleeping: AtomicBool,
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
        // SeqCst (P1): pairs with the SeqCst load W2 in `wait` (see the module table).
        self.rung.store(true, Ordering::SeqCst);
        // SeqCst (P2): pairs with the SeqCst store W1 in `wait`.
        if self.sleeping.load(Ordering::SeqCst) {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        let _guard = lock(&self.mutex);
        self.condvar.notify_one();
    }

    /// Sleeps until rung (or `timeout` passes, or spuriously). Returns at once if the bell
    /// was rung since the last wait.
    pub(crate) fn wait(&self, timeout: Option<Duration>) {
        // SeqCst: consumes a ring; pairs with P1 in `ring`.
        if self.rung.swap(false, Ordering::SeqCst) {
            return;
        }
        let guard = lock(&self.mutex);
        // SeqCst (W1): pairs with the SeqCst load P2 in `ring`.
        self.sleeping.store(true, Ordering::SeqCst);
        // SeqCst (W2): pairs with the SeqCst store P1 in `ring`.
        let guard = if self.rung.load(Ordering::SeqCst) {
            guard
        } else {
            match timeout {
                Some(timeout) => wait_timeout(&self.condvar, guard, timeout),
                None => match self.condvar.wait(guard) {
                    Ok(guard) => guard,
                    Err(poisoned) => poisoned.into_inner(),
                },
            }
        };
        // Relaxed: a producer that still sees `true` merely takes the mutex and notifies no
        // one. The ring that woke us is left set on purpose: the next `wait` consumes it with
        // its acquiring swap, which is what makes that producer's work visible (clearing it
        // here with a plain store would not synchronize with the producer).
        self.sleeping.store(false, Ordering::Relaxed);
        drop(guard);
    }
}
