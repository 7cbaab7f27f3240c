//! `Hardware` and `NoPersist`: flush counters, every supported write-back instruction.

// Tests spawn plain std threads (the sync shim is for the crate's own code).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use pmem::{FlushKind, Hardware, NoPersist, Persist, PersistStats, Region, CACHE_LINE};

#[repr(C, align(64))]
struct Lines([u8; 64 * 8]);

fn kinds() -> Vec<Hardware> {
    [
        FlushKind::Clwb,
        FlushKind::Clflushopt,
        FlushKind::Clflush,
        FlushKind::NoFlush,
    ]
    .into_iter()
    .filter_map(Hardware::with_kind)
    .collect()
}

#[test]
fn pwb_counts_every_overlapping_line() {
    let buf = Lines([1; 64 * 8]);
    let base = buf.0.as_ptr();
    assert!(!kinds().is_empty());
    for hw in kinds() {
        pmem::reset_stats();
        // SAFETY: 3 lines inside `buf`.
        unsafe { hw.pwb(base, 3 * CACHE_LINE) }; // exactly 3 lines
        assert_eq!(pmem::stats().pwbs, 3, "{:?}", hw.kind());
        // SAFETY: bytes 63..65 of `buf` (63 + 2 <= the buffer's length).
        unsafe { hw.pwb(base.add(63), 2) }; // straddles a boundary: 2 lines
        assert_eq!(pmem::stats().pwbs, 5);
        // SAFETY: bytes 10..458 of `buf` (458 <= the buffer's length).
        unsafe { hw.pwb(base.add(10), 64 * 7) }; // 10..458: 8 lines
        assert_eq!(pmem::stats().pwbs, 13);
        // SAFETY: a zero-length range needs nothing.
        unsafe { hw.pwb(base, 0) };
        assert_eq!(pmem::stats().pwbs, 13);
        hw.pfence();
        hw.psync();
        hw.psync();
        assert_eq!(
            pmem::stats(),
            PersistStats {
                pwbs: 13,
                pfences: 1,
                psyncs: 2
            }
        );
    }
}

/// `pcopy` copies exactly its bytes whatever the destination's alignment and the length (the
/// streamed 8-byte middle, and the head and tail around it), and counts the lines it covers.
#[test]
fn pcopy_copies_exactly_its_bytes_at_every_alignment() {
    let src: Vec<u8> = (1..=200u8).collect();
    for hw in kinds().into_iter().chain([Hardware::new()]) {
        for at in 0..16 {
            for len in 0..=130 {
                let mut buf = Lines([0xEE; 64 * 8]);
                pmem::reset_stats();
                // SAFETY: bytes `at .. at + len` of `buf` (146 <= its length), a local that
                // nothing else accesses; `src` is a separate allocation.
                unsafe { hw.pcopy(buf.0.as_mut_ptr().add(at), &src[..len]) };
                hw.psync();
                let ctx = format!("{:?}, at {at}, len {len}", hw.kind());
                assert_eq!(&buf.0[at..at + len], &src[..len], "{ctx}");
                assert!(buf.0[..at].iter().all(|&b| b == 0xEE), "{ctx}: before");
                assert!(buf.0[at + len..].iter().all(|&b| b == 0xEE), "{ctx}: after");
                let lines = if len == 0 {
                    0
                } else {
                    (at + len - 1) / 64 - at / 64 + 1
                };
                assert_eq!(pmem::stats().pwbs, lines as u64, "{ctx}: lines");
            }
        }
    }
}

#[test]
fn counters_are_per_thread() {
    let hw = Hardware::new();
    let buf = Lines([0; 64 * 8]);
    pmem::reset_stats();
    // SAFETY: inside `buf`.
    unsafe { hw.pwb(buf.0.as_ptr(), 64) };
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(pmem::stats(), PersistStats::default());
            hw.psync();
            assert_eq!(pmem::stats().psyncs, 1);
        });
    });
    assert_eq!(
        pmem::stats(),
        PersistStats {
            pwbs: 1,
            pfences: 0,
            psyncs: 0
        }
    );
    let before = pmem::stats();
    hw.pfence();
    assert_eq!(pmem::stats().since(before).pfences, 1);
}

#[test]
fn no_persist_does_not_count() {
    pmem::reset_stats();
    let buf = [0u8; 256];
    // SAFETY: inside `buf`.
    unsafe { NoPersist.pwb(buf.as_ptr(), 256) };
    NoPersist.pwb_val(&buf);
    NoPersist.pfence();
    NoPersist.psync();
    assert_eq!(pmem::stats(), PersistStats::default());
}

#[test]
fn detect_prefers_clwb_then_clflushopt() {
    let kind = Hardware::detect().kind();
    if Hardware::with_kind(FlushKind::Clwb).is_some() {
        assert_eq!(kind, FlushKind::Clwb);
    } else if Hardware::with_kind(FlushKind::Clflushopt).is_some() {
        assert_eq!(kind, FlushKind::Clflushopt);
    } else if cfg!(target_arch = "x86_64") {
        assert_eq!(kind, FlushKind::Clflush);
    } else {
        assert_eq!(kind, FlushKind::FenceOnly);
    }
    assert_eq!(Hardware::no_flush().kind(), FlushKind::NoFlush);
}

#[test]
fn every_kind_flushes_a_file_region() {
    let dir = tempfile::tempdir().unwrap();
    for (i, hw) in kinds().into_iter().enumerate() {
        let path = dir.path().join(format!("r{i}"));
        let r = Region::create_with(&path, 1, 1 << 16, hw).unwrap();
        let off = r.allocator(4096).alloc_array::<u64>(512).unwrap();
        let p = r.ptr_array::<u64>(off, 512).unwrap();
        for k in 0..512 {
            // SAFETY: 512 elements checked by `ptr_array`; single-threaded.
            unsafe { p.as_ptr().add(k).write(k as u64) };
        }
        pmem::reset_stats();
        // SAFETY: inside the region, mapped while it lives.
        unsafe { r.persist().pwb(p.as_ptr().cast(), 4096) };
        r.persist().psync();
        assert_eq!(pmem::stats().pwbs, 64, "{:?}", hw.kind());
        r.set_root(off).unwrap();
        drop(r);
        let r = Region::open(&path, 1).unwrap();
        let p = r.ptr_array::<u64>(r.root().unwrap(), 512).unwrap();
        // SAFETY: element 511 is in bounds; single-threaded.
        assert_eq!(unsafe { p.as_ptr().add(511).read() }, 511);
    }
}

/// The first line of the kernel's `/proc/cpuinfo` starting with `key` (`None` when the file or
/// the key is missing: not Linux, or not x86).
fn cpuinfo_line(key: &str) -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo
        .lines()
        .find(|l| l.starts_with(key))
        .map(str::to_owned)
}

#[test]
fn cpuid_detection_agrees_with_the_kernel() {
    // The kernel's own CPUID decoding, independent of this crate's bit numbers.
    let Some(flags) = cpuinfo_line("flags") else {
        return; // not Linux, or not x86: nothing independent to compare with
    };
    let has = |name: &str| flags.split_whitespace().any(|f| f == name);
    let supported = |kind| Hardware::with_kind(kind).is_some();
    assert_eq!(supported(FlushKind::Clwb), has("clwb"), "clwb: {flags}");
    assert_eq!(
        supported(FlushKind::Clflushopt),
        has("clflushopt"),
        "clflushopt: {flags}"
    );
    assert_eq!(supported(FlushKind::Clflush), has("clflush"), "clflush");
}

/// `Region::create` writes the fresh header back and waits for it (a pwb of every header line,
/// then a psync) before returning: a crash right after `create` must find the header. The
/// simulator cannot see a file mapping's flushes, so the per-thread counters check it (the
/// mutation table's "create header pwb/psync" rows).
#[test]
fn create_writes_back_the_header_before_returning() {
    let dir = tempfile::tempdir().unwrap();
    pmem::reset_stats();
    let region = Region::create(dir.path().join("r"), 1, 1 << 16).unwrap();
    let s = pmem::stats();
    assert!(
        s.pwbs >= pmem::HEADER_SIZE / CACHE_LINE as u64,
        "every header line written back: {s:?}"
    );
    assert!(s.psyncs >= 1, "and waited for: {s:?}");
    drop(region);
}

/// `pfence_before_rmw` issues (and counts) an `sfence` except on an Intel CPU, where a locked
/// read-modify-write orders the write-backs by the manual; the vendor comes from the kernel's
/// `/proc/cpuinfo`, independent of this crate's CPUID decoding. The no-flush mode keeps it.
#[test]
fn pfence_before_rmw_is_a_fence_except_on_intel() {
    let Some(vendor) = cpuinfo_line("vendor_id") else {
        return; // not Linux, or not x86: nothing independent to compare with
    };
    let intel = vendor.split(':').nth(1).map(str::trim) == Some("GenuineIntel");
    let fences = |hw: Hardware| {
        let before = pmem::stats();
        hw.pfence_before_rmw();
        pmem::stats().since(before)
    };
    for hw in kinds() {
        let expect = u64::from(!intel || hw.kind() == FlushKind::NoFlush);
        let got = fences(hw);
        assert_eq!(
            (got.pfences, hw.rmw_orders_write_backs()),
            (expect, expect == 0),
            "{:?} on {vendor}",
            hw.kind()
        );
        assert_eq!((got.pwbs, got.psyncs), (0, 0), "{:?}", hw.kind());
    }
    assert_eq!(fences(Hardware::no_flush()).pfences, 1, "no-flush mode");
}
