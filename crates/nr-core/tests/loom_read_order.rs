//! Loom model: a read that starts after another read returned never sees an older state, even
//! on another replica (issue 9).
//!
//! Scenario: two replicas; a writer on replica 1 writes 1 then 2; a reader holding a handle on
//! each replica reads through replica 0 (A) and then through replica 1 (B). A replay into
//! replica 0 that exposes an entry not yet counted in `completed_tail` lets A see 2 while B,
//! bounded by `completed_tail`, still sees 1.
//!
//! Bounds: 2 modelled threads, 2 replicas, a 4-entry log; exhaustive up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use nr_core::{Dispatch, NodeReplicated};

/// Keeps the largest value written.
#[derive(Default)]
struct MaxRegister(u64);

impl Dispatch for MaxRegister {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, v: u64) -> u64 {
        self.0 = self.0.max(v);
        self.0
    }
}

#[test]
fn second_read_on_other_replica_never_goes_back() {
    loom::model(|| {
        let nr = Arc::new(
            NodeReplicated::builder()
                .replicas(2)
                .log_size(4)
                .threads_per_replica(2)
                .build(|_| MaxRegister::default())
                .unwrap(),
        );
        let writer = {
            let nr = nr.clone();
            thread::spawn(move || {
                let mut h = nr.register(1).unwrap();
                h.execute_mut(1).unwrap();
                h.execute_mut(2).unwrap();
            })
        };
        let mut a = nr.register(0).unwrap();
        let mut b = nr.register(1).unwrap();
        let first = a.execute(()).unwrap();
        let second = b.execute(()).unwrap();
        assert!(
            second >= first,
            "read went back in time: replica 0 returned {first}, then replica 1 returned {second}"
        );
        writer.join().unwrap();
    });
}
