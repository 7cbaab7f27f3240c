//! The synthetic data structure of §8.2.

use crate::rng::SplitMix64;
use nr_core::Dispatch;
use std::fmt;

/// Words per cache line.
const WORDS: usize = 8;

/// One 64-byte cache line of data.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line {
    words: [u64; WORDS],
}

/// An entry and the spare line after it: the paper places "a spare cache line between entries
/// to avoid performance artifacts from data prefetching" (the adjacent-line prefetcher fetches
/// 128-byte pairs). The spare line is never touched.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    entry: Line,
    _spare: Line,
}

/// A read of a [`SyntheticBuffer`]: reads the hot entry and `c` entries chosen by `seed`.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{SyntheticBuffer, SyntheticRead};
///
/// let buf = SyntheticBuffer::new(100, 4);
/// assert_eq!(buf.dispatch(SyntheticRead { seed: 9 }), 0); // all zero so far
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyntheticRead {
    /// Chooses the entries (the caller draws it at random; see [`SyntheticBuffer::entries`]).
    pub seed: u64,
}

/// An update of a [`SyntheticBuffer`]: reads and writes the hot entry and `c` entries chosen by
/// `seed`.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{SyntheticBuffer, SyntheticRead, SyntheticWrite};
///
/// let mut buf = SyntheticBuffer::new(100, 4);
/// let sum = buf.dispatch_mut(SyntheticWrite { seed: 9 });
/// assert_eq!(buf.dispatch(SyntheticRead { seed: 9 }), sum);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyntheticWrite {
    /// Chooses the entries and the value added to their words.
    pub seed: u64,
}

/// The synthetic data structure of Calciu et al., ASPLOS'17, §8.2 (Figures 9-10): a buffer of
/// `n` entries of one cache line each, where every operation touches `c + 1` entries — entry 0,
/// the *hot* entry every operation touches (modelling a stack's top, a tree's root, a skip
/// list's head), and `c` entries drawn uniformly from `1..n` by the operation's seed.
///
/// A read ([`SyntheticRead`]) reads the 8 words of each of its entries and returns their
/// wrapping sum, so the reads cannot be optimised away. An update ([`SyntheticWrite`]) adds
/// `seed | 1` to each word of each of its entries (wrapping) and returns the sum of the new
/// words. The entries follow from the seed alone, so the operation is deterministic; the caller
/// draws seeds at random.
///
/// Entries are `#[repr(align(64))]` and separated by a spare cache line, as in the paper, so the
/// buffer takes `128 * n` bytes.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{SyntheticBuffer, SyntheticRead, SyntheticWrite};
///
/// let mut buf = SyntheticBuffer::new(1_000, 8);
/// let entries: Vec<usize> = buf.entries(42).collect();
/// assert_eq!(entries.len(), 9);
/// assert_eq!(entries[0], 0); // the hot entry
///
/// buf.dispatch_mut(SyntheticWrite { seed: 1 });
/// // Every operation shares the hot entry, so every read now sees the write.
/// assert_ne!(buf.dispatch(SyntheticRead { seed: 2 }), 0);
/// ```
#[derive(Clone)]
pub struct SyntheticBuffer {
    slots: Vec<Slot>,
    per_op: usize,
}

impl SyntheticBuffer {
    /// A zeroed buffer of `n` entries whose operations each touch `c` entries besides the hot
    /// one.
    ///
    /// # Panics
    ///
    /// If `n` is 0 (there would be no hot entry).
    ///
    /// # Examples
    ///
    /// ```
    /// let buf = seqds::SyntheticBuffer::new(200_000, 8);
    /// assert_eq!((buf.len(), buf.per_op()), (200_000, 8));
    /// ```
    pub fn new(n: usize, c: usize) -> Self {
        assert!(
            n > 0,
            "SyntheticBuffer needs at least one entry (the hot one)"
        );
        Self {
            slots: vec![Slot::default(); n],
            per_op: c,
        }
    }

    /// The number of entries, `n`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SyntheticBuffer::new(10, 2).len(), 10);
    /// ```
    #[inline]
    #[allow(clippy::len_without_is_empty)] // reason: never empty (`new` requires n > 0)
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The number of entries each operation touches besides the hot one, `c`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SyntheticBuffer::new(10, 2).per_op(), 2);
    /// ```
    #[inline]
    pub fn per_op(&self) -> usize {
        self.per_op
    }

    /// The entries an operation with `seed` touches, in order: the hot entry 0, then `c` entries
    /// drawn uniformly from `1..n` (repeats possible; all are 0 if `n` is 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let buf = seqds::SyntheticBuffer::new(50, 3);
    /// let e: Vec<usize> = buf.entries(7).collect();
    /// assert_eq!(e.len(), 4);
    /// assert_eq!(e[0], 0);
    /// assert!(e[1..].iter().all(|&i| (1..50).contains(&i)));
    /// assert_eq!(e, buf.entries(7).collect::<Vec<_>>());
    /// ```
    #[inline]
    pub fn entries(&self, seed: u64) -> impl Iterator<Item = usize> {
        entries(self.slots.len(), self.per_op, seed)
    }

    /// The 8 words of entry `i`.
    ///
    /// # Panics
    ///
    /// If `i >= n`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SyntheticBuffer::new(4, 1).entry(3), [0; 8]);
    /// ```
    pub fn entry(&self, i: usize) -> [u64; 8] {
        self.slots[i].entry.words
    }

    /// Performs a read: the wrapping sum of the words of the entries of `seed`.
    ///
    /// # Examples
    ///
    /// ```
    /// let buf = seqds::SyntheticBuffer::new(4, 1);
    /// assert_eq!(buf.read(3), 0);
    /// ```
    #[inline]
    pub fn read(&self, seed: u64) -> u64 {
        let mut sum = 0u64;
        for i in self.entries(seed) {
            let words = &self.slots[i].entry.words;
            sum = words.iter().fold(sum, |s, &w| s.wrapping_add(w));
        }
        sum
    }

    /// Performs an update: adds `seed | 1` to every word of the entries of `seed` (an entry
    /// drawn twice is updated twice); returns the wrapping sum of the words written.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut buf = seqds::SyntheticBuffer::new(1, 2); // only the hot entry, touched 3 times
    /// assert_eq!(buf.update(2), 8 * 3 + 8 * 6 + 8 * 9);
    /// assert_eq!(buf.entry(0), [9; 8]);
    /// ```
    #[inline]
    pub fn update(&mut self, seed: u64) -> u64 {
        let add = seed | 1;
        let mut sum = 0u64;
        for i in entries(self.slots.len(), self.per_op, seed) {
            for w in &mut self.slots[i].entry.words {
                *w = w.wrapping_add(add);
                sum = sum.wrapping_add(*w);
            }
        }
        sum
    }
}

/// The entries of an operation with `seed` on a buffer of `n > 0` entries, `c` besides the hot
/// one: entry 0, then the first `c` outputs of SplitMix64(`seed`) scaled to `1..n`.
#[inline]
fn entries(n: usize, c: usize, seed: u64) -> impl Iterator<Item = usize> {
    let others = (n - 1) as u64;
    let mut rng = SplitMix64::new(seed);
    std::iter::once(0).chain((0..c).map(move |_| {
        if others == 0 {
            0
        } else {
            1 + rng.below(others) as usize
        }
    }))
}

impl fmt::Debug for SyntheticBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyntheticBuffer")
            .field("n", &self.len())
            .field("c", &self.per_op)
            .finish_non_exhaustive()
    }
}

impl Dispatch for SyntheticBuffer {
    type ReadOperation<'a> = SyntheticRead;
    type WriteOperation = SyntheticWrite;
    type Response = u64;

    #[inline]
    fn dispatch(&self, op: SyntheticRead) -> u64 {
        self.read(op.seed)
    }

    #[inline]
    fn dispatch_mut(&mut self, op: SyntheticWrite) -> u64 {
        self.update(op.seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_cache_line_aligned_with_a_spare_line_between() {
        assert_eq!(std::mem::size_of::<Line>(), 64);
        assert_eq!(std::mem::align_of::<Line>(), 64);
        assert_eq!(std::mem::size_of::<Slot>(), 128);
        let buf = SyntheticBuffer::new(3, 1);
        let base = buf.slots.as_ptr() as usize;
        assert_eq!(base % 64, 0);
        assert_eq!(std::ptr::addr_of!(buf.slots[1].entry) as usize - base, 128);
    }
}
