//! Loom model of the §5.5 distributed readers-writer lock (`rwlock.rs`).
//!
//! Bounds: one critical section per thread. The 2-thread model (1 reader + 1 writer) is explored
//! exhaustively up to `LOOM_MAX_PREEMPTIONS` (CI: 2). The 3-thread models (2 readers + 1 writer;
//! 1 reader + 2 writers) are pinned to a preemption bound of 1: at 2, loom re-reads stale values
//! in the spin loops without bound and exceeds its branch limit even at 5000 branches per path
//! (a liveness artefact of the model; hardware makes stores visible in finite time). Mutual exclusion is checked by
//! loom's `UnsafeCell` access tracking (a read concurrent with a write fails the model), and
//! atomicity of a two-word update by the readers' assertion.

use loom::sync::Arc;
use loom::thread;

use crate::rwlock::DistRwLock;
use crate::sync::UnsafeCell;

struct Guarded {
    lock: DistRwLock,
    /// Two words the writer always keeps equal.
    pair: UnsafeCell<(u32, u32)>,
}

// SAFETY: `pair` is only accessed under `lock` in these models (that is what is being checked).
unsafe impl Sync for Guarded {}

fn read(g: &Guarded, reader: usize) -> (u32, u32) {
    assert!(g.lock.read_lock(reader, || false));
    // SAFETY: under the reader lock; loom reports any concurrent write.
    let v = g.pair.with(|p| unsafe { *p });
    g.lock.read_unlock(reader);
    v
}

fn write(g: &Guarded) {
    assert!(g.lock.write_lock(|| false));
    // SAFETY: under the writer lock; loom reports any concurrent access.
    g.pair.with_mut(|p| unsafe {
        (*p).0 += 1;
        (*p).1 += 1;
    });
    g.lock.write_unlock();
}

#[test]
fn writer_excludes_a_reader() {
    loom::model(|| {
        let g = Arc::new(Guarded {
            lock: DistRwLock::new(1),
            pair: UnsafeCell::new((0, 0)),
        });
        g.lock.activate(0);
        let reader = {
            let g = g.clone();
            thread::spawn(move || read(&g, 0))
        };
        write(&g);
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
fn writer_excludes_two_readers() {
    model_3_threads(|| {
        let g = Arc::new(Guarded {
            lock: DistRwLock::new(2),
            pair: UnsafeCell::new((0, 0)),
        });
        g.lock.activate(0);
        g.lock.activate(1);
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
        write(&g);
        for r in readers {
            assert!(r.join().unwrap() <= 1);
        }
        assert_eq!(read(&g, 0), (1, 1));
    });
}

#[test]
fn two_writers_serialize_with_a_reader() {
    model_3_threads(|| {
        let g = Arc::new(Guarded {
            lock: DistRwLock::new(1),
            pair: UnsafeCell::new((0, 0)),
        });
        g.lock.activate(0);
        let writer = {
            let g = g.clone();
            thread::spawn(move || write(&g))
        };
        let reader = {
            let g = g.clone();
            thread::spawn(move || read(&g, 0))
        };
        write(&g);
        writer.join().unwrap();
        let (a, b) = reader.join().unwrap();
        assert_eq!(a, b);
        assert_eq!(read(&g, 0), (2, 2), "both writes applied, neither lost");
    });
}
