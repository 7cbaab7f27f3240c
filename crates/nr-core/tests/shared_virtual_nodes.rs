//! Several virtual nodes sharing a CPU: `Topology::with_shared_virtual_nodes` and the
//! `NR_VIRTUAL_NODES` override past the CPU count.

use std::env;
use std::process::Command;

use nr_core::{Topology, TopologyError, TopologySource, VIRTUAL_NODES_ENV};

#[test]
fn more_nodes_than_cpus_share_cpus_evenly_within_real_nodes() {
    let two = Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![2, 3])]).unwrap();
    let split = two.with_shared_virtual_nodes(8).unwrap();
    let nodes: Vec<(usize, Vec<usize>)> = split
        .nodes()
        .iter()
        .map(|node| (node.memory_node(), node.cpus().to_vec()))
        .collect();
    assert_eq!(
        nodes,
        [
            (0, vec![0]),
            (0, vec![0]),
            (0, vec![1]),
            (0, vec![1]),
            (1, vec![2]),
            (1, vec![2]),
            (1, vec![3]),
            (1, vec![3]),
        ]
    );
    assert_eq!(split.num_cpus(), 4);
    assert_eq!(split.node_of_cpu(3), Some(6));
    assert_eq!(
        split.source(),
        &TopologySource::VirtualShared {
            base: Box::new(TopologySource::Explicit),
            nodes: 8,
            cpus: 4
        }
    );
    assert_eq!(
        split.source().to_string(),
        "virtual 8 over explicit, sharing 4 CPUs"
    );
    // Re-splitting goes back to the real nodes underneath.
    assert_eq!(split.with_virtual_nodes(2).unwrap().nodes(), two.nodes());
}

#[test]
fn up_to_the_cpu_count_the_shared_split_is_the_plain_split() {
    let one = Topology::single_node((0..6).collect()).unwrap();
    for n in 1..=6 {
        assert_eq!(
            one.with_shared_virtual_nodes(n).unwrap(),
            one.with_virtual_nodes(n).unwrap()
        );
    }
    // The plain split still refuses, and its error points at the shared one.
    let err = one.with_virtual_nodes(7).unwrap_err();
    assert!(matches!(
        err,
        TopologyError::TooManyVirtualNodes {
            requested: 7,
            cpus: 6,
            limit: 6
        }
    ));
    assert!(
        err.to_string().contains("with_shared_virtual_nodes"),
        "{err}"
    );
}

#[test]
fn shared_split_still_refuses_zero_and_merging_real_nodes() {
    let two = Topology::from_nodes(vec![(0, vec![0]), (1, vec![1])]).unwrap();
    assert!(matches!(
        two.with_shared_virtual_nodes(0),
        Err(TopologyError::ZeroVirtualNodes)
    ));
    assert!(matches!(
        two.with_shared_virtual_nodes(1),
        Err(TopologyError::TooFewVirtualNodes { .. })
    ));
}

#[test]
fn explicit_topologies_still_reject_duplicate_cpus() {
    assert!(matches!(
        Topology::from_nodes(vec![(0, vec![0]), (0, vec![0])]),
        Err(TopologyError::DuplicateCpu { cpu: 0 })
    ));
}

/// Run in a child process by `env_override_accepts_more_nodes_than_cpus`.
#[test]
#[ignore = "run in a child process by env_override_accepts_more_nodes_than_cpus"]
fn child_detects_shared_virtual_nodes() {
    let topology = Topology::detect().unwrap();
    let cpus = Topology::detect_hardware().unwrap().num_cpus();
    assert_eq!(topology.num_nodes(), 2 * cpus);
    assert_eq!(topology.num_cpus(), cpus);
    let printed = topology.source().to_string();
    assert!(
        printed.ends_with(&format!("sharing {cpus} CPUs")),
        "{printed}"
    );
    println!("setting: {printed}");
}

#[test]
fn env_override_accepts_more_nodes_than_cpus() {
    let cpus = Topology::detect_hardware().unwrap().num_cpus();
    let output = Command::new(env::current_exe().unwrap())
        .args(["child_detects_shared_virtual_nodes", "--exact", "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env(VIRTUAL_NODES_ENV, (2 * cpus).to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
