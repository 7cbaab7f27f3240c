//! The persistence instructions of the paper's model (PBcomb/PWFcomb, PPoPP'22, §2): `pwb`
//! (persistent write-back of a cache line), `pfence` (orders earlier pwbs before later ones) and
//! `psync` (waits until earlier pwbs are durable), and where they go.

mod hardware;
mod stats;

pub use hardware::{FlushKind, Hardware, NO_FLUSH_ENV};
pub(crate) use stats::{count_pfence, count_psync, count_pwbs};
pub use stats::{reset_stats, stats, PersistStats};

/// Size in bytes of the unit a `pwb` writes back (a cache line on every x86 CPU).
pub const CACHE_LINE: usize = 64;

/// Where `pwb`/`pfence`/`psync` go (notation of the paper's §2).
///
/// Code that must survive crashes calls these at the places its algorithm prescribes; the
/// implementation decides what they do:
///
/// | implementation | `pwb` | `pcopy` | `pfence` | `psync` | `pfence_before_rmw` | counted in [`stats()`] |
/// |---|---|---|---|---|---|---|
/// | [`NoPersist`] | nothing | copy | nothing | nothing | nothing | no |
/// | [`Hardware`] | `clwb`/`clflushopt`/`clflush` per line | non-temporal stores (no-flush mode: a copy) | `sfence` | `sfence` | nothing on Intel, else `sfence` | yes (the Intel no-op is not) |
/// | [`Simulated`](crate::sim::Simulated) | snapshot lines into the thread's pending set | copy, then `pwb` | commit the thread's pending lines to the media image | same as `pfence` | same as `pfence` | yes |
///
/// # Examples
///
/// ```
/// use pmem::{Persist, Hardware};
///
/// fn persist_u64<P: Persist>(p: &P, value: &u64) {
///     p.pwb_val(value); // the safe form: a reference is always mapped memory
///     p.psync();
/// }
///
/// fn persist_raw<P: Persist>(p: &P, value: *const u64) {
///     // SAFETY: the callers below pass a pointer to a live `u64`.
///     unsafe { p.pwb(value.cast(), 8) };
///     p.psync();
/// }
///
/// let x = 42u64;
/// persist_u64(&Hardware::new(), &x);
/// persist_u64(&pmem::NoPersist, &x);
/// persist_raw(&Hardware::new(), &x);
/// ```
pub trait Persist: Send + Sync + 'static {
    /// Writes back every cache line overlapping `[addr, addr + len)` (nothing when `len == 0`).
    ///
    /// Not ordered with other `pwb`s until a `pfence` or `psync`. This is the raw layer;
    /// [`Persist::pwb_val`] is the safe form for anything a reference points to.
    ///
    /// # Safety
    ///
    /// - when `len > 0`, every byte of `[addr, addr + len)` lies in memory mapped in this
    ///   process and stays mapped for the duration of the call (on [`Hardware`] a write-back of
    ///   an unmapped address faults like a read of it would: `clflush` raises #PF/SIGSEGV);
    /// - `addr + len` does not overflow the address space.
    ///
    /// The range need not be initialized nor exclusively owned: a write-back does not read the
    /// bytes into the program, and other threads may store to them concurrently.
    unsafe fn pwb(&self, addr: *const u8, len: usize);

    /// Orders the calling thread's earlier `pwb`s before its later ones (`sfence` on x86).
    fn pfence(&self);

    /// Waits until the calling thread's earlier `pwb`s are durable (`sfence` on x86).
    fn psync(&self);

    /// A `pfence` whose only job is to order the calling thread's earlier `pwb`s before the
    /// atomic read-modify-write (compare-and-swap, swap, fetch-and-op) that the caller performs
    /// next: call it right before that RMW, with no `pwb` and no store to persistent memory in
    /// between. The write-backs are then durable no later than the RMW takes effect, which is
    /// all a `pfence` there gives; nothing is promised about later `pwb`s until the RMW.
    ///
    /// | implementation | what it does |
    /// |---|---|
    /// | default, [`NoPersist`], [`Simulated`](crate::sim::Simulated) | [`Persist::pfence`] (the simulated domain commits the pending lines here, counted as a pfence) |
    /// | [`Hardware`] on an Intel x86-64 CPU | nothing, not counted: the locked RMW orders the write-backs |
    /// | [`Hardware`] on any other CPU | [`Persist::pfence`] (`sfence`) |
    ///
    /// Why nothing on Intel: the Intel SDM (vol. 2, CLWB and CLFLUSHOPT) says "Executions of
    /// the CLWB instruction are ordered with respect to fence instructions and to locked
    /// read-modify-write instructions" (the same of CLFLUSHOPT; CLFLUSH is ordered with writes
    /// and locked instructions too), and every atomic RMW is a locked instruction on x86-64.
    /// AMD's APM (vol. 3, CLWB) says only that CLWB "is weakly ordered with respect to other
    /// instructions that operate on memory" and "to create strict ordering of CLWB use a
    /// store-ordering instruction such as SFENCE": it names no locked instruction, so an AMD
    /// CPU keeps the `sfence`.
    ///
    /// It covers `pwb`s only: the non-temporal stores of [`Persist::pcopy`] still need a
    /// `pfence` or `psync`.
    ///
    /// Why the crash model is unchanged: the simulated domain commits the lines at this call,
    /// hardware at the latest when the RMW takes effect. Nothing persistent is written between
    /// the two, so a crash leaves the same images in both: before this call, each pending line
    /// survives or not; after the RMW, all are committed; in between, the simulation shows
    /// them committed (hardware may too), and hardware's other images there (some lines not
    /// yet written back) are those of a crash just before this call.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicU64, Ordering};
    /// use pmem::{NoPersist, Persist};
    /// let record = [1u64; 8];
    /// let index = AtomicU64::new(0);
    /// let p = NoPersist;
    /// p.pwb_val(&record);
    /// p.pfence_before_rmw(); // the record is durable before the CAS publishes it
    /// assert!(index.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok());
    /// p.pwb_val(&index);
    /// p.psync();
    /// ```
    #[inline]
    fn pfence_before_rmw(&self) {
        self.pfence();
    }

    /// Copies `src` to `dst` and writes the copied bytes back: the same, for durability, as a
    /// copy followed by `pwb(dst, src.len())` (durable once a later `pfence`/`psync` of this
    /// thread completes), which is what the default does. Counted as `pwb` counts.
    ///
    /// [`Hardware`] stores the 8-byte-aligned middle of `dst` with non-temporal stores
    /// (`movnti`): they go to memory without reading the line for ownership and leave nothing in
    /// the cache to write back, so the `sfence` that ends the commit waits for less (an append
    /// to a log: issue 20, nr-durable's memory mode). The bytes before and after that middle are
    /// copied and written back with the value's write-back instruction.
    ///
    /// # Safety
    ///
    /// - `[dst, dst + src.len())` lies in memory mapped writable in this process, valid for
    ///   writes for the duration of the call, and does not overlap `src`;
    /// - no other thread reads or writes those bytes during the call (a plain copy races with
    ///   them);
    /// - `dst + src.len()` does not overflow the address space.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Hardware, Persist};
    /// let mut log = [0u8; 40];
    /// let entry = *b"a 32-byte entry, padded to 32 B.";
    /// let hw = Hardware::new();
    /// // SAFETY: bytes 3..35 of `log`, a live local that nothing else accesses.
    /// unsafe { hw.pcopy(log.as_mut_ptr().add(3), &entry) };
    /// hw.psync(); // the copy is durable (on persistent memory) once the fence completes
    /// assert_eq!(&log[3..35], &entry);
    /// ```
    #[inline]
    unsafe fn pcopy(&self, dst: *mut u8, src: &[u8]) {
        // SAFETY: `dst` is valid for `src.len()` bytes of writes and does not overlap `src`
        // (the caller's contract), and nothing else accesses those bytes during the call.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        // SAFETY: the same range, mapped (the caller's contract).
        unsafe { self.pwb(dst, src.len()) };
    }

    /// `pwb` of the bytes of `value`: the safe form of [`Persist::pwb`] (a reference always
    /// points to mapped memory of its size).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Persist, NoPersist};
    /// let v = [1u64; 16];
    /// NoPersist.pwb_val(&v); // 2 cache lines on a persisting implementation
    /// NoPersist.pfence();
    /// ```
    #[inline]
    fn pwb_val<T: ?Sized>(&self, value: &T) {
        // SAFETY:
        // - `value` is a live reference, so its `size_of_val` bytes are mapped (dereferenceable)
        //   for at least the duration of this call, and do not wrap the address space; a
        //   zero-sized value gives `len == 0`, for which nothing is required.
        unsafe {
            self.pwb(
                (value as *const T).cast::<u8>(),
                core::mem::size_of_val(value),
            )
        };
    }

    /// A store point: the program has just stored `value` to persistent memory, outside any
    /// persistence instruction. Real backends do nothing (an empty inlined default, so the call
    /// compiles to nothing); the simulated domain may evict the line holding `value` or crash
    /// right here ([`SimConfig::store_points`](crate::sim::SimConfig::store_points),
    /// [`SimConfig::crash_at_store`](crate::sim::SimConfig::crash_at_store)), so a value that
    /// the program overwrites before the next persistence event can still reach the media, as
    /// it could on hardware (issue 11, defect 7).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{NoPersist, Persist};
    /// let link = 7u64; // just stored to a durable word
    /// NoPersist.stored(&link); // nothing on real backends
    /// ```
    #[inline(always)]
    fn stored<T: ?Sized>(&self, value: &T) {
        let _ = value;
    }
}

/// Volatile mode: every persistence instruction is a no-op (zero-sized, inlined away).
///
/// Used for the volatile variants of the persistent algorithms, and by
/// [`Region::anonymous`](crate::Region::anonymous).
///
/// # Examples
///
/// ```
/// use pmem::{Persist, NoPersist};
/// pmem::reset_stats();
/// NoPersist.pwb_val(&[0u8; 4096]);
/// NoPersist.psync();
/// assert_eq!(pmem::stats(), pmem::PersistStats::default());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoPersist;

impl Persist for NoPersist {
    #[inline(always)]
    unsafe fn pwb(&self, _addr: *const u8, _len: usize) {}

    #[inline(always)]
    fn pfence(&self) {}

    #[inline(always)]
    fn psync(&self) {}
}

/// The number of cache lines overlapping `[addr, addr + len)`, and the first line's address.
#[inline]
pub(crate) fn line_span(addr: *const u8, len: usize) -> (usize, usize) {
    if len == 0 {
        return (addr as usize & !(CACHE_LINE - 1), 0);
    }
    let start = addr as usize & !(CACHE_LINE - 1);
    let last = (addr as usize).saturating_add(len - 1) & !(CACHE_LINE - 1);
    (start, (last - start) / CACHE_LINE + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_span_counts_overlapping_lines() {
        let a = 0x1000 as *const u8;
        assert_eq!(line_span(a, 0).1, 0);
        assert_eq!(line_span(a, 1), (0x1000, 1));
        assert_eq!(line_span(a, 64), (0x1000, 1));
        assert_eq!(line_span(a, 65), (0x1000, 2));
        let b = 0x103f as *const u8;
        assert_eq!(line_span(b, 1), (0x1000, 1));
        assert_eq!(line_span(b, 2), (0x1000, 2));
        assert_eq!(line_span(a, 4096).1, 64);
    }
}
