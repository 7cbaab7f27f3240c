//! Loom model: flat-combining hand-off within one replica.
//!
//! Checks that no operation is lost or applied twice (responses of a fetch-and-add are exactly
//! 1, 2, 3) whichever thread combines for whom.
//!
//! Bounds: `two_threads_hand_off_combining*` (2 threads, 3 writes; 1 or 2 replicas) are
//! exhaustive up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2). `every_op_applied_once_whoever_combines` (3 threads, one
//! write each) is pinned to a preemption bound of 1: at 2, loom's stale re-reads in the spin
//! loops make single paths exceed its branch limit (a liveness artefact of the model).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use nr_core::{Dispatch, NodeReplicated};

#[derive(Default)]
struct Counter(u64);

impl Dispatch for Counter {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.0 += add;
        self.0
    }
}

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
