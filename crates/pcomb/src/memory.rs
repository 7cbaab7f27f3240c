//! The words an object's persistent part lives in: a heap array (volatile objects) or a range
//! of a [`Region`] (persistent objects), and the persistence domain that flushes them. One
//! type for every user: `PBComb`/`PWFComb` (whose header is written and checked here) and the
//! linked structures (`structures::store`, whose header is theirs).

use core::ptr::NonNull;

use pmem::{Offset, Persist, Region};

use crate::error::{wrong_kind, CombBuildError};
use crate::layout::{header, Kind, RecordLayout, LINE_WORDS};
use crate::sync::{words_at, AtomicU64, Ordering};
use crate::words;

/// Where the words are.
enum Backing<P: Persist> {
    /// A heap array (volatile objects, and every object under loom).
    Heap { words: Box<[AtomicU64]>, persist: P },
    /// `len` words at `at` in `region`, starting at `ptr` (64-byte aligned). Only this object
    /// touches them, and only through atomics.
    Region {
        region: Region<P>,
        ptr: NonNull<u64>,
        len: usize,
    },
}

/// An object's persistent words and its persistence domain.
pub(crate) struct Memory<P: Persist> {
    backing: Backing<P>,
}

// SAFETY:
// - `Backing::Region`'s `ptr` points into the mapping owned by the `Region` stored beside it,
//   which is `Send + Sync`; the words are only accessed through atomics;
// - `Backing::Heap` holds atomics and a `P: Send + Sync`.
unsafe impl<P: Persist> Send for Memory<P> {}
// SAFETY: as for `Send`.
unsafe impl<P: Persist> Sync for Memory<P> {}

impl<P: Persist> core::fmt::Debug for Memory<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Memory")
            .field("words", &self.words().len())
            .finish_non_exhaustive()
    }
}

impl<P: Persist> Memory<P> {
    /// `len` zeroed heap words flushed (as no-ops, for `NoPersist`) through `persist`,
    /// reserved without touching them ([`words::reserve`]).
    pub(crate) fn heap(len: usize, persist: P) -> Result<Self, CombBuildError> {
        Ok(Self {
            backing: Backing::Heap {
                words: words::reserve(len)?,
                persist,
            },
        })
    }

    /// Allocates `len` zeroed words (64-byte aligned) in `region` and makes them its root.
    /// The caller initializes and persists them before [`Memory::publish`].
    pub(crate) fn allocate(
        region: Region<P>,
        len: usize,
    ) -> Result<(Self, Offset), CombBuildError> {
        let off = alloc_words(&region, len)?;
        let mem = Self::at(region, off, len)?;
        // The allocator hands out fresh (zeroed) space of a region created for this object; a
        // reused region may hold old bytes there, so zero the block explicitly, storing only
        // where a word is not zero already: reading an untouched page of an anonymous region
        // maps the shared zero page, so a large block costs no memory until it is used.
        for w in mem.words() {
            // Relaxed (both): the object is not shared yet; its creator persists and publishes it.
            if w.load(Ordering::Relaxed) != 0 {
                w.store(0, Ordering::Relaxed);
            }
        }
        Ok((mem, off))
    }

    /// The `len` words at `off` in `region`.
    fn at(region: Region<P>, off: Offset, len: usize) -> Result<Self, CombBuildError> {
        let ptr = region
            .ptr_array::<u64>(off, len as u64)
            .map_err(region_err)?;
        Ok(Self {
            backing: Backing::Region { region, ptr, len },
        })
    }

    /// The region's root object's first `N` words (its header), or `LayoutMismatch` (named
    /// `kind`) if there is no root.
    pub(crate) fn read_root<const N: usize>(
        region: &Region<P>,
        kind: &'static str,
    ) -> Result<(Offset, [u64; N]), CombBuildError> {
        let off = region.root().ok_or_else(|| {
            wrong_kind(
                region.kind(),
                kind,
                CombBuildError::LayoutMismatch {
                    kind,
                    detail: "the region has no root object",
                },
            )
        })?;
        let head = region.ptr_array::<u64>(off, N as u64).map_err(region_err)?;
        let mut values = [0u64; N];
        // SAFETY:
        // - `ptr_array` checked that `N` words at `head` are in bounds and aligned;
        // - nothing else accesses the region while it is being opened;
        // - the view does not outlive this function.
        let view = unsafe { words_at(head.as_ptr(), N) };
        for (v, w) in values.iter_mut().zip(view) {
            // Relaxed: single-threaded reopening.
            *v = w.load(Ordering::Relaxed);
        }
        Ok((off, values))
    }

    /// The root object of `region`, `len` words long (checked against the region's size).
    pub(crate) fn open_root(
        region: Region<P>,
        off: Offset,
        len: Option<usize>,
        kind: &'static str,
    ) -> Result<Self, CombBuildError> {
        let len = len
            .filter(|&n| n >= LINE_WORDS && n <= (region.len() / 8) as usize)
            .ok_or(CombBuildError::LayoutMismatch {
                kind,
                detail: "the header's sizes do not fit the region",
            })?;
        Self::at(region, off, len)
    }

    /// Records `off` (the start of this object) as the region's root; persisted.
    pub(crate) fn publish(&self, off: Offset) -> Result<(), CombBuildError> {
        match &self.backing {
            Backing::Region { region, .. } => region.set_root(off).map_err(region_err),
            Backing::Heap { .. } => Ok(()),
        }
    }

    /// The object at `region`'s root: `record_len(header words)` gives the object's total
    /// length in words from its (already checked) header.
    pub(crate) fn open(
        region: Region<P>,
        kind: &'static str,
    ) -> Result<(Self, [u64; header::LEN]), CombBuildError> {
        let (off, values) = Self::read_root::<{ header::LEN }>(&region, kind)?;
        let record_words = values[header::RECORD_WORDS] as usize;
        let threads = values[header::THREADS] as usize;
        let records = match values[header::MAGIC] {
            m if m == Kind::PBComb.magic() => 2,
            // Checked: `threads` is read from the region (a damaged one may hold anything).
            m if m == Kind::PWFComb.magic() || m == Kind::PWFComb1.magic() => threads
                .checked_add(1)
                .and_then(|n| n.checked_mul(2))
                .ok_or(CombBuildError::LayoutMismatch {
                    kind,
                    detail: "bad max_threads in the header",
                })?,
            m if m == Kind::PBComb.old_magic() || m == Kind::PWFComb.old_magic() => {
                return Err(CombBuildError::OldFormat { kind, found: 1 })
            }
            _ => {
                return Err(wrong_kind(
                    region.kind(),
                    kind,
                    CombBuildError::LayoutMismatch {
                        kind,
                        detail: "wrong magic (another protocol, or not an object root)",
                    },
                ))
            }
        };
        let len = record_words
            .checked_mul(records)
            .and_then(|n| n.checked_add(crate::layout::RECORDS_AT));
        Ok((Self::open_root(region, off, len, kind)?, values))
    }

    /// All words.
    #[inline]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        match &self.backing {
            Backing::Heap { words, .. } => words,
            Backing::Region { ptr, len, .. } => {
                // SAFETY:
                // - `ptr` came from `Region::ptr_array` for `len` words: in bounds and aligned,
                //   and the mapping lives as long as `self.region`, hence as long as `&self`;
                // - this object accesses its words only through these atomics.
                unsafe { words_at(ptr.as_ptr(), *len) }
            }
        }
    }

    /// The persistence domain.
    #[inline]
    pub(crate) fn persist(&self) -> &P {
        match &self.backing {
            Backing::Heap { persist, .. } => persist,
            Backing::Region { region, .. } => region.persist(),
        }
    }

    /// The region, for a persistent object.
    pub(crate) fn into_region(self) -> Option<Region<P>> {
        match self.backing {
            Backing::Heap { .. } => None,
            Backing::Region { region, .. } => Some(region),
        }
    }

    /// Writes the header and persists every word (pwb of everything, then psync),
    /// so that a crash at any later point finds a complete initial object.
    pub(crate) fn init_header(
        &self,
        kind: Kind,
        layout: &RecordLayout,
        sizes: [usize; 3],
        type_id: u64,
    ) {
        let mut values = [0u64; LINE_WORDS];
        values[..header::LEN].copy_from_slice(&header_values(kind, layout, sizes));
        values[header::TYPE_ID] = type_id;
        self.write_header_and_persist(&values);
    }

    /// Writes `values` at the start of the words and persists every word (pwb of everything,
    /// then psync), so that a crash at any later point finds a complete initial object.
    pub(crate) fn write_header_and_persist(&self, values: &[u64]) {
        let w = self.words();
        for (word, v) in w.iter().zip(values) {
            // Relaxed: the object is not shared yet; the psync below and the handover of the
            // object to other threads (by reference, a synchronizing operation) publish it.
            word.store(*v, Ordering::Relaxed);
        }
        let persist = self.persist();
        persist.pwb_val(w);
        // No pfence before it: a pfence followed at once by a psync adds nothing (the mutation
        // table found the pair redundant: either one alone passed every test).
        persist.psync();
    }

    /// Checks that the header matches `kind`, `layout`, `sizes` and `type_id`.
    pub(crate) fn check_header(
        &self,
        kind: Kind,
        layout: &RecordLayout,
        sizes: [usize; 3],
        type_id: u64,
    ) -> Result<(), CombBuildError> {
        let w = self.words();
        let name = match kind {
            Kind::PBComb => "PBComb",
            Kind::PWFComb => "PWFComb",
            Kind::PWFComb1 => "PWFComb1",
        };
        let mismatch = |detail| Err(CombBuildError::LayoutMismatch { kind: name, detail });
        // Relaxed: reopening is single-threaded.
        let got: Vec<u64> = w[..header::LEN]
            .iter()
            .map(|x| x.load(Ordering::Relaxed))
            .collect();
        let want = header_values(kind, layout, sizes);
        if got[header::MAGIC] != want[header::MAGIC] {
            return Err(wrong_kind(
                pmem::kinds::by_root_tag(got[header::MAGIC]),
                name,
                CombBuildError::LayoutMismatch {
                    kind: name,
                    detail: "wrong magic (another protocol, or not an object root)",
                },
            ));
        }
        if got[header::CHECKSUM] != checksum(&got[..header::CHECKSUM]) {
            return mismatch("header checksum does not match (corrupt header)");
        }
        if got[header::THREADS] != want[header::THREADS] {
            return mismatch("a different max_threads");
        }
        if got[header::STATE_BYTES..=header::RECORD_WORDS]
            != want[header::STATE_BYTES..=header::RECORD_WORDS]
        {
            return mismatch("different state, response or operation sizes");
        }
        // Relaxed: as above.
        if w[header::TYPE_ID].load(Ordering::Relaxed) != type_id {
            return mismatch(
                "a different type fingerprint (created with another state type, or another type id)",
            );
        }
        Ok(())
    }
}

fn header_values(kind: Kind, layout: &RecordLayout, sizes: [usize; 3]) -> [u64; header::LEN] {
    let mut v = [0u64; header::LEN];
    v[header::MAGIC] = kind.magic();
    v[header::THREADS] = layout.threads as u64;
    v[header::STATE_BYTES] = sizes[0] as u64;
    v[header::RESPONSE_BYTES] = sizes[1] as u64;
    v[header::OP_BYTES] = sizes[2] as u64;
    v[header::RECORD_WORDS] = layout.len as u64;
    v[header::CHECKSUM] = checksum(&v[..header::CHECKSUM]);
    v
}

/// FNV-1a over the header words.
pub(crate) fn checksum(words: &[u64]) -> u64 {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Claims `len` words, 64-byte aligned, in `region` (size arithmetic checked).
///
/// # Errors
///
/// [`CombBuildError::RegionTooSmall`] when the region has no room (or `len * 8` overflows);
/// [`CombBuildError::Region`] when the region refuses otherwise.
pub(crate) fn alloc_words<P: Persist>(
    region: &Region<P>,
    len: usize,
) -> Result<Offset, CombBuildError> {
    let too_small = || CombBuildError::RegionTooSmall {
        needed: len.saturating_mul(8),
    };
    let bytes = len
        .checked_mul(8)
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(too_small)?;
    region
        .allocator(bytes)
        .alloc_bytes(bytes, (LINE_WORDS * 8) as u64)
        .map_err(|e| match e {
            pmem::AllocError::Exhausted { .. } => too_small(),
            other => CombBuildError::RegionAlloc(other),
        })
}

fn region_err(e: pmem::RegionError) -> CombBuildError {
    CombBuildError::Region(e)
}

/// Where a fresh object or structure goes: heap words flushed through a persistence domain
/// (volatile, or counting flushes), or a new block of a region, recorded as its root.
pub(crate) enum Place<P: Persist> {
    Heap(P),
    Region(Region<P>),
}

impl<P: Persist> Place<P> {
    /// Builds an object of `total` words with `make` (which initializes and persists it) and,
    /// in a region, records it as the root (`store` finds its memory).
    pub(crate) fn build<T>(
        self,
        total: usize,
        make: impl FnOnce(Memory<P>) -> Result<T, CombBuildError>,
        store: impl FnOnce(&T) -> &Memory<P>,
    ) -> Result<T, CombBuildError> {
        match self {
            Place::Heap(persist) => make(Memory::heap(total, persist)?),
            Place::Region(region) => {
                let (s, off) = Memory::allocate(region, total)?;
                let built = make(s)?;
                store(&built).publish(off)?;
                Ok(built)
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Region errors keep their type (issue 22: one was boxed into `dyn Error`, so a caller
    /// could not match on it; this test does not compile against that version).
    #[test]
    fn region_errors_keep_their_type() {
        let path = std::path::PathBuf::from("/nonexistent/region");
        let e = region_err(pmem::RegionError::NotFound { path: path.clone() });
        assert!(
            matches!(&e, CombBuildError::Region(pmem::RegionError::NotFound { path: p }) if *p == path),
            "{e:?}"
        );
        let source = std::error::Error::source(&e).expect("the region error is the source");
        assert!(
            source.to_string().contains("/nonexistent/region"),
            "{source}"
        );
    }
}
