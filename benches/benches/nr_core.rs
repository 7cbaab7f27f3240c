//! Criterion benches for the `nr-core` rows of `BENCHMARKS.md`: one group per figure panel
//! (`hashmap/10% writes`, `pq-skiplist/100% updates`, ...), one benchmark per method and thread
//! count (1, 2, 4, 8; counts above the CPUs are labelled `N-oversubscribed`), throughput in
//! operations per second.
//!
//! Each iteration runs N pinned threads for `OPS / N` operations each (`iter_custom`, timed from
//! the start barrier to the last thread's end), so every thread count does the same total work.
//! Methods are built once per panel, at the paper's sizes (200k items; 10k for the hash map and
//! sorted set), and keep their state across iterations (balanced mixes keep sizes steady).
//!
//! ```text
//! cargo bench -p benches --bench nr_core                 # everything: about 15-25 min
//! cargo bench -p benches --bench nr_core -- 'hashmap/'   # one figure
//! cargo bench -p benches --bench nr_core -- 'NR/'        # one method
//! NR_VIRTUAL_NODES=2 cargo bench -p benches --bench nr_core -- hashmap
//! ```
//!
//! Settings are modest on purpose (10 samples, 0.3 s warm-up, 1 s measurement per benchmark);
//! for paper-style sweeps with CSV output use the `runner` binary. Under `cargo test --benches`
//! (criterion's test mode, no `--bench` argument) every benchmark runs once at smoke sizes.

use std::time::Duration;

use benches::figures::{for_each_panel, Figure, Params};
use benches::sweep::Sweep;
use benches::Replicas;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nr_core::Topology;

/// Operations per iteration, all threads together (divisible by every thread count).
const OPS: u64 = 40_000;
/// Operations per iteration in criterion's test mode.
const OPS_TEST: u64 = 800;
const THREADS: [usize; 4] = [1, 2, 4, 8];
const SEED: u64 = 42;

fn nr_core_rows(c: &mut Criterion) {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not (test mode).
    let test_mode = !std::env::args().any(|a| a == "--bench");
    let (params, ops) = if test_mode {
        (Params::smoke(), OPS_TEST)
    } else {
        (Params::paper(), OPS)
    };
    let topology = Topology::detect().expect("topology");
    let cpus = topology.num_cpus();
    let sweep = Sweep::new(
        THREADS.to_vec(),
        Duration::ZERO,
        1,
        SEED,
        topology,
        Replicas::PerNode,
    )
    .expect("sweep settings");
    for figure in Figure::ALL {
        let result = for_each_panel(figure, &sweep, &params, &mut |info, methods| {
            let mut group = c.benchmark_group(format!("{}/{}", figure.name(), info.panel));
            group.throughput(Throughput::Elements(ops));
            for threads in THREADS {
                let label = if threads > cpus {
                    format!("{threads}-oversubscribed")
                } else {
                    threads.to_string()
                };
                for m in methods {
                    let id = BenchmarkId::new(m.name(), &label);
                    group.bench_with_input(id, &threads, |b, &threads| {
                        b.iter_custom(|iters| {
                            (0..iters)
                                .map(|_| {
                                    m.run_ops(threads, ops / threads as u64, SEED)
                                        .expect("benchmark run")
                                        .elapsed
                                })
                                .sum()
                        })
                    });
                }
            }
            group.finish();
            Ok(())
        });
        result.expect("building a figure's methods");
    }
}

/// The criterion group and its settings.
mod group {
    // `criterion_group!` generates an undocumented public function.
    #![allow(missing_docs)]
    use super::*;

    criterion_group! {
        name = benches;
        config = Criterion::default()
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        targets = nr_core_rows
    }
}

criterion_main!(group::benches);
