//! The Natarajan-Mittal BST: reserved sentinel keys, removed nodes reused, a restart from a
//! file, and a two-thread stress on few keys (the helping paths) that must leave the tree well
//! formed with every node accounted for.

// The harness's own threads are not under test (loom does not run this file).
#![allow(clippy::disallowed_methods)]

use mirror_atomic::flavor::{Flavor, Izraelevitz, Mirror, Volatile};
use mirror_atomic::{Bst, BstError, Heap, NoPersist, Region, BST_MAX_KEY};

#[test]
fn sentinel_keys_are_rejected_and_never_present() {
    let tree = Bst::<Mirror, NoPersist>::anonymous(1 << 20).expect("tree");
    for key in [BST_MAX_KEY + 1, BST_MAX_KEY + 2, u64::MAX] {
        assert_eq!(tree.insert(key), Err(BstError::ReservedKey { key }));
        assert!(!tree.contains(key));
        assert!(!tree.remove(key));
    }
    assert!(tree.insert(BST_MAX_KEY).expect("room"));
    assert!(tree.insert(0).expect("room"));
    assert!(tree.contains(BST_MAX_KEY));
    assert_eq!(tree.snapshot(), (vec![0, BST_MAX_KEY], true));
    assert!(tree.remove(BST_MAX_KEY));
    assert_eq!(tree.snapshot(), (vec![0], true));
    // Five sentinels + two blocks for key 0 (the removed nodes are retired, maybe not yet
    // reused).
    assert!(tree.heap().live_blocks() >= 7);
}

fn removed_nodes_are_reused<F: Flavor>() {
    let tree = Bst::<F, NoPersist>::anonymous(1 << 20).expect("tree");
    for k in 0..200 {
        assert!(tree.insert(k * 3).expect("room"));
    }
    // Without reuse, 20,000 rounds of insert + remove would need 40,000 blocks (more than the
    // 1 MiB heap holds): the inserts below would fail with `Exhausted`.
    for round in 0..20_000u64 {
        let k = (round % 200) * 3 + 1;
        assert!(tree.insert(k).expect("removed nodes are reused"));
        assert!(tree.remove(k));
    }
    let (keys, ok) = tree.snapshot();
    assert!(ok && keys.len() == 200);
}

#[test]
fn removed_nodes_are_reused_in_every_flavor() {
    removed_nodes_are_reused::<Volatile>();
    removed_nodes_are_reused::<Mirror>();
    removed_nodes_are_reused::<Izraelevitz>();
}

/// Two threads insert and remove over 8 keys (so removes of neighbouring leaves meet and help
/// each other); afterwards the tree is well formed, each thread's last view of its own keys is
/// the truth, and after a grace period the blocks are exactly the sentinels plus two per key
/// (a node retired twice would be freed twice; one never retired would stay allocated).
fn two_threads_on_few_keys<F: Flavor>() {
    let tree = Bst::<F, NoPersist>::anonymous(4 << 20).expect("tree");
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let tree = &tree;
            s.spawn(move || {
                let mut x = t + 1;
                for _ in 0..20_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = x % 8;
                    if x & 0x100 == 0 {
                        let _ = tree.insert(k).expect("room");
                    } else {
                        let _ = tree.remove(k);
                    }
                }
            });
        }
    });
    let (keys, ok) = tree.snapshot();
    assert!(ok, "malformed after the stress: {keys:?}");
    for k in 0..8 {
        assert_eq!(tree.contains(k), keys.contains(&k));
    }
    // Every operation has returned, so every remove's cleanup is done (by it or a helper): the
    // tree holds the sentinels and two nodes per key, and every other block was retired. Let
    // the epoch advance until the retired blocks are freed (other tests of this binary pin the
    // same global epoch, so allow up to 20 s), then count: a block never retired (or a flagged
    // leaf left linked) keeps the count above `want`, a block retired twice takes it below.
    let want = 5 + 2 * keys.len();
    let start = std::time::Instant::now();
    let mut live = tree.heap().live_blocks();
    while live > want && start.elapsed() < std::time::Duration::from_secs(20) {
        tree.heap().pin().flush();
        std::thread::yield_now();
        live = tree.heap().live_blocks();
    }
    for _ in 0..1000 {
        tree.heap().pin().flush();
    }
    let live = tree.heap().live_blocks();
    assert_eq!(live, want, "blocks for {} keys", keys.len());
}

#[test]
fn two_threads_on_few_keys_volatile() {
    two_threads_on_few_keys::<Volatile>();
}

#[test]
fn two_threads_on_few_keys_mirror() {
    two_threads_on_few_keys::<Mirror>();
}

#[test]
fn two_threads_on_few_keys_izraelevitz() {
    two_threads_on_few_keys::<Izraelevitz>();
}

#[test]
fn a_bst_survives_a_restart_and_keeps_working() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.pmem");
    {
        let heap = Heap::<Mirror, _>::create(&path, 0xB5, 256 + 4 * 65536).expect("create");
        let tree = Bst::new(heap).expect("tree");
        for k in [50, 10, 90, 30, 70] {
            assert!(tree.insert(k).expect("room"));
        }
        assert!(tree.remove(30));
    }
    let tree =
        Bst::<Mirror, _>::recover(Region::open(&path, 0xB5).expect("open")).expect("recover");
    assert_eq!(tree.snapshot(), (vec![10, 50, 70, 90], true));
    assert_eq!(tree.heap().live_blocks(), 5 + 2 * 4);
    assert!(tree.insert(30).expect("room") && tree.remove(90));
    drop(tree);
    let tree =
        Bst::<Mirror, _>::recover(Region::open(&path, 0xB5).expect("open")).expect("recover");
    assert_eq!(tree.snapshot(), (vec![10, 30, 50, 70], true));
}
