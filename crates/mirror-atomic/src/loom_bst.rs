//! Loom models of the Natarajan-Mittal BST's removal (`bst.rs`) under the Mirror flavor: removes
//! whose cleanups meet, so that one swing can unlink a *chain* of nodes (every edge below the
//! last untagged one is tagged) which `retire_unlinked` must retire, each node once.
//! The heap's epoch domain is `epoch-domain`'s loom stand-in, so retired nodes are freed as
//! early as reclamation allows and their blocks are reused within the model.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p mirror-atomic
//! --lib loom_` (exhaustive within the preemption bound).

use crate::bst::Bst;
use crate::flavor::Mirror;
use crate::sync::{model, thread, Arc};
use pmem::NoPersist;

/// Room for the sentinels' and the nodes' chunks.
const HEAP: u64 = 256 << 10;

/// Blocks of an empty tree: `R`, `S` and the three sentinel leaves.
const SENTINELS: usize = 5;

/// A tree of `keys`, shared.
fn tree_of(keys: &[u64]) -> Arc<Bst<Mirror, NoPersist>> {
    let tree = Bst::<Mirror, NoPersist>::anonymous(HEAP).expect("heap");
    for &k in keys {
        assert!(tree.insert(k).expect("room"));
    }
    Arc::new(tree)
}

/// After every remove returned: `want` is left, and once every guard is gone the heap holds the
/// sentinels and two blocks per key (a node of an unlinked chain not retired is one block too
/// many, one retired twice one too few).
fn check_final(tree: &Bst<Mirror, NoPersist>, want: &[u64]) {
    assert_eq!(
        tree.snapshot(),
        (want.to_vec(), true),
        "keys after every remove"
    );
    assert_eq!(
        tree.heap().live_blocks(),
        SENTINELS + 2 * want.len(),
        "blocks: the sentinels and a leaf and an internal node per key"
    );
}

/// Tree `10, 20, 30` (`I20 {10, I30 {20, 30}}` below `S`): `remove(10)` against `remove(20)`.
/// When the remover of 10 has flagged its leaf and tagged the edge `I20 -> I30`, the remover
/// of 20 finds `S -> I20` as its last untagged edge, and its swing unlinks `I20`, leaf 10,
/// `I30` and leaf 20 at once. Afterwards the tree holds 30 only, and once every guard is gone
/// the heap holds the sentinels and 30's two nodes: a node of the chain not retired is one
/// block too many, one retired twice one too few.
#[test]
fn loom_two_removes_retire_the_unlinked_chain_once() {
    model(|| {
        let tree = tree_of(&[10, 20, 30]);
        let t2 = Arc::clone(&tree);
        let t = thread::spawn(move || t2.remove(20));
        assert!(tree.remove(10), "10 was present");
        assert!(t.join().expect("no panic"), "20 was present");
        check_final(&tree, &[30]);
    });
}

/// Tree `10, 20, 30, 40` (`I20 {10, I30 {20, I40 {30, 40}}}`): `remove(10)`, `remove(20)` and
/// `remove(30)` on three threads (three modelled threads: bounded by `LOOM_MAX_PREEMPTIONS`). When the first two have each flagged their leaf and tagged
/// the edge below (`I20 -> I30`, `I30 -> I40`), the third's swing at `S` unlinks a chain of two
/// internal nodes above its parent (`I20` and `I30`, with leaves 10 and 20), so
/// `retire_unlinked` must walk the whole chain, not only its first node.
#[test]
fn loom_three_removes_retire_a_chain_of_two() {
    model(|| {
        let tree = tree_of(&[10, 20, 30, 40]);
        let (t1, t2) = (Arc::clone(&tree), Arc::clone(&tree));
        let a = thread::spawn(move || t1.remove(20));
        let b = thread::spawn(move || t2.remove(30));
        // This thread runs first: the chain needs only two preemptions (this remove after its
        // tag, then the remove of 20 after its tag), within CI's bound of 2.
        assert!(tree.remove(10), "10 was present");
        assert!(a.join().expect("no panic"), "20 was present");
        assert!(b.join().expect("no panic"), "30 was present");
        check_final(&tree, &[40]);
    });
}
