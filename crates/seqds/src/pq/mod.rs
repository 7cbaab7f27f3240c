//! Min-priority queues of `u64` keys (Calciu et al., ASPLOS'17, §8.1.1-8.1.2), and the
//! operations they share, so a benchmark can drive either through the same code.

mod pairing;
mod skiplist;

pub use pairing::PairingHeap;
pub use skiplist::SkipListPq;

/// A read-only priority-queue operation (`ReadOperation` of [`SkipListPq`] and [`PairingHeap`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{PqRead, PqResponse, SkipListPq};
///
/// let pq: SkipListPq = [4, 2].into_iter().collect();
/// assert_eq!(pq.dispatch(PqRead::FindMin), PqResponse::Min(Some(2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PqRead {
    /// The smallest key, without removing it (`findMin`).
    FindMin,
    /// The number of keys, counting duplicates.
    Len,
}

/// A mutating priority-queue operation (`WriteOperation` of [`SkipListPq`] and
/// [`PairingHeap`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{PairingHeap, PqResponse, PqWrite};
///
/// let mut pq = PairingHeap::new();
/// assert_eq!(pq.dispatch_mut(PqWrite::Insert(3)), PqResponse::Inserted);
/// assert_eq!(pq.dispatch_mut(PqWrite::DeleteMin), PqResponse::Deleted(Some(3)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PqWrite {
    /// Adds a key; duplicates are kept (`insert`).
    Insert(u64),
    /// Removes one copy of the smallest key (`deleteMin`).
    DeleteMin,
}

/// The result of a [`PqRead`] or [`PqWrite`]: one variant per operation.
///
/// # Examples
///
/// ```
/// use seqds::PqResponse;
///
/// // Same payload, different operations: not equal.
/// assert_ne!(PqResponse::Min(Some(1)), PqResponse::Deleted(Some(1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PqResponse {
    /// [`PqWrite::Insert`] is done.
    Inserted,
    /// [`PqWrite::DeleteMin`]: the key removed, `None` if the queue was empty.
    Deleted(Option<u64>),
    /// [`PqRead::FindMin`]: the smallest key, `None` if the queue is empty.
    Min(Option<u64>),
    /// [`PqRead::Len`]: the number of keys.
    Len(usize),
}
