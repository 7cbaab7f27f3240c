//! Stress: reads must respect real-time order across replicas (issue 9).
//!
//! A max register on 2 replicas; two threads on replica 1 write ever larger values; a third
//! thread holds a handle on each replica and reads through replica 0, then through replica 1.
//! The second read starts after the first returned, so it may never return a smaller value.
//! Before the fix, a reader's replay on replica 0 exposed log entries that were written but not
//! yet completed, while replica 1's readers only waited for `completed_tail`: pairs went back.
//!
//! Bounded by time (`NR_RTO_SECS`, default 2 s; the figure came from 8 s in release).
//! Prints how many pairs it checked and how many went back.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

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

fn secs() -> u64 {
    std::env::var("NR_RTO_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
}

#[test]
fn read_on_replica_1_after_read_on_replica_0_never_goes_back() {
    let nr = NodeReplicated::builder()
        .replicas(2)
        .log_size(1024)
        .threads_per_replica(4)
        .build(|_| MaxRegister::default())
        .expect("valid configuration");
    let stop = AtomicBool::new(false);
    let next = AtomicU64::new(1);
    let start = Barrier::new(3);
    let deadline = Duration::from_secs(secs());
    let (pairs, back, first) = std::thread::scope(|s| {
        for _ in 0..2 {
            let (nr, stop, next, start) = (&nr, &stop, &next, &start);
            s.spawn(move || {
                let mut h = nr.register(1).expect("slot available");
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let v = next.fetch_add(1, Ordering::Relaxed);
                    h.execute_mut(v).expect("not poisoned");
                }
            });
        }
        let reader = s.spawn(|| {
            let mut h0 = nr.register(0).expect("slot available");
            let mut h1 = nr.register(1).expect("slot available");
            start.wait();
            let began = Instant::now();
            let (mut pairs, mut back, mut first) = (0u64, 0u64, None);
            while began.elapsed() < deadline {
                let a = h0.execute(()).expect("not poisoned");
                let b = h1.execute(()).expect("not poisoned");
                pairs += 1;
                if b < a {
                    back += 1;
                    first.get_or_insert((pairs, a, b));
                }
            }
            stop.store(true, Ordering::Relaxed);
            (pairs, back, first)
        });
        reader.join().expect("reader panicked")
    });
    println!("real-time order: {back} of {pairs} read pairs went back in time");
    assert!(pairs > 0, "the reader never completed a pair");
    assert_eq!(
        back, 0,
        "{back} of {pairs} pairs went back in time; first (pair, replica 0, replica 1): {first:?}"
    );
}
