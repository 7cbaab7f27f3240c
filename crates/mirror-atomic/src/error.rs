//! Typed errors: every variant says what went wrong and what to do about it.

use pmem::RegionError;
use std::fmt;

/// Allocation of an object in a [`Heap`](crate::Heap) failed.
///
/// Not [`pmem::AllocError`], which is the region's own allocator failing (a bump allocator of
/// chunks that never frees): a heap carves its blocks out of such chunks and reuses freed
/// blocks, so it fails for other reasons (an object larger than a block), and when it needs a
/// new chunk and the region has none left, the region's error is its
/// [`source`](std::error::Error::source).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HeapAllocError, Heap};
/// let heap = Heap::<Volatile, _>::anonymous(1 << 20)?;
/// let err = heap.alloc([0u64; 8192]).unwrap_err(); // 64 KiB: larger than a block can be
/// assert!(matches!(err, HeapAllocError::TooLarge { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeapAllocError {
    /// No free block of this size, and the region has no room for a new chunk (the region's
    /// error is the `source`). Remedy: a larger region, or remove objects (their blocks are
    /// reused once no reader can hold them).
    Exhausted {
        /// Bytes requested (the block size).
        requested: usize,
        /// The region allocator's refusal of a new chunk.
        source: pmem::AllocError,
    },
    /// Larger than the largest block ([`MAX_OBJECT`](crate::MAX_OBJECT) bytes) or aligned to
    /// more than 64 bytes. Remedy: split the object.
    TooLarge {
        /// Bytes requested.
        requested: usize,
    },
}

impl fmt::Display for HeapAllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exhausted { requested, .. } => write!(
                f,
                "heap exhausted: no free block of {requested} bytes and no new chunk"
            ),
            Self::TooLarge { requested } => write!(
                f,
                "object of {requested} bytes exceeds the largest block ({} bytes) or 64-byte alignment",
                crate::MAX_OBJECT
            ),
        }
    }
}

impl std::error::Error for HeapAllocError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Exhausted { source, .. } => Some(source),
            Self::TooLarge { .. } => None,
        }
    }
}

/// Opening, creating or recovering a [`Heap`](crate::Heap) failed.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, HeapError, Heap};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("missing.pmem");
/// let err = Heap::<Mirror, _>::open(&path, 7, |_| Ok(())).unwrap_err();
/// assert!(matches!(err, HeapError::Region(pmem::RegionError::NotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum HeapError {
    /// The region could not be created or opened (missing, truncated, corrupt header, wrong
    /// layout id, ...). Remedy: see the inner [`RegionError`].
    Region(RegionError),
    /// [`Heap::new`](crate::Heap::new) was given a region that already holds allocations.
    /// Remedy: recover it with [`Heap::recover`](crate::Heap::recover), or create a new one.
    NotEmpty,
    /// The region's allocated area is not a whole number of heap chunks: not written by this
    /// crate, or corrupt. Remedy: restore the file from a backup.
    BadChunkArea {
        /// The durable high-water mark found.
        high_water: u64,
    },
    /// A chunk header is neither blank nor valid. Remedy: restore the file from a backup.
    BadChunk {
        /// Offset of the chunk.
        chunk: u64,
    },
    /// A persistent pointer reached during recovery does not name a block that can hold its
    /// type (out of range, misaligned, in a blank chunk, block too small). Remedy: the file is
    /// corrupt or was written with another layout; restore it from a backup.
    BadPointer {
        /// The offset found.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A root slot that the structure needs is empty or out of range. Remedy: the file was
    /// never fully created; create the structure again.
    MissingRoot {
        /// The slot.
        slot: usize,
    },
    /// The recovered structure is not well formed (for a list: keys not strictly increasing,
    /// which also rules out cycles). Remedy: the file is corrupt; restore it from a backup.
    Malformed {
        /// What is wrong.
        what: &'static str,
    },
    /// Allocating the structure's root object failed. Remedy: a larger region.
    Alloc(HeapAllocError),
    /// The process could not allocate the heap's volatile copy of the region (a
    /// [`Mirror`](crate::flavor::Mirror) heap keeps one as large as the region). Remedy: a
    /// smaller region, or more memory.
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
    /// The region was written by an earlier format of this crate (format 1, whose list and
    /// hash-set nodes were `{key, next}`; format 2 puts `next` first). Remedy: rebuild the
    /// structure from its source data; format 1 was never released.
    OldFormat,
    /// The hash set's root is not a format-4 root (tag `"MIRHASH4"`, the initial bucket count,
    /// the head of the split-ordered list): the file was written by a hash set of an earlier
    /// format, `format` 3 (tag `"MIRHASH3"`: a fixed bucket count and a directory of bucket
    /// heads, which never grew) or 2 (no tag: a fixed array of bucket heads whose count the
    /// file did not record; also reported when the root's first word is corrupt). Remedy:
    /// rebuild the set from its source data with [`HashSet::new`](crate::HashSet::new); hash-set
    /// files of formats 2 and 3 cannot be read by this version (the other structures' files
    /// can).
    OldHashSetFormat {
        /// The format the root's first word says: 3 (tag `"MIRHASH3"`) or 2 (anything else).
        format: u8,
    },
    /// The region holds a file of another known kind (a pcomb object or structure, or another
    /// mirror-atomic structure; see [`pmem::kinds`]), not the `expected` one. The flavor is
    /// not recorded in the file, so opening a file with another flavor than it was written
    /// with is not caught here. Remedy: open it with the type named by `found`, or open the
    /// file meant for this type.
    WrongKind {
        /// What the region holds, e.g. `"pcomb PBStack"` or `"mirror-atomic List"`.
        found: &'static str,
        /// What was being opened, e.g. `"mirror-atomic SkipList"`.
        expected: &'static str,
    },
    /// The CPU lacks an instruction the heap needs: on x86_64, `cmpxchg16b` (the lock-free
    /// 16-byte CAS of every Mirror pair; missing only on x86_64 CPUs from before about 2006).
    /// Remedy: another machine.
    Unsupported {
        /// The missing instruction.
        instruction: &'static str,
    },
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Region(_) => write!(f, "the heap's region could not be used"),
            Self::NotEmpty => write!(
                f,
                "the region already holds allocations; recover it instead"
            ),
            Self::BadChunkArea { high_water } => {
                write!(
                    f,
                    "allocated area ending at {high_water:#x} is not made of heap chunks"
                )
            }
            Self::BadChunk { chunk } => write!(f, "corrupt chunk header at {chunk:#x}"),
            Self::BadPointer { offset, reason } => {
                write!(f, "corrupt persistent pointer {offset:#x}: {reason}")
            }
            Self::MissingRoot { slot } => write!(f, "root slot {slot} is empty or out of range"),
            Self::Malformed { what } => write!(f, "recovered structure is malformed: {what}"),
            Self::Alloc(_) => write!(f, "allocating the root failed"),
            Self::OutOfMemory { bytes } => {
                write!(
                    f,
                    "cannot allocate the {bytes}-byte volatile copy of the region"
                )
            }
            Self::OldFormat => write!(
                f,
                "region written by format 1 of mirror-atomic (this version reads format 2)"
            ),
            Self::OldHashSetFormat { format } => write!(
                f,
                "hash-set root of format {format} (buckets fixed when made); this version reads format 4"
            ),
            Self::WrongKind { found, expected } => {
                write!(f, "this is a {found} file, expected a {expected}")
            }
            Self::Unsupported { instruction } => {
                write!(
                    f,
                    "this CPU lacks the `{instruction}` instruction the heap needs"
                )
            }
        }
    }
}

impl std::error::Error for HeapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Region(e) => Some(e),
            Self::Alloc(e) => Some(e),
            _ => None,
        }
    }
}

impl From<RegionError> for HeapError {
    fn from(e: RegionError) -> Self {
        Self::Region(e)
    }
}

impl From<HeapAllocError> for HeapError {
    fn from(e: HeapAllocError) -> Self {
        Self::Alloc(e)
    }
}

/// An insert into a [`Bst`](crate::Bst) failed.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, Bst, BstError, BST_MAX_KEY};
/// let tree = Bst::<Volatile, _>::anonymous(1 << 20)?;
/// assert!(tree.insert(BST_MAX_KEY)?);
/// let err = tree.insert(u64::MAX).unwrap_err();
/// assert_eq!(err, BstError::ReservedKey { key: u64::MAX });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BstError {
    /// The key is one of the three sentinel keys above [`BST_MAX_KEY`](crate::BST_MAX_KEY)
    /// (Natarajan-Mittal's `inf0 < inf1 < inf2`), which the tree reserves; the key is handed
    /// back. Remedy: map keys into `0..=BST_MAX_KEY`.
    ReservedKey {
        /// The rejected key.
        key: u64,
    },
    /// Allocating the new nodes failed. Remedy: see the inner [`HeapAllocError`].
    Alloc(HeapAllocError),
}

impl fmt::Display for BstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReservedKey { key } => write!(
                f,
                "key {key:#x} is a reserved BST sentinel (keys are at most {:#x})",
                crate::BST_MAX_KEY
            ),
            Self::Alloc(_) => write!(f, "a BST insert could not allocate its nodes"),
        }
    }
}

impl std::error::Error for BstError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Alloc(e) => Some(e),
            Self::ReservedKey { .. } => None,
        }
    }
}

impl From<HeapAllocError> for BstError {
    fn from(e: HeapAllocError) -> Self {
        Self::Alloc(e)
    }
}

/// An insert into a [`HashSet`](crate::HashSet) failed.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Volatile, HashError, HashSet, HASH_MAX_KEY};
/// let set = HashSet::<Volatile, _>::anonymous(1 << 20)?;
/// assert!(set.insert(HASH_MAX_KEY)?);
/// assert_eq!(set.insert(u64::MAX), Err(HashError::KeyOutOfRange { key: u64::MAX }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HashError {
    /// The key is above [`HASH_MAX_KEY`](crate::HASH_MAX_KEY) (2^63 - 1): the split-ordered
    /// list keeps one bit of each node's 64-bit key to tell a bucket's sentinel from a key;
    /// the key is handed back. Remedy: map keys into `0..=HASH_MAX_KEY`.
    KeyOutOfRange {
        /// The rejected key.
        key: u64,
    },
    /// Allocating the key's node (or its bucket's sentinel) failed. Remedy: see the inner
    /// [`HeapAllocError`].
    Alloc(HeapAllocError),
}

impl fmt::Display for HashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::KeyOutOfRange { key } => write!(
                f,
                "key {key:#x} is above the hash set's largest key {:#x}",
                crate::HASH_MAX_KEY
            ),
            Self::Alloc(_) => write!(f, "a hash-set insert could not allocate its node"),
        }
    }
}

impl std::error::Error for HashError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Alloc(e) => Some(e),
            Self::KeyOutOfRange { .. } => None,
        }
    }
}

impl From<HeapAllocError> for HashError {
    fn from(e: HeapAllocError) -> Self {
        Self::Alloc(e)
    }
}
