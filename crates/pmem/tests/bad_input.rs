//! Hostile region contents with a *valid* checksum: the byte-mutation tests elsewhere almost
//! never get past the checksum, so the size, root and high-water-mark checks (and everything a
//! region that opens lets a caller do) are attacked here with forged headers.

use pmem::sim::{Image, SimConfig, Simulated};
use pmem::{Offset, Region, RegionError, HEADER_SIZE, MAGIC, MIN_REGION_SIZE, ROOT_SLOTS};
use proptest::prelude::*;

const LAYOUT: u64 = 0xBAD;

/// FNV-1a 64 over the little-endian bytes of header words 0..7 (the format's checksum).
/// Recovers `image` as a simulated region, for use by the calling thread only.
fn recover(image: &Image) -> Result<Region<Simulated>, RegionError> {
    // SAFETY: the tests of this file make every write to the region and every persistence call
    // on the thread that recovered it.
    unsafe { Region::from_image(image, LAYOUT, SimConfig::new(0)) }
}

fn checksum(words: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// An image of `len` bytes whose header claims `size` bytes, with the given mutable fields and
/// a correct checksum.
fn forged(len: usize, size: u64, user: u64, roots: &[u64; ROOT_SLOTS], hwm: u64) -> Vec<u8> {
    let mut words = vec![0u64; len.div_ceil(8).max(HEADER_SIZE as usize / 8)];
    words[0] = MAGIC;
    words[1] = pmem::FORMAT_VERSION;
    words[2] = LAYOUT;
    words[3] = size;
    words[4] = user;
    words[7] = checksum(&words[..7]);
    words[8..8 + ROOT_SLOTS].copy_from_slice(roots);
    words[16] = hwm;
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    bytes.truncate(len);
    bytes
}

/// Interesting values around the region's boundaries, plus anything.
fn edge(len: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(8),
        Just(HEADER_SIZE - 8),
        Just(HEADER_SIZE),
        Just(HEADER_SIZE + 1),
        Just(len.saturating_sub(64)),
        Just(len.saturating_sub(8)),
        Just(len.saturating_sub(1)),
        Just(len),
        Just(len + 64),
        Just(u64::MAX),
        Just(u64::MAX - 63),
        Just(1 << 63),
        (0..len + 128),
        any::<u64>(),
    ]
}

fn case() -> impl Strategy<Value = (usize, u64, u64, [u64; ROOT_SLOTS], u64)> {
    // Mostly plausible lengths (multiples of 64 from the minimum up), sometimes anything.
    prop_oneof![3 => (5usize..48).prop_map(|k| k * 64), 1 => 0usize..3000].prop_flat_map(|len| {
        let l = len as u64;
        (
            Just(len),
            prop_oneof![6 => Just(l), 1 => Just(l + 64), 1 => Just(l.saturating_sub(64)), 2 => edge(l)],
            prop_oneof![8 => Just(HEADER_SIZE), 1 => edge(l)],
            prop::array::uniform8(prop_oneof![24 => Just(0), 1 => edge(l)]),
            prop_oneof![
                Just(HEADER_SIZE),
                Just(l),
                (HEADER_SIZE / 64..=l.max(HEADER_SIZE) / 64).prop_map(|k| k * 64),
                edge(l)
            ],
        )
    })
}

/// Everything a caller may do with a region that opened; panics on any inconsistency.
fn use_region(region: &Region<pmem::sim::Simulated>, requests: &[(u64, u32)], probes: &[u64]) {
    let len = region.len();
    let base = region.base().as_ptr() as usize;
    for i in 0..ROOT_SLOTS {
        if let Some(root) = region.root_slot(i).unwrap() {
            assert!(root.get() >= HEADER_SIZE && root.get() < len, "root {root}");
            let _ = region.ptr::<u64>(root);
        }
    }
    let mark = region.high_water_mark().get();
    assert!((HEADER_SIZE..=len).contains(&mark) && mark.is_multiple_of(64));
    let mut alloc = region.allocator(128);
    let mut got: Vec<(u64, u64)> = Vec::new();
    for &(size, align_log) in requests {
        let align = 1u64 << (align_log % 14);
        match alloc.alloc_bytes(size, align) {
            Ok(off) => {
                assert!(off.get() >= mark, "{off} below the mark {mark}");
                assert_eq!(off.get() % align, 0);
                let p = region
                    .ptr_array::<u8>(off, size)
                    .expect("allocated is addressable");
                assert_eq!(p.as_ptr() as usize, base + off.get() as usize);
                assert!(off.get() + size <= region.high_water_mark().get());
                got.push((off.get(), size));
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    got.sort_unstable();
    for w in got.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "overlap {w:?}");
    }
    for &probe in probes {
        for count in [0, 1, 3, u64::MAX / 8] {
            if let Ok(p) = region.ptr_array::<u64>(Offset(probe), count) {
                let at = p.as_ptr() as usize - base;
                assert!(at as u64 >= HEADER_SIZE && at as u64 + 8 * count <= len);
            }
        }
        match region.set_root(Offset(probe)) {
            Ok(()) => assert!(probe == 0 || (HEADER_SIZE..len).contains(&probe)),
            Err(e) => assert!(matches!(e, RegionError::OutOfBounds { .. })),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PMEM_BAD_INPUT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn forged_headers_open_or_fail_cleanly_and_open_regions_are_safe(
        (len, size, user, roots, hwm) in case(),
        requests in prop::collection::vec((prop_oneof![0u64..600, Just(u64::MAX)], 0u32..16), 0..12),
        probes in prop::collection::vec(any::<u64>().prop_map(|v| v % 4096), 0..6),
    ) {
        let bytes = forged(len, size, user, &roots, hwm);
        let image = Image::from_bytes(bytes.clone());
        match recover(&image) {
            Ok(region) => {
                // Only a header that is fully consistent may open.
                prop_assert_eq!(region.len(), len as u64);
                prop_assert_eq!(size, len as u64);
                prop_assert!(size >= MIN_REGION_SIZE && size % 64 == 0);
                prop_assert_eq!(user, HEADER_SIZE);
                use_region(&region, &requests, &probes);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        // The file path agrees with the image path.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        std::fs::write(&path, &bytes).unwrap();
        let from_file = Region::open(&path, LAYOUT);
        let from_image = recover(&image);
        prop_assert_eq!(
            from_file.as_ref().err().map(|e| format!("{e}")),
            from_image.as_ref().err().map(|e| format!("{e}"))
        );
    }
}

#[test]
fn a_forged_valid_header_opens() {
    // The forging helper is right: a consistent header opens, so the proptest above reaches
    // `use_region`.
    let bytes = forged(4096, 4096, HEADER_SIZE, &[0; ROOT_SLOTS], HEADER_SIZE);
    let region = recover(&Image::from_bytes(bytes)).unwrap();
    use_region(&region, &[(8, 3), (5000, 0), (1, 12)], &[256, 4095]);
}
