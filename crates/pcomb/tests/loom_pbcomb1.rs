//! Loom model: `PBComb1`'s hand-off, which differs from `PBComb`'s (no `LockVal`; the index of
//! the current record is volatile and published after the pass's psync; reads take no lock).
//!
//! Properties, in every interleaving up to `LOOM_MAX_PREEMPTIONS` (CI: 2):
//!
//! - every request is applied exactly once (fetch-and-add responses are a permutation of the
//!   prefix sums) and some interleaving serves a waiter without a pass of its own;
//! - nothing is visible before it is durable: the published pass count never exceeds the
//!   number of passes whose psync has run (counted by the persistence domain), as seen by the
//!   threads after each operation and by an observer;
//! - a lock-free read never returns a torn state: a two-word state whose words are always
//!   equal is read while a writer runs two passes (the second rewrites the slot being read).
#![cfg(loom)]

use std::sync::atomic::{AtomicBool, Ordering as StdOrdering};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use pcomb::objects::Counter;
use pcomb::{Dispatch, PBComb1, Persist, Pod};

/// Counts psyncs (one per combining pass, one at creation); no durability.
#[derive(Debug, Clone, Default)]
struct CountPsyncs(Arc<AtomicUsize>);

impl Persist for CountPsyncs {
    unsafe fn pwb(&self, _addr: *const u8, _len: usize) {}
    fn pfence(&self) {}
    fn psync(&self) {
        // SeqCst: the observers compare it with the published pass count.
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl CountPsyncs {
    /// Passes made durable so far (creation's psync excluded).
    fn durable_passes(&self) -> u64 {
        self.0.load(Ordering::SeqCst) as u64 - 1
    }
}

/// Set (outside the model) when an execution served a waiter without a pass of its own.
static SAW_HANDOFF: AtomicBool = AtomicBool::new(false);

fn fetch_and_add(threads: usize, ops_per_thread: u64, observer: bool) {
    let psyncs = CountPsyncs::default();
    let obj: Arc<PBComb1<Counter, CountPsyncs>> =
        Arc::new(PBComb1::with_persist(Counter::default(), threads, psyncs.clone()).unwrap());
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (obj, psyncs) = (obj.clone(), psyncs.clone());
            thread::spawn(move || {
                let mut h = obj.register().unwrap();
                (0..ops_per_thread)
                    .map(|_| {
                        let r = h.execute_mut(1);
                        let visible = obj.passes();
                        assert!(visible >= 1, "returned before any pass was published");
                        assert!(
                            visible <= psyncs.durable_passes(),
                            "pass {visible} visible before its psync"
                        );
                        r
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    if observer {
        let visible = obj.passes();
        assert!(
            visible <= psyncs.durable_passes(),
            "observer: pass {visible} not durable"
        );
    }
    let mut responses: Vec<u64> = workers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    responses.sort_unstable();
    let total = threads as u64 * ops_per_thread;
    assert_eq!(
        responses,
        (0..total).collect::<Vec<_>>(),
        "each op applied once"
    );
    assert_eq!(obj.register().unwrap().execute(()), total);
    let passes = obj.passes();
    assert!(
        passes >= 1 && passes <= total,
        "{passes} passes for {total} ops"
    );
    if passes < total {
        SAW_HANDOFF.store(true, StdOrdering::Relaxed);
    }
}

#[test]
fn waiters_are_served_once_and_only_after_durability() {
    SAW_HANDOFF.store(false, StdOrdering::Relaxed);
    loom::model(|| fetch_and_add(2, 1, true));
    assert!(
        SAW_HANDOFF.load(StdOrdering::Relaxed),
        "no interleaving combined two requests"
    );
}

#[test]
fn two_threads_two_ops_each() {
    loom::model(|| fetch_and_add(2, 2, false));
}

/// Two words that every operation changes together.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Pair {
    a: u64,
    b: u64,
}

// SAFETY: `repr(C)` of two `u64`s: no padding, every bit pattern valid, no pointers.
unsafe impl Pod for Pair {}

impl Dispatch for Pair {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;

    /// `a ^ b`: 0 unless the state read is torn.
    fn dispatch(&self, _: ()) -> u64 {
        self.a ^ self.b
    }

    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.a += add;
        self.b += add;
        self.a
    }
}

#[test]
fn lock_free_reads_are_never_torn() {
    loom::model(|| {
        let obj = Arc::new(PBComb1::new(Pair::default(), 2).unwrap());
        let writer = {
            let obj = obj.clone();
            thread::spawn(move || {
                let mut h = obj.register().unwrap();
                h.execute_mut(1); // pass 1: slot 1
                h.execute_mut(2); // pass 2: rewrites slot 0
            })
        };
        let mut h = obj.register().unwrap();
        assert_eq!(h.execute(()), 0, "torn read");
        writer.join().unwrap();
        assert_eq!(h.execute(()), 0);
    });
}
