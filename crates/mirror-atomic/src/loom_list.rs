//! Loom models of the Harris-Michael list (`list.rs`) under the Mirror flavor: insert, remove,
//! and the unlink of a marked node by a later `find`, with the heap's retire and reuse seen by
//! loom (the heap's epoch domain is `epoch-domain`'s loom stand-in, which frees a retired node
//! as soon as the last guard that could still read it is dropped, and the allocator hands the
//! block out again at once).
//!
//! Each model starts from the list `{1}` and runs one remove against one insert on two
//! threads; afterwards the keys must be exactly those the outcomes imply, and once every guard
//! is gone the heap must hold exactly the root and one block per key (a node left linked
//! while marked, or never retired, is one block too many; one retired twice, one too few).
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p mirror-atomic
//! --lib loom_` (exhaustive within the preemption bound).

use crate::flavor::Mirror;
use crate::list::List;
use crate::sync::{model, thread, Arc};
use pmem::NoPersist;

type MirrorList = List<Mirror, NoPersist>;

/// Room for the root chunk and one chunk of nodes.
const HEAP: u64 = 256 << 10;

fn list_of(keys: &[u64]) -> Arc<MirrorList> {
    let list = MirrorList::anonymous(HEAP).expect("heap");
    for &k in keys {
        assert!(list.insert(k).expect("room"));
    }
    Arc::new(list)
}

/// The keys are `want`, well formed, and the heap holds the root plus one node per key.
fn check_final(list: &MirrorList, want: &[u64]) {
    assert_eq!(
        list.snapshot(),
        (want.to_vec(), true),
        "keys after both returned"
    );
    assert_eq!(
        list.heap().live_blocks(),
        1 + want.len(),
        "blocks: the root and one node per key (a marked node left linked or never retired, \
         or one retired twice)"
    );
}

/// From `{1}`: `remove(1)` on this thread against `insert(key)` on another; afterwards the
/// list is `{key}`.
fn remove_1_against_insert(key: u64) {
    model(move || {
        let list = list_of(&[1]);
        let l2 = Arc::clone(&list);
        let t = thread::spawn(move || l2.insert(key).expect("room"));
        assert!(list.remove(1), "1 was present");
        assert!(t.join().expect("no panic"), "{key} was absent");
        check_final(&list, &[key]);
    });
}

/// `remove(1)` against `insert(0)` in front of it: the insert can change the head between the
/// remover's mark and its unlinking CAS, which then fails, and the node is unlinked by a
/// `find` (the insert's, or the remover's second one) that meets it marked.
#[test]
fn loom_marked_node_is_unlinked_by_a_later_find() {
    remove_1_against_insert(0);
}

/// `remove(1)` against `insert(2)` behind it: the insert may link its node to the removed
/// node's `next`; the mark makes that CAS fail, so the new key is never lost with the node.
#[test]
fn loom_insert_behind_a_removed_node_is_not_lost() {
    remove_1_against_insert(2);
}
