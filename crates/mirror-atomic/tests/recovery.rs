//! Recovery from files: a clean restart, and bad input (wrong layout, truncated, corrupt chunk
//! header, corrupt pointer, a cycle, random corruption) gives a typed error, never a panic.

mod common;

use common::patch;
use mirror_atomic::flavor::{Izraelevitz, Mirror};
use mirror_atomic::{HashSet, Heap, HeapError, List, Region, SkipList};
use pmem::RegionError;
use std::path::Path;

const LAYOUT: u64 = 0x1201;
const SIZE: u64 = 256 + 4 * 65536;
const USER: u64 = 256; // pmem's user offset; the first chunk starts here

fn make_list(path: &Path, keys: &[u64]) {
    let list =
        List::new(Heap::<Mirror, _>::create(path, LAYOUT, SIZE).expect("create")).expect("list");
    for &k in keys {
        assert!(list.insert(k).expect("room"));
    }
}

fn recover(path: &Path) -> Result<List<Mirror, pmem::Hardware>, HeapError> {
    List::recover(Region::open(path, LAYOUT)?)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read")
}

#[test]
fn a_list_survives_a_restart_and_keeps_working() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[5, 1, 9, 3]);
    let list = recover(&path).expect("recover");
    assert_eq!(list.snapshot(), (vec![1, 3, 5, 9], true));
    // Root block + 4 nodes are live; the rest of the chunks is free and reused.
    assert_eq!(list.heap().live_blocks(), 5);
    assert!(list.remove(3));
    assert!(list.insert(4).expect("room"));
    drop(list);
    assert_eq!(
        recover(&path).expect("recover").snapshot(),
        (vec![1, 4, 5, 9], true)
    );
}

#[test]
fn izraelevitz_hash_set_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.pmem");
    {
        let heap = Heap::<Izraelevitz, _>::create(&path, LAYOUT, SIZE).expect("create");
        let set = HashSet::<Izraelevitz, _>::with_capacity(heap, 16).expect("set");
        for k in 0..100 {
            set.insert(k * 7).expect("room");
        }
        for k in 0..50 {
            assert!(set.remove(k * 14));
        }
    }
    let set = HashSet::<Izraelevitz, _>::recover(Region::open(&path, LAYOUT).expect("open"))
        .expect("recover");
    let want: Vec<u64> = (0..100).map(|k| k * 7).filter(|k| k % 14 != 0).collect();
    assert_eq!(set.snapshot(), (want, true));
    assert_eq!(
        set.buckets(),
        32,
        "grown from the file's 16 buckets to hold 50 keys at two per bucket"
    );
}

fn open_err(path: &Path, layout: u64) -> HeapError {
    Heap::<Mirror, _>::open(path, layout, |t| {
        t.root::<mirror_atomic::ListRoot<Mirror>>(0).map(|_| ())
    })
    .expect_err("recovery must fail")
}

#[test]
fn wrong_layout_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1]);
    let e = open_err(&path, LAYOUT + 1);
    assert!(
        matches!(e, HeapError::Region(RegionError::WrongLayout { .. })),
        "{e}"
    );
}

#[test]
fn truncated_file_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1, 2]);
    let bytes = read(&path);
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
    let e = open_err(&path, LAYOUT);
    assert!(
        matches!(e, HeapError::Region(RegionError::Truncated { .. })),
        "{e}"
    );
}

#[test]
fn corrupt_chunk_header_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1, 2]);
    patch(&path, USER, &0xdead_beef_u64.to_le_bytes());
    let e = recover(&path).expect_err("corrupt");
    assert!(matches!(e, HeapError::BadChunk { chunk: USER }), "{e}");
}

/// A region of format 1 (chunk tag "MIRRORCK", list nodes `{key, next}`) is named as such,
/// not reported as corrupt or misread with the format-2 node layout.
#[test]
fn a_format_1_region_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1, 2]);
    patch(&path, USER, &0x4d49_5252_4f52_434b_u64.to_le_bytes());
    let e = recover(&path).expect_err("old format");
    assert!(matches!(e, HeapError::OldFormat), "{e}");
    assert!(e.to_string().contains("format 1"), "{e}");
}

#[test]
fn corrupt_pointer_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1]);
    // The root object (16-byte class) is the first block of the first chunk: its head pair's
    // value word points to the node. Point it into the chunk header.
    patch(&path, USER + 64, &(USER + 8).to_le_bytes());
    let e = recover(&path).expect_err("corrupt");
    assert!(matches!(e, HeapError::BadPointer { .. }), "{e}");
    // Past the end of the allocated chunks.
    patch(&path, USER + 64, &(SIZE - 64).to_le_bytes());
    let e = recover(&path).expect_err("corrupt");
    assert!(matches!(e, HeapError::BadPointer { .. }), "{e}");
}

#[test]
fn a_cycle_is_a_typed_error_not_a_hang() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1, 2]);
    // Node blocks (32 bytes) start the second chunk: node 1 at C, node 2 at C + 32. Each node
    // is {next pair {value, seq}, key, pad}; make node 2's next point back to node 1.
    let c = USER + 65536 + 64;
    patch(&path, c + 32, &c.to_le_bytes());
    let e = recover(&path).expect_err("corrupt");
    assert!(matches!(e, HeapError::Malformed { .. }), "{e}");
}

#[test]
fn random_corruption_never_panics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1, 5, 9, 13, 17]);
    let clean = read(&path);
    let mut x = 0x1234_5678_u64;
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..300 {
        let mut bytes = clean.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Corrupt the first two chunks' used parts (root, nodes) and the header's roots.
            let off = match x % 3 {
                0 => USER + (x >> 8) % 128,
                1 => USER + 65536 + (x >> 8) % 256,
                _ => (x >> 8) % 256,
            } as usize;
            bytes[off] = (x >> 32) as u8;
        }
        std::fs::write(&path, &bytes).expect("write");
        match recover(&path) {
            Ok(list) => {
                let (_, sorted) = list.snapshot();
                assert!(sorted, "recovery accepted a malformed list");
                ok += 1;
            }
            Err(_) => failed += 1,
        }
    }
    eprintln!("random corruption: {ok} recovered, {failed} rejected with a typed error");
    assert!(
        failed > 0,
        "no corruption was detected: the test corrupts nothing"
    );
}

#[test]
fn a_recovered_skip_list_reclaims_what_it_removes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.pmem");
    let size = 256 + 64 * 65536;
    {
        let heap = Heap::<Mirror, _>::create(&path, LAYOUT, size).expect("create");
        let set = SkipList::new(heap).expect("skip list");
        for k in 0..2000 {
            assert!(set.insert(k).expect("room"));
        }
    }
    let set = SkipList::<Mirror, _>::recover(Region::open(&path, LAYOUT).expect("open"))
        .expect("recover");
    assert_eq!(set.heap().live_blocks(), 2001);
    let levels = set.level_sizes();
    assert!(levels[1] > 300, "towers lost in recovery: {levels:?}");
    // Removing every key must free every node, tall ones included (recovery resets the
    // inserter's half of the reclamation handshake, which lives in DRAM only).
    for k in 0..2000 {
        assert!(set.remove(k));
    }
    // Churn to let epoch reclamation run the deferred frees (other tests of this binary pin the
    // same global epoch, so go on while the count is high; without the frees it never drops).
    let mut live = set.heap().live_blocks();
    for round in 0..60_000 {
        if round >= 20_000 && live < 400 {
            break;
        }
        assert!(set.insert(5000).expect("room"));
        assert!(set.remove(5000));
        live = set.heap().live_blocks();
    }
    assert!(
        live < 400,
        "{live} blocks live after removing all 2,000 keys of a recovered skip list"
    );
}

#[test]
fn a_marked_head_pointer_is_a_typed_error_not_a_livelock() {
    // Found by the recovery fuzz test: a head holding a marked pointer made every CAS on the
    // head fail, so an insert after recovery retried forever.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("l.pmem");
    make_list(&path, &[1, 2]);
    let bytes = read(&path);
    let at = (USER + 64) as usize;
    let head = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    patch(&path, USER + 64, &(head | 1).to_le_bytes());
    let e = recover(&path).expect_err("marked head");
    assert!(matches!(e, HeapError::Malformed { .. }), "{e}");
}

/// The nonzero words of the recovery fuzz test's case 278 (tree of commit 062799b): a mutated
/// `SkipList<Izraelevitz>` image of 262,400 bytes. The skip list's root (offset 320) links the
/// node at 576 (key 0, height 3) at levels 0, 1 and 2; that node's level-1 entry (608) holds
/// a marked null while its level-2 entry (616) is an unmarked null.
const FUZZ_CASE_278: &[(usize, u64)] = &[
    (0, 0x314e47524d454d50),
    (8, 0x1),
    (16, 0x1212),
    (24, 0x40100),
    (32, 0x100),
    (56, 0x70a8be398f6a0ec3),
    (80, 0x140),
    (128, 0x10100),
    (256, 0x4d4952524f523032),
    (264, 0x80),
    (320, 0x240),
    (328, 0x240),
    (336, 0x240),
    (448, 0x5),
    (456, 0x1),
    (464, 0x2),
    (472, 0x4c1),
    (584, 0x3),
    (592, 0x1),
    (600, 0x840),
    (608, 0x1),
    (664, 0x995593d5de592ba3),
    (704, 0x11),
    (712, 0x1),
    (720, 0x1),
    (728, 0x8c0),
    (832, 0x18),
    (840, 0x1),
    (848, 0x1),
    (856, 0x540),
    (960, 0x23),
    (968, 0x1),
    (976, 0x2),
    (984, 0x641),
    (1088, 0xe),
    (1096, 0x1),
    (1104, 0x1),
    (1112, 0x6c0),
    (1216, 0x6),
    (1224, 0x1),
    (1232, 0x1),
    (1240, 0x740),
    (1344, 0x1d),
    (1352, 0x1),
    (1360, 0x1),
    (1368, 0x5c0),
    (1472, 0x1f),
    (1480, 0x1),
    (1488, 0x1),
    (1496, 0x640),
    (1600, 0x24),
    (1608, 0x2),
    (1616, 0x1),
    (1728, 0xf),
    (1736, 0x2),
    (1744, 0x1),
    (1752, 0x2c0),
    (1760, 0x640),
    (1856, 0xd),
    (1864, 0x2),
    (1872, 0x1),
    (1880, 0x440),
    (1888, 0x6c0),
    (1984, 0x8),
    (1992, 0x2),
    (2000, 0x2),
    (2008, 0x741),
    (2016, 0x741),
    (2112, 0x1),
    (2120, 0x2),
    (2128, 0x1),
    (2136, 0x4c0),
    (2144, 0x740),
    (2240, 0x17),
    (2248, 0x1),
    (2256, 0x1),
    (2264, 0x340),
    (68136, 0x1000000000000000),
    (69824, 0x3b),
    (131336, 0x2),
];

#[test]
fn a_skip_list_node_linked_above_a_level_it_left_recovers_without_a_livelock() {
    // Found by the recovery fuzz test (issue 23): the repair of the time unlinked node 576 at
    // level 1 (its level-1 entry is marked) and kept it at level 2 (unmarked). Every check
    // passed (each level sorted, every node of level 2 at level 0), but an insert of a
    // two-level node after key 0 then found node 576 as its level-1 predecessor (searches
    // enter level 1 from the level-2 node) with a marked null there, and its level-1 CAS
    // failed forever. Recovery now rebuilds the upper levels from level 0 (they are not
    // durable since lever L4), so whatever they held, each level is a sub-list of the one
    // below, and the operations run.
    let mut bytes = vec![0u8; 262_400];
    for &(at, w) in FUZZ_CASE_278 {
        bytes[at..at + 8].copy_from_slice(&w.to_le_bytes());
    }
    let image = pmem::sim::Image::from_bytes(bytes);
    let region = common::single_thread_recovery(&image, pmem::sim::SimConfig::new(1))
        .expect("a valid region");
    let list = SkipList::<Izraelevitz, _>::recover(region).expect("level 0 is intact");
    let keys = vec![0, 1, 6, 13, 14, 15, 17, 23, 24, 29, 31, 36];
    assert_eq!(list.snapshot(), (keys.clone(), true));
    // Before: [12, 0, 1, 0, ...] (the key-0 node on level 2 but not on level 1).
    let sizes = list.level_sizes();
    assert!(
        sizes.windows(2).all(|w| w[0] >= w[1]),
        "a level larger than the one below: {sizes:?}"
    );
    // Before the fix `insert(3)` (a two-level node after key 0) never returned.
    let mut model: std::collections::BTreeSet<u64> = keys.into_iter().collect();
    for k in 0..64 {
        assert_eq!(list.insert(k).expect("room"), model.insert(k), "insert {k}");
    }
    for k in (0..64).step_by(3) {
        assert_eq!(list.remove(k), model.remove(&k), "remove {k}");
    }
    assert_eq!(list.snapshot(), (model.into_iter().collect(), true));
}

/// 224 bytes, 16-aligned: one block of the 224-byte class (issue 23's tower class).
#[repr(C)]
struct Tower([u64; 28]);
// SAFETY: plain words: any bits valid, no drop, no padding.
unsafe impl mirror_atomic::Object for Tower {
    const FIELD_BYTES: usize = 224;
}
impl mirror_atomic::Trace for Tower {
    fn trace(&self, _: &mut mirror_atomic::Tracer<'_>) {}
}

/// 192 bytes aligned to 64: fits a 224-byte block but not its alignment (every other block of
/// that class is only 32-aligned).
#[repr(C, align(64))]
struct Wide([u64; 24]);
// SAFETY: plain words: any bits valid, no drop, no padding.
unsafe impl mirror_atomic::Object for Wide {
    const FIELD_BYTES: usize = 192;
}
impl mirror_atomic::Trace for Wide {
    fn trace(&self, _: &mut mirror_atomic::Tracer<'_>) {}
}

#[test]
fn a_pointer_misaligned_for_its_type_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.pmem");
    {
        let mut heap = Heap::<Mirror, _>::create(&path, LAYOUT, SIZE).expect("create");
        let first = heap.alloc(Tower([1; 28])).expect("room");
        let second = heap.alloc(Tower([2; 28])).expect("room");
        assert_eq!(first.offset() % 64, 0);
        assert_eq!(
            second.offset() % 64,
            32,
            "the second 224-byte block is 32-aligned"
        );
        // The allocator does not put a 64-aligned type in that class.
        for _ in 0..2 {
            assert_eq!(heap.alloc(Wide([3; 24])).expect("room").offset() % 64, 0);
        }
        heap.set_root(0, second).expect("slot");
    }
    let err = Heap::<Mirror, _>::open(&path, LAYOUT, |t| t.root::<Wide>(0).map(|_| ()))
        .expect_err("a 64-aligned type in a 32-aligned block");
    assert!(
        matches!(
            err,
            HeapError::BadPointer {
                reason: "block not aligned for the type",
                ..
            }
        ),
        "{err:?}"
    );
}

/// Issue 23: a skip-list node's block follows its height, so recovery reads the height before
/// the tower and traces only the levels it names. A corrupt height is clamped to
/// `1..=MAX_LEVEL`; one whose levels do not fit the node's block is a typed error (before, every
/// node had a 224-byte tower and any height fit; now reading on would leave the block).
#[test]
fn a_skip_list_height_past_its_block_is_a_typed_error() {
    const BASE: u64 = 0x5EED_0000_0000;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.pmem");
    {
        let heap = Heap::<Mirror, _>::create(&path, LAYOUT, SIZE).expect("create");
        let set = SkipList::new(heap).expect("skip list");
        for k in 0..64 {
            assert!(set.insert(BASE + k).expect("room"));
        }
    }
    let bytes = read(&path);
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    // A node of height 1: its key at the block start, its height right after.
    let node = (USER as usize..bytes.len() - 16)
        .step_by(16)
        .find(|&at| word(at) & !63 == BASE && word(at + 8) == 1)
        .expect("a node of height 1 among 64");
    let open = || SkipList::<Mirror, _>::recover(Region::open(&path, LAYOUT).expect("open"));
    // (Heights 2 and 3 fit: 56 and 64 bytes, the block.)
    for height in [4, 12, 13, u64::MAX] {
        common::patch(&path, node as u64 + 8, &height.to_le_bytes());
        match open() {
            Err(HeapError::BadPointer { offset, reason }) => {
                assert_eq!(
                    (offset, reason),
                    (node as u64, "object's tail past the end of its block")
                );
            }
            other => panic!("height {height} in a one-level block: {other:?}"),
        }
    }
    // Height 0 is clamped to one level, and 2 and 3 fit the block: the node is read.
    for height in [0u64, 2, 3] {
        common::patch(&path, node as u64 + 8, &height.to_le_bytes());
        let set = open().unwrap_or_else(|e| panic!("height {height}: {e}"));
        assert_eq!(set.snapshot(), ((0..64).map(|k| BASE + k).collect(), true));
    }
}
