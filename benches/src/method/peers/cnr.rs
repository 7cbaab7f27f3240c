//! Multi-log node replication on a partitioned hash map: `nr-core`'s CNR (`nr_core::cnr`) and
//! the `cnr` crate (0.1.0, VMware's CNR; vendored with compile-only fixes, see
//! `benches/vendor/cnr-0.1.0/PATCHES.md`), both running the hash-map workload's operations on
//! the same concurrent structure: a map of `LOGS` partitions with lock-free reads and one writer
//! per partition at a time ([`PartitionedMap`]), key `k` in partition and log `k % LOGS` (`Len`
//! goes through every log).
//!
//! The `cnr` crate shares two properties with `node-replication` 0.1.1, handled the same way
//! for both (`tokens.rs`): registrations are never returned, and a replica no thread uses stops
//! the logs' garbage collection.

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use nr_core::cnr::{CnrHandle, ConcurrentDispatch, ConcurrentReplicated, Route};
use nr_core::Poisoned;
use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};

use super::tokens::{register_all, Claim, Instances};
use crate::method::{Handle, Method, Replicas, Setup};
use crate::sync::{AtomicU64, Ordering};
use crate::BenchError;

/// The concurrent structure both peers replicate: `parts` partitions, each an open-addressing
/// table of atomic key and value words, sized at build time for four times its share of the
/// prefilled keys. Reads take no lock and write nothing; each partition has **one writer at a
/// time**, which is what both CNR and the `cnr` crate guarantee (one combiner per log per
/// replica, key `k` in log and partition `k % parts`). A structure built for that guarantee,
/// rather than a lock per partition: with a `parking_lot::RwLock` per partition, the lock's
/// two atomic read-modify-writes per read (and their cache-line traffic between readers)
/// dominated every point, for every method alike.
#[derive(Debug)]
pub struct PartitionedMap {
    parts: Box<[CachePadded<Partition>]>,
}

/// One partition: `keys[i]` holds key + 1 (0: empty, never cleared), `values[i]` its value + 1
/// (0: absent). A writer stores the value before the key (Release), so a reader that finds
/// the key (Acquire) finds its value.
#[derive(Debug)]
struct Partition {
    keys: Box<[AtomicU64]>,
    values: Box<[AtomicU64]>,
}

impl Partition {
    fn new(capacity: usize) -> Self {
        let capacity = capacity.next_power_of_two().max(64);
        Self {
            keys: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            values: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The slot of `key`, or the empty slot where it would go. Panics when the table is full
    /// (it is sized for four times the prefill; the hash-map workload writes only those keys and
    /// absent ones it removes).
    fn find(&self, key: u64) -> (usize, bool) {
        let mask = self.keys.len() - 1;
        let mut i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        for _ in 0..self.keys.len() {
            // Acquire: pairs with the Release store of the key in `put`.
            match self.keys[i].load(Ordering::Acquire) {
                0 => return (i, false),
                k if k == key + 1 => return (i, true),
                _ => i = (i + 1) & mask,
            }
        }
        panic!("partition full: the bench sizes it for four times its prefilled keys");
    }

    fn get(&self, key: u64) -> Option<u64> {
        match self.find(key) {
            // Acquire: pairs with the Release store in `replace` (from `put` and `remove`).
            (i, true) => self.values[i].load(Ordering::Acquire).checked_sub(1),
            (_, false) => None,
        }
    }

    /// Only the partition's single writer calls this.
    fn put(&self, key: u64, value: u64) -> Option<u64> {
        let stored = value
            .checked_add(1)
            .expect("bench values are below u64::MAX");
        match self.find(key) {
            (i, true) => Self::replace(&self.values[i], stored),
            (i, false) => {
                // Relaxed: published by the Release store of the key below.
                self.values[i].store(stored, Ordering::Relaxed);
                // Release: pairs with the Acquire load in `find`.
                self.keys[i].store(key + 1, Ordering::Release);
                None
            }
        }
    }

    /// Only the partition's single writer calls this.
    fn remove(&self, key: u64) -> Option<u64> {
        match self.find(key) {
            (i, true) => Self::replace(&self.values[i], 0),
            (_, false) => None,
        }
    }

    /// The single writer's swap of a value word: a load and a store, not an atomic
    /// read-modify-write (nobody else writes the word, so none is needed, and a locked
    /// instruction would stall on the line's miss, where a store waits in the store buffer).
    fn replace(word: &AtomicU64, stored: u64) -> Option<u64> {
        // Relaxed: only this partition's writer stores to the word (the caller's contract), so
        // this reads its own last store or one it synchronized with through the log's lock.
        let old = word.load(Ordering::Relaxed);
        // Release: pairs with the Acquire load in `get`.
        word.store(stored, Ordering::Release);
        old.checked_sub(1)
    }

    fn len(&self) -> usize {
        // Relaxed: a count for `Len`, which no timed workload issues.
        self.values
            .iter()
            .filter(|v| v.load(Ordering::Relaxed) != 0)
            .count()
    }
}

impl PartitionedMap {
    /// A map of `parts` partitions holding `prefill`'s writes (applied in order).
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::method::peers::PartitionedMap;
    /// use seqds::{MapResponse, MapWrite};
    ///
    /// let map = PartitionedMap::with_prefill(&[MapWrite::Put(1, 2)], 4);
    /// assert_eq!(map.write(MapWrite::Put(1, 3)), MapResponse::Put(Some(2)));
    /// ```
    pub fn with_prefill(prefill: &[MapWrite], parts: usize) -> Self {
        let map = Self {
            parts: (0..parts)
                .map(|_| CachePadded::new(Partition::new(4 * (prefill.len() / parts + 1))))
                .collect(),
        };
        for op in prefill {
            map.write(*op);
        }
        map
    }

    fn read(&self, op: MapRead) -> MapResponse {
        match op {
            MapRead::Get(k) => MapResponse::Get(self.part(k).get(k)),
            MapRead::Contains(k) => MapResponse::Contains(self.part(k).get(k).is_some()),
            MapRead::Len => MapResponse::Len(self.parts.iter().map(|p| p.len()).sum()),
        }
    }

    /// Applies `op`. Each partition must have one writer at a time (see [`PartitionedMap`]).
    ///
    /// # Examples
    ///
    /// See [`with_prefill`](Self::with_prefill).
    pub fn write(&self, op: MapWrite) -> MapResponse {
        match op {
            MapWrite::Put(k, v) => MapResponse::Put(self.part(k).put(k, v)),
            MapWrite::Remove(k) => MapResponse::Removed(self.part(k).remove(k)),
        }
    }

    fn part(&self, key: u64) -> &Partition {
        &self.parts[key as usize % self.parts.len()]
    }
}

fn write_key(op: &MapWrite) -> u64 {
    match *op {
        MapWrite::Put(k, _) | MapWrite::Remove(k) => k,
    }
}

/// A read, routed by its key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartRead(MapRead);

/// A write, routed by its key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartWrite(MapWrite);

fn route(key: Option<u64>, logs: usize) -> Route {
    match key {
        Some(k) => Route::Log(k as usize % logs),
        None => Route::Scan,
    }
}

fn read_key(op: &MapRead) -> Option<u64> {
    match *op {
        MapRead::Get(k) | MapRead::Contains(k) => Some(k),
        MapRead::Len => None,
    }
}

impl nr_core::cnr::LogMapper for PartRead {
    fn route(&self, logs: usize) -> Route {
        route(read_key(&self.0), logs)
    }
}

impl nr_core::cnr::LogMapper for PartWrite {
    fn route(&self, logs: usize) -> Route {
        route(Some(write_key(&self.0)), logs)
    }
}

/// The `cnr` crate's mapping: one log, or all of them.
fn crate_hash(key: Option<u64>, nlogs: usize, logs: &mut Vec<usize>) {
    logs.clear();
    match key {
        Some(k) => logs.push(k as usize % nlogs),
        None => logs.extend(0..nlogs),
    }
}

impl cnr::LogMapper for PartRead {
    fn hash(&self, nlogs: usize, logs: &mut Vec<usize>) {
        crate_hash(read_key(&self.0), nlogs, logs)
    }
}

impl cnr::LogMapper for PartWrite {
    fn hash(&self, nlogs: usize, logs: &mut Vec<usize>) {
        crate_hash(Some(write_key(&self.0)), nlogs, logs)
    }
}

impl ConcurrentDispatch for PartitionedMap {
    type ReadOperation<'a> = PartRead;
    type WriteOperation = PartWrite;
    type Response = MapResponse;
    fn dispatch(&self, op: PartRead) -> MapResponse {
        self.read(op.0)
    }
    fn dispatch_mut(&self, op: PartWrite) -> MapResponse {
        self.write(op.0)
    }
}

/// The same structure through the `cnr` crate's `Dispatch`.
#[derive(Debug)]
struct CrateMap(PartitionedMap);

impl cnr::Dispatch for CrateMap {
    type ReadOperation = PartRead;
    type WriteOperation = PartWrite;
    type Response = MapResponse;
    fn dispatch(&self, op: PartRead) -> MapResponse {
        self.0.read(op.0)
    }
    fn dispatch_mut(&self, op: PartWrite) -> MapResponse {
        self.0.write(op.0)
    }
}

/// The replica count a setup asks for.
fn asked_replicas(setup: &Setup<'_, HashMapKv>) -> usize {
    match setup.replicas {
        Replicas::PerNode => setup.topology.num_nodes(),
        Replicas::Exactly(n) => n,
    }
    .max(1)
}

/// `nr-core`'s CNR with `LOGS` logs on a [`PartitionedMap`] of `LOGS` partitions; thread `t`
/// registers with replica `t % replicas`.
///
/// A run of `n` threads uses an object with `min(replicas, n)` replicas (built on first use,
/// one per count), as the `cnr` crate peer must ([`CnrCratePeer`]): so at every point both do
/// the same work, the same number of replicas and of threads per replica. (Before, CNR ran
/// every replica asked for, so at 1 thread with "2 replicas" it applied each write twice while
/// the crate applied it once.)
///
/// # Examples
///
/// ```
/// use benches::method::peers::Cnr;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[MapWrite::Put(1, 2)], threads: 2, topology: &topology, replicas: Replicas::Exactly(2) };
/// let cnr = Cnr::<2>::build(&setup)?;
/// assert_eq!((cnr.replicas(1), cnr.replicas(2)), (1, 2));
/// cnr.handle(1, 2)?.write(MapWrite::Put(3, 4))?;
/// assert_eq!(cnr.handle(0, 2)?.read(MapRead::Get(3))?, MapResponse::Get(Some(4)));
/// assert_eq!(cnr.handle(0, 2)?.read(MapRead::Len)?, MapResponse::Len(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Cnr<const LOGS: usize> {
    instances: Instances<ConcurrentReplicated<PartitionedMap>>,
    prefill: Vec<MapWrite>,
}

impl<const LOGS: usize> Method<HashMapKv> for Cnr<LOGS> {
    const NAME: &'static str = match LOGS {
        1 => "CNR-1log",
        2 => "CNR-2log",
        4 => "CNR-4log",
        _ => "CNR",
    };
    type Handle<'a> = CnrMapHandle<'a>;

    fn build(setup: &Setup<'_, HashMapKv>) -> Result<Self, BenchError> {
        Ok(Self {
            instances: Instances::new(asked_replicas(setup), setup.threads, usize::MAX, "CNR")?,
            prefill: setup.prefill.to_vec(),
        })
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<CnrMapHandle<'_>, BenchError> {
        let (cnr, r, claim) = self
            .instances
            .handle(thread, threads, |replicas, threads| {
                ConcurrentReplicated::builder()
                    .logs(LOGS)
                    .replicas(replicas)
                    .threads_per_replica(threads)
                    .build(|_| PartitionedMap::with_prefill(&self.prefill, LOGS))
                    .map_err(|e| e.to_string())
            })?;
        Ok(CnrMapHandle {
            handle: cnr.register(r)?,
            _claim: claim,
        })
    }

    fn replicas(&self, threads: usize) -> usize {
        self.instances.replicas(threads)
    }
}

/// A thread's registration with a [`Cnr`] replica.
#[derive(Debug)]
pub struct CnrMapHandle<'a> {
    handle: CnrHandle<'a, PartitionedMap>,
    _claim: Claim<'a>,
}

impl Handle<HashMapKv> for CnrMapHandle<'_> {
    #[inline]
    fn read(&mut self, op: MapRead) -> Result<MapResponse, Poisoned> {
        self.handle.execute(PartRead(op))
    }

    #[inline]
    fn write(&mut self, op: MapWrite) -> Result<MapResponse, Poisoned> {
        self.handle.execute_mut(PartWrite(op))
    }
}

/// One `cnr` crate object: its logs, replicas and a token per (replica, thread).
struct Instance {
    replicas: Vec<Arc<cnr::Replica<'static, CrateMap>>>,
    /// `tokens[r][t]`: thread `t`'s registration with replica `r`.
    tokens: Vec<Vec<cnr::ReplicaToken>>,
}

/// The `cnr` crate (0.1.0) with `LOGS` logs on a [`PartitionedMap`] of `LOGS` partitions.
///
/// # Examples
///
/// ```
/// use benches::method::peers::CnrCratePeer;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[MapWrite::Put(1, 2)], threads: 2, topology: &topology, replicas: Replicas::Exactly(2) };
/// let peer = CnrCratePeer::<2>::build(&setup)?;
/// peer.handle(1, 2)?.write(MapWrite::Put(3, 4))?;
/// assert_eq!(peer.handle(0, 2)?.read(MapRead::Get(3))?, MapResponse::Get(Some(4)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CnrCratePeer<const LOGS: usize> {
    instances: Instances<Instance>,
    prefill: Vec<MapWrite>,
}

impl<const LOGS: usize> std::fmt::Debug for CnrCratePeer<LOGS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnrCratePeer")
            .field("logs", &LOGS)
            .field("instances", &self.instances)
            .finish_non_exhaustive()
    }
}

impl<const LOGS: usize> CnrCratePeer<LOGS> {
    fn build_instance(&self, replicas: usize, threads: usize) -> Result<Instance, String> {
        // Log `i` is number `i + 1`, as in the crate's own examples.
        let logs: Vec<_> = (0..LOGS)
            .map(|i| Arc::new(cnr::Log::<PartWrite>::new(32 << 20, i + 1)))
            .collect();
        let replicas: Vec<_> = (0..replicas)
            .map(|_| {
                let map = PartitionedMap::with_prefill(&self.prefill, LOGS);
                cnr::Replica::with_data(logs.clone(), CrateMap(map))
            })
            .collect();
        let tokens = register_all(
            &replicas,
            threads,
            |r| r.register(),
            cnr::MAX_THREADS_PER_REPLICA,
            "cnr",
        )?;
        Ok(Instance { replicas, tokens })
    }
}

impl<const LOGS: usize> Method<HashMapKv> for CnrCratePeer<LOGS> {
    const NAME: &'static str = match LOGS {
        1 => "cnr-crate-1log",
        2 => "cnr-crate-2log",
        4 => "cnr-crate-4log",
        _ => "cnr-crate",
    };
    type Handle<'a> = CnrCrateHandle<'a>;

    fn build(setup: &Setup<'_, HashMapKv>) -> Result<Self, BenchError> {
        let max_replicas = asked_replicas(setup).min(cnr::MAX_REPLICAS_PER_LOG);
        Ok(Self {
            instances: Instances::new(
                max_replicas,
                setup.threads,
                cnr::MAX_THREADS_PER_REPLICA,
                "cnr",
            )?,
            prefill: setup.prefill.to_vec(),
        })
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<CnrCrateHandle<'_>, BenchError> {
        let (instance, r, claim) = self
            .instances
            .handle(thread, threads, |n, t| self.build_instance(n, t))?;
        Ok(CnrCrateHandle {
            replica: &instance.replicas[r],
            token: instance.tokens[r][claim.thread()],
            _claim: claim,
        })
    }

    fn replicas(&self, threads: usize) -> usize {
        self.instances.replicas(threads)
    }
}

/// A thread's registration with a `cnr` crate replica.
pub struct CnrCrateHandle<'a> {
    replica: &'a cnr::Replica<'static, CrateMap>,
    token: cnr::ReplicaToken,
    _claim: Claim<'a>,
}

impl std::fmt::Debug for CnrCrateHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnrCrateHandle")
            .field("claim", &self._claim)
            .finish_non_exhaustive()
    }
}

impl Handle<HashMapKv> for CnrCrateHandle<'_> {
    #[inline]
    fn read(&mut self, op: MapRead) -> Result<MapResponse, Poisoned> {
        Ok(self.replica.execute(PartRead(op), self.token))
    }

    #[inline]
    fn write(&mut self, op: MapWrite) -> Result<MapResponse, Poisoned> {
        Ok(self.replica.execute_mut(PartWrite(op), self.token))
    }
}
