//! The fuzz target's open path (`fuzz/fuzz_targets/open_region.rs`) over the seed corpus in
//! `fuzz/corpus/open_region/`, and a proptest of random header mutations: opening never panics,
//! returns a typed error for every corruption of the checksummed header, and the file and image
//! paths agree.

use std::path::PathBuf;

use pmem::sim::{Image, SimConfig};
use pmem::{Offset, Region, RegionError, ROOT_SLOTS};
use proptest::prelude::*;

/// The layout id of the seed corpus (same as the fuzz target).
const LAYOUT: u64 = 0xF022;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/open_region")
}

/// The fuzz target's body (keep in sync with `fuzz/fuzz_targets/open_region.rs`), returning the
/// open result.
fn exercise(data: &[u8]) -> Result<(), RegionError> {
    let image = Image::from_bytes(data.to_vec());
    // SAFETY: this thread makes every write to the region and every persistence call.
    let region = unsafe { Region::from_image(&image, LAYOUT, SimConfig::new(0)) }?;
    for i in 0..ROOT_SLOTS {
        if let Ok(Some(root)) = region.root_slot(i) {
            let _ = region.ptr::<u64>(root);
        }
    }
    let mark = region.high_water_mark();
    assert!(mark.get() <= region.len());
    let mut alloc = region.allocator(256);
    for _ in 0..4 {
        if let Ok(off) = alloc.alloc::<u64>() {
            let p = region
                .ptr::<u64>(off)
                .expect("allocated memory is addressable");
            // SAFETY: in bounds and aligned (checked by `ptr`); single-threaded.
            unsafe { p.as_ptr().write(1) };
            region
                .set_root(off)
                .expect("allocated offsets are valid roots");
        }
    }
    let _ = region.ptr::<u64>(Offset(u64::from(data.len() as u32)));
    Ok(())
}

/// Opens `data` as a region file; the variant name of the outcome.
fn open_as_file(data: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("region");
    std::fs::write(&path, data).unwrap();
    outcome(&Region::open(&path, LAYOUT).map(drop))
}

fn outcome(r: &Result<(), RegionError>) -> String {
    match r {
        Ok(()) => "Ok".to_string(),
        Err(e) => format!("{e:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap()
            .to_string(),
    }
}

#[test]
fn seed_corpus_opens_or_fails_cleanly_and_paths_agree() {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("fuzz/corpus/open_region exists")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "seed corpus has {} files", files.len());
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let image = outcome(&exercise(&data));
        assert_eq!(
            image,
            open_as_file(&data),
            "{name}: file and image paths disagree"
        );
        assert_eq!(
            image == "Ok",
            name.starts_with("valid"),
            "{name}: unexpected outcome {image}"
        );
    }
}

/// The crash image of a fresh simulated region of `size` bytes with layout id `layout`.
fn fresh_image(layout: u64, size: u64) -> Vec<u8> {
    simulated(layout, size).persist().crash().into_bytes()
}

/// A simulated region (no eviction), used by the calling thread only.
fn simulated(layout: u64, size: u64) -> Region<pmem::sim::Simulated> {
    // SAFETY: the callers make every write to the region and every persistence call on the
    // one thread that created it.
    unsafe { Region::simulated(layout, size, SimConfig::new(0).evictions(0.0)) }.unwrap()
}

/// A valid 512-byte region image with a root and a claimed chunk.
fn valid_image() -> Vec<u8> {
    let r = simulated(LAYOUT, 512);
    let off = r.allocator(64).alloc::<u64>().unwrap();
    r.set_root(off).unwrap();
    r.persist().crash().into_bytes()
}

proptest! {
    #[test]
    fn header_mutations_give_ok_or_typed_error(
        edits in prop::collection::vec((0usize..320, any::<u8>()), 1..6),
        resize in prop::option::of(0usize..1024),
    ) {
        let original = valid_image();
        let mut data = original.clone();
        for &(at, byte) in &edits {
            data[at] = byte;
        }
        if let Some(len) = resize {
            data.resize(len, 0);
        }
        let result = exercise(&data);
        // Any change to the checksummed first 64 bytes, or to the length, is detected.
        let header_changed = data.len() < 64 || data[..64] != original[..64];
        if header_changed || data.len() != original.len() {
            prop_assert!(result.is_err(), "undetected corruption: {edits:?} {resize:?}");
        }
        prop_assert_eq!(outcome(&result), open_as_file(&data));
    }
}

/// Writes the seed corpus. Run after a header format change:
/// `cargo test -p pmem --test fuzz_corpus -- --ignored`.
#[test]
#[ignore = "regenerates fuzz/corpus/open_region"]
fn write_seed_corpus() {
    let dir = corpus_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let fresh = |size: u64| fresh_image(LAYOUT, size);
    let patched = |mut v: Vec<u8>, at: usize, bytes: &[u8]| {
        v[at..at + bytes.len()].copy_from_slice(bytes);
        v
    };
    let min = fresh(pmem::MIN_REGION_SIZE);
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("valid_min", min.clone()),
        ("valid_root_and_chunk", valid_image()),
        ("empty", Vec::new()),
        ("short_header", min[..100].to_vec()),
        ("truncated_body", fresh(4096)[..1024].to_vec()),
        ("size_mismatch", {
            let mut v = min.clone();
            v.extend_from_slice(&[0; 64]);
            v
        }),
        ("bad_magic", patched(min.clone(), 0, b"NOTREGN!")),
        ("bad_version", patched(min.clone(), 8, &9u64.to_le_bytes())),
        ("bad_checksum", patched(min.clone(), 40, &[1])),
        ("wrong_layout", fresh_image(LAYOUT + 1, 512)),
        ("bad_root", patched(min.clone(), 64, &4u64.to_le_bytes())),
        (
            "bad_high_water_mark",
            patched(min.clone(), 128, &u64::MAX.to_le_bytes()),
        ),
        ("zeros", vec![0; 512]),
        // Issue 19: a reserved header word (bytes 136..256, outside the checksum) nonzero.
        ("reserved_nonzero", patched(min.clone(), 136, &[1])),
    ];
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
