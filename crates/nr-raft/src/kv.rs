//! A ready-made replicated map, for the server binary, the benchmark and the tests.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::RaftDispatch;

/// A `u64 → u64` hash map: writes `(key, value)` insert and return the old value; reads
/// (queries) are keys and return the value.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// let mut kv = nr_raft::Kv::default();
/// assert_eq!(kv.dispatch_mut((1, 10)), None);
/// assert_eq!(kv.dispatch_mut((1, 11)), Some(10));
/// assert_eq!(kv.dispatch(1), Some(11));
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kv(pub HashMap<u64, u64>);

impl nr_core::Dispatch for Kv {
    type ReadOperation<'a> = u64;
    type WriteOperation = (u64, u64);
    type Response = Option<u64>;

    fn dispatch(&self, k: u64) -> Option<u64> {
        self.0.get(&k).copied()
    }

    fn dispatch_mut(&mut self, (k, v): (u64, u64)) -> Option<u64> {
        self.0.insert(k, v)
    }
}

impl RaftDispatch for Kv {
    type Query = u64;

    fn query(k: &u64) -> u64 {
        *k
    }
}
