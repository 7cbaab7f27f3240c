//! CNR with one replica: nothing to replicate, so no log (as NR's single-replica path).
//!
//! Each log's combiner lock still orders the writes of that log, and flat combining still
//! serves the threads that found it busy; but the combiner applies operations directly from the
//! slots, and a thread that finds the lock free (at once, or within NR's bounded lock retry)
//! applies its own operation without posting it.
//! A scan takes every log's combiner lock, in log order, and runs with all of them held: no other
//! thread ever waits while holding one, so this cannot deadlock. Reads need no wait (no log: the
//! logs' tails stay 0), and see each write once its combiner applied it, which is before the
//! write returns.

use super::replay::LogGuard;
use super::{Combining, ConcurrentDispatch, ConcurrentReplicated};
use crate::error::Poisoned;
use crate::wait::{retry_lock, Waiter};

impl<D: ConcurrentDispatch> ConcurrentReplicated<D> {
    /// A write to log `l` of the only replica, from the owner of slot `slot` of its area.
    pub(super) fn write_single(
        &self,
        l: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let rep = &self.replicas[0];
        let area = &rep.combining[l];
        // A busy lock is retried before posting, as NR's single-replica write does
        // (`wait::retry_lock`): the holder applies one write or a short batch, and a waiter that
        // spins, then yields, takes the lock itself rather than handing its write across cores.
        let guard = LogGuard::try_new(self, area).or_else(|| {
            let mut taken = None;
            retry_lock(|| {
                taken = LogGuard::try_new(self, area);
                taken.is_some()
            });
            taken
        });
        if let Some(guard) = guard {
            // Acquire (in `is_poisoned`): a poisoner released this lock after its store.
            self.check()?;
            let response = rep.data.dispatch_mut(op);
            self.serve_posted(area);
            drop(guard);
            return Ok(response);
        }
        self.post_and_wait(area, slot, op, || {
            self.serve_posted(area);
            Ok(None)
        })
    }

    /// Applies the operations posted to `area` and responds. The caller holds `area`'s lock.
    fn serve_posted(&self, area: &Combining<D>) {
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

    /// A scan on the only replica: runs with every log's combiner lock held.
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
        // Every log's lock is held: no write of any log runs on the replica until we return.
        let response = rep.data.dispatch_mut(op);
        // Hand the logs back with their pending writes served, so none waits for a park.
        for (area, guard) in rep.combining.iter().zip(held) {
            self.serve_posted(area);
            drop(guard);
        }
        Ok(response)
    }
}
