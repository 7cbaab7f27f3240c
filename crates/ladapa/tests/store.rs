//! Behaviour of the store: operations, eviction, replication, never-stale reads under lag,
//! shutdown, background panics, bad configuration.

#![cfg(not(loom))]
// Tests run real threads, outside the loom shim.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use ladapa::{
    AdaptiveRule, BackgroundThread, Binding, ConfigError, MetadataMode, ReplicationScope, Store,
    StoreError, ValueReplication, MAX_VALUE_SIZE,
};
use nr_core::Topology;

fn virtual_nodes(n: usize) -> Topology {
    Topology::detect_hardware()
        .unwrap()
        .with_shared_virtual_nodes(n)
        .unwrap()
}

fn value(byte: u64) -> [u8; 8] {
    byte.to_le_bytes()
}

fn manual(nodes: usize, mode: MetadataMode) -> Store {
    Store::builder()
        .topology(virtual_nodes(nodes))
        .replication_scope(ReplicationScope::Node)
        .value_size(8)
        .capacity(64)
        .l1_entries(16)
        .metadata_mode(mode)
        .value_replication(ValueReplication::Eager)
        .manual_pump()
        .build()
        .unwrap()
}

fn read(store: &Store, node: usize, key: u64) -> Option<u64> {
    let mut buf = [0; 8];
    store
        .node(node)
        .unwrap()
        .get(key, &mut buf)
        .unwrap()
        .then(|| u64::from_le_bytes(buf))
}

#[test]
fn bad_configuration_is_a_typed_error() {
    let b = || Store::builder().manual_pump();
    assert!(matches!(
        b().capacity(0).build(),
        Err(ConfigError::ZeroCapacity)
    ));
    assert!(matches!(
        b().value_size(0).build(),
        Err(ConfigError::ZeroValueSize)
    ));
    assert!(matches!(
        b().value_size(12).build(),
        Err(ConfigError::ValueSizeNotMultipleOf8 { size: 12 })
    ));
    assert!(matches!(
        b().value_size(MAX_VALUE_SIZE + 8).build(),
        Err(ConfigError::ValueSizeTooLarge { .. })
    ));
    assert!(matches!(
        b().capacity(100).l1_entries(101).build(),
        Err(ConfigError::L1LargerThanCapacity {
            l1_entries: 101,
            capacity: 100
        })
    ));
    assert!(matches!(
        b().l1_entries(0).build(),
        Err(ConfigError::ZeroL1)
    ));
    assert!(matches!(
        b().queue_bounds(1, 0).build(),
        Err(ConfigError::ZeroQueueBound)
    ));
    // Every error explains itself.
    let e = b().capacity(4).l1_entries(5).build().unwrap_err();
    assert!(e.to_string().contains("larger than the capacity"), "{e}");
}

#[test]
fn operations_and_errors() {
    let store = manual(2, MetadataMode::Async);
    let mut buf = [0; 8];
    assert!(!store.node(0).unwrap().get(1, &mut buf).unwrap());
    store.node(0).unwrap().put(1, &value(10)).unwrap();
    assert_eq!(read(&store, 1, 1), Some(10));
    assert!(store.node(1).unwrap().contains(1));
    assert_eq!(
        store.node(0).unwrap().put(1, &[0; 4]),
        Err(StoreError::WrongValueSize {
            expected: 8,
            got: 4
        })
    );
    assert!(matches!(
        store.node(0).unwrap().get(1, &mut [0; 9]),
        Err(StoreError::WrongValueSize { .. })
    ));
    assert!(matches!(
        store.node(2),
        Err(StoreError::NoSuchNode { node: 2, nodes: 2 })
    ));
    assert!(store.node(1).unwrap().delete(1).unwrap());
    assert!(!store.node(0).unwrap().delete(1).unwrap());
    assert_eq!(read(&store, 0, 1), None);
    assert!(store.is_empty());
}

#[test]
fn capacity_is_enforced_and_freed_by_delete() {
    let store = Store::builder()
        .value_size(8)
        .capacity(3)
        .l1_entries(2)
        .manual_pump()
        .build()
        .unwrap();
    for key in 0..3 {
        store.put(key, &value(key)).unwrap();
    }
    assert_eq!(
        store.put(3, &value(3)),
        Err(StoreError::Full { capacity: 3 })
    );
    store.put(2, &value(20)).unwrap(); // overwriting is fine when full
    assert!(store.delete(0).unwrap());
    store.put(3, &value(3)).unwrap();
    assert_eq!(store.len(), 3);
}

/// More keys than first-level entries: eviction must install every victim in every L2 before
/// removing it, so every key stays readable from every node, before and after replication.
#[test]
fn evicted_keys_stay_findable_from_every_node() {
    for mode in [MetadataMode::Sync, MetadataMode::Async] {
        let store = manual(4, mode);
        for key in 0..64 {
            store
                .node((key % 4) as usize)
                .unwrap()
                .put(key, &value(key * 3))
                .unwrap();
        }
        let (l1, _) = store.table_sizes();
        assert!(l1 <= 16, "L1 holds at most its size, held {l1}");
        for pumped in [false, true] {
            for key in 0..64 {
                for node in 0..4 {
                    assert_eq!(
                        read(&store, node, key),
                        Some(key * 3),
                        "{mode:?} key {key} node {node} pumped {pumped}"
                    );
                }
            }
            store.pump();
        }
        // Overwrite everything after eviction: versions keep increasing per key.
        for key in 0..64 {
            store
                .node(((key + 1) % 4) as usize)
                .unwrap()
                .put(key, &value(key + 1000))
                .unwrap();
        }
        for key in 0..64 {
            assert_eq!(read(&store, (key % 4) as usize, key), Some(key + 1000));
        }
    }
}

/// The never-stale property under lag forced by the manual pump: node 1 holds a replica of
/// version 1 when version 2 is written; a read on node 1 must return version 2. This test
/// fails if the version check in `NodeHandle::locate` is removed (see the mutation table in
/// the crate docs).
/// On-demand replication: nothing is copied at write time; a node asks for a copy of a
/// version on its second remote read of it; a copy that then lags (a newer write) is never
/// used; nodes that never read never get copies.
#[test]
fn on_demand_copies_after_two_remote_reads_and_never_serves_a_lagging_copy() {
    for mode in [
        MetadataMode::Sync,
        MetadataMode::Async,
        MetadataMode::Adaptive,
    ] {
        let store = Store::builder()
            .topology(virtual_nodes(4))
            .replication_scope(ReplicationScope::Node)
            .value_size(8)
            .capacity(64)
            .l1_entries(16)
            .metadata_mode(mode)
            .value_replication(ValueReplication::OnDemand)
            .manual_pump()
            .build()
            .unwrap();
        store.node(0).unwrap().put(7, &value(1)).unwrap();
        store.pump();
        assert_eq!(store.stats().replicated, 0, "{mode:?}: nobody read it yet");
        assert_eq!(read(&store, 1, 7), Some(1)); // first remote read
        store.pump();
        assert_eq!(
            store.stats().replicated,
            0,
            "{mode:?}: one read is not enough"
        );
        assert_eq!(read(&store, 1, 7), Some(1)); // second: asks for a copy
        assert_eq!(read(&store, 1, 7), Some(1)); // asked already: no second request
        assert_eq!(store.stats().replicator_queued, [0, 1, 0, 0], "{mode:?}");
        store.pump();
        assert_eq!(store.stats().replicated, 1, "{mode:?}: node 1 only");
        let before = store.stats().replica_reads;
        assert_eq!(read(&store, 1, 7), Some(1));
        assert_eq!(
            store.stats().replica_reads,
            before + 1,
            "{mode:?}: the copy is used"
        );
        // A newer version: node 1's copy lags and must not be used.
        store.node(2).unwrap().put(7, &value(2)).unwrap();
        for node in 0..4 {
            assert_eq!(
                read(&store, node, 7),
                Some(2),
                "{mode:?}: node {node} read stale"
            );
        }
        assert_eq!(
            store.stats().replica_reads,
            before + 1,
            "{mode:?}: lagging copy unused"
        );
        // Node 1 asks again for the new version (its second remote read of it), and the copy
        // request for version 2 goes stale before it is served: skipped, not installed.
        assert_eq!(read(&store, 1, 7), Some(2));
        store.node(0).unwrap().put(7, &value(3)).unwrap();
        store.pump();
        assert_eq!(read(&store, 1, 7), Some(3), "{mode:?}");
        assert_eq!(
            store.stats().replicated,
            1,
            "{mode:?}: the stale request was skipped"
        );
        // `contains` asks for nothing.
        for _ in 0..4 {
            assert!(store.node(3).unwrap().contains(7));
        }
        store.pump();
        assert_eq!(store.stats().replicated, 1, "{mode:?}");
    }
}

#[test]
fn reads_never_return_a_lagging_replica() {
    for mode in [
        MetadataMode::Sync,
        MetadataMode::Async,
        MetadataMode::Adaptive,
    ] {
        let store = manual(4, mode);
        store.node(0).unwrap().put(7, &value(1)).unwrap();
        store.pump();
        let before = store.stats();
        assert_eq!(before.replicated, 3, "{mode:?}: nodes 1-3 got a replica");
        assert_eq!(read(&store, 1, 7), Some(1));
        assert_eq!(
            store.stats().replica_reads,
            before.replica_reads + 1,
            "{mode:?}: a current replica is used"
        );
        // Version 2, not replicated (nothing pumped): replicas on nodes 1-3 now lag.
        store.node(0).unwrap().put(7, &value(2)).unwrap();
        for node in 0..4 {
            assert_eq!(
                read(&store, node, 7),
                Some(2),
                "{mode:?}: node {node} read stale"
            );
        }
        // Written on node 2 this time; propagate metadata but replicate values nowhere.
        store.node(2).unwrap().put(7, &value(3)).unwrap();
        store.pump_propagator();
        for node in 0..4 {
            assert_eq!(
                read(&store, node, 7),
                Some(3),
                "{mode:?}: node {node} read stale"
            );
        }
        // Replicate to node 1 only, then overwrite again from node 3.
        store.pump_replicator(1);
        assert_eq!(read(&store, 1, 7), Some(3));
        store.node(3).unwrap().put(7, &value(4)).unwrap();
        for node in 0..4 {
            assert_eq!(
                read(&store, node, 7),
                Some(4),
                "{mode:?}: node {node} read stale"
            );
        }
        // A deleted key does not come back from a replica or a queued note.
        store.node(0).unwrap().delete(7).unwrap();
        store.pump();
        for node in 0..4 {
            assert_eq!(
                read(&store, node, 7),
                None,
                "{mode:?}: node {node} resurrected"
            );
        }
    }
}

/// Coalescing: a replicator that finds a newer version skips the older note.
#[test]
fn replication_coalesces_superseded_versions() {
    let store = manual(2, MetadataMode::Sync);
    for v in 0..10 {
        store.node(0).unwrap().put(1, &value(v)).unwrap();
    }
    assert_eq!(store.stats().replicator_queued, vec![0, 10]);
    store.pump();
    let stats = store.stats();
    assert_eq!(stats.replicated, 1, "only the newest version is copied");
    assert_eq!(stats.stale_skipped, 9);
    assert_eq!(read(&store, 1, 1), Some(9));
    assert_eq!(store.stats().replica_reads, 1);
}

#[test]
fn the_guard_keeps_its_version_alive() {
    let store = manual(2, MetadataMode::Async);
    store.node(0).unwrap().put(1, &value(1)).unwrap();
    let guard = store.node(1).unwrap().get_guard(1).unwrap();
    for v in 2..200 {
        store.node(0).unwrap().put(1, &value(v)).unwrap();
        store.pump();
    }
    assert_eq!(&*guard, &value(1));
    drop(guard);
    assert_eq!(read(&store, 1, 1), Some(199));
}

/// Reclamation is per store: while another thread holds a value guard of another store, and a
/// guard of crossbeam-epoch's global collector, overwriting one key 20 times more often than
/// the pool has blocks still finds blocks (each overwrite retires one). With one process-wide
/// collector either guard stalls the epoch and the pool runs out (`OutOfBlocks`).
#[test]
fn a_guard_held_elsewhere_does_not_stop_block_reuse() {
    let store = Store::builder()
        .topology(virtual_nodes(1))
        .value_size(8)
        .capacity(1) // pools of 3 * 1 + 1024 blocks
        .manual_pump()
        .build()
        .unwrap();
    let other = manual(1, MetadataMode::Sync);
    other.put(1, &value(1)).unwrap();
    let (held, done) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            let _value = other.get_guard(1).unwrap();
            let _global = crossbeam_epoch::pin();
            held.wait();
            done.wait();
        });
        held.wait();
        // Whatever happens, release the holder before failing (or the scope never ends).
        let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (0..20_000u64).find_map(|i| store.put(1, &value(i)).err().map(|e| (i, e)))
        }));
        done.wait();
        let failure = failure.unwrap_or_else(|p| std::panic::resume_unwind(p));
        assert!(failure.is_none(), "overwrite and error: {failure:?}");
    });
    assert_eq!(read(&store, 0, 1), Some(19_999));
}

#[test]
fn background_threads_replicate_and_stop_with_queued_work() {
    let store = Store::builder()
        .topology(virtual_nodes(4))
        .replication_scope(ReplicationScope::Node)
        .value_size(64)
        .capacity(4096)
        .metadata_mode(MetadataMode::Async)
        .build()
        .unwrap();
    for key in 0..2000u64 {
        store
            .node((key % 4) as usize)
            .unwrap()
            .put(key, &[key as u8; 64])
            .unwrap();
    }
    // Drop right away, with notes most likely still queued: it must not hang or leak.
    let stats = store.stats();
    println!("at shutdown: {stats}");
    assert!(store.shutdown().is_ok());

    // And with threads that had time to work: replicas get made and used.
    let store = Store::builder()
        .topology(virtual_nodes(2))
        .replication_scope(ReplicationScope::Node)
        .value_size(64)
        .capacity(64)
        .value_replication(ValueReplication::Eager)
        .build()
        .unwrap();
    for key in 0..32u64 {
        store.node(0).unwrap().put(key, &[key as u8; 64]).unwrap();
    }
    let mut waited = 0;
    while store.stats().replicated < 32 && waited < 2000 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        waited += 1;
    }
    assert_eq!(store.stats().replicated, 32, "{}", store.stats());
    let mut buf = [0; 64];
    for key in 0..32u64 {
        assert!(store.node(1).unwrap().get(key, &mut buf).unwrap());
        assert_eq!(buf, [key as u8; 64]);
    }
    assert_eq!(store.stats().replica_reads, 32);
    store.shutdown().unwrap();
}

#[test]
fn a_background_panic_is_reported() {
    for thread in [
        BackgroundThread::Propagator,
        BackgroundThread::Replicator(1),
        BackgroundThread::Adapter(0),
    ] {
        let store = Store::builder()
            .topology(virtual_nodes(2))
            .replication_scope(ReplicationScope::Node)
            .value_size(8)
            .build()
            .unwrap();
        store.put(1, &value(1)).unwrap();
        store.inject_panic(thread);
        let mut waited = 0;
        while store.check_health().is_ok() && waited < 2000 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            waited += 1;
        }
        match store.put(2, &value(2)) {
            Err(StoreError::BackgroundPanicked(p)) => {
                assert_eq!(p.thread, thread);
                assert!(p.message.contains("fault injected"), "{p}");
            }
            other => panic!("{thread}: expected the panic, got {other:?}"),
        }
        // Reads still work and are current.
        assert_eq!(read(&store, 0, 1), Some(1));
        let err = store.shutdown().unwrap_err();
        assert_eq!(err.thread, thread);
    }
}

#[test]
fn a_panic_under_the_manual_pump_is_reported_too() {
    let store = manual(2, MetadataMode::Async);
    store.inject_panic(BackgroundThread::Replicator(1));
    store.pump();
    assert!(matches!(
        store.check_health(),
        Err(StoreError::BackgroundPanicked(_))
    ));
    assert!(store.shutdown().is_err());
}

#[test]
fn adaptive_mode_follows_the_write_share() {
    let store = manual(2, MetadataMode::Adaptive);
    for key in 0..16 {
        store.put(key, &value(key)).unwrap();
    }
    store.pump_adapters();
    assert!(
        !store.stats().sync_now,
        "too few operations to judge: stays async"
    );
    for _period in 0..AdaptiveRule::CONFIRM_PERIODS {
        for round in 0..200 {
            store.put(round % 16, &value(round)).unwrap();
            let mut buf = [0; 8];
            store.get(round % 16, &mut buf).unwrap();
        }
        store.pump_adapters();
        assert!(!store.stats().sync_now, "50% writes: async");
    }
    let read_mostly_period = |store: &ladapa::Store| {
        for round in 0..2000u64 {
            let mut buf = [0; 8];
            store.get(round % 16, &mut buf).unwrap();
        }
        store.put(1, &value(1)).unwrap();
        store.pump_adapters();
    };
    for _period in 1..AdaptiveRule::CONFIRM_PERIODS {
        read_mostly_period(&store);
        assert!(
            !store.stats().sync_now,
            "hysteresis: one period is not enough"
        );
    }
    read_mostly_period(&store);
    assert!(store.stats().sync_now, "0.05% writes, confirmed: sync");
    let before = store.stats().sync_writes;
    store.put(2, &value(2)).unwrap();
    assert_eq!(store.stats().sync_writes, before + 1);
    assert_eq!(store.stats().mode_switches, 1);
}

#[test]
fn pools_report_their_binding_and_memory() {
    let store = manual(2, MetadataMode::Sync);
    store.node(0).unwrap().put(1, &value(1)).unwrap();
    store.pump();
    for binding in store.pool_bindings() {
        assert!(
            matches!(
                binding,
                Binding::Bound { memory_node: 0 } | Binding::Failed { memory_node: 0, .. }
            ),
            "virtual nodes bind to the physical node: {binding:?}"
        );
    }
    let memory = store.memory();
    assert_eq!(memory.values, 16, "one authoritative block and one replica");
    assert!(memory.mapped >= memory.values);
}

/// With one replication domain (the default scope with every virtual node on this machine's one
/// memory node) there is nothing to propagate: every mode writes synchronously, nothing is
/// queued for the propagator, and a read on another node sees the write at once.
#[test]
fn one_domain_writes_synchronously_in_every_mode() {
    for mode in [
        MetadataMode::Async,
        MetadataMode::Adaptive,
        MetadataMode::Sync,
    ] {
        let store = Store::builder()
            .topology(virtual_nodes(4))
            .value_size(8)
            .capacity(64)
            .l1_entries(16)
            .metadata_mode(mode)
            .manual_pump()
            .build()
            .unwrap();
        for k in 0..32 {
            store
                .node(k as usize % 4)
                .unwrap()
                .put(k, &value(k))
                .unwrap();
        }
        let stats = store.stats();
        assert_eq!(
            stats.propagator_queued, 0,
            "{mode}: notes queued with one domain"
        );
        assert_eq!((stats.sync_writes, stats.async_writes), (32, 0), "{mode}");
        for k in 0..32 {
            assert_eq!(read(&store, (k as usize + 1) % 4, k), Some(k), "{mode}");
        }
    }
}
