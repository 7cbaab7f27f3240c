//! Loom model: PBcomb's lock hand-off (Algorithm 2).
//!
//! Properties: every request is applied exactly once (fetch-and-add responses are a permutation
//! of the prefix sums, the final value is the sum), and a waiter that finds its request served
//! returns *without ever taking the lock*: in some interleaving, fewer combining passes than
//! operations run (a pass is counted by its psync, line 27, through a counting persistence
//! domain).
//!
//! Bounds: exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2) for 2 threads; the 3-thread model is
//! pinned to a preemption bound of 1 (at 2 it exceeds loom's branch limit in the wait loops).
#![cfg(loom)]

use std::sync::atomic::{AtomicBool, Ordering as StdOrdering};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use pcomb::objects::Counter;
use pcomb::{PBComb, Persist};

/// Counts combining passes (one psync each, line 27); no durability.
#[derive(Debug, Clone, Default)]
struct CountPasses(Arc<AtomicUsize>);

impl Persist for CountPasses {
    unsafe fn pwb(&self, _addr: *const u8, _len: usize) {}
    fn pfence(&self) {}
    fn psync(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Set (outside the model) when an execution served a waiter without it taking the lock.
static SAW_HANDOFF: AtomicBool = AtomicBool::new(false);

fn run(threads: usize, ops_per_thread: u64) {
    let passes = CountPasses::default();
    let obj: Arc<PBComb<Counter, CountPasses>> =
        Arc::new(PBComb::with_persist(Counter::default(), threads, passes.clone()).unwrap());
    // Creation persists the initial object with one psync.
    let created = passes.0.load(Ordering::Relaxed);
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
    let n = passes.0.load(Ordering::Relaxed) - created;
    assert!(n >= 1 && n as u64 <= total, "{n} passes for {total} ops");
    if (n as u64) < total {
        SAW_HANDOFF.store(true, StdOrdering::Relaxed);
    }
}

#[test]
fn waiter_served_by_combiner_returns_without_lock() {
    SAW_HANDOFF.store(false, StdOrdering::Relaxed);
    loom::model(|| run(2, 1));
    assert!(
        SAW_HANDOFF.load(StdOrdering::Relaxed),
        "no interleaving combined two requests"
    );
}

#[test]
fn two_threads_two_ops_each_applied_once() {
    loom::model(|| run(2, 2));
}

#[test]
fn three_threads_applied_once() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(|| run(3, 1));
}
