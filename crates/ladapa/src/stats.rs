//! Reports: [`Stats`] (counters, queues, replication lag) and [`MemoryUsage`].

use std::fmt;

/// Memory a store (or a baseline) uses, in bytes.
///
/// # Examples
///
/// ```
/// let store = ladapa::Store::builder().value_size(8).manual_pump().build()?;
/// store.put(1, &[0; 8])?;
/// assert_eq!(store.stats().memory.values, 8);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Value blocks in use: authoritative copies, replicas, blocks awaiting reclamation.
    pub values: usize,
    /// Bytes mapped for value blocks (slabs, touched or not).
    pub mapped: usize,
    /// Metadata: L1 slots plus L2 entries (an estimate of their footprint).
    pub metadata: usize,
}

impl MemoryUsage {
    /// Values plus metadata.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = ladapa::MemoryUsage { values: 10, mapped: 100, metadata: 5 };
    /// assert_eq!(m.total(), 15);
    /// ```
    pub fn total(&self) -> usize {
        self.values + self.metadata
    }
}

/// A snapshot of a store's counters and queues; replication lag shows as queued notes and as
/// the share of reads served from a local block.
///
/// # Examples
///
/// ```
/// let store = ladapa::Store::builder().value_size(8).manual_pump().build()?;
/// store.put(1, &[0; 8])?;
/// let stats = store.stats();
/// assert_eq!(stats.writes, 1);
/// println!("{stats}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Reads done.
    pub reads: u64,
    /// Writes (puts and deletes) done.
    pub writes: u64,
    /// Reads served from the reader's replication domain (its own memory node, by default):
    /// a replica or an authoritative copy there.
    pub local_reads: u64,
    /// Of those, reads served from a replica.
    pub replica_reads: u64,
    /// Writes whose metadata went to every L2 inline.
    pub sync_writes: u64,
    /// Writes whose metadata was queued for the propagator.
    pub async_writes: u64,
    /// Metadata notes the propagator installed.
    pub propagated: u64,
    /// Metadata notes skipped as superseded.
    pub meta_skipped: u64,
    /// Values copied into a replica.
    pub replicated: u64,
    /// Value notes skipped as superseded (coalesced) or for a deleted key.
    pub stale_skipped: u64,
    /// Value replications dropped (queue or pool full).
    pub dropped: u64,
    /// Notes the adapters drained for their replicators.
    pub adapter_helped: u64,
    /// Adaptive-mode switches.
    pub mode_switches: u64,
    /// Whether adaptive mode currently replicates metadata synchronously.
    pub sync_now: bool,
    /// Notes waiting for the propagator.
    pub propagator_queued: usize,
    /// Notes waiting for each node's replicator.
    pub replicator_queued: Vec<usize>,
    /// Keys stored.
    pub keys: usize,
    /// Memory used.
    pub memory: MemoryUsage,
}

impl Stats {
    /// Notes not yet processed, all queues together: the replication lag in notifications.
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
    /// store.put(1, &[0; 8])?;
    /// assert_eq!(store.stats().lag(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lag(&self) -> usize {
        self.propagator_queued + self.replicator_queued.iter().sum::<usize>()
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let local = if self.reads == 0 {
            0.0
        } else {
            100.0 * self.local_reads as f64 / self.reads as f64
        };
        write!(
            f,
            "reads {} ({local:.1}% local, {} from replicas), writes {} (sync {}, async {}), \
             lag {} notes (propagator {}, replicators {:?}), replicated {}, coalesced {}, \
             dropped {}, mode switches {}, keys {}, values {} KiB, metadata {} KiB",
            self.reads,
            self.replica_reads,
            self.writes,
            self.sync_writes,
            self.async_writes,
            self.lag(),
            self.propagator_queued,
            self.replicator_queued,
            self.replicated,
            self.stale_skipped + self.meta_skipped,
            self.dropped,
            self.mode_switches,
            self.keys,
            self.memory.values / 1024,
            self.memory.metadata / 1024,
        )
    }
}
