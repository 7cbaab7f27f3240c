//! Loom model of the store's own protocol: a write racing a node-local read and that node's
//! replicator, with the node's replica lagging. The read must return the old or the new value
//! (never a replica of a superseded version once the write is done), and afterwards every
//! node reads the new value. Runs the real `Store` code (manual pump, 2 virtual nodes) under
//! loom's locks and atomics; exhaustive within `LOOM_MAX_PREEMPTIONS`.

#![cfg(loom)]

use ladapa::{MetadataMode, ReplicationScope, Store, ValueReplication};
use loom::sync::Arc;
use nr_core::Topology;

fn store(mode: MetadataMode) -> Store {
    store_with(mode, ValueReplication::Eager)
}

fn store_with(mode: MetadataMode, replication: ValueReplication) -> Store {
    let topology = Topology::from_nodes(vec![(0, vec![0])])
        .unwrap()
        .with_shared_virtual_nodes(2)
        .unwrap();
    Store::builder()
        .topology(topology)
        .replication_scope(ReplicationScope::Node)
        .value_size(8)
        .capacity(4)
        .l1_entries(1)
        .metadata_mode(mode)
        .value_replication(replication)
        .queue_bounds(4, 4)
        .manual_pump()
        .build()
        .unwrap()
}

fn get(store: &Store, node: usize, key: u64) -> Option<u64> {
    let mut buf = [0; 8];
    let found = store.node(node).unwrap().get(key, &mut buf).unwrap();
    found.then(|| u64::from_le_bytes(buf))
}

fn model(mode: MetadataMode) {
    loom::model(move || {
        let store = Arc::new(store(mode));
        store.node(0).unwrap().put(1, &1u64.to_le_bytes()).unwrap();
        store.pump(); // node 1 holds a replica of version 1
        let writer = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.node(0).unwrap().put(1, &2u64.to_le_bytes()).unwrap();
            })
        };
        let replicator = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.pump_propagator();
                store.pump_replicator(1);
            })
        };
        // The reader, on node 1: a value of some version, and reads never go back in time.
        let first = get(&store, 1, 1);
        let second = get(&store, 1, 1);
        assert!(matches!(first, Some(1) | Some(2)), "{first:?}");
        assert!(
            !(first == Some(2) && second == Some(1)),
            "went back in time"
        );
        writer.join().unwrap();
        replicator.join().unwrap();
        assert_eq!(
            get(&store, 1, 1),
            Some(2),
            "stale after the write completed"
        );
        assert_eq!(get(&store, 0, 1), Some(2));
    });
}

#[test]
fn read_never_returns_a_superseded_replica_sync() {
    model(MetadataMode::Sync);
}

#[test]
fn read_never_returns_a_superseded_replica_async() {
    model(MetadataMode::Async);
}

/// On-demand replication: node 1 has asked for a copy of version 1 (two remote reads); its
/// replicator serves the request while a writer on node 0 overwrites the key and node 1 reads.
/// The reader sees version 1 or 2, never back in time; once the write is done node 1 reads 2
/// whatever the replicator installed.
#[test]
fn on_demand_copy_racing_an_overwrite_is_never_served_stale() {
    loom::model(|| {
        let store = Arc::new(store_with(MetadataMode::Sync, ValueReplication::OnDemand));
        store.node(0).unwrap().put(1, &1u64.to_le_bytes()).unwrap();
        assert_eq!(get(&store, 1, 1), Some(1));
        assert_eq!(get(&store, 1, 1), Some(1)); // second remote read: a copy is asked for
        let writer = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.node(0).unwrap().put(1, &2u64.to_le_bytes()).unwrap();
            })
        };
        let replicator = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.pump_replicator(1);
            })
        };
        let first = get(&store, 1, 1);
        let second = get(&store, 1, 1);
        assert!(matches!(first, Some(1) | Some(2)), "{first:?}");
        assert!(
            !(first == Some(2) && second == Some(1)),
            "went back in time"
        );
        writer.join().unwrap();
        replicator.join().unwrap();
        assert_eq!(
            get(&store, 1, 1),
            Some(2),
            "stale after the write completed"
        );
    });
}

/// A delete racing node 1's replicator (eager notes queued for version 1) and a reader on
/// node 1: the copy must not bring the key back, and once the delete is done every node
/// reads it absent.
#[test]
fn delete_racing_a_replicator_stays_deleted() {
    loom::model(|| {
        let store = Arc::new(store(MetadataMode::Sync));
        store.node(0).unwrap().put(1, &1u64.to_le_bytes()).unwrap(); // a note for node 1
        let deleter = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                assert!(store.node(0).unwrap().delete(1).unwrap());
            })
        };
        let replicator = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.pump_replicator(1);
            })
        };
        let first = get(&store, 1, 1);
        let second = get(&store, 1, 1);
        assert!(matches!(first, Some(1) | None), "{first:?}");
        assert!(!(first.is_none() && second.is_some()), "came back");
        deleter.join().unwrap();
        replicator.join().unwrap();
        assert_eq!(get(&store, 1, 1), None, "resurrected on node 1");
        assert_eq!(get(&store, 0, 1), None);
        assert!(!store.node(1).unwrap().contains(1));
    });
}

/// The largest model: asynchronous metadata, on-demand copies, two writers on different nodes,
/// a pumper running the propagator and both replicators, and a reader on node 1 whose copy of
/// version 1 exists at the start. Every read returns a written value; once everything is
/// joined, both nodes read the same, final value.
#[test]
fn two_writers_a_pumper_and_a_reader_agree_at_the_end() {
    loom::model(|| {
        let store = Arc::new(store_with(MetadataMode::Async, ValueReplication::OnDemand));
        store.node(0).unwrap().put(1, &1u64.to_le_bytes()).unwrap();
        store.pump_propagator();
        assert_eq!(get(&store, 1, 1), Some(1));
        assert_eq!(get(&store, 1, 1), Some(1)); // asks for a copy
        store.pump(); // node 1 holds a copy of version 1
        let writers: Vec<_> = [(0usize, 2u64), (1, 3)]
            .into_iter()
            .map(|(node, value)| {
                let store = Arc::clone(&store);
                loom::thread::spawn(move || {
                    store
                        .node(node)
                        .unwrap()
                        .put(1, &value.to_le_bytes())
                        .unwrap();
                })
            })
            .collect();
        let pumper = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.pump_propagator();
                store.pump_replicator(1);
                store.pump_replicator(0);
            })
        };
        let seen = get(&store, 1, 1);
        assert!(matches!(seen, Some(1) | Some(2) | Some(3)), "{seen:?}");
        for writer in writers {
            writer.join().unwrap();
        }
        pumper.join().unwrap();
        let last = get(&store, 1, 1);
        assert!(matches!(last, Some(2) | Some(3)), "{last:?}");
        assert_eq!(get(&store, 0, 1), last, "the nodes disagree");
    });
}

/// The optimistic L1 read (the set's seqlock mirror): a read of key 1 racing a write of key 2
/// into the same one-way L1 set, which evicts key 1 (into every L2) and reuses its way. The
/// read must return key 1's value, never key 2's nor nothing: a reader that saw the way's old
/// key with the new metadata (or the reverse), or missed L1 while the writer had not yet
/// installed key 1 in the L2s, must notice the writer (`Set::read_validate`) and retry locked.
#[test]
fn l1_read_racing_an_eviction_of_its_way_returns_its_own_value() {
    loom::model(|| {
        let store = Arc::new(store_with(MetadataMode::Async, ValueReplication::OnDemand));
        store.node(0).unwrap().put(1, &1u64.to_le_bytes()).unwrap(); // key 1 in L1 only
        let writer = {
            let store = Arc::clone(&store);
            loom::thread::spawn(move || {
                store.node(0).unwrap().put(2, &2u64.to_le_bytes()).unwrap();
            })
        };
        assert_eq!(
            get(&store, 0, 1),
            Some(1),
            "key 1's value, from L1 or after eviction"
        );
        assert!(matches!(get(&store, 0, 2), None | Some(2)));
        writer.join().unwrap();
        assert_eq!(get(&store, 0, 2), Some(2));
        assert_eq!(get(&store, 1, 1), Some(1));
    });
}
