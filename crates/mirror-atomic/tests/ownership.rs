//! One owner per heap file, through every structure: while a structure over a file heap lives,
//! a second `Region::open` or `Heap::open` of the file is refused with the path (it would
//! rebuild a second free list over the same image and hand out the same blocks); once the
//! structure is dropped, the file opens and the structure recovers, and the recovered one owns
//! the file in turn.

mod common;

use std::path::Path;

use common::{Set, LAYOUT, SIM_SIZE};
use mirror_atomic::flavor::{Izraelevitz, Mirror};
use mirror_atomic::{Bst, HashSet, Heap, HeapError, List, Region, SkipList};
use pmem::{Hardware, RegionError};

/// Both ways of opening the file are refused with `AlreadyOpen` naming `path`.
fn assert_refused<S: Set<P = Hardware>>(path: &Path, what: &str) {
    match Region::open(path, LAYOUT) {
        Err(RegionError::AlreadyOpen { path: named }) => assert_eq!(named, path, "{what}"),
        other => panic!("{what}: Region::open of a held file gave {other:?}"),
    }
    match Heap::<S::F, Hardware>::open(path, LAYOUT, |_| Ok(())) {
        Err(HeapError::Region(RegionError::AlreadyOpen { path: named })) => {
            assert_eq!(named, path, "{what}")
        }
        other => panic!("{what}: Heap::open of a held file gave {other:?}"),
    }
}

fn check<S: Set<P = Hardware>>(what: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("heap.pmem");
    let set = S::create(Heap::create(&path, LAYOUT, SIM_SIZE).expect("heap")).expect(what);
    set.insert(7).expect("room");
    assert_refused::<S>(&path, what);
    drop(set);
    let set = S::recover(Region::open(&path, LAYOUT).expect("open after drop")).expect(what);
    assert!(set.contains(7), "{what}: recovered without its key");
    assert_refused::<S>(&path, what);
    drop(set);
    drop(Region::open(&path, LAYOUT).expect("open after the recovered one is dropped"));
}

#[test]
fn a_live_structure_owns_its_file() {
    check::<List<Mirror, Hardware>>("List<Mirror>");
    check::<List<Izraelevitz, Hardware>>("List<Izraelevitz>");
    check::<HashSet<Mirror, Hardware>>("HashSet<Mirror>");
    check::<HashSet<Izraelevitz, Hardware>>("HashSet<Izraelevitz>");
    check::<SkipList<Mirror, Hardware>>("SkipList<Mirror>");
    check::<SkipList<Izraelevitz, Hardware>>("SkipList<Izraelevitz>");
    check::<Bst<Mirror, Hardware>>("Bst<Mirror>");
    check::<Bst<Izraelevitz, Hardware>>("Bst<Izraelevitz>");
}

#[test]
fn a_live_heap_owns_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("heap.pmem");
    let heap = Heap::<Mirror, Hardware>::create(&path, LAYOUT, SIM_SIZE).expect("heap");
    assert_refused::<List<Mirror, Hardware>>(&path, "Heap::create");
    drop(heap);
    let heap = Heap::<Mirror, Hardware>::open(&path, LAYOUT, |_| Ok(())).expect("reopen");
    assert_refused::<List<Mirror, Hardware>>(&path, "Heap::open");
    drop(heap);
    drop(Heap::<Mirror, Hardware>::open(&path, LAYOUT, |_| Ok(())).expect("reopen after drop"));
}
