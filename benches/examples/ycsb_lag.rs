//! Serves a YCSB-style load from a Ladapa store and prints the replication lag as it runs:
//! notifications queued for the propagator and the replicators, the share of reads served from
//! the reader's node, what the adaptive rule chose.
//!
//! ```text
//! cargo run --release -p benches --example ycsb_lag -- --nodes 4 --threads 2 --seconds 3
//! cargo run --release -p benches --example ycsb_lag -- --mix write-only --mode async --dist uniform
//! ```
//!
//! Options: `--nodes N` (virtual nodes; may exceed the CPUs, they then share CPUs), `--threads
//! N`, `--seconds S`, `--keys N`, `--value-size B`, `--mix
//! write-only|read-only|update95|read95|balanced`, `--dist zipf|uniform`, `--mode
//! sync|async|adaptive`, `--replication on-demand|eager`, `--scope node|memory-node` (default `node`: virtual nodes
//! copy among themselves, so that there is lag to show; see `ReplicationScope`), `--phases` (cycles the mixes, one per second, to show the adaptive
//! rule switching).

use std::time::Duration;

use benches::kv::ycsb::{load, run, KeyDist, Mix, RunConfig};
use ladapa::{MetadataMode, ReplicationScope, Store, ValueReplication};
use nr_core::Topology;

struct Args {
    nodes: usize,
    threads: usize,
    seconds: f64,
    keys: u64,
    value_size: usize,
    mix: Mix,
    dist: String,
    mode: MetadataMode,
    replication: ValueReplication,
    scope: ReplicationScope,
    phases: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        nodes: 4,
        threads: 2,
        seconds: 3.0,
        keys: 1 << 14,
        value_size: 4096,
        mix: Mix::BALANCED,
        dist: "zipf".into(),
        mode: MetadataMode::Adaptive,
        replication: ValueReplication::OnDemand,
        // Virtual nodes replicate among themselves here, so that there is lag to show.
        scope: ReplicationScope::Node,
        phases: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--phases" {
            args.phases = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--nodes" => args.nodes = value.parse().map_err(|e| bad(&e))?,
            "--threads" => args.threads = value.parse().map_err(|e| bad(&e))?,
            "--seconds" => args.seconds = value.parse().map_err(|e| bad(&e))?,
            "--keys" => args.keys = value.parse().map_err(|e| bad(&e))?,
            "--value-size" => args.value_size = value.parse().map_err(|e| bad(&e))?,
            "--dist" => args.dist = value.clone(),
            "--mix" => {
                args.mix = Mix::ALL
                    .into_iter()
                    .find(|m| m.to_string() == value)
                    .ok_or(format!("unknown mix {value}"))?
            }
            "--mode" => {
                args.mode = match value.as_str() {
                    "sync" => MetadataMode::Sync,
                    "async" => MetadataMode::Async,
                    "adaptive" => MetadataMode::Adaptive,
                    _ => return Err(format!("unknown mode {value}")),
                }
            }
            "--scope" => {
                args.scope = match value.as_str() {
                    "node" => ReplicationScope::Node,
                    "memory-node" => ReplicationScope::MemoryNode,
                    _ => return Err(format!("unknown scope {value}")),
                }
            }
            "--replication" => {
                args.replication = match value.as_str() {
                    "on-demand" => ValueReplication::OnDemand,
                    "eager" => ValueReplication::Eager,
                    _ => return Err(format!("unknown replication {value}")),
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(args)
}

/// Prints the error's chain (each cause once, not `Debug`) and exits with status 1.
fn main() -> std::process::ExitCode {
    benches::exit_with(try_main())
}

fn try_main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse()?;
    let topology = Topology::detect_hardware()?.with_shared_virtual_nodes(args.nodes)?;
    let dist = match args.dist.as_str() {
        "uniform" => KeyDist::uniform(args.keys),
        "zipf" => KeyDist::scrambled_zipfian(args.keys),
        other => return Err(format!("unknown distribution {other}").into()),
    };
    let store = Store::builder()
        .topology(topology.clone())
        .value_size(args.value_size)
        .capacity(args.keys as usize)
        .l1_entries((args.keys as usize).min(8192))
        .metadata_mode(args.mode)
        .value_replication(args.replication)
        .replication_scope(args.scope)
        .build()?;
    println!(
        "ladapa {} metadata, {} value replication (scope {}: {} domain(s)), topology {}, {} threads ({} CPUs{}), {} keys x {} B, {dist}",
        args.mode,
        args.replication,
        args.scope,
        store.replication_domains(),
        topology.source(),
        args.threads,
        topology.num_cpus(),
        if args.threads > topology.num_cpus() {
            ", oversubscribed"
        } else {
            ""
        },
        args.keys,
        args.value_size,
    );
    load(&store, args.keys)?;
    println!("loaded: {}", store.stats());
    let mixes: Vec<Mix> = if args.phases {
        Mix::ALL.to_vec()
    } else {
        vec![args.mix]
    };
    let per_phase = Duration::from_secs_f64(args.seconds / mixes.len() as f64);
    for mix in mixes {
        let mut config = RunConfig::new(args.threads, mix, dist.clone(), per_phase);
        config.topology = Some(topology.clone());
        println!("-- {mix}");
        let result = run(&store, &config, Duration::from_millis(250), |t| {
            let s = store.stats();
            let local = if s.reads == 0 {
                0.0
            } else {
                100.0 * s.local_reads as f64 / s.reads as f64
            };
            println!(
                "{:>6.2}s lag {:>6} notes (propagator {:>5}, replicators {:?}) | local reads {local:5.1}% | \
                 replicated {} coalesced {} dropped {} | metadata {}",
                t.as_secs_f64(),
                s.lag(),
                s.propagator_queued,
                s.replicator_queued,
                s.replicated,
                s.stale_skipped + s.meta_skipped,
                s.dropped,
                if s.sync_now { "sync" } else { "async" },
            );
        })?;
        println!(
            "{mix}: {:.3} Mops/s ({} reads, {} updates in {:.2}s)",
            result.mops(),
            result.reads,
            result.writes,
            result.elapsed.as_secs_f64()
        );
    }
    let stats = store.stats();
    println!("final: {stats}");
    store.shutdown()?;
    Ok(())
}
