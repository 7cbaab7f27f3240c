//! `u64 -> u64` dictionaries (Calciu et al., ASPLOS'17, §8.1.3, and the hash-map anchor
//! workload), and the operations they share, so a benchmark can drive either through the same
//! code.

mod hash;
mod skiplist;

pub use hash::HashMapKv;
pub use skiplist::SkipListMap;

/// A read-only dictionary operation (`ReadOperation` of [`SkipListMap`] and [`HashMapKv`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{MapRead, MapResponse, SkipListMap};
///
/// let map = SkipListMap::with_items(10);
/// assert_eq!(map.dispatch(MapRead::Get(3)), MapResponse::Get(Some(3)));
/// assert_eq!(map.dispatch(MapRead::Contains(10)), MapResponse::Contains(false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapRead {
    /// The value under a key (`lookup`).
    Get(u64),
    /// Whether a key is present.
    Contains(u64),
    /// The number of keys.
    Len,
}

/// A mutating dictionary operation (`WriteOperation` of [`SkipListMap`] and [`HashMapKv`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{HashMapKv, MapResponse, MapWrite};
///
/// let mut map = HashMapKv::new();
/// assert_eq!(map.dispatch_mut(MapWrite::Put(1, 10)), MapResponse::Put(None));
/// assert_eq!(map.dispatch_mut(MapWrite::Put(1, 11)), MapResponse::Put(Some(10)));
/// assert_eq!(map.dispatch_mut(MapWrite::Remove(1)), MapResponse::Removed(Some(11)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapWrite {
    /// Sets the value of a key, `Put(key, value)` (`insert`; replaces an existing value).
    Put(u64, u64),
    /// Removes a key (`delete`).
    Remove(u64),
}

/// The result of a [`MapRead`] or [`MapWrite`]: one variant per operation.
///
/// # Examples
///
/// ```
/// use seqds::MapResponse;
///
/// // Same payload, different operations: not equal.
/// assert_ne!(MapResponse::Get(None), MapResponse::Put(None));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapResponse {
    /// [`MapRead::Get`]: the value, if the key is present.
    Get(Option<u64>),
    /// [`MapRead::Contains`]: whether the key is present.
    Contains(bool),
    /// [`MapRead::Len`]: the number of keys.
    Len(usize),
    /// [`MapWrite::Put`]: the old value, if the key was present.
    Put(Option<u64>),
    /// [`MapWrite::Remove`]: the old value, if the key was present.
    Removed(Option<u64>),
}
