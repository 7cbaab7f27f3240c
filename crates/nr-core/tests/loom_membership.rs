//! Loom models: a replica joining the log while a writer appends (`add_replica`), and a replica
//! retired while a writer facing a full log helps it (`remove_replica`).
//!
//! - `a_joining_replica_replays_every_write_after_its_copy`: the writer's appends wrap the
//!   4-entry log, refreshing the head as they go, while the joiner copies replica 0 and joins
//!   at its local tail. If the join or the copy were not ordered with the writer's batches
//!   (under replica 0's combiner lock), or a head refresh passed the new replica, the writer
//!   would overwrite an entry the new replica has not replayed (loom reports the overwrite
//!   racing with the replay) or the new replica would end with a wrong count. (The scan-order
//!   argument of `Log::advance_head` concerns a refresh by an appender on a *third* replica; the
//!   writer here scans under replica 0's lock, so this model does not reach it.)
//! - `a_retired_replica_is_neither_replayed_nor_waited_for`: the writer's appends fill the log
//!   while replica 1 (idle) is retired; the writer's help path may be replaying it when the
//!   retirement takes its combiner lock. Every write completes (no wait for the retired
//!   replica), and replica 0 ends with every write.
//!
//! - `a_head_refresh_on_a_third_replica_never_passes_a_joining_replica`: as the first, with
//!   a second writer on replica 1 whose head refreshes scan every place while replica 0's
//!   writer moves on after the copy (the scan-order argument of `Log::advance_head`).
//!
//! Bounds: 2-3 threads, 4-5 writes, a 4-entry log; exhaustive up to `LOOM_MAX_PREEMPTIONS`
//! (CI: 2).
#![cfg(loom)]

use loom::sync::Arc;
use nr_core::NodeReplicated;

#[path = "common/counter.rs"]
mod counter;

#[path = "common/loom_writer.rs"]
mod writer;

use counter::Counter;
use writer::writer;

const WRITES: u64 = 5;

/// An object of `replicas` replicas with room for `max` over its life, a 4-entry log, one
/// thread per replica.
fn object(replicas: usize, max: usize) -> Arc<NodeReplicated<Counter>> {
    Arc::new(
        NodeReplicated::builder()
            .replicas(replicas)
            .max_replicas(max)
            .log_size(4)
            .threads_per_replica(1)
            .build(|_| Counter::default())
            .unwrap(),
    )
}

#[test]
fn a_joining_replica_replays_every_write_after_its_copy() {
    loom::model(|| {
        let nr = object(1, 2);
        let w = writer(&nr, 0, WRITES, true);
        assert_eq!(nr.add_replica(0).unwrap(), 1);
        w.join().unwrap();
        let mut h = nr.register(1).unwrap();
        assert_eq!(h.execute(()).unwrap(), WRITES);
    });
}

#[test]
fn a_retired_replica_is_neither_replayed_nor_waited_for() {
    loom::model(|| {
        let nr = object(2, 2);
        let w = writer(&nr, 0, WRITES, true);
        nr.remove_replica(1).unwrap();
        w.join().unwrap();
        let mut h = nr.register(0).unwrap();
        assert_eq!(h.execute(()).unwrap(), WRITES);
    });
}

#[test]
fn a_head_refresh_on_a_third_replica_never_passes_a_joining_replica() {
    loom::model(|| {
        let nr = object(2, 3);
        let writers = [writer(&nr, 0, 2, false), writer(&nr, 1, 2, false)];
        let r = nr.add_replica(0).unwrap();
        for w in writers {
            w.join().unwrap();
        }
        let mut h = nr.register(r).unwrap();
        assert_eq!(h.execute(()).unwrap(), 4);
    });
}
