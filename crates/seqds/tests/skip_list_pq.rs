//! `SkipListPq` against a `BinaryHeap` model.

mod common;

use common::pq::{run_against_model, run_twins, steps};
use proptest::prelude::*;
use seqds::SkipListPq;

proptest! {
    #[test]
    fn matches_binary_heap_checking_structure_each_step(steps in steps(120)) {
        run_against_model(SkipListPq::new(), &[], &steps, SkipListPq::check_invariants, true)?;
    }

    #[test]
    fn matches_binary_heap_from_prefill(seed in any::<u64>(), steps in steps(400)) {
        // The model starts with the prefill's keys, read back in order (which itself is checked
        // by the final drain).
        let pq = SkipListPq::with_items(200, seed);
        let initial: Vec<u64> = pq.iter().collect();
        prop_assert_eq!(initial.len(), 200);
        run_against_model(pq, &initial, &steps, SkipListPq::check_invariants, false)?;
    }

    #[test]
    fn two_instances_give_identical_responses(seed in any::<u64>(), steps in steps(300)) {
        run_twins(SkipListPq::with_items(100, seed), SkipListPq::with_items(100, seed), &steps)?;
    }
}

#[test]
fn prefill_is_sorted_and_reproducible() {
    let a = SkipListPq::with_items(1000, 5);
    let b = SkipListPq::with_items(1000, 5);
    let c = SkipListPq::with_items(1000, 6);
    let keys: Vec<u64> = a.iter().collect();
    assert_eq!(keys.len(), 1000);
    assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(keys, b.iter().collect::<Vec<_>>());
    assert_ne!(keys, c.iter().collect::<Vec<_>>());
    a.check_invariants().expect("invariants");
}

#[test]
fn clone_is_independent() {
    let mut a: SkipListPq = [3, 1, 2].into_iter().collect();
    let b = a.clone();
    assert_eq!(a.delete_min(), Some(1));
    assert_eq!(b.find_min(), Some(1));
    assert_eq!(b.len(), 3);
}

#[test]
fn debug_is_terse() {
    let pq = SkipListPq::with_items(10_000, 1);
    let s = format!("{pq:?}");
    assert!(s.starts_with("SkipListPq { len: 10000"), "{s}");
    assert!(s.len() < 200, "{s}");
}
