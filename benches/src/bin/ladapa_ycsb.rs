//! Ladapa paper Figures 7-10 scaled to this machine: YCSB mixes (write-only, read-only, 95%
//! update, 95% read, 50/50), uniform and scrambled Zipfian 0.99 keys, 1/2/4 threads, 1 and 4
//! virtual nodes, first-level table sweep; Ladapa (each metadata mode), kvbase, CR and dashmap
//! side by side in one run, interleaved and repeated; memory per method with every result.
//!
//! ```text
//! cargo run --release -p benches --bin ladapa_ycsb -- --keys 16384 --reps 3 --duration-ms 500
//! cargo run --release -p benches --bin ladapa_ycsb -- --smoke
//! cargo run --release -p benches --bin ladapa_ycsb -- --nodes 4 --threads 2 --mixes balanced --l1 1024,4096,16384 --methods ladapa-async
//! ```
//!
//! Virtual nodes on a one-node machine measure the overheads of replication, never its
//! benefit (every "remote" access is local memory). On a multi-socket machine pass the real
//! node count (`--nodes` equal to the sockets) and the same command measures both.

// A driver binary: waits with std's sleep, outside any synchronization protocol.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use benches::report::Machine;
use clap::Parser;
use ladapa::ycsb::{self, KeyDist, Mix, RunConfig, RunResult};
use ladapa::{Cr, DashMapKv, KvBase, KvStore, MemoryUsage, MetadataMode, Store};
use nr_core::Topology;

/// YCSB sweeps of Ladapa against kvbase, CR and dashmap.
#[derive(Debug, Parser)]
#[command(
    version,
    about = "Ladapa YCSB sweeps (paper Figures 7-10): Ladapa, kvbase, CR and dashmap side by side"
)]
struct Args {
    /// Thread counts (comma-separated); counts above the CPUs run oversubscribed, and say so.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Virtual node counts (comma-separated); more nodes than CPUs share CPUs, and say so.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    nodes: Vec<usize>,
    /// Mixes: write-only, read-only, update95, read95, balanced (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "write-only,read-only,update95,read95,balanced"
    )]
    mixes: Vec<String>,
    /// Key distributions: uniform, zipf (YCSB's scrambled Zipfian 0.99).
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipf")]
    dists: Vec<String>,
    /// Methods: ladapa-sync, ladapa-async, ladapa-adaptive, kvbase, cr, dashmap.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ladapa-sync,ladapa-async,ladapa-adaptive,kvbase,cr,dashmap"
    )]
    methods: Vec<String>,
    /// Items loaded (the key space). The paper's scale here is 2^18 = 262144; memory is about
    /// keys x value size x (nodes per Ladapa mode + nodes for CR + 2), so use fewer on a
    /// shared machine.
    #[arg(long, default_value_t = 1 << 18)]
    keys: u64,
    /// Value size in bytes (32-byte metadata indexes each value).
    #[arg(long, default_value_t = 4096)]
    value_size: usize,
    /// First-level table sizes in entries (comma-separated: a sweep for the Ladapa methods).
    #[arg(long, value_delimiter = ',', default_value = "8192")]
    l1: Vec<usize>,
    /// Duration of each run in milliseconds.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
    /// Repetitions of every point (median and min-max reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Seed of the key streams.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Tiny sizes, 20 ms runs, 1 repetition, threads 1,2, nodes 1,2: the CI smoke run.
    #[arg(long)]
    smoke: bool,
    /// Output directory for the CSV file.
    #[arg(long, default_value = "target/bench-results")]
    out: PathBuf,
}

/// One method under test.
#[allow(clippy::large_enum_variant)] // reason: a handful of values, built once per node count
enum Method {
    Ladapa(Store),
    KvBase(KvBase),
    Cr(Cr),
    Dash(DashMapKv),
}

impl Method {
    fn run(&self, config: &RunConfig) -> Result<RunResult, ladapa::StoreError> {
        let tick = Duration::from_secs(3600);
        match self {
            Method::Ladapa(s) => ycsb::run(s, config, tick, |_| {}),
            Method::KvBase(s) => ycsb::run(s, config, tick, |_| {}),
            Method::Cr(s) => ycsb::run(s, config, tick, |_| {}),
            Method::Dash(s) => ycsb::run(s, config, tick, |_| {}),
        }
    }
    fn load(&self, keys: u64) -> Result<(), ladapa::StoreError> {
        match self {
            Method::Ladapa(s) => ycsb::load(s, keys),
            Method::KvBase(s) => ycsb::load(s, keys),
            Method::Cr(s) => ycsb::load(s, keys),
            Method::Dash(s) => ycsb::load(s, keys),
        }
    }
    fn memory(&self) -> MemoryUsage {
        match self {
            Method::Ladapa(s) => s.memory(),
            Method::KvBase(s) => s.memory(),
            Method::Cr(s) => s.memory(),
            Method::Dash(s) => s.memory(),
        }
    }
    /// Lets Ladapa's background threads catch up between runs (so one run's replication
    /// backlog is not charged to the next method).
    fn settle(&self) {
        if let Method::Ladapa(s) = self {
            for _ in 0..200 {
                if s.stats().lag() == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn mix_named(name: &str) -> Result<Mix, String> {
    Mix::ALL
        .into_iter()
        .find(|m| m.to_string() == name)
        .ok_or_else(|| format!("unknown mix {name:?}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(mut args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if args.smoke {
        args.keys = 1024;
        args.value_size = args.value_size.min(512);
        args.duration_ms = 20;
        args.reps = 1;
        args.threads = vec![1, 2];
        args.nodes = vec![1, 2];
        args.l1 = vec![256];
    }
    let started = Instant::now();
    let machine = Machine::detect()?;
    let mixes: Vec<Mix> = args
        .mixes
        .iter()
        .map(|m| mix_named(m))
        .collect::<Result<_, _>>()?;
    for d in &args.dists {
        if d != "uniform" && d != "zipf" {
            return Err(format!("unknown distribution {d:?}").into());
        }
    }
    let hardware = Topology::detect_hardware()?;
    println!(
        "# machine: {} cores, {} NUMA node(s), {}; git {}",
        machine.cores, machine.numa_nodes, machine.cpu_model, machine.git
    );
    println!(
        "# keys {} x {} B values (32-byte metadata each), L1 {:?}, {} ms per run, {} reps \
         (median [min-max]), seed {}, memory: values + metadata after the run, MiB",
        args.keys, args.value_size, args.l1, args.duration_ms, args.reps, args.seed
    );
    println!(
        "# one memory node here: virtual nodes measure replication overheads, not NUMA benefit"
    );
    std::fs::create_dir_all(&args.out)?;
    let mut csv =
        String::from("nodes,topology,mix,dist,threads,oversubscribed,method,rep,mops,memory_mib\n");
    let mut summary = String::new();
    for &nodes in &args.nodes {
        let topology = hardware.with_shared_virtual_nodes(nodes)?;
        println!(
            "\n## {} virtual node(s): topology {}",
            nodes,
            topology.source()
        );
        // Build and load every method once per node count.
        let mut methods: Vec<(String, Method)> = Vec::new();
        for name in &args.methods {
            let built: Vec<(String, Method)> = match name.as_str() {
                "ladapa-sync" | "ladapa-async" | "ladapa-adaptive" => {
                    let mode = match name.as_str() {
                        "ladapa-sync" => MetadataMode::Sync,
                        "ladapa-async" => MetadataMode::Async,
                        _ => MetadataMode::Adaptive,
                    };
                    let mut v = Vec::new();
                    for &l1 in &args.l1 {
                        let store = Store::builder()
                            .topology(topology.clone())
                            .value_size(args.value_size)
                            .capacity(args.keys as usize)
                            .l1_entries(l1.min(args.keys as usize))
                            .metadata_mode(mode)
                            .build()?;
                        let label = if args.l1.len() > 1 {
                            format!("{name}/l1={l1}")
                        } else {
                            name.clone()
                        };
                        v.push((label, Method::Ladapa(store)));
                    }
                    v
                }
                "kvbase" => vec![(
                    name.clone(),
                    Method::KvBase(KvBase::new(args.value_size, nodes)),
                )],
                "cr" => vec![(
                    name.clone(),
                    Method::Cr(Cr::new(args.value_size, topology.clone())?),
                )],
                "dashmap" => vec![(
                    name.clone(),
                    Method::Dash(DashMapKv::new(args.value_size, nodes)),
                )],
                other => return Err(format!("unknown method {other:?}").into()),
            };
            for (label, method) in built {
                method.load(args.keys)?;
                method.settle();
                methods.push((label, method));
            }
        }
        for dist_name in &args.dists {
            let dist = if dist_name == "zipf" {
                KeyDist::scrambled_zipfian(args.keys)
            } else {
                KeyDist::uniform(args.keys)
            };
            for &mix in &mixes {
                for &threads in &args.threads {
                    let over = threads > topology.num_cpus();
                    // results[method] = (mops per rep, memory)
                    let mut results: Vec<(Vec<f64>, MemoryUsage)> = methods
                        .iter()
                        .map(|_| (Vec::new(), MemoryUsage::default()))
                        .collect();
                    for rep in 0..args.reps {
                        // Interleave, rotating which method goes first.
                        for k in 0..methods.len() {
                            let i = (k + rep) % methods.len();
                            let (label, method) = &methods[i];
                            let mut config = RunConfig::new(
                                threads,
                                mix,
                                dist.clone(),
                                Duration::from_millis(args.duration_ms),
                            );
                            config.seed = args.seed + rep as u64 * 1000;
                            config.topology = Some(topology.clone());
                            let r = method.run(&config)?;
                            method.settle();
                            let memory = method.memory();
                            results[i].0.push(r.mops());
                            results[i].1 = memory;
                            let _ = writeln!(
                                csv,
                                "{nodes},{},{mix},{dist},{threads},{over},{label},{rep},{:.4},{:.1}",
                                topology.source(),
                                r.mops(),
                                memory.total() as f64 / (1 << 20) as f64
                            );
                        }
                    }
                    let mut line = format!(
                        "{nodes} nodes {mix:<10} {dist:<8} {threads} thr{}:",
                        if over { " (oversubscribed)" } else { "" }
                    );
                    let medians: Vec<f64> =
                        results.iter().map(|(v, _)| median(v.clone())).collect();
                    for ((label, _), ((v, memory), med)) in
                        methods.iter().zip(results.iter().zip(&medians))
                    {
                        let (lo, hi) = v
                            .iter()
                            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                        let _ = write!(
                            line,
                            "  {label} {med:.3} [{lo:.3}-{hi:.3}] Mops/s {:.0} MiB;",
                            memory.total() as f64 / (1 << 20) as f64
                        );
                    }
                    println!("{line}");
                    // Ratios of medians, Ladapa methods over the baselines present.
                    let find =
                        |n: &str| methods.iter().position(|(l, _)| l == n).map(|i| medians[i]);
                    let mut ratios = String::new();
                    for ((label, _), med) in methods.iter().zip(&medians) {
                        if !label.starts_with("ladapa") {
                            continue;
                        }
                        for base in ["cr", "kvbase", "dashmap"] {
                            if let Some(b) = find(base).filter(|&b| b > 0.0) {
                                let _ = write!(ratios, "  {label}/{base} {:.2}x", med / b);
                            }
                        }
                    }
                    if !ratios.is_empty() {
                        println!("    ratios:{ratios}");
                        let _ =
                            writeln!(summary, "{nodes} nodes {mix} {dist} {threads} thr:{ratios}");
                    }
                }
            }
        }
        for (label, method) in &methods {
            if let Method::Ladapa(store) = method {
                println!("# {label} after the sweep: {}", store.stats());
            }
        }
    }
    let path = args.out.join("ladapa_ycsb.csv");
    std::fs::write(&path, csv)?;
    println!(
        "\n# ratios (medians):\n{summary}# CSV: {}; total {:.1}s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
