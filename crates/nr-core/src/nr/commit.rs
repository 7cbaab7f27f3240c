//! The commit hook (`Builder::commit_log`): write operations are made durable, in log order and
//! in groups, before any replica applies them and before their writers return.
//!
//! With a commit log and several replicas (or room for more) every write goes through the
//! shared log, so that every write has a log index (one replica alone: see "One replica"
//! below). After a combiner has written its batch `start..end` into the log, it calls
//! `commit_through(end)`:
//!
//! 1. if `committed >= end`, another combiner's commit already covered the batch: done;
//! 2. otherwise it takes the *commit turn* (one flag; others wait for it or for `committed`),
//!    waits until the entries `committed..end` are filled (their combiners write them without
//!    blocking), takes every further filled entry after them (other replicas' batches), and
//!    calls `CommitLog::commit` once for all of them (group commit);
//! 3. it stores the new `committed` (Release) and gives the turn back.
//!
//! Only then does the combiner replay and apply: **no replica applies an index at or above
//! `committed`**. `replay` enforces it on its own as well (it stops at, or waits for,
//! `committed`, as it does for unfilled entries); the other replays stop at `completed_tail`,
//! which a combiner raises only after its batch is committed. A writer gets its response only
//! after its combiner applied the batch, so after its entry's index was below `committed`;
//! readers see only applied entries, so never an uncommitted write.
//!
//! An `Err` from `commit`, or a panic in it, poisons the object (the turn is given back in both
//! cases): every combiner waiting for the turn or for `committed` sees the poisoning and returns
//! [`Poisoned`], and no replica applies the entries.
//!
//! # One replica
//!
//! An object with one replica and no room for more (no [`Builder::max_replicas`] above 1, so
//! no replica can be added and none goes dormant) has nothing to replicate, and its commit log
//! alone orders the writes: the shared log, its replay and its completed tail are not used
//! (`combine_committed`). The combiner, holding the combiner lock but not the writer side (so
//! readers go on against the state before the batch), collects its batch (its own operation
//! first, then the posted ones in slot order), numbers it from `committed` (the same index
//! sequence: from 0, every write but those answered as reads), calls `CommitLog::commit` once
//! for it, advances `committed`, and only then takes the writer side, applies the batch in
//! that order and answers. Every promise above holds: commit before apply and before answer
//! (readers see the replica only outside the writer side, after the apply), `Err` or panic
//! poisons (nothing of the batch is applied), one call at a time in index order (the combiner
//! lock serializes them). `writes_as_reads`, `min_batch` and dedicated combiners work as with
//! the log-free single-replica path. `with_replica_state` reports `committed` as the applied
//! count: under the combiner lock every committed write is applied.
//!
//! A combiner checks for poisoning again once it holds the combiner lock (or, on the log path,
//! the commit turn): a holder that failed poisons and unlocks with its batch's posted
//! operations still in their slots, and serving them would call `commit` after its `Err` (or
//! commit them a second time, after a panicking apply). The commit runs under a guard that
//! poisons on a panic even in a combiner that locked while its thread was already unwinding.
//! The writer side is never taken with the lock on this path, not even by a replica's only
//! thread, so a thread that registers during a commit reads meanwhile.
//!
//! [`Builder::max_replicas`]: crate::Builder::max_replicas

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::{CombinerGuard, NodeReplicated};
use crate::log::NO_REPLICA;
use crate::replica::Replica;
use crate::sync::{panicking, AtomicBool, AtomicUsize, Entered, Ordering};
use crate::wait::Waiter;
use crate::{CommitError, Dispatch, Poisoned};

/// Makes write operations durable before any replica applies them and before their writers
/// return ([`Builder::commit_log`](crate::Builder::commit_log)).
///
/// # Examples
///
/// A commit log that keeps the entries in memory (a real one writes them to a file or to
/// persistent memory, and syncs once per call):
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use nr_core::{CommitError, CommitLog, Dispatch, NodeReplicated};
///
/// #[derive(Default)]
/// struct Counter(u64);
/// impl Dispatch for Counter {
///     type ReadOperation<'a> = ();
///     type WriteOperation = u64;
///     type Response = u64;
///     fn dispatch(&self, _: ()) -> u64 { self.0 }
///     fn dispatch_mut(&mut self, add: u64) -> u64 { self.0 += add; self.0 }
/// }
///
/// #[derive(Default)]
/// struct Memory(Mutex<Vec<u64>>);
/// impl CommitLog<u64> for Memory {
///     fn commit(&self, first: u64, ops: &[&u64]) -> Result<(), CommitError> {
///         let mut log = self.0.lock().map_err(|_| CommitError::new("log lock poisoned"))?;
///         assert_eq!(first, log.len() as u64, "in order, each index once");
///         log.extend(ops.iter().copied());
///         Ok(())
///     }
/// }
///
/// let log = Arc::new(Memory::default());
/// let nr = NodeReplicated::builder()
///     .replicas(2)
///     .commit_log(log.clone())
///     .build(|_| Counter::default())?;
/// let mut h = nr.register(0)?;
/// h.execute_mut(5)?;
/// h.execute_mut(2)?;
/// assert_eq!(*log.0.lock().unwrap(), [5, 2]);
/// // A snapshot of replica 1 and the number of log entries it holds.
/// assert_eq!(nr.with_replica_state(1, |c, applied| (c.0, applied))?, (7, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait CommitLog<Op>: Send + Sync {
    /// Makes the log entries at indexes `first .. first + ops.len()` durable, with one
    /// durability action (group commit). nr-core calls it in log order, from one thread at a
    /// time, with every index exactly once (indexes start at 0 when the object is built and
    /// count every write that goes through the log: every write, except one that
    /// `Builder::writes_as_reads` answered as a read, which changed nothing). `ops` is never
    /// empty.
    ///
    /// An `Err` poisons the object: no replica applies these entries, and every writer waiting
    /// on them, and every later call, gets [`Poisoned`]. A panic does the same (and propagates
    /// on the thread that called `commit`). `commit` must not call back into the object.
    ///
    /// # Errors
    ///
    /// [`CommitError`], wrapping whatever kept the entries from being made durable.
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{CommitError, CommitLog};
    ///
    /// struct Refuse;
    /// impl CommitLog<u64> for Refuse {
    ///     fn commit(&self, _first: u64, _ops: &[&u64]) -> Result<(), CommitError> {
    ///         Err(CommitError::new("read-only medium"))
    ///     }
    /// }
    /// assert!(Refuse.commit(0, &[&1]).is_err());
    /// ```
    fn commit(&self, first: u64, ops: &[&Op]) -> Result<(), CommitError>;
}

/// The longest batch `commit_turn` hands to `CommitLog::commit` from an array on its stack
/// (longer ones are collected into a `Vec`).
const INLINE_OPS: usize = 32;

/// Calls `log.commit(first, ops)` with `ops = [op(0), .., op(n - 1)]`: from an array on the
/// stack for up to `INLINE_OPS` operations (the common case: no allocation per commit), from a
/// `Vec` for more, without any array for one (a write alone, nobody else's entry ready).
/// `n > 0`.
fn commit_batch<'a, W: 'a>(
    log: &dyn CommitLog<W>,
    first: usize,
    n: usize,
    op: impl Fn(usize) -> &'a W,
) -> Result<(), CommitError> {
    debug_assert!(n > 0, "an empty commit");
    if n == 1 {
        log.commit(first as u64, std::slice::from_ref(&op(0)))
    } else if n <= INLINE_OPS {
        let mut ops = [op(0); INLINE_OPS];
        for (k, slot) in ops.iter_mut().enumerate().take(n).skip(1) {
            *slot = op(k);
        }
        log.commit(first as u64, &ops[..n])
    } else {
        let ops: Vec<&W> = (0..n).map(op).collect();
        log.commit(first as u64, &ops)
    }
}

/// The commit state of an object built with a commit log (module docs).
pub(super) struct Commit<W> {
    log: Arc<dyn CommitLog<W>>,
    /// Every log index below it is durable (`CommitLog::commit` returned `Ok` for it); no
    /// replica applies an index at or above it. Written only by the holder of `turn` (with one
    /// replica, by the holder of its combiner lock, in `combine_committed`).
    committed: CachePadded<AtomicUsize>,
    /// The commit turn: set while one thread commits.
    turn: CachePadded<AtomicBool>,
}

impl<W> Commit<W> {
    pub(super) fn new(log: Arc<dyn CommitLog<W>>) -> Self {
        Self {
            log,
            committed: CachePadded::new(AtomicUsize::new(0)),
            turn: CachePadded::new(AtomicBool::new(false)),
        }
    }

    /// The first index that is not durable yet.
    #[inline]
    pub(super) fn committed(&self) -> usize {
        // Acquire: pairs with the Release store in `commit_through`, so that the `commit` call
        // that covered the indices below the value read returned before whatever the caller
        // does with them (apply them, answer their writers).
        self.committed.load(Ordering::Acquire)
    }
}

/// Holds the commit turn; giving it back while a panic unwinds (a panic in `commit`) poisons
/// the object.
struct Turn<'a, D: Dispatch + Send + Sync> {
    nr: &'a NodeReplicated<D>,
    turn: &'a AtomicBool,
}

impl<D: Dispatch + Send + Sync> Drop for Turn<'_, D> {
    fn drop(&mut self) {
        if panicking() {
            self.nr.poison();
        }
        // Release: pairs with the Acquire CAS of the next holder, which then reads the
        // `committed` we stored (Relaxed) and continues from there.
        self.turn.store(false, Ordering::Release);
    }
}

/// Poisons the object if dropped while a panic unwinds; forgotten on the normal path. Held
/// across `commit` on the one-replica path, whose caller's `CombinerGuard` does not poison when
/// the thread was already unwinding as it took the lock (a write from a `Drop`).
struct PoisonOnUnwind<'a, D: Dispatch + Send + Sync>(&'a NodeReplicated<D>);

impl<D: Dispatch + Send + Sync> Drop for PoisonOnUnwind<'_, D> {
    fn drop(&mut self) {
        if panicking() {
            self.0.poison();
        }
    }
}

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync,
{
    /// Makes every log index below `end` durable (module docs, steps 1-3). The caller is a
    /// combiner that holds its replica's combiner lock and has written its batch, which ends
    /// at `end`, into the log. It holds the writer side too when it is its replica's only
    /// registered thread (`execute_mut`'s fast path takes both in one CAS; no reader of that
    /// replica is waiting then, and one that registers meanwhile waits for this one write);
    /// otherwise not, and the replica's readers go on while `commit` runs.
    #[cold]
    pub(super) fn commit_through(
        &self,
        commit: &Commit<D::WriteOperation>,
        end: usize,
    ) -> Result<(), Poisoned> {
        let mut waiter = Waiter::new();
        loop {
            if commit.committed() >= end {
                return Ok(());
            }
            self.check()?;
            // Acquire: pairs with the Release store in `Turn::drop`, so the previous holder's
            // store of `committed` is seen below.
            if !commit.turn.load(Ordering::Relaxed)
                && commit
                    .turn
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                let _turn = Turn {
                    nr: self,
                    turn: &commit.turn,
                };
                // The holder before us may have failed (`Err` or panic), poisoned and given the
                // turn back after our `check`: commit nothing after it. Relaxed: the turn's
                // Acquire CAS read its Release store in `Turn::drop`, which follows `poison`.
                if self.poisoned_under_lock() {
                    return Err(Poisoned);
                }
                self.commit_turn(commit, end)?;
                continue;
            }
            waiter.snooze();
        }
    }

    /// A `CommitLog::commit` call returned `Err`: poisons the object (module docs) and gives
    /// the `Poisoned` its caller returns.
    #[cold]
    fn commit_failed(&self) -> Poisoned {
        self.poison();
        Poisoned
    }

    /// The turn holder's commit: every filled entry from `committed`, at least up to `end`.
    fn commit_turn(&self, commit: &Commit<D::WriteOperation>, end: usize) -> Result<(), Poisoned> {
        // Relaxed: only the turn holder stores `committed`, and the turn's Acquire CAS ordered
        // the previous holder's store before this load.
        let from = commit.committed.load(Ordering::Relaxed);
        if from >= end {
            return Ok(());
        }
        let mut upto = from;
        while upto < end {
            if !self.log.is_filled(upto) {
                self.wait_filled(upto)?;
            }
            upto += 1;
        }
        // Group commit: take along every entry already filled after ours (other replicas'
        // batches), so that their combiners find them committed.
        let tail = self.log.reserved_tail();
        while upto < tail && self.log.is_filled(upto) {
            upto += 1;
        }
        // SAFETY: each index in `from..upto` was seen filled above; we hold our replica's
        // combiner lock (the caller's contract), and its local tail is at most `committed` =
        // `from` (no replica applies an index at or above `committed`, and it cannot move while
        // we hold that lock), so `head <= from` and no entry in `from..upto` is reused until
        // the references, which live only in this function, are dropped before we return and
        // give the lock back.
        let op = |idx: usize| unsafe { self.log.get(idx) };
        let result = commit_batch(&*commit.log, from, upto - from, |k| op(from + k));
        if result.is_err() {
            return Err(self.commit_failed());
        }
        // Release: pairs with the Acquire in `Commit::committed` (the combiners that find their
        // batch committed, and the replay gate).
        commit.committed.store(upto, Ordering::Release);
        Ok(())
    }

    /// The combiner's work with one replica (no room for more) and a commit log: writes are
    /// ordered by the commit log alone, without nr-core's shared log (module docs, "One
    /// replica"). Serves the operations posted in the slots, plus `own` (the combiner's
    /// operation, if it did not post it, first); returns the response to `own`.
    ///
    /// The caller holds `replica`'s combiner lock, not its writer side: readers go on against
    /// the old state while `commit` runs; the writer side is taken only for the apply.
    pub(super) fn combine_committed(
        &self,
        commit: &Commit<D::WriteOperation>,
        replica: &Replica<D>,
        own: Option<D::WriteOperation>,
    ) -> Result<Option<D::Response>, Poisoned> {
        // A holder before us may have poisoned the object (its commit failed or panicked, or
        // an apply panicked) and unlocked after the caller's own check: the slots may still
        // hold operations of its batch, already handed to `commit`. Committing them again, or
        // applying anything, would break `CommitLog`'s index sequence and the poisoning.
        if self.poisoned_under_lock() {
            return Err(Poisoned);
        }
        // SAFETY: the batch scratch is only used under the combiner lock, which the caller holds.
        let batch = replica.batch.with_mut(|p| unsafe { &mut *p });
        // No clones: `commit` borrows the operations where they are (slots and `own`).
        // SAFETY: the caller holds the combiner lock.
        let posted = unsafe { replica.collect(batch, false) };
        let mine = usize::from(own.is_some());
        let n = posted + mine;
        if n == 0 {
            return Ok(None);
        }
        // Relaxed: `committed` is read and written only under this replica's combiner lock
        // here; the lock's Acquire CAS ordered the previous holder's store before this load.
        let first = commit.committed.load(Ordering::Relaxed);
        let (own_op, slots) = (own.as_ref(), &batch.slots);
        let op = |k: usize| match own_op {
            Some(op) if k == 0 => op,
            // SAFETY: we hold the combiner lock and collected `slots` into this batch above; the
            // borrows end with the `commit` call, before `apply_own` below.
            _ => unsafe { replica.posted_op(slots[k - mine]) },
        };
        // A panic in `commit` poisons even when the caller's guard does not (a combiner that
        // took the lock while its thread was already unwinding, as `Turn` does for the log path).
        let unwinding = PoisonOnUnwind(self);
        let outcome = commit_batch(&*commit.log, first, n, op);
        std::mem::forget(unwinding);
        if outcome.is_err() {
            // Nothing of the batch is applied or answered; its writers see the poisoning.
            return Err(self.commit_failed());
        }
        // Relaxed: as the load above (the combiner lock orders it for the next holder and for
        // `with_replica_state`).
        commit.committed.store(first + n, Ordering::Relaxed);
        // Only now, durable, may the batch become visible: take the writer side (waits for the
        // readers inside to leave) and apply, in the order committed.
        replica.lock.lock_writer();
        // SAFETY: we hold the combiner lock and the writer side of the only replica: no reader
        // and no other writer touches `data` until we unlock.
        let data = replica.data.with_mut(|p| unsafe { &mut *p });
        let response = own.map(|op| data.dispatch_mut(op));
        for &slot in &batch.slots {
            // SAFETY: we hold the combiner lock and collected `slot` into this batch above;
            // each slot appears once in it.
            unsafe { replica.apply_own(data, slot) };
        }
        replica.respond(&batch.slots);
        Ok(response)
    }

    /// Runs `f` on replica `r`'s state and the number of log entries that state has applied
    /// (with a commit log, `f` sees the state after the writes at indexes `0 .. applied`, and
    /// `CommitLog::commit` has returned for all of them). Used to take a snapshot at a log
    /// position.
    ///
    /// First brings the replica up to every write that has completed. Then `f` runs while this
    /// call holds replica `r`'s combiner lock (not its writer side): reads on `r` go on, writes
    /// from `r`'s threads wait until `f` returns, other replicas go on (until the log fills up
    /// with entries `r` has not applied). An object with one replica and no commit log does not
    /// use the log, and reports 0 entries.
    ///
    /// A panic in `f` propagates and does not poison the object (`f` only reads). `f` must not
    /// wait for other threads' writes to this object: they may need this replica.
    ///
    /// A dormant replica ([`Builder::dormant_replicas`](crate::Builder::dormant_replicas)) does
    /// not follow the log; `f` then runs on a live replica's state instead (every replica
    /// holds the same writes), with that replica's count.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if the object is poisoned.
    ///
    /// # Panics
    ///
    /// If `r` is not below [`replicas`](Self::replicas), or is retired
    /// ([`remove_replica`](Self::remove_replica)). In debug builds, if called from user
    /// code running inside an operation of this object (`f` must not call back into it
    /// either).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default, Clone)] struct S(Vec<u64>);
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = usize;
    /// #     fn dispatch(&self, _: ()) -> usize { self.0.len() }
    /// #     fn dispatch_mut(&mut self, v: u64) -> usize { self.0.push(v); self.0.len() }
    /// # }
    /// let nr = NodeReplicated::builder().replicas(2).build(|_| S::default())?;
    /// let mut h = nr.register(0)?;
    /// h.execute_mut(4)?;
    /// h.execute_mut(9)?;
    /// // Replica 1 has applied nothing yet; the call catches it up first.
    /// let (copy, applied) = nr.with_replica_state(1, |s, applied| (s.clone(), applied))?;
    /// assert_eq!((copy.0, applied), (vec![4, 9], 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_replica_state<R>(
        &self,
        r: usize,
        f: impl FnOnce(&D, u64) -> R,
    ) -> Result<R, Poisoned> {
        assert!(
            r < self.replicas(),
            "no replica {r} (there are {})",
            self.replicas()
        );
        assert!(!self.replicas[r].is_retired(), "replica {r} is retired");
        self.with_state_locked(r, |data, applied| f(data, applied as u64))
    }

    /// `with_replica_state`'s work, for it and `add_replica`: brings replica `r` up to
    /// `completed_tail` and runs `f` on its state and its local tail, under its combiner lock.
    pub(crate) fn with_state_locked<R>(
        &self,
        r: usize,
        f: impl FnOnce(&D, usize) -> R,
    ) -> Result<R, Poisoned> {
        let _entered = Entered::new(self as *const Self as usize);
        let mut r = r;
        let mut waiter = Waiter::new();
        let (replica, mut combiner) = loop {
            self.check()?;
            let replica = &self.replicas[r];
            if replica.try_lock_combiner(false) {
                let combiner = CombinerGuard::new(self, replica);
                if self.poisoned_under_lock() {
                    return Err(Poisoned);
                }
                let out_of_log = !self.single() && self.log.local_tail(r) == NO_REPLICA;
                if !out_of_log {
                    break (replica, combiner);
                }
                // Out of the log (dormant, `dormancy.rs`, or retired meanwhile): its state is
                // stale. A live replica holds the same writes; ask one (there is always one).
                combiner.release();
                r = (0..self.replicas.len())
                    .find(|&q| self.log.local_tail(q) != NO_REPLICA)
                    .unwrap_or(r);
            }
            waiter.snooze();
        };
        let applied = if self.single() {
            // Without a shared log: the writes committed so far, all applied (each combiner
            // commits and applies under the combiner lock we hold). Relaxed: as in
            // `combine_committed`. No commit log: nothing counts writes, 0.
            match &self.commit {
                Some(commit) => commit.committed.load(Ordering::Relaxed),
                None => 0,
            }
        } else {
            let completed = self.log.completed_tail();
            if self.log.local_tail(r) < completed {
                replica.lock.lock_writer();
                // Only up to `completed_tail` (see `catch_up`); every index below it is filled
                // (and committed), so this does not wait.
                self.replay(r, completed, false)?;
                // SAFETY: we hold `r`'s combiner lock, and the replica now shows only entries
                // below `completed_tail`.
                unsafe { replica.lock.unlock_writer() };
            }
            self.log.local_tail(r)
        };
        // From here on only `f` runs, which reads: a panic in it leaves the replica as it was,
        // so it must not poison (`panicking_before` makes the guard skip poisoning).
        combiner.panicking_before = true;
        // SAFETY: we hold `r`'s combiner lock, and every change to a replica's state is made
        // under its combiner lock, so nothing changes `data` until `combiner` drops; readers
        // only take shared references (`D: Sync`).
        let data = replica.data.with(|p| unsafe { &*p });
        Ok(f(data, applied))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The values written, in the order applied; writing `PANICS` panics (a user panic).
    #[derive(Default)]
    struct Seen(Vec<u64>);

    const PANICS: u64 = u64::MAX;

    impl Dispatch for Seen {
        type ReadOperation<'a> = ();
        type WriteOperation = u64;
        type Response = usize;

        fn dispatch(&self, _: ()) -> usize {
            self.0.len()
        }

        fn dispatch_mut(&mut self, v: u64) -> usize {
            assert_ne!(v, PANICS, "user panic");
            self.0.push(v);
            self.0.len()
        }
    }

    struct Accept;

    impl CommitLog<u64> for Accept {
        fn commit(&self, _first: u64, _ops: &[&u64]) -> Result<(), CommitError> {
            Ok(())
        }
    }

    /// Records each `commit` call: its first index and its operations.
    #[derive(Default)]
    #[allow(
        clippy::disallowed_types,
        reason = "a test-only recorder; this module is never built under loom"
    )]
    struct Record(std::sync::Mutex<Vec<(u64, Vec<u64>)>>);

    impl CommitLog<u64> for Record {
        fn commit(&self, first: u64, ops: &[&u64]) -> Result<(), CommitError> {
            let ops = ops.iter().map(|&&op| op).collect();
            self.0.lock().expect("not poisoned").push((first, ops));
            Ok(())
        }
    }

    /// `n` entries (values `100..100 + n`) written to the log as one combiner would, then
    /// committed by replica 0's combiner: one `commit` call with every entry, in order.
    fn commit_written(n: usize) -> Vec<(u64, Vec<u64>)> {
        let record = Arc::new(Record::default());
        let nr = NodeReplicated::<Seen>::builder()
            .replicas(2)
            .commit_log(Arc::clone(&record) as Arc<dyn CommitLog<u64>>)
            .build(|_| Seen::default())
            .expect("build");
        let start = nr.log.try_reserve(n).expect("room");
        for k in 0..n {
            // SAFETY: reserved just above by this thread, each index written once.
            let previous = unsafe { nr.log.write(start + k, 100 + k as u64) };
            assert!(previous.is_none());
        }
        let replica = &nr.replicas[0];
        assert!(replica.try_lock_combiner(false));
        let commit = nr.commit.as_ref().expect("a commit log");
        nr.commit_through(commit, start + n).expect("not poisoned");
        assert_eq!(commit.committed(), start + n);
        // SAFETY: taken just above.
        unsafe { replica.unlock_combiner() };
        let calls = record.0.lock().expect("not poisoned").clone();
        calls
    }

    /// The batch handed to `commit` from the stack (up to `INLINE_OPS` entries) and from a
    /// `Vec` (longer): each entry once, in log order, in one call. Fails if the stack path
    /// hands over a wrong length or repeats its first entry, or if the boundary is off.
    #[test]
    fn commit_gets_the_whole_batch_in_one_call() {
        for n in [
            1,
            2,
            INLINE_OPS - 1,
            INLINE_OPS,
            INLINE_OPS + 1,
            3 * INLINE_OPS,
        ] {
            let expected: Vec<u64> = (0..n as u64).map(|k| 100 + k).collect();
            assert_eq!(commit_written(n), vec![(0, expected)], "a batch of {n}");
        }
    }

    /// One replica with no room for more orders its writes by the commit log alone: several
    /// threads' writes (posted ones batched with their combiner's) are committed at indexes
    /// 0, 1, 2, ... each once, applied in that order, and `with_replica_state` counts them, while
    /// the shared log stays empty. With room for a second replica the log is used. Fails if the
    /// one-replica commit path is off (the shared log's tail then counts every write).
    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "real threads drive the object; this module is never built under loom"
    )]
    fn one_replica_orders_writes_by_the_commit_log_alone() {
        const THREADS: u64 = 4;
        const WRITES: u64 = 200;
        for places in [1, 2] {
            let record = Arc::new(Record::default());
            let nr = NodeReplicated::<Seen>::builder()
                .replicas(1)
                .max_replicas(places)
                .commit_log(Arc::clone(&record) as Arc<dyn CommitLog<u64>>)
                .build(|_| Seen::default())
                .expect("build");
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let nr = &nr;
                    s.spawn(move || {
                        let mut h = nr.register(0).expect("register");
                        for i in 0..WRITES {
                            h.execute_mut(t * 1000 + i).expect("write");
                        }
                    });
                }
            });
            let calls = record.0.lock().expect("not poisoned").clone();
            let mut order = Vec::new();
            for (first, ops) in calls {
                assert_eq!(first, order.len() as u64, "a gap or a repeat");
                order.extend(ops);
            }
            let n = THREADS * WRITES;
            assert_eq!(order.len() as u64, n);
            let (state, applied) = nr
                .with_replica_state(0, |s, applied| (s.0.clone(), applied))
                .expect("not poisoned");
            assert_eq!((state, applied), (order, n), "applied in commit order");
            let logged = if places == 1 { 0 } else { n as usize };
            assert_eq!(nr.log.tail(), logged, "{places} place(s)");
        }
    }

    /// Records every `commit` call, failed ones too; fails (`Err`, or a panic with `panics`)
    /// its first call.
    #[derive(Default)]
    #[allow(
        clippy::disallowed_types,
        reason = "a test-only recorder; this module is never built under loom"
    )]
    struct FailFirst {
        calls: std::sync::Mutex<Vec<(u64, Vec<u64>)>>,
        panics: bool,
    }

    impl FailFirst {
        fn calls(&self) -> Vec<(u64, Vec<u64>)> {
            self.calls.lock().expect("not poisoned").clone()
        }
    }

    impl CommitLog<u64> for FailFirst {
        fn commit(&self, first: u64, ops: &[&u64]) -> Result<(), CommitError> {
            let n = {
                let mut calls = self.calls.lock().expect("not poisoned");
                calls.push((first, ops.iter().map(|&&op| op).collect()));
                calls.len()
            };
            match (n, self.panics) {
                (1, false) => Err(CommitError::new(std::io::Error::other("medium failed"))),
                (1, true) => panic!("commit exploded"),
                _ => Ok(()),
            }
        }
    }

    /// One replica (no room for more) with `log` and places for four threads.
    fn one_replica<C: CommitLog<u64> + 'static>(log: &Arc<C>) -> NodeReplicated<Seen> {
        NodeReplicated::<Seen>::builder()
            .replicas(1)
            .threads_per_replica(4)
            .commit_log(Arc::clone(log) as Arc<dyn CommitLog<u64>>)
            .build(|_| Seen::default())
            .expect("build")
    }

    /// Three threads A, P, Q on `nr`'s one replica: P posts 1; `holder` (A, holding nothing)
    /// combines and must leave the object poisoned; Q posts 2; then P, whose poison check
    /// passed before the poisoning, takes the lock and serves the posted writes. Returns P's
    /// slot and what serving returned.
    fn serve_after_a_failed_holder(
        nr: &NodeReplicated<Seen>,
        holder: impl FnOnce(&Commit<u64>, &Replica<Seen>),
    ) -> (usize, Result<(), Poisoned>) {
        let replica = &nr.replicas[0];
        let (_a, p, q) = (
            replica.register().expect("room"),
            replica.register().expect("room"),
            replica.register().expect("room"),
        );
        // SAFETY: `p` is registered above and empty.
        unsafe { replica.post(p, 1) };
        holder(nr.commit.as_ref().expect("a commit log"), replica);
        assert!(nr.is_poisoned());
        // SAFETY: `q` is registered above and empty.
        unsafe { replica.post(q, 2) };
        assert!(replica.try_lock_combiner(nr.writer_with_lock()));
        let served = nr.serve_posted_alone(replica);
        // SAFETY: taken just above.
        unsafe { replica.unlock_combiner() };
        (p, served)
    }

    /// A combiner A (own write 100, P's posted write 1) whose commit fails poisons and
    /// unlocks; then P serves the posted writes (`serve_after_a_failed_holder`). Nothing may
    /// be committed again, applied or answered. Fails without the poison check under the lock
    /// in `combine_committed` (commit called a second time at index 0, P's write applied and
    /// answered).
    #[test]
    fn no_commit_or_apply_after_a_failed_commit() {
        let log = Arc::new(FailFirst::default());
        let nr = one_replica(&log);
        let (p, served) = serve_after_a_failed_holder(&nr, |commit, replica| {
            assert!(replica.try_lock_combiner(nr.writer_with_lock()));
            let combined = nr.combine_committed(commit, replica, Some(100));
            // SAFETY: taken just above.
            unsafe { replica.unlock_combiner() };
            assert_eq!(combined, Err(Poisoned));
        });
        let calls = log.calls();
        assert_eq!(calls.len(), 1, "commit called after its Err: {calls:?}");
        let replica = &nr.replicas[0];
        assert!(
            !replica.slot(p).is_done(),
            "a writer of the failed batch was answered"
        );
        assert_eq!(served, Err(Poisoned));
        // SAFETY: no combiner runs; the state is read alone.
        let applied = replica.data.with(|d| unsafe { (*d).0.clone() });
        assert!(
            applied.is_empty(),
            "applied after the poisoning: {applied:?}"
        );
    }

    /// A combiner A commits its batch (own write `PANICS`, P's posted write 1) at 0..2, then
    /// the apply panics: its guard poisons and unlocks; then P serves the posted writes
    /// (`serve_after_a_failed_holder`). Write 1 must not be committed a second time (a durable
    /// log would replay it twice). Fails without the poison check under the lock in
    /// `combine_committed` (a second call commits 1 and 2 at 2..4).
    #[test]
    fn no_second_commit_after_a_panicking_apply() {
        let record = Arc::new(Record::default());
        let nr = one_replica(&record);
        let (_, served) = serve_after_a_failed_holder(&nr, |commit, replica| {
            let combined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                assert!(replica.try_lock_combiner(nr.writer_with_lock()));
                let _guard = CombinerGuard::new_released_on_success(&nr, replica);
                nr.combine_committed(commit, replica, Some(PANICS))
            }));
            assert!(combined.is_err(), "the apply did not panic");
        });
        let calls = record.0.lock().expect("not poisoned").clone();
        assert_eq!(calls, vec![(0, vec![PANICS, 1])], "committed twice");
        assert_eq!(served, Err(Poisoned));
    }

    /// A posted-path combiner (`CombinerGuard::new`) that takes the lock while its thread is
    /// already unwinding (a write from a `Drop`, inside `catch_unwind`), whose `commit`
    /// panics: the object must be poisoned (else the poster waits forever for a batch that
    /// will never be answered). Fails without `PoisonOnUnwind` around `commit`.
    #[test]
    fn a_commit_panic_during_an_unwinding_poisons() {
        struct CombineOnDrop<'a>(&'a NodeReplicated<Seen>);

        impl Drop for CombineOnDrop<'_> {
            fn drop(&mut self) {
                let nr = self.0;
                let replica = &nr.replicas[0];
                let combined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    assert!(replica.try_lock_combiner(nr.writer_with_lock()));
                    let _guard = CombinerGuard::new(nr, replica);
                    nr.serve_posted_alone(replica)
                }));
                assert!(combined.is_err(), "the commit did not panic");
            }
        }

        let log = Arc::new(FailFirst {
            panics: true,
            ..FailFirst::default()
        });
        let nr = one_replica(&log);
        let replica = &nr.replicas[0];
        let p = replica.register().expect("room");
        // SAFETY: `p` is registered above and empty.
        unsafe { replica.post(p, 1) };
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _combine = CombineOnDrop(&nr);
            panic!("unrelated");
        }));
        assert!(unwound.is_err());
        assert_eq!(log.calls(), vec![(0, vec![1])]);
        assert!(nr.is_poisoned(), "a panicking commit did not poison");
    }

    /// Three writes on replica 0 of two; replica 1 has applied none of them.
    fn lagging_replica() -> NodeReplicated<Seen> {
        let nr = NodeReplicated::<Seen>::builder()
            .replicas(2)
            .commit_log(Arc::new(Accept))
            .build(|_| Seen::default())
            .expect("build");
        {
            let mut h = nr.register(0).expect("register");
            for v in [10, 11, 12] {
                h.execute_mut(v).expect("write");
            }
        }
        assert_eq!(nr.log.local_tail(1), 0);
        nr
    }

    /// The replay gate on its own: a replay asked to go past `committed` stops there, even
    /// when its caller's bound (here 3) is beyond it. Emulated by lowering `committed` to 1
    /// after three committed writes. Fails without the gate in `replay` (replica 1 reaches 3).
    #[test]
    fn replay_never_applies_an_index_at_or_past_committed() {
        let nr = lagging_replica();
        let commit = nr.commit.as_ref().expect("a commit log");
        commit.committed.store(1, Ordering::Relaxed);
        let replica = &nr.replicas[1];
        assert!(replica.try_lock_combiner(true));
        nr.replay(1, 3, false).expect("not poisoned");
        assert_eq!(nr.log.local_tail(1), 1, "replayed past committed");
        // SAFETY: taken just above.
        unsafe { replica.unlock_combiner() };
        commit.committed.store(3, Ordering::Relaxed);
    }

    /// `with_replica_state` catches a lagging replica up to every completed write first, and
    /// reports how many entries the state holds. Fails without the catch-up (0 entries).
    #[test]
    fn with_replica_state_catches_up_first() {
        let nr = lagging_replica();
        let got = nr.with_replica_state(1, |s, applied| (s.0.clone(), applied));
        assert_eq!(got, Ok((vec![10, 11, 12], 3)));
        // A panic in `f` does not poison, and gives the lock back.
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            nr.with_replica_state(0, |_, _| panic!("f exploded"))
        }));
        assert!(panicked.is_err());
        assert!(!nr.is_poisoned());
        assert_eq!(nr.with_replica_state(0, |s, n| (s.0.len(), n)), Ok((3, 3)));
    }
}
