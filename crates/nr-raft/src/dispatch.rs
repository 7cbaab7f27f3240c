//! What a structure needs to be replicated across hosts.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A structure replicated across hosts: nr-durable's [`DurableDispatch`] (serde for the
/// state, writes and responses), plus an owned, serde form of its reads ([`Self::Query`]),
/// since a read crosses the network before it borrows anything.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
///
/// #[derive(Default, serde::Serialize, serde::Deserialize)]
/// struct Kv(HashMap<u64, u64>);
///
/// impl nr_core::Dispatch for Kv {
///     type ReadOperation<'a> = u64;
///     type WriteOperation = (u64, u64);
///     type Response = Option<u64>;
///     fn dispatch(&self, k: u64) -> Option<u64> { self.0.get(&k).copied() }
///     fn dispatch_mut(&mut self, (k, v): (u64, u64)) -> Option<u64> { self.0.insert(k, v) }
/// }
///
/// impl nr_raft::RaftDispatch for Kv {
///     type Query = u64;
///     fn query(k: &u64) -> u64 { *k }
/// }
/// ```
///
/// [`DurableDispatch`]: nr_durable::DurableDispatch
pub trait RaftDispatch: nr_durable::DurableDispatch {
    /// A read as it travels from a client to a host.
    type Query: Serialize + DeserializeOwned + Send + 'static;

    /// The read operation of a query, run on the host's local replica.
    fn query(q: &Self::Query) -> Self::ReadOperation<'_>;
}
