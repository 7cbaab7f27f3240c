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
//! Reports throughput, the ratio to `mutex-wal`, and syncs and log bytes per write. Every store
//! starts from the prefilled map as its initial state (not logged).
//!
//! ```text
//! cargo run --release -p benches --bin durable_nr -- --duration-ms 2000 --dir /var/tmp
//! cargo run -p benches --bin durable_nr -- --smoke
//! ```
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use benches::Rng;
use clap::Parser;
use nr_core::{Dispatch, NodeReplicated};
use nr_durable::{Durable, Medium, Store, SyncPolicy};
use serde::{Deserialize, Serialize};

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

/// The map.
#[derive(Default, Serialize, Deserialize)]
struct Kv(HashMap<u64, u64>);

impl Dispatch for Kv {
    type ReadOperation<'a> = u64;
    type WriteOperation = (u64, u64);
    type Response = Option<u64>;
    fn dispatch(&self, k: u64) -> Option<u64> {
        self.0.get(&k).copied()
    }
    fn dispatch_mut(&mut self, (k, v): (u64, u64)) -> Option<u64> {
        self.0.insert(k, v)
    }
}

fn prefilled(keys: u64) -> Kv {
    Kv((0..keys).map(|k| (k, k)).collect())
}

/// One thread's operation: `true` for a write.
type Step<'a> = Box<dyn FnMut(bool, u64, u64) + 'a>;

/// The competitors behind one interface.
trait Subject: Sync {
    /// A thread's operation runner.
    fn worker(&self, thread: usize) -> Step<'_>;
    /// (syncs, log bytes) so far.
    fn log_stats(&self) -> (u64, u64);
}

struct Volatile(NodeReplicated<Kv>);

impl Subject for Volatile {
    fn worker(&self, t: usize) -> Step<'_> {
        let mut h = self.0.register(t % self.0.replicas()).expect("slot");
        Box::new(move |w, k, v| {
            if w {
                h.execute_mut((k, v)).expect("not poisoned");
            } else {
                h.execute(k).expect("not poisoned");
            }
        })
    }
    fn log_stats(&self) -> (u64, u64) {
        (0, 0)
    }
}

struct DurableNr(Durable<Kv>);

impl Subject for DurableNr {
    fn worker(&self, t: usize) -> Step<'_> {
        let mut h = self.0.register(t as u32).expect("thread id");
        Box::new(move |w, k, v| {
            if w {
                h.execute_mut((k, v)).expect("durable write");
            } else {
                h.execute(k).expect("not poisoned");
            }
        })
    }
    fn log_stats(&self) -> (u64, u64) {
        let s = self.0.stats();
        (s.syncs, s.bytes)
    }
}

/// `Mutex<HashMap>` + a write-ahead log synced per operation.
struct MutexWal {
    state: Mutex<(HashMap<u64, u64>, u64)>,
    log: Store<(u64, u64)>,
}

impl Subject for MutexWal {
    fn worker(&self, _: usize) -> Step<'_> {
        Box::new(move |w, k, v| {
            let mut g = self.state.lock().expect("no panic");
            if w {
                let pos = g.1;
                self.log.append(pos, &[&(k, v)]).expect("logged");
                g.1 += 1;
                g.0.insert(k, v);
            } else {
                std::hint::black_box(g.0.get(&k));
            }
        })
    }
    fn log_stats(&self) -> (u64, u64) {
        let s = self.log.stats();
        (s.syncs, s.bytes)
    }
}

/// Runs `threads` threads for `d`; returns (operations, writes).
fn measure(s: &dyn Subject, threads: usize, writes_pct: u64, keys: u64, d: Duration) -> (u64, u64) {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start) = (&stop, &start);
                scope.spawn(move || {
                    let mut step = s.worker(t);
                    let mut rng = Rng::new(0x5EED, t as u64);
                    let (mut ops, mut writes) = (0u64, 0u64);
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let w = rng.below(100) < writes_pct;
                        step(w, rng.below(keys), ops);
                        ops += 1;
                        writes += u64::from(w);
                    }
                    (ops, writes)
                })
            })
            .collect();
        start.wait();
        std::thread::sleep(d);
        stop.store(true, Ordering::Relaxed);
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(format!("durable-nr-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
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
            for method in ["mutex-wal", "volatile-nr", "durable-file", "durable-pmem"] {
                let path = fresh(
                    if method == "durable-pmem" {
                        &a.pmem_dir
                    } else {
                        &dir
                    },
                    method,
                );
                let subject: Box<dyn Subject> = match method {
                    "volatile-nr" => Box::new(Volatile(
                        NodeReplicated::builder()
                            .replicas(replicas)
                            .build(|_| prefilled(a.keys))?,
                    )),
                    "durable-file" => Box::new(DurableNr(
                        Durable::builder()
                            .replicas(replicas)
                            .medium(Medium::File { dir: path.clone() })
                            .open(|| prefilled(a.keys))?,
                    )),
                    "durable-pmem" => Box::new(DurableNr(
                        Durable::builder()
                            .replicas(replicas)
                            .medium(Medium::Pmem {
                                path: path.clone(),
                                capacity: 64 << 20,
                            })
                            .open(|| prefilled(a.keys))?,
                    )),
                    _ => {
                        let (log, _) = Store::open::<()>(
                            &Medium::File { dir: path.clone() },
                            SyncPolicy::EveryBatch,
                        )?;
                        Box::new(MutexWal {
                            state: Mutex::new((prefilled(a.keys).0, 0)),
                            log,
                        })
                    }
                };
                let (ops, writes) = measure(&*subject, threads, mix, a.keys, d);
                let (syncs, bytes) = subject.log_stats();
                drop(subject);
                let _ = std::fs::remove_dir_all(&path);
                let _ = std::fs::remove_file(&path);
                // Snapshots of the pmem medium sit beside the region file.
                if let Ok(rd) = std::fs::read_dir(path.parent().unwrap_or(Path::new("."))) {
                    let stem = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    for e in rd.flatten() {
                        if e.file_name()
                            .to_string_lossy()
                            .starts_with(&format!("{stem}.snap-"))
                        {
                            let _ = std::fs::remove_file(e.path());
                        }
                    }
                }
                rows.push((
                    method,
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
    let path = fresh(dir, "recovery");
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
