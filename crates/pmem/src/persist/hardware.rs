//! Real persistence instructions: `clwb`, else `clflushopt`, else `clflush`, chosen once per
//! [`Hardware`] value with CPUID; `sfence` for both `pfence` and `psync`; `pcopy` by
//! non-temporal stores (`movnti`).
//!
//! `_mm_clwb`/`_mm_clflushopt` are not available on stable `core::arch`, so the write-backs are
//! inline assembly.

use super::{count_pfence, count_psync, count_pwbs, line_span, Persist, CACHE_LINE};

/// Environment variable: when set to `1` (or `true`), [`Hardware::new`] selects
/// [`FlushKind::NoFlush`] (for eADR platforms, whose caches are already in the persistence
/// domain).
pub const NO_FLUSH_ENV: &str = "PMEM_NO_FLUSH";

/// How [`Hardware`] implements `pwb`.
///
/// # Examples
///
/// ```
/// use pmem::{FlushKind, Hardware};
/// let kind = Hardware::detect().kind();
/// if cfg!(target_arch = "x86_64") {
///     assert!(matches!(kind, FlushKind::Clwb | FlushKind::Clflushopt | FlushKind::Clflush));
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlushKind {
    /// `clwb`: writes the line back and may keep it cached (the fastest; Skylake-SP and later).
    Clwb,
    /// `clflushopt`: writes back and invalidates, weakly ordered (needs `sfence`).
    Clflushopt,
    /// `clflush`: writes back and invalidates, ordered with other stores (slowest; every x86-64).
    Clflush,
    /// No write-back (eADR platforms: the caches are persistent); `sfence` still orders.
    /// Selected by [`Hardware::no_flush`] or `PMEM_NO_FLUSH=1`.
    NoFlush,
    /// Non-x86 targets: `pwb` does nothing and `pfence`/`psync` are full memory fences. Data is
    /// *not* made durable by this crate there; it only keeps the code compiling and running.
    FenceOnly,
}

/// The real persistence instructions of this CPU.
///
/// `pwb` writes back each cache line of the range with the best instruction the CPU has
/// ([`FlushKind`]), `pfence` and `psync` are both `sfence` (on x86 a write-back is durable once a
/// later `sfence` completes). Every call is counted in [`stats`](crate::stats).
///
/// Select the eADR no-flush mode with [`Hardware::no_flush`], or with the environment variable
/// `PMEM_NO_FLUSH=1` read by [`Hardware::new`] (which is what [`Region::create`](crate::Region::create)
/// and [`Region::open`](crate::Region::open) use).
///
/// # Examples
///
/// ```
/// use pmem::{Hardware, Persist};
/// let hw = Hardware::new();
/// let data = [7u64; 8];
/// hw.pwb_val(&data);
/// hw.psync();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hardware {
    kind: FlushKind,
    /// Whether a locked read-modify-write orders this CPU's earlier write-backs by the
    /// vendor's manual (Intel), so that [`Persist::pfence_before_rmw`] issues nothing.
    rmw_orders_write_backs: bool,
}

impl Default for Hardware {
    fn default() -> Self {
        Self::new()
    }
}

impl Hardware {
    /// The best write-back instruction of this CPU, or [`FlushKind::NoFlush`] when the
    /// environment variable `PMEM_NO_FLUSH` is `1` or `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// let hw = pmem::Hardware::new();
    /// println!("pwb is {:?}", hw.kind());
    /// ```
    pub fn new() -> Self {
        match std::env::var(NO_FLUSH_ENV) {
            Ok(v) if v == "1" || v.eq_ignore_ascii_case("true") => Self::no_flush(),
            _ => Self::detect(),
        }
    }

    /// The best write-back instruction of this CPU, ignoring the environment.
    ///
    /// # Examples
    ///
    /// ```
    /// let hw = pmem::Hardware::detect();
    /// assert_ne!(hw.kind(), pmem::FlushKind::NoFlush);
    /// ```
    pub fn detect() -> Self {
        Self {
            kind: detect_kind(),
            rmw_orders_write_backs: rmw_orders_write_backs(),
        }
    }

    /// eADR mode: `pwb` writes nothing back (but is still counted), fences stay (including the
    /// one of [`Persist::pfence_before_rmw`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Hardware, FlushKind};
    /// assert_eq!(Hardware::no_flush().kind(), FlushKind::NoFlush);
    /// ```
    pub const fn no_flush() -> Self {
        Self {
            kind: FlushKind::NoFlush,
            rmw_orders_write_backs: false,
        }
    }

    /// A specific write-back instruction, if this CPU supports it (`None` otherwise). For
    /// comparing instructions in benches and tests.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Hardware, FlushKind};
    /// if cfg!(target_arch = "x86_64") {
    ///     assert!(Hardware::with_kind(FlushKind::Clflush).is_some());
    /// }
    /// assert!(Hardware::with_kind(FlushKind::NoFlush).is_some());
    /// ```
    pub fn with_kind(kind: FlushKind) -> Option<Self> {
        supports(kind).then_some(Self {
            kind,
            rmw_orders_write_backs: kind != FlushKind::NoFlush && rmw_orders_write_backs(),
        })
    }

    /// Whether [`Persist::pfence_before_rmw`] issues nothing here: `true` on an Intel x86-64
    /// CPU (its manual orders write-backs before locked read-modify-writes), `false` on other
    /// CPUs and in the no-flush mode, where it is an `sfence` like [`Persist::pfence`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::Hardware;
    /// assert!(!Hardware::no_flush().rmw_orders_write_backs());
    /// let _ = Hardware::new().rmw_orders_write_backs(); // true on Intel
    /// ```
    pub const fn rmw_orders_write_backs(&self) -> bool {
        self.rmw_orders_write_backs
    }

    /// The write-back instruction this value uses.
    ///
    /// # Examples
    ///
    /// ```
    /// let _ = pmem::Hardware::new().kind();
    /// ```
    pub const fn kind(&self) -> FlushKind {
        self.kind
    }
}

impl Persist for Hardware {
    #[inline]
    unsafe fn pwb(&self, addr: *const u8, len: usize) {
        let (start, lines) = line_span(addr, len);
        count_pwbs(lines);
        for i in 0..lines {
            let line = (start + i * CACHE_LINE) as *const u8;
            // SAFETY:
            // - `line` is the start of a cache line overlapping `[addr, addr + len)`, which the
            //   caller guarantees is mapped (a line is never split across pages, so a line
            //   holding one mapped byte is wholly mapped).
            unsafe { write_back(self.kind, line) };
        }
    }

    #[inline]
    unsafe fn pcopy(&self, dst: *mut u8, src: &[u8]) {
        count_pwbs(line_span(dst, src.len()).1);
        match self.kind {
            FlushKind::Clwb | FlushKind::Clflushopt | FlushKind::Clflush => {
                // SAFETY: the caller's `pcopy` contract is `copy_streaming`'s.
                unsafe { copy_streaming(self.kind, dst, src) }
            }
            // Persistent caches (or no persistence at all): a copy is all there is to do.
            FlushKind::NoFlush | FlushKind::FenceOnly => {
                // SAFETY: `dst` is valid for `src.len()` bytes of writes and does not overlap
                // `src`, and nothing else accesses those bytes (the caller's contract).
                unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
            }
        }
    }

    #[inline]
    fn pfence(&self) {
        count_pfence();
        store_fence(self.kind);
    }

    #[inline]
    fn psync(&self) {
        count_psync();
        store_fence(self.kind);
    }

    /// Nothing on Intel (see [`Persist::pfence_before_rmw`] for the manuals' wording), else
    /// [`Persist::pfence`].
    #[inline]
    fn pfence_before_rmw(&self) {
        if !self.rmw_orders_write_backs {
            self.pfence();
        }
    }
}

/// Whether this CPU is an Intel one (CPUID leaf 0 vendor "GenuineIntel"), whose SDM orders
/// CLWB, CLFLUSHOPT and CLFLUSH before later locked read-modify-write instructions.
#[cfg(target_arch = "x86_64")]
fn rmw_orders_write_backs() -> bool {
    use core::arch::x86_64::__cpuid;
    // `__cpuid` became a safe function in later Rust releases; the block keeps both working.
    #[allow(unused_unsafe)]
    // SAFETY:
    // - CPUID exists on every x86-64 CPU; leaf 0 is always valid.
    let r = unsafe { __cpuid(0) };
    // "GenuineIntel" is EBX, EDX, ECX in that order.
    (r.ebx, r.edx, r.ecx)
        == (
            u32::from_le_bytes(*b"Genu"),
            u32::from_le_bytes(*b"ineI"),
            u32::from_le_bytes(*b"ntel"),
        )
}

/// Not x86-64: nothing is known to order write-backs but the fence.
#[cfg(not(target_arch = "x86_64"))]
fn rmw_orders_write_backs() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
fn detect_kind() -> FlushKind {
    let (clwb, clflushopt) = leaf7_bits();
    if clwb {
        FlushKind::Clwb
    } else if clflushopt {
        FlushKind::Clflushopt
    } else {
        // CLFLUSH (CPUID.1:EDX[19]) is part of every x86-64 CPU.
        FlushKind::Clflush
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_kind() -> FlushKind {
    FlushKind::FenceOnly
}

/// (CLWB, CLFLUSHOPT) from CPUID leaf 7, sub-leaf 0, EBX bits 24 and 23.
#[cfg(target_arch = "x86_64")]
fn leaf7_bits() -> (bool, bool) {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    // `__cpuid` became a safe function in later Rust releases; the block keeps both working.
    #[allow(unused_unsafe)]
    // SAFETY:
    // - CPUID exists on every x86-64 CPU; leaf 0 is always valid.
    let max_leaf = unsafe { __cpuid(0) }.eax;
    if max_leaf < 7 {
        return (false, false);
    }
    #[allow(unused_unsafe)]
    // SAFETY:
    // - leaf 7 is at most the maximum supported leaf (checked above).
    let ebx = unsafe { __cpuid_count(7, 0) }.ebx;
    (ebx & (1 << 24) != 0, ebx & (1 << 23) != 0)
}

fn supports(kind: FlushKind) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let (clwb, clflushopt) = leaf7_bits();
        match kind {
            FlushKind::Clwb => clwb,
            FlushKind::Clflushopt => clflushopt,
            FlushKind::Clflush | FlushKind::NoFlush => true,
            FlushKind::FenceOnly => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        matches!(kind, FlushKind::NoFlush | FlushKind::FenceOnly)
    }
}

/// Writes back the cache line at `line`.
///
/// # Safety
///
/// - `line` is mapped memory of this process (an unmapped address faults).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn write_back(kind: FlushKind, line: *const u8) {
    // The asm blocks are deliberately not `nomem`: the compiler must treat them as touching
    // memory, so stores before a pwb in program order are not moved after it.
    match kind {
        // SAFETY:
        // - `clwb` only writes back a cache line and never changes memory contents; the caller
        //   of `write_back` guarantees `line` is mapped;
        // - the kind was selected only if CPUID reports the instruction.
        FlushKind::Clwb => unsafe {
            core::arch::asm!("clwb [{0}]", in(reg) line, options(nostack, preserves_flags));
        },
        // SAFETY:
        // - as for `clwb`: a write-back (plus invalidation) does not change memory contents;
        // - the kind was selected only if CPUID reports the instruction.
        FlushKind::Clflushopt => unsafe {
            core::arch::asm!("clflushopt [{0}]", in(reg) line, options(nostack, preserves_flags));
        },
        // SAFETY:
        // - as for `clwb`; `clflush` exists on every x86-64 CPU.
        FlushKind::Clflush => unsafe {
            core::arch::asm!("clflush [{0}]", in(reg) line, options(nostack, preserves_flags));
        },
        FlushKind::NoFlush | FlushKind::FenceOnly => {}
    }
}

/// Writes back the cache line at `line` (nothing on this target).
///
/// # Safety
///
/// - `line` is mapped memory of this process (the same contract as on x86-64).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn write_back(_kind: FlushKind, _line: *const u8) {}

/// `pcopy` on a flushing kind: the 8-byte words of `dst` that `src` fills entirely by
/// non-temporal stores, the bytes before and after them (at most 7 each, one line each) by a copy
/// and a write-back of their line.
///
/// # Safety
///
/// The contract of [`Persist::pcopy`].
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn copy_streaming(kind: FlushKind, dst: *mut u8, src: &[u8]) {
    let len = src.len();
    let head = dst.align_offset(8).min(len);
    let words = (len - head) / 8;
    let tail = len - head - words * 8;
    // The head and the tail are empty for an 8-byte-aligned append of whole words (nr-durable's
    // frames): no copy call for them then.
    if head > 0 {
        // SAFETY: `[dst, dst + head)` is the start of the destination, `src[..head]` of the
        // source; valid, non-overlapping and not accessed by others (the caller's contract).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, head) };
        // SAFETY: the head's bytes lie in one aligned 8-byte word, so in one line, mapped
        // (the caller's contract).
        unsafe { write_back(kind, dst) };
    }
    for w in 0..words {
        let at = head + w * 8;
        // SAFETY: `at + 8 <= len`, so the 8 bytes are inside `src`; read unaligned.
        let value = unsafe { src.as_ptr().add(at).cast::<u64>().read_unaligned() };
        // SAFETY: `dst + at` is 8-byte aligned (`head` aligned it) and its 8 bytes lie inside
        // the destination, valid for writes (the caller's contract); SSE2, which `movnti`
        // needs, is part of every x86-64 CPU.
        unsafe { core::arch::x86_64::_mm_stream_si64(dst.add(at).cast::<i64>(), value as i64) };
    }
    if tail > 0 {
        let rest = head + words * 8;
        // SAFETY: the last `tail` bytes of the destination and of the source, as for the head.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr().add(rest), dst.add(rest), tail) };
        // SAFETY: as for the head: the tail lies in the 8-byte word at `dst + rest`.
        unsafe { write_back(kind, dst.add(rest)) };
    }
}

/// Non-x86 targets: the flushing kinds do not exist there (`supports` refuses them).
///
/// # Safety
///
/// The contract of [`Persist::pcopy`](super::Persist::pcopy).
#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_streaming(_kind: FlushKind, dst: *mut u8, src: &[u8]) {
    // SAFETY: the caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn store_fence(_kind: FlushKind) {
    // SAFETY:
    // - `sfence` only orders stores and write-backs; it has no operands and touches no memory
    //   (not `nomem`, so it is also a compiler barrier).
    unsafe {
        core::arch::asm!("sfence", options(nostack, preserves_flags));
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn store_fence(_kind: FlushKind) {
    crate::sync::full_fence();
}
