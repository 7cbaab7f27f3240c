//! Loom model: `PWFStack`'s node recycling under wait-free combining.
//!
//! Every thread combines on its own copy of the state, so a stale attempt may read a node that
//! another thread's install popped and that thread already reuses (the paper's PWFstack frees
//! a node to the installing thread once its install is durable). The attempt must then fail its
//! validation of `S` (line 26): node words are written with `Release` and read with `Acquire`,
//! so reading a reused node's new contents implies seeing the install that popped it.
//!
//! Scenario: the stack holds 1 (pushed before the threads start); thread A pops, then pushes
//! 2, which with capacity 1 per thread fits only on the node A's pop freed, if A's own install
//! popped it, and only after that install is durable; thread B pops concurrently. Checked: the
//! responses are those of a sequential order, values are conserved (a drain finds exactly the
//! values no pop returned), `audit` finds no node both free and on the list.
//!
//! Mutations (applied by hand, reverted): freeing popped nodes inside `apply` (before the
//! install; a later attempt of the same thread reuses a node still on the list) is caught:
//! `audit` finds a node both free and on the list. Making the node reads/writes `Relaxed`
//! is *not* caught, and is not a bug in outcomes: the SC is a CAS on the latest `S`, so an
//! attempt that read a reused node (its LL precedes the install that popped the node) can pass
//! its VL but never installs; the `Acquire`/`Release` pair only makes the VL fail early.
//!
//! Bounds: 2 threads, exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pcomb::structures::{Options, PWFStack};

#[test]
fn reused_node_never_seen_by_a_successful_stale_attempt() {
    loom::model(|| {
        let options = Options {
            elimination: false,
            recycling: true,
        };
        let s = Arc::new(PWFStack::with_options(1, 2, options).unwrap());
        s.register().unwrap().push(1).unwrap();
        let a = {
            let s = s.clone();
            thread::spawn(move || {
                let mut h = s.register().unwrap();
                let p = h.pop();
                (p, h.push(2))
            })
        };
        let b = s.register().unwrap().pop();
        let (pa, pushed) = a.join().unwrap();
        let mut h = s.register().unwrap();
        let rest: Vec<u64> = std::iter::from_fn(|| h.pop()).collect();
        drop(h);
        let mut out: Vec<u64> = [pa, b].into_iter().flatten().chain(rest).collect();
        out.sort_unstable();
        let mut want = vec![1];
        if pushed.is_ok() {
            want.push(2);
        }
        assert_eq!(
            out, want,
            "values lost or duplicated: a={pa:?} b={b:?} {pushed:?}"
        );
        // Only one pop gets 1; B may pop 2 only after A pushed it (A popped first).
        assert!(
            matches!(
                (pa, b),
                (Some(1), None) | (None, Some(1)) | (Some(1), Some(2))
            ),
            "a={pa:?} b={b:?}"
        );
        let mut s = Arc::try_unwrap(s).unwrap();
        s.audit().unwrap();
    });
}
