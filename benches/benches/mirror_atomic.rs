//! Criterion benches for the `mirror-atomic` row of `BENCHMARKS.md` (Mirror PLDI'21 Figure 6,
//! scaled): one group per panel (list, hash set, skip list, BST at 80/10/10), the thread count as the
//! parameter, throughput in elements of 1,000 operations per thread (`Kelem/s` = Mops/s, as in
//! every group: `benches::crit`), the three flavors (volatile, Mirror, Izraelevitz) of the same
//! structure code as the compared functions. A sample runs N threads for criterion's iteration
//! count x 1,000 operations each (`iter_custom`, timed from a barrier). Persistent flavors use
//! a mapped file with real write-backs (on DRAM: no NVMM here). Each group also leaves its
//! scaling chart (`target/scaling/<group>.svg`, log y axis: Izraelevitz is far slower).
//!
//! ```sh
//! cargo bench -p benches --bench mirror_atomic -- --quick
//! ```

// A benchmark driver: its threads and barrier are the harness, not code under test.
#![allow(clippy::disallowed_types, clippy::disallowed_methods, missing_docs)]

use criterion::Criterion;
use mirror_atomic::flavor::{Flavor, Izraelevitz, Mirror, Volatile};
use mirror_atomic::{Bst, HashSet, Heap, List, Persist, SkipList};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Buckets of the hash set: sized for its key range (16,384), one bucket per key.
const BUCKETS: usize = 16_384;
const SIZE: u64 = 256 + 256 * 65536;

trait Set: Send + Sync {
    fn op(&self, r: u64, range: u64);
}

fn step(r: u64, range: u64) -> (u64, u64) {
    ((r >> 8) % range, r % 100)
}

impl<F: Flavor, P: Persist> Set for List<F, P> {
    fn op(&self, r: u64, range: u64) {
        match step(r, range) {
            (k, 0..=79) => drop(self.contains(k)),
            (k, 80..=89) => drop(self.insert(k).expect("room")),
            (k, _) => drop(self.remove(k)),
        }
    }
}

impl<F: Flavor, P: Persist> Set for HashSet<F, P> {
    fn op(&self, r: u64, range: u64) {
        match step(r, range) {
            (k, 0..=79) => drop(self.contains(k)),
            (k, 80..=89) => drop(self.insert(k).expect("room")),
            (k, _) => drop(self.remove(k)),
        }
    }
}

impl<F: Flavor, P: Persist> Set for SkipList<F, P> {
    fn op(&self, r: u64, range: u64) {
        match step(r, range) {
            (k, 0..=79) => drop(self.contains(k)),
            (k, 80..=89) => drop(self.insert(k).expect("room")),
            (k, _) => drop(self.remove(k)),
        }
    }
}

impl<F: Flavor, P: Persist> Set for Bst<F, P> {
    fn op(&self, r: u64, range: u64) {
        match step(r, range) {
            (k, 0..=79) => drop(self.contains(k)),
            (k, 80..=89) => drop(self.insert(k).expect("room")),
            (k, _) => drop(self.remove(k)),
        }
    }
}

fn mix(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Runs `ops` operations on each of `threads` threads, thread `t` drawing from seed
/// `seed + t`; the time from the start barrier to the last worker's end.
fn run(set: &dyn Set, threads: usize, range: u64, ops: u64, seed: u64) -> Duration {
    let barrier = Barrier::new(threads + 1);
    let barrier = &barrier;
    let start = std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut x = (seed * 977 + t as u64) | 1;
                barrier.wait();
                for _ in 0..ops {
                    set.op(mix(&mut x), range);
                }
            });
        }
        barrier.wait();
        Instant::now()
        // The scope joins every worker before it returns.
    });
    start.elapsed()
}

fn prefill(set: &dyn Set, range: u64) {
    // Inserts only (p in 80..=89 inserts): fill about half of the range.
    let mut x = 7u64;
    for _ in 0..range {
        let k = mix(&mut x) % range;
        set.op((k << 8) | 85, range);
    }
}

fn build(structure: &str, flavor: &str, dir: &std::path::Path) -> Box<dyn Set> {
    let path = dir.join(format!("{structure}-{flavor}.pmem"));
    let _ = std::fs::remove_file(&path);
    let p = path;
    match (structure, flavor) {
        ("list", "volatile") => {
            Box::new(List::new(Heap::<Volatile, _>::anonymous(SIZE).expect("heap")).expect("list"))
        }
        ("list", "mirror") => Box::new(
            List::new(Heap::<Mirror, _>::create(&p, 1, SIZE).expect("heap")).expect("list"),
        ),
        ("list", "izraelevitz") => Box::new(
            List::new(Heap::<Izraelevitz, _>::create(&p, 1, SIZE).expect("heap")).expect("list"),
        ),
        ("hash", "volatile") => Box::new(
            HashSet::with_capacity(Heap::<Volatile, _>::anonymous(SIZE).expect("heap"), BUCKETS)
                .expect("hash"),
        ),
        ("hash", "mirror") => Box::new(
            HashSet::with_capacity(
                Heap::<Mirror, _>::create(&p, 1, SIZE).expect("heap"),
                BUCKETS,
            )
            .expect("hash"),
        ),
        ("hash", "izraelevitz") => Box::new(
            HashSet::with_capacity(
                Heap::<Izraelevitz, _>::create(&p, 1, SIZE).expect("heap"),
                BUCKETS,
            )
            .expect("hash"),
        ),
        ("skip", "volatile") => Box::new(
            SkipList::new(Heap::<Volatile, _>::anonymous(SIZE).expect("heap")).expect("skip"),
        ),
        ("skip", "mirror") => Box::new(
            SkipList::new(Heap::<Mirror, _>::create(&p, 1, SIZE).expect("heap")).expect("skip"),
        ),
        ("skip", "izraelevitz") => Box::new(
            SkipList::new(Heap::<Izraelevitz, _>::create(&p, 1, SIZE).expect("heap"))
                .expect("skip"),
        ),
        ("bst", "volatile") => {
            Box::new(Bst::new(Heap::<Volatile, _>::anonymous(SIZE).expect("heap")).expect("bst"))
        }
        ("bst", "mirror") => {
            Box::new(Bst::new(Heap::<Mirror, _>::create(&p, 1, SIZE).expect("heap")).expect("bst"))
        }
        ("bst", "izraelevitz") => Box::new(
            Bst::new(Heap::<Izraelevitz, _>::create(&p, 1, SIZE).expect("heap")).expect("bst"),
        ),
        other => panic!("unknown {other:?}"),
    }
}

fn mirror_fig6(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("mirror-criterion-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The skip list's and the BST's key range is larger than the list's (the paper's Figure 6
    // uses larger sets for the logarithmic structures).
    for (structure, range) in [
        ("list", 256u64),
        ("hash", 16_384),
        ("skip", 16_384),
        ("bst", 16_384),
    ] {
        let mut group = benches::crit::panel(c, format!("mirror_fig6/{structure}_80_10_10"));
        for threads in [1usize, 2, 4] {
            for flavor in ["volatile", "mirror", "izraelevitz"] {
                let set = build(structure, flavor, &dir);
                prefill(&*set, range);
                let mut seed = 0;
                benches::crit::bench_threads(&mut group, flavor, threads, cpus, |t, ops| {
                    seed += 1;
                    Ok::<_, std::convert::Infallible>(run(&*set, t, range, ops, seed))
                });
            }
        }
        group.finish();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    // The workspace's shared configuration: registers the shipped font (criterion's report
    // writer has none otherwise), then applies the command line.
    let mut c = benches::crit::config().configure_from_args();
    mirror_fig6(&mut c);
    benches::crit::finish(&c);
}
