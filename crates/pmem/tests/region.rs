//! File regions: create/open round trips, every error variant, root slots across reopen.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use pmem::{Offset, Persist, Region, RegionError, HEADER_SIZE, MAGIC, MIN_REGION_SIZE, ROOT_SLOTS};

const LAYOUT: u64 = 0xAB_CDEF;
const SIZE: u64 = 1 << 14;

fn fresh(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    let path = dir.path().join(name);
    drop(Region::create(&path, LAYOUT, SIZE).expect("create"));
    path
}

fn patch(path: &Path, at: u64, bytes: &[u8]) {
    let mut f = OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(bytes).unwrap();
}

fn read_u64(region: &Region<impl Persist>, off: Offset) -> u64 {
    // SAFETY: in bounds and aligned (checked by `ptr`); single-threaded.
    unsafe { region.ptr::<u64>(off).unwrap().as_ptr().read() }
}

#[test]
fn create_open_round_trip_keeps_data_and_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    let off;
    {
        let r = Region::create(&path, LAYOUT, SIZE).unwrap();
        assert_eq!((r.len(), r.layout()), (SIZE, LAYOUT));
        assert_eq!(r.user_offset(), Offset(HEADER_SIZE));
        assert_eq!(r.root(), None);
        off = r.allocator(1024).alloc_array::<u64>(4).unwrap();
        let p = r.ptr_array::<u64>(off, 4).unwrap();
        for i in 0..4 {
            // SAFETY: in bounds (4 elements checked), single-threaded.
            unsafe { p.as_ptr().add(i).write(100 + i as u64) };
        }
        // SAFETY: inside the region (checked by `ptr`), mapped while it lives.
        unsafe { r.persist().pwb(p.as_ptr().cast(), 32) };
        r.persist().pfence();
        r.set_root(off).unwrap();
        r.sync_file().unwrap();
    }
    let r = Region::open(&path, LAYOUT).unwrap();
    assert_eq!((r.len(), r.layout()), (SIZE, LAYOUT));
    assert_eq!(r.root(), Some(off));
    for i in 0..4 {
        assert_eq!(read_u64(&r, Offset(off.get() + 8 * i)), 100 + i);
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), SIZE);
}

#[test]
fn every_root_slot_persists_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh(&dir, "r");
    {
        let r = Region::open(&path, LAYOUT).unwrap();
        for i in 0..ROOT_SLOTS {
            r.set_root_slot(i, Offset(HEADER_SIZE + 64 * i as u64))
                .unwrap();
        }
        r.set_root_slot(3, Offset::NULL).unwrap();
    }
    let r = Region::open(&path, LAYOUT).unwrap();
    for i in 0..ROOT_SLOTS {
        let expected = (i != 3).then_some(Offset(HEADER_SIZE + 64 * i as u64));
        assert_eq!(r.root_slot(i).unwrap(), expected, "slot {i}");
    }
    assert!(matches!(
        r.root_slot(ROOT_SLOTS),
        Err(RegionError::NoSuchRoot { index: ROOT_SLOTS })
    ));
    assert!(matches!(
        r.set_root_slot(ROOT_SLOTS, Offset(HEADER_SIZE)),
        Err(RegionError::NoSuchRoot { .. })
    ));
}

#[test]
fn set_root_rejects_offsets_outside_user_area() {
    let r = Region::anonymous(LAYOUT, SIZE).unwrap();
    for bad in [
        Offset(8),
        Offset(HEADER_SIZE - 8),
        Offset(SIZE),
        Offset(u64::MAX),
    ] {
        assert!(
            matches!(r.set_root(bad), Err(RegionError::OutOfBounds { .. })),
            "{bad}"
        );
    }
    assert_eq!(r.root(), None);
}

#[test]
fn not_found() {
    let dir = tempfile::tempdir().unwrap();
    let err = Region::open(dir.path().join("nope"), LAYOUT).unwrap_err();
    assert!(matches!(err, RegionError::NotFound { .. }), "{err}");
}

#[test]
fn already_exists_and_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh(&dir, "r");
    Region::open(&path, LAYOUT)
        .unwrap()
        .set_root(Offset(512))
        .unwrap();
    let err = Region::create(&path, LAYOUT, SIZE).unwrap_err();
    assert!(matches!(err, RegionError::AlreadyExists { .. }), "{err}");
    assert_eq!(
        Region::open(&path, LAYOUT).unwrap().root(),
        Some(Offset(512))
    );
}

#[test]
fn io_error_for_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = Region::open(dir.path(), LAYOUT).unwrap_err();
    assert!(matches!(err, RegionError::Io { .. }), "{err}");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn invalid_sizes() {
    let dir = tempfile::tempdir().unwrap();
    for size in [0, 100, MIN_REGION_SIZE - 64, MIN_REGION_SIZE + 1, u64::MAX] {
        let err = Region::create(dir.path().join(format!("r{size}")), LAYOUT, size).unwrap_err();
        assert!(
            matches!(err, RegionError::InvalidSize { .. }),
            "{size}: {err}"
        );
        assert!(!dir.path().join(format!("r{size}")).exists(), "{size}");
        assert!(matches!(
            Region::anonymous(LAYOUT, size),
            Err(RegionError::InvalidSize { .. })
        ));
    }
    assert!(Region::anonymous(LAYOUT, MIN_REGION_SIZE).is_ok());
}

#[test]
fn truncated_below_header_and_below_recorded_size() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        Region::open(&empty, LAYOUT),
        Err(RegionError::Truncated {
            len: 0,
            needed: HEADER_SIZE
        })
    ));
    let path = fresh(&dir, "r");
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(HEADER_SIZE + 64).unwrap();
    let err = Region::open(&path, LAYOUT).unwrap_err();
    assert!(
        matches!(err, RegionError::Truncated { len, needed } if len == HEADER_SIZE + 64 && needed == SIZE),
        "{err}"
    );
    f.set_len(100).unwrap();
    assert!(matches!(
        Region::open(&path, LAYOUT),
        Err(RegionError::Truncated { len: 100, .. })
    ));
}

#[test]
fn bad_magic() {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh(&dir, "r");
    patch(&path, 0, b"X");
    let err = Region::open(&path, LAYOUT).unwrap_err();
    assert!(
        matches!(err, RegionError::BadMagic { found } if found != MAGIC),
        "{err}"
    );
    let zeros = dir.path().join("zeros");
    std::fs::write(&zeros, vec![0u8; 4096]).unwrap();
    assert!(matches!(
        Region::open(&zeros, LAYOUT),
        Err(RegionError::BadMagic { found: 0 })
    ));
}

#[test]
fn unsupported_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh(&dir, "r");
    patch(&path, 8, &2u64.to_le_bytes());
    let err = Region::open(&path, LAYOUT).unwrap_err();
    assert!(
        matches!(
            err,
            RegionError::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        ),
        "{err}"
    );
}

#[test]
fn bad_checksum_for_any_checksummed_field() {
    let dir = tempfile::tempdir().unwrap();
    // Layout id, size, user offset, reserved bytes, and the checksum itself.
    for at in [16u64, 24, 33, 40, 50, 56, 63] {
        let path = fresh(&dir, &format!("r{at}"));
        patch(&path, at, &[0x5A]);
        let err = Region::open(&path, LAYOUT).unwrap_err();
        assert!(
            matches!(err, RegionError::BadChecksum { .. }),
            "byte {at}: {err}"
        );
    }
}

#[test]
fn wrong_layout() {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh(&dir, "r");
    let err = Region::open(&path, LAYOUT + 1).unwrap_err();
    assert!(
        matches!(err, RegionError::WrongLayout { found: LAYOUT, expected } if expected == LAYOUT + 1),
        "{err}"
    );
}

#[test]
fn size_mismatch_when_file_grew() {
    let dir = tempfile::tempdir().unwrap();
    let path = fresh(&dir, "r");
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(SIZE + 64)
        .unwrap();
    let err = Region::open(&path, LAYOUT).unwrap_err();
    assert!(
        matches!(err, RegionError::SizeMismatch { header: SIZE, actual } if actual == SIZE + 64),
        "{err}"
    );
}

#[test]
fn bad_header_for_out_of_range_mutable_fields() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(u64, u64, &str); 5] = [
        (64, 8, "root"),             // root slot 0 inside the header
        (64 + 7 * 8, SIZE, "root"),  // root slot 7 past the end
        (128, 0, "high_water_mark"), // below the user area
        (128, SIZE + 64, "high_water_mark"),
        (128, HEADER_SIZE + 1, "high_water_mark"), // not chunk aligned
    ];
    for (i, (at, value, field)) in cases.into_iter().enumerate() {
        let path = fresh(&dir, &format!("r{i}"));
        patch(&path, at, &value.to_le_bytes());
        let err = Region::open(&path, LAYOUT).unwrap_err();
        assert!(
            matches!(err, RegionError::BadHeader { field: f, value: v } if f == field && v == value),
            "case {i}: {err}"
        );
    }
}

#[test]
fn ptr_checks_bounds_and_alignment() {
    let r = Region::anonymous(LAYOUT, SIZE).unwrap();
    assert!(r.ptr::<u64>(Offset(HEADER_SIZE)).is_ok());
    assert!(r.ptr::<u64>(Offset(SIZE - 8)).is_ok());
    for off in [0, 8, HEADER_SIZE - 8, SIZE - 4, SIZE, u64::MAX - 3] {
        assert!(
            matches!(
                r.ptr::<u64>(Offset(off)),
                Err(RegionError::OutOfBounds { .. })
            ),
            "{off}"
        );
    }
    assert!(matches!(
        r.ptr::<u64>(Offset(HEADER_SIZE + 4)),
        Err(RegionError::Misaligned { align: 8, .. })
    ));
    assert!(r.ptr::<u8>(Offset(HEADER_SIZE + 3)).is_ok());
    assert!(matches!(
        r.ptr_array::<u64>(Offset(HEADER_SIZE), u64::MAX),
        Err(RegionError::OutOfBounds { .. })
    ));
    let p = r.ptr::<[u64; 2]>(Offset(HEADER_SIZE + 64)).unwrap();
    assert_eq!(r.offset_of(p.as_ptr()).unwrap(), Offset(HEADER_SIZE + 64));
    assert!(r.offset_of(r.base().as_ptr()).is_err());
    let outside = 5u64;
    assert!(r.offset_of(&outside).is_err());
}

#[test]
fn errors_display_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    let err = Region::open(dir.path().join("missing"), 1).unwrap_err();
    assert!(err.to_string().contains("does not exist"));
    let err = Region::anonymous(1, 3).unwrap_err();
    assert!(err.to_string().contains("multiple of 64"));
}

#[test]
fn regions_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Region<pmem::Hardware>>();
    assert_send_sync::<Region<pmem::NoPersist>>();
    assert_send_sync::<RegionError>();
}

#[test]
fn ptr_never_returns_a_misaligned_pointer_for_page_plus_alignments() {
    // A Pod type aligned beyond the page size: the region's base is only page aligned, so an
    // offset that is a multiple of the alignment does not make an aligned address.
    #[derive(Clone, Copy)]
    #[repr(C, align(8192))]
    struct Big([u8; 8192]);
    // SAFETY:
    // - bytes only, no padding, every bit pattern valid; no pointers.
    unsafe impl pmem::Pod for Big {}
    // 68 KiB regions: consecutive mappings are unlikely to all share one alignment mod 8 KiB.
    let regions: Vec<_> = (0..4)
        .map(|_| Region::anonymous(LAYOUT, (64 + 4) << 10).unwrap())
        .collect();
    let mut ok = 0;
    for r in &regions {
        for off in (0..r.len()).step_by(4096) {
            match r.ptr::<Big>(Offset(off)) {
                Ok(p) => {
                    assert_eq!(p.as_ptr() as usize % 8192, 0, "offset {off}");
                    ok += 1;
                }
                Err(e) => assert!(
                    matches!(
                        e,
                        RegionError::Misaligned { .. } | RegionError::OutOfBounds { .. }
                    ),
                    "{e}"
                ),
            }
        }
    }
    assert!(ok > 0, "some offset of some region is aligned");
}

#[test]
fn failed_create_leaves_no_file_behind() {
    // A valid size that no file system here can hold (or map): creation fails after the file
    // was created, and must remove it again, or every retry would be `AlreadyExists` and an
    // `open` would find a headerless file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge");
    let err = Region::create(&path, LAYOUT, 1 << 60).unwrap_err();
    assert!(matches!(err, RegionError::Io { .. }), "{err}");
    assert!(!path.exists(), "a failed create left {}", path.display());
    assert!(Region::create(&path, LAYOUT, SIZE).is_ok());
}
