//! The shared circular log of write operations (paper §5.1 and §5.6).
//!
//! Indices are logical and only grow: entry `i` lives in `entries[i % size]`, and `i / size` is
//! its *lap*. An entry is *filled* for index `i` when its `alive` bit equals the parity expected
//! for `i`'s lap (`true` on even laps, `false` on odd ones), so a slot left over from the previous
//! lap reads as empty without ever being cleared (§5.6's alternating bit).
//!
//! Shared words (each on its own cache line):
//!
//! | word | meaning | written by |
//! |---|---|---|
//! | `tail` | first unreserved index (the paper's `logTail`) | appenders, one CAS per batch |
//! | `completed_tail` | every op below it has completed on some replica (`completedTail`) | combiners, after applying their batch |
//! | `head` | entries below it are consumed by every replica and may be reused (`logMin`) | any appender, lazily |
//! | `local_tails[r]` | next index replica `r` will apply (`localTail`) | whoever holds replica `r`'s combiner lock |
//!
//! Invariants: `head <= min(local_tails) <= completed_tail <= tail <= head + size`; every index
//! below `completed_tail` is filled; a replica's `local_tail` only moves while its combiner lock
//! and its writer side are held.

use crossbeam_utils::CachePadded;

use crate::config::HEAD_REFRESHES_PER_LAP;
use crate::sync::{AtomicBool, AtomicUsize, Ordering, UnsafeCell};

/// One slot of the circular buffer.
struct Entry<T> {
    op: UnsafeCell<Option<T>>,
    /// Lap parity of the last write; see the module docs.
    alive: AtomicBool,
}

/// The log was full: `reserve` could not proceed until some replica consumes entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogFull;

/// The shared log.
pub(crate) struct Log<T> {
    entries: Box<[Entry<T>]>,
    size: usize,
    tail: CachePadded<AtomicUsize>,
    completed_tail: CachePadded<AtomicUsize>,
    head: CachePadded<AtomicUsize>,
    local_tails: Box<[CachePadded<AtomicUsize>]>,
}

// SAFETY: the log hands out `&T` to several threads at once (replicas replaying the same entry
// concurrently, which requires `T: Sync`) and moves `T`s written on one thread to be dropped on
// another (requires `T: Send`). Every access to an entry's cell is ordered by its `alive` bit
// (written once per lap, after the value) and by `head` (reuse only after every replica has moved
// past the entry), as argued at each access.
unsafe impl<T: Send + Sync> Sync for Log<T> {}
// SAFETY: owning the log owns its `T`s; moving it moves them.
unsafe impl<T: Send> Send for Log<T> {}

impl<T> std::fmt::Debug for Log<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("size", &self.size)
            .field("head", &self.head.load(Ordering::Relaxed))
            .field(
                "completed_tail",
                &self.completed_tail.load(Ordering::Relaxed),
            )
            .field("tail", &self.tail.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Log<T> {
    /// A log of `size` entries (a power of two, checked by the builder) for `replicas` replicas.
    pub(crate) fn new(size: usize, replicas: usize) -> Self {
        debug_assert!(size.is_power_of_two() && size >= 2);
        Self {
            entries: (0..size)
                .map(|_| Entry {
                    op: UnsafeCell::new(None),
                    alive: AtomicBool::new(false),
                })
                .collect(),
            size,
            tail: CachePadded::new(AtomicUsize::new(0)),
            completed_tail: CachePadded::new(AtomicUsize::new(0)),
            head: CachePadded::new(AtomicUsize::new(0)),
            local_tails: (0..replicas)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }

    #[inline]
    fn entry(&self, idx: usize) -> &Entry<T> {
        &self.entries[idx & (self.size - 1)]
    }

    /// The `alive` value that marks index `idx` as filled: `true` on even laps. The size is a
    /// power of two, so the lap's parity is the bit of `idx` worth `size` (no division).
    #[inline]
    fn filled_parity(&self, idx: usize) -> bool {
        idx & self.size == 0
    }

    /// Reserves `n` consecutive entries with one CAS on the tail (Algorithm 1, lines 9-12) and
    /// returns the first index, or `LogFull` if they would overwrite entries some replica has
    /// not consumed yet.
    pub(crate) fn try_reserve(&self, n: usize) -> Result<usize, LogFull> {
        debug_assert!(n >= 1 && n <= self.size);
        // Relaxed: a stale tail only makes the CAS below fail and retry.
        let mut tail = self.tail.load(Ordering::Relaxed);
        loop {
            // Acquire: pairs with the Release in `advance_head`. Every replica's reads of the
            // entries below `head` happen before our writes into them in the next lap.
            let head = self.head.load(Ordering::Acquire);
            if tail + n > head + self.size {
                return Err(LogFull);
            }
            // Relaxed: the CAS only makes reservations unique; the entries' contents are
            // published by their `alive` bits, not by the tail.
            match self.tail.compare_exchange_weak(
                tail,
                tail + n,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    // §5.6 "low mark": the appender whose batch crosses a refresh point
                    // recomputes the head, so the log rarely fills when replicas keep up.
                    let quantum = (self.size / HEAD_REFRESHES_PER_LAP).max(1);
                    if tail / quantum != (tail + n) / quantum {
                        self.advance_head();
                    }
                    return Ok(tail);
                }
                Err(current) => tail = current,
            }
        }
    }

    /// Writes `op` at reserved index `idx` and publishes it (Algorithm 1, line 16). Returns the
    /// previous lap's operation of that slot, if any, *without dropping it*: its `Drop` is user
    /// code, and the caller runs it only after every entry it reserved is published, so that a
    /// panicking `Drop` can never leave a reserved entry unfilled.
    ///
    /// # Safety
    ///
    /// - `idx` was returned (as one of the `n` indices) by a `try_reserve` of the calling thread;
    /// - `write` was not called for `idx` before.
    ///
    /// Breaking either lets two threads write the slot at once, or overwrites an entry that
    /// replicas are reading.
    pub(crate) unsafe fn write(&self, idx: usize, op: T) -> Option<T> {
        let entry = self.entry(idx);
        // SAFETY:
        // - exclusive access: `idx` was reserved by this thread alone (tail CAS, the caller's
        //   contract), and the slot's previous occupant `idx - size` is below `head` (checked in
        //   `try_reserve`), so every replica finished reading it: their reads happen before this
        //   write through local_tail (Release) -> advance_head (Acquire, then Release on head)
        //   -> our Acquire load of head;
        // - no reader touches the slot for index `idx` before the Release store below.
        let previous = entry.op.with_mut(|cell| unsafe { (*cell).replace(op) });
        // Release: pairs with the Acquire in `is_filled`, publishing the value written above.
        entry
            .alive
            .store(self.filled_parity(idx), Ordering::Release);
        previous
    }

    /// Whether index `idx` (which must be below `tail`, and at or above `head`) has been written.
    #[inline]
    pub(crate) fn is_filled(&self, idx: usize) -> bool {
        // Acquire: pairs with the Release in `write`.
        self.entry(idx).alive.load(Ordering::Acquire) == self.filled_parity(idx)
    }

    /// Runs `f` on the operation at index `idx`.
    ///
    /// # Safety
    ///
    /// - The caller saw `is_filled(idx)` return true (which publishes the value to it);
    /// - the caller holds the combiner lock of a replica whose local tail is at most `idx`
    ///   until `f` returns (which keeps `head <= idx`, so the slot cannot be overwritten for the
    ///   next lap while `f` runs).
    #[inline]
    pub(crate) unsafe fn read<R>(&self, idx: usize, f: impl FnOnce(&T) -> R) -> R {
        let entry = self.entry(idx);
        // SAFETY: from the caller's contract,
        // - the value is initialized and visible: the caller observed `is_filled(idx)` (Acquire,
        //   pairing with the Release in `write`);
        // - no writer mutates it meanwhile: the next write to this slot is for `idx + size`,
        //   which needs `head > idx`, but `head <= local_tail <= idx` for the caller's replica
        //   until the caller moves that local tail, after this read;
        // - other readers only take shared references (`T: Sync`).
        let op = entry.op.with(|cell| unsafe { (*cell).as_ref() });
        f(op.expect("invariant: a filled log entry holds an operation"))
    }

    /// The first unreserved index.
    #[inline]
    pub(crate) fn tail(&self) -> usize {
        // Relaxed: a bound for debug assertions and the mutation tests only.
        self.tail.load(Ordering::Relaxed)
    }

    /// The index below which every operation has completed.
    ///
    /// The invariant readers rely on: **no replica exposes an entry at or above
    /// `completed_tail` to a read.** A replica's state reaches past `completed_tail` only while
    /// its combiner holds the writer side (readers excluded), and that combiner raises
    /// `completed_tail` past everything it applied before it lets readers back in. Every other
    /// replay (a reader catching up, a combiner helping a laggard) stops at a `completed_tail`
    /// it read. So a read that starts after another read returned waits (through
    /// `completed_tail`) for every entry the earlier read saw, on whichever replica.
    #[inline]
    pub(crate) fn completed_tail(&self) -> usize {
        // Acquire: pairs with the Release in `advance_completed_tail`, so the entries below the
        // value read are seen filled and a catching-up reader's replay does not stop short and
        // retry. Safety does not rest on it (the loom mutation table records both orderings
        // weakened to Relaxed as surviving): a read that starts after a write completed is
        // ordered after it by the caller's own happens-before, which by coherence makes this
        // load return the write's index or more, even Relaxed; the replica's contents reach the
        // reader through `local_tail` and the reader lock.
        self.completed_tail.load(Ordering::Acquire)
    }

    /// Raises `completed_tail` to at least `idx` (Algorithm 1, lines 30-31).
    #[inline]
    pub(crate) fn advance_completed_tail(&self, idx: usize) {
        // Release: pairs with the Acquire in `completed_tail` (see there for what it buys).
        self.completed_tail.fetch_max(idx, Ordering::Release);
    }

    /// Replica `r`'s local tail.
    #[inline]
    pub(crate) fn local_tail(&self, r: usize) -> usize {
        // Acquire: pairs with the Release in `set_local_tail`; a reader that sees the replica
        // up to date then takes the replica's reader lock, which orders it after the writer.
        self.local_tails[r].load(Ordering::Acquire)
    }

    /// Sets replica `r`'s local tail; only the holder of `r`'s combiner lock may call this.
    #[inline]
    pub(crate) fn set_local_tail(&self, r: usize, idx: usize) {
        // Release: pairs with the Acquire in `advance_head` (and `local_tail`): our reads of the
        // entries below `idx` happen before anyone reuses them.
        self.local_tails[r].store(idx, Ordering::Release);
    }

    /// Recomputes `head` as the smallest local tail. Returns the new head.
    pub(crate) fn advance_head(&self) -> usize {
        let min = (0..self.local_tails.len())
            .map(|r| self.local_tail(r))
            .min()
            .expect("invariant: at least one replica");
        // Release: pairs with the Acquire in `try_reserve`, carrying the replicas' reads (seen
        // through the Acquire loads of their local tails) to the next writer of those entries.
        let prev = self.head.fetch_max(min, Ordering::AcqRel);
        prev.max(min)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn alive_bit_flips_per_lap() {
        let log: Log<u32> = Log::new(4, 1);
        for i in 0..4 {
            assert!(!log.is_filled(i));
        }
        assert_eq!(log.try_reserve(3), Ok(0));
        // SAFETY: indices 0..3 were reserved above by this thread, each written once; reads
        // follow `is_filled` and nothing else reuses the log.
        unsafe {
            assert_eq!(log.write(0, 10), None);
            log.write(1, 11);
            assert!(log.is_filled(0) && log.is_filled(1) && !log.is_filled(2));
            log.write(2, 12);
            assert_eq!(log.read(1, |v| *v), 11);
        }
        // Full until replica 0 consumes.
        assert_eq!(log.try_reserve(2), Err(LogFull));
        log.set_local_tail(0, 3);
        assert_eq!(log.advance_head(), 3);
        assert_eq!(log.try_reserve(2), Ok(3));
        // SAFETY: as above, for the reserved indices 3 and 4.
        unsafe {
            assert_eq!(log.write(3, 13), None);
            // Index 4 is slot 0 on lap 1: the write hands back lap 0's operation.
            assert_eq!(log.write(4, 14), Some(10));
            // Filled with the opposite parity.
            assert!(log.is_filled(4));
            assert!(!log.is_filled(5), "slot 1 still holds lap 0's value");
            assert_eq!(log.read(4, |v| *v), 14);
        }
    }

    #[test]
    fn head_is_the_slowest_replica() {
        let log: Log<u32> = Log::new(8, 3);
        log.set_local_tail(0, 5);
        log.set_local_tail(1, 2);
        log.set_local_tail(2, 7);
        assert_eq!(log.advance_head(), 2);
        // Never moves back.
        log.set_local_tail(1, 1);
        assert_eq!(log.advance_head(), 2);
    }

    #[test]
    fn lap_parity_alternates_for_every_power_of_two_size() {
        for shift in 1..8 {
            let size = 1usize << shift;
            let log: Log<u32> = Log::new(size, 1);
            for idx in 0..size * 6 {
                assert_eq!(log.filled_parity(idx), (idx / size) % 2 == 0, "size {size}");
            }
        }
    }

    #[test]
    fn completed_tail_only_grows() {
        let log: Log<u32> = Log::new(8, 1);
        log.advance_completed_tail(5);
        log.advance_completed_tail(3);
        assert_eq!(log.completed_tail(), 5);
    }
}
