//! The durable-NR benchmarks (issue 20): durable NR against a `Mutex` + write-ahead-log baseline
//! and volatile NR on a hash map, shared by the `durable_nr` binary (duration-based rows, syncs
//! and bytes per write) and the `nr_durable` criterion bench (groups `nr-durable-10` and
//! `nr-durable-100`, scaling charts).
//!
//! The methods ([`DurableMethod`]):
//!
//! - `mutex-wal`: `Mutex<HashMap>` whose writes append their entry to an nr-durable `Store`
//!   (same entry format) and `fdatasync` it, one write and one sync per operation, under the lock;
//! - `volatile-nr`: nr-core, no log;
//! - `durable-file`: nr-durable, file medium, `SyncPolicy::EveryBatch` (one `write` + one
//!   `fdatasync` per group commit);
//! - `durable-pmem`: nr-durable, region medium (a mapped file, by default in `/dev/shm`: no
//!   persistent memory here, so its write-backs and fences are real but durable only as far as
//!   the page cache is).
//! - `durable-pmem-eadr`: as `durable-pmem` with `pmem::Hardware::no_flush()`, what an eADR
//!   platform (persistent caches) runs: no write-backs, the fence only; shows what the
//!   write-backs cost.
//!
//! The issue's "pcomb where the structure fits it": `pcomb`'s persistent `PBComb` copies its
//! whole state (a `Pod`) every combining pass, so it cannot hold the `HashMap`. [`DurableMethod::POD`]
//! runs it and nr-durable on a map that fits, [`ArrayKv`] (one array of `N` slots, key `k` in slot
//! `k % N`), in 64 slots (512 bytes) and in 10,000 (80 KB, the issue's key count):
//! `pcomb-pod64`, `durable-pmem-pod64`, `pcomb-pod10k`, `durable-pmem-pod10k`, their region files
//! in the pmem directory. Their log stats are `psync`s + `pfence`s and the bytes written back
//! (cache lines × 64) for pcomb, as for the others' log (nr-durable's `psync`s and log bytes).
//!
//! Every store starts from the prefilled map ([`prefilled`]) as its initial state (not logged),
//! in a fresh path ([`fresh_path`]) removed again by [`remove_store`]. A thread's operation
//! stream: a write with probability `writes_pct`%, on a uniform key, from a fixed seed per thread.
//!
//! # Examples
//!
//! ```
//! use benches::durable_bench::{fresh_path, open, remove_store, run_ops, DurableMethod};
//!
//! let dir = std::env::temp_dir();
//! for m in DurableMethod::ALL {
//!     let path = fresh_path(&dir, &format!("doc-{}", m.name()));
//!     let subject = open(m, 1, 100, &path)?;
//!     let took = run_ops(&*subject, 2, 50, 100, 10)?;
//!     assert!(took.as_nanos() > 0);
//!     drop(subject);
//!     remove_store(&path);
//! }
//! # Ok::<(), benches::BenchError>(())
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nr_core::{Dispatch, NodeReplicated};
use nr_durable::{Durable, DurableDispatch, Medium, Store, SyncPolicy};
use pmem::{Hardware, Region};
use serde::{Deserialize, Serialize};

use crate::sync::{scope, sleep, AtomicBool, Barrier, Mutex, Ordering, ScopedJoinHandle};
use crate::{BenchError, Rng};

mod pod;
pub use pod::ArrayKv;

/// The seed of every thread's operation stream (the thread index is the stream).
const SEED: u64 = 0x5EED;

/// Capacity of the region of `durable-pmem`, in bytes.
pub const PMEM_CAPACITY: u64 = 64 << 20;

/// The benchmarked map: key to value, `dispatch` a get, `dispatch_mut` a put.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
///
/// let mut kv = benches::durable_bench::prefilled(3);
/// assert_eq!(kv.dispatch(2), Some(2));
/// assert_eq!(kv.dispatch_mut((2, 7)), Some(2));
/// ```
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Kv(pub HashMap<u64, u64>);

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

/// The map with keys `0..keys`, each mapped to itself: every store's initial state.
///
/// # Examples
///
/// ```
/// assert_eq!(benches::durable_bench::prefilled(10).0.len(), 10);
/// ```
pub fn prefilled(keys: u64) -> Kv {
    Kv((0..keys).map(|k| (k, k)).collect())
}

/// The benchmarked methods (see the module docs), in the order the binary prints them.
///
/// # Examples
///
/// ```
/// use benches::durable_bench::DurableMethod;
///
/// assert_eq!(DurableMethod::ALL[0].name(), "mutex-wal");
/// assert!(DurableMethod::DurablePmem.uses_region());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurableMethod {
    /// `Mutex<HashMap>` + a write-ahead log synced per write.
    MutexWal,
    /// nr-core NR, no log.
    VolatileNr,
    /// nr-durable, file medium, `SyncPolicy::EveryBatch`.
    DurableFile,
    /// nr-durable, region medium (a mapped file).
    DurablePmem,
    /// nr-durable, region medium without write-backs (eADR).
    DurablePmemEadr,
    /// `pcomb`'s persistent `PBComb` on [`ArrayKv`] of 64 slots.
    PcombPod64,
    /// nr-durable, region medium, on [`ArrayKv`] of 64 slots.
    DurablePmemPod64,
    /// `pcomb`'s persistent `PBComb` on [`ArrayKv`] of 10,000 slots (80 KB copied per pass).
    PcombPod10k,
    /// nr-durable, region medium, on [`ArrayKv`] of 10,000 slots.
    DurablePmemPod10k,
}

impl DurableMethod {
    /// Every method, the baseline first.
    pub const ALL: [Self; 5] = [
        Self::MutexWal,
        Self::VolatileNr,
        Self::DurableFile,
        Self::DurablePmem,
        Self::DurablePmemEadr,
    ];

    /// The methods on the `Pod` map that `pcomb` can hold (module docs), in the order the
    /// binary prints them.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::durable_bench::DurableMethod;
    ///
    /// assert!(DurableMethod::POD.iter().all(|m| m.uses_region()));
    /// ```
    pub const POD: [Self; 4] = [
        Self::DurablePmemPod64,
        Self::PcombPod64,
        Self::DurablePmemPod10k,
        Self::PcombPod10k,
    ];

    /// Its name in tables and benchmark ids.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(benches::durable_bench::DurableMethod::DurableFile.name(), "durable-file");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::MutexWal => "mutex-wal",
            Self::VolatileNr => "volatile-nr",
            Self::DurableFile => "durable-file",
            Self::DurablePmem => "durable-pmem",
            Self::DurablePmemEadr => "durable-pmem-eadr",
            Self::PcombPod64 => "pcomb-pod64",
            Self::DurablePmemPod64 => "durable-pmem-pod64",
            Self::PcombPod10k => "pcomb-pod10k",
            Self::DurablePmemPod10k => "durable-pmem-pod10k",
        }
    }

    /// Whether its store is a region file (place it in the pmem directory) rather than a log
    /// directory.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!benches::durable_bench::DurableMethod::MutexWal.uses_region());
    /// ```
    pub fn uses_region(self) -> bool {
        !matches!(self, Self::MutexWal | Self::VolatileNr | Self::DurableFile)
    }
}

/// One thread's operation: `(write, key, value)`; a read when `write` is false.
pub type Step<'a> = Box<dyn FnMut(bool, u64, u64) -> Result<(), BenchError> + 'a>;

/// The competitors behind one interface: make one with [`open`].
pub trait Subject: Sync {
    /// The operation runner of benchmark thread `thread` (registers it).
    ///
    /// # Errors
    ///
    /// When the thread cannot be registered.
    fn worker(&self, thread: usize) -> Result<Step<'_>, BenchError>;
    /// (syncs, log bytes) so far; `(0, 0)` for a method without a log.
    fn log_stats(&self) -> (u64, u64);
}

struct Volatile(NodeReplicated<Kv>);

impl Subject for Volatile {
    fn worker(&self, t: usize) -> Result<Step<'_>, BenchError> {
        let mut h = self.0.register(t % self.0.replicas())?;
        Ok(Box::new(move |w, k, v| {
            if w {
                h.execute_mut((k, v)).map_err(|_| BenchError::Poisoned)?;
            } else {
                h.execute(k).map_err(|_| BenchError::Poisoned)?;
            }
            Ok(())
        }))
    }
    fn log_stats(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// nr-durable on a map of `u64` keys and values ([`Kv`] or [`ArrayKv`]).
struct DurableNr<D: DurableDispatch>(Durable<D>);

impl<D> Subject for DurableNr<D>
where
    D: DurableDispatch + for<'a> Dispatch<ReadOperation<'a> = u64, WriteOperation = (u64, u64)>,
{
    fn worker(&self, t: usize) -> Result<Step<'_>, BenchError> {
        let thread = u32::try_from(t).map_err(|_| BenchError::Config(format!("thread {t}")))?;
        let mut h = self.0.register(thread)?;
        Ok(Box::new(move |w, k, v| {
            if w {
                h.execute_mut((k, v))?;
            } else {
                h.execute(k)?;
            }
            Ok(())
        }))
    }
    fn log_stats(&self) -> (u64, u64) {
        let s = self.0.stats();
        (s.syncs, s.bytes)
    }
}

/// `Mutex<HashMap>` + a write-ahead log synced per operation. The baseline is std's `Mutex`
/// (what a plain program would use), through the crate's sync shim.
struct MutexWal {
    state: Mutex<(HashMap<u64, u64>, u64)>,
    log: Store<(u64, u64)>,
}

impl Subject for MutexWal {
    fn worker(&self, _: usize) -> Result<Step<'_>, BenchError> {
        Ok(Box::new(move |w, k, v| {
            let mut g = self.state.lock().map_err(|_| BenchError::Poisoned)?;
            if w {
                let pos = g.1;
                self.log.append(pos, &[&(k, v)])?;
                g.1 += 1;
                g.0.insert(k, v);
            } else {
                std::hint::black_box(g.0.get(&k));
            }
            Ok(())
        }))
    }
    fn log_stats(&self) -> (u64, u64) {
        let s = self.log.stats();
        (s.syncs, s.bytes)
    }
}

/// Opens `method`'s store at `path` (a log directory, or a region file when
/// [`DurableMethod::uses_region`]; pass a [`fresh_path`]) for `threads` threads (the NR methods
/// get `min(threads, 2)` replicas) and the map of `keys` keys (the `Pod` methods: their own
/// slot counts).
///
/// # Errors
///
/// When the object or its log cannot be built or opened (see [`BenchError::Durable`]).
///
/// # Examples
///
/// See the module docs.
pub fn open(
    method: DurableMethod,
    threads: usize,
    keys: u64,
    path: &Path,
) -> Result<Box<dyn Subject>, BenchError> {
    open_with_replicas(method, threads, threads.clamp(1, 2), keys, path)
}

/// [`open`] with `replicas` replicas for the NR methods (`durable_nr --replicas`) instead of
/// `min(threads, 2)`. One replica with `threads` threads is the configuration a one-node
/// machine's topology gives; nr-core then uses no shared log (with nr-durable's commit log,
/// the commit orders the writes).
///
/// # Errors
///
/// As [`open`].
///
/// # Examples
///
/// See the module docs.
pub fn open_with_replicas(
    method: DurableMethod,
    threads: usize,
    replicas: usize,
    keys: u64,
    path: &Path,
) -> Result<Box<dyn Subject>, BenchError> {
    let replicas = replicas.max(1);
    let path = path.to_path_buf();
    Ok(match method {
        DurableMethod::VolatileNr => Box::new(Volatile(
            NodeReplicated::builder()
                .replicas(replicas)
                .build(|_| prefilled(keys))?,
        )),
        DurableMethod::DurableFile => Box::new(DurableNr(
            Durable::builder()
                .replicas(replicas)
                .medium(Medium::File { dir: path })
                .open(|| prefilled(keys))?,
        )),
        DurableMethod::DurablePmem => Box::new(DurableNr(
            Durable::builder()
                .replicas(replicas)
                .medium(Medium::Pmem {
                    path,
                    capacity: PMEM_CAPACITY,
                })
                .open(|| prefilled(keys))?,
        )),
        DurableMethod::DurablePmemEadr => {
            // A directory holding the region file and its snapshots.
            std::fs::create_dir_all(&path).map_err(BenchError::Io)?;
            let region = Region::create_with(
                path.join("log.pmem"),
                nr_durable::PMEM_LAYOUT,
                PMEM_CAPACITY,
                Hardware::no_flush(),
            )?;
            Box::new(DurableNr(
                Durable::builder()
                    .replicas(replicas)
                    .region(region, &path)
                    .open(|| prefilled(keys))?,
            ))
        }
        DurableMethod::MutexWal => {
            let (log, _) = Store::open::<()>(&Medium::File { dir: path }, SyncPolicy::EveryBatch)?;
            Box::new(MutexWal {
                state: Mutex::new((prefilled(keys).0, 0)),
                log,
            })
        }
        DurableMethod::PcombPod64 => pod::open_pcomb::<64>(&path, threads)?,
        DurableMethod::DurablePmemPod64 => pod::open_durable::<64>(&path, replicas)?,
        DurableMethod::PcombPod10k => pod::open_pcomb::<10_000>(&path, threads)?,
        DurableMethod::DurablePmemPod10k => pod::open_durable::<10_000>(&path, replicas)?,
    })
}

/// A path for a store named `name` in `dir`, unique to this process, with whatever an earlier
/// run left there removed.
///
/// # Examples
///
/// ```
/// let p = benches::durable_bench::fresh_path(&std::env::temp_dir(), "doc-fresh");
/// assert!(!p.exists());
/// ```
pub fn fresh_path(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(format!("durable-nr-{}-{name}", std::process::id()));
    remove_store(&p);
    p
}

/// Removes a store at `path`: the log directory or region file, and the region's snapshots
/// (`<file>.snap-*`, beside it). Best effort: what cannot be removed is left.
///
/// # Examples
///
/// ```
/// let p = benches::durable_bench::fresh_path(&std::env::temp_dir(), "doc-remove");
/// std::fs::create_dir(&p)?;
/// benches::durable_bench::remove_store(&p);
/// assert!(!p.exists());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn remove_store(path: &Path) {
    let _ = std::fs::remove_dir_all(path);
    let _ = std::fs::remove_file(path);
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
}

/// Joins the workers: their results in order, or the first error (a panicked worker is
/// [`BenchError::ThreadPanicked`]).
fn join_all<T>(
    workers: Vec<ScopedJoinHandle<'_, Result<T, BenchError>>>,
) -> Result<Vec<T>, BenchError> {
    workers
        .into_iter()
        .map(|w| w.join().map_err(|_| BenchError::ThreadPanicked)?)
        .collect()
}

/// Runs `threads` threads on `s` for `d`, each drawing its operations as the module docs say
/// (keys below `keys`); returns (operations, writes) of all threads together.
///
/// # Errors
///
/// The first error of a worker (registration or an operation), or a panicked worker.
///
/// # Examples
///
/// ```
/// use benches::durable_bench::{fresh_path, measure_for, open, DurableMethod};
/// use std::time::Duration;
///
/// let path = fresh_path(&std::env::temp_dir(), "doc-measure");
/// let s = open(DurableMethod::VolatileNr, 1, 100, &path)?;
/// let (ops, writes) = measure_for(&*s, 1, 100, 100, Duration::from_millis(5))?;
/// assert_eq!(ops, writes);
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn measure_for(
    s: &dyn Subject,
    threads: usize,
    writes_pct: u64,
    keys: u64,
    d: Duration,
) -> Result<(u64, u64), BenchError> {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    let counts = scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start) = (&stop, &start);
                scope.spawn(move || {
                    let step = s.worker(t);
                    start.wait();
                    let mut step = step?;
                    let mut rng = Rng::new(SEED, t as u64);
                    let (mut ops, mut writes) = (0u64, 0u64);
                    // Relaxed: the flag only ends the loop; the counts come back through join.
                    while !stop.load(Ordering::Relaxed) {
                        let w = rng.below(100) < writes_pct;
                        step(w, rng.below(keys), ops)?;
                        ops += 1;
                        writes += u64::from(w);
                    }
                    Ok((ops, writes))
                })
            })
            .collect();
        start.wait();
        sleep(d);
        // Relaxed: see the load in the workers.
        stop.store(true, Ordering::Relaxed);
        join_all(workers)
    })?;
    Ok(counts
        .into_iter()
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)))
}

/// Runs `threads` threads on `s` with `ops_per_thread` operations each (drawn as the module
/// docs say, keys below `keys`), started together; returns the time from the earliest worker's
/// start to the latest worker's end (registration outside it): the fixed-count runner of the
/// criterion bench.
///
/// # Errors
///
/// The first error of a worker (registration or an operation), or a panicked worker.
///
/// # Examples
///
/// See the module docs.
pub fn run_ops(
    s: &dyn Subject,
    threads: usize,
    writes_pct: u64,
    keys: u64,
    ops_per_thread: u64,
) -> Result<Duration, BenchError> {
    let start = Barrier::new(threads);
    let spans = scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                scope.spawn(move || {
                    let step = s.worker(t);
                    start.wait();
                    let mut step = step?;
                    let mut rng = Rng::new(SEED, t as u64);
                    let t0 = Instant::now();
                    for i in 0..ops_per_thread {
                        let w = rng.below(100) < writes_pct;
                        step(w, rng.below(keys), i)?;
                    }
                    Ok((t0, Instant::now()))
                })
            })
            .collect();
        join_all(workers)
    })?;
    let first = spans.iter().map(|s| s.0).min();
    let last = spans.iter().map(|s| s.1).max();
    Ok(match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a),
        _ => Duration::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `m`'s log stats after `threads` threads made `writes` writes each (50 keys), in a fresh
    /// store that is removed again.
    fn stats_after_writes(
        m: DurableMethod,
        threads: usize,
        writes: u64,
    ) -> Result<(u64, u64), BenchError> {
        let path = fresh_path(&std::env::temp_dir(), &format!("test-stats-{}", m.name()));
        let s = open(m, threads, 50, &path)?;
        run_ops(&*s, threads, 100, 50, writes)?;
        let stats = s.log_stats();
        drop(s);
        remove_store(&path);
        Ok(stats)
    }

    /// `run_ops` runs exactly `threads * ops_per_thread` operations: at 100% writes the
    /// baseline syncs once per write, so its sync count is the operation count.
    #[test]
    fn run_ops_runs_the_fixed_operation_count() -> Result<(), BenchError> {
        let (syncs, bytes) = stats_after_writes(DurableMethod::MutexWal, 2, 7)?;
        assert_eq!(syncs, 14, "one sync per write, 2 threads x 7 writes");
        assert!(bytes > 0);
        Ok(())
    }

    /// The pcomb subject adds each worker's persistence instructions when it ends: one thread,
    /// so every write is its own combining pass, with one `pfence` and one `psync`.
    #[test]
    fn pcomb_counts_its_persistence_instructions() -> Result<(), BenchError> {
        let (fences, bytes) = stats_after_writes(DurableMethod::PcombPod64, 1, 10)?;
        assert_eq!(fences, 20, "a pfence and a psync per write");
        assert!(
            bytes >= 10 * 64,
            "at least a line written back per write: {bytes}"
        );
        Ok(())
    }

    /// Every method opens a fresh store and runs reads and writes without an error, and
    /// `remove_store` leaves nothing behind.
    #[test]
    fn every_method_runs_and_is_removed() -> Result<(), BenchError> {
        // Not the 10,000-slot `Pod` map: 80 KB, copied several times on the stack by an
        // unoptimized `open`, more than a test thread's 2 MB (the binary's `--smoke`, in CI,
        // opens them on the main thread).
        let small = |m: &DurableMethod| {
            !matches!(
                m,
                DurableMethod::PcombPod10k | DurableMethod::DurablePmemPod10k
            )
        };
        for m in DurableMethod::ALL
            .into_iter()
            .chain(DurableMethod::POD)
            .filter(small)
        {
            let path = fresh_path(&std::env::temp_dir(), &format!("test-{}", m.name()));
            let s = open(m, 2, 50, &path)?;
            run_ops(&*s, 2, 50, 50, 20)?;
            drop(s);
            remove_store(&path);
            assert!(!path.exists(), "{} left {}", m.name(), path.display());
        }
        Ok(())
    }
}
