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
//! Invariants: `head <= min(local_tails) <= completed_tail <= tail <= max(head, start) + size`
//! (for the newest segment's `start` and `size`, below); every index below `completed_tail` is
//! filled; a replica's `local_tail` only moves while its combiner lock and its writer side are
//! held.
//!
//! # Growth (§6 "Log length", `Builder::log_growth`)
//!
//! The entries live in *segments*: a segment holds the indices from its `start` up to the next
//! segment's `start`, in an array of its own (a power of two), with laps counted from its
//! `start`. With growth off there is one segment, starting at 0. With growth on, an appender that
//! finds the log full even after refreshing `head` starts a segment twice as large at the current
//! tail (up to the configured maximum):
//!
//! 1. it *freezes* the tail: a CAS sets the tail's top bit (`FROZEN`), so no other appender can
//!    reserve meanwhile, and the boundary `B` (the tail) is fixed: no batch straddles it;
//! 2. it publishes the new segment (`start = B`, `prev` = the old one) with a Release store of
//!    `current`;
//! 3. it unfreezes the tail with a Release store of `B + n`, reserving its own `n` entries, so the
//!    frozen value never reappears (no ABA for an appender that read `B` before the freeze).
//!
//! The indices below `B` stay in the old segment, which is never written again and is kept until
//! the log drops (the segments' sizes double, so all of them together take less memory than
//! twice the newest). Every replica reads them there at its own pace: unlike the paper's "special
//! log entry", no replica needs to agree on a size, because an index names its segment.
//!
//! Finding an index's segment: a thread that holds an index at or past `B` learned it from a
//! tail value at or past `B` (its own reservation: an Acquire load or CAS of the tail, which
//! synchronizes with step 3) or from `completed_tail` / a local tail (Acquire loads of values
//! Released by a combiner that had reserved past `B`). Either way the publication in step 2
//! happens before its lookup, so its Acquire load of `current` returns the new segment or a later
//! one, and it walks `prev` back to the segment holding the index.

use crossbeam_utils::CachePadded;

use crate::config::HEAD_REFRESHES_PER_LAP;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, UnsafeCell};

/// The tail's top bit: set while an appender grows the log (see the module docs).
const FROZEN: usize = 1 << (usize::BITS - 1);

/// The ordering of every load and CAS of the tail whose value may lie past a growth boundary:
/// Acquire, pairing with the unfreezing Release store in `try_grow`, so that whoever reserves
/// past the boundary sees the new segment (module docs). One constant, so that the mutation
/// table can weaken all of them at once: each single one is redundant with the others (see the
/// crate README), not all of them.
const TAIL_READ: Ordering = Ordering::Acquire;

/// One slot of the circular buffer.
struct Entry<T> {
    op: UnsafeCell<Option<T>>,
    /// Lap parity of the last write; see the module docs.
    alive: AtomicBool,
}

/// The log was full: `reserve` could not proceed until some replica consumes entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogFull;

/// One array of the log: indices `start..` up to the next segment's `start` (module docs).
struct Segment<T> {
    /// The first index this segment holds; its laps count from here.
    start: usize,
    /// A power of two.
    size: usize,
    entries: Box<[Entry<T>]>,
    /// The segment holding the indices below `start`; null for the first. Owned by this one
    /// (freed when the log drops), never written after publication.
    prev: *mut Segment<T>,
}

impl<T> Segment<T> {
    fn new(start: usize, size: usize, prev: *mut Segment<T>) -> Self {
        debug_assert!(size.is_power_of_two() && size >= 2);
        Self {
            start,
            size,
            entries: (0..size)
                .map(|_| Entry {
                    op: UnsafeCell::new(None),
                    alive: AtomicBool::new(false),
                })
                .collect(),
            prev,
        }
    }

    /// The slot of index `idx` (at or past `start`).
    #[inline]
    fn entry(&self, idx: usize) -> &Entry<T> {
        &self.entries[(idx - self.start) & (self.size - 1)]
    }

    /// The `alive` value that marks index `idx` as filled: `true` on even laps of this segment.
    /// The size is a power of two, so the lap's parity is the bit worth `size` (no division).
    #[inline]
    fn filled_parity(&self, idx: usize) -> bool {
        (idx - self.start) & self.size == 0
    }
}

/// What [`Log::try_grow`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grow {
    /// The log grew, and the caller's `n` entries are reserved from this index.
    Reserved(usize),
    /// Another appender is growing it, or the tail moved: try to reserve again.
    Retry,
    /// The log is at its largest size: only consuming entries makes room.
    AtMax,
}

/// The shared log.
pub(crate) struct Log<T> {
    /// The newest segment (module docs); every older one is reachable through `prev`.
    current: CachePadded<AtomicPtr<Segment<T>>>,
    /// The largest size a segment may have; the first segment's size when growth is off.
    max_size: usize,
    tail: CachePadded<AtomicUsize>,
    completed_tail: CachePadded<AtomicUsize>,
    head: CachePadded<AtomicUsize>,
    /// One per replica place (`Builder::max_replicas`); `NO_REPLICA` for a place that holds no
    /// replica (not added yet, or retired).
    local_tails: Box<[CachePadded<AtomicUsize>]>,
    /// How many joins (`join`) have happened: `advance_head` discards a scan that a join
    /// overlapped (see there). Written rarely (a replica added or woken), so not padded.
    joins: AtomicUsize,
}

/// The local tail of a place that holds no replica: larger than any index, so `advance_head`'s
/// minimum passes over it and `help_laggards` never finds it behind the head.
pub(crate) const NO_REPLICA: usize = usize::MAX;

// SAFETY: the log hands out `&T` to several threads at once (replicas replaying the same entry
// concurrently, which requires `T: Sync`) and moves `T`s written on one thread to be dropped on
// another (requires `T: Send`). Every access to an entry's cell is ordered by its `alive` bit
// (written once per lap, after the value) and by `head` (reuse only after every replica has moved
// past the entry), as argued at each access. The segments behind the raw pointers are immutable
// after publication (apart from their entries' cells) and live as long as the log.
unsafe impl<T: Send + Sync> Sync for Log<T> {}
// SAFETY: owning the log owns its segments and their `T`s; moving it moves them.
unsafe impl<T: Send> Send for Log<T> {}

impl<T> Drop for Log<T> {
    fn drop(&mut self) {
        let mut seg = self.current.load(Ordering::Relaxed);
        while !seg.is_null() {
            // SAFETY: every segment was made by `Box::into_raw` (in `new` or `try_grow`) and is
            // reachable exactly once, from `current` or from its successor's `prev`; `&mut self`
            // rules out any other access.
            let boxed = unsafe { Box::from_raw(seg) };
            seg = boxed.prev;
        }
    }
}

impl<T> std::fmt::Debug for Log<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("size", &self.size())
            .field("head", &self.head.load(Ordering::Relaxed))
            .field(
                "completed_tail",
                &self.completed_tail.load(Ordering::Relaxed),
            )
            .field("tail", &self.tail())
            .finish_non_exhaustive()
    }
}

impl<T> Log<T> {
    /// A log of `size` entries (a power of two, checked by the builder) for `replicas` replicas,
    /// which never grows.
    #[cfg(test)]
    pub(crate) fn new(size: usize, replicas: usize) -> Self {
        Self::with_growth(size, size, replicas, replicas)
    }

    /// A log of `size` entries for `replicas` replicas, in `places >= replicas` places (the
    /// others join later), that may grow by doubling up to `max_size` entries (both powers of
    /// two, `max_size >= size`, checked by the builder).
    pub(crate) fn with_growth(
        size: usize,
        max_size: usize,
        replicas: usize,
        places: usize,
    ) -> Self {
        debug_assert!(size.is_power_of_two() && size >= 2);
        debug_assert!(max_size.is_power_of_two() && max_size >= size);
        let first = Box::into_raw(Box::new(Segment::new(0, size, std::ptr::null_mut())));
        Self {
            current: CachePadded::new(AtomicPtr::new(first)),
            max_size,
            tail: CachePadded::new(AtomicUsize::new(0)),
            completed_tail: CachePadded::new(AtomicUsize::new(0)),
            head: CachePadded::new(AtomicUsize::new(0)),
            local_tails: (0..places)
                .map(|r| {
                    CachePadded::new(AtomicUsize::new(if r < replicas { 0 } else { NO_REPLICA }))
                })
                .collect(),
            joins: AtomicUsize::new(0),
        }
    }

    /// The newest segment.
    #[inline]
    fn newest(&self) -> &Segment<T> {
        // Acquire: pairs with the Release store in `try_grow`, so the segment's fields are seen
        // as they were published (see the module docs for why it is new enough).
        let seg = self.current.load(Ordering::Acquire);
        // SAFETY: `current` always points to a live segment (set in `with_growth` and
        // `try_grow`, freed only in `drop`), and segments are immutable after publication apart
        // from their entries' cells.
        unsafe { &*seg }
    }

    /// The segment holding index `idx`. The caller learned `idx` in a way that orders the
    /// publication of that segment before this call (module docs, "Finding an index's segment").
    #[inline]
    fn segment(&self, idx: usize) -> &Segment<T> {
        let mut seg = self.newest();
        while idx < seg.start {
            // SAFETY: a segment with `start > 0` has a predecessor (only the first starts at 0),
            // live as long as the log.
            seg = unsafe { &*seg.prev };
        }
        seg
    }

    /// Whether the log may still grow (`Builder::log_growth`, not at its largest size yet).
    #[inline]
    pub(crate) fn can_grow(&self) -> bool {
        self.size() < self.max_size
    }

    /// The number of entries of the newest segment: the log's size now.
    pub(crate) fn size(&self) -> usize {
        self.newest().size
    }

    /// Reserves `n` consecutive entries with one CAS on the tail (Algorithm 1, lines 9-12) and
    /// returns the first index, or `LogFull` if they would overwrite entries some replica has
    /// not consumed yet.
    pub(crate) fn try_reserve(&self, n: usize) -> Result<usize, LogFull> {
        // TAIL_READ (here and on both outcomes of the CAS): synchronizes with the Release store
        // that unfroze the tail after a growth, so the segment holding what we reserve is
        // visible to our lookups (module docs). The successful CAS's alone would do, before our
        // writes; a stale segment seen by the full check below only makes it stricter (sizes
        // only grow and starts only move up). Without growth nothing else rests on it: the
        // entries' contents are published by their `alive` bits, not by the tail.
        let mut tail = self.tail.load(TAIL_READ);
        loop {
            if tail & FROZEN != 0 {
                // Another appender is growing the log: the caller retries.
                return Err(LogFull);
            }
            let seg = self.segment(tail);
            debug_assert!(n >= 1 && n <= seg.size);
            // Acquire: pairs with the Release in `advance_head`. Every replica's reads of the
            // entries below `head` happen before our writes into them in the next lap. Slots
            // of a segment below `start + size` were never written (a fresh array), whatever
            // the head.
            let head = self.head.load(Ordering::Acquire);
            if tail + n > head.max(seg.start) + seg.size {
                return Err(LogFull);
            }
            match self
                .tail
                .compare_exchange_weak(tail, tail + n, TAIL_READ, TAIL_READ)
            {
                Ok(_) => {
                    // §5.6 "low mark": the appender whose batch crosses a refresh point
                    // recomputes the head, so the log rarely fills when replicas keep up.
                    // The refresh quantum is a power of two (`seg.size / HEAD_REFRESHES_PER_LAP`,
                    // at least 1), so the crossing test shifts: two divisions by a run-time
                    // value cost more than the rest of the reservation.
                    let shift = (seg.size / HEAD_REFRESHES_PER_LAP).max(1).trailing_zeros();
                    if tail >> shift != (tail + n) >> shift {
                        self.advance_head();
                    }
                    return Ok(tail);
                }
                Err(current) => tail = current,
            }
        }
    }

    /// §6 "Log length": when the log is full, starts a segment of twice the size at the tail
    /// and reserves `n` entries at its start (module docs, steps 1-3). The caller found the log
    /// full after refreshing `head`.
    pub(crate) fn try_grow(&self, n: usize) -> Grow {
        // TAIL_READ: as in `try_reserve` (a tail past an earlier growth shows its segment). The
        // tail first, then the segment: a segment published after this load changed the tail
        // (steps 1 and 3, and step 3 never restores a value), so then the CAS below fails.
        let tail = self.tail.load(TAIL_READ);
        let seg = self.newest();
        let size = seg.size * 2;
        if size > self.max_size {
            return Grow::AtMax;
        }
        if tail & FROZEN != 0 || tail < seg.start {
            return Grow::Retry;
        }
        // Grow only a log that is full now. A caller may have found it "full" only because it
        // was frozen by another grower, which has since published a segment with room: growing
        // again would double the log for nothing (and, at the largest size, leave the earlier
        // segment's room unused for good). Relaxed (deliberately, unlike `try_reserve`): the
        // head only decides between growing and retrying, and a stale one is smaller than the
        // real head, so it can only make the log look fuller (a growth, as before this check).
        // Nothing is written into entries a replica may still read: the new segment is fresh.
        let head = self.head.load(Ordering::Relaxed);
        if tail + n <= head.max(seg.start) + seg.size {
            return Grow::Retry;
        }
        // Allocated before the freeze, so that other appenders are held up only for the
        // publication below. No user code runs here (empty entries).
        let grown = Box::into_raw(Box::new(Segment::new(tail, size, std::ptr::null_mut())));
        // Step 1. TAIL_READ: as in `try_reserve`. Fails if anyone reserved (or froze) since our
        // load of the tail.
        if self
            .tail
            .compare_exchange(tail, tail | FROZEN, TAIL_READ, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: `grown` came from `Box::into_raw` above and was never shared.
            drop(unsafe { Box::from_raw(grown) });
            return Grow::Retry;
        }
        // With the tail frozen nobody else grows, and no segment was published between our
        // load of the tail and the freeze (that would have changed the tail): `seg` is the
        // newest.
        debug_assert_eq!(
            self.current.load(Ordering::Relaxed),
            seg as *const _ as *mut _
        );
        // SAFETY: `grown` is not shared yet; it takes `seg` as its predecessor.
        unsafe { (*grown).prev = seg as *const Segment<T> as *mut Segment<T> };
        // Step 2. Release: pairs with the Acquire in `newest`, publishing the segment's fields.
        self.current.store(grown, Ordering::Release);
        // Step 3. Release: pairs with the Acquire loads and CASes of the tail in `try_reserve`
        // and `try_grow`: whoever reserves past the boundary sees the new segment.
        self.tail.store(tail + n, Ordering::Release);
        Grow::Reserved(tail)
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
    #[inline]
    pub(crate) unsafe fn write(&self, idx: usize, op: T) -> Option<T> {
        let seg = self.segment(idx);
        let entry = seg.entry(idx);
        // SAFETY:
        // - exclusive access: `idx` was reserved by this thread alone (tail CAS, the caller's
        //   contract), and the slot's previous occupant `idx - size` is below `head` (checked in
        //   `try_reserve`; for the first lap of a segment there is no previous occupant), so
        //   every replica finished reading it: their reads happen before this write through
        //   local_tail (Release) -> advance_head (Acquire, then Release on head) -> our Acquire
        //   load of head;
        // - no reader touches the slot for index `idx` before the Release store below.
        let previous = entry.op.with_mut(|cell| unsafe { (*cell).replace(op) });
        // Release: pairs with the Acquire in `is_filled`, publishing the value written above.
        entry.alive.store(seg.filled_parity(idx), Ordering::Release);
        previous
    }

    /// Whether index `idx` (which must be below `tail`, and at or above `head`) has been written.
    #[inline]
    pub(crate) fn is_filled(&self, idx: usize) -> bool {
        let seg = self.segment(idx);
        // Acquire: pairs with the Release in `write`.
        seg.entry(idx).alive.load(Ordering::Acquire) == seg.filled_parity(idx)
    }

    /// Runs `f` on the operation at index `idx` (the tests' single-entry read; replays use
    /// [`read_filled`](Self::read_filled)).
    ///
    /// # Safety
    ///
    /// - The caller saw `is_filled(idx)` return true (which publishes the value to it);
    /// - the caller holds the combiner lock of a replica whose local tail is at most `idx`
    ///   until `f` returns (which keeps `head <= idx`, so the slot cannot be overwritten for the
    ///   next lap while `f` runs).
    #[cfg(test)]
    pub(crate) unsafe fn read<R>(&self, idx: usize, f: impl FnOnce(&T) -> R) -> R {
        let entry = self.segment(idx).entry(idx);
        // SAFETY: as in `read_filled`, from the caller's contract.
        let op = entry.op.with(|cell| unsafe { (*cell).as_ref() });
        f(op.expect("invariant: a filled log entry holds an operation"))
    }

    /// Runs `f` on the operations at indices `from..to` in order, stopping at the first one not
    /// written yet; returns the index it stopped at (`to` if it ran them all). A replay's loop:
    /// it looks up a segment once per segment it crosses, where [`is_filled`](Self::is_filled)
    /// looks it up for every entry (a replay that catches an idle
    /// replica up runs a whole lap of entries).
    ///
    /// # Safety
    ///
    /// - The caller holds, until this returns, the combiner lock of a replica whose local tail
    ///   is at most `from` (which keeps `head <= from`, so no entry of the run is overwritten
    ///   for the next lap while `f` runs);
    /// - the caller learned `to` from the tail, `completed_tail` or a local tail (Acquire), so
    ///   every segment holding an index below `to` is seen (module docs, "Finding an index's
    ///   segment").
    #[inline]
    pub(crate) unsafe fn read_filled(
        &self,
        from: usize,
        to: usize,
        mut f: impl FnMut(&T),
    ) -> usize {
        let mut idx = from;
        while idx < to {
            // The segment of `idx`, and where the next one (if any) starts: the walk back from
            // the newest passes it. Every segment holding an index below `to` is seen (the
            // caller's contract), so the run below stays inside `seg`.
            let mut seg = self.newest();
            let mut end = to;
            while idx < seg.start {
                end = end.min(seg.start);
                // SAFETY: as in `segment`: a segment with `start > 0` has a live predecessor.
                seg = unsafe { &*seg.prev };
            }
            while idx < end {
                let entry = seg.entry(idx);
                // Acquire: pairs with the Release in `write`, as in `is_filled`.
                if entry.alive.load(Ordering::Acquire) != seg.filled_parity(idx) {
                    return idx;
                }
                // SAFETY: from the caller's contract,
                // - the value is initialized and visible: the Acquire load above saw the entry
                //   filled (pairing with the Release in `write`);
                // - no writer mutates it meanwhile: the next write to this slot is for
                //   `idx + size` (in the same segment; an older segment is never written again),
                //   which needs `head > idx`, but `head <= local_tail <= from <= idx` for the
                //   caller's replica until the caller moves that local tail, after this returns;
                // - other readers only take shared references (`T: Sync`).
                let op = entry.op.with(|cell| unsafe { (*cell).as_ref() });
                f(op.expect("invariant: a filled log entry holds an operation"));
                idx += 1;
            }
        }
        idx
    }

    /// The operation at index `idx`, borrowed for as long as the caller keeps the conditions
    /// below (the commit hook hands several entries to `CommitLog::commit` at once).
    ///
    /// # Safety
    ///
    /// As for [`read_filled`](Self::read_filled), for as long as the returned reference is used: the caller saw
    /// `is_filled(idx)` return true, and holds the combiner lock of a replica whose local tail
    /// is at most `idx` until it drops the reference.
    #[inline]
    pub(crate) unsafe fn get(&self, idx: usize) -> &T {
        let entry = self.segment(idx).entry(idx);
        // SAFETY: as in `read_filled`, from the caller's contract, which lasts as long as the
        // reference.
        let op = entry.op.with(|cell| unsafe { (*cell).as_ref() });
        op.expect("invariant: a filled log entry holds an operation")
    }

    /// The first unreserved index, read so that the caller may look up the segments of the
    /// indices below it (an Acquire load of the tail: module docs, "Finding an index's
    /// segment").
    #[inline]
    pub(crate) fn reserved_tail(&self) -> usize {
        // TAIL_READ: as in `try_reserve`.
        self.tail.load(TAIL_READ) & !FROZEN
    }

    /// The first unreserved index.
    #[inline]
    pub(crate) fn tail(&self) -> usize {
        // Relaxed: a bound for debug assertions, `Debug` and the mutation tests only.
        self.tail.load(Ordering::Relaxed) & !FROZEN
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

    /// Replica place `r`, empty until now (never filled, retired or dormant), joins the log
    /// at index `at`: it will replay from there, and the head never passes it until it does.
    ///
    /// The caller holds the combiner lock of a live replica whose local tail is `at` (the one
    /// whose state the joining replica copies) and keeps it until this returns, so the head is
    /// at most `at` now. Why the head then never passes `at`: see `advance_head`.
    pub(crate) fn join(&self, r: usize, at: usize) {
        debug_assert_eq!(self.local_tail(r), NO_REPLICA, "place {r} is taken");
        // Release: pairs with the Acquire loads of `local_tail` (whoever reads `at` here may
        // replay the entries from `at`).
        self.local_tails[r].store(at, Ordering::Release);
        // Release, after the store above: pairs with the Acquire load of `joins` that starts
        // `advance_head`'s scan (a scan that sees this count sees the new local tail).
        self.joins.fetch_add(1, Ordering::Release);
    }

    /// Replica `r` is retired (or goes dormant): the head no longer waits for it, and nothing
    /// replays it again (its local tail reads as `NO_REPLICA`, past every index). The caller
    /// holds `r`'s combiner lock, so no replay of `r` is under way.
    pub(crate) fn retire(&self, r: usize) {
        // Release: as `set_local_tail` (the replica's reads of the entries below its old local
        // tail happen before anyone reuses them).
        self.local_tails[r].store(NO_REPLICA, Ordering::Release);
    }

    /// Recomputes `head` as the smallest local tail. Returns the new head.
    ///
    /// With replicas joining at run time ([`join`](Self::join)) a local tail can move *down*
    /// (from `NO_REPLICA` to the join index), and a scan must not miss that. The danger: a scan
    /// that reads the joining place before the join (`NO_REPLICA`, or the stale tail of a
    /// replica that went dormant) and the source replica's local tail after the joiner let go
    /// of its lock (past the join index) would compute a head past the joined replica, and
    /// appenders would overwrite entries it has not replayed. So the scan is bracketed by two
    /// loads of `joins`, and a scan that a join overlapped is discarded and repeated:
    ///
    /// - if the first (Acquire) load reads a join's increment (Release, after its store), the
    ///   scan's loads of the joined place read the join index or a later value;
    /// - if not, but the scan read the source's local tail stored after the joiner released
    ///   the source's combiner lock, that store was made under the lock, taken after the
    ///   release, so the join's increment happens before it, and (the tail loads being
    ///   Acquire) before the second load of `joins`, which therefore reads it or later: a
    ///   different count, and the scan is repeated.
    ///
    /// Every other change of a local tail only raises it, and a stale (lower) value only makes
    /// the head smaller, which is safe. A head computed by a scan that no join overlapped but
    /// stored after a later join is safe too: it is at most the local tail of every replica
    /// live during the scan, and a later join index is the local tail of a live replica, so
    /// (by induction over the joins after the scan) at least one of those. Joins are rare (a replica added or woken), so the
    /// repetition costs nothing in the steady state: two loads of a read-mostly word.
    pub(crate) fn advance_head(&self) -> usize {
        let min = loop {
            // Acquire: pairs with the Release increment in `join` (first bullet above).
            let joins = self.joins.load(Ordering::Acquire);
            let min = (0..self.local_tails.len())
                .map(|r| self.local_tail(r))
                .min()
                .expect("invariant: at least one replica");
            // Relaxed: ordered after the Acquire loads of the local tails above, which is what
            // the second bullet above needs (coherence with the increment that happens before).
            if self.joins.load(Ordering::Relaxed) == joins {
                break min;
            }
        };
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

    /// §5.6 low mark: a reservation refreshes the head exactly when its batch crosses a
    /// multiple of a quarter of the log (here 4 of 16 entries), and at no other time. Fails if
    /// the crossing test is wrong (a refresh on every reservation, or never).
    #[test]
    fn head_is_refreshed_when_a_batch_crosses_a_quarter_lap() {
        let log: Log<u32> = Log::new(16, 1);
        let head = |log: &Log<u32>| log.head.load(Ordering::Relaxed);
        let mut expected = 0;
        for i in 0..13 {
            assert_eq!(log.try_reserve(1), Ok(i));
            put(&log, i);
            if (i + 1) % 4 == 0 {
                // The refresh ran before this entry was applied: it saw the previous tail.
                expected = i;
            }
            assert_eq!(head(&log), expected, "after reserving index {i}");
            log.set_local_tail(0, i + 1);
        }
        // A batch of 3 from 13 to 16 crosses 16; one from 16 to 19 crosses nothing.
        assert_eq!(log.try_reserve(3), Ok(13));
        assert_eq!(head(&log), 13);
        for i in 13..16 {
            put(&log, i);
        }
        log.set_local_tail(0, 16);
        assert_eq!(log.try_reserve(3), Ok(16));
        assert_eq!(head(&log), 13);
    }

    /// Empty places and retired replicas never hold the head back; a joined replica does, from
    /// its join index. Fails if `join` or `retire` leaves the local tail as it was.
    #[test]
    fn the_head_waits_for_a_joined_replica_and_not_for_a_retired_one() {
        let log: Log<u32> = Log::with_growth(8, 8, 1, 3);
        log.set_local_tail(0, 6);
        assert_eq!(log.advance_head(), 6, "places 1 and 2 are empty");
        log.join(1, 6);
        log.set_local_tail(0, 8);
        assert_eq!(log.advance_head(), 6, "replica 1 joined at 6");
        log.retire(1);
        assert_eq!(log.advance_head(), 8, "replica 1 is retired");
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
                let parity = log.segment(idx).filled_parity(idx);
                assert_eq!(parity, (idx / size).is_multiple_of(2), "size {size}");
            }
        }
    }

    /// Writes `i` at index `i`, which the (only) calling thread reserved and writes once.
    fn put(log: &Log<u32>, i: usize) -> Option<u32> {
        // SAFETY: the callers reserved `i` on this thread and write each index once; no other
        // thread uses the log.
        unsafe { log.write(i, i as u32) }
    }

    /// Reads index `i` after checking that it is filled.
    fn get(log: &Log<u32>, i: usize) -> u32 {
        assert!(log.is_filled(i), "index {i} not filled");
        // SAFETY: `is_filled(i)` was seen just above; no other thread uses the log, so nothing
        // overwrites the slot meanwhile.
        unsafe { log.read(i, |v| *v) }
    }

    /// What `read_filled` hands to its closure from `from` towards `to`, and where it stopped.
    fn run(log: &Log<u32>, from: usize, to: usize) -> (Vec<u32>, usize) {
        let mut seen = Vec::new();
        // SAFETY: no other thread uses the log, so nothing overwrites an entry meanwhile, and
        // every segment below the tail was published on this thread.
        let end = unsafe { log.read_filled(from, to, |v| seen.push(*v)) };
        (seen, end)
    }

    /// The replay loop (`read_filled`) looks a segment up once per run: it must still read
    /// every index from the segment that holds it, stop at the first entry not written yet
    /// (an earlier lap's leftover included), and stop at `to`.
    #[test]
    fn read_filled_reads_each_index_from_its_segment_and_stops_at_a_gap() {
        let log: Log<u32> = Log::with_growth(4, 16, 2, 2);
        assert_eq!(log.try_reserve(4), Ok(0));
        for i in 0..4 {
            put(&log, i);
        }
        assert_eq!(log.try_reserve(1), Err(LogFull));
        assert_eq!(log.try_grow(3), Grow::Reserved(4));
        for i in 4..7 {
            put(&log, i);
        }
        // Across the boundary at 4: indices 4.. are in the new segment, whose slot 0 (index 4)
        // shares nothing with the old segment's slot 0 (index 0).
        assert_eq!(run(&log, 0, 7), ((0..7).collect(), 7));
        assert_eq!(run(&log, 2, 5), (vec![2, 3, 4], 5));
        // A reserved entry not written yet stops the run, whatever follows.
        assert_eq!(log.try_reserve(2), Ok(7));
        put(&log, 8);
        assert_eq!(run(&log, 5, 9), (vec![5, 6], 7));
        put(&log, 7);
        assert_eq!(run(&log, 5, 9), (vec![5, 6, 7, 8], 9));
        // Without growth: the next lap's entry reads as empty until written.
        let log: Log<u32> = Log::new(2, 1);
        assert_eq!(log.try_reserve(2), Ok(0));
        put(&log, 0);
        put(&log, 1);
        log.set_local_tail(0, 2);
        log.advance_head();
        assert_eq!(log.try_reserve(1), Ok(2));
        assert_eq!(run(&log, 2, 3), (vec![], 2));
        put(&log, 2);
        assert_eq!(run(&log, 1, 3), (vec![1, 2], 3));
    }

    #[test]
    fn growth_keeps_old_entries_and_starts_fresh_laps() {
        // 2 replicas, neither consuming: only growth makes room.
        let log: Log<u32> = Log::with_growth(4, 16, 2, 2);
        assert_eq!(log.try_reserve(4), Ok(0));
        for i in 0..4 {
            assert_eq!(put(&log, i), None);
        }
        assert_eq!(log.try_reserve(1), Err(LogFull));
        assert!(log.can_grow());
        assert_eq!(log.try_grow(2), Grow::Reserved(4));
        assert_eq!((log.size(), log.tail()), (8, 6));
        // The new segment's slots are fresh: nothing handed back, first-lap parity.
        for i in 4..6 {
            assert!(!log.is_filled(i));
            assert_eq!(put(&log, i), None);
        }
        for i in 0..6 {
            assert!(log.is_filled(i), "index {i}");
            assert_eq!(get(&log, i), i as u32);
        }
        // The new segment is full at its start plus its size, whatever the head (0 here).
        assert_eq!(log.try_reserve(6), Ok(6));
        for i in 6..12 {
            assert_eq!(put(&log, i), None);
        }
        assert_eq!(log.try_reserve(1), Err(LogFull));
        assert_eq!(log.try_grow(1), Grow::Reserved(12));
        assert_eq!(log.size(), 16);
        assert_eq!(put(&log, 12), None);
        // At the largest size, only consumption makes room.
        assert_eq!(log.try_reserve(15), Ok(13));
        for i in 13..28 {
            assert_eq!(put(&log, i), None);
        }
        assert_eq!(log.try_reserve(1), Err(LogFull));
        assert!(!log.can_grow());
        assert_eq!(log.try_grow(1), Grow::AtMax);
        // Replicas consume into the third segment: its slots wrap with the other parity.
        log.set_local_tail(0, 20);
        log.set_local_tail(1, 21);
        assert_eq!(log.advance_head(), 20);
        assert_eq!(log.try_reserve(2), Ok(28));
        assert!(
            !log.is_filled(28),
            "slot 0 of the third segment holds its first lap"
        );
        assert_eq!(put(&log, 28), Some(12));
        assert_eq!(put(&log, 29), Some(13));
        assert!(log.is_filled(28) && log.is_filled(29) && log.is_filled(27));
        for i in [0, 3, 4, 11, 27, 28, 29] {
            assert_eq!(get(&log, i), i as u32);
        }
    }

    /// Appenders racing to grow a log that nobody consumes: every index is reserved exactly
    /// once (two growers both passing the freeze would reserve the same entries).
    #[test]
    // Real threads racing on the log (this test is compiled out under loom, where
    // `tests/loom_log_growth.rs` models the race).
    #[allow(clippy::disallowed_methods)]
    fn concurrent_growers_never_reserve_an_index_twice() {
        const THREADS: usize = 4;
        // 2 + 4 + ... + 64 entries, then full for good.
        const TOTAL: usize = 126;
        for round in 0..if cfg!(debug_assertions) { 300 } else { 3_000 } {
            let log: Log<u32> = Log::with_growth(2, 64, 1, 1);
            let start = std::sync::Barrier::new(THREADS);
            let mut got: Vec<usize> = std::thread::scope(|s| {
                let workers: Vec<_> = (0..THREADS)
                    .map(|_| {
                        let (log, start) = (&log, &start);
                        s.spawn(move || {
                            let mut mine = Vec::new();
                            start.wait();
                            loop {
                                match log.try_reserve(1) {
                                    Ok(i) => mine.push(i),
                                    Err(LogFull) => match log.try_grow(1) {
                                        Grow::Reserved(i) => mine.push(i),
                                        Grow::Retry => {}
                                        Grow::AtMax if log.tail() >= TOTAL => return mine,
                                        Grow::AtMax => {}
                                    },
                                }
                            }
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().expect("worker panicked"))
                    .collect()
            });
            got.sort_unstable();
            assert_eq!(got, (0..TOTAL).collect::<Vec<_>>(), "round {round}");
            assert_eq!(log.size(), 64);
        }
    }

    /// An appender that found the log "full" only because another grower had frozen the tail
    /// must not grow it again once that grower has published a segment with room (before the
    /// fix it doubled the log for nothing, and `concurrent_growers_never_reserve_an_index_twice`
    /// could spin forever: the wasted room made the log reach its largest size before index
    /// 126).
    #[test]
    fn growing_a_log_with_room_is_a_retry() {
        let log: Log<u32> = Log::with_growth(2, 8, 1, 1);
        assert_eq!(log.try_reserve(2), Ok(0));
        assert_eq!(log.try_reserve(1), Err(LogFull));
        assert_eq!(log.try_grow(1), Grow::Reserved(2));
        assert_eq!((log.size(), log.tail()), (4, 3));
        // The new segment (indices 2..6) has room: a late grower retries instead of growing.
        assert_eq!(log.try_grow(1), Grow::Retry);
        assert_eq!((log.size(), log.tail()), (4, 3));
        assert_eq!(log.try_reserve(3), Ok(3));
        assert_eq!(log.try_grow(1), Grow::Reserved(6));
        assert_eq!(log.size(), 8);
    }

    #[test]
    fn frozen_tail_makes_appenders_retry() {
        let log: Log<u32> = Log::with_growth(2, 8, 1, 1);
        assert_eq!(log.try_reserve(2), Ok(0));
        log.tail.store(2 | FROZEN, Ordering::Relaxed);
        assert_eq!(log.try_reserve(1), Err(LogFull));
        assert_eq!(log.try_grow(1), Grow::Retry);
        assert_eq!(log.tail(), 2);
        log.tail.store(2, Ordering::Relaxed);
        assert_eq!(log.try_grow(1), Grow::Reserved(2));
    }

    #[test]
    fn a_log_without_growth_never_grows() {
        let log: Log<u32> = Log::new(2, 1);
        assert_eq!(log.try_reserve(2), Ok(0));
        assert!(!log.can_grow());
        assert_eq!(log.try_grow(1), Grow::AtMax);
    }

    #[test]
    fn completed_tail_only_grows() {
        let log: Log<u32> = Log::new(8, 1);
        log.advance_completed_tail(5);
        log.advance_completed_tail(3);
        assert_eq!(log.completed_tail(), 5);
    }
}
