//! A persistence domain for single-threaded unit tests of recovery (PWFComb1's and PBComb1's
//! scrub at `open`): `pwb` snapshots the words it covers, `psync` writes the snapshots to an
//! image (the media). Evictions are the tests' own copies of words into their images.

use crate::sync::{AtomicU64, Ordering};
use pmem::Persist;

/// The media model over one object's words (bound with [`MediaModel::bind`]; pwbs before that
/// are ignored).
#[derive(Debug)]
pub(crate) struct MediaModel {
    base: AtomicU64,
    /// Per word: the value a pwb saw, and 1 while it waits for a psync.
    pending: Box<[(AtomicU64, AtomicU64)]>,
    image: Box<[AtomicU64]>,
}

impl MediaModel {
    /// A model whose media holds `image`.
    pub(crate) fn new(image: &[u64]) -> Self {
        let zero = || (AtomicU64::new(0), AtomicU64::new(0));
        Self {
            base: AtomicU64::new(0),
            pending: image.iter().map(|_| zero()).collect(),
            image: image.iter().map(|&v| AtomicU64::new(v)).collect(),
        }
    }

    /// From now on, pwbs of `words` (as many as the image) are snapshots of them.
    pub(crate) fn bind(&self, words: &[AtomicU64]) {
        assert_eq!(words.len(), self.image.len(), "one word of media per word");
        // Relaxed: one thread.
        self.base.store(words.as_ptr() as u64, Ordering::Relaxed);
    }

    /// The media now.
    pub(crate) fn image(&self) -> Vec<u64> {
        // Relaxed: one thread.
        self.image
            .iter()
            .map(|v| v.load(Ordering::Relaxed))
            .collect()
    }
}

impl Persist for MediaModel {
    unsafe fn pwb(&self, addr: *const u8, len: usize) {
        // Relaxed: one thread.
        let base = self.base.load(Ordering::Relaxed) as usize;
        if base == 0 {
            return;
        }
        let first = (addr as usize - base) / 8;
        for i in first..first + len.div_ceil(8) {
            // SAFETY:
            // - the caller's range lies in the bound words (the model's contract: the tests
            //   write back only the object's own words), which start at `base` and outlive
            //   this call.
            let word = unsafe { &*((base + i * 8) as *const AtomicU64) };
            // Relaxed: one thread.
            self.pending[i]
                .0
                .store(word.load(Ordering::Relaxed), Ordering::Relaxed);
            self.pending[i].1.store(1, Ordering::Relaxed);
        }
    }

    fn pfence(&self) {}

    fn psync(&self) {
        for (i, (v, waiting)) in self.pending.iter().enumerate() {
            // Relaxed: one thread.
            if waiting.swap(0, Ordering::Relaxed) == 1 {
                self.image[i].store(v.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
    }
}
