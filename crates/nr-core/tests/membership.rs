//! Replicas added and removed at run time (`NodeReplicated::add_replica`,
//! `NodeReplicated::remove_replica`, `Builder::max_replicas`; issue 21): the copy starts at a
//! log position and replays from there, a retired replica is neither replayed nor waited for,
//! the typed errors, and writers that run while replicas come and go lose no write and apply
//! none twice (every response of a fetch-and-add appears once, every live replica ends with the
//! total). The linearizability histories with replicas added and removed are in
//! `tests/linearizability.rs`.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::Counted as Counter;
use nr_core::{NodeReplicated, RegisterError, ReplicaError};

/// `n` fresh `Counted`s for a build closure, and their applied counts.
fn counters(n: usize) -> (Vec<Arc<AtomicUsize>>, impl FnMut(usize) -> Counter + Send) {
    let counts: Vec<Arc<AtomicUsize>> = (0..n).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let shared = counts.clone();
    (counts, move |i| Counter {
        value: 0,
        applied: shared[i].clone(),
    })
}

/// A `Counted` with a count of its own.
fn counter() -> Counter {
    Counter {
        value: 0,
        applied: Arc::new(AtomicUsize::new(0)),
    }
}

/// The copy is replica `from`'s state at its local tail after catching up (the source lags
/// here: replica 1 has applied nothing when it is copied), and the new replica replays from
/// there: it shows every write, before and after the copy, and its writes reach the others.
#[test]
fn an_added_replica_starts_from_its_source_and_follows_the_log() {
    let (_, build) = counters(2);
    let nr = NodeReplicated::builder()
        .replicas(2)
        .max_replicas(3)
        .log_size(16)
        .threads_per_replica(4)
        .build(build)
        .expect("build");
    let mut h0 = nr.register(0).expect("register");
    for i in 1..=5 {
        assert_eq!(h0.execute_mut(1), Ok(i));
    }
    let r = nr.add_replica(1).expect("room for one more");
    assert_eq!((r, nr.replicas()), (2, 3));
    assert_eq!(
        nr.with_replica_state(2, |c, applied| (c.value, applied)),
        Ok((5, 5))
    );
    // 40 writes wrap the 16-entry log twice: the new replica must be replayed, not skipped.
    for i in 6..=45 {
        assert_eq!(h0.execute_mut(1), Ok(i));
    }
    let mut h2 = nr.register(2).expect("register on the new replica");
    assert_eq!(h2.execute(()), Ok(45));
    assert_eq!(h2.execute_mut(10), Ok(55));
    assert_eq!(h0.execute(()), Ok(55));
    assert_eq!(nr.with_replica_state(1, |c, _| c.value), Ok(55));
}

/// After `remove_replica`, the retired replica applies nothing more, even when the log fills
/// many times over (a replica the log still waited for would be replayed by the writer's help
/// path, or block it), and it takes no registration.
#[test]
fn a_retired_replica_is_neither_replayed_nor_waited_for() {
    let (counts, build) = counters(2);
    let nr = NodeReplicated::builder()
        .replicas(2)
        .log_size(16)
        .threads_per_replica(4)
        .build(build)
        .expect("build");
    let mut h0 = nr.register(0).expect("register");
    for i in 1..=20 {
        assert_eq!(h0.execute_mut(1), Ok(i));
    }
    nr.remove_replica(1).expect("no handle on replica 1");
    let frozen = counts[1].load(Ordering::Relaxed);
    for i in 21..=1_000 {
        assert_eq!(h0.execute_mut(1), Ok(i));
    }
    assert_eq!(
        counts[1].load(Ordering::Relaxed),
        frozen,
        "retired replica replayed"
    );
    assert_eq!(counts[0].load(Ordering::Relaxed), 1_000);
    assert!(matches!(
        nr.register(1),
        Err(RegisterError::Retired { replica: 1 })
    ));
}

#[test]
fn membership_errors_are_typed() {
    let (_, build) = counters(2);
    let nr = NodeReplicated::builder()
        .replicas(2)
        .max_replicas(3)
        .build(build)
        .expect("build");
    assert_eq!(
        nr.add_replica(7),
        Err(ReplicaError::NoSuchReplica {
            replica: 7,
            replicas: 2
        })
    );
    let h = nr.register(1).expect("register");
    assert_eq!(
        nr.remove_replica(1),
        Err(ReplicaError::InUse {
            replica: 1,
            handles: 1
        })
    );
    drop(h);
    assert_eq!(nr.remove_replica(1), Ok(()));
    assert_eq!(
        nr.remove_replica(1),
        Err(ReplicaError::Retired { replica: 1 })
    );
    assert_eq!(nr.add_replica(1), Err(ReplicaError::Retired { replica: 1 }));
    assert_eq!(nr.remove_replica(0), Err(ReplicaError::LastReplica));
    assert_eq!(nr.add_replica(0), Ok(2));
    assert_eq!(nr.add_replica(0), Err(ReplicaError::Full { capacity: 3 }));
    assert_eq!(
        nr.remove_replica(3),
        Err(ReplicaError::NoSuchReplica {
            replica: 3,
            replicas: 3
        })
    );
    assert_eq!(nr.remove_replica(0), Ok(()), "replica 2 is live");
    let full = NodeReplicated::builder()
        .replicas(1)
        .threads_per_replica(1)
        .max_replicas(2)
        .build(|_| counter())
        .expect("build");
    let _only = full.register(0).expect("register");
    assert!(matches!(
        full.register(0),
        Err(RegisterError::ReplicaFull { .. })
    ));
    // A refused registration (the replica is full) does not count as a live handle.
    drop(_only);
    assert_eq!(full.add_replica(0), Ok(1));
    assert_eq!(full.remove_replica(0), Ok(()));
}

/// Three writers on replica 0 and one thread that, over and over, adds a replica (copied from
/// a live one), registers with it, writes and reads there, drops its handle and retires it.
/// Every write is a fetch-and-add of 1, so its response is the number of writes applied before
/// it plus one: the responses of all threads together must be exactly 1..=N, each once (a lost
/// write leaves a gap, a write applied twice a repeat), and every live replica ends at N.
#[test]
fn writers_lose_no_write_while_replicas_come_and_go() {
    const WRITERS: usize = 3;
    const WRITES: usize = 3_000;
    const ROUNDS: usize = 40;
    let nr = NodeReplicated::builder()
        .replicas(1)
        .max_replicas(ROUNDS + 1)
        .log_size(64)
        .build(|_| counter())
        .expect("build");
    let done = AtomicBool::new(false);
    let mut responses: Vec<u64> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|_| {
                let nr = &nr;
                s.spawn(move || {
                    let mut h = nr.register(0).expect("register");
                    (0..WRITES)
                        .map(|_| h.execute_mut(1).expect("not poisoned"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let churn = {
            let (nr, done) = (&nr, &done);
            s.spawn(move || {
                let mut mine = Vec::new();
                let mut live = 0;
                for _ in 0..ROUNDS {
                    let r = nr.add_replica(live).expect("a place is free");
                    {
                        let mut h = nr.register(r).expect("register on the new replica");
                        let before = h.execute(()).expect("not poisoned");
                        let w = h.execute_mut(1).expect("not poisoned");
                        assert!(w > before, "a write on the new replica saw an older state");
                        mine.push(w);
                        assert!(h.execute(()).expect("not poisoned") >= w);
                    }
                    if live != 0 {
                        nr.remove_replica(live).expect("no handle left on it");
                    }
                    live = r;
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                }
                mine
            })
        };
        let mut all: Vec<u64> = writers
            .into_iter()
            .flat_map(|w| w.join().expect("writer"))
            .collect();
        done.store(true, Ordering::Relaxed);
        all.extend(churn.join().expect("churn"));
        all
    });
    responses.sort_unstable();
    let n = responses.len() as u64;
    assert!(
        responses.iter().copied().eq(1..=n),
        "a write lost or applied twice"
    );
    for r in 0..nr.replicas() {
        if let Ok(mut h) = nr.register(r) {
            assert_eq!(h.execute(()), Ok(n), "replica {r}");
        }
    }
}
