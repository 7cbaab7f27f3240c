//! Behaviour of `Topology`: detection, virtual splitting, round-robin placement, pinning.
//!
//! Tests that pin change only the affinity of their own test thread (each test runs on a
//! fresh thread, which inherits the unpinned mask of the harness's main thread) and restore
//! it before returning.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::env;
use std::process::Command;

use nr_core::{
    allowed_cpus, parse_cpu_list, parse_virtual_nodes, pin_current_thread, NumaNode, Topology,
    TopologyError, TopologySource, CPU_ID_LIMIT, VIRTUAL_NODES_ENV,
};

/// Checks every invariant of a topology and returns its nodes as `(memory node, cpus)`.
fn check_invariants(topology: &Topology) -> Vec<(usize, Vec<usize>)> {
    assert!(topology.num_nodes() >= 1);
    assert_eq!(topology.nodes().len(), topology.num_nodes());
    let mut all: Vec<usize> = Vec::new();
    for (i, node) in topology.nodes().iter().enumerate() {
        assert_eq!(node.index(), i);
        assert!(!node.cpus().is_empty(), "node {i} has no CPU");
        assert!(node.cpus().windows(2).all(|pair| pair[0] < pair[1]));
        for &cpu in node.cpus() {
            assert_eq!(topology.node_of_cpu(cpu), Some(i));
        }
        all.extend_from_slice(node.cpus());
    }
    assert_eq!(all.len(), topology.num_cpus());
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), topology.num_cpus(), "a CPU is in two nodes");
    topology
        .nodes()
        .iter()
        .map(|node| (node.memory_node(), node.cpus().to_vec()))
        .collect()
}

/// All CPUs of a topology, sorted.
fn all_cpus(topology: &Topology) -> Vec<usize> {
    let mut cpus: Vec<usize> = topology
        .nodes()
        .iter()
        .flat_map(NumaNode::cpus)
        .copied()
        .collect();
    cpus.sort_unstable();
    cpus
}

#[test]
fn detect_finds_allowed_cpus_on_this_machine() {
    let topology = Topology::detect().expect("detect works on the test machine");
    check_invariants(&topology);
    let allowed = allowed_cpus().unwrap();
    assert!(all_cpus(&topology)
        .iter()
        .all(|cpu| allowed.binary_search(cpu).is_ok()));
}

#[test]
fn detect_hardware_covers_every_allowed_cpu_and_is_not_virtual() {
    let topology = Topology::detect_hardware().unwrap();
    check_invariants(&topology);
    assert!(!matches!(topology.source(), TopologySource::Virtual { .. }));
    // Every CPU the process may use belongs to some node (nodes partition the machine).
    assert_eq!(all_cpus(&topology), allowed_cpus().unwrap());
}

#[cfg(target_os = "linux")]
#[test]
fn sysfs_on_linux_matches_detection() {
    match Topology::from_sysfs() {
        Ok(sysfs) => {
            assert_eq!(sysfs.source(), &TopologySource::Sysfs);
            let hardware = Topology::detect_hardware().unwrap();
            assert_eq!(check_invariants(&sysfs), check_invariants(&hardware));
        }
        Err(TopologyError::SysfsUnavailable { .. }) => {
            let fallback = Topology::detect_hardware().unwrap();
            assert_eq!(fallback.source(), &TopologySource::Fallback);
        }
        Err(err) => panic!("from_sysfs failed: {err}"),
    }
}

#[cfg(feature = "hwloc")]
#[test]
fn hwloc_agrees_with_sysfs() {
    let hwloc = Topology::from_hwloc().unwrap();
    assert_eq!(hwloc.source(), &TopologySource::Hwloc);
    let sysfs = Topology::from_sysfs().unwrap();
    assert_eq!(check_invariants(&hwloc), check_invariants(&sysfs));
}

#[test]
fn explicit_topologies_validate_their_input() {
    let topology = Topology::single_node(vec![3, 1, 2, 1]).unwrap();
    assert_eq!(check_invariants(&topology), [(0, vec![1, 2, 3])]);
    assert_eq!(topology.source(), &TopologySource::Explicit);

    assert!(matches!(
        Topology::single_node(vec![]),
        Err(TopologyError::EmptyNode { memory_node: 0 })
    ));
    assert!(matches!(
        Topology::from_nodes(vec![]),
        Err(TopologyError::NoNodes)
    ));
    assert!(matches!(
        Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![1, 2])]),
        Err(TopologyError::DuplicateCpu { cpu: 1 })
    ));
    assert!(matches!(
        Topology::from_nodes(vec![(0, vec![0]), (1, vec![])]),
        Err(TopologyError::EmptyNode { memory_node: 1 })
    ));
    assert!(matches!(
        Topology::single_node(vec![CPU_ID_LIMIT]),
        Err(TopologyError::CpuOutOfRange { cpu }) if cpu == CPU_ID_LIMIT
    ));
}

#[test]
fn cpu_lists_parse_and_malformed_ones_are_errors() {
    assert_eq!(
        parse_cpu_list("0-3,8,10-11\n").unwrap(),
        [0, 1, 2, 3, 8, 10, 11]
    );
    for text in ["0-", "1,,2", "x", "3-1", "0-99999999999999999999"] {
        assert!(
            matches!(
                parse_cpu_list(text),
                Err(TopologyError::InvalidCpuList { .. })
            ),
            "{text:?}"
        );
    }
}

#[test]
fn virtual_split_of_one_node_partitions_it_evenly() {
    let cpus: Vec<usize> = (0..8).collect();
    let real = Topology::from_nodes(vec![(5, cpus.clone())]).unwrap();
    for n in [1, 2, 3, 4, 8] {
        let split = real.with_virtual_nodes(n).unwrap();
        let nodes = check_invariants(&split);
        assert_eq!(split.num_nodes(), n);
        assert_eq!(all_cpus(&split), cpus, "n = {n}: not a partition");
        let sizes: Vec<usize> = nodes.iter().map(|(_, cpus)| cpus.len()).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min <= 1, "n = {n}: sizes {sizes:?}");
        assert!(nodes.iter().all(|&(memory_node, _)| memory_node == 5));
        // Contiguous groups, in CPU order.
        let flattened: Vec<usize> = nodes.into_iter().flat_map(|(_, cpus)| cpus).collect();
        assert_eq!(flattened, cpus);
        assert_eq!(
            split.source(),
            &TopologySource::Virtual {
                base: Box::new(TopologySource::Explicit),
                nodes: n
            }
        );
    }
}

#[test]
fn virtual_split_of_two_nodes_keeps_memory_nodes() {
    let real = Topology::from_nodes(vec![(0, vec![0, 1, 2, 3]), (1, vec![4, 5, 6, 7])]).unwrap();
    let split = real.with_virtual_nodes(4).unwrap();
    assert_eq!(
        check_invariants(&split),
        [
            (0, vec![0, 1]),
            (0, vec![2, 3]),
            (1, vec![4, 5]),
            (1, vec![6, 7])
        ]
    );
    assert_eq!(split.source().to_string(), "virtual 4 over explicit");
    // Equal to the real node count: the real nodes themselves.
    let same = real.with_virtual_nodes(2).unwrap();
    assert_eq!(same.nodes(), real.nodes());
}

#[test]
fn virtual_split_of_uneven_nodes_never_spans_real_nodes() {
    let real = Topology::from_nodes(vec![(0, vec![0, 1, 2, 3, 4, 5]), (1, vec![6, 7])]).unwrap();
    let split = real.with_virtual_nodes(4).unwrap();
    assert_eq!(
        check_invariants(&split),
        [
            (0, vec![0, 1]),
            (0, vec![2, 3]),
            (0, vec![4, 5]),
            (1, vec![6, 7])
        ]
    );
}

#[test]
fn virtual_split_rejects_impossible_counts() {
    let one = Topology::single_node((0..8).collect()).unwrap();
    assert!(matches!(
        one.with_virtual_nodes(0),
        Err(TopologyError::ZeroVirtualNodes)
    ));
    assert!(matches!(
        one.with_virtual_nodes(9),
        Err(TopologyError::TooManyVirtualNodes {
            requested: 9,
            cpus: 8,
            limit: 8
        })
    ));
    let two = Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![2, 3])]).unwrap();
    assert!(matches!(
        two.with_virtual_nodes(1),
        Err(TopologyError::TooFewVirtualNodes {
            requested: 1,
            real_nodes: 2
        })
    ));
}

#[test]
fn detected_topology_splits_into_one_node_per_cpu() {
    let topology = Topology::detect_hardware().unwrap();
    let split = topology.with_virtual_nodes(topology.num_cpus()).unwrap();
    check_invariants(&split);
    assert!(split.nodes().iter().all(|node| node.cpus().len() == 1));
    assert_eq!(all_cpus(&split), all_cpus(&topology));
}

#[test]
fn virtual_node_env_values_parse() {
    assert_eq!(parse_virtual_nodes("4").unwrap(), 4);
    assert_eq!(parse_virtual_nodes(" 2\n").unwrap(), 2);
    for value in ["", "0", "-2", "two", "2.5"] {
        assert!(
            matches!(
                parse_virtual_nodes(value),
                Err(TopologyError::InvalidVirtualNodesEnv { .. })
            ),
            "{value:?}"
        );
    }
}

/// Runs `child_checks_detect_under_env` in a child process with `NR_VIRTUAL_NODES=value`
/// (setting it in this process would race with other tests calling `detect`).
fn run_child_with_env(value: &str, expected: &str) {
    let output = Command::new(env::current_exe().unwrap())
        .args(["child_checks_detect_under_env", "--exact", "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env(VIRTUAL_NODES_ENV, value)
        .env("NR_TOPOLOGY_TEST_EXPECT", expected)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child failed for {value:?}:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Run by `run_child_with_env` only: checks `detect` against `NR_TOPOLOGY_TEST_EXPECT`, either
/// a node count or `error`.
#[test]
#[ignore = "run in a child process by detect_applies_the_virtual_nodes_env"]
fn child_checks_detect_under_env() {
    let expected = env::var("NR_TOPOLOGY_TEST_EXPECT").expect("run by the parent test");
    let detected = Topology::detect();
    if expected == "error" {
        assert!(matches!(
            detected,
            Err(TopologyError::InvalidVirtualNodesEnv { .. })
        ));
    } else {
        let topology = detected.unwrap();
        check_invariants(&topology);
        assert_eq!(topology.num_nodes().to_string(), expected);
        assert!(matches!(topology.source(), TopologySource::Virtual { .. }));
        assert_eq!(
            all_cpus(&topology),
            all_cpus(&Topology::detect_hardware().unwrap())
        );
    }
}

#[test]
fn detect_applies_the_virtual_nodes_env() {
    let cpus = Topology::detect_hardware().unwrap().num_cpus();
    run_child_with_env(&cpus.to_string(), &cpus.to_string());
    run_child_with_env("zero", "error");
    run_child_with_env("", "error");
}

#[test]
fn threads_are_spread_round_robin_over_nodes() {
    let topology =
        Topology::from_nodes(vec![(0, vec![0, 1, 2]), (1, vec![10, 11]), (2, vec![20])]).unwrap();
    let cpus: Vec<usize> = (0..9).map(|i| topology.cpu_for_thread(i)).collect();
    assert_eq!(cpus, [0, 10, 20, 1, 11, 20, 2, 10, 20]);
    for i in 0..100 {
        assert_eq!(
            topology.node_of_cpu(topology.cpu_for_thread(i)),
            Some(i % 3)
        );
    }
}

#[test]
fn pinning_to_an_allowed_cpu_succeeds() {
    let allowed = allowed_cpus().unwrap();
    let last = *allowed.last().unwrap();
    pin_current_thread(&[last]).unwrap();
    assert_eq!(allowed_cpus().unwrap(), [last]);
    // A pinned thread can be re-pinned to any allowed CPU, and widened back.
    pin_current_thread(&allowed[..1]).unwrap();
    assert_eq!(allowed_cpus().unwrap(), &allowed[..1]);
    pin_current_thread(&allowed).unwrap();
    assert_eq!(allowed_cpus().unwrap(), allowed);
}

#[test]
fn pinning_to_a_node_of_the_detected_topology_succeeds() {
    let allowed = allowed_cpus().unwrap();
    let topology = Topology::detect().unwrap();
    let node = &topology.nodes()[topology.num_nodes() - 1];
    pin_current_thread(node.cpus()).unwrap();
    assert_eq!(allowed_cpus().unwrap(), node.cpus());
    pin_current_thread(&allowed).unwrap();
}

#[test]
fn pinning_to_invalid_cpus_fails_and_leaves_affinity_unchanged() {
    let allowed = allowed_cpus().unwrap();
    assert!(matches!(
        pin_current_thread(&[]),
        Err(TopologyError::EmptyCpuSet)
    ));
    assert!(matches!(
        pin_current_thread(&[CPU_ID_LIMIT]),
        Err(TopologyError::CpuOutOfRange { .. })
    ));
    // The highest id below the limit exists on no machine this runs on.
    let absent = CPU_ID_LIMIT - 1;
    match pin_current_thread(&[absent]) {
        Err(TopologyError::CpuNotAllowed { cpus }) => assert_eq!(cpus, [absent]),
        other => panic!("expected CpuNotAllowed, got {other:?}"),
    }
    assert_eq!(allowed_cpus().unwrap(), allowed);
    // Partly valid: refused as a whole, the refused CPU named, the mask restored.
    match pin_current_thread(&[allowed[0], absent]) {
        Err(TopologyError::CpuNotAllowed { cpus }) => assert_eq!(cpus, [absent]),
        other => panic!("expected CpuNotAllowed, got {other:?}"),
    }
    assert_eq!(allowed_cpus().unwrap(), allowed);
}

#[test]
fn errors_display_their_cause() {
    let err = parse_virtual_nodes("x").unwrap_err();
    assert!(err.to_string().contains("NR_VIRTUAL_NODES"));
    let err = Topology::single_node(vec![0])
        .unwrap()
        .with_virtual_nodes(2)
        .unwrap_err();
    assert!(err.to_string().contains('2'));
}
