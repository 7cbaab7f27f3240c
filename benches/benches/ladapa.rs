//! Criterion curves for Ladapa (paper Figures 7-9, scaled): one group per panel (mix x key
//! distribution), the thread count as the parameter, throughput in operations; Ladapa (async
//! and adaptive metadata), kvbase, CR and dashmap in every group. 4 virtual nodes (sharing
//! CPUs where there are fewer), 4096 keys of 4 KiB, scrambled Zipfian 0.99.
//!
//! `cargo bench -p benches --bench ladapa`; paper-style tables: the `ladapa_ycsb` binary.

// Drives real threads outside any synchronization protocol.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use ladapa::ycsb::{self, spread, KeyDist, Mix, Rng};
use ladapa::{Cr, DashMapKv, KvBase, KvSession, KvStore, MetadataMode, Store};
use nr_core::Topology;

const NODES: usize = 4;
const KEYS: u64 = 4096;
const VALUE: usize = 4096;
/// Operations per thread per criterion iteration.
const OPS: u64 = 256;

/// Runs `iters` x `OPS` operations on each of `threads` threads; the elapsed wall time.
fn timed<S: KvStore>(store: &S, threads: usize, mix: Mix, dist: &KeyDist, iters: u64) -> Duration {
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (barrier, dist) = (&barrier, dist);
            scope.spawn(move || {
                let mut session = store
                    .session(spread(t, threads, store.num_nodes()))
                    .expect("a node of the store");
                let mut rng = Rng::new(t as u64 + 1);
                let mut buf = vec![0u8; VALUE];
                barrier.wait();
                for _ in 0..iters * OPS {
                    let key = dist.sample(&mut rng);
                    if rng.below(100) < u64::from(mix.read_pct) {
                        black_box(session.get(key, &mut buf).expect("get"));
                    } else {
                        buf[0] = buf[0].wrapping_add(1);
                        session.put(key, &buf).expect("put");
                    }
                }
            });
        }
        barrier.wait();
        let start = Instant::now();
        // The scope joins the workers before returning.
        start
    })
    .elapsed()
}

fn bench(c: &mut Criterion) {
    let topology = Topology::detect_hardware()
        .expect("topology")
        .with_shared_virtual_nodes(NODES)
        .expect("virtual nodes");
    let ladapa = |mode| {
        let store = Store::builder()
            .topology(topology.clone())
            .value_size(VALUE)
            .capacity(KEYS as usize)
            .l1_entries(1024)
            .metadata_mode(mode)
            .build()
            .expect("store");
        ycsb::load(&store, KEYS).expect("load");
        store
    };
    let async_store = ladapa(MetadataMode::Async);
    let adaptive = ladapa(MetadataMode::Adaptive);
    let kvbase = KvBase::new(VALUE, NODES);
    ycsb::load(&kvbase, KEYS).expect("load");
    let cr = Cr::new(VALUE, topology.clone()).expect("cr");
    ycsb::load(&cr, KEYS).expect("load");
    let dash = DashMapKv::new(VALUE, NODES);
    ycsb::load(&dash, KEYS).expect("load");
    let dist = KeyDist::scrambled_zipfian(KEYS);
    for mix in [Mix::WRITE_ONLY, Mix::READ_ONLY, Mix::BALANCED] {
        let mut group = c.benchmark_group(format!("ladapa/{mix}/zipf"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for threads in [1usize, 2, 4] {
            group.throughput(Throughput::Elements(threads as u64 * OPS));
            group.bench_with_input(
                BenchmarkId::new("ladapa-async", threads),
                &threads,
                |b, &t| b.iter_custom(|iters| timed(&async_store, t, mix, &dist, iters)),
            );
            group.bench_with_input(
                BenchmarkId::new("ladapa-adaptive", threads),
                &threads,
                |b, &t| b.iter_custom(|iters| timed(&adaptive, t, mix, &dist, iters)),
            );
            group.bench_with_input(BenchmarkId::new("kvbase", threads), &threads, |b, &t| {
                b.iter_custom(|iters| timed(&kvbase, t, mix, &dist, iters))
            });
            group.bench_with_input(BenchmarkId::new("cr", threads), &threads, |b, &t| {
                b.iter_custom(|iters| timed(&cr, t, mix, &dist, iters))
            });
            group.bench_with_input(BenchmarkId::new("dashmap", threads), &threads, |b, &t| {
                b.iter_custom(|iters| timed(&dash, t, mix, &dist, iters))
            });
        }
        group.finish();
    }
}

fn main() {
    // The workspace's shared configuration: registers the shipped font (criterion's report
    // writer has none otherwise), then applies the command line.
    let mut c = benches::crit::config().configure_from_args();
    bench(&mut c);
    benches::crit::finish(&c);
}
