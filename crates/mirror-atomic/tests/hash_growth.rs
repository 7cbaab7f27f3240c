//! The hash set grows (hash-set format 4, the split-ordered list): from its initial bucket
//! count to 65,536 buckets at 100,000 keys, recovered with the bucket count its keys need and
//! every sentinel where it was; older roots and damaged sentinels are typed errors.

mod common;

use common::patch;
use mirror_atomic::flavor::{Izraelevitz, Mirror};
use mirror_atomic::{
    HashError, HashRoot, HashSet, Heap, HeapError, Object, PAtomic, Region, DEFAULT_BUCKETS,
    HASH_MAX_KEY, HASH_ROOT_SLOT,
};
use std::path::Path;

const LAYOUT: u64 = 0x4853;

fn recover(path: &Path) -> Result<HashSet<Mirror, pmem::Hardware>, HeapError> {
    HashSet::recover(Region::open(path, LAYOUT)?)
}

fn bytes(path: &Path, off: u64, len: usize) -> Vec<u8> {
    std::fs::read(path).expect("read")[off as usize..off as usize + len].to_vec()
}

fn word(path: &Path, off: u64) -> u64 {
    u64::from_le_bytes(bytes(path, off, 8).try_into().expect("8 bytes"))
}

/// Scrambled keys (below `HASH_MAX_KEY`).
fn keys(n: u64) -> Vec<u64> {
    (0..n)
        .map(|k| k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1)
        .collect()
}

#[test]
fn a_default_set_grows_to_100k_keys_and_recovers_grown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.pmem");
    let keys = keys(100_000);
    {
        let heap = Heap::<Mirror, _>::create(&path, LAYOUT, 16 << 20).expect("create");
        let set = HashSet::new(heap).expect("set");
        assert_eq!(set.buckets(), DEFAULT_BUCKETS);
        for &k in &keys {
            assert!(set.insert(k).expect("room"));
        }
        assert_eq!(set.buckets(), 65_536, "doubled past two keys per bucket");
        for &k in keys.iter().step_by(2) {
            assert!(set.remove(k));
        }
        assert_eq!(set.buckets(), 65_536, "the set does not shrink");
    }
    let set = recover(&path).expect("recover");
    assert_eq!(
        set.buckets(),
        32_768,
        "recovery sizes the table for the 50,000 keys"
    );
    let mut want: Vec<u64> = keys.iter().copied().skip(1).step_by(2).collect();
    want.sort_unstable();
    assert_eq!(set.snapshot(), (want.clone(), true));
    // Recovery traced the root, every key's node and some sentinels (at most one per bucket
    // of the 65,536 the set had): all allocated after recovery.
    let live = set.heap().live_blocks();
    assert!(
        live > 1 + want.len() && live < 1 + want.len() + 65_536,
        "{live} blocks allocated after recovery for {} keys",
        want.len()
    );
    // The rebuilt free space reuses none of them: new keys keep the old ones intact.
    for &k in keys.iter().step_by(2).take(1000) {
        assert!(set.insert(k).expect("room"));
    }
    for &k in keys.iter().take(2000) {
        assert!(set.contains(k), "{k}");
    }
    assert!(set.snapshot().1);
}

#[test]
fn an_izraelevitz_set_grows_and_recovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hi.pmem");
    {
        let heap = Heap::<Izraelevitz, _>::create(&path, LAYOUT, 4 << 20).expect("create");
        let set = HashSet::with_capacity(heap, 1).expect("set");
        for k in 0..5000 {
            assert!(set.insert(k).expect("room"));
        }
        assert_eq!(set.buckets(), 4096);
    }
    let set = HashSet::<Izraelevitz, _>::recover(Region::open(&path, LAYOUT).expect("open"))
        .expect("recover");
    assert_eq!(set.buckets(), 4096);
    assert_eq!(set.snapshot(), ((0..5000).collect(), true));
}

#[test]
fn keys_above_the_largest_are_refused_and_never_present() {
    let set = HashSet::<Mirror, _>::anonymous(1 << 20).expect("set");
    assert!(set.insert(HASH_MAX_KEY).expect("in range"));
    assert_eq!(
        set.insert(HASH_MAX_KEY + 1),
        Err(HashError::KeyOutOfRange {
            key: HASH_MAX_KEY + 1
        })
    );
    assert!(!set.contains(u64::MAX));
    assert!(!set.remove(u64::MAX));
    // The largest key and the one that would share its 63 bits stay apart.
    assert!(set.contains(HASH_MAX_KEY));
    assert_eq!(set.snapshot(), (vec![HASH_MAX_KEY], true));
}

/// A format-2 root: a fixed array of bucket heads (8 buckets, all empty).
#[repr(C)]
struct Format2Root([PAtomic<u64>; 8]);

// SAFETY: eight Mirror pairs of plain words: any bits valid, no drop, no padding.
unsafe impl Object for Format2Root {
    const FIELD_BYTES: usize = 8 * core::mem::size_of::<PAtomic<u64>>();
}

/// A format-3 root's first words: the tag `"MIRHASH3"`, log2 of the count, a directory.
#[repr(C)]
struct Format3Root([u64; 4]);

// SAFETY: plain words: any bits valid, no drop, no padding.
unsafe impl Object for Format3Root {
    const FIELD_BYTES: usize = 4 * 8;
}

fn old_root_error<N: Object>(name: &str, root: N) -> HeapError {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    {
        let mut heap = Heap::<Mirror, _>::create(&path, LAYOUT, 1 << 20).expect("create");
        let root = heap.alloc(root).expect("root");
        heap.set_root(HASH_ROOT_SLOT, root).expect("slot");
    }
    recover(&path).expect_err("an old root is refused")
}

#[test]
fn a_format_2_hash_set_root_is_a_typed_error() {
    let err = old_root_error(
        "h2.pmem",
        Format2Root(core::array::from_fn(|_| PAtomic::new(0))),
    );
    assert!(
        matches!(err, HeapError::OldHashSetFormat { format: 2 }),
        "{err:?}: {err}"
    );
}

#[test]
fn a_format_3_hash_set_root_is_a_typed_error() {
    let tag = u64::from_be_bytes(*b"MIRHASH3");
    let err = old_root_error("h3.pmem", Format3Root([tag, 3, 0, 0]));
    assert!(
        matches!(err, HeapError::OldHashSetFormat { format: 3 }),
        "{err:?}: {err}"
    );
    assert_eq!(
        err.to_string(),
        "hash-set root of format 3 (buckets fixed when made); this version reads format 4"
    );
}

/// The offset of the first sentinel (a node with an even split-order key) in the file of a
/// Mirror set: nodes are `{next pair (value, sequence), key, pad}`; the root is
/// `{tag, log2, head pair}`.
fn first_sentinel(path: &Path, root: u64) -> u64 {
    let mut node = word(path, root + 16) & !1;
    while node != 0 {
        if word(path, node + 16) & 1 == 0 {
            return node;
        }
        node = word(path, node) & !1;
    }
    panic!("no sentinel in the list");
}

/// Makes a Mirror set at `path` sized for `capacity` keys, inserts `0..keys`, and returns
/// the root's offset in the file (region offsets are file offsets).
fn file_set(path: &Path, capacity: usize, keys: u64) -> u64 {
    let heap = Heap::<Mirror, _>::create(path, LAYOUT, 1 << 20).expect("create");
    let set = HashSet::with_capacity(heap, capacity).expect("set");
    for k in 0..keys {
        set.insert(k).expect("room");
    }
    set.heap()
        .root::<HashRoot<Mirror>>(HASH_ROOT_SLOT)
        .expect("root")
        .offset()
}

/// Recovery of `path` fails with `Malformed { what }`.
fn assert_malformed(path: &Path, what: &str) {
    match recover(path) {
        Err(HeapError::Malformed { what: got }) => assert_eq!(got, what),
        other => panic!("expected Malformed({what}), got {other:?}"),
    }
}

#[test]
fn a_marked_sentinel_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h4.pmem");
    let root = file_set(&path, 8, 16);
    let sentinel = first_sentinel(&path, root);
    let next = word(&path, sentinel);
    patch(&path, sentinel, &(next | 1).to_le_bytes());
    assert_malformed(&path, "hash-set sentinel marked or naming no bucket");
}

#[test]
fn a_recorded_bucket_count_out_of_range_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h5.pmem");
    let root = file_set(&path, 32, 0);
    // log2 of the initial count: 2^64 buckets.
    patch(&path, root + 8, &64u64.to_le_bytes());
    assert_malformed(&path, "hash-set bucket count out of range");
}

#[test]
fn removes_count_down_so_a_refilled_set_does_not_double_again() {
    let set = HashSet::<Mirror, _>::anonymous(4 << 20).expect("set");
    for round in 0..3 {
        for k in 0..1000 {
            assert!(set.insert(k).expect("room"));
        }
        assert_eq!(
            set.buckets(),
            512,
            "round {round}: 1,000 keys need 512 buckets"
        );
        for k in 0..1000 {
            assert!(set.remove(k));
        }
    }
}

/// On a full heap a bucket's sentinel cannot be made: lookups and removes then walk from the
/// parent's sentinel (no error, no panic), and every key is still found.
#[test]
fn a_full_heap_still_finds_every_key() {
    let set = HashSet::<Mirror, _>::anonymous(256 << 10).expect("set");
    let mut keys = Vec::new();
    for k in 0u64.. {
        match set.insert(k * 7) {
            Ok(inserted) => {
                assert!(inserted);
                keys.push(k * 7);
            }
            Err(HashError::Alloc(_)) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(keys.len() > 1000, "{} keys fit", keys.len());
    for &k in &keys {
        assert!(set.contains(k), "{k}");
    }
    for &k in keys.iter().step_by(2) {
        assert!(set.remove(k), "{k}");
    }
    let want: Vec<u64> = keys.iter().copied().skip(1).step_by(2).collect();
    assert_eq!(set.snapshot(), (want, true));
}
