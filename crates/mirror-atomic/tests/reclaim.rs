//! Reclamation is per heap: a guard held elsewhere never stops a heap from reusing its blocks.

// The holder thread is the harness's, not under test (loom does not run this file).
#![allow(clippy::disallowed_methods)]

use mirror_atomic::flavor::{Flavor, Mirror, Volatile};
use mirror_atomic::List;
use std::sync::Barrier;

/// Insert/remove cycles of one key, many more than the heap has blocks for.
const CYCLES: u64 = 40_000;

/// A small heap (a few thousand blocks) inserts and removes one key `CYCLES` times while
/// another thread holds a guard of another heap, and another of crossbeam-epoch's global
/// collector, for the whole run: every removed node must come back, or the heap reports
/// `Exhausted`. (With one process-wide collector, either guard stalls the epoch, and nothing
/// retired after it is ever reused.)
fn reuses_blocks_while_a_foreign_guard_is_held<F: Flavor>() {
    let small = List::<F, _>::anonymous(256 << 10).expect("small list");
    let other = List::<F, _>::anonymous(1 << 20).expect("other list");
    let (held, done) = (Barrier::new(2), Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            let _other_heap = other.heap().pin();
            let _global = crossbeam_epoch::pin();
            held.wait();
            done.wait();
        });
        held.wait();
        // Whatever happens, release the holder before failing (or the scope never ends).
        let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // The first failure: an insert that did not insert (`Err` or `Ok(false)`), or a
            // remove that found nothing (`"remove"`).
            (0..CYCLES).find_map(|i| match small.insert(7) {
                Ok(true) if small.remove(7) => None,
                Ok(true) => Some((i, "remove", Ok(true))),
                r => Some((i, "insert", r)),
            })
        }));
        done.wait();
        let failure = failure.unwrap_or_else(|p| std::panic::resume_unwind(p));
        assert_eq!(
            failure, None,
            "cycle and result when an insert or remove failed"
        );
    });
    assert_eq!(small.snapshot(), (vec![], true));
}

#[test]
fn mirror_heap_reuses_blocks_while_a_foreign_guard_is_held() {
    reuses_blocks_while_a_foreign_guard_is_held::<Mirror>();
}

#[test]
fn volatile_heap_reuses_blocks_while_a_foreign_guard_is_held() {
    reuses_blocks_while_a_foreign_guard_is_held::<Volatile>();
}

/// A guard of one heap cannot retire into another: `retire` checks the guard's domain.
#[test]
#[should_panic(expected = "guard of another heap")]
fn retire_refuses_a_guard_of_another_heap() {
    use mirror_atomic::{Heap, PAtomic};
    let a = Heap::<Mirror, _>::anonymous(1 << 20).expect("a");
    let b = Heap::<Mirror, _>::anonymous(1 << 20).expect("b");
    let p = a.alloc(PAtomic::new(1u64)).expect("alloc");
    let guard = b.pin();
    // SAFETY: `p` is a's, never published, retired once (the call panics before retiring).
    unsafe { a.retire(p, &guard) };
}
