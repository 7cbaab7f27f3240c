//! `SkipListMap` against a `BTreeMap` model.

mod common;

use common::map::{run_against_model, run_twins, steps};
use proptest::prelude::*;
use seqds::SkipListMap;
use std::collections::BTreeMap;

proptest! {
    #[test]
    fn matches_btree_map_checking_structure_each_step(steps in steps(48, 150)) {
        let mut map = SkipListMap::new();
        let model =
            run_against_model(&mut map, BTreeMap::new(), &steps, SkipListMap::check_invariants, true)?;
        prop_assert_eq!(map.iter().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn matches_btree_map_from_prefill(steps in steps(400, 500)) {
        let mut map = SkipListMap::with_items(200);
        let initial: BTreeMap<u64, u64> = (0..200).map(|k| (k, k)).collect();
        let model =
            run_against_model(&mut map, initial, &steps, SkipListMap::check_invariants, false)?;
        prop_assert_eq!(map.iter().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn two_instances_give_identical_responses(steps in steps(200, 300)) {
        run_twins(SkipListMap::with_items(100), SkipListMap::with_items(100), &steps)?;
    }
}

#[test]
fn extreme_keys_work() {
    let mut map = SkipListMap::new();
    for k in [u64::MAX, 0, u64::MAX - 1, 1] {
        assert_eq!(map.put(k, k), None);
    }
    assert_eq!(
        map.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        [0, 1, u64::MAX - 1, u64::MAX]
    );
    assert_eq!(map.remove(u64::MAX), Some(u64::MAX));
    assert_eq!(map.get(0), Some(0));
    map.check_invariants().expect("invariants");
}

#[test]
fn clone_is_independent_and_debug_is_terse() {
    let mut a = SkipListMap::with_items(1000);
    let b = a.clone();
    assert_eq!(a.remove(5), Some(5));
    assert_eq!(b.get(5), Some(5));
    let s = format!("{b:?}");
    assert!(s.starts_with("SkipListMap { len: 1000"), "{s}");
}
