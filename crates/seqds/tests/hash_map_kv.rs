//! `HashMapKv` against a `BTreeMap` model.

mod common;

use common::map::{run_against_model, run_twins, steps, Step};
use nr_core::Dispatch;
use proptest::prelude::*;
use seqds::{HashMapKv, MapWrite};
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

    /// `dispatch_as_read` answers only writes that change nothing, with `dispatch_mut`'s answer.
    #[test]
    fn writes_answered_as_reads_change_nothing(steps in steps(32, 300)) {
        let mut kv = HashMapKv::new();
        for step in &steps {
            let Step::Write(op) = step else { continue };
            // Also try the value a key already has, the other no-op besides absent removes.
            let same = match *op {
                MapWrite::Put(k, _) => kv.get(k).map(|v| MapWrite::Put(k, v)),
                MapWrite::Remove(_) => None,
            };
            for op in same.iter().chain(std::iter::once(op)) {
                if let Some(read_answer) = kv.dispatch_as_read(op) {
                    let before = kv.clone();
                    prop_assert_eq!(kv.dispatch_mut(*op), read_answer);
                    prop_assert_eq!(kv.as_map(), before.as_map(), "a no-op write changed the map");
                }
            }
            kv.dispatch_mut(*op);
        }
    }
}

#[test]
fn absent_removes_and_same_value_puts_are_answered_as_reads() {
    let kv = HashMapKv::with_items(10);
    assert_eq!(
        kv.dispatch_as_read(&MapWrite::Remove(50)),
        Some(seqds::MapResponse::Removed(None))
    );
    assert_eq!(
        kv.dispatch_as_read(&MapWrite::Put(3, 3)),
        Some(seqds::MapResponse::Put(Some(3)))
    );
    assert_eq!(kv.dispatch_as_read(&MapWrite::Put(3, 4)), None);
    assert_eq!(kv.dispatch_as_read(&MapWrite::Remove(3)), None);
}

#[test]
fn debug_is_terse() {
    let kv = HashMapKv::with_items(1000);
    assert_eq!(format!("{kv:?}"), "HashMapKv { len: 1000, .. }");
}
