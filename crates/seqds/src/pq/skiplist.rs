//! The skip-list priority queue.

use super::{PqRead, PqResponse, PqWrite};
use crate::invariant::InvariantError;
use crate::rng::SplitMix64;
use crate::skiplist::SkipList;
use nr_core::Dispatch;
use std::fmt;

/// A min-priority queue of `u64` keys (a multiset: duplicates are kept) on a skip list — the
/// structure of Calciu et al., ASPLOS'17, §8.1.1 (Figure 5).
///
/// `insert` is an O(log n) expected search and link; `delete_min` unlinks the first node in
/// O(1) expected, since it is the head's successor on every level of its tower; `find_min`
/// reads the head's successor. Nodes and their towers live in arenas (vectors with free lists),
/// so a warmed-up queue allocates nothing per operation.
///
/// Tower heights come from a seeded generator stored in the queue, so every replica that applies
/// the same writes ends in the same state ([`Dispatch`](nr_core::Dispatch#determinism)).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{PqRead, PqResponse, PqWrite, SkipListPq};
///
/// let mut pq = SkipListPq::with_capacity(16);
/// for k in [5, 1, 3, 1] {
///     pq.dispatch_mut(PqWrite::Insert(k));
/// }
/// assert_eq!(pq.dispatch(PqRead::FindMin), PqResponse::Min(Some(1)));
/// assert_eq!(pq.dispatch_mut(PqWrite::DeleteMin), PqResponse::Deleted(Some(1)));
/// assert_eq!(pq.dispatch_mut(PqWrite::DeleteMin), PqResponse::Deleted(Some(1)));
/// assert_eq!(pq.delete_min(), Some(3));
/// assert_eq!(pq.len(), 1);
/// ```
#[derive(Clone)]
pub struct SkipListPq {
    list: SkipList<u64, ()>,
}

impl SkipListPq {
    /// An empty queue.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::SkipListPq::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `capacity` keys before its arenas grow.
    ///
    /// # Examples
    ///
    /// ```
    /// let pq = seqds::SkipListPq::with_capacity(1000);
    /// assert_eq!(pq.len(), 0);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            list: SkipList::with_capacity(capacity),
        }
    }

    /// A queue holding `n` keys drawn uniformly from all of `u64` by [`SplitMix64`]`(seed)`:
    /// the benchmarks' prefill. Equal arguments give equal queues.
    ///
    /// # Examples
    ///
    /// ```
    /// use seqds::SkipListPq;
    ///
    /// let a = SkipListPq::with_items(100, 7);
    /// let b = SkipListPq::with_items(100, 7);
    /// assert_eq!(a.len(), 100);
    /// assert_eq!(a.find_min(), b.find_min());
    /// ```
    pub fn with_items(n: usize, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut pq = Self::with_capacity(n);
        pq.extend((0..n).map(|_| rng.next_u64()));
        pq
    }

    /// The number of keys, counting duplicates.
    ///
    /// # Examples
    ///
    /// ```
    /// let pq: seqds::SkipListPq = [1, 1, 2].into_iter().collect();
    /// assert_eq!(pq.len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether the queue is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::SkipListPq::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `key` (after any equal keys).
    ///
    /// # Panics
    ///
    /// Past about 2^32 keys (the arenas use `u32` indices).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut pq = seqds::SkipListPq::new();
    /// pq.insert(4);
    /// assert_eq!(pq.find_min(), Some(4));
    /// ```
    #[inline]
    pub fn insert(&mut self, key: u64) {
        self.list.insert_after_equal(key, ());
    }

    /// Removes and returns one copy of the smallest key.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut pq: seqds::SkipListPq = [2, 1].into_iter().collect();
    /// assert_eq!(pq.delete_min(), Some(1));
    /// assert_eq!(pq.delete_min(), Some(2));
    /// assert_eq!(pq.delete_min(), None);
    /// ```
    #[inline]
    pub fn delete_min(&mut self) -> Option<u64> {
        self.list.pop_first().map(|(k, ())| k)
    }

    /// The smallest key.
    ///
    /// # Examples
    ///
    /// ```
    /// let pq: seqds::SkipListPq = [2, 1].into_iter().collect();
    /// assert_eq!(pq.find_min(), Some(1));
    /// ```
    #[inline]
    pub fn find_min(&self) -> Option<u64> {
        self.list.first().map(|(k, ())| k)
    }

    /// The keys in ascending order (O(n); for tests and inspection).
    ///
    /// # Examples
    ///
    /// ```
    /// let pq: seqds::SkipListPq = [3, 1, 3].into_iter().collect();
    /// assert_eq!(pq.iter().collect::<Vec<_>>(), [1, 3, 3]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.list.iter().map(|(k, ())| k)
    }

    /// Checks the skip list's structure: level 0 sorted, each level the sub-list of the nodes
    /// taller than it, the length, the free lists. O(n · 24); for tests.
    ///
    /// # Errors
    ///
    /// [`InvariantError`] naming the first broken invariant (a bug in this crate).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut pq = seqds::SkipListPq::with_items(50, 1);
    /// pq.delete_min();
    /// assert!(pq.check_invariants().is_ok());
    /// ```
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        self.list.check("SkipListPq", false)
    }
}

impl Default for SkipListPq {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SkipListPq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipListPq")
            .field("len", &self.len())
            .field("levels", &self.list.levels())
            .field("min", &self.find_min())
            .finish_non_exhaustive()
    }
}

impl Extend<u64> for SkipListPq {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, keys: I) {
        for k in keys {
            self.insert(k);
        }
    }
}

impl FromIterator<u64> for SkipListPq {
    fn from_iter<I: IntoIterator<Item = u64>>(keys: I) -> Self {
        let mut pq = Self::new();
        pq.extend(keys);
        pq
    }
}

impl Dispatch for SkipListPq {
    type ReadOperation<'a> = PqRead;
    type WriteOperation = PqWrite;
    type Response = PqResponse;

    #[inline]
    fn dispatch(&self, op: PqRead) -> PqResponse {
        match op {
            PqRead::FindMin => PqResponse::Min(self.find_min()),
            PqRead::Len => PqResponse::Len(self.len()),
        }
    }

    #[inline]
    fn dispatch_mut(&mut self, op: PqWrite) -> PqResponse {
        match op {
            PqWrite::Insert(k) => {
                self.insert(k);
                PqResponse::Inserted
            }
            PqWrite::DeleteMin => PqResponse::Deleted(self.delete_min()),
        }
    }
}
