//! Waiting: spin, then yield.
//!
//! This machine class has 2 cores and tests run 4 threads on them, so a waiter that only spins
//! steals the CPU from the combiner it waits for. [`Waiter`] spins with doubling rounds (the
//! common case on an idle core: a combining pass is a few hundred cycles), then yields on every
//! further step. There is no parking: a `PBComb` waiter waits for a combiner that is running
//! a bounded pass, never for an idle thread.

use crate::config::SPIN_ROUNDS;
use crate::sync::{spin_loop, yield_now};

/// Backoff state of one wait loop.
#[derive(Debug, Default)]
pub(crate) struct Waiter {
    round: u32,
}

impl Waiter {
    /// Waits a little, longer each call until the yield phase.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        if self.round < SPIN_ROUNDS {
            for _ in 0..(1u32 << self.round) {
                spin_loop();
            }
            self.round += 1;
        } else {
            yield_now();
        }
    }
}
