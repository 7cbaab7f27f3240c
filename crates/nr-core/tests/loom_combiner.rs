//! Loom model: flat-combining hand-off within one replica.
//!
//! Checks that no operation is lost or applied twice (responses of a fetch-and-add are exactly
//! 1, 2, 3) whichever thread combines for whom.
//!
//! The commit hook (`Builder::commit_log`): `commit_before_apply_*` check that no write returns,
//! and no replica applies an entry, before the `commit` call that covered it returned; and that
//! `commit` sees each index once, in order, one call at a time.
//!
//! On one replica (no room for more) writes are ordered by the commit log alone (nr-core's
//! `combine_committed`): `commit_before_apply_on_one_replica` covers its hand-off, and
//! `no_read_sees_an_uncommitted_write_on_one_replica` a reader on the writer's replica, which
//! goes on reading while the write is committed and must never see it before the commit.
//!
//! Bounds: `commit_before_apply_*` (2 threads, one write each; 1 or 2 replicas) are pinned to a
//! preemption bound of 3, whatever `LOOM_MAX_PREEMPTIONS` says (about 2 s together): the
//! interleaving where a combiner finds its batch committed by another replica's combiner, and so
//! relies on `committed`'s Release/Acquire alone, needs 3 preemptions (at 2, weakening either to
//! Relaxed survived). `two_threads_hand_off_combining*` (2 threads, 3 writes; 1 or 2 replicas)
//! are exhaustive up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2). `every_op_applied_once_whoever_combines` (3 threads, one
//! write each) is pinned to a preemption bound of 1: at 2, loom's stale re-reads in the spin
//! loops make single paths exceed its branch limit (a liveness artefact of the model).
//! `no_read_sees_an_uncommitted_write_on_one_replica` (2 threads, one write, one read) is
//! pinned to a preemption bound of 3, as `commit_before_apply_*`.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use nr_core::{CommitError, CommitLog, NodeReplicated};

#[path = "common/checked_sum.rs"]
mod checked_sum;
#[path = "common/counter.rs"]
mod counter;

use checked_sum::{CheckedSum, Committed};
use counter::Counter;

/// Two threads, three writes, on replica 0 of an object with `replicas` replicas (1: the
/// combiner applies directly, without the log; 2: the batch goes through the log).
fn hand_off(replicas: usize) {
    loom::model(move || {
        let nr = Arc::new(
            NodeReplicated::builder()
                .replicas(replicas)
                .log_size(4)
                .threads_per_replica(2)
                .build(|_| Counter::default())
                .unwrap(),
        );
        let other = {
            let nr = nr.clone();
            thread::spawn(move || {
                let mut h = nr.register(0).unwrap();
                let a = h.execute_mut(1).unwrap();
                let b = h.execute_mut(1).unwrap();
                assert!(a < b);
                vec![a, b]
            })
        };
        let mut h = nr.register(0).unwrap();
        let mut responses = vec![h.execute_mut(1).unwrap()];
        responses.extend(other.join().unwrap());
        responses.sort_unstable();
        assert_eq!(responses, [1, 2, 3]);
        assert_eq!(h.execute(()).unwrap(), 3);
    });
}

#[test]
fn two_threads_hand_off_combining() {
    hand_off(1);
}

#[test]
fn two_threads_hand_off_combining_through_the_log() {
    hand_off(2);
}

#[test]
fn every_op_applied_once_whoever_combines() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(1);
    builder.check(|| {
        let nr = Arc::new(
            NodeReplicated::builder()
                .replicas(1)
                .log_size(4)
                .threads_per_replica(3)
                .build(|_| Counter::default())
                .unwrap(),
        );
        let others: Vec<_> = (0..2)
            .map(|_| {
                let nr = nr.clone();
                thread::spawn(move || nr.register(0).unwrap().execute_mut(1).unwrap())
            })
            .collect();
        let mut h = nr.register(0).unwrap();
        let mut responses = vec![h.execute_mut(1).unwrap()];
        responses.extend(others.into_iter().map(|t| t.join().unwrap()));
        responses.sort_unstable();
        assert_eq!(responses, [1, 2, 3]);
        assert_eq!(h.execute(()).unwrap(), 3);
    });
}

/// What a `CommitLog` has made durable: plain (non-atomic) cells, written inside `commit` and
/// read by the replicas that apply a write and by its writer after it returned. Loom reports a
/// causality violation (a data race) unless nr-core's own synchronization orders each read
/// after the write: the commit before every apply and return, and one commit call after the
/// other (the commit turn; `next` is read and written by every call).
#[derive(Default)]
struct Durable {
    committed: [UnsafeCell<bool>; 3],
    next: UnsafeCell<u64>,
}

// SAFETY: the cells are only accessed as the model's assertions describe, and loom checks each
// access for races; that check is the point of the model.
unsafe impl Sync for Durable {}

impl Committed for Durable {
    fn is_committed(&self, v: u64) -> bool {
        // SAFETY: loom checks that this read is ordered after the write in `commit`.
        self.committed[v as usize].with(|p| unsafe { *p })
    }
}

impl CommitLog<u64> for Durable {
    fn commit(&self, first: u64, ops: &[&u64]) -> Result<(), CommitError> {
        // SAFETY: loom checks that commit calls never overlap (the commit turn).
        self.next.with_mut(|next| unsafe {
            assert_eq!(first, *next, "an index skipped or repeated");
            *next = first + ops.len() as u64;
        });
        for &&v in ops {
            // SAFETY: each write is committed once, before anything reads its cell (checked).
            self.committed[v as usize].with_mut(|p| unsafe { *p = true });
        }
        Ok(())
    }
}

/// A `CheckedSum` on `replicas` replicas (2 threads each, a 4-entry log) whose commit log is
/// the returned `Durable`. A std `Arc` for the log: the type `Builder::commit_log` takes (only
/// its count is shared, which orders nothing the models check).
type CommittedSum = (
    Arc<NodeReplicated<CheckedSum<Durable>>>,
    std::sync::Arc<Durable>,
);

fn committed_sum(replicas: usize) -> CommittedSum {
    let log = std::sync::Arc::new(Durable::default());
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .log_size(4)
        .threads_per_replica(2)
        .commit_log(log.clone())
        .build(|_| CheckedSum {
            sum: 0,
            log: log.clone(),
        })
        .unwrap();
    (Arc::new(nr), log)
}

/// Two threads on replicas 0 and `replicas - 1` write 1 and 2; each checks that its write was
/// committed when it returns, the replicas check every apply, and the hook checks order and
/// exclusion. Then both replicas show both writes.
fn commit_before_apply(replicas: usize) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let (nr, log) = committed_sum(replicas);
        let other = {
            let (nr, log) = (nr.clone(), log.clone());
            thread::spawn(move || {
                let mut h = nr.register(replicas - 1).unwrap();
                h.execute_mut(2).unwrap();
                assert!(log.is_committed(2), "write 2 returned before its commit");
            })
        };
        let mut h = nr.register(0).unwrap();
        h.execute_mut(1).unwrap();
        assert!(log.is_committed(1), "write 1 returned before its commit");
        other.join().unwrap();
        assert_eq!(h.execute(()).unwrap(), 3);
        assert_eq!(
            nr.with_replica_state(replicas - 1, |c, n| (c.sum, n))
                .unwrap(),
            (3, 2)
        );
    });
}

#[test]
fn commit_before_apply_on_two_replicas() {
    commit_before_apply(2);
}

#[test]
fn commit_before_apply_on_one_replica() {
    commit_before_apply(1);
}

/// One replica with a commit log: the writer commits write 1 while a reader on the same replica
/// reads. The reader either sees the state before the write, or sees the write, and then its
/// commit must have returned before (loom checks the read of the commit cell for a race). The
/// writer checks its own answer, the replica every apply (`CheckedSum`). Fails if the
/// combiner applies before it commits (`write 1 applied before its commit returned`), or lets
/// the reader in while it applies.
#[test]
fn no_read_sees_an_uncommitted_write_on_one_replica() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let (nr, log) = committed_sum(1);
        let mut h = nr.register(0).unwrap();
        // A second slot, ever registered: the writer's combiner then leaves the writer side
        // to the apply, as with several threads (alone, it takes it with the lock).
        drop(nr.register(0).unwrap());
        let reader = {
            let (nr, log) = (nr.clone(), log.clone());
            thread::spawn(move || {
                let mut h = nr.register(0).unwrap();
                if h.execute(()).unwrap() == 1 {
                    assert!(log.is_committed(1), "a read saw write 1 before its commit");
                }
            })
        };
        h.execute_mut(1).unwrap();
        assert!(log.is_committed(1), "write 1 returned before its commit");
        reader.join().unwrap();
        assert_eq!(nr.with_replica_state(0, |c, n| (c.sum, n)).unwrap(), (1, 1));
    });
}
