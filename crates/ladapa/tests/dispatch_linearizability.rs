//! Linearizability of `update` and `read_with` under concurrency: a fetch-and-add counter per
//! key, updated and read by 8 threads on 4 virtual nodes started in lockstep (a barrier),
//! with replication lagging on purpose (manual pump, a pumper thread replicating now and
//! then), each operation's recorded interval widened by a short random spin on both sides
//! (see `linearizability.rs`). Histories are checked with testkit's checker against its
//! `Counter` model: a lost update (two read-modify-writes of one version) or a stale read
//! (a replica of an older version) is not linearizable. The share of operations overlapping
//! an operation of another thread on the same key is reported and must be substantial.

#![cfg(not(loom))]
// Tests run real threads, outside the loom shim.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::{Arc, Barrier};
use std::thread;

use common::{lagging_store, pumper, spin, xorshift, NODES};
use ladapa::{CodecError, DispatchValue, MetadataMode, ValueReplication};
use nr_core::Dispatch;
use testkit::lin::{check, Recorder};
use testkit::models::{Counter as Model, CounterOp, CounterRet};

const THREADS: usize = 8;
const KEYS: u64 = 2;
const OPS_PER_THREAD: usize = 24;

/// A `u64` counter in a value's 8 bytes.
struct Counter(u64);

impl Dispatch for Counter {
    type ReadOperation<'a> = ();
    /// Adds, returning the value before (`fetch_add`).
    type WriteOperation = u64;
    type Response = u64;

    fn dispatch(&self, (): ()) -> u64 {
        self.0
    }

    fn dispatch_mut(&mut self, add: u64) -> u64 {
        let previous = self.0;
        self.0 = previous.wrapping_add(add);
        previous
    }
}

impl DispatchValue for Counter {
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let bytes: [u8; 8] = bytes.try_into().map_err(|_| CodecError::Invalid {
            reason: "not 8 bytes",
        })?;
        Ok(Counter(u64::from_le_bytes(bytes)))
    }

    fn encode(&self, bytes: &mut [u8]) -> Result<(), CodecError> {
        bytes.copy_from_slice(&self.0.to_le_bytes());
        Ok(())
    }
}

/// One round; returns (operations overlapping another thread's on the same key, operations).
fn round(mode: MetadataMode, replication: ValueReplication, seed: u64) -> (f64, usize) {
    let store = lagging_store(mode, replication);
    for key in 0..KEYS {
        store.put_value(key, &Counter(0)).unwrap();
    }
    let recorders: Vec<Recorder<CounterOp, CounterRet>> =
        (0..KEYS).map(|_| Recorder::new()).collect();
    let start = Arc::new(Barrier::new(THREADS));
    let mut workers = Vec::new();
    for t in 0..THREADS {
        let store = Arc::clone(&store);
        let start = Arc::clone(&start);
        let mut recs: Vec<_> = recorders.iter().map(Recorder::thread).collect();
        workers.push(thread::spawn(move || {
            // Updaters and readers of a key on different nodes.
            let node = store.node(t % NODES).unwrap();
            let mut rng = seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            start.wait();
            for _ in 0..OPS_PER_THREAD {
                rng = xorshift(rng);
                let key = rng % KEYS;
                let rec = &mut recs[key as usize];
                let (before, after) = (rng >> 20 & 2047, rng >> 32 & 2047);
                if (rng >> 8) % 2 == 0 {
                    let add = 1 + (rng >> 44) % 1000;
                    let p = rec.invoke(CounterOp::Add(add));
                    spin(before);
                    let previous = node.update::<Counter>(key, add).unwrap();
                    spin(after);
                    rec.complete(p, CounterRet::Previous(previous.expect("present")));
                } else {
                    let p = rec.invoke(CounterOp::Get);
                    spin(before);
                    let value = node.read_with::<Counter>(key, ()).unwrap();
                    spin(after);
                    rec.complete(p, CounterRet::Value(value.expect("present")));
                }
            }
        }));
    }
    let pumper = pumper(&store, OPS_PER_THREAD * 4);
    for w in workers {
        w.join().unwrap();
    }
    pumper.join().unwrap();
    let mut totals = (0.0, 0);
    for (key, recorder) in recorders.into_iter().enumerate() {
        let history = recorder.into_history();
        let ops = history.len() / 2;
        totals.0 += history.overlap_share() * ops as f64;
        totals.1 += ops;
        if let Err(violation) = check(Model::new(), &history) {
            panic!("{mode:?} {replication} seed {seed} key {key}: not linearizable: {violation:?}");
        }
    }
    assert!(store.check_health().is_ok());
    totals
}

#[test]
fn updates_and_reads_on_different_nodes_are_linearizable() {
    // At least 60 rounds; more while fewer than a tenth of the operations overlapped another
    // thread's on the same key (a loaded machine deschedules threads), up to 10 times as many.
    const ROUNDS: u64 = 60;
    const MIN_OVERLAPPING: f64 = (ROUNDS as usize * THREADS * OPS_PER_THREAD / 10) as f64;
    let (mut overlapping, mut total, mut rounds) = (0.0, 0, 0);
    while rounds < ROUNDS || (overlapping < MIN_OVERLAPPING && rounds < 10 * ROUNDS) {
        let seed = rounds;
        let mode = [
            MetadataMode::Sync,
            MetadataMode::Async,
            MetadataMode::Adaptive,
        ][seed as usize % 3];
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
        "{rounds} rounds, {total} operations checked, {overlapping:.0} overlapping another \
         thread's on the same key ({:.1}%)",
        100.0 * overlapping / total as f64
    );
    assert_eq!(total, rounds as usize * THREADS * OPS_PER_THREAD);
    assert!(
        overlapping >= MIN_OVERLAPPING,
        "too little overlap to prove anything: {overlapping:.0} operations in {rounds} rounds"
    );
}
