//! Plain-old-data values stored in 8-byte atomic words.
//!
//! Everything the protocols share through memory that can be read while another thread writes it
//! (state records, return values, PWFcomb's request arguments) is kept in `AtomicU64` words and
//! copied word by word. The paper's algorithms read records that a slow thread may be
//! overwriting and only then validate (PWFcomb Algorithm 4 lines 13 and 18, the optimistic read
//! of a `PBComb`); in Rust such a racy read must be atomic to be defined behaviour, and the value
//! read must be valid for its type whatever was torn, which is what [`Pod`] promises.
//!
//! Orderings: every word is loaded with `Acquire` and stored with `Release` (plain `mov`s on
//! x86-64). A reader that sees a word written by a recycler therefore also sees everything the
//! recycler did before, in particular its load of the shared index that moved on, so the
//! validation that follows the copy (PWFcomb line 18, `PBComb::execute`'s lock re-check) fails:
//! the `Release` stores pair with the `Acquire` loads of the validating reader.

use core::mem::{size_of, MaybeUninit};

use crate::error::CombBuildError;
use crate::sync::{AtomicU64, Ordering};
use pmem::Pod;

/// Number of 8-byte words a `T` occupies (at least one, so every field has an address).
pub(crate) const fn words_for<T>() -> usize {
    let n = size_of::<T>().div_ceil(8);
    if n == 0 {
        1
    } else {
        n
    }
}

/// Reads a `T` from `words` (one `Acquire` load per word).
///
/// # Panics
///
/// If `words` is shorter than [`words_for::<T>()`](words_for) (an internal layout bug).
#[inline]
pub(crate) fn load<T: Pod>(words: &[AtomicU64]) -> T {
    let size = size_of::<T>();
    let mut out = MaybeUninit::<T>::uninit();
    let dst = out.as_mut_ptr().cast::<u8>();
    for (i, word) in words[..words_for::<T>()].iter().enumerate() {
        let start = i * 8;
        if start >= size {
            break;
        }
        // Acquire: pairs with the Release in `store` (see the module docs).
        let bytes = word.load(Ordering::Acquire).to_ne_bytes();
        let n = (size - start).min(8);
        // SAFETY:
        // - `bytes` is a local array of 8 bytes and `n <= 8`, so the source is valid;
        // - `start + n <= size_of::<T>()`, so the destination lies inside `out`;
        // - a local array and `out` never overlap.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.add(start), n) };
    }
    // SAFETY:
    // - every byte of `out` was written by the loop above (it covers `0..size`);
    // - `T: Pod`, so every bit pattern, torn or not, is a valid `T`.
    unsafe { out.assume_init() }
}

/// Writes `value` into `words` (one `Release` store per word; bytes past `size_of::<T>()` in
/// the last word are zero).
///
/// # Panics
///
/// If `words` is shorter than [`words_for::<T>()`](words_for) (an internal layout bug).
#[inline]
pub(crate) fn store<T: Pod>(words: &[AtomicU64], value: &T) {
    let size = size_of::<T>();
    let src = (value as *const T).cast::<u8>();
    for (i, word) in words[..words_for::<T>()].iter().enumerate() {
        let start = i * 8;
        let mut bytes = [0u8; 8];
        if start < size {
            let n = (size - start).min(8);
            // SAFETY:
            // - `start + n <= size_of::<T>()`, so the source lies inside `*value`, and `T: Pod`
            //   has no padding, so those bytes are initialized;
            // - the destination is a local array of 8 bytes and `n <= 8`;
            // - they never overlap.
            unsafe { core::ptr::copy_nonoverlapping(src.add(start), bytes.as_mut_ptr(), n) };
        }
        // Release: pairs with the Acquire in `load` (see the module docs).
        word.store(u64::from_ne_bytes(bytes), Ordering::Release);
    }
}

/// Copies `src` into `dst` word by word (`Acquire` loads, `Release` stores).
#[inline]
pub(crate) fn copy(dst: &[AtomicU64], src: &[AtomicU64]) {
    for (d, s) in dst.iter().zip(src) {
        // Acquire/Release: as in `load`/`store`.
        d.store(s.load(Ordering::Acquire), Ordering::Release);
    }
}

/// Reads byte `i` of a byte array packed into `words` (little-endian within each word).
#[inline]
pub(crate) fn load_byte(words: &[AtomicU64], i: usize) -> u8 {
    // Acquire: as in `load`.
    (words[i / 8].load(Ordering::Acquire) >> (8 * (i % 8))) as u8
}

/// Writes byte `i` of a byte array packed into `words`. Only the single writer of the record
/// may call this (a load-modify-store, not an atomic read-modify-write).
#[inline]
pub(crate) fn store_byte(words: &[AtomicU64], i: usize, value: u8) {
    let word = &words[i / 8];
    let shift = 8 * (i % 8);
    // Relaxed: the caller is the record's only writer, so it reads its own last store.
    let old = word.load(Ordering::Relaxed);
    let new = (old & !(0xff << shift)) | (u64::from(value) << shift);
    // Release: as in `store`.
    word.store(new, Ordering::Release);
}

/// 32-bit value `i` of `words` (two per word, the low half first).
#[inline]
pub(crate) fn load_u32(words: &[AtomicU64], i: usize) -> u32 {
    // Acquire: as in `load`.
    (words[i / 2].load(Ordering::Acquire) >> (32 * (i % 2))) as u32
}

/// Sets 32-bit value `i` of `words`, keeping the other half of its word (single writer).
#[inline]
pub(crate) fn store_u32(words: &[AtomicU64], i: usize, value: u32) {
    let word = &words[i / 2];
    let shift = 32 * (i % 2);
    // Relaxed: only the one writer of the record (the combiner or attempt that owns it)
    // writes its words; the Release store below publishes the result as `store` does.
    let old = word.load(Ordering::Relaxed);
    let new = (old & !(0xffff_ffff << shift)) | (u64::from(value) << shift);
    word.store(new, Ordering::Release);
}

/// A small heap array of `len` zeroed words (a request, a buffer: sizes fixed by types).
pub(crate) fn zeroed(len: usize) -> Box<[AtomicU64]> {
    (0..len).map(|_| AtomicU64::new(0)).collect()
}

/// An object's heap words: `len` zeroed words reserved without touching them (see
/// [`zeroed_words`](crate::sync::zeroed_words)), or [`CombBuildError::OutOfMemory`].
pub(crate) fn reserve(len: usize) -> Result<Box<[AtomicU64]>, CombBuildError> {
    crate::sync::zeroed_words(len).ok_or(CombBuildError::OutOfMemory {
        bytes: len.saturating_mul(8),
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_values_of_odd_sizes() {
        let w = zeroed(4);
        store(&w, &0x1122_3344_5566_7788u64);
        assert_eq!(load::<u64>(&w), 0x1122_3344_5566_7788);
        store(&w, &7u32);
        assert_eq!(load::<u32>(&w), 7);
        assert_eq!(
            w[0].load(Ordering::Relaxed),
            7,
            "bytes past the value are zeroed"
        );
    }

    #[test]
    fn bytes_are_independent() {
        let w = zeroed(2);
        for i in 0..16 {
            store_byte(&w, i, i as u8 + 1);
        }
        store_byte(&w, 3, 0);
        for i in 0..16 {
            let want = if i == 3 { 0 } else { i as u8 + 1 };
            assert_eq!(load_byte(&w, i), want);
        }
    }
}

/// A 64-bit check of `words` (a self-naming record's words before its check: pass included).
///
/// A multiply-xorshift mix per word, then a final avalanche: every word (and its position)
/// changes the result, so a record mixing words of two different records fails with
/// probability about `1 - 2^-64`. The seed makes an all-zero record invalid. Used by
/// [`PBComb1`](crate::PBComb1) and [`PWFComb1`](crate::PWFComb1).
pub(crate) fn seal(words: impl Iterator<Item = u64>) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    for w in words {
        h = (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 29;
    }
    h = (h ^ (h >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h = (h ^ (h >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}
