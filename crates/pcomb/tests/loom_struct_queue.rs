//! Loom model: what `PBQueue` adds to PBcomb, between its enqueue combiner and its dequeue
//! combiner (Algorithms 5-6 and the recycling ring).
//!
//! The two combiners hold different locks, so nothing but the queue's own words orders them:
//!
//! - **linking / `oldTail`** (Algorithm 5 line 31, Algorithm 6 line 57): an enqueue pass links
//!   its nodes, persists them and its record (psync, line 27), and only then publishes
//!   `oldTail` (Release). A dequeue pass reads `oldTail` (Acquire) and never moves `Head` past
//!   it. Checked: a dequeue that returns a value returns the right one (it never reads an
//!   unlinked or half-written node), and by then the enqueue pass that linked it had done its
//!   psync (the persistence domain counts psyncs; a dequeue that got a value has seen at least
//!   two passes: the enqueue's and its own).
//! - **recycling**: the dequeue pass hands the nodes it removed to the enqueuers' ring only
//!   after its own psync (`Batch::published`). With capacity 1 a second enqueue can only
//!   succeed on the node the dequeue removed; when it does, the psync of that dequeue pass
//!   happened before (three passes counted), and the values are conserved (a drain after the
//!   run finds exactly what was enqueued and not dequeued, in order), and `audit` finds no
//!   node both free and on the list.
//!
//! Mutations these models catch (each applied by hand, seen to fail, and reverted):
//!
//! | mutation | caught by |
//! |---|---|
//! | `Enq::published`'s `oldTail` store `Relaxed` | both linking models: the dequeuer sees the link's `0` (invariant panic in `Deq::apply`) |
//! | `oldTail` published at the end of `Enq::apply`, before the psync | both linking models: a value dequeued with the enqueue's psync missing |
//! | the dequeue ignores `oldTail` (walks while a link is non-zero) | both linking models: a wrong (unwritten) value, or one not yet persisted |
//! | `Deq::apply` pushes removed nodes into the ring (before the psync) | the recycling model: the second enqueue succeeds with the dequeue's psync missing |
//!
//! Every word both combiners share (the node pool, `oldTail`, the ring's slots, `head` and
//! `tail`, the records) is a `crate::sync` atomic, so loom sees all of it; the per-instance pass
//! buffers are `crate::sync::UnsafeCell`s, whose accesses loom checks for races.
//!
//! Bounds: 2 threads (one enqueue combiner, one dequeue combiner), exhaustive up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2). Not modelled: several enqueuers or several dequeuers (each
//! side is serialized by its instance's lock, which `loom_pbcomb_handoff` models).
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use pcomb::structures::{Full, Options, PBQueue};
use pcomb::Persist;

/// Counts psyncs (one per combining pass, line 27); no durability.
#[derive(Debug, Clone, Default)]
struct CountPsyncs(Arc<AtomicUsize>);

impl CountPsyncs {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Persist for CountPsyncs {
    unsafe fn pwb(&self, _addr: *const u8, _len: usize) {}
    fn pfence(&self) {}
    fn psync(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn queue(capacity: u32, recycling: bool) -> (Arc<PBQueue<CountPsyncs>>, CountPsyncs, usize) {
    let psyncs = CountPsyncs::default();
    let options = Options {
        elimination: false,
        recycling,
    };
    let q = PBQueue::with_persist(capacity, 2, options, psyncs.clone()).unwrap();
    // Creation persists the empty queue with one psync.
    let created = psyncs.get();
    (Arc::new(q), psyncs, created)
}

/// Capacity 1: enqueue 1 then 2 (which only fits on the node the dequeue recycles) against
/// one dequeue.
#[test]
fn dequeue_stops_at_old_tail_and_recycled_node_is_durable() {
    loom::model(|| {
        let (q, psyncs, created) = queue(1, true);
        let enq = {
            let (q, psyncs) = (q.clone(), psyncs.clone());
            thread::spawn(move || {
                let mut h = q.register().unwrap();
                h.enqueue(1).unwrap();
                let second = h.enqueue(2);
                (second, psyncs.get())
            })
        };
        let mut h = q.register().unwrap();
        let d = h.dequeue();
        let seen = psyncs.get() - created;
        if let Some(v) = d {
            assert_eq!(v, 1, "dequeued a value that was never first");
            assert!(
                seen >= 2,
                "dequeued {v} after {seen} passes: the enqueue pass had not persisted"
            );
        }
        drop(h);
        let (second, e_seen) = enq.join().unwrap();
        let e_seen = e_seen - created;
        if second.is_ok() {
            assert_eq!(
                d,
                Some(1),
                "capacity 1: the second enqueue needs the recycled node"
            );
            assert!(
                e_seen >= 3,
                "reused a node after {e_seen} passes: the removing pass had not persisted"
            );
        } else {
            assert_eq!(second, Err(Full(2)));
        }
        let mut h = q.register().unwrap();
        let rest: Vec<u64> = std::iter::from_fn(|| h.dequeue()).collect();
        let want: Vec<u64> = match (d, second) {
            (Some(_), Ok(())) => vec![2],
            (Some(_), Err(_)) => vec![],
            (None, _) => vec![1],
        };
        assert_eq!(rest, want, "values lost or duplicated");
        drop(h);
        let mut q = Arc::try_unwrap(q).unwrap();
        q.audit().unwrap();
    });
}

/// Capacity 1, the queue full (holding 1) before the threads start: an enqueue of 2, which
/// fits only on the node the concurrent dequeue removes, against that dequeue.
#[test]
fn recycled_node_is_reused_only_after_the_removing_pass_persisted() {
    loom::model(|| {
        let (q, psyncs, _) = queue(1, true);
        q.register().unwrap().enqueue(1).unwrap();
        let before = psyncs.get();
        let enq = {
            let (q, psyncs) = (q.clone(), psyncs.clone());
            thread::spawn(move || {
                let r = q.register().unwrap().enqueue(2);
                (r, psyncs.get())
            })
        };
        let d = q.register().unwrap().dequeue();
        assert_eq!(d, Some(1));
        let (second, seen) = enq.join().unwrap();
        if second.is_ok() {
            // The dequeue pass's psync and the enqueue pass's own.
            assert!(
                seen - before >= 2,
                "reused a node after {} passes: the removing pass had not persisted",
                seen - before
            );
        } else {
            assert_eq!(second, Err(Full(2)));
        }
        let mut h = q.register().unwrap();
        let rest: Vec<u64> = std::iter::from_fn(|| h.dequeue()).collect();
        let want = if second.is_ok() { vec![2] } else { vec![] };
        assert_eq!(rest, want, "values lost or duplicated");
        drop(h);
        let mut q = Arc::try_unwrap(q).unwrap();
        q.audit().unwrap();
    });
}

/// Capacity 2, no recycling: two enqueues (possibly in two passes) against two dequeues, so
/// the second dequeue may run on a list the enqueuer is still linking.
#[test]
fn two_dequeues_follow_the_links_in_order() {
    loom::model(|| {
        let (q, psyncs, created) = queue(2, false);
        let enq = {
            let q = q.clone();
            thread::spawn(move || {
                let mut h = q.register().unwrap();
                h.enqueue(1).unwrap();
                h.enqueue(2).unwrap();
            })
        };
        let mut h = q.register().unwrap();
        let a = h.dequeue();
        let b = h.dequeue();
        let seen = psyncs.get() - created;
        let got: Vec<u64> = [a, b].into_iter().flatten().collect();
        // A dequeue returns None only if it ran before the matching enqueue was durable, so
        // the values that came out are a prefix of 1, 2.
        assert!(
            matches!(got.as_slice(), [] | [1] | [1, 2]),
            "FIFO violated or unlinked node read: {a:?} {b:?}"
        );
        // Each value's enqueue pass persisted before it was dequeued: one enqueue psync per
        // value at least (one pass may carry both), plus the two dequeue passes.
        assert!(
            seen >= 2 + usize::from(!got.is_empty()),
            "{got:?} dequeued after {seen} passes"
        );
        drop(h);
        enq.join().unwrap();
        let mut h = q.register().unwrap();
        let rest: Vec<u64> = std::iter::from_fn(|| h.dequeue()).collect();
        let mut all = got;
        all.extend(rest);
        assert_eq!(all, vec![1, 2], "values lost, duplicated or reordered");
    });
}
