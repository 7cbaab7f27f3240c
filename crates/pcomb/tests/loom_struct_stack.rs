//! Loom model: what `PBStack` adds to PBcomb: elimination inside a combining pass and the
//! recycling stack of free nodes.
//!
//! Both live behind the stack's one combining lock: the recycling stack and the pass buffers
//! are a `crate::sync::UnsafeCell` that only the lock holder touches (loom checks every access
//! for a race), the nodes are `crate::sync` atomics in the structure's words, and popped nodes
//! join the recycling stack in `Batch::published`, after the pass's psync (line 27) and before
//! the unlock (line 28). Checked:
//!
//! - **elimination** (3 threads: push 1, pop, push 2): the responses are those of some
//!   sequential order of the three operations (a pop answered by elimination gets a value
//!   pushed in its pass), and a drain afterwards finds exactly the values no pop returned;
//! - **recycling** (capacity 1, 2 threads: push 1 then push 2, against one pop): the second
//!   push succeeds only on the node the pop freed, so only if the pop returned 1, in a later
//!   pass than the pop's; the drain conserves the values and `audit` finds no node both free
//!   and on the list, none leaked.
//!
//! Mutations these models catch (applied by hand, seen to fail, reverted): calling
//! `Batch::published` after the unlock in `combine.rs` (both models: the next lock holder's
//! pass touches the recycling stack concurrently, loom reports "Concurrent write accesses to
//! `UnsafeCell`"); elimination that answers the pop but still applies the push (the
//! elimination model: a value comes out twice). That a pass never reuses a node it popped
//! itself (the durable `top` may still name it) is a sequential property of a pass, invisible
//! to a volatile model: `stack.rs`'s unit test `a_pass_never_reuses_the_node_it_popped` and the
//! crash tests check it.
//!
//! Bounds: the 2-thread model is exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2); the 3-thread
//! model is pinned to a preemption bound of 1 (at 2 it exceeds loom's branch limit, in the
//! lock wait loops).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pcomb::structures::{Full, Options, PBStack};

/// Whether `rets` (push 1, pop, push 2; pushes answered `()`) are the responses of some
/// sequential order of the three operations on an empty stack.
fn sequentially_possible(pop: Option<u64>) -> bool {
    // Orders: pop first -> None; after push 1 only -> 1; after push 2 only -> 2; after both ->
    // the later one (1 or 2). Every value is possible, and None.
    matches!(pop, None | Some(1) | Some(2))
}

#[test]
fn elimination_pairs_push_and_pop() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(|| {
        let s = Arc::new(PBStack::new(2, 3).unwrap());
        let pusher = |v: u64| {
            let s = s.clone();
            thread::spawn(move || {
                s.register().unwrap().push(v).unwrap();
            })
        };
        let p1 = pusher(1);
        let p2 = pusher(2);
        let popped = s.register().unwrap().pop();
        p1.join().unwrap();
        p2.join().unwrap();
        assert!(sequentially_possible(popped), "pop returned {popped:?}");
        let mut h = s.register().unwrap();
        let mut rest: Vec<u64> = std::iter::from_fn(|| h.pop()).collect();
        rest.extend(popped);
        rest.sort_unstable();
        assert_eq!(rest, vec![1, 2], "values lost or duplicated");
        drop(h);
        let mut s = Arc::try_unwrap(s).unwrap();
        s.audit().unwrap();
    });
}

#[test]
fn recycled_node_is_reused_only_after_its_pop_pass() {
    loom::model(|| {
        let options = Options {
            elimination: false,
            recycling: true,
        };
        let s = Arc::new(PBStack::with_options(1, 2, options).unwrap());
        let pusher = {
            let s = s.clone();
            thread::spawn(move || {
                let mut h = s.register().unwrap();
                h.push(1).unwrap();
                h.push(2)
            })
        };
        let popped = s.register().unwrap().pop();
        let second = pusher.join().unwrap();
        match second {
            Ok(()) => assert_eq!(popped, Some(1), "capacity 1: push 2 needs the freed node"),
            Err(e) => assert_eq!(e, Full(2)),
        }
        let mut h = s.register().unwrap();
        let rest: Vec<u64> = std::iter::from_fn(|| h.pop()).collect();
        let want: Vec<u64> = match (popped, second) {
            (Some(1), Ok(())) => vec![2],
            (Some(1), Err(_)) => vec![],
            (None, Err(_)) => vec![1],
            other => panic!("impossible outcome {other:?}"),
        };
        assert_eq!(rest, want, "values lost or duplicated");
        drop(h);
        let mut s = Arc::try_unwrap(s).unwrap();
        s.audit().unwrap();
    });
}
