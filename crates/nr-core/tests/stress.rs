//! Stress: 8 threads on this 2-core machine, 4 replicas, a 64-entry log that wraps constantly,
//! and one replica whose threads stop operating half way (while staying registered). The log
//! then fills up behind the idle replica, and appenders must bring it up to date themselves
//! (§6 "Inactive replica"); without that, this test hangs (the watchdog turns a hang into a
//! failure). Every response is checked against what the sequential structure must answer.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::collections::HashMap;
use std::sync::Barrier;

use common::with_deadlock_watchdog;
use nr_core::{Dispatch, NodeReplicated};

const THREADS: usize = 8;
const REPLICAS: usize = 4;
const IDLE_REPLICA: usize = 3;
const KEYS_PER_THREAD: u64 = 16;
const OPS: usize = if cfg!(debug_assertions) {
    4_000
} else {
    40_000
};

/// A counter plus a map: `Incr` responses must be a permutation of `1..=n`, and each thread owns
/// its keys, so it knows exactly what every `Put` must return.
#[derive(Default)]
struct Ledger {
    counter: u64,
    map: HashMap<u64, u64>,
}

#[derive(Clone, Debug)]
enum Write {
    Incr,
    Put(u64, u64),
}

#[derive(Debug, Clone, Copy)]
enum Read {
    Get(u64),
    Counter,
    /// (counter, entries, sum of keys * values): equal on all replicas at the end.
    Digest,
}

#[derive(Debug, PartialEq, Eq)]
enum Resp {
    Value(Option<u64>),
    Count(u64),
    Digest(u64, usize, u64),
}

impl Dispatch for Ledger {
    type ReadOperation<'a> = Read;
    type WriteOperation = Write;
    type Response = Resp;

    fn dispatch(&self, op: Read) -> Resp {
        match op {
            Read::Get(k) => Resp::Value(self.map.get(&k).copied()),
            Read::Counter => Resp::Count(self.counter),
            Read::Digest => Resp::Digest(
                self.counter,
                self.map.len(),
                self.map
                    .iter()
                    .fold(0u64, |acc, (k, v)| acc.wrapping_add(k.wrapping_mul(*v))),
            ),
        }
    }

    fn dispatch_mut(&mut self, op: Write) -> Resp {
        match op {
            Write::Incr => {
                self.counter += 1;
                Resp::Count(self.counter)
            }
            Write::Put(k, v) => Resp::Value(self.map.insert(k, v)),
        }
    }
}

/// What one thread saw, for the global checks after the run.
struct Report {
    incr_responses: Vec<u64>,
    final_values: HashMap<u64, u64>,
}

fn worker(nr: &NodeReplicated<Ledger>, t: usize, start: &Barrier, end: &Barrier) -> Report {
    let replica = t % REPLICAS;
    let mut h = nr.register(replica).expect("slot available");
    start.wait();
    let ops = if replica == IDLE_REPLICA {
        OPS / 2
    } else {
        OPS
    };
    let own_key = |i: u64| (t as u64) * 1_000 + i % KEYS_PER_THREAD;
    let mut mine: HashMap<u64, u64> = HashMap::new();
    // Largest value seen per foreign key: values only grow, and a later read may not go back.
    let mut seen: HashMap<u64, u64> = HashMap::new();
    let mut incr_responses = Vec::new();
    let mut last_counter = 0;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ t as u64;
    for i in 0..ops {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match x % 8 {
            0 | 1 => {
                let k = own_key(x >> 8);
                let v = i as u64 + 1;
                let old = h.execute_mut(Write::Put(k, v)).unwrap();
                assert_eq!(
                    old,
                    Resp::Value(mine.insert(k, v)),
                    "thread {t}: Put({k}) old"
                );
            }
            2 | 3 => {
                let Resp::Count(c) = h.execute_mut(Write::Incr).unwrap() else {
                    panic!("Incr answered a non-count")
                };
                assert!(c > last_counter, "thread {t}: counter went back");
                last_counter = c;
                incr_responses.push(c);
            }
            4 => {
                let Resp::Count(c) = h.execute(Read::Counter).unwrap() else {
                    panic!("Counter answered a non-count")
                };
                assert!(c >= last_counter, "thread {t}: stale counter read");
                last_counter = c;
            }
            5 => {
                let k = own_key(x >> 8);
                let got = h.execute(Read::Get(k)).unwrap();
                assert_eq!(
                    got,
                    Resp::Value(mine.get(&k).copied()),
                    "thread {t}: own key"
                );
            }
            _ => {
                let other = (x >> 8) as usize % THREADS;
                let k = (other as u64) * 1_000 + (x >> 16) % KEYS_PER_THREAD;
                let Resp::Value(got) = h.execute(Read::Get(k)).unwrap() else {
                    panic!("Get answered a non-value")
                };
                let floor = seen.entry(k).or_insert(0);
                let got = got.unwrap_or(0);
                if other != t {
                    assert!(
                        got >= *floor,
                        "thread {t}: key {k} went back {floor} -> {got}"
                    );
                }
                *floor = got;
            }
        }
    }
    // Stay registered (idle) until everyone is done: the idle replica's threads must not help.
    end.wait();
    Report {
        incr_responses,
        final_values: mine,
    }
}

#[test]
fn eight_threads_four_replicas_tiny_log_idle_replica() {
    with_deadlock_watchdog(600, || {
        let nr = NodeReplicated::builder()
            .replicas(REPLICAS)
            .log_size(64)
            .threads_per_replica(THREADS / REPLICAS)
            .build(|_| Ledger::default())
            .expect("valid configuration");
        let (start, end) = (Barrier::new(THREADS), Barrier::new(THREADS));
        let reports: Vec<Report> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (nr, start, end) = (&nr, &start, &end);
                    s.spawn(move || worker(nr, t, start, end))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });

        // Every increment got a distinct response, and together they are exactly 1..=n.
        let mut incrs: Vec<u64> = reports
            .iter()
            .flat_map(|r| r.incr_responses.clone())
            .collect();
        incrs.sort_unstable();
        let n = incrs.len() as u64;
        assert!(
            incrs.iter().copied().eq(1..=n),
            "lost or duplicated increments"
        );

        // All replicas (the idle one included) hold the same, expected state.
        let expected: HashMap<u64, u64> = reports
            .iter()
            .flat_map(|r| r.final_values.clone())
            .collect();
        let sum = expected
            .iter()
            .fold(0u64, |acc, (k, v)| acc.wrapping_add(k.wrapping_mul(*v)));
        for r in 0..REPLICAS {
            let mut h = nr.register(r).unwrap();
            assert_eq!(
                h.execute(Read::Digest).unwrap(),
                Resp::Digest(n, expected.len(), sum),
                "replica {r} diverged"
            );
            for (k, v) in &expected {
                assert_eq!(h.execute(Read::Get(*k)).unwrap(), Resp::Value(Some(*v)));
            }
        }
    });
}
