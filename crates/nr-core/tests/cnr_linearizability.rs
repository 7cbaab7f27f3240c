//! Concurrent histories of CNR objects (`nr_core::cnr`), recorded and checked for
//! linearizability, with concurrency across logs *and* replicas, scans included.
//!
//! Every history: 1-3 replicas, 1-4 logs, 3-4 threads, each holding a handle on every replica
//! and moving to another from one operation to the next; 1-3 keys (key `k` goes through log
//! `k % logs`); every written value distinct; a small log (4, 8 or 64 entries, so it wraps);
//! threads released together by a barrier; in half of the histories `dispatch_mut` yields the
//! CPU in the middle of an update. Operations: `Get`, `Put`, `Remove` (one log) and the scans
//! `Sum` (the sum of every value, routed to every log) and `Clear` (empties the map).
//!
//! 2,000 histories by default (`NR_LIN_HISTORIES`, `NR_LIN_SEED`; `NR_LIN_REPLICAS` pins the
//! number of replicas, for a soak of one path); the test prints its share of operations that
//! overlapped another thread's. A history that is not linearizable is printed whole (every
//! invocation and response, in time order), and kept in a file under the cargo target's `tmp`
//! directory, with the variables that draw it again alone (`NR_LIN_SEED` set to the generator's
//! state at its start, `NR_LIN_REPLICAS`, `NR_LIN_HISTORIES=1`): the same configuration and
//! programs, written values numbered from 1; the interleaving is the scheduler's, and one
//! history alone may fail the overlap check.

#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Barrier, Mutex};

use common::{env, Rng};
use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
use testkit::lin::EventKind;
use testkit::{check, History, Model, Recorder};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    Get(u64),
    Put(u64, u64),
    Remove(u64),
    Sum,
    Clear,
}

impl LogMapper for Op {
    fn route(&self, logs: usize) -> Route {
        match *self {
            Op::Get(k) | Op::Put(k, _) | Op::Remove(k) => Route::Log(k as usize % logs),
            Op::Sum | Op::Clear => Route::Scan,
        }
    }
}

/// The sequential model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct ScanKv(BTreeMap<u64, u64>);

impl Model for ScanKv {
    type Op = Op;
    type Ret = Option<u64>;
    fn step(&mut self, op: &Op) -> Option<u64> {
        match *op {
            Op::Get(k) => self.0.get(&k).copied(),
            Op::Put(k, v) => self.0.insert(k, v),
            Op::Remove(k) => self.0.remove(&k),
            Op::Sum => Some(self.0.values().sum()),
            Op::Clear => {
                self.0.clear();
                None
            }
        }
    }
}

/// A map sharded by log: shard `i` holds the keys of log `i`, behind its own lock.
struct Sharded {
    shards: Vec<Mutex<BTreeMap<u64, u64>>>,
    yield_in_update: bool,
}

impl ConcurrentDispatch for Sharded {
    type ReadOperation<'a> = Op;
    type WriteOperation = Op;
    type Response = Option<u64>;

    fn dispatch(&self, op: Op) -> Option<u64> {
        match op {
            Op::Get(k) => {
                let shard = &self.shards[k as usize % self.shards.len()];
                shard.lock().unwrap().get(&k).copied()
            }
            _ => unreachable!("reads are gets"),
        }
    }

    fn dispatch_mut(&self, op: Op) -> Option<u64> {
        let n = self.shards.len();
        if self.yield_in_update {
            std::thread::yield_now();
        }
        match op {
            Op::Put(k, v) => self.shards[k as usize % n].lock().unwrap().insert(k, v),
            Op::Remove(k) => self.shards[k as usize % n].lock().unwrap().remove(&k),
            // Scans: CNR holds every log of the replica, so no shard changes meanwhile; the
            // yield between shards widens the window a broken barrier would show.
            Op::Sum => {
                let mut sum = 0;
                for s in &self.shards {
                    sum += s.lock().unwrap().values().sum::<u64>();
                    if self.yield_in_update {
                        std::thread::yield_now();
                    }
                }
                Some(sum)
            }
            Op::Clear => {
                for s in &self.shards {
                    s.lock().unwrap().clear();
                    if self.yield_in_update {
                        std::thread::yield_now();
                    }
                }
                None
            }
            Op::Get(_) => unreachable!("gets are reads"),
        }
    }
}

#[test]
fn histories_across_logs_and_replicas_with_scans_are_linearizable() {
    let histories = env("NR_LIN_HISTORIES", 2_000);
    // Any seed but 0 (xorshift's fixed point) is used as given, so that the generator's state at
    // the start of a history, printed with a failure, draws that history again.
    let seed = env("NR_LIN_SEED", 1).max(1);
    // 0: 1-3 replicas at random; else every history has that many (the rest is drawn as usual).
    let pinned_replicas = env("NR_LIN_REPLICAS", 0) as usize;
    let mut rng = Rng(seed);
    let mut next_value = 0u64;
    let mut share = 0.0;
    let mut scans = 0usize;
    for h in 0..histories {
        let history_seed = rng.0;
        let replicas = match pinned_replicas {
            0 => 1 + rng.below(3) as usize,
            pinned => {
                rng.below(3);
                pinned
            }
        };
        let logs = 1 + rng.below(4) as usize;
        let threads = 3 + rng.below(2) as usize;
        let log_size = [4, 8, 64][rng.below(3) as usize];
        let yield_in_update = rng.below(2) == 0;
        let keys = 1 + rng.below(3);
        let programs: Vec<Vec<Op>> = (0..threads)
            .map(|_| {
                (0..6 + rng.below(7))
                    .map(|_| match rng.below(12) {
                        0..=3 => Op::Get(rng.below(keys)),
                        4..=8 => {
                            next_value += 1;
                            Op::Put(rng.below(keys), next_value)
                        }
                        9 => Op::Remove(rng.below(keys)),
                        10 => Op::Sum,
                        _ => Op::Clear,
                    })
                    .collect()
            })
            .collect();
        scans += programs
            .iter()
            .flatten()
            .filter(|op| matches!(op, Op::Sum | Op::Clear))
            .count();
        let cnr = ConcurrentReplicated::builder()
            .logs(logs)
            .replicas(replicas)
            .log_size(log_size)
            .threads_per_replica(threads)
            .build(|_| Sharded {
                shards: (0..logs).map(|_| Mutex::default()).collect(),
                yield_in_update,
            })
            .expect("valid configuration");
        let recorder = Recorder::new();
        let start = Barrier::new(threads);
        std::thread::scope(|s| {
            for (t, program) in programs.iter().enumerate() {
                let (cnr, start) = (&cnr, &start);
                let mut rec = recorder.thread();
                s.spawn(move || {
                    let mut handles: Vec<_> = (0..replicas)
                        .map(|r| cnr.register(r).expect("slot available"))
                        .collect();
                    start.wait();
                    for (i, op) in program.iter().enumerate() {
                        let h = &mut handles[(t + i) % replicas];
                        let id = rec.invoke(*op);
                        let ret = match op {
                            Op::Get(_) => h.execute(*op),
                            _ => h.execute_mut(*op),
                        }
                        .expect("not poisoned");
                        rec.complete(id, ret);
                    }
                });
            }
        });
        let history = recorder.into_history();
        if let Err(v) = check(ScanKv::default(), &history) {
            let report = format!(
                "history {h} of seed {seed} (rerun it alone: NR_LIN_SEED={history_seed} \
                 NR_LIN_REPLICAS={replicas} NR_LIN_HISTORIES=1): {replicas} replicas, {logs} logs, {threads} threads, \
                 log {log_size}, {keys} keys, yield {yield_in_update}\n{v}\n{}",
                listing(&history)
            );
            let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("cnr_linearizability-{history_seed}.txt"));
            let kept = match std::fs::write(&kept, &report) {
                Ok(()) => format!("kept in {}", kept.display()),
                Err(e) => format!("not kept ({}: {e})", kept.display()),
            };
            panic!("{report}\n(this report is {kept})");
        }
        share += history.overlap_share();
    }
    let share = share / histories as f64;
    println!(
        "cnr: {histories} histories linearizable (seed {seed}), {scans} scans; overlap share {:.1}%",
        100.0 * share
    );
    assert!(
        share > 0.3,
        "only {:.1}% of operations overlapped; the check proves little",
        100.0 * share
    );
}

/// The whole history, one event a line in time order (`t<thread> <op>` for an invocation,
/// `t<thread>   -> <response>` for a response), for a failure report.
fn listing(history: &History<Op, Option<u64>>) -> String {
    let mut out = String::from("history (time thread event):");
    for e in history.events() {
        match &e.kind {
            EventKind::Invoke(op) => out += &format!("\n{:>6} t{} {op:?}", e.time, e.thread),
            EventKind::Return(ret) => out += &format!("\n{:>6} t{}   -> {ret:?}", e.time, e.thread),
        }
    }
    out
}
