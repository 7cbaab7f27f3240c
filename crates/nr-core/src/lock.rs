//! A replica's lock word: the flat-combining *combiner lock* (Algorithm 1, line 21) and the
//! writer side of the §5.5 distributed readers-writer lock, in one word, plus the per-reader
//! flags.
//!
//! # The state word
//!
//! | bit | name | set by | meaning |
//! |---|---|---|---|
//! | 0 | `COMBINER` | [`try_lock_combiner`](ReplicaLock::try_lock_combiner) (CAS from 0) | one thread is the replica's combiner |
//! | 1 | `WRITER` | the same CAS, or [`lock_writer`](ReplicaLock::lock_writer) | readers are excluded from the replica |
//! | 2 | `PARKED` | [`announce_parked`](ReplicaLock::announce_parked), only while `COMBINER` is set | some owner sleeps until the combiner leaves |
//!
//! [`unlock`](ReplicaLock::unlock) swaps the word back to 0 and reports whether `PARKED` was set.
//! The word is 0 whenever nobody holds the combiner lock.
//!
//! # Why one word
//!
//! Only the combiner ever writes the replica, so the writer side needs no lock of its own: it is
//! a bit the combiner sets. With one replica (nothing to append to a log) the combiner takes both
//! bits with a single CAS, and unlocking is a single swap: two read-modify-writes per batch,
//! as few as a plain mutex. With several replicas the combiner takes `WRITER` only after it has
//! reserved and filled its log entries, so that readers keep running meanwhile (the paper's
//! §5.5 point), and keeps it until it unlocks. The one exception: a combiner that waits for log
//! space and brings its own lagging replica up to `completed_tail` meanwhile gives `WRITER` back
//! ([`unlock_writer`](ReplicaLock::unlock_writer)) while it waits (§5.4).
//!
//! # Readers against the writer bit: a Dekker pair
//!
//! A reader stores its own flag, then loads the word; the combiner sets `WRITER` with a `SeqCst`
//! read-modify-write, then loads the reader flags (`SeqCst`). The reader puts a `SeqCst` fence
//! between its store and its load. Under the C++20 memory model (\[atomics.order\] p4, which
//! Rust follows) this forbids the outcome where both miss each other: if the reader's load
//! misses the RMW, the reader's fence precedes the RMW in the single total order S; the RMW
//! precedes the writer's `SeqCst` flag load (program order); and a `SeqCst` load that misses a
//! store made before a fence precedes that fence in S, so S would have a cycle. No fence is needed
//! on the writer side, which saves a full barrier (~5 ns) per batch.
//! [`crate::sync::fence_after_seqcst_rmw`] is empty normally and a real fence under loom, because
//! loom models `SeqCst` accesses as `AcqRel` and would otherwise report a false race.
//!
//! Reader slots are activated once (when a thread registers) and the writer scans `0..active`;
//! the writer loads `active` with `SeqCst` after its RMW, so by the same argument a reader it
//! does not scan sees `WRITER`.
//!
//! # Parking owners
//!
//! An owner whose operation is pending may sleep until the combiner leaves. It first sets its
//! slot's parked flag, then sets `PARKED` with a CAS that succeeds only while `COMBINER` is set.
//! All changes of the word are read-modify-writes, so they are totally ordered: either the
//! combiner's unlocking swap comes after the CAS and sees `PARKED` (its Acquire pairs with the
//! CAS's Release, so it also sees the parked flag), or the CAS comes after the swap and fails
//! because `COMBINER` is clear, and the owner does not sleep.

use crossbeam_utils::CachePadded;

use crate::sync::{fence, fence_after_seqcst_rmw, AtomicBool, AtomicU8, AtomicUsize, Ordering};
use crate::wait::Waiter;

const COMBINER: u8 = 1;
const WRITER: u8 = 2;
const PARKED: u8 = 4;

/// The lock of one replica. Reader `i` is the thread registered in slot `i` of the replica.
#[derive(Debug)]
pub(crate) struct ReplicaLock {
    state: CachePadded<AtomicU8>,
    /// High-water mark of activated reader slots.
    active: CachePadded<AtomicUsize>,
    readers: Box<[CachePadded<AtomicBool>]>,
}

impl ReplicaLock {
    pub(crate) fn new(readers: usize) -> Self {
        Self {
            state: CachePadded::new(AtomicU8::new(0)),
            active: CachePadded::new(AtomicUsize::new(0)),
            readers: (0..readers)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
        }
    }

    /// Makes reader slot `reader` visible to writers; call before its first `read_lock`.
    pub(crate) fn activate(&self, reader: usize) {
        // Relaxed: ordered before the reader's first flag store by program order and the SeqCst
        // fence in `read_lock`; see the module docs.
        self.active.fetch_max(reader + 1, Ordering::Relaxed);
    }

    /// Reader slots activated so far (also the bound of the combiner's slot scan).
    #[inline]
    pub(crate) fn active(&self) -> usize {
        // Relaxed: a scan bound only. A combiner that misses a just-registered slot leaves its
        // operation for the next batch, which that thread runs itself if no one else does (it
        // tries the combiner lock while it waits); the slot's contents are published by its own
        // Release/Acquire `state`. The writer side re-reads the count with SeqCst.
        self.active.load(Ordering::Relaxed)
    }

    /// Whether some thread holds the combiner lock (a hint; for `Debug` output).
    pub(crate) fn is_combiner_locked(&self) -> bool {
        // Relaxed: a snapshot for diagnostics.
        self.state.load(Ordering::Relaxed) & COMBINER != 0
    }

    /// Tries to become the combiner. With `exclude_readers`, also takes the write side in the
    /// same CAS and waits until the readers inside have left.
    #[inline]
    pub(crate) fn try_lock_combiner(&self, exclude_readers: bool) -> bool {
        // Relaxed pre-check keeps a contended line shared instead of bouncing it with CASes.
        if self.state.load(Ordering::Relaxed) != 0 {
            return false;
        }
        let bits = if exclude_readers {
            COMBINER | WRITER
        } else {
            COMBINER
        };
        // SeqCst on success: Acquire pairs with the Release of `unlock` (we see the previous
        // combiner's changes to the replica and its scratch space); SeqCst because with `WRITER`
        // this RMW is the writer half of the Dekker pair with `read_lock` (module docs).
        if self
            .state
            .compare_exchange(0, bits, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        if exclude_readers {
            fence_after_seqcst_rmw();
            self.wait_for_readers();
        }
        true
    }

    /// Combiner: takes the write side (no-op if already held) and waits until the readers inside
    /// have left. The caller holds the combiner lock.
    pub(crate) fn lock_writer(&self) {
        // Relaxed: only the combiner (the caller) sets `WRITER`; this reads its own write.
        if self.state.load(Ordering::Relaxed) & WRITER != 0 {
            return;
        }
        // SeqCst: the writer half of the Dekker pair with `read_lock` (module docs).
        self.state.fetch_or(WRITER, Ordering::SeqCst);
        fence_after_seqcst_rmw();
        self.wait_for_readers();
    }

    #[inline]
    fn wait_for_readers(&self) {
        // SeqCst: see the module docs (a reader this scan skips sees `WRITER`).
        let active = self.active.load(Ordering::SeqCst).min(self.readers.len());
        for flag in &self.readers[..active] {
            // SeqCst: the writer's loads of the Dekker pair (module docs); its Acquire half pairs
            // with the Release in `read_unlock`, so the reader's reads happen before our writes.
            if flag.load(Ordering::SeqCst) {
                Self::wait_for_reader(flag);
            }
        }
    }

    /// The rest of `wait_for_readers` for a reader found inside: out of line, so that the
    /// uncontended scan carries no backoff state.
    #[cold]
    fn wait_for_reader(flag: &AtomicBool) {
        let mut waiter = Waiter::new();
        // SeqCst: as in `wait_for_readers`.
        while flag.load(Ordering::SeqCst) {
            waiter.snooze();
        }
    }

    /// Combiner: gives the write side back while keeping the combiner lock, so that readers
    /// may run on the replica again (a combiner waiting for log space, §5.4).
    ///
    /// # Safety
    ///
    /// - The caller holds the combiner lock (it set `WRITER` itself, or did not set it).
    /// - The replica is in a state readers may see: every change the caller made to it is
    ///   below `completed_tail` (see `Log::completed_tail`), and the caller makes no further
    ///   change before taking the write side again with [`lock_writer`](Self::lock_writer).
    #[inline]
    pub(crate) unsafe fn unlock_writer(&self) {
        // Release: pairs with the Acquire load in `read_lock`, publishing our changes to the
        // replica to the readers let in by this.
        self.state.fetch_and(!WRITER, Ordering::Release);
    }

    /// Releases the combiner lock and the write side. Returns whether an owner announced that it
    /// parked, in which case the caller must wake the parked owners whose operations are pending.
    ///
    /// # Safety
    ///
    /// - The caller holds the combiner lock (a successful `try_lock_combiner` not yet unlocked);
    ///   unlocking a lock another thread holds lets two combiners mutate the replica at once.
    #[inline]
    pub(crate) unsafe fn unlock(&self) -> bool {
        // Release: pairs with the Acquire of the next `try_lock_combiner` and of `read_lock`'s
        // check, publishing our changes to the replica. Acquire: pairs with the Release CAS in
        // `announce_parked`, so the parked flags set before it are visible to the caller.
        self.state.swap(0, Ordering::AcqRel) & PARKED != 0
    }

    /// Waiting owner: records that it is about to park until the combiner leaves. Returns false
    /// when no combiner holds the lock (then it must not park but retry). Call after setting the
    /// slot's parked flag.
    pub(crate) fn announce_parked(&self) -> bool {
        // Relaxed: the CAS below decides.
        let mut current = self.state.load(Ordering::Relaxed);
        loop {
            if current & COMBINER == 0 {
                return false;
            }
            // Always a CAS, even when `PARKED` is already set: the RMW is what carries our
            // parked flag (Release) to the unlocking swap (Acquire).
            match self.state.compare_exchange_weak(
                current,
                current | PARKED,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => current = now,
            }
        }
    }

    /// Takes the lock for reader `reader`. `abandon` is polled while waiting; when it returns
    /// true the wait stops and `false` is returned without the lock.
    #[inline]
    pub(crate) fn read_lock(&self, reader: usize, abandon: impl Fn() -> bool) -> bool {
        let flag = &self.readers[reader];
        let mut waiter = Waiter::new();
        loop {
            // Relaxed: only a hint to avoid raising our flag in front of an active writer; the
            // decisive check is the load after the fence below.
            while self.state.load(Ordering::Relaxed) & WRITER != 0 {
                if abandon() {
                    return false;
                }
                waiter.snooze();
            }
            // Relaxed store + SeqCst fence: the reader half of the Dekker pair with the writer's
            // SeqCst RMW and flag loads (module docs).
            flag.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            // Acquire: pairs with the Release in `unlock`, so the last writer's changes to the
            // replica are visible to this reader.
            if self.state.load(Ordering::Acquire) & WRITER == 0 {
                return true;
            }
            // Release: nothing was read; a writer waiting on this flag may go on.
            flag.store(false, Ordering::Release);
        }
    }

    /// Leaves the read side.
    ///
    /// # Safety
    ///
    /// - The caller holds the read side for reader slot `reader` (a `read_lock(reader, ..)`
    ///   that returned true and was not unlocked yet) and takes no reference to the replica
    ///   from now on; otherwise a writer could mutate the replica under a live reader.
    #[inline]
    pub(crate) unsafe fn read_unlock(&self, reader: usize) {
        // Release: pairs with the SeqCst (Acquire) loads in `wait_for_readers`, so this reader's
        // reads of the replica happen before the writer's next changes.
        self.readers[reader].store(false, Ordering::Release);
    }
}
