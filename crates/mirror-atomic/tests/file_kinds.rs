//! Opening a file of another kind says what the file is and what was expected (issue 22:
//! it used to say "not made of heap chunks" or "list head holds a marked pointer"), and an
//! error chain from a file operation names the path and says each part once.
//!
//! pcomb is a dev-dependency here so that both directions are tested in one place: pcomb
//! files opened as mirror-atomic structures, and mirror-atomic files opened with pcomb.

use std::error::Error;
use std::path::{Path, PathBuf};

use mirror_atomic::flavor::Mirror;
use mirror_atomic::{Bst, HashSet, Heap, HeapError, List, SkipList};
use pcomb::objects::Counter;
use pcomb::structures::{Options, PBQueue, PBStack, PWFStack};
use pcomb::{CombBuildError, PBComb, PBComb1, PWFComb};
use pmem::{Region, RegionError};

const LAYOUT: u64 = 0x5EED;
const SIZE: u64 = 1 << 20;

/// Writes a file of each kind into `dir` and returns its path.
fn make(dir: &Path, kind: &str) -> PathBuf {
    let path = dir.join(format!("{kind}.pmem"));
    let heap = || Heap::<Mirror, _>::create(&path, LAYOUT, SIZE).expect("create heap");
    let region = || Region::create(&path, LAYOUT, SIZE).expect("create region");
    match kind {
        "list" => drop(List::new(heap()).expect("list").insert(7).expect("room")),
        "hash" => drop(HashSet::<Mirror, _>::new(heap()).expect("hash")),
        "skip" => drop(
            SkipList::new(heap())
                .expect("skip")
                .insert(7)
                .expect("room"),
        ),
        "bst" => drop(Bst::new(heap()).expect("bst").insert(7).expect("room")),
        "pbstack" => drop(PBStack::create(region(), 16, 2, Options::default()).expect("stack")),
        "pbqueue" => drop(PBQueue::create(region(), 16, 2, Options::default()).expect("queue")),
        "pbcomb" => drop(PBComb::<Counter, _>::create(region(), Counter::default(), 2).expect("c")),
        "pwfcomb" => {
            drop(PWFComb::<Counter, _>::create(region(), Counter::default(), 2).expect("c"))
        }
        "pbcomb1" => {
            drop(PBComb1::<Counter, _>::create(region(), Counter::default(), 2).expect("c"))
        }
        other => panic!("unknown kind {other}"),
    }
    path
}

fn open(path: &Path) -> Region<pmem::Hardware> {
    Region::open(path, LAYOUT).expect("open")
}

/// The message of opening `path` as `what`.
fn as_mirror(path: &Path, what: &str) -> String {
    let region = open(path);
    let err: HeapError = match what {
        "list" => List::<Mirror, _>::recover(region).err(),
        "hash" => HashSet::<Mirror, _>::recover(region).err(),
        "skip" => SkipList::<Mirror, _>::recover(region).err(),
        "bst" => Bst::<Mirror, _>::recover(region).err(),
        "heap" => Heap::<Mirror, _>::recover(region, |_| Ok(())).err(),
        other => panic!("unknown structure {other}"),
    }
    .unwrap_or_else(|| panic!("{} opened as {what}", path.display()));
    err.to_string()
}

fn as_pcomb(path: &Path, what: &str) -> String {
    let region = open(path);
    let err: CombBuildError = match what {
        "pbstack" => PBStack::open(region).err(),
        "pwfstack" => PWFStack::open(region).err(),
        "pbqueue" => PBQueue::open(region).err(),
        "pbcomb" => PBComb::<Counter, _>::open(region).err(),
        "pwfcomb" => PWFComb::<Counter, _>::open(region).err(),
        "pbcomb1" => PBComb1::<Counter, _>::open(region).err(),
        other => panic!("unknown object {other}"),
    }
    .unwrap_or_else(|| panic!("{} opened as {what}", path.display()));
    err.to_string()
}

#[test]
fn a_mirror_structure_opened_as_another_names_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, found) in [
        ("list", "List"),
        ("hash", "HashSet"),
        ("skip", "SkipList"),
        ("bst", "Bst"),
    ] {
        let path = make(dir.path(), file);
        for (what, expected) in [
            ("list", "List"),
            ("hash", "HashSet"),
            ("skip", "SkipList"),
            ("bst", "Bst"),
        ] {
            if what == file {
                continue;
            }
            assert_eq!(
                as_mirror(&path, what),
                format!(
                    "this is a mirror-atomic {found} file, expected a mirror-atomic {expected}"
                ),
            );
        }
    }
}

#[test]
fn a_pcomb_file_opened_as_a_mirror_heap_names_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, found) in [
        ("pbstack", "pcomb PBStack"),
        ("pbqueue", "pcomb PBQueue"),
        ("pbcomb", "pcomb PBComb object"),
        ("pbcomb1", "pcomb PBComb1 object"),
    ] {
        let path = make(dir.path(), file);
        assert_eq!(
            as_mirror(&path, "heap"),
            format!("this is a {found} file, expected a mirror-atomic heap")
        );
        assert_eq!(
            as_mirror(&path, "list"),
            format!("this is a {found} file, expected a mirror-atomic List")
        );
        assert_eq!(
            as_mirror(&path, "skip"),
            format!("this is a {found} file, expected a mirror-atomic SkipList")
        );
    }
}

#[test]
fn a_mirror_file_opened_with_pcomb_names_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, found) in [("list", "List"), ("skip", "SkipList"), ("bst", "Bst")] {
        let path = make(dir.path(), file);
        for (what, expected) in [
            ("pbstack", "PBStack"),
            ("pbqueue", "PBQueue"),
            ("pbcomb", "PBComb"),
            ("pbcomb1", "PBComb1"),
        ] {
            assert_eq!(
                as_pcomb(&path, what),
                format!("this is a mirror-atomic {found} file, expected a pcomb {expected}"),
            );
        }
    }
}

#[test]
fn a_pcomb_file_opened_as_another_pcomb_kind_names_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stack = make(dir.path(), "pbstack");
    assert_eq!(
        as_pcomb(&stack, "pbqueue"),
        "this is a pcomb PBStack file, expected a pcomb PBQueue"
    );
    assert_eq!(
        as_pcomb(&stack, "pwfstack"),
        "this is a pcomb PBStack file, expected a pcomb PWFStack"
    );
    assert_eq!(
        as_pcomb(&stack, "pbcomb"),
        "this is a pcomb PBStack file, expected a pcomb PBComb"
    );
    let comb = make(dir.path(), "pbcomb");
    assert_eq!(
        as_pcomb(&comb, "pwfcomb"),
        "this is a pcomb PBComb object file, expected a pcomb PWFComb"
    );
    assert_eq!(
        as_pcomb(&comb, "pbstack"),
        "this is a pcomb PBComb object file, expected a pcomb PBStack"
    );
    let pwf = make(dir.path(), "pwfcomb");
    assert_eq!(
        as_pcomb(&pwf, "pbcomb1"),
        "this is a pcomb PWFComb object file, expected a pcomb PBComb1"
    );
}

/// Each level's `Display` of `err` and its `source()` chain.
fn chain(err: &(dyn Error + 'static)) -> Vec<String> {
    let mut levels = vec![err.to_string()];
    let mut cause = err.source();
    while let Some(err) = cause {
        levels.push(err.to_string());
        cause = err.source();
    }
    levels
}

/// No level's text holds another's: each part of the chain is said once.
fn assert_each_part_once(levels: &[String]) {
    for (i, a) in levels.iter().enumerate() {
        for (j, b) in levels.iter().enumerate() {
            assert!(
                i == j || !a.contains(b.as_str()),
                "level {i} repeats level {j}: {levels:#?}"
            );
        }
    }
}

#[test]
fn a_failed_file_operation_names_the_path_and_says_each_part_once() {
    // A directory where a region file is expected: `open` fails with EISDIR.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a-directory.pmem");
    std::fs::create_dir(&path).expect("mkdir");

    let region_err = Region::open(&path, LAYOUT).expect_err("a directory");
    assert!(
        matches!(&region_err, RegionError::Io { op: "open", path: Some(p), .. } if *p == path),
        "{region_err:?}"
    );
    let through_mirror = Heap::<Mirror, _>::open(&path, LAYOUT, |_| Ok(())).expect_err("dir");
    let levels = chain(&through_mirror);
    assert_eq!(levels.len(), 3, "heap, region, OS: {levels:#?}");
    assert!(
        levels[1].contains(&path.display().to_string()),
        "{levels:#?}"
    );
    assert_each_part_once(&levels);

    let through_pcomb = CombBuildError::Region(region_err);
    let levels = chain(&through_pcomb);
    assert_eq!(levels.len(), 3, "pcomb, region, OS: {levels:#?}");
    assert!(
        levels[1].contains(&path.display().to_string()),
        "{levels:#?}"
    );
    assert_each_part_once(&levels);
}

#[test]
fn a_corrupt_file_through_mirror_says_each_part_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = make(dir.path(), "list");
    // Break the region header's checksum.
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[8] ^= 0xff;
    std::fs::write(&path, bytes).expect("write");
    let err = Heap::<Mirror, _>::open(&path, LAYOUT, |_| Ok(())).expect_err("corrupt");
    let levels = chain(&err);
    assert_eq!(levels.len(), 2, "heap, region: {levels:#?}");
    assert_each_part_once(&levels);
}
