//! NUMA topology: which CPUs share which memory node, and pinning threads to them.
//!
//! Node Replication keeps one replica per NUMA node and needs to know, for every thread, which
//! node it runs on and which memory is local to it. A [`Topology`] answers that:
//!
//! - discovered from hwloc (cargo feature `hwloc`) or Linux sysfs (the default, no C
//!   dependency), restricted to the CPUs this process may run on ([`allowed_cpus`]), with
//!   memory-only nodes dropped;
//! - or split into *virtual* nodes ([`Topology::with_virtual_nodes`], or the
//!   [`VIRTUAL_NODES_ENV`] environment variable read by [`Topology::detect`]) so that
//!   multi-replica behaviour can be exercised and benchmarked on a single-node machine. Every
//!   virtual node still maps to real memory: its CPUs all belong to one real node, and it
//!   keeps that node as its [`NumaNode::memory_node`].
//!
//! [`pin_current_thread`] binds a thread to a node's CPUs; the caller is expected to pin
//! before first touching node-local memory.
//!
//! Files: `sysfs.rs` (sysfs discovery and the cpulist parser), `hwloc.rs` (hwloc discovery),
//! `virtual_nodes.rs` (the virtual split and its environment override), `pin.rs` (affinity
//! system calls), `error.rs` ([`TopologyError`]).

mod error;
#[cfg(feature = "hwloc")]
mod hwloc;
mod pin;
mod sysfs;
mod virtual_nodes;

use std::fmt;

pub use error::TopologyError;
pub use pin::{allowed_cpus, pin_current_thread};
pub use sysfs::parse_cpu_list;
pub use virtual_nodes::{parse_virtual_nodes, MAX_VIRTUAL_NODES_PER_CPU, VIRTUAL_NODES_ENV};

/// CPU ids must be below this bound (65,536; Linux supports at most 8,192 CPUs).
///
/// It keeps corrupt input (a cpulist of "0-4000000000") from allocating gigabytes, and bounds
/// the affinity masks built by [`pin_current_thread`].
///
/// # Examples
///
/// ```
/// use nr_core::{parse_cpu_list, CPU_ID_LIMIT};
///
/// assert!(parse_cpu_list(&CPU_ID_LIMIT.to_string()).is_err());
/// ```
pub const CPU_ID_LIMIT: usize = 1 << 16;

/// Where a [`Topology`] came from.
///
/// Its [`Display`](fmt::Display) form is short and meant for logs and benchmark reports:
/// `sysfs`, `hwloc`, `fallback`, `explicit`, `virtual 4 over sysfs`.
///
/// # Examples
///
/// ```
/// use nr_core::{Topology, TopologySource};
///
/// let topology = Topology::single_node(vec![0, 1, 2, 3])?.with_virtual_nodes(2)?;
/// assert_eq!(topology.source().to_string(), "virtual 2 over explicit");
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologySource {
    /// Linux sysfs: `/sys/devices/system/node/node*/cpulist`.
    Sysfs,
    /// hwloc (cargo feature `hwloc`).
    Hwloc,
    /// No NUMA information was available (see [`TopologyError::SysfsUnavailable`]): one node,
    /// memory node 0, holding the CPUs of this thread's affinity mask.
    Fallback,
    /// Built explicitly by [`Topology::single_node`] or [`Topology::from_nodes`].
    Explicit,
    /// Split into virtual nodes by [`Topology::with_virtual_nodes`].
    Virtual {
        /// The source of the real topology that was split (never itself `Virtual`).
        base: Box<TopologySource>,
        /// The number of virtual nodes.
        nodes: usize,
    },
    /// Split by [`Topology::with_shared_virtual_nodes`] into more virtual nodes than there
    /// are CPUs, so that several virtual nodes share a CPU (their threads time-share it).
    /// Displayed as `virtual 4 over sysfs, sharing 2 CPUs`.
    VirtualShared {
        /// The source of the real topology that was split (never itself virtual).
        base: Box<TopologySource>,
        /// The number of virtual nodes.
        nodes: usize,
        /// The number of distinct CPUs they share (fewer than `nodes`).
        cpus: usize,
    },
}

impl fmt::Display for TopologySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sysfs => f.write_str("sysfs"),
            Self::Hwloc => f.write_str("hwloc"),
            Self::Fallback => f.write_str("fallback"),
            Self::Explicit => f.write_str("explicit"),
            Self::Virtual { base, nodes } => write!(f, "virtual {nodes} over {base}"),
            Self::VirtualShared { base, nodes, cpus } => {
                write!(f, "virtual {nodes} over {base}, sharing {cpus} CPUs")
            }
        }
    }
}

/// One (possibly virtual) NUMA node: a set of CPUs and the memory node they use.
///
/// # Examples
///
/// ```
/// use nr_core::Topology;
///
/// let topology = Topology::detect()?;
/// for node in topology.nodes() {
///     let (index, memory) = (node.index(), node.memory_node());
///     println!("node {index} (memory node {memory}): CPUs {:?}", node.cpus());
///     assert!(!node.cpus().is_empty());
/// }
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    index: usize,
    memory_node: usize,
    /// Sorted, without duplicates, never empty.
    cpus: Vec<usize>,
}

impl NumaNode {
    /// This node's position in [`Topology::nodes`].
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::detect()?;
    /// for (i, node) in topology.nodes().iter().enumerate() {
    ///     assert_eq!(node.index(), i);
    /// }
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    #[inline]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The OS NUMA node id whose memory this node uses (for a virtual node: the real node its
    /// CPUs belong to).
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::from_nodes(vec![(3, vec![0, 1])])?;
    /// assert_eq!(topology.nodes()[0].memory_node(), 3);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    #[inline]
    pub fn memory_node(&self) -> usize {
        self.memory_node
    }

    /// The OS CPU ids of this node, sorted, never empty.
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::single_node(vec![5, 1, 3])?;
    /// assert_eq!(topology.nodes()[0].cpus(), &[1, 3, 5]);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    #[inline]
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }
}

/// The NUMA nodes this process can run on, each with its CPUs and memory node.
///
/// Invariants: at least one node; every node has at least one CPU; no CPU is in two nodes
/// (except after [`Topology::with_shared_virtual_nodes`] split more nodes than CPUs, whose
/// source is [`TopologySource::VirtualShared`]); node `i` is `nodes()[i]` and has
/// [`NumaNode::index`] `i`.
///
/// # Examples
///
/// ```
/// use nr_core::{pin_current_thread, Topology};
///
/// let topology = Topology::detect()?;
/// let (nodes, cpus) = (topology.num_nodes(), topology.num_cpus());
/// println!("{nodes} nodes, {cpus} CPUs (from {})", topology.source());
///
/// // Where the third worker thread should run, and which replica it should use.
/// let cpu = topology.cpu_for_thread(2);
/// let node = topology.node_of_cpu(cpu).expect("cpu_for_thread returns a CPU of the topology");
/// pin_current_thread(&[cpu])?;
/// assert!(node < topology.num_nodes());
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    nodes: Vec<NumaNode>,
    source: TopologySource,
}

impl Topology {
    /// Discovers the topology of this machine, then applies the [`VIRTUAL_NODES_ENV`]
    /// override.
    ///
    /// Discovery uses hwloc when the `hwloc` feature is on (`Topology::from_hwloc`) and
    /// sysfs otherwise ([`Topology::from_sysfs`]). If sysfs has no NUMA node directory (a
    /// kernel without NUMA, a non-Linux OS), it falls back to one node, memory node 0, holding
    /// the CPUs of [`allowed_cpus`] ([`TopologySource::Fallback`]).
    ///
    /// If `NR_VIRTUAL_NODES` is set, the result is split with
    /// [`Topology::with_shared_virtual_nodes`] (more nodes than CPUs share CPUs); use [`Topology::detect_hardware`] to ignore it.
    ///
    /// Call it before pinning the calling thread: the nodes are restricted to the calling
    /// thread's affinity mask.
    ///
    /// # Errors
    ///
    /// [`TopologyError::InvalidVirtualNodesEnv`] if `NR_VIRTUAL_NODES` is set but is not a
    /// positive integer; the errors of [`Topology::with_shared_virtual_nodes`] if it cannot split
    /// the CPUs that way; otherwise those of [`Topology::detect_hardware`].
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::detect()?;
    /// assert!(topology.num_nodes() >= 1);
    /// assert!(topology.num_cpus() >= topology.num_nodes());
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn detect() -> Result<Topology, TopologyError> {
        let hardware = Self::detect_hardware()?;
        match virtual_nodes::virtual_nodes_from_env()? {
            Some(nodes) => hardware.with_shared_virtual_nodes(nodes),
            None => Ok(hardware),
        }
    }

    /// Like [`Topology::detect`], but ignores the [`VIRTUAL_NODES_ENV`] override.
    ///
    /// # Errors
    ///
    /// Those of `Topology::from_hwloc` with the `hwloc` feature; otherwise those of
    /// [`Topology::from_sysfs`] except [`TopologyError::SysfsUnavailable`] (which falls back),
    /// and those of [`allowed_cpus`].
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{Topology, TopologySource};
    ///
    /// let topology = Topology::detect_hardware()?;
    /// assert!(!matches!(topology.source(), TopologySource::Virtual { .. }));
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn detect_hardware() -> Result<Topology, TopologyError> {
        #[cfg(feature = "hwloc")]
        {
            Self::from_hwloc()
        }
        #[cfg(not(feature = "hwloc"))]
        {
            match Self::from_sysfs() {
                Err(TopologyError::SysfsUnavailable { .. }) => Self::fallback(),
                other => other,
            }
        }
    }

    /// One node, memory node 0, holding every CPU of [`allowed_cpus`].
    #[cfg(not(feature = "hwloc"))]
    fn fallback() -> Result<Topology, TopologyError> {
        let allowed = allowed_cpus()?;
        Self::from_discovered(
            TopologySource::Fallback,
            vec![(0, allowed.clone())],
            &allowed,
        )
    }

    /// A topology of one node, memory node 0, holding exactly `cpus` (in any order; duplicates
    /// are merged). Meant for tests and for callers that want no NUMA awareness.
    ///
    /// The CPUs are taken as given, not checked against [`allowed_cpus`].
    ///
    /// # Errors
    ///
    /// [`TopologyError::EmptyNode`] if `cpus` is empty, [`TopologyError::CpuOutOfRange`] if a
    /// CPU id is at least [`CPU_ID_LIMIT`].
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::single_node(vec![0, 1, 2, 3])?;
    /// assert_eq!(topology.num_nodes(), 1);
    /// assert_eq!(topology.num_cpus(), 4);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn single_node(cpus: Vec<usize>) -> Result<Topology, TopologyError> {
        Self::from_nodes(vec![(0, cpus)])
    }

    /// A topology with exactly the given nodes, each a `(memory_node, cpus)` pair, in that
    /// order. Meant for tests and for synthetic layouts; CPUs are not checked against
    /// [`allowed_cpus`]. Two nodes may share a memory node (as virtual nodes do).
    ///
    /// # Errors
    ///
    /// [`TopologyError::NoNodes`] if `nodes` is empty, [`TopologyError::EmptyNode`] if a node
    /// has no CPU,
    /// [`TopologyError::DuplicateCpu`] if a CPU is in two nodes,
    /// [`TopologyError::CpuOutOfRange`] if a CPU id is at least [`CPU_ID_LIMIT`].
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![2, 3])])?;
    /// assert_eq!(topology.node_of_cpu(2), Some(1));
    /// assert_eq!(topology.nodes()[1].memory_node(), 1);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn from_nodes(nodes: Vec<(usize, Vec<usize>)>) -> Result<Topology, TopologyError> {
        Self::from_parts(TopologySource::Explicit, nodes)
    }

    /// Builds a discovered topology: keeps only the `allowed` CPUs of each node, drops nodes
    /// left without CPUs (memory-only nodes, nodes outside the cpuset).
    fn from_discovered(
        source: TopologySource,
        nodes: Vec<(usize, Vec<usize>)>,
        allowed: &[usize],
    ) -> Result<Topology, TopologyError> {
        let nodes: Vec<(usize, Vec<usize>)> = nodes
            .into_iter()
            .map(|(memory_node, mut cpus)| {
                cpus.retain(|cpu| allowed.binary_search(cpu).is_ok());
                (memory_node, cpus)
            })
            .filter(|(_, cpus)| !cpus.is_empty())
            .collect();
        if nodes.is_empty() {
            return Err(TopologyError::NoAllowedCpus {
                allowed: allowed.to_vec(),
            });
        }
        Self::from_parts(source, nodes)
    }

    /// Checks the invariants and numbers the nodes in the given order. A CPU may be in
    /// several nodes only when `source` is [`TopologySource::VirtualShared`].
    fn from_parts(
        source: TopologySource,
        nodes: Vec<(usize, Vec<usize>)>,
    ) -> Result<Topology, TopologyError> {
        if nodes.is_empty() {
            return Err(TopologyError::NoNodes);
        }
        let mut seen: Vec<usize> = Vec::new();
        let mut built = Vec::with_capacity(nodes.len());
        for (index, (memory_node, mut cpus)) in nodes.into_iter().enumerate() {
            cpus.sort_unstable();
            cpus.dedup();
            if cpus.is_empty() {
                return Err(TopologyError::EmptyNode { memory_node });
            }
            if let Some(&cpu) = cpus.iter().find(|&&cpu| cpu >= CPU_ID_LIMIT) {
                return Err(TopologyError::CpuOutOfRange { cpu });
            }
            seen.extend_from_slice(&cpus);
            built.push(NumaNode {
                index,
                memory_node,
                cpus,
            });
        }
        seen.sort_unstable();
        let shared = matches!(source, TopologySource::VirtualShared { .. });
        if let Some(pair) = seen.windows(2).find(|pair| pair[0] == pair[1]) {
            if !shared {
                return Err(TopologyError::DuplicateCpu { cpu: pair[0] });
            }
        }
        Ok(Topology {
            nodes: built,
            source,
        })
    }

    /// The nodes, in order: node `i` is `nodes()[i]`. Never empty.
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::detect()?;
    /// let cpus: usize = topology.nodes().iter().map(|node| node.cpus().len()).sum();
    /// assert_eq!(cpus, topology.num_cpus());
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    #[inline]
    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }

    /// The number of nodes (at least 1): the number of replicas Node Replication makes.
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::single_node(vec![0, 1])?.with_virtual_nodes(2)?;
    /// assert_eq!(topology.num_nodes(), 2);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    #[inline]
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The number of distinct CPUs over all nodes (at least [`Topology::num_nodes`], except
    /// when virtual nodes share CPUs: [`TopologySource::VirtualShared`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![4])])?;
    /// assert_eq!(topology.num_cpus(), 3);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn num_cpus(&self) -> usize {
        if matches!(self.source, TopologySource::VirtualShared { .. }) {
            let mut all: Vec<usize> = self
                .nodes
                .iter()
                .flat_map(|node| node.cpus.clone())
                .collect();
            all.sort_unstable();
            all.dedup();
            all.len()
        } else {
            self.nodes.iter().map(|node| node.cpus.len()).sum()
        }
    }

    /// Where this topology came from.
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{Topology, TopologySource};
    ///
    /// let topology = Topology::single_node(vec![0])?;
    /// assert_eq!(topology.source(), &TopologySource::Explicit);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    #[inline]
    pub fn source(&self) -> &TopologySource {
        &self.source
    }

    /// The index (into [`Topology::nodes`]) of the node holding OS CPU `cpu`, or `None` if no
    /// node holds it (e.g. a CPU outside the affinity mask). When virtual nodes share CPUs
    /// ([`TopologySource::VirtualShared`]), the first node holding it.
    ///
    /// Costs a binary search per node.
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![2, 3])])?;
    /// assert_eq!(topology.node_of_cpu(1), Some(0));
    /// assert_eq!(topology.node_of_cpu(3), Some(1));
    /// assert_eq!(topology.node_of_cpu(4), None);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn node_of_cpu(&self, cpu: usize) -> Option<usize> {
        self.nodes
            .iter()
            .position(|node| node.cpus.binary_search(&cpu).is_ok())
    }

    /// The CPU a thread with global index `i` should run on when threads are spread
    /// round-robin over the nodes: thread `i` goes to node `i % num_nodes()`, and takes that
    /// node's CPUs in order, wrapping around when there are more threads than CPUs.
    ///
    /// Spreading over nodes first makes every replica active as soon as there are as many
    /// threads as nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::from_nodes(vec![(0, vec![0, 1]), (1, vec![2, 3])])?;
    /// let cpus: Vec<usize> = (0..6).map(|i| topology.cpu_for_thread(i)).collect();
    /// assert_eq!(cpus, [0, 2, 1, 3, 0, 2]);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn cpu_for_thread(&self, i: usize) -> usize {
        // No division by zero or out-of-bounds index: the type's invariants guarantee at least
        // one node and at least one CPU per node.
        let node = &self.nodes[i % self.nodes.len()];
        let round = i / self.nodes.len();
        node.cpus[round % node.cpus.len()]
    }
}
