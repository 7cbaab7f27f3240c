//! Linearizability of concurrent histories (testkit's Wing-Gong checker), per structure and
//! flavor: 2 threads (this machine has 2 cores), started in lockstep on a spinning barrier
//! before every operation, run short random op streams over 4 keys;
//! every history is checked, and the share of operations that overlap an operation of another
//! thread is printed and required to be non-trivial (a history without overlap proves nothing).

// The harness's own threads, locks and barrier are not under test (loom does not run this file).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use common::{apply, to_kv, Rng, Set, SetOp};
use mirror_atomic::flavor::{Izraelevitz, Mirror, Volatile};
use mirror_atomic::{Bst, HashSet, Heap, List, NoPersist, SkipList};
use std::sync::Mutex;

/// A reusable spinning barrier (a blocking one wakes threads microseconds apart, longer than
/// an operation, and the operations would rarely overlap).
struct SpinBarrier(std::sync::atomic::AtomicUsize);

impl SpinBarrier {
    fn new() -> Self {
        Self(std::sync::atomic::AtomicUsize::new(0))
    }
    /// Waits for round `round` (0, 1, ...) of `THREADS` threads.
    fn wait(&self, round: usize) {
        use std::sync::atomic::Ordering::SeqCst;
        self.0.fetch_add(1, SeqCst);
        let mut spins = 0u32;
        while self.0.load(SeqCst) < (round + 1) * THREADS {
            spins += 1;
            if spins < 2000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}
use testkit::lin::{check, EventKind, History, Recorder};
use testkit::models::{KvMap, KvOp, KvRet};

const THREADS: usize = 2;
const OPS: usize = 8;
const ROUNDS: u64 = 150;

/// Share of operations whose interval overlaps an operation of another thread.
fn overlap_share(h: &History<KvOp, KvRet>) -> (usize, usize) {
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut spans: Vec<(usize, u64, u64)> = Vec::new();
    for e in h.events() {
        match &e.kind {
            EventKind::Invoke(_) => open.push((e.thread, e.time)),
            EventKind::Return(_) => {
                if let Some(i) = open.iter().position(|&(t, _)| t == e.thread) {
                    let (t, start) = open.remove(i);
                    spans.push((t, start, e.time));
                }
            }
        }
    }
    let overlapping = spans
        .iter()
        .filter(|&&(t, s, e)| spans.iter().any(|&(u, s2, e2)| u != t && s2 < e && s < e2))
        .count();
    (overlapping, spans.len())
}

/// Runs batches of `ROUNDS` histories until at least 5 % of the operations overlapped another
/// thread's (`MAX_BATCHES` batches, more while under the floor below): on a loaded machine a thread can miss a whole batch
/// of barrier rounds, and the histories are then sequential; more histories are run instead of
/// accepting a test that checked nothing concurrent. The test then requires at least
/// `MIN_OVERLAPPING` overlapping operations in all (an absolute floor, not the 5 % share: with
/// both cores busy with other work the share fell to 2 % of 12,000 operations, 240 of them
/// overlapping, which still checks real concurrency; an unloaded run overlaps 18-58 %).
fn run<S: Set<P = NoPersist>>(name: &str) {
    const MAX_BATCHES: u64 = 5;
    const MIN_OVERLAPPING: usize = 100;
    let (mut overlapping, mut total) = (0, 0);
    // Histories in which the structure grew (the hash set doubled its buckets mid-history).
    let mut grew = 0usize;
    let mut rounds = 0;
    // Past MAX_BATCHES, keep going (up to 4x more) only while the floor is not reached: a
    // heavily loaded machine (load average 4 on the 2 cores) left one configuration below the
    // floor after 750 histories.
    while rounds < ROUNDS * MAX_BATCHES * 4
        && (rounds < ROUNDS
            || ((overlapping as f64) < 0.05 * total as f64
                && (rounds < ROUNDS * MAX_BATCHES || overlapping < MIN_OVERLAPPING)))
    {
        let round = rounds;
        rounds += 1;
        let set = S::create(Heap::anonymous(1 << 20).expect("heap")).expect("set");
        let rec = Recorder::<KvOp, KvRet>::new();
        let barrier = SpinBarrier::new();
        let threads: Vec<_> = (0..THREADS).map(|_| Mutex::new(rec.thread())).collect();
        std::thread::scope(|s| {
            for (t, tr) in threads.iter().enumerate() {
                let (set, barrier) = (&set, &barrier);
                s.spawn(move || {
                    let mut tr = tr.lock().expect("recorder");
                    let mut rng = Rng(round * 97 + t as u64);
                    let ops: Vec<SetOp> = (0..OPS)
                        .map(|_| {
                            let k = rng.below(4);
                            match rng.below(3) {
                                0 => SetOp::Insert(k),
                                1 => SetOp::Remove(k),
                                _ => SetOp::Contains(k),
                            }
                        })
                        .collect();
                    for (i, op) in ops.into_iter().enumerate() {
                        barrier.wait(i);
                        let p = tr.invoke(to_kv(op));
                        let r = apply(set, op);
                        tr.complete(p, r);
                    }
                });
            }
        });
        drop(threads);
        grew += usize::from(set.grew());
        let h = rec.into_history();
        let (o, n) = overlap_share(&h);
        overlapping += o;
        total += n;
        if let Err(v) = check(KvMap::new(), &h) {
            panic!("{name}, round {round}: not linearizable: {v:?}");
        }
    }
    let share = overlapping as f64 / total as f64;
    eprintln!(
        "{name}: {rounds} histories, {total} ops, {:.0}% overlapping, {grew} grew",
        share * 100.0
    );
    assert!(
        !name.starts_with("hash") || grew > 0,
        "{name}: the hash set never doubled during a history"
    );
    assert!(
        overlapping >= MIN_OVERLAPPING,
        "{name}: only {overlapping} operations ({:.1}%) overlapped another thread's",
        share * 100.0
    );
}

/// One test running every configuration in turn: parallel test threads would oversubscribe
/// the 2 cores and serialize the operations this test wants to overlap.
#[test]
fn every_structure_and_flavor_is_linearizable() {
    run::<List<Volatile, NoPersist>>("list/volatile");
    run::<List<Mirror, NoPersist>>("list/mirror");
    run::<List<Izraelevitz, NoPersist>>("list/izraelevitz");
    run::<HashSet<Volatile, NoPersist>>("hash/volatile");
    run::<HashSet<Mirror, NoPersist>>("hash/mirror");
    run::<HashSet<Izraelevitz, NoPersist>>("hash/izraelevitz");
    run::<SkipList<Volatile, NoPersist>>("skiplist/volatile");
    run::<SkipList<Mirror, NoPersist>>("skiplist/mirror");
    run::<SkipList<Izraelevitz, NoPersist>>("skiplist/izraelevitz");
    run::<Bst<Volatile, NoPersist>>("bst/volatile");
    run::<Bst<Mirror, NoPersist>>("bst/mirror");
    run::<Bst<Izraelevitz, NoPersist>>("bst/izraelevitz");
}
