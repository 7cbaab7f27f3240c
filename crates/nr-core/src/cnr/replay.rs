//! CNR's algorithms: the per-log combiner, replay, the scan barrier, reads (see the module docs
//! of `cnr`).

use super::{
    Combining, ConcurrentDispatch, ConcurrentReplicated, Entry, LogMapper, Route, ScanEntry,
};
use crate::error::Poisoned;
use crate::log::LogFull;
use crate::sync::{panicking, Ordering};
use crate::wait::Waiter;

/// Holds one log's combiner lock on one replica; dropping it while a panic that started during
/// the hold unwinds poisons the object (as `std::sync::Mutex`).
pub(super) struct LogGuard<'a, D: ConcurrentDispatch> {
    cnr: &'a ConcurrentReplicated<D>,
    lock: &'a Combining<D>,
    panicking: bool,
}

impl<'a, D: ConcurrentDispatch> LogGuard<'a, D> {
    /// Tries to take `lock`; `None` if another thread holds it.
    #[inline]
    pub(super) fn try_new(
        cnr: &'a ConcurrentReplicated<D>,
        lock: &'a Combining<D>,
    ) -> Option<Self> {
        Self::try_lock(cnr, lock, panicking)
    }

    /// `try_new` for a caller that ends every successful path with [`release`](Self::release),
    /// so that the guard is dropped only by a panic unwinding out of the hold or on an
    /// `Err(Poisoned)` return: it skips `try_new`'s `panicking()` query (a call into std on
    /// every uncontended write), as NR's `CombinerGuard::new_released_on_success` does, with the
    /// same one difference: a panic in user code that starts while the thread was already
    /// unwinding (only a `catch_unwind` inside a `Drop` survives it) poisons here.
    #[inline]
    pub(super) fn try_new_released_on_success(
        cnr: &'a ConcurrentReplicated<D>,
        lock: &'a Combining<D>,
    ) -> Option<Self> {
        Self::try_lock(cnr, lock, || false)
    }

    /// The guard of `lock` if the lock was free; `panicking_before` runs only then.
    #[inline]
    fn try_lock(
        cnr: &'a ConcurrentReplicated<D>,
        lock: &'a Combining<D>,
        panicking_before: impl FnOnce() -> bool,
    ) -> Option<Self> {
        // `then`, never `then_some`: a guard made eagerly would unlock another holder's lock
        // when dropped.
        lock.try_lock_combiner(false).then(|| Self {
            cnr,
            lock,
            panicking: panicking_before(),
        })
    }

    /// Unlocks on the normal path, without asking whether the thread is panicking.
    #[inline]
    pub(super) fn release(self) {
        // SAFETY: the guard exists only while its `try_lock_combiner` succeeded and was not
        // unlocked; this consumes it without running `drop`, so it is unlocked exactly once.
        unsafe { self.lock.unlock_combiner() };
        std::mem::forget(self);
    }
}

impl<D: ConcurrentDispatch> Drop for LogGuard<'_, D> {
    fn drop(&mut self) {
        if !self.panicking && panicking() {
            self.cnr.poison();
        }
        // SAFETY: the guard exists only while its `try_lock_combiner` succeeded and was not
        // unlocked (only here or in `release`, which does not run this).
        unsafe { self.lock.unlock_combiner() };
    }
}

/// What [`ConcurrentReplicated::combine`] did.
enum Combined<W, R> {
    /// The batch is applied; the response to the caller's own write, if it brought one.
    Done(Option<R>),
    /// The log was full: the batch is given back, and the caller's own write with it.
    Full(Option<W>),
}

impl<D: ConcurrentDispatch> ConcurrentReplicated<D> {
    /// A write from the owner of `slots[l]` of replica `r`'s combining area of each log `l`.
    ///
    /// The routing is inlined into the caller; the single-replica write (`write_single`) is
    /// too, and the several-replica one is a call.
    #[inline(always)]
    pub(super) fn write(
        &self,
        r: usize,
        slots: &[usize],
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let logs = self.logs.len();
        let l = match op.route(logs) {
            // Most mappers already return an index below `logs`: no division for them.
            Route::Log(l) if l < logs => l,
            Route::Log(l) => l % logs,
            Route::Scan => return self.scan_any(r, op),
        };
        if self.replicas.len() == 1 {
            // No early poison check: `write_single` checks under the lock, and before posting.
            return self.write_single(l, slots[l], op);
        }
        self.write_replicated(r, l, slots[l], op)
    }

    /// A write routed to every log, from replica `r`.
    #[cold]
    #[inline(never)]
    fn scan_any(&self, r: usize, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.check()?;
        if self.replicas.len() == 1 {
            self.scan_single(op)
        } else {
            self.scan(r, op)
        }
    }

    /// A write to log `l` from the owner of slot `slot` of replica `r`'s combining area of `l`,
    /// with several replicas.
    #[inline(never)]
    fn write_replicated(
        &self,
        r: usize,
        l: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        self.check()?;
        let area = &self.replicas[r].combining[l];
        // A thread that finds the lock free combines at once, its own write included without
        // posting it (no slot hand-off, no wake-up fence for it).
        let op = match LogGuard::try_new_released_on_success(self, area) {
            None => op,
            Some(guard) => {
                // Acquire (in `is_poisoned`): a poisoner released this lock after its store.
                self.check()?;
                match self.combine_own(r, l, op)? {
                    Combined::Done(response) => {
                        guard.release();
                        return Ok(response.expect("invariant: our own write was applied"));
                    }
                    Combined::Full(op) => {
                        guard.release();
                        self.help_laggards(l)?;
                        op.expect("invariant: a full log gives our write back")
                    }
                }
            }
        };
        self.post_and_wait(area, slot, op, || {
            Ok(match self.combine(r, l, None)? {
                Combined::Full(_) => Some(l),
                Combined::Done(_) => None,
            })
        })
    }

    /// Posts `op` in slot `slot` of `area` (the caller owns it) and waits for its response,
    /// running `combine` under `area`'s lock whenever it is free. `combine` returns the log to
    /// help (`help_laggards`) when it found that log full.
    pub(super) fn post_and_wait(
        &self,
        area: &Combining<D>,
        slot: usize,
        op: D::WriteOperation,
        mut combine: impl FnMut() -> Result<Option<usize>, Poisoned>,
    ) -> Result<D::Response, Poisoned> {
        // SAFETY: the handle owns `slot` in every combining area of its replica and takes its
        // response back before it posts again (below), so the slot is `EMPTY`.
        unsafe { area.post(slot, op) };
        let mut waiter = Waiter::new();
        loop {
            if area.slot(slot).is_done() {
                // SAFETY: our slot, seen `DONE` just above.
                return Ok(unsafe { area.slot(slot).take_response() });
            }
            self.check()?;
            if let Some(guard) = LogGuard::try_new(self, area) {
                // Acquire (in `is_poisoned`): a poisoner released this lock after its store.
                self.check()?;
                let full = combine()?;
                drop(guard);
                if let Some(l) = full {
                    self.help_laggards(l)?;
                    waiter.snooze();
                }
                continue;
            }
            waiter.snooze_or(|micros| area.park_owner(slot, micros));
        }
    }

    /// The combiner of log `l` on replica `r` (the caller holds that lock): collects the posted
    /// writes, and `own` (the caller's write, not posted) after them, appends them, and brings
    /// the replica's local tail of `l` past them. When the log is full, gives the batch back
    /// (and `own`), for the caller to retry after it released the lock and helped the replicas
    /// that hold the log back.
    fn combine(
        &self,
        r: usize,
        l: usize,
        own: Option<D::WriteOperation>,
    ) -> Result<Combined<D::WriteOperation, D::Response>, Poisoned> {
        let rep = &self.replicas[r];
        let area = &rep.combining[l];
        let log = &self.logs[l];
        // SAFETY: the caller holds `area`'s combiner lock, which guards its batch scratch.
        let batch = area.batch.with_mut(|p| unsafe { &mut *p });
        // SAFETY: as above; user `Clone` runs here, before anything is reserved.
        let n = unsafe { area.collect(batch, true) };
        if let Some(op) = &own {
            batch.ops.push(op.clone());
        }
        let total = batch.ops.len();
        if total == 0 {
            return Ok(Combined::Done(None));
        }
        let start = match log.try_reserve(total) {
            Ok(start) => start,
            Err(LogFull) => {
                batch.ops.clear();
                if n > 0 {
                    area.uncollect(n);
                }
                return Ok(Combined::Full(own));
            }
        };
        for (i, op) in batch.ops.drain(..).enumerate() {
            // SAFETY: `start..start + total` was reserved above by this thread, each index
            // written once.
            match unsafe { log.write(start + i, Entry::Op(op)) } {
                Some(Entry::Op(old)) | Some(Entry::Scan(ScanEntry { op: old, .. })) => {
                    batch.evicted.push(old)
                }
                None => {}
            }
        }
        // Before any replay: nothing applies an entry at or past `completed_tail` (module docs).
        log.advance_completed_tail(start + total);
        // User `Drop`, after every reserved entry is written.
        batch.evicted.clear();
        self.replay(r, l, start, Some(&batch.slots))?;
        let response = own.map(|op| {
            let response = rep.data.dispatch_mut(op);
            log.set_local_tail(r, start + total);
            response
        });
        area.respond(&batch.slots);
        Ok(Combined::Done(response))
    }

    /// `combine` for the caller's own write `op` when nothing else is posted to `l`'s area on
    /// `r` (one thread per replica, or an uncontended moment): the same steps for a batch of
    /// one, without the batch scratch (no slot scan, vectors or responses). With posted writes
    /// it is `combine`. The posted count is a snapshot, as in `combine`'s `collect`: a write
    /// posted after it is served by the next combiner, which its owner becomes itself once we
    /// unlock if nobody else does. The caller holds `l`'s combiner lock on `r`.
    #[inline]
    fn combine_own(
        &self,
        r: usize,
        l: usize,
        op: D::WriteOperation,
    ) -> Result<Combined<D::WriteOperation, D::Response>, Poisoned> {
        let rep = &self.replicas[r];
        if rep.combining[l].has_pending() {
            return self.combine(r, l, Some(op));
        }
        let log = &self.logs[l];
        // User `Clone`, before anything is reserved.
        let entry = Entry::Op(op.clone());
        let Ok(start) = log.try_reserve(1) else {
            return Ok(Combined::Full(Some(op)));
        };
        // SAFETY: `start` was reserved above by this thread, and is written once.
        let previous = unsafe { log.write(start, entry) };
        // Before any replay: nothing applies an entry at or past `completed_tail` (module docs).
        log.advance_completed_tail(start + 1);
        // User `Drop`, after our only reserved entry is written.
        drop(previous);
        // Alone on the log, the replica is already there (and `replay` would store its local
        // tail again for nothing).
        if log.local_tail(r) < start {
            self.replay(r, l, start, None)?;
        }
        let response = rep.data.dispatch_mut(op);
        // Release (inside): as in `combine`.
        log.set_local_tail(r, start + 1);
        Ok(Combined::Done(Some(response)))
    }

    /// Applies entries `local_tail(r)..to` of log `l` to replica `r`, then, with `own`, the
    /// caller's batch (whose entries follow `to`) from its slots. The caller holds `l`'s combiner
    /// lock on `r`, and `completed_tail` of `l` is at least `to` (plus the batch).
    fn replay(&self, r: usize, l: usize, to: usize, own: Option<&[usize]>) -> Result<(), Poisoned> {
        let log = &self.logs[l];
        let rep = &self.replicas[r];
        let mut idx = log.local_tail(r);
        while idx < to {
            if !log.is_filled(idx) {
                self.wait_filled(l, idx)?;
            }
            // SAFETY: `is_filled(idx)` was seen, and we hold `l`'s combiner lock on `r` with
            // `local_tail(r) <= idx` for as long as `entry` is used.
            let entry = unsafe { log.get(idx) };
            match entry {
                Entry::Op(op) => drop(rep.data.dispatch_mut(op.clone())),
                Entry::Scan(scan) => {
                    // Acquire: pairs with the Release in `execute_scan`; a scan not run here yet
                    // is the next one (every log passed the earlier ones only once they ran).
                    if scan.seq >= rep.scan.done.load(Ordering::Acquire) {
                        log.set_local_tail(r, idx);
                        self.arrive(r, l, scan)?;
                    }
                }
            }
            idx += 1;
        }
        if let Some(slots) = own {
            let area = &rep.combining[l];
            for &slot in slots {
                // SAFETY: the caller holds `area`'s combiner lock and collected `slot` into the
                // batch it appended; each slot is applied once.
                unsafe { area.apply_own_with(slot, |op| rep.data.dispatch_mut(op)) };
            }
            idx += slots.len();
        }
        // Release (inside): our reads of the entries happen before they are reused.
        log.set_local_tail(r, idx);
        Ok(())
    }

    /// Log `l` of replica `r` reached `scan`'s entry (its local tail is there, the caller holds
    /// its combiner lock): arrives at the replica's barrier, helps the other logs there, and
    /// returns once the scan ran on `r`.
    #[cold]
    fn arrive(
        &self,
        r: usize,
        l: usize,
        scan: &ScanEntry<D::WriteOperation>,
    ) -> Result<(), Poisoned> {
        let rep = &self.replicas[r];
        let n = self.logs.len();
        // Nothing applies an entry at or past `completed_tail` (module docs), and the entries up
        // to the scan's, in every log, are about to be applied here (by helpers, then the scan
        // itself), possibly before the issuer raised these.
        for (log, &pos) in self.logs.iter().zip(scan.positions.iter()) {
            log.advance_completed_tail(pos + 1);
        }
        // AcqRel: the last arriver acquires every other arriver's replay (their Release
        // increments), so the scan sees every entry before it in every log.
        if rep.scan.arrived.fetch_add(1, Ordering::AcqRel) + 1 == n {
            return self.execute_scan(r, scan);
        }
        // Logs we hold at the barrier for their owners, until the scan ran.
        let mut held = Vec::new();
        let mut waiter = Waiter::new();
        loop {
            // Acquire: pairs with the Release in `execute_scan`.
            if rep.scan.done.load(Ordering::Acquire) > scan.seq {
                return Ok(());
            }
            self.check()?;
            for m in 0..n {
                if m == l {
                    continue;
                }
                // A log whose lock is free has not arrived (arrivers hold theirs until the scan
                // ran): bring it.
                if let Some(guard) = LogGuard::try_new(self, &rep.combining[m]) {
                    self.check()?;
                    // ... unless the scan ran meanwhile and an arriver let this log go: an
                    // arrival now would count towards the next scan (found by
                    // `histories_across_logs_and_replicas_with_scans_are_linearizable`, seed 1:
                    // a `Sum` ran with one log short of the barrier). Acquire: our lock CAS read
                    // that arriver's unlock, which follows its load of the new `done`.
                    if rep.scan.done.load(Ordering::Acquire) > scan.seq {
                        return Ok(());
                    }
                    // Only the entries before the scan (earlier scans there already ran).
                    self.replay(r, m, scan.positions[m], None)?;
                    held.push(guard);
                    // AcqRel: as above.
                    if rep.scan.arrived.fetch_add(1, Ordering::AcqRel) + 1 == n {
                        return self.execute_scan(r, scan);
                    }
                }
            }
            waiter.snooze();
        }
    }

    /// Runs `scan` on replica `r`: every log of `r` is held at its copy of the scan's entry,
    /// and every log's `completed_tail` is past it (`arrive`).
    fn execute_scan(&self, r: usize, scan: &ScanEntry<D::WriteOperation>) -> Result<(), Poisoned> {
        let rep = &self.replicas[r];
        // `arrive` raised every log's `completed_tail` past the scan.
        let response = rep.data.dispatch_mut(scan.op.clone());
        if scan.origin == r {
            // SAFETY: only the executor of a scan issued from `r` writes this cell, and the
            // issuer reads it only after seeing `done` pass its scan (the Release below); the
            // next scan issued from `r` is appended only after the issuer took its response
            // (it holds the scan lock until then), so writes and reads never overlap.
            rep.scan
                .response
                .with_mut(|p| unsafe { *p = Some(response) });
        } else {
            drop(response);
        }
        // Relaxed: the next arrivers load `done` (Acquire) after the Release below first.
        rep.scan.arrived.store(0, Ordering::Relaxed);
        // Release: pairs with the Acquire loads of `done` in `replay`, `arrive` and `scan`.
        rep.scan.done.store(scan.seq + 1, Ordering::Release);
        Ok(())
    }

    /// A write routed to every log, from replica `r`.
    #[cold]
    fn scan(&self, r: usize, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        let n = self.logs.len();
        // User `Clone`, before anything is reserved.
        let mut ops: Vec<_> = (1..n).map(|_| op.clone()).collect();
        ops.push(op);
        let mut waiter = Waiter::new();
        // Acquire: pairs with the Release store that unlocks (below), ordering scans.
        while self
            .scan_lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.check()?;
            waiter.snooze();
        }
        let result = self.scan_locked(r, ops);
        // Release: pairs with the Acquire CAS above.
        self.scan_lock.store(false, Ordering::Release);
        result
    }

    fn scan_locked(
        &self,
        r: usize,
        mut ops: Vec<D::WriteOperation>,
    ) -> Result<D::Response, Poisoned> {
        // Relaxed: written only under the scan lock, which orders it.
        let seq = self.next_scan.load(Ordering::Relaxed);
        self.next_scan.store(seq + 1, Ordering::Relaxed);
        let mut positions = Vec::with_capacity(self.logs.len());
        for l in 0..self.logs.len() {
            positions.push(self.reserve_one(l)?);
        }
        let positions: Box<[usize]> = positions.into();
        let mut evicted = Vec::new();
        for (l, log) in self.logs.iter().enumerate().rev() {
            let entry = Entry::Scan(ScanEntry {
                seq,
                origin: r,
                positions: positions.clone(),
                op: ops.pop().expect("invariant: one operation per log"),
            });
            // SAFETY: `positions[l]` was reserved above by this thread, written once.
            evicted.extend(unsafe { log.write(positions[l], entry) });
        }
        for (log, &pos) in self.logs.iter().zip(positions.iter()) {
            log.advance_completed_tail(pos + 1);
        }
        drop(evicted);
        // Run it here: bring our replica's logs to the scan (the barrier does the rest).
        let rep = &self.replicas[r];
        let mut waiter = Waiter::new();
        // Acquire: pairs with the Release in `execute_scan` (the response cell).
        while rep.scan.done.load(Ordering::Acquire) <= seq {
            self.check()?;
            for (l, area) in rep.combining.iter().enumerate() {
                if let Some(_guard) = LogGuard::try_new(self, area) {
                    self.check()?;
                    self.replay(r, l, positions[l] + 1, None)?;
                    break;
                }
            }
            waiter.snooze();
        }
        // SAFETY: `done` passed our scan (Acquire above), whose executor wrote the cell before
        // its Release; see `execute_scan` for why nobody writes it meanwhile.
        let response = rep.scan.response.with_mut(|p| unsafe { (*p).take() });
        Ok(response.expect("invariant: the executor of a scan stores its issuer's response"))
    }

    /// Reserves one entry of log `l`, helping the replicas that hold it back while it is full.
    fn reserve_one(&self, l: usize) -> Result<usize, Poisoned> {
        let mut waiter = Waiter::new();
        loop {
            if let Ok(idx) = self.logs[l].try_reserve(1) {
                return Ok(idx);
            }
            self.check()?;
            self.help_laggards(l)?;
            waiter.snooze();
        }
    }

    /// Brings the replicas whose local tail of log `l` holds its head back up to `l`'s
    /// `completed_tail`. Only ever *tries* their locks: a busy combiner is making progress, and
    /// never blocking rules out lock-order deadlocks. The caller holds no combiner lock.
    #[cold]
    fn help_laggards(&self, l: usize) -> Result<(), Poisoned> {
        let log = &self.logs[l];
        let head = log.advance_head();
        let to = log.completed_tail();
        for (q, rep) in self.replicas.iter().enumerate() {
            if log.local_tail(q) > head {
                continue;
            }
            if let Some(_guard) = LogGuard::try_new(self, &rep.combining[l]) {
                self.check()?;
                self.replay(q, l, to, None)?;
            }
        }
        log.advance_head();
        Ok(())
    }

    /// Waits until entry `idx` of log `l` (reserved by an appender, which never blocks before
    /// writing it) is written.
    #[cold]
    fn wait_filled(&self, l: usize, idx: usize) -> Result<(), Poisoned> {
        let mut waiter = Waiter::new();
        while !self.logs[l].is_filled(idx) {
            self.check()?;
            waiter.snooze();
        }
        Ok(())
    }

    /// A read on replica `r`.
    pub(super) fn read(&self, r: usize, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        self.check()?;
        match op.route(self.logs.len()) {
            // No log with one replica, but a scan may be running there (`single.rs`).
            _ if self.replicas.len() == 1 => self.sync_single()?,
            Route::Log(l) => self.sync_log(r, l % self.logs.len())?,
            Route::Scan => {
                for l in 0..self.logs.len() {
                    self.sync_log(r, l)?;
                }
            }
        }
        Ok(self.replicas[r].data.dispatch(op))
    }

    /// Waits until replica `r` applied every entry of log `l` below its `completed_tail` now
    /// (Algorithm 1, lines 42-46, per log), catching up itself when no combiner is busy.
    #[inline]
    fn sync_log(&self, r: usize, l: usize) -> Result<(), Poisoned> {
        let log = &self.logs[l];
        let to = log.completed_tail();
        if log.local_tail(r) >= to {
            return Ok(());
        }
        self.catch_up(r, l, to)
    }

    #[cold]
    fn catch_up(&self, r: usize, l: usize, to: usize) -> Result<(), Poisoned> {
        let log = &self.logs[l];
        let mut waiter = Waiter::new();
        while log.local_tail(r) < to {
            self.check()?;
            if let Some(_guard) = LogGuard::try_new(self, &self.replicas[r].combining[l]) {
                self.check()?;
                self.replay(r, l, to, None)?;
            } else {
                waiter.snooze();
            }
        }
        Ok(())
    }
}
