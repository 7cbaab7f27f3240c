//! PBheap (paper §5): a bounded binary min-heap whose whole array is the combined state.
//!
//! [`HeapState`] is a `Pod` sequential heap (length + array of `CAP` keys); [`PBHeap`] is a
//! [`PBComb`] over it, so the array lives in the `StateRec` records and is persisted with them
//! by every combining pass (line 22 writes back the whole record). The authors' C version keeps
//! the array outside the persisted record and never writes it back; here a recovered heap holds
//! exactly the keys of its last durable pass.
//!
//! Cost: a pass copies and writes back `CAP + 1` words (`CAP / 8` cache lines) whatever it
//! changed, which is why the paper recommends PBheap for small and medium heaps (64-1024 keys).

use core::fmt;

use nr_core::Dispatch;

use super::{recovered, ret_unit, ret_value, unit_of, value_of, Full, Ret};
use crate::error::{CombBuildError, CombRegisterError};
use crate::{PBComb, PBCombHandle, Poisoned, Recovered};
use pmem::{NoPersist, Persist, Pod, Region};

/// A bounded binary min-heap of `u64` keys with room for `CAP` keys, as plain old data: the
/// sequential structure [`PBHeap`] combines (and any other protocol of this crate can).
///
/// # Examples
///
/// ```
/// use pcomb::structures::{HeapOp, HeapRead, HeapState};
/// use pcomb::Dispatch;
///
/// let mut h = HeapState::<4>::default();
/// h.dispatch_mut(HeapOp::Insert(3));
/// h.dispatch_mut(HeapOp::Insert(1));
/// assert_eq!(h.len(), 2);
/// assert_eq!(h.dispatch(HeapRead::Min), [1, 1]); // [tag Some, key]
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct HeapState<const CAP: usize> {
    len: u64,
    keys: [u64; CAP],
}

// SAFETY:
// - `repr(C)` of a `u64` and a `u64` array: no padding, every bit pattern valid (a torn or
//   corrupt `len` is clamped to `CAP` wherever it is used);
// - it holds no pointers.
unsafe impl<const CAP: usize> Pod for HeapState<CAP> {}

impl<const CAP: usize> Default for HeapState<CAP> {
    fn default() -> Self {
        Self {
            len: 0,
            keys: [0; CAP],
        }
    }
}

impl<const CAP: usize> fmt::Debug for HeapState<CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapState")
            .field("len", &self.len)
            .field("keys", &&self.keys[..self.len()])
            .finish()
    }
}

/// A mutating heap operation.
///
/// # Examples
///
/// ```
/// use pcomb::structures::{HeapOp, HeapState};
/// use pcomb::Dispatch;
/// let mut h = HeapState::<1>::default();
/// assert_eq!(h.dispatch_mut(HeapOp::Insert(5)), [0, 0]); // Ok
/// assert_eq!(h.dispatch_mut(HeapOp::Insert(6)), [2, 6]); // Full(6)
/// assert_eq!(h.dispatch_mut(HeapOp::DeleteMin), [1, 5]); // Some(5)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapOp {
    /// Insert a key (response `[0, 0]`, or `[2, key]` when the heap is full).
    Insert(u64),
    /// Remove the smallest key (response `[1, key]`, or `[0, 0]` when empty).
    DeleteMin,
}

/// A read-only heap operation.
///
/// # Examples
///
/// ```
/// use pcomb::structures::{HeapRead, HeapState};
/// use pcomb::Dispatch;
/// assert_eq!(HeapState::<1>::default().dispatch(HeapRead::Len), [1, 0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapRead {
    /// The smallest key (`[1, key]`, or `[0, 0]` when empty).
    Min,
    /// The number of keys (`[1, len]`).
    Len,
}

impl<const CAP: usize> HeapState<CAP> {
    /// The number of keys.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::structures::HeapState::<2>::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        (self.len as usize).min(CAP)
    }

    /// Whether the heap has no keys.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(pcomb::structures::HeapState::<2>::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys in array (heap) order.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::{HeapOp, HeapState}, Dispatch};
    /// let mut h = HeapState::<2>::default();
    /// h.dispatch_mut(HeapOp::Insert(2));
    /// assert_eq!(h.keys(), &[2]);
    /// ```
    pub fn keys(&self) -> &[u64] {
        &self.keys[..self.len()]
    }

    fn insert(&mut self, key: u64) -> Result<(), Full> {
        let n = self.len();
        if n == CAP {
            return Err(Full(key));
        }
        let mut i = n;
        self.keys[i] = key;
        self.len = (n + 1) as u64;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.keys[parent] <= self.keys[i] {
                break;
            }
            self.keys.swap(parent, i);
            i = parent;
        }
        Ok(())
    }

    fn delete_min(&mut self) -> Option<u64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let min = self.keys[0];
        let last = n - 1;
        self.keys[0] = self.keys[last];
        self.keys[last] = 0;
        self.len = last as u64;
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < last && self.keys[l] < self.keys[m] {
                m = l;
            }
            if r < last && self.keys[r] < self.keys[m] {
                m = r;
            }
            if m == i {
                break;
            }
            self.keys.swap(i, m);
            i = m;
        }
        Some(min)
    }
}

impl<const CAP: usize> Dispatch for HeapState<CAP> {
    type ReadOperation<'a> = HeapRead;
    type WriteOperation = HeapOp;
    /// `[tag, value]`: tag 0 = done / none, 1 = some value, 2 = full (value rejected).
    type Response = [u64; 2];

    fn dispatch(&self, op: HeapRead) -> Ret {
        match op {
            HeapRead::Min => ret_value(self.keys().first().copied()),
            HeapRead::Len => ret_value(Some(self.len() as u64)),
        }
    }

    fn dispatch_mut(&mut self, op: HeapOp) -> Ret {
        match op {
            HeapOp::Insert(k) => ret_unit(self.insert(k)),
            HeapOp::DeleteMin => ret_value(self.delete_min()),
        }
    }
}

/// The largest `CAP` of a [`PBHeap`]: 16,384 keys, a 128 KiB state. The heap's state is the
/// whole array (a [`PBComb`] state): it is built, and copied by every combining pass, on the
/// stack of the calling thread, and each pass writes all of it back; a larger array belongs in
/// a structure with nodes.
///
/// # Examples
///
/// ```
/// use pcomb::{structures::{PBHeap, MAX_HEAP_CAPACITY}, CombBuildError};
/// assert!(matches!(
///     PBHeap::<{ MAX_HEAP_CAPACITY + 1 }>::new(1),
///     Err(CombBuildError::TooLarge { .. })
/// ));
/// ```
pub const MAX_HEAP_CAPACITY: usize = 1 << 14;

/// A recoverable, blocking min-heap with room for `CAP` `u64` keys (paper §5 PBheap),
/// persisted through `P`: a [`PBComb`] over [`HeapState`].
///
/// # Examples
///
/// ```
/// use pcomb::structures::PBHeap;
///
/// let heap = PBHeap::<64>::new(2)?;
/// std::thread::scope(|s| {
///     for t in 0..2u64 {
///         let heap = &heap;
///         s.spawn(move || {
///             let mut h = heap.register().expect("2 slots");
///             for k in 0..10 {
///                 h.insert(k * 2 + t).expect("room");
///             }
///         });
///     }
/// });
/// let mut h = heap.register()?;
/// let keys: Vec<u64> = std::iter::from_fn(|| h.delete_min()).collect();
/// assert_eq!(keys, (0..20).collect::<Vec<_>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PBHeap<const CAP: usize, P: Persist = NoPersist> {
    comb: PBComb<HeapState<CAP>, P>,
}

impl<const CAP: usize, P: Persist> fmt::Debug for PBHeap<CAP, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBHeap")
            .field("capacity", &CAP)
            .field("comb", &self.comb)
            .finish()
    }
}

impl<const CAP: usize> PBHeap<CAP, NoPersist> {
    /// A volatile heap for up to `max_threads` registered threads.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::structures::PBHeap::<8>::new(1)?.capacity(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(max_threads: usize) -> Result<Self, CombBuildError> {
        Self::check_capacity(max_threads)?;
        Ok(Self {
            comb: PBComb::new(HeapState::default(), max_threads)?,
        })
    }
}

impl<const CAP: usize, P: Persist> PBHeap<CAP, P> {
    /// Refuses `CAP` 0 ([`CombBuildError::ZeroCapacity`]) and a `CAP` above
    /// [`MAX_HEAP_CAPACITY`]
    /// ([`CombBuildError::TooLarge`]), before the state is built: the whole array is the combined
    /// state, built and copied on the stack, so a huge `CAP` would overflow the stack (an
    /// abort) rather than fail.
    fn check_capacity(max_threads: usize) -> Result<(), CombBuildError> {
        if CAP == 0 {
            return Err(CombBuildError::ZeroCapacity { kind: "PBHeap" });
        }
        if CAP > MAX_HEAP_CAPACITY {
            return Err(CombBuildError::TooLarge {
                kind: "PBHeap",
                capacity: CAP as u64,
                max_threads,
            });
        }
        Ok(())
    }

    /// A heap-backed heap whose persistence instructions go to `persist` (not durable; the
    /// exact pwb/pfence/psync sequence of the persistent heap, to count or cost it).
    ///
    /// # Errors
    ///
    /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem, structures::PBHeap};
    /// let heap = PBHeap::<8, _>::with_persist(1, pmem::Hardware::no_flush())?;
    /// pmem::reset_stats();
    /// heap.register()?.insert(1)?;
    /// assert!(pmem::stats().pwbs >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_persist(max_threads: usize, persist: P) -> Result<Self, CombBuildError> {
        Self::check_capacity(max_threads)?;
        Ok(Self {
            comb: PBComb::with_persist(HeapState::default(), max_threads, persist)?,
        })
    }

    /// An empty persistent heap in `region` (its owner from now on), recorded as its root.
    ///
    /// # Errors
    ///
    /// As [`PBComb::create`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem::Region, structures::PBHeap};
    /// let heap = PBHeap::<16, _>::create(Region::anonymous(1, 1 << 16)?, 2)?;
    /// heap.register()?.insert(4)?;
    /// let heap = PBHeap::<16, _>::open(heap.into_region().expect("in a region"))?;
    /// assert_eq!(heap.register()?.min(), Some(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(region: Region<P>, max_threads: usize) -> Result<Self, CombBuildError> {
        Self::check_capacity(max_threads)?;
        Ok(Self {
            comb: PBComb::create(region, HeapState::default(), max_threads)?,
        })
    }

    /// Reopens the heap at `region`'s root after a restart or crash (see [`PBComb::open`]).
    ///
    /// # Errors
    ///
    /// As [`PBComb::open`]: [`CombBuildError::LayoutMismatch`] for a missing root or another
    /// structure (a heap of another `CAP` included).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem::Region, structures::PBHeap};
    /// let heap = PBHeap::<16, _>::create(Region::anonymous(1, 1 << 16)?, 2)?;
    /// let region = heap.into_region().expect("in a region");
    /// assert!(PBHeap::<32, _>::open(region).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(region: Region<P>) -> Result<Self, CombBuildError> {
        Ok(Self {
            comb: PBComb::open(region)?,
        })
    }

    /// Gives back the region of a persistent heap (`None` for a volatile one).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(pcomb::structures::PBHeap::<4>::new(1)?.into_region().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_region(self) -> Option<Region<P>> {
        self.comb.into_region()
    }

    /// `CAP`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::structures::PBHeap::<4>::new(1)?.capacity(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> usize {
        CAP
    }

    /// Registers the calling thread under the lowest free id.
    ///
    /// # Errors
    ///
    /// [`CombRegisterError::TooManyThreads`] if `max_threads` handles are alive.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// let _h = heap.register()?;
    /// assert!(heap.register().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self) -> Result<PBHeapHandle<'_, CAP, P>, CombRegisterError> {
        Ok(PBHeapHandle {
            inner: self.comb.register()?,
        })
    }

    /// Registers as thread `id` (after a crash, to recover its operation).
    ///
    /// # Errors
    ///
    /// As [`PBComb::register_as`].
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(2)?;
    /// assert_eq!(heap.register_as(1)?.id(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_as(&self, id: usize) -> Result<PBHeapHandle<'_, CAP, P>, CombRegisterError> {
        Ok(PBHeapHandle {
            inner: self.comb.register_as(id)?,
        })
    }
}

/// A registered thread's access to a [`PBHeap`] (see [`PBCombHandle`] for sequence numbers
/// and detectability).
///
/// # Examples
///
/// ```
/// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
/// let mut h = heap.register()?;
/// h.insert(9)?;
/// assert_eq!((h.len(), h.min()), (1, Some(9)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PBHeapHandle<'a, const CAP: usize, P: Persist = NoPersist> {
    inner: PBCombHandle<'a, HeapState<CAP>, P>,
}

impl<const CAP: usize, P: Persist> fmt::Debug for PBHeapHandle<'_, CAP, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBHeapHandle")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<const CAP: usize, P: Persist> PBHeapHandle<'_, CAP, P> {
    /// This thread's id.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::structures::PBHeap::<4>::new(1)?.register()?.id(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> usize {
        self.inner.id()
    }

    /// The sequence number of this thread id's last mutating operation.
    ///
    /// Persisted: a handle made after `open` starts from the number of the last one that took
    /// effect (see the [module docs](crate::structures)).
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// h.insert(1)?;
    /// assert_eq!(h.seq(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seq(&self) -> u64 {
        self.inner.seq()
    }

    /// Inserts `key`; returns once the insert is durable.
    ///
    /// # Errors
    ///
    /// [`Full`] with `key` if the heap holds `CAP` keys.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::structures::{Full, PBHeap};
    /// let heap = PBHeap::<1>::new(1)?;
    /// let mut h = heap.register()?;
    /// h.insert(1)?;
    /// assert_eq!(h.insert(2), Err(Full(2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(&mut self, key: u64) -> Result<(), Full> {
        unit_of(self.inner.execute_mut(HeapOp::Insert(key)))
    }

    /// Removes and returns the smallest key (`None` if empty); returns once durable.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// assert_eq!(h.delete_min(), None);
    /// h.insert(3)?;
    /// h.insert(2)?;
    /// assert_eq!(h.delete_min(), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_min(&mut self) -> Option<u64> {
        value_of(self.inner.execute_mut(HeapOp::DeleteMin))
    }

    /// The smallest key, without removing it (a read: not announced, no sequence number).
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// h.insert(3)?;
    /// assert_eq!(h.min(), Some(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn min(&mut self) -> Option<u64> {
        value_of(self.inner.execute(HeapRead::Min))
    }

    /// The number of keys.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// assert_eq!(heap.register()?.len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&mut self) -> usize {
        self.inner.execute(HeapRead::Len)[1] as usize
    }

    /// Whether the heap is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// assert!(heap.register()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Recovers this thread's insert of `key` with sequence number `seq`, interrupted by a
    /// crash: whether it had taken effect, and its response.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBHeap, Recovered};
    /// let heap = PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// h.insert(3)?; // seq 1
    /// assert_eq!(h.recover_insert(3, 1), Recovered::Applied(Ok(())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_insert(&mut self, key: u64, seq: u64) -> Recovered<Result<(), Full>> {
        recovered(self.inner.recover(HeapOp::Insert(key), seq), unit_of)
    }

    /// Recovers this thread's delete-min with sequence number `seq`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBHeap, Recovered};
    /// let heap = PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// h.insert(3)?; // seq 1
    /// assert_eq!(h.recover_delete_min(2), Recovered::Reexecuted(Some(3)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_delete_min(&mut self, seq: u64) -> Recovered<Option<u64>> {
        recovered(self.inner.recover(HeapOp::DeleteMin, seq), value_of)
    }

    /// [`insert`](Self::insert) that returns nr-core's [`Poisoned`] instead of panicking when
    /// the heap is poisoned (as
    /// [`PBCombHandle::try_execute_mut`](crate::PBCombHandle::try_execute_mut)).
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked; otherwise the insert's own answer.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// assert_eq!(heap.register()?.try_insert(3), Ok(Ok(())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_insert(&mut self, key: u64) -> Result<Result<(), Full>, Poisoned> {
        self.inner.try_execute_mut(HeapOp::Insert(key)).map(unit_of)
    }

    /// [`delete_min`](Self::delete_min) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// assert_eq!(heap.register()?.try_delete_min(), Ok(None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_delete_min(&mut self) -> Result<Option<u64>, Poisoned> {
        self.inner.try_execute_mut(HeapOp::DeleteMin).map(value_of)
    }

    /// [`len`](Self::len) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = pcomb::structures::PBHeap::<4>::new(1)?;
    /// assert_eq!(heap.register()?.try_len(), Ok(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_len(&mut self) -> Result<usize, Poisoned> {
        Ok(self.inner.try_execute(HeapRead::Len)?[1] as usize)
    }

    /// [`recover_insert`](Self::recover_insert) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBHeap, Recovered};
    /// let heap = PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// assert_eq!(h.try_recover_insert(3, 1), Ok(Recovered::Reexecuted(Ok(()))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover_insert(
        &mut self,
        key: u64,
        seq: u64,
    ) -> Result<Recovered<Result<(), Full>>, Poisoned> {
        let r = self.inner.try_recover(HeapOp::Insert(key), seq)?;
        Ok(recovered(r, unit_of))
    }

    /// [`recover_delete_min`](Self::recover_delete_min) that returns [`Poisoned`] instead of
    /// panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBHeap, Recovered};
    /// let heap = PBHeap::<4>::new(1)?;
    /// let mut h = heap.register()?;
    /// assert_eq!(h.try_recover_delete_min(1), Ok(Recovered::Reexecuted(None)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover_delete_min(&mut self, seq: u64) -> Result<Recovered<Option<u64>>, Poisoned> {
        let r = self.inner.try_recover(HeapOp::DeleteMin, seq)?;
        Ok(recovered(r, value_of))
    }
}
