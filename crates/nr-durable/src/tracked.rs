//! `Tracked<D>`: the structure nr-core replicates for a [`Durable`](crate::Durable) object: the
//! user's structure plus, per thread id, the sequence number and response of its last write.
//! It is what snapshots hold, so detectability survives checkpoints.

use std::collections::HashMap;

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
    pub(crate) last: HashMap<u32, (u64, D::Response)>,
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
            last: HashMap::new(),
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
