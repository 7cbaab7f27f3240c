//! Per-thread counters of persistence instructions, so benches can report pwbs per operation as
//! the papers do.
//!
//! Plain thread-local `Cell`s: each thread counts only its own instructions, nothing is shared,
//! so nothing here needs the sync shim.

use std::cell::Cell;

thread_local! {
    static COUNTERS: Cell<PersistStats> = const { Cell::new(PersistStats::ZERO) };
}

/// Counts of persistence instructions issued by one thread.
///
/// [`Hardware`](crate::Hardware) and [`Simulated`](crate::sim::Simulated) count (also in
/// no-flush mode, so counts compare across platforms); [`NoPersist`](crate::NoPersist) does not.
///
/// # Examples
///
/// ```
/// use pmem::{Hardware, Persist};
/// pmem::reset_stats();
/// let buf = [0u8; 256];
/// let hw = Hardware::new();
/// hw.pwb_val(&buf);
/// hw.pfence();
/// let s = pmem::stats();
/// assert!(s.pwbs >= 4 && s.pwbs <= 5); // 256 bytes span 4 or 5 cache lines
/// assert_eq!((s.pfences, s.psyncs), (1, 0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PersistStats {
    /// Cache lines written back (a `pwb` over `n` lines counts `n`).
    pub pwbs: u64,
    /// `pfence` calls.
    pub pfences: u64,
    /// `psync` calls.
    pub psyncs: u64,
}

impl PersistStats {
    const ZERO: Self = Self {
        pwbs: 0,
        pfences: 0,
        psyncs: 0,
    };

    /// The counts since `earlier` (a value of [`stats`] taken before), saturating at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Hardware, Persist};
    /// let before = pmem::stats();
    /// Hardware::new().psync();
    /// assert_eq!(pmem::stats().since(before).psyncs, 1);
    /// ```
    #[must_use]
    pub fn since(self, earlier: Self) -> Self {
        Self {
            pwbs: self.pwbs.saturating_sub(earlier.pwbs),
            pfences: self.pfences.saturating_sub(earlier.pfences),
            psyncs: self.psyncs.saturating_sub(earlier.psyncs),
        }
    }
}

/// This thread's persistence-instruction counts since it started (or since [`reset_stats`]).
///
/// # Examples
///
/// ```
/// pmem::reset_stats();
/// assert_eq!(pmem::stats(), pmem::PersistStats::default());
/// ```
pub fn stats() -> PersistStats {
    COUNTERS.with(Cell::get)
}

/// Sets this thread's counters to zero.
///
/// # Examples
///
/// ```
/// use pmem::{Hardware, Persist};
/// Hardware::new().pfence();
/// pmem::reset_stats();
/// assert_eq!(pmem::stats().pfences, 0);
/// ```
pub fn reset_stats() {
    COUNTERS.with(|c| c.set(PersistStats::ZERO));
}

#[inline]
fn update(f: impl FnOnce(&mut PersistStats)) {
    // `try_with`: counting during thread teardown (a destructor that persists) is skipped
    // rather than panicking.
    let _ = COUNTERS.try_with(|c| {
        let mut s = c.get();
        f(&mut s);
        c.set(s);
    });
}

#[inline]
pub(crate) fn count_pwbs(lines: usize) {
    update(|s| s.pwbs = s.pwbs.wrapping_add(lines as u64));
}

#[inline]
pub(crate) fn count_pfence() {
    update(|s| s.pfences = s.pfences.wrapping_add(1));
}

#[inline]
pub(crate) fn count_psync() {
    update(|s| s.psyncs = s.psyncs.wrapping_add(1));
}
