//! NR's options beyond the basic algorithm, each measured against NR without it, side by side in
//! one run, on the hash map of `BENCHMARKS.md` (10k keys):
//!
//! - `--scenario min-batch` (default): the §5.2 `MIN_BATCH` wait (`nr_core::Builder::min_batch`),
//!   0/10/100% writes, 1 and 2 replicas, 2 and 4 threads;
//! - `--scenario log-growth`: §6 log growth (`nr_core::Builder::log_growth`) on a full-log
//!   workload: a small log, 2-3 replicas, writer threads (100% writes) on every replica but the
//!   last, whose only thread is *lagging*: it reads once every `--lag-us` microseconds, so the
//!   log fills behind it; reports the writers' throughput and the log size at the end;
//! - `--scenario dedicated`: a dedicated combiner per node (`nr_core::Builder::dedicated_combiners`,
//!   one extra thread per replica running `NodeReplicated::run_combiner`) against NR where
//!   posting threads combine; 10/100% writes, 1 and 2 replicas, 2 and 4 posting threads.
//!
//! Every point runs both variants in turn, repetition after repetition (the order alternates
//! from one repetition to the next), and reports the median and min-max of each and the median
//! of the per-repetition ratios `on / off`.
//!
//! ```text
//! cargo run --release -p benches --bin nr_options -- --reps 5 --duration-ms 1000
//! cargo run --release -p benches --bin nr_options -- --min-batch 3 --wait-us 50 --threads 4
//! cargo run --release -p benches --bin nr_options -- --scenario log-growth --reps 5
//! cargo run --release -p benches --bin nr_options -- --scenario dedicated --reps 5
//! cargo run --release -p benches --bin nr_options -- --smoke
//! ```

// The full-log scenario drives its own threads (a lagging reader beside the writers), as the
// crate's other binaries do: the std-only shim rule of clippy.toml is for the library.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use benches::report::{spread, Machine};
use benches::{
    Bench, BenchError, HashMapWorkload, Method, Op, Prepared, Replicas, Rng, Setup, Workload,
};
use clap::{Parser, ValueEnum};
use nr_core::{Dispatch, NodeReplicated, ThreadHandle, Topology};

/// Which option to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scenario {
    /// §5.2 MIN_BATCH (`Builder::min_batch`).
    MinBatch,
    /// §6 log growth (`Builder::log_growth`) on a full-log workload with a lagging replica.
    LogGrowth,
    /// A dedicated combiner per node (`Builder::dedicated_combiners`).
    Dedicated,
}

/// NR with and without one of its options, side by side on the hash map.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The option to measure.
    #[arg(long, value_enum, default_value = "min-batch")]
    scenario: Scenario,
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
    /// log-growth: writer thread counts (comma-separated), spread over all replicas but the last.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    writers: Vec<usize>,
    /// log-growth: replica counts (comma-separated, at least 2; the last replica lags).
    #[arg(long, value_delimiter = ',', default_value = "2,3")]
    growth_replicas: Vec<usize>,
    /// log-growth: initial log sizes (comma-separated powers of two).
    #[arg(long, value_delimiter = ',', default_value = "64,1024")]
    log_sizes: Vec<usize>,
    /// log-growth: the largest log size of the `on` variant.
    #[arg(long, default_value_t = 1 << 22)]
    max_log: usize,
    /// log-growth: the lagging thread reads once every this many microseconds.
    #[arg(long, default_value_t = 1_000)]
    lag_us: u64,
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
        // The smoke run keeps every scenario working.
        log_growth(&a)?;
        println!();
        dedicated(&a)?;
        println!();
    } else if a.scenario == Scenario::LogGrowth {
        return log_growth(&a);
    } else if a.scenario == Scenario::Dedicated {
        return dedicated(&a);
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

/// One point of the full-log workload.
#[derive(Debug, Clone, Copy)]
struct FullLog {
    replicas: usize,
    writers: usize,
    log: usize,
    max_log: usize,
    keys: u64,
    lag: Duration,
    duration: Duration,
    seed: u64,
}

/// One full-log run: `writers` threads write (100% `Put`s) through replicas `0..replicas - 1`
/// for `duration`; one thread on the last replica reads once every `lag`. Returns the writers'
/// throughput (Mops/s) and the log size at the end.
fn full_log_run(
    w: &HashMapWorkload,
    cpus: &[usize],
    p: FullLog,
) -> Result<(f64, usize), BenchError> {
    let FullLog {
        replicas,
        writers,
        log,
        max_log,
        keys,
        lag,
        duration,
        seed,
    } = p;
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .log_size(log)
        .log_growth(max_log)
        .threads_per_replica(writers + 1)
        .build(|_| {
            let mut d = w.make();
            for op in w.prefill() {
                d.dispatch_mut(op);
            }
            d
        })?;
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let start = Barrier::new(writers + 2);
    let elapsed = std::thread::scope(|s| -> Result<Duration, BenchError> {
        let mut workers = Vec::new();
        for t in 0..writers {
            let (nr, stop, ops, start) = (&nr, &stop, &ops, &start);
            let cpu = cpus[t % cpus.len()];
            workers.push(s.spawn(move || -> Result<(), BenchError> {
                nr_core::pin_current_thread(&[cpu])?;
                let mut h = nr.register(t % (replicas - 1))?;
                let mut rng = Rng::new(seed, t as u64);
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        if let Op::Write(op) = w.next_op(&mut rng) {
                            h.execute_mut(op).map_err(|_| BenchError::Poisoned)?;
                        }
                    }
                    n += 64;
                }
                ops.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }));
        }
        let (nr, stop, start) = (&nr, &stop, &start);
        let cpu = cpus[writers % cpus.len()];
        workers.push(s.spawn(move || -> Result<(), BenchError> {
            nr_core::pin_current_thread(&[cpu])?;
            let mut h = nr.register(replicas - 1)?;
            let mut rng = Rng::new(seed, u64::MAX);
            start.wait();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(lag);
                let key = rng.below(keys);
                h.execute(w.read_op(&key))
                    .map_err(|_| BenchError::Poisoned)?;
            }
            Ok(())
        }));
        start.wait();
        let began = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        for worker in workers {
            worker.join().map_err(|_| BenchError::ThreadPanicked)??;
        }
        Ok(began.elapsed())
    })?;
    let mops = ops.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64() / 1e6;
    Ok((mops, nr.log_size()))
}

/// `--scenario log-growth`: NR without and with `Builder::log_growth`, side by side.
fn log_growth(a: &Args) -> Result<(), BenchError> {
    if a.reps == 0
        || a.writers.contains(&0)
        || a.growth_replicas.iter().any(|&r| r < 2)
        || a.log_sizes
            .iter()
            .any(|&l| !l.is_power_of_two() || l > a.max_log)
    {
        return Err(BenchError::Config(
            "reps and writers >= 1, replicas >= 2, log sizes powers of two <= --max-log".into(),
        ));
    }
    let m = Machine::detect()?;
    let cpus = nr_core::allowed_cpus()?;
    let duration = Duration::from_millis(a.duration_ms);
    let lag = Duration::from_micros(a.lag_us);
    let w = HashMapWorkload::new(a.keys, 100);
    println!(
        "machine: {} CPUs, {} NUMA node(s), {}; code {}",
        m.cores, m.numa_nodes, m.cpu_model, m.git
    );
    println!(
        "log growth: hash map {} keys, 100% Puts by the writers on replicas 0..N-1 (thread t on \
         replica t % (N-1)), one thread on replica N-1 reading once every {} us; NR vs NR-grow \
         (log_growth up to {} entries); threads pinned round-robin over {} CPUs; {} ms x {} \
         reps per point, interleaved; seed {}",
        a.keys,
        a.lag_us,
        a.max_log,
        cpus.len(),
        a.duration_ms,
        a.reps,
        a.seed
    );
    println!();
    println!(
        "| replicas | writers | log | NR Mops/s (min-max) | NR-grow Mops/s (min-max) | NR-grow / NR (min-max) | NR-grow log at the end |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &replicas in &a.growth_replicas {
        for &writers in &a.writers {
            for &log in &a.log_sizes {
                let (mut offs, mut ons, mut ratios, mut sizes) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for rep in 0..a.reps {
                    let mut mops = [0.0; 2];
                    for k in 0..2 {
                        let i = (k + rep) % 2;
                        let max = if i == 0 { log } else { a.max_log };
                        let point = FullLog {
                            replicas,
                            writers,
                            log,
                            max_log: max,
                            keys: a.keys,
                            lag,
                            duration,
                            seed: a.seed,
                        };
                        let (v, size) = full_log_run(&w, &cpus, point)?;
                        mops[i] = v;
                        if i == 1 {
                            sizes.push(size);
                        }
                    }
                    offs.push(mops[0]);
                    ons.push(mops[1]);
                    ratios.push(mops[1] / mops[0]);
                }
                let cell = |v: &[f64]| match spread(v) {
                    Some((med, lo, hi)) => format!("{med:.2} ({lo:.2}-{hi:.2})"),
                    None => "-".into(),
                };
                sizes.sort_unstable();
                println!(
                    "| {replicas} | {writers} | {log} | {} | {} | {} | {} |",
                    cell(&offs),
                    cell(&ons),
                    cell(&ratios),
                    sizes
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
    Ok(())
}

/// One run of the dedicated-combiner scenario: `threads` posting threads (thread t on replica
/// t % replicas) run the hash-map mix for `duration`, with one dedicated combiner thread per
/// replica when `on`. Returns the posting threads' throughput (Mops/s).
fn dedicated_run(
    w: &HashMapWorkload,
    cpus: &[usize],
    replicas: usize,
    threads: usize,
    on: bool,
    duration: Duration,
    seed: u64,
) -> Result<f64, BenchError> {
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .threads_per_replica(threads)
        .dedicated_combiners(on)
        .build(|_| {
            let mut d = w.make();
            for op in w.prefill() {
                d.dispatch_mut(op);
            }
            d
        })?;
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let start = Barrier::new(threads + 1);
    let elapsed = std::thread::scope(|s| -> Result<Duration, BenchError> {
        let mut combiners = Vec::new();
        for r in 0..if on { replicas } else { 0 } {
            let (nr, done) = (&nr, &done);
            let cpu = cpus[(threads + r) % cpus.len()];
            combiners.push(s.spawn(move || -> Result<(), BenchError> {
                nr_core::pin_current_thread(&[cpu])?;
                nr.run_combiner(r, || done.load(Ordering::Relaxed))?;
                Ok(())
            }));
        }
        let mut workers = Vec::new();
        for t in 0..threads {
            let (nr, stop, ops, start) = (&nr, &stop, &ops, &start);
            let cpu = cpus[t % cpus.len()];
            workers.push(s.spawn(move || -> Result<(), BenchError> {
                nr_core::pin_current_thread(&[cpu])?;
                let mut h = nr.register(t % replicas)?;
                let mut rng = Rng::new(seed, t as u64);
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        match w.next_op(&mut rng) {
                            Op::Write(op) => {
                                h.execute_mut(op).map_err(|_| BenchError::Poisoned)?;
                            }
                            Op::Read(key) => {
                                h.execute(w.read_op(&key))
                                    .map_err(|_| BenchError::Poisoned)?;
                            }
                        }
                    }
                    n += 64;
                }
                ops.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }));
        }
        start.wait();
        let began = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        for worker in workers {
            let r = worker.join().map_err(|_| BenchError::ThreadPanicked)?;
            result = result.and(r);
        }
        let elapsed = began.elapsed();
        done.store(true, Ordering::Relaxed);
        for c in combiners {
            c.join().map_err(|_| BenchError::ThreadPanicked)??;
        }
        result.map(|()| elapsed)
    })?;
    Ok(ops.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64() / 1e6)
}

/// `--scenario dedicated`: NR without and with a dedicated combiner per replica, side by side.
fn dedicated(a: &Args) -> Result<(), BenchError> {
    if a.reps == 0 || a.threads.contains(&0) || a.replicas.contains(&0) {
        return Err(BenchError::Config(
            "reps, threads and replicas must be >= 1".into(),
        ));
    }
    let m = Machine::detect()?;
    let cpus = nr_core::allowed_cpus()?;
    let duration = Duration::from_millis(a.duration_ms);
    println!(
        "machine: {} CPUs, {} NUMA node(s), {}; code {}",
        m.cores, m.numa_nodes, m.cpu_model, m.git
    );
    println!(
        "dedicated combiners: hash map {} keys, uniform keys; thread t on replica t % N; NR vs \
         NR-ded (one more thread per replica running run_combiner); threads pinned round-robin \
         over {} CPUs (combiners after the posting threads); {} ms x {} reps per point, \
         interleaved; seed {}",
        a.keys,
        cpus.len(),
        a.duration_ms,
        a.reps,
        a.seed
    );
    println!();
    println!(
        "| replicas | posting threads | writes | NR Mops/s (min-max) | NR-ded Mops/s (min-max) | NR-ded / NR (min-max) |"
    );
    println!("|---|---|---|---|---|---|");
    for &replicas in &a.replicas {
        for &mix in a.mix.iter().filter(|&&m| m > 0) {
            let w = HashMapWorkload::new(a.keys, mix);
            for &threads in &a.threads {
                let (mut offs, mut ons, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
                for rep in 0..a.reps {
                    let mut mops = [0.0; 2];
                    for k in 0..2 {
                        let i = (k + rep) % 2;
                        mops[i] =
                            dedicated_run(&w, &cpus, replicas, threads, i == 1, duration, a.seed)?;
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
