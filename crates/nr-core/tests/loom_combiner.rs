//! Loom model: flat-combining hand-off within one replica.
//!
//! Bounds: 3 threads on one replica, one write each; exhaustive up to `LOOM_MAX_PREEMPTIONS`
//! (CI: 2). Checks that no operation is lost or applied twice (responses of a fetch-and-add are
//! exactly 1, 2, 3) whichever thread combines for whom.
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

#[test]
fn every_op_applied_once_whoever_combines() {
    loom::model(|| {
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
