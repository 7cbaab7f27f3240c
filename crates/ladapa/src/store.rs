//! The [`Store`]: its shared state, the data path (get, put, delete) and its life cycle.
//!
//! # Never-stale reads
//!
//! Every write takes a new version from its key's first-level set (unique and increasing per
//! key). A read, pinned by an epoch guard, reads the key's current [`Meta`](crate::meta::Meta) under the set's read
//! lock (L1, else its node's L2, which is current whenever L1 misses: see [`crate::meta`]); that
//! is its linearization point. It then uses the node-local replica **only if the replica's
//! version equals that current version**, and otherwise the authoritative block the metadata
//! names. Both blocks hold exactly the value of that version (blocks are immutable while
//! published) and neither is reclaimed while the guard is pinned. So a read returns the value
//! of the last write linearized before it, however far replication lags.

use std::cell::Cell;
use std::fmt;
use std::ops::Deref;

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;
use nr_core::Topology;

use crate::background::{fault_code, AdapterState, DataNote, MetaNote};
use crate::config::{Builder, MetadataMode, ReplicationScope, ValueReplication};
use crate::doorbell::{Doorbell, Pending};
use crate::error::{BackgroundPanic, BackgroundThread, ConfigError, StoreError};
use crate::meta::{L1Table, L2Table};
use crate::pool::{Binding, NodePool};
use crate::stats::{MemoryUsage, Stats};
use crate::sync::{
    lock, spawn_named, Arc, AtomicBool, AtomicU64, AtomicUsize, Domain, Guard, JoinHandle, Mutex,
    Ordering,
};

/// Per-node operation and replication counters (all Relaxed statistics).
#[derive(Debug, Default)]
pub(crate) struct NodeCounters {
    pub(crate) reads: AtomicU64,
    /// Reads that missed L1 (samples the read-promotion rule).
    pub(crate) l1_misses: AtomicU64,
    pub(crate) writes: AtomicU64,
    /// Reads that used an authoritative block outside the reader's domain.
    pub(crate) remote_reads: AtomicU64,
    pub(crate) replica_reads: AtomicU64,
    pub(crate) sync_writes: AtomicU64,
    pub(crate) async_writes: AtomicU64,
    pub(crate) propagated: AtomicU64,
    pub(crate) meta_skipped: AtomicU64,
    pub(crate) replicated: AtomicU64,
    pub(crate) stale_skipped: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) adapter_helped: AtomicU64,
}

/// The doorbells of the background threads (absent under the manual pump).
#[derive(Debug)]
pub(crate) struct Bells {
    pub(crate) propagator: Doorbell,
    pub(crate) replicators: Vec<Doorbell>,
    pub(crate) adapters: Vec<Doorbell>,
}

/// Everything the user threads and the background threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) nodes: usize,
    pub(crate) value_size: usize,
    pub(crate) capacity: usize,
    pub(crate) mode: MetadataMode,
    pub(crate) replication: ValueReplication,
    pub(crate) scope: ReplicationScope,
    /// Node -> its replication domain (see [`ReplicationScope`]): the index of its L2 table.
    pub(crate) domain_of: Vec<usize>,
    /// Domain -> its home node, whose pool holds the domain's replicas and whose replicator
    /// makes them (the domain's first node).
    pub(crate) homes: Vec<usize>,
    /// Per node, under [`ValueReplication::OnDemand`]: the versions recently read remotely
    /// (see `Shared::remote_read`); empty under `Eager`.
    pub(crate) remote_reads: Vec<Box<[AtomicU64]>>,
    pub(crate) adapter_period_us: u64,
    pub(crate) topology: Topology,
    pub(crate) pools: Vec<NodePool>,
    pub(crate) l1: L1Table,
    /// One second-level table per replication domain (use [`Shared::l2`] for a node's).
    pub(crate) l2: Vec<L2Table>,
    pub(crate) live_keys: AtomicUsize,
    /// Adaptive mode's current choice (true: synchronous).
    pub(crate) sync_now: AtomicBool,
    pub(crate) mode_switches: AtomicU64,
    pub(crate) propagator_queue: ArrayQueue<MetaNote>,
    pub(crate) propagator_pending: CachePadded<Pending>,
    pub(crate) replicator_queues: Vec<ArrayQueue<DataNote>>,
    pub(crate) replicator_pending: Vec<CachePadded<Pending>>,
    pub(crate) bells: Option<Bells>,
    pub(crate) counters: Vec<CachePadded<NodeCounters>>,
    pub(crate) shutdown: AtomicBool,
    pub(crate) poisoned: AtomicBool,
    pub(crate) panic: Mutex<Option<BackgroundPanic>>,
    pub(crate) fault: AtomicUsize,
    /// The store's own reclamation domain: value blocks are retired through it and every
    /// reader pins it; guards of other stores (or of any other `crossbeam-epoch` user) never
    /// hold back the reuse of this store's blocks.
    pub(crate) domain: Domain,
}

/// A locality-aware key-value store: `u64` keys, values of one fixed size, metadata decoupled
/// from values, values copied lazily to the nodes that read them (or to every node, with
/// [`ValueReplication::Eager`]), reads never stale.
///
/// Build one with [`Store::builder`]. Operations on the `Store` itself run as the calling
/// thread's node (threads are spread round-robin over the nodes in the order they first touch
/// any store); [`Store::node`] gives a handle bound to a chosen node.
///
/// # Examples
///
/// ```
/// use ladapa::Store;
///
/// let store = Store::builder().value_size(16).capacity(100).build()?;
/// store.put(7, &[1; 16])?;
/// let mut buf = [0; 16];
/// assert!(store.get(7, &mut buf)?);
/// assert_eq!(buf, [1; 16]);
/// assert_eq!(&*store.get_guard(7).expect("present"), &[1; 16]);
/// assert!(store.delete(7)?);
/// assert!(!store.contains(7));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A store is `Send` and `Sync`; a [`ValueGuard`] is neither (it holds an epoch pin):
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// let store = ladapa::Store::builder().value_size(8).manual_pump().build().unwrap();
/// store.put(1, &[0; 8]).unwrap();
/// send(store.get_guard(1).unwrap());
/// ```
#[derive(Debug)]
pub struct Store {
    pub(crate) shared: Arc<Shared>,
    threads: Vec<(BackgroundThread, JoinHandle<()>)>,
    /// The adapters' memory under the manual pump.
    adapter_states: Mutex<Vec<AdapterState>>,
    stopped: bool,
}

/// A handle that runs operations as one node's thread (its L2, its pool, its replicas).
///
/// # Examples
///
/// ```
/// let topology = nr_core::Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
/// let store = ladapa::Store::builder().topology(topology).value_size(8).build()?;
/// store.node(0)?.put(1, &[5; 8])?;
/// let mut buf = [0; 8];
/// assert!(store.node(1)?.get(1, &mut buf)?);
/// assert_eq!(buf, [5; 8]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NodeHandle<'a> {
    pub(crate) store: &'a Store,
    pub(crate) node: usize,
}

/// A borrowed view of a value, valid while the guard lives (it pins an epoch, so the block
/// is not reclaimed under it). Holding guards for long delays the reuse of retired blocks.
///
/// # Examples
///
/// ```
/// let store = ladapa::Store::builder().value_size(8).build()?;
/// store.put(3, &[9; 8])?;
/// let value = store.get_guard(3).expect("present");
/// store.put(3, &[1; 8])?; // the guard still sees the version it read
/// assert_eq!(&*value, &[9; 8]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ValueGuard<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) _guard: Guard,
}

impl fmt::Debug for ValueGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueGuard")
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl Deref for ValueGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

thread_local! {
    /// This thread's round-robin index, assigned on first use.
    static THREAD_INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Next round-robin thread index (process-wide). A plain std atomic on purpose: a ticket
/// counter that orders nothing, and loom atomics cannot be statics.
#[allow(clippy::disallowed_types)] // reason: see above
static NEXT_THREAD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// This thread's round-robin index.
fn thread_index() -> usize {
    THREAD_INDEX.with(|index| match index.get() {
        Some(i) => i,
        None => {
            // Relaxed: a unique ticket, ordered with nothing.
            let i = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            index.set(Some(i));
            i
        }
    })
}

/// Each node's replication domain and each domain's home node (its first node), per `scope`.
fn domains(topology: &Topology, scope: ReplicationScope) -> (Vec<usize>, Vec<usize>) {
    let nodes = topology.nodes();
    match scope {
        ReplicationScope::Node => ((0..nodes.len()).collect(), (0..nodes.len()).collect()),
        ReplicationScope::MemoryNode => {
            let mut memory_nodes = Vec::new();
            let mut homes = Vec::new();
            let domain_of = nodes
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let memory = node.memory_node();
                    match memory_nodes.iter().position(|&m| m == memory) {
                        Some(domain) => domain,
                        None => {
                            memory_nodes.push(memory);
                            homes.push(i);
                            homes.len() - 1
                        }
                    }
                })
                .collect();
            (domain_of, homes)
        }
    }
}

impl Shared {
    /// The second-level table node `node` reads (its domain's).
    #[inline]
    pub(crate) fn l2(&self, node: usize) -> &L2Table {
        &self.l2[self.domain_of[node]]
    }

    /// Whether nodes `a` and `b` are in one replication domain (a block in either's pool is
    /// local to both).
    #[inline]
    pub(crate) fn same_domain(&self, a: usize, b: usize) -> bool {
        self.domain_of[a] == self.domain_of[b]
    }
}

/// Slots of a node's table of recent remote reads (a power of two; 8 bytes each).
#[cfg(not(loom))]
pub(crate) const REMOTE_READ_SLOTS: usize = 4096;
/// Under loom every atomic is modelled: a tiny table.
#[cfg(loom)]
pub(crate) const REMOTE_READ_SLOTS: usize = 4;

/// Approximate bytes of one L2 entry in its hash map (key, entry, control byte, load factor).
const L2_ENTRY_BYTES: usize = 64;
/// Bytes of one L1 slot (key + metadata).
const L1_SLOT_BYTES: usize = 8 + 16;

impl Store {
    /// A [`Builder`] with the defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(64).build()?;
    /// assert_eq!(store.value_size(), 64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    pub(crate) fn from_builder(builder: Builder, topology: Topology) -> Result<Store, ConfigError> {
        let nodes = topology.num_nodes();
        let capacity = builder.capacity;
        // Each pool may hold every key's authoritative block (all written from this node)
        // plus a replica of every key, plus blocks waiting for reclamation (up to one more
        // capacity's worth; slabs are mapped on demand, so the bound costs no memory).
        let max_blocks = (3 * capacity + 1024).min(u32::MAX as usize);
        let pools = topology
            .nodes()
            .iter()
            .map(|node| {
                NodePool::new(
                    node.memory_node(),
                    builder.value_size,
                    max_blocks,
                    builder.huge_pages,
                )
            })
            .collect();
        let (domain_of, homes) = domains(&topology, builder.scope);
        let bells = (!builder.manual_pump).then(|| Bells {
            propagator: Doorbell::new(),
            replicators: (0..nodes).map(|_| Doorbell::new()).collect(),
            adapters: (0..nodes).map(|_| Doorbell::new()).collect(),
        });
        let shared = Arc::new(Shared {
            nodes,
            value_size: builder.value_size,
            capacity,
            mode: builder.mode,
            replication: builder.replication,
            scope: builder.scope,
            remote_reads: match builder.replication {
                ValueReplication::Eager => Vec::new(),
                ValueReplication::OnDemand => (0..nodes)
                    .map(|_| (0..REMOTE_READ_SLOTS).map(|_| AtomicU64::new(0)).collect())
                    .collect(),
            },
            adapter_period_us: builder.adapter_period_us,
            pools,
            l1: L1Table::new(builder.l1()),
            l2: homes.iter().map(|_| L2Table::new()).collect(),
            domain_of,
            homes,
            live_keys: AtomicUsize::new(0),
            sync_now: AtomicBool::new(false),
            mode_switches: AtomicU64::new(0),
            propagator_queue: ArrayQueue::new(builder.propagator_queue),
            propagator_pending: CachePadded::default(),
            replicator_queues: (0..nodes)
                .map(|_| ArrayQueue::new(builder.replicator_queue))
                .collect(),
            replicator_pending: (0..nodes).map(|_| CachePadded::default()).collect(),
            bells,
            counters: (0..nodes).map(|_| CachePadded::default()).collect(),
            shutdown: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            panic: Mutex::new(None),
            fault: AtomicUsize::new(0),
            domain: Domain::new(),
            topology,
        });
        let mut store = Store {
            shared,
            threads: Vec::new(),
            adapter_states: Mutex::new((0..nodes).map(|_| AdapterState::default()).collect()),
            stopped: false,
        };
        if !builder.manual_pump {
            let mut roles = vec![BackgroundThread::Propagator];
            for node in 0..nodes {
                roles.push(BackgroundThread::Replicator(node));
                roles.push(BackgroundThread::Adapter(node));
            }
            for role in roles {
                let shared = Arc::clone(&store.shared);
                let name = format!("ladapa-{role}");
                let handle = spawn_named(name, move || {
                    shared.guarded(role, || shared.run(role));
                })
                .map_err(ConfigError::Spawn)?;
                store.threads.push((role, handle));
            }
        }
        Ok(store)
    }

    /// The size of every value, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(ladapa::Store::builder().build()?.value_size(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn value_size(&self) -> usize {
        self.shared.value_size
    }

    /// The most keys the store holds.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(ladapa::Store::builder().capacity(5).l1_entries(5).build()?.capacity(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }

    /// The number of nodes (pools, L2 tables, replicators).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(ladapa::Store::builder().build()?.num_nodes() >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_nodes(&self) -> usize {
        self.shared.nodes
    }

    /// The topology the store spans.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// println!("{}", store.topology().source());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn topology(&self) -> &Topology {
        &self.shared.topology
    }

    /// The metadata mode it was built with.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert_eq!(store.metadata_mode(), ladapa::MetadataMode::Adaptive);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metadata_mode(&self) -> MetadataMode {
        self.shared.mode
    }

    /// The replication scope it was built with.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert_eq!(store.replication_scope(), ladapa::ReplicationScope::MemoryNode);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replication_scope(&self) -> ReplicationScope {
        self.shared.scope
    }

    /// The number of replication domains: second-level tables, and places a value may be
    /// copied to (see [`ReplicationScope`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
    /// let store = ladapa::Store::builder().topology(topology).manual_pump().build()?;
    /// assert_eq!(store.num_nodes(), 2);
    /// assert_eq!(store.replication_domains(), 1, "both virtual nodes sit on one memory node");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replication_domains(&self) -> usize {
        self.shared.l2.len()
    }

    /// How each node's pool memory was bound (`mbind` to the physical node, or why not).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(1, &[0; 8])?;
    /// println!("{:?}", store.pool_bindings());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pool_bindings(&self) -> Vec<Binding> {
        self.shared.pools.iter().map(NodePool::binding).collect()
    }

    /// The number of keys stored.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(1, &[0; 8])?;
    /// assert_eq!(store.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        // Relaxed: a statistic.
        self.shared.live_keys.load(Ordering::Relaxed)
    }

    /// Whether the store holds no key.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(ladapa::Store::builder().build()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A handle running operations as node `node`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NoSuchNode`] if `node >= self.num_nodes()`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert!(store.node(0).is_ok());
    /// assert!(store.node(store.num_nodes()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn node(&self, node: usize) -> Result<NodeHandle<'_>, StoreError> {
        if node >= self.shared.nodes {
            return Err(StoreError::NoSuchNode {
                node,
                nodes: self.shared.nodes,
            });
        }
        Ok(NodeHandle { store: self, node })
    }

    /// The calling thread's node: threads are numbered in the order they first use any store
    /// and spread round-robin over the nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert!(store.current_node() < store.num_nodes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_node(&self) -> usize {
        thread_index() % self.shared.nodes
    }

    pub(crate) fn here(&self) -> NodeHandle<'_> {
        NodeHandle {
            store: self,
            node: self.current_node(),
        }
    }

    /// Copies the value of `key` into `buf`; `Ok(false)` if the key is absent. Never stale:
    /// see the module docs.
    ///
    /// # Errors
    ///
    /// [`StoreError::WrongValueSize`] if `buf.len()` is not the value size.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// let mut buf = [0; 8];
    /// assert!(!store.get(1, &mut buf)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: u64, buf: &mut [u8]) -> Result<bool, StoreError> {
        self.here().get(key, buf)
    }

    /// A guard borrowing the current value of `key`, or `None` if absent.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(2, &[4; 8])?;
    /// assert_eq!(store.get_guard(2).as_deref(), Some(&[4u8; 8][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_guard(&self, key: u64) -> Option<ValueGuard<'_>> {
        self.here().get_guard(key)
    }

    /// Whether `key` is present.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(2, &[4; 8])?;
    /// assert!(store.contains(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, key: u64) -> bool {
        self.here().contains(key)
    }

    /// Stores `value` under `key` (insert or overwrite).
    ///
    /// # Errors
    ///
    /// [`StoreError::WrongValueSize`], [`StoreError::Full`] (a new key beyond the capacity),
    /// [`StoreError::OutOfBlocks`], [`StoreError::BackgroundPanicked`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(2, &[4; 8])?;
    /// store.put(2, &[5; 8])?;
    /// assert_eq!(store.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, key: u64, value: &[u8]) -> Result<(), StoreError> {
        self.here().put(key, value)
    }

    /// Removes `key`; `Ok(true)` if it was present.
    ///
    /// # Errors
    ///
    /// [`StoreError::BackgroundPanicked`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(2, &[4; 8])?;
    /// assert!(store.delete(2)?);
    /// assert!(!store.delete(2)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&self, key: u64) -> Result<bool, StoreError> {
        self.here().delete(key)
    }

    /// Whether a background thread panicked.
    ///
    /// # Errors
    ///
    /// [`StoreError::BackgroundPanicked`] with the first panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert!(store.check_health().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_health(&self) -> Result<(), StoreError> {
        self.check_poison()
    }

    #[inline]
    pub(crate) fn check_poison(&self) -> Result<(), StoreError> {
        // Acquire: pairs with the Release in `Shared::report_panic`.
        if self.shared.poisoned.load(Ordering::Acquire) {
            return Err(self.poison_error());
        }
        Ok(())
    }

    #[cold]
    fn poison_error(&self) -> StoreError {
        let panic = lock(&self.shared.panic).clone();
        StoreError::BackgroundPanicked(panic.unwrap_or(BackgroundPanic {
            thread: BackgroundThread::Propagator,
            message: "unknown".to_owned(),
        }))
    }

    /// Runs the propagator until its queue is empty (manual pump; with background threads it
    /// helps them). Returns the notes processed.
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
    /// assert_eq!(store.pump_propagator(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pump_propagator(&self) -> usize {
        let shared = &self.shared;
        let thread = BackgroundThread::Propagator;
        shared
            .guarded(thread, || {
                shared.take_fault(thread);
                let mut total = 0;
                loop {
                    let done = shared.propagate_step(usize::MAX);
                    total += done;
                    if done == 0 {
                        return total;
                    }
                }
            })
            .unwrap_or(0)
    }

    /// Runs node `node`'s replicator until its queue is empty; returns the notes processed
    /// (0 for a node that does not exist).
    ///
    /// # Examples
    ///
    /// ```
    /// let topology = nr_core::Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
    /// let store = ladapa::Store::builder()
    ///     .topology(topology)
    ///     .replication_scope(ladapa::ReplicationScope::Node) // virtual nodes copy too
    ///     .value_size(8)
    ///     .value_replication(ladapa::ValueReplication::Eager) // copy on every write
    ///     .manual_pump()
    ///     .build()?;
    /// store.node(0)?.put(1, &[0; 8])?;
    /// store.pump_propagator();
    /// assert_eq!(store.pump_replicator(1), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pump_replicator(&self, node: usize) -> usize {
        if node >= self.shared.nodes {
            return 0;
        }
        let shared = &self.shared;
        let thread = BackgroundThread::Replicator(node);
        shared
            .guarded(thread, || {
                shared.take_fault(thread);
                shared.replicate_step(node, usize::MAX)
            })
            .unwrap_or(0)
    }

    /// Runs one sample of every adapter (the adaptive rule, and help for read-heavy nodes).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().manual_pump().build()?;
    /// store.pump_adapters();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pump_adapters(&self) {
        let shared = &self.shared;
        let mut states = lock(&self.adapter_states);
        for (node, state) in states.iter_mut().enumerate() {
            let thread = BackgroundThread::Adapter(node);
            shared.guarded(thread, || {
                shared.take_fault(thread);
                shared.adapter_step(node, state);
            });
        }
    }

    /// Propagator, then every replicator, until all queues are empty; returns the notes
    /// processed.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).manual_pump().build()?;
    /// store.put(1, &[0; 8])?;
    /// store.pump();
    /// assert_eq!(store.stats().lag(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pump(&self) -> usize {
        let mut total = 0;
        loop {
            let mut done = self.pump_propagator();
            for node in 0..self.shared.nodes {
                done += self.pump_replicator(node);
            }
            total += done;
            if done == 0 {
                return total;
            }
        }
    }

    /// Makes a background thread panic at its next step (or the next pump of that role), to
    /// test how a store reports a panic. Not for production use.
    ///
    /// # Examples
    ///
    /// ```
    /// use ladapa::{BackgroundThread, Store, StoreError};
    ///
    /// let store = Store::builder().value_size(8).manual_pump().build()?;
    /// store.inject_panic(BackgroundThread::Propagator);
    /// store.pump();
    /// assert!(matches!(store.put(1, &[0; 8]), Err(StoreError::BackgroundPanicked(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inject_panic(&self, thread: BackgroundThread) {
        // Relaxed: a request; the thread is rung below.
        self.shared
            .fault
            .store(fault_code(thread), Ordering::Relaxed);
        if let Some(bells) = &self.shared.bells {
            match thread {
                BackgroundThread::Propagator => bells.propagator.ring(),
                BackgroundThread::Replicator(n) => {
                    if let Some(bell) = bells.replicators.get(n) {
                        bell.ring();
                    }
                }
                BackgroundThread::Adapter(n) => {
                    if let Some(bell) = bells.adapters.get(n) {
                        bell.ring();
                    }
                }
            }
        }
    }

    /// A snapshot of the counters, queues and memory.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert_eq!(store.stats().reads, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let shared = &self.shared;
        let mut stats = Stats {
            // Relaxed: statistics.
            mode_switches: shared.mode_switches.load(Ordering::Relaxed),
            sync_now: shared.sync_now.load(Ordering::Relaxed),
            propagator_queued: shared.propagator_queue.len(),
            replicator_queued: shared
                .replicator_queues
                .iter()
                .map(ArrayQueue::len)
                .collect(),
            keys: self.len(),
            memory: self.memory(),
            ..Stats::default()
        };
        let mut remote = 0;
        for c in &shared.counters {
            let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
            stats.reads += get(&c.reads);
            stats.writes += get(&c.writes);
            remote += get(&c.remote_reads);
            stats.replica_reads += get(&c.replica_reads);
            stats.sync_writes += get(&c.sync_writes);
            stats.async_writes += get(&c.async_writes);
            stats.propagated += get(&c.propagated);
            stats.meta_skipped += get(&c.meta_skipped);
            stats.replicated += get(&c.replicated);
            stats.stale_skipped += get(&c.stale_skipped);
            stats.dropped += get(&c.dropped);
            stats.adapter_helped += get(&c.adapter_helped);
        }
        // Counters read one by one while reads go on: never let the difference go negative.
        stats.local_reads = stats.reads.saturating_sub(remote);
        stats
    }

    /// Memory used (values, mapped slabs, metadata estimate).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert_eq!(store.memory().values, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memory(&self) -> MemoryUsage {
        let shared = &self.shared;
        MemoryUsage {
            values: shared.pools.iter().map(NodePool::bytes_in_use).sum(),
            mapped: shared.pools.iter().map(NodePool::bytes_mapped).sum(),
            metadata: shared.l1.slots() * L1_SLOT_BYTES
                + shared.l2.iter().map(L2Table::len).sum::<usize>() * L2_ENTRY_BYTES,
        }
    }

    /// Keys in the first-level table, and in each second-level table (one per replication
    /// domain, see [`Store::replication_domains`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).manual_pump().build()?;
    /// store.put(1, &[0; 8])?;
    /// assert_eq!(store.table_sizes().0, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn table_sizes(&self) -> (usize, Vec<usize>) {
        (
            self.shared.l1.len(),
            self.shared.l2.iter().map(L2Table::len).collect(),
        )
    }

    /// Stops the background threads (queued notifications are dropped: replication is best
    /// effort and reads never depend on it), joins them and reports the first background
    /// panic, if any. Dropping the store does the same and discards the report.
    ///
    /// # Errors
    ///
    /// The first [`BackgroundPanic`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(1, &[0; 8])?;
    /// store.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(mut self) -> Result<(), BackgroundPanic> {
        self.stop();
        match lock(&self.shared.panic).clone() {
            Some(panic) => Err(panic),
            None => Ok(()),
        }
    }

    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        // Release: pairs with the Acquire in `Shared::run`'s loop condition.
        self.shared.shutdown.store(true, Ordering::Release);
        if let Some(bells) = &self.shared.bells {
            bells.propagator.ring();
            bells.replicators.iter().for_each(Doorbell::ring);
            bells.adapters.iter().for_each(Doorbell::ring);
        }
        for (thread, handle) in self.threads.drain(..) {
            if let Err(payload) = handle.join() {
                // `guarded` catches panics, so this is a panic while reporting one.
                self.shared.report_panic(thread, payload);
            }
        }
        // Queued notes own nothing; drop them now so `stats` shows an empty pipeline.
        while self.shared.propagator_queue.pop().is_some() {
            drop(self.shared.propagator_pending.consumed_on_drop());
        }
        for (queue, pending) in self
            .shared
            .replicator_queues
            .iter()
            .zip(&self.shared.replicator_pending)
        {
            while queue.pop().is_some() {
                drop(pending.consumed_on_drop());
            }
        }
        // Help the epoch advance so retired blocks go back before the pools unmap (the
        // deferred frees touch only the free lists, which they keep alive themselves).
        for _ in 0..4 {
            self.shared.domain.pin().flush();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.stop();
    }
}
