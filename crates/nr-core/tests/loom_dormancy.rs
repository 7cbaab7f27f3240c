//! Loom models of dormant replicas (`Builder::dormant_replicas`): the wake-up (a copy of a live
//! replica at a log position, then `Log::join`) racing with writers, and the last handle's drop
//! racing with a registration.
//!
//! - `a_woken_replica_replays_every_write_after_its_copy`: a writer on replica 0 wraps the
//!   4-entry log while the main thread registers on dormant replica 1 (waking it). If the copy
//!   or the join were not made under replica 0's combiner lock, the copy would race with the
//!   writer's batch (loom reports it) or miss writes; if the head passed the join index, the
//!   writer would overwrite an entry the woken replica has not replayed; if the join were
//!   skipped, the woken replica would serve a stale read.
//! - `a_last_drop_racing_with_a_registration_loses_nothing`: the main thread drops the last
//!   handle on replica 1 (which may put it to sleep) and then writes on replica 0, while
//!   another thread registers on replica 1 (which wakes it if it slept), reads and writes.
//!   Whatever the order, the registered thread never reads a state newer than its own write's
//!   response, the two writes get the responses 1 and 2, and replica 0 ends with both.
//! - `a_head_refresh_on_a_third_replica_never_passes_a_woken_replica`: replica 0 is woken
//!   from replica 1 (its place is *below* its source's, so `advance_head`'s upward scan alone
//!   would not protect it) while a writer on replica 2 refreshes the head on every append and
//!   the main thread writes on replica 1 (the setting of the `joins` check of
//!   `Log::advance_head`; the interleaving that needs the check is beyond this model's bound,
//!   and is modelled at the log level in `src/tests/loom_log_join.rs`).
//!
//! Bounds: 2-3 threads, 1-5 writes per thread, a 2- or 4-entry log; exhaustive up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use nr_core::NodeReplicated;

#[path = "common/counter.rs"]
mod counter;

#[path = "common/loom_writer.rs"]
mod writer;

use counter::Counter;
use writer::writer;

/// An object of `replicas` replicas with dormancy on, a `log`-entry log, `threads` threads per
/// replica.
fn object(replicas: usize, log: usize, threads: usize) -> Arc<NodeReplicated<Counter>> {
    Arc::new(
        NodeReplicated::builder()
            .replicas(replicas)
            .log_size(log)
            .threads_per_replica(threads)
            .dormant_replicas(true)
            .build(|_| Counter::default())
            .unwrap(),
    )
}

#[test]
fn a_woken_replica_replays_every_write_after_its_copy() {
    loom::model(|| {
        let nr = object(2, 4, 1);
        let w = writer(&nr, 0, 5, true);
        let mut h = nr.register(1).unwrap();
        let before = h.execute(()).unwrap();
        w.join().unwrap();
        assert!(before <= 5);
        assert_eq!(h.execute(()).unwrap(), 5);
        assert_eq!(h.execute_mut(1).unwrap(), 6);
    });
}

#[test]
fn a_last_drop_racing_with_a_registration_loses_nothing() {
    loom::model(|| {
        let nr = object(2, 4, 2);
        let mut h0 = nr.register(0).unwrap();
        let h = nr.register(1).unwrap();
        let nr2 = nr.clone();
        let t = thread::spawn(move || {
            let mut h = nr2.register(1).unwrap();
            let seen = h.execute(()).unwrap();
            let mine = h.execute_mut(1).unwrap();
            assert!(mine > seen);
            mine
        });
        drop(h);
        let first = h0.execute_mut(1).unwrap();
        let mine = t.join().unwrap();
        assert_eq!((first.min(mine), first.max(mine)), (1, 2));
        assert_eq!(h0.execute(()).unwrap(), 2);
    });
}

#[test]
fn a_head_refresh_on_a_third_replica_never_passes_a_woken_replica() {
    loom::model(|| {
        let nr = object(3, 2, 1);
        // Replica 1 live (0 goes dormant when 1 wakes), replica 2 dormant until its writer
        // registers.
        let mut h1 = nr.register(1).unwrap();
        let w = writer(&nr, 2, 2, false);
        let nr0 = nr.clone();
        let waker = thread::spawn(move || {
            let mut h = nr0.register(0).unwrap();
            let seen = h.execute(()).unwrap();
            assert!(seen <= 3);
            seen
        });
        h1.execute_mut(1).unwrap();
        w.join().unwrap();
        let seen = waker.join().unwrap();
        assert_eq!(h1.execute(()).unwrap(), 3);
        let _ = seen;
    });
}
