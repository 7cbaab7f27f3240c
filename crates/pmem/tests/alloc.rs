//! The chunk allocator: bump allocation in chunks, exhaustion, disjointness across threads,
//! the persisted high-water mark after reopen and after simulated crashes.

// Tests spawn plain std threads (the sync shim is for the crate's own code).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use pmem::sim::{systematic, Image, SimConfig};
use pmem::{AllocError, Offset, Region, HEADER_SIZE, MAX_ALIGN};

#[test]
fn bump_allocation_inside_chunks() {
    let r = Region::anonymous(1, 1 << 16).unwrap();
    let mut a = r.allocator(1000); // rounded up to 1024
    let first = a.alloc::<u64>().unwrap();
    assert_eq!(first, Offset(HEADER_SIZE));
    assert_eq!(a.alloc::<u8>().unwrap(), Offset(HEADER_SIZE + 8));
    assert_eq!(a.alloc::<u64>().unwrap(), Offset(HEADER_SIZE + 16)); // aligned up
    assert_eq!(a.alloc::<u128>().unwrap().get() % 16, 0);
    assert_eq!(r.high_water_mark(), Offset(HEADER_SIZE + 1024));
    // Fill the chunk: the next allocation claims a new one.
    let rest = a.current_chunk().unwrap();
    a.alloc_bytes(rest.1.get() - rest.0.get(), 1).unwrap();
    let next = a.alloc::<u64>().unwrap();
    assert_eq!(next, Offset(HEADER_SIZE + 1024));
    assert_eq!(r.high_water_mark(), Offset(HEADER_SIZE + 2048));
}

#[test]
fn large_and_aligned_requests() {
    let r = Region::anonymous(1, 1 << 16).unwrap();
    let mut a = r.allocator(256);
    let big = a.alloc_bytes(5000, 8).unwrap();
    assert!(r.ptr_array::<u8>(big, 5000).is_ok());
    let al = a.alloc_bytes(1, MAX_ALIGN).unwrap();
    assert_eq!(al.get() % MAX_ALIGN, 0);
    for bad in [0, 3, 2 * MAX_ALIGN] {
        assert_eq!(
            a.alloc_bytes(8, bad),
            Err(AllocError::BadAlign { align: bad })
        );
    }
    assert!(matches!(
        a.alloc_array::<u64>(u64::MAX),
        Err(AllocError::Exhausted { .. })
    ));
}

#[test]
fn exhaustion_is_an_error_and_leaves_the_mark() {
    let size = 4096;
    let r = Region::anonymous(1, size).unwrap();
    let mut a = r.allocator(1024);
    let mut n = 0;
    let err = loop {
        match a.alloc::<[u64; 16]>() {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
    };
    // 3 chunks of 1024 fit above the 256-byte header in 4096 bytes, 8 objects each.
    assert_eq!(n, 24);
    assert_eq!(
        err,
        AllocError::Exhausted {
            requested: 1024,
            available: 4096 - 256 - 3 * 1024
        }
    );
    assert!(r.high_water_mark().get() <= size);
    // A smaller chunk still fits.
    assert!(r.allocator(64).alloc::<u64>().is_ok());
    assert!(err.to_string().contains("exhausted"));
}

#[test]
fn threads_get_disjoint_memory() {
    let r = Region::anonymous(1, 1 << 20).unwrap();
    let threads = 4;
    let per = 500;
    let mut all: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut a = r.allocator(512);
                    (0..per)
                        .map(|_| a.alloc::<[u64; 3]>().unwrap().get())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    all.sort_unstable();
    assert_eq!(all.len(), threads * per);
    for w in all.windows(2) {
        assert!(w[1] >= w[0] + 24, "overlap at {w:?}");
    }
    assert!(r.high_water_mark().get() >= *all.last().unwrap() + 24);
}

#[test]
fn high_water_mark_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let last;
    let mark;
    {
        let r = Region::create(&path, 7, 1 << 16).unwrap();
        let mut a = r.allocator(4096);
        for _ in 0..1000 {
            a.alloc::<u64>().unwrap();
        }
        last = a.alloc::<u64>().unwrap();
        mark = r.high_water_mark();
    }
    let r = Region::open(&path, 7).unwrap();
    assert_eq!(r.high_water_mark(), mark);
    let fresh = r.allocator(4096).alloc::<u64>().unwrap();
    assert!(fresh >= mark && fresh > last);
}

#[test]
fn durable_mark_covers_every_chunk_handed_out_at_every_crash_point() {
    // Counting run: record, for each allocation, the events issued so far and the chunk end.
    let mut handed_out: Vec<(u64, u64)> = Vec::new();
    let workload = |r: &Region<pmem::sim::Simulated>, log: &mut Vec<(u64, u64)>| {
        let mut a = r.allocator(64);
        let mut b = r.allocator(64);
        for i in 0..12u64 {
            let (off, size) = if i % 3 == 0 {
                (b.alloc::<[u64; 8]>(), 64)
            } else {
                (a.alloc::<[u64; 4]>(), 32)
            };
            log.push((r.persist().events(), off.unwrap().get() + size));
        }
    };
    // SAFETY: this thread makes every write to the region and every persistence call.
    let counting = unsafe { Region::simulated(3, 1 << 14, SimConfig::new(1)) }.unwrap();
    workload(&counting, &mut handed_out);
    let mut scratch = Vec::new();
    let check = |k, image: Image| {
        // SAFETY: this thread makes every write to the region and every persistence call.
        let rec = unsafe { Region::from_image(&image, 3, SimConfig::new(0)) }
            .map_err(|e| e.to_string())?;
        let mark = rec.high_water_mark().get();
        for &(events, end) in &handed_out {
            if events <= k && mark < end {
                return Err(format!("crash {k}: mark {mark} below handed-out end {end}"));
            }
        }
        Ok(())
    };
    // SAFETY: the workload runs on this thread only.
    let points = unsafe {
        systematic(
            3,
            1 << 14,
            SimConfig::new(1),
            |r| workload(r, &mut scratch),
            check,
        )
    }
    .unwrap();
    assert_eq!(points, 17); // 8 chunk claims of 2 events each, plus the end
}
