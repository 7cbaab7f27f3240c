//! The structure benchmarks (PPoPP'22 Figures 4-7): stack, queue and heap pairs.

#![allow(clippy::disallowed_types)] // the Mutex baselines are std's Mutex, what users would pick

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hint::black_box;
use std::sync::Mutex;

use crossbeam_queue::SegQueue;
use pcomb::pmem::Hardware;
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};

use super::adapters::{built, register};
use super::baselines::{MutexPersist, MutexPersistHeap, MutexPersistQueue, MutexVec};
use super::{drive, Outcome, TempRegion, Xorshift};
use crate::BenchError;

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

    /// The workload setting recorded with every CSV row of this panel.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::pcomb_bench::Structure;
    ///
    /// let p = Structure::Heap(64).panel();
    /// assert_eq!((p.name.as_str(), p.size.as_str()), ("heap-64", "capacity 64; 32 keys at the start"));
    /// ```
    pub fn panel(self) -> super::record::Panel {
        let work = "; local work 1..=512 after every op";
        let (size, mix, distribution) = match self {
            Structure::Stack => (
                "empty at the start".to_string(),
                "push/pop pairs",
                "value = thread id",
            ),
            Structure::Queue => (
                "empty at the start".to_string(),
                "enqueue/dequeue pairs",
                "value = thread id",
            ),
            Structure::Heap(cap) => (
                format!("capacity {cap}; {} keys at the start", cap / 2),
                "insert/delete-min pairs",
                "keys uniform in 0..1000000 (seeded per thread)",
            ),
        };
        super::record::Panel {
            name: self.name(),
            size,
            mix: format!("{mix}{work}"),
            distribution: distribution.into(),
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
pub(super) trait PairOps {
    /// push / enqueue / insert.
    fn first(&mut self, v: u64) -> Result<(), BenchError>;
    /// pop / dequeue / delete-min.
    fn second(&mut self) -> Result<Option<u64>, BenchError>;
}
