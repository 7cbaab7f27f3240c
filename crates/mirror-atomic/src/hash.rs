//! A lock-free hash set: a fixed array of Harris-Michael lists (Michael, SPAA'02 §3), over an
//! atomic [`Flavor`]. The bucket array is the root object.

use crate::error::{HeapAllocError, HeapError};
use crate::flavor::Flavor;
use crate::heap::{Heap, Object, Trace, Tracer};
use crate::list::{self, Head};
use crate::word::PPtr;
use pmem::{NoPersist, Persist, Region};

/// The root object of a [`HashSet`]: `B` list heads.
#[repr(C)]
pub struct Buckets<F: Flavor, const B: usize> {
    heads: [Head<F>; B],
}

// SAFETY: an array of flavor atomics of `PPtr`s (no padding between elements).
unsafe impl<F: Flavor, const B: usize> Object for Buckets<F, B> {
    const FIELD_BYTES: usize = B * core::mem::size_of::<Head<F>>();
}

crate::heap::assert_padding_free!(Buckets<F, 1>, Buckets<F, 256>);

impl<F: Flavor, const B: usize> Trace for Buckets<F, B> {
    fn trace(&self, t: &mut Tracer<'_>) {
        for h in &self.heads {
            t.visit(F::peek(h).unmarked());
        }
    }
}

impl<F: Flavor, const B: usize> core::fmt::Debug for Buckets<F, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Buckets").field("buckets", &B).finish()
    }
}

/// A lock-free set of `u64` keys: `B` buckets (a power of two; `16 * B` bytes at most 32 KiB
/// for Mirror), each a Harris-Michael list.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Izraelevitz, HashSet};
/// let set = HashSet::<Izraelevitz, _, 64>::anonymous(1 << 20)?;
/// assert!(set.insert(10)?);
/// assert!(set.contains(10));
/// assert!(set.remove(10));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HashSet<F: Flavor, P: Persist, const B: usize = 256> {
    heap: Heap<F, P>,
    root: PPtr<Buckets<F, B>>,
}

impl<F: Flavor, P: Persist, const B: usize> core::fmt::Debug for HashSet<F, P, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HashSet")
            .field("heap", &self.heap)
            .field("buckets", &B)
            .finish()
    }
}

/// Root slot a [`HashSet`] uses.
pub const HASH_ROOT_SLOT: usize = 1;

impl<F: Flavor, const B: usize> HashSet<F, NoPersist, B> {
    /// An empty set on an anonymous (volatile) heap of `size` bytes.
    ///
    /// # Errors
    ///
    /// As [`HashSet::new`] and [`Heap::anonymous`].
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Heap::anonymous(size)?)
    }
}

impl<F: Flavor, P: Persist, const B: usize> HashSet<F, P, B> {
    const POWER_OF_TWO: () = assert!(B.is_power_of_two(), "bucket count must be a power of two");

    /// An empty set in a fresh heap (its bucket array in root slot [`HASH_ROOT_SLOT`]).
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the bucket array does not fit a block.
    pub fn new(mut heap: Heap<F, P>) -> Result<Self, HeapError> {
        let () = Self::POWER_OF_TWO;
        let root = heap.alloc(Buckets::<F, B> {
            heads: core::array::from_fn(|_| F::atomic(PPtr::null())),
        })?;
        heap.set_root(HASH_ROOT_SLOT, root)?;
        Ok(Self { heap, root })
    }

    /// Recovers a set from a region (see [`Heap::recover`]).
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of [`Heap::recover`]; [`HeapError::Malformed`] if a bucket's keys
    /// are not strictly increasing.
    pub fn recover(region: Region<P>) -> Result<Self, HeapError> {
        let mut root = PPtr::null();
        crate::heap::check_kind(&region, "mirror-atomic HashSet", Some(HASH_ROOT_SLOT))?;
        let heap = Heap::recover(region, |t| {
            root = t.root::<Buckets<F, B>>(HASH_ROOT_SLOT)?;
            Ok(())
        })?;
        let set = Self { heap, root };
        // SAFETY: the root was traced by recovery (a block that holds a `Buckets`).
        let buckets = unsafe { set.heap.get(set.root) };
        for h in &buckets.heads {
            list::check_recovered(&set.heap, h)?;
        }
        // Every key in its own bucket: otherwise a corrupt pointer could make one node
        // reachable from two buckets, and removing it from one would retire a node the other
        // still links.
        let (_, ok) = set.snapshot();
        if !ok {
            return Err(HeapError::Malformed {
                what: "hash-set key in another key's bucket",
            });
        }
        Ok(set)
    }

    fn bucket(&self, key: u64) -> &Head<F> {
        // Fibonacci hashing: the top bits of key * 2^64/phi.
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h >> (64 - B.trailing_zeros().max(1))) as usize & (B - 1);
        // SAFETY: the root object is allocated by `new` (or found by recovery), never freed.
        &unsafe { self.heap.get(self.root) }.heads[i]
    }

    /// Inserts `key`: `Ok(true)` if it was absent.
    ///
    /// # Errors
    ///
    /// [`HeapAllocError`] if the heap is full.
    pub fn insert(&self, key: u64) -> Result<bool, HeapAllocError> {
        let guard = self.heap.pin();
        list::insert(&self.heap, self.bucket(key), key, &guard)
    }

    /// Removes `key`: `true` if it was present.
    pub fn remove(&self, key: u64) -> bool {
        let guard = self.heap.pin();
        list::remove(&self.heap, self.bucket(key), key, &guard)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: u64) -> bool {
        let guard = self.heap.pin();
        list::contains(&self.heap, self.bucket(key), key, &guard)
    }

    /// All keys, sorted (consistent only when nothing runs concurrently), and whether every
    /// bucket is well formed (strictly increasing, each key in its own bucket).
    pub fn snapshot(&self) -> (Vec<u64>, bool) {
        let guard = self.heap.pin();
        // SAFETY: as in `bucket`.
        let buckets = unsafe { self.heap.get(self.root) };
        let mut all = Vec::new();
        let mut ok = true;
        for h in &buckets.heads {
            let (keys, sorted) = list::snapshot(&self.heap, h, &guard);
            ok &= sorted && keys.iter().all(|&k| core::ptr::eq(self.bucket(k), h));
            all.extend(keys);
        }
        all.sort_unstable();
        (all, ok)
    }

    /// The heap.
    pub fn heap(&self) -> &Heap<F, P> {
        &self.heap
    }
}
