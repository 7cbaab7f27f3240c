//! Sizes and tuning constants, in one place.

/// The largest `max_threads` an object accepts. PWFcomb packs a record number (`2 * (n + 1)`
/// records) into 16 bits of its versioned `S` word; 1024 leaves ample room.
pub const MAX_THREADS: usize = 1024;

/// Doubling spin rounds before a waiter starts yielding (`2^0 + ... + 2^(SPIN_ROUNDS-1)` spins).
pub(crate) const SPIN_ROUNDS: u32 = 7;
