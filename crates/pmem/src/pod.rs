//! What may live in a region: plain old data, addressed by offsets.

/// Marker for plain old data that may live in a persistent region.
///
/// A region outlives the process that wrote it and may be mapped at a different address, and
/// after a crash it holds whatever bytes reached the media. So a `Pod` type is `Copy`, holds no
/// pointers or references (use [`Offset`] instead), and every bit pattern is a valid value (or
/// the type is validated on recovery before it is trusted: wrap such fields in integers).
///
/// # Safety
///
/// Implement it only for types that
///
/// - are valid for every bit pattern of their size (no `bool`, `char`, enums, `NonZero*`,
///   references, `Box`, ...), and contain no padding whose reading would be undefined;
/// - contain no pointers, references or other process-local handles.
///
/// Typical user types are `#[repr(C)]` structs of integers, arrays and [`Offset`]s with
/// explicitly declared padding fields.
///
/// # Examples
///
/// ```
/// use pmem::{Offset, Pod};
///
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Node {
///     value: u64,
///     next: Offset,
/// }
///
/// // SAFETY:
/// // - two 8-byte fields, no padding, every bit pattern valid;
/// // - `next` is an offset, not a pointer.
/// unsafe impl Pod for Node {}
/// ```
///
/// A reference is not `Pod`:
///
/// ```compile_fail
/// fn needs_pod<T: pmem::Pod>() {}
/// needs_pod::<&'static u64>();
/// ```
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {
        $(
            // SAFETY:
            // - a primitive integer or float: every bit pattern is a value, no padding;
            // - no pointers.
            unsafe impl Pod for $t {}
        )*
    };
}

pod!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY:
// - an array of `Pod` has no padding between elements and every bit pattern of each element is
//   valid;
// - it contains no pointers because `T` contains none.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

// SAFETY:
// - `repr(transparent)` over `u64`: every bit pattern valid, no padding, no pointer.
unsafe impl Pod for Offset {}

/// A position inside a region, in bytes from its start, so that the region can be mapped at any
/// address. Offset 0 is inside the header and never names a user object: [`Offset::NULL`] is
/// the "no object" value.
///
/// # Examples
///
/// ```
/// use pmem::Offset;
/// let a = Offset(256);
/// assert_eq!(a.add(64), Some(Offset(320)));
/// assert!(Offset::NULL.is_null());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Offset(pub u64);

impl Offset {
    /// The "no object" offset (inside the header, never handed out).
    pub const NULL: Offset = Offset(0);

    /// The byte position.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::Offset(8).get(), 8);
    /// ```
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Whether this is [`Offset::NULL`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!pmem::Offset(256).is_null());
    /// ```
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// `self + bytes`, or `None` on overflow.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::Offset(u64::MAX).add(1), None);
    /// ```
    pub const fn add(self, bytes: u64) -> Option<Offset> {
        match self.0.checked_add(bytes) {
            Some(v) => Some(Offset(v)),
            None => None,
        }
    }
}

impl core::fmt::Display for Offset {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "+{:#x}", self.0)
    }
}
