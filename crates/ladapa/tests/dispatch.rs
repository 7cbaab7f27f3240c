//! `Dispatch` operations on values (`put_value`, `read_with`, `update`): a heap-owning
//! `Dispatch` type (a bag of up to 3 numbers in a `Vec`) against a sequential model, with
//! raw `put`s of foreign bytes, deletes, eviction pressure and partial replication mixed in;
//! and the cases a model run may miss (a panicking operation, a failed encoding's leftovers).

#![cfg(not(loom))]

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ladapa::{CodecError, DispatchValue, MetadataMode, ReplicationScope, Store, StoreError};
use nr_core::{Dispatch, Topology};
use proptest::prelude::*;

const NODES: usize = 3;
const KEYS: u64 = 24;
const CAPACITY: usize = 16;
const VALUE_SIZE: usize = 16;
/// Numbers a bag holds at most: a length word and 3 words fill the 16 bytes.
const ROOM: usize = 3;

/// A bag of numbers, owning heap memory (so it cannot live in a value block as it is).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Bag(Vec<u32>);

#[derive(Clone, Copy, Debug)]
enum BagRead {
    Len,
    Sum,
}

#[derive(Clone, Copy, Debug)]
enum BagWrite {
    /// Returns the length before.
    Push(u32),
    /// Returns the number taken, or `u64::MAX` when empty.
    Pop,
    /// Panics (an application bug under the key's lock).
    Panic,
}

impl Dispatch for Bag {
    type ReadOperation<'a> = BagRead;
    type WriteOperation = BagWrite;
    type Response = u64;

    fn dispatch(&self, op: BagRead) -> u64 {
        match op {
            BagRead::Len => self.0.len() as u64,
            BagRead::Sum => self.0.iter().map(|&n| u64::from(n)).sum(),
        }
    }

    fn dispatch_mut(&mut self, op: BagWrite) -> u64 {
        match op {
            BagWrite::Push(n) => {
                self.0.push(n);
                self.0.len() as u64 - 1
            }
            BagWrite::Pop => self.0.pop().map_or(u64::MAX, u64::from),
            BagWrite::Panic => panic!("an operation that panics"),
        }
    }
}

fn word(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

impl DispatchValue for Bag {
    /// `[len, n0, n1, n2]` as little-endian `u32`s; unused words must be zero.
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let len = word(bytes, 0) as usize;
        if len > ROOM {
            return Err(CodecError::Invalid {
                reason: "length beyond 3",
            });
        }
        if (len..ROOM).any(|i| word(bytes, 1 + i) != 0) {
            return Err(CodecError::Invalid {
                reason: "an unused word is not zero",
            });
        }
        Ok(Bag((0..len).map(|i| word(bytes, 1 + i)).collect()))
    }

    /// Streams the words out and stops where the room ends (so a failed encoding leaves the
    /// words it wrote: the store must not let them into a later value).
    fn encode(&self, bytes: &mut [u8]) -> Result<(), CodecError> {
        bytes[..4].copy_from_slice(&(self.0.len() as u32).to_le_bytes());
        for (i, n) in self.0.iter().enumerate() {
            let Some(slot) = bytes.get_mut(4 + 4 * i..8 + 4 * i) else {
                return Err(CodecError::TooLarge {
                    needed: 4 + 4 * self.0.len(),
                    value_size: bytes.len(),
                });
            };
            slot.copy_from_slice(&n.to_le_bytes());
        }
        Ok(())
    }
}

fn codec_error(key: u64, source: CodecError) -> StoreError {
    StoreError::Codec {
        key,
        type_name: std::any::type_name::<Bag>(),
        source,
    }
}

fn too_large(key: u64, len: usize) -> StoreError {
    codec_error(
        key,
        CodecError::TooLarge {
            needed: 4 + 4 * len,
            value_size: VALUE_SIZE,
        },
    )
}

/// Bytes that are no bag (length `u32::MAX`).
const FOREIGN: [u8; VALUE_SIZE] = [0xff; VALUE_SIZE];

fn foreign(key: u64) -> StoreError {
    codec_error(
        key,
        CodecError::Invalid {
            reason: "length beyond 3",
        },
    )
}

/// The model of one key.
#[derive(Clone, Debug)]
enum Entry {
    Bag(Vec<u32>),
    /// Written by `put` with [`FOREIGN`].
    Foreign,
}

#[derive(Clone, Debug)]
enum Op {
    PutValue {
        node: usize,
        key: u64,
        items: Vec<u32>,
    },
    PutForeign {
        node: usize,
        key: u64,
    },
    Update {
        node: usize,
        key: u64,
        op: BagWrite,
    },
    Read {
        node: usize,
        key: u64,
        op: BagRead,
    },
    Delete {
        node: usize,
        key: u64,
    },
    PumpPropagator,
    PumpReplicator(usize),
    PumpAll,
}

fn op() -> impl Strategy<Value = Op> {
    let node = 0..NODES;
    let key = 0..KEYS;
    let write = prop_oneof![
        3 => any::<u32>().prop_map(BagWrite::Push),
        2 => Just(BagWrite::Pop),
    ];
    let read = prop_oneof![Just(BagRead::Len), Just(BagRead::Sum)];
    prop_oneof![
        3 => (node.clone(), key.clone(), prop::collection::vec(any::<u32>(), 0..=ROOM + 1))
            .prop_map(|(node, key, items)| Op::PutValue { node, key, items }),
        1 => (node.clone(), key.clone()).prop_map(|(node, key)| Op::PutForeign { node, key }),
        6 => (node.clone(), key.clone(), write)
            .prop_map(|(node, key, op)| Op::Update { node, key, op }),
        5 => (node.clone(), key.clone(), read).prop_map(|(node, key, op)| Op::Read { node, key, op }),
        1 => (node.clone(), key.clone()).prop_map(|(node, key)| Op::Delete { node, key }),
        1 => Just(Op::PumpPropagator),
        1 => node.prop_map(Op::PumpReplicator),
        1 => Just(Op::PumpAll),
    ]
}

fn store(mode: MetadataMode, l1: usize) -> Store {
    Store::builder()
        .topology(
            Topology::detect_hardware()
                .unwrap()
                .with_shared_virtual_nodes(NODES)
                .unwrap(),
        )
        .replication_scope(ReplicationScope::Node) // replicas exist and lag
        .value_size(VALUE_SIZE)
        .capacity(CAPACITY)
        .l1_entries(l1)
        .metadata_mode(mode)
        .value_replication(ladapa::ValueReplication::Eager)
        .manual_pump()
        .build()
        .unwrap()
}

/// What `op` on the model's `entry` returns, and the entry after it.
fn model_update(entry: &mut Vec<u32>, key: u64, op: BagWrite) -> Result<Option<u64>, StoreError> {
    let mut after = Bag(entry.clone());
    let response = after.dispatch_mut(op);
    if after.0.len() > ROOM {
        return Err(too_large(key, after.0.len()));
    }
    *entry = after.0;
    Ok(Some(response))
}

fn run(mode: MetadataMode, l1: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let store = store(mode, l1);
    let mut model: BTreeMap<u64, Entry> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let full = model.len() >= CAPACITY;
        match op {
            &Op::PutValue {
                node,
                key,
                ref items,
            } => {
                let got = store
                    .node(node)
                    .unwrap()
                    .put_value(key, &Bag(items.clone()));
                let expected = if items.len() > ROOM {
                    Err(too_large(key, items.len()))
                } else if full && !model.contains_key(&key) {
                    Err(StoreError::Full { capacity: CAPACITY })
                } else {
                    model.insert(key, Entry::Bag(items.clone()));
                    Ok(())
                };
                prop_assert_eq!(got, expected, "op {}: {:?}", i, op);
            }
            &Op::PutForeign { node, key } => {
                let got = store.node(node).unwrap().put(key, &FOREIGN);
                if full && !model.contains_key(&key) {
                    prop_assert_eq!(got, Err(StoreError::Full { capacity: CAPACITY }));
                } else {
                    prop_assert_eq!(got, Ok(()), "op {}", i);
                    model.insert(key, Entry::Foreign);
                }
            }
            &Op::Update {
                node,
                key,
                op: write,
            } => {
                let got = store.node(node).unwrap().update::<Bag>(key, write);
                let expected = match model.get_mut(&key) {
                    None => Ok(None),
                    Some(Entry::Foreign) => Err(foreign(key)),
                    Some(Entry::Bag(items)) => model_update(items, key, write),
                };
                prop_assert_eq!(got, expected, "op {}: {:?}", i, op);
            }
            &Op::Read {
                node,
                key,
                op: read,
            } => {
                let got = store.node(node).unwrap().read_with::<Bag>(key, read);
                let expected = match model.get(&key) {
                    None => Ok(None),
                    Some(Entry::Foreign) => Err(foreign(key)),
                    Some(Entry::Bag(items)) => Ok(Some(Bag(items.clone()).dispatch(read))),
                };
                prop_assert_eq!(got, expected, "op {}: {:?}", i, op);
            }
            &Op::Delete { node, key } => {
                let got = store.node(node).unwrap().delete(key).unwrap();
                prop_assert_eq!(got, model.remove(&key).is_some(), "op {}", i);
            }
            Op::PumpPropagator => {
                store.pump_propagator();
            }
            &Op::PumpReplicator(node) => {
                store.pump_replicator(node);
            }
            Op::PumpAll => {
                store.pump();
            }
        }
        prop_assert_eq!(store.len(), model.len(), "op {}", i);
    }
    prop_assert!(store.shutdown().is_ok());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn dispatch_operations_match_the_sequential_model(
        mode in prop_oneof![
            Just(MetadataMode::Sync),
            Just(MetadataMode::Async),
            Just(MetadataMode::Adaptive)
        ],
        l1 in prop_oneof![Just(1usize), Just(4), Just(16)],
        ops in prop::collection::vec(op(), 1..200),
    ) {
        run(mode, l1, &ops)?;
    }
}

/// A panic in the caller's operation, which runs under the key's set lock, leaves the key's
/// value as it was, frees the block the update had taken, and leaves the set usable.
#[test]
fn a_panicking_update_changes_nothing_and_leaks_no_block() {
    let store = store(MetadataMode::Sync, 4);
    store.put_value(1, &Bag(vec![7])).unwrap();
    let values_before = store.stats().memory.values;
    let panicked = catch_unwind(AssertUnwindSafe(|| store.update::<Bag>(1, BagWrite::Panic)));
    assert!(
        panicked.is_err(),
        "the operation's panic reaches the caller"
    );
    assert_eq!(store.read_with::<Bag>(1, BagRead::Sum), Ok(Some(7)));
    assert_eq!(
        store.stats().memory.values,
        values_before,
        "the update's fresh block went back to the pool"
    );
    assert_eq!(store.update::<Bag>(1, BagWrite::Push(2)), Ok(Some(1)));
    assert_eq!(store.read_with::<Bag>(1, BagRead::Sum), Ok(Some(9)));
    assert!(store.check_health().is_ok());
}

/// A failed encoding leaves words in its block, which goes back to the pool and is the next
/// one taken: a later value must not inherit them (blocks are zeroed before `encode`).
#[test]
fn a_failed_encoding_leaves_nothing_in_the_next_value() {
    let store = store(MetadataMode::Sync, 4);
    let node = store.node(0).unwrap();
    assert_eq!(
        node.put_value(1, &Bag(vec![5, 6, 7, 8])),
        Err(too_large(1, 4))
    );
    assert!(!store.contains(1), "a failed put_value writes nothing");
    node.put_value(1, &Bag(vec![1])).unwrap();
    assert_eq!(node.read_with::<Bag>(1, BagRead::Len), Ok(Some(1)));
    assert_eq!(node.update::<Bag>(1, BagWrite::Pop), Ok(Some(1)));
    assert_eq!(node.read_with::<Bag>(1, BagRead::Len), Ok(Some(0)));
}

/// Every update is a write with its own version: a node's replica of an older version is
/// never used after it (the read sees the update, not the replica).
#[test]
fn a_read_never_uses_a_replica_older_than_the_last_update() {
    let store = store(MetadataMode::Async, 16);
    store.node(0).unwrap().put_value(1, &Bag(vec![1])).unwrap();
    store.pump(); // every node has a replica of version 1
    assert_eq!(
        store.node(0).unwrap().update::<Bag>(1, BagWrite::Push(2)),
        Ok(Some(1))
    );
    // The metadata went to L1 (current) and into the propagator's queue; replicas lag.
    for node in 0..NODES {
        let sum = store.node(node).unwrap().read_with::<Bag>(1, BagRead::Sum);
        assert_eq!(sum, Ok(Some(3)), "node {node}");
    }
}

/// The error chain names the key and the type once, then the codec's reason.
#[test]
fn a_codec_error_names_key_type_and_reason() {
    let store = store(MetadataMode::Sync, 4);
    store.put(9, &FOREIGN).unwrap();
    let err = store.read_with::<Bag>(9, BagRead::Len).unwrap_err();
    let source = std::error::Error::source(&err).expect("the codec's error");
    assert_eq!(
        err.to_string(),
        format!(
            "the value of key 9 does not convert to or from {}",
            std::any::type_name::<Bag>()
        )
    );
    assert_eq!(
        source.to_string(),
        "the bytes are not a valid encoding: length beyond 3"
    );
}
