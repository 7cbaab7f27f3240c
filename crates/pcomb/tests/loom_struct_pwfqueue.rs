//! Loom model: `PWFQueue`'s two-part list between its two wait-free instances.
//!
//! An enqueue install leaves the link `link_a.next := link_b` pending; the next enqueue
//! attempt that appends performs it (and writes it back) before its own install, and
//! dequeuers read through the pending link using a persisted snapshot of the enqueuers'
//! state taken inside their own attempt (cross-instance: the dequeuers' attempt reads nodes
//! published by the enqueuers' SC).
//!
//! Scenario: 1 is enqueued before the threads start (its link from the dummy is pending);
//! thread A enqueues 2 (its attempt performs the pending link); thread B dequeues twice
//! concurrently. Checked: B's first dequeue gets 1 (enqueued before it started), its second
//! gets 2 or `None` (`None` only if A's enqueue had not been installed), the values are
//! conserved (a drain finds exactly the rest, in FIFO order), and `audit` finds the list from
//! `Head` to `tail` well formed with the right count.
//!
//! Mutation (applied by hand, reverted): dequeuers walking with the node's stored `next`
//! only (not reading through the pending link) is caught: B's first dequeue sees `None`.
//!
//! Bounds: 2 threads, exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pcomb::structures::PWFQueue;

#[test]
fn pending_link_is_read_through_and_performed_once() {
    loom::model(|| {
        let q = Arc::new(PWFQueue::new(2, 2).unwrap());
        q.register().unwrap().enqueue(1).unwrap();
        let a = {
            let q = q.clone();
            thread::spawn(move || q.register().unwrap().enqueue(2))
        };
        let (b1, b2) = {
            let mut h = q.register().unwrap();
            (h.dequeue(), h.dequeue())
        };
        let pushed = a.join().unwrap();
        assert_eq!(pushed, Ok(()));
        assert_eq!(
            b1,
            Some(1),
            "a value enqueued before the dequeue was missed"
        );
        assert!(matches!(b2, None | Some(2)), "b2={b2:?}");
        let mut h = q.register().unwrap();
        let rest: Vec<u64> = std::iter::from_fn(|| h.dequeue()).collect();
        drop(h);
        let mut out: Vec<u64> = [b1, b2].into_iter().flatten().chain(rest).collect();
        assert_eq!(out, vec![1, 2], "values lost, duplicated or out of order");
        out.clear();
        let mut q = Arc::try_unwrap(q).unwrap();
        q.audit().unwrap();
    });
}
