//! The hash set's bucket count: sized from a capacity, recorded in the file (hash-set format 3)
//! and used again by recovery; a format-2 root and a damaged directory are typed errors.

mod common;

use common::patch;
use mirror_atomic::flavor::Mirror;
use mirror_atomic::{
    HashRoot, HashSet, Heap, HeapError, Object, PAtomic, Region, HASH_ROOT_SLOT, SEGMENT_HEADS,
};
use std::path::Path;

const LAYOUT: u64 = 0x4853;

fn set_in(path: &Path, size: u64, capacity: usize) -> HashSet<Mirror, pmem::Hardware> {
    let heap = Heap::<Mirror, _>::create(path, LAYOUT, size).expect("create");
    HashSet::with_capacity(heap, capacity).expect("set")
}

fn recover(path: &Path) -> Result<HashSet<Mirror, pmem::Hardware>, HeapError> {
    HashSet::recover(Region::open(path, LAYOUT)?)
}

/// The root's offset in the file (region offsets are file offsets).
fn root_offset(set: &HashSet<Mirror, pmem::Hardware>) -> u64 {
    set.heap()
        .root::<HashRoot<Mirror>>(HASH_ROOT_SLOT)
        .expect("root")
        .offset()
}

fn bytes(path: &Path, off: u64, len: usize) -> Vec<u8> {
    std::fs::read(path).expect("read")[off as usize..off as usize + len].to_vec()
}

#[test]
fn a_set_sized_for_100k_keys_recovers_with_its_bucket_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.pmem");
    let keys: Vec<u64> = (0..100_000u64)
        .map(|k| k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1)
        .collect();
    {
        let set = set_in(&path, 16 << 20, 100_000);
        assert_eq!(set.buckets(), 131_072);
        for &k in &keys {
            assert!(set.insert(k).expect("room"));
        }
        for &k in keys.iter().step_by(2) {
            assert!(set.remove(k));
        }
    }
    let set = recover(&path).expect("recover");
    assert_eq!(
        set.buckets(),
        131_072,
        "the bucket count comes from the file"
    );
    let mut want: Vec<u64> = keys.iter().copied().skip(1).step_by(2).collect();
    want.sort_unstable();
    assert_eq!(set.snapshot(), (want.clone(), true));
    // Every node, the root and the 256 segments are reachable, so none is reused.
    assert_eq!(
        set.heap().live_blocks(),
        want.len() + 1 + 131_072 / SEGMENT_HEADS
    );
    assert!(set.insert(keys[0]).expect("room"));
    assert!(set.contains(keys[0]));
}

/// A format-2 root: a fixed array of bucket heads (8 buckets, all empty).
#[repr(C)]
struct Format2Root([PAtomic<u64>; 8]);

// SAFETY: eight Mirror pairs of plain words: any bits valid, no drop, no padding.
unsafe impl Object for Format2Root {
    const FIELD_BYTES: usize = 8 * core::mem::size_of::<PAtomic<u64>>();
}

#[test]
fn a_format_2_hash_set_root_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h2.pmem");
    {
        let mut heap = Heap::<Mirror, _>::create(&path, LAYOUT, 1 << 20).expect("create");
        let root = heap
            .alloc(Format2Root(core::array::from_fn(|_| PAtomic::new(0))))
            .expect("root");
        heap.set_root(HASH_ROOT_SLOT, root).expect("slot");
    }
    let err = recover(&path).expect_err("a format-2 root is refused");
    assert!(matches!(err, HeapError::OldHashSetFormat), "{err:?}: {err}");
}

#[test]
fn a_segment_named_twice_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h3.pmem");
    let dir_entry = |root: u64, i: u64| root + 16 + 8 * i;
    let root = {
        let set = set_in(&path, 1 << 20, 2 * SEGMENT_HEADS);
        root_offset(&set)
    };
    let first = bytes(&path, dir_entry(root, 0), 8);
    patch(&path, dir_entry(root, 1), &first);
    let err = recover(&path).expect_err("a directory naming one segment twice is refused");
    assert!(
        matches!(
            err,
            HeapError::Malformed {
                what: "hash-set segment missing or used twice"
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_head_past_the_bucket_count_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h4.pmem");
    let (segment, full) = {
        let set = set_in(&path, 1 << 20, 8);
        assert!(set.insert(42).expect("room"));
        let root = root_offset(&set);
        let segment = u64::from_le_bytes(bytes(&path, root + 16, 8).try_into().expect("8"));
        // The bucket that holds 42: the one of the first eight heads that is not empty.
        let full = (0..8u64)
            .find(|i| bytes(&path, segment + 16 * i, 8) != [0; 8])
            .expect("42 is in one of the 8 buckets");
        (segment, full)
    };
    // Head 8 (past the count) names the same node: reachable, but no key maps to it.
    let pair = bytes(&path, segment + 16 * full, 16);
    patch(&path, segment + 16 * 8, &pair);
    let err = recover(&path).expect_err("a used head past the bucket count is refused");
    assert!(
        matches!(
            err,
            HeapError::Malformed {
                what: "hash-set head past the bucket count is not empty"
            }
        ),
        "{err:?}"
    );
}
