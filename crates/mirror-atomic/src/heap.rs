//! The dual heap (paper §4.2-4.3): a persistent `pmem` region and, for the Mirror flavor, a
//! volatile arena of the same size in which every object sits at the same offset.
//!
//! Layout of the region's user area: chunks of [`CHUNK`] bytes claimed from `pmem`'s durable
//! high-water mark. Each chunk starts with a 64-byte header `{CHUNK_TAG, block size}` written
//! back and synced before any block of it is used; the rest is blocks of one power-of-two size
//! class (16 B to 32 KiB). Only that header is allocator metadata in the region; free lists
//! live in DRAM and are rebuilt by recovery (paper §4.3: "metadata are managed only on the
//! volatile replica").

use crate::alloc::{
    block_align, class_of, class_of_block, Alloc, CHUNK, CHUNK_HEADER, CHUNK_TAG, OLD_CHUNK_TAG,
};
use crate::error::{HeapAllocError, HeapError};
use crate::flavor::Flavor;
use crate::persist::Durability;
use crate::sync::{Arc, AtomicPair, AtomicWord, LowLoads, Ordering};
use crate::word::PPtr;
use core::marker::PhantomData;
use core::ptr::NonNull;
pub use epoch_domain::{Domain, Guard};
use pmem::{NoPersist, Offset, Persist, Region, ROOT_SLOTS};
use std::alloc::Layout;
use std::path::Path;

/// The largest object [`Heap::alloc`] accepts, in bytes.
pub const MAX_OBJECT: usize = 32 * 1024;

/// The bytes of the heap block an object of type `N` occupies (its size class: a power of two
/// from 16 bytes, or 224 bytes for a type of 129 to 224 bytes aligned to at most 32).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{block_size, flavor::Mirror, BstNode, Node, SkipNode};
/// assert_eq!(block_size::<Node<Mirror>>(), 32);
/// assert_eq!(block_size::<BstNode<Mirror>>(), 64);
/// assert_eq!(block_size::<SkipNode<Mirror>>(), 64); // a one-level node (see `SkipNode`)
/// ```
pub const fn block_size<N: Object>() -> usize {
    crate::alloc::block_of(class_of(
        core::mem::size_of::<N>(),
        core::mem::align_of::<N>(),
    )) as usize
}

/// What a heap object may be made of.
///
/// **No padding.** Every byte of an object reaches the region (the Mirror flavor copies the
/// object to its persistent twin; the others build it in the region itself), and a padding
/// byte of a Rust value is uninitialized: it would put whatever the stack held (old data,
/// addresses) in the file. So an object type has no padding: where the layout would leave a
/// gap, the type names it as a field (the node types use the flavor's [`Flavor::Pad`], zero
/// bytes that widen an 8-byte field to a pair) and initializes it. [`FIELD_BYTES`] states the
/// sum of the field sizes; [`Heap::alloc`] refuses, at compile time, a type whose size differs:
///
/// ```compile_fail
/// use mirror_atomic::{flavor::Mirror, Heap, Object, PAtomic, PConst};
/// #[repr(C)]
/// struct Gap { next: PAtomic<u64>, key: PConst<u64> } // 24 bytes of fields in 32
/// // SAFETY: (wrongly) claims the fields fill the type.
/// unsafe impl Object for Gap {
///     const FIELD_BYTES: usize = 16 + 8;
/// }
/// let heap = Heap::<Mirror, _>::anonymous(1 << 20).unwrap();
/// let _ = heap.alloc(Gap { next: PAtomic::new(0), key: PConst::new(1) }); // does not build
/// ```
///
/// [`FIELD_BYTES`]: Object::FIELD_BYTES
///
/// # Safety
///
/// Implement only for types made of [`Pod`](pmem::Pod) values, flavor atomics,
/// [`PConst`](crate::PConst)s and [`PPtr`]s (arrays and `repr(C)` structs of them): every bit
/// pattern must be a valid value (recovery reads objects from a file that may be corrupt), the
/// type must not need `Drop` (heap objects are never dropped), it must not contain Rust
/// pointers or references (the region is mapped elsewhere after a restart), and no byte of it
/// may be padding ([`FIELD_BYTES`](Object::FIELD_BYTES) is the sum of the sizes of its fields,
/// each of them padding-free too).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Flavor, Object, PConst, PPtr};
/// use core::mem::size_of;
/// #[repr(C)]
/// struct Node<F: Flavor> {
///     key: PConst<u64>,
///     _pad: F::Pad, // 8 zero bytes in Mirror (the pair below is 16-aligned), none otherwise
///     next: F::Atomic<PPtr<Node<F>>>,
/// }
/// // SAFETY: a `PConst<u64>`, the flavor's pad and a flavor atomic of a `PPtr`: any bits are
/// // valid, no drop glue, no pointers, and the fields fill the type.
/// unsafe impl<F: Flavor> Object for Node<F> {
///     const FIELD_BYTES: usize = size_of::<PConst<u64>>()
///         + size_of::<F::Pad>()
///         + size_of::<F::Atomic<PPtr<Node<F>>>>();
/// }
/// ```
pub unsafe trait Object: Sized + Send + Sync + 'static {
    /// The sum of the sizes of the type's fields (for an array, of its elements): equal to
    /// `size_of::<Self>()` exactly when the type has no padding, which [`Heap::alloc`] checks
    /// at compile time.
    const FIELD_BYTES: usize;
}

/// Whether `N` has no padding (its fields fill it): usable in constants, so a node type's
/// module can check each flavor at compile time.
pub(crate) const fn padding_free<N: Object>() -> bool {
    core::mem::size_of::<N>() == N::FIELD_BYTES
}

/// Compile-time check that `N` has no padding, evaluated by [`Heap::alloc`] for every type it
/// allocates (a build error, not a run-time one).
struct PaddingFree<N>(PhantomData<N>);

impl<N: Object> PaddingFree<N> {
    const OK: () = assert!(
        padding_free::<N>(),
        "a heap object type has padding (its size is not the sum of its field sizes): add an \
         explicit padding field (see `Object`)"
    );
}

/// Compile-time check that a tail of `T`s can follow an `N` ([`Heap::alloc_with_tail`]):
/// `size_of::<N>()` is a multiple of `align_of::<T>()`.
struct TailAligned<N, T>(PhantomData<(N, T)>);

impl<N, T> TailAligned<N, T> {
    const OK: () = assert!(
        size_of::<N>().is_multiple_of(core::mem::align_of::<T>()),
        "an object's tail would be misaligned after its head"
    );
}

/// Checks at compile time that each listed type, written with `F` for the flavor, has no
/// padding in every flavor of this crate.
macro_rules! assert_padding_free {
    ($($t:ty),* $(,)?) => {
        $crate::heap::assert_padding_free!(@in Volatile; $($t),*);
        $crate::heap::assert_padding_free!(@in Mirror; $($t),*);
        $crate::heap::assert_padding_free!(@in Izraelevitz; $($t),*);
    };
    (@in $flavor:ident; $($t:ty),*) => {
        const _: () = {
            #[allow(dead_code)]
            type F = $crate::flavor::$flavor;
            $(assert!(
                $crate::heap::padding_free::<$t>(),
                concat!("heap object type with padding: ", stringify!($t))
            );)*
        };
    };
}
pub(crate) use assert_padding_free;

// SAFETY: a 16-byte atomic pair of plain words (`T` is only a `PhantomData<fn() -> T>`; values
// are read as `T` only by methods that require `T: Pod`): any bits are a value; no drop glue, no
// pointers; no padding (one `u128`, every byte written: the value's bits zero-extended to 8
// bytes and the sequence word). Not bounded by `T: Pod`, so that `Flavor::Atomic<T>: Object`
// needs no `Pod` proof of a node type still being defined (a struct ending in
// `F::Atomic<PPtr<Self>>`).
unsafe impl<T: 'static> Object for crate::PAtomic<T> {
    const FIELD_BYTES: usize = core::mem::size_of::<u128>();
}
// SAFETY: as above, for one 8-byte atomic word.
unsafe impl<T: 'static> Object for crate::flavor::VAtomic<T> {
    const FIELD_BYTES: usize = core::mem::size_of::<u64>();
}
// SAFETY: a `Pod` value (no padding).
unsafe impl<T: pmem::Pod> Object for crate::PConst<T> {
    const FIELD_BYTES: usize = core::mem::size_of::<T>();
}
// SAFETY: an array of objects is an object; arrays have no padding between elements (the
// element size is a multiple of its alignment), so it is padding-free when the element is.
unsafe impl<T: Object, const N: usize> Object for [T; N] {
    const FIELD_BYTES: usize = N * T::FIELD_BYTES;
}
macro_rules! pod_object {
    ($($t:ty),*) => {$(
        // SAFETY: a `Pod` primitive.
        unsafe impl Object for $t {
            const FIELD_BYTES: usize = core::mem::size_of::<$t>();
        }
    )*};
}
pod_object!(u8, u16, u32, u64, i8, i16, i32, i64, usize, isize);

/// A heap object that recovery can trace: it reports every [`PPtr`] it holds.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::{Flavor, Mirror}, Object, PAtomic, PPtr, Trace, Tracer};
/// #[repr(C)]
/// struct Cell { next: PAtomic<PPtr<Cell>>, value: PAtomic<u64> }
/// // SAFETY: made of persistent atomics only, which fill it.
/// unsafe impl Object for Cell {
///     const FIELD_BYTES: usize = 2 * core::mem::size_of::<PAtomic<u64>>();
/// }
/// impl Trace for Cell {
///     fn trace(&self, t: &mut Tracer<'_>) {
///         t.visit(Mirror::peek(&self.next));
///     }
/// }
/// ```
pub trait Trace: Object {
    /// Calls [`Tracer::visit`] on every pointer this object holds (read with
    /// [`Flavor::peek`]).
    fn trace(&self, tracer: &mut Tracer<'_>);
}

/// Owns the volatile arena of a Mirror heap (zeroed, 4 KiB aligned).
///
/// Every byte of it is initialized at all times (so that no copy to the region, whatever its
/// length, moves an uninitialized byte): zeroed at creation, then written only by
/// [`Heap::alloc`]'s typed writes of padding-free objects, by atomics, and by recovery's copy
/// of the region (the file's bytes).
struct Arena {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Arena {
    fn new(len: usize) -> Result<Self, HeapError> {
        let out_of_memory = || HeapError::OutOfMemory { bytes: len };
        let layout = Layout::from_size_align(len, 4096).map_err(|_| out_of_memory())?;
        // SAFETY: `layout` has a non-zero size (a region is at least MIN_REGION_SIZE bytes).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(out_of_memory)?;
        Ok(Self { ptr, layout })
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_zeroed` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// The memory of a heap: the region (persistent replica), the primary memory objects are
/// read and written in (the volatile arena for Mirror, the region itself otherwise), and the
/// persistence instructions. Flavor atomics take it to find an object's twin.
pub struct Space<P: Persist> {
    region: Region<P>,
    primary: NonNull<u8>,
    len: usize,
    arena: Option<Arena>,
}

// SAFETY:
// - `primary` points into memory owned by `region` or `arena`, which live as long as `self`;
// - that memory is only accessed through atomics, or through `&` references to objects that
//   are immutable after publication, or by the publishing thread before publication.
unsafe impl<P: Persist> Send for Space<P> {}
// SAFETY: as for `Send`; every method takes `&self` and is safe to call concurrently.
unsafe impl<P: Persist> Sync for Space<P> {}

impl<P: Persist> Space<P> {
    fn new(region: Region<P>, mirrored: bool) -> Result<Self, HeapError> {
        // Every flavor: `PAtomic::load_in` relies on this having succeeded for any `Space`.
        crate::sync::require_native_pairs()
            .map_err(|instruction| HeapError::Unsupported { instruction })?;
        let len = region.len() as usize;
        let (primary, arena) = if mirrored {
            let arena = Arena::new(len)?;
            (arena.ptr, Some(arena))
        } else {
            (region.base(), None)
        };
        Ok(Self {
            region,
            primary,
            len,
            arena,
        })
    }

    /// The persistent region (crate-internal: its safe `set_root_slot` and chunk allocator
    /// would let safe code rewrite the heap's durable metadata).
    pub(crate) fn region(&self) -> &Region<P> {
        &self.region
    }

    /// The persistence instructions of the region.
    pub fn persist(&self) -> &P {
        self.region.persist()
    }

    /// Whether objects have a volatile replica (the Mirror flavor).
    pub fn is_mirrored(&self) -> bool {
        self.arena.is_some()
    }

    /// The space as one traversal reads it (see [`Base`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, Heap};
    /// let heap = Heap::<Volatile, _>::anonymous(1 << 20)?;
    /// assert!(core::ptr::eq(heap.space().base().space(), heap.space()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn base(&self) -> Base<'_, P> {
        Base {
            space: self,
            primary: self.primary,
            loads: LowLoads::now(),
        }
    }

    /// Address of `offset` in the primary memory.
    #[inline(always)]
    pub(crate) fn primary_at(&self, offset: u64) -> *mut u8 {
        self.primary.as_ptr().wrapping_add(offset as usize)
    }

    /// Address of `offset` in the region.
    #[inline(always)]
    fn region_at(&self, offset: u64) -> *mut u8 {
        self.region.base().as_ptr().wrapping_add(offset as usize)
    }

    /// The persistent twin of a volatile pair (paper §4.3.1: same offset, other base).
    ///
    /// # Panics
    ///
    /// If `pair` is not inside this space's volatile arena.
    #[inline(always)]
    pub(crate) fn twin_pair(&self, pair: &AtomicPair) -> &AtomicPair {
        let off = (pair as *const AtomicPair as usize).wrapping_sub(self.primary.as_ptr() as usize);
        assert!(
            self.arena.is_some() && off <= self.len - core::mem::size_of::<AtomicPair>(),
            "PAtomic used with a Space whose volatile arena does not contain it"
        );
        // SAFETY:
        // - `off + 16 <= len` (checked above) and the region has `len` bytes, so the twin is
        //   inside the region; it is 16-aligned because `pair` is and both bases are 4 KiB
        //   aligned (arena by its layout, region by mmap);
        // - the twin is only accessed as an `AtomicPair` once its object is published (before,
        //   only by the publishing thread's copy), so the reference aliases no plain access.
        unsafe { &*self.region_at(off as u64).cast::<AtomicPair>() }
    }

    /// Copies `len` bytes at `offset` from the volatile arena to the region (no-op when not
    /// mirrored).
    ///
    /// # Safety
    ///
    /// `offset..offset + len` is an object of this heap that no other thread can reach yet.
    pub(crate) unsafe fn copy_to_twin(&self, offset: u64, len: usize) {
        if self.arena.is_some() {
            // SAFETY:
            // - both ranges are inside their `len`-byte memories (the object is in the heap);
            // - arena and region are distinct allocations, so they do not overlap;
            // - no other thread accesses the object (caller's contract), apart from the pmem
            //   simulator's 8-byte reads of region memory, its documented assumption.
            unsafe {
                core::ptr::copy_nonoverlapping(self.primary_at(offset), self.region_at(offset), len)
            };
        }
    }

    /// Writes back the region copy of `offset..offset + len` (no fence).
    ///
    /// # Safety
    ///
    /// `offset..offset + len` is inside the region.
    pub(crate) unsafe fn flush_twin(&self, offset: u64, len: usize) {
        // SAFETY: in the mapped region (caller's contract).
        unsafe { self.persist().flush_bytes(self.region_at(offset), len) };
    }

    /// Writes back the primary copy of `offset..offset + len` (the region itself when not
    /// mirrored; no fence).
    ///
    /// # Safety
    ///
    /// `offset..offset + len` is inside the heap.
    pub(crate) unsafe fn flush_primary(&self, offset: u64, len: usize) {
        // SAFETY: in the mapped primary memory (caller's contract).
        unsafe { self.persist().flush_bytes(self.primary_at(offset), len) };
    }

    /// `pfence`: orders this thread's earlier write-backs before its later ones.
    pub fn fence(&self) {
        self.persist().fence();
    }

    /// `psync`: waits until this thread's earlier write-backs are durable.
    pub fn sync(&self) {
        self.persist().sync();
    }

    /// Writes a chunk header into the region and makes it durable before the chunk is used.
    pub(crate) fn write_chunk_header(&self, chunk: u64, block: u64) {
        // SAFETY:
        // - `chunk` was just claimed from the region (in bounds, 64-aligned), nobody else uses
        //   it; the header words are 8-aligned and only accessed atomically or by recovery;
        // - AtomicWord has the size and alignment of u64.
        let words = unsafe { &*self.region_at(chunk).cast::<[AtomicWord; 2]>() };
        // Relaxed: ordered before any use of the chunk by the psync below and by the publishing
        // CAS of the first object allocated in it.
        words[1].store(block, Ordering::Relaxed);
        words[0].store(CHUNK_TAG, Ordering::Relaxed);
        self.persist().flush_word(&words[0]);
        self.persist().flush_word(&words[1]);
        self.persist().sync(); // chunk-header-sync
    }

    /// Reads the header `{tag, block}` of the chunk at `chunk` in the region.
    pub(crate) fn read_chunk_header(&self, chunk: u64) -> (u64, u64) {
        // SAFETY: `chunk + 16 <= len` (recovery walks chunks below the high-water mark, checked
        // against the region size by pmem; `Heap::class_at` passes the chunk of a block of
        // this heap); 8-aligned words read atomically.
        let words = unsafe { &*self.region_at(chunk).cast::<[AtomicWord; 2]>() };
        // Relaxed: in recovery, single-threaded on the freshly opened region; in `class_at`
        // (any thread, on retire or free), the header was written by `write_chunk_header`
        // under the claiming shard's lock before any block of the chunk was handed out, and
        // the block reached this thread through that lock or through the load of the pointer
        // that published it, which orders the header's stores before this load.
        (
            words[0].load(Ordering::Relaxed),
            words[1].load(Ordering::Relaxed),
        )
    }

    /// Region length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies the whole region into the volatile arena (recovery, paper §4.3.3).
    fn mirror_region(&self) {
        if self.arena.is_some() {
            // SAFETY: both memories are `len` bytes, distinct; recovery is single-threaded.
            unsafe {
                core::ptr::copy_nonoverlapping(self.region_at(0), self.primary_at(0), self.len)
            };
        }
    }
}

/// A [`Space`] as one traversal reads it: the space, the start of its primary memory and how
/// its pairs are loaded, each read once, by [`Space::base`].
///
/// Why: an atomic load (and each of Mirror's `asm!` loads) keeps the compiler from assuming
/// that a `Space` behind a reference is unchanged from one load to the next, so a search that
/// finds objects through the `Space` ([`Heap::get`]) reads the start address (and Mirror's
/// CPU check) from memory again at every node. A `Base` is a `Copy` value that the compiler
/// keeps in registers for the whole search ([`get`](Self::get),
/// [`Flavor::load_from`]).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::{Flavor, Mirror}, Heap, PAtomic};
/// let heap = Heap::<Mirror, _>::anonymous(1 << 20)?;
/// let p = heap.alloc(PAtomic::new(5u64))?;
/// let base = heap.space().base();
/// // SAFETY: allocated above, never freed.
/// let a = unsafe { base.get(p) };
/// assert_eq!(Mirror::load_from(a, base), 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Base<'s, P: Persist> {
    space: &'s Space<P>,
    primary: NonNull<u8>,
    loads: LowLoads,
}

impl<P: Persist> Clone for Base<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P: Persist> Copy for Base<'_, P> {}

impl<'s, P: Persist> Base<'s, P> {
    /// The space this was read from.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, Heap};
    /// let heap = Heap::<Mirror, _>::anonymous(1 << 20)?;
    /// assert!(heap.space().base().space().is_mirrored());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn space(self) -> &'s Space<P> {
        self.space
    }

    /// [`Heap::get`] through this base: the object `p` points to.
    ///
    /// # Safety
    ///
    /// As [`Heap::get`]: `p` is a live, initialized object of the heap this space belongs
    /// to, and it stays so for as long as the reference is used (a guard of that heap pinned
    /// before `p` was read from a reachable object, or no concurrent retirement).
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, Heap, PConst};
    /// let heap = Heap::<Volatile, _>::anonymous(1 << 20)?;
    /// let p = heap.alloc(PConst::new(7u64))?;
    /// // SAFETY: allocated above, never freed.
    /// assert_eq!(unsafe { heap.space().base().get(p) }.get(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub unsafe fn get<N: Object>(self, p: PPtr<N>) -> &'s N {
        debug_assert!(
            !p.is_null() && p.offset() as usize + core::mem::size_of::<N>() <= self.space.len()
        );
        let at = self.primary.as_ptr().wrapping_add(p.offset() as usize);
        // SAFETY: a live, initialized object of this heap (caller's contract) at `offset` in
        // the primary memory, which `self.space` owns for `'s`; shared access only (its
        // mutable fields are atomics).
        unsafe { &*at.cast::<N>() }
    }

    /// Start of the primary memory.
    #[inline(always)]
    pub(crate) fn primary(self) -> *const u8 {
        self.primary.as_ptr()
    }

    /// How pairs are loaded (read when this was made).
    #[inline(always)]
    pub(crate) fn loads(self) -> LowLoads {
        self.loads
    }
}

impl<P: Persist> core::fmt::Debug for Base<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Base")
            .field("primary", &self.primary)
            .field("loads", &self.loads)
            .finish_non_exhaustive()
    }
}

impl<P: Persist> core::fmt::Debug for Space<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Space")
            .field("len", &self.len)
            .field("mirrored", &self.arena.is_some())
            .finish()
    }
}

/// A heap of objects for flavor `F` over a region with persistence `P`.
///
/// Objects are allocated with [`alloc`](Self::alloc) (built in the primary memory, published
/// to the region as the flavor requires), reached through [`PPtr`]s and
/// [`get`](Self::get), retired with [`retire`](Self::retire) once unlinked (reused after an
/// epoch grace period, and only after the unlinking is durable), and found again after a
/// restart from typed roots ([`set_root`](Self::set_root), [`recover`](Self::recover)).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, Heap, PAtomic};
/// let mut heap = Heap::<Mirror, _>::anonymous(1 << 20)?;
/// let counter = heap.alloc(PAtomic::new(0u64))?;
/// heap.set_root(0, counter)?;
/// // SAFETY: allocated above and never retired.
/// unsafe { heap.get(counter) }.fetch_add(1, heap.space());
/// assert_eq!(unsafe { heap.get(heap.root::<PAtomic<u64>>(0).unwrap()) }.load(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Heap<F: Flavor, P: Persist> {
    space: Space<P>,
    alloc: Arc<Alloc>,
    /// This heap's own reclamation domain: guards of other heaps (or of any other
    /// `crossbeam-epoch` user) never hold back the reuse of its blocks.
    domain: Domain,
    _f: PhantomData<F>,
}

impl<F: Flavor, P: Persist> core::fmt::Debug for Heap<F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Heap")
            .field("flavor", &F::NAME)
            .field("space", &self.space)
            .finish()
    }
}

impl<F: Flavor> Heap<F, NoPersist> {
    /// A heap over an anonymous (volatile) mapping of `size` bytes: for the [`Volatile`]
    /// flavor, tests and examples.
    ///
    /// [`Volatile`]: crate::flavor::Volatile
    ///
    /// # Errors
    ///
    /// [`HeapError::Region`] for a bad size (see `pmem::Region::anonymous`).
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Region::anonymous(0, size)?)
    }
}

impl<F: Flavor> Heap<F, pmem::Hardware> {
    /// Creates a file-backed heap (a new `pmem` region of `size` bytes with layout id
    /// `layout`).
    ///
    /// # Errors
    ///
    /// [`HeapError::Region`] when the file exists or cannot be created, or (wrapping
    /// `pmem::RegionError::Locked`) when another process holds it. The heap owns the file until
    /// it is dropped (see `pmem::Region::create`).
    pub fn create(path: impl AsRef<Path>, layout: u64, size: u64) -> Result<Self, HeapError> {
        Self::new(Region::create(path, layout, size)?)
    }

    /// Opens a file-backed heap and recovers it (see [`recover`](Self::recover)).
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of `recover`, and [`HeapError::Region`] when the file is missing,
    /// truncated, corrupt or of another layout, or already owned: by a live region of this
    /// process (`pmem::RegionError::AlreadyOpen`) or by another process
    /// (`pmem::RegionError::Locked`). The heap owns the file until it is dropped.
    pub fn open(
        path: impl AsRef<Path>,
        layout: u64,
        roots: impl FnOnce(&mut Tracer<'_>) -> Result<(), HeapError>,
    ) -> Result<Self, HeapError> {
        Self::recover(Region::open(path, layout)?, roots)
    }
}

impl<F: Flavor, P: Persist> Heap<F, P> {
    /// A heap over a fresh region (nothing allocated in it yet).
    ///
    /// # Errors
    ///
    /// [`HeapError::NotEmpty`] if the region already holds allocations;
    /// [`HeapError::OutOfMemory`] if the volatile arena cannot be allocated;
    /// [`HeapError::Unsupported`] on an x86_64 CPU without `cmpxchg16b` (every flavor: the
    /// heap's `Space` is what lets Mirror loads skip a per-load CPU check).
    pub fn new(region: Region<P>) -> Result<Self, HeapError> {
        if region.high_water_mark() != region.user_offset() {
            return Err(HeapError::NotEmpty);
        }
        let space = Space::new(region, F::MIRRORED)?;
        Ok(Self {
            space,
            alloc: Arc::new(Alloc::new()),
            domain: Domain::new(),
            _f: PhantomData,
        })
    }

    /// The heap's memory (pass it to flavor atomics).
    #[inline(always)]
    pub fn space(&self) -> &Space<P> {
        &self.space
    }

    /// The persistent region (crate-internal, as [`Space::region`]).
    pub(crate) fn region(&self) -> &Region<P> {
        self.space.region()
    }

    /// Allocates `value` in the heap and makes it durable as the flavor requires, so that a
    /// CAS may publish the returned pointer (paper §4.3.2).
    ///
    /// # Errors
    ///
    /// [`HeapAllocError::TooLarge`] above [`MAX_OBJECT`] bytes or 64-byte alignment;
    /// [`HeapAllocError::Exhausted`] when the region is full.
    pub fn alloc<N: Object>(&self, value: N) -> Result<PPtr<N>, HeapAllocError> {
        self.alloc_with_tail::<N, u8>(value, 0, |_| 0)
    }

    /// [`alloc`](Self::alloc) of `head` followed in the same block by `tail_len` values of
    /// `T` (`tail(i)` the `i`-th, at `size_of::<N>() + i * size_of::<T>()`): for an object
    /// whose length varies (a skip-list node: its header and level 0, then the levels above).
    /// The block is of the smallest class that holds both, and only those bytes are published,
    /// so a short node costs the blocks and write-backs of the bytes it uses (issue 23).
    pub(crate) fn alloc_with_tail<N: Object, T: Object>(
        &self,
        head: N,
        tail_len: usize,
        mut tail: impl FnMut(usize) -> T,
    ) -> Result<PPtr<N>, HeapAllocError> {
        let () = PaddingFree::<N>::OK;
        let () = PaddingFree::<T>::OK;
        let () = TailAligned::<N, T>::OK;
        let size = tail_len
            .checked_mul(size_of::<T>())
            .and_then(|t| t.checked_add(size_of::<N>()))
            .unwrap_or(usize::MAX);
        let align = core::mem::align_of::<N>().max(core::mem::align_of::<T>());
        if size > MAX_OBJECT || align > 64 {
            return Err(HeapAllocError::TooLarge { requested: size });
        }
        let off = self.alloc.alloc(class_of(size, align), &self.space)?;
        let at = self.space.primary_at(off);
        // SAFETY:
        // - `off` is a free block of at least `size` bytes, aligned (`block_align`) to at least
        //   `align`, inside the primary memory; no other thread can reach it (it is not yet
        //   published and was reclaimed only after a grace period);
        // - `N` has no padding (checked above): every byte this writes is initialized.
        unsafe { at.cast::<N>().write(head) };
        for i in 0..tail_len {
            // SAFETY: as above, for the `i`-th `T` after `head`: inside the block (`size`
            // covers it), aligned (`size_of::<N>()` is a multiple of `align_of::<T>()`, checked
            // by `TailAligned`, and the block is aligned to `align`), and `T` has no padding.
            unsafe {
                at.wrapping_add(size_of::<N>() + i * size_of::<T>())
                    .cast::<T>()
                    .write(tail(i))
            };
        }
        // (The rest of the block is not written, copied or written back here: it holds bytes
        // of earlier objects, or zeros, and nothing reads it.)
        // SAFETY: the object at `off` is this heap's and unpublished; `size` bytes of it are
        // initialized.
        unsafe { F::publish(&self.space, off, size) };
        Ok(PPtr::from_offset(off))
    }

    /// The size class of the block at `off`, read from its chunk's header (durable before any
    /// block of the chunk was used): a block goes back to the class it was allocated from,
    /// whatever the type it held (a skip-list node's block follows its height, and a file of
    /// format 2 holds every node in a 224-byte block).
    fn class_at(&self, off: u64) -> usize {
        let user = self.region().user_offset().0;
        let chunk = user + (off - user) / CHUNK * CHUNK;
        let (_, block) = self.space.read_chunk_header(chunk);
        class_of_block(block).expect("invariant: a used chunk's header names a class")
    }

    /// The bytes of the block `p` lives in (its chunk's class).
    ///
    /// # Safety
    ///
    /// `p` is an object of this heap (allocated, or found by recovery), not null.
    #[cfg(test)]
    pub(crate) unsafe fn block_len<N>(&self, p: PPtr<N>) -> u64 {
        crate::alloc::block_of(self.class_at(p.offset()))
    }

    /// Frees an object that was never published (no other thread can have seen it).
    ///
    /// # Safety
    ///
    /// `p` was returned by [`alloc`](Self::alloc) of this heap, was never stored where another
    /// thread or recovery can reach it, and is not used again.
    pub unsafe fn free_unpublished<N: Object>(&self, p: PPtr<N>) {
        self.alloc.free(p.offset(), self.class_at(p.offset())); // free-class-of-block
    }

    /// The object `p` points to (mark bit ignored).
    ///
    /// # Safety
    ///
    /// - `p` was returned by [`alloc`](Self::alloc) of this heap (or found by recovery) and is
    ///   not null;
    /// - it has not been reclaimed: it is not retired, or it was read under a [`Guard`] of this
    ///   heap ([`pin`](Self::pin)) pinned before it was unlinked, and that guard is still alive
    ///   while the reference is used.
    #[inline(always)]
    pub unsafe fn get<N: Object>(&self, p: PPtr<N>) -> &N {
        debug_assert!(
            !p.is_null() && p.offset() as usize + core::mem::size_of::<N>() <= self.space.len()
        );
        // SAFETY: a live, initialized object of this heap (caller's contract); shared access
        // only (its mutable fields are atomics).
        unsafe { &*self.space.primary_at(p.offset()).cast::<N>() }
    }

    /// Pins the current thread in this heap's own reclamation domain: no object of this heap
    /// retired after this call is reused before the guard is dropped. Only a guard of this
    /// heap protects its objects ([`get`](Self::get), [`retire`](Self::retire)); guards of
    /// other heaps neither protect this one's objects nor delay their reuse.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Volatile, Heap};
    /// let (a, b) = (Heap::<Volatile, _>::anonymous(1 << 20)?, Heap::<Volatile, _>::anonymous(1 << 20)?);
    /// let guard = a.pin();
    /// assert!(guard.belongs_to(a.domain()));
    /// assert!(!guard.belongs_to(b.domain()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn pin(&self) -> Guard {
        self.domain.pin()
    }

    /// This heap's reclamation domain (what [`pin`](Self::pin) pins; to check a guard's
    /// [`belongs_to`](Guard::belongs_to)).
    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    /// Retires an unlinked object: its block is reused once every guard of this heap pinned
    /// now has been dropped. A `psync` first makes the unlinking durable, so a block is never
    /// reused while the durable structure could still point to it (issue item 3). Deferred
    /// frees own the allocator (an `Arc`), so they stay valid if the heap is dropped first.
    ///
    /// # Panics
    ///
    /// If `guard` was not pinned by this heap's [`pin`](Self::pin) (it would not hold back
    /// this heap's reuse, so a reader it "protects" could see the block reused).
    ///
    /// # Safety
    ///
    /// `p` is an object of this heap that no new reader can reach (unlinked by a CAS of this
    /// thread that completed), retired exactly once.
    pub unsafe fn retire<N: Object>(&self, p: PPtr<N>, guard: &Guard) {
        assert!(
            guard.belongs_to(&self.domain),
            "Heap::retire with a guard of another heap (use this heap's `pin`)"
        );
        self.space.sync(); // retire-psync
                           // SAFETY: the caller's contract, and the `psync` above follows the unlinking CAS.
        unsafe { self.retire_synced(p, guard) };
    }

    /// [`retire`](Self::retire) without its `psync`: for a batch of objects unlinked by one
    /// CAS, which issues one [`Space::sync`] for all of them (a BST cleanup unlinks up to a
    /// chain of nodes and leaves at once).
    ///
    /// # Panics
    ///
    /// As [`retire`](Self::retire).
    ///
    /// # Safety
    ///
    /// As [`retire`](Self::retire), and this thread called [`Space::sync`] after the CAS
    /// that unlinked `p` completed.
    pub(crate) unsafe fn retire_synced<N: Object>(&self, p: PPtr<N>, guard: &Guard) {
        assert!(
            guard.belongs_to(&self.domain),
            "Heap::retire with a guard of another heap (use this heap's `pin`)"
        );
        let alloc = Arc::clone(&self.alloc);
        let off = p.offset();
        let class = self.class_at(off); // retire-class-of-block
        guard.defer(move || alloc.free(off, class)); // retire-defer
    }

    /// Records `p` in persistent root slot `slot` (`pwb` + `psync` of the slot).
    ///
    /// It takes `&mut self`: only the owner of a heap names its roots. A structure owns its
    /// heap and lends it out only as `&Heap`, so safe code cannot point the structure's durable
    /// root elsewhere:
    ///
    /// ```compile_fail
    /// use mirror_atomic::{flavor::Mirror, List, PPtr, LIST_ROOT_SLOT};
    /// let list = List::<Mirror, _>::anonymous(1 << 20)?;
    /// list.heap().set_root(LIST_ROOT_SLOT, PPtr::<u64>::null())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Nor is the region reachable, whose `set_root_slot` and chunk allocator would do the
    /// same:
    ///
    /// ```compile_fail
    /// use mirror_atomic::{flavor::Mirror, List};
    /// let list = List::<Mirror, _>::anonymous(1 << 20)?;
    /// list.heap().space().region().set_root_slot(0, mirror_atomic::pmem::Offset::NULL)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`HeapError::MissingRoot`] if `slot >= pmem::ROOT_SLOTS`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::Mirror, Heap, PAtomic};
    /// let mut heap = Heap::<Mirror, _>::anonymous(1 << 20)?;
    /// let p = heap.alloc(PAtomic::new(5u64))?;
    /// heap.set_root(1, p)?;
    /// assert_eq!(heap.root::<PAtomic<u64>>(1), Some(p));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_root<N: Object>(&mut self, slot: usize, p: PPtr<N>) -> Result<(), HeapError> {
        self.region()
            .set_root_slot(slot, Offset(p.offset()))
            .map_err(|_| HeapError::MissingRoot { slot })
    }

    /// The object in root slot `slot`, if set. The type is the caller's claim; recovery checked
    /// that the block can hold it when the heap was recovered with a tracer that visited it.
    pub fn root<N: Object>(&self, slot: usize) -> Option<PPtr<N>> {
        match self.region().root_slot(slot) {
            Ok(Some(off)) => Some(PPtr::from_offset(off.0)),
            _ => None,
        }
    }

    /// Recovers a heap from a region written by this crate (paper §4.3.3): validates the chunk
    /// headers, lets `roots` trace every reachable object from the root slots, copies the
    /// persistent replica into a new volatile replica (Mirror) and makes every unreached block
    /// free.
    ///
    /// # Errors
    ///
    /// [`HeapError::BadChunkArea`], [`HeapError::BadChunk`], [`HeapError::BadPointer`] for a
    /// corrupt region; [`HeapError::OldFormat`] for a region of format 1;
    /// [`HeapError::Unsupported`] as for [`new`](Self::new); whatever `roots` returns
    /// (typically [`HeapError::MissingRoot`]).
    pub fn recover(
        region: Region<P>,
        roots: impl FnOnce(&mut Tracer<'_>) -> Result<(), HeapError>,
    ) -> Result<Self, HeapError> {
        check_kind(&region, "mirror-atomic heap", None)?;
        let space = Space::new(region, F::MIRRORED)?;
        let (chunks, marked) = trace_region(&space, roots)?;
        space.mirror_region();
        let alloc = Alloc::rebuild(space.region().user_offset().0, &chunks, |off| {
            marked.contains(&off)
        });
        Ok(Self {
            space,
            alloc: Arc::new(alloc),
            domain: Domain::new(),
            _f: PhantomData,
        })
    }

    /// Traces the persistent replica again from `roots` and rebuilds the free space from what
    /// is reachable now: for a structure whose recovery repairs itself after
    /// [`recover`](Self::recover) (the skip list unlinks half-removed nodes and clears tower
    /// levels a crash left unlinked), so that what the repair dropped is free again.
    /// Exclusive access (`&mut`) means no operation and no allocation runs meanwhile.
    pub(crate) fn retrace(
        &mut self,
        roots: impl FnOnce(&mut Tracer<'_>) -> Result<(), HeapError>,
    ) -> Result<(), HeapError> {
        let (chunks, marked) = trace_region(&self.space, roots)?;
        let alloc = Alloc::rebuild(self.space.region().user_offset().0, &chunks, |off| {
            marked.contains(&off)
        });
        self.alloc = Arc::new(alloc);
        Ok(())
    }

    /// Blocks currently allocated (not free), for leak checks and reports.
    pub fn live_blocks(&self) -> usize {
        self.alloc.live()
    }
}

/// Refuses a region that [`pmem::kinds`] recognises as another kind of file than `expected`:
/// anything but a mirror-atomic heap, or (given the structure's root `slot`) a heap whose
/// `slot` is empty while it holds another structure.
///
/// # Errors
///
/// [`HeapError::WrongKind`] naming what the region holds.
pub(crate) fn check_kind<P: Persist>(
    region: &Region<P>,
    expected: &'static str,
    slot: Option<usize>,
) -> Result<(), HeapError> {
    let Some(kind) = region.kind() else {
        return Ok(());
    };
    let (is_heap, is_structure) = match kind.signature {
        pmem::kinds::Signature::HeapTag { slot, .. } => (true, slot.is_some()),
        pmem::kinds::Signature::RootTag { .. } => (false, false),
    };
    // A heap with no structure root (a crash inside a structure's `new`) is left to the
    // structure's recovery, which reports the missing root.
    let slot_empty = slot.is_some_and(|slot| matches!(region.root_slot(slot), Ok(None)));
    if !is_heap || (is_structure && slot_empty && kind.name != expected) {
        return Err(HeapError::WrongKind {
            found: kind.name,
            expected,
        });
    }
    Ok(())
}

/// Validates the chunk area and every chunk header of `space`'s region, then traces from
/// `roots`: the block size of every chunk (0 for a blank one) and the offsets reached.
fn trace_region<P: Persist>(
    space: &Space<P>,
    roots: impl FnOnce(&mut Tracer<'_>) -> Result<(), HeapError>,
) -> Result<(Vec<u64>, std::collections::HashSet<u64>), HeapError> {
    let user = space.region().user_offset().0;
    let hwm = space.region().high_water_mark().0;
    if hwm < user || !(hwm - user).is_multiple_of(CHUNK) || hwm > space.len() as u64 {
        return Err(HeapError::BadChunkArea { high_water: hwm });
    }
    let mut chunks = Vec::with_capacity(((hwm - user) / CHUNK) as usize);
    let mut c = user;
    while c < hwm {
        let (tag, block) = space.read_chunk_header(c);
        match (tag, block) {
            // Blank, or a header torn by a crash while it was being written: the header is
            // synced before any block of its chunk is used, so such a chunk holds nothing
            // reachable (and the tracer rejects pointers into it).
            (0, _) | (CHUNK_TAG, 0) => chunks.push(0),
            (CHUNK_TAG, b) if class_of_block(b).is_some() => chunks.push(b),
            (OLD_CHUNK_TAG, _) => return Err(HeapError::OldFormat),
            _ => return Err(HeapError::BadChunk { chunk: c }),
        }
        c += CHUNK;
    }
    let mut tracer = Tracer {
        base: space.region().base().as_ptr(),
        user,
        chunks: &chunks,
        roots: (0..ROOT_SLOTS)
            .map(|i| space.region().root_slot(i).ok().flatten().map(|o| o.0))
            .collect(),
        marked: std::collections::HashMap::new(),
        stack: Vec::new(),
        error: None,
    };
    roots(&mut tracer)?;
    tracer.drain();
    if let Some(e) = tracer.error {
        return Err(e);
    }
    let marked = tracer.marked.into_keys().collect();
    Ok((chunks, marked))
}

type TraceFn = fn(&mut Tracer<'_>, *const u8);

/// Recovery's view of the persistent replica: visits objects from the roots.
pub struct Tracer<'a> {
    base: *const u8,
    user: u64,
    chunks: &'a [u64],
    roots: Vec<Option<u64>>,
    /// Offsets reached, with the type each was reached as.
    marked: std::collections::HashMap<u64, core::any::TypeId>,
    stack: Vec<(u64, TraceFn)>,
    error: Option<HeapError>,
}

impl core::fmt::Debug for Tracer<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tracer")
            .field("chunks", &self.chunks.len())
            .field("marked", &self.marked.len())
            .finish()
    }
}

impl Tracer<'_> {
    /// Visits root slot `slot` as an `N` and returns its pointer.
    ///
    /// # Errors
    ///
    /// [`HeapError::MissingRoot`] if the slot is empty or out of range.
    pub fn root<N: Trace>(&mut self, slot: usize) -> Result<PPtr<N>, HeapError> {
        if slot >= ROOT_SLOTS {
            return Err(HeapError::MissingRoot { slot });
        }
        let off = match self.roots.get(slot) {
            Some(Some(off)) => *off,
            _ => return Err(HeapError::MissingRoot { slot }),
        };
        let p = PPtr::from_offset(off);
        self.visit(p);
        Ok(p)
    }

    /// The first word of the object in root slot `slot`, read from the persistent replica
    /// before it is traced: for a root that says its own layout (the hash set's tag).
    ///
    /// # Errors
    ///
    /// [`HeapError::MissingRoot`] if the slot is empty or out of range;
    /// [`HeapError::BadPointer`] if it does not name a block.
    pub(crate) fn root_word(&self, slot: usize) -> Result<u64, HeapError> {
        let Some(Some(off)) = self.roots.get(slot).copied() else {
            return Err(HeapError::MissingRoot { slot });
        };
        self.check(
            off,
            core::mem::size_of::<u64>(),
            core::mem::align_of::<u64>(),
        )
        .map_err(|reason| HeapError::BadPointer {
            offset: off,
            reason,
        })?;
        // SAFETY:
        // - `check` proved `off` is a block of at least 8 bytes inside the region, aligned to
        //   at least 16;
        // - recovery is single-threaded: nothing writes the region meanwhile.
        Ok(unsafe { self.base.wrapping_add(off as usize).cast::<u64>().read() })
    }

    /// Marks `p`'s block reachable and, the first time, traces the object (null is ignored).
    /// A pointer that cannot name an `N` block records [`HeapError::BadPointer`].
    pub fn visit<N: Trace>(&mut self, p: PPtr<N>) {
        if p.is_null() || self.error.is_some() {
            return;
        }
        let off = p.offset();
        match self.check(off, core::mem::size_of::<N>(), core::mem::align_of::<N>()) {
            Ok(()) => {}
            Err(reason) => {
                self.error = Some(HeapError::BadPointer {
                    offset: off,
                    reason,
                });
                return;
            }
        }
        // One block, one type: a corrupt pointer that makes a block of one type reachable as
        // another (two types of the same size class) is rejected, or an operation could later
        // retire, say, a root as a node.
        match self.marked.entry(off) {
            std::collections::hash_map::Entry::Occupied(e) => {
                if *e.get() != core::any::TypeId::of::<N>() {
                    self.error = Some(HeapError::BadPointer {
                        offset: off,
                        reason: "block reached as two different types",
                    });
                }
                return;
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(core::any::TypeId::of::<N>());
            }
        }
        self.stack.push((off, trace_at::<N>));
    }

    /// The `len` values of `T` that follow `obj` in its block (see [`Heap::alloc_with_tail`]),
    /// read from the persistent replica: for an object that says its own length (a skip-list
    /// node's height). `None` if `obj` is not a traced block of this region, or the tail
    /// does not fit in its block (a corrupt length); the latter records
    /// [`HeapError::BadPointer`], so recovery fails instead of reading past the block.
    pub(crate) fn tail<'o, N: Object, T: Object>(
        &mut self,
        obj: &'o N,
        len: usize,
    ) -> Option<&'o [T]> {
        let off = (obj as *const N as usize).wrapping_sub(self.base as usize) as u64;
        let align = core::mem::align_of::<N>().max(core::mem::align_of::<T>());
        let fits = len
            .checked_mul(size_of::<T>())
            .and_then(|t| t.checked_add(size_of::<N>()))
            .filter(|_| size_of::<N>().is_multiple_of(core::mem::align_of::<T>()));
        let Some(size) = fits else {
            self.fail(off, "object's tail past the end of its block");
            return None;
        };
        if let Err(reason) = self.check(off, size, align) {
            // A block too small for the tail is a corrupt length; anything else means `obj`
            // is not a block of this region (not reached through this tracer).
            let too_small = reason == "block too small for the type";
            self.fail(
                off,
                if too_small {
                    "object's tail past the end of its block"
                } else {
                    reason
                },
            );
            return None;
        }
        let at = self.base.wrapping_add(off as usize + size_of::<N>());
        // SAFETY:
        // - `check` proved that `size` bytes from `off` are one block inside the region,
        //   aligned to `align`, so the `len` `T`s after the `N` are in it and aligned
        //   (`size_of::<N>()` is a multiple of `align_of::<T>()`, checked above);
        // - `at` is derived from the region's base pointer (not from `obj`), so it may
        //   address the bytes after `obj`; the region stays mapped while `obj` is borrowed;
        // - `T: Object`: any bits are a valid `T`;
        // - recovery is single-threaded: nothing writes the region meanwhile.
        Some(unsafe { core::slice::from_raw_parts(at.cast::<T>(), len) })
    }

    /// Records a bad pointer at `offset` (the first error found is the one reported).
    fn fail(&mut self, offset: u64, reason: &'static str) {
        if self.error.is_none() {
            self.error = Some(HeapError::BadPointer { offset, reason });
        }
    }

    fn check(&self, off: u64, size: usize, align: usize) -> Result<(), &'static str> {
        let end = self.user + self.chunks.len() as u64 * CHUNK;
        if off < self.user || off >= end {
            return Err("outside the allocated chunks");
        }
        let chunk = (off - self.user) / CHUNK;
        let block = self.chunks[chunk as usize];
        if block == 0 {
            return Err("in a chunk never used");
        }
        let start = self.user + chunk * CHUNK + CHUNK_HEADER;
        if off < start || !(off - start).is_multiple_of(block) {
            return Err("not at a block boundary");
        }
        if off - start + block > CHUNK - CHUNK_HEADER {
            return Err("past the last block of its chunk");
        }
        if size as u64 > block {
            return Err("block too small for the type");
        }
        // A 224-byte block is 32-aligned only: a type aligned to 64 never lives in one.
        if (align as u64) > block_align(block) {
            return Err("block not aligned for the type");
        }
        Ok(())
    }

    fn drain(&mut self) {
        while let Some((off, f)) = self.stack.pop() {
            if self.error.is_some() {
                return;
            }
            f(self, self.base.wrapping_add(off as usize));
        }
    }
}

fn trace_at<N: Trace>(t: &mut Tracer<'_>, ptr: *const u8) {
    // SAFETY:
    // - `check` proved `ptr` is a block of at least `size_of::<N>()` bytes inside the region,
    //   aligned to `block_align(block)` >= align_of::<N>() (checked there too);
    // - `N: Object`: any bits are a valid `N`, so even a corrupt block is a valid value;
    // - recovery is single-threaded: nothing writes the region meanwhile.
    let node = unsafe { &*ptr.cast::<N>() };
    node.trace(t);
}
