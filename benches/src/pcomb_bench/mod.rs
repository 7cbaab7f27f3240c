//! The `pcomb` rows of `BENCHMARKS.md` (PPoPP'22 §6): the AtomicFloat benchmark (Figures 1-3)
//! and the structure benchmarks (Figures 4-7), shared by the criterion bench `benches/pcomb.rs`
//! and the binaries `pcomb_atomic_float` and `pcomb_structures`.
//!
//! - **AtomicFloat**: every thread applies `v := v * k` (returning the old value), then a local
//!   work loop of a random 1..=512 iterations: the authors' generator and volatile loop,
//!   operation for operation ([`LocalWork`]).
//! - **Structures**: stack push/pop pairs and queue enqueue/dequeue pairs from an empty
//!   structure; heap insert/delete-min pairs on a heap of 64, 256 or 1024 keys, half full at the
//!   start (the same keys for every method). The local work follows every operation.
//!
//! Every run builds a fresh object (persistent ones in a new mapped file in the temp dir,
//! flushed with `Hardware` pwb/pfence/psync), so each method starts from the same state. Thread
//! `t` of every run is pinned to `cpu_for_thread(t)` of [`topology`] (as the runner pins its
//! threads; more threads than CPUs wrap around). A run is timed from the earliest worker's
//! start to the latest worker's end; flushes and fences are counted per operation (per pair for
//! the structures) with `pmem::stats`. The binaries record their runs with [`record`], in the
//! runner's CSV format.
//!
//! Every call into `pcomb` goes through the small adapters in `adapters.rs`
//! (`register`, `built`, `float_op_*` and the `PairOps` impls), so an API change there (for
//! instance operations returning `Result` for poisoning) is a change in one place.
//!
//! `Mutex+persist` persists the state after every operation (pwb + psync) under a lock: it is
//! *durable* but not *detectable* (after a crash a thread cannot tell whether its last operation
//! took effect), unlike PBcomb and PWFcomb.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nr_core::{pin_current_thread, Topology};
use pcomb::pmem::{self, Hardware, PersistStats, Region};

use crate::sync::{scope, AtomicBool, Barrier, Ordering};
use crate::{thread_cpu_ns, BenchError};

mod adapters;
mod baselines;
mod float;
pub mod record;
mod structures;
mod work;

pub use float::{atomic_float, float_panel, FloatMethod};
pub use structures::{structure, Structure};
pub use work::{local_work_ns, LocalWork, MAX_WORK};

/// The label every table prints beside `Mutex+persist`.
pub const MUTEX_PERSIST_NOTE: &str = "durable, not detectable";

/// What one run measured.
///
/// # Examples
///
/// ```
/// let o = benches::pcomb_bench::Outcome { ops: 10, elapsed: std::time::Duration::from_secs(1), pwbs: 2.0, pfences: 1.0, psyncs: 1.0, cpu_ns: 900.0 };
/// assert_eq!(o.mops(), 1e-5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Operations (AtomicFloat) or pairs (structures), all threads together.
    pub ops: u64,
    /// Earliest worker start to latest worker end.
    pub elapsed: Duration,
    /// Cache lines written back per operation (pair).
    pub pwbs: f64,
    /// Ordering fences per operation (pair).
    pub pfences: f64,
    /// Drains (psync) per operation (pair).
    pub psyncs: f64,
    /// CPU time of the worker threads per operation (pair), in nanoseconds, local work
    /// included: on a loaded machine a steadier figure than throughput, which also counts
    /// the time the threads were not running.
    pub cpu_ns: f64,
}

impl Outcome {
    /// Millions of operations (pairs) per second.
    ///
    /// # Examples
    ///
    /// See [`Outcome`].
    pub fn mops(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE) / 1e6
    }
}

/// Per-thread xorshift64 (the heap benchmark's keys).
struct Xorshift(u64);

impl Xorshift {
    fn new(seed: u64, stream: u64) -> Self {
        // Never zero: xorshift's fixed point.
        Self(
            (seed
                ^ 0x9E37_79B9_7F4A_7C15
                ^ stream.wrapping_add(1).wrapping_mul(0x2545_F491_4F6C_DD1D))
                | 1,
        )
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One thread's operation: runs one AtomicFloat op, or one pair calling `work` between its two
/// operations.
type Step<'o> = Box<dyn FnMut(&mut dyn FnMut()) -> Result<(), BenchError> + 'o>;

/// The topology every pcomb run pins its threads by: [`Topology::detect`] (which honours
/// `NR_VIRTUAL_NODES`), detected on the first call and kept for the process.
///
/// # Errors
///
/// [`BenchError::Topology`] when the CPUs cannot be discovered.
///
/// # Examples
///
/// ```
/// let t = benches::pcomb_bench::topology()?;
/// assert!(t.num_cpus() >= 1);
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn topology() -> Result<&'static Topology, BenchError> {
    static TOPOLOGY: OnceLock<Topology> = OnceLock::new();
    if let Some(t) = TOPOLOGY.get() {
        return Ok(t);
    }
    let detected = Topology::detect()?;
    Ok(TOPOLOGY.get_or_init(|| detected))
}

/// Runs `threads` threads of `per_thread` steps each (each step followed by local work), thread
/// `t` pinned to [`topology`]'s `cpu_for_thread(t)`; the `make(t)` closure builds thread `t`'s
/// step on that thread, after pinning.
fn drive<'o>(
    threads: usize,
    per_thread: u64,
    seed: u64,
    make: impl Fn(usize) -> Result<Step<'o>, BenchError> + Sync,
) -> Result<Outcome, BenchError> {
    if threads == 0 {
        return Err(BenchError::Config("threads must be at least 1".into()));
    }
    let topology = topology()?;
    let barrier = Barrier::new(threads);
    let failed = AtomicBool::new(false);
    let results: Vec<Result<(Instant, Instant, PersistStats, u64), BenchError>> = scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, make, failed) = (&barrier, &make, &failed);
                s.spawn(move || {
                    // Every method's thread `t` runs on the same CPU.
                    let step = pin_current_thread(&[topology.cpu_for_thread(t)])
                        .map_err(BenchError::from)
                        .and_then(|()| make(t));
                    if step.is_err() {
                        // Relaxed: read after the barrier, which synchronizes.
                        failed.store(true, Ordering::Relaxed);
                    }
                    pmem::reset_stats();
                    // Reach the barrier even on error, or the others would wait forever.
                    barrier.wait();
                    let mut step = step?;
                    if failed.load(Ordering::Relaxed) {
                        return Err(BenchError::Config("another thread failed to start".into()));
                    }
                    let mut work = LocalWork::new(seed, t as u64);
                    let cpu = thread_cpu_ns();
                    let began = Instant::now();
                    for _ in 0..per_thread {
                        step(&mut || {
                            work.run();
                        })?;
                        work.run();
                    }
                    let ended = Instant::now();
                    Ok((began, ended, pmem::stats(), thread_cpu_ns() - cpu))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or(Err(BenchError::ThreadPanicked)))
            .collect()
    });
    let mut span: Option<(Instant, Instant)> = None;
    let mut total = PersistStats::default();
    let mut cpu = 0u64;
    for r in results {
        let (b, e, st, c) = r?;
        cpu += c;
        span = Some(span.map_or((b, e), |(b0, e0)| (b0.min(b), e0.max(e))));
        total.pwbs += st.pwbs;
        total.pfences += st.pfences;
        total.psyncs += st.psyncs;
    }
    let (began, ended) = span.ok_or_else(|| BenchError::Config("no thread ran".into()))?;
    let ops = per_thread * threads as u64;
    let per = |n: u64| n as f64 / ops.max(1) as f64;
    Ok(Outcome {
        ops,
        elapsed: ended - began,
        pwbs: per(total.pwbs),
        pfences: per(total.pfences),
        psyncs: per(total.psyncs),
        cpu_ns: per(cpu),
    })
}

/// A region file in the temp dir, removed on drop.
struct TempRegion {
    path: PathBuf,
}

impl TempRegion {
    fn create(name: &str, bytes: usize) -> Result<(Self, Region<Hardware>), BenchError> {
        // A distinct file name per region of this process.
        static NEXT: parking_lot::Mutex<u64> = parking_lot::Mutex::new(0);
        let n = {
            let mut next = NEXT.lock();
            *next += 1;
            *next
        };
        let path = std::env::temp_dir().join(format!(
            "benches-pcomb-{}-{n}-{name}.pmem",
            std::process::id()
        ));
        let size = (bytes + 16384).div_ceil(4096) * 4096;
        let region = Region::create(&path, LAYOUT, size as u64)?;
        Ok((Self { path }, region))
    }
}

impl Drop for TempRegion {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

const LAYOUT: u64 = 0x5B_E4C4;
// ---- Repetitions, as `BENCHMARKS.md` asks (used by the binaries). ----

/// Runs every method of `methods` `reps` times at one thread count: first one unmeasured
/// warm-up run per method, then `reps` rounds with the methods interleaved and their order
/// rotated by one place per round. Returns `outcomes[method][rep]`.
///
/// # Errors
///
/// The first run's error.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::{interleaved, atomic_float, FloatMethod};
///
/// let methods = [FloatMethod::Mutex, FloatMethod::PBCombVolatile];
/// let out = interleaved(&methods, 3, |m| atomic_float(m, 1, 100, 7))?;
/// assert_eq!((out.len(), out[0].len()), (2, 3));
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn interleaved<M: Copy>(
    methods: &[M],
    reps: usize,
    mut run: impl FnMut(M) -> Result<Outcome, BenchError>,
) -> Result<Vec<Vec<Outcome>>, BenchError> {
    for &m in methods {
        run(m)?;
    }
    let n = methods.len();
    let mut out = vec![Vec::with_capacity(reps); n];
    for rep in 0..reps {
        for i in 0..n {
            let k = (i + rep) % n.max(1);
            out[k].push(run(methods[k])?);
        }
    }
    Ok(out)
}

/// Median, minimum and maximum of `v` (the upper median for an even count); zeros when empty.
///
/// # Examples
///
/// ```
/// assert_eq!(benches::pcomb_bench::median(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
/// ```
pub fn median(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match (v.first(), v.get(v.len() / 2), v.last()) {
        (Some(&lo), Some(&m), Some(&hi)) => (m, lo, hi),
        _ => (0.0, 0.0, 0.0),
    }
}

/// One table line: method, threads (`4 (oversubscribed)` above `cpus`), median Mops/s with the
/// min-max spread and every repetition, flushes per operation (of the median run's
/// repetition 0: they do not depend on timing), the median CPU time per operation of the
/// worker threads, and the `Mutex+persist` label.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::{line, Outcome};
///
/// let o = Outcome { ops: 1_000_000, elapsed: std::time::Duration::from_secs(1), ..Outcome::default() };
/// let l = line("Mutex+persist", 4, 2, &[o, o, o]);
/// assert!(l.contains("oversubscribed") && l.contains("durable, not detectable"));
/// ```
pub fn line(method: &str, threads: usize, cpus: usize, reps: &[Outcome]) -> String {
    let mops: Vec<f64> = reps.iter().map(Outcome::mops).collect();
    let (m, lo, hi) = median(&mops);
    let first = reps.first().copied().unwrap_or_default();
    let all: Vec<String> = mops.iter().map(|x| format!("{x:.3}")).collect();
    format!(
        "{:<20} {:>3}{:<17} {:>8.3} ({:.3}-{:.3}) [{}]  pwb {:.2} pfence {:.2} psync {:.2}  cpu {:.0} ns{}",
        method,
        threads,
        if threads > cpus {
            " (oversubscribed)"
        } else {
            ""
        },
        m,
        lo,
        hi,
        all.join(" "),
        first.pwbs,
        first.pfences,
        first.psyncs,
        median(&reps.iter().map(|o| o.cpu_ns).collect::<Vec<_>>()).0,
        if method.starts_with("Mutex+persist") {
            format!("  ({MUTEX_PERSIST_NOTE})")
        } else {
            String::new()
        }
    )
}
