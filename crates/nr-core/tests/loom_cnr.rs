//! Loom models of CNR (`nr_core::cnr`): the per-log combiner and the cross-log scan barrier.
//!
//! - `per_log_combiner_applies_each_write_once`: two threads write to the same log of one
//!   replica (one combines for the other, or each for itself) while the second log's area
//!   stays idle: the responses of a counter's increments are exactly 1 and 2, whoever combines.
//! - `scan_is_atomic_across_logs*`: one thread increments key 1 (log 1) then key 0 (log 0);
//!   another runs a scan that reads key 0 *after* key 1 of its replica. A scan ordered against
//!   both logs sees either both increments or a prefix of them in program order, so it never
//!   sees key 0 incremented and key 1 not. With 2 replicas the scan runs on the other replica,
//!   which must replay both logs up to the scan's barrier.
//! - `a_scan_is_atomic_to_reads*`: one thread runs a scan that increments key 0 then key 1;
//!   another reads key 0 then key 1 on the same replica. A read that saw key 0 incremented
//!   follows the scan, so the read of key 1 after it must see key 1 incremented too: reads are
//!   not shut out of the structure while a scan runs, so CNR must hold them back from a scan in
//!   progress. With one replica (no log) this failed before the single-replica scan marked
//!   itself running (`scan_single`).
//!
//! Exhaustive up to `LOOM_MAX_PREEMPTIONS` (CI: 2), except where a model pins its own bound
//! (said at the model).
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};

/// Two counters, key `k` on log `k`. With `SYNCED` the structure orders its own operations
/// (Release writes, Acquire reads, as a lock per key would), so it is linearizable on its own
/// and what a model finds is CNR's ordering of reads; without, every access is Relaxed, so what
/// a scan sees of other combiners' writes comes through CNR's synchronization alone.
#[derive(Default)]
struct Two<const SYNCED: bool>([AtomicU64; 2]);

impl<const SYNCED: bool> Two<SYNCED> {
    const READ: Ordering = if SYNCED {
        Ordering::Acquire
    } else {
        Ordering::Relaxed
    };
    const WRITE: Ordering = if SYNCED {
        Ordering::Release
    } else {
        Ordering::Relaxed
    };
}

#[derive(Clone, Copy)]
enum W {
    Incr(usize),
    /// A scan: key 1, then key 0, as `10 * key0 + key1`.
    Snapshot,
    /// A scan: increments key 0, then key 1.
    BumpBoth,
}

impl LogMapper for W {
    fn route(&self, _: usize) -> Route {
        match *self {
            W::Incr(k) => Route::Log(k),
            W::Snapshot | W::BumpBoth => Route::Scan,
        }
    }
}

struct Get(usize);

impl LogMapper for Get {
    fn route(&self, _: usize) -> Route {
        Route::Log(self.0)
    }
}

impl<const SYNCED: bool> ConcurrentDispatch for Two<SYNCED> {
    type ReadOperation<'a> = Get;
    type WriteOperation = W;
    type Response = u64;
    fn dispatch(&self, op: Get) -> u64 {
        // Acquire with `SYNCED`: pairs with the Release writes below.
        self.0[op.0].load(Self::READ)
    }
    fn dispatch_mut(&self, op: W) -> u64 {
        // Release with `SYNCED`: pairs with the Acquire reads above.
        match op {
            W::Incr(k) => self.0[k].fetch_add(1, Self::WRITE) + 1,
            W::Snapshot => {
                let one = self.0[1].load(Self::READ);
                let zero = self.0[0].load(Self::READ);
                10 * zero + one
            }
            W::BumpBoth => {
                self.0[0].fetch_add(1, Self::WRITE);
                self.0[1].fetch_add(1, Self::WRITE) + 1
            }
        }
    }
}

fn build<const SYNCED: bool>(replicas: usize) -> Arc<ConcurrentReplicated<Two<SYNCED>>> {
    Arc::new(
        ConcurrentReplicated::builder()
            .logs(2)
            .replicas(replicas)
            .log_size(4)
            .threads_per_replica(2)
            .build(|_| Two::default())
            .unwrap(),
    )
}

#[test]
fn per_log_combiner_applies_each_write_once() {
    loom::model(|| {
        let cnr = build::<false>(1);
        let other = {
            let cnr = cnr.clone();
            thread::spawn(move || cnr.register(0).unwrap().execute_mut(W::Incr(0)).unwrap())
        };
        let mine = cnr.register(0).unwrap().execute_mut(W::Incr(0)).unwrap();
        let theirs = other.join().unwrap();
        let mut got = [mine, theirs];
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
        assert_eq!(cnr.register(0).unwrap().execute(Get(0)).unwrap(), 2);
    });
}

fn scan_model(replicas: usize) {
    loom::model(move || {
        let cnr = build::<false>(replicas);
        let writer = {
            let cnr = cnr.clone();
            thread::spawn(move || {
                let mut h = cnr.register(0).unwrap();
                h.execute_mut(W::Incr(1)).unwrap();
                h.execute_mut(W::Incr(0)).unwrap();
            })
        };
        let snap = cnr
            .register(replicas - 1)
            .unwrap()
            .execute_mut(W::Snapshot)
            .unwrap();
        writer.join().unwrap();
        let (zero, one) = (snap / 10, snap % 10);
        assert!(
            zero <= one,
            "the scan saw key 0 incremented but not key 1: {snap}"
        );
        // Both replicas end equal.
        for r in 0..replicas {
            let mut h = cnr.register(r).unwrap();
            assert_eq!(
                (h.execute(Get(0)).unwrap(), h.execute(Get(1)).unwrap()),
                (1, 1)
            );
        }
    });
}

fn scan_and_reads_model(replicas: usize) {
    loom::model(move || {
        let cnr = build::<true>(replicas);
        let scanner = {
            let cnr = cnr.clone();
            thread::spawn(move || cnr.register(0).unwrap().execute_mut(W::BumpBoth).unwrap())
        };
        let mut h = cnr.register(0).unwrap();
        let zero = h.execute(Get(0)).unwrap();
        let one = h.execute(Get(1)).unwrap();
        scanner.join().unwrap();
        assert!(
            zero <= one,
            "a read saw the scan's increment of key 0, a later read not its increment of key 1"
        );
    });
}

#[test]
fn a_scan_is_atomic_to_reads() {
    scan_and_reads_model(1);
}

#[test]
fn a_scan_is_atomic_to_reads_on_a_replicated_object() {
    scan_and_reads_model(2);
}

#[test]
fn scan_is_atomic_across_logs() {
    scan_model(1);
}

#[test]
fn scan_is_atomic_across_logs_on_another_replica() {
    scan_model(2);
}
