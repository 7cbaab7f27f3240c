//! Paper-style sweeps for the `nr-core` rows of `BENCHMARKS.md`: every method of a figure, side
//! by side, interleaved and repeated; CSV rows, a PNG chart per figure, a table of ratios.
//!
//! ```text
//! cargo run --release -p benches --bin runner -- hashmap --threads 1,2,4 --reps 3 --duration-ms 1000
//! cargo run --release -p benches --bin runner -- all --smoke --out target/bench-smoke
//! cargo run --release -p benches --bin runner -- dict --virtual-nodes 2 --dist zipf --zipf-exponent 1.5
//! ```

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use benches::figures::{self, Figure, Params};
use benches::report::{Row, Summary};
use benches::sweep::Sweep;
use benches::{chart, BenchError, Replicas};
use clap::{Parser, ValueEnum};
use nr_core::Topology;

/// Which figure to run.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Which {
    /// Hash map, 10k keys, 0/10/100% writes (NR, SL, RWL, FC, FC+, dashmap, nr-crate).
    Hashmap,
    /// NR Fig. 5: skip-list priority queue.
    PqSkiplist,
    /// NR Fig. 6: pairing-heap priority queue.
    PqPairing,
    /// NR Fig. 7: skip-list dictionary, uniform and Zipf keys.
    Dict,
    /// NR Fig. 8: stack push/pop.
    Stack,
    /// NR Fig. 9-10: synthetic buffer.
    Synthetic,
    /// NR Fig. 11: Redis-style sorted set.
    Sortedset,
    /// NR (1 replica, 1 thread) against the bare structure.
    Cost,
    /// NR §6 fake updates: 100% writes, --mix = share of no-op writes (default 0,50,90).
    FakeUpdates,
    /// NR vs the node-replication crate, 1 replica (NR log-free) and 2 replicas (both log);
    /// NR-dormant: NR with `Builder::dormant_replicas`.
    NrPeer,
    /// CNR (1/2/4 logs) vs the cnr crate and single-log NR, partitioned hash map, 1 and 2 replicas.
    CnrPeer,
    /// Every figure above.
    All,
}

/// Key distribution of the dictionary figure.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Dist {
    Uniform,
    Zipf,
}

/// Benchmark sweeps for nr-core: NR side by side with SL, RWL, FC, FC+ and lock-free peers.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The figure to run.
    #[arg(value_enum)]
    figure: Which,
    /// Thread counts (comma-separated); counts above the CPUs run oversubscribed, and say so.
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Split the hardware topology into this many virtual nodes (NR: one replica each; all
    /// methods' threads are pinned round-robin over them). Default: the detected topology
    /// (which honours NR_VIRTUAL_NODES).
    #[arg(long)]
    virtual_nodes: Option<usize>,
    /// Give NR exactly this many replicas, unplaced (thread t uses replica t % N), instead of
    /// one per node.
    #[arg(long)]
    replicas: Option<usize>,
    /// Update (write) percentages, comma-separated; default: each figure's own list.
    #[arg(long, value_delimiter = ',')]
    mix: Option<Vec<u32>>,
    /// Dictionary key distribution; default: both uniform and Zipf.
    #[arg(long, value_enum)]
    dist: Option<Dist>,
    /// Zipf exponent when --dist zipf.
    #[arg(long, default_value_t = 1.5)]
    zipf_exponent: f64,
    /// Hash-map keys.
    #[arg(long)]
    hashmap_keys: Option<u64>,
    /// Initial priority-queue items.
    #[arg(long)]
    pq_items: Option<usize>,
    /// Initial dictionary items.
    #[arg(long)]
    dict_items: Option<u64>,
    /// Initial stack items.
    #[arg(long)]
    stack_items: Option<usize>,
    /// Synthetic buffer entries (n).
    #[arg(long)]
    synthetic_n: Option<usize>,
    /// Synthetic entries per operation (c).
    #[arg(long)]
    synthetic_c: Option<usize>,
    /// Sorted-set items.
    #[arg(long)]
    sortedset_items: Option<u64>,
    /// Duration of each run in milliseconds [default: 1000; smoke: 15].
    #[arg(long)]
    duration_ms: Option<u64>,
    /// Repetitions of every point (median and min-max are reported) [default: 3; smoke: 1].
    #[arg(long)]
    reps: Option<usize>,
    /// Seed of the runs and of the initial contents.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Only these methods (comma-separated, case-insensitive: NR,NR-dormant,SL,RWL,FC,FC+,LF,
    /// Treiber,dashmap,nr-crate).
    #[arg(long, value_delimiter = ',')]
    methods: Option<Vec<String>>,
    /// Tiny sizes, 15 ms runs, 1 repetition, threads 1,2,4: the CI smoke run.
    #[arg(long)]
    smoke: bool,
    /// Output directory for CSV files and charts.
    #[arg(long, default_value = "target/bench-results")]
    out: PathBuf,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), BenchError> {
    let started = Instant::now();
    let topology = match args.virtual_nodes {
        Some(n) => Topology::detect_hardware()?.with_virtual_nodes(n)?,
        None => Topology::detect()?,
    };
    let replicas = args.replicas.map_or(Replicas::PerNode, Replicas::Exactly);
    let threads = args.threads.clone().unwrap_or_else(|| {
        if args.smoke {
            vec![1, 2, 4]
        } else {
            vec![1, 2, 4, 8]
        }
    });
    let duration =
        Duration::from_millis(
            args.duration_ms
                .unwrap_or(if args.smoke { 15 } else { 1000 }),
        );
    let reps = args.reps.unwrap_or(if args.smoke { 1 } else { 3 });
    let mut sweep = Sweep::new(threads, duration, reps, args.seed, topology, replicas)?;
    sweep.methods = args.methods.clone();

    let mut params = if args.smoke {
        Params::smoke()
    } else {
        Params::paper()
    };
    params.seed = args.seed;
    params.mixes = args.mix.clone();
    params.zipf = args.dist.map(|d| match d {
        Dist::Uniform => None,
        Dist::Zipf => Some(args.zipf_exponent),
    });
    macro_rules! set {
        ($($f:ident),*) => { $( if let Some(v) = args.$f { params.$f = v; } )* };
    }
    set!(
        hashmap_keys,
        pq_items,
        dict_items,
        stack_items,
        synthetic_n,
        synthetic_c,
        sortedset_items
    );

    let m = &sweep.machine;
    println!(
        "machine: {} CPUs, {} NUMA node(s), {}; code {}",
        m.cores, m.numa_nodes, m.cpu_model, m.git
    );
    println!(
        "topology: {} ({} node(s), {} CPUs); NR replicas: {}; threads {:?} (above {} oversubscribed); \
         {} ms per run, {} repetition(s), methods interleaved; seed {}",
        sweep.topology.source(),
        sweep.topology.num_nodes(),
        sweep.topology.num_cpus(),
        replicas,
        sweep.threads,
        sweep.topology.num_cpus(),
        duration.as_millis(),
        reps,
        args.seed
    );
    println!("persistence backend: DRAM (volatile structures)\n");

    let chosen: Vec<Figure> = match args.figure {
        Which::Hashmap => vec![Figure::HashMap],
        Which::PqSkiplist => vec![Figure::PqSkipList],
        Which::PqPairing => vec![Figure::PqPairing],
        Which::Dict => vec![Figure::Dict],
        Which::Stack => vec![Figure::Stack],
        Which::Synthetic => vec![Figure::Synthetic],
        Which::Sortedset => vec![Figure::SortedSet],
        Which::Cost => vec![Figure::Cost],
        Which::FakeUpdates => vec![Figure::FakeUpdates],
        Which::NrPeer => vec![Figure::NrPeer],
        Which::CnrPeer => vec![Figure::CnrPeer],
        Which::All => Figure::ALL.to_vec(),
    };
    std::fs::create_dir_all(&args.out)?;
    let mut all_rows: Vec<Row> = Vec::new();
    for figure in chosen {
        let rows = figures::run(figure, &sweep, &params)?;
        let csv = args.out.join(format!("{}.csv", figure.name()));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv)?);
        writeln!(f, "{}", Row::HEADER)?;
        for r in &rows {
            writeln!(f, "{}", r.to_csv())?;
        }
        f.flush()?;
        let summary = Summary::from_rows(&rows);
        let png = args.out.join(format!("{}.png", figure.name()));
        let subtitle = format!(
            "{} ({} CPUs, topology {}), median of {}",
            m.cpu_model,
            m.cores,
            sweep.topology.source(),
            reps
        );
        chart::draw(&summary, figure.name(), &subtitle, &png)?;
        sweep.progress.suspend(|| {
            println!(
                "\n{}: wrote {} and {} ({})",
                figure.name(),
                csv.display(),
                png.display(),
                figure.caveat()
            );
        });
        all_rows.extend(rows);
    }
    sweep.progress.finish_and_clear();

    let summary = Summary::from_rows(&all_rows);
    println!(
        "\nSummary: NR throughput / each method's, median of the per-repetition ratios (min-max)"
    );
    for figure in summary.figures() {
        println!("\n== {figure}");
        print!("{}", summary.table(&figure));
    }
    println!(
        "\nRepetition agreement: highest / lowest throughput over the repetitions of each point \
         (every run on a fresh structure; 1.00 = identical)"
    );
    for figure in summary.figures() {
        println!("\n== {figure}");
        print!("{}", summary.agreement(&figure));
    }
    if !chart::load_font() {
        println!("\n(no system font found: charts are drawn without text)");
    }
    println!("\ndone in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
