//! One owner per region file, through every persistent structure and object of the crate: while
//! a structure built over a file region lives, a second `Region::open` of the file is refused
//! with the path (it would rebuild a second structure over the same image); once the structure
//! is dropped, the file opens and the structure reopens, and the reopened one owns the file in
//! turn.

use std::path::Path;

use pcomb::objects::Counter;
use pcomb::pmem::{Hardware, Region, RegionError};
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};
use pcomb::{BuildError, PBComb, PBComb1, PWFComb};

const LAYOUT: u64 = 0x0_4E4E;
const SIZE: u64 = 1 << 18;

/// A second open of `path` is refused with `AlreadyOpen` naming it.
fn assert_refused(path: &Path, what: &str) {
    match Region::open(path, LAYOUT) {
        Err(RegionError::AlreadyOpen { path: named }) => assert_eq!(named, path, "{what}"),
        other => panic!("{what}: second open of a held file gave {other:?}"),
    }
}

/// Creates the structure over a fresh file region, checks that a second open is refused while
/// it lives and while the structure reopened after it lives, and that the file opens after
/// each is dropped.
fn check<T>(
    what: &str,
    create: impl FnOnce(Region<Hardware>) -> Result<T, BuildError>,
    open: impl FnOnce(Region<Hardware>) -> Result<T, BuildError>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("structure.pmem");
    let created = create(Region::create(&path, LAYOUT, SIZE).expect("create")).expect(what);
    assert_refused(&path, what);
    drop(created);
    let reopened = open(Region::open(&path, LAYOUT).expect("open after drop")).expect(what);
    assert_refused(&path, what);
    drop(reopened);
    drop(Region::open(&path, LAYOUT).expect("open after the reopened one is dropped"));
}

#[test]
fn a_live_structure_owns_its_file() {
    let opts = Options::default();
    check(
        "PBStack",
        |r| PBStack::create(r, 64, 2, opts),
        PBStack::<Hardware>::open,
    );
    check(
        "PBQueue",
        |r| PBQueue::create(r, 64, 2, opts),
        PBQueue::<Hardware>::open,
    );
    check(
        "PWFStack",
        |r| PWFStack::create(r, 64, 2, opts),
        PWFStack::<Hardware>::open,
    );
    check(
        "PWFQueue",
        |r| PWFQueue::create(r, 64, 2, opts),
        PWFQueue::<Hardware>::open,
    );
    check(
        "PBHeap",
        |r| PBHeap::<16, _>::create(r, 2),
        PBHeap::<16, Hardware>::open,
    );
    check(
        "PBComb",
        |r| PBComb::create(r, Counter::default(), 2),
        PBComb::<Counter, Hardware>::open,
    );
    check(
        "PWFComb",
        |r| PWFComb::create(r, Counter::default(), 2),
        PWFComb::<Counter, Hardware>::open,
    );
    check(
        "PBComb1",
        |r| PBComb1::create(r, Counter::default(), 2),
        PBComb1::<Counter, Hardware>::open,
    );
}
