//! `Tracked<D>`: the structure nr-core replicates for a [`Durable`](crate::Durable) object: the
//! user's structure plus, per thread id, the sequence number and response of its last write.
//! It is what snapshots hold, so detectability survives checkpoints.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use nr_core::Dispatch;
use serde::{Deserialize, Serialize};

use crate::DurableDispatch;

/// A write as logged: the thread id and sequence number that make it detectable, and the
/// user's operation. Its postcard encoding is `tid, seq, op` in turn, so a log entry's payload
/// is `pos, tid, seq, op`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TrackedOp<Op> {
    pub(crate) tid: u32,
    pub(crate) seq: u64,
    pub(crate) op: Op,
}

/// The user's structure and each thread's last write.
#[derive(Serialize, Deserialize)]
#[serde(bound(
    serialize = "D: Serialize, D::Response: Serialize",
    deserialize = "D: Deserialize<'de>, D::Response: Deserialize<'de>"
))]
pub(crate) struct Tracked<D: Dispatch> {
    pub(crate) inner: D,
    pub(crate) last: HashMap<u32, (u64, D::Response), BuildHasherDefault<TidHasher>>,
}

/// The hasher of [`Tracked::last`], which every write updates on every replica: thread ids are
/// the program's own small integers (not input an attacker picks), so one multiplication by an
/// odd constant (Fibonacci hashing: distinct ids stay distinct in the low bits, and the high
/// bits, which the table's tags use, mix all of them) replaces SipHash's rounds. The map
/// encodes as before (serde sees a map of `u32` keys), so snapshots are unchanged.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TidHasher(u64);

impl Hasher for TidHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `u32` keys are hashed (`write_u32`); any other input still hashes, byte by byte.
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    #[inline]
    fn write_u32(&mut self, id: u32) {
        self.0 = (self.0 ^ u64::from(id)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

impl<D: Dispatch> std::fmt::Debug for Tracked<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracked")
            .field("threads", &self.last.len())
            .finish_non_exhaustive()
    }
}

impl<D: DurableDispatch> Tracked<D> {
    pub(crate) fn new(inner: D) -> Self {
        Self {
            inner,
            last: HashMap::default(),
        }
    }
}

/// No `dispatch_as_read`: every write, even one that changes nothing, records its response
/// (so `last_applied` answers for it) and so goes through the log.
impl<D: DurableDispatch> Dispatch for Tracked<D> {
    type ReadOperation<'a> = D::ReadOperation<'a>;
    type WriteOperation = TrackedOp<D::WriteOperation>;
    type Response = D::Response;

    fn dispatch(&self, op: Self::ReadOperation<'_>) -> Self::Response {
        self.inner.dispatch(op)
    }

    fn dispatch_mut(&mut self, op: Self::WriteOperation) -> Self::Response {
        let r = self.inner.dispatch_mut(op.op);
        self.last.insert(op.tid, (op.seq, r.clone()));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Distinct thread ids hash apart, in the high bits too (the table's tags): fails with a
    /// hasher that ignores the id (every id in one bucket) or keeps it in the low bits only.
    #[test]
    fn thread_ids_hash_apart() {
        let b = BuildHasherDefault::<TidHasher>::default();
        let hashes: std::collections::HashSet<u64> = (0..1000u32).map(|i| b.hash_one(i)).collect();
        assert_eq!(hashes.len(), 1000);
        let tags: std::collections::HashSet<u64> =
            (0..64u32).map(|i| b.hash_one(i) >> 57).collect();
        assert!(
            tags.len() > 32,
            "high bits of 64 ids take {} values",
            tags.len()
        );
    }

    /// The table encodes as a plain map: a snapshot written with std's default hasher (before
    /// `TidHasher`) decodes, and the encodings are the same bytes.
    #[test]
    fn the_table_encodes_as_a_plain_map() {
        let std_map: HashMap<u32, (u64, u64)> = [(3, (9, 4))].into_iter().collect();
        let bytes = postcard::to_allocvec(&std_map).unwrap();
        let ours: HashMap<u32, (u64, u64), BuildHasherDefault<TidHasher>> =
            postcard::from_bytes(&bytes).unwrap();
        assert_eq!(ours.get(&3), Some(&(9, 4)));
        assert_eq!(postcard::to_allocvec(&ours).unwrap(), bytes);
    }
}
