//! Per-thread chunk allocation inside a region (PBcomb/PWFcomb paper, §5 "Memory Management").
//!
//! Each thread pre-allocates a chunk of the region and reserves objects from it by bumping a
//! private cursor; when the chunk is exhausted it claims a new one. Chunks are claimed by
//! advancing the region's *high-water mark* (a header word) with one CAS, and the new mark is
//! persisted (`pwb` + `psync`) before any byte of the chunk is handed out. So after a crash the
//! durable mark is at or above the end of every chunk that was ever used, and recovery never
//! hands out memory a recovered object may still occupy.
//!
//! What is *not* persisted: the cursor inside a chunk. After a crash the unused tail of each
//! thread's chunk is leaked (at most one chunk per allocator), and objects allocated but not yet
//! linked into the structure are garbage the structure's own recovery must ignore. Nothing is
//! ever freed back to the region; structures recycle their nodes themselves (as the paper's
//! PBstack/PBqueue do with free lists).
//!
//! Memory above the high-water mark has never been handed out, so a fresh chunk reads as zero
//! (file regions are zero-filled at creation; simulated images keep unclaimed memory untouched).

use crate::header::{self, HWM_OFFSET, HWM_W};
use crate::sync::{cas_word, Ordering};
use crate::{AllocError, Offset, Persist, Pod, Region};

/// Largest alignment [`ChunkAllocator::alloc_bytes`] supports.
pub const MAX_ALIGN: u64 = 4096;

/// A thread's handle for allocating in a region: bump allocation inside chunks claimed from the
/// region's persisted high-water mark. Create one per thread with [`Region::allocator`].
///
/// # Examples
///
/// ```
/// let region = pmem::Region::anonymous(1, 1 << 16)?;
/// let mut alloc = region.allocator(1024);
/// let a = alloc.alloc::<u64>()?;
/// let b = alloc.alloc::<[u64; 4]>()?;
/// assert_eq!(b.get(), a.get() + 8); // consecutive addresses inside one chunk
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ChunkAllocator<'r, P: Persist> {
    region: &'r Region<P>,
    chunk_size: u64,
    /// Next free byte of the current chunk.
    next: u64,
    /// End of the current chunk (`next == end == 0` before the first claim).
    end: u64,
}

impl<P: Persist> Region<P> {
    /// A new allocation handle claiming chunks of `chunk_size` bytes (rounded up to a multiple
    /// of 64, at least 64). Use one per thread; handles never share a chunk.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 1 << 16)?;
    /// let mut a = region.allocator(4096);
    /// let mut b = region.allocator(4096);
    /// let (x, y) = (a.alloc::<u64>()?, b.alloc::<u64>()?);
    /// assert!(x.get().abs_diff(y.get()) >= 4096); // different chunks
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allocator(&self, chunk_size: u64) -> ChunkAllocator<'_, P> {
        ChunkAllocator {
            region: self,
            chunk_size: round_up(chunk_size.max(64), 64).unwrap_or(!63),
            next: 0,
            end: 0,
        }
    }

    /// The allocator's high-water mark: every byte below it may belong to some chunk, every
    /// byte from it to [`len`](Region::len) has never been handed out.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 1 << 16)?;
    /// assert_eq!(region.high_water_mark(), region.user_offset());
    /// region.allocator(1024).alloc::<u8>()?;
    /// assert_eq!(region.high_water_mark().get(), region.user_offset().get() + 1024);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn high_water_mark(&self) -> Offset {
        // SAFETY:
        // - the header is at the start of the region (at least HEADER_SIZE bytes, aligned).
        // Relaxed: the mark publishes no data; claimers synchronize through the CAS alone.
        Offset(unsafe { header::read(self.base().as_ptr(), HWM_W, Ordering::Relaxed) })
    }
}

impl<P: Persist> ChunkAllocator<'_, P> {
    /// Space for one `T`, aligned for `T`. The memory is zero if it was never used before a
    /// crash (see the module docs); initialize it before linking it anywhere.
    ///
    /// # Errors
    ///
    /// [`AllocError::Exhausted`] when no chunk fits in the rest of the region.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// let off = region.allocator(256).alloc::<u128>()?;
    /// assert_eq!(off.get() % 16, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc<T: Pod>(&mut self) -> Result<Offset, AllocError> {
        self.alloc_array::<T>(1)
    }

    /// Space for `count` consecutive `T`s.
    ///
    /// # Errors
    ///
    /// [`AllocError::Exhausted`] when no chunk fits in the rest of the region (including when
    /// the size overflows).
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 1 << 16)?;
    /// let off = region.allocator(256).alloc_array::<u64>(100)?; // larger than a chunk: fine
    /// assert!(region.ptr_array::<u64>(off, 100).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc_array<T: Pod>(&mut self, count: u64) -> Result<Offset, AllocError> {
        let size = (core::mem::size_of::<T>() as u64).saturating_mul(count);
        self.alloc_bytes(size, core::mem::align_of::<T>() as u64)
    }

    /// `size` bytes aligned to `align` (a power of two up to [`MAX_ALIGN`]). A request larger
    /// than the chunk size gets a chunk of its own.
    ///
    /// # Errors
    ///
    /// [`AllocError::BadAlign`]; [`AllocError::Exhausted`] when no chunk fits in the rest of the
    /// region.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 1 << 16)?;
    /// let mut a = region.allocator(1024);
    /// assert_eq!(a.alloc_bytes(10, 256)?.get() % 256, 0);
    /// assert!(a.alloc_bytes(10, 3).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn alloc_bytes(&mut self, size: u64, align: u64) -> Result<Offset, AllocError> {
        if !align.is_power_of_two() || align > MAX_ALIGN {
            return Err(AllocError::BadAlign { align });
        }
        if let Some(off) = self.bump(size, align) {
            return Ok(off);
        }
        // Chunks start 64-byte aligned; larger alignments may need padding inside the chunk.
        let padding = align.saturating_sub(64);
        let needed = size
            .checked_add(padding)
            .and_then(|n| round_up(n, 64))
            .unwrap_or(u64::MAX);
        self.claim_chunk(needed.max(self.chunk_size))?;
        Ok(self
            .bump(size, align)
            .expect("invariant: a fresh chunk of at least size + padding bytes fits the request"))
    }

    /// The current chunk as `(next free byte, end)`, or `None` before the first claim.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 1 << 16)?;
    /// let mut a = region.allocator(1024);
    /// assert_eq!(a.current_chunk(), None);
    /// let off = a.alloc::<u64>()?;
    /// assert_eq!(a.current_chunk(), Some((pmem::Offset(off.get() + 8), pmem::Offset(off.get() + 1024))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_chunk(&self) -> Option<(Offset, Offset)> {
        (self.end != 0).then_some((Offset(self.next), Offset(self.end)))
    }

    fn bump(&mut self, size: u64, align: u64) -> Option<Offset> {
        if self.end == 0 {
            return None;
        }
        let start = round_up(self.next, align)?;
        let end = start.checked_add(size)?;
        if end > self.end {
            return None;
        }
        self.next = end;
        Some(Offset(start))
    }

    /// Claims `bytes` (a multiple of 64) above the high-water mark and persists the new mark.
    #[cold]
    fn claim_chunk(&mut self, bytes: u64) -> Result<(), AllocError> {
        let base = self.region.base().as_ptr();
        let len = self.region.len();
        // SAFETY:
        // - the header is at the start of the region (at least HEADER_SIZE bytes, aligned).
        let hwm = unsafe { header::word_ptr(base, HWM_W) };
        let mut cur = self.region.high_water_mark().get();
        let start = loop {
            let new = match cur.checked_add(bytes) {
                Some(n) if n <= len => n,
                _ => {
                    return Err(AllocError::Exhausted {
                        requested: bytes,
                        available: len.saturating_sub(cur),
                    })
                }
            };
            // SAFETY:
            // - `hwm` is an aligned header word inside the region, only accessed atomically.
            // Relaxed: the CAS alone makes claims disjoint (each succeeds on a distinct `cur`);
            // the mark publishes no data to other threads.
            match unsafe { cas_word(hwm, cur, new, Ordering::Relaxed, Ordering::Relaxed) } {
                Ok(_) => break cur,
                Err(seen) => cur = seen,
            }
        };
        // Durable before use: after a crash the mark covers every chunk handed out.
        // SAFETY:
        // - `HWM_OFFSET` is inside the header, so `base + HWM_OFFSET` stays in the region;
        let hwm_ptr = unsafe { base.add(HWM_OFFSET as usize) }.cast_const();
        // SAFETY:
        // - the 8 bytes at `hwm_ptr` are a header word of the region, mapped while it lives.
        unsafe { self.region.persist().pwb(hwm_ptr, 8) };
        self.region.persist().psync();
        self.next = start;
        self.end = start + bytes;
        Ok(())
    }
}

fn round_up(v: u64, align: u64) -> Option<u64> {
    Some(v.checked_add(align - 1)? & !(align - 1))
}
