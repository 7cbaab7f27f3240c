//! Model-based property tests: random operation sequences (puts, deletes, reads, contains,
//! and pump steps that replicate some of the state) on a small store with eviction pressure,
//! against `BTreeMap`. Every read must return the model's value, whatever has or has not been
//! replicated.

#![cfg(not(loom))]

use std::collections::BTreeMap;

use ladapa::{MetadataMode, ReplicationScope, Store, StoreError, ValueReplication};
use nr_core::Topology;
use proptest::prelude::*;

const NODES: usize = 3;
const KEYS: u64 = 24;
const CAPACITY: usize = 16;

#[derive(Clone, Debug)]
enum Op {
    Put { node: usize, key: u64, value: u64 },
    Delete { node: usize, key: u64 },
    Get { node: usize, key: u64 },
    Guard { node: usize, key: u64 },
    Contains { node: usize, key: u64 },
    PumpPropagator,
    PumpReplicator(usize),
    PumpAdapters,
    PumpAll,
}

fn op() -> impl Strategy<Value = Op> {
    let node = 0..NODES;
    let key = 0..KEYS;
    prop_oneof![
        4 => (node.clone(), key.clone(), any::<u64>())
            .prop_map(|(node, key, value)| Op::Put { node, key, value }),
        1 => (node.clone(), key.clone()).prop_map(|(node, key)| Op::Delete { node, key }),
        4 => (node.clone(), key.clone()).prop_map(|(node, key)| Op::Get { node, key }),
        1 => (node.clone(), key.clone()).prop_map(|(node, key)| Op::Guard { node, key }),
        1 => (node.clone(), key.clone()).prop_map(|(node, key)| Op::Contains { node, key }),
        1 => Just(Op::PumpPropagator),
        1 => node.prop_map(Op::PumpReplicator),
        1 => Just(Op::PumpAdapters),
        1 => Just(Op::PumpAll),
    ]
}

fn mode() -> impl Strategy<Value = MetadataMode> {
    prop_oneof![
        Just(MetadataMode::Sync),
        Just(MetadataMode::Async),
        Just(MetadataMode::Adaptive)
    ]
}

/// The nodes and how they replicate: three virtual nodes over this machine's memory node, each
/// its own replication domain (`Node`); or, with the default `MemoryNode` scope, a synthetic
/// layout where nodes 0 and 1 share memory node 0 (one domain: one L2, no copies between them)
/// and node 2 sits on memory node 1 (binding to it may fail on this machine; pools then use
/// the default placement, which changes nothing here).
fn layout(scope: ReplicationScope) -> Topology {
    match scope {
        ReplicationScope::Node => Topology::detect_hardware()
            .unwrap()
            .with_shared_virtual_nodes(NODES)
            .unwrap(),
        ReplicationScope::MemoryNode => {
            Topology::from_nodes(vec![(0, vec![0]), (0, vec![1]), (1, vec![2])]).unwrap()
        }
    }
}

fn run(
    mode: MetadataMode,
    replication: ValueReplication,
    scope: ReplicationScope,
    l1: usize,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let store = Store::builder()
        .topology(layout(scope))
        .replication_scope(scope)
        .value_size(16)
        .capacity(CAPACITY)
        .l1_entries(l1)
        .metadata_mode(mode)
        .value_replication(replication)
        .queue_bounds(8, 8) // small: exercises the synchronous fallback and dropped notes
        .manual_pump()
        .build()
        .unwrap();
    let mut model: BTreeMap<u64, u64> = BTreeMap::new();
    let encode = |v: u64| {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&v.to_le_bytes());
        bytes[8..].copy_from_slice(&(!v).to_le_bytes());
        bytes
    };
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Put { node, key, value } => {
                let got = store.node(node).unwrap().put(key, &encode(value));
                if model.len() >= CAPACITY && !model.contains_key(&key) {
                    prop_assert_eq!(
                        got,
                        Err(StoreError::Full { capacity: CAPACITY }),
                        "op {}",
                        i
                    );
                } else {
                    prop_assert_eq!(got, Ok(()), "op {}", i);
                    model.insert(key, value);
                }
            }
            Op::Delete { node, key } => {
                let got = store.node(node).unwrap().delete(key).unwrap();
                prop_assert_eq!(got, model.remove(&key).is_some(), "op {}", i);
            }
            Op::Get { node, key } => {
                let mut buf = [0; 16];
                let found = store.node(node).unwrap().get(key, &mut buf).unwrap();
                let expected = model.get(&key).map(|&v| encode(v));
                prop_assert_eq!(found.then_some(buf), expected, "op {}: {:?}", i, op);
            }
            Op::Guard { node, key } => {
                let got = store.node(node).unwrap().get_guard(key).map(|g| g.to_vec());
                let expected = model.get(&key).map(|&v| encode(v).to_vec());
                prop_assert_eq!(got, expected, "op {}: {:?}", i, op);
            }
            Op::Contains { node, key } => {
                let got = store.node(node).unwrap().contains(key);
                prop_assert_eq!(got, model.contains_key(&key), "op {}", i);
            }
            Op::PumpPropagator => {
                store.pump_propagator();
            }
            Op::PumpReplicator(node) => {
                store.pump_replicator(node);
            }
            Op::PumpAdapters => store.pump_adapters(),
            Op::PumpAll => {
                store.pump();
            }
        }
        prop_assert_eq!(store.len(), model.len());
    }
    // Finally every key, from every node, after full replication.
    store.pump();
    for key in 0..KEYS {
        for node in 0..NODES {
            let mut buf = [0; 16];
            let found = store.node(node).unwrap().get(key, &mut buf).unwrap();
            prop_assert_eq!(found.then_some(buf), model.get(&key).map(|&v| encode(v)));
        }
    }
    prop_assert!(store.shutdown().is_ok());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn store_matches_the_sequential_model(
        mode in mode(),
        replication in prop_oneof![Just(ValueReplication::Eager), Just(ValueReplication::OnDemand)],
        scope in prop_oneof![3 => Just(ReplicationScope::Node), 1 => Just(ReplicationScope::MemoryNode)],
        l1 in prop_oneof![Just(1usize), Just(4), Just(8), Just(16)],
        ops in prop::collection::vec(op(), 1..200),
    ) {
        run(mode, replication, scope, l1, &ops)?;
    }
}
