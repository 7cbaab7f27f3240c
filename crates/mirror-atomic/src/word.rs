//! What a persistent atomic may hold, and persistent pointers.

use core::fmt;
use core::marker::PhantomData;
use core::mem::{size_of, MaybeUninit};
use pmem::Pod;

/// Compile-time check that `T` fits one 8-byte word (`Pod` already rules out padding and
/// invalid bit patterns). Evaluated when an atomic of `T` is created, so `PAtomic<u128>` fails
/// to build.
pub(crate) struct FitsWord<T>(PhantomData<T>);

impl<T> FitsWord<T> {
    pub(crate) const OK: () = assert!(
        size_of::<T>() <= 8,
        "a persistent atomic holds a type of at most 8 bytes"
    );
}

/// The bits of `v`, zero-extended to 64 (the value half of a Mirror pair).
#[inline(always)]
pub(crate) fn to_bits<T: Pod>(v: T) -> u64 {
    let () = FitsWord::<T>::OK;
    let mut out = 0u64;
    // SAFETY:
    // - `size_of::<T>() <= 8` (checked at compile time above), so the copy stays inside `out`;
    // - `T: Pod` has no padding, so every byte copied is initialized;
    // - the two locals do not overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&v as *const T).cast::<u8>(),
            (&mut out as *mut u64).cast::<u8>(),
            size_of::<T>(),
        )
    };
    out
}

/// The inverse of [`to_bits`] (any bits give a valid `T`: `T: Pod`).
#[inline(always)]
pub(crate) fn from_bits<T: Pod>(bits: u64) -> T {
    let () = FitsWord::<T>::OK;
    let mut out = MaybeUninit::<T>::uninit();
    // SAFETY:
    // - `size_of::<T>() <= 8`: the copy reads inside `bits` and fills all of `out`;
    // - every bit pattern is a valid `T` (`Pod`), so `out` is initialized after the copy.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&bits as *const u64).cast::<u8>(),
            out.as_mut_ptr().cast::<u8>(),
            size_of::<T>(),
        );
        out.assume_init()
    }
}

/// A pointer into a [`Heap`](crate::Heap): the object's offset from the start of the region,
/// so a region can be mapped at any address after a restart. Objects are 16-byte aligned, so
/// the two low bits are free for the structure's use; offset 0 is null.
///
/// | bit | name | set by | used by |
/// |---|---|---|---|
/// | 0 | *mark* | [`with_mark`](Self::with_mark) | list, skip list (logical deletion); BST *flag* |
/// | 1 | *tag* | [`with_tag`](Self::with_tag) | BST (edge frozen, its parent is being removed) |
///
/// [`offset`](Self::offset) masks both bits; [`unmarked`](Self::unmarked) clears bit 0 only.
///
/// # Examples
///
/// ```
/// use mirror_atomic::PPtr;
/// let p = PPtr::<u64>::from_offset(4096);
/// assert!(!p.is_null() && !p.is_marked());
/// assert!(p.with_mark().is_marked());
/// assert_eq!(p.with_mark().unmarked(), p);
/// assert!(PPtr::<u64>::null().is_null());
/// ```
#[repr(transparent)]
pub struct PPtr<T: ?Sized> {
    raw: u64,
    _t: PhantomData<*const T>,
}

// SAFETY: an offset (a number); sending or sharing it touches no `T`.
unsafe impl<T: ?Sized> Send for PPtr<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: ?Sized> Sync for PPtr<T> {}

impl<T: ?Sized> PPtr<T> {
    /// The null pointer (offset 0, unmarked).
    #[inline(always)]
    pub const fn null() -> Self {
        Self::from_raw(0)
    }

    /// A pointer to the object at `offset` (bit 0 becomes the mark).
    #[inline(always)]
    pub const fn from_offset(offset: u64) -> Self {
        Self::from_raw(offset)
    }

    #[inline(always)]
    const fn from_raw(raw: u64) -> Self {
        Self {
            raw,
            _t: PhantomData,
        }
    }

    /// The offset, without the mark and tag bits.
    #[inline(always)]
    pub const fn offset(self) -> u64 {
        self.raw & !3
    }

    /// Whether the offset (mark and tag bits ignored) is 0.
    #[inline(always)]
    pub const fn is_null(self) -> bool {
        self.offset() == 0
    }

    /// Whether the mark bit is set.
    #[inline(always)]
    pub const fn is_marked(self) -> bool {
        self.raw & 1 == 1
    }

    /// The same pointer with the mark bit set.
    #[inline(always)]
    pub const fn with_mark(self) -> Self {
        Self::from_raw(self.raw | 1)
    }

    /// The same pointer with the mark bit clear.
    #[inline(always)]
    pub const fn unmarked(self) -> Self {
        Self::from_raw(self.raw & !1)
    }

    /// Whether the tag bit (bit 1) is set.
    ///
    /// # Examples
    ///
    /// ```
    /// use mirror_atomic::PPtr;
    /// let p = PPtr::<u64>::from_offset(4096);
    /// let t = p.with_tag();
    /// assert!(t.is_tagged() && !t.is_marked() && !p.is_tagged());
    /// assert_eq!(t.offset(), 4096); // `offset` masks both bits
    /// let both = t.with_mark();
    /// assert!(both.is_tagged() && both.is_marked());
    /// assert_eq!(both.unmarked(), t); // `unmarked` keeps the tag
    /// assert_eq!(both.address(), p); // `address` clears both
    /// ```
    #[inline(always)]
    pub const fn is_tagged(self) -> bool {
        self.raw & 2 == 2
    }

    /// The same pointer with the tag bit set.
    #[inline(always)]
    pub const fn with_tag(self) -> Self {
        Self::from_raw(self.raw | 2)
    }

    /// The same pointer with both the mark and the tag bit clear.
    #[inline(always)]
    pub const fn address(self) -> Self {
        Self::from_raw(self.raw & !3)
    }
}

impl<T: ?Sized> Clone for PPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ?Sized> Copy for PPtr<T> {}
impl<T: ?Sized> PartialEq for PPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl<T: ?Sized> Eq for PPtr<T> {}
impl<T: ?Sized> fmt::Debug for PPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PPtr({:#x}{}{})",
            self.offset(),
            if self.is_marked() { "+mark" } else { "" },
            if self.is_tagged() { "+tag" } else { "" }
        )
    }
}

// SAFETY:
// - `repr(transparent)` over `u64` (the `PhantomData` is zero-sized): no padding, every bit
//   pattern is a value (dereferencing goes through the heap, which checks or trusts by contract);
// - no pointer: an offset, meaningful only relative to a heap.
unsafe impl<T: ?Sized + 'static> Pod for PPtr<T> {}
