//! The paper's AtomicFloat benchmark (PPoPP'22 §6, Figures 1-3), side by side and repeated.
//!
//! Every thread repeatedly applies `v := v * k` (returning the old value), with a local-work loop
//! of a random 1..=512 iterations between operations: the authors' generator and volatile loop
//! (`benches::pcomb_bench::LocalWork`; `--seed 0` draws the C benchmark's counts). Methods:
//! PBcomb, PBcomb1 (the self-naming record), PWFcomb and PWFcomb1 (stamped records) persistent
//! (a mapped file, `Hardware` flushes), PBcomb and PWFcomb volatile, a `Mutex`, and
//! `Mutex+persist` (pwb + psync after each update: durable, not detectable). Every run builds a
//! fresh object; at each thread count every method runs once unmeasured, then `--reps` rounds
//! with the methods interleaved and their order rotated. `--work-only` times the local work
//! loop alone (nanoseconds per call). Thread `t` is pinned to the topology's
//! `cpu_for_thread(t)`, as in the runner. Reports the median Mops/s (min-max, every repetition)
//! and pwbs/pfences/psyncs per operation, writes `pcomb-atomicfloat.csv` (the runner's columns,
//! every setting and the git hash on each row, then the flushes per operation) and
//! `pcomb-atomicfloat.png` to `--out`, and prints the repetition-agreement table.
//!
//! ```text
//! cargo run --release -p benches --bin pcomb_atomic_float -- --threads 1,2,4 --reps 3 --out docs/results
//! cargo run -p benches --bin pcomb_atomic_float -- --quick      # CI smoke
//! ```

use std::path::PathBuf;

use benches::pcomb_bench::record::Record;
use benches::pcomb_bench::{
    atomic_float, float_panel, interleaved, line, local_work_ns, median, topology, FloatMethod,
    MAX_WORK,
};
use benches::report::Machine;
use benches::BenchError;
use clap::Parser;
use nr_core::pin_current_thread;
use pcomb::pmem::Hardware;

/// PBcomb/PWFcomb AtomicFloat benchmark (PPoPP'22 Figures 1-3): methods side by side,
/// interleaved and repeated; median Mops/s and flushes per operation.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Thread counts (comma-separated); counts above the CPUs run oversubscribed, and say so.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Operations per thread in each run [default: 250000; quick: 5000].
    #[arg(long)]
    ops: Option<u64>,
    /// Repetitions of every point (median and min-max are reported) [default: 3; quick: 1].
    #[arg(long)]
    reps: Option<usize>,
    /// Seed of the per-thread local-work streams.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Only these methods (comma-separated, case-insensitive: PBcomb, PBcomb1, PWFcomb, PWFcomb1,
    /// PBcomb-volatile, PWFcomb-volatile, Mutex, Mutex+persist).
    #[arg(long, value_delimiter = ',')]
    methods: Option<Vec<String>>,
    /// Tiny runs (5000 operations per thread, threads 1,2, one repetition): the CI smoke run.
    #[arg(long)]
    quick: bool,
    /// Time the local work alone (no operation): `--ops` calls of the work loop per
    /// repetition on one thread; prints nanoseconds per call and exits.
    #[arg(long)]
    work_only: bool,
    /// Output directory for the CSV file and the chart.
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
    let ops = args.ops.unwrap_or(if args.quick { 5_000 } else { 250_000 });
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 3 });
    if threads.is_empty() || threads.contains(&0) || reps == 0 || ops == 0 {
        return Err(BenchError::Config(
            "need thread counts (none zero), at least one repetition and one operation".into(),
        ));
    }
    if args.work_only {
        pin_current_thread(&[topology()?.cpu_for_thread(0)])?;
        let ns: Vec<f64> = (0..reps).map(|_| local_work_ns(args.seed, ops)).collect();
        let (m, lo, hi) = median(&ns);
        let all: Vec<String> = ns.iter().map(|x| format!("{x:.1}")).collect();
        println!(
            "local work alone (Rust): {ops} calls, 1..={MAX_WORK} iterations, seed {}: \
             {m:.1} ns per call ({lo:.1}-{hi:.1}) [{}]",
            args.seed,
            all.join(" ")
        );
        return Ok(());
    }
    let methods: Vec<FloatMethod> = FloatMethod::ALL
        .into_iter()
        .filter(|m| {
            args.methods
                .as_ref()
                .is_none_or(|l| l.iter().any(|x| x.eq_ignore_ascii_case(m.name())))
        })
        .collect();
    if methods.is_empty() {
        return Err(BenchError::Config(format!(
            "no method matches {:?}",
            args.methods
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
        "AtomicFloat: {ops} ops per thread per run, local work 1..=512 (the authors' loop), seed {}; threads {:?} \
         (above {} oversubscribed); median of {reps} (min-max) [every repetition], one warm-up \
         run per method discarded, methods interleaved, order rotated per repetition",
        args.seed, threads, machine.cores
    );
    println!(
        "persistence: mapped file in {} on DRAM, flush = {:?} (no NVMM: flush costs, not NVMM \
         latency)\n",
        std::env::temp_dir().display(),
        Hardware::new().kind()
    );
    println!(
        "{:<20} {:>3}{:<17} {:>8} (min-max) [reps]  per op",
        "method", "thr", "", "Mops/s"
    );
    let panel = float_panel();
    let mut record = Record::new("pcomb-atomicfloat", &machine, topology, args.seed);
    for &t in &threads {
        let out = interleaved(&methods, reps, |m| atomic_float(m, t, ops, args.seed))?;
        for (m, reps) in methods.iter().zip(&out) {
            println!("{}", line(m.name(), t, machine.cores, reps));
            record.add(&panel, m.name(), t, reps);
        }
    }
    let (csv, png) = record.write(&args.out, &format!("median of {reps}"))?;
    println!(
        "\nRepetition agreement: highest / lowest throughput over the repetitions of each point \
         (every run on a fresh object; 1.00 = identical)\n{}",
        record.agreement()
    );
    println!("wrote {} and {}", csv.display(), png.display());
    println!("\ndone in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
