//! One rule, one message for a virtual-node count, whichever way it is given: the
//! `NR_VIRTUAL_NODES` override read by `Topology::detect` and `Builder::virtual_nodes` are
//! checked by the same function, against `MAX_VIRTUAL_NODES_PER_CPU` per CPU (issue 22: the
//! override used to accept 1000 on 2 CPUs while the builder refused `cpus + 1`).

mod common;

use std::env;
use std::process::Command;

use common::Kv;
use nr_core::{
    BuildError, NodeReplicated, Topology, TopologyError, MAX_VIRTUAL_NODES_PER_CPU,
    VIRTUAL_NODES_ENV,
};

/// The error of building with `n` virtual nodes through the builder.
fn builder_error(n: usize) -> Option<TopologyError> {
    match NodeReplicated::builder()
        .virtual_nodes(n)
        .build(|_| Kv::default())
    {
        Ok(_) => None,
        Err(BuildError::Topology(err)) => Some(err),
        Err(other) => panic!("unexpected build error: {other}"),
    }
}

/// Runs `child_reports_detect_error` with `NR_VIRTUAL_NODES=value` and returns its stdout
/// (setting the variable in this process would race with other tests calling `detect`).
fn detect_error_with_env(value: &str) -> String {
    let output = Command::new(env::current_exe().unwrap())
        .args(["child_reports_detect_error", "--exact", "--ignored"])
        .args(["--nocapture", "--test-threads=1"])
        .env(VIRTUAL_NODES_ENV, value)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child failed for {value:?}:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Run by `detect_error_with_env` only: prints `detect`'s error between markers.
#[test]
#[ignore = "run in a child process by the tests of this file"]
fn child_reports_detect_error() {
    match Topology::detect() {
        Ok(topology) => println!("<<ok {}>>", topology.num_nodes()),
        Err(err) => println!("<<{err}>>"),
    }
}

fn between_markers(stdout: &str) -> &str {
    let start = stdout.find("<<").expect("marker") + 2;
    let end = stdout[start..].find(">>").expect("marker") + start;
    &stdout[start..end]
}

#[test]
fn env_and_builder_refuse_the_same_count_with_the_same_message() {
    let cpus = Topology::detect_hardware().unwrap().num_cpus();
    let limit = cpus * MAX_VIRTUAL_NODES_PER_CPU;
    for n in [limit + 1, 1000.max(limit + 1)] {
        let from_builder = builder_error(n).expect("over the limit");
        assert!(
            matches!(
                from_builder,
                TopologyError::TooManyVirtualNodes { requested, cpus: c, limit: l }
                    if requested == n && c == cpus && l == limit
            ),
            "{from_builder:?}"
        );
        let message = from_builder.to_string();
        assert!(
            message.contains(&format!("the limit is {limit}")),
            "{message}"
        );
        let stdout = detect_error_with_env(&n.to_string());
        assert_eq!(between_markers(&stdout), message);
    }
}

#[test]
fn env_and_builder_accept_the_same_counts() {
    let cpus = Topology::detect_hardware().unwrap().num_cpus();
    for n in [1, cpus + 1, cpus * MAX_VIRTUAL_NODES_PER_CPU] {
        assert!(builder_error(n).is_none(), "builder refused {n}");
        let stdout = detect_error_with_env(&n.to_string());
        assert_eq!(between_markers(&stdout), format!("ok {n}"));
    }
}
