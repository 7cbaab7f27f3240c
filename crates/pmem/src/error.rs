//! Typed errors: every variant says what went wrong and what to do about it.

use std::path::PathBuf;

/// Why a region could not be created, opened, recovered or addressed.
///
/// Opening never panics and never maps memory it has not validated the size of: a wrong,
/// truncated or corrupt file is one of these variants.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let err = pmem::Region::open(dir.path().join("missing"), 1).unwrap_err();
/// assert!(matches!(err, pmem::RegionError::NotFound { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RegionError {
    /// The file does not exist. Remedy: [`Region::create`](crate::Region::create) it first, or
    /// fix the path.
    NotFound {
        /// The path that was opened.
        path: PathBuf,
    },
    /// `create` found a file already there (it never overwrites). Remedy: `open` it, or remove
    /// it first.
    AlreadyExists {
        /// The path that was created.
        path: PathBuf,
    },
    /// A live region of this process already owns the file (created or opened it, under this
    /// path or another name of the same file), and a file has one owner at a time. Remedy:
    /// use that region (share it, or the structure built on it), or drop it first.
    AlreadyOpen {
        /// The path that was opened or created.
        path: PathBuf,
    },
    /// Another process holds the file's lock: a region there owns it (or some other program
    /// took an `flock` on it). Remedy: let that process close it first (a process killed
    /// with the region open releases the lock as it exits).
    Locked {
        /// The path that was opened or created.
        path: PathBuf,
    },
    /// Any other I/O failure (permissions, no space, mapping refused). Remedy: see `source`
    /// (the operating system's reason) and `path` (the file it concerned).
    Io {
        /// What was being done (`"open"`, `"set_len"`, `"map"`, ...).
        op: &'static str,
        /// The region file, or `None` for an anonymous mapping.
        path: Option<PathBuf>,
        /// The operating system's error: the `source()` of this error, so not repeated in its
        /// `Display`.
        source: std::io::Error,
    },
    /// The requested size cannot hold a region. Remedy: pass a multiple of 64 bytes of at least
    /// [`MIN_REGION_SIZE`](crate::MIN_REGION_SIZE) that fits in the address space.
    InvalidSize {
        /// The requested size.
        size: u64,
    },
    /// The file (or image) is shorter than the header, or than the size its header records: it
    /// was truncated (or is still being copied). Remedy: restore it from a complete copy.
    Truncated {
        /// Bytes present.
        len: u64,
        /// Bytes needed.
        needed: u64,
    },
    /// The first 8 bytes are not this crate's magic number: not a region file. Remedy: check
    /// the path.
    BadMagic {
        /// The 8 bytes found, as a native-endian word.
        found: u64,
    },
    /// The header's format version is not one this build reads. Remedy: open it with the
    /// version of this crate that wrote it.
    UnsupportedVersion {
        /// The version in the header.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// The header's checksum does not match its contents: the header is corrupt. Remedy:
    /// restore the file from a copy; it cannot be trusted.
    BadChecksum {
        /// The checksum stored in the header.
        stored: u64,
        /// The checksum of the header as read.
        computed: u64,
    },
    /// The region was created for another data structure (layout id). Remedy: open it with the
    /// type that created it, or check the path.
    WrongLayout {
        /// The layout id in the header.
        found: u64,
        /// The layout id the caller expected.
        expected: u64,
    },
    /// The file is longer than the size its header records (something appended to it, or the
    /// header belongs to another file). Remedy: restore it from a copy.
    SizeMismatch {
        /// Size recorded in the header.
        header: u64,
        /// Actual length of the file.
        actual: u64,
    },
    /// A header field holds an impossible value (outside the checksummed part: a root slot or
    /// the allocator's high-water mark out of bounds). Remedy: the file is corrupt; restore it.
    BadHeader {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A header word documented as reserved (zero) holds another value: the file is corrupt,
    /// or was written by a later format that uses the word. Remedy: restore the file from a
    /// copy, or open it with the version of this crate that wrote it.
    ReservedNonzero {
        /// Byte offset of the word in the header.
        offset: u64,
        /// Its value.
        value: u64,
    },
    /// An offset (plus the size of what lives there) falls outside the region's user area.
    /// Remedy: a bug or corrupt data in the caller's structure; validate offsets read from the
    /// region before following them.
    OutOfBounds {
        /// The offset asked for.
        offset: u64,
        /// Bytes needed from there.
        size: u64,
        /// The region's length.
        len: u64,
    },
    /// An offset is not aligned for the type asked for. Remedy: allocate with the type's
    /// alignment; validate offsets read from the region.
    Misaligned {
        /// The offset asked for.
        offset: u64,
        /// The alignment required.
        align: u64,
    },
    /// A root slot index past [`ROOT_SLOTS`](crate::ROOT_SLOTS). Remedy: use a smaller index.
    NoSuchRoot {
        /// The index asked for.
        index: usize,
    },
}

impl std::fmt::Display for RegionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound { path } => write!(f, "region file {} does not exist", path.display()),
            Self::AlreadyExists { path } => {
                write!(f, "region file {} already exists", path.display())
            }
            Self::AlreadyOpen { path } => write!(
                f,
                "region file {} is already open in this process (one region per file)",
                path.display()
            ),
            Self::Locked { path } => write!(
                f,
                "region file {} is locked by another process",
                path.display()
            ),
            Self::Io {
                op,
                path: Some(path),
                ..
            } => write!(f, "region I/O failed ({op}) on {}", path.display()),
            Self::Io { op, path: None, .. } => {
                write!(f, "region I/O failed ({op}) on an anonymous mapping")
            }
            Self::InvalidSize { size } => write!(
                f,
                "invalid region size {size}: need a multiple of 64 bytes, at least {}",
                crate::MIN_REGION_SIZE
            ),
            Self::Truncated { len, needed } => {
                write!(f, "region truncated: {len} bytes present, {needed} needed")
            }
            Self::BadMagic { found } => {
                write!(f, "not a region: bad magic number {found:#018x}")
            }
            Self::UnsupportedVersion { found, supported } => write!(
                f,
                "unsupported region format version {found} (this build reads {supported})"
            ),
            Self::BadChecksum { stored, computed } => write!(
                f,
                "corrupt region header: checksum {stored:#018x} stored, {computed:#018x} computed"
            ),
            Self::WrongLayout { found, expected } => {
                write!(f, "region has layout id {found:#x}, expected {expected:#x}")
            }
            Self::SizeMismatch { header, actual } => write!(
                f,
                "region header records {header} bytes but the file has {actual}"
            ),
            Self::BadHeader { field, value } => {
                write!(
                    f,
                    "corrupt region header: {field} = {value:#x} is out of range"
                )
            }
            Self::ReservedNonzero { offset, value } => write!(
                f,
                "corrupt region header: reserved word at byte {offset} is {value:#x}, not zero"
            ),
            Self::OutOfBounds { offset, size, len } => write!(
                f,
                "offset {offset:#x} + {size} bytes is outside the user area of a {len}-byte region"
            ),
            Self::Misaligned { offset, align } => {
                write!(f, "offset {offset:#x} is not {align}-byte aligned")
            }
            Self::NoSuchRoot { index } => write!(
                f,
                "root slot {index} does not exist (there are {})",
                crate::ROOT_SLOTS
            ),
        }
    }
}

impl std::error::Error for RegionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why an allocation failed.
///
/// # Examples
///
/// ```
/// let region = pmem::Region::anonymous(1, 4096)?;
/// let mut a = region.allocator(1024);
/// let err = loop {
///     if let Err(e) = a.alloc::<[u64; 32]>() {
///         break e;
///     }
/// };
/// assert!(matches!(err, pmem::AllocError::Exhausted { .. }));
/// # Ok::<(), pmem::RegionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocError {
    /// The region has no room left for a chunk that holds the request. Remedy: create a larger
    /// region, or recycle freed objects (the allocator never frees).
    Exhausted {
        /// Bytes requested (plus alignment padding).
        requested: u64,
        /// Bytes left above the high-water mark.
        available: u64,
    },
    /// The alignment is not a power of two or exceeds [`MAX_ALIGN`](crate::MAX_ALIGN). Remedy:
    /// use a smaller alignment.
    BadAlign {
        /// The alignment asked for.
        align: u64,
    },
}

impl std::fmt::Display for AllocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exhausted {
                requested,
                available,
            } => write!(
                f,
                "region exhausted: {requested} bytes requested, {available} left"
            ),
            Self::BadAlign { align } => write!(
                f,
                "unsupported alignment {align} (power of two up to {} required)",
                crate::MAX_ALIGN
            ),
        }
    }
}

impl std::error::Error for AllocError {}
