//! Loom model: log append, replay by another replica, and wrap-around with two replicas.
//!
//! Bounds: 2 threads, one per replica, one thread slot per replica, a 2-entry log, 3 writes in
//! all (so the log wraps and an appender must bring the other replica up to date itself);
//! exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use nr_core::{Dispatch, NodeReplicated};

/// Records the order in which writes were applied, so replicas can be compared exactly.
#[derive(Default)]
struct Trace(Vec<u32>);

impl Dispatch for Trace {
    type ReadOperation<'a> = ();
    type WriteOperation = u32;
    type Response = Vec<u32>;
    fn dispatch(&self, _: ()) -> Vec<u32> {
        self.0.clone()
    }
    fn dispatch_mut(&mut self, v: u32) -> Vec<u32> {
        self.0.push(v);
        self.0.clone()
    }
}

#[test]
fn replicas_agree_after_log_wraps() {
    loom::model(|| {
        let nr = Arc::new(
            NodeReplicated::builder()
                .replicas(2)
                .log_size(2)
                .threads_per_replica(1)
                .build(|_| Trace::default())
                .unwrap(),
        );
        let other = {
            let nr = nr.clone();
            thread::spawn(move || {
                let mut h = nr.register(1).unwrap();
                h.execute_mut(10).unwrap()
            })
        };
        let mut h = nr.register(0).unwrap();
        let a = h.execute_mut(1).unwrap();
        let b = h.execute_mut(2).unwrap();
        let c = other.join().unwrap();
        // Each response is the replica's trace right after the write: a prefix of the final order.
        let final0 = h.execute(()).unwrap();
        drop(h);
        let final1 = nr.register(1).unwrap().execute(()).unwrap();
        assert_eq!(final0, final1, "replicas diverged");
        assert_eq!(final0.len(), 3);
        for prefix in [&a, &b, &c] {
            assert_eq!(&final0[..prefix.len()], &prefix[..]);
        }
        assert!(a.len() < b.len(), "program order lost");
    });
}
