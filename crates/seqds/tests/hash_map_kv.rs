//! `HashMapKv` against a `BTreeMap` model.

mod common;

use common::map::{run_against_model, run_twins, steps};
use proptest::prelude::*;
use seqds::HashMapKv;
use std::collections::BTreeMap;
use std::hash::BuildHasherDefault;

/// A deterministic hasher, to show the hasher parameter works.
type Fixed = BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

proptest! {
    #[test]
    fn matches_btree_map(steps in steps(48, 300)) {
        let mut kv = HashMapKv::new();
        let model = run_against_model(&mut kv, BTreeMap::new(), &steps, |_| Ok(()), false)?;
        let mut got: Vec<(u64, u64)> = kv.as_map().iter().map(|(&k, &v)| (k, v)).collect();
        got.sort_unstable();
        prop_assert_eq!(got, model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn matches_btree_map_with_another_hasher(steps in steps(400, 300)) {
        let mut kv = HashMapKv::<Fixed>::with_hasher(Fixed::default());
        kv.extend((0..200).map(|k| (k, k)));
        let initial: BTreeMap<u64, u64> = (0..200).map(|k| (k, k)).collect();
        run_against_model(&mut kv, initial, &steps, |_| Ok(()), false)?;
    }

    /// Two instances with *different* random hash keys still answer identically: no response
    /// depends on iteration order.
    #[test]
    fn two_instances_give_identical_responses(steps in steps(200, 300)) {
        run_twins(HashMapKv::with_items(100), HashMapKv::with_items(100), &steps)?;
    }
}

#[test]
fn debug_is_terse() {
    let kv = HashMapKv::with_items(1000);
    assert_eq!(format!("{kv:?}"), "HashMapKv { len: 1000, .. }");
}
