//! Sweeps: every method of a figure, at every thread count, repeated and interleaved, each
//! result printed with its setting and kept as a CSV [`Row`].

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use nr_core::{Dispatch, Topology};

use crate::report::{Machine, Row};
use crate::{
    run_bare, Bench, BenchError, FlatCombining, FlatCombiningRw, Method, Nr, Prepared, Replicas,
    RwLock, SpinLock, Workload, WorkloadInfo,
};

/// The settings of a sweep (everything but the workload).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use benches::sweep::Sweep;
/// use benches::{HashMapWorkload, Replicas, Workload};
///
/// let topology = nr_core::Topology::detect()?;
/// let sweep = Sweep::new(vec![1, 2], Duration::from_millis(5), 1, 7, topology, Replicas::PerNode)?;
/// let p = sweep.prepare(HashMapWorkload::new(100, 10));
/// let mut methods = Vec::new();
/// sweep.add_black_box(&mut methods, &p)?;
/// let rows = sweep.run_panel("hashmap", &p.workload.info(), &mut methods)?;
/// assert_eq!(rows.len(), 2 * methods.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Sweep {
    /// Thread counts, in order.
    pub threads: Vec<usize>,
    /// Duration of one run.
    pub duration: Duration,
    /// Repetitions of every (method, threads) point.
    pub reps: usize,
    /// Run seed (thread `t` of every run uses stream `t` of it).
    pub seed: u64,
    /// Only methods whose name is in this list (case-insensitive), if set.
    pub methods: Option<Vec<String>>,
    /// The topology threads are pinned by.
    pub topology: Topology,
    /// NR's replica placement.
    pub replicas: Replicas,
    /// The machine, recorded with every row.
    pub machine: Machine,
    /// Progress over the whole sweep (hidden when stderr is not a terminal).
    pub progress: ProgressBar,
}

impl Sweep {
    /// A sweep with the machine detected and a progress bar.
    ///
    /// # Errors
    ///
    /// [`BenchError::Config`] for no thread counts, a zero thread count or zero repetitions;
    /// [`BenchError::Topology`] when the machine cannot be described.
    ///
    /// # Examples
    ///
    /// See [`Sweep`].
    pub fn new(
        threads: Vec<usize>,
        duration: Duration,
        reps: usize,
        seed: u64,
        topology: Topology,
        replicas: Replicas,
    ) -> Result<Self, BenchError> {
        if threads.is_empty() || threads.contains(&0) || reps == 0 {
            return Err(BenchError::Config(
                "need at least one thread count, none zero, and at least one repetition".into(),
            ));
        }
        let progress = ProgressBar::new(0);
        progress.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} runs {msg}")
                .map_err(|e| BenchError::Config(e.to_string()))?,
        );
        Ok(Self {
            threads,
            duration,
            reps,
            seed,
            methods: None,
            topology,
            replicas,
            machine: Machine::detect()?,
            progress,
        })
    }

    /// The most threads of any run.
    ///
    /// # Examples
    ///
    /// ```
    /// # let topology = nr_core::Topology::detect()?;
    /// let s = benches::sweep::Sweep::new(vec![1, 8, 2], std::time::Duration::ZERO, 1, 0, topology, benches::Replicas::PerNode)?;
    /// assert_eq!(s.max_threads(), 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_threads(&self) -> usize {
        self.threads.iter().copied().max().unwrap_or(1)
    }

    /// Whether method `name` passes the `methods` filter.
    ///
    /// # Examples
    ///
    /// ```
    /// # let topology = nr_core::Topology::detect()?;
    /// let mut s = benches::sweep::Sweep::new(vec![1], std::time::Duration::ZERO, 1, 0, topology, benches::Replicas::PerNode)?;
    /// s.methods = Some(vec!["nr".into(), "FC+".into()]);
    /// assert!(s.allows("NR") && s.allows("fc+") && !s.allows("FC"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allows(&self, name: &str) -> bool {
        self.methods
            .as_ref()
            .is_none_or(|m| m.iter().any(|x| x.eq_ignore_ascii_case(name)))
    }

    /// Prepares `workload` for this sweep's placement and thread counts.
    ///
    /// # Examples
    ///
    /// See [`Sweep`].
    pub fn prepare<W: Workload>(&self, workload: W) -> Prepared<W> {
        Prepared::new(
            workload,
            self.topology.clone(),
            self.replicas,
            self.max_threads(),
        )
    }

    /// Builds method `M` for `p` and appends it to `list`, if the filter allows it.
    ///
    /// # Errors
    ///
    /// As [`Method::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::{HashMapWorkload, SpinLock};
    /// # let topology = nr_core::Topology::detect()?;
    /// let s = benches::sweep::Sweep::new(vec![1], std::time::Duration::ZERO, 1, 0, topology, benches::Replicas::PerNode)?;
    /// let p = s.prepare(HashMapWorkload::new(10, 0));
    /// let mut list = Vec::new();
    /// s.add::<_, SpinLock<_>>(&mut list, &p)?;
    /// assert_eq!(list[0].name(), "SL");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add<'p, W, M>(
        &self,
        list: &mut Vec<Box<dyn Bench + 'p>>,
        p: &'p Prepared<W>,
    ) -> Result<(), BenchError>
    where
        W: Workload + 'p,
        M: Method<W::D> + 'p,
    {
        if self.allows(M::NAME) {
            list.push(Box::new(p.bind::<M>()?));
        }
        Ok(())
    }

    /// Appends the black-box methods (NR, SL, RWL, FC, FC+) that pass the filter.
    ///
    /// # Errors
    ///
    /// As [`Method::build`].
    ///
    /// # Examples
    ///
    /// See [`Sweep`].
    pub fn add_black_box<'p, W>(
        &self,
        list: &mut Vec<Box<dyn Bench + 'p>>,
        p: &'p Prepared<W>,
    ) -> Result<(), BenchError>
    where
        W: Workload + 'p,
        W::D: Send + Sync + 'p,
        for<'a> <W::D as Dispatch>::ReadOperation<'a>: Send,
    {
        self.add::<W, Nr<W::D>>(list, p)?;
        self.add::<W, SpinLock<W::D>>(list, p)?;
        self.add::<W, RwLock<W::D>>(list, p)?;
        self.add::<W, FlatCombining<W::D>>(list, p)?;
        self.add::<W, FlatCombiningRw<W::D>>(list, p)?;
        Ok(())
    }

    fn row(&self, figure: &str, info: WorkloadInfo, threads: usize, rep: usize) -> Row {
        Row {
            figure: figure.into(),
            panel: info.panel,
            method: String::new(),
            threads,
            oversubscribed: threads > self.topology.num_cpus(),
            rep,
            ops: 0,
            elapsed_s: 0.0,
            mops: 0.0,
            replicas: 1,
            size: info.size,
            mix: info.mix,
            distribution: info.distribution,
            seed: self.seed,
            duration_s: self.duration.as_secs_f64(),
            cores: self.machine.cores,
            numa_nodes: self.machine.numa_nodes,
            cpu_model: self.machine.cpu_model.clone(),
            topology: self.topology.source().to_string(),
            git: self.machine.git.clone(),
        }
    }

    fn print(&self, r: &Row) {
        self.progress.inc(1);
        self.progress.suspend(|| {
            println!(
                "{:<12} {:<22} {:<9} {:>3}{} threads  rep {}  {:>9.3} Mops/s  ({} ops in {:.3} s; \
                 replicas {}, {}, {}, {}, seed {})",
                r.figure,
                r.panel,
                r.method,
                r.threads,
                if r.oversubscribed {
                    " (oversubscribed)"
                } else {
                    ""
                },
                r.rep,
                r.mops,
                r.ops,
                r.elapsed_s,
                r.replicas,
                r.size,
                r.mix,
                r.distribution,
                r.seed
            );
        });
    }

    /// Runs every method of `methods` at every thread count, `reps` times; returns one row per
    /// measured run.
    ///
    /// Every run, measured or not, starts from a fresh, identically prefilled structure
    /// ([`Bench::rebuild`]), so no method measures a structure another run has aged. At each
    /// thread count every method first runs once unmeasured (warm-up: caches, page faults, the
    /// allocator's free lists), then the repetitions follow with the methods interleaved and
    /// their order rotated by one place per repetition, so no method is always first.
    ///
    /// # Errors
    ///
    /// The first run's [`BenchError`].
    ///
    /// # Examples
    ///
    /// See [`Sweep`].
    pub fn run_panel(
        &self,
        figure: &str,
        info: &WorkloadInfo,
        methods: &mut [Box<dyn Bench + '_>],
    ) -> Result<Vec<Row>, BenchError> {
        self.progress
            .inc_length((self.threads.len() * (self.reps + 1) * methods.len()) as u64);
        let mut rows = Vec::new();
        let n = methods.len();
        for &threads in &self.threads {
            for m in methods.iter_mut() {
                m.rebuild()?;
                m.run_for(threads, self.duration, self.seed)?;
                self.progress.inc(1);
            }
            for rep in 0..self.reps {
                for i in 0..n {
                    let m = &mut methods[(i + rep) % n];
                    m.rebuild()?;
                    let s = m.run_for(threads, self.duration, self.seed)?;
                    let mut r = self.row(figure, info.clone(), threads, rep);
                    r.method = m.name().into();
                    r.replicas = m.replicas(threads);
                    r.ops = s.ops;
                    r.elapsed_s = s.elapsed.as_secs_f64();
                    r.mops = s.mops();
                    self.print(&r);
                    rows.push(r);
                }
            }
        }
        Ok(rows)
    }

    /// The cost of NR's machinery: NR with one replica at one thread against the bare
    /// sequential structure (no synchronization), `reps` times. Both start every run from a
    /// fresh, identically prefilled structure; each runs once unmeasured first, and the order
    /// alternates per repetition. Rows have figure `cost`, methods `bare` and `NR`.
    ///
    /// # Errors
    ///
    /// The first run's [`BenchError`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let topology = nr_core::Topology::detect()?;
    /// let s = benches::sweep::Sweep::new(vec![1], std::time::Duration::from_millis(2), 1, 0, topology, benches::Replicas::PerNode)?;
    /// let rows = s.cost(benches::HashMapWorkload::new(10, 10), "hashmap")?;
    /// assert_eq!(rows.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["bare", "NR"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cost<W>(&self, workload: W, structure: &str) -> Result<Vec<Row>, BenchError>
    where
        W: Workload,
        W::D: Send + Sync,
    {
        let p = Prepared::new(workload, self.topology.clone(), Replicas::Exactly(1), 1);
        let mut nr = p.bind::<Nr<W::D>>()?;
        self.progress.inc_length((2 * (self.reps + 1)) as u64);
        // Warm-up, unmeasured: one run of each.
        run_bare(&p.workload, &self.topology, self.duration, self.seed)?;
        nr.run_for(1, self.duration, self.seed)?;
        self.progress.inc(2);
        let mut rows = Vec::new();
        for rep in 0..self.reps {
            let order = if rep % 2 == 0 {
                ["bare", "NR"]
            } else {
                ["NR", "bare"]
            };
            for method in order {
                let s = if method == "bare" {
                    // Builds and prefills its own structure.
                    run_bare(&p.workload, &self.topology, self.duration, self.seed)?
                } else {
                    nr.rebuild()?;
                    nr.run_for(1, self.duration, self.seed)?
                };
                let mut r = self.row("cost", p.workload.info(), 1, rep);
                r.panel = format!("{structure} {}", r.panel);
                r.method = method.into();
                r.replicas = 1;
                r.ops = s.ops;
                r.elapsed_s = s.elapsed.as_secs_f64();
                r.mops = s.mops();
                self.print(&r);
                rows.push(r);
            }
        }
        Ok(rows)
    }
}
