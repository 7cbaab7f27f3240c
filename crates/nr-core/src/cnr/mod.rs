//! CNR: node replication with one log per partition, for structures that are already concurrent
//! (Bhardwaj et al., *NrOS: Effective Replication and Sharing in an Operating System*, OSDI'21,
//! §4 "Concurrent node replication"; \[CNR\] in `docs/REFERENCES.md`).
//!
//! NR funnels every write of an object through one log, so writes to unrelated parts of a
//! structure (two keys of a sharded map, two files of a table) wait for each other. CNR keeps
//! NR's replicas and flat combining but gives the object several logs: the structure itself is
//! concurrent (its writes take `&self`), and the user maps each operation to the log it must go
//! through ([`LogMapper`]). Operations that conflict go to the same log, which orders them;
//! operations on different logs commute and run in parallel, each log with its own combiner on
//! each replica. An operation may name every log ([`Route::Scan`]), and then it is ordered
//! against all of them.
//!
//! # How it works
//!
//! - **Writes to one log** are posted to the thread's slot of that log's combining area on its
//!   replica (the same slots, combiner lock and parking as NR's, `replica.rs`). The thread that
//!   wins the combiner lock collects the posted writes, reserves and fills entries of that log,
//!   raises the log's `completed_tail` past them, then brings its replica's *local tail of that
//!   log* up to its batch: other replicas' entries are replayed, its own applied from the slots.
//!   Replicas apply a log's entries in log order; entries of different logs are applied
//!   concurrently, by different combiners, to the concurrent structure.
//! - **Reads** go to their log only: a read waits until its replica has applied every entry of
//!   its log below that log's `completed_tail` (catching up itself if no combiner is busy), then
//!   runs on the replica, in parallel with that log's and other logs' combiners. A read routed to
//!   every log waits for all of them.
//! - **Scans** (writes routed to every log) take the object's scan lock, reserve one entry in
//!   every log, and write in each the same *scan entry* (its sequence number and its position in
//!   every log). On each replica the scan entry is a barrier: a combiner that reaches it in log
//!   `l` stops there and *arrives*; it then helps the other logs of that replica up to their copy
//!   of the entry (taking their combiner locks only with `try_lock`). The last log to arrive runs
//!   the scan, once per replica, while every log of the replica is held just before it; then all
//!   go on. Scans take the lock to append, so they appear in the same order in every log, and a
//!   barrier never waits for a scan that some log can only reach past a later one.
//!
//! # The read-order invariant, with concurrent replay
//!
//! NR's readers are shut out while a combiner changes its replica, so a replica only ever shows
//! entries below `completed_tail` to reads. CNR's readers are not shut out (the structure is
//! concurrent), so CNR keeps the invariant differently: **nothing applies an entry before the
//! log's `completed_tail` is past it.** A combiner raises `completed_tail` past its batch
//! *before* it replays, a reader or helper replays only up to a `completed_tail` it read, and a
//! scan's executor raises every log's `completed_tail` past the scan first. So whatever a read
//! sees is below `completed_tail`, and any later read, on any replica, waits for it. Entries
//! below `completed_tail` may still be being written by their appenders (who never block between
//! reserving and writing), and a replay waits for them.
//!
//! # What CNR does not have (yet)
//!
//! NR's options are not available here: no commit hook (`Builder::commit_log`), no log growth,
//! no `MIN_BATCH`, no dedicated combiners, no writes-as-reads. The topology is not consulted:
//! replicas are numbered `0..replicas` and callers register with the one they choose.

mod handle;
mod replay;
mod single;

use std::marker::PhantomData;

use crossbeam_utils::CachePadded;

use crate::config::{DEFAULT_LOG_ENTRIES, DEFAULT_THREADS_PER_REPLICA};
use crate::error::{BuildError, Poisoned};
use crate::log::Log;
use crate::replica::Replica;
use crate::sync::{AtomicBool, AtomicUsize, Ordering, UnsafeCell};
use crate::Dispatch;

pub use handle::CnrHandle;

/// The log(s) an operation goes through; see [`LogMapper`].
///
/// # Examples
///
/// ```
/// use nr_core::cnr::Route;
/// assert_ne!(Route::Log(0), Route::Scan);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Log `i % logs`: ordered against every other operation of that log only.
    Log(usize),
    /// Every log: ordered against every operation of the object (a *scan*).
    Scan,
}

/// Maps an operation to the log(s) it must go through.
///
/// Two operations that do not commute (a write and another write or read of the same key) must
/// map to the same log, or one of them to [`Route::Scan`]; commuting operations may map to
/// different logs and then run in parallel.
///
/// # Examples
///
/// ```
/// use nr_core::cnr::{LogMapper, Route};
///
/// struct Put(u64, u64);
/// impl LogMapper for Put {
///     fn route(&self, logs: usize) -> Route {
///         Route::Log(self.0 as usize % logs)
///     }
/// }
/// assert_eq!(Put(5, 1).route(4), Route::Log(1));
/// ```
pub trait LogMapper {
    /// The log(s) this operation goes through, for an object with `logs` logs. A
    /// [`Route::Log`] index is taken modulo `logs`.
    fn route(&self, logs: usize) -> Route;
}

/// A *concurrent* data structure that [`ConcurrentReplicated`] replicates with one log per
/// partition.
///
/// Unlike [`Dispatch`], writes take `&self`: the structure synchronizes its own partitions (a
/// sharded map with a lock per shard, say), and CNR only orders the operations of each log. As in
/// NR, every replica applies every write, so [`dispatch_mut`](Self::dispatch_mut) must be
/// deterministic given the writes of the operation's log(s) before it, all replicas must start
/// equal, and operations must not block or call back into the same object. A panic in
/// `dispatch_mut` poisons the object (see [`Poisoned`]).
///
/// # Examples
///
/// ```
/// use nr_core::cnr::{ConcurrentDispatch, LogMapper, Route};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// /// Two counters, one per log.
/// #[derive(Default)]
/// struct Counters([AtomicU64; 2]);
///
/// #[derive(Clone, Copy)]
/// struct Add(usize);
/// impl LogMapper for Add {
///     fn route(&self, _logs: usize) -> Route { Route::Log(self.0) }
/// }
/// struct Get(usize);
/// impl LogMapper for Get {
///     fn route(&self, _logs: usize) -> Route { Route::Log(self.0) }
/// }
///
/// impl ConcurrentDispatch for Counters {
///     type ReadOperation<'a> = Get;
///     type WriteOperation = Add;
///     type Response = u64;
///     fn dispatch(&self, op: Get) -> u64 { self.0[op.0].load(Ordering::Relaxed) }
///     fn dispatch_mut(&self, op: Add) -> u64 { self.0[op.0].fetch_add(1, Ordering::Relaxed) + 1 }
/// }
///
/// let c = Counters::default();
/// assert_eq!(c.dispatch_mut(Add(1)), 1);
/// assert_eq!(c.dispatch(Get(1)), 1);
/// ```
pub trait ConcurrentDispatch {
    /// A read-only operation; it may borrow from the caller.
    type ReadOperation<'a>: LogMapper
    where
        Self: 'a;

    /// A mutating operation, written into the log(s) it maps to and applied by every replica
    /// (so `Clone + Send + Sync`, as [`Dispatch::WriteOperation`]).
    type WriteOperation: Clone + Send + Sync + LogMapper;

    /// The result of an operation; often computed by another thread (a combiner).
    type Response: Send;

    /// Executes a read-only operation on this replica.
    fn dispatch(&self, op: Self::ReadOperation<'_>) -> Self::Response;

    /// Executes a mutating operation on this replica, concurrently with operations of other
    /// logs and with reads.
    fn dispatch_mut(&self, op: Self::WriteOperation) -> Self::Response;
}

/// What a replica's combining area of one log holds: the write operations and responses only
/// (the structure lives in [`CnrReplica::data`]). It lets CNR reuse NR's slots and combiner
/// lock (`Replica`), whose `data` is then empty and never dispatched to.
struct Ops<W, R>(PhantomData<fn() -> (W, R)>);

impl<W: Clone + Send + Sync, R: Send> Dispatch for Ops<W, R> {
    type ReadOperation<'a>
        = ()
    where
        Self: 'a;
    type WriteOperation = W;
    type Response = R;
    fn dispatch(&self, _: ()) -> R {
        unreachable!("invariant: CNR never reads through a combining area")
    }
    fn dispatch_mut(&mut self, _: W) -> R {
        unreachable!("invariant: CNR applies operations with `apply_own_with`")
    }
}

/// One log's combining area on one replica (slots, combiner lock, batch scratch).
type Combining<D> =
    Replica<Ops<<D as ConcurrentDispatch>::WriteOperation, <D as ConcurrentDispatch>::Response>>;

/// A log entry: a write of that log, or a copy of a scan (written into every log).
#[derive(Clone)]
enum Entry<W> {
    Op(W),
    Scan(ScanEntry<W>),
}

/// A scan as written into every log (see the module docs).
#[derive(Clone)]
struct ScanEntry<W> {
    /// The scan's number: scans are appended one at a time, so in the same order in every log.
    seq: usize,
    /// The replica that issued it: the one whose executor keeps the response.
    origin: usize,
    /// Its index in every log.
    positions: Box<[usize]>,
    op: W,
}

/// A replica's scan barrier.
///
/// | word | meaning | written by |
/// |---|---|---|
/// | `done` | scans executed on this replica (the next one to run is `done`) | the executor, Release |
/// | `arrived` | logs held at scan `done`'s entry | arrivers (`fetch_add`); reset by the executor |
/// | `response` | the response of the last scan issued from this replica | its executor here |
///
/// With one replica (`single.rs`: no log, no entries) a scan holds every log itself: `arrived`
/// is every log while it runs and 0 otherwise (reads wait while it is not 0), `done` counts the
/// scans run, and `response` is unused.
struct ScanBarrier<R> {
    done: CachePadded<AtomicUsize>,
    arrived: CachePadded<AtomicUsize>,
    response: UnsafeCell<Option<R>>,
}

/// One replica: the concurrent structure and one combining area per log.
struct CnrReplica<D: ConcurrentDispatch> {
    data: D,
    combining: Box<[Combining<D>]>,
    scan: ScanBarrier<D::Response>,
}

/// A concurrent structure replicated with one log per partition (CNR; see the module docs).
///
/// Build it with [`ConcurrentReplicated::builder`], register each thread with a replica
/// ([`register`](Self::register)), and call [`CnrHandle::execute`] (reads) or
/// [`CnrHandle::execute_mut`] (writes and scans).
///
/// # Poisoning
///
/// A panic in `dispatch_mut` or in `Clone` or `Drop` of a write operation, while a thread
/// combines, poisons the object as in [`NodeReplicated`](crate::NodeReplicated): the panic
/// propagates on that thread, and every operation from then on returns [`Poisoned`].
///
/// # Examples
///
/// ```
/// use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Default)]
/// struct Counters([AtomicU64; 2]);
/// #[derive(Clone, Copy)]
/// struct Add(usize);
/// impl LogMapper for Add { fn route(&self, _: usize) -> Route { Route::Log(self.0) } }
/// struct Get(usize);
/// impl LogMapper for Get { fn route(&self, _: usize) -> Route { Route::Log(self.0) } }
/// impl ConcurrentDispatch for Counters {
///     type ReadOperation<'a> = Get;
///     type WriteOperation = Add;
///     type Response = u64;
///     fn dispatch(&self, op: Get) -> u64 { self.0[op.0].load(Ordering::Relaxed) }
///     fn dispatch_mut(&self, op: Add) -> u64 { self.0[op.0].fetch_add(1, Ordering::Relaxed) + 1 }
/// }
///
/// let cnr = ConcurrentReplicated::builder().logs(2).replicas(2).build(|_| Counters::default())?;
/// let mut h = cnr.register(1)?;
/// h.execute_mut(Add(0))?;
/// assert_eq!(h.execute(Get(0))?, 1);
/// assert_eq!(cnr.register(0)?.execute(Get(0))?, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ConcurrentReplicated<D: ConcurrentDispatch> {
    logs: Box<[Log<Entry<D::WriteOperation>>]>,
    replicas: Box<[CnrReplica<D>]>,
    /// Held while a scan is appended and until its issuer took its response.
    scan_lock: CachePadded<AtomicBool>,
    /// The next scan's number; written only under `scan_lock`.
    next_scan: AtomicUsize,
    poisoned: CachePadded<AtomicBool>,
}

// SAFETY: the structure is shared by every thread of its replica (`D: Sync`: reads and
// `dispatch_mut(&self)` run on it concurrently) and used, dropped, from whichever thread
// (`D: Send`); write operations move between threads through the slots and the logs and are
// read by several replicas at once (`W: Send + Sync`, required by the trait); responses move
// from combiners to owners (`R: Send`). The cells (slots, batches, scan responses) follow the
// protocols documented at their accesses.
unsafe impl<D: ConcurrentDispatch + Send + Sync> Sync for ConcurrentReplicated<D> {}
// SAFETY: owning the object owns its structures, logs and pending operations and responses.
unsafe impl<D: ConcurrentDispatch + Send> Send for ConcurrentReplicated<D> {}

impl<D: ConcurrentDispatch> std::fmt::Debug for ConcurrentReplicated<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrentReplicated")
            .field("logs", &self.logs)
            .field("replicas", &self.replicas.len())
            .field("poisoned", &self.is_poisoned())
            .finish_non_exhaustive()
    }
}

/// Configures a [`ConcurrentReplicated`] object: made by [`ConcurrentReplicated::builder`].
///
/// # Examples
///
/// ```
/// # use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
/// # struct S; #[derive(Clone)] struct W;
/// # impl LogMapper for W { fn route(&self, _: usize) -> Route { Route::Scan } }
/// # impl ConcurrentDispatch for S {
/// #     type ReadOperation<'a> = W; type WriteOperation = W; type Response = ();
/// #     fn dispatch(&self, _: W) {} fn dispatch_mut(&self, _: W) {}
/// # }
/// let cnr = ConcurrentReplicated::builder()
///     .logs(4)
///     .replicas(2)
///     .log_size(1024)
///     .threads_per_replica(8)
///     .build(|_| S)?;
/// assert_eq!(cnr.logs(), 4);
/// # Ok::<(), nr_core::BuildError>(())
/// ```
pub struct CnrBuilder<D> {
    logs: usize,
    replicas: usize,
    log_size: usize,
    threads: usize,
    _structure: PhantomData<fn() -> D>,
}

impl<D> std::fmt::Debug for CnrBuilder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnrBuilder")
            .field("logs", &self.logs)
            .field("replicas", &self.replicas)
            .field("log_size", &self.log_size)
            .field("threads", &self.threads)
            .finish()
    }
}

impl<D: ConcurrentDispatch> CnrBuilder<D> {
    /// The number of logs (default 1).
    ///
    /// # Examples
    ///
    /// See [`CnrBuilder`].
    pub fn logs(mut self, logs: usize) -> Self {
        self.logs = logs;
        self
    }

    /// The number of replicas (default 1).
    ///
    /// # Examples
    ///
    /// See [`CnrBuilder`].
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// The number of entries of each log: a power of two, at least 2 and at least
    /// `threads_per_replica` (default 65,536).
    ///
    /// # Examples
    ///
    /// See [`CnrBuilder`].
    pub fn log_size(mut self, entries: usize) -> Self {
        self.log_size = entries;
        self
    }

    /// How many threads may register with each replica at once (default 64).
    ///
    /// # Examples
    ///
    /// See [`CnrBuilder`].
    pub fn threads_per_replica(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Builds the object; `init(r)` makes replica `r`'s structure (all must be equal).
    ///
    /// # Errors
    ///
    /// [`BuildError::Zero`] if logs, replicas or threads per replica is 0;
    /// [`BuildError::LogSize`] for a log size that is not a power of two, or below 2 or the
    /// threads per replica.
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
    /// # struct S; #[derive(Clone)] struct W;
    /// # impl LogMapper for W { fn route(&self, _: usize) -> Route { Route::Scan } }
    /// # impl ConcurrentDispatch for S {
    /// #     type ReadOperation<'a> = W; type WriteOperation = W; type Response = ();
    /// #     fn dispatch(&self, _: W) {} fn dispatch_mut(&self, _: W) {}
    /// # }
    /// let err = ConcurrentReplicated::builder().logs(0).build(|_| S).unwrap_err();
    /// assert_eq!(err.to_string(), "logs must be at least 1");
    /// ```
    pub fn build(
        self,
        mut init: impl FnMut(usize) -> D,
    ) -> Result<ConcurrentReplicated<D>, BuildError> {
        for (value, what) in [
            (self.logs, "logs"),
            (self.replicas, "replicas"),
            (self.threads, "threads_per_replica"),
        ] {
            if value == 0 {
                return Err(BuildError::Zero(what));
            }
        }
        if !self.log_size.is_power_of_two() || self.log_size < 2 || self.log_size < self.threads {
            return Err(BuildError::LogSize {
                entries: self.log_size,
                threads_per_replica: self.threads,
            });
        }
        Ok(ConcurrentReplicated {
            logs: (0..self.logs)
                .map(|_| {
                    Log::with_growth(self.log_size, self.log_size, self.replicas, self.replicas)
                })
                .collect(),
            replicas: (0..self.replicas)
                .map(|r| CnrReplica {
                    data: init(r),
                    combining: (0..self.logs)
                        .map(|_| Replica::new(Ops(PhantomData), self.threads))
                        .collect(),
                    scan: ScanBarrier {
                        done: CachePadded::new(AtomicUsize::new(0)),
                        arrived: CachePadded::new(AtomicUsize::new(0)),
                        response: UnsafeCell::new(None),
                    },
                })
                .collect(),
            scan_lock: CachePadded::new(AtomicBool::new(false)),
            next_scan: AtomicUsize::new(0),
            poisoned: CachePadded::new(AtomicBool::new(false)),
        })
    }
}

impl<D: ConcurrentDispatch> ConcurrentReplicated<D> {
    /// A builder with the defaults: 1 log, 1 replica, 65,536 entries per log, 64 threads per
    /// replica.
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
    /// # struct S; #[derive(Clone)] struct W;
    /// # impl LogMapper for W { fn route(&self, _: usize) -> Route { Route::Scan } }
    /// # impl ConcurrentDispatch for S {
    /// #     type ReadOperation<'a> = W; type WriteOperation = W; type Response = ();
    /// #     fn dispatch(&self, _: W) {} fn dispatch_mut(&self, _: W) {}
    /// # }
    /// let cnr = ConcurrentReplicated::builder().logs(4).build(|_| S)?;
    /// assert_eq!((cnr.logs(), cnr.replicas()), (4, 1));
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn builder() -> CnrBuilder<D> {
        CnrBuilder {
            logs: 1,
            replicas: 1,
            log_size: DEFAULT_LOG_ENTRIES,
            threads: DEFAULT_THREADS_PER_REPLICA,
            _structure: PhantomData,
        }
    }

    /// The number of logs.
    ///
    /// # Examples
    ///
    /// See [`builder`](Self::builder).
    pub fn logs(&self) -> usize {
        self.logs.len()
    }

    /// The number of replicas.
    ///
    /// # Examples
    ///
    /// See [`builder`](Self::builder).
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }

    /// Whether a panic in user code has poisoned the object (see
    /// [Poisoning](Self#poisoning)).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
    /// # struct S; #[derive(Clone)] struct W;
    /// # impl LogMapper for W { fn route(&self, _: usize) -> Route { Route::Scan } }
    /// # impl ConcurrentDispatch for S {
    /// #     type ReadOperation<'a> = W; type WriteOperation = W; type Response = ();
    /// #     fn dispatch(&self, _: W) {} fn dispatch_mut(&self, _: W) {}
    /// # }
    /// assert!(!ConcurrentReplicated::builder().build(|_| S)?.is_poisoned());
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn is_poisoned(&self) -> bool {
        // Acquire: pairs with the Release in `poison`.
        self.poisoned.load(Ordering::Acquire)
    }

    fn poison(&self) {
        // Release: pairs with the Acquire in `is_poisoned`; a thread that then takes a combiner
        // lock released after this store sees it.
        self.poisoned.store(true, Ordering::Release);
    }

    fn check(&self) -> Result<(), Poisoned> {
        if self.is_poisoned() {
            Err(Poisoned)
        } else {
            Ok(())
        }
    }
}

// Poisoning makes a panic observable, as with `std::sync::Mutex`.
impl<D: ConcurrentDispatch> std::panic::RefUnwindSafe for ConcurrentReplicated<D> {}
impl<D: ConcurrentDispatch> std::panic::UnwindSafe for ConcurrentReplicated<D> {}
