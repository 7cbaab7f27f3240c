//! Loom model: `VolatilePBComb`'s in-place hand-off (the request slot's `announced` / `served`
//! words pass the operation to the lock holder and the response back; the lock passes the
//! state from holder to holder).
//!
//! Properties: over a `Vec` state (not `Pod`), every write is applied exactly once (the
//! responses, the lengths before each push, are a permutation of `0..n`), each thread gets its
//! own response (its pushes are in its order), and a read after the writes sees them all.
//!
//! Bounds: exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2) for 2 threads of 2 writes.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pcomb::{Dispatch, VolatilePBComb};

/// A list of pushed values; `dispatch_mut` pushes and returns the length before the push.
#[derive(Default)]
struct List(Vec<u64>);

impl Dispatch for List {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = usize;

    fn dispatch(&self, _: ()) -> usize {
        self.0.len()
    }

    fn dispatch_mut(&mut self, v: u64) -> usize {
        self.0.push(v);
        self.0.len() - 1
    }
}

#[test]
fn each_write_applied_once_and_answered_to_its_thread() {
    loom::model(|| {
        let obj = Arc::new(VolatilePBComb::new(List::default(), 2).unwrap());
        let threads: Vec<_> = (0..2u64)
            .map(|t| {
                let obj = obj.clone();
                thread::spawn(move || {
                    let mut h = obj.register().unwrap();
                    let a = h.execute_mut(10 * t);
                    let b = h.execute_mut(10 * t + 1);
                    assert!(
                        a < b,
                        "thread {t}: its second push answered before its first"
                    );
                    [a, b]
                })
            })
            .collect();
        let mut responses: Vec<usize> = threads
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        responses.sort_unstable();
        assert_eq!(responses, vec![0, 1, 2, 3]);
        assert_eq!(obj.register().unwrap().execute(()), 4);
    });
}
