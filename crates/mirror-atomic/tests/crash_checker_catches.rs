//! The crash checker can fail: a deliberately broken Mirror, whose new nodes' persistent copies
//! are not written back (nor fenced) before the CAS that links them, must be caught.

mod common;

use common::{count_events, crash_point, ops, Rng};
use mirror_atomic::flavor::{raw, Flavor, Mirror};
use mirror_atomic::{Bst, HashSet, List, PAtomic, Persist, Pod, SkipList, Space};
use pmem::sim::Simulated;

/// Mirror, except that `publish` copies a new object to its twin without `pwb` + `pfence`.
#[derive(Debug)]
struct UnflushedNodes;

// SAFETY: every function but `publish` forwards to `Mirror`; `publish` copies only its object
// (the caller's contract). Only the durability promise is broken, on purpose.
unsafe impl Flavor for UnflushedNodes {
    type Atomic<T: 'static> = PAtomic<T>;
    const NAME: &'static str = "mirror-unflushed-nodes";
    const MIRRORED: bool = true;
    type Pad = <Mirror as Flavor>::Pad;
    fn atomic<T: Pod>(v: T) -> PAtomic<T> {
        Mirror::atomic(v)
    }
    fn load<T: Pod, P: Persist>(a: &PAtomic<T>, s: &Space<P>) -> T {
        Mirror::load(a, s)
    }
    fn compare_exchange<T: Pod, P: Persist>(
        a: &PAtomic<T>,
        c: T,
        n: T,
        s: &Space<P>,
    ) -> Result<T, T> {
        Mirror::compare_exchange(a, c, n, s)
    }
    fn peek<T: Pod>(a: &PAtomic<T>) -> T {
        Mirror::peek(a)
    }
    unsafe fn publish<P: Persist>(space: &Space<P>, offset: u64, len: usize) {
        // SAFETY: forwarded from the caller's contract. The write-back and fence are missing.
        unsafe { raw::copy_to_twin(space, offset, len) };
    }
}

/// Checks `points` random crash points after the structure's creation: returns (mid-run points failing, an example error).
fn failures<S: common::Set<P = Simulated>>(points: u64) -> (u64, Option<String>) {
    let (mut tried, mut failed, mut example) = (0, 0, None);
    let mut seed = 0;
    while tried < points {
        let mut rng = Rng(seed);
        let stream = ops(seed, 40, 16);
        let (created, events) = count_events::<S>(seed, &stream);
        for _ in 0..20 {
            let k = created + rng.below(events - created + 1);
            tried += 1;
            if let Err(e) = crash_point::<S>(seed, &stream, Some(k)) {
                failed += 1;
                example.get_or_insert(e);
            }
        }
        seed += 1;
    }
    (failed, example)
}

#[test]
fn checker_catches_unflushed_new_nodes_list() {
    let (failed, example) = failures::<List<UnflushedNodes, Simulated>>(400);
    eprintln!("broken list: {failed} of 400 mid-run crash points caught; e.g. {example:?}");
    assert!(
        failed > 0,
        "the broken list survived 400 crash points: the checker is blind"
    );
}

#[test]
fn checker_catches_unflushed_new_nodes_hash() {
    let (failed, example) = failures::<HashSet<UnflushedNodes, Simulated>>(400);
    eprintln!("broken hash set: {failed} of 400 mid-run crash points caught; e.g. {example:?}");
    assert!(
        failed > 0,
        "the broken hash set survived 400 crash points: the checker is blind"
    );
}

#[test]
fn checker_catches_unflushed_new_nodes_skiplist() {
    let (failed, example) = failures::<SkipList<UnflushedNodes, Simulated>>(400);
    eprintln!("broken skip list: {failed} of 400 mid-run crash points caught; e.g. {example:?}");
    assert!(
        failed > 0,
        "the broken skip list survived 400 crash points: the checker is blind"
    );
}

#[test]
fn checker_catches_unflushed_new_nodes_bst() {
    let (failed, example) = failures::<Bst<UnflushedNodes, Simulated>>(400);
    eprintln!("broken BST: {failed} of 400 mid-run crash points caught; e.g. {example:?}");
    assert!(
        failed > 0,
        "the broken BST survived 400 crash points: the checker is blind"
    );
}

#[test]
fn correct_mirror_bst_passes_the_same_points() {
    let (failed, example) = failures::<Bst<Mirror, Simulated>>(200);
    assert_eq!(failed, 0, "{example:?}");
}

#[test]
fn correct_mirror_skiplist_passes_the_same_points() {
    let (failed, example) = failures::<SkipList<Mirror, Simulated>>(200);
    assert_eq!(failed, 0, "{example:?}");
}

#[test]
fn correct_mirror_passes_the_same_points() {
    let (failed, example) = failures::<List<Mirror, Simulated>>(200);
    assert_eq!(failed, 0, "{example:?}");
}
