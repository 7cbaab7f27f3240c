//! Durable NR (issue 20) against a `Mutex` + write-ahead-log baseline and volatile NR, side by
//! side in one run, on a hash map of `--keys` keys (default 10,000): `--mix` write percentages
//! (default 10 and 100), `--threads` (default 1, 2, 4), replicas = min(threads, 2).
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
//! The subjects and the measuring loop are `benches::durable_bench`'s (shared with the
//! `nr_durable` criterion bench). Reports throughput, the ratio to `mutex-wal`, and syncs and log bytes per write. Every store
//! starts from the prefilled map as its initial state (not logged).
//!
//! ```text
//! cargo run --release -p benches --bin durable_nr -- --duration-ms 2000 --dir /var/tmp
//! cargo run -p benches --bin durable_nr -- --smoke
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use benches::durable_bench::{fresh_path, measure_for, open, remove_store, DurableMethod, Kv};
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
        "log directory: {} (file medium, baseline); region: {}",
        dir.display(),
        a.pmem_dir.display()
    );
    println!("| threads | writes | method | kops/s | vs mutex-wal | syncs/write | bytes/write |");
    println!("|---|---|---|---|---|---|---|");
    for &threads in &a.threads {
        let replicas = threads.clamp(1, 2);
        for &mix in &a.mix {
            let mut rows = Vec::new();
            for m in DurableMethod::ALL {
                let path = fresh_path(if m.uses_region() { &a.pmem_dir } else { &dir }, m.name());
                let subject = open(m, replicas, a.keys, &path)?;
                let (ops, writes) = measure_for(&*subject, threads, mix, a.keys, d)?;
                let (syncs, bytes) = subject.log_stats();
                drop(subject);
                remove_store(&path);
                rows.push((
                    m.name(),
                    ops as f64 / d.as_secs_f64() / 1e3,
                    syncs,
                    bytes,
                    writes.max(1),
                ));
            }
            let wal = rows[0].1;
            for (method, kops, syncs, bytes, writes) in rows {
                let per = |x: u64| x as f64 / writes as f64;
                println!(
                    "| {threads} | {mix}% | {method} | {kops:.1} | {:.2}x | {:.3} | {:.1} |",
                    kops / wal,
                    per(syncs),
                    per(bytes)
                );
            }
        }
    }
    if a.recovery > 0 {
        recovery(&dir, a.recovery, a.keys)?;
    }
    Ok(())
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
