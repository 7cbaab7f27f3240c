//! The contract between a sequential data structure and the concurrent object built from it.

/// A sequential data structure that [`NodeReplicated`](crate::NodeReplicated) can make
/// concurrent.
///
/// Operations are split in two kinds, as in the paper's `IsReadOnly` (Calciu et al., ASPLOS'17,
/// §4): *read* operations run on `&self` against the local replica, in parallel with each other;
/// *write* operations run on `&mut self` and are applied, in one global order, to every replica.
///
/// # Determinism
///
/// Every replica applies every write operation, independently. Replicas agree only if
/// [`dispatch_mut`](Dispatch::dispatch_mut) is **deterministic**: the same state and the same
/// operation give the same new state and the same response on every replica. Do not read clocks,
/// thread ids, addresses or unseeded randomness in a way that affects the state or the response
/// (randomness that does not, such as the tower height of a skip-list node, is fine). All replicas
/// must also start equal: the constructor closure given to
/// [`Builder::build`](crate::Builder::build) must return equal structures.
///
/// Operations must not block and must not call back into the same [`NodeReplicated`] (that
/// would wait for itself).
///
/// # Panics
///
/// A panic in `dispatch_mut` (or in `WriteOperation::clone`) leaves that replica half-updated
/// and unlike the others, so it *poisons* the object: see
/// [`NodeReplicated`](crate::NodeReplicated#poisoning). A panic in `dispatch` does not.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use std::collections::HashMap;
///
/// #[derive(Default)]
/// struct Kv(HashMap<u64, u64>);
///
/// #[derive(Clone, Debug)]
/// enum KvWrite { Put(u64, u64), Remove(u64) }
///
/// impl Dispatch for Kv {
///     // Read operations may borrow from the caller: here, a slice of keys to sum.
///     type ReadOperation<'a> = &'a [u64];
///     type WriteOperation = KvWrite;
///     type Response = Option<u64>;
///
///     fn dispatch(&self, keys: &[u64]) -> Option<u64> {
///         keys.iter().map(|k| self.0.get(k).copied()).sum()
///     }
///
///     fn dispatch_mut(&mut self, op: KvWrite) -> Option<u64> {
///         match op {
///             KvWrite::Put(k, v) => self.0.insert(k, v),
///             KvWrite::Remove(k) => self.0.remove(&k),
///         }
///     }
/// }
///
/// let mut kv = Kv::default();
/// kv.dispatch_mut(KvWrite::Put(1, 10));
/// kv.dispatch_mut(KvWrite::Put(2, 20));
/// assert_eq!(kv.dispatch(&[1, 2]), Some(30));
/// ```
///
/// [`NodeReplicated`]: crate::NodeReplicated
pub trait Dispatch {
    /// A read-only operation. It is lifetime-generic so that it may borrow from the caller
    /// (a key slice, a query struct); it never leaves the calling thread.
    type ReadOperation<'a>
    where
        Self: 'a;

    /// A mutating operation. It is written into the shared log and every replica applies its
    /// own clone, so it must be `Clone + Send`; several replicas clone the same log entry at
    /// once, which is why it must also be `Sync`.
    type WriteOperation: Clone + Send + Sync;

    /// The result of an operation. The thread that applies a write is often not the thread that
    /// asked for it (flat combining), so responses must be `Send`.
    type Response: Send;

    /// Executes a read-only operation on this replica.
    fn dispatch(&self, op: Self::ReadOperation<'_>) -> Self::Response;

    /// Executes a mutating operation on this replica. Must be deterministic (see above).
    fn dispatch_mut(&mut self, op: Self::WriteOperation) -> Self::Response;

    /// Optional: answers a write operation *that would not change the structure* without
    /// changing it, from a shared reference (the paper's §6 "Fake update operations", e.g. the
    /// removal of an absent key). Return `Some(response)` only when `dispatch_mut(op.clone())`
    /// would leave the structure exactly as it is and return that same response; otherwise
    /// `None`. The default always returns `None`.
    ///
    /// Used only when the object was built with
    /// [`Builder::writes_as_reads`](crate::Builder::writes_as_reads): each write is then first
    /// tried as a read on the local replica (no log entry, no combining, in parallel with other
    /// readers) and runs as a write only when this returns `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::Dispatch;
    /// use std::collections::HashSet;
    ///
    /// #[derive(Default)]
    /// struct Set(HashSet<u64>);
    ///
    /// #[derive(Clone)]
    /// enum Write { Insert(u64), Remove(u64) }
    ///
    /// impl Dispatch for Set {
    ///     type ReadOperation<'a> = u64;
    ///     type WriteOperation = Write;
    ///     type Response = bool;
    ///     fn dispatch(&self, k: u64) -> bool { self.0.contains(&k) }
    ///     fn dispatch_mut(&mut self, op: Write) -> bool {
    ///         match op {
    ///             Write::Insert(k) => self.0.insert(k),
    ///             Write::Remove(k) => self.0.remove(&k),
    ///         }
    ///     }
    ///     fn dispatch_as_read(&self, op: &Write) -> Option<bool> {
    ///         match *op {
    ///             // Inserting a present key or removing an absent one changes nothing.
    ///             Write::Insert(k) if self.0.contains(&k) => Some(false),
    ///             Write::Remove(k) if !self.0.contains(&k) => Some(false),
    ///             _ => None,
    ///         }
    ///     }
    /// }
    ///
    /// let set = Set::default();
    /// assert_eq!(set.dispatch_as_read(&Write::Remove(3)), Some(false));
    /// assert_eq!(set.dispatch_as_read(&Write::Insert(3)), None);
    /// ```
    fn dispatch_as_read(&self, op: &Self::WriteOperation) -> Option<Self::Response> {
        let _ = op;
        None
    }
}
