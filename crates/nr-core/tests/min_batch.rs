//! The §5.2 `MIN_BATCH` option (`Builder::min_batch`): a combiner waits, bounded, for a fuller
//! batch.
//!
//! - It works: with `min_batch(2, ..)` and a wait bound far above the test's run time, the
//!   first of two writers waits for the second and applies both operations in one batch (both
//!   run on the same thread); without the option the same schedule applies each on its own
//!   thread. Deterministic: no timing decides the outcome.
//! - The wait is bounded: with `min_batch(8, ..)` and three threads registered, one writing,
//!   every write takes at least the wait bound (so the wait really happened) and the whole run
//!   ends (a watchdog catches a hang). A replica with a single registered thread never waits.
//! - Readers are not held up by a waiting combiner, on one replica (the writer side is given
//!   back during the wait) and on two (the waiting combiner refreshes its replica, so a read
//!   there sees a write completed on another replica meanwhile).
//! - The combiner takes the writer side back before applying: reads that overlap writes
//!   never see a write half applied.
//! - No lost wake-ups, every response right: many threads, short bounds, counters checked.
//!   (Linearizability with the option on is checked in `tests/linearizability.rs`.)

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use common::with_deadlock_watchdog;
use nr_core::{Dispatch, NodeReplicated};

/// A counter that records which thread applied each write; a read returns the sum and the
/// appliers in order.
#[derive(Default)]
struct Tracked {
    sum: u64,
    applied_by: Vec<ThreadId>,
}

impl Dispatch for Tracked {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = (u64, Vec<ThreadId>);
    fn dispatch(&self, _: ()) -> Self::Response {
        (self.sum, self.applied_by.clone())
    }
    fn dispatch_mut(&mut self, v: u64) -> Self::Response {
        self.applied_by.push(std::thread::current().id());
        self.sum += v;
        (self.sum, Vec::new())
    }
}

/// Two writers on the last replica: the second writes 50 ms after the first. Returns whether
/// both writes were applied to that replica by the same thread, i.e. in one batch.
fn two_writers_one_batch(replicas: usize, min_batch: Option<usize>) -> bool {
    let mut builder = NodeReplicated::builder().replicas(replicas);
    if let Some(n) = min_batch {
        // Far above the test's run time: only a second operation ends the wait.
        builder = builder.min_batch(n, Duration::from_secs(60));
    }
    let nr = builder.build(|_| Tracked::default()).expect("valid");
    let r = replicas - 1;
    // Both threads register before either writes: a combiner waits for at most as many
    // operations as threads ever registered with its replica.
    let registered = Barrier::new(2);
    std::thread::scope(|s| {
        let (nr, registered) = (&nr, &registered);
        let first = s.spawn(move || {
            let mut h = nr.register(r).unwrap();
            registered.wait();
            h.execute_mut(1).unwrap().0
        });
        let second = s.spawn(move || {
            let mut h = nr.register(r).unwrap();
            registered.wait();
            std::thread::sleep(Duration::from_millis(50));
            h.execute_mut(2).unwrap().0
        });
        let (a, b) = (first.join().unwrap(), second.join().unwrap());
        assert_eq!(a.max(b), 3, "both writes applied");
    });
    let (sum, appliers) = nr.register(r).unwrap().execute(()).unwrap();
    assert_eq!((sum, appliers.len()), (3, 2));
    appliers[0] == appliers[1]
}

#[test]
fn first_writer_waits_and_applies_both_in_one_batch() {
    for replicas in [1, 2] {
        let batched = with_deadlock_watchdog(50, move || two_writers_one_batch(replicas, Some(2)));
        assert!(
            batched,
            "{replicas} replica(s): min_batch(2) did not batch the two writes"
        );
    }
}

#[test]
fn without_min_batch_the_same_schedule_gives_two_batches() {
    // The control for the test above: it shows the schedule itself does not batch.
    for replicas in [1, 2] {
        assert!(
            !two_writers_one_batch(replicas, None),
            "{replicas} replica(s): two batches expected without the option"
        );
    }
}

#[test]
fn fewer_threads_than_min_batch_wait_at_most_the_bound() {
    const WAIT: Duration = Duration::from_millis(5);
    for replicas in [1, 2] {
        let elapsed = with_deadlock_watchdog(60, move || {
            let nr = NodeReplicated::builder()
                .replicas(replicas)
                .min_batch(8, WAIT)
                .build(|_| Tracked::default())
                .expect("valid");
            // Three threads registered (fewer than 8), two of them idle: every batch of the
            // third waits for operations that never come, until the bound.
            let mut h = nr.register(0).unwrap();
            let _idle = [nr.register(0).unwrap(), nr.register(0).unwrap()];
            let start = Instant::now();
            for i in 1..=10u64 {
                assert_eq!(h.execute_mut(1).unwrap().0, i);
            }
            start.elapsed()
        });
        // A lower bound only (time only grows): each write waited for a batch that never came,
        // so the option is really on; the watchdog is the upper bound (no hang).
        assert!(
            elapsed >= WAIT * 10,
            "{replicas} replica(s): 10 writes took {elapsed:?}, less than 10 waits"
        );
    }
}

#[test]
fn a_replica_with_one_thread_never_waits() {
    for replicas in [1, 2] {
        with_deadlock_watchdog(50, move || {
            // A wait bound far above the watchdog's: the test ends only if no write waits.
            let nr = NodeReplicated::builder()
                .replicas(replicas)
                .min_batch(4, Duration::from_secs(3_600))
                .build(|_| Tracked::default())
                .expect("valid");
            let mut h = nr.register(0).unwrap();
            for i in 1..=100u64 {
                assert_eq!(h.execute_mut(1).unwrap().0, i);
            }
        });
    }
}

#[test]
fn readers_run_while_a_combiner_waits_for_its_batch() {
    for replicas in [1, 2] {
        with_deadlock_watchdog(50, move || {
            let nr = NodeReplicated::builder()
                .replicas(replicas)
                .min_batch(2, Duration::from_secs(60))
                .build(|_| Tracked::default())
                .expect("valid");
            let r = replicas - 1;
            let done = AtomicBool::new(false);
            // Registered before the writer writes, so that its combiner waits for a batch of 2.
            let mut second_writer = nr.register(r).unwrap();
            std::thread::scope(|s| {
                let (nr, done) = (&nr, &done);
                let writer = s.spawn(move || {
                    let response = nr.register(r).unwrap().execute_mut(5).unwrap();
                    done.store(true, Ordering::SeqCst);
                    response
                });
                std::thread::sleep(Duration::from_millis(50));
                // The writer's combiner waits (up to 60 s) for a second operation; reads on its
                // replica and on the others must not wait for it.
                for q in 0..replicas {
                    let (sum, _) = nr.register(q).unwrap().execute(()).unwrap();
                    assert_eq!(sum, 0, "replica {q}: the pending write is not visible yet");
                }
                if replicas > 1 {
                    // A write completes on another replica; a read on the waiting combiner's
                    // replica must see it, and only the waiting combiner can bring its replica
                    // up to date (it holds the combiner lock): it refreshes while it waits.
                    assert_eq!(nr.register(0).unwrap().execute_mut(10).unwrap().0, 10);
                    let (sum, _) = nr.register(r).unwrap().execute(()).unwrap();
                    assert_eq!(sum, 10, "the completed write is visible on replica {r}");
                }
                assert!(!done.load(Ordering::SeqCst), "the combiner did not wait");
                // A second write completes the batch and releases the first.
                let second = second_writer.execute_mut(1).unwrap().0;
                let first = writer.join().unwrap().0;
                let extra = if replicas > 1 { 10 } else { 0 };
                assert_eq!(first.max(second), 6 + extra);
            });
        });
    }
}

#[test]
fn many_threads_short_waits_every_response_right() {
    const THREADS: usize = 6;
    const OPS: u64 = 3_000;
    for replicas in [1, 2, 3] {
        with_deadlock_watchdog(120, move || {
            let nr = NodeReplicated::builder()
                .replicas(replicas)
                .log_size(64)
                .threads_per_replica(THREADS)
                .min_batch(3, Duration::from_micros(50))
                .build(|_| Sum::default())
                .expect("valid");
            let start = Barrier::new(THREADS);
            let seen = Mutex::new(Vec::new());
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let (nr, start, seen) = (&nr, &start, &seen);
                    s.spawn(move || {
                        let mut h = nr.register(t % replicas).unwrap();
                        let mut mine = Vec::with_capacity(OPS as usize);
                        start.wait();
                        let mut last_read = 0;
                        for i in 0..OPS {
                            if i % 4 == 3 {
                                let v = h.execute(()).unwrap();
                                assert!(v >= last_read, "a read went back: {v} < {last_read}");
                                last_read = v;
                            } else {
                                // Every write adds 1; responses are the counter after it, so
                                // they must be distinct across all threads.
                                let v = h.execute_mut(1).unwrap();
                                assert!(v > last_read);
                                last_read = v;
                                mine.push(v);
                            }
                        }
                        seen.lock().unwrap().extend(mine);
                    });
                }
            });
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            let writes = THREADS as u64 * (OPS - OPS / 4);
            assert_eq!(
                seen,
                (1..=writes).collect::<Vec<_>>(),
                "{replicas} replica(s)"
            );
            for q in 0..replicas {
                assert_eq!(nr.register(q).unwrap().execute(()).unwrap(), writes);
            }
        });
    }
}

/// A counter kept twice, updated in two steps with a yield between them: a read that overlaps
/// a write (a combiner applying without the writer side) sees the two halves differ.
#[derive(Default)]
struct Sum(u64, u64);

impl Dispatch for Sum {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        assert_eq!(self.0, self.1, "a read saw a write half applied");
        self.0
    }
    fn dispatch_mut(&mut self, v: u64) -> u64 {
        self.0 += v;
        std::thread::yield_now();
        self.1 += v;
        self.0
    }
}
