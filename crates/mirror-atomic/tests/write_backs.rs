//! Write-backs and fences per operation (issue 23's lever L4), counted with `pmem::stats` on
//! one thread with no contention, so every count is exact.

use mirror_atomic::flavor::Mirror;
use mirror_atomic::{Bst, Heap};

const LAYOUT: u64 = 0x5742_4b53;

/// `(pwbs, pfences + psyncs)` issued by `f` on this thread.
fn counts(f: impl FnOnce()) -> (u64, u64) {
    let before = pmem::stats();
    f();
    let d = pmem::stats().since(before);
    (d.pwbs, d.pfences + d.psyncs)
}

#[test]
fn a_mirror_bst_remove_writes_back_two_lines_and_fences_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let heap = Heap::<Mirror, _>::create(dir.path().join("b.pmem"), LAYOUT, 1 << 20).expect("heap");
    let bst = Bst::new(heap).expect("bst");
    for k in [10, 20, 30] {
        assert!(bst.insert(k).expect("room"));
    }
    // An insert: the new leaf, the new internal node (one line each: 48-byte nodes in 64-byte
    // blocks), the link; a fence after each.
    assert_eq!(counts(|| assert!(bst.insert(40).expect("room"))), (3, 3));
    // A remove: the flag (written back, fenced) and the swing (written back, made durable by
    // the batch `psync` before its nodes are retired); the tag is neither written back nor
    // fenced (recovery does not need it). Before L4: (3, 3).
    assert_eq!(counts(|| assert!(bst.remove(20))), (2, 2));
    assert_eq!(bst.snapshot().0, vec![10, 30, 40]);
}
