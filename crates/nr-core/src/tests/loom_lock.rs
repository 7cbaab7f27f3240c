//! Loom model of a replica's lock word (`lock.rs`): the combiner lock, the writer side of the
//! §5.5 distributed readers-writer lock, and the parked-owner announcement.
//!
//! Bounds: one critical section per thread. The 2-thread models are explored exhaustively up to
//! `LOOM_MAX_PREEMPTIONS` (CI: 2). The 3-thread models are pinned to a preemption bound of 1: at
//! 2, loom re-reads stale values in the spin loops without bound and exceeds its branch limit
//! even at 5000 branches per path (a liveness artefact of the model; hardware makes stores
//! visible in finite time). Mutual exclusion is checked by loom's `UnsafeCell` access tracking
//! (a read concurrent with a write fails the model), and atomicity of a two-word update by the
//! readers' assertion.

use loom::sync::Arc;
use loom::thread;

use crate::lock::ReplicaLock;
use crate::sync::{AtomicBool, Ordering, UnsafeCell};

struct Guarded {
    lock: ReplicaLock,
    /// Two words the writer always keeps equal.
    pair: UnsafeCell<(u32, u32)>,
}

// SAFETY: `pair` is only accessed under `lock` in these models (that is what is being checked).
unsafe impl Sync for Guarded {}

impl Guarded {
    fn new(readers: usize) -> Arc<Self> {
        let g = Arc::new(Guarded {
            lock: ReplicaLock::new(readers),
            pair: UnsafeCell::new((0, 0)),
        });
        for r in 0..readers {
            g.lock.activate(r);
        }
        g
    }
}

fn read(g: &Guarded, reader: usize) -> (u32, u32) {
    assert!(g.lock.read_lock(reader, || false));
    // SAFETY: under the reader lock; loom reports any concurrent write.
    let v = g.pair.with(|p| unsafe { *p });
    // SAFETY: we hold the read side for `reader` (asserted above) and keep no reference.
    unsafe { g.lock.read_unlock(reader) };
    v
}

fn bump(g: &Guarded) {
    // SAFETY: under the writer side; loom reports any concurrent access.
    g.pair.with_mut(|p| unsafe {
        (*p).0 += 1;
        (*p).1 += 1;
    });
}

/// A single-replica combiner: combiner lock and writer side in one CAS. Spins until it gets it.
fn combine_single(g: &Guarded) {
    while !g.lock.try_lock_combiner(true) {
        thread::yield_now();
    }
    bump(g);
    // SAFETY: we hold the combiner lock (taken above).
    unsafe { g.lock.unlock() };
}

/// A multi-replica combiner: takes the combiner lock, then the writer side separately.
fn combine_multi(g: &Guarded) {
    while !g.lock.try_lock_combiner(false) {
        thread::yield_now();
    }
    g.lock.lock_writer();
    bump(g);
    // SAFETY: we hold the combiner lock (taken above).
    unsafe { g.lock.unlock() };
}

#[test]
fn single_replica_combiner_excludes_a_reader() {
    loom::model(|| {
        let g = Guarded::new(1);
        let reader = {
            let g = g.clone();
            thread::spawn(move || read(&g, 0))
        };
        combine_single(&g);
        let (a, b) = reader.join().unwrap();
        assert_eq!(a, b, "a reader saw a half-done write");
        assert_eq!(read(&g, 0), (1, 1));
    });
}

#[test]
fn late_writer_bit_excludes_a_reader() {
    loom::model(|| {
        let g = Guarded::new(1);
        let reader = {
            let g = g.clone();
            thread::spawn(move || read(&g, 0))
        };
        combine_multi(&g);
        let (a, b) = reader.join().unwrap();
        assert_eq!(a, b, "a reader saw a half-done write");
        assert_eq!(read(&g, 0), (1, 1));
    });
}

/// Loom's model checker with the preemption bound pinned to 1 (see the module docs).
fn model_3_threads(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(1);
    builder.check(f);
}

#[test]
fn combiner_excludes_two_readers() {
    model_3_threads(|| {
        let g = Guarded::new(2);
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let g = g.clone();
                thread::spawn(move || {
                    let (a, b) = read(&g, r);
                    assert_eq!(a, b, "a reader saw a half-done write");
                    a
                })
            })
            .collect();
        combine_single(&g);
        for r in readers {
            assert!(r.join().unwrap() <= 1);
        }
        assert_eq!(read(&g, 0), (1, 1));
    });
}

#[test]
fn two_combiners_serialize_with_a_reader() {
    model_3_threads(|| {
        let g = Guarded::new(1);
        let other = {
            let g = g.clone();
            thread::spawn(move || combine_multi(&g))
        };
        let reader = {
            let g = g.clone();
            thread::spawn(move || read(&g, 0))
        };
        combine_single(&g);
        other.join().unwrap();
        let (a, b) = reader.join().unwrap();
        assert_eq!(a, b);
        assert_eq!(read(&g, 0), (2, 2), "both writes applied, neither lost");
    });
}

/// An owner that announces it parks either is seen by the unlocking combiner (which then also
/// sees the owner's earlier store) or finds the lock free: no wake-up is lost.
#[test]
fn parked_announcement_is_never_lost() {
    loom::model(|| {
        let g = Guarded::new(1);
        let parked_flag = Arc::new(AtomicBool::new(false));
        assert!(g.lock.try_lock_combiner(false));
        let owner = {
            let g = g.clone();
            let parked_flag = parked_flag.clone();
            thread::spawn(move || {
                parked_flag.store(true, Ordering::Relaxed);
                g.lock.announce_parked()
            })
        };
        // SAFETY: this thread took the combiner lock above.
        let saw_parked = unsafe { g.lock.unlock() };
        // Read before joining the owner (a join would synchronize by itself). Relaxed: visible
        // only through the unlocking swap (Acquire) reading the owner's CAS (Release).
        let saw_flag = parked_flag.load(Ordering::Relaxed);
        let owner_parked = owner.join().unwrap();
        if owner_parked {
            assert!(
                saw_parked,
                "the owner parked but the unlocker did not see it"
            );
            assert!(
                saw_flag,
                "the unlocker saw PARKED but not the owner's earlier store"
            );
        }
        assert!(
            g.lock.try_lock_combiner(false),
            "unlock leaves the word free"
        );
    });
}

/// A combiner that gives the writer side back half way (as one waiting for log space does) and
/// takes it again: a reader let in meanwhile sees the first change whole and never a torn pair.
#[test]
fn writer_side_given_back_mid_combine_admits_readers_consistently() {
    loom::model(|| {
        let g = Guarded::new(1);
        let reader = {
            let g = g.clone();
            thread::spawn(move || {
                let (a, b) = read(&g, 0);
                assert_eq!(a, b, "torn read");
                a
            })
        };
        while !g.lock.try_lock_combiner(false) {
            thread::yield_now();
        }
        g.lock.lock_writer();
        bump(&g);
        // SAFETY: we hold the combiner lock and make no change until `lock_writer` below.
        unsafe { g.lock.unlock_writer() };
        g.lock.lock_writer();
        bump(&g);
        // SAFETY: we hold the combiner lock.
        unsafe { g.lock.unlock() };
        assert!(reader.join().unwrap() <= 2);
    });
}
