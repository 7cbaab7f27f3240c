//! The error type of topology discovery, virtual splitting and thread pinning.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::PathBuf;

#[cfg(doc)]
use super::Topology;
use super::VIRTUAL_NODES_ENV;

/// Why a topology could not be discovered or built, or a thread could not be pinned.
///
/// Each variant's documentation says what causes it and what to do about it.
///
/// # Examples
///
/// ```
/// use nr_core::{Topology, TopologyError};
///
/// let err = Topology::single_node(vec![]).unwrap_err();
/// assert!(matches!(err, TopologyError::EmptyNode { .. }));
/// println!("{err}");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TopologyError {
    /// Linux sysfs has no NUMA description: `/sys/devices/system/node` is missing (a kernel
    /// built without `CONFIG_NUMA`, a non-Linux OS, a container without `/sys`) or holds no
    /// `node<N>` directory.
    ///
    /// Remedy: nothing, if you called [`Topology::detect`]: it falls back to one node holding
    /// the CPUs of the affinity mask. If you called [`Topology::from_sysfs`] directly, call
    /// [`Topology::detect`] instead, or mount sysfs.
    SysfsUnavailable {
        /// The directory that was looked at.
        path: PathBuf,
        /// The error from reading it, if reading failed (rather than finding no node).
        source: Option<io::Error>,
    },
    /// Reading a topology file failed for a reason other than its absence (permissions, I/O).
    ///
    /// Remedy: check that the process can read the named file (`cat` it); sysfs files are
    /// normally world-readable, so a failure here usually means a sandbox hides them.
    Io {
        /// The file or directory that could not be read.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A CPU list ("0-3,8,10-11", the format of sysfs `cpulist` files) is malformed: an empty
    /// item, a non-number, a descending range or a CPU id of at least
    /// [`CPU_ID_LIMIT`](super::CPU_ID_LIMIT).
    ///
    /// Remedy: if the list came from sysfs (`path` is set) the kernel wrote something this
    /// parser does not understand; report it with the file's contents. Otherwise fix the input.
    InvalidCpuList {
        /// The whole text that was parsed.
        input: String,
        /// What is wrong with it, naming the offending item.
        reason: String,
        /// The file it was read from, if any.
        path: Option<PathBuf>,
    },
    /// None of the discovered nodes has a CPU this thread may run on: the affinity mask
    /// ([`allowed_cpus`](super::allowed_cpus)) and the nodes' CPUs are disjoint.
    ///
    /// Remedy: call detection from a thread that is not pinned (pinning narrows the mask seen
    /// by [`allowed_cpus`](super::allowed_cpus)), or check the container's cpuset
    /// (`taskset -p $$`, `cat /sys/fs/cgroup/cpuset.cpus.effective`).
    NoAllowedCpus {
        /// The CPUs the affinity mask allows.
        allowed: Vec<usize>,
    },
    /// A node of an explicitly built topology ([`Topology::single_node`],
    /// [`Topology::from_nodes`]) has no CPU.
    ///
    /// Remedy: give every node at least one CPU, or leave the node out. (Detected memory-only
    /// nodes are dropped silently instead: no thread can run on them.)
    EmptyNode {
        /// The memory node of the empty node.
        memory_node: usize,
    },
    /// [`Topology::from_nodes`] was given no node.
    ///
    /// Remedy: give it at least one node; [`Topology::single_node`] is the shortest way.
    NoNodes,
    /// The same CPU was given to two nodes of an explicitly built topology.
    ///
    /// Remedy: give every CPU to exactly one node.
    DuplicateCpu {
        /// The CPU listed twice.
        cpu: usize,
    },
    /// A CPU id is at least [`CPU_ID_LIMIT`](super::CPU_ID_LIMIT), larger than any kernel
    /// supports; it is almost certainly a typo or corrupt input.
    ///
    /// Remedy: use the OS CPU ids listed by [`allowed_cpus`](super::allowed_cpus).
    CpuOutOfRange {
        /// The offending CPU id.
        cpu: usize,
    },
    /// [`Topology::with_virtual_nodes`] was asked for 0 nodes.
    ///
    /// Remedy: ask for at least 1 (the number of real nodes or more).
    ZeroVirtualNodes,
    /// More virtual nodes were asked for than the split allows: more than
    /// [`MAX_VIRTUAL_NODES_PER_CPU`](super::MAX_VIRTUAL_NODES_PER_CPU) per CPU from
    /// `NR_VIRTUAL_NODES`, `Builder::virtual_nodes` or [`Topology::with_shared_virtual_nodes`]
    /// (every virtual node is a replica applying every write, so many per CPU measure the
    /// scheduler, not the structure), or more than one per CPU from
    /// [`Topology::with_virtual_nodes`], which never shares a CPU.
    ///
    /// Remedy: ask for at most `limit` nodes (a count such as 2 or 4 exercises every
    /// multi-replica path); from [`Topology::with_virtual_nodes`], use
    /// [`Topology::with_shared_virtual_nodes`] to let nodes share CPUs.
    TooManyVirtualNodes {
        /// The number of nodes asked for.
        requested: usize,
        /// The number of CPUs available.
        cpus: usize,
        /// The most nodes this split allows: `cpus` times the nodes allowed per CPU.
        limit: usize,
    },
    /// [`Topology::with_virtual_nodes`] was asked for fewer nodes than there are real memory
    /// nodes. Merging real nodes would give a virtual node CPUs whose memory lies on two
    /// nodes, so it is refused.
    ///
    /// Remedy: ask for at least `real_nodes` nodes, or leave the real topology as it is.
    TooFewVirtualNodes {
        /// The number of nodes asked for.
        requested: usize,
        /// The number of distinct memory nodes in the topology.
        real_nodes: usize,
    },
    /// The `NR_VIRTUAL_NODES` environment variable is set to something other than a positive
    /// decimal integer (an empty value included).
    ///
    /// Remedy: set it to a node count such as `4`, or unset it to use the real topology.
    InvalidVirtualNodesEnv {
        /// The value found (lossily converted if it was not Unicode).
        value: String,
    },
    /// hwloc failed to build its topology or reported something unusable (a NUMA node without
    /// an OS index, an infinite CPU set).
    ///
    /// Remedy: run `lstopo` to see what hwloc reports; build without the `hwloc` feature to
    /// use sysfs instead.
    Hwloc {
        /// hwloc's error, or a description of the unusable report.
        message: String,
    },
    /// [`pin_current_thread`](super::pin_current_thread) was given no CPU.
    ///
    /// Remedy: pass at least one CPU, e.g. a node's [`NumaNode::cpus`](super::NumaNode::cpus).
    EmptyCpuSet,
    /// [`pin_current_thread`](super::pin_current_thread) was given CPUs this thread may not
    /// run on (outside the cgroup cpuset, or offline). The thread's affinity was left as it was.
    ///
    /// Remedy: pin only to CPUs of a detected [`Topology`], which holds only
    /// allowed CPUs.
    CpuNotAllowed {
        /// The requested CPUs the kernel refused.
        cpus: Vec<usize>,
    },
    /// `sched_getaffinity` or `sched_setaffinity` failed for a reason other than the CPUs
    /// themselves (e.g. a seccomp filter denying the system call).
    ///
    /// Remedy: check the sandbox or container's seccomp profile; `taskset` fails the same way.
    Affinity {
        /// The system call that failed.
        operation: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The operation is not implemented on this OS (thread pinning outside Linux).
    ///
    /// Remedy: none from this crate; run unpinned (correct, but without NUMA placement).
    Unsupported {
        /// The operation that is unsupported.
        operation: &'static str,
    },
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SysfsUnavailable { path, .. } => {
                write!(f, "no NUMA node directory under {}", path.display())
            }
            Self::Io { path, .. } => write!(f, "cannot read {}", path.display()),
            Self::InvalidCpuList {
                input,
                reason,
                path,
            } => {
                write!(f, "invalid CPU list {input:?}")?;
                if let Some(path) = path {
                    write!(f, " in {}", path.display())?;
                }
                write!(f, ": {reason}")
            }
            Self::NoAllowedCpus { allowed } => write!(
                f,
                "no NUMA node has a CPU in this thread's affinity mask {allowed:?}"
            ),
            Self::EmptyNode { memory_node } => {
                write!(f, "node with memory node {memory_node} has no CPU")
            }
            Self::NoNodes => write!(f, "a topology needs at least one node"),
            Self::DuplicateCpu { cpu } => write!(f, "CPU {cpu} is given to more than one node"),
            Self::CpuOutOfRange { cpu } => write!(
                f,
                "CPU id {cpu} is not below the limit of {}",
                super::CPU_ID_LIMIT
            ),
            Self::ZeroVirtualNodes => write!(f, "cannot split the CPUs into 0 virtual nodes"),
            Self::TooManyVirtualNodes {
                requested,
                cpus,
                limit,
            } if limit == cpus => write!(
                f,
                "cannot split {cpus} CPUs into {requested} virtual nodes: at most one node per CPU \
                 (with_shared_virtual_nodes lets nodes share CPUs)"
            ),
            Self::TooManyVirtualNodes {
                requested,
                cpus,
                limit,
            } => write!(
                f,
                "cannot split {cpus} CPUs into {requested} virtual nodes: the limit is {limit} \
                 ({} per CPU; every virtual node is a replica that applies every write, so \
                 more would only time-share the CPUs)",
                super::MAX_VIRTUAL_NODES_PER_CPU
            ),
            Self::TooFewVirtualNodes {
                requested,
                real_nodes,
            } => write!(
                f,
                "cannot make {requested} virtual nodes out of {real_nodes} real nodes: \
                 merging real nodes is refused; ask for at least {real_nodes}"
            ),
            Self::InvalidVirtualNodesEnv { value } => write!(
                f,
                "{VIRTUAL_NODES_ENV}={value:?} is not a positive integer; \
                 set it to a node count such as 4, or unset it"
            ),
            Self::Hwloc { message } => write!(f, "hwloc: {message}"),
            Self::EmptyCpuSet => write!(f, "cannot pin a thread to an empty set of CPUs"),
            Self::CpuNotAllowed { cpus } => {
                write!(f, "this thread may not run on CPUs {cpus:?}")
            }
            Self::Affinity { operation, .. } => write!(f, "{operation} failed"),
            Self::Unsupported { operation } => {
                write!(f, "{operation} is not supported on this OS")
            }
        }
    }
}

impl Error for TopologyError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::SysfsUnavailable {
                source: Some(source),
                ..
            }
            | Self::Io { source, .. }
            | Self::Affinity { source, .. } => Some(source),
            _ => None,
        }
    }
}
