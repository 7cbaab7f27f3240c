//! `PAtomic<T>`: the Mirror persistent atomic (paper §4.1, Figures 2, 4 and 5).
//!
//! Every `PAtomic` is a `{value, sequence}` pair in the volatile replica (the object the program
//! holds a reference to) with a twin pair at the same offset of the persistent region. Loads
//! read the volatile pair only (Figure 5). Every write is Figure 4's compare-and-swap: persistent
//! pair first (16-byte CAS), write-back and fence, then the volatile pair; a thread that finds
//! the persistent pair one step ahead flushes it and brings the volatile pair forward (helping).

use crate::heap::{Base, Space};
use crate::persist::Durability;
use crate::sync::AtomicPair;
use crate::word::{from_bits, to_bits, FitsWord};
use core::fmt;
use core::marker::PhantomData;
use pmem::{Persist, Pod};

#[inline(always)]
fn join(value: u64, seq: u64) -> u128 {
    (u128::from(seq) << 64) | u128::from(value)
}

#[inline(always)]
fn split(pair: u128) -> (u64, u64) {
    (pair as u64, (pair >> 64) as u64)
}

/// Figure 4, `compare_exchange_strong`, on the volatile pair `vol` and its persistent twin `per`:
/// `Ok(expected)` when `expected` was replaced by `new`, `Err(observed)` otherwise.
///
/// Line numbers below are the paper's. Lines 5-16 (read `seq, val, seq` of each replica and
/// retry when the two `seq` reads differ) build a consistent snapshot of each pair; a 16-byte
/// atomic load gives that snapshot directly, so the retry of lines 14-16 never triggers.
///
/// The fence of line 42 follows a *successful* update only when `FENCE_ON_SUCCESS` (the
/// paper's Figure 4 always fences): without it the new value may become visible (line 44) before it is
/// durable, so only a CAS whose value needs no durability of its own may skip it (an unlinking
/// CAS whose caller then retires the node: [`Heap::retire`](crate::Heap::retire)'s `psync`
/// makes it durable before the block can be reused, and until then a durable state without it
/// still holds the node, marked, which recovery treats as removed). Likewise the write-back of
/// line 41 follows a successful update only when `FLUSH_ON_SUCCESS`: without it (and without
/// the fence) the new value reaches the media whenever its line is evicted, or never before a
/// crash, so only a CAS whose value recovery does not need may skip both (the BST's tag, see
/// [`Flavor::compare_exchange_unpersisted`](crate::flavor::Flavor::compare_exchange_unpersisted)).
/// A failed update still writes back and fences: the value it helps into the volatile pair
/// (line 47) must be durable first.
#[inline(always)]
pub(crate) fn cas_pair_fenced<
    D: Durability + ?Sized,
    const FLUSH_ON_SUCCESS: bool,
    const FENCE_ON_SUCCESS: bool,
>(
    vol: &AtomicPair,
    per: &AtomicPair,
    d: &D,
    expected: u64,
    new: u64,
) -> Result<u64, u64> {
    loop {
        // Lines 5-11: read rep_p, then rep_v.
        let p = per.load();
        let v = vol.load();
        let (p_val, p_seq) = split(p);
        let (_, v_seq) = split(v);
        // Lines 19-26: the persistent pair is one write ahead; persist it, then help the
        // volatile pair forward (only from the value we read, so a stale helper fails).
        if p_seq == v_seq.wrapping_add(1) {
            d.flush_pair(per); // line 20
            d.fence(); // line 21
            let _ = vol.compare_exchange(v, p); // line 24
            continue;
        }
        // Line 29: the replicas are not known to agree; read again.
        if p_seq != v_seq {
            continue;
        }
        // Lines 32-35: the current value is not the expected one.
        if p_val != expected {
            return Err(p_val);
        }
        // Lines 38-42: update rep_p, write it back, fence.
        let after = join(new, p_seq.wrapping_add(1));
        let res = per.compare_exchange(p, after);
        // Skipped only after a successful update of an unpersisted CAS (see above).
        let skip_flush = !FLUSH_ON_SUCCESS && res.is_ok(); // fig4-l41-skip
        if !skip_flush {
            d.flush_pair(per); // line 41
        }
        // Skipped only after a successful update of an unfenced CAS (see above).
        let skip_fence = !FENCE_ON_SUCCESS && res.is_ok(); // fig4-l42-skip
        if !skip_fence {
            d.fence(); // line 42
        }
        match res {
            Ok(_) => {
                // Line 44: publish in rep_v; failure means a helper already did.
                let _ = vol.compare_exchange(p, after);
                return Ok(expected);
            }
            Err(observed) => {
                // Line 46: only the sequence moved (same value written again): retry, as a
                // plain CAS would succeed.
                let (o_val, _) = split(observed);
                if o_val == expected {
                    continue;
                }
                // Line 47: help the write that beat us (already flushed at line 41), then fail.
                let _ = vol.compare_exchange(v, observed);
                return Err(o_val);
            }
        }
    }
}

/// Figure 5: the value half of the volatile pair (one 16-byte atomic load; see
/// [`AtomicPair::load_low`]).
#[inline(always)]
pub(crate) fn load_pair(vol: &AtomicPair) -> u64 {
    vol.load_low()
}

/// A Mirror persistent atomic holding a `T` (`Copy`, at most 8 bytes, no padding: [`Pod`]).
///
/// The object must live in a [`Heap`](crate::Heap)'s volatile arena (allocate the structure
/// that contains it with [`Heap::alloc`](crate::Heap::alloc)); its persistent twin is at the
/// same offset in the region. `load` never touches the region; writes take the heap's
/// [`Space`] to find the twin and the persistence instructions.
///
/// Types larger than 8 bytes are rejected at compile time:
///
/// ```compile_fail
/// let _ = mirror_atomic::PAtomic::new(0u128);
/// ```
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, Heap, PAtomic};
/// let heap = Heap::<Mirror, _>::anonymous(1 << 20)?;
/// let p = heap.alloc(PAtomic::new(5u64))?;
/// // SAFETY: allocated above, never freed.
/// let a = unsafe { heap.get(p) };
/// assert_eq!(a.compare_exchange(5, 6, heap.space()), Ok(5));
/// assert_eq!(a.compare_exchange(5, 7, heap.space()), Err(6));
/// assert_eq!(a.fetch_add(10, heap.space()), 6);
/// a.store(1, heap.space());
/// assert_eq!(a.load(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[repr(transparent)]
pub struct PAtomic<T> {
    pair: AtomicPair,
    _t: PhantomData<fn() -> T>,
}

impl<T: Pod> PAtomic<T> {
    /// A pair holding `value` with sequence number 0 (not yet in any heap: pass it, or a
    /// structure containing it, to [`Heap::alloc`](crate::Heap::alloc)).
    pub fn new(value: T) -> Self {
        let () = FitsWord::<T>::OK;
        Self {
            pair: AtomicPair::new(join(to_bits(value), 0)),
            _t: PhantomData,
        }
    }

    /// The current value, from the volatile replica only (Figure 5).
    #[inline(always)]
    pub fn load(&self) -> T {
        from_bits(load_pair(&self.pair))
    }

    /// [`load`](Self::load) on the traversal path: no per-load CPU check (a `Space` exists, so
    /// the check passed when it was built), addressed from the start of `space`'s primary
    /// memory so the compiler can fold the offset into the load.
    #[inline(always)]
    pub(crate) fn load_in<P: Persist>(&self, space: &Space<P>) -> T {
        self.load_from(space.base())
    }

    /// [`load_in`](Self::load_in) through a [`Base`] read once per traversal: its start
    /// address and CPU check stay in registers from one load to the next.
    #[inline(always)]
    pub(crate) fn load_from<P: Persist>(&self, base: Base<'_, P>) -> T {
        // SAFETY: `base` was read from a `Space`, and every `Space` was built by `Space::new`,
        // which returns only after `require_native_pairs` succeeded.
        from_bits(unsafe { self.pair.load_low_in(base.primary(), base.loads()) })
    }

    /// Replaces `current` by `new` if the value is `current` (Figure 4): `Ok(current)` on
    /// success, `Err(observed)` otherwise. On success the new value is durable before any
    /// thread can load it.
    ///
    /// # Panics
    ///
    /// If `self` is not inside `space`'s volatile arena.
    #[inline]
    pub fn compare_exchange<P: Persist>(
        &self,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        self.cas_in::<P, true, true>(current, new, space)
    }

    /// [`compare_exchange`](Self::compare_exchange) without the fence after a successful
    /// update (see `cas_pair_fenced`): the new value is written back but may be visible before
    /// it is durable. For a CAS that unlinks an object its caller retires
    /// ([`Flavor::compare_exchange_unlinking`](crate::flavor::Flavor::compare_exchange_unlinking)).
    #[inline]
    pub(crate) fn compare_exchange_unfenced<P: Persist>(
        &self,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        self.cas_in::<P, true, false>(current, new, space)
    }

    /// [`compare_exchange`](Self::compare_exchange) without the write-back and the fence after
    /// a successful update (see `cas_pair_fenced`): the new value may be visible before it is
    /// durable and may never become durable before a crash. For a CAS whose value recovery
    /// does not need
    /// ([`Flavor::compare_exchange_unpersisted`](crate::flavor::Flavor::compare_exchange_unpersisted)).
    #[inline]
    pub(crate) fn compare_exchange_unpersisted<P: Persist>(
        &self,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        self.cas_in::<P, false, false>(current, new, space)
    }

    /// Figure 4 on this pair and its twin in `space` (`cas_pair_fenced`).
    #[inline(always)]
    fn cas_in<P: Persist, const FLUSH_ON_SUCCESS: bool, const FENCE_ON_SUCCESS: bool>(
        &self,
        current: T,
        new: T,
        space: &Space<P>,
    ) -> Result<T, T> {
        let twin = space.twin_pair(&self.pair);
        cas_pair_fenced::<_, FLUSH_ON_SUCCESS, FENCE_ON_SUCCESS>(
            &self.pair,
            twin,
            space.persist(),
            to_bits(current),
            to_bits(new),
        )
        .map(from_bits)
        .map_err(from_bits)
    }

    /// Stores `value` (a compare-and-swap loop, paper §4.1.2).
    ///
    /// # Panics
    ///
    /// If `self` is not inside `space`'s volatile arena.
    pub fn store<P: Persist>(&self, value: T, space: &Space<P>) {
        let mut cur = self.load();
        while let Err(seen) = self.compare_exchange(cur, value, space) {
            cur = seen;
        }
    }

    /// The raw pair `{value, sequence}` of this replica (recovery and tests).
    pub(crate) fn raw(&self) -> (u64, u64) {
        split(self.pair.load())
    }
}

/// Integer types with a wrapping addition, for [`PAtomic::fetch_add`].
pub trait Arith: Pod {
    /// `self + rhs`, wrapping.
    fn wrapping_add(self, rhs: Self) -> Self;
}

macro_rules! arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn wrapping_add(self, rhs: Self) -> Self { <$t>::wrapping_add(self, rhs) }
        }
    )*};
}
arith!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl<T: Arith> PAtomic<T> {
    /// Adds `delta` (wrapping) and returns the previous value (a CAS loop, paper §4.1.2).
    ///
    /// # Panics
    ///
    /// If `self` is not inside `space`'s volatile arena.
    pub fn fetch_add<P: Persist>(&self, delta: T, space: &Space<P>) -> T {
        let mut cur = self.load();
        loop {
            match self.compare_exchange(cur, cur.wrapping_add(delta), space) {
                Ok(prev) => return prev,
                Err(seen) => cur = seen,
            }
        }
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for PAtomic<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, s) = self.raw();
        f.debug_struct("PAtomic")
            .field("value", &from_bits::<T>(v))
            .field("seq", &s)
            .finish()
    }
}

/// A field that never changes after its object is published (an immutable key): one word in
/// each replica, no sequence number (paper §4.1.1). Written by [`Heap::alloc`](crate::Heap::alloc)
/// with the rest of the object, read from the volatile replica.
///
/// # Examples
///
/// ```
/// let k = mirror_atomic::PConst::new(7u32);
/// assert_eq!(k.get(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct PConst<T>(T);

impl<T: Pod> PConst<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Self {
        Self(value)
    }

    /// The value.
    #[inline(always)]
    pub fn get(&self) -> T {
        self.0
    }
}
