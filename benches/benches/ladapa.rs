//! Criterion curves for Ladapa (paper Figures 7-9, scaled): one group per panel (mix x key
//! distribution), the thread count as the parameter, throughput in elements of 1,000
//! operations per thread (`Kelem/s` = Mops/s, as in every group: `benches::crit`); Ladapa
//! (sync, async and adaptive metadata), kvbase, CR and dashmap in every group. 4 virtual nodes
//! (sharing CPUs where there are fewer), 4096 keys of 4 KiB, scrambled Zipfian 0.99. Each group
//! also leaves its scaling chart (`target/scaling/<group>.svg`, `benches::scaling`).
//!
//! `cargo bench -p benches --bench ladapa`; paper-style tables: the `ladapa_ycsb` binary.

// Drives real threads outside any synchronization protocol.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use benches::kv::ycsb::{self, spread, KeyDist, Mix, Rng};
use benches::kv::{Cr, DashMapKv, KvBase, KvSession, KvStore};
use criterion::Criterion;
use ladapa::{MetadataMode, Store};
use nr_core::Topology;

const NODES: usize = 4;
const KEYS: u64 = 4096;
const VALUE: usize = 4096;

/// Runs `ops` operations on each of `threads` threads; the elapsed wall time.
fn timed<S: KvStore>(store: &S, threads: usize, mix: Mix, dist: &KeyDist, ops: u64) -> Duration {
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
                for _ in 0..ops {
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
    let sync_store = ladapa(MetadataMode::Sync);
    let async_store = ladapa(MetadataMode::Async);
    let adaptive = ladapa(MetadataMode::Adaptive);
    let kvbase = KvBase::new(VALUE, NODES);
    ycsb::load(&kvbase, KEYS).expect("load");
    let cr = Cr::new(VALUE, topology.clone()).expect("cr");
    ycsb::load(&cr, KEYS).expect("load");
    let dash = DashMapKv::new(VALUE, NODES);
    ycsb::load(&dash, KEYS).expect("load");
    let dist = KeyDist::scrambled_zipfian(KEYS);
    let cpus = topology.num_cpus();
    let stores: [(&str, &dyn Run); 6] = [
        ("ladapa-sync", &sync_store),
        ("ladapa-async", &async_store),
        ("ladapa-adaptive", &adaptive),
        ("kvbase", &kvbase),
        ("cr", &cr),
        ("dashmap", &dash),
    ];
    for mix in [Mix::WRITE_ONLY, Mix::READ_ONLY, Mix::BALANCED] {
        let mut group = benches::crit::panel(c, format!("ladapa/{mix}/zipf"));
        for threads in [1usize, 2, 4] {
            for (name, store) in stores {
                benches::crit::bench_threads(&mut group, name, threads, cpus, |t, ops| {
                    Ok::<_, std::convert::Infallible>(store.run(t, mix, &dist, ops))
                });
            }
        }
        group.finish();
    }
}

/// [`timed`] for any store, so one list holds them all.
trait Run {
    fn run(&self, threads: usize, mix: Mix, dist: &KeyDist, ops: u64) -> Duration;
}

impl<S: KvStore> Run for S {
    fn run(&self, threads: usize, mix: Mix, dist: &KeyDist, ops: u64) -> Duration {
        timed(self, threads, mix, dist, ops)
    }
}

fn main() {
    // The workspace's shared configuration: registers the shipped font (criterion's report
    // writer has none otherwise), then applies the command line.
    let mut c = benches::crit::config().configure_from_args();
    bench(&mut c);
    benches::crit::finish(&c);
}
