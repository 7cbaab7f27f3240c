//! `PairingHeap` against a `BinaryHeap` model.

mod common;

use common::pq::{run_against_model, run_twins, steps};
use proptest::prelude::*;
use seqds::{PairingHeap, SkipListPq, SplitMix64};

proptest! {
    #[test]
    fn matches_binary_heap_checking_structure_each_step(steps in steps(120)) {
        run_against_model(PairingHeap::new(), &[], &steps, PairingHeap::check_invariants, true)?;
    }

    #[test]
    fn matches_binary_heap_from_prefill(seed in any::<u64>(), steps in steps(400)) {
        let mut rng = SplitMix64::new(seed);
        let initial: Vec<u64> = (0..200).map(|_| rng.next_u64()).collect();
        let heap = PairingHeap::with_items(200, seed);
        run_against_model(heap, &initial, &steps, PairingHeap::check_invariants, false)?;
    }

    #[test]
    fn two_instances_give_identical_responses(seed in any::<u64>(), steps in steps(300)) {
        run_twins(PairingHeap::with_items(100, seed), PairingHeap::with_items(100, seed), &steps)?;
    }
}

#[test]
fn drains_in_order_after_many_inserts() {
    let mut heap = PairingHeap::with_items(5000, 3);
    let mut sorted: Vec<u64> = SkipListPq::with_items(5000, 3).iter().collect();
    sorted.reverse();
    while let Some(k) = heap.delete_min() {
        assert_eq!(Some(k), sorted.pop());
        if heap.len().is_multiple_of(1000) {
            heap.check_invariants().expect("invariants");
        }
    }
    assert!(sorted.is_empty());
}

#[test]
fn freed_nodes_are_reused() {
    let mut heap = PairingHeap::with_items(100, 1);
    for i in 0..10_000 {
        let k = heap.delete_min().expect("non-empty");
        heap.insert(k.wrapping_add(i));
    }
    assert_eq!(heap.len(), 100);
    heap.check_invariants().expect("invariants");
}

#[test]
fn clone_is_independent_and_debug_is_terse() {
    let mut a: PairingHeap = [3, 1, 2].into_iter().collect();
    let b = a.clone();
    assert_eq!(a.delete_min(), Some(1));
    assert_eq!(b.find_min(), Some(1));
    assert_eq!(b.len(), 3);
    assert_eq!(format!("{b:?}"), "PairingHeap { len: 3, min: Some(1), .. }");
}
