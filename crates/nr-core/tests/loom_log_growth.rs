//! Loom model: the log grows (§6 "Log length", `Builder::log_growth`) while both replicas
//! append, and replicas replay across segments.
//!
//! Scenario: two replicas, a 2-entry log that may grow to 4; thread A on replica 0 writes 1 then
//! 2, thread B on replica 1 writes 10 then 11 and reads. Four writes do not fit in 2 entries and
//! neither replica reads the other's writes until it appends, so some appender must grow the
//! log (or, at 4, help), possibly while the other appends: the tail freeze, the segment
//! publication and the lookup of an index's segment are all exercised. Checks that both replicas
//! end with the same order of writes, that every response is a prefix of it, and that program
//! order holds.
//!
//! Bounds: 2 modelled threads plus the main one, one thread slot per replica; exhaustive up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use nr_core::{Dispatch, NodeReplicated};

/// Records the order in which writes were applied.
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
fn replicas_agree_when_the_log_grows_under_two_appenders() {
    loom::model(|| {
        let nr = Arc::new(
            NodeReplicated::builder()
                .replicas(2)
                .log_size(2)
                .log_growth(4)
                .threads_per_replica(1)
                .build(|_| Trace::default())
                .unwrap(),
        );
        let b = {
            let nr = nr.clone();
            thread::spawn(move || {
                let mut h = nr.register(1).unwrap();
                let x = h.execute_mut(10).unwrap();
                let y = h.execute_mut(11).unwrap();
                let seen = h.execute(()).unwrap();
                (x, y, seen)
            })
        };
        let mut h = nr.register(0).unwrap();
        let p = h.execute_mut(1).unwrap();
        let q = h.execute_mut(2).unwrap();
        let (x, y, seen) = b.join().unwrap();
        let final0 = h.execute(()).unwrap();
        drop(h);
        let final1 = nr.register(1).unwrap().execute(()).unwrap();
        assert_eq!(final0, final1, "replicas diverged");
        assert_eq!(final0.len(), 4);
        for prefix in [&p, &q, &x, &y, &seen] {
            assert_eq!(
                &final0[..prefix.len()],
                &prefix[..],
                "not a prefix of the final order"
            );
        }
        assert!(p.len() < q.len() && x.len() < y.len(), "program order lost");
        assert!(
            seen.len() >= y.len(),
            "a read missed its own thread's write"
        );
    });
}
