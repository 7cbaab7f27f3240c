//! What a region file holds: the table of the file kinds written by this workspace's crates,
//! so that opening a file of one kind as another says what the file is ("this is a pcomb
//! PBStack file, expected a mirror-atomic heap") rather than what looks wrong inside it.
//!
//! A region's layout id is the caller's choice (see [`Region::open`]), so it cannot name the
//! kind; each kind is recognised by the tag its crate writes: the first word of the block in
//! root slot 0 (pcomb's objects and structures), or the first word of the user area, the
//! first chunk header of a mirror-atomic heap, together with the root slot its structure uses.
//! The crates take their tags from this table, so the two cannot drift apart.

use crate::header::{HEADER_SIZE, ROOT_SLOTS};
use crate::sync::{load_word, Ordering};
use crate::{Offset, Region};

/// How a file kind is recognised.
///
/// # Examples
///
/// ```
/// use pmem::kinds::{Signature, KNOWN_KINDS};
///
/// assert!(KNOWN_KINDS.iter().any(|k| matches!(k.signature, Signature::RootTag { .. })));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signature {
    /// The first word of the block in root slot 0 is `tag`.
    RootTag {
        /// The tag.
        tag: u64,
    },
    /// The first word of the user area is `tag` and root slot `slot` is set (any slot if
    /// `None`; no slot need be set).
    HeapTag {
        /// The tag.
        tag: u64,
        /// The root slot of the structure, if the kind is one structure.
        slot: Option<usize>,
    },
}

/// A kind of file written by a crate of this workspace.
///
/// # Examples
///
/// ```
/// let stack = pmem::kinds::KNOWN_KINDS.iter().find(|k| k.name == "pcomb PBStack");
/// assert!(stack.is_some());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKind {
    /// The crate and the structure, e.g. `"pcomb PBStack"`, `"mirror-atomic List"`.
    pub name: &'static str,
    /// How it is recognised.
    pub signature: Signature,
}

const fn tag(bytes: &[u8; 8]) -> u64 {
    u64::from_le_bytes(*bytes)
}

/// pcomb's `PBComb` objects (and the PBHeap built on one), format 2.
pub const PBCOMB_TAG: u64 = tag(b"PBCOMB02");
/// pcomb's `PWFComb` objects, format 2.
pub const PWFCOMB_TAG: u64 = tag(b"PWFCOMB2");
/// pcomb's `PWFComb1` objects (PWFcomb with stamped records).
pub const PWFCOMB1_TAG: u64 = tag(b"PWFCOM1S");
/// pcomb's `PBComb1` objects, format 2 (format 1, `"PBCOMB1L"`, had no sequence numbers).
pub const PBCOMB1_TAG: u64 = tag(b"PBCOM1L2");
/// pcomb's `PBStack`, format 2.
pub const PBSTACK_TAG: u64 = tag(b"PBSTACK2");
/// pcomb's `PWFStack`, format 2.
pub const PWFSTACK_TAG: u64 = tag(b"PWFSTAK2");
/// pcomb's `PBQueue`, format 2.
pub const PBQUEUE_TAG: u64 = tag(b"PBQUEUE2");
/// pcomb's `PWFQueue`, format 2.
pub const PWFQUEUE_TAG: u64 = tag(b"PWFQUEU2");
/// nr-durable's log region: the first word of its root block.
pub const NR_DURABLE_TAG: u64 = tag(b"NRDURLOG");
/// The chunk header tag of a mirror-atomic heap, format 2 (`"MIRROR02"` read big-endian).
pub const MIRROR_CHUNK_TAG: u64 = 0x4d49_5252_4f52_3032;

/// Every file kind of the workspace, most specific first (a mirror-atomic structure before
/// the bare heap).
///
/// # Examples
///
/// ```
/// let names: Vec<_> = pmem::kinds::KNOWN_KINDS.iter().map(|k| k.name).collect();
/// assert!(names.contains(&"mirror-atomic SkipList"));
/// ```
pub const KNOWN_KINDS: &[FileKind] = &[
    root_tag("pcomb PBComb object", PBCOMB_TAG),
    root_tag("pcomb PWFComb object", PWFCOMB_TAG),
    root_tag("pcomb PBComb1 object", PBCOMB1_TAG),
    root_tag("pcomb PWFComb1 object", PWFCOMB1_TAG),
    root_tag("pcomb PBStack", PBSTACK_TAG),
    root_tag("pcomb PWFStack", PWFSTACK_TAG),
    root_tag("pcomb PBQueue", PBQUEUE_TAG),
    root_tag("pcomb PWFQueue", PWFQUEUE_TAG),
    root_tag("nr-durable log", NR_DURABLE_TAG),
    heap("mirror-atomic List", Some(0)),
    heap("mirror-atomic HashSet", Some(1)),
    heap("mirror-atomic SkipList", Some(2)),
    heap("mirror-atomic Bst", Some(3)),
    heap("mirror-atomic heap", None),
];

/// The kind whose block in root slot 0 starts with `tag`, if any.
///
/// # Examples
///
/// ```
/// use pmem::kinds::{by_root_tag, PBSTACK_TAG};
///
/// assert_eq!(by_root_tag(PBSTACK_TAG).map(|k| k.name), Some("pcomb PBStack"));
/// assert_eq!(by_root_tag(0), None);
/// ```
pub fn by_root_tag(tag: u64) -> Option<&'static FileKind> {
    KNOWN_KINDS
        .iter()
        .find(|k| k.signature == Signature::RootTag { tag })
}

const fn root_tag(name: &'static str, tag: u64) -> FileKind {
    FileKind {
        name,
        signature: Signature::RootTag { tag },
    }
}

const fn heap(name: &'static str, slot: Option<usize>) -> FileKind {
    FileKind {
        name,
        signature: Signature::HeapTag {
            tag: MIRROR_CHUNK_TAG,
            slot,
        },
    }
}

impl<P: crate::Persist> Region<P> {
    /// The kind of file this region holds, by [`KNOWN_KINDS`], or `None` if it is none of
    /// them (fresh, written by another program, or corrupt).
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// assert_eq!(region.kind(), None);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn kind(&self) -> Option<&'static FileKind> {
        let root_tag = self.root().and_then(|off| self.first_word(off));
        let user_tag = self.first_word(self.user_offset());
        KNOWN_KINDS.iter().find(|k| match k.signature {
            Signature::RootTag { tag } => root_tag == Some(tag),
            Signature::HeapTag { tag, slot } => {
                user_tag == Some(tag)
                    && slot.is_none_or(|slot| {
                        slot < ROOT_SLOTS && self.root_slot(slot).ok().flatten().is_some()
                    })
            }
        })
    }

    /// The word at `off`, if it lies in the region past the header.
    fn first_word(&self, off: Offset) -> Option<u64> {
        let end = off.0.checked_add(8)?;
        if off.0 < HEADER_SIZE || end > self.len() || !off.0.is_multiple_of(8) {
            return None;
        }
        let ptr = self
            .base()
            .as_ptr()
            .wrapping_add(off.0 as usize)
            .cast::<u64>();
        // SAFETY:
        // - `off..off + 8` lies inside the mapping (checked above) and is 8-byte aligned (the
        //   base is page aligned);
        // - region words are only accessed atomically by the crates of this workspace.
        Some(unsafe { load_word(ptr, Ordering::Relaxed) })
    }
}
