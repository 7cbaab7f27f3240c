//! The `pcomb` rows of `BENCHMARKS.md` (PPoPP'22 §6): the AtomicFloat benchmark (Figures 1-3)
//! and the structure benchmarks (Figures 4-7), shared by the criterion bench `benches/pcomb.rs`
//! and the binaries `pcomb_atomic_float` and `pcomb_structures`.
//!
//! - **AtomicFloat**: every thread applies `v := v * k` (returning the old value), then a local
//!   work loop of a random 1..=512 volatile increments (seeded per thread).
//! - **Structures**: stack push/pop pairs and queue enqueue/dequeue pairs from an empty
//!   structure; heap insert/delete-min pairs on a heap of 64, 256 or 1024 keys, half full at the
//!   start (the same keys for every method). The local work follows every operation.
//!
//! Every run builds a fresh object (persistent ones in a new mapped file in the temp dir,
//! flushed with `Hardware` pwb/pfence/psync), so each method starts from the same state. A run
//! is timed from the earliest worker's start to the latest worker's end; flushes and fences are
//! counted per operation (per pair for the structures) with `pmem::stats`.
//!
//! Every call into `pcomb` goes through the small adapters at the end of this file
//! (`register`, `built` and the [`PairOps`] / `float_op` impls), so an API change there (for
//! instance operations returning `Result` for poisoning) is a change in one place.
//!
//! `Mutex+persist` persists the state after every operation (pwb + psync) under a lock: it is
//! *durable* but not *detectable* (after a crash a thread cannot tell whether its last operation
//! took effect), unlike PBcomb and PWFcomb.

#![allow(clippy::disallowed_types)] // the Mutex baselines are std's Mutex, what users would pick

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;
use pcomb::objects::AtomicFloat;
use pcomb::pmem::{self, Hardware, Persist, PersistStats, Region};
use pcomb::structures::{
    Options, PBHeap, PBHeapHandle, PBQueue, PBQueueHandle, PBStack, PBStackHandle, PWFQueue,
    PWFQueueHandle, PWFStack, PWFStackHandle,
};
use pcomb::{PBComb, PBCombHandle, PWFComb, PWFCombHandle};

use crate::sync::{scope, AtomicBool, Barrier, Ordering};
use crate::BenchError;

/// The label every table prints beside `Mutex+persist`.
pub const MUTEX_PERSIST_NOTE: &str = "durable, not detectable";

/// What one run measured.
///
/// # Examples
///
/// ```
/// let o = benches::pcomb_bench::Outcome { ops: 10, elapsed: std::time::Duration::from_secs(1), pwbs: 2.0, pfences: 1.0, psyncs: 1.0 };
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

/// Local work: `n` volatile increments of a local counter.
fn local_work(n: u64) {
    let mut counter = 0u64;
    for _ in 0..n {
        // SAFETY: `counter` is a live, aligned local; volatile keeps the loop from being folded.
        unsafe { std::ptr::write_volatile(&mut counter, std::ptr::read_volatile(&counter) + 1) };
    }
}

/// Per-thread xorshift64.
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
    fn work(&mut self) -> u64 {
        1 + self.next() % 512
    }
}

/// One thread's operation: runs one AtomicFloat op, or one pair calling `work` between its two
/// operations.
type Step<'o> = Box<dyn FnMut(&mut dyn FnMut()) -> Result<(), BenchError> + 'o>;

/// Runs `threads` threads of `per_thread` steps each (each step followed by local work); the
/// `make(t)` closure builds thread `t`'s step on that thread.
fn drive<'o>(
    threads: usize,
    per_thread: u64,
    seed: u64,
    make: impl Fn(usize) -> Result<Step<'o>, BenchError> + Sync,
) -> Result<Outcome, BenchError> {
    if threads == 0 {
        return Err(BenchError::Config("threads must be at least 1".into()));
    }
    let barrier = Barrier::new(threads);
    let failed = AtomicBool::new(false);
    let results: Vec<Result<(Instant, Instant, PersistStats), BenchError>> = scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, make, failed) = (&barrier, &make, &failed);
                s.spawn(move || {
                    let step = make(t);
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
                    let mut rng = Xorshift::new(seed, t as u64);
                    let began = Instant::now();
                    for _ in 0..per_thread {
                        step(&mut || local_work(rng.work()))?;
                        local_work(rng.work());
                    }
                    Ok((began, Instant::now(), pmem::stats()))
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
    for r in results {
        let (b, e, st) = r?;
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
    })
}

/// A region file in the temp dir, removed on drop.
struct TempRegion {
    path: PathBuf,
}

impl TempRegion {
    fn create(name: &str, bytes: usize) -> Result<(Self, Region<Hardware>), BenchError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "benches-pcomb-{}-{n}-{name}.pmem",
            std::process::id()
        ));
        let size = (bytes + 16384).div_ceil(4096) * 4096;
        let region = Region::create(&path, LAYOUT, size as u64)
            .map_err(|e| BenchError::Pcomb(format!("region file {}: {e}", path.display())))?;
        Ok((Self { path }, region))
    }
}

impl Drop for TempRegion {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

const LAYOUT: u64 = 0x5B_E4C4;
/// AtomicFloat's factor: close to 1 so the value stays finite for 10^7 operations.
const K: f64 = 1.000_000_1;

/// A method of the AtomicFloat benchmark.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::FloatMethod;
///
/// assert_eq!(FloatMethod::ALL.len(), 6);
/// assert_eq!(FloatMethod::MutexPersist.name(), "Mutex+persist");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatMethod {
    /// PBcomb on a mapped file.
    PBComb,
    /// PWFcomb on a mapped file.
    PWFComb,
    /// PBcomb, volatile mode.
    PBCombVolatile,
    /// PWFcomb, volatile mode.
    PWFCombVolatile,
    /// `std::sync::Mutex<f64>`.
    Mutex,
    /// A `Mutex` over a word of a mapped file, pwb + psync after every update: durable, not
    /// detectable.
    MutexPersist,
}

impl FloatMethod {
    /// Every method, in table order.
    pub const ALL: [FloatMethod; 6] = [
        FloatMethod::PBComb,
        FloatMethod::PWFComb,
        FloatMethod::PBCombVolatile,
        FloatMethod::PWFCombVolatile,
        FloatMethod::Mutex,
        FloatMethod::MutexPersist,
    ];

    /// The method's name in tables and criterion ids.
    ///
    /// # Examples
    ///
    /// See [`FloatMethod`].
    pub fn name(self) -> &'static str {
        match self {
            FloatMethod::PBComb => "PBcomb",
            FloatMethod::PWFComb => "PWFcomb",
            FloatMethod::PBCombVolatile => "PBcomb-volatile",
            FloatMethod::PWFCombVolatile => "PWFcomb-volatile",
            FloatMethod::Mutex => "Mutex",
            FloatMethod::MutexPersist => "Mutex+persist",
        }
    }
}

/// Runs the AtomicFloat benchmark once: a fresh object, `threads` threads of `ops_per_thread`
/// operations each.
///
/// # Errors
///
/// [`BenchError::Pcomb`] when the object or its region cannot be built, or a thread cannot
/// register; [`BenchError::ThreadPanicked`].
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::{atomic_float, FloatMethod};
///
/// let o = atomic_float(FloatMethod::PBCombVolatile, 2, 100, 1)?;
/// assert_eq!(o.ops, 200);
/// assert_eq!(o.pwbs, 0.0);
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn atomic_float(
    method: FloatMethod,
    threads: usize,
    ops_per_thread: u64,
    seed: u64,
) -> Result<Outcome, BenchError> {
    let k = K.to_bits();
    let init = || AtomicFloat::new(1.0);
    match method {
        FloatMethod::PBComb => {
            let (_file, region) = TempRegion::create("float", 1 << 20)?;
            let obj = built(PBComb::create(region, init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pb(&mut h, k)))
            })
        }
        FloatMethod::PWFComb => {
            let (_file, region) = TempRegion::create("float", 1 << 20)?;
            let obj = built(PWFComb::create(region, init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pwf(&mut h, k)))
            })
        }
        FloatMethod::PBCombVolatile => {
            let obj = built(PBComb::new(init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pb(&mut h, k)))
            })
        }
        FloatMethod::PWFCombVolatile => {
            let obj = built(PWFComb::new(init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pwf(&mut h, k)))
            })
        }
        FloatMethod::Mutex => {
            let v = Mutex::new(1.0f64);
            drive(threads, ops_per_thread, seed, |_| {
                let v = &v;
                Ok(Box::new(move |_| {
                    let mut g = v.lock().map_err(|_| BenchError::Poisoned)?;
                    let old = *g;
                    *g = old * K;
                    black_box(old);
                    Ok(())
                }))
            })
        }
        FloatMethod::MutexPersist => {
            let (_file, region) = TempRegion::create("float-mutex", 4096)?;
            let m = MutexPersist::new(region, 1)?;
            m.with(|w| w.set(8, 1.0f64.to_bits()))?;
            drive(threads, ops_per_thread, seed, |_| {
                let m = &m;
                Ok(Box::new(move |_| {
                    m.with(|w| {
                        let old = f64::from_bits(w.get(8));
                        w.set(8, (old * K).to_bits());
                        w.pwb(8, 1);
                        w.psync();
                        black_box(old);
                    })
                }))
            })
        }
    }
}

/// A structure benchmark.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::Structure;
///
/// assert_eq!(Structure::Heap(256).name(), "heap-256");
/// assert!(Structure::Stack.methods(false).contains(&"PWFStack"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// Push/pop pairs from an empty stack.
    Stack,
    /// Enqueue/dequeue pairs from an empty queue.
    Queue,
    /// Insert/delete-min pairs on a heap of this capacity (64, 256 or 1024), half full.
    Heap(usize),
}

impl Structure {
    /// Every structure panel of the paper's figures at this scale.
    pub const ALL: [Structure; 5] = [
        Structure::Stack,
        Structure::Queue,
        Structure::Heap(64),
        Structure::Heap(256),
        Structure::Heap(1024),
    ];

    /// The panel's name.
    ///
    /// # Examples
    ///
    /// See [`Structure`].
    pub fn name(self) -> String {
        match self {
            Structure::Stack => "stack".into(),
            Structure::Queue => "queue".into(),
            Structure::Heap(cap) => format!("heap-{cap}"),
        }
    }

    /// The methods of this panel: with `all`, every variant (without elimination, without
    /// recycling); otherwise the key ones (the PB and PWF structures persistent and volatile,
    /// `Mutex+persist` and the volatile `Mutex` baseline).
    ///
    /// # Examples
    ///
    /// See [`Structure`].
    pub fn methods(self, all: bool) -> Vec<&'static str> {
        let mut m = match self {
            Structure::Stack => vec![
                "PBStack",
                "PWFStack",
                "PBStack-volatile",
                "PWFStack-volatile",
            ],
            Structure::Queue => vec![
                "PBQueue",
                "PWFQueue",
                "PBQueue-volatile",
                "PWFQueue-volatile",
            ],
            Structure::Heap(_) => vec!["PBHeap", "PBHeap-volatile"],
        };
        m.push("Mutex+persist");
        m.push(match self {
            Structure::Stack => "Mutex<Vec>",
            Structure::Queue => "Mutex<VecDeque>",
            Structure::Heap(_) => "Mutex<BinaryHeap>",
        });
        if all {
            match self {
                Structure::Stack => m.extend([
                    "PBStack-no-elim",
                    "PBStack-no-rec",
                    "PWFStack-no-elim",
                    "PWFStack-no-rec",
                ]),
                Structure::Queue => m.extend(["PBQueue-no-rec", "SegQueue"]),
                Structure::Heap(_) => {}
            }
        }
        m
    }
}

const ALL_OPTS: Options = Options {
    elimination: true,
    recycling: true,
};
const NO_ELIM: Options = Options {
    elimination: false,
    recycling: true,
};
const NO_REC: Options = Options {
    elimination: true,
    recycling: false,
};

/// Runs `pairs_per_thread` pairs on each of `threads` threads of `method` on a fresh `structure`.
///
/// # Errors
///
/// [`BenchError::Config`] for a method the structure does not have or a heap capacity other
/// than 64, 256 or 1024; [`BenchError::Pcomb`] when pcomb refuses to build, register or
/// runs out of room.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::{structure, Structure};
///
/// let o = structure(Structure::Queue, "PBQueue-volatile", 2, 50, 1)?;
/// assert_eq!(o.ops, 100);
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn structure(
    s: Structure,
    method: &str,
    threads: usize,
    pairs_per_thread: u64,
    seed: u64,
) -> Result<Outcome, BenchError> {
    match s {
        Structure::Stack => stack(method, threads, pairs_per_thread, seed),
        Structure::Queue => queue(method, threads, pairs_per_thread, seed),
        Structure::Heap(64) => heap::<64>(method, threads, pairs_per_thread, seed),
        Structure::Heap(256) => heap::<256>(method, threads, pairs_per_thread, seed),
        Structure::Heap(1024) => heap::<1024>(method, threads, pairs_per_thread, seed),
        Structure::Heap(cap) => Err(BenchError::Config(format!(
            "heap capacity {cap}: only 64, 256 and 1024 are built"
        ))),
    }
}

fn unknown(s: &str, method: &str) -> BenchError {
    BenchError::Config(format!("{s} has no method {method:?}"))
}

/// Runs the pair `first(v)`, work, `second()` through a handle made per thread by `make`.
fn run_pairs<'o, H: PairOps + 'o>(
    threads: usize,
    pairs: u64,
    seed: u64,
    make: impl Fn(usize) -> Result<H, BenchError> + Sync,
    value: impl Fn(usize) -> Box<dyn FnMut() -> u64> + Sync,
) -> Result<Outcome, BenchError> {
    drive(threads, pairs, seed, |t| {
        let mut h = make(t)?;
        let mut v = value(t);
        Ok(Box::new(move |work: &mut dyn FnMut()| {
            h.first(v())?;
            work();
            black_box(h.second()?);
            Ok(())
        }))
    })
}

fn thread_value(t: usize) -> Box<dyn FnMut() -> u64> {
    Box::new(move || t as u64)
}

fn stack(method: &str, threads: usize, pairs: u64, seed: u64) -> Result<Outcome, BenchError> {
    let total = pairs * threads as u64;
    // Without recycling every push takes a new node; PWFStack nodes belong to threads, and one
    // thread's install may serve every push of the run.
    let big = u32::try_from(total + 64)
        .map_err(|_| BenchError::Config(format!("{total} pairs: too many for one run")))?;
    let (opts, pwf) = match method {
        "PBStack" | "PBStack-volatile" => (ALL_OPTS, false),
        "PBStack-no-elim" => (NO_ELIM, false),
        "PBStack-no-rec" => (NO_REC, false),
        "PWFStack" | "PWFStack-volatile" => (ALL_OPTS, true),
        "PWFStack-no-elim" => (NO_ELIM, true),
        "PWFStack-no-rec" => (NO_REC, true),
        "Mutex+persist" => {
            let (_file, region) = TempRegion::create("stack-mutex", 4096 * 8)?;
            let m = MutexPersist::new(region, 4096)?;
            return run_pairs(threads, pairs, seed, |_| Ok(&m), thread_value);
        }
        "Mutex<Vec>" => {
            let v = Mutex::new(Vec::<u64>::new());
            return run_pairs(threads, pairs, seed, |_| Ok(MutexVec(&v)), thread_value);
        }
        _ => return Err(unknown("stack", method)),
    };
    let cap = if pwf || !opts.recycling { big } else { 4096 };
    if method.ends_with("-volatile") {
        if pwf {
            let s = built(PWFStack::new(cap, threads))?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| register(s.register()),
                thread_value,
            )
        } else {
            let s = built(PBStack::new(cap, threads))?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| register(s.register()),
                thread_value,
            )
        }
    } else if pwf {
        let bytes = PWFStack::<Hardware>::bytes_needed(cap, threads);
        let (_file, region) = TempRegion::create(method, bytes)?;
        let s = built(PWFStack::create(region, cap, threads, opts))?;
        run_pairs(
            threads,
            pairs,
            seed,
            |_| register(s.register()),
            thread_value,
        )
    } else {
        let bytes = PBStack::<Hardware>::bytes_needed(cap, threads);
        let (_file, region) = TempRegion::create(method, bytes)?;
        let s = built(PBStack::create(region, cap, threads, opts))?;
        run_pairs(
            threads,
            pairs,
            seed,
            |_| register(s.register()),
            thread_value,
        )
    }
}

fn queue(method: &str, threads: usize, pairs: u64, seed: u64) -> Result<Outcome, BenchError> {
    let total = pairs * threads as u64;
    let big = u32::try_from(total + 64)
        .map_err(|_| BenchError::Config(format!("{total} pairs: too many for one run")))?;
    match method {
        "PBQueue" | "PBQueue-no-rec" => {
            let opts = if method == "PBQueue" {
                ALL_OPTS
            } else {
                NO_REC
            };
            let cap = if opts.recycling { 4096 } else { big };
            let bytes = PBQueue::<Hardware>::bytes_needed(cap, threads);
            let (_file, region) = TempRegion::create(method, bytes)?;
            let q = built(PBQueue::create(region, cap, threads, opts))?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| register(q.register()),
                thread_value,
            )
        }
        "PBQueue-volatile" => {
            let q = built(PBQueue::new(4096, threads))?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| register(q.register()),
                thread_value,
            )
        }
        // PWFQueue reuses no node while it runs (the paper leaves that open).
        "PWFQueue" => {
            let bytes = PWFQueue::<Hardware>::bytes_needed(big, threads);
            let (_file, region) = TempRegion::create(method, bytes)?;
            let q = built(PWFQueue::create(region, big, threads, ALL_OPTS))?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| register(q.register()),
                thread_value,
            )
        }
        "PWFQueue-volatile" => {
            let q = built(PWFQueue::new(big, threads))?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| register(q.register()),
                thread_value,
            )
        }
        "Mutex+persist" => {
            let (_file, region) = TempRegion::create("queue-mutex", 4096 * 8)?;
            let m = MutexPersist::new(region, 4096)?;
            run_pairs(
                threads,
                pairs,
                seed,
                |_| Ok(MutexPersistQueue(&m)),
                thread_value,
            )
        }
        "SegQueue" => {
            let q = SegQueue::<u64>::new();
            run_pairs(threads, pairs, seed, |_| Ok(&q), thread_value)
        }
        "Mutex<VecDeque>" => {
            let v = Mutex::new(VecDeque::<u64>::new());
            run_pairs(threads, pairs, seed, |_| Ok(&v), thread_value)
        }
        _ => Err(unknown("queue", method)),
    }
}

/// Per-thread random keys (the same for every method); `t = usize::MAX` is the prefill stream.
fn heap_keys(seed: u64) -> impl Fn(usize) -> Box<dyn FnMut() -> u64> + Sync + Copy {
    move |t| {
        let mut r = Xorshift::new(seed ^ 0xDEAD_BEEF, t as u64);
        Box::new(move || r.next() % 1_000_000)
    }
}

fn heap<const CAP: usize>(
    method: &str,
    threads: usize,
    pairs: u64,
    seed: u64,
) -> Result<Outcome, BenchError> {
    let keys = heap_keys(seed);
    let prefill: Vec<u64> = {
        let mut k = keys(usize::MAX);
        (0..CAP / 2).map(|_| k()).collect()
    };
    match method {
        "PBHeap" => {
            let (_file, region) = TempRegion::create("heap", (CAP + 64 * threads) * 16)?;
            let heap = built(PBHeap::<CAP, _>::create(region, threads))?;
            fill(register(heap.register())?, &prefill)?;
            run_pairs(threads, pairs, seed, |_| register(heap.register()), keys)
        }
        "PBHeap-volatile" => {
            let heap = built(PBHeap::<CAP>::new(threads))?;
            fill(register(heap.register())?, &prefill)?;
            run_pairs(threads, pairs, seed, |_| register(heap.register()), keys)
        }
        "Mutex+persist" => {
            let (_file, region) = TempRegion::create("heap-mutex", CAP * 8)?;
            let m = MutexPersist::new(region, CAP)?;
            for &k in &prefill {
                m.heap_op(Some(k))?;
            }
            run_pairs(threads, pairs, seed, |_| Ok(MutexPersistHeap(&m)), keys)
        }
        "Mutex<BinaryHeap>" => {
            let v = Mutex::new(
                prefill
                    .iter()
                    .map(|&k| Reverse(k))
                    .collect::<BinaryHeap<_>>(),
            );
            run_pairs(threads, pairs, seed, |_| Ok(&v), keys)
        }
        _ => Err(unknown("heap", method)),
    }
}

/// Inserts `keys` through `h` (then drops `h`, freeing its slot).
fn fill(mut h: impl PairOps, keys: &[u64]) -> Result<(), BenchError> {
    keys.iter().try_for_each(|&k| h.first(k))
}

/// The two operations of a pair, on any structure (the adapters over pcomb's handles and the
/// baselines).
trait PairOps {
    /// push / enqueue / insert.
    fn first(&mut self, v: u64) -> Result<(), BenchError>;
    /// pop / dequeue / delete-min.
    fn second(&mut self) -> Result<Option<u64>, BenchError>;
}

// ---- The adapters: every call into pcomb is in this section. ----

/// A built pcomb object, or why not.
fn built<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, BenchError> {
    r.map_err(|e| BenchError::Pcomb(format!("build: {e}")))
}

/// A registered pcomb handle, or why not.
fn register<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, BenchError> {
    r.map_err(|e| BenchError::Pcomb(format!("register: {e}")))
}

fn full(e: pcomb::structures::Full) -> BenchError {
    BenchError::Pcomb(format!("structure full: {e}"))
}

fn float_op_pb<P: Persist>(
    h: &mut PBCombHandle<'_, AtomicFloat, P>,
    k: u64,
) -> Result<(), BenchError> {
    black_box(h.execute_mut(k));
    Ok(())
}

fn float_op_pwf<P: Persist>(
    h: &mut PWFCombHandle<'_, AtomicFloat, P>,
    k: u64,
) -> Result<(), BenchError> {
    black_box(h.execute_mut(k));
    Ok(())
}

impl<P: Persist> PairOps for PBStackHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.push(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.pop())
    }
}

impl<P: Persist> PairOps for PWFStackHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.push(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.pop())
    }
}

impl<P: Persist> PairOps for PBQueueHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.enqueue(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.dequeue())
    }
}

impl<P: Persist> PairOps for PWFQueueHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.enqueue(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.dequeue())
    }
}

impl<const CAP: usize, P: Persist> PairOps for PBHeapHandle<'_, CAP, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.insert(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.delete_min())
    }
}

// ---- The baselines. ----

struct MutexVec<'a>(&'a Mutex<Vec<u64>>);

impl PairOps for MutexVec<'_> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.0.lock().map_err(|_| BenchError::Poisoned)?.push(v);
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.0.lock().map_err(|_| BenchError::Poisoned)?.pop())
    }
}

impl PairOps for &Mutex<VecDeque<u64>> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.lock().map_err(|_| BenchError::Poisoned)?.push_back(v);
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.lock().map_err(|_| BenchError::Poisoned)?.pop_front())
    }
}

impl PairOps for &Mutex<BinaryHeap<Reverse<u64>>> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.lock()
            .map_err(|_| BenchError::Poisoned)?
            .push(Reverse(v));
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self
            .lock()
            .map_err(|_| BenchError::Poisoned)?
            .pop()
            .map(|r| r.0))
    }
}

impl PairOps for &SegQueue<u64> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.push(v);
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.pop())
    }
}

/// A `Mutex` over a sequential array structure in a region, persisting what each operation
/// changed (pwb of the written lines, pfence, then the length/index word, pwb, psync): durable
/// (a completed operation survives a crash), not detectable.
struct MutexPersist {
    region: Region<Hardware>,
    /// Word 0: length (stack, heap) or head (queue); word 1: tail (queue); words 8..: slots.
    base: usize,
    slots: usize,
    lock: Mutex<()>,
}

/// Access to a [`MutexPersist`]'s words while its lock is held.
struct Words<'a>(&'a MutexPersist);

impl Words<'_> {
    fn word(&self, i: usize) -> *mut u64 {
        (self.0.base as *mut u64).wrapping_add(i)
    }
    fn get(&self, i: usize) -> u64 {
        assert!(i < self.0.slots + 8, "word {i} out of bounds");
        // SAFETY:
        // - `i < slots + 8` words of the 8-aligned allocation `base` points to (checked above);
        // - `Words` exists only while the lock is held, so no other thread accesses the words.
        unsafe { self.word(i).read() }
    }
    fn set(&self, i: usize, v: u64) {
        assert!(i < self.0.slots + 8, "word {i} out of bounds");
        // SAFETY: as for `get`.
        unsafe { self.word(i).write(v) };
    }
    fn pwb(&self, i: usize, words: usize) {
        self.0.region.persist().pwb(self.word(i).cast(), words * 8);
    }
    fn pfence(&self) {
        self.0.region.persist().pfence();
    }
    fn psync(&self) {
        self.0.region.persist().psync();
    }
}

impl MutexPersist {
    fn new(region: Region<Hardware>, slots: usize) -> Result<Self, BenchError> {
        let bytes = ((slots + 8) * 8) as u64;
        let off = region
            .allocator(bytes)
            .alloc_bytes(bytes, 64)
            .map_err(|e| BenchError::Pcomb(format!("region allocation: {e}")))?;
        let base = region
            .ptr::<u64>(off)
            .map_err(|e| BenchError::Pcomb(format!("region pointer: {e}")))?
            .as_ptr() as usize;
        Ok(Self {
            region,
            base,
            slots,
            lock: Mutex::new(()),
        })
    }

    fn with<R>(&self, f: impl FnOnce(&Words<'_>) -> R) -> Result<R, BenchError> {
        let _g = self.lock.lock().map_err(|_| BenchError::Poisoned)?;
        Ok(f(&Words(self)))
    }

    /// Binary min-heap in the slots; persists the touched array range and the length.
    fn heap_op(&self, insert: Option<u64>) -> Result<Option<u64>, BenchError> {
        self.with(|w| {
            let n = w.get(0) as usize;
            let key = |i: usize| w.get(8 + i);
            let (mut lo, mut hi, ret, len);
            match insert {
                Some(k) => {
                    if n == self.slots {
                        return None;
                    }
                    let mut i = n;
                    w.set(8 + i, k);
                    hi = i;
                    while i > 0 && key((i - 1) / 2) > key(i) {
                        let p = (i - 1) / 2;
                        let (a, b) = (key(p), key(i));
                        w.set(8 + p, b);
                        w.set(8 + i, a);
                        i = p;
                    }
                    lo = i;
                    len = n + 1;
                    ret = None;
                }
                None => {
                    if n == 0 {
                        return None;
                    }
                    ret = Some(key(0));
                    len = n - 1;
                    w.set(8, key(len));
                    let mut i = 0;
                    lo = 0;
                    loop {
                        let (l, r) = (2 * i + 1, 2 * i + 2);
                        let mut m = i;
                        if l < len && key(l) < key(m) {
                            m = l;
                        }
                        if r < len && key(r) < key(m) {
                            m = r;
                        }
                        if m == i {
                            break;
                        }
                        let (a, b) = (key(i), key(m));
                        w.set(8 + i, b);
                        w.set(8 + m, a);
                        i = m;
                    }
                    hi = i;
                }
            }
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            w.pwb(8 + lo, hi - lo + 1);
            w.pfence();
            w.set(0, len as u64);
            w.pwb(0, 1);
            w.psync();
            ret
        })
    }
}

/// The stack on a [`MutexPersist`].
impl PairOps for &MutexPersist {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.with(|w| {
            let n = w.get(0) as usize;
            if n == self.slots {
                return Err(BenchError::Pcomb("Mutex+persist stack full".into()));
            }
            w.set(8 + n, v);
            w.pwb(8 + n, 1);
            w.pfence();
            w.set(0, n as u64 + 1);
            w.pwb(0, 1);
            w.psync();
            Ok(())
        })?
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        self.with(|w| {
            let n = w.get(0) as usize;
            if n == 0 {
                return None;
            }
            w.set(0, n as u64 - 1);
            w.pwb(0, 1);
            w.psync();
            Some(w.get(8 + n - 1))
        })
    }
}

/// The queue (a ring of `slots`) on a [`MutexPersist`].
struct MutexPersistQueue<'a>(&'a MutexPersist);

impl PairOps for MutexPersistQueue<'_> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        let m = self.0;
        m.with(|w| {
            let (h, t) = (w.get(0), w.get(1));
            if t - h == m.slots as u64 {
                return Err(BenchError::Pcomb("Mutex+persist queue full".into()));
            }
            let i = 8 + (t as usize % m.slots);
            w.set(i, v);
            w.pwb(i, 1);
            w.pfence();
            w.set(1, t + 1);
            w.pwb(1, 1);
            w.psync();
            Ok(())
        })?
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        let m = self.0;
        m.with(|w| {
            let (h, t) = (w.get(0), w.get(1));
            if h == t {
                return None;
            }
            let v = w.get(8 + (h as usize % m.slots));
            w.set(0, h + 1);
            w.pwb(0, 1);
            w.psync();
            Some(v)
        })
    }
}

/// The heap on a [`MutexPersist`].
struct MutexPersistHeap<'a>(&'a MutexPersist);

impl PairOps for MutexPersistHeap<'_> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.0.heap_op(Some(v)).map(|_| ())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        self.0.heap_op(None)
    }
}

impl<T: PairOps + ?Sized> PairOps for Box<T> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        (**self).first(v)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        (**self).second()
    }
}

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
/// repetition 0: they do not depend on timing), and the `Mutex+persist` label.
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
        "{:<20} {:>3}{:<17} {:>8.3} ({:.3}-{:.3}) [{}]  pwb {:.2} pfence {:.2} psync {:.2}{}",
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
        if method.starts_with("Mutex+persist") {
            format!("  ({MUTEX_PERSIST_NOTE})")
        } else {
            String::new()
        }
    )
}
