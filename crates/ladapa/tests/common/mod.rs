//! What the concurrent linearizability tests share: a 4-node store whose replication lags on
//! purpose, the pumper that lets it lag, and the spin that widens recorded intervals.

// Each test binary uses the parts it needs.
#![allow(dead_code)]

use std::sync::Arc;
use std::thread;

use ladapa::{MetadataMode, ReplicationScope, Store, ValueReplication};
use nr_core::Topology;

/// Virtual nodes of the store.
pub(crate) const NODES: usize = 4;

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
