//! One owner per region file, through every persistent structure and object of the crate: while
//! a structure built over a file region lives, a second `Region::open` of the file is refused
//! with the path (it would rebuild a second structure over the same image); once the structure
//! is dropped, the file opens and the structure reopens, and the reopened one owns the file in
//! turn.

use std::path::Path;

use pcomb::objects::Counter;
use pcomb::pmem::{Hardware, Region, RegionError};
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};
use pcomb::{CombBuildError, PBComb, PBComb1, PWFComb};

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
    create: impl FnOnce(Region<Hardware>) -> Result<T, CombBuildError>,
    open: impl FnOnce(Region<Hardware>) -> Result<T, CombBuildError>,
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

/// `check`s each persistent type: `Type: create closure;` (the type names the check and gives
/// its `open`).
macro_rules! check_each {
    ($($T:ty: $create:expr;)*) => {
        $(check(stringify!($T), $create, <$T>::open);)*
    };
}

#[test]
fn a_live_structure_owns_its_file() {
    let opts = Options::default();
    check_each! {
        PBStack<Hardware>: |r| PBStack::create(r, 64, 2, opts);
        PBQueue<Hardware>: |r| PBQueue::create(r, 64, 2, opts);
        PWFStack<Hardware>: |r| PWFStack::create(r, 64, 2, opts);
        PWFQueue<Hardware>: |r| PWFQueue::create(r, 64, 2, opts);
        PBHeap<16, Hardware>: |r| PBHeap::create(r, 2);
        PBComb<Counter, Hardware>: |r| PBComb::create(r, Counter::default(), 2);
        PWFComb<Counter, Hardware>: |r| PWFComb::create(r, Counter::default(), 2);
        PBComb1<Counter, Hardware>: |r| PBComb1::create(r, Counter::default(), 2);
    }
}
