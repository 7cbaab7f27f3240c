//! The [`Builder`] and the limits it checks.

use std::fmt;

use nr_core::Topology;

use crate::error::ConfigError;
use crate::store::Store;

/// The largest value size in bytes (1 MiB).
///
/// # Examples
///
/// ```
/// assert!(ladapa::Store::builder().value_size(ladapa::MAX_VALUE_SIZE + 8).build().is_err());
/// ```
pub const MAX_VALUE_SIZE: usize = 1 << 20;

/// The largest capacity in keys (block numbers are 32 bits and each pool may hold about twice
/// the capacity).
///
/// # Examples
///
/// ```
/// assert_eq!(ladapa::MAX_CAPACITY, 1 << 30);
/// ```
pub const MAX_CAPACITY: usize = 1 << 30;

/// The most nodes a store spans (node numbers are 16 bits).
///
/// # Examples
///
/// ```
/// assert_eq!(ladapa::MAX_NODES, 1024);
/// ```
pub const MAX_NODES: usize = 1024;

/// How metadata reaches the second-level tables (paper §III-C).
///
/// # Examples
///
/// ```
/// use ladapa::{MetadataMode, Store};
///
/// let store = Store::builder().metadata_mode(MetadataMode::Sync).manual_pump().build()?;
/// assert_eq!(store.metadata_mode(), MetadataMode::Sync);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetadataMode {
    /// With a single replication domain every mode behaves as `Sync`: there is one L2 table
    /// and nothing to propagate, and updating it under the lock the write already holds is
    /// cheaper than a queue hand-off to the propagator thread.
    ///
    /// The writer installs the new metadata in every node's L2 itself, under the key's lock,
    /// and hands the value straight to the other nodes' replicators (paper Fig. 6 step 5).
    Sync,
    /// The writer queues a notification for the propagator, which installs the metadata in
    /// every L2 and then notifies the replicators (paper Fig. 6 steps 5a, 6). A full
    /// propagator queue makes that one write synchronous instead of blocking or dropping it.
    Async,
    /// Chosen at run time by the adapters, per the rule of [`AdaptiveRule`](crate::AdaptiveRule):
    /// synchronous while writes are rare or the propagator is backed up, asynchronous
    /// otherwise.
    Adaptive,
}

// With a single replication domain (one node, or every node on one memory node under the
// default `ReplicationScope::MemoryNode`) there is one L2 table and no other domain to
// propagate to, so every mode writes synchronously (`NodeHandle::put`): the modes differ only
// with several domains.

impl fmt::Display for MetadataMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sync => "sync",
            Self::Async => "async",
            Self::Adaptive => "adaptive",
        })
    }
}

/// When values are copied into other nodes' pools (metadata replication is
/// [`MetadataMode`]'s business). Either way a replica is only ever *used* when its version is
/// the key's current one, so the policy changes locality and cost, never what a read returns.
///
/// # Examples
///
/// ```
/// use ladapa::{Store, ValueReplication};
/// use nr_core::Topology;
///
/// let topology = Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
/// let store = Store::builder()
///     .topology(topology)
///     .replication_scope(ladapa::ReplicationScope::Node) // virtual nodes copy too
///     .value_size(8)
///     .value_replication(ValueReplication::OnDemand)
///     .manual_pump()
///     .build()?;
/// store.node(0)?.put(1, &[1; 8])?;
/// store.pump();
/// assert_eq!(store.stats().replicated, 0, "no node has read it yet");
/// let mut buf = [0; 8];
/// for _ in 0..ValueReplication::REMOTE_READS_BEFORE_COPY {
///     store.node(1)?.get(1, &mut buf)?; // remote reads
/// }
/// store.pump();
/// assert_eq!(store.stats().replicated, 1, "node 1 asked for a copy");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueReplication {
    /// The paper's policy (Fig. 6 step 6): every write's value is queued for every other
    /// node's replicator, whether or not anyone reads it there.
    Eager,
    /// Ski rental: a node copies a version of a value only after it has read that version
    /// remotely [`REMOTE_READS_BEFORE_COPY`](Self::REMOTE_READS_BEFORE_COPY) times. A copy
    /// costs about two remote transfers (read the source, write the replica), so a node
    /// never pays more than about twice what the best choice in hindsight would have paid:
    /// versions overwritten before they are read twice, and nodes nobody reads on, are never
    /// copied. Remote reads are recognized with a small per-node table of recently read
    /// versions (best effort: a collision delays or repeats a request, harmlessly).
    OnDemand,
}

impl ValueReplication {
    /// Remote reads of one version on one node after which [`ValueReplication::OnDemand`]
    /// asks that node's replicator for a copy.
    pub const REMOTE_READS_BEFORE_COPY: u32 = 2;
}

impl fmt::Display for ValueReplication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Eager => "eager",
            Self::OnDemand => "on-demand",
        })
    }
}

/// Which nodes count as one place for replication: whether nodes that share a *physical*
/// memory node copy values (and keep second-level tables) for each other.
///
/// A node of a [`Topology`] lives on a physical memory node ([`nr_core::NumaNode::memory_node`]):
/// a socket's own node on a multi-socket machine, the real node underneath for virtual nodes.
/// Copying a value into memory on the *same* physical node gives a reader no locality, only
/// work (a copy, a second block in the caches, a version check), so by default such nodes form
/// one **replication domain**: they share one second-level table, a block in any of their
/// pools is local to all of them, and values are copied only between domains. On a machine
/// whose nodes each have their own memory, domains and nodes coincide and nothing changes.
///
/// Either way a replica is used only when its version is current: the scope changes where
/// copies are made, never what a read returns.
///
/// # Examples
///
/// ```
/// use ladapa::{ReplicationScope, Store, ValueReplication};
/// use nr_core::Topology;
///
/// // Two virtual nodes over one memory node.
/// let topology = Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
/// let shared = Store::builder().topology(topology.clone()).value_size(8).manual_pump().build()?;
/// assert_eq!(shared.replication_domains(), 1, "one memory node: one domain");
/// let apart = Store::builder()
///     .topology(topology)
///     .value_size(8)
///     .replication_scope(ReplicationScope::Node)
///     .value_replication(ValueReplication::Eager)
///     .manual_pump()
///     .build()?;
/// assert_eq!(apart.replication_domains(), 2, "each virtual node replicates on its own");
/// apart.node(0)?.put(1, &[1; 8])?;
/// apart.pump();
/// assert_eq!(apart.stats().replicated, 1, "node 1 got a copy in its own pool");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplicationScope {
    /// Nodes on the same physical memory node form one domain (the default): one shared
    /// second-level table per memory node, no value copies within it.
    MemoryNode,
    /// Every node is a domain of its own, even when it shares a memory node with others:
    /// virtual nodes then copy values and metadata into each other's pools and tables as
    /// separate sockets would. On one memory node this exercises every replication path and
    /// measures its overheads (never its benefit); the tests and the `-pernode` benchmark
    /// methods use it.
    Node,
}

impl fmt::Display for ReplicationScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MemoryNode => "memory-node",
            Self::Node => "node",
        })
    }
}

/// The settings a [`Store`] is built with; see [`Store::builder`].
///
/// # Examples
///
/// ```
/// use ladapa::{MetadataMode, Store};
/// use nr_core::Topology;
///
/// let store = Store::builder()
///     .topology(Topology::detect_hardware()?.with_shared_virtual_nodes(4)?)
///     .value_size(256)
///     .capacity(10_000)
///     .l1_entries(1024)
///     .metadata_mode(MetadataMode::Async)
///     .queue_bounds(1024, 1024)
///     .build()?;
/// assert_eq!(store.num_nodes(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    pub(crate) topology: Option<Topology>,
    pub(crate) value_size: usize,
    pub(crate) capacity: usize,
    pub(crate) l1_entries: Option<usize>,
    pub(crate) mode: MetadataMode,
    pub(crate) replication: ValueReplication,
    pub(crate) scope: ReplicationScope,
    pub(crate) huge_pages: bool,
    pub(crate) propagator_queue: usize,
    pub(crate) replicator_queue: usize,
    pub(crate) manual_pump: bool,
    pub(crate) adapter_period_us: u64,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            topology: None,
            value_size: 4096,
            capacity: 1 << 16,
            l1_entries: None,
            mode: MetadataMode::Adaptive,
            replication: ValueReplication::OnDemand,
            scope: ReplicationScope::MemoryNode,
            huge_pages: true,
            propagator_queue: 1 << 14,
            replicator_queue: 1 << 14,
            manual_pump: false,
            adapter_period_us: 1000,
        }
    }
}

impl Builder {
    /// The defaults: topology from [`Topology::detect`] (which honours `NR_VIRTUAL_NODES`),
    /// 4 KiB values, 65,536 keys, L1 of `min(capacity, 8192)` entries, adaptive metadata mode,
    /// on-demand value replication between memory nodes, queues of 16,384 notifications, background threads running.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Builder::new().build()?;
    /// assert_eq!(store.value_size(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The nodes: one data pool, one L2, one replicator and one adapter per node.
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
    /// let store = ladapa::Store::builder().topology(topology).manual_pump().build()?;
    /// assert_eq!(store.num_nodes(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// The size of every value in bytes: positive, a multiple of 8, at most
    /// [`MAX_VALUE_SIZE`]. Default 4096.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(ladapa::Store::builder().value_size(12).build().is_err());
    /// ```
    pub fn value_size(mut self, bytes: usize) -> Self {
        self.value_size = bytes;
        self
    }

    /// The most keys the store holds (at least 1, at most [`MAX_CAPACITY`]). Default 65,536.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().capacity(10).manual_pump().build()?;
    /// assert_eq!(store.capacity(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(mut self, keys: usize) -> Self {
        self.capacity = keys;
        self
    }

    /// Entries of the shared first-level metadata table (at least 1, at most the capacity;
    /// rounded up to whole sets of [`WAYS`](crate::WAYS)). Default `min(capacity, 8192)`.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = ladapa::Store::builder().capacity(10).l1_entries(11).build().unwrap_err();
    /// assert!(matches!(err, ladapa::ConfigError::L1LargerThanCapacity { .. }));
    /// ```
    pub fn l1_entries(mut self, entries: usize) -> Self {
        self.l1_entries = Some(entries);
        self
    }

    /// How metadata is replicated. Default [`MetadataMode::Adaptive`].
    ///
    /// # Examples
    ///
    /// ```
    /// let b = ladapa::Store::builder().metadata_mode(ladapa::MetadataMode::Async);
    /// # let _ = b;
    /// ```
    pub fn metadata_mode(mut self, mode: MetadataMode) -> Self {
        self.mode = mode;
        self
    }

    /// When values are replicated to the other nodes. Default [`ValueReplication::OnDemand`]
    /// ([`ValueReplication::Eager`] is the paper's policy).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = ladapa::Store::builder().value_replication(ladapa::ValueReplication::Eager);
    /// # let _ = b;
    /// ```
    pub fn value_replication(mut self, policy: ValueReplication) -> Self {
        self.replication = policy;
        self
    }

    /// Which nodes replicate values and metadata for each other. Default
    /// [`ReplicationScope::MemoryNode`]: nodes sharing a physical memory node (virtual nodes
    /// over one real node) share one second-level table and never copy values among
    /// themselves.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = ladapa::Store::builder().replication_scope(ladapa::ReplicationScope::Node);
    /// # let _ = b;
    /// ```
    pub fn replication_scope(mut self, scope: ReplicationScope) -> Self {
        self.scope = scope;
        self
    }

    /// Whether the data pools ask for transparent huge pages (default `true`): slabs that are
    /// a whole huge page (2 MiB: 4 KiB values, or any size dividing 2 MiB by a power of two)
    /// are aligned to one and advised with `MADV_HUGEPAGE`, so reading a value costs at most a
    /// TLB miss per 2 MiB of values instead of one per 4 KiB page. Best effort: with THP
    /// disabled in the kernel the pools use base pages. Resident memory then grows in 2 MiB
    /// steps.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().huge_pages(false).value_size(8).build()?;
    /// store.put(1, &[0; 8])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = on;
        self
    }

    /// Bounds of the propagator's queue and of each replicator's queue, in notifications
    /// (positive). A full propagator queue makes a write synchronous; a full replicator queue
    /// drops the value notification (value replication is best effort).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(ladapa::Store::builder().queue_bounds(0, 8).build().is_err());
    /// ```
    pub fn queue_bounds(mut self, propagator: usize, replicator: usize) -> Self {
        self.propagator_queue = propagator;
        self.replicator_queue = replicator;
        self
    }

    /// Starts no background thread: replication happens only when the caller pumps it
    /// ([`Store::pump`], [`Store::pump_propagator`], [`Store::pump_replicator`],
    /// [`Store::pump_adapters`]), deterministically. For tests and for forcing replication lag.
    ///
    /// # Examples
    ///
    /// ```
    /// // Metadata propagates between replication domains: two virtual nodes, each its own
    /// // domain (`ReplicationScope::Node`), so that there is something to propagate (with one
    /// // domain every write updates the one second-level table itself).
    /// let two = nr_core::Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
    /// let store = ladapa::Store::builder()
    ///     .topology(two)
    ///     .replication_scope(ladapa::ReplicationScope::Node)
    ///     .metadata_mode(ladapa::MetadataMode::Async)
    ///     .value_size(8)
    ///     .manual_pump()
    ///     .build()?;
    /// store.put(1, &[7; 8])?;
    /// assert_eq!(store.stats().propagator_queued, 1);
    /// store.pump();
    /// assert_eq!(store.stats().propagator_queued, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn manual_pump(mut self) -> Self {
        self.manual_pump = true;
        self
    }

    /// How often an active adapter samples the read/write counters, in microseconds
    /// (default 1000). Idle adapters park until work arrives.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = ladapa::Store::builder().adapter_period_us(500);
    /// # let _ = b;
    /// ```
    pub fn adapter_period_us(mut self, micros: u64) -> Self {
        self.adapter_period_us = micros.max(1);
        self
    }

    /// Checks the settings and builds the store (starting its background threads unless
    /// [`manual_pump`](Self::manual_pump)).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first bad setting: [`ConfigError::ZeroCapacity`],
    /// [`ConfigError::ZeroValueSize`], [`ConfigError::ValueSizeNotMultipleOf8`],
    /// [`ConfigError::L1LargerThanCapacity`], ...; a topology or thread-spawn failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use ladapa::{ConfigError, Store};
    ///
    /// assert!(matches!(Store::builder().value_size(0).build(), Err(ConfigError::ZeroValueSize)));
    /// assert!(matches!(
    ///     Store::builder().value_size(20).build(),
    ///     Err(ConfigError::ValueSizeNotMultipleOf8 { size: 20 })
    /// ));
    /// ```
    pub fn build(self) -> Result<Store, ConfigError> {
        self.validate()?;
        let topology = match &self.topology {
            Some(topology) => topology.clone(),
            None => Topology::detect()?,
        };
        if topology.num_nodes() > MAX_NODES {
            return Err(ConfigError::TooManyNodes {
                nodes: topology.num_nodes(),
            });
        }
        Store::from_builder(self, topology)
    }

    /// The first-level table size this builder will use.
    pub(crate) fn l1(&self) -> usize {
        self.l1_entries.unwrap_or(self.capacity.min(8192))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.capacity == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        if self.capacity > MAX_CAPACITY {
            return Err(ConfigError::CapacityTooLarge {
                capacity: self.capacity,
            });
        }
        if self.value_size == 0 {
            return Err(ConfigError::ZeroValueSize);
        }
        if !self.value_size.is_multiple_of(8) {
            return Err(ConfigError::ValueSizeNotMultipleOf8 {
                size: self.value_size,
            });
        }
        if self.value_size > MAX_VALUE_SIZE {
            return Err(ConfigError::ValueSizeTooLarge {
                size: self.value_size,
            });
        }
        let l1 = self.l1();
        if l1 == 0 {
            return Err(ConfigError::ZeroL1);
        }
        if l1 > self.capacity {
            return Err(ConfigError::L1LargerThanCapacity {
                l1_entries: l1,
                capacity: self.capacity,
            });
        }
        if self.propagator_queue == 0 || self.replicator_queue == 0 {
            return Err(ConfigError::ZeroQueueBound);
        }
        Ok(())
    }
}
