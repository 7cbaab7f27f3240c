//! `Builder::dedicated_combiners` and `NodeReplicated::run_combiner` (§4, §6 "Inactive
//! replica"): while a dedicated combiner runs, posting threads never combine; every response is
//! right; an idle replica is kept refreshed; stopping it hands combining back to the writers.
//! (Linearizability with dedicated combiners: `tests/linearizability.rs` runs them in a quarter
//! of its histories.)

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use common::with_deadlock_watchdog;
use nr_core::{Dispatch, NodeReplicated, RegisterError};

/// A counter that records which threads applied writes to it, and how many.
struct Watched {
    value: u64,
    appliers: Arc<Mutex<HashSet<ThreadId>>>,
    applied: Arc<AtomicUsize>,
}

impl Dispatch for Watched {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.value
    }
    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.appliers
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        self.applied.fetch_add(1, Ordering::Relaxed);
        self.value += add;
        self.value
    }
}

struct Setup {
    nr: NodeReplicated<Watched>,
    appliers: Vec<Arc<Mutex<HashSet<ThreadId>>>>,
    applied: Vec<Arc<AtomicUsize>>,
}

fn setup(replicas: usize, dedicated: bool) -> Setup {
    let appliers: Vec<_> = (0..replicas).map(|_| Arc::default()).collect();
    let applied: Vec<_> = (0..replicas).map(|_| Arc::default()).collect();
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .log_size(64)
        .threads_per_replica(4)
        .dedicated_combiners(dedicated)
        .build(|r| Watched {
            value: 0,
            appliers: Arc::clone(&appliers[r]),
            applied: Arc::clone(&applied[r]),
        })
        .expect("valid configuration");
    Setup {
        nr,
        appliers,
        applied,
    }
}

/// Runs replica `r`'s dedicated combiner until `stop`, retrying while another thread holds the
/// combiner seat: the tests probe whether a combiner is attached with `run_combiner(r, || true)`,
/// and such a probe, when it wins the race, holds the seat for a moment (it attaches, sees its
/// stop condition and detaches), so the thread meant to run the combiner must try again.
fn run_combiner_retrying(
    nr: &NodeReplicated<Watched>,
    r: usize,
    stop: &AtomicBool,
) -> Result<(), RegisterError> {
    loop {
        match nr.run_combiner(r, || stop.load(Ordering::Relaxed)) {
            Err(RegisterError::CombinerRunning { .. }) => std::thread::yield_now(),
            other => return other,
        }
    }
}

/// 3 writers per replica while every replica has a dedicated combiner: only the combiners apply
/// writes, and every response is right.
fn posting_threads_never_combine(replicas: usize) {
    with_deadlock_watchdog(120, move || {
        const WRITERS: usize = 3;
        const OPS: u64 = if cfg!(debug_assertions) {
            2_000
        } else {
            20_000
        };
        let s = setup(replicas, true);
        let stop = AtomicBool::new(false);
        let combiner_ids = std::thread::scope(|scope| {
            let combiners: Vec<_> = (0..replicas)
                .map(|r| {
                    let (nr, stop) = (&s.nr, &stop);
                    scope.spawn(move || {
                        run_combiner_retrying(nr, r, stop).expect("combiner ran");
                        std::thread::current().id()
                    })
                })
                .collect();
            // Writers start once every combiner is attached.
            while !(0..replicas).all(|r| {
                matches!(
                    s.nr.run_combiner(r, || true),
                    Err(RegisterError::CombinerRunning { .. })
                )
            }) {
                std::thread::yield_now();
            }
            let writers: Vec<_> = (0..WRITERS * replicas)
                .map(|t| {
                    let nr = &s.nr;
                    scope.spawn(move || {
                        let mut h = nr.register(t % replicas).unwrap();
                        let mut last = 0;
                        for _ in 0..OPS {
                            let v = h.execute_mut(1).unwrap();
                            assert!(v > last, "counter went back: {last} then {v}");
                            last = v;
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().expect("writer panicked");
            }
            stop.store(true, Ordering::Relaxed);
            combiners
                .into_iter()
                .map(|c| c.join().expect("combiner panicked"))
                .collect::<HashSet<_>>()
        });
        for (r, appliers) in s.appliers.iter().enumerate() {
            let appliers = appliers.lock().unwrap();
            assert!(
                appliers.is_subset(&combiner_ids),
                "replica {r}: a posting thread combined while dedicated combiners ran"
            );
        }
        let total = (WRITERS * replicas) as u64 * OPS;
        for r in 0..replicas {
            assert_eq!(s.nr.register(r).unwrap().execute(()).unwrap(), total);
        }
    });
}

#[test]
fn posting_threads_never_combine_one_replica() {
    posting_threads_never_combine(1);
}

#[test]
fn posting_threads_never_combine_two_replicas() {
    posting_threads_never_combine(2);
}

#[test]
fn an_idle_replica_is_kept_refreshed_by_its_dedicated_combiner() {
    with_deadlock_watchdog(60, || {
        let s = setup(2, true);
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                s.nr.run_combiner(1, || stop.load(Ordering::Relaxed))
                    .unwrap()
            });
            let mut h = s.nr.register(0).unwrap();
            for _ in 0..200 {
                h.execute_mut(1).unwrap();
            }
            // Nobody reads or writes through replica 1: its combiner alone brings it up to date.
            let began = Instant::now();
            while s.applied[1].load(Ordering::Relaxed) < 200 {
                assert!(
                    began.elapsed() < Duration::from_secs(30),
                    "replica 1 applied only {} of 200 writes",
                    s.applied[1].load(Ordering::Relaxed)
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
}

#[test]
fn writers_combine_again_once_the_dedicated_combiner_stops() {
    with_deadlock_watchdog(60, || {
        let s = setup(1, true);
        let stop = AtomicBool::new(false);
        let mut h = s.nr.register(0).unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| s.nr.run_combiner(0, || stop.load(Ordering::Relaxed)));
            for _ in 0..100 {
                h.execute_mut(1).unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
        // Detached now: the writer combines for itself (a hang here is caught by the watchdog).
        for i in 101..=200 {
            assert_eq!(h.execute_mut(1).unwrap(), i);
        }
        assert!(s.appliers[0]
            .lock()
            .unwrap()
            .contains(&std::thread::current().id()));
    });
}

#[test]
fn run_combiner_errors_are_typed() {
    let s = setup(2, false);
    assert_eq!(
        s.nr.run_combiner(0, || true),
        Err(RegisterError::DedicatedCombinersOff)
    );
    let s = setup(2, true);
    assert!(matches!(
        s.nr.run_combiner(2, || true),
        Err(RegisterError::NoSuchReplica { replica: 2, .. })
    ));
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let first = scope.spawn(|| run_combiner_retrying(&s.nr, 0, &stop));
        let began = Instant::now();
        loop {
            match s.nr.run_combiner(0, || true) {
                Err(RegisterError::CombinerRunning { replica: 0 }) => break,
                Ok(()) => {
                    assert!(began.elapsed() < Duration::from_secs(30), "never attached");
                    std::thread::yield_now();
                }
                other => panic!("{other:?}"),
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert_eq!(first.join().unwrap(), Ok(()));
    });
    // Detached again: a new one may run.
    assert_eq!(s.nr.run_combiner(0, || true), Ok(()));
}
