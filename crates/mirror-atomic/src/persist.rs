//! Every persistence instruction of the crate goes through this module.
//!
//! Only `Persist::pwb_val`, `Persist::pfence` and `Persist::psync` are called (never the raw
//! `pwb(addr, len)`), so a change in `pmem`'s lower-level API stays local to this file. The
//! algorithms are generic over [`Durability`], which any [`Persist`] implements; the loom models
//! implement it with a recorder that knows which pair contents reached "media".
//!
//! Fences are explicit: the code never relies on "a locked instruction orders earlier flushes",
//! which holds on x86 only. Where the paper writes `FLUSH; FENCE` we call `pwb_val` then
//! `pfence`; where a later reuse needs earlier write-backs to be durable we call `psync`.

use crate::sync::AtomicPair;
use pmem::Persist;

/// The persistence instructions the algorithms need.
pub(crate) trait Durability: Send + Sync {
    /// Writes back the cache line(s) of a persistent pair (Figure 4's `FLUSH(rep_p_addr)`).
    fn flush_pair(&self, pair: &AtomicPair);
    /// Writes back `len` bytes starting at `ptr` (a new object's persistent copy).
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` is mapped memory of this process (a region or the volatile arena).
    unsafe fn flush_bytes(&self, ptr: *const u8, len: usize);
    /// Writes back one 8-byte word (the Izraelevitz flavor's flush after a load or CAS).
    fn flush_word(&self, word: &crate::sync::AtomicWord);
    /// Orders earlier write-backs of this thread before later ones (Figure 4's `FENCE()`).
    fn fence(&self);
    /// Waits until earlier write-backs of this thread are durable.
    fn sync(&self);
}

impl<P: Persist> Durability for P {
    #[inline(always)]
    fn flush_pair(&self, pair: &AtomicPair) {
        self.pwb_val(pair);
    }

    #[inline(always)]
    unsafe fn flush_bytes(&self, ptr: *const u8, len: usize) {
        // SAFETY:
        // - the caller guarantees `ptr..ptr + len` is mapped; a `[u8]` view of it is only handed
        //   to `pwb_val`, which uses its address and length (it never reads through it), so no
        //   aliasing reference is created to memory other threads write.
        let bytes = unsafe { core::ptr::slice_from_raw_parts(ptr, len).as_ref() };
        if let Some(bytes) = bytes {
            self.pwb_val(bytes);
        }
    }

    #[inline(always)]
    fn flush_word(&self, word: &crate::sync::AtomicWord) {
        self.pwb_val(word);
    }

    #[inline(always)]
    fn fence(&self) {
        self.pfence();
    }

    #[inline(always)]
    fn sync(&self) {
        self.psync();
    }
}
