//! The words an object's persistent part lives in: a heap array (volatile objects) or a range
//! of a [`Region`](pmem::Region) (persistent objects), and the persistence domain that flushes
//! them.

use crate::error::BuildError;
use crate::layout::{header, Kind, RecordLayout, INDEX_WORD};
use crate::pm::Persist;
use crate::sync::{AtomicU64, Ordering};
use crate::words;

/// Where the words are.
enum Backing {
    /// A heap array (volatile objects, and every object under loom).
    Heap(Box<[AtomicU64]>),
}

/// An object's persistent words and its persistence domain.
pub(crate) struct Memory<P: Persist> {
    backing: Backing,
    persist: P,
}

impl<P: Persist> core::fmt::Debug for Memory<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Memory").field("words", &self.words().len()).finish_non_exhaustive()
    }
}

impl<P: Persist> Memory<P> {
    /// `len` zeroed heap words flushed (as no-ops, for `NoPersist`) through `persist`.
    pub(crate) fn heap(len: usize, persist: P) -> Self {
        Self { backing: Backing::Heap(words::zeroed(len)), persist }
    }

    /// All words.
    #[inline]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        match &self.backing {
            Backing::Heap(w) => w,
        }
    }

    /// The persistence domain.
    #[inline]
    pub(crate) fn persist(&self) -> &P {
        &self.persist
    }

    /// The shared index word: `MIndex` (PBcomb) or `S` (PWFcomb).
    #[inline]
    pub(crate) fn index_word(&self) -> &AtomicU64 {
        &self.words()[INDEX_WORD]
    }

    /// pwb of the shared index word (PBcomb line 26, PWFcomb lines 32 and 44).
    #[inline]
    pub(crate) fn pwb_index(&self) {
        self.persist.pwb((self.index_word() as *const AtomicU64).cast::<u8>(), 8);
    }

    /// Writes the header and persists every word (pwb of everything, then pfence and psync),
    /// so that a crash at any later point finds a complete initial object.
    pub(crate) fn init_header(&self, kind: Kind, layout: &RecordLayout, sizes: [usize; 3]) {
        let w = self.words();
        let values = header_values(kind, layout, sizes);
        for (i, v) in values.iter().enumerate() {
            // Relaxed: the object is not shared yet; the psync below and the handover of the
            // object to other threads (by reference, a synchronizing operation) publish it.
            w[i].store(*v, Ordering::Relaxed);
        }
        self.persist.pwb(w.as_ptr().cast::<u8>(), w.len() * 8);
        self.persist.pfence();
        self.persist.psync();
    }

    /// Checks that the header matches `kind`, `layout` and `sizes`.
    pub(crate) fn check_header(
        &self,
        kind: Kind,
        layout: &RecordLayout,
        sizes: [usize; 3],
    ) -> Result<(), BuildError> {
        let w = self.words();
        let name = match kind {
            Kind::PBComb => "PBComb",
            Kind::PWFComb => "PWFComb",
        };
        let mismatch = |detail| Err(BuildError::LayoutMismatch { kind: name, detail });
        // Relaxed: reopening is single-threaded.
        let got: Vec<u64> = w[..header::LEN].iter().map(|x| x.load(Ordering::Relaxed)).collect();
        let want = header_values(kind, layout, sizes);
        if got[header::MAGIC] != want[header::MAGIC] {
            return mismatch("wrong magic (another protocol, or not an object root)");
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
fn checksum(words: &[u64]) -> u64 {
    words.iter().flat_map(|w| w.to_le_bytes()).fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
