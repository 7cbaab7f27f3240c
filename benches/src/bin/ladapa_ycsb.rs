//! Ladapa paper Figures 7-10 scaled to this machine: YCSB mixes (write-only, read-only, 95%
//! update, 95% read, 50/50), uniform and scrambled Zipfian 0.99 keys, 1/2/4 threads, 1 and 4
//! virtual nodes, first-level table sweep; Ladapa (each metadata mode, on-demand value
//! replication; `ladapa-async-eager`: the paper's eager replication), kvbase, CR and dashmap
//! side by side in one run, repeated; memory per method with every result.
//!
//! One method is in memory at a time (2^18 items of 4 KiB are 1 GiB per copy, and Ladapa-eager
//! or CR hold one copy per node): each repetition builds, loads, runs every point and drops
//! each method in turn, the order rotating between repetitions; medians and min-max over the
//! repetitions. Each result line gives the method's own memory account (values + metadata)
//! and the process RSS after the point (freed memory is handed back to the kernel between
//! methods, so the RSS is the method's own plus the driver's few MiB). Adaptive lines give the
//! metadata-mode switches in that point's runs, all repetitions together. `--together` holds
//! every method at once and interleaves them at each point instead (fairer under a noisy
//! load, when memory allows).
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

use benches::kv::ycsb::{self, KeyDist, Mix, RunConfig, RunResult};
use benches::kv::{Cr, DashMapKv, KvBase, KvStore};
use benches::report::Machine;
use clap::Parser;
use ladapa::{MemoryUsage, MetadataMode, ReplicationScope, Store, ValueReplication};
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
    /// Methods: ladapa-sync, ladapa-async, ladapa-adaptive (on-demand value replication
    /// between memory nodes, pools in huge pages), the same with `-eager` (the paper's: every
    /// write copied to every domain), then `-pernode` (every virtual node its own replication
    /// domain, as if it were a socket: copies between virtual nodes on one memory node), then
    /// `-4k` (pools in base pages), kvbase, cr, dashmap.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ladapa-sync,ladapa-async,ladapa-adaptive,ladapa-async-eager,kvbase,cr,dashmap"
    )]
    methods: Vec<String>,
    /// Items loaded (the key space): the paper's 2^18 = 262144. One method is held at a time;
    /// the largest (Ladapa-eager, CR) needs about keys x value size x (nodes + 1).
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
    /// Hold every method in memory at once and interleave them at every point (rotating the
    /// order per repetition): fairer under a noisy load, but needs the sum of their memory.
    #[arg(long)]
    together: bool,
    /// Output directory for the CSV file.
    #[arg(long, default_value = "target/bench-results")]
    out: PathBuf,
}

/// One method's results at one point.
#[derive(Default)]
struct PointResult {
    /// Mops/s per repetition.
    mops: Vec<f64>,
    /// Memory after the last run.
    memory: MemoryUsage,
    /// Process RSS after the last run, MiB.
    rss: f64,
    /// Adaptive-mode switches over all repetitions (Ladapa only).
    switches: Option<u64>,
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
    fn run(&self, config: &RunConfig) -> Result<RunResult, benches::BenchError> {
        let tick = Duration::from_secs(3600);
        match self {
            Method::Ladapa(s) => ycsb::run(s, config, tick, |_| {}),
            Method::KvBase(s) => ycsb::run(s, config, tick, |_| {}),
            Method::Cr(s) => ycsb::run(s, config, tick, |_| {}),
            Method::Dash(s) => ycsb::run(s, config, tick, |_| {}),
        }
    }
    fn load(&self, keys: u64) -> Result<(), benches::BenchError> {
        match self {
            Method::Ladapa(s) => ycsb::load(s, keys),
            Method::KvBase(s) => ycsb::load(s, keys),
            Method::Cr(s) => ycsb::load(s, keys),
            Method::Dash(s) => ycsb::load(s, keys),
        }
    }
    /// Adaptive-mode switches so far (Ladapa only).
    fn switches(&self) -> Option<u64> {
        match self {
            Method::Ladapa(s) => Some(s.stats().mode_switches),
            _ => None,
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

/// Builds method `name` (L1 size `l1` for the Ladapa ones) on `topology`.
fn build(
    name: &str,
    l1: usize,
    args: &Args,
    topology: &Topology,
) -> Result<Method, Box<dyn std::error::Error>> {
    let nodes = topology.num_nodes();
    Ok(match name {
        n if n.starts_with("ladapa-") => {
            // Suffixes, in this order from the end: `-4k` (pools in base pages, not huge
            // pages), `-pernode` (every virtual node its own replication domain), `-eager` (the
            // paper's value replication; otherwise on demand, the default).
            let (n, huge_pages) = match n.strip_suffix("-4k") {
                Some(m) => (m, false),
                None => (n, true),
            };
            let (n, scope) = match n.strip_suffix("-pernode") {
                Some(m) => (m, ReplicationScope::Node),
                None => (n, ReplicationScope::MemoryNode),
            };
            let (mode_name, replication) = match n.strip_suffix("-eager") {
                Some(m) => (m, ValueReplication::Eager),
                None => (n, ValueReplication::OnDemand),
            };
            let mode = match mode_name {
                "ladapa-sync" => MetadataMode::Sync,
                "ladapa-async" => MetadataMode::Async,
                "ladapa-adaptive" => MetadataMode::Adaptive,
                other => return Err(format!("unknown method {other:?}").into()),
            };
            Method::Ladapa(
                Store::builder()
                    .topology(topology.clone())
                    .value_size(args.value_size)
                    .capacity(args.keys as usize)
                    .l1_entries(l1.min(args.keys as usize))
                    .metadata_mode(mode)
                    .value_replication(replication)
                    .replication_scope(scope)
                    .huge_pages(huge_pages)
                    .build()?,
            )
        }
        "kvbase" => Method::KvBase(KvBase::new(args.value_size, nodes)),
        "cr" => Method::Cr(Cr::new(args.value_size, topology.clone())?),
        "dashmap" => Method::Dash(DashMapKv::new(args.value_size, nodes)),
        other => return Err(format!("unknown method {other:?}").into()),
    })
}

/// The process's resident set in MiB (0 where `/proc` is missing). Freed memory is handed
/// back between methods (`release_freed_memory`), so it is close to the method's own.
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<f64>().ok())
        })
        .map_or(0.0, |pages| pages * 4096.0 / (1 << 20) as f64)
}

/// Hands memory the allocator kept from the method just dropped back to the kernel (glibc
/// keeps freed 4 KiB values in its heap otherwise), so the next method's RSS is its own.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY:
    // - `malloc_trim` only returns free heap pages to the kernel; it takes no pointer and
    //   touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `/proc/loadavg`'s first three fields (`unknown` where missing).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
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
        eprintln!("error: {}", benches::error_chain(e.as_ref()));
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
    println!("# load average at the start: {}", load_average());
    std::fs::create_dir_all(&args.out)?;
    let mut csv = String::from(
        "nodes,topology,mix,dist,threads,oversubscribed,method,rep,mops,memory_mib,rss_mib\n",
    );
    let mut summary = String::new();
    for &nodes in &args.nodes {
        let topology = hardware.with_shared_virtual_nodes(nodes)?;
        println!(
            "\n## {} virtual node(s): topology {}",
            nodes,
            topology.source()
        );
        let mut memory_nodes: Vec<usize> =
            topology.nodes().iter().map(|n| n.memory_node()).collect();
        memory_nodes.sort_unstable();
        memory_nodes.dedup();
        println!(
            "# replication: ladapa-* (scope memory-node): {} domain(s), one per memory node {:?} \
             (nodes on one memory node share one L2 table and copy no values among themselves); \
             ladapa-*-pernode (scope node): {} domains, values and metadata copied between \
             every node; pools in huge pages unless -4k; kvbase/dashmap: one copy, CR: one \
             replica per node",
            memory_nodes.len(),
            memory_nodes,
            topology.num_nodes()
        );
        // Every (label, method name, L1 size) to run; built one at a time.
        let mut labels: Vec<(String, String, usize)> = Vec::new();
        for name in &args.methods {
            if name.starts_with("ladapa-") {
                for &l1 in &args.l1 {
                    let label = if args.l1.len() > 1 {
                        format!("{name}/l1={l1}")
                    } else {
                        name.clone()
                    };
                    labels.push((label, name.clone(), l1));
                }
            } else {
                labels.push((name.clone(), name.clone(), 0));
            }
        }
        let mut points: Vec<(KeyDist, Mix, usize)> = Vec::new();
        for dist_name in &args.dists {
            let dist = if dist_name == "zipf" {
                KeyDist::scrambled_zipfian(args.keys)
            } else {
                KeyDist::uniform(args.keys)
            };
            for &mix in &mixes {
                for &threads in &args.threads {
                    points.push((dist.clone(), mix, threads));
                }
            }
        }
        let mut results: Vec<Vec<PointResult>> = points
            .iter()
            .map(|_| labels.iter().map(|_| PointResult::default()).collect())
            .collect();
        let run_point = |method: &Method,
                         label: &str,
                         p: usize,
                         rep: usize,
                         slot: &mut PointResult,
                         csv: &mut String|
         -> Result<(), Box<dyn std::error::Error>> {
            let (dist, mix, threads) = &points[p];
            let mut config = RunConfig::new(
                *threads,
                *mix,
                dist.clone(),
                Duration::from_millis(args.duration_ms),
            );
            config.seed = args.seed + rep as u64 * 1000;
            config.topology = Some(topology.clone());
            let before = method.switches();
            let r = method.run(&config)?;
            if r.misses > 0 {
                return Err(format!("{label}: {} reads found no value", r.misses).into());
            }
            method.settle();
            slot.mops.push(r.mops());
            slot.memory = method.memory();
            slot.rss = rss_mib();
            if let (Some(before), Some(after)) = (before, method.switches()) {
                *slot.switches.get_or_insert(0) += after - before;
            }
            let _ = writeln!(
                csv,
                "{nodes},{},{mix},{dist},{threads},{},{label},{rep},{:.4},{:.1},{:.0}",
                topology.source(),
                threads > &topology.num_cpus(),
                r.mops(),
                slot.memory.total() as f64 / (1 << 20) as f64,
                slot.rss
            );
            Ok(())
        };
        let report_stats = |label: &str, method: &Method| {
            if let Method::Ladapa(store) = method {
                println!("# {label} after its last run: {}", store.stats());
            }
        };
        if args.together {
            // Every method in memory at once; each point runs all of them, interleaved, the
            // order rotating with the repetition.
            let mut methods = Vec::new();
            for (label, name, l1) in &labels {
                let method = build(name, *l1, &args, &topology)?;
                method.load(args.keys)?;
                method.settle();
                eprintln!("# {label} loaded, RSS {:.0} MiB", rss_mib());
                methods.push(method);
            }
            for (p, row) in results.iter_mut().enumerate() {
                for rep in 0..args.reps {
                    for k in 0..labels.len() {
                        let i = (k + rep) % labels.len();
                        run_point(&methods[i], &labels[i].0, p, rep, &mut row[i], &mut csv)?;
                    }
                }
            }
            for ((label, _, _), method) in labels.iter().zip(&methods) {
                report_stats(label, method);
            }
        } else {
            for rep in 0..args.reps {
                // One method in memory at a time; the order rotates with the repetition.
                for k in 0..labels.len() {
                    let i = (k + rep) % labels.len();
                    let (label, name, l1) = &labels[i];
                    let method = build(name, *l1, &args, &topology)?;
                    method.load(args.keys)?;
                    method.settle();
                    eprintln!(
                        "# rep {rep}: {label} loaded ({:.0} MiB, RSS {:.0} MiB), {} points",
                        method.memory().total() as f64 / (1 << 20) as f64,
                        rss_mib(),
                        points.len()
                    );
                    for (p, row) in results.iter_mut().enumerate() {
                        run_point(&method, label, p, rep, &mut row[i], &mut csv)?;
                    }
                    if rep + 1 == args.reps {
                        report_stats(label, &method);
                    }
                    drop(method);
                    release_freed_memory();
                }
            }
        }
        for (p, (dist, mix, threads)) in points.iter().enumerate() {
            let over = *threads > topology.num_cpus();
            let mut line = format!(
                "{nodes} nodes {mix:<10} {dist:<8} {threads} thr{}:",
                if over { " (oversubscribed)" } else { "" }
            );
            let medians: Vec<f64> = results[p].iter().map(|r| median(r.mops.clone())).collect();
            for ((label, _, _), (r, med)) in labels.iter().zip(results[p].iter().zip(&medians)) {
                let (lo, hi) = r
                    .mops
                    .iter()
                    .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                let _ = write!(
                    line,
                    "  {label} {med:.3} [{lo:.3}-{hi:.3}] Mops/s {:.0} MiB (RSS {:.0});",
                    r.memory.total() as f64 / (1 << 20) as f64,
                    r.rss
                );
                if let Some(switches) = r.switches.filter(|_| label.contains("adaptive")) {
                    let _ = write!(line, " {switches} switches;");
                }
            }
            println!("{line}");
            // Ratios of medians, Ladapa methods over the baselines present.
            let find = |n: &str| {
                labels
                    .iter()
                    .position(|(l, _, _)| l == n)
                    .map(|i| medians[i])
            };
            let mut ratios = String::new();
            for ((label, _, _), med) in labels.iter().zip(&medians) {
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
                let _ = writeln!(summary, "{nodes} nodes {mix} {dist} {threads} thr:{ratios}");
            }
        }
        println!("# load average after {nodes} node(s): {}", load_average());
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
