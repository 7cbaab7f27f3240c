#![doc = include_str!("../README.md")]

pub mod cnr;
mod config;
mod dispatch;
mod error;
mod lock;
mod log;
mod nr;
mod replica;
mod sync;
#[cfg(test)]
mod tests;
mod topology;
mod wait;

pub use dispatch::Dispatch;
pub use error::{BuildError, CommitError, Poisoned, RegisterError, ReplicaError};
pub use nr::{Builder, CommitLog, NodeReplicated, ThreadHandle};
pub use topology::{
    allowed_cpus, parse_cpu_list, parse_virtual_nodes, pin_current_thread, NumaNode, Topology,
    TopologyError, TopologySource, CPU_ID_LIMIT, MAX_VIRTUAL_NODES_PER_CPU, VIRTUAL_NODES_ENV,
};
