//! The comparison points, behind one trait with the [`Store`] so that every benchmark and test
//! drives all of them the same way (paper §IV-A "Baselines"):
//!
//! - [`KvBase`]: no replicas — every value in one place, a sharded hash map under
//!   readers-writer locks (the paper's `kvbase`);
//! - [`Cr`]: synchronous complete replication — the same map with its values, made concurrent by
//!   `nr-core`'s [`NodeReplicated`], one replica per node, so every write copies the value into
//!   every replica before it completes (the paper's `CR`, ref. \[22\]);
//! - [`DashMapKv`]: `dashmap`, the concurrent map users pick today.

use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crossbeam_utils::CachePadded;
use dashmap::DashMap;
use ladapa::{KeyHash, MemoryUsage, NodeHandle, Store, StoreError};
use nr_core::{Dispatch, NodeReplicated, ThreadHandle, Topology};

use crate::error::BenchError;
use crate::sync::{AtomicUsize, Ordering};

/// A hash map keyed by `u64` with ladapa's own hash (the baselines pay what its metadata
/// maps pay per lookup).
type KeyMap<V> = HashMap<u64, V, KeyHash>;

/// Read-locks, ignoring poison (nothing panics under these locks).
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Write-locks, ignoring poison (nothing panics under these locks).
fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A key-value store the benchmarks can drive: `u64` keys, fixed-size values, per-node
/// sessions.
///
/// # Examples
///
/// ```
/// use benches::kv::{KvBase, KvSession, KvStore};
/// use ladapa::Store;
///
/// fn roundtrip<S: KvStore>(store: &S) -> Result<bool, benches::BenchError> {
///     let mut session = store.session(0)?;
///     let value = vec![3; store.value_size()];
///     session.put(1, &value)?;
///     let mut buf = vec![0; store.value_size()];
///     Ok(session.get(1, &mut buf)? && buf == value)
/// }
/// assert!(roundtrip(&Store::builder().value_size(8).build()?)?);
/// assert!(roundtrip(&KvBase::new(8, 1))?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait KvStore: Send + Sync {
    /// A thread's handle, bound to one node.
    type Session<'a>: KvSession
    where
        Self: 'a;

    /// A short name for reports.
    fn name(&self) -> String;
    /// The size of every value.
    fn value_size(&self) -> usize;
    /// The number of nodes sessions may be bound to.
    fn num_nodes(&self) -> usize;
    /// A session running as node `node`.
    ///
    /// # Errors
    ///
    /// [`BenchError::Store`] (no such node); for [`Cr`], [`BenchError::Register`] (a full
    /// replica) or [`BenchError::Poisoned`].
    fn session(&self, node: usize) -> Result<Self::Session<'_>, BenchError>;
    /// Memory used.
    fn memory(&self) -> MemoryUsage;
}

/// The operations of a [`KvStore`] session.
pub trait KvSession {
    /// Copies the value of `key` into `buf` (value-sized); `Ok(false)` if absent.
    ///
    /// # Errors
    ///
    /// [`BenchError::Store`]: a wrong value size, and the store's own errors.
    fn get(&mut self, key: u64, buf: &mut [u8]) -> Result<bool, BenchError>;
    /// Stores `value` (value-sized) under `key`.
    ///
    /// # Errors
    ///
    /// [`BenchError::Store`]: a wrong value size, and the store's own errors.
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), BenchError>;
    /// Removes `key`; `Ok(true)` if it was present.
    ///
    /// # Errors
    ///
    /// The store's own errors.
    fn delete(&mut self, key: u64) -> Result<bool, BenchError>;
}

impl KvStore for Store {
    type Session<'a> = NodeHandle<'a>;

    fn name(&self) -> String {
        format!("ladapa-{}", self.metadata_mode())
    }
    fn value_size(&self) -> usize {
        Store::value_size(self)
    }
    fn num_nodes(&self) -> usize {
        Store::num_nodes(self)
    }
    fn session(&self, node: usize) -> Result<NodeHandle<'_>, BenchError> {
        Ok(self.node(node)?)
    }
    fn memory(&self) -> MemoryUsage {
        Store::memory(self)
    }
}

impl KvSession for NodeHandle<'_> {
    fn get(&mut self, key: u64, buf: &mut [u8]) -> Result<bool, BenchError> {
        Ok(NodeHandle::get(self, key, buf)?)
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), BenchError> {
        Ok(NodeHandle::put(self, key, value)?)
    }
    fn delete(&mut self, key: u64) -> Result<bool, BenchError> {
        Ok(NodeHandle::delete(self, key)?)
    }
}

fn check_len(expected: usize, got: usize) -> Result<(), BenchError> {
    if expected == got {
        Ok(())
    } else {
        Err(StoreError::WrongValueSize { expected, got }.into())
    }
}

/// Shards of [`KvBase`].
const KVBASE_SHARDS: usize = 64;

/// Approximate bytes of one hash-map entry holding a boxed value (key, fat pointer, control
/// byte, load factor), for memory reports.
const MAP_ENTRY_BYTES: usize = 40;

/// One shard of [`KvBase`].
type KvShard = RwLock<KeyMap<Box<[u8]>>>;

/// No replicas: one sharded hash map, values in one place (the paper's `kvbase`).
///
/// # Examples
///
/// ```
/// use benches::kv::{KvBase, KvSession, KvStore};
///
/// let kv = KvBase::new(8, 4);
/// let mut s = kv.session(3)?;
/// s.put(1, &[1; 8])?;
/// assert!(kv.session(0)?.delete(1)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct KvBase {
    value_size: usize,
    nodes: usize,
    shards: Box<[CachePadded<KvShard>]>,
}

impl KvBase {
    /// A map of `value_size`-byte values; sessions may name any of `nodes` nodes (all share
    /// the one copy).
    ///
    /// # Examples
    ///
    /// ```
    /// let kv = benches::kv::KvBase::new(4096, 2);
    /// # let _ = kv;
    /// ```
    pub fn new(value_size: usize, nodes: usize) -> Self {
        Self {
            value_size,
            nodes: nodes.max(1),
            shards: (0..KVBASE_SHARDS)
                .map(|_| CachePadded::new(RwLock::new(KeyMap::default())))
                .collect(),
        }
    }

    fn shard(&self, key: u64) -> &KvShard {
        let hash = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.shards[(hash >> 58) as usize % KVBASE_SHARDS]
    }
}

/// A [`KvBase`] session.
#[derive(Debug)]
pub struct KvBaseSession<'a>(&'a KvBase);

impl KvStore for KvBase {
    type Session<'a> = KvBaseSession<'a>;

    fn name(&self) -> String {
        "kvbase".to_owned()
    }
    fn value_size(&self) -> usize {
        self.value_size
    }
    fn num_nodes(&self) -> usize {
        self.nodes
    }
    fn session(&self, node: usize) -> Result<KvBaseSession<'_>, BenchError> {
        if node >= self.nodes {
            return Err(StoreError::NoSuchNode {
                node,
                nodes: self.nodes,
            }
            .into());
        }
        Ok(KvBaseSession(self))
    }
    fn memory(&self) -> MemoryUsage {
        let keys: usize = self.shards.iter().map(|s| read(s).len()).sum();
        MemoryUsage {
            values: keys * self.value_size,
            mapped: keys * self.value_size,
            metadata: keys * MAP_ENTRY_BYTES,
        }
    }
}

impl KvSession for KvBaseSession<'_> {
    fn get(&mut self, key: u64, buf: &mut [u8]) -> Result<bool, BenchError> {
        check_len(self.0.value_size, buf.len())?;
        match read(self.0.shard(key)).get(&key) {
            Some(value) => {
                buf.copy_from_slice(value);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), BenchError> {
        check_len(self.0.value_size, value.len())?;
        let mut shard = write(self.0.shard(key));
        match shard.get_mut(&key) {
            Some(slot) => slot.copy_from_slice(value),
            None => {
                shard.insert(key, value.into());
            }
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<bool, BenchError> {
        Ok(write(self.0.shard(key)).remove(&key).is_some())
    }
}

/// [`Cr`]'s sequential map: every replica holds every value.
#[derive(Debug, Default)]
pub struct CrMap {
    map: KeyMap<Box<[u8]>>,
}

/// A read of [`CrMap`]: copy the value into the caller's buffer.
#[derive(Debug)]
pub struct CrRead<'a> {
    key: u64,
    buf: &'a mut [u8],
}

/// A write of [`CrMap`]; the value is shared between the replicas' log entries and copied into
/// each replica when it applies the write.
#[derive(Debug, Clone)]
pub enum CrWrite {
    /// Insert or overwrite.
    Put(u64, std::sync::Arc<[u8]>),
    /// Remove.
    Delete(u64),
}

impl Dispatch for CrMap {
    type ReadOperation<'a> = CrRead<'a>;
    type WriteOperation = CrWrite;
    /// Get: found; Put: the key is new; Delete: the key was present.
    type Response = bool;

    fn dispatch(&self, op: CrRead<'_>) -> bool {
        match self.map.get(&op.key) {
            Some(value) => {
                op.buf.copy_from_slice(value);
                true
            }
            None => false,
        }
    }

    fn dispatch_mut(&mut self, op: CrWrite) -> bool {
        match op {
            CrWrite::Put(key, value) => match self.map.get_mut(&key) {
                Some(slot) => {
                    slot.copy_from_slice(&value);
                    false
                }
                None => {
                    self.map.insert(key, Box::from(&value[..]));
                    true
                }
            },
            CrWrite::Delete(key) => self.map.remove(&key).is_some(),
        }
    }
}

/// Synchronous complete replication: [`CrMap`] under `nr-core`'s [`NodeReplicated`], one
/// replica per node (the paper's `CR`).
///
/// # Examples
///
/// ```
/// use benches::kv::{Cr, KvSession, KvStore};
///
/// let topology = nr_core::Topology::detect_hardware()?.with_shared_virtual_nodes(2)?;
/// let cr = Cr::new(8, topology)?;
/// cr.session(0)?.put(1, &[2; 8])?;
/// let mut buf = [0; 8];
/// assert!(cr.session(1)?.get(1, &mut buf)?);
/// assert_eq!(buf, [2; 8]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Cr {
    value_size: usize,
    nodes: usize,
    keys: AtomicUsize,
    nr: NodeReplicated<CrMap>,
}

impl Cr {
    /// One replica per node of `topology`, for `value_size`-byte values.
    ///
    /// # Errors
    ///
    /// `nr-core`'s [`BuildError`](nr_core::BuildError).
    ///
    /// # Examples
    ///
    /// ```
    /// let cr = benches::kv::Cr::new(64, nr_core::Topology::detect_hardware()?)?;
    /// # let _ = cr;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(value_size: usize, topology: Topology) -> Result<Self, nr_core::BuildError> {
        let nodes = topology.num_nodes();
        let nr = NodeReplicated::builder()
            .topology(topology)
            .build(|_| CrMap::default())?;
        Ok(Self {
            value_size,
            nodes,
            keys: AtomicUsize::new(0),
            nr,
        })
    }
}

/// A [`Cr`] session: a registered `nr-core` thread handle.
#[derive(Debug)]
pub struct CrSession<'a> {
    value_size: usize,
    keys: &'a AtomicUsize,
    handle: ThreadHandle<'a, CrMap>,
}

impl KvStore for Cr {
    type Session<'a> = CrSession<'a>;

    fn name(&self) -> String {
        "cr".to_owned()
    }
    fn value_size(&self) -> usize {
        self.value_size
    }
    fn num_nodes(&self) -> usize {
        self.nodes
    }
    fn session(&self, node: usize) -> Result<CrSession<'_>, BenchError> {
        if node >= self.nodes {
            return Err(StoreError::NoSuchNode {
                node,
                nodes: self.nodes,
            }
            .into());
        }
        let handle = self.nr.register(node)?;
        Ok(CrSession {
            value_size: self.value_size,
            keys: &self.keys,
            handle,
        })
    }
    fn memory(&self) -> MemoryUsage {
        // Every replica holds every key.
        MemoryUsage {
            values: self.keys_hint() * self.value_size * self.nodes,
            mapped: self.keys_hint() * self.value_size * self.nodes,
            metadata: self.keys_hint() * MAP_ENTRY_BYTES * self.nodes,
        }
    }
}

impl Cr {
    /// Keys in each replica, counted from the writes' responses.
    fn keys_hint(&self) -> usize {
        // Relaxed: a statistic.
        self.keys.load(Ordering::Relaxed)
    }
}

impl KvSession for CrSession<'_> {
    fn get(&mut self, key: u64, buf: &mut [u8]) -> Result<bool, BenchError> {
        check_len(self.value_size, buf.len())?;
        self.handle
            .execute(CrRead { key, buf })
            .map_err(|_| BenchError::Poisoned)
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), BenchError> {
        check_len(self.value_size, value.len())?;
        let new = self
            .handle
            .execute_mut(CrWrite::Put(key, value.into()))
            .map_err(|_| BenchError::Poisoned)?;
        if new {
            // Relaxed: a statistic.
            self.keys.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<bool, BenchError> {
        let removed = self
            .handle
            .execute_mut(CrWrite::Delete(key))
            .map_err(|_| BenchError::Poisoned)?;
        if removed {
            // Relaxed: a statistic.
            self.keys.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(removed)
    }
}

/// `dashmap::DashMap` behind the same trait.
///
/// # Examples
///
/// ```
/// use benches::kv::{DashMapKv, KvSession, KvStore};
///
/// let kv = DashMapKv::new(8, 1);
/// kv.session(0)?.put(5, &[5; 8])?;
/// assert!(kv.session(0)?.delete(5)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DashMapKv {
    value_size: usize,
    nodes: usize,
    map: DashMap<u64, Box<[u8]>>,
}

impl DashMapKv {
    /// A map of `value_size`-byte values; sessions may name any of `nodes` nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// let kv = benches::kv::DashMapKv::new(64, 1);
    /// # let _ = kv;
    /// ```
    pub fn new(value_size: usize, nodes: usize) -> Self {
        Self {
            value_size,
            nodes: nodes.max(1),
            map: DashMap::new(),
        }
    }
}

/// A [`DashMapKv`] session.
#[derive(Debug)]
pub struct DashMapSession<'a>(&'a DashMapKv);

impl KvStore for DashMapKv {
    type Session<'a> = DashMapSession<'a>;

    fn name(&self) -> String {
        "dashmap".to_owned()
    }
    fn value_size(&self) -> usize {
        self.value_size
    }
    fn num_nodes(&self) -> usize {
        self.nodes
    }
    fn session(&self, node: usize) -> Result<DashMapSession<'_>, BenchError> {
        if node >= self.nodes {
            return Err(StoreError::NoSuchNode {
                node,
                nodes: self.nodes,
            }
            .into());
        }
        Ok(DashMapSession(self))
    }
    fn memory(&self) -> MemoryUsage {
        let keys = self.map.len();
        MemoryUsage {
            values: keys * self.value_size,
            mapped: keys * self.value_size,
            metadata: keys * MAP_ENTRY_BYTES,
        }
    }
}

impl KvSession for DashMapSession<'_> {
    fn get(&mut self, key: u64, buf: &mut [u8]) -> Result<bool, BenchError> {
        check_len(self.0.value_size, buf.len())?;
        match self.0.map.get(&key) {
            Some(value) => {
                buf.copy_from_slice(&value);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), BenchError> {
        check_len(self.0.value_size, value.len())?;
        match self.0.map.get_mut(&key) {
            Some(mut slot) => slot.copy_from_slice(value),
            None => {
                self.0.map.insert(key, value.into());
            }
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<bool, BenchError> {
        Ok(self.0.map.remove(&key).is_some())
    }
}
