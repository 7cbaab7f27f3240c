//! CNR (`nr_core::cnr`): replicas agree, scans are ordered against every log, poisoning, and
//! more threads than cores.

#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
use nr_core::Poisoned;

/// Counters, one per key; keys spread over the logs.
struct Counters {
    counts: Vec<AtomicU64>,
}

impl Counters {
    fn new(keys: usize) -> Self {
        Self {
            counts: (0..keys).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Write {
    /// Adds 1 to a key; returns the new count.
    Incr(usize),
    /// A scan: the total of every key.
    Total,
    /// A scan: sets every key to 0.
    Reset,
    /// Panics in `dispatch_mut`.
    Boom(usize),
    /// A scan that panics.
    BoomScan,
}

impl LogMapper for Write {
    fn route(&self, _logs: usize) -> Route {
        match *self {
            Write::Incr(k) | Write::Boom(k) => Route::Log(k),
            Write::Total | Write::Reset | Write::BoomScan => Route::Scan,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Read {
    Get(usize),
    /// Every key, after every log.
    All,
}

impl LogMapper for Read {
    fn route(&self, _logs: usize) -> Route {
        match *self {
            Read::Get(k) => Route::Log(k),
            Read::All => Route::Scan,
        }
    }
}

impl ConcurrentDispatch for Counters {
    type ReadOperation<'a> = Read;
    type WriteOperation = Write;
    type Response = u64;

    fn dispatch(&self, op: Read) -> u64 {
        match op {
            Read::Get(k) => self.counts[k].load(Ordering::Relaxed),
            Read::All => self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
        }
    }

    fn dispatch_mut(&self, op: Write) -> u64 {
        match op {
            Write::Incr(k) => self.counts[k].fetch_add(1, Ordering::Relaxed) + 1,
            Write::Total => self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
            Write::Reset => {
                for c in &self.counts {
                    c.store(0, Ordering::Relaxed);
                }
                0
            }
            Write::Boom(_) | Write::BoomScan => panic!("boom"),
        }
    }
}

/// Writes on every log from every replica, scans included: each replica ends with the same
/// counts, each increment's response is unique per key, and the scans' totals only grow
/// (no `Reset` here), each seeing at least what its own thread did before.
#[test]
fn replicas_agree_and_scans_see_every_earlier_write() {
    const THREADS: usize = 4;
    const KEYS: usize = 8;
    const OPS: usize = 2_000;
    for (logs, replicas, log_size) in [(1, 2, 8), (2, 2, 8), (4, 2, 16), (4, 3, 64), (3, 1, 4)] {
        let cnr = ConcurrentReplicated::builder()
            .logs(logs)
            .replicas(replicas)
            .log_size(log_size)
            .threads_per_replica(THREADS)
            .build(|_| Counters::new(KEYS))
            .unwrap();
        let start = Barrier::new(THREADS);
        let responses: Vec<Vec<(usize, u64)>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (cnr, start) = (&cnr, &start);
                    s.spawn(move || {
                        let mut h = cnr.register(t % replicas).unwrap();
                        let mut mine = Vec::new();
                        let mut done = 0;
                        start.wait();
                        for i in 0..OPS {
                            if i % 97 == 0 {
                                let total = h.execute_mut(Write::Total).unwrap();
                                assert!(total >= done, "a scan missed this thread's writes");
                            } else {
                                let k = (t * 3 + i) % KEYS;
                                mine.push((k, h.execute_mut(Write::Incr(k)).unwrap()));
                                done += 1;
                            }
                        }
                        mine
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut per_key = vec![Vec::new(); KEYS];
        for (k, v) in responses.into_iter().flatten() {
            per_key[k].push(v);
        }
        for (k, mut vs) in per_key.into_iter().enumerate() {
            vs.sort_unstable();
            let n = vs.len() as u64;
            assert_eq!(vs, (1..=n).collect::<Vec<_>>(), "key {k}: lost or doubled");
            for r in 0..replicas {
                let mut h = cnr.register(r).unwrap();
                assert_eq!(h.execute(Read::Get(k)).unwrap(), n, "replica {r} key {k}");
            }
        }
        let total = cnr.register(0).unwrap().execute(Read::All).unwrap();
        for r in 0..replicas {
            assert_eq!(
                cnr.register(r).unwrap().execute_mut(Write::Total).unwrap(),
                total,
                "replica {r}"
            );
        }
    }
}

/// A `Reset` scan is ordered against every log: after it, on any replica, every key reads as
/// the increments ordered after it only.
#[test]
fn a_scan_is_ordered_against_every_log_on_every_replica() {
    let cnr = ConcurrentReplicated::builder()
        .logs(4)
        .replicas(3)
        .log_size(8)
        .threads_per_replica(2)
        .build(|_| Counters::new(4))
        .unwrap();
    let mut h0 = cnr.register(0).unwrap();
    for k in 0..4 {
        for _ in 0..5 {
            h0.execute_mut(Write::Incr(k)).unwrap();
        }
    }
    h0.execute_mut(Write::Reset).unwrap();
    h0.execute_mut(Write::Incr(2)).unwrap();
    for r in 0..3 {
        let mut h = cnr.register(r).unwrap();
        assert_eq!(h.execute(Read::All).unwrap(), 1, "replica {r}");
        assert_eq!(h.execute(Read::Get(2)).unwrap(), 1, "replica {r}");
    }
}

/// A panicking write poisons the object: the panic reaches the thread that ran it, and every
/// operation after that, on any replica, returns `Poisoned`; threads that were running at the
/// time end (with their results or `Poisoned`), none hangs.
#[test]
fn a_panicking_write_or_scan_poisons() {
    for (boom, replicas) in [
        (Write::Boom(1), 2),
        (Write::BoomScan, 2),
        (Write::Boom(1), 1),
        (Write::BoomScan, 1),
    ] {
        let cnr = ConcurrentReplicated::builder()
            .logs(2)
            .replicas(replicas)
            .log_size(8)
            .threads_per_replica(4)
            .build(|_| Counters::new(4))
            .unwrap();
        let start = Barrier::new(4);
        std::thread::scope(|s| {
            for t in 0..3 {
                let (cnr, start) = (&cnr, &start);
                s.spawn(move || {
                    let mut h = cnr.register(t % replicas).unwrap();
                    start.wait();
                    loop {
                        // This thread may be the combiner that runs the panicking write.
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            if t == 2 {
                                h.execute_mut(Write::Total)
                            } else {
                                h.execute_mut(Write::Incr(t))
                            }
                        }));
                        if matches!(r, Err(_) | Ok(Err(Poisoned))) {
                            break;
                        }
                    }
                });
            }
            let mut h = cnr.register(replicas - 1).unwrap();
            start.wait();
            for _ in 0..50 {
                h.execute_mut(Write::Incr(0)).unwrap();
            }
            let caught = catch_unwind(AssertUnwindSafe(|| h.execute_mut(boom)));
            // The combiner that ran it panicked: this thread, or another, which then returned
            // Poisoned to us.
            assert!(
                matches!(caught, Err(_) | Ok(Err(Poisoned))),
                "{boom:?}, {replicas} replicas"
            );
        });
        assert!(cnr.is_poisoned(), "{boom:?}, {replicas} replicas");
        for r in 0..replicas {
            assert_eq!(
                cnr.register(r).err(),
                Some(nr_core::RegisterError::Poisoned)
            );
        }
    }
}

/// Many more threads than cores (this machine class has 2), small logs, scans and reads mixed
/// in: the run ends, and the replicas agree.
#[test]
fn more_threads_than_cores_do_not_hang() {
    const THREADS: usize = 16;
    for replicas in [1, 2] {
        let cnr = ConcurrentReplicated::builder()
            .logs(4)
            .replicas(replicas)
            .log_size(16)
            .threads_per_replica(THREADS)
            .build(|_| Counters::new(8))
            .unwrap();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let cnr = &cnr;
                s.spawn(move || {
                    let mut h = cnr.register(t % replicas).unwrap();
                    for i in 0..500 {
                        match i % 50 {
                            0 => drop(h.execute_mut(Write::Total).unwrap()),
                            1..=9 => drop(h.execute(Read::Get(i % 8)).unwrap()),
                            _ => drop(h.execute_mut(Write::Incr((t + i) % 8)).unwrap()),
                        }
                    }
                });
            }
        });
        let expected = (THREADS * 500 * 40 / 50) as u64;
        for r in 0..replicas {
            let mut h = cnr.register(r).unwrap();
            assert_eq!(
                h.execute(Read::All).unwrap(),
                expected,
                "{replicas} replicas"
            );
        }
    }
}
