//! The region header: the first [`HEADER_SIZE`] bytes of every region.
//!
//! | bytes | field | written |
//! |---|---|---|
//! | 0..8 | magic `b"PMEMRGN1"` | at create |
//! | 8..16 | format version ([`FORMAT_VERSION`]) | at create |
//! | 16..24 | layout id (chosen by the data structure) | at create |
//! | 24..32 | region size in bytes (= file length) | at create |
//! | 32..40 | user offset (= [`HEADER_SIZE`]) | at create |
//! | 40..56 | reserved, zero (checked on open) | at create |
//! | 56..64 | checksum (FNV-1a 64) of bytes 0..56 | at create |
//! | 64..128 | [`ROOT_SLOTS`] root offsets (0 = unset) | `set_root*` |
//! | 128..136 | allocator high-water mark (offset of the first unclaimed byte) | chunk claims |
//! | 136..256 | reserved, zero (checked on open) | |
//!
//! All fields are native-endian `u64`s (little-endian on x86-64, the one target whose flushes
//! make data durable; a region file does not move between byte orders) at 8-byte aligned
//! positions, so each mutable field is
//! failure-atomic on its own (x86 guarantees 8-byte store atomicity and no more). The mutable
//! fields sit in their own cache lines, outside the checksum: the checksum covers what never
//! changes, and the mutable fields are range-checked on open instead.

use crate::sync::{load_word, store_word, Ordering};
use crate::RegionError;

/// The first 8 bytes of every region file.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PMEMRGN1");
/// The header format this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;
/// Bytes taken by the header; the user area starts here (a multiple of the cache line).
pub const HEADER_SIZE: u64 = 256;
/// Number of root slots in the header ([`Region::root_slot`](crate::Region::root_slot)).
pub const ROOT_SLOTS: usize = 8;
/// The smallest region: the header plus one cache line.
pub const MIN_REGION_SIZE: u64 = HEADER_SIZE + 64;

// Word indices (8-byte units) of the fields.
const MAGIC_W: usize = 0;
const VERSION_W: usize = 1;
const LAYOUT_W: usize = 2;
const SIZE_W: usize = 3;
const USER_W: usize = 4;
const CHECKSUM_W: usize = 7;
pub(crate) const ROOTS_W: usize = 8;
pub(crate) const HWM_W: usize = 16;
/// The reserved words (documented as zero): bytes 40..56, inside the checksum, and 136..256.
const RESERVED_W: [std::ops::Range<usize>; 2] = [USER_W + 1..CHECKSUM_W, HWM_W + 1..WORDS];
/// Words in the header.
const WORDS: usize = HEADER_SIZE as usize / 8;

/// Byte offset of the high-water mark word.
pub(crate) const HWM_OFFSET: u64 = (HWM_W * 8) as u64;

/// FNV-1a (64-bit) over the little-endian bytes of the checksummed words.
fn checksum(words: &[u64; CHECKSUM_W]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Pointer to header word `index`.
///
/// # Safety
///
/// - `base` points to at least `HEADER_SIZE` bytes, 8-byte aligned.
#[inline]
pub(crate) unsafe fn word_ptr(base: *const u8, index: usize) -> *mut u64 {
    debug_assert!(index < HEADER_SIZE as usize / 8);
    // SAFETY:
    // - `index * 8 < HEADER_SIZE`, inside the header the caller guarantees.
    unsafe { base.add(index * 8) }.cast::<u64>().cast_mut()
}

/// Reads header word `index` (an atomic load: the word may be updated concurrently).
///
/// # Safety
///
/// - `base` points to at least `HEADER_SIZE` readable bytes, 8-byte aligned.
#[inline]
pub(crate) unsafe fn read(base: *const u8, index: usize, order: Ordering) -> u64 {
    // SAFETY:
    // - the header is readable and aligned (caller), so each word pointer is valid and aligned;
    // - header words are only ever accessed atomically by this crate.
    unsafe { load_word(word_ptr(base, index), order) }
}

/// Writes a fresh header for a region of `size` bytes with layout id `layout`: roots unset,
/// high-water mark at the start of the user area.
///
/// # Safety
///
/// - `base` points to at least `HEADER_SIZE` writable bytes, 8-byte aligned, not yet shared
///   with other threads.
pub(crate) unsafe fn write_fresh(base: *mut u8, layout: u64, size: u64) {
    let mut fixed = [0u64; CHECKSUM_W];
    fixed[MAGIC_W] = MAGIC;
    fixed[VERSION_W] = FORMAT_VERSION;
    fixed[LAYOUT_W] = layout;
    fixed[SIZE_W] = size;
    fixed[USER_W] = HEADER_SIZE;
    let mut all = [0u64; WORDS];
    all[..CHECKSUM_W].copy_from_slice(&fixed);
    all[CHECKSUM_W] = checksum(&fixed);
    all[HWM_W] = HEADER_SIZE;
    for (i, w) in all.iter().enumerate() {
        // SAFETY:
        // - word `i` is inside the writable, aligned header (caller);
        // - Relaxed: the region is not shared yet; publication to other threads happens by
        //   handing out the `Region` (which synchronizes).
        unsafe { store_word(word_ptr(base, i), *w, Ordering::Relaxed) };
    }
}

/// Checks a region's header: that it is a region of this format, for `layout`, of exactly
/// `len` bytes, with in-range mutable fields.
///
/// # Safety
///
/// - `base` points to `len` readable bytes (any contents), 8-byte aligned.
pub(crate) unsafe fn validate(base: *const u8, len: u64, layout: u64) -> Result<(), RegionError> {
    if len < HEADER_SIZE {
        return Err(RegionError::Truncated {
            len,
            needed: HEADER_SIZE,
        });
    }
    let rd = |i| {
        // SAFETY:
        // - `len >= HEADER_SIZE` readable, aligned bytes at `base` (checked above, and caller).
        unsafe { read(base, i, Ordering::Relaxed) }
    };
    let magic = rd(MAGIC_W);
    if magic != MAGIC {
        return Err(RegionError::BadMagic { found: magic });
    }
    let version = rd(VERSION_W);
    if version != FORMAT_VERSION {
        return Err(RegionError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let mut fixed = [0u64; CHECKSUM_W];
    for (i, w) in fixed.iter_mut().enumerate() {
        *w = rd(i);
    }
    let stored = rd(CHECKSUM_W);
    let computed = checksum(&fixed);
    if stored != computed {
        return Err(RegionError::BadChecksum { stored, computed });
    }
    if fixed[LAYOUT_W] != layout {
        return Err(RegionError::WrongLayout {
            found: fixed[LAYOUT_W],
            expected: layout,
        });
    }
    let size = fixed[SIZE_W];
    if size > len {
        return Err(RegionError::Truncated { len, needed: size });
    }
    if size < len {
        return Err(RegionError::SizeMismatch {
            header: size,
            actual: len,
        });
    }
    if size < MIN_REGION_SIZE || size % 64 != 0 {
        return Err(RegionError::BadHeader {
            field: "size",
            value: size,
        });
    }
    if fixed[USER_W] != HEADER_SIZE {
        return Err(RegionError::BadHeader {
            field: "user_offset",
            value: fixed[USER_W],
        });
    }
    for i in RESERVED_W.into_iter().flatten() {
        let value = rd(i);
        if value != 0 {
            return Err(RegionError::ReservedNonzero {
                offset: (i * 8) as u64,
                value,
            });
        }
    }
    for i in 0..ROOT_SLOTS {
        let root = rd(ROOTS_W + i);
        if root != 0 && (root < HEADER_SIZE || root >= size) {
            return Err(RegionError::BadHeader {
                field: "root",
                value: root,
            });
        }
    }
    let hwm = rd(HWM_W);
    if hwm < HEADER_SIZE || hwm > size || hwm % 64 != 0 {
        return Err(RegionError::BadHeader {
            field: "high_water_mark",
            value: hwm,
        });
    }
    Ok(())
}

/// Checks a size for a new region.
pub(crate) fn check_new_size(size: u64) -> Result<usize, RegionError> {
    if size < MIN_REGION_SIZE || !size.is_multiple_of(64) || size > isize::MAX as u64 {
        return Err(RegionError::InvalidSize { size });
    }
    usize::try_from(size).map_err(|_| RegionError::InvalidSize { size })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_header_validates_and_checksum_detects_each_byte() {
        let mut buf = vec![0u64; 64];
        let base = buf.as_mut_ptr().cast::<u8>();
        // SAFETY:
        // - 512 writable, aligned bytes, unshared.
        unsafe { write_fresh(base, 7, 512) };
        // SAFETY:
        // - 512 readable, aligned bytes.
        assert!(unsafe { validate(base, 512, 7) }.is_ok());
        for byte in 16..56 {
            let mut copy = buf.clone();
            let p = copy.as_mut_ptr().cast::<u8>();
            // SAFETY:
            // - `byte < 56 < 512`.
            unsafe { *p.add(byte) ^= 0x10 };
            // SAFETY:
            // - 512 readable, aligned bytes.
            let r = unsafe { validate(p, 512, 7) };
            assert!(
                matches!(r, Err(RegionError::BadChecksum { .. })),
                "byte {byte}: {r:?}"
            );
        }
    }

    /// Every reserved word, set nonzero (with the checksum recomputed where it covers the word,
    /// so that the reserved-word check is what trips), is refused with its offset.
    #[test]
    fn each_reserved_word_set_nonzero_is_refused() {
        let mut fresh = vec![0u64; 64];
        // SAFETY:
        // - 512 writable, aligned bytes, unshared.
        unsafe { write_fresh(fresh.as_mut_ptr().cast(), 7, 512) };
        let reserved: Vec<usize> = RESERVED_W.into_iter().flatten().collect();
        assert_eq!(reserved.len(), 2 + 15);
        for i in reserved {
            let mut copy = fresh.clone();
            copy[i] = 0x5A;
            if i < CHECKSUM_W {
                let fixed: [u64; CHECKSUM_W] = copy[..CHECKSUM_W].try_into().expect("7 words");
                copy[CHECKSUM_W] = checksum(&fixed);
            }
            // SAFETY:
            // - 512 readable, aligned bytes.
            let r = unsafe { validate(copy.as_ptr().cast(), 512, 7) };
            assert!(
                matches!(
                    r,
                    Err(RegionError::ReservedNonzero { offset, value: 0x5A }) if offset == i as u64 * 8
                ),
                "word {i}: {r:?}"
            );
        }
    }
}
