//! Topology discovery through hwloc (cargo feature `hwloc`, crate `hwlocality`).
//!
//! hwloc sees more than sysfs (it works on non-Linux systems and knows caches and memory
//! tiers), but for Node Replication only one thing matters: each NUMA node's OS index and the
//! CPUs (PUs) local to it. In hwloc 2.x NUMA nodes are memory children of the object whose
//! CPUs are local to them, and their `cpuset` is that object's cpuset; memory-only nodes
//! (e.g. CXL or pmem tiers) have an empty cpuset and are dropped like in sysfs.

use hwlocality::object::types::ObjectType;

use super::{allowed_cpus, Topology, TopologyError, TopologySource};

impl Topology {
    /// Discovers the topology with hwloc (only with the `hwloc` feature).
    ///
    /// Nodes are ordered by OS node index, which becomes their
    /// [`NumaNode::memory_node`](super::NumaNode::memory_node); their CPUs are restricted to
    /// [`allowed_cpus`] and nodes left without CPUs are dropped, exactly as
    /// [`Topology::from_sysfs`] does, so on Linux both give the same nodes. hwloc reports at
    /// least one NUMA node even on machines without NUMA, so no fallback is needed.
    ///
    /// # Errors
    ///
    /// - [`TopologyError::Hwloc`] if hwloc cannot build its topology, or reports a NUMA node
    ///   without an OS index or with an infinite CPU set;
    /// - [`TopologyError::NoAllowedCpus`] if no node has an allowed CPU;
    /// - the errors of [`allowed_cpus`].
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::from_hwloc()?;
    /// assert_eq!(topology.source().to_string(), "hwloc");
    /// assert!(topology.num_nodes() >= 1);
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn from_hwloc() -> Result<Topology, TopologyError> {
        let hwloc = hwlocality::Topology::new().map_err(|err| TopologyError::Hwloc {
            message: err.to_string(),
        })?;
        let mut nodes = Vec::new();
        for node in hwloc.objects_with_type(ObjectType::NUMANode) {
            let id = node.os_index().ok_or_else(|| TopologyError::Hwloc {
                message: format!(
                    "NUMA node with logical index {} has no OS index",
                    node.logical_index()
                ),
            })?;
            let cpus = match node.cpuset() {
                // `iter_set` on an infinitely set bitmap would never end: check first.
                Some(set) if set.weight().is_none() => {
                    return Err(TopologyError::Hwloc {
                        message: format!("NUMA node {id} has an infinite CPU set"),
                    })
                }
                Some(set) => set.iter_set().map(usize::from).collect(),
                None => Vec::new(),
            };
            nodes.push((id, cpus));
        }
        // hwloc lists NUMA nodes by logical index; sysfs order (by OS index) is the contract.
        nodes.sort_unstable_by_key(|&(id, _)| id);
        Self::from_discovered(TopologySource::Hwloc, nodes, &allowed_cpus()?)
    }
}
