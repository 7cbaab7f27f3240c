//! Loom model: PWFcomb's emulated LL/SC (a CAS on the versioned `S`) and install
//! (Algorithm 4).
//!
//! Properties: every request is applied exactly once although every thread combines on its own
//! copy (fetch-and-add responses are a permutation of the prefix sums, the final value is the
//! sum): a stale combiner's install fails, and a thread whose two attempts fail finds its
//! request applied by another combiner. A read snapshot taken concurrently is one of the
//! states between the first and last operation.
//!
//! Bounds: exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2) for 2 threads; the 3-thread model is
//! pinned to a preemption bound of 1 (record copies are many atomic steps each).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pcomb::objects::Counter;
use pcomb::PWFComb;

fn run(threads: usize, ops_per_thread: u64) {
    let obj = Arc::new(PWFComb::new(Counter::default(), threads).unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let obj = obj.clone();
            thread::spawn(move || {
                let mut h = obj.register().unwrap();
                (0..ops_per_thread)
                    .map(|_| h.execute_mut(1))
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut responses: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    responses.sort_unstable();
    let total = threads as u64 * ops_per_thread;
    assert_eq!(
        responses,
        (0..total).collect::<Vec<_>>(),
        "each op applied exactly once"
    );
    assert_eq!(obj.register().unwrap().execute(()), total);
}

#[test]
fn two_threads_each_op_installed_once() {
    loom::model(|| run(2, 1));
}

#[test]
fn stale_combiner_install_fails() {
    // One thread runs two ops while the other runs one: the second op of the first thread
    // starts from a state the other thread may be combining on (a stale copy).
    loom::model(|| {
        let obj = Arc::new(PWFComb::new(Counter::default(), 2).unwrap());
        let other = {
            let obj = obj.clone();
            thread::spawn(move || {
                let mut h = obj.register().unwrap();
                let r = h.execute_mut(10);
                let seen = h.execute(());
                assert!(
                    seen >= r + 10,
                    "a thread's own write is visible to its read: r={r} seen={seen}"
                );
                r
            })
        };
        let mut h = obj.register().unwrap();
        let a = h.execute_mut(1);
        let b = h.execute_mut(1);
        let c = other.join().unwrap();
        let mut all = [a, b, c];
        all.sort_unstable();
        // Possible orders: 10 first -> [0, 10, 11]; between -> [0, 1, 11]; last -> [0, 1, 2].
        assert!(
            matches!(all, [0, 10, 11] | [0, 1, 11] | [0, 1, 2]),
            "{all:?}"
        );
        assert!(a < b);
        assert_eq!(h.execute(()), 12);
    });
}

#[test]
fn three_threads_applied_once() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(|| run(3, 1));
}
