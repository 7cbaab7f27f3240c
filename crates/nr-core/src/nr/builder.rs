//! Configuration and construction of a [`NodeReplicated`] object.

use std::marker::PhantomData;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use std::sync::Arc;

use super::commit::Commit;
use super::{NodeReplicated, COMMITS, NO_WRITE_OPTIONS, SINGLE};
use crate::config::{DEFAULT_LOG_ENTRIES, DEFAULT_THREADS_PER_REPLICA};
use crate::log::Log;
use crate::replica::Replica;
use crate::sync::{run_pinned, AtomicU8};
use crate::{BuildError, CommitLog, Dispatch, Topology};

/// Configures a [`NodeReplicated`] object.
///
/// * Replicas: by default one per node of [`Topology::detect`] (which honours the
///   `NR_VIRTUAL_NODES` override), each built in its node's memory; or one per node of an
///   explicit [`topology`](Self::topology), optionally split into
///   [`virtual_nodes`](Self::virtual_nodes); or an explicit [`replicas`](Self::replicas) count,
///   in which case nothing is placed or pinned.
/// * [`log_size`](Self::log_size): entries in the shared log (default 65536).
/// * [`threads_per_replica`](Self::threads_per_replica): how many threads may be registered with
///   each replica at once (default 64). Chosen at run time; it sizes the combining slots and
///   reader flags, while combiners scan only the slots ever used.
/// * Options beyond the basic algorithm, all off by default:
///   [`writes_as_reads`](Self::writes_as_reads) (§6), [`min_batch`](Self::min_batch) (§5.2),
///   [`log_growth`](Self::log_growth) (§6) and
///   [`dedicated_combiners`](Self::dedicated_combiners) (§4, §6).
/// * [`commit_log`](Self::commit_log): a hook that makes writes durable before they are applied
///   (none by default).
///
/// # Examples
///
/// ```
/// use nr_core::{Dispatch, NodeReplicated, Topology};
/// # #[derive(Clone, Default)] struct S(Vec<u32>);
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = u32; type Response = usize;
/// #     fn dispatch(&self, _: ()) -> usize { self.0.len() }
/// #     fn dispatch_mut(&mut self, v: u32) -> usize { self.0.push(v); self.0.len() }
/// # }
///
/// // Two virtual nodes carved out of whatever this machine has (at least 2 CPUs needed).
/// let topo = Topology::detect()?;
/// if topo.num_cpus() >= 2 {
///     let nr = NodeReplicated::builder()
///         .topology(topo.with_virtual_nodes(2)?)
///         .log_size(4096)
///         .threads_per_replica(16)
///         .build(|_replica| S::default())?;
///     assert_eq!(nr.replicas(), 2);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Builder<D: Dispatch> {
    topology: Option<Topology>,
    virtual_nodes: Option<usize>,
    replicas: Option<usize>,
    /// `max_replicas`: places for replicas added at run time; `None`: the built ones only.
    max_replicas: Option<usize>,
    log_entries: usize,
    /// Largest log size with `log_growth`; `None`: the log never grows.
    log_max_entries: Option<usize>,
    threads_per_replica: usize,
    writes_as_reads: bool,
    min_batch: usize,
    min_batch_wait: Duration,
    dedicated_combiners: bool,
    commit_log: Option<Arc<dyn CommitLog<D::WriteOperation>>>,
    /// `dormant_replicas`: how a dormant replica is rebuilt; `None`: off.
    copy_state: Option<fn(&mut D, &D)>,
    _structure: PhantomData<fn() -> D>,
}

impl<D: Dispatch> std::fmt::Debug for Builder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("topology", &self.topology)
            .field("virtual_nodes", &self.virtual_nodes)
            .field("replicas", &self.replicas)
            .field("max_replicas", &self.max_replicas)
            .field("log_entries", &self.log_entries)
            .field("log_max_entries", &self.log_max_entries)
            .field("threads_per_replica", &self.threads_per_replica)
            .field("writes_as_reads", &self.writes_as_reads)
            .field("min_batch", &self.min_batch)
            .field("min_batch_wait", &self.min_batch_wait)
            .field("dedicated_combiners", &self.dedicated_combiners)
            .field("commit_log", &self.commit_log.is_some())
            .field("dormant_replicas", &self.copy_state.is_some())
            .finish()
    }
}

impl<D: Dispatch> Clone for Builder<D> {
    fn clone(&self) -> Self {
        Self {
            topology: self.topology.clone(),
            virtual_nodes: self.virtual_nodes,
            replicas: self.replicas,
            commit_log: self.commit_log.clone(),
            ..*self
        }
    }
}

impl<D: Dispatch> Default for Builder<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: Dispatch> Builder<D> {
    /// A builder with the defaults described above.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let b = nr_core::Builder::<S>::new().replicas(2);
    /// # let _ = b;
    /// ```
    pub fn new() -> Self {
        Self {
            topology: None,
            virtual_nodes: None,
            replicas: None,
            max_replicas: None,
            log_entries: DEFAULT_LOG_ENTRIES,
            log_max_entries: None,
            threads_per_replica: DEFAULT_THREADS_PER_REPLICA,
            writes_as_reads: false,
            min_batch: 1,
            min_batch_wait: Duration::ZERO,
            dedicated_combiners: false,
            copy_state: None,
            commit_log: None,
            _structure: PhantomData,
        }
    }

    /// One replica per node of `topology`, each built by a thread pinned to that node's CPUs so
    /// that its memory is the node's (first touch).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// # use nr_core::{Builder, Topology};
    /// let b = Builder::<S>::new().topology(Topology::detect()?);
    /// # let _ = b;
    /// # Ok::<(), nr_core::TopologyError>(())
    /// ```
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// Split the topology (the one given to [`topology`](Self::topology), else the detected
    /// hardware one, ignoring `NR_VIRTUAL_NODES`) into `n` virtual nodes, one replica each; see
    /// [`Topology::with_shared_virtual_nodes`]. Virtual nodes keep their real memory node, so
    /// placement stays real; they exercise multi-replica behaviour, not NUMA speedups.
    ///
    /// `n` is checked by the same rule, with the same error, as the `NR_VIRTUAL_NODES`
    /// override: at least the number of real nodes, at most
    /// [`MAX_VIRTUAL_NODES_PER_CPU`](crate::MAX_VIRTUAL_NODES_PER_CPU) per CPU (beyond the
    /// CPU count, virtual nodes share CPUs).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated, Topology};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let cpus = Topology::detect_hardware()?.num_cpus();
    /// let nr = NodeReplicated::builder().virtual_nodes(cpus).build(|_| S)?;
    /// assert_eq!(nr.replicas(), cpus);
    ///
    /// // More than MAX_VIRTUAL_NODES_PER_CPU per CPU is refused: an error, not a panic.
    /// let too_many = cpus * nr_core::MAX_VIRTUAL_NODES_PER_CPU + 1;
    /// assert!(NodeReplicated::builder().virtual_nodes(too_many).build(|_| S).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn virtual_nodes(mut self, n: usize) -> Self {
        self.virtual_nodes = Some(n);
        self
    }

    /// Exactly `n` replicas. Without a [`topology`](Self::topology), replicas are built on the
    /// calling thread and no thread is pinned; with one, `n` must equal its node count.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let b = nr_core::Builder::<S>::new().replicas(4);
    /// # let _ = b;
    /// ```
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = Some(n);
        self
    }

    /// Room for replicas added at run time ([`NodeReplicated::add_replica`]): the object can
    /// hold up to `n` replicas over its life (a retired one keeps its place). Default: the
    /// replicas it is built with, and no more; a value below that count means the same.
    ///
    /// An object built with one replica and room for more uses the log from the start (the
    /// log-free single-replica path needs a replica that stays alone).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, Clone)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = nr_core::NodeReplicated::builder().replicas(1).max_replicas(4).build(|_| S)?;
    /// assert_eq!(nr.add_replica(0)?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_replicas(mut self, n: usize) -> Self {
        self.max_replicas = Some(n);
        self
    }

    /// Entries in the shared log: a power of two, at least `threads_per_replica`. A larger log
    /// lets replicas drift further apart before an appender must wait for (or help) the slowest.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let b = nr_core::Builder::<S>::new().log_size(1 << 20);
    /// # let _ = b;
    /// ```
    pub fn log_size(mut self, entries: usize) -> Self {
        self.log_entries = entries;
        self
    }

    /// The paper's §6 "Log length" (off by default): when the log is full, double it instead of
    /// waiting, up to `max_entries` entries (a power of two, at least [`log_size`](Self::log_size)).
    ///
    /// Without it, an appender that finds the log full (because some replica lags behind by a
    /// whole log) brings the lagging replicas up to date itself before it can append. With it,
    /// the appender starts a log segment twice as large at the tail and appends at once; the
    /// lagging replica replays the older segments at its own pace, on its own threads. Only
    /// once the log has reached `max_entries` does an appender help laggards as without the
    /// option. Older segments are kept until the object is dropped: at most `2 * max_entries`
    /// entries in all. Growth costs one extra load per log access whether it happens or not;
    /// see the crate README for when it pays.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = nr_core::NodeReplicated::builder()
    ///     .replicas(2)
    ///     .log_size(1024)
    ///     .log_growth(1 << 20)
    ///     .build(|_| S)?;
    /// assert_eq!(nr.log_size(), 1024);
    ///
    /// // The largest size must be a power of two, at least the initial one.
    /// let bad = nr_core::NodeReplicated::builder().log_size(1024).log_growth(512).build(|_| S);
    /// assert!(bad.is_err());
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn log_growth(mut self, max_entries: usize) -> Self {
        self.log_max_entries = Some(max_entries);
        self
    }

    /// A dedicated combiner per node (§4, §6 "Inactive replica"; off by default): lets
    /// [`NodeReplicated::run_combiner`] attach a thread that does all the combining of a replica
    /// and keeps it refreshed from the log. While one is attached, the replica's writers only
    /// post their operations and wait (they never combine), and the replica never lags by more
    /// than the combiner's idle sleep. Without an attached combiner (before it starts, after it
    /// stops) writers combine for themselves as usual, so nothing hangs. Each dedicated combiner
    /// takes a thread (ideally a core) of its own; see the crate README for a measurement.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// # #[derive(Default)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let nr = nr_core::NodeReplicated::builder()
    ///     .replicas(1)
    ///     .dedicated_combiners(true)
    ///     .build(|_| S::default())?;
    /// let stop = AtomicBool::new(false);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| nr.run_combiner(0, || stop.load(Ordering::Relaxed)).unwrap());
    ///     let mut h = nr.register(0).unwrap();
    ///     for _ in 0..100 {
    ///         h.execute_mut(1).unwrap();
    ///     }
    ///     assert_eq!(h.execute(()).unwrap(), 100);
    ///     stop.store(true, Ordering::Relaxed);
    /// });
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn dedicated_combiners(mut self, on: bool) -> Self {
        self.dedicated_combiners = on;
        self
    }

    /// How many threads may be registered with each replica at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let b = nr_core::Builder::<S>::new().threads_per_replica(28);
    /// # let _ = b;
    /// ```
    pub fn threads_per_replica(mut self, n: usize) -> Self {
        self.threads_per_replica = n;
        self
    }

    /// Tries every write as a read first (the paper's §6 "Fake update operations"; off by
    /// default): a write that [`Dispatch::dispatch_as_read`] answers runs on the local replica
    /// under the read side, with no log entry and no combining, in parallel with other reads;
    /// the others run as usual. Worth it when a good share of writes turn out to change nothing
    /// (removing absent keys, inserting present ones); otherwise it adds a read to every write.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let b = nr_core::Builder::<S>::new().writes_as_reads(true);
    /// # let _ = b;
    /// ```
    pub fn writes_as_reads(mut self, on: bool) -> Self {
        self.writes_as_reads = on;
        self
    }

    /// The paper's §5.2 `MIN_BATCH` (off by default): a combiner that finds fewer than `n`
    /// operations at hand (its own included) waits, at most `max_wait`, for more threads of its
    /// node to post theirs, so that one log append and one replay serve a fuller batch. While it
    /// waits it keeps the replica readable: with several replicas it refreshes its replica from
    /// the log up to the completed tail (the paper's "rather than idle waiting"); with one
    /// replica it gives the writer side back until it applies the batch.
    ///
    /// The wait is bounded, so fewer than `n` threads (or threads that stop writing) cost at
    /// most `max_wait` per batch, never a hang. `n <= 1` or a zero `max_wait` turns it off.
    /// Whether it pays depends on the workload and the machine: it trades latency of the
    /// waiting batch for fewer appends; see the crate README for a measurement.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # #[derive(Default)] struct S;
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let b = nr_core::Builder::<S>::new().min_batch(4, Duration::from_micros(20));
    /// # let _ = b;
    /// ```
    pub fn min_batch(mut self, n: usize, max_wait: Duration) -> Self {
        self.min_batch = n;
        self.min_batch_wait = max_wait;
        self
    }

    /// Makes every write durable before it is applied: `log`'s
    /// [`commit`](CommitLog::commit) is called with each write's log index and operation, in log
    /// order, in groups (one call for a combiner's batch, and for the batches of other replicas
    /// that are ready by then), before any replica applies those writes and before their
    /// writers return. Readers therefore never see a write that is not durable. An error or a
    /// panic in `commit` poisons the object.
    ///
    /// With several replicas (or room for more, [`max_replicas`](Self::max_replicas)) every
    /// write goes through the shared log. A replica that stays alone does without it: its
    /// combiner commits its batch (numbered by a counter of its own, the same index sequence)
    /// while readers go on against the old state, then applies it, so a write costs the commit
    /// plus what the log-free single-replica path costs. All other options work on both
    /// paths. [`writes_as_reads`](Self::writes_as_reads) stays available: a write answered
    /// as a read changed nothing, so it needs no durability, and it gets no log index.
    /// [`NodeReplicated::with_replica_state`] gives a replica's state with the number of log
    /// indexes it has applied (a snapshot position). Without a commit log (the default) no
    /// path pays for the hook beyond a branch on a field set here.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use nr_core::{CommitError, CommitLog, NodeReplicated};
    /// # #[derive(Default)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    ///
    /// /// Counts the calls and the entries.
    /// #[derive(Default)]
    /// struct Count(Mutex<(u64, u64)>);
    /// impl CommitLog<u64> for Count {
    ///     fn commit(&self, _first: u64, ops: &[&u64]) -> Result<(), CommitError> {
    ///         let mut c = self.0.lock().map_err(|_| CommitError::new("poisoned"))?;
    ///         *c = (c.0 + 1, c.1 + ops.len() as u64);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let log = Arc::new(Count::default());
    /// let nr = NodeReplicated::builder().replicas(1).commit_log(log.clone()).build(|_| S::default())?;
    /// nr.register(0)?.execute_mut(3)?;
    /// assert_eq!(*log.0.lock().unwrap(), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit_log(mut self, log: Arc<dyn CommitLog<D::WriteOperation>>) -> Self {
        self.commit_log = Some(log);
        self
    }
}

impl<D: Dispatch + Clone> Builder<D> {
    /// Lets a replica with no registered thread (no handle, no dedicated combiner) leave the
    /// log: it becomes *dormant* when its last handle drops (or, at build and after
    /// [`NodeReplicated::add_replica`], as long as it has none), so no writer waits for it or
    /// replays the log into it. The first registration on a dormant replica rebuilds it before
    /// returning: a copy of a live replica's state (`Clone::clone_from` into the dormant state,
    /// which may reuse its memory), taken under that replica's combiner lock at a log
    /// position, after which it follows the log again from there. At least one replica always
    /// stays live: the last one with handles does not go dormant when they drop.
    ///
    /// Off by default. Worth it when some replicas have no thread for long stretches (one
    /// thread on a two-node machine: 100% writes run about twice as fast, crate README, "An
    /// idle replica"); costly when threads register and drop often on a replica that is
    /// otherwise empty (each registration copies the whole structure). Needs `D: Clone`.
    /// [`NodeReplicated::with_replica_state`] on a dormant replica answers from a live one.
    /// Its closure must not register handles of the same object (a registration on a dormant
    /// replica waits for the combiner lock the closure holds); a handle dropped inside it
    /// leaves its replica awake if that lock stays taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{Dispatch, NodeReplicated};
    ///
    /// #[derive(Clone, Default)]
    /// struct Counter(u64);
    ///
    /// impl Dispatch for Counter {
    ///     type ReadOperation<'a> = ();
    ///     type WriteOperation = u64;
    ///     type Response = u64;
    ///     fn dispatch(&self, _: ()) -> u64 { self.0 }
    ///     fn dispatch_mut(&mut self, add: u64) -> u64 { self.0 += add; self.0 }
    /// }
    ///
    /// let nr = NodeReplicated::builder()
    ///     .replicas(2)
    ///     .log_size(64)
    ///     .dormant_replicas(true)
    ///     .build(|_| Counter::default())?;
    /// let mut h = nr.register(0)?;
    /// for _ in 0..1000 {
    ///     h.execute_mut(1)?; // replica 1 is dormant: nobody replays it
    /// }
    /// // Registering wakes replica 1 with a copy of replica 0's state.
    /// let mut h1 = nr.register(1)?;
    /// assert_eq!(h1.execute(())?, 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dormant_replicas(mut self, on: bool) -> Self {
        let copy: fn(&mut D, &D) = |dormant, live| dormant.clone_from(live);
        self.copy_state = on.then_some(copy);
        self
    }
}

impl<D> Builder<D>
where
    D: Dispatch + Send + Sync,
{
    /// Builds the object; `init(i)` constructs replica `i`. Every call must return an equal
    /// structure (see [`Dispatch`]'s determinism requirement).
    ///
    /// # Errors
    ///
    /// [`BuildError`] for an invalid configuration (log size, zero counts, a replica count that
    /// contradicts the topology), an unreadable topology or a bad `NR_VIRTUAL_NODES`, or a failure
    /// to pin a placement thread to a node's CPUs.
    ///
    /// # Panics
    ///
    /// A panic in `init` propagates to the caller.
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default)] struct S(u64);
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 = v; v }
    /// # }
    /// let nr = NodeReplicated::builder().replicas(2).build(|_| S(7))?;
    /// let mut h = nr.register(0)?;
    /// assert_eq!(h.execute(())?, 7);
    ///
    /// let err = NodeReplicated::builder().replicas(1).log_size(1000).build(|_| S(0));
    /// assert!(err.is_err(), "not a power of two");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build<F>(self, mut init: F) -> Result<NodeReplicated<D>, BuildError>
    where
        F: FnMut(usize) -> D + Send,
    {
        let threads = self.threads_per_replica;
        if threads == 0 {
            return Err(BuildError::Zero("threads_per_replica"));
        }
        let entries = self.log_entries;
        if !entries.is_power_of_two() || entries < 2 || entries < threads {
            return Err(BuildError::LogSize {
                entries,
                threads_per_replica: threads,
            });
        }
        let max_entries = self.log_max_entries.unwrap_or(entries);
        if !max_entries.is_power_of_two() || max_entries < entries {
            return Err(BuildError::LogGrowth {
                max_entries,
                entries,
            });
        }
        let explicit = match (self.topology, self.virtual_nodes) {
            (t, None) => t,
            (Some(t), Some(n)) => Some(t.with_shared_virtual_nodes(n)?),
            (None, Some(n)) => Some(Topology::detect_hardware()?.with_shared_virtual_nodes(n)?),
        };
        let topology = match (explicit, self.replicas) {
            (_, Some(0)) => return Err(BuildError::Zero("replicas")),
            (Some(t), Some(n)) if n != t.num_nodes() => {
                return Err(BuildError::ReplicaCountMismatch {
                    replicas: n,
                    nodes: t.num_nodes(),
                })
            }
            (Some(t), _) => Some(t),
            (None, Some(_)) => None,
            (None, None) => Some(Topology::detect()?),
        };
        let replicas: Vec<Box<Replica<D>>> = match &topology {
            Some(t) => t
                .nodes()
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let init = &mut init;
                    run_pinned(node.cpus(), move || {
                        Box::new(Replica::new(init(i), threads))
                    })
                })
                .collect::<Result<_, _>>()?,
            None => (0..self.replicas.unwrap_or(1))
                .map(|i| Box::new(Replica::new(init(i), threads)))
                .collect(),
        };
        let mut state = 0;
        // A replica that stays alone needs no shared log; with a commit log its writes are
        // ordered by the commit log alone (`commit.rs`, "One replica").
        let places = self.max_replicas.unwrap_or(0).max(replicas.len());
        let single = places == 1;
        if single {
            state |= SINGLE;
        }
        if self.commit_log.is_some() {
            state |= COMMITS;
        }
        if !self.writes_as_reads
            && (self.min_batch <= 1 || self.min_batch_wait.is_zero())
            && !self.dedicated_combiners
        {
            state |= NO_WRITE_OPTIONS;
        }
        let nr = NodeReplicated {
            log: Log::with_growth(entries, max_entries, replicas.len(), places),
            replicas: super::membership::Places::new(replicas, places),
            state: CachePadded::new(AtomicU8::new(state)),
            topology,
            writes_as_reads: self.writes_as_reads,
            min_batch: if self.min_batch_wait.is_zero() {
                1
            } else {
                self.min_batch.max(1)
            },
            min_batch_wait: self.min_batch_wait,
            dedicated: self.dedicated_combiners,
            single,
            commit: self.commit_log.map(Commit::new),
            copy_state: self.copy_state,
        };
        if nr.copy_state.is_some() {
            // No replica has a handle yet: all but the first go dormant (`dormancy.rs`).
            let changing = nr.replicas.lock_changes();
            for r in 1..nr.replicas.len() {
                nr.sleep(&changing, r);
            }
        }
        Ok(nr)
    }
}
