//! A lock-free hash set: an array of Harris-Michael lists (Michael, SPAA'02 §3), over an atomic
//! [`Flavor`], its bucket count chosen when the set is made (from an expected capacity) and
//! recorded in the file (hash-set format 3).
//!
//! The bucket heads live in [`Segment`]s of [`SEGMENT_HEADS`] heads each (one heap block), named
//! by the root object, a [`HashRoot`] (one block): a tag that says the layout, the number of
//! buckets (a power of two) and the segment directory. Only the heads change after creation;
//! the root and the directory are written once, published before the root slot names them.
//! The set does not grow: [`HashSet::with_capacity`] sizes it (see the crate README, "The hash
//! set", for the growth design that is not done).

use crate::error::{HeapAllocError, HeapError};
use crate::flavor::Flavor;
use crate::heap::{Heap, Object, Trace, Tracer};
use crate::list::{self, Head};
use crate::patomic::PConst;
use crate::word::PPtr;
use core::mem::size_of;
use pmem::{NoPersist, Persist, Region};

/// Bucket heads per [`Segment`] (8 KiB of heads for Mirror, 4 KiB for the 8-byte flavors).
pub const SEGMENT_HEADS: usize = 512;
/// Directory entries in a [`HashRoot`] (the root is 8 KiB, one block).
const DIRECTORY: usize = 1022;
/// log2 of the largest bucket count (2^18 = 262,144 buckets: 512 segments).
const MAX_LOG2: u32 = 18;
/// The most buckets a [`HashSet`] can have (a larger capacity is clamped to it).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashSet, Heap, MAX_BUCKETS};
/// let set = HashSet::<Volatile, _>::with_capacity(Heap::anonymous(8 << 20)?, usize::MAX)?;
/// assert_eq!(set.buckets(), MAX_BUCKETS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_BUCKETS: usize = 1 << MAX_LOG2;
/// The bucket count of [`HashSet::new`].
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashSet, DEFAULT_BUCKETS};
/// assert_eq!(HashSet::<Volatile, _>::anonymous(1 << 20)?.buckets(), DEFAULT_BUCKETS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_BUCKETS: usize = 256;
/// First word of a [`HashRoot`]: `"MIRHASH3"` read big-endian (hash-set format 3). A format-2
/// root began with bucket 0's head, a heap offset (far below this value), so the two never
/// meet.
pub const HASH_TAG: u64 = u64::from_be_bytes(*b"MIRHASH3");

const _: () = assert!((MAX_BUCKETS / SEGMENT_HEADS) <= DIRECTORY);

/// A run of [`SEGMENT_HEADS`] bucket heads (one heap block).
#[repr(C)]
pub struct Segment<F: Flavor> {
    heads: [Head<F>; SEGMENT_HEADS],
}

// SAFETY: an array of flavor atomics of `PPtr`s (no padding between elements).
unsafe impl<F: Flavor> Object for Segment<F> {
    const FIELD_BYTES: usize = SEGMENT_HEADS * size_of::<Head<F>>();
}

impl<F: Flavor> Trace for Segment<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        for h in &self.heads {
            t.visit(F::peek(h).unmarked());
        }
    }
}

impl<F: Flavor> core::fmt::Debug for Segment<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Segment")
            .field("heads", &SEGMENT_HEADS)
            .finish()
    }
}

/// The root object of a [`HashSet`]: [`HASH_TAG`], log2 of the bucket count, and the
/// directory of segments (the first `max(1, buckets / SEGMENT_HEADS)` entries used, the rest
/// null). Written once, before the root slot names it.
#[repr(C)]
pub struct HashRoot<F: Flavor> {
    tag: PConst<u64>,
    log2_buckets: PConst<u64>,
    segments: [PConst<PPtr<Segment<F>>>; DIRECTORY],
}

// SAFETY: plain words (`PConst` of `u64` and of `PPtr`): any bits valid, no drop, no padding.
unsafe impl<F: Flavor> Object for HashRoot<F> {
    const FIELD_BYTES: usize = 2 * size_of::<PConst<u64>>() + DIRECTORY * size_of::<PPtr<()>>();
}

crate::heap::assert_padding_free!(Segment<F>, HashRoot<F>);

impl<F: Flavor> HashRoot<F> {
    /// The segments in use, if the tag and bucket count are this format's.
    fn used(&self) -> Option<&[PConst<PPtr<Segment<F>>>]> {
        let log2 = self.log2_buckets.get();
        if self.tag.get() != HASH_TAG || log2 > u64::from(MAX_LOG2) {
            return None;
        }
        Some(&self.segments[..segments_for(1 << log2)])
    }
}

impl<F: Flavor> Trace for HashRoot<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        // A root of another layout is traced as holding nothing; `HashSet::recover` then
        // refuses it with a typed error.
        for s in self.used().unwrap_or(&[]) {
            t.visit(s.get());
        }
    }
}

impl<F: Flavor> core::fmt::Debug for HashRoot<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HashRoot")
            .field("log2_buckets", &self.log2_buckets.get())
            .finish()
    }
}

/// Segments holding `buckets` heads.
const fn segments_for(buckets: usize) -> usize {
    buckets.div_ceil(SEGMENT_HEADS)
}

/// A lock-free set of `u64` keys: a power-of-two number of buckets fixed at creation (256 by
/// [`new`](Self::new), or sized by [`with_capacity`](Self::with_capacity)), each a
/// Harris-Michael list. The bucket count is in the file: [`recover`](Self::recover) uses it.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Izraelevitz, HashSet, Heap};
/// let set = HashSet::<Izraelevitz, _>::with_capacity(Heap::anonymous(1 << 20)?, 1000)?;
/// assert_eq!(set.buckets(), 1024);
/// assert!(set.insert(10)?);
/// assert!(set.contains(10));
/// assert!(set.remove(10));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HashSet<F: Flavor, P: Persist> {
    heap: Heap<F, P>,
    /// The directory's used entries, copied to DRAM (they never change).
    segments: Box<[PPtr<Segment<F>>]>,
    log2_buckets: u32,
}

impl<F: Flavor, P: Persist> core::fmt::Debug for HashSet<F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HashSet")
            .field("heap", &self.heap)
            .field("buckets", &self.buckets())
            .finish()
    }
}

/// Root slot a [`HashSet`] uses.
pub const HASH_ROOT_SLOT: usize = 1;

impl<F: Flavor> HashSet<F, NoPersist> {
    /// An empty set of [`DEFAULT_BUCKETS`] buckets on an anonymous (volatile) heap of `size`
    /// bytes.
    ///
    /// # Errors
    ///
    /// As [`HashSet::new`] and [`Heap::anonymous`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet};
    /// let set = HashSet::<Mirror, _>::anonymous(1 << 20)?;
    /// assert_eq!(set.buckets(), 256);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Heap::anonymous(size)?)
    }
}

impl<F: Flavor, P: Persist> HashSet<F, P> {
    /// An empty set of [`DEFAULT_BUCKETS`] buckets in a fresh heap (its root in slot
    /// [`HASH_ROOT_SLOT`]).
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the heap cannot hold the root and the bucket segment.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet, Heap};
    /// let set = HashSet::<Volatile, _>::new(Heap::anonymous(1 << 20)?)?;
    /// assert!(set.insert(1)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(heap: Heap<F, P>) -> Result<Self, HeapError> {
        Self::with_capacity(heap, DEFAULT_BUCKETS)
    }

    /// An empty set sized for about `capacity` keys: `capacity` rounded up to a power of two
    /// buckets (one key per bucket on average when full), at least 1 and at most
    /// [`MAX_BUCKETS`]. The heap needs `16 * buckets` bytes of heads for Mirror (8 for the
    /// other flavors), in blocks of [`SEGMENT_HEADS`] heads, plus an 8 KiB root.
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the heap cannot hold the root and the segments.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet, Heap};
    /// let set = HashSet::<Mirror, _>::with_capacity(Heap::anonymous(4 << 20)?, 100_000)?;
    /// assert_eq!(set.buckets(), 131_072);
    /// assert!(set.insert(7)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_capacity(mut heap: Heap<F, P>, capacity: usize) -> Result<Self, HeapError> {
        let buckets = capacity.clamp(1, MAX_BUCKETS).next_power_of_two();
        let log2_buckets = buckets.trailing_zeros();
        let mut directory = [PConst::new(PPtr::null()); DIRECTORY];
        for entry in &mut directory[..segments_for(buckets)] {
            // Published by `alloc` before the root that names it.
            *entry = PConst::new(heap.alloc(Segment::<F> {
                heads: core::array::from_fn(|_| F::atomic(PPtr::null())),
            })?);
        }
        let root = heap.alloc(HashRoot::<F> {
            tag: PConst::new(HASH_TAG),
            log2_buckets: PConst::new(u64::from(log2_buckets)),
            segments: directory,
        })?;
        heap.set_root(HASH_ROOT_SLOT, root)?;
        Ok(Self::assemble(heap, root))
    }

    /// The set over `heap` with its root at `root` (a root of this format).
    fn assemble(heap: Heap<F, P>, root: PPtr<HashRoot<F>>) -> Self {
        // SAFETY: the root was allocated by `with_capacity` (or traced by recovery, which
        // checked its tag and bucket count first), never freed.
        let r = unsafe { heap.get(root) };
        let log2_buckets = r.log2_buckets.get() as u32;
        let segments = r.used().unwrap_or(&[]).iter().map(|s| s.get()).collect();
        Self {
            heap,
            segments,
            log2_buckets,
        }
    }

    /// Recovers a set from a region (see [`Heap::recover`]), with the bucket count it was made
    /// with.
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of [`Heap::recover`]; [`HeapError::OldHashSetFormat`] if the root
    /// is not a format-3 root (a set written before the bucket count was recorded);
    /// [`HeapError::Malformed`] if a segment is missing or used twice, a bucket's keys are not
    /// strictly increasing, or a key is in another key's bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet, Heap, Region};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("set.pmem");
    /// {
    ///     let set = HashSet::with_capacity(Heap::<Mirror, _>::create(&path, 7, 1 << 20)?, 2048)?;
    ///     set.insert(5)?;
    /// }
    /// let set = HashSet::<Mirror, _>::recover(Region::open(&path, 7)?)?;
    /// assert_eq!((set.buckets(), set.snapshot().0), (2048, vec![5]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover(region: Region<P>) -> Result<Self, HeapError> {
        let mut root = PPtr::null();
        crate::heap::check_kind(&region, "mirror-atomic HashSet", Some(HASH_ROOT_SLOT))?;
        let heap = Heap::recover(region, |t| {
            // Before tracing it as a `HashRoot`: a format-2 root (a smaller block of heads)
            // would otherwise be reported as a pointer to a block too small.
            if t.root_word(HASH_ROOT_SLOT)? != HASH_TAG {
                return Err(HeapError::OldHashSetFormat);
            }
            root = t.root::<HashRoot<F>>(HASH_ROOT_SLOT)?;
            Ok(())
        })?;
        // SAFETY: the root was traced by recovery (a block that holds a `HashRoot`).
        let r = unsafe { heap.get(root) };
        let used = r.used().ok_or(HeapError::Malformed {
            what: "hash-set bucket count out of range",
        })?;
        let mut seen = std::collections::HashSet::new();
        for s in used {
            let first_use = seen.insert(s.get().offset());
            if s.get().is_null() || !first_use {
                return Err(HeapError::Malformed {
                    what: "hash-set segment missing or used twice",
                });
            }
        }
        let set = Self::assemble(heap, root);
        // The heads past the bucket count (a set of fewer buckets than a segment) are never
        // used: one that links nodes is corrupt.
        for s in set.segments.iter() {
            // SAFETY: a segment traced by recovery.
            for h in unsafe { set.heap.get(*s) }.heads.iter().skip(set.buckets()) {
                if !F::peek(h).is_null() {
                    return Err(HeapError::Malformed {
                        what: "hash-set head past the bucket count is not empty",
                    });
                }
            }
        }
        for h in set.heads() {
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

    /// The number of buckets (a power of two, fixed when the set was made).
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet, Heap};
    /// let set = HashSet::<Volatile, _>::with_capacity(Heap::anonymous(1 << 20)?, 3)?;
    /// assert_eq!(set.buckets(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn buckets(&self) -> usize {
        1 << self.log2_buckets
    }

    /// The heads that are used: the first `buckets()` of the segments.
    fn heads(&self) -> impl Iterator<Item = &Head<F>> {
        self.segments
            .iter()
            // SAFETY: segments are allocated by `with_capacity` (or traced by recovery) and
            // never freed.
            .flat_map(|s| unsafe { self.heap.get(*s) }.heads.iter())
            .take(self.buckets())
    }

    #[inline]
    fn bucket(&self, key: u64) -> &Head<F> {
        // Fibonacci hashing: the top bits of key * 2^64/phi.
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h >> (64 - self.log2_buckets.max(1))) as usize & (self.buckets() - 1);
        let segment = self.segments[i / SEGMENT_HEADS];
        // SAFETY: as in `heads`.
        &unsafe { self.heap.get(segment) }.heads[i % SEGMENT_HEADS]
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
        let mut all = Vec::new();
        let mut ok = true;
        for h in self.heads() {
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
