//! What the concurrent linearizability tests share: a 4-node store whose replication lags on
//! purpose, the pumper that lets it lag, and the spin that widens recorded intervals.

// Each test binary uses the parts it needs.
#![allow(dead_code)]

use std::sync::{Arc, Barrier};
use std::thread;

use ladapa::{MetadataMode, NodeHandle, ReplicationScope, Store, ValueReplication};
use nr_core::Topology;
use testkit::lin::{History, Recorder, ThreadRecorder};

/// Virtual nodes of the store.
pub(crate) const NODES: usize = 4;
/// Threads of a round, spread round-robin over the nodes.
pub(crate) const THREADS: usize = 8;
/// Keys of a round (one history each).
pub(crate) const KEYS: u64 = 2;
/// Operations per thread and round.
pub(crate) const OPS_PER_THREAD: usize = 24;

/// One operation of a round, drawn by [`round`] for a thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Draw {
    /// The thread (node `thread % NODES`).
    pub(crate) thread: usize,
    /// The operation's index in its thread.
    pub(crate) index: usize,
    /// The key.
    pub(crate) key: u64,
    /// Random bits for the operation's choices.
    pub(crate) rng: u64,
    /// Spin before the call, inside the recorded interval.
    pub(crate) before: u64,
    /// Spin after the call, inside the recorded interval.
    pub(crate) after: u64,
}

/// Runs a round: `THREADS` threads started in lockstep, each running `OPS_PER_THREAD`
/// operations through `op` on its node (recording each in its key's history), while the
/// pumper lets replication lag; returns one history per key.
pub(crate) fn round<Op, Ret>(
    store: &Arc<Store>,
    seed: u64,
    op: fn(&NodeHandle<'_>, &mut ThreadRecorder<Op, Ret>, Draw),
) -> Vec<History<Op, Ret>>
where
    Op: Clone + Send + 'static,
    Ret: Clone + Send + 'static,
{
    let recorders: Vec<Recorder<Op, Ret>> = (0..KEYS).map(|_| Recorder::new()).collect();
    let start = Arc::new(Barrier::new(THREADS));
    let mut workers = Vec::new();
    for thread in 0..THREADS {
        let store = Arc::clone(store);
        let start = Arc::clone(&start);
        let mut recs: Vec<_> = recorders.iter().map(Recorder::thread).collect();
        workers.push(thread::spawn(move || {
            let node = store.node(thread % NODES).unwrap();
            let mut rng = seed ^ (thread as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            start.wait();
            for index in 0..OPS_PER_THREAD {
                rng = xorshift(rng);
                let key = rng % KEYS;
                let draw = Draw {
                    thread,
                    index,
                    key,
                    rng,
                    before: rng >> 20 & 2047,
                    after: rng >> 32 & 2047,
                };
                op(&node, &mut recs[key as usize], draw);
            }
        }));
    }
    let pumper = pumper(store, OPS_PER_THREAD * 4);
    for w in workers {
        w.join().unwrap();
    }
    pumper.join().unwrap();
    recorders.into_iter().map(Recorder::into_history).collect()
}

/// A store of 4 virtual nodes, each its own replication domain (so that replicas exist and
/// lag), one L1 way per set (every write of another key of the set evicts), manual pump.
pub(crate) fn lagging_store(mode: MetadataMode, replication: ValueReplication) -> Arc<Store> {
    let topology = Topology::detect_hardware()
        .unwrap()
        .with_shared_virtual_nodes(NODES)
        .unwrap();
    Arc::new(
        Store::builder()
            .topology(topology)
            .replication_scope(ReplicationScope::Node)
            .value_size(8)
            .capacity(16)
            .l1_entries(1)
            .metadata_mode(mode)
            .value_replication(replication)
            .manual_pump()
            .build()
            .unwrap(),
    )
}

/// The pumper: lagging replication on purpose — a little, sometimes, one node at a time.
pub(crate) fn pumper(store: &Arc<Store>, steps: usize) -> thread::JoinHandle<()> {
    let store = Arc::clone(store);
    thread::spawn(move || {
        for i in 0..steps {
            match i % 4 {
                0 => {
                    store.pump_propagator();
                }
                1 => {
                    store.pump_replicator(i % NODES);
                }
                2 => store.pump_adapters(),
                _ => thread::yield_now(),
            }
        }
    })
}

/// Busy-waits about `n` iterations.
pub(crate) fn spin(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// The next state of a xorshift generator.
pub(crate) fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// Runs `round(mode, replication, seed)` (which returns how many of its checked operations
/// overlapped another, and how many it checked) for at least `min_rounds` rounds, and more,
/// up to 10 times as many, while fewer than a tenth of the operations of `min_rounds` rounds
/// overlapped (a loaded machine deschedules threads, so fewer overlap per round). Modes
/// rotate Sync, Async, Adaptive; two rounds in three copy every write (most replicas to lag
/// behind), one copies on demand (after two remote reads). Prints the overlap share and fails
/// when the overlap stayed too small to prove anything.
pub(crate) fn rounds(
    min_rounds: u64,
    mut round: impl FnMut(MetadataMode, ValueReplication, u64) -> (f64, usize),
) {
    let min_overlapping = (min_rounds as usize * THREADS * OPS_PER_THREAD / 10) as f64;
    let (mut overlapping, mut total, mut rounds) = (0.0, 0, 0);
    while rounds < min_rounds || (overlapping < min_overlapping && rounds < 10 * min_rounds) {
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
         on the same key ({:.1}%)",
        100.0 * overlapping / total as f64
    );
    assert_eq!(total, rounds as usize * THREADS * OPS_PER_THREAD);
    assert!(
        overlapping >= min_overlapping,
        "too little overlap to prove anything: {overlapping:.0} operations in {rounds} rounds"
    );
}
