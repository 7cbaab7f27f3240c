//! Concurrent histories of NR objects, recorded and checked for linearizability against the
//! sequential models of `testkit`, with concurrency *across replicas* (issue 9).
//!
//! Every history: 1-3 replicas (one replica takes the inlined single-replica write, without the
//! log), 3-4 threads, each thread holding a handle on **every**
//! replica and moving to another replica from one operation to the next; 1-2 keys; every
//! written value distinct; a small log (so it wraps); threads released together by a barrier;
//! in half of the histories `dispatch_mut` yields the CPU in the middle of the update, which
//! widens the windows between writing the log and completing. KV objects also try their writes
//! as reads first in a quarter of the histories (`Builder::writes_as_reads`). In a third of the
//! histories combiners wait for batches of 2-3 (`Builder::min_batch`, bounded by 200 µs). In a
//! third, independently, the log grows when full (`Builder::log_growth`, up to 16 times its
//! size), so histories run across log segments. In a quarter, each replica has a dedicated
//! combiner thread (`Builder::dedicated_combiners`) that does all its combining. The stack has
//! reads (`Peek`).
//!
//! `kv_histories_with_replicas_added_and_removed_are_linearizable` (issue 21): 1-2 replicas at
//! the start, room for one more per thread; each thread works on replica `t % replicas`, and
//! the odd threads, half way through their program, add a replica (a copy of the one they are
//! on, `NodeReplicated::add_replica`), move to it, and when done drop their handle and retire it
//! (`NodeReplicated::remove_replica`), while the others go on.
//!
//! `kv_histories_with_dormant_replicas_are_linearizable` (issue 21, `Builder::dormant_replicas`):
//! 2-3 replicas with dormancy on; before every third operation a thread drops its handle and
//! registers on another replica, so replicas go dormant and wake while the others run.
//!
//! 2,000 histories per test by default (`NR_LIN_HISTORIES` for more, `NR_LIN_SEED` for another
//! seed); each test prints its share of operations that overlapped another thread's.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::Barrier;
use std::time::Duration;

use common::{env, Kv, KvWrite, Rng, Stack};
use nr_core::{Dispatch, NodeReplicated, ThreadHandle};
use testkit::models::{KvMap, KvOp, KvRet, PeekStack, PeekStackOp, PeekStackRet};
use testkit::{check, History, Recorder};

/// Wraps a structure so that its updates may yield the CPU half way.
#[derive(Clone)]
struct Yielding<D> {
    inner: D,
    yield_in_update: bool,
}

impl<D: Dispatch> Dispatch for Yielding<D> {
    type ReadOperation<'a>
        = D::ReadOperation<'a>
    where
        Self: 'a;
    type WriteOperation = D::WriteOperation;
    type Response = D::Response;

    fn dispatch(&self, op: Self::ReadOperation<'_>) -> D::Response {
        self.inner.dispatch(op)
    }

    fn dispatch_mut(&mut self, op: D::WriteOperation) -> D::Response {
        if self.yield_in_update {
            std::thread::yield_now();
        }
        self.inner.dispatch_mut(op)
    }

    fn dispatch_as_read(&self, op: &D::WriteOperation) -> Option<D::Response> {
        self.inner.dispatch_as_read(op)
    }
}

/// One history's configuration.
#[derive(Debug, Clone, Copy)]
struct Setting {
    replicas: usize,
    threads: usize,
    log: usize,
    yield_in_update: bool,
    writes_as_reads: bool,
    /// `Builder::min_batch` (1: off), with a 200 µs bound.
    min_batch: usize,
    /// `Builder::log_growth` up to 16 times `log`.
    log_growth: bool,
    /// A dedicated combiner thread per replica (`Builder::dedicated_combiners`).
    dedicated: bool,
}

impl Setting {
    fn random(rng: &mut Rng, writes_as_reads: bool) -> Self {
        Self {
            replicas: 1 + rng.below(3) as usize,
            threads: 3 + rng.below(2) as usize,
            log: [4, 8, 64][rng.below(3) as usize],
            yield_in_update: rng.below(2) == 0,
            writes_as_reads: writes_as_reads && rng.below(4) == 0,
            min_batch: if rng.below(3) == 0 {
                2 + rng.below(2) as usize
            } else {
                1
            },
            log_growth: rng.below(3) == 0,
            dedicated: rng.below(4) == 0,
        }
    }
}

/// Runs each thread's program against one NR object built from `init`, recording every call;
/// thread `t`'s `i`-th operation goes through its handle on replica `(t + i) % replicas`.
/// `apply` performs one model operation through a handle and returns the model's response.
fn run<D, Op, Ret>(
    s: Setting,
    programs: &[Vec<Op>],
    init: impl Fn() -> D + Send + Sync,
    apply: impl Fn(&mut ThreadHandle<'_, Yielding<D>>, &Op) -> Ret + Sync,
) -> History<Op, Ret>
where
    D: Dispatch + Send + Sync,
    Op: Clone + Send + Sync,
    Ret: Clone + Send,
{
    let nr = NodeReplicated::builder()
        .replicas(s.replicas)
        .log_size(s.log)
        .log_growth(if s.log_growth { s.log * 16 } else { s.log })
        .threads_per_replica(s.threads)
        .dedicated_combiners(s.dedicated)
        .writes_as_reads(s.writes_as_reads)
        .min_batch(s.min_batch, Duration::from_micros(200))
        .build(|_| Yielding {
            inner: init(),
            yield_in_update: s.yield_in_update,
        })
        .expect("valid configuration");
    let recorder = Recorder::new();
    let start = Barrier::new(programs.len());
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let combiners: Vec<_> = (0..if s.dedicated { s.replicas } else { 0 })
            .map(|r| {
                let (nr, stop) = (&nr, &stop);
                scope.spawn(move || {
                    nr.run_combiner(r, || stop.load(std::sync::atomic::Ordering::Relaxed))
                        .expect("dedicated combiner")
                })
            })
            .collect();
        let mut workers = Vec::new();
        for (t, program) in programs.iter().enumerate() {
            let (nr, start, apply) = (&nr, &start, &apply);
            let mut rec = recorder.thread();
            workers.push(scope.spawn(move || {
                let mut handles: Vec<_> = (0..s.replicas)
                    .map(|r| nr.register(r).expect("slot available"))
                    .collect();
                start.wait();
                for (i, op) in program.iter().enumerate() {
                    let h = &mut handles[(t + i) % s.replicas];
                    let id = rec.invoke(op.clone());
                    let ret = apply(h, op);
                    rec.complete(id, ret);
                }
            }));
        }
        for w in workers {
            w.join().expect("worker panicked");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for c in combiners {
            c.join().expect("combiner panicked");
        }
    });
    recorder.into_history()
}

/// Runs `NR_LIN_HISTORIES` random histories through `one` and checks each; prints the overlap
/// share of all of them together.
fn many(name: &str, mut one: impl FnMut(&mut Rng, u64) -> f64) {
    let histories = env("NR_LIN_HISTORIES", 2_000);
    let seed = env("NR_LIN_SEED", 0x0009_2026) | 1;
    let mut rng = Rng(seed);
    let mut share = 0.0;
    for h in 0..histories {
        share += one(&mut rng, h);
    }
    let share = share / histories as f64;
    println!(
        "{name}: {histories} histories linearizable (seed {seed}); overlap share {:.1}%",
        100.0 * share
    );
    assert!(
        share > 0.3,
        "{name}: only {:.1}% of operations overlapped; the check proves little",
        100.0 * share
    );
}

/// Applies one model operation through a handle of a `Kv` object; returns the model's response.
fn apply_kv(h: &mut ThreadHandle<'_, Yielding<Kv>>, op: &KvOp) -> KvRet {
    match *op {
        KvOp::Get(k) => KvRet::Get(h.execute(k).unwrap()),
        KvOp::Put(k, v) => KvRet::Put(h.execute_mut(KvWrite::Put(k, v)).unwrap()),
        KvOp::Remove(k) => KvRet::Remove(h.execute_mut(KvWrite::Remove(k)).unwrap()),
    }
}

/// One program of 6-12 KV operations per thread over `keys` keys: 4/9 gets, 4/9 puts (each of
/// a value never written before), 1/9 removes.
fn kv_programs(rng: &mut Rng, threads: usize, keys: u64, next_value: &mut u64) -> Vec<Vec<KvOp>> {
    (0..threads)
        .map(|_| {
            (0..6 + rng.below(7))
                .map(|_| match rng.below(9) {
                    0..=3 => KvOp::Get(rng.below(keys)),
                    4..=7 => {
                        *next_value += 1;
                        KvOp::Put(rng.below(keys), *next_value)
                    }
                    _ => KvOp::Remove(rng.below(keys)),
                })
                .collect()
        })
        .collect()
}

#[test]
fn kv_histories_across_replicas_are_linearizable() {
    let mut next_value = 0u64;
    many("kv", |rng, h| {
        let s = Setting::random(rng, true);
        let keys = 1 + rng.below(2);
        let programs = kv_programs(rng, s.threads, keys, &mut next_value);
        let history = run(s, &programs, Kv::default, apply_kv);
        if let Err(v) = check(KvMap::new(), &history) {
            panic!("history {h}, {s:?}, {keys} keys: {v}");
        }
        history.overlap_share()
    });
}

#[test]
fn stack_histories_with_reads_across_replicas_are_linearizable() {
    let mut next_value = 0u64;
    many("stack", |rng, h| {
        let s = Setting::random(rng, false);
        let programs: Vec<Vec<PeekStackOp>> = (0..s.threads)
            .map(|_| {
                (0..6 + rng.below(7))
                    .map(|_| match rng.below(7) {
                        0..=2 => PeekStackOp::Peek,
                        3..=4 => {
                            next_value += 1;
                            PeekStackOp::Push(next_value)
                        }
                        _ => PeekStackOp::Pop,
                    })
                    .collect()
            })
            .collect();
        let history = run(s, &programs, Stack::default, |h, op| match *op {
            PeekStackOp::Push(v) => {
                h.execute_mut(Some(v)).unwrap();
                PeekStackRet::Pushed
            }
            PeekStackOp::Pop => PeekStackRet::Popped(h.execute_mut(None).unwrap()),
            PeekStackOp::Peek => PeekStackRet::Peeked(h.execute(()).unwrap()),
        });
        if let Err(v) = check(PeekStack::new(), &history) {
            panic!("history {h}, {s:?}: {v}");
        }
        history.overlap_share()
    });
}

/// The KV object of `run_membership` and `run_dormant`: `s`'s replicas, log and threads, with
/// `options` applied to the builder.
fn kv_object(
    s: Setting,
    options: impl FnOnce(nr_core::Builder<Yielding<Kv>>) -> nr_core::Builder<Yielding<Kv>>,
) -> NodeReplicated<Yielding<Kv>> {
    options(
        NodeReplicated::builder()
            .replicas(s.replicas)
            .log_size(s.log)
            .threads_per_replica(s.threads),
    )
    .build(|_| Yielding {
        inner: Kv::default(),
        yield_in_update: s.yield_in_update,
    })
    .expect("valid configuration")
}

/// Runs `thread(t, program, op, start)` on one thread per program, all released together by
/// `start` (which `thread` waits on before its first operation), where `op(h, o)` records and
/// applies operation `o` through handle `h`. Returns the history and the sum of the counts the
/// threads return.
fn run_kv<'n>(
    programs: &[Vec<KvOp>],
    thread: impl Fn(
            usize,
            &[KvOp],
            &mut dyn FnMut(&mut ThreadHandle<'n, Yielding<Kv>>, &KvOp),
            &Barrier,
        ) -> usize
        + Sync,
) -> (History<KvOp, KvRet>, usize) {
    let recorder = Recorder::new();
    let start = Barrier::new(programs.len());
    let total = std::thread::scope(|scope| {
        let workers: Vec<_> = programs
            .iter()
            .enumerate()
            .map(|(t, program)| {
                let (start, thread) = (&start, &thread);
                let mut rec = recorder.thread();
                scope.spawn(move || {
                    let mut op = |h: &mut ThreadHandle<'n, Yielding<Kv>>, o: &KvOp| {
                        let id = rec.invoke(o.clone());
                        let ret = apply_kv(h, o);
                        rec.complete(id, ret);
                    };
                    thread(t, program, &mut op, start)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .sum()
    });
    (recorder.into_history(), total)
}

/// Like `run`, with replicas added and removed while the threads run (see the module docs):
/// returns the history and how many replicas were added.
fn run_membership(s: Setting, programs: &[Vec<KvOp>]) -> (History<KvOp, KvRet>, usize) {
    let nr = kv_object(s, |b| b.max_replicas(s.replicas + s.threads));
    run_kv(programs, |t, program, op, start| {
        let home = t % s.replicas;
        let mut h = nr.register(home).expect("slot available");
        let mut own = None;
        start.wait();
        for (i, o) in program.iter().enumerate() {
            if t % 2 == 1 && i == program.len() / 2 {
                let r = nr.add_replica(home).expect("a place per thread");
                h = nr.register(r).expect("slot available");
                own = Some(r);
            }
            op(&mut h, o);
        }
        drop(h);
        if let Some(r) = own {
            nr.remove_replica(r)
                .expect("the thread's own replica, handle dropped");
        }
        usize::from(own.is_some())
    })
}

/// `many` over KV histories run by `run` (plain objects: no option of `Setting`), with
/// `replicas(rng)` replicas at the start; returns the sum of the counts `run` reports.
fn many_kv(
    name: &str,
    replicas: impl Fn(&mut Rng) -> usize,
    run: impl Fn(Setting, &[Vec<KvOp>]) -> (History<KvOp, KvRet>, usize),
) -> usize {
    let mut next_value = 0u64;
    let mut total = 0;
    many(name, |rng, h| {
        let mut s = Setting::random(rng, false);
        s.replicas = replicas(rng);
        (s.min_batch, s.log_growth, s.dedicated) = (1, false, false);
        let keys = 1 + rng.below(2);
        let programs = kv_programs(rng, s.threads, keys, &mut next_value);
        let (history, n) = run(s, &programs);
        total += n;
        if let Err(v) = check(KvMap::new(), &history) {
            panic!("history {h}, {s:?}, {keys} keys: {v}");
        }
        history.overlap_share()
    });
    total
}

#[test]
fn kv_histories_with_replicas_added_and_removed_are_linearizable() {
    let added = many_kv(
        "kv, replicas added and removed",
        |rng| 1 + rng.below(2) as usize,
        run_membership,
    );
    println!("replicas added (and retired) in all: {added}");
}

/// Like `run_membership`, with dormant replicas (`Builder::dormant_replicas`): each thread
/// starts on replica `t % replicas` and, before every third operation, drops its handle and
/// registers on replica `(t + i) % replicas`, so replicas go dormant when their last handle
/// drops and wake (a copy of a live replica) when a thread registers, racing with the other
/// threads' operations, drops and registrations. Returns the history and how many
/// registrations moved a thread.
fn run_dormant(s: Setting, programs: &[Vec<KvOp>]) -> (History<KvOp, KvRet>, usize) {
    let nr = kv_object(s, |b| b.dormant_replicas(true));
    run_kv(programs, |t, program, op, start| {
        let mut h = nr.register(t % s.replicas).expect("slot available");
        let mut moves = 0;
        start.wait();
        for (i, o) in program.iter().enumerate() {
            if (t + i) % 3 == 2 {
                drop(h);
                h = nr.register((t + i) % s.replicas).expect("slot available");
                moves += 1;
            }
            op(&mut h, o);
        }
        moves
    })
}

#[test]
fn kv_histories_with_dormant_replicas_are_linearizable() {
    // 2-3 replicas: one has nothing to put to sleep.
    let moves = many_kv(
        "kv, dormant replicas",
        |rng| 2 + rng.below(2) as usize,
        run_dormant,
    );
    println!("registrations that moved a thread, in all: {moves}");
}
