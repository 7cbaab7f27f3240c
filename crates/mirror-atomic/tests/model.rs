//! Property tests: random operation sequences on each structure in each flavor give the same
//! results as testkit's sequential `KvMap` model (a set key maps to itself), and the structure
//! stays well formed.

mod common;

use common::{apply, model_keys, to_kv, Set, SetOp};
use mirror_atomic::flavor::{Izraelevitz, Mirror, Volatile};
use mirror_atomic::{Bst, HashSet, Heap, List, NoPersist, SkipList};
use proptest::prelude::*;
use testkit::lin::Model;
use testkit::models::KvMap;

fn op() -> impl Strategy<Value = SetOp> {
    (0u8..3, 0u64..24).prop_map(|(kind, k)| match kind {
        0 => SetOp::Insert(k),
        1 => SetOp::Remove(k),
        _ => SetOp::Contains(k),
    })
}

fn check<S: Set<P = NoPersist>>(ops: &[SetOp]) -> Result<(), TestCaseError> {
    let set = S::create(Heap::anonymous(1 << 20).expect("heap")).expect("set");
    let mut model = KvMap::new();
    for &o in ops {
        prop_assert_eq!(apply(&set, o), model.step(&to_kv(o)), "op {:?}", o);
    }
    let (keys, ok) = set.snapshot();
    prop_assert!(ok, "malformed: {:?}", keys);
    prop_assert_eq!(keys, model_keys(&model));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn list_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        check::<List<Volatile, NoPersist>>(&ops)?;
        check::<List<Mirror, NoPersist>>(&ops)?;
        check::<List<Izraelevitz, NoPersist>>(&ops)?;
    }

    #[test]
    fn hash_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        check::<HashSet<Volatile, NoPersist>>(&ops)?;
        check::<HashSet<Mirror, NoPersist>>(&ops)?;
        check::<HashSet<Izraelevitz, NoPersist>>(&ops)?;
    }

    #[test]
    fn skiplist_matches_model(ops in proptest::collection::vec(op(), 0..300)) {
        check::<SkipList<Volatile, NoPersist>>(&ops)?;
        check::<SkipList<Mirror, NoPersist>>(&ops)?;
        check::<SkipList<Izraelevitz, NoPersist>>(&ops)?;
    }

    #[test]
    fn bst_matches_model(ops in proptest::collection::vec(op(), 0..300)) {
        check::<Bst<Volatile, NoPersist>>(&ops)?;
        check::<Bst<Mirror, NoPersist>>(&ops)?;
        check::<Bst<Izraelevitz, NoPersist>>(&ops)?;
    }
}

#[test]
fn removed_nodes_are_reused_after_a_grace_period() {
    // 200 rounds of insert + remove of the same key must not grow the heap without bound.
    let list = List::<Mirror, NoPersist>::anonymous(1 << 20).expect("list");
    for _ in 0..2000 {
        assert!(list.insert(7).expect("room"));
        assert!(list.remove(7));
    }
    // Reclamation is deferred by epochs; a few hundred nodes may still be pending, not 2000.
    // Other tests of this binary pin the same (global) epoch concurrently and can hold it back
    // for a while, so churn on (up to 20,000 more rounds) while the count is high: without
    // reuse the count only grows.
    let mut live = list.heap().live_blocks();
    for _ in 0..20_000 {
        if live < 1000 {
            break;
        }
        assert!(list.insert(7).expect("room"));
        assert!(list.remove(7));
        live = list.heap().live_blocks();
    }
    assert!(
        live < 1000,
        "{live} blocks live after 2000 insert/remove rounds: no reuse"
    );
}

#[test]
fn skiplist_builds_towers_and_frees_removed_nodes() {
    // 4,000 keys: level 1 holds about a quarter of them, level 2 a sixteenth.
    let set = SkipList::<Mirror, NoPersist>::anonymous(8 << 20).expect("skip list");
    for k in 0..4000 {
        assert!(set.insert(k * 3).expect("room"));
    }
    let sizes = set.level_sizes();
    assert_eq!(sizes[0], 4000);
    assert!((600..1400).contains(&sizes[1]), "level sizes {sizes:?}");
    assert!((100..500).contains(&sizes[2]), "level sizes {sizes:?}");
    for k in 0..4000 {
        assert!(set.remove(k * 3));
    }
    assert_eq!(set.level_sizes(), vec![0; mirror_atomic::MAX_LEVEL]);
    assert_eq!(set.snapshot(), (vec![], true));
    // Removed nodes are retired once unlinked from every level, and reused.
    for _ in 0..3 {
        for k in 0..4000 {
            assert!(set.insert(k).expect("room"));
        }
        for k in 0..4000 {
            assert!(set.remove(k));
        }
    }
    // Other tests of this binary pin the same (global) epoch concurrently and can hold it back
    // for a while, so churn on (up to 20,000 more rounds) while the count is high: without
    // reuse the count only grows.
    let mut live = set.heap().live_blocks();
    for _ in 0..20_000 {
        if live < 6000 {
            break;
        }
        assert!(set.insert(1).expect("room"));
        assert!(set.remove(1));
        live = set.heap().live_blocks();
    }
    assert!(
        live < 6000,
        "{live} blocks live: removed nodes are not reused"
    );
}
