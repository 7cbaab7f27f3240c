//! Per-key linearizability under concurrency: 4 virtual nodes, 8 threads started in lockstep
//! (a barrier), each operation's recorded interval widened by a short random spin on both
//! sides of the call (an operation of ~100 ns would otherwise rarely overlap another on this
//! 2-core machine; the call still lies inside its interval, so a correct store must pass and a
//! stale read that misses a completed write is still caught),
//! replication lagging on purpose (manual pump: a pumper thread replicates only now and then,
//! and often only one node), histories checked with testkit's Wing-Gong checker against a
//! register per key. The share of operations that overlap another one on the same key is
//! reported and must be substantial, or the check proved little.

#![cfg(not(loom))]
// Tests run real threads, outside the loom shim.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::{Arc, Barrier};
use std::thread;

use common::{lagging_store, pumper, spin, xorshift, NODES};
use ladapa::{MetadataMode, ValueReplication};
use testkit::lin::{check, EventKind, History, Recorder};
use testkit::models::{Register, RegisterOp, RegisterRet};

const THREADS: usize = 8;
const KEYS: u64 = 2;
const OPS_PER_THREAD: usize = 24;

type Hist = History<RegisterOp, RegisterRet>;

/// Operations of `history` whose interval overlaps another operation's, and all operations.
fn overlap(history: &Hist) -> (usize, usize) {
    let mut open: Vec<Option<u64>> = Vec::new(); // per thread: invocation time
    let mut intervals: Vec<(u64, u64)> = Vec::new();
    for event in history.events() {
        if open.len() <= event.thread {
            open.resize(event.thread + 1, None);
        }
        match event.kind {
            EventKind::Invoke(_) => open[event.thread] = Some(event.time),
            EventKind::Return(_) => {
                if let Some(start) = open[event.thread].take() {
                    intervals.push((start, event.time));
                }
            }
        }
    }
    let overlapping = intervals
        .iter()
        .enumerate()
        .filter(|&(i, &(s, e))| {
            intervals
                .iter()
                .enumerate()
                .any(|(j, &(s2, e2))| i != j && s <= e2 && s2 <= e)
        })
        .count();
    (overlapping, intervals.len())
}

fn round(mode: MetadataMode, replication: ValueReplication, seed: u64) -> (usize, usize) {
    let store = lagging_store(mode, replication);
    let recorders: Vec<Recorder<RegisterOp, RegisterRet>> =
        (0..KEYS).map(|_| Recorder::new()).collect();
    let start = Arc::new(Barrier::new(THREADS));
    let mut workers = Vec::new();
    for t in 0..THREADS {
        let store = Arc::clone(&store);
        let start = Arc::clone(&start);
        let mut recs: Vec<_> = recorders.iter().map(Recorder::thread).collect();
        workers.push(thread::spawn(move || {
            let node = store.node(t % NODES).unwrap();
            let mut rng = seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            start.wait();
            for i in 0..OPS_PER_THREAD {
                rng = xorshift(rng);
                let key = rng % KEYS;
                let rec = &mut recs[key as usize];
                let (before, after) = (rng >> 20 & 2047, rng >> 32 & 2047);
                match (rng >> 8) % 8 {
                    0..=2 => {
                        let value = ((t as u64 + 1) << 32) | (i as u64 + 1);
                        let p = rec.invoke(RegisterOp::Write(value));
                        spin(before);
                        node.put(key, &value.to_le_bytes()).unwrap();
                        spin(after);
                        rec.complete(p, RegisterRet::Written);
                    }
                    3 => {
                        let p = rec.invoke(RegisterOp::Write(0));
                        spin(before);
                        node.delete(key).unwrap();
                        spin(after);
                        rec.complete(p, RegisterRet::Written);
                    }
                    _ => {
                        let p = rec.invoke(RegisterOp::Read);
                        spin(before);
                        let mut buf = [0; 8];
                        let found = node.get(key, &mut buf).unwrap();
                        spin(after);
                        let value = if found { u64::from_le_bytes(buf) } else { 0 };
                        rec.complete(p, RegisterRet::Value(value));
                    }
                }
            }
        }));
    }
    let pumper = pumper(&store, OPS_PER_THREAD * 4);
    for w in workers {
        w.join().unwrap();
    }
    pumper.join().unwrap();
    let mut totals = (0, 0);
    for (key, recorder) in recorders.into_iter().enumerate() {
        let history = recorder.into_history();
        let (o, n) = overlap(&history);
        totals.0 += o;
        totals.1 += n;
        if let Err(violation) = check(Register::new(0), &history) {
            panic!("{mode:?} {replication} seed {seed} key {key}: not linearizable: {violation:?}");
        }
    }
    assert!(store.check_health().is_ok());
    totals
}

#[test]
fn every_key_is_linearizable_under_lagging_replication() {
    // At least 90 rounds; more while fewer than `MIN_OVERLAPPING` checked operations overlapped
    // another on the same key (a loaded machine deschedules threads, so fewer overlap per
    // round), up to 10 times as many rounds.
    const ROUNDS: u64 = 90;
    const MIN_OVERLAPPING: usize = ROUNDS as usize * THREADS * OPS_PER_THREAD / 10;
    let mut overlapping = 0;
    let mut total = 0;
    let mut rounds = 0;
    while rounds < ROUNDS || (overlapping < MIN_OVERLAPPING && rounds < 10 * ROUNDS) {
        let seed = rounds;
        let mode = [
            MetadataMode::Sync,
            MetadataMode::Async,
            MetadataMode::Adaptive,
        ][seed as usize % 3];
        // Two rounds in three copy every write (most replicas to lag behind), one copies on
        // demand (after two remote reads).
        let replication = if seed % 9 < 6 {
            ValueReplication::Eager
        } else {
            ValueReplication::OnDemand
        };
        let (o, n) = round(mode, replication, seed * 7919 + 1);
        overlapping += o;
        total += n;
        rounds += 1;
    }
    println!(
        "{rounds} rounds, {total} operations checked, {overlapping} overlapping another on the \
         same key ({:.1}%)",
        100.0 * overlapping as f64 / total as f64
    );
    assert_eq!(total, rounds as usize * THREADS * OPS_PER_THREAD);
    assert!(
        overlapping >= MIN_OVERLAPPING,
        "too little overlap to prove anything: {overlapping} operations in {rounds} rounds"
    );
}
