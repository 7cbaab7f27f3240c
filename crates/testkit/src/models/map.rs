//! A key-value map.

use crate::lin::Model;
use std::collections::BTreeMap;

/// An operation on a [`KvMap`].
///
/// # Examples
///
/// ```
/// use testkit::models::KvOp;
///
/// assert_ne!(KvOp::Get(1), KvOp::Remove(1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOp {
    /// Reads the value at a key.
    Get(u64),
    /// Sets the value at a key (key, value).
    Put(u64, u64),
    /// Removes a key.
    Remove(u64),
}

/// The result of a [`KvOp`]; one variant per operation.
///
/// # Examples
///
/// ```
/// use testkit::models::KvRet;
///
/// // Same payload, different operations: not equal.
/// assert_ne!(KvRet::Get(None), KvRet::Put(None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvRet {
    /// [`KvOp::Get`]: the value, if the key is present.
    Get(Option<u64>),
    /// [`KvOp::Put`]: the old value, if the key was present.
    Put(Option<u64>),
    /// [`KvOp::Remove`]: the old value, if the key was present.
    Remove(Option<u64>),
}

/// A sequential map from `u64` keys to `u64` values (a `BTreeMap`, so the
/// state is `Hash`).
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{KvMap, KvOp, KvRet};
///
/// let mut map = KvMap::new();
/// assert_eq!(map.step(&KvOp::Put(1, 10)), KvRet::Put(None));
/// assert_eq!(map.step(&KvOp::Put(1, 11)), KvRet::Put(Some(10)));
/// assert_eq!(map.step(&KvOp::Get(1)), KvRet::Get(Some(11)));
/// assert_eq!(map.step(&KvOp::Remove(1)), KvRet::Remove(Some(11)));
/// assert_eq!(map.step(&KvOp::Get(1)), KvRet::Get(None));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KvMap {
    map: BTreeMap<u64, u64>,
}

impl KvMap {
    /// An empty map.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(testkit::models::KvMap::new().as_map().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The contents.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::Model;
    /// use testkit::models::{KvMap, KvOp};
    ///
    /// let mut map = KvMap::new();
    /// map.step(&KvOp::Put(2, 20));
    /// assert_eq!(map.as_map().get(&2), Some(&20));
    /// ```
    pub fn as_map(&self) -> &BTreeMap<u64, u64> {
        &self.map
    }
}

impl From<BTreeMap<u64, u64>> for KvMap {
    fn from(map: BTreeMap<u64, u64>) -> Self {
        Self { map }
    }
}

impl Model for KvMap {
    type Op = KvOp;
    type Ret = KvRet;

    fn step(&mut self, op: &KvOp) -> KvRet {
        match *op {
            KvOp::Get(key) => KvRet::Get(self.map.get(&key).copied()),
            KvOp::Put(key, value) => KvRet::Put(self.map.insert(key, value)),
            KvOp::Remove(key) => KvRet::Remove(self.map.remove(&key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_contents_are_equal_states_whatever_the_history() {
        let mut a = KvMap::new();
        let mut b = KvMap::new();
        a.step(&KvOp::Put(1, 1));
        a.step(&KvOp::Put(2, 2));
        b.step(&KvOp::Put(2, 2));
        b.step(&KvOp::Put(3, 3));
        b.step(&KvOp::Remove(3));
        b.step(&KvOp::Put(1, 1));
        assert_eq!(a, b);
        assert_eq!(a, KvMap::from(BTreeMap::from([(1, 1), (2, 2)])));
    }

    #[test]
    fn remove_of_absent_key_returns_none_and_changes_nothing() {
        let mut map = KvMap::from(BTreeMap::from([(1, 5)]));
        assert_eq!(map.step(&KvOp::Remove(2)), KvRet::Remove(None));
        assert_eq!(map.as_map().len(), 1);
    }
}
