//! Atomic *flavors*: the one type parameter that makes the same structure code volatile,
//! Mirror-persistent, or persistent by the Izraelevitz et al. transformation.
//!
//! | flavor | atomic word | where objects live | load | CAS | new object |
//! |---|---|---|---|---|---|
//! | [`Volatile`] | 8 bytes | region memory (DRAM when anonymous) | plain | plain | nothing |
//! | [`Mirror`] | 16-byte `{value, seq}` pair per replica | volatile arena + region twin | volatile pair only | Figure 4 | copy to twin, `pwb`, `pfence` |
//! | [`Izraelevitz`] | 8 bytes | region | load, `pwb`, `pfence` | CAS, `pwb`, `pfence` | `pwb`, `pfence` |
//!
//! Izraelevitz, Mendes and Scott (DISC'16) make a linearizable structure durable by following
//! every shared load and every shared store/CAS with a write-back and a fence. Here that is
//! applied to every load and CAS of a flavor atomic; immutable fields ([`PConst`]) are written
//! back with their object before it is published and are not flushed again on each read
//! (which only favours this baseline).

use crate::heap::{Base, Object, Space};
use crate::patomic::PAtomic;
use crate::persist::Durability;
use crate::sync::{AtomicWord, Ordering};
use crate::word::{from_bits, to_bits, FitsWord};
use core::fmt;
use core::marker::PhantomData;
use pmem::{Persist, Pod};

#[allow(unused_imports)] // referenced by the module docs
use crate::patomic::PConst;

/// An atomic flavor (see the [module docs](self)).
///
/// Structures are written against `F::Atomic<T>` and these functions only. The three flavors
/// of this module are the ones to use; implement the trait yourself only to build a variant of
/// one of them (the crash tests build a deliberately broken Mirror this way), with the
/// functions of [`raw`] for the persistence steps.
///
/// # Safety
///
/// The structures' unsafe code (their [`Object`] impls, every
/// [`Heap::get`](crate::Heap::get) of a pointer read from a flavor atomic, recovery) relies on
/// the following; an implementation must guarantee all of it, for every `T: Pod`:
///
/// 1. **`Atomic<T>` is a plain heap word** (the bound `Object` checks the declaration; the
///    implementor vouches for the rest): every bit pattern of its size is a valid value
///    (recovery reads objects from a file that may be corrupt, and Mirror's recovery copies the
///    region byte for byte into the volatile arena); it has no drop glue and owns nothing (heap
///    objects are never dropped); it holds no Rust pointer or reference, to the heap or outside
///    it (the region maps elsewhere after a restart); it has no padding (every byte of an object
///    is copied to the region); its state changes only through `&` (interior mutability), and
///    the functions below may run on it from several threads at once without a data race
///    (hence `Send + Sync`).
/// 2. **It is an atomic register of `T`**: [`atomic`](Self::atomic) holds `value`;
///    [`load`](Self::load), [`load_from`](Self::load_from) and
///    [`compare_exchange`](Self::compare_exchange) return only values that this atomic held (given to `atomic` or stored by a successful `compare_exchange`),
///    and a `compare_exchange` replaces the value only if it equals `current`, atomically
///    (linearizably) with respect to every other call on the same atomic. The structures retire
///    a node once, after the CAS that unlinked it, and dereference pointers they loaded: a
///    flavor that invents a value or loses an update makes them free a node twice or read a
///    reclaimed or never-allocated block.
/// 3. **It orders like Acquire/Release**: a successful `compare_exchange` is a Release (and an
///    Acquire) and `load` is an Acquire, so the writes that built an object before the CAS that
///    published it happen before the reads of a thread that loads the pointer (`load_from`
///    orders as `load`).
/// 4. **`publish` touches only its object**: it reads and writes only `offset..offset + len` of
///    this `space` (in its primary memory and, for [`MIRRORED`](Self::MIRRORED), its twin in
///    the region) and keeps no reference to it. [`peek`](Self::peek) reads only its atomic.
/// 5. **Safe functions stay sound for any argument**: `load`, `load_from` and
///    `compare_exchange` may be
///    called with an atomic that is not in `space`'s heap (a stack value, another heap); they
///    must then panic or act on the atomic alone, never write memory through `space`.
///
/// Durability is a separate, correctness promise: `publish` makes the object durable before
/// the CAS that publishes it, and a `compare_exchange` is durable before a load can observe
/// it (or is made durable by whoever observes it), as the module table says for each flavor.
/// A flavor that breaks only this loses or tears data at a crash (recovery then returns a
/// typed error or an older structure) but causes no undefined behaviour; that is the broken
/// flavor the crash tests use to show that their checker catches it.
///
/// # Examples
///
/// A variant of Mirror (here identical) implemented outside the crate:
///
/// ```
/// use mirror_atomic::flavor::{raw, Flavor, Mirror};
/// use mirror_atomic::{PAtomic, Persist, Pod, Space};
///
/// struct MyMirror;
///
/// // SAFETY: every function forwards to `Mirror`, whose atomic is `PAtomic` (items 1-3 and 5);
/// // `publish` passes its own contract on to the `raw` functions (item 4).
/// unsafe impl Flavor for MyMirror {
///     type Atomic<T: 'static> = PAtomic<T>;
///     const NAME: &'static str = "my-mirror";
///     const MIRRORED: bool = true;
///     type Pad = <Mirror as Flavor>::Pad;
///     fn atomic<T: Pod>(v: T) -> PAtomic<T> { Mirror::atomic(v) }
///     fn load<T: Pod, P: Persist>(a: &PAtomic<T>, s: &Space<P>) -> T { Mirror::load(a, s) }
///     fn compare_exchange<T: Pod, P: Persist>(
///         a: &PAtomic<T>, c: T, n: T, s: &Space<P>,
///     ) -> Result<T, T> {
///         Mirror::compare_exchange(a, c, n, s)
///     }
///     fn peek<T: Pod>(a: &PAtomic<T>) -> T { Mirror::peek(a) }
///     unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
///         // SAFETY: the caller's contract (an unpublished object of this heap) is each
///         // function's.
///         unsafe {
///             raw::copy_to_twin(space, offset, len);
///             raw::flush_twin(space, offset, len);
///         }
///         space.fence();
///     }
/// }
///
/// let list = mirror_atomic::List::<MyMirror, _>::anonymous(1 << 20)?;
/// assert!(list.insert(7)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Without `unsafe`, the same implementation does not compile: implementing the trait is a
/// promise that the compiler cannot check.
///
/// ```compile_fail
/// use mirror_atomic::flavor::{Flavor, Mirror};
/// use mirror_atomic::{PAtomic, Persist, Pod, Space};
///
/// struct MyMirror;
///
/// impl Flavor for MyMirror {
///     type Atomic<T: 'static> = PAtomic<T>;
///     const NAME: &'static str = "my-mirror";
///     const MIRRORED: bool = true;
///     type Pad = <Mirror as Flavor>::Pad;
///     fn atomic<T: Pod>(v: T) -> PAtomic<T> { Mirror::atomic(v) }
///     fn load<T: Pod, P: Persist>(a: &PAtomic<T>, s: &Space<P>) -> T { Mirror::load(a, s) }
///     fn compare_exchange<T: Pod, P: Persist>(
///         a: &PAtomic<T>, c: T, n: T, s: &Space<P>,
///     ) -> Result<T, T> {
///         Mirror::compare_exchange(a, c, n, s)
///     }
///     fn peek<T: Pod>(a: &PAtomic<T>) -> T { Mirror::peek(a) }
///     unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
///         // SAFETY: forwarded.
///         unsafe { Mirror::publish(space, offset, len) }
///     }
/// }
/// ```
///
/// Nor does an implementation whose atomic owns memory, even an `unsafe` one: recovery would
/// build a `Box` from file bytes, and a `Box` is not an `Object` (this one is `Send + Sync`, so
/// the `Object` bound is what rejects it).
///
/// ```compile_fail
/// use mirror_atomic::flavor::{Flavor, Mirror};
/// use mirror_atomic::{PAtomic, Persist, Pod, Space};
///
/// struct Boxed;
///
/// // SAFETY: none; this must not compile.
/// unsafe impl Flavor for Boxed {
///     type Atomic<T: 'static> = Box<PAtomic<T>>;
///     const NAME: &'static str = "boxed";
///     const MIRRORED: bool = true;
///     type Pad = <Mirror as Flavor>::Pad;
///     fn atomic<T: Pod>(v: T) -> Box<PAtomic<T>> { Box::new(Mirror::atomic(v)) }
///     fn load<T: Pod, P: Persist>(a: &Box<PAtomic<T>>, s: &Space<P>) -> T { Mirror::load(a, s) }
///     fn compare_exchange<T: Pod, P: Persist>(
///         a: &Box<PAtomic<T>>, c: T, n: T, s: &Space<P>,
///     ) -> Result<T, T> {
///         Mirror::compare_exchange(a, c, n, s)
///     }
///     fn peek<T: Pod>(a: &Box<PAtomic<T>>) -> T { Mirror::peek(a) }
///     unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
///         // SAFETY: forwarded.
///         unsafe { Mirror::publish(space, offset, len) }
///     }
/// }
/// ```
pub unsafe trait Flavor: Sized + Send + Sync + 'static {
    /// The atomic word holding a `T` (a heap [`Object`]; see the trait's
    /// `# Safety`).
    type Atomic<T: 'static>: Object;
    /// Name printed by benches and tests.
    const NAME: &'static str;
    /// Whether objects live in a separate volatile arena mirrored by the region.
    const MIRRORED: bool;
    /// Zero bytes that widen an 8-byte field to the width of an `Atomic<T>`: 8 bytes where
    /// the atomic is a 16-byte pair ([`Mirror`]), none where it is 8 bytes. A node type
    /// places it after an 8-byte field that would otherwise leave a padding gap before a
    /// pair, or at the end, so that the type has no padding in any flavor (see
    /// [`Object`]); `Default` gives its zero value.
    type Pad: Object + Default;

    /// A new atomic (to be placed in a heap object by [`Heap::alloc`](crate::Heap::alloc)).
    fn atomic<T: Pod>(value: T) -> Self::Atomic<T>;
    /// Loads the value.
    fn load<T: Pod, P: Persist>(a: &Self::Atomic<T>, space: &Space<P>) -> T;
    /// [`load`](Self::load) on a search's path, through a [`Base`] read once per operation
    /// (the flavors of this crate then keep the space's start address, and Mirror its CPU
    /// check, in registers from one load to the next). Returns what `load` returns; the
    /// default is `load` on the base's space.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::{flavor::{Flavor, Volatile}, Heap};
    /// let heap = Heap::<Volatile, _>::anonymous(1 << 20)?;
    /// let p = heap.alloc(Volatile::atomic(3u64))?;
    /// let base = heap.space().base();
    /// // SAFETY: allocated above, never freed.
    /// assert_eq!(Volatile::load_from(unsafe { base.get(p) }, base), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    fn load_from<T: Pod, P: Persist>(a: &Self::Atomic<T>, base: Base<'_, P>) -> T {
        Self::load(a, base.space())
    }
    /// Compare-and-swap: `Ok(current)` or `Err(observed)`.
    fn compare_exchange<T: Pod, P: Persist>(
        a: &Self::Atomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T>;
    /// A compare-and-swap that unlinks an object the caller then retires with
    /// [`Heap::retire`](crate::Heap::retire) (whose `psync` follows it). A flavor may leave
    /// the durability of a successful CAS to that `psync` (Mirror skips Figure 4's line-42
    /// fence): the unlinked object stays in the durable structure until then, already marked
    /// removed, which recovery accepts. The default is
    /// [`compare_exchange`](Self::compare_exchange).
    #[inline(always)]
    fn compare_exchange_unlinking<T: Pod, P: Persist>(
        a: &Self::Atomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        Self::compare_exchange(a, current, new, space)
    }
    /// A compare-and-swap whose new value recovery does not need: a crash may lose it even
    /// after other threads acted on it, so every durable state, with or without it, must
    /// recover to the same structure. The BST's tag is one (issue 23, lever L4): it freezes
    /// the sibling edge of a flagged leaf for the swing that follows, and recovery finishes
    /// every flagged leaf's remove itself, tagging again where the tag was lost; once the
    /// swing is durable the tagged node is unreachable. A flavor may skip a successful CAS's
    /// write-back and fence (Mirror skips Figure 4's lines 41 and 42; a failed CAS still
    /// persists what it helps). The default is [`compare_exchange`](Self::compare_exchange).
    #[inline(always)]
    fn compare_exchange_unpersisted<T: Pod, P: Persist>(
        a: &Self::Atomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        Self::compare_exchange(a, current, new, space)
    }
    /// The value of this replica, with no persistence action (recovery tracing reads the
    /// persistent replica with it).
    fn peek<T: Pod>(a: &Self::Atomic<T>) -> T;
    /// Makes the object just written at `offset` (`len` bytes, in the primary memory) durable
    /// before a CAS publishes it.
    ///
    /// # Safety
    ///
    /// `offset..offset + len` is an object of this heap that no other thread can reach yet.
    unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize);
}

/// The persistence steps of [`Flavor::publish`], for implementors of [`Flavor`] only.
///
/// Low-level plumbing: each function copies or writes back raw heap memory, so each is an
/// `unsafe fn` whose contract is `publish`'s own. They are not methods of [`Space`]: nothing
/// reachable from a [`Heap`](crate::Heap) or a structure lets safe code touch heap bytes.
///
/// ```compile_fail
/// // The plumbing is not a method of `Space` (not even an unsafe one).
/// let heap = mirror_atomic::Heap::<mirror_atomic::flavor::Mirror, _>::anonymous(1 << 20)?;
/// // SAFETY: none needed: this must not compile (`copy_to_twin` is not a method of `Space`).
/// unsafe { heap.space().copy_to_twin(4096, 16) };
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```compile_fail
/// let heap = mirror_atomic::Heap::<mirror_atomic::flavor::Mirror, _>::anonymous(1 << 20)?;
/// // SAFETY: none needed: this must not compile (`flush_twin` is not a method of `Space`).
/// unsafe { heap.space().flush_twin(4096, 16) };
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```compile_fail
/// let heap = mirror_atomic::Heap::<mirror_atomic::flavor::Mirror, _>::anonymous(1 << 20)?;
/// // SAFETY: none needed: this must not compile (`flush_primary` is not a method of `Space`).
/// unsafe { heap.space().flush_primary(4096, 16) };
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod raw {
    use crate::heap::Space;
    use pmem::Persist;

    /// Copies `len` bytes at `offset` from the volatile arena to the region (paper §4.3.2;
    /// nothing when the heap is not mirrored).
    ///
    /// # Safety
    ///
    /// `offset..offset + len` is an object of `space`'s heap that no other thread can reach
    /// yet (the contract of [`Flavor::publish`](super::Flavor::publish)).
    ///
    /// # Examples
    ///
    /// See [`Flavor`](super::Flavor#examples).
    pub unsafe fn copy_to_twin<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
        // SAFETY: the caller's contract is `copy_to_twin`'s.
        unsafe { space.copy_to_twin(offset, len) }
    }

    /// Writes back the region copy of `offset..offset + len` (no fence).
    ///
    /// # Safety
    ///
    /// As [`copy_to_twin`].
    ///
    /// # Examples
    ///
    /// See [`Flavor`](super::Flavor#examples).
    pub unsafe fn flush_twin<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
        // SAFETY: an object of this heap is inside the region (caller's contract).
        unsafe { space.flush_twin(offset, len) }
    }

    /// Writes back the primary copy of `offset..offset + len` (the region itself when the heap
    /// is not mirrored; no fence).
    ///
    /// # Safety
    ///
    /// As [`copy_to_twin`].
    ///
    /// # Examples
    ///
    /// See [`Flavor`](super::Flavor#examples).
    pub unsafe fn flush_primary<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
        // SAFETY: an object of this heap is inside the primary memory (caller's contract).
        unsafe { space.flush_primary(offset, len) }
    }
}

/// Plain atomics on DRAM: no persistence (the baseline every persistent flavor is compared to).
#[derive(Debug, Clone, Copy, Default)]
pub struct Volatile;

/// Mirror (PLDI'21): loads from the volatile replica, writes by Figure 4 on both replicas.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mirror;

/// The Izraelevitz et al. transformation: a write-back and a fence after every load and CAS.
#[derive(Debug, Clone, Copy, Default)]
pub struct Izraelevitz;

/// The 8-byte atomic of the [`Volatile`] and [`Izraelevitz`] flavors.
///
/// # Examples
///
/// ```
/// use mirror_atomic::flavor::{Flavor, Volatile};
/// let a = Volatile::atomic(3u32);
/// assert_eq!(Volatile::peek(&a), 3);
/// ```
#[repr(transparent)]
pub struct VAtomic<T> {
    word: AtomicWord,
    _t: PhantomData<fn() -> T>,
}

impl<T: Pod> VAtomic<T> {
    pub(crate) fn new(value: T) -> Self {
        let () = FitsWord::<T>::OK;
        Self {
            word: AtomicWord::new(to_bits(value)),
            _t: PhantomData,
        }
    }

    #[inline(always)]
    fn load(&self) -> T {
        // Acquire: pairs with the AcqRel CAS that published the value (and the object it
        // points to).
        from_bits(self.word.load(Ordering::Acquire))
    }

    #[inline(always)]
    fn cas(&self, current: T, new: T) -> Result<T, T> {
        // AcqRel: Release publishes the object `new` may point to (pairs with `load`'s
        // Acquire); Acquire orders what we read after it.
        self.word
            .compare_exchange(to_bits(current), to_bits(new), Ordering::AcqRel)
            .map(from_bits)
            .map_err(from_bits)
    }
}

impl VAtomic<u64> {
    /// Adds `v` and returns the previous value (AcqRel: the skip list's handshake between
    /// the inserter and the remover of a node; each side's writes before it are visible to
    /// the side that comes second).
    #[inline(always)]
    pub(crate) fn fetch_add(&self, v: u64) -> u64 {
        self.word.fetch_add(v, Ordering::AcqRel)
    }

    /// Overwrites the value (recovery, single-threaded: Relaxed).
    pub(crate) fn reset(&self, v: u64) {
        self.word.store(v, Ordering::Relaxed)
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for VAtomic<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a diagnostic snapshot.
        let v: T = from_bits(self.word.load(Ordering::Relaxed));
        f.debug_tuple("VAtomic").field(&v).finish()
    }
}

// SAFETY: `VAtomic` is one 8-byte atomic word of `Pod` bits (item 1); `load` and
// `compare_exchange` are its Acquire load and AcqRel CAS (items 2, 3, 5); `publish` does nothing.
unsafe impl Flavor for Volatile {
    type Atomic<T: 'static> = VAtomic<T>;
    const NAME: &'static str = "volatile";
    const MIRRORED: bool = false;
    type Pad = [u64; 0];

    fn atomic<T: Pod>(value: T) -> VAtomic<T> {
        VAtomic::new(value)
    }
    #[inline(always)]
    fn load<T: Pod, P: Persist>(a: &VAtomic<T>, _: &Space<P>) -> T {
        a.load()
    }
    #[inline(always)]
    fn compare_exchange<T: Pod, P: Persist>(
        a: &VAtomic<T>,
        current: T,
        new: T,
        _: &Space<P>,
    ) -> Result<T, T> {
        a.cas(current, new)
    }
    fn peek<T: Pod>(a: &VAtomic<T>) -> T {
        a.load()
    }
    unsafe fn publish<P: Persist>(_: &Space<P>, _: u64, _: usize) {}
}

// SAFETY: `VAtomic` as for `Volatile` (items 1-3, 5); the flushes after a load or CAS write
// back the atomic's own word; `publish` writes back only its object (item 4).
unsafe impl Flavor for Izraelevitz {
    type Atomic<T: 'static> = VAtomic<T>;
    const NAME: &'static str = "izraelevitz";
    const MIRRORED: bool = false;
    type Pad = [u64; 0];

    fn atomic<T: Pod>(value: T) -> VAtomic<T> {
        VAtomic::new(value)
    }
    #[inline(always)]
    fn load<T: Pod, P: Persist>(a: &VAtomic<T>, space: &Space<P>) -> T {
        let v = a.load();
        space.persist().flush_word(&a.word); // izr-load-flush
        space.persist().fence(); // izr-load-fence
        v
    }
    #[inline(always)]
    fn compare_exchange<T: Pod, P: Persist>(
        a: &VAtomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        let r = a.cas(current, new);
        // A store point (nothing on real backends): the simulated domain may evict the word
        // or crash right here, between the CAS and its write-back.
        space.persist().stored(&a.word);
        space.persist().flush_word(&a.word); // izr-cas-flush
        space.persist().fence(); // izr-cas-fence
        r
    }
    fn peek<T: Pod>(a: &VAtomic<T>) -> T {
        a.load()
    }
    unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
        // SAFETY: the caller guarantees the object is this heap's; `flush_primary` needs it.
        unsafe { raw::flush_primary(space, offset, len) };
        space.fence(); // izr-publish-fence
    }
}

// SAFETY: `PAtomic` is one 16-byte pair of `Pod` bits (item 1); its load of the volatile pair
// and Figure 4's CASes on both pairs are SeqCst (at least Acquire/Release: items 2, 3);
// it panics for an atomic outside `space`'s arena (item 5); `publish` copies and writes back
// only its object (item 4).
unsafe impl Flavor for Mirror {
    type Atomic<T: 'static> = PAtomic<T>;
    const NAME: &'static str = "mirror";
    const MIRRORED: bool = true;
    type Pad = [u64; 1];

    fn atomic<T: Pod>(value: T) -> PAtomic<T> {
        PAtomic::new(value)
    }
    #[inline(always)]
    fn load<T: Pod, P: Persist>(a: &PAtomic<T>, space: &Space<P>) -> T {
        a.load_in(space)
    }
    #[inline(always)]
    fn load_from<T: Pod, P: Persist>(a: &PAtomic<T>, base: Base<'_, P>) -> T {
        a.load_from(base)
    }
    #[inline(always)]
    fn compare_exchange<T: Pod, P: Persist>(
        a: &PAtomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        a.compare_exchange(current, new, space)
    }
    #[inline(always)]
    fn compare_exchange_unlinking<T: Pod, P: Persist>(
        a: &PAtomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        a.compare_exchange_unfenced(current, new, space) // mirror-unlink-unfenced
    }
    #[inline(always)]
    fn compare_exchange_unpersisted<T: Pod, P: Persist>(
        a: &PAtomic<T>,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        a.compare_exchange_unpersisted(current, new, space) // mirror-unpersisted
    }
    fn peek<T: Pod>(a: &PAtomic<T>) -> T {
        a.load()
    }
    unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
        // Paper §4.3.2: the object is built in the volatile replica, then copied to its twin.
        // SAFETY: the caller guarantees the object is this heap's and unpublished.
        unsafe { raw::copy_to_twin(space, offset, len) };
        // SAFETY: as above.
        unsafe { raw::flush_twin(space, offset, len) };
        // The copy is ordered before the CAS that publishes the object (its own pwb).
        space.fence(); // mirror-publish-fence
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::heap::Heap;
    use pmem::sim::{SimConfig, Simulated};
    use pmem::Region;

    /// A flavor word alone on its cache line.
    #[repr(C, align(64))]
    struct Line {
        w: VAtomic<u64>,
        rest: [u64; 7],
    }
    // SAFETY: one 8-byte atomic word and the rest of the line as explicit zeros: any bits
    // valid, no drop, no pointers, no padding.
    unsafe impl Object for Line {
        const FIELD_BYTES: usize = 64;
    }

    /// The Izraelevitz rule for loads (write back and fence what was read before acting on
    /// it): thread A's CAS on `a` is not yet written back when thread B reads it and then makes
    /// a dependent CAS on `b`. Whatever B's CAS made durable, A's value must be durable too.
    /// Checked at two crashes: (1) after B's CAS completed (caught without the load's write-back:
    /// nothing else writes `a` back), (2) at B's CAS itself, right after its store of `b` was
    /// evicted to the media, before B's own write-back and fence (caught without the load's
    /// fence: the load's write-back is then still pending, and a crash may drop it). The crash
    /// tests cannot catch either removal: they need another thread to read a CAS in the few
    /// instructions before that thread writes it back.
    #[test]
    #[allow(clippy::disallowed_methods)] // the test's second thread (this test never runs under loom)
    fn an_izraelevitz_load_makes_what_it_read_durable_before_acting_on_it() {
        for crash_at_dependent_store in [false, true] {
            let mut cfg = SimConfig::new(1).evictions(0.0);
            cfg.crash_pending_probability = 0.0;
            cfg.crash_dirty_probability = 0.0;
            if crash_at_dependent_store {
                cfg = cfg.store_points(1.0).crash_at_store(0);
            }
            // SAFETY:
            // - every write to region memory and every call of the backend is made on this
            //   thread, except thread A's CAS (and whatever A's `cas` calls), which run between
            //   the spawn and the join of `scope`: ordered by happens-before with everything
            //   this thread does, so nothing A does runs concurrently with this thread;
            // - no `&mut` into region memory is made.
            let region = unsafe { Region::simulated(9, 1 << 20, cfg) }.expect("region");
            let heap = Heap::<Izraelevitz, Simulated>::new(region).expect("heap");
            let pa = heap
                .alloc(Line {
                    w: Izraelevitz::atomic(0u64),
                    rest: [0; 7],
                })
                .expect("a");
            let pb = heap
                .alloc(Line {
                    w: Izraelevitz::atomic(0u64),
                    rest: [0; 7],
                })
                .expect("b");
            // SAFETY: allocated above, never freed.
            let (a, b) = unsafe { (&heap.get(pa).w, &heap.get(pb).w) };
            let space = heap.space();
            // Thread A: its CAS, and nothing after it (not written back; no store point, so
            // the simulator never evicts it).
            std::thread::scope(|s| {
                s.spawn(|| assert_eq!(a.cas(0, 1), Ok(0)));
            });
            // Thread B: reads A's value, then acts on it (store point 0).
            assert_eq!(Izraelevitz::load(a, space), 1);
            let _ = Izraelevitz::compare_exchange(b, 0, 1, space);
            let image = space.persist().crash_image().unwrap_or_else(|| {
                assert!(!crash_at_dependent_store, "no crash at the store point");
                space.persist().crash()
            });
            let word = |p: u64| image.word(p).expect("in the image");
            assert_eq!(word(pb.offset()), 1, "B's CAS reached the media");
            assert_eq!(
                word(pa.offset()),
                1,
                "B's CAS is durable but the value it read is not (crash at B's store: \
                 {crash_at_dependent_store})"
            );
        }
    }
}
