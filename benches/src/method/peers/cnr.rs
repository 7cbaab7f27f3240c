//! Multi-log node replication on a partitioned hash map: `nr-core`'s CNR (`nr_core::cnr`) and
//! the `cnr` crate (0.1.0, VMware's CNR; vendored with compile-only fixes, see
//! `benches/vendor/cnr-0.1.0/PATCHES.md`), both running the hash-map workload's operations on
//! the same concurrent structure: `LOGS` partitions of `seqds::HashMapKv`, each behind a
//! `parking_lot::RwLock`, key `k` in partition and log `k % LOGS` (`Len` goes through every log).
//!
//! The `cnr` crate shares two properties with `node-replication` 0.1.1 (see `nr_crate.rs`):
//! registrations are never returned, and a replica no thread uses stops the logs' garbage
//! collection. So, as there, every thread's token is registered once, and a run of `n`
//! threads uses an instance with `min(replicas, n)` replicas.

use std::sync::{Arc, OnceLock};

use crossbeam_utils::CachePadded;

use nr_core::cnr::{CnrHandle, ConcurrentDispatch, ConcurrentReplicated, Route};
use nr_core::{Dispatch, Poisoned};
use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};

use crate::method::{claim, release, Handle, Method, Replicas, Setup};
use crate::sync::AtomicBool;
use crate::BenchError;

/// The concurrent structure both peers replicate: `parts` partitions, each behind its lock, on
/// cache lines of its own (neighbours' locks would otherwise share a line: measured, CNR with 2
/// logs then ran 30% slower than with 1 at 2 threads, 100% writes).
#[derive(Debug)]
pub struct PartitionedMap {
    parts: Box<[CachePadded<parking_lot::RwLock<HashMapKv>>]>,
}

impl PartitionedMap {
    fn new(setup: &Setup<'_, HashMapKv>, parts: usize) -> Self {
        let mut maps: Vec<HashMapKv> = (0..parts).map(|_| (setup.make)()).collect();
        for op in setup.prefill {
            maps[write_key(op) as usize % parts].dispatch_mut(*op);
        }
        Self {
            parts: maps
                .into_iter()
                .map(|m| CachePadded::new(parking_lot::RwLock::new(m)))
                .collect(),
        }
    }

    fn read(&self, op: MapRead) -> MapResponse {
        match op {
            MapRead::Get(k) | MapRead::Contains(k) => self.part(k).read().dispatch(op),
            MapRead::Len => MapResponse::Len(
                self.parts
                    .iter()
                    .map(|p| match p.read().dispatch(MapRead::Len) {
                        MapResponse::Len(n) => n,
                        _ => 0,
                    })
                    .sum(),
            ),
        }
    }

    fn write(&self, op: MapWrite) -> MapResponse {
        self.part(write_key(&op)).write().dispatch_mut(op)
    }

    fn part(&self, key: u64) -> &parking_lot::RwLock<HashMapKv> {
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
/// cnr.handle(1, 2)?.write(MapWrite::Put(3, 4))?;
/// assert_eq!(cnr.handle(0, 2)?.read(MapRead::Get(3))?, MapResponse::Get(Some(4)));
/// assert_eq!(cnr.handle(0, 2)?.read(MapRead::Len)?, MapResponse::Len(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Cnr<const LOGS: usize> {
    cnr: ConcurrentReplicated<PartitionedMap>,
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
        let cnr = ConcurrentReplicated::builder()
            .logs(LOGS)
            .replicas(asked_replicas(setup))
            .threads_per_replica(setup.threads.max(1))
            .build(|_| PartitionedMap::new(setup, LOGS))?;
        Ok(Self { cnr })
    }

    fn handle(&self, thread: usize, _threads: usize) -> Result<CnrMapHandle<'_>, BenchError> {
        Ok(CnrMapHandle(
            self.cnr.register(thread % self.cnr.replicas())?,
        ))
    }

    fn replicas(&self, _threads: usize) -> usize {
        self.cnr.replicas()
    }
}

/// A thread's registration with a [`Cnr`] replica.
#[derive(Debug)]
pub struct CnrMapHandle<'a>(CnrHandle<'a, PartitionedMap>);

impl Handle<HashMapKv> for CnrMapHandle<'_> {
    #[inline]
    fn read(&mut self, op: MapRead) -> Result<MapResponse, Poisoned> {
        self.0.execute(PartRead(op))
    }

    #[inline]
    fn write(&mut self, op: MapWrite) -> Result<MapResponse, Poisoned> {
        self.0.execute_mut(PartWrite(op))
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
    /// `instances[r - 1]`: the instance with `r` replicas, built on first use.
    instances: Vec<OnceLock<Result<Instance, String>>>,
    /// Builds a replica's structure.
    make: Box<dyn Fn() -> PartitionedMap + Send + Sync>,
    threads: usize,
    taken: Box<[AtomicBool]>,
}

impl<const LOGS: usize> std::fmt::Debug for CnrCratePeer<LOGS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnrCratePeer")
            .field("logs", &LOGS)
            .field("max_replicas", &self.instances.len())
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl<const LOGS: usize> CnrCratePeer<LOGS> {
    fn instance(&self, replicas: usize) -> Result<&Instance, BenchError> {
        self.instances[replicas - 1]
            .get_or_init(|| {
                // Log `i` is number `i + 1`, as in the crate's own examples.
                let logs: Vec<_> = (0..LOGS)
                    .map(|i| Arc::new(cnr::Log::<PartWrite>::new(32 << 20, i + 1)))
                    .collect();
                let replicas: Vec<_> = (0..replicas)
                    .map(|_| cnr::Replica::with_data(logs.clone(), CrateMap((self.make)())))
                    .collect();
                let tokens = replicas
                    .iter()
                    .map(|r| {
                        (0..self.threads)
                            .map(|_| r.register())
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| {
                                format!(
                                    "cnr allows {} threads per replica, {} asked",
                                    cnr::MAX_THREADS_PER_REPLICA,
                                    self.threads
                                )
                            })
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Instance { replicas, tokens })
            })
            .as_ref()
            .map_err(|e| BenchError::Config(e.clone()))
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
        let threads = setup.threads.max(1);
        if threads >= cnr::MAX_THREADS_PER_REPLICA {
            return Err(BenchError::Config(format!(
                "cnr allows fewer than {} threads per replica, {threads} asked",
                cnr::MAX_THREADS_PER_REPLICA
            )));
        }
        // `setup.make` is borrowed, and instances are built later (on first use): each
        // replica's partitions are fresh maps with the prefill replayed, as in `nr_crate.rs`.
        let mut prefill = vec![Vec::new(); LOGS];
        for op in setup.prefill {
            prefill[write_key(op) as usize % LOGS].push(*op);
        }
        Ok(Self {
            instances: (0..max_replicas).map(|_| OnceLock::new()).collect(),
            make: Box::new(move || PartitionedMap {
                parts: prefill
                    .iter()
                    .map(|ops| {
                        let mut m = HashMapKv::new();
                        for op in ops {
                            m.dispatch_mut(*op);
                        }
                        CachePadded::new(parking_lot::RwLock::new(m))
                    })
                    .collect(),
            }),
            threads,
            taken: (0..threads).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<CnrCrateHandle<'_>, BenchError> {
        let replicas = self.instances.len().min(threads.max(1));
        let instance = self.instance(replicas)?;
        claim(&self.taken, thread)?;
        let r = thread % replicas;
        Ok(CnrCrateHandle {
            replica: &instance.replicas[r],
            token: instance.tokens[r][thread],
            taken: &self.taken,
            thread,
        })
    }

    fn replicas(&self, threads: usize) -> usize {
        self.instances.len().min(threads.max(1))
    }
}

/// A thread's registration with a `cnr` crate replica.
pub struct CnrCrateHandle<'a> {
    replica: &'a cnr::Replica<'static, CrateMap>,
    token: cnr::ReplicaToken,
    taken: &'a [AtomicBool],
    thread: usize,
}

impl std::fmt::Debug for CnrCrateHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnrCrateHandle")
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

impl Drop for CnrCrateHandle<'_> {
    fn drop(&mut self) {
        release(self.taken, self.thread);
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
