//! The hash-map dictionary.

use super::{MapRead, MapResponse, MapWrite};
use nr_core::Dispatch;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;

/// A `u64 -> u64` dictionary on [`std::collections::HashMap`]: the anchor workload, measured
/// against `parking_lot::RwLock<HashMap>` and the `node-replication` crate's hash map.
///
/// The hasher is a type parameter (`S`, default [`RandomState`]). Replicas may hash differently
/// (each `RandomState` has its own keys): no operation's response depends on iteration order,
/// so they still agree ([`Dispatch`](nr_core::Dispatch#determinism)).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
///
/// let mut kv = HashMapKv::with_capacity(16);
/// assert_eq!(kv.dispatch_mut(MapWrite::Put(7, 70)), MapResponse::Put(None));
/// assert_eq!(kv.dispatch(MapRead::Get(7)), MapResponse::Get(Some(70)));
/// assert_eq!(kv.dispatch_mut(MapWrite::Remove(7)), MapResponse::Removed(Some(70)));
/// assert_eq!(kv.get(7), None);
/// ```
#[derive(Clone)]
pub struct HashMapKv<S = RandomState> {
    map: HashMap<u64, u64, S>,
}

impl HashMapKv {
    /// An empty map.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::HashMapKv::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty map with room for `capacity` keys before it rehashes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::HashMapKv::with_capacity(100).len(), 0);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_capacity_and_hasher(capacity, RandomState::new())
    }

    /// A map holding keys `0..n`, each mapped to itself: the benchmarks' prefill (the same
    /// entries as [`SkipListMap::with_items`](crate::SkipListMap::with_items)).
    ///
    /// # Examples
    ///
    /// ```
    /// let kv = seqds::HashMapKv::with_items(100);
    /// assert_eq!(kv.len(), 100);
    /// assert_eq!(kv.get(99), Some(99));
    /// ```
    pub fn with_items(n: usize) -> Self {
        let mut kv = Self::with_capacity(n);
        kv.extend((0..n as u64).map(|k| (k, k)));
        kv
    }
}

impl<S: BuildHasher> HashMapKv<S> {
    /// An empty map hashing with `hasher`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    ///
    /// let kv = seqds::HashMapKv::with_hasher(RandomState::new());
    /// assert!(kv.is_empty());
    /// ```
    pub fn with_hasher(hasher: S) -> Self {
        Self::with_capacity_and_hasher(0, hasher)
    }

    /// An empty map with room for `capacity` keys, hashing with `hasher`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    ///
    /// let kv = seqds::HashMapKv::with_capacity_and_hasher(10, RandomState::new());
    /// assert!(kv.is_empty());
    /// ```
    pub fn with_capacity_and_hasher(capacity: usize, hasher: S) -> Self {
        Self {
            map: HashMap::with_capacity_and_hasher(capacity, hasher),
        }
    }

    /// The number of keys.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::HashMapKv::with_items(3).len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::HashMapKv::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The value under `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// let kv: seqds::HashMapKv = [(1, 10)].into_iter().collect();
    /// assert_eq!(kv.get(1), Some(10));
    /// ```
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        self.map.get(&key).copied()
    }

    /// Whether `key` is present.
    ///
    /// # Examples
    ///
    /// ```
    /// let kv: seqds::HashMapKv = [(1, 10)].into_iter().collect();
    /// assert!(kv.contains(1));
    /// ```
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    /// Sets the value of `key`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut kv = seqds::HashMapKv::new();
    /// assert_eq!(kv.put(1, 10), None);
    /// assert_eq!(kv.put(1, 11), Some(10));
    /// ```
    #[inline]
    pub fn put(&mut self, key: u64, value: u64) -> Option<u64> {
        self.map.insert(key, value)
    }

    /// Removes `key`; returns its value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut kv: seqds::HashMapKv = [(1, 10)].into_iter().collect();
    /// assert_eq!(kv.remove(1), Some(10));
    /// ```
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        self.map.remove(&key)
    }

    /// The underlying map (read-only).
    ///
    /// # Examples
    ///
    /// ```
    /// let kv = seqds::HashMapKv::with_items(2);
    /// assert_eq!(kv.as_map().get(&1), Some(&1));
    /// ```
    pub fn as_map(&self) -> &HashMap<u64, u64, S> {
        &self.map
    }
}

impl<S: Default> Default for HashMapKv<S> {
    fn default() -> Self {
        Self {
            map: HashMap::default(),
        }
    }
}

impl<S> fmt::Debug for HashMapKv<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashMapKv")
            .field("len", &self.map.len())
            .finish_non_exhaustive()
    }
}

impl<S: BuildHasher> Extend<(u64, u64)> for HashMapKv<S> {
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, entries: I) {
        self.map.extend(entries);
    }
}

impl<S: BuildHasher + Default> FromIterator<(u64, u64)> for HashMapKv<S> {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(entries: I) -> Self {
        Self {
            map: entries.into_iter().collect(),
        }
    }
}

impl<S: BuildHasher> Dispatch for HashMapKv<S> {
    type ReadOperation<'a>
        = MapRead
    where
        S: 'a;
    type WriteOperation = MapWrite;
    type Response = MapResponse;

    #[inline]
    fn dispatch(&self, op: MapRead) -> MapResponse {
        match op {
            MapRead::Get(k) => MapResponse::Get(self.get(k)),
            MapRead::Contains(k) => MapResponse::Contains(self.contains(k)),
            MapRead::Len => MapResponse::Len(self.len()),
        }
    }

    #[inline]
    fn dispatch_mut(&mut self, op: MapWrite) -> MapResponse {
        match op {
            MapWrite::Put(k, v) => MapResponse::Put(self.put(k, v)),
            MapWrite::Remove(k) => MapResponse::Removed(self.remove(k)),
        }
    }

    /// Removing an absent key, or putting the value a key already has, changes nothing: such
    /// writes can run as reads (`nr_core::Builder::writes_as_reads`, the NR paper's §6).
    #[inline]
    fn dispatch_as_read(&self, op: &MapWrite) -> Option<MapResponse> {
        match *op {
            MapWrite::Remove(k) if !self.contains(k) => Some(MapResponse::Removed(None)),
            MapWrite::Put(k, v) if self.get(k) == Some(v) => Some(MapResponse::Put(Some(v))),
            _ => None,
        }
    }
}
