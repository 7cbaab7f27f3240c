//! Durable NR (issue 20) against a `Mutex` + write-ahead-log baseline and volatile NR, side by
//! side in one run, on a hash map of `--keys` keys (default 10,000): `--mix` write percentages
//! (default 10 and 100), `--threads` (default 1, 2, 4), replicas = min(threads, 2) (or
//! `--replicas`).
//!
//! - `volatile-nr`: nr-core, no log;
//! - `durable-file`: nr-durable, file medium, `SyncPolicy::EveryBatch` (one `write` + one
//!   `fdatasync` per group commit), in `--dir`;
//! - `durable-pmem`: nr-durable, region medium (a mapped file in `--pmem-dir`, default
//!   `/dev/shm`: no persistent memory here, so its write-backs and fences are real but durable
//!   only as far as the page cache is);
//! - `mutex-wal`: `Mutex<HashMap>` whose writes append their entry to an nr-durable `Store`
//!   (same entry format) and `fdatasync` it, one write and one sync per operation, under the lock.
//!
//! A second table puts `pcomb`'s persistent `PBComb` beside nr-durable on a map that `pcomb`
//! can hold (a `Pod` array of 64 or 10,000 slots; see `benches::durable_bench`).
//!
//! The subjects and the measuring loop are `benches::durable_bench`'s (shared with the
//! `nr_durable` criterion bench). Reports throughput (the median of `--reps` interleaved rounds),
//! the ratio to the table's first method, and syncs and log bytes per write (pcomb: `psync`s +
//! `pfence`s, and bytes written back). Every store starts from the prefilled map as its initial
//! state (not logged).
//!
//! ```text
//! cargo run --release -p benches --bin durable_nr -- --duration-ms 2000 --reps 3 --dir /var/tmp
//! cargo run -p benches --bin durable_nr -- --smoke
//! # instructions per operation: two runs with different --ops under callgrind, subtracted
//! valgrind --tool=callgrind target/release/durable_nr --threads 2 --mix 10 \
//!     --methods durable-pmem --ops 20000 --recovery 0
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benches::durable_bench::{
    fresh_path, measure_for, open_with_replicas, remove_store, run_ops, DurableMethod, Kv,
};
use clap::Parser;
use nr_durable::{Durable, Medium, SyncPolicy};

/// Durable NR against a Mutex + WAL baseline and volatile NR.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Thread counts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Write percentages (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    mix: Vec<u64>,
    /// Keys in the map.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Duration of one measurement, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
    /// Directory for the file medium and the baseline's log (a fresh subdirectory per run).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Directory for the region file of the pmem medium.
    #[arg(long, default_value = "/dev/shm")]
    pmem_dir: PathBuf,
    /// Also time the recovery of this many logged writes (file medium, no snapshot: the log is
    /// replayed entirely), written under `SyncPolicy::Every(1 s)` to be quick; 0: skip.
    #[arg(long, default_value_t = 1_000_000)]
    recovery: u64,
    /// Only these methods (comma-separated names, as in the table); default: all.
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Repetitions: every rep runs each method once, in turn (interleaved); the table shows the
    /// median kops/s of each method and the ratio of the medians.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Run this many operations per thread instead of `--duration-ms` (a fixed amount of work,
    /// for instruction counts under `valgrind --tool=callgrind`: the difference of two runs
    /// with different `--ops` divided by the extra operations is the cost per operation).
    #[arg(long)]
    ops: Option<u64>,
    /// Replicas of the NR methods (volatile and durable alike); default: min(threads, 2). 1 is
    /// what a one-node machine's topology gives.
    #[arg(long)]
    replicas: Option<usize>,
    /// Tiny run (20 ms, 1k keys, 1-2 threads) so that CI keeps the binary working.
    #[arg(long)]
    smoke: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut a = Args::parse();
    if a.smoke {
        a.threads = vec![1, 2];
        a.keys = 1000;
        a.duration_ms = 20;
        a.recovery = 1000;
    }
    let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let d = Duration::from_millis(a.duration_ms);
    println!(
        "log directory: {} (file medium, baseline); region: {}; replicas: {}",
        dir.display(),
        a.pmem_dir.display(),
        a.replicas
            .map_or_else(|| "min(threads, 2)".to_owned(), |r| r.to_string())
    );
    // The hash-map methods, then those on the `Pod` map that pcomb fits (a table each, each
    // row's ratio to the first row of its table).
    let groups: Vec<Vec<DurableMethod>> = [&DurableMethod::ALL[..], &DurableMethod::POD[..]]
        .into_iter()
        .map(|g| {
            g.iter()
                .copied()
                .filter(|m| a.methods.is_empty() || a.methods.iter().any(|n| n == m.name()))
                .collect::<Vec<_>>()
        })
        .filter(|g| !g.is_empty())
        .collect();
    if groups.is_empty() {
        return Err(format!("no method named in --methods {:?}", a.methods).into());
    }
    for methods in &groups {
        println!(
            "\n| threads | writes | method | kops/s | vs {} | syncs/write | bytes/write |",
            methods[0].name()
        );
        println!("|---|---|---|---|---|---|---|");
        for &threads in &a.threads {
            for &mix in &a.mix {
                table(&a, methods, threads, mix, &dir, d)?;
            }
        }
    }
    if a.recovery > 0 {
        recovery(&dir, a.recovery, a.keys)?;
    }
    Ok(())
}

/// One table's rows at `threads` threads and `mix`% writes: `--reps` rounds, each running every
/// method once in turn; prints each method's median kops/s, its ratio to the first method's, and
/// the syncs and log bytes per write of its last round.
fn table(
    a: &Args,
    methods: &[DurableMethod],
    threads: usize,
    mix: u64,
    dir: &Path,
    d: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    // rows[method] = (kops/s of each round, syncs, bytes, writes of the last round).
    let mut rows: Vec<(Vec<f64>, u64, u64, u64)> =
        methods.iter().map(|_| (Vec::new(), 0, 0, 1)).collect();
    for _ in 0..a.reps.max(1) {
        for (m, row) in methods.iter().zip(&mut rows) {
            let path = fresh_path(if m.uses_region() { &a.pmem_dir } else { dir }, m.name());
            let replicas = a.replicas.unwrap_or(threads.clamp(1, 2));
            let subject = open_with_replicas(*m, threads, replicas, a.keys, &path)?;
            let (ops, writes, took) = match a.ops {
                Some(n) => {
                    let took = run_ops(&*subject, threads, mix, a.keys, n)?;
                    // Approximate: the streams draw writes with probability `mix`%.
                    let writes = (n * threads as u64 * mix).div_ceil(100);
                    (n * threads as u64, writes, took)
                }
                None => {
                    let (ops, writes) = measure_for(&*subject, threads, mix, a.keys, d)?;
                    (ops, writes, d)
                }
            };
            let (syncs, bytes) = subject.log_stats();
            drop(subject);
            remove_store(&path);
            row.0.push(ops as f64 / took.as_secs_f64() / 1e3);
            (row.1, row.2, row.3) = (syncs, bytes, writes.max(1));
        }
    }
    let medians: Vec<f64> = rows.iter_mut().map(|r| median(&mut r.0)).collect();
    for ((m, (_, syncs, bytes, writes)), kops) in methods.iter().zip(&rows).zip(&medians) {
        let per = |x: u64| x as f64 / *writes as f64;
        println!(
            "| {threads} | {mix}% | {} | {kops:.1} | {:.2}x | {:.3} | {:.1} |",
            m.name(),
            kops / medians[0],
            per(*syncs),
            per(*bytes)
        );
    }
    Ok(())
}

/// The median of `xs` (sorted in place; 0 when empty).
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// Writes `n` logged puts, closes the store, and times its reopening.
fn recovery(dir: &Path, n: u64, keys: u64) -> Result<(), Box<dyn std::error::Error>> {
    let path = fresh_path(dir, "recovery");
    let medium = Medium::File { dir: path.clone() };
    {
        let kv = Durable::<Kv>::builder()
            .medium(medium.clone())
            .sync(SyncPolicy::Every(Duration::from_secs(1)))
            .open(Kv::default)?;
        let mut h = kv.register(0)?;
        for i in 0..n {
            h.execute_mut((i % keys, i))?;
        }
    }
    let start = Instant::now();
    let kv = Durable::<Kv>::builder().medium(medium).open(Kv::default)?;
    let took = start.elapsed();
    println!(
        "recovery: {} logged writes replayed in {:.3} s ({} keys)",
        kv.recovered_writes(),
        took.as_secs_f64(),
        keys
    );
    drop(kv);
    let _ = std::fs::remove_dir_all(&path);
    Ok(())
}
