//! NR's options beyond the basic algorithm, each measured against NR without it, side by side in
//! one run: for now the §5.2 `MIN_BATCH` wait (`nr_core::Builder::min_batch`) on the hash map
//! of `BENCHMARKS.md` (10k keys, 0/10/100% writes), 1 and 2 replicas, 2 and 4 threads.
//!
//! Every point runs both variants in turn, repetition after repetition (the order alternates
//! from one repetition to the next), and reports the median and min-max of each and the median
//! of the per-repetition ratios `on / off`.
//!
//! ```text
//! cargo run --release -p benches --bin nr_options -- --reps 5 --duration-ms 1000
//! cargo run --release -p benches --bin nr_options -- --min-batch 3 --wait-us 50 --threads 4
//! cargo run --release -p benches --bin nr_options -- --smoke
//! ```

use std::sync::OnceLock;
use std::time::Duration;

use benches::report::{spread, Machine};
use benches::{Bench, BenchError, HashMapWorkload, Method, Prepared, Replicas, Setup, Workload};
use clap::Parser;
use nr_core::{Dispatch, NodeReplicated, ThreadHandle, Topology};

/// NR with and without the §5.2 MIN_BATCH wait, side by side on the hash map.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Thread counts (comma-separated); counts above the CPUs run oversubscribed, and say so.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    threads: Vec<usize>,
    /// Replica counts (comma-separated); thread t uses replica t % N.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    replicas: Vec<usize>,
    /// Write percentages (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0,10,100")]
    mix: Vec<u32>,
    /// Keys in the hash map.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// MIN_BATCH of the `on` variant: the batch size a combiner waits for.
    #[arg(long, default_value_t = 2)]
    min_batch: usize,
    /// The longest a combiner waits for that batch, in microseconds.
    #[arg(long, default_value_t = 20)]
    wait_us: u64,
    /// Repetitions per point (the median is reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Duration of one measurement, in milliseconds.
    #[arg(long, default_value_t = 500)]
    duration_ms: u64,
    /// Seed of the operation streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tiny run (1 repetition of 20 ms, 1k keys) so that CI keeps the binary working.
    #[arg(long)]
    smoke: bool,
}

/// `MIN_BATCH` and its wait bound for [`NrOption`] with `ON = true`, set once from the arguments.
static MIN_BATCH: OnceLock<(usize, Duration)> = OnceLock::new();

/// NR with unplaced replicas, built with `Builder::min_batch` (the arguments' `--min-batch`,
/// `--wait-us`) when `ON`: `NR-mb`, else `NR`. Both variants are this one type, so that they
/// differ in the option only, not in where their code was compiled (the `benches` crate's own
/// `Nr`, compiled in another crate, ran 1.15-1.35x slower than this type at 0% writes, where the
/// option never runs: a code-placement effect, not NR's).
struct NrOption<D: Dispatch + Send + Sync, const ON: bool> {
    nr: NodeReplicated<D>,
}

impl<D: Dispatch + Send + Sync, const ON: bool> Method<D> for NrOption<D, ON> {
    const NAME: &'static str = if ON { "NR-mb" } else { "NR" };
    type Handle<'a>
        = ThreadHandle<'a, D>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        let Replicas::Exactly(n) = setup.replicas else {
            return Err(BenchError::Config(
                "NR-mb needs an explicit replica count".into(),
            ));
        };
        let &(min_batch, wait) = MIN_BATCH
            .get()
            .ok_or_else(|| BenchError::Config("MIN_BATCH not set".into()))?;
        let mut builder = NodeReplicated::builder()
            .threads_per_replica(setup.threads.max(1))
            .replicas(n);
        if ON {
            builder = builder.min_batch(min_batch, wait);
        }
        let nr = builder.build(|_| setup.fresh())?;
        Ok(Self { nr })
    }

    fn handle(&self, thread: usize, _threads: usize) -> Result<ThreadHandle<'_, D>, BenchError> {
        Ok(self.nr.register(thread % self.nr.replicas())?)
    }

    fn replicas(&self, _threads: usize) -> usize {
        self.nr.replicas()
    }
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(mut a: Args) -> Result<(), BenchError> {
    if a.smoke {
        (a.reps, a.duration_ms, a.keys) = (1, 20, 1_000);
    }
    if a.reps == 0 || a.threads.contains(&0) || a.replicas.contains(&0) {
        return Err(BenchError::Config(
            "reps, threads and replicas must be >= 1".into(),
        ));
    }
    let wait = Duration::from_micros(a.wait_us);
    MIN_BATCH
        .set((a.min_batch, wait))
        .map_err(|_| BenchError::Config("MIN_BATCH set twice".into()))?;
    let m = Machine::detect()?;
    let topology = Topology::detect()?;
    let max_threads = a.threads.iter().copied().max().unwrap_or(1);
    let duration = Duration::from_millis(a.duration_ms);
    println!(
        "machine: {} CPUs, {} NUMA node(s), {}; code {}",
        m.cores, m.numa_nodes, m.cpu_model, m.git
    );
    println!(
        "topology: {} node(s) (threads pinned round-robin over its CPUs); replicas unplaced, \
         thread t on replica t % N; persistence backend: DRAM",
        topology.num_nodes()
    );
    println!(
        "hash map {} keys, uniform keys; NR vs NR-mb (min_batch {}, wait {} us); {} ms x {} \
         reps per point, interleaved; seed {}",
        a.keys, a.min_batch, a.wait_us, a.duration_ms, a.reps, a.seed
    );
    if max_threads > m.cores {
        println!(
            "note: up to {max_threads} threads on {} CPUs: oversubscribed",
            m.cores
        );
    }
    println!();
    println!(
        "| replicas | threads | writes | NR Mops/s (min-max) | NR-mb Mops/s (min-max) | NR-mb / NR (min-max) |"
    );
    println!("|---|---|---|---|---|---|");
    for &replicas in &a.replicas {
        for &mix in &a.mix {
            let workload = HashMapWorkload::new(a.keys, mix);
            let p = Prepared::new(
                workload,
                topology.clone(),
                Replicas::Exactly(replicas),
                max_threads,
            );
            let off = p.bind::<NrOption<<HashMapWorkload as Workload>::D, false>>()?;
            let on = p.bind::<NrOption<<HashMapWorkload as Workload>::D, true>>()?;
            let methods: [&dyn Bench; 2] = [&off, &on];
            for &threads in &a.threads {
                let (mut offs, mut ons, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
                for rep in 0..a.reps {
                    let mut mops = [0.0; 2];
                    // Alternate which variant goes first, so neither always runs on a warmer
                    // (or a more disturbed) machine.
                    for k in 0..2 {
                        let i = (k + rep) % 2;
                        mops[i] = methods[i].run_for(threads, duration, a.seed)?.mops();
                    }
                    offs.push(mops[0]);
                    ons.push(mops[1]);
                    ratios.push(mops[1] / mops[0]);
                }
                let cell = |v: &[f64]| match spread(v) {
                    Some((med, lo, hi)) => format!("{med:.2} ({lo:.2}-{hi:.2})"),
                    None => "-".into(),
                };
                println!(
                    "| {replicas} | {threads} | {mix}% | {} | {} | {} |",
                    cell(&offs),
                    cell(&ons),
                    cell(&ratios)
                );
            }
        }
    }
    Ok(())
}
