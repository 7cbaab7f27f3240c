//! The distributed readers-writer lock of the paper's §5.5.
//!
//! Each reader has its own flag on its own cache line; there is one writer flag. Entering costs
//! one atomic store on a line nobody else writes (reader) or one CAS (writer):
//!
//! * writer: take the writer flag, then wait until every reader flag is clear (without taking
//!   them); to leave, clear the writer flag.
//! * reader: wait while the writer flag is set, set its own flag, re-check the writer flag; if it
//!   is set, clear its flag and start over; otherwise it is in.
//!
//! The reader's "store own flag, then load writer flag" and the writer's "store writer flag, then
//! load reader flags" form a Dekker pair. Each side puts a `SeqCst` *fence* between its store and
//! its load, so at least one side sees the other's store (with Acquire/Release alone both could
//! miss, on any CPU with store buffers, x86 included). Fences rather than `SeqCst` accesses:
//! that is the form the C++ memory model (and loom) guarantees for mixed flags.
//!
//! Reader slots are activated once (when a thread registers) and the writer scans only
//! `0..active`; `activate` is ordered before the new reader's first flag store, and the writer
//! reads `active` after its fence, so a reader the writer does not scan sees the writer flag.
//!
//! In NR only the node's combiner (or a thread replaying on its behalf, which holds the combiner
//! lock) ever writes; the writer flag is still taken with a CAS so the lock stands on its own
//! (model-checked in `src/tests/loom_rwlock.rs`).

use crossbeam_utils::CachePadded;

use crate::sync::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::wait::Waiter;

/// The lock. Reader `i` is the thread registered in slot `i` of the replica.
#[derive(Debug)]
pub(crate) struct DistRwLock {
    writer: CachePadded<AtomicBool>,
    /// High-water mark of activated reader slots.
    active: CachePadded<AtomicUsize>,
    readers: Box<[CachePadded<AtomicBool>]>,
}

impl DistRwLock {
    pub(crate) fn new(readers: usize) -> Self {
        Self {
            writer: CachePadded::new(AtomicBool::new(false)),
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
        // Release/Acquire `state`. The writer side re-reads the count after its fence.
        self.active.load(Ordering::Relaxed)
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
            while self.writer.load(Ordering::Relaxed) {
                if abandon() {
                    return false;
                }
                waiter.snooze();
            }
            // Relaxed store + SeqCst fence: the reader half of the Dekker pair with
            // `write_lock` (its CAS, fence, then loads of the reader flags).
            flag.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            // Acquire: pairs with the Release in `write_unlock`, so the last writer's changes to
            // the replica are visible to this reader.
            if !self.writer.load(Ordering::Acquire) {
                return true;
            }
            // Release: nothing was read; a writer waiting on this flag may go on.
            flag.store(false, Ordering::Release);
        }
    }

    /// Leaves the read side.
    #[inline]
    pub(crate) fn read_unlock(&self, reader: usize) {
        // Release: pairs with the Acquire load in `write_lock`, so this reader's reads of the
        // replica happen before the writer's next changes.
        self.readers[reader].store(false, Ordering::Release);
    }

    /// Takes the lock for writing, waiting for readers that are in. `abandon` as in `read_lock`.
    pub(crate) fn write_lock(&self, abandon: impl Fn() -> bool) -> bool {
        let mut waiter = Waiter::new();
        // Acquire: pairs with the Release in a previous `write_unlock`.
        while self
            .writer
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if abandon() {
                return false;
            }
            waiter.snooze();
        }
        // SeqCst fence: the writer half of the Dekker pair with `read_lock`.
        fence(Ordering::SeqCst);
        // Relaxed: after the fence, any reader not counted here has not passed its own fence
        // yet, so it will see the writer flag (module docs).
        let active = self.active.load(Ordering::Relaxed).min(self.readers.len());
        for flag in &self.readers[..active] {
            let mut waiter = Waiter::new();
            // Acquire: pairs with the Release in `read_unlock`.
            while flag.load(Ordering::Acquire) {
                if abandon() {
                    self.write_unlock();
                    return false;
                }
                waiter.snooze();
            }
        }
        true
    }

    /// Leaves the write side.
    #[inline]
    pub(crate) fn write_unlock(&self) {
        // Release: pairs with the Acquire loads of the writer flag in `read_lock` and the CAS in
        // `write_lock`: the writer's changes happen before the next reader's or writer's section.
        self.writer.store(false, Ordering::Release);
    }
}
