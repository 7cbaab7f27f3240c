//! A lock-free hash set that grows: a split-ordered list (Shalev and Shavit, "Split-Ordered
//! Lists: Lock-Free Extensible Hash Tables", J. ACM 53(3), 2006; the paper is not in
//! `shared/papers`, so its functions are named here, not its figure and line numbers), over
//! an atomic [`Flavor`] (hash-set format 4).
//!
//! All keys sit in one Harris-Michael list ([`crate::list`]) sorted by their *split-order
//! key*: the bit-reversed hash with the low bit set. Bucket `i` starts at a *sentinel* node
//! whose key is `i` bit-reversed (low bit clear), inserted lazily after the sentinel of its
//! parent bucket (`i` with its top set bit cleared) the first time an operation needs the
//! bucket (the paper's `initialize_bucket`, with `GET_PARENT`); bucket 0 starts at the list head. The
//! bucket count doubles (one CAS on a DRAM word) when the set holds more than [`MAX_LOAD`]
//! keys per bucket on average; no key moves: a doubling splits every bucket's run of the list
//! in two where the new sentinel will go.
//!
//! Persistence: only the list is persistent, and it is an ordinary list of the flavor (every
//! CAS durable before it is visible with Mirror, a sentinel durable before the CAS that links
//! it). The bucket table (a sentinel pointer per bucket) and the bucket count live in DRAM;
//! [`HashSet::recover`] rebuilds them by walking the list once. The root ([`HashRoot`]) holds
//! the tag, the bucket count the set was made with, and the list head, written once.

use crate::error::{HashError, HeapError};
use crate::flavor::Flavor;
use crate::heap::{Guard, Heap, Object, Trace, Tracer};
use crate::list::{self, Head, Node};
use crate::patomic::PConst;
use crate::sync::{AtomicPtr, AtomicWord, Ordering};
use crate::word::PPtr;
use core::mem::size_of;
use crossbeam_utils::CachePadded;
use pmem::{NoPersist, Persist, Region};

/// log2 of the largest bucket count.
const MAX_LOG2: u32 = 24;
/// The most buckets a [`HashSet`] grows to (2^24; a larger capacity is clamped to it). The
/// DRAM bucket table then takes 8 bytes per bucket (128 MiB).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashSet, Heap, MAX_BUCKETS};
/// let set = HashSet::<Volatile, _>::with_capacity(Heap::anonymous(1 << 20)?, usize::MAX)?;
/// assert_eq!(set.buckets(), MAX_BUCKETS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_BUCKETS: usize = 1 << MAX_LOG2;
/// The initial bucket count of [`HashSet::new`] (the set grows from there).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashSet, DEFAULT_BUCKETS};
/// assert_eq!(HashSet::<Volatile, _>::anonymous(1 << 20)?.buckets(), DEFAULT_BUCKETS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_BUCKETS: usize = 16;
/// The average number of keys per bucket above which the bucket count doubles. Two, not one:
/// each bucket's sentinel is a persistent node (a write-back and a fence to publish, another
/// pair to link), so fewer buckets cost fewer fences per insert, for a slightly longer walk
/// (crate README, "The hash set").
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, HashSet, MAX_LOAD};
/// let heap = mirror_atomic::Heap::anonymous(1 << 20)?;
/// let set = HashSet::<Mirror, _>::with_capacity(heap, 4 * MAX_LOAD)?;
/// assert_eq!(set.buckets(), 4);
/// for k in 0..=(4 * MAX_LOAD) as u64 {
///     set.insert(k)?;
/// }
/// assert_eq!(set.buckets(), 8);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_LOAD: usize = 2;
/// The largest key a [`HashSet`] holds (2^63 - 1): a node's 64-bit key is the split-order key,
/// whose low bit tells a key from a bucket sentinel, so a key has 63 bits.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashSet, HASH_MAX_KEY};
/// let set = HashSet::<Volatile, _>::anonymous(1 << 20)?;
/// assert!(set.insert(HASH_MAX_KEY)?);
/// assert!(set.insert(HASH_MAX_KEY + 1).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const HASH_MAX_KEY: u64 = u64::MAX >> 1;
/// First word of a [`HashRoot`]: `"MIRHASH4"` read big-endian (hash-set format 4, the
/// split-ordered list).
///
/// # Examples
///
/// ```
/// assert_eq!(&mirror_atomic::HASH_TAG.to_be_bytes(), b"MIRHASH4");
/// ```
pub const HASH_TAG: u64 = u64::from_be_bytes(*b"MIRHASH4");
/// The tag of a format-3 root (fixed bucket count, a directory of bucket-head segments),
/// recognized only to name it in [`HeapError::OldHashSetFormat`]. A format-2 root began with
/// bucket 0's head, a heap offset far below both tags.
const HASH_TAG_3: u64 = u64::from_be_bytes(*b"MIRHASH3");

/// The root object of a [`HashSet`]: [`HASH_TAG`], log2 of the bucket count the set was made
/// with (recovery starts from it), and the head of the split-ordered list (bucket 0 starts
/// there). The tag and count are written once, before the root slot names the root.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, HashRoot, HashSet, HASH_ROOT_SLOT};
/// let set = HashSet::<Mirror, _>::anonymous(1 << 20)?;
/// let root = set.heap().root::<HashRoot<Mirror>>(HASH_ROOT_SLOT);
/// assert!(root.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[repr(C)]
pub struct HashRoot<F: Flavor> {
    tag: PConst<u64>,
    log2_initial: PConst<u64>,
    head: Head<F>,
}

// SAFETY: two plain words and a flavor atomic of a `PPtr`: any bits valid, no drop, no
// padding (checked below).
unsafe impl<F: Flavor> Object for HashRoot<F> {
    const FIELD_BYTES: usize = 2 * size_of::<PConst<u64>>() + size_of::<Head<F>>();
}

crate::heap::assert_padding_free!(HashRoot<F>);

impl<F: Flavor> Trace for HashRoot<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        t.visit(F::peek(&self.head).unmarked());
    }
}

impl<F: Flavor> core::fmt::Debug for HashRoot<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HashRoot")
            .field("log2_initial", &self.log2_initial.get())
            .field("head", &F::peek(&self.head))
            .finish()
    }
}

/// An odd multiplier (the golden ratio's 64 bits) and its inverse mod 2^64.
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
const MIX_INV: u64 = inverse(MIX);
const _: () = assert!(MIX.wrapping_mul(MIX_INV) == 1);

/// The inverse of odd `a` mod 2^64 (Newton's iteration, each step doubling the correct bits).
const fn inverse(a: u64) -> u64 {
    let mut x = a;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

/// The inverse of `x ^ (x >> s)` on 63-bit values, for `s >= 21` (three rounds).
const fn unshift(y: u64, s: u32) -> u64 {
    let mut x = y;
    let mut i = 0;
    while i < 3 {
        x = y ^ (x >> s);
        i += 1;
    }
    x
}

/// The hash of a key (at most [`HASH_MAX_KEY`]): a bijection of the 63-bit values (a
/// xorshift, a multiplication mod 2^63, a xorshift), so the high bits of the key reach the low
/// bits that choose the bucket. Inverted by [`unhash`].
#[inline]
pub(crate) const fn hash(key: u64) -> u64 {
    let a = key ^ (key >> 31);
    let b = a.wrapping_mul(MIX) & HASH_MAX_KEY;
    b ^ (b >> 30)
}

/// The key whose [`hash`] is `h`.
const fn unhash(h: u64) -> u64 {
    let b = unshift(h, 30);
    let a = b.wrapping_mul(MIX_INV) & HASH_MAX_KEY;
    unshift(a, 31)
}

/// The split-order key of a key with hash `h`: `h` bit-reversed (its bit 63 is clear, so bit
/// 0 of the reversal is), with the low bit set.
#[inline]
const fn so_key(h: u64) -> u64 {
    h.reverse_bits() | 1
}

/// The split-order key of bucket `i`'s sentinel: `i` bit-reversed (low bit clear, since
/// `i < 2^63`). It sorts before every key of the bucket at every bucket count above `i`.
const fn sentinel_key(i: usize) -> u64 {
    (i as u64).reverse_bits()
}

/// The key of a node whose (odd) split-order key is `so`.
const fn key_of(so: u64) -> u64 {
    unhash((so & !1).reverse_bits())
}

/// The bucket index of a valid sentinel key `so` (even, not 0, below [`MAX_BUCKETS`]).
fn sentinel_index(so: u64) -> Option<usize> {
    let i = so.reverse_bits();
    (so & 1 == 0 && i != 0 && i < MAX_BUCKETS as u64).then_some(i as usize)
}

/// The bucket table, in DRAM: per bucket the offset of its sentinel (0: not yet made), in
/// segments allocated on first use. Segment 0 holds bucket 0 (unused: bucket 0 is the list
/// head) and segment `k >= 1` buckets `2^(k-1) .. 2^k`, so the table grows without moving.
struct Table {
    segments: [AtomicPtr<AtomicWord>; MAX_LOG2 as usize + 1],
}

impl Table {
    fn new() -> Self {
        Self {
            segments: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
        }
    }

    /// Words in segment `k`.
    const fn len(k: usize) -> usize {
        if k == 0 {
            1
        } else {
            1 << (k - 1)
        }
    }

    /// The segment and index within it of bucket `i`.
    #[inline]
    const fn locate(i: usize) -> (usize, usize) {
        let k = (usize::BITS - i.leading_zeros()) as usize;
        (k, if k == 0 { 0 } else { i - (1 << (k - 1)) })
    }

    /// The word of bucket `i` (below [`MAX_BUCKETS`]), its segment made if it is not yet.
    #[inline]
    fn slot(&self, i: usize) -> &AtomicWord {
        let (k, off) = Self::locate(i);
        // Acquire: pairs with the Release of the publishing CAS in `add_segment`, so the
        // segment's words are initialized before they are read.
        let mut p = self.segments[k].load(Ordering::Acquire);
        if p.is_null() {
            p = self.add_segment(k);
        }
        // SAFETY:
        // - `p` names a segment of `len(k)` words, allocated by `add_segment` and freed only
        //   by `drop` (which has `&mut self`, so no reference from here is alive);
        // - `off < len(k)` by `locate`.
        unsafe { &*p.add(off) }
    }

    /// Makes segment `k` (zeroed) and publishes it, or returns the one another thread
    /// published first.
    #[cold]
    #[inline(never)]
    fn add_segment(&self, k: usize) -> *mut AtomicWord {
        let fresh: Box<[AtomicWord]> = (0..Self::len(k)).map(|_| AtomicWord::new(0)).collect();
        let p = Box::into_raw(fresh).cast::<AtomicWord>();
        // Release (success): publishes the zeroed words to the Acquire load in `slot`.
        // Acquire (failure): pairs with the winner's Release, for the same reason.
        match self.segments[k].compare_exchange(
            core::ptr::null_mut(),
            p,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => p,
            Err(winner) => {
                // SAFETY: `p` is the `Box<[AtomicWord]>` of `len(k)` words made above, never
                // published (the CAS failed), so this is its only owner.
                drop(unsafe {
                    Box::from_raw(core::ptr::slice_from_raw_parts_mut(p, Self::len(k)))
                });
                winner
            }
        }
    }

    /// The buckets whose sentinel is recorded, with its offset.
    fn recorded(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.segments.iter().enumerate().flat_map(|(k, s)| {
            // Acquire: as in `slot`.
            let p = s.load(Ordering::Acquire);
            let words: &[AtomicWord] = if p.is_null() {
                &[]
            } else {
                // SAFETY: as in `slot`: a published segment of `len(k)` words, alive as long
                // as `&self`.
                unsafe { core::slice::from_raw_parts(p, Self::len(k)) }
            };
            let first = if k == 0 { 0 } else { 1 << (k - 1) };
            words.iter().enumerate().filter_map(move |(j, w)| {
                // Acquire: pairs with the Release store in `HashSet::init_bucket`.
                let off = w.load(Ordering::Acquire);
                (off != 0).then_some((first + j, off))
            })
        })
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        for (k, s) in self.segments.iter().enumerate() {
            // Acquire: pairs with the publishing CAS in `add_segment` (`&mut self`: no race).
            let p = s.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: a segment published by `add_segment` (a `Box<[AtomicWord]>` of
                // `len(k)` words), freed once, here; `&mut self` means no reference into it
                // is alive.
                drop(unsafe {
                    Box::from_raw(core::ptr::slice_from_raw_parts_mut(p, Self::len(k)))
                });
            }
        }
    }
}

/// A lock-free set of `u64` keys up to [`HASH_MAX_KEY`] that grows: a split-ordered list,
/// starting at [`DEFAULT_BUCKETS`] buckets ([`new`](Self::new)) or at a capacity
/// ([`with_capacity`](Self::with_capacity)), doubling its bucket count when it holds more than
/// [`MAX_LOAD`] keys per bucket, up to [`MAX_BUCKETS`]. Persistent with a persistent flavor:
/// [`recover`](Self::recover) rebuilds the bucket table from the list.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Izraelevitz, HashSet, Heap};
/// let set = HashSet::<Izraelevitz, _>::with_capacity(Heap::anonymous(1 << 20)?, 1000)?;
/// assert_eq!(set.buckets(), 512); // two keys per bucket at 1,000 keys
/// assert!(set.insert(10)?);
/// assert!(set.contains(10));
/// assert!(set.remove(10));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HashSet<F: Flavor, P: Persist> {
    heap: Heap<F, P>,
    root: PPtr<HashRoot<F>>,
    /// log2 of the bucket count; only grows.
    log2_buckets: CachePadded<AtomicWord>,
    /// Successful inserts minus successful removes (read as signed: a remove may count
    /// before the insert of its key did).
    keys: CachePadded<AtomicWord>,
    table: Table,
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
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashRoot, HashSet, HASH_ROOT_SLOT, LIST_ROOT_SLOT};
/// assert_ne!(HASH_ROOT_SLOT, LIST_ROOT_SLOT);
/// let set = HashSet::<Volatile, _>::anonymous(1 << 20)?;
/// assert!(set.heap().root::<HashRoot<Volatile>>(HASH_ROOT_SLOT).is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const HASH_ROOT_SLOT: usize = 1;

impl<F: Flavor> HashSet<F, NoPersist> {
    /// An empty set of [`DEFAULT_BUCKETS`] buckets (it grows) on an anonymous (volatile) heap
    /// of `size` bytes.
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
    /// assert_eq!(set.buckets(), 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Heap::anonymous(size)?)
    }
}

impl<F: Flavor, P: Persist> HashSet<F, P> {
    /// An empty set of [`DEFAULT_BUCKETS`] buckets (it grows) in a fresh heap (its root in
    /// slot [`HASH_ROOT_SLOT`]).
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the heap cannot hold the root.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet, Heap};
    /// let set = HashSet::<Volatile, _>::new(Heap::anonymous(8 << 20)?)?;
    /// for k in 0..100_000 {
    ///     assert!(set.insert(k)?);
    /// }
    /// assert_eq!(set.buckets(), 65_536);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(heap: Heap<F, P>) -> Result<Self, HeapError> {
        Self::with_capacity(heap, DEFAULT_BUCKETS * MAX_LOAD)
    }

    /// An empty set sized for about `capacity` keys: `capacity / MAX_LOAD` rounded up to a
    /// power of two buckets, at least 1 and at most [`MAX_BUCKETS`]. It grows past that as
    /// keys come. A bucket's sentinel node is made when the bucket is first used.
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the heap cannot hold the root.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet, Heap};
    /// let set = HashSet::<Mirror, _>::with_capacity(Heap::anonymous(4 << 20)?, 100_000)?;
    /// assert_eq!(set.buckets(), 65_536);
    /// assert!(set.insert(7)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_capacity(mut heap: Heap<F, P>, capacity: usize) -> Result<Self, HeapError> {
        let buckets = capacity
            .div_ceil(MAX_LOAD)
            .clamp(1, MAX_BUCKETS)
            .next_power_of_two();
        let log2 = buckets.trailing_zeros();
        let root = heap.alloc(HashRoot::<F> {
            tag: PConst::new(HASH_TAG),
            log2_initial: PConst::new(u64::from(log2)),
            head: F::atomic(PPtr::null()),
        })?;
        heap.set_root(HASH_ROOT_SLOT, root)?;
        Ok(Self::assemble(heap, root, log2))
    }

    /// The set over `heap` with its root at `root`, `2^log2` buckets, no sentinel recorded.
    fn assemble(heap: Heap<F, P>, root: PPtr<HashRoot<F>>, log2: u32) -> Self {
        Self {
            heap,
            root,
            log2_buckets: CachePadded::new(AtomicWord::new(u64::from(log2))),
            keys: CachePadded::new(AtomicWord::new(0)),
            table: Table::new(),
        }
    }

    /// Recovers a set from a region (see [`Heap::recover`]): walks the list once, records
    /// every sentinel in the bucket table and counts the keys; the bucket count is the one the
    /// set was made with, doubled until the keys fit [`MAX_LOAD`].
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of [`Heap::recover`]; [`HeapError::OldHashSetFormat`] if the root
    /// is not a format-4 root (a set written before the set grew); [`HeapError::Malformed`]
    /// if the recorded bucket count is out of range, the list head holds a marked pointer, the
    /// split-order keys are not strictly increasing, or a sentinel is marked or names no
    /// bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet, Heap, Region};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("set.pmem");
    /// {
    ///     let set = HashSet::with_capacity(Heap::<Mirror, _>::create(&path, 7, 1 << 20)?, 4)?;
    ///     for k in 0..100 {
    ///         set.insert(k)?;
    ///     }
    /// }
    /// let set = HashSet::<Mirror, _>::recover(Region::open(&path, 7)?)?;
    /// assert_eq!(set.buckets(), 64); // 100 keys, at most 2 per bucket
    /// assert_eq!(set.snapshot(), ((0..100).collect(), true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover(region: Region<P>) -> Result<Self, HeapError> {
        let mut root = PPtr::null();
        crate::heap::check_kind(&region, "mirror-atomic HashSet", Some(HASH_ROOT_SLOT))?;
        let heap = Heap::recover(region, |t| {
            // Before tracing it as a `HashRoot`: an older root (another layout) would
            // otherwise be traced as this one.
            let tag = t.root_word(HASH_ROOT_SLOT)?;
            if tag != HASH_TAG {
                let format = if tag == HASH_TAG_3 { 3 } else { 2 };
                return Err(HeapError::OldHashSetFormat { format });
            }
            root = t.root::<HashRoot<F>>(HASH_ROOT_SLOT)?;
            Ok(())
        })?;
        // SAFETY: the root was traced by recovery (a block that holds a `HashRoot`).
        let r = unsafe { heap.get(root) };
        let initial = r.log2_initial.get();
        if initial > u64::from(MAX_LOG2) {
            return Err(HeapError::Malformed {
                what: "hash-set bucket count out of range",
            });
        }
        list::check_recovered(&heap, &r.head)?;
        let set = Self::assemble(heap, root, initial as u32);
        let mut keys = 0u64;
        let mut bad = None;
        let guard = set.heap.pin();
        list::walk(&set.heap, set.head(), &guard, |node, so, marked| {
            if so & 1 == 1 {
                keys += u64::from(!marked);
            } else if let (Some(i), false) = (sentinel_index(so), marked) {
                // Relaxed: the set is not shared before `recover` returns it (and moving it
                // to another thread synchronizes).
                set.table.slot(i).store(node.offset(), Ordering::Relaxed);
            } else {
                bad = Some("hash-set sentinel marked or naming no bucket");
            }
        });
        drop(guard);
        if let Some(what) = bad {
            return Err(HeapError::Malformed { what });
        }
        let mut log2 = initial as u32;
        while log2 < MAX_LOG2 && keys > (MAX_LOAD as u64) << log2 {
            log2 += 1;
        }
        // Relaxed: as above.
        set.keys.store(keys, Ordering::Relaxed);
        set.log2_buckets.store(u64::from(log2), Ordering::Relaxed);
        Ok(set)
    }

    /// The number of buckets now (a power of two; it grows as keys are inserted).
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet, Heap};
    /// let set = HashSet::<Volatile, _>::with_capacity(Heap::anonymous(1 << 20)?, 7)?;
    /// assert_eq!(set.buckets(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn buckets(&self) -> usize {
        1 << self.log2()
    }

    #[inline]
    fn log2(&self) -> u32 {
        // Relaxed: the bucket count is a hint that publishes nothing; every count finds every
        // key (a bucket's sentinel precedes its keys at every count), so a stale one only
        // costs a longer walk.
        self.log2_buckets.load(Ordering::Relaxed) as u32
    }

    /// The list head (bucket 0's start).
    #[inline]
    fn head(&self) -> &Head<F> {
        // SAFETY: the root is allocated by `with_capacity` (or traced by recovery) and never
        // freed.
        &unsafe { self.heap.get(self.root) }.head
    }

    /// Where a walk for a key of bucket `bucket` starts: the `next` of its sentinel (made if
    /// it is not yet), or the list head for bucket 0.
    #[inline]
    fn start(&self, bucket: usize, guard: &Guard) -> &Head<F> {
        if bucket == 0 {
            return self.head();
        }
        // Acquire: pairs with the Release store in `init_bucket` (the sentinel it names is
        // linked, and so initialized, before).
        let s = self.table.slot(bucket).load(Ordering::Acquire);
        if s == 0 {
            return self.init_bucket(bucket, guard);
        }
        // SAFETY: a sentinel, linked before the table named it; sentinels are never removed,
        // so never freed while the set lives.
        &unsafe { self.heap.get(PPtr::<Node<F>>::from_offset(s)) }.next
    }

    /// Shalev-Shavit `initialize_bucket`: links bucket `bucket`'s sentinel after
    /// its parent's (made first, recursively), or finds the one another thread linked, and
    /// records it in the table.
    #[cold]
    #[inline(never)]
    fn init_bucket(&self, bucket: usize, guard: &Guard) -> &Head<F> {
        let parent = bucket & !(1 << (usize::BITS - 1 - bucket.leading_zeros()));
        let from = self.start(parent, guard);
        match list::insert_node(&self.heap, from, sentinel_key(bucket), guard) {
            Ok((sentinel, _)) => {
                // Release: pairs with the Acquire load in `start`. Every thread that gets
                // here stores the same offset (the list holds one node per key).
                self.table
                    .slot(bucket)
                    .store(sentinel.offset(), Ordering::Release);
                // SAFETY: as in `start`: a linked sentinel.
                &unsafe { self.heap.get(sentinel) }.next
            }
            // No room for the sentinel: the parent's sentinel precedes this bucket's keys
            // too, so the walk starts there (longer, still correct); a later call retries.
            Err(_) => from,
        }
    }

    /// The start of the bucket of a key with hash `h`.
    #[inline]
    fn bucket_head(&self, h: u64, guard: &Guard) -> &Head<F> {
        let mask = (1u64 << self.log2()) - 1;
        self.start((h & mask) as usize, guard)
    }

    /// Inserts `key`: `Ok(true)` if it was absent. May double the bucket count.
    ///
    /// # Errors
    ///
    /// [`HashError::KeyOutOfRange`] if `key > HASH_MAX_KEY`; [`HashError::Alloc`] if the
    /// heap is full.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet};
    /// let set = HashSet::<Mirror, _>::anonymous(1 << 20)?;
    /// assert!(set.insert(3)?);
    /// assert!(!set.insert(3)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(&self, key: u64) -> Result<bool, HashError> {
        if key > HASH_MAX_KEY {
            return Err(HashError::KeyOutOfRange { key });
        }
        let guard = self.heap.pin();
        let h = hash(key);
        let log2 = self.log2();
        let head = self.start((h & ((1u64 << log2) - 1)) as usize, &guard);
        let inserted = list::insert(&self.heap, head, so_key(h), &guard)?;
        if inserted {
            // Relaxed: a statistic that only decides when to grow; it publishes nothing.
            let keys = self.keys.fetch_add(1, Ordering::Relaxed).wrapping_add(1) as i64;
            if keys > (MAX_LOAD as i64) << log2 && log2 < MAX_LOG2 {
                // Relaxed: as in `log2`. A failure means another thread grew it (or `log2`
                // was stale): the next insert checks again.
                let _ = self.log2_buckets.compare_exchange(
                    u64::from(log2),
                    u64::from(log2) + 1,
                    Ordering::Relaxed,
                );
            }
        }
        Ok(inserted)
    }

    /// Removes `key`: `true` if it was present.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, HashSet};
    /// let set = HashSet::<Mirror, _>::anonymous(1 << 20)?;
    /// set.insert(3)?;
    /// assert!(set.remove(3));
    /// assert!(!set.remove(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&self, key: u64) -> bool {
        if key > HASH_MAX_KEY {
            return false;
        }
        let guard = self.heap.pin();
        let h = hash(key);
        let removed = list::remove(&self.heap, self.bucket_head(h, &guard), so_key(h), &guard);
        if removed {
            // Relaxed: as in `insert` (subtracts 1).
            self.keys.fetch_add(u64::MAX, Ordering::Relaxed);
        }
        removed
    }

    /// Whether `key` is present.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet};
    /// let set = HashSet::<Volatile, _>::anonymous(1 << 20)?;
    /// set.insert(3)?;
    /// assert!(set.contains(3) && !set.contains(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, key: u64) -> bool {
        if key > HASH_MAX_KEY {
            return false;
        }
        let guard = self.heap.pin();
        let h = hash(key);
        list::contains(&self.heap, self.bucket_head(h, &guard), so_key(h), &guard)
    }

    /// All keys, sorted (consistent only when nothing runs concurrently), and whether the set
    /// is well formed: split-order keys strictly increasing, no sentinel marked or naming no
    /// bucket, and every bucket in the table naming its own sentinel.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet};
    /// let set = HashSet::<Volatile, _>::anonymous(1 << 20)?;
    /// for k in [5, 1, 3] {
    ///     set.insert(k)?;
    /// }
    /// assert_eq!(set.snapshot(), (vec![1, 3, 5], true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> (Vec<u64>, bool) {
        let guard = self.heap.pin();
        let mut keys = Vec::new();
        let mut sentinels_ok = true;
        let sorted = list::walk(&self.heap, self.head(), &guard, |_, so, marked| {
            if so & 1 == 1 {
                if !marked {
                    keys.push(key_of(so));
                }
            } else {
                sentinels_ok &= !marked && sentinel_index(so).is_some();
            }
        });
        let table_ok = self.table.recorded().all(|(i, off)| {
            // SAFETY: a recorded sentinel, never freed while the set lives.
            let node = unsafe { self.heap.get(PPtr::<Node<F>>::from_offset(off)) };
            node.key.get() == sentinel_key(i)
        });
        keys.sort_unstable();
        (keys, sorted && sentinels_ok && table_ok)
    }

    /// The heap.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, HashSet, Heap};
    /// let set = HashSet::<Volatile, _>::with_capacity(Heap::anonymous(1 << 20)?, 1)?;
    /// set.insert(1)?;
    /// // The root and the key's node (one bucket: it starts at the list head, no sentinel).
    /// assert_eq!(set.heap().live_blocks(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn heap(&self) -> &Heap<F, P> {
        &self.heap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_a_bijection_of_the_63_bit_keys() {
        let mut x = 0x1234_5678_9abc_def1u64;
        for k in [0, 1, 2, HASH_MAX_KEY, 1 << 62, 12345]
            .into_iter()
            .chain((0..10_000).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x & HASH_MAX_KEY
            }))
        {
            let h = hash(k);
            assert!(h <= HASH_MAX_KEY);
            assert_eq!(unhash(h), k);
            assert_eq!(key_of(so_key(h)), k);
        }
    }

    #[test]
    fn a_sentinel_sorts_before_the_keys_of_its_bucket() {
        for log2 in 1..8u32 {
            for k in 0..2000u64 {
                let h = hash(k);
                let i = (h & ((1 << log2) - 1)) as usize;
                assert!(sentinel_key(i) < so_key(h));
                // ... and after the keys of the buckets before it in split order.
                let next = (sentinel_key(i) >> (64 - log2)) + 1;
                if next < (1 << log2) {
                    assert!(so_key(h) < next << (64 - log2));
                }
            }
        }
    }

    /// After growth, every key's bucket starts at its own sentinel, recorded in the table
    /// (not at the list head or an ancestor's sentinel, which would find the same keys,
    /// slowly).
    #[test]
    fn every_used_bucket_starts_at_its_own_sentinel() {
        let heap = Heap::anonymous(4 << 20).expect("heap");
        let set = HashSet::<crate::flavor::Mirror, NoPersist>::with_capacity(heap, 1).expect("set");
        for k in 0..3000 {
            assert!(set.insert(k).expect("room"));
        }
        assert_eq!(set.buckets(), 2048);
        let guard = set.heap.pin();
        let mask = set.buckets() as u64 - 1;
        for k in 0..3000 {
            let b = (hash(k) & mask) as usize;
            let head = set.start(b, &guard);
            if b == 0 {
                assert!(core::ptr::eq(head, set.head()));
                continue;
            }
            let off = set.table.slot(b).load(Ordering::Acquire);
            assert_ne!(off, 0, "bucket {b} recorded");
            // SAFETY: a recorded sentinel.
            let sentinel = unsafe {
                set.heap
                    .get(PPtr::<Node<crate::flavor::Mirror>>::from_offset(off))
            };
            assert_eq!(sentinel.key.get(), sentinel_key(b));
            assert!(
                core::ptr::eq(head, &sentinel.next),
                "bucket {b} starts at its sentinel"
            );
        }
    }

    #[test]
    fn table_locates_every_bucket_once() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..4096 {
            let (k, off) = Table::locate(i);
            assert!(off < Table::len(k));
            assert!(seen.insert((k, off)));
        }
    }
}
