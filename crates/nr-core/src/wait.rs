//! Waiting: spin, then yield, then park.
//!
//! This machine class has 2 cores and tests run 8 threads on them, so a waiter that only spins
//! steals the CPU from the thread it waits for. [`Waiter`] spins briefly (the common case on an
//! idle core: the wait is a few hundred cycles), then yields, then parks with a bounded timeout.
//! Parks are bounded so that a missed wake-up costs latency, never progress; the combining slots
//! additionally get exact wake-ups (see `replica.rs`).

use crate::config::{
    LOCK_RETRIES, LOCK_SPIN_ROUNDS, PARK_MAX_MICROS, PARK_MIN_MICROS, SPIN_ROUNDS, YIELD_ROUNDS,
};
use crate::sync::{park_timeout, spin_loop, yield_now};

/// Backoff state of one wait loop.
#[derive(Debug, Default)]
pub(crate) struct Waiter {
    round: u32,
}

/// What the next [`Waiter::snooze`] would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Spin,
    Yield,
    Park,
}

impl Waiter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The phase the next wait step is in. Callers that can be woken precisely register
    /// themselves before a `Park` step.
    #[inline]
    pub(crate) fn phase(&self) -> Phase {
        // `checked_sub` rather than `round < SPIN_ROUNDS`: under loom `SPIN_ROUNDS` is 0 and that
        // comparison would be always false (clippy's `absurd_extreme_comparisons`).
        match self.round.checked_sub(SPIN_ROUNDS) {
            None => Phase::Spin,
            Some(yields) if yields < YIELD_ROUNDS => Phase::Yield,
            Some(_) => Phase::Park,
        }
    }

    /// Waits a little, longer each call.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        match self.phase() {
            Phase::Spin => {
                for _ in 0..(1u32 << self.round) {
                    spin_loop();
                }
            }
            Phase::Yield => yield_now(),
            Phase::Park => park_timeout(self.park_micros()),
        }
        self.round = self.round.saturating_add(1);
    }

    /// Like `snooze`, but never parks: spin, then yield from then on. For a wait bounded by its
    /// caller's own clock (the §5.2 `MIN_BATCH` wait), where a blind park would overshoot a
    /// microsecond bound by the timer's slack.
    #[inline]
    pub(crate) fn snooze_without_parking(&mut self) {
        if self.phase() == Phase::Park {
            yield_now();
        } else {
            self.snooze();
        }
    }

    /// Like `snooze`, but a park step calls `park(micros)` instead of sleeping blindly, so that
    /// callers with a wake-up protocol can register first.
    #[inline]
    pub(crate) fn snooze_or(&mut self, park: impl FnOnce(u64)) {
        if self.phase() == Phase::Park {
            park(self.park_micros());
            self.round = self.round.saturating_add(1);
        } else {
            self.snooze();
        }
    }

    fn park_micros(&self) -> u64 {
        let parks = self
            .round
            .saturating_sub(SPIN_ROUNDS + YIELD_ROUNDS)
            .min(16);
        (PARK_MIN_MICROS << parks).min(PARK_MAX_MICROS)
    }
}

/// A writer that found a combiner lock taken, on a replica where it would otherwise post its
/// operation across cores: retries `try_lock` up to `LOCK_RETRIES` times, waiting as
/// `parking_lot`'s lock does (spins doubling from 2 hints, then yields), and returns whether a
/// try succeeded. The holder's critical section is one operation or one short batch, and the
/// thread that takes the lock keeps the structure's lines in its own cache; a waiter that yields
/// leaves the holder alone with the lock line for whole runs of operations (crate README, "Two
/// writers on one replica"). Bounded, so a preempted holder costs at most `LOCK_RETRIES` tries
/// before the caller posts (and parks).
#[inline]
pub(crate) fn retry_lock(mut try_lock: impl FnMut() -> bool) -> bool {
    for round in 0..LOCK_RETRIES {
        if round < LOCK_SPIN_ROUNDS {
            for _ in 0..2u32 << round {
                spin_loop();
            }
        } else {
            yield_now();
        }
        if try_lock() {
            return true;
        }
    }
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn phases_progress_spin_yield_park() {
        let mut w = Waiter::new();
        let mut seen = Vec::new();
        for _ in 0..(SPIN_ROUNDS + YIELD_ROUNDS + 2) {
            let p = w.phase();
            if seen.last() != Some(&p) {
                seen.push(p);
            }
            w.snooze();
        }
        assert_eq!(seen, [Phase::Spin, Phase::Yield, Phase::Park]);
    }

    #[test]
    fn park_time_is_bounded() {
        let mut w = Waiter::new();
        w.round = u32::MAX - 1;
        assert_eq!(w.park_micros(), PARK_MAX_MICROS);
        w.round = SPIN_ROUNDS + YIELD_ROUNDS;
        assert_eq!(w.park_micros(), PARK_MIN_MICROS);
    }
}
