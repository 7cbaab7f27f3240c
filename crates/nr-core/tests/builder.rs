//! Building: configuration errors are typed errors, and a placed (virtual-node) build works from
//! threads pinned to each node.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use common::{Kv, KvWrite};
use nr_core::{
    pin_current_thread, BuildError, NodeReplicated, Topology, MAX_VIRTUAL_NODES_PER_CPU,
};

#[test]
fn invalid_configurations_are_errors() {
    let build = |b: nr_core::Builder<Kv>| b.build(|_| Kv::default()).map(|_| ());
    assert!(matches!(
        build(NodeReplicated::builder().replicas(1).log_size(100)),
        Err(BuildError::LogSize { entries: 100, .. })
    ));
    assert!(matches!(
        build(
            NodeReplicated::builder()
                .replicas(1)
                .log_size(8)
                .threads_per_replica(16)
        ),
        Err(BuildError::LogSize { .. })
    ));
    assert!(matches!(
        build(NodeReplicated::builder().replicas(0)),
        Err(BuildError::Zero("replicas"))
    ));
    assert!(matches!(
        build(NodeReplicated::builder().replicas(1).threads_per_replica(0)),
        Err(BuildError::Zero("threads_per_replica"))
    ));
    let one = Topology::single_node(vec![0]).unwrap();
    assert!(matches!(
        build(NodeReplicated::builder().topology(one).replicas(2)),
        Err(BuildError::ReplicaCountMismatch {
            replicas: 2,
            nodes: 1
        })
    ));
    let cpus = Topology::detect_hardware().unwrap().num_cpus();
    assert!(matches!(
        build(NodeReplicated::builder().virtual_nodes(cpus * MAX_VIRTUAL_NODES_PER_CPU + 1)),
        Err(BuildError::Topology(_))
    ));
    // Every error explains itself.
    let e = build(NodeReplicated::builder().replicas(1).log_size(3)).unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
}

#[test]
fn virtual_nodes_build_one_placed_replica_per_node() {
    let hw = Topology::detect_hardware().unwrap();
    let n = hw.num_cpus().min(4);
    let nr = NodeReplicated::builder()
        .virtual_nodes(n)
        .build(|_| Kv::default())
        .unwrap();
    let topo = nr.topology().expect("placed by a topology").clone();
    assert_eq!(nr.replicas(), n);
    assert_eq!(topo.num_nodes(), n);
    std::thread::scope(|s| {
        for t in 0..2 * n {
            let (nr, topo) = (&nr, &topo);
            s.spawn(move || {
                let cpu = topo.cpu_for_thread(t);
                pin_current_thread(&[cpu]).unwrap();
                let replica = nr.replica_for_cpu(cpu).expect("CPU of the topology");
                assert_eq!(replica, t % n, "threads spread round-robin over nodes");
                let mut h = nr.register(replica).unwrap();
                for i in 0..500u64 {
                    h.execute_mut(KvWrite::Put(t as u64 * 1000 + i, i)).unwrap();
                }
            });
        }
    });
    for r in 0..n {
        let mut h = nr.register(r).unwrap();
        for t in 0..2 * n as u64 {
            assert_eq!(h.execute(t * 1000 + 499).unwrap(), Some(499), "replica {r}");
        }
    }
}
