//! CNR with one replica: nothing to replicate, so no log (as NR's single-replica path).
//!
//! Each log's combiner lock still orders the writes of that log, and flat combining still
//! serves the threads that found it busy; but the combiner applies operations directly from the
//! slots, and a thread that finds the lock free (at once, or within NR's bounded lock retry)
//! applies its own operation without posting it.
//! A scan takes every log's combiner lock, in log order, and runs with all of them held: no other
//! thread ever waits while holding one, so this cannot deadlock. Reads wait for no log (there is
//! none: the logs' tails stay 0), and see each write once its combiner applied it, which is
//! before the write returns. But reads are not shut out of the structure, and a scan changes it
//! in several steps (one per partition, say): a read that saw part of a scan and a later read
//! that saw less of it would not be linearizable (found by `tests/loom_cnr.rs`,
//! `a_scan_is_atomic_to_reads`: a read saw a scan's increment of key 0, the next read not its
//! increment of key 1). So a running scan marks itself in the replica's barrier (`arrived` is
//! every log while it runs), and a read that finds it marked waits until that scan ended
//! (`done` moved, or `arrived` is back at 0): as `completed_tail` and the local tails do for a
//! replicated object, where a read that saw part of a scan leaves `completed_tail` past it.

use super::replay::LogGuard;
use super::{CnrReplica, Combining, ConcurrentDispatch, ConcurrentReplicated};
use crate::error::Poisoned;
use crate::sync::Ordering;
use crate::wait::{retry_lock, Waiter};

impl<D: ConcurrentDispatch> ConcurrentReplicated<D> {
    /// A write to log `l` of the only replica, from the owner of slot `slot` of its area.
    ///
    /// Uncontended, inlined into the caller: the lock word's CAS, a load of the poison flag,
    /// `dispatch_mut` on the operation in hand, a load of the posted count, the unlocking swap.
    /// It writes no other shared word (the batch scratch is touched only when something was
    /// posted), so two threads on different logs share no line of CNR's.
    #[inline(always)]
    pub(super) fn write_single(
        &self,
        l: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let rep = &self.replicas[0];
        let area = &rep.combining[l];
        match LogGuard::try_new_released_on_success(self, area) {
            Some(guard) => self.apply_single(rep, area, guard, op),
            None => self.write_single_contended(rep, area, slot, op),
        }
    }

    /// `write_single` under `area`'s lock (`guard`): applies `op`, serves what was posted,
    /// unlocks.
    #[inline(always)]
    fn apply_single(
        &self,
        rep: &CnrReplica<D>,
        area: &Combining<D>,
        guard: LogGuard<'_, D>,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        // Acquire (in `is_poisoned`): a poisoner released this lock after its store.
        self.check()?;
        let response = rep.data.dispatch_mut(op);
        self.serve_posted(area);
        guard.release();
        Ok(response)
    }

    /// `write_single` when `area`'s lock is busy: retries it before posting, as NR's
    /// single-replica write does (`wait::retry_lock`): the holder applies one write or a short
    /// batch, and a waiter that spins, then yields, takes the lock itself rather than handing
    /// its write across cores.
    #[cold]
    #[inline(never)]
    fn write_single_contended(
        &self,
        rep: &CnrReplica<D>,
        area: &Combining<D>,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let mut taken = None;
        retry_lock(|| {
            taken = LogGuard::try_new_released_on_success(self, area);
            taken.is_some()
        });
        if let Some(guard) = taken {
            return self.apply_single(rep, area, guard, op);
        }
        // Not on a poisoned object: the slot would stay posted.
        self.check()?;
        self.post_and_wait(area, slot, op, || {
            self.serve_posted(area);
            Ok(None)
        })
    }

    /// Applies the operations posted to `area` and responds. The caller holds `area`'s lock.
    #[inline]
    fn serve_posted(&self, area: &Combining<D>) {
        // Uncontended, nobody has posted anything: no slot scan, and no store to the batch
        // scratch (a line that every write of this log would otherwise pass between cores).
        if area.has_pending() {
            self.serve_posted_slow(area);
        }
    }

    #[cold]
    #[inline(never)]
    fn serve_posted_slow(&self, area: &Combining<D>) {
        let rep = &self.replicas[0];
        // SAFETY: the caller holds `area`'s combiner lock, which guards its batch scratch.
        let batch = area.batch.with_mut(|p| unsafe { &mut *p });
        // SAFETY: as above.
        if unsafe { area.collect(batch, false) } == 0 {
            return;
        }
        for &slot in &batch.slots {
            // SAFETY: we hold the lock and collected `slot` into this batch; applied once.
            unsafe { area.apply_own_with(slot, |op| rep.data.dispatch_mut(op)) };
        }
        area.respond(&batch.slots);
    }

    /// A scan on the only replica: runs with every log's combiner lock held, marked running in
    /// the replica's barrier for reads to wait on (module docs).
    pub(super) fn scan_single(&self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        let rep = &self.replicas[0];
        let mut held = Vec::with_capacity(rep.combining.len());
        for area in rep.combining.iter() {
            let mut waiter = Waiter::new();
            loop {
                self.check()?;
                if let Some(guard) = LogGuard::try_new(self, area) {
                    held.push(guard);
                    break;
                }
                waiter.snooze();
            }
        }
        self.check()?;
        let barrier = &rep.scan;
        // Relaxed: only scans write `arrived` here, one at a time (each holds every log's lock).
        // A read that saw any of this scan's writes to the structure sees this store or a later
        // one: it precedes those writes, and the structure's own synchronization, which that
        // read acquired, carries it to the read and whatever follows it.
        barrier
            .arrived
            .store(rep.combining.len(), Ordering::Relaxed);
        // Every log's lock is held: no write of any log runs on the replica until we return.
        let response = rep.data.dispatch_mut(op);
        // Relaxed: written only by scans, under every log's lock, as `arrived`.
        let done = barrier.done.load(Ordering::Relaxed);
        // Release (both): pair with the Acquire loads in `wait_for_scan_single`; a read that sees
        // this scan ended sees all its writes.
        barrier.done.store(done + 1, Ordering::Release);
        barrier.arrived.store(0, Ordering::Release);
        // Hand the logs back with their pending writes served, so none waits for a park.
        for (area, guard) in rep.combining.iter().zip(held) {
            self.serve_posted(area);
            drop(guard);
        }
        Ok(response)
    }

    /// A read on the only replica waits here while a scan runs (module docs).
    #[inline]
    pub(super) fn sync_single(&self) -> Result<(), Poisoned> {
        // Acquire: pairs with the Release store that ends a scan in `scan_single`.
        if self.replicas[0].scan.arrived.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.wait_for_scan_single()
    }

    /// Waits until the scan that `sync_single` saw running (or a later one) ended.
    ///
    /// Why it suffices: a read that must see a scan `s` whole (an earlier read saw part of it)
    /// sees every store `s` made before its writes to the structure, and the end of every scan
    /// before `s` (each precedes the next through the logs' locks): it read `arrived` set by `s`
    /// or later, and reads `done` at `s` or more below. It leaves only on reading, with
    /// Acquire, a store that ends `s` or a later scan: `arrived` back at 0 (read after `s` set
    /// it, so `s`'s reset or a later one) or `done` past the value read first. Why it ends:
    /// `s` ends, and a scan that ended since `done` was read moves it.
    #[cold]
    fn wait_for_scan_single(&self) -> Result<(), Poisoned> {
        let barrier = &self.replicas[0].scan;
        // Acquire: pairs with the Release in `scan_single` (see above).
        let done = barrier.done.load(Ordering::Acquire);
        let mut waiter = Waiter::new();
        // Acquire (both): as above.
        while barrier.arrived.load(Ordering::Acquire) != 0
            && barrier.done.load(Ordering::Acquire) == done
        {
            self.check()?;
            waiter.snooze();
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
    use crate::sync::{AtomicUsize, Ordering};

    /// Two counters, one per log.
    #[derive(Default)]
    struct Counters([AtomicUsize; 2]);

    #[derive(Clone, Copy)]
    struct Add(usize);
    impl LogMapper for Add {
        fn route(&self, _: usize) -> Route {
            Route::Log(self.0)
        }
    }

    impl ConcurrentDispatch for Counters {
        type ReadOperation<'a> = Add;
        type WriteOperation = Add;
        type Response = usize;
        fn dispatch(&self, op: Add) -> usize {
            self.0[op.0].load(Ordering::Relaxed)
        }
        fn dispatch_mut(&self, op: Add) -> usize {
            self.0[op.0].fetch_add(1, Ordering::Relaxed) + 1
        }
    }

    /// The uncontended single-replica write stores nothing to its log's batch scratch: that
    /// line is shared by every writer of the log, so a store per write would pass it between
    /// cores (issue 21: it did, two stores clearing the batch's vectors on every write).
    #[test]
    fn an_uncontended_write_leaves_the_batch_scratch_alone() {
        let cnr = ConcurrentReplicated::builder()
            .logs(2)
            .build(|_| Counters::default())
            .expect("valid configuration");
        let mut h = cnr.register(0).expect("a free slot");
        let area = &cnr.replicas[0].combining[1];
        // SAFETY: this thread is the only one using the object, and it holds no reference
        // into the scratch while it writes through the handle.
        area.batch
            .with_mut(|b| unsafe { (*b).slots.push(usize::MAX) });
        assert_eq!(h.execute_mut(Add(1)), Ok(1));
        // SAFETY: as above.
        let left = area.batch.with_mut(|b| unsafe { (*b).slots.clone() });
        assert_eq!(left, [usize::MAX], "the write touched the batch scratch");
    }
}
