//! Tuning constants, and the smaller values used under loom, in one place.

/// Spin rounds (each `2^round` spin hints) before a waiter starts yielding.
#[cfg(not(loom))]
pub(crate) const SPIN_ROUNDS: u32 = 6;
/// Under loom every wait step is a yield.
#[cfg(loom)]
pub(crate) const SPIN_ROUNDS: u32 = 0;

/// Yields before a waiter starts parking.
#[cfg(not(loom))]
pub(crate) const YIELD_ROUNDS: u32 = 16;
/// Under loom a waiter only ever yields: loom cannot model park timeouts, and the extra atomics
/// of the parking hand-shake multiply the explored states without adding a modelled behaviour.
#[cfg(loom)]
pub(crate) const YIELD_ROUNDS: u32 = u32::MAX / 2;

/// First bounded park, in microseconds; doubles on each further park.
pub(crate) const PARK_MIN_MICROS: u64 = 20;
/// Longest bounded park, in microseconds. Parks are bounded so that a missed wake-up costs
/// latency, never progress.
pub(crate) const PARK_MAX_MICROS: u64 = 1_000;

/// Default number of log entries.
#[cfg(not(loom))]
pub(crate) const DEFAULT_LOG_ENTRIES: usize = 1 << 16;
/// Loom models are tiny: a 4-entry log wraps after two batches of two.
#[cfg(loom)]
pub(crate) const DEFAULT_LOG_ENTRIES: usize = 4;

/// Default number of threads that may register with one replica.
#[cfg(not(loom))]
pub(crate) const DEFAULT_THREADS_PER_REPLICA: usize = 64;
/// Loom models at most 3 threads.
#[cfg(loom)]
pub(crate) const DEFAULT_THREADS_PER_REPLICA: usize = 3;

/// How many times per lap of the log an appender refreshes the log head (paper §5.6 "low mark").
/// A power of two, so that `Log::try_reserve` finds the refresh points with a shift.
pub(crate) const HEAD_REFRESHES_PER_LAP: usize = 4;
const _: () = assert!(HEAD_REFRESHES_PER_LAP.is_power_of_two());

/// How many times a writer on a single-replica object (NR, or one log of CNR) retries the
/// combiner lock before it posts its operation for the current combiner (`wait::retry_lock`):
/// the first `LOCK_SPIN_ROUNDS` tries after `2 << round` spin hints, the others after a
/// `yield_now`, as `parking_lot`'s lock spins.
#[cfg(not(loom))]
pub(crate) const LOCK_RETRIES: u32 = 10;
/// Under loom one retry, so the models still cover the retry without multiplying their
/// schedules.
#[cfg(loom)]
pub(crate) const LOCK_RETRIES: u32 = 1;
/// The retries of `LOCK_RETRIES` that spin; the rest yield.
pub(crate) const LOCK_SPIN_ROUNDS: u32 = 3;
