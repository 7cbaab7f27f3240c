//! A fixed number of YCSB operations on one method, for load-proof counting: instructions
//! (`valgrind --tool=callgrind`) and simulated cache misses (`--cache-sim=yes`) per `get` and
//! per `put`, which do not depend on what else the machine runs. The timed runner
//! (`ladapa_ycsb`) measures throughput; this one counts.
//!
//! Every worker first runs `--warm` operations (so L1, replicas and caches reach their steady
//! state), waits for the others and the background threads to settle, then runs `--ops`
//! operations inside `measured`, each through `one_get` or `one_put` (never inlined, so
//! callgrind reports their inclusive cost per call):
//!
//! ```text
//! cargo build --release -p benches --example op_profile
//! valgrind --tool=callgrind --toggle-collect='op_profile::measured*' --cache-sim=yes \
//!     --D1=32768,8,64 --LL=33554432,16,64 target/release/examples/op_profile \
//!     --method ladapa-async --mix read-only --keys 262144 --warm 400000 --ops 200000
//! callgrind_annotate --inclusive=yes callgrind.out.<pid> | grep -E 'one_(get|put)'
//! ```
//!
//! Options: `--method ladapa-sync|ladapa-async|ladapa-adaptive` (add `-eager` for the paper's
//! value replication, then `-pernode` to replicate between virtual nodes on one memory node:
//! [`ReplicationScope::Node`], then `-4k` for pools in base pages), `kvbase`, `dashmap`; `--nodes N` (virtual, default 4), `--threads N` (default 1: valgrind
//! runs threads one at a time anyway), `--keys N`, `--value-size B`, `--mix
//! write-only|read-only|update95|read95|balanced`, `--dist zipf|uniform`, `--l1 N`, `--warm
//! N`, `--ops N` (per thread).

// A driver outside any synchronization protocol: std's threads directly.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::Barrier;
use std::time::Duration;

use benches::kv::ycsb::{load, spread, KeyDist, Mix, Rng};
use benches::kv::{DashMapKv, KvBase, KvSession, KvStore};
use benches::{thread_cpu_ns, BenchError};
use ladapa::{MetadataMode, ReplicationScope, Store, ValueReplication};
use nr_core::Topology;

struct Args {
    method: String,
    nodes: usize,
    threads: usize,
    keys: u64,
    value_size: usize,
    mix: Mix,
    dist: String,
    l1: usize,
    warm: u64,
    ops: u64,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        method: "ladapa-async".into(),
        nodes: 4,
        threads: 1,
        keys: 1 << 18,
        value_size: 4096,
        mix: Mix::READ_ONLY,
        dist: "zipf".into(),
        l1: 8192,
        warm: 400_000,
        ops: 200_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--method" => args.method = value,
            "--nodes" => args.nodes = value.parse().map_err(|e| bad(&e))?,
            "--threads" => args.threads = value.parse().map_err(|e| bad(&e))?,
            "--keys" => args.keys = value.parse().map_err(|e| bad(&e))?,
            "--value-size" => args.value_size = value.parse().map_err(|e| bad(&e))?,
            "--l1" => args.l1 = value.parse().map_err(|e| bad(&e))?,
            "--warm" => args.warm = value.parse().map_err(|e| bad(&e))?,
            "--ops" => args.ops = value.parse().map_err(|e| bad(&e))?,
            "--dist" => args.dist = value,
            "--mix" => {
                args.mix = Mix::ALL
                    .into_iter()
                    .find(|m| m.to_string() == value)
                    .ok_or(format!("unknown mix {value}"))?;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

/// One read, never inlined: callgrind's inclusive cost of this function is the cost of a get.
#[inline(never)]
fn one_get<S: KvSession>(session: &mut S, key: u64, buf: &mut [u8]) -> Result<bool, BenchError> {
    session.get(key, buf)
}

/// One update, never inlined (see `one_get`).
#[inline(never)]
fn one_put<S: KvSession>(session: &mut S, key: u64, value: &[u8]) -> Result<(), BenchError> {
    session.put(key, value)
}

/// `ops` operations of `mix` on `session`; returns (reads, writes, misses).
#[inline(never)]
fn measured<S: KvSession>(
    session: &mut S,
    rng: &mut Rng,
    dist: &KeyDist,
    mix: Mix,
    ops: u64,
    value: &mut [u8],
    buf: &mut [u8],
) -> Result<(u64, u64, u64), BenchError> {
    let (mut reads, mut writes, mut misses) = (0, 0, 0);
    for _ in 0..ops {
        let key = dist.sample(rng);
        if rng.below(100) < u64::from(mix.read_pct) {
            misses += u64::from(!one_get(session, key, buf)?);
            reads += 1;
        } else {
            value[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
            one_put(session, key, value)?;
            writes += 1;
        }
    }
    Ok((reads, writes, misses))
}

fn drive<S: KvStore>(store: &S, args: &Args, settle: &dyn Fn()) -> Result<(), BenchError> {
    load(store, args.keys)?;
    let dist = match args.dist.as_str() {
        "uniform" => KeyDist::uniform(args.keys),
        _ => KeyDist::scrambled_zipfian(args.keys),
    };
    let warmed = Barrier::new(args.threads + 1);
    let go = Barrier::new(args.threads + 1);
    let totals = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads)
            .map(|t| {
                let (dist, warmed, go) = (&dist, &warmed, &go);
                scope.spawn(move || -> Result<(u64, u64, u64, u64), BenchError> {
                    let mut session = store.session(spread(t, args.threads, store.num_nodes()))?;
                    let mut rng = Rng::new(42 + t as u64);
                    let mut value = vec![0u8; store.value_size()];
                    let mut buf = vec![0u8; store.value_size()];
                    for _ in 0..args.warm {
                        let key = dist.sample(&mut rng);
                        if rng.below(100) < u64::from(args.mix.read_pct) {
                            session.get(key, &mut buf)?;
                        } else {
                            value[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
                            session.put(key, &value)?;
                        }
                    }
                    warmed.wait();
                    go.wait();
                    let cpu = thread_cpu_ns();
                    let counts = measured(
                        &mut session,
                        &mut rng,
                        dist,
                        args.mix,
                        args.ops,
                        &mut value,
                        &mut buf,
                    )?;
                    Ok((counts.0, counts.1, counts.2, thread_cpu_ns() - cpu))
                })
            })
            .collect();
        warmed.wait();
        settle();
        go.wait();
        let start = std::time::Instant::now();
        let done = workers
            .into_iter()
            .map(|w| match w.join() {
                Ok(r) => r,
                Err(payload) => std::panic::resume_unwind(payload),
            })
            .collect::<Result<Vec<_>, _>>();
        done.map(|d| (d, start.elapsed()))
    })?;
    let (totals, wall) = totals;
    let (reads, writes, misses, cpu_ns) = totals.iter().fold((0, 0, 0, 0), |a, t| {
        (a.0 + t.0, a.1 + t.1, a.2 + t.2, a.3 + t.3)
    });
    let cpu_per_op = cpu_ns as f64 / (reads + writes).max(1) as f64;
    let wall = wall.as_secs_f64();
    println!(
        "{}: {} nodes, {} thread(s), {} keys of {} B, {} {}: measured {reads} gets, {writes} puts \
         ({misses} misses); {cpu_per_op:.0} ns of worker CPU time per operation (less sensitive \
         to other load than the wall time, {wall:.3} s)",
        store.name(),
        store.num_nodes(),
        args.threads,
        args.keys,
        args.value_size,
        args.dist,
        args.mix
    );
    Ok(())
}

/// Prints the error's chain (each cause once, not `Debug`) and exits with status 1.
fn main() -> std::process::ExitCode {
    benches::exit_with(try_main())
}

fn try_main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse()?;
    let topology = Topology::detect_hardware()?.with_shared_virtual_nodes(args.nodes)?;
    println!("topology: {}", topology.source());
    let nodes = topology.num_nodes();
    match args.method.as_str() {
        "kvbase" => drive(&KvBase::new(args.value_size, nodes), &args, &|| ())?,
        "dashmap" => drive(&DashMapKv::new(args.value_size, nodes), &args, &|| ())?,
        m => {
            let mut name = m;
            let mut huge_pages = true;
            if let Some(rest) = name.strip_suffix("-4k") {
                (name, huge_pages) = (rest, false);
            }
            let mut scope = ReplicationScope::MemoryNode;
            if let Some(rest) = name.strip_suffix("-pernode") {
                (name, scope) = (rest, ReplicationScope::Node);
            }
            let mut replication = ValueReplication::OnDemand;
            if let Some(rest) = name.strip_suffix("-eager") {
                (name, replication) = (rest, ValueReplication::Eager);
            }
            let mode = match name {
                "ladapa-sync" => MetadataMode::Sync,
                "ladapa-async" => MetadataMode::Async,
                "ladapa-adaptive" => MetadataMode::Adaptive,
                other => return Err(format!("unknown method {other}").into()),
            };
            let store = Store::builder()
                .topology(topology)
                .value_size(args.value_size)
                .capacity(args.keys as usize)
                .l1_entries(args.l1.min(args.keys as usize))
                .metadata_mode(mode)
                .value_replication(replication)
                .replication_scope(scope)
                .huge_pages(huge_pages)
                .build()?;
            let settle = || {
                for _ in 0..400 {
                    if store.stats().lag() == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            };
            drive(&store, &args, &settle)?;
            println!("{}", store.stats());
        }
    }
    Ok(())
}
