//! Dormant replicas (`Builder::dormant_replicas`; issue 21, "an idle replica"): a replica with
//! no handle leaves the log (no writer replays it, the log never waits for it), a registration
//! rebuilds it from a live replica and it follows the log again, at least one replica stays
//! live, and it composes with `add_replica`/`remove_replica`, `with_replica_state`, the commit
//! log, dedicated combiners and poisoning. Writers and threads registering and dropping handles
//! concurrently lose no write and apply none twice (here: a fetch-and-add whose every response
//! appears once); the linearizability histories with dormancy are in `tests/linearizability.rs`.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::Counted;
use nr_core::{CommitError, CommitLog, Dispatch, NodeReplicated, ReplicaError};

/// `common::Counted` whose count stays with *its own* replica: `clone_from` (how a dormant
/// replica is rebuilt) copies the value and keeps the replica's own count, and can be made to
/// panic once.
struct Counter {
    counted: Counted,
    /// Set: the next `clone_from` into this replica panics (and clears it).
    fail_copy: Arc<AtomicBool>,
}

impl Clone for Counter {
    fn clone(&self) -> Self {
        Self {
            counted: Counted {
                value: self.counted.value,
                applied: Arc::new(AtomicUsize::new(0)),
            },
            fail_copy: Arc::new(AtomicBool::new(false)),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        assert!(
            !self.fail_copy.swap(false, Ordering::Relaxed),
            "clone_from exploded"
        );
        self.counted.value = source.counted.value;
    }
}

impl Dispatch for Counter {
    type ReadOperation<'a> = <Counted as Dispatch>::ReadOperation<'a>;
    type WriteOperation = <Counted as Dispatch>::WriteOperation;
    type Response = <Counted as Dispatch>::Response;
    fn dispatch(&self, op: ()) -> u64 {
        self.counted.dispatch(op)
    }
    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.counted.dispatch_mut(add)
    }
}

/// An object of `replicas` replicas (room for `max`) with dormancy on, a `log`-entry log; the
/// replicas' applied counts and copy-failure switches.
#[allow(clippy::type_complexity)]
fn object(
    replicas: usize,
    max: usize,
    log: usize,
) -> (
    NodeReplicated<Counter>,
    Vec<Arc<AtomicUsize>>,
    Vec<Arc<AtomicBool>>,
) {
    let applied: Vec<_> = (0..replicas)
        .map(|_| Arc::new(AtomicUsize::new(0)))
        .collect();
    let fail: Vec<_> = (0..replicas)
        .map(|_| Arc::new(AtomicBool::new(false)))
        .collect();
    let (a, f) = (applied.clone(), fail.clone());
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .max_replicas(max)
        .log_size(log)
        .threads_per_replica(4)
        .dormant_replicas(true)
        .build(move |i| Counter {
            counted: Counted {
                value: 0,
                applied: a[i].clone(),
            },
            fail_copy: f[i].clone(),
        })
        .expect("build");
    (nr, applied, fail)
}

/// A plain fetch-and-add counter (`Clone` derived: a copy shares the applied count).
fn counted() -> Counted {
    Counted {
        value: 0,
        applied: Arc::new(AtomicUsize::new(0)),
    }
}

fn applied(counts: &[Arc<AtomicUsize>]) -> Vec<usize> {
    counts.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

/// The point of the option: a replica without a handle is neither replayed nor waited for,
/// however many laps of the log its neighbour writes. Without dormancy (the control) the
/// writer replays it each time the log fills. Fails if a replica without a handle stays in the
/// log (`applied` of replica 1 then counts the replays).
#[test]
fn a_replica_without_a_handle_is_not_replayed() {
    let (nr, counts, _) = object(2, 2, 16);
    let mut h = nr.register(0).expect("register");
    for i in 1..=200 {
        assert_eq!(h.execute_mut(1), Ok(i));
    }
    assert_eq!(applied(&counts), [200, 0], "replica 1 was replayed");

    // The control: the same without dormancy replays replica 1 (at least 200 - 16 writes).
    let (a, f) = (counts.clone(), Arc::new(AtomicBool::new(false)));
    a[1].store(0, Ordering::Relaxed);
    a[0].store(0, Ordering::Relaxed);
    let plain = NodeReplicated::builder()
        .replicas(2)
        .log_size(16)
        .threads_per_replica(4)
        .build(move |i| Counter {
            counted: Counted {
                value: 0,
                applied: a[i].clone(),
            },
            fail_copy: f.clone(),
        })
        .expect("build");
    let mut h = plain.register(0).expect("register");
    for _ in 0..200 {
        h.execute_mut(1).expect("write");
    }
    assert!(applied(&counts)[1] >= 184, "{:?}", applied(&counts));
}

/// A registration wakes a dormant replica with every write so far; it then follows the log
/// (its writes reach the other replica, the other's reach it), goes dormant again when its
/// last handle drops, and wakes again with the writes made meanwhile.
#[test]
fn a_registration_wakes_a_dormant_replica_with_every_write() {
    let (nr, counts, _) = object(2, 2, 16);
    let mut h0 = nr.register(0).expect("register");
    for _ in 0..40 {
        h0.execute_mut(1).expect("write");
    }
    let mut h1 = nr.register(1).expect("wakes replica 1");
    assert_eq!(h1.execute(()), Ok(40));
    assert_eq!(h1.execute_mut(2), Ok(42));
    assert_eq!(h0.execute(()), Ok(42));
    assert_eq!(h0.execute_mut(1), Ok(43));
    assert_eq!(h1.execute(()), Ok(43));
    // Awake with a handle: replica 1 applied its own write and replayed replica 0's.
    assert_eq!(applied(&counts), [42, 2]);
    drop(h1);
    for i in 44..=143 {
        assert_eq!(h0.execute_mut(1), Ok(i));
    }
    assert_eq!(
        applied(&counts)[1],
        2,
        "replica 1 dormant again: not replayed"
    );
    let mut h1 = nr.register(1).expect("wakes replica 1 again");
    assert_eq!(h1.execute(()), Ok(143));
    assert_eq!(
        nr.with_replica_state(1, |c, _| c.counted.value),
        Ok(143),
        "awake: its own state"
    );
}

/// At least one replica stays live: the last one with handles does not go dormant when they
/// drop, and a registration elsewhere moves the live replica there (the idle live one goes
/// dormant once another is woken). Fails if the last live replica went dormant (its writes
/// would then be lost to a later wake: `Ok(3)` below), or if the idle live one stayed in the
/// log (its count would grow).
#[test]
fn the_last_live_replica_stays_awake() {
    let (nr, counts, _) = object(2, 2, 16);
    let mut h1 = nr
        .register(1)
        .expect("wakes replica 1; replica 0 goes dormant");
    for _ in 0..3 {
        h1.execute_mut(1).expect("write");
    }
    drop(h1);
    let mut h1 = nr.register(1).expect("still live");
    for _ in 0..100 {
        h1.execute_mut(1).expect("write");
    }
    assert_eq!(applied(&counts), [0, 103], "replica 0 dormant all along");
    drop(h1);
    let mut h0 = nr.register(0).expect("wakes replica 0 from replica 1");
    assert_eq!(h0.execute(()), Ok(103));
    assert_eq!(h0.execute_mut(1), Ok(104));
}

/// `with_replica_state` on a dormant replica answers from a live one (the same writes), not
/// from the dormant replica's stale state.
#[test]
fn with_replica_state_of_a_dormant_replica_answers_from_a_live_one() {
    let (nr, _, _) = object(3, 3, 16);
    let mut h = nr.register(0).expect("register");
    for _ in 0..50 {
        h.execute_mut(1).expect("write");
    }
    assert_eq!(
        nr.with_replica_state(2, |c, n| (c.counted.value, n)),
        Ok((50, 50))
    );
    let mut h2 = nr.register(2).expect("wakes 2");
    h2.execute_mut(1).expect("write");
    drop(h2);
    h.execute_mut(1).expect("write");
    assert_eq!(
        nr.with_replica_state(2, |c, n| (c.counted.value, n)),
        Ok((52, 52))
    );
}

/// Membership with dormancy: an added replica starts dormant and wakes on registration, a
/// dormant replica can be removed (even when only one other is live), the only live one
/// cannot.
#[test]
fn dormant_replicas_compose_with_add_and_remove() {
    let (nr, counts, _) = object(2, 3, 16);
    let mut h = nr.register(0).expect("register");
    for _ in 0..30 {
        h.execute_mut(1).expect("write");
    }
    let r = nr.add_replica(0).expect("room");
    for _ in 0..30 {
        h.execute_mut(1).expect("write");
    }
    let mut hr = nr.register(r).expect("wakes the added replica");
    assert_eq!(hr.execute(()), Ok(60));
    assert!(matches!(
        nr.remove_replica(0),
        Err(ReplicaError::InUse { replica: 0, .. })
    ));
    drop(hr);
    nr.remove_replica(1).expect("a dormant replica is removed");
    assert!(nr.register(1).is_err(), "retired");
    drop(h);
    // Replica 0 is the only live one (the added one went dormant with its handle).
    assert!(matches!(
        nr.remove_replica(0),
        Err(ReplicaError::LastReplica)
    ));
    nr.remove_replica(r).expect("dormant");
    let mut h = nr.register(0).expect("register");
    assert_eq!(h.execute_mut(1), Ok(61));
    assert_eq!(applied(&counts)[1], 0, "replica 1 never woke");
}

/// A panic in `clone_from` propagates from `register`, leaves the replica dormant and the
/// object unpoisoned; the next registration wakes it.
#[test]
fn a_panicking_copy_leaves_the_replica_dormant_and_the_object_usable() {
    let (nr, _, fail) = object(2, 2, 16);
    let mut h0 = nr.register(0).expect("register");
    h0.execute_mut(5).expect("write");
    fail[1].store(true, Ordering::Relaxed);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| nr.register(1)));
    assert!(r.is_err(), "the panic propagates");
    assert!(!nr.is_poisoned());
    for _ in 0..40 {
        h0.execute_mut(1)
            .expect("the log does not wait for replica 1");
    }
    let mut h1 = nr.register(1).expect("wakes now");
    assert_eq!(h1.execute(()), Ok(45));
}

/// In memory: every committed operation, in commit order.
#[derive(Default)]
struct Memory(Mutex<Vec<u64>>);

impl CommitLog<u64> for Memory {
    fn commit(&self, first: u64, ops: &[&u64]) -> Result<(), CommitError> {
        let mut log = self.0.lock().map_err(|_| CommitError::new("poisoned"))?;
        assert_eq!(first, log.len() as u64, "in order, each index once");
        log.extend(ops.iter().copied());
        Ok(())
    }
}

/// With a commit log, dormancy changes nothing that the hook sees: every write is committed
/// once, in order, and a woken replica shows exactly the committed writes.
#[test]
fn dormant_replicas_keep_the_commit_log_whole() {
    let log = Arc::new(Memory::default());
    let nr = NodeReplicated::builder()
        .replicas(2)
        .log_size(16)
        .threads_per_replica(4)
        .commit_log(log.clone())
        .dormant_replicas(true)
        .build(|_| counted())
        .expect("build");
    let mut h0 = nr.register(0).expect("register");
    for _ in 0..40 {
        h0.execute_mut(1).expect("write");
    }
    let mut h1 = nr.register(1).expect("wakes");
    assert_eq!(h1.execute(()), Ok(40));
    h1.execute_mut(1).expect("write");
    drop(h1);
    h0.execute_mut(1).expect("write");
    assert_eq!(nr.with_replica_state(1, |c, n| (c.value, n)), Ok((42, 42)));
    assert_eq!(log.0.lock().expect("lock").len(), 42);
}

/// Threads register and drop handles on replicas 1 and 2 (so they sleep and wake, racing
/// with each other, with the last drop and with the writes) while a thread on replica 0 and
/// the churning threads write: every fetch-and-add response appears exactly once (no write
/// lost or applied twice), and every replica woken at the end shows the total. Also runs a
/// dedicated combiner on replica 0 in one of two rounds.
#[test]
fn registrations_racing_with_drops_and_writes_lose_no_write() {
    common::with_deadlock_watchdog(120, || {
        for round in 0..4 {
            let dedicated = round % 2 == 1;
            let nr = NodeReplicated::builder()
                .replicas(3)
                .log_size(16)
                .threads_per_replica(4)
                .dedicated_combiners(dedicated)
                .dormant_replicas(true)
                .build(|_| counted())
                .expect("build");
            let stop = AtomicBool::new(false);
            let mut responses: Vec<u64> = std::thread::scope(|s| {
                let combiner = dedicated
                    .then(|| s.spawn(|| nr.run_combiner(0, || stop.load(Ordering::Relaxed))));
                let steady = s.spawn(|| {
                    let mut h = nr.register(0).expect("register");
                    (0..300)
                        .map(|_| h.execute_mut(1).expect("write"))
                        .collect::<Vec<_>>()
                });
                let churn: Vec<_> = (0..2)
                    .map(|t| {
                        let nr = &nr;
                        s.spawn(move || {
                            let mut got = Vec::new();
                            for i in 0..60 {
                                let mut h = nr.register(1 + (t + i) % 2).expect("register");
                                let seen = h.execute(()).expect("read");
                                let mine = h.execute_mut(1).expect("write");
                                assert!(mine > seen, "a woken replica went back in time");
                                got.push(mine);
                            }
                            got
                        })
                    })
                    .collect();
                let mut all = steady.join().expect("steady writer");
                for c in churn {
                    all.extend(c.join().expect("churning thread"));
                }
                stop.store(true, Ordering::Relaxed);
                if let Some(c) = combiner {
                    c.join().expect("combiner thread").expect("combiner");
                }
                all
            });
            responses.sort_unstable();
            let total = responses.len() as u64;
            assert_eq!(responses, (1..=total).collect::<Vec<_>>(), "round {round}");
            for r in 0..3 {
                let mut h = nr.register(r).expect("register");
                assert_eq!(h.execute(()), Ok(total), "replica {r}, round {round}");
            }
        }
    });
}

/// A handle dropped inside `with_replica_state`'s closure, as the last one on its replica: the
/// closure holds that replica's combiner lock, so the sleep that the drop starts cannot take
/// it. The sleep gives up (the replica stays awake, in the log) instead of waiting for this
/// very thread forever. Hangs (the watchdog fails it) if the sleep waits for the lock
/// without a bound.
#[test]
fn a_handle_dropped_inside_with_replica_state_leaves_its_replica_awake() {
    common::with_deadlock_watchdog(120, || {
        let (nr, counts, _) = object(2, 2, 16);
        let mut h0 = nr.register(0).expect("register");
        let mut h1 = nr.register(1).expect("wakes replica 1");
        assert_eq!(h0.execute_mut(1), Ok(1));
        let seen = nr
            .with_replica_state(0, move |c, _| {
                drop(h0);
                c.counted.value
            })
            .expect("state");
        assert_eq!(seen, 1);
        // Replica 0 stayed in the log: it follows replica 1's writes (replayed when the log
        // fills), and a new handle on it sees them all.
        for i in 2..=100 {
            assert_eq!(h1.execute_mut(1), Ok(i));
        }
        assert!(applied(&counts)[0] >= 100 - 16, "{:?}", applied(&counts));
        let mut h0 = nr.register(0).expect("register again");
        assert_eq!(h0.execute(()), Ok(100));
    });
}
