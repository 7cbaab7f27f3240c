//! Typed errors of object construction, reopening and thread registration.
//!
//! Naming rule: nr-core has its own `BuildError` and `RegisterError`, whose variants mean
//! other things (log sizes, replicas, dedicated combiners); pcomb's carry the prefix `Comb`
//! (combining objects and the structures built on them): [`CombBuildError`] for building or
//! reopening, [`CombRegisterError`] for claiming a thread slot. The nr-core error pcomb's
//! handles do return unchanged is [`Poisoned`](nr_core::Poisoned), which means the same thing
//! in both crates.

use core::fmt;

/// Why a thread could not get a handle on a `PBComb` / `PWFComb`.
///
/// # Examples
///
/// ```
/// use pcomb::{PBComb, CombRegisterError};
/// # use pcomb::objects::Counter;
///
/// let obj = PBComb::new(Counter::default(), 1)?;
/// let _h = obj.register()?;
/// assert_eq!(obj.register().unwrap_err(), CombRegisterError::TooManyThreads { max_threads: 1 });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CombRegisterError {
    /// Every one of the `max_threads` slots fixed at construction has a live handle. Remedy:
    /// drop a handle first, or build the object with a larger `max_threads`.
    TooManyThreads {
        /// The object's thread limit.
        max_threads: usize,
    },
    /// [`register_as`](crate::PBComb::register_as) asked for a slot `id >= max_threads`.
    /// Remedy: thread ids are `0..max_threads` of the object being recovered.
    OutOfRange {
        /// The requested slot.
        id: usize,
        /// The object's thread limit.
        max_threads: usize,
    },
    /// [`register_as`](crate::PBComb::register_as) asked for a slot that has a live handle.
    /// Remedy: each thread id may be held by one handle at a time; drop the other one.
    InUse {
        /// The requested slot.
        id: usize,
    },
}

impl fmt::Display for CombRegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyThreads { max_threads } => {
                write!(f, "all {max_threads} thread slots are in use")
            }
            Self::OutOfRange { id, max_threads } => {
                write!(
                    f,
                    "thread id {id} is out of range (max_threads = {max_threads})"
                )
            }
            Self::InUse { id } => write!(f, "thread slot {id} already has a live handle"),
        }
    }
}

impl std::error::Error for CombRegisterError {}

/// Why an object could not be built in, or reopened from, its memory.
///
/// # Examples
///
/// ```
/// use pcomb::{CombBuildError, PBComb};
/// # use pcomb::objects::Counter;
///
/// let err = PBComb::new(Counter::default(), 0).unwrap_err();
/// assert!(matches!(err, CombBuildError::InvalidMaxThreads { requested: 0, .. }));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CombBuildError {
    /// `max_threads` was 0 or above [`MAX_THREADS`](crate::MAX_THREADS). Remedy: pick a limit
    /// in `1..=MAX_THREADS`.
    InvalidMaxThreads {
        /// What was asked for.
        requested: usize,
        /// The largest supported limit.
        limit: usize,
    },
    /// A structure was asked for a capacity of 0 (it could hold nothing, and every push would
    /// answer `Full`). Remedy: ask for at least 1.
    ZeroCapacity {
        /// The structure being built.
        kind: &'static str,
    },
    /// The structure's size for this capacity and thread count cannot be represented: its node
    /// count does not fit the 32-bit node links, or its size in bytes overflows. Remedy: a
    /// smaller capacity (or fewer threads, for the wait-free structures, which give each thread
    /// `capacity` nodes).
    TooLarge {
        /// The structure being built.
        kind: &'static str,
        /// The capacity asked for.
        capacity: u64,
        /// The thread limit asked for.
        max_threads: usize,
    },
    /// The volatile memory of the object (`bytes` bytes, reserved zeroed and untouched) could
    /// not be allocated: more than the system will map. Remedy: a smaller capacity, or a
    /// persistent object in a region sized for it.
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
    /// The region has no room for the object (it needs `needed` bytes). Remedy: create the
    /// region with a larger size.
    RegionTooSmall {
        /// Bytes the object needs (header, shared index and records).
        needed: usize,
    },
    /// The region has no object root, or its header is not a `kind` header: wrong magic, other
    /// sizes or thread count than the types being opened, or a bad checksum. Remedy: open the
    /// region with the same protocol, state, response (and operation) types it was created with.
    LayoutMismatch {
        /// The protocol being opened.
        kind: &'static str,
        /// What differs.
        detail: &'static str,
    },
    /// The region holds an object of this protocol in an older persistent format (format 1:
    /// before the per-thread sequence numbers `Seq[q]` replaced the `Deactivate` bits), which
    /// this version cannot read. Remedy: recover it with the version that wrote it, then
    /// create a new object with this one (the two formats cannot be converted in place).
    OldFormat {
        /// The protocol being opened.
        kind: &'static str,
        /// The format found (the current one is 2).
        found: u32,
    },
    /// The region library refused an operation on the region (see the source, which keeps its
    /// type). Remedy: see the source error.
    Region(pmem::RegionError),
    /// The region's chunk allocator refused a request for another reason than lack of room
    /// (which is [`RegionTooSmall`](Self::RegionTooSmall)), e.g. an invalid alignment; the
    /// source keeps its type. Remedy: see the source error.
    RegionAlloc(pmem::AllocError),
    /// The region holds a file of another known kind (another pcomb object or structure, or a
    /// mirror-atomic heap; see [`pmem::kinds`]), not the `expected` one. Remedy: open it with
    /// the type named by `found`, or open the file meant for this type.
    WrongKind {
        /// What the region holds, e.g. `"pcomb PBQueue"` or `"mirror-atomic List"`.
        found: &'static str,
        /// The pcomb type being opened, e.g. `"PBStack"`.
        expected: &'static str,
    },
}

/// [`CombBuildError::WrongKind`] if `found` is a known file kind, else `otherwise`: what a
/// mismatch says when the file is recognised as something else.
pub(crate) fn wrong_kind(
    found: Option<&'static pmem::kinds::FileKind>,
    expected: &'static str,
    otherwise: CombBuildError,
) -> CombBuildError {
    match found {
        Some(kind) => CombBuildError::WrongKind {
            found: kind.name,
            expected,
        },
        None => otherwise,
    }
}

impl fmt::Display for CombBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidMaxThreads { requested, limit } => {
                write!(f, "max_threads must be in 1..={limit}, got {requested}")
            }
            Self::ZeroCapacity { kind } => write!(f, "a {kind} needs a capacity of at least 1"),
            Self::TooLarge {
                kind,
                capacity,
                max_threads,
            } => write!(
                f,
                "a {kind} of capacity {capacity} for {max_threads} threads is too large to \
                 represent (32-bit node links, or a size that overflows)"
            ),
            Self::OutOfMemory { bytes } => {
                write!(
                    f,
                    "could not reserve {bytes} bytes of memory for the object"
                )
            }
            Self::RegionTooSmall { needed } => {
                write!(
                    f,
                    "the region has no room for the object ({needed} bytes needed)"
                )
            }
            Self::LayoutMismatch { kind, detail } => {
                write!(f, "the region does not hold a matching {kind}: {detail}")
            }
            Self::OldFormat { kind, found } => write!(
                f,
                "the region holds a {kind} in persistent format {found}; this version reads \
                 format 2 only (re-create the object)"
            ),
            Self::Region(_) => write!(f, "the region library refused the operation"),
            Self::RegionAlloc(_) => write!(f, "the region's allocator refused the object"),
            Self::WrongKind { found, expected } => {
                write!(f, "this is a {found} file, expected a pcomb {expected}")
            }
        }
    }
}

impl std::error::Error for CombBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Region(e) => Some(e),
            Self::RegionAlloc(e) => Some(e),
            _ => None,
        }
    }
}
