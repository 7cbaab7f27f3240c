//! Crash tests on pmem's simulated persistence domain (evictions on, probability 0.1 per
//! event): random op streams crash at a random event, recover from the crash image, and are
//! checked by `common::crash_point` (durable linearizability of the completed and pending ops,
//! well-formedness, free-space rebuild, no leak). `MIRROR_CRASH_POINTS` sets the number of
//! crash points per structure and flavor (default 10,000 in release builds, 300 in debug).

mod common;

use common::{crash_point, mt_crash_point, ops, Rng, Set};
use mirror_atomic::flavor::{Izraelevitz, Mirror};
use mirror_atomic::{Bst, HashSet, List, SkipList};
use pmem::sim::Simulated;
use std::time::Instant;

fn points() -> u64 {
    std::env::var("MIRROR_CRASH_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 300 } else { 10_000 })
}

/// Runs `points()` crash points: per seed, an op stream of 24-48 ops over 16 keys, its event
/// count measured by a crash-free run, then crashes at random events of it.
fn run<S: Set<P = Simulated>>(name: &str) {
    let total = points();
    let start = Instant::now();
    let mut done = 0u64;
    let mut seed = 0u64;
    while done < total {
        let mut rng = Rng(seed.wrapping_mul(31) + 7);
        let n = 24 + rng.below(25) as usize;
        let stream = ops(seed, n, 16);
        let (created, events) =
            crash_point::<S>(seed, &stream, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        for _ in 0..20.min(total - done) {
            let k = created + rng.below(events - created + 1);
            if let Err(e) = crash_point::<S>(seed, &stream, Some(k)) {
                panic!("{name}, seed {seed}: {e}");
            }
            done += 1;
        }
        seed += 1;
    }
    eprintln!(
        "{name}: {done} crash points ({seed} op streams) checked in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn mirror_list_survives_random_crashes() {
    run::<List<Mirror, Simulated>>("mirror list");
}

#[test]
fn mirror_hash_survives_random_crashes() {
    run::<HashSet<Mirror, Simulated>>("mirror hash");
}

#[test]
fn mirror_skiplist_survives_random_crashes() {
    run::<SkipList<Mirror, Simulated>>("mirror skiplist");
}

#[test]
fn izraelevitz_skiplist_survives_random_crashes() {
    run::<SkipList<Izraelevitz, Simulated>>("izraelevitz skiplist");
}

#[test]
fn mirror_bst_survives_random_crashes() {
    run::<Bst<Mirror, Simulated>>("mirror bst");
}

#[test]
fn izraelevitz_bst_survives_random_crashes() {
    run::<Bst<Izraelevitz, Simulated>>("izraelevitz bst");
}

#[test]
fn izraelevitz_list_survives_random_crashes() {
    run::<List<Izraelevitz, Simulated>>("izraelevitz list");
}

#[test]
fn izraelevitz_hash_survives_random_crashes() {
    run::<HashSet<Izraelevitz, Simulated>>("izraelevitz hash");
}

/// Multi-threaded crash points: `MIRROR_MT_CRASH_POINTS` (default 1,000 in release, 50 in
/// debug) per structure and flavor, 2 threads on disjoint keys, crash at a random event.
fn run_mt<S: Set<P = Simulated>>(name: &str) {
    let total = std::env::var("MIRROR_MT_CRASH_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 50 } else { 1_000 });
    let start = Instant::now();
    let mut rng = Rng(99);
    for seed in 0..total {
        let (created, events) =
            mt_crash_point::<S>(seed, 20, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let k = created + rng.below(events - created + 1);
        if let Err(e) = mt_crash_point::<S>(seed, 20, Some(k)) {
            panic!("{name}, seed {seed}: {e}");
        }
    }
    eprintln!(
        "{name}: {total} two-thread crash points checked in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn mirror_list_survives_two_thread_crashes() {
    run_mt::<List<Mirror, Simulated>>("mirror list (2 threads)");
}

#[test]
fn mirror_hash_survives_two_thread_crashes() {
    run_mt::<HashSet<Mirror, Simulated>>("mirror hash (2 threads)");
}

#[test]
fn izraelevitz_list_survives_two_thread_crashes() {
    run_mt::<List<Izraelevitz, Simulated>>("izraelevitz list (2 threads)");
}

#[test]
fn izraelevitz_hash_survives_two_thread_crashes() {
    run_mt::<HashSet<Izraelevitz, Simulated>>("izraelevitz hash (2 threads)");
}

#[test]
fn mirror_skiplist_survives_two_thread_crashes() {
    run_mt::<SkipList<Mirror, Simulated>>("mirror skiplist (2 threads)");
}

#[test]
fn izraelevitz_skiplist_survives_two_thread_crashes() {
    run_mt::<SkipList<Izraelevitz, Simulated>>("izraelevitz skiplist (2 threads)");
}

#[test]
fn mirror_bst_survives_two_thread_crashes() {
    run_mt::<Bst<Mirror, Simulated>>("mirror bst (2 threads)");
}

#[test]
fn izraelevitz_bst_survives_two_thread_crashes() {
    run_mt::<Bst<Izraelevitz, Simulated>>("izraelevitz bst (2 threads)");
}
