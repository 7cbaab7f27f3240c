//! Splitting a topology into virtual nodes, and the `NR_VIRTUAL_NODES` override.
//!
//! Virtual nodes let a single-node machine run (and benchmark) Node Replication with several
//! replicas. The rule that keeps them honest: a virtual node never spans two real nodes, so
//! its memory node is a real one and replica placement still maps to real memory.

use std::env;

use super::{Topology, TopologyError, TopologySource};

/// The environment variable read by [`Topology::detect`]: when set, the detected topology is
/// split into that many virtual nodes with [`Topology::with_virtual_nodes`]. Its value must be
/// a positive decimal integer (see [`parse_virtual_nodes`]). It may exceed the number of CPUs:
/// the split is then made by [`Topology::with_shared_virtual_nodes`], several virtual nodes
/// share a CPU, and the topology's source says so (`virtual 4 over sysfs, sharing 2 CPUs`).
///
/// # Examples
///
/// ```
/// assert_eq!(nr_core::VIRTUAL_NODES_ENV, "NR_VIRTUAL_NODES");
/// // e.g. `NR_VIRTUAL_NODES=4 cargo bench` runs with 4 replicas on any machine (on fewer than
/// // 4 CPUs, several virtual nodes share a CPU).
/// ```
pub const VIRTUAL_NODES_ENV: &str = "NR_VIRTUAL_NODES";

/// The most virtual nodes that may share one CPU: a topology of `c` CPUs splits into at most
/// `MAX_VIRTUAL_NODES_PER_CPU * c` virtual nodes, whether the count comes from
/// [`VIRTUAL_NODES_ENV`], [`Builder::virtual_nodes`](crate::Builder::virtual_nodes) or
/// [`Topology::with_shared_virtual_nodes`] (all three are checked by one function, with one
/// error, [`TopologyError::TooManyVirtualNodes`]).
///
/// Why a limit: every virtual node is a replica that holds a whole copy of the structure and
/// applies every write, and its combiner needs CPU time to keep up with the log, whose
/// slowest replica holds back every appender. Beyond a few replicas per CPU a run measures
/// the scheduler rather than the structure (1,000 virtual nodes on 2 CPUs ran the demo for
/// about 100 s), so a larger count is refused as a likely typo. Four per CPU covers the
/// uses in this workspace (4 virtual nodes on a 1-CPU test machine).
///
/// # Examples
///
/// ```
/// use nr_core::{Topology, TopologyError, MAX_VIRTUAL_NODES_PER_CPU};
///
/// let two_cpus = Topology::single_node(vec![0, 1])?;
/// assert!(two_cpus.with_shared_virtual_nodes(2 * MAX_VIRTUAL_NODES_PER_CPU).is_ok());
/// let err = two_cpus.with_shared_virtual_nodes(1000).unwrap_err();
/// assert!(matches!(err, TopologyError::TooManyVirtualNodes { requested: 1000, limit: 8, .. }));
/// # Ok::<(), TopologyError>(())
/// ```
pub const MAX_VIRTUAL_NODES_PER_CPU: usize = 4;

/// The one check of a virtual-node count: `n` nodes out of `cpus` CPUs on `real_nodes` real
/// nodes, at most `per_cpu` nodes per CPU (1 for [`Topology::with_virtual_nodes`],
/// [`MAX_VIRTUAL_NODES_PER_CPU`] for the shared split and everything built on it).
fn check_virtual_nodes(
    n: usize,
    cpus: usize,
    real_nodes: usize,
    per_cpu: usize,
) -> Result<(), TopologyError> {
    if n == 0 {
        return Err(TopologyError::ZeroVirtualNodes);
    }
    if n < real_nodes {
        return Err(TopologyError::TooFewVirtualNodes {
            requested: n,
            real_nodes,
        });
    }
    let limit = cpus.saturating_mul(per_cpu);
    if n > limit {
        return Err(TopologyError::TooManyVirtualNodes {
            requested: n,
            cpus,
            limit,
        });
    }
    Ok(())
}

/// Parses a value of [`VIRTUAL_NODES_ENV`]: a positive decimal integer, surrounding
/// whitespace allowed.
///
/// Whether the number fits the machine is checked later, by
/// [`Topology::with_shared_virtual_nodes`] (at most [`MAX_VIRTUAL_NODES_PER_CPU`] per CPU).
///
/// # Errors
///
/// [`TopologyError::InvalidVirtualNodesEnv`] for an empty value, `0`, a sign, anything that is
/// not decimal digits, or a number that does not fit a `usize`.
///
/// # Examples
///
/// ```
/// use nr_core::parse_virtual_nodes;
///
/// assert_eq!(parse_virtual_nodes("4")?, 4);
/// assert!(parse_virtual_nodes("0").is_err());
/// assert!(parse_virtual_nodes("four").is_err());
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
pub fn parse_virtual_nodes(value: &str) -> Result<usize, TopologyError> {
    let digits = value.trim();
    let parsed = if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        digits.parse::<usize>().ok()
    } else {
        None
    };
    match parsed {
        Some(nodes) if nodes > 0 => Ok(nodes),
        _ => Err(TopologyError::InvalidVirtualNodesEnv {
            value: value.to_owned(),
        }),
    }
}

/// The node count asked for by [`VIRTUAL_NODES_ENV`], or `None` if it is unset.
/// [`Topology::detect`] splits with [`Topology::with_shared_virtual_nodes`], so the count is
/// checked by the same rule as `Builder::virtual_nodes`: at least the number of real nodes, at
/// most [`MAX_VIRTUAL_NODES_PER_CPU`] per CPU.
pub(super) fn virtual_nodes_from_env() -> Result<Option<usize>, TopologyError> {
    let Some(value) = env::var_os(VIRTUAL_NODES_ENV) else {
        return Ok(None);
    };
    match value.to_str() {
        Some(value) => parse_virtual_nodes(value).map(Some),
        None => Err(TopologyError::InvalidVirtualNodesEnv {
            value: value.to_string_lossy().into_owned(),
        }),
    }
}

impl Topology {
    /// Splits the CPUs into `n` virtual nodes.
    ///
    /// The *real* nodes are the distinct memory nodes of this topology (so splitting an
    /// already virtual topology re-splits the real nodes underneath; it does not split the
    /// virtual nodes further). Each real node gets at least one virtual node, and the
    /// remaining ones go, one at a time, to the real node whose virtual nodes are currently
    /// the largest on average (ties: the earlier node). Each real node's sorted CPUs are then
    /// cut into that many contiguous groups whose sizes differ by at most 1. Every virtual
    /// node keeps its real node as its [`NumaNode::memory_node`], so placement always maps to
    /// real memory.
    ///
    /// Virtual nodes are ordered by real node, then by CPU. On a machine with one node (or
    /// real nodes of equal size divisible by the split) all virtual nodes differ in size by at
    /// most 1; with uneven real nodes they cannot, since no virtual node spans two real nodes.
    ///
    /// `n` equal to the number of real nodes gives back the real nodes (with a
    /// [`TopologySource::Virtual`] source).
    ///
    /// # Errors
    ///
    /// - [`TopologyError::ZeroVirtualNodes`] if `n == 0`;
    /// - [`TopologyError::TooManyVirtualNodes`] if `n > self.num_cpus()` (its `limit` is then
    ///   the CPU count);
    /// - [`TopologyError::TooFewVirtualNodes`] if `n` is less than the number of real nodes:
    ///   merging real nodes would give a virtual node remote memory, so it is refused.
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::Topology;
    ///
    /// let topology = Topology::single_node(vec![0, 1, 2, 3, 4])?.with_virtual_nodes(2)?;
    /// assert_eq!(topology.nodes()[0].cpus(), &[0, 1, 2]);
    /// assert_eq!(topology.nodes()[1].cpus(), &[3, 4]);
    /// assert_eq!(topology.nodes()[1].memory_node(), 0);
    /// assert_eq!(topology.source().to_string(), "virtual 2 over explicit");
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    ///
    /// [`NumaNode::memory_node`]: super::NumaNode::memory_node
    pub fn with_virtual_nodes(&self, n: usize) -> Result<Topology, TopologyError> {
        self.split(n, 1)
    }

    /// Like [`Topology::with_virtual_nodes`], but `n` may exceed the number of CPUs: several
    /// virtual nodes then share a CPU, as Node Replication's `Builder::replicas` already lets
    /// several replicas share the calling thread's CPUs.
    ///
    /// With `n <= self.num_cpus()` the result is exactly that of
    /// [`Topology::with_virtual_nodes`]. Beyond, each real node of `c` CPUs that gets `g > c`
    /// virtual nodes gives virtual node `j` (of its `g`) the single CPU `cpus[j * c / g]`, so
    /// the sharing is spread evenly and still never crosses a real node; the source becomes
    /// [`TopologySource::VirtualShared`], displayed as `virtual 4 over sysfs, sharing 2 CPUs`,
    /// so every printed setting says that the nodes time-share CPUs.
    ///
    /// # Errors
    ///
    /// - [`TopologyError::ZeroVirtualNodes`] if `n == 0`;
    /// - [`TopologyError::TooFewVirtualNodes`] if `n` is less than the number of real nodes;
    /// - [`TopologyError::TooManyVirtualNodes`] if `n` exceeds [`MAX_VIRTUAL_NODES_PER_CPU`]
    ///   times the number of CPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::Topology;
    ///
    /// let topology = Topology::single_node(vec![0, 1])?.with_shared_virtual_nodes(4)?;
    /// assert_eq!(topology.num_nodes(), 4);
    /// assert_eq!(topology.num_cpus(), 2);
    /// let cpus: Vec<&[usize]> = topology.nodes().iter().map(|node| node.cpus()).collect();
    /// assert_eq!(cpus, [&[0][..], &[0], &[1], &[1]]);
    /// assert_eq!(topology.source().to_string(), "virtual 4 over explicit, sharing 2 CPUs");
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn with_shared_virtual_nodes(&self, n: usize) -> Result<Topology, TopologyError> {
        self.split(n, MAX_VIRTUAL_NODES_PER_CPU)
    }

    /// The split behind both public methods, at most `per_cpu` virtual nodes per CPU; shares
    /// CPUs only when `n > self.num_cpus()`.
    fn split(&self, n: usize, per_cpu: usize) -> Result<Topology, TopologyError> {
        let real = self.real_nodes();
        let cpus = self.num_cpus();
        check_virtual_nodes(n, cpus, real.len(), per_cpu)?;
        let sizes: Vec<usize> = real.iter().map(|(_, cpus)| cpus.len()).collect();
        let groups = plan_groups(&sizes, n);
        let mut nodes = Vec::with_capacity(n);
        for ((memory_node, cpus), groups) in real.iter().zip(groups) {
            if groups <= cpus.len() {
                for group in split_evenly(cpus, groups) {
                    nodes.push((*memory_node, group.to_vec()));
                }
            } else {
                for j in 0..groups {
                    nodes.push((*memory_node, vec![cpus[j * cpus.len() / groups]]));
                }
            }
        }
        let base = match &self.source {
            TopologySource::Virtual { base, .. } | TopologySource::VirtualShared { base, .. } => {
                base.clone()
            }
            other => Box::new(other.clone()),
        };
        let source = if n > cpus {
            TopologySource::VirtualShared {
                base,
                nodes: n,
                cpus,
            }
        } else {
            TopologySource::Virtual { base, nodes: n }
        };
        Self::from_parts(source, nodes)
    }

    /// The real nodes: `(memory node, sorted CPUs)` for each distinct memory node, in order of
    /// first appearance.
    fn real_nodes(&self) -> Vec<(usize, Vec<usize>)> {
        let mut real: Vec<(usize, Vec<usize>)> = Vec::new();
        for node in &self.nodes {
            match real
                .iter_mut()
                .find(|(memory_node, _)| *memory_node == node.memory_node)
            {
                Some((_, cpus)) => cpus.extend_from_slice(&node.cpus),
                None => real.push((node.memory_node, node.cpus.clone())),
            }
        }
        for (_, cpus) in &mut real {
            cpus.sort_unstable();
        }
        real
    }
}

/// How many virtual nodes each real node of `sizes[i]` CPUs gets, `n` in total.
///
/// Requires `sizes.len() <= n` and no zero size. Every real node gets one; each further one
/// goes to the real node with the largest average group size `sizes[i] / groups[i]` among
/// those with CPUs to spare (ties: lowest index). When `n` exceeds the total CPU count (the
/// shared split), every real node may take more groups than CPUs, by the same rule.
fn plan_groups(sizes: &[usize], n: usize) -> Vec<usize> {
    let mut groups = vec![1; sizes.len()];
    let oversubscribe = n > sizes.iter().sum::<usize>();
    for _ in sizes.len()..n {
        let mut best: Option<usize> = None;
        for (i, (&size, &count)) in sizes.iter().zip(&groups).enumerate() {
            if count >= size && !oversubscribe {
                continue;
            }
            // size / count > best_size / best_count, compared exactly.
            let larger = best.is_none_or(|b| size * groups[b] > sizes[b] * count);
            if larger {
                best = Some(i);
            }
        }
        match best {
            Some(i) => groups[i] += 1,
            // Unreachable (n <= the number of CPUs, or oversubscribing); stop rather than loop.
            None => break,
        }
    }
    groups
}

/// Cuts `cpus` into `groups` contiguous slices whose lengths differ by at most 1 (the longer
/// ones first). Requires `1 <= groups <= cpus.len()`.
fn split_evenly(cpus: &[usize], groups: usize) -> impl Iterator<Item = &[usize]> {
    let base = cpus.len() / groups;
    let longer = cpus.len() % groups;
    let mut rest = cpus;
    (0..groups).map(move |g| {
        let len = if g < longer { base + 1 } else { base };
        let (group, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        group
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_positive_integers() {
        assert_eq!(parse_virtual_nodes("1").unwrap(), 1);
        assert_eq!(parse_virtual_nodes("4").unwrap(), 4);
        assert_eq!(parse_virtual_nodes(" 16\n").unwrap(), 16);
        assert_eq!(parse_virtual_nodes("007").unwrap(), 7);
    }

    #[test]
    fn rejects_everything_else() {
        for value in [
            "",
            " ",
            "0",
            "00",
            "-1",
            "+4",
            "4.0",
            "4 nodes",
            "four",
            "0x4",
            "99999999999999999999999999",
        ] {
            match parse_virtual_nodes(value) {
                Err(TopologyError::InvalidVirtualNodesEnv { value: got }) => {
                    assert_eq!(got, value)
                }
                other => panic!("{value:?} should be rejected, got {other:?}"),
            }
        }
    }

    #[test]
    fn plan_gives_every_real_node_one_then_balances() {
        assert_eq!(plan_groups(&[8], 3), [3]);
        assert_eq!(plan_groups(&[4, 4], 2), [1, 1]);
        assert_eq!(plan_groups(&[4, 4], 4), [2, 2]);
        assert_eq!(plan_groups(&[4, 4], 3), [2, 1]);
        assert_eq!(plan_groups(&[6, 2], 4), [3, 1]);
        assert_eq!(plan_groups(&[1, 7], 4), [1, 3]);
        assert_eq!(plan_groups(&[2, 2], 4), [2, 2]);
    }

    #[test]
    fn split_is_contiguous_and_even() {
        let cpus: Vec<usize> = (10..17).collect();
        let groups: Vec<&[usize]> = split_evenly(&cpus, 3).collect();
        assert_eq!(groups, [&[10, 11, 12][..], &[13, 14], &[15, 16]]);
        let groups: Vec<&[usize]> = split_evenly(&cpus, 7).collect();
        assert!(groups.iter().all(|group| group.len() == 1));
    }

    #[test]
    fn plan_oversubscribes_only_past_the_cpu_count() {
        assert_eq!(plan_groups(&[2], 4), [4]);
        assert_eq!(plan_groups(&[2, 2], 6), [3, 3]);
        assert_eq!(plan_groups(&[3, 1], 8), [6, 2]);
    }

    #[test]
    fn resplitting_a_virtual_topology_splits_the_real_nodes() {
        let real =
            Topology::from_nodes(vec![(0, vec![0, 1, 2, 3]), (1, vec![4, 5, 6, 7])]).unwrap();
        let four = real.with_virtual_nodes(4).unwrap();
        let back = four.with_virtual_nodes(2).unwrap();
        assert_eq!(back.nodes(), real.nodes());
        assert_eq!(back.source().to_string(), "virtual 2 over explicit");
    }
}
