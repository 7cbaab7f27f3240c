//! Criterion benches for the `nr-core` rows of `BENCHMARKS.md`: one group per figure panel
//! (`hashmap/10% writes`, `pq-skiplist/10% updates`, ...), one benchmark per method and thread
//! count, the thread count as the parameter (`N-oversubscribed` above the CPU count) and
//! throughput in elements of 1,000 operations per thread, so criterion's line chart shows
//! throughput against threads, one line per method, and `Kelem/s` reads as Mops/s (see
//! `benches::crit`).
//!
//! Every sample starts from a fresh, identically prefilled structure (rebuilt outside the
//! timing), so no method measures a structure that earlier samples aged. One sample is one run of
//! N pinned threads, timed from the earliest worker's start to the latest worker's end.
//!
//! Default set (a plain `cargo bench`): each figure's key panel at 1, 2 and 4 threads: the hash
//! map, skip-list priority queue, stack and sorted set at 10% updates (stack: push/pop). The full
//! sweep (every panel of every figure, 1/2/4/8 threads) is `BENCH_FULL=1`.
//!
//! ```text
//! cargo bench -p benches --bench nr_core                          # default set: 72 benchmarks
//! BENCH_FULL=1 cargo bench -p benches --bench nr_core             # every panel
//! cargo bench -p benches --bench nr_core -- 'hashmap/'            # one figure
//! cargo bench -p benches --bench nr_core -- 'NR/'                 # one method
//! NR_VIRTUAL_NODES=2 cargo bench -p benches --bench nr_core -- hashmap
//! ```
//!
//! For paper-style sweeps with CSV output, repetitions and ratio tables use the `runner` binary.
//! Under `cargo test --benches` (criterion's test mode) every benchmark runs once at smoke sizes.

use std::time::Duration;

use benches::crit;
use benches::figures::{for_each_panel, Figure, Params};
use benches::sweep::Sweep;
use benches::Replicas;
use criterion::Criterion;
use nr_core::Topology;

const SEED: u64 = 42;

/// The figures of the default set; the full sweep runs [`Figure::ALL`].
const DEFAULT_FIGURES: [Figure; 4] = [
    Figure::HashMap,
    Figure::PqSkipList,
    Figure::Stack,
    Figure::SortedSet,
];

fn nr_core_rows(c: &mut Criterion) {
    let full = crit::full();
    let mut params = if crit::test_mode() {
        Params::smoke()
    } else {
        Params::paper()
    };
    let figures: &[Figure] = if full {
        &Figure::ALL
    } else {
        // Key panels: 10% updates, uniform keys.
        params.mixes = Some(vec![10]);
        params.zipf = Some(None);
        &DEFAULT_FIGURES
    };
    let threads = crit::threads();
    let topology = Topology::detect().expect("topology");
    let cpus = topology.num_cpus();
    let sweep = Sweep::new(
        threads.clone(),
        Duration::ZERO,
        1,
        SEED,
        topology,
        Replicas::PerNode,
    )
    .expect("sweep settings");
    for &figure in figures {
        let result = for_each_panel(figure, &sweep, &params, &mut |info, methods| {
            let mut group = crit::panel(c, format!("{}/{}", figure.name(), info.panel));
            for &t in &threads {
                for m in methods.iter_mut() {
                    let name = m.name();
                    crit::bench_threads(&mut group, name, t, cpus, |t, ops| {
                        m.rebuild()?;
                        m.run_ops(t, ops, SEED).map(|s| s.elapsed)
                    });
                }
            }
            group.finish();
            Ok(())
        });
        result.expect("building a figure's methods");
    }
}

fn main() {
    let mut c = crit::config().configure_from_args();
    nr_core_rows(&mut c);
    crit::finish(&c);
}
