//! The paper's structure benchmarks (PPoPP'22 §6, Figures 4-7), scaled to this machine, side by
//! side and repeated.
//!
//! - stack: push/pop pairs from an empty stack; queue: enqueue/dequeue pairs from an empty
//!   queue; heap: insert/delete-min pairs on heaps of 64, 256 and 1024 keys, half full at the
//!   start (the same keys for every method).
//! - The AtomicFloat benchmark's local work (a random 1..=512 iterations of the authors'
//!   generator and volatile loop, `benches::pcomb_bench::LocalWork`) follows every operation; a run is timed from the earliest worker's start to the
//!   latest worker's end.
//! - Methods: the PB structures, PWFStack and PWFQueue persistent (a mapped file in the temp
//!   dir, `Hardware` flushes), with and without elimination / recycling, and volatile;
//!   `Mutex+persist` (the same sequential structure as an array in the region under a `Mutex`,
//!   pwb of what changed and psync per operation: durable, not detectable); volatile references
//!   (`Mutex<Vec>`, `Mutex<VecDeque>`, `Mutex<BinaryHeap>`, `crossbeam_queue::SegQueue`).
//! - Every run builds a fresh structure; at each thread count every method runs once unmeasured,
//!   then `--reps` rounds with the methods interleaved and their order rotated.
//! - Thread `t` is pinned to the topology's `cpu_for_thread(t)`, as in the runner.
//! - Reported per pair: throughput (Mpairs/s), pwbs (cache lines written back), pfences, psyncs.
//!   Each panel's runs go to `pcomb-<panel>.csv` in `--out` (the runner's columns, every setting
//!   and the git hash on each row, then the flushes per pair) with a chart `pcomb-<panel>.png`,
//!   and the repetition-agreement table is printed at the end.
//!
//! ```text
//! cargo run --release -p benches --bin pcomb_structures -- --threads 1,2,4 --reps 3 --out docs/results
//! cargo run --release -p benches --bin pcomb_structures -- --only queue,heap-256
//! cargo run -p benches --bin pcomb_structures -- --quick      # CI smoke
//! ```

use std::path::PathBuf;

use benches::pcomb_bench::record::Record;
use benches::pcomb_bench::{interleaved, line, structure, topology, Structure};
use benches::report::Machine;
use benches::BenchError;
use clap::Parser;
use pcomb::pmem::Hardware;

/// PBcomb/PWFcomb structure benchmarks (PPoPP'22 Figures 4-7): stack, queue and heap pairs,
/// methods side by side, interleaved and repeated; median Mpairs/s and flushes per pair.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Thread counts (comma-separated); counts above the CPUs run oversubscribed, and say so.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Pairs per thread in each run [default: 50000; quick: 1000].
    #[arg(long)]
    pairs: Option<u64>,
    /// Repetitions of every point (median and min-max are reported) [default: 3; quick: 1].
    #[arg(long)]
    reps: Option<usize>,
    /// Seed of the local-work streams and heap keys.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Only these panels (comma-separated: stack, queue, heap (all three sizes), heap-64,
    /// heap-256, heap-1024).
    #[arg(long, value_delimiter = ',')]
    only: Option<Vec<String>>,
    /// Only the key methods (PB and PWF persistent and volatile, Mutex+persist, the Mutex
    /// baseline), not the variants without elimination or recycling nor SegQueue.
    #[arg(long)]
    key_methods: bool,
    /// Tiny runs (1000 pairs per thread, threads 1,2, one repetition): the CI smoke run.
    #[arg(long)]
    quick: bool,
    /// Output directory for the CSV files and charts (one per panel).
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
    let started = std::time::Instant::now();
    let threads = if args.quick {
        vec![1, 2]
    } else {
        args.threads.clone()
    };
    let pairs = args
        .pairs
        .unwrap_or(if args.quick { 1_000 } else { 50_000 });
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 3 });
    if threads.is_empty() || threads.contains(&0) || reps == 0 || pairs == 0 {
        return Err(BenchError::Config(
            "need thread counts (none zero), at least one repetition and one pair".into(),
        ));
    }
    let panels: Vec<Structure> = Structure::ALL
        .into_iter()
        .filter(|s| {
            args.only.as_ref().is_none_or(|o| {
                o.iter()
                    .any(|x| *x == s.name() || (x == "heap" && matches!(s, Structure::Heap(_))))
            })
        })
        .collect();
    if panels.is_empty() {
        return Err(BenchError::Config(format!(
            "no panel matches {:?} (stack, queue, heap, heap-64, heap-256, heap-1024)",
            args.only
        )));
    }
    let machine = Machine::detect()?;
    let topology = topology()?;
    println!(
        "machine: {} CPUs, {} NUMA node(s), {}; code {}",
        machine.cores, machine.numa_nodes, machine.cpu_model, machine.git
    );
    println!(
        "topology: {} ({} node(s), {} CPUs); thread t pinned to cpu_for_thread(t)",
        topology.source(),
        topology.num_nodes(),
        topology.num_cpus()
    );
    println!(
        "structures: {pairs} pairs per thread per run, local work 1..=512 after every op, seed \
         {}; threads {:?} (above {} oversubscribed); median of {reps} (min-max) [every \
         repetition], one warm-up run per method discarded, methods interleaved, order rotated \
         per repetition, a fresh structure every run",
        args.seed, threads, machine.cores
    );
    println!(
        "persistence: mapped files in {} on DRAM, flush = {:?} (no NVMM: flush costs, not NVMM \
         latency)",
        std::env::temp_dir().display(),
        Hardware::new().kind()
    );
    let mut agreement = String::new();
    let mut written = Vec::new();
    for s in panels {
        let panel = s.panel();
        let mut record = Record::new(
            &format!("pcomb-{}", s.name()),
            &machine,
            topology,
            args.seed,
        );
        let methods = s.methods(!args.key_methods);
        println!(
            "\n== {}\n{:<20} {:>3}{:<17} {:>8} (min-max) [reps]  per pair",
            s.name(),
            "method",
            "thr",
            "",
            "Mpairs/s"
        );
        for &t in &threads {
            let out = interleaved(&methods, reps, |m| structure(s, m, t, pairs, args.seed))?;
            for (m, reps) in methods.iter().zip(&out) {
                println!("{}", line(m, t, machine.cores, reps));
                record.add(&panel, m, t, reps);
            }
        }
        let (csv, png) = record.write(&args.out, &format!("median of {reps}"))?;
        written.push(format!("{} and {}", csv.display(), png.display()));
        agreement.push_str(&format!("\n== pcomb-{}\n{}", s.name(), record.agreement()));
    }
    println!(
        "\nRepetition agreement: highest / lowest throughput over the repetitions of each point \
         (every run on a fresh structure; 1.00 = identical)\n{agreement}"
    );
    for w in written {
        println!("wrote {w}");
    }
    println!("\ndone in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
