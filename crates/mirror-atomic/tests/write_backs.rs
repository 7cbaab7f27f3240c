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

#[test]
fn a_mirror_skip_list_persists_level_0_only() {
    use mirror_atomic::SkipList;
    let dir = tempfile::tempdir().expect("tempdir");
    let heap = Heap::<Mirror, _>::create(dir.path().join("s.pmem"), LAYOUT, 4 << 20).expect("heap");
    let list = SkipList::new(heap).expect("skip list");
    // Nodes take the block class of their height (64 bytes for 1 to 3 levels, 128 for 4 to
    // 11): 1,500 keys first, so that both classes have a chunk with room (about 1,477 and 23
    // nodes, far from a chunk's end at 2,046 and 511) and no insert below claims one (a
    // chunk's header costs its own write-backs and fences).
    for k in 10_000..11_500u64 {
        assert!(list.insert(k).expect("room"));
    }
    // Insert until a node of height >= 2 is made (heights are random, 1/4 per extra level);
    // its height is the number of levels it grew. A fence follows the new node's publication
    // and the level-0 link only: the tower's links are not persisted (before L4: 1 + height).
    let mut tall = None;
    for k in 0..1_000u64 {
        let before = list.level_sizes();
        let (_, fences) = counts(|| assert!(list.insert(k).expect("room")));
        let grew = list
            .level_sizes()
            .iter()
            .zip(&before)
            .filter(|(a, b)| a > b)
            .count();
        assert_eq!(fences, 2, "insert of a node of height {grew}");
        if grew >= 2 {
            tall = Some((k, grew));
            break;
        }
    }
    let (k, height) = tall.expect("a node of height >= 2 within 1,000 inserts");
    // Its remove: the level-0 mark and unlink are written back and fenced, the retire issues
    // its `psync`; the upper marks and unlinks are neither (before L4: 2 * height write-backs
    // and 1 + 2 * height fences).
    assert_eq!(
        counts(|| assert!(list.remove(k))),
        (2, 3),
        "remove of a node of height {height}"
    );
    assert!(!list.contains(k));
}
