//! An unlinking CAS that leaves its durability to the retire (Mirror's
//! `Flavor::compare_exchange_unlinking`, issue 23's "one fence for a remove") must be durable
//! before its block is reused: `Heap::retire`'s `psync` is what makes it so.
//!
//! The window the test builds: thread A removes a key (mark, fenced; unlink, written back but
//! not fenced; retire) and then issues no other persistence instruction; the main thread then
//! churns other keys until the removed block is reused. Without the retire's `psync` the
//! durable image still has the predecessor pointing at the block, which now holds another
//! node, and the recovered list loses a key. On pmem's simulator a thread's write-backs reach
//! the media only at its own fence (`pmem::sim`), and with no evictions and a crash that keeps
//! nothing unfenced the image is exactly what was fenced.

mod common;

use common::{single_thread_recovery, LAYOUT, SIM_SIZE};
use mirror_atomic::flavor::Mirror;
use mirror_atomic::{Bst, Heap, List, SkipList};
use pmem::sim::{Image, SimConfig, Simulated};
use pmem::Region;

fn strict() -> SimConfig {
    SimConfig::new(7).evictions(0.0).crash_keeps(0.0)
}

fn region() -> Region<Simulated> {
    // SAFETY:
    // - every write to region memory and every backend call is sequenced: the main thread
    //   makes them, except between the spawn and the join of the one helper thread, while the
    //   main thread waits (the join orders both ways), so the simulator's reads never race;
    // - nothing here makes a `&mut` into region memory.
    unsafe { Region::simulated(LAYOUT, SIM_SIZE, strict()) }.expect("region")
}

/// The keys the fill phase of [`churn_then_fill`] leaves: 400 odd keys from `base + 1000`.
fn fill(base: u64) -> impl Iterator<Item = u64> {
    (0..400).map(move |i| base + 1000 + 2 * i)
}

/// 300 rounds of inserting and removing 8 odd keys from `base` (the epochs advance and the
/// deferred frees run), then 400 inserts kept: more than the free blocks of the class, so
/// every block freed into this thread's shard is reused, whatever its place in the free list.
fn churn_then_fill(base: u64, insert: impl Fn(u64) -> bool, remove: impl Fn(u64) -> bool) {
    for _ in 0..300 {
        for i in 0..8 {
            assert!(insert(base + 2 * i));
        }
        for i in 0..8 {
            assert!(remove(base + 2 * i));
        }
    }
    for k in fill(base) {
        assert!(insert(k));
    }
}

/// `kept` and the fill keys, sorted.
fn want(kept: &[u64], base: u64) -> Vec<u64> {
    let mut all: Vec<u64> = kept.iter().copied().chain(fill(base)).collect();
    all.sort_unstable();
    all
}

/// Inserts 0..4, removes 2 on a helper thread (mark, unlink, retire), then on this thread
/// churns from `base` until the removed block's deferred free has run (on this thread, into
/// its shard) and takes every free block of the class, so the removed one is reused; the image
/// of a crash then.
#[allow(clippy::disallowed_methods)] // the test's own helper thread
fn remove_2_then_reuse_its_block(
    base: u64,
    insert: impl Fn(u64) -> bool,
    remove: impl Fn(u64) -> bool + Sync,
    crash: impl FnOnce() -> Image,
) -> Image {
    for k in 0..4 {
        assert!(insert(k));
    }
    std::thread::scope(|s| {
        s.spawn(|| assert!(remove(2))).join().expect("remover");
    });
    churn_then_fill(base, insert, remove);
    crash()
}

#[test]
fn mirror_list_reuses_a_removed_block_only_after_its_unlink_is_durable() {
    let list = List::<Mirror, _>::new(Heap::new(region()).expect("heap")).expect("list");
    // Nodes 0, 1 share a cache line, 2, 3 the next one (32-byte blocks from a line boundary):
    // the churn below never writes the line of node 1, whose `next` the remove of 2 unlinks.
    let image = remove_2_then_reuse_its_block(
        101,
        |k| list.insert(k).expect("room"),
        |k| list.remove(k),
        || list.heap().space().persist().crash(),
    );
    let recovered = List::<Mirror, Simulated>::recover(
        single_thread_recovery(&image, SimConfig::new(8)).expect("image"),
    )
    .expect("recover");
    assert_eq!(
        recovered.snapshot(),
        (want(&[0, 1, 3], 101), true),
        "the durable list lost or gained keys: a block was reused while it still linked it"
    );
}

#[test]
#[allow(clippy::disallowed_methods)] // the test's own helper thread
fn mirror_bst_reuses_removed_blocks_only_after_the_swing_is_durable() {
    let tree = Bst::<Mirror, _>::new(Heap::new(region()).expect("heap")).expect("tree");
    // The swing of `remove(30)` writes an edge in a node made by these first inserts (the
    // edge to leaf 20 or 40 that 30's insert replaced).
    for k in [40, 20, 60, 10, 50, 70] {
        assert!(tree.insert(k).expect("room"));
    }
    // Then nodes far from them in the chunk, so that neither the churn below (whose edges
    // are in these nodes) nor the reuse of 30's blocks (allocated after them) writes back a
    // line of the first nodes.
    let pads: Vec<u64> = (0..100).map(|i| 2000 + 2 * i).collect();
    for &k in &pads {
        assert!(tree.insert(k).expect("room"));
    }
    assert!(tree.insert(30).expect("room"));
    std::thread::scope(|s| {
        s.spawn(|| assert!(tree.remove(30)))
            .join()
            .expect("remover");
    });
    churn_then_fill(2101, |k| tree.insert(k).expect("room"), |k| tree.remove(k));
    let image = tree.heap().space().persist().crash();
    let recovered = Bst::<Mirror, Simulated>::recover(
        single_thread_recovery(&image, SimConfig::new(8)).expect("image"),
    );
    let mut kept = vec![10, 20, 40, 50, 60, 70];
    kept.extend(&pads);
    match recovered {
        Ok(t) => assert_eq!(
            t.snapshot(),
            (want(&kept, 2101), true),
            "the durable tree lost or gained keys"
        ),
        Err(e) => panic!("the durable tree is damaged: {e}"),
    }
}

/// The skip list's level-0 unlink (a persisted CAS, issue 23's `tests/mutants/l4_durability.spec`)
/// must be durable before the removed node's block is reused: the retire's `psync` fences only
/// what was written back. Thread A removes 2 (mark, unlink after 1, retire); the main thread's
/// churn then reuses 2's block for another key. Skip-list nodes take whole 224-byte blocks, so
/// the line of 1's level-0 pointer holds no word the churn writes at level 0 (its upper-level
/// CASes are never written back); were the unlink not durable, the durable 1 would still point
/// at the reused block.
#[test]
fn mirror_skiplist_reuses_a_removed_block_only_after_its_level0_unlink_is_durable() {
    let list = SkipList::<Mirror, _>::new(Heap::new(region()).expect("heap")).expect("list");
    let image = remove_2_then_reuse_its_block(
        101,
        |k| list.insert(k).expect("room"),
        |k| list.remove(k),
        || list.heap().space().persist().crash(),
    );
    let recovered = SkipList::<Mirror, Simulated>::recover(
        single_thread_recovery(&image, SimConfig::new(8)).expect("image"),
    );
    match recovered {
        Ok(l) => assert_eq!(
            l.snapshot(),
            (want(&[0, 1, 3], 101), true),
            "the durable skip list lost or gained keys: a block was reused while it still \
             linked it"
        ),
        Err(e) => panic!("the durable skip list is damaged: {e}"),
    }
}
