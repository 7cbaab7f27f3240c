//! Criterion benches for the `pcomb` rows of `BENCHMARKS.md` (PPoPP'22 §6): one group per figure
//! panel, one benchmark per method and thread count, the thread count as the parameter and
//! throughput in elements of 1,000 operations (AtomicFloat) or pairs (structures) per thread,
//! so criterion's line chart shows throughput against threads per method and `Kelem/s` reads
//! as Mops/s (Mpairs/s). See `benches::crit` and `benches::pcomb_bench`.
//!
//! Groups: `pcomb-atomicfloat` (PBcomb, PBcomb1, PWFcomb persistent and volatile, `Mutex`,
//! `Mutex+persist`: durable, not detectable), `pcomb-stack`, `pcomb-queue` and `pcomb-heap-256`
//! (PB and PWF structures persistent and volatile, `Mutex+persist`, a volatile `Mutex`
//! baseline). `BENCH_FULL=1` adds `pcomb-heap-64`, `pcomb-heap-1024`, the variants without
//! elimination or recycling, `SegQueue`, and 8 threads.
//!
//! Every sample builds a fresh object (persistent ones in a new mapped file in the temp dir),
//! outside the timing. Persistence here is real `clwb`/`clflushopt` + `sfence` on a mapped file
//! on DRAM: flush costs, not NVMM latency.
//!
//! ```text
//! cargo bench -p benches --bench pcomb                           # default set: 69 benchmarks
//! BENCH_FULL=1 cargo bench -p benches --bench pcomb              # every panel and variant
//! cargo bench -p benches --bench pcomb -- pcomb-queue            # one panel
//! ```
//!
//! For repetitions, medians and flushes per operation use the `pcomb_atomic_float` and
//! `pcomb_structures` binaries.

use benches::crit;
use benches::pcomb_bench::{atomic_float, structure, FloatMethod, Structure};
use criterion::Criterion;

const SEED: u64 = 42;

fn pcomb_rows(c: &mut Criterion) {
    let full = crit::full();
    let threads = crit::threads();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());

    let mut g = crit::panel(c, "pcomb-atomicfloat");
    for &t in &threads {
        for m in FloatMethod::ALL {
            crit::bench_threads(&mut g, m.name(), t, cpus, |t, ops| {
                atomic_float(m, t, ops, SEED).map(|o| o.elapsed)
            });
        }
    }
    g.finish();

    let panels: Vec<Structure> = if full {
        Structure::ALL.to_vec()
    } else {
        vec![Structure::Stack, Structure::Queue, Structure::Heap(256)]
    };
    for s in panels {
        let mut g = crit::panel(c, format!("pcomb-{}", s.name()));
        for &t in &threads {
            for m in s.methods(full) {
                crit::bench_threads(&mut g, m, t, cpus, |t, pairs| {
                    structure(s, m, t, pairs, SEED).map(|o| o.elapsed)
                });
            }
        }
        g.finish();
    }
}

fn main() {
    let mut c = crit::config().configure_from_args();
    pcomb_rows(&mut c);
    crit::finish(&c);
}
