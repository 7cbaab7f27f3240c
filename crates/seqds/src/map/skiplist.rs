//! The skip-list dictionary.

use super::{MapRead, MapResponse, MapWrite};
use crate::invariant::InvariantError;
use crate::skiplist::SkipList;
use nr_core::Dispatch;
use std::fmt;

/// An ordered `u64 -> u64` dictionary on a skip list — the structure of Calciu et al.,
/// ASPLOS'17, §8.1.3 (Figure 7).
///
/// Every operation is an O(log n) expected search from the head (p = 1/4, as in Redis). Nodes
/// and their towers live in arenas (vectors with free lists), so a warmed-up map allocates
/// nothing per operation. Tower heights come from a seeded generator stored in the map, so every
/// replica that applies the same writes ends in the same state
/// ([`Dispatch`](nr_core::Dispatch#determinism)).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{MapRead, MapResponse, MapWrite, SkipListMap};
///
/// let mut map = SkipListMap::with_capacity(16);
/// assert_eq!(map.dispatch_mut(MapWrite::Put(7, 70)), MapResponse::Put(None));
/// assert_eq!(map.dispatch(MapRead::Get(7)), MapResponse::Get(Some(70)));
/// assert_eq!(map.dispatch_mut(MapWrite::Remove(7)), MapResponse::Removed(Some(70)));
/// assert_eq!(map.get(7), None);
/// ```
#[derive(Clone)]
pub struct SkipListMap {
    list: SkipList<u64, u64>,
}

impl SkipListMap {
    /// An empty map.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::SkipListMap::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty map with room for `capacity` keys before its arenas grow.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SkipListMap::with_capacity(100).len(), 0);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            list: SkipList::with_capacity(capacity),
        }
    }

    /// A map holding keys `0..n`, each mapped to itself: the benchmarks' prefill (draw keys
    /// from `0..2n` for half hits, half misses).
    ///
    /// # Examples
    ///
    /// ```
    /// let map = seqds::SkipListMap::with_items(100);
    /// assert_eq!(map.len(), 100);
    /// assert_eq!(map.get(99), Some(99));
    /// assert_eq!(map.get(100), None);
    /// ```
    pub fn with_items(n: usize) -> Self {
        let mut map = Self::with_capacity(n);
        map.extend((0..n as u64).map(|k| (k, k)));
        map
    }

    /// The number of keys.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SkipListMap::with_items(3).len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether the map is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::SkipListMap::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value under `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// let map: seqds::SkipListMap = [(1, 10)].into_iter().collect();
    /// assert_eq!(map.get(1), Some(10));
    /// assert_eq!(map.get(2), None);
    /// ```
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        self.list.get(&key)
    }

    /// Whether `key` is present.
    ///
    /// # Examples
    ///
    /// ```
    /// let map: seqds::SkipListMap = [(1, 10)].into_iter().collect();
    /// assert!(map.contains(1));
    /// ```
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Sets the value of `key`; returns the old value.
    ///
    /// # Panics
    ///
    /// Past about 2^32 keys (the arenas use `u32` indices).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut map = seqds::SkipListMap::new();
    /// assert_eq!(map.put(1, 10), None);
    /// assert_eq!(map.put(1, 11), Some(10));
    /// ```
    #[inline]
    pub fn put(&mut self, key: u64, value: u64) -> Option<u64> {
        self.list.insert_or_replace(key, value)
    }

    /// Removes `key`; returns its value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut map: seqds::SkipListMap = [(1, 10)].into_iter().collect();
    /// assert_eq!(map.remove(1), Some(10));
    /// assert_eq!(map.remove(1), None);
    /// ```
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        self.list.remove(&key)
    }

    /// The entries in key order (O(n); for tests and inspection).
    ///
    /// # Examples
    ///
    /// ```
    /// let map: seqds::SkipListMap = [(2, 20), (1, 10)].into_iter().collect();
    /// assert_eq!(map.iter().collect::<Vec<_>>(), [(1, 10), (2, 20)]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.list.iter()
    }

    /// Checks the skip list's structure: level 0 strictly sorted, each level the sub-list of the
    /// nodes taller than it, the length, the free lists. O(n · 24); for tests.
    ///
    /// # Errors
    ///
    /// [`InvariantError`] naming the first broken invariant (a bug in this crate).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut map = seqds::SkipListMap::with_items(50);
    /// map.remove(10);
    /// assert!(map.check_invariants().is_ok());
    /// ```
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        self.list.check("SkipListMap", true)
    }
}

impl Default for SkipListMap {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SkipListMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipListMap")
            .field("len", &self.len())
            .field("levels", &self.list.levels())
            .finish_non_exhaustive()
    }
}

impl Extend<(u64, u64)> for SkipListMap {
    fn extend<I: IntoIterator<Item = (u64, u64)>>(&mut self, entries: I) {
        for (k, v) in entries {
            self.put(k, v);
        }
    }
}

impl FromIterator<(u64, u64)> for SkipListMap {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(entries: I) -> Self {
        let mut map = Self::new();
        map.extend(entries);
        map
    }
}

impl Dispatch for SkipListMap {
    type ReadOperation<'a> = MapRead;
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
}
