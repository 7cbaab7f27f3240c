//! The thread driver: exactly N pinned threads, a start barrier, a fixed duration or a fixed
//! number of operations, one seeded RNG per thread.

use std::hint::black_box;
use std::time::{Duration, Instant};

use nr_core::{pin_current_thread, Dispatch, Topology};

use crate::sync::{scope, sleep, AtomicBool, Barrier, Ordering};
use crate::{BenchError, Handle, Method, Op, Replicas, Rng, Setup, Workload};

/// Operations a thread runs between two looks at the stop flag.
const BATCH: u64 = 64;

/// What one run measured.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let s = benches::Sample { ops: 2_000_000, elapsed: Duration::from_secs(2) };
/// assert_eq!(s.mops(), 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Operations completed by all threads together.
    pub ops: u64,
    /// From the earliest worker's start to the latest worker's end (each worker reads the
    /// clock itself, after the start barrier and after its last operation).
    pub elapsed: Duration,
}

impl Sample {
    /// Throughput in millions of operations per second.
    ///
    /// # Examples
    ///
    /// See [`Sample`].
    pub fn mops(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE) / 1e6
    }
}

/// How long each thread runs.
#[derive(Clone, Copy, Debug)]
enum Limit {
    /// Until the driver raises the stop flag after this long.
    Time(Duration),
    /// Exactly this many operations per thread.
    Ops(u64),
}

/// Runs one operation of `w` through `h`.
#[inline]
fn one<W: Workload, H: Handle<W::D>>(
    w: &W,
    h: &mut H,
    thread: usize,
    rng: &mut Rng,
) -> Result<(), BenchError> {
    let r = match w.next_op_for(thread, rng) {
        Op::Read(read) => h.read(w.read_op(&read)),
        Op::Write(op) => h.write(op),
    };
    // By reference: moving the response into `black_box` copies it through the stack, which
    // for some layouts costs a store-forwarding stall that belongs to no method.
    black_box(&r);
    match r {
        Ok(_) => Ok(()),
        Err(_) => Err(BenchError::Poisoned),
    }
}

fn drive<W, M>(
    w: &W,
    m: &M,
    topology: &Topology,
    threads: usize,
    seed: u64,
    limit: Limit,
) -> Result<Sample, BenchError>
where
    W: Workload,
    M: Method<W::D>,
{
    if threads == 0 {
        return Err(BenchError::Config("threads must be at least 1".into()));
    }
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (start, stop) = (&start, &stop);
                s.spawn(move || -> Result<(u64, Instant, Instant), BenchError> {
                    // Every method's thread `t` runs on the same CPU; more threads than CPUs
                    // wrap around (oversubscription).
                    let ready = pin_current_thread(&[topology.cpu_for_thread(t)])
                        .map_err(BenchError::from)
                        .and_then(|()| m.handle(t, threads));
                    // Reach the barrier even on error, or the others would wait forever.
                    start.wait();
                    let mut h = ready?;
                    let mut rng = Rng::new(seed, t as u64);
                    // Each worker times itself: the run lasts from the earliest start to the
                    // latest end, whenever the (unpinned) main thread gets to run.
                    let began = Instant::now();
                    let n = match limit {
                        Limit::Ops(n) => {
                            for _ in 0..n {
                                one(w, &mut h, t, &mut rng)?;
                            }
                            n
                        }
                        Limit::Time(_) => {
                            let mut n = 0;
                            // Relaxed: the flag only ends the loop; the ops count is handed back
                            // through `join`, which synchronizes.
                            while !stop.load(Ordering::Relaxed) {
                                for _ in 0..BATCH {
                                    one(w, &mut h, t, &mut rng)?;
                                }
                                n += BATCH;
                            }
                            n
                        }
                    };
                    Ok((n, began, Instant::now()))
                })
            })
            .collect();
        start.wait();
        if let Limit::Time(d) = limit {
            sleep(d);
            // Relaxed: see the load above.
            stop.store(true, Ordering::Relaxed);
        }
        let mut ops = 0;
        let mut error = None;
        let mut span: Option<(Instant, Instant)> = None;
        for worker in workers {
            match worker.join() {
                Ok(Ok((n, began, ended))) => {
                    ops += n;
                    span = Some(match span {
                        None => (began, ended),
                        Some((b, e)) => (b.min(began), e.max(ended)),
                    });
                }
                Ok(Err(e)) => {
                    error.get_or_insert(e);
                }
                Err(_) => {
                    error.get_or_insert(BenchError::ThreadPanicked);
                }
            }
        }
        match (error, span) {
            (Some(e), _) => Err(e),
            (None, Some((began, ended))) => Ok(Sample {
                ops,
                elapsed: ended - began,
            }),
            (None, None) => Err(BenchError::Config("no thread ran".into())),
        }
    })
}

/// Runs `threads` threads of workload `w` through method `m` for `duration`; thread `t` is
/// pinned to `topology.cpu_for_thread(t)` and seeded with `(seed, t)`.
///
/// # Errors
///
/// [`BenchError`] when a thread cannot be pinned or get a handle, or panics.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use benches::{run_for, HashMapWorkload, Method, Replicas, RwLock, Setup, Workload};
///
/// let topology = nr_core::Topology::detect()?;
/// let w = HashMapWorkload::new(100, 10);
/// let (make, prefill) = (|| w.make(), w.prefill());
/// let setup = Setup { make: &make, prefill: &prefill, threads: 2, topology: &topology, replicas: Replicas::PerNode };
/// let rwl = RwLock::build(&setup)?;
/// let s = run_for(&w, &rwl, &topology, 2, Duration::from_millis(10), 1)?;
/// assert!(s.ops > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_for<W, M>(
    w: &W,
    m: &M,
    topology: &Topology,
    threads: usize,
    duration: Duration,
    seed: u64,
) -> Result<Sample, BenchError>
where
    W: Workload,
    M: Method<W::D>,
{
    drive(w, m, topology, threads, seed, Limit::Time(duration))
}

/// Runs `threads` threads of `ops_per_thread` operations each (pinned and seeded as in
/// [`run_for`]); the sample's time runs from the earliest worker's start to the latest
/// worker's end.
///
/// # Errors
///
/// As [`run_for`].
///
/// # Examples
///
/// ```
/// use benches::{run_ops, HashMapWorkload, Method, Replicas, SpinLock, Setup, Workload};
///
/// let topology = nr_core::Topology::detect()?;
/// let w = HashMapWorkload::new(100, 10);
/// let (make, prefill) = (|| w.make(), w.prefill());
/// let setup = Setup { make: &make, prefill: &prefill, threads: 2, topology: &topology, replicas: Replicas::PerNode };
/// let sl = SpinLock::build(&setup)?;
/// assert_eq!(run_ops(&w, &sl, &topology, 2, 500, 1)?.ops, 1000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_ops<W, M>(
    w: &W,
    m: &M,
    topology: &Topology,
    threads: usize,
    ops_per_thread: u64,
    seed: u64,
) -> Result<Sample, BenchError>
where
    W: Workload,
    M: Method<W::D>,
{
    drive(w, m, topology, threads, seed, Limit::Ops(ops_per_thread))
}

/// The bare sequential structure on one thread (pinned to `topology.cpu_for_thread(0)`), no
/// synchronization at all: the baseline of the cost table.
///
/// # Errors
///
/// [`BenchError`] when the thread cannot be pinned.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use benches::{run_bare, HashMapWorkload};
///
/// let topology = nr_core::Topology::detect()?;
/// let s = run_bare(&HashMapWorkload::new(100, 10), &topology, Duration::from_millis(5), 1)?;
/// assert!(s.ops > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_bare<W: Workload>(
    w: &W,
    topology: &Topology,
    duration: Duration,
    seed: u64,
) -> Result<Sample, BenchError> {
    scope(|s| {
        s.spawn(|| {
            pin_current_thread(&[topology.cpu_for_thread(0)])?;
            let mut d = w.make();
            for op in w.prefill() {
                d.dispatch_mut(op);
            }
            let mut rng = Rng::new(seed, 0);
            let (t0, mut ops) = (Instant::now(), 0);
            let end = t0 + duration;
            while Instant::now() < end {
                for _ in 0..BATCH {
                    match w.next_op(&mut rng) {
                        Op::Read(read) => black_box(d.dispatch(w.read_op(&read))),
                        Op::Write(op) => black_box(d.dispatch_mut(op)),
                    };
                }
                ops += BATCH;
            }
            Ok(Sample {
                ops,
                elapsed: t0.elapsed(),
            })
        })
        .join()
        .map_err(|_| BenchError::ThreadPanicked)?
    })
}

/// A workload with its initial contents computed once, and the placement every method is built
/// with.
///
/// # Examples
///
/// ```
/// use benches::{Bench, HashMapWorkload, Prepared, Replicas, RwLock};
///
/// let topology = nr_core::Topology::detect()?;
/// let p = Prepared::new(HashMapWorkload::new(100, 10), topology, Replicas::PerNode, 2);
/// let rwl = p.bind::<RwLock<_>>()?;
/// assert_eq!(rwl.name(), "RWL");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Prepared<W: Workload> {
    /// The workload.
    pub workload: W,
    prefill: Vec<<W::D as Dispatch>::WriteOperation>,
    /// The topology threads are pinned by.
    pub topology: Topology,
    /// NR's replica placement.
    pub replicas: Replicas,
    /// The most threads any run will use.
    pub max_threads: usize,
}

impl<W: Workload> std::fmt::Debug for Prepared<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("workload", &self.workload.info())
            .field("prefill", &self.prefill.len())
            .field("replicas", &self.replicas)
            .field("max_threads", &self.max_threads)
            .finish_non_exhaustive()
    }
}

impl<W: Workload> Prepared<W> {
    /// Computes `workload`'s prefill once.
    ///
    /// # Examples
    ///
    /// See [`Prepared`].
    pub fn new(workload: W, topology: Topology, replicas: Replicas, max_threads: usize) -> Self {
        let prefill = workload.prefill();
        Self {
            workload,
            prefill,
            topology,
            replicas,
            max_threads: max_threads.max(1),
        }
    }

    /// Builds method `M` for this workload, as a [`Contender`].
    ///
    /// # Errors
    ///
    /// As [`Method::build`].
    ///
    /// # Examples
    ///
    /// See [`Prepared`].
    pub fn bind<M: Method<W::D>>(&self) -> Result<Contender<'_, W, M>, BenchError> {
        Ok(Contender {
            prepared: self,
            method: self.build::<M>()?,
        })
    }

    fn build<M: Method<W::D>>(&self) -> Result<M, BenchError> {
        let make = || self.workload.make();
        let setup = Setup {
            make: &make,
            prefill: &self.prefill,
            threads: self.max_threads,
            topology: &self.topology,
            replicas: self.replicas,
        };
        M::build(&setup)
    }
}

/// A method built for a prepared workload.
#[derive(Debug)]
pub struct Contender<'p, W: Workload, M> {
    prepared: &'p Prepared<W>,
    method: M,
}

/// A method built for a workload, with the types erased, so a figure can hold all its methods
/// in one list.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use benches::{Bench, HashMapWorkload, Prepared, Replicas, SpinLock};
///
/// let p = Prepared::new(HashMapWorkload::new(10, 0), nr_core::Topology::detect()?, Replicas::PerNode, 1);
/// let methods: Vec<Box<dyn Bench + '_>> = vec![Box::new(p.bind::<SpinLock<_>>()?)];
/// for m in &methods {
///     // A fixed number of operations (a timed run, `run_for`, may finish none on a busy machine).
///     assert_eq!(m.run_ops(1, 100, 0)?.ops, 100);
///     let _timed = m.run_for(1, Duration::from_millis(1), 0)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Bench: Sync {
    /// The method's name.
    fn name(&self) -> &'static str;
    /// The copies of the structure a run of `threads` threads really uses (see
    /// [`Method::replicas`]).
    fn replicas(&self, threads: usize) -> usize;
    /// Replaces the method's structure by a fresh one with the workload's initial contents, so
    /// the next run starts from the same state as every other method's (structures age: a
    /// priority queue under insert/deleteMin gets faster as it runs).
    ///
    /// # Errors
    ///
    /// As [`Method::build`].
    fn rebuild(&mut self) -> Result<(), BenchError>;
    /// See [`run_for`].
    ///
    /// # Errors
    ///
    /// As [`run_for`]; also [`BenchError::Config`] for more threads than the method was built for.
    fn run_for(&self, threads: usize, duration: Duration, seed: u64) -> Result<Sample, BenchError>;
    /// See [`run_ops`].
    ///
    /// # Errors
    ///
    /// As [`Bench::run_for`].
    fn run_ops(&self, threads: usize, ops_per_thread: u64, seed: u64)
        -> Result<Sample, BenchError>;
}

impl<W: Workload, M: Method<W::D>> Contender<'_, W, M> {
    fn check(&self, threads: usize) -> Result<(), BenchError> {
        if threads > self.prepared.max_threads {
            return Err(BenchError::Config(format!(
                "{threads} threads asked, but {} was built for {}",
                M::NAME,
                self.prepared.max_threads
            )));
        }
        Ok(())
    }
}

impl<W: Workload, M: Method<W::D>> Bench for Contender<'_, W, M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn replicas(&self, threads: usize) -> usize {
        self.method.replicas(threads)
    }

    fn rebuild(&mut self) -> Result<(), BenchError> {
        self.method = self.prepared.build::<M>()?;
        Ok(())
    }

    fn run_for(&self, threads: usize, duration: Duration, seed: u64) -> Result<Sample, BenchError> {
        self.check(threads)?;
        let p = self.prepared;
        run_for(
            &p.workload,
            &self.method,
            &p.topology,
            threads,
            duration,
            seed,
        )
    }

    fn run_ops(
        &self,
        threads: usize,
        ops_per_thread: u64,
        seed: u64,
    ) -> Result<Sample, BenchError> {
        self.check(threads)?;
        let p = self.prepared;
        run_ops(
            &p.workload,
            &self.method,
            &p.topology,
            threads,
            ops_per_thread,
            seed,
        )
    }
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`; 0 where the clock
/// is missing): on a loaded machine a steadier cost figure than wall-clock throughput.
///
/// # Examples
///
/// ```
/// let a = benches::thread_cpu_ns();
/// let mut x = 0u64;
/// for i in 0..1_000_000u64 {
///     x = std::hint::black_box(x.wrapping_add(i));
/// }
/// assert!(benches::thread_cpu_ns() >= a);
/// ```
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY:
    // - `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
