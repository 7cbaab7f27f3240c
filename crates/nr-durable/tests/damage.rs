//! Damaged logs and snapshots give typed errors, never a panic and never a silently shorter
//! history: every byte of the entries before the last write, every byte of a snapshot, the
//! segment and region headers, files of another kind or type.

use std::path::{Path, PathBuf};

use nr_durable::{DurableError, Medium, Store, SyncPolicy};

fn op(i: u64) -> String {
    format!("op-{i}-{}", "y".repeat(i as usize % 5))
}

/// Ops `0 .. 12` in writes of 1, 2, 3, 1, 2, 3 entries; returns nothing, the medium holds them.
fn write_log(medium: &Medium) {
    let (store, _) = Store::<String>::open::<()>(medium, SyncPolicy::EveryBatch).unwrap();
    let mut pos = 0u64;
    for size in [1u64, 2, 3, 1, 2, 3] {
        let ops: Vec<String> = (pos..pos + size).map(op).collect();
        let refs: Vec<&String> = ops.iter().collect();
        store.append(pos, &refs).unwrap();
        pos += size;
    }
}

/// Opens; `Ok(n)` when the ops are exactly the first `n`.
fn reopen(medium: &Medium) -> Result<u64, DurableError> {
    let (_s, rec) = Store::<String>::open::<()>(medium, SyncPolicy::EveryBatch)?;
    let want: Vec<(u64, String)> = (0..rec.end).map(|i| (i, op(i))).collect();
    assert_eq!(rec.ops, want, "recovered ops that were never written");
    Ok(rec.end)
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

fn is_damage(e: &DurableError) -> bool {
    matches!(
        e,
        DurableError::Corrupt { .. } | DurableError::Decode { .. }
    )
}

fn seg0(dir: &Path) -> PathBuf {
    dir.join(format!("log-{:020}.seg", 0))
}

#[test]
fn a_damaged_byte_before_the_last_write_of_a_file_log_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    write_log(&Medium::File { dir: dir.clone() });
    let seg = seg0(&dir);
    let orig = std::fs::read(&seg).unwrap();
    // The last write (entries 9 .. 12) starts where a scan of a log of 9 entries ends.
    let (mut errors, mut whole) = (0, 0);
    for at in 0..orig.len() {
        std::fs::write(&seg, &orig).unwrap();
        flip(&seg, at);
        match reopen(&Medium::File { dir: dir.clone() }) {
            Err(e) if is_damage(&e) => errors += 1,
            Err(e) => panic!("byte {at}: not a damage error: {e}"),
            // Padding, or the last write cut back to a torn tail.
            Ok(12) => whole += 1,
            Ok(n) => assert!(n >= 9, "byte {at}: only {n} entries survive, silently"),
        }
    }
    assert!(
        errors > orig.len() / 2,
        "{errors} errors for {} bytes",
        orig.len()
    );
    assert!(whole > 0);
}

#[test]
fn a_damaged_byte_of_a_region_log_is_an_error_or_a_torn_last_write() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log.pmem");
    let medium = Medium::Pmem {
        path: path.clone(),
        capacity: 1 << 13,
    };
    write_log(&medium);
    let orig = std::fs::read(&path).unwrap();
    let used_end = orig.iter().rposition(|&b| b != 0).unwrap() + 1;
    let mut errors = 0;
    // From the block's state word (user area at 256, state at 264) to the end of the log.
    for at in 264..used_end {
        std::fs::write(&path, &orig).unwrap();
        flip(&path, at);
        match reopen(&medium) {
            Err(e) if is_damage(&e) => errors += 1,
            Err(e) => panic!("byte {at}: not a damage error: {e}"),
            Ok(n) => assert!(n >= 9, "byte {at}: only {n} entries survive, silently"),
        }
    }
    assert!(errors > (used_end - 264) / 2);
}

#[test]
fn every_damaged_byte_and_every_cut_of_a_snapshot_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let medium = Medium::File { dir: dir.clone() };
    {
        let (store, _) =
            Store::<String>::open::<Vec<String>>(&medium, SyncPolicy::EveryBatch).unwrap();
        store.append(0, &[&op(0), &op(1)]).unwrap();
        assert!(store.checkpoint(2, &vec![op(0), op(1)]).unwrap());
    }
    let snap = dir.join(format!("snap-{:020}.snap", 2));
    let orig = std::fs::read(&snap).unwrap();
    let open = || Store::<String>::open::<Vec<String>>(&medium, SyncPolicy::EveryBatch).map(|_| ());
    open().unwrap();
    for at in 0..orig.len() {
        std::fs::write(&snap, &orig).unwrap();
        flip(&snap, at);
        let err = open().expect_err("a damaged snapshot opened");
        assert!(is_damage(&err), "byte {at}: {err}");
        assert!(
            err.to_string().contains("snap-00000000000000000002.snap"),
            "{err}"
        );
    }
    for len in 0..orig.len() {
        std::fs::write(&snap, &orig[..len]).unwrap();
        let err = open().expect_err("a cut snapshot opened");
        assert!(
            matches!(err, DurableError::Corrupt { .. }),
            "length {len}: {err}"
        );
    }
}

#[test]
fn a_damaged_segment_header_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    write_log(&Medium::File { dir: dir.clone() });
    let seg = seg0(&dir);
    let orig = std::fs::read(&seg).unwrap();
    for at in 0..16 {
        std::fs::write(&seg, &orig).unwrap();
        flip(&seg, at);
        let err = reopen(&Medium::File { dir: dir.clone() }).expect_err("opened");
        assert!(
            matches!(err, DurableError::Corrupt { offset: 0 | 8, .. }),
            "byte {at}: {err}"
        );
    }
}

#[test]
fn a_cut_sealed_segment_or_a_missing_one_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let medium = Medium::File { dir: dir.clone() };
    {
        let (store, _) =
            Store::<String>::open::<Vec<String>>(&medium, SyncPolicy::EveryBatch).unwrap();
        store.append(0, &[&op(0), &op(1)]).unwrap();
        // A snapshot at 0 keeps the first segment (it holds entries 0 and 1) and seals it.
        store.checkpoint(0, &Vec::<String>::new()).unwrap();
        store.append(2, &[&op(2)]).unwrap();
    }
    let first = seg0(&dir);
    let orig = std::fs::read(&first).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap();
    f.set_len(orig.len() as u64 - 8).unwrap();
    drop(f);
    let err = Store::<String>::open::<Vec<String>>(&medium, SyncPolicy::EveryBatch).unwrap_err();
    assert!(err.to_string().contains("in a sealed segment"), "{err}");
    std::fs::remove_file(&first).unwrap();
    let err = Store::<String>::open::<Vec<String>>(&medium, SyncPolicy::EveryBatch).unwrap_err();
    assert!(
        err.to_string()
            .contains("the log starts at entry 2, after the newest snapshot at 0"),
        "{err}"
    );
}

#[test]
fn a_region_of_another_kind_or_layout_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("stack.pmem");
    {
        let region = pmem::Region::create(&path, nr_durable::PMEM_LAYOUT, 1 << 13).unwrap();
        let mut alloc = region.allocator(256);
        let off = alloc.alloc::<u64>().unwrap();
        // SAFETY: in bounds and aligned (checked by `ptr`); single-threaded.
        unsafe {
            region
                .ptr::<u64>(off)
                .unwrap()
                .as_ptr()
                .write(pmem::kinds::PBSTACK_TAG)
        };
        region.set_root(off).unwrap();
    }
    let medium = Medium::Pmem {
        path: path.clone(),
        capacity: 1 << 13,
    };
    let err = Store::<String>::open::<()>(&medium, SyncPolicy::EveryBatch).unwrap_err();
    assert!(
        matches!(
            err,
            DurableError::WrongKind {
                found: Some("pcomb PBStack"),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{} is a pcomb PBStack file, expected an nr-durable log",
            path.display()
        )
    );
    let other = tmp.path().join("other.pmem");
    drop(pmem::Region::create(&other, 0x1234, 1 << 13).unwrap());
    let err = Store::<String>::open::<()>(
        &Medium::Pmem {
            path: other,
            capacity: 1 << 13,
        },
        SyncPolicy::EveryBatch,
    )
    .unwrap_err();
    assert!(
        matches!(err, DurableError::WrongKind { found: None, .. }),
        "{err}"
    );
}

/// A log of format 1 (entries checksummed with CRC-32: a segment header `NRDSEG01`, a region
/// block without a format word) is refused with `Version`, on each medium, naming the file;
/// the same log in this build's format opens. Fails if either medium reads an old log as its
/// own (every old entry would then fail its checksum: an empty log, or damage).
#[test]
fn a_log_of_the_previous_format_is_a_version_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let file = Medium::File { dir: dir.clone() };
    write_log(&file);
    assert_eq!(reopen(&file).unwrap(), 12);
    let seg = seg0(&dir);
    let mut bytes = std::fs::read(&seg).unwrap();
    assert_eq!(&bytes[..8], b"NRDSEG02");
    bytes[..8].copy_from_slice(b"NRDSEG01");
    std::fs::write(&seg, bytes).unwrap();
    let err = reopen(&file).expect_err("opened a format 1 segment");
    assert!(
        matches!(&err, DurableError::Version { path, found: 1, supported: 2 } if *path == seg),
        "{err}"
    );

    let path = tmp.path().join("log.pmem");
    let region = Medium::Pmem {
        path: path.clone(),
        capacity: 1 << 16,
    };
    write_log(&region);
    assert_eq!(reopen(&region).unwrap(), 12);
    {
        let r = pmem::Region::open(&path, nr_durable::PMEM_LAYOUT).unwrap();
        let block = r.root().expect("a root block");
        let format = r.ptr::<u64>(pmem::Offset(block.0 + 16)).unwrap();
        // SAFETY: in bounds and aligned (checked by `ptr`); no store has the region open.
        unsafe {
            assert_eq!(format.as_ptr().read(), nr_durable::LOG_FORMAT);
            format.as_ptr().write(0); // as format 1 left it
        }
    }
    let err = reopen(&region).expect_err("opened a format 1 region");
    assert!(
        matches!(&err, DurableError::Version { path: p, found: 1, supported: 2 } if *p == path),
        "{err}"
    );
}

#[test]
fn a_log_of_another_operation_type_is_a_decode_error_naming_the_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    write_log(&Medium::File { dir: dir.clone() });
    let err = Store::<bool>::open::<()>(&Medium::File { dir: dir.clone() }, SyncPolicy::EveryBatch)
        .unwrap_err();
    assert!(
        matches!(&err, DurableError::Decode { offset: 16, .. }),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn a_second_store_on_the_same_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let medium = Medium::File {
        dir: tmp.path().to_owned(),
    };
    let _first = Store::<u8>::open::<()>(&medium, SyncPolicy::EveryBatch).unwrap();
    let err = Store::<u8>::open::<()>(&medium, SyncPolicy::EveryBatch).unwrap_err();
    assert!(matches!(err, DurableError::Io { op: "lock", .. }), "{err}");
}
