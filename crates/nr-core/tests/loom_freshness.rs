//! Loom model: read freshness across replicas.
//!
//! A read that starts after a write has completed (here: after observing, with Acquire, a flag
//! the writer set with Release once its write returned) must see that write, even on another
//! replica that no thread of its own has updated (Algorithm 1, lines 42-46: `completedTail`).
//!
//! Bounds: 2 threads on 2 replicas (writer, reader) plus a concurrent second write, one thread
//! slot per replica; exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use nr_core::{Dispatch, NodeReplicated};

#[derive(Default)]
struct Register(u64);

impl Dispatch for Register {
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
fn read_sees_write_that_completed_before_it_started() {
    loom::model(|| {
        let nr = Arc::new(
            NodeReplicated::builder()
                .replicas(2)
                .log_size(2)
                .threads_per_replica(1)
                .build(|_| Register::default())
                .unwrap(),
        );
        let written = Arc::new(AtomicBool::new(false));
        let writer = {
            let (nr, written) = (nr.clone(), written.clone());
            thread::spawn(move || {
                let mut h = nr.register(0).unwrap();
                h.execute_mut(1).unwrap();
                written.store(true, Ordering::Release);
                h.execute_mut(2).unwrap();
            })
        };
        let mut h = nr.register(1).unwrap();
        let saw_flag = written.load(Ordering::Acquire);
        let v = h.execute(()).unwrap();
        if saw_flag {
            assert!(
                v >= 1,
                "stale read: the write completed before the read started"
            );
        }
        writer.join().unwrap();
        assert_eq!(
            h.execute(()).unwrap(),
            2,
            "after join, every write is visible"
        );
    });
}
