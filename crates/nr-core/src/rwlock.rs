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
//! load reader flags" are a Dekker pair: both sides use `SeqCst` so that at least one of them sees
//! the other (Acquire/Release alone would allow both to miss, on any CPU with store buffers,
//! x86 included).
//!
//! In NR only the node's combiner (or a thread replaying on its behalf, which holds the combiner
//! lock) ever writes, so there is at most one writer waiting; the writer flag is still taken with
//! a CAS so the lock stands on its own (and is model-checked on its own in
//! `tests/loom_rwlock.rs`).

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicBool, Ordering};
use crate::wait::Waiter;

/// The lock. Reader `i` is the thread registered in slot `i` of the replica.
#[derive(Debug)]
pub(crate) struct DistRwLock {
    writer: CachePadded<AtomicBool>,
    readers: Box<[CachePadded<AtomicBool>]>,
}

impl DistRwLock {
    pub(crate) fn new(readers: usize) -> Self {
        Self {
            writer: CachePadded::new(AtomicBool::new(false)),
            readers: (0..readers)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
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
            // decisive check is the SeqCst load below.
            while self.writer.load(Ordering::Relaxed) {
                if abandon() {
                    return false;
                }
                waiter.snooze();
            }
            // SeqCst: the Dekker pair with `write_lock` (writer CAS, then loads reader flags).
            flag.store(true, Ordering::SeqCst);
            // SeqCst: see above. Also Acquire: pairs with the Release in `write_unlock`, so the
            // writer's changes to the replica are visible to this reader.
            if !self.writer.load(Ordering::SeqCst) {
                return true;
            }
            // Release: nothing was read; a writer waiting on this flag may go on.
            flag.store(false, Ordering::Release);
        }
    }

    /// Leaves the read side.
    #[inline]
    pub(crate) fn read_unlock(&self, reader: usize) {
        // Release: pairs with the SeqCst (Acquire) load in `write_lock`, so this reader's reads
        // of the replica happen before the writer's next changes.
        self.readers[reader].store(false, Ordering::Release);
    }

    /// Takes the lock for writing, waiting for readers that are in. `active_readers` bounds the
    /// reader flags to scan (slots never registered need no look). `abandon` as in `read_lock`.
    pub(crate) fn write_lock(&self, active_readers: usize, abandon: impl Fn() -> bool) -> bool {
        let mut waiter = Waiter::new();
        // SeqCst: the Dekker pair with `read_lock`; also Acquire: pairs with the Release in a
        // previous `write_unlock`.
        while self
            .writer
            .compare_exchange_weak(false, true, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            if abandon() {
                return false;
            }
            waiter.snooze();
        }
        for flag in &self.readers[..active_readers.min(self.readers.len())] {
            let mut waiter = Waiter::new();
            // SeqCst: the Dekker pair with `read_lock`; also Acquire: pairs with the Release in
            // `read_unlock`.
            while flag.load(Ordering::SeqCst) {
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
        // Release: pairs with the SeqCst loads of the writer flag in `read_lock` and the CAS in
        // `write_lock`: the writer's changes happen before the next reader's or writer's section.
        self.writer.store(false, Ordering::Release);
    }
}
