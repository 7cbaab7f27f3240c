//! `Durable<D>`: a node-replicated object whose writes are durable before they are applied.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use nr_core::{CommitError, CommitLog, Dispatch, NodeReplicated, ThreadHandle};
use pmem::{Persist, Region};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::store::{Medium, Stats, Store, SyncPolicy};
use crate::sync::{lock, Arc, Mutex};
use crate::tracked::{Tracked, TrackedOp};
use crate::DurableError;

/// What a structure needs to be made durable: nr-core's [`Dispatch`], and serde for the state
/// (snapshots), the writes (the log) and the responses (kept per thread for
/// [`DurableHandle::last_applied`]). Implemented for every type that has them.
///
/// # Examples
///
/// ```
/// fn durable<D: nr_durable::DurableDispatch>() {}
/// # #[derive(serde::Serialize, serde::Deserialize)] struct S(u64);
/// # impl nr_core::Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
/// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
/// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
/// # }
/// durable::<S>();
/// ```
pub trait DurableDispatch:
    Dispatch<
        WriteOperation: Serialize + DeserializeOwned,
        Response: Clone + Sync + Serialize + DeserializeOwned,
    > + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<D> DurableDispatch for D where
    D: Dispatch<
            WriteOperation: Serialize + DeserializeOwned,
            Response: Clone + Sync + Serialize + DeserializeOwned,
        > + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

type Op<D> = TrackedOp<<D as Dispatch>::WriteOperation>;

/// Opens the store on a caller's region (`Builder::region`), deferred to `open`.
type OpenRegion<D> =
    Box<dyn FnOnce() -> Result<(Store<Op<D>>, crate::Recovery<Tracked<D>, Op<D>>), DurableError>>;

/// nr-core's commit hook: appends each group of writes to the store at `base + index`.
struct Hook<D: DurableDispatch> {
    store: Store<Op<D>>,
    base: u64,
    /// The error that poisoned the object, for the writers that get `Poisoned`.
    failure: Mutex<Option<Arc<DurableError>>>,
}

/// A durability failure as the source of nr-core's `CommitError`.
#[derive(Debug)]
struct Shared(Arc<DurableError>);

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Shared {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl<D: DurableDispatch> CommitLog<Op<D>> for Hook<D> {
    fn commit(&self, first: u64, ops: &[&Op<D>]) -> Result<(), CommitError> {
        // nr-core's indexes start at 0 on every open; positions go on from the recovered end.
        let pos = self.base + first;
        self.store.append(pos, ops).map_err(|e| {
            let e = Arc::new(e);
            lock(&self.failure).get_or_insert_with(|| Arc::clone(&e));
            CommitError::new(Shared(e))
        })
    }
}

/// Configures and opens a [`Durable`] object; from [`Durable::builder`].
///
/// # Examples
///
/// ```
/// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
/// # impl nr_core::Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
/// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
/// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
/// # }
/// let dir = tempfile::tempdir()?;
/// let b = nr_durable::Durable::<S>::builder()
///     .replicas(2)
///     .medium(nr_durable::Medium::File { dir: dir.path().to_owned() });
/// let counter = b.open(S::default)?;
/// assert_eq!(counter.replicas(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Builder<D: DurableDispatch> {
    nr: nr_core::Builder<Tracked<D>>,
    replicas: usize,
    medium: Option<Medium>,
    region: Option<OpenRegion<D>>,
    sync: SyncPolicy,
}

impl<D: DurableDispatch> std::fmt::Debug for Builder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("replicas", &self.replicas)
            .field("medium", &self.medium)
            .field("region", &self.region.is_some())
            .field("sync", &self.sync)
            .finish_non_exhaustive()
    }
}

impl<D: DurableDispatch> Builder<D> {
    fn new() -> Self {
        Self {
            nr: nr_core::Builder::new(),
            replicas: 1,
            medium: None,
            region: None,
            sync: SyncPolicy::EveryBatch,
        }
    }

    /// The number of replicas (default 1).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let b = nr_durable::Durable::<S>::builder().replicas(3);
    /// ```
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// The size of nr-core's operation log in entries (see `nr_core::Builder::log_size`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let b = nr_durable::Durable::<S>::builder().log_size(1 << 12);
    /// ```
    pub fn log_size(mut self, entries: usize) -> Self {
        self.nr = self.nr.log_size(entries);
        self
    }

    /// How many threads may register with each replica at once (see
    /// `nr_core::Builder::threads_per_replica`).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let b = nr_durable::Durable::<S>::builder().threads_per_replica(64);
    /// ```
    pub fn threads_per_replica(mut self, n: usize) -> Self {
        self.nr = self.nr.threads_per_replica(n);
        self
    }

    /// Where the log and snapshots live (required, or [`Builder::region`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let b = nr_durable::Durable::<S>::builder()
    ///     .medium(nr_durable::Medium::Pmem { path: "/mnt/pmem/kv".into(), capacity: 1 << 30 });
    /// ```
    pub fn medium(mut self, medium: Medium) -> Self {
        self.medium = Some(medium);
        self
    }

    /// The log in a region the caller made (a simulated one, for crash tests), snapshots in
    /// `snapshot_dir`; replaces [`Builder::medium`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let region = pmem::Region::anonymous(nr_durable::PMEM_LAYOUT, 1 << 16)?;
    /// let c = nr_durable::Durable::<S>::builder().region(region, dir.path()).open(S::default)?;
    /// assert_eq!(c.register(0)?.execute_mut(2)?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn region<P: Persist>(mut self, region: Region<P>, snapshot_dir: &Path) -> Self {
        let dir: PathBuf = snapshot_dir.to_owned();
        self.region = Some(Box::new(move || Store::open_region(region, &dir)));
        self
    }

    /// When writes are durable (default [`SyncPolicy::EveryBatch`]: before they return).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// use std::time::Duration;
    /// let b = nr_durable::Durable::<S>::builder().sync(nr_durable::SyncPolicy::Every(Duration::from_secs(1)));
    /// ```
    pub fn sync(mut self, policy: SyncPolicy) -> Self {
        self.sync = policy;
        self
    }

    /// Opens the object: recovers it from the medium (the newest snapshot, then the logged
    /// writes after it), or creates it with `init` when the medium is empty.
    ///
    /// # Errors
    ///
    /// [`DurableError`]: no medium given (`Io` with `NotFound`), I/O failures, damage, files
    /// of another kind, nr-core's `Build` errors.
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn open(self, init: impl FnOnce() -> D) -> Result<Durable<D>, DurableError> {
        let (store, rec) = match (self.region, &self.medium) {
            (Some(open), _) => open()?,
            (None, Some(medium)) => Store::open::<Tracked<D>>(medium, self.sync)?,
            (None, None) => {
                return Err(DurableError::io(
                    "open",
                    "",
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no medium was given"),
                ))
            }
        };
        let mut state = match rec.snapshot {
            Some((_, s)) => s,
            None => Tracked::new(init()),
        };
        let recovered = rec.ops.len() as u64;
        for (_, op) in rec.ops {
            state.dispatch_mut(op);
        }
        // Each replica starts from its own copy of the recovered state (encoded once, decoded
        // for every replica but the first).
        let replicas = self.replicas.max(1);
        let copy =
            postcard::to_allocvec(&state).map_err(|source| DurableError::Encode { source })?;
        let mut copies = Vec::with_capacity(replicas);
        for _ in 1..replicas {
            let c: Tracked<D> =
                postcard::from_bytes(&copy).map_err(|source| DurableError::Decode {
                    path: PathBuf::from("<state copy>"),
                    offset: 0,
                    source,
                })?;
            copies.push(c);
        }
        copies.push(state);
        let hook = Arc::new(Hook::<D> {
            store,
            base: rec.end,
            failure: Mutex::new(None),
        });
        let nr = self
            .nr
            .replicas(self.replicas)
            .commit_log(Arc::clone(&hook) as Arc<dyn CommitLog<Op<D>>>)
            .build(|_| {
                copies
                    .pop()
                    .expect("invariant: nr-core builds `replicas` replicas")
            })
            .map_err(|source| DurableError::Build { source })?;
        Ok(Durable {
            replicas: nr.replicas(),
            nr,
            hook,
            registered: Mutex::new(HashSet::new()),
            recovered,
        })
    }
}

/// A linearizable, node-replicated object whose writes are durable before they are applied and
/// before they return, recovered after a crash from its snapshot and log.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use nr_durable::{Durable, Medium};
///
/// #[derive(Default, serde::Serialize, serde::Deserialize)]
/// struct Kv(HashMap<String, u64>);
/// impl nr_core::Dispatch for Kv {
///     type ReadOperation<'a> = &'a str;
///     type WriteOperation = (String, u64);
///     type Response = Option<u64>;
///     fn dispatch(&self, k: &str) -> Option<u64> { self.0.get(k).copied() }
///     fn dispatch_mut(&mut self, (k, v): (String, u64)) -> Option<u64> { self.0.insert(k, v) }
/// }
///
/// let dir = tempfile::tempdir()?;
/// let medium = Medium::File { dir: dir.path().to_owned() };
/// {
///     let kv = Durable::<Kv>::builder().medium(medium.clone()).open(Kv::default)?;
///     let mut h = kv.register(7)?;
///     h.execute_mut(("a".into(), 1))?; // durable when it returns
///     kv.checkpoint()?;
///     h.execute_mut(("b".into(), 2))?;
/// } // or a crash
/// let kv = Durable::<Kv>::builder().medium(medium).open(Kv::default)?;
/// let mut h = kv.register(7)?;
/// assert_eq!(h.execute("a")?, Some(1));
/// assert_eq!(h.execute("b")?, Some(2));
/// assert_eq!(h.last_applied()?, Some((2, None))); // thread 7's second write, its response
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Durable<D: DurableDispatch> {
    nr: NodeReplicated<Tracked<D>>,
    hook: Arc<Hook<D>>,
    replicas: usize,
    registered: Mutex<HashSet<u32>>,
    recovered: u64,
}

impl<D: DurableDispatch> std::fmt::Debug for Durable<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable")
            .field("replicas", &self.replicas)
            .field("base", &self.hook.base)
            .field("recovered", &self.recovered)
            .finish_non_exhaustive()
    }
}

impl<D: DurableDispatch> Durable<D> {
    /// Starts configuring an object; see [`Builder`].
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn builder() -> Builder<D> {
        Builder::new()
    }

    /// The number of replicas.
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// How many logged writes recovery replayed after the snapshot when this object was opened.
    ///
    /// # Examples
    ///
    /// See [`Durable`]'s (1 write replayed after the snapshot there).
    pub fn recovered_writes(&self) -> u64 {
        self.recovered
    }

    /// Registers thread id `thread` (a stable id of the caller's choosing, so a thread can ask
    /// [`DurableHandle::last_applied`] after a restart) with replica `thread % replicas`.
    ///
    /// # Errors
    ///
    /// [`DurableError::AlreadyRegistered`] when `thread` has a live handle;
    /// [`DurableError::Register`] from nr-core; `Poisoned`.
    ///
    /// # Examples
    ///
    /// See [`Durable`].
    pub fn register(&self, thread: u32) -> Result<DurableHandle<'_, D>, DurableError> {
        self.register_on(thread, thread as usize % self.replicas)
    }

    /// [`Durable::register`] with replica `replica`.
    ///
    /// # Errors
    ///
    /// As [`Durable::register`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let c = nr_durable::Durable::<S>::builder()
    ///     .replicas(2)
    ///     .medium(nr_durable::Medium::File { dir: dir.path().to_owned() })
    ///     .open(S::default)?;
    /// let mut h = c.register_on(5, 1)?;
    /// assert_eq!(h.execute_mut(4)?, 4);
    /// assert!(c.register(5).is_err()); // one handle per thread id
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_on(
        &self,
        thread: u32,
        replica: usize,
    ) -> Result<DurableHandle<'_, D>, DurableError> {
        if !lock(&self.registered).insert(thread) {
            return Err(DurableError::AlreadyRegistered { thread });
        }
        let guard = Registration {
            durable: self,
            thread,
        };
        let inner = self
            .nr
            .register(replica)
            .map_err(|source| DurableError::Register { source })?;
        let last = self.last_of(replica, thread)?;
        Ok(DurableHandle {
            inner,
            guard,
            seq: last.map_or(0, |l| l.0),
        })
    }

    /// Thread `thread`'s last write as replica `replica` has applied it.
    fn last_of(
        &self,
        replica: usize,
        thread: u32,
    ) -> Result<Option<(u64, D::Response)>, DurableError> {
        self.nr
            .with_replica_state(replica, |t, _| t.last.get(&thread).cloned())
            .map_err(|_| self.poisoned())
    }

    fn poisoned(&self) -> DurableError {
        DurableError::Poisoned {
            cause: lock(&self.hook.failure).clone(),
        }
    }

    /// Takes a checkpoint: a snapshot of one replica's state at the log position it has applied
    /// (writers on that replica wait while it is encoded; other replicas go on), written to a
    /// new file atomically, after which the log before it is dropped. Returns the position.
    /// Also taken by itself when the log has grown past [`crate::CHECKPOINT_BYTES`] (file) or
    /// half of its area (persistent memory).
    ///
    /// # Errors
    ///
    /// I/O failures, [`DurableError::Encode`], `Poisoned`.
    ///
    /// # Examples
    ///
    /// See [`Durable`].
    pub fn checkpoint(&self) -> Result<u64, DurableError> {
        let replica = self.replicas - 1;
        let (pos, payload) = self
            .nr
            .with_replica_state(replica, |t, applied| {
                (self.hook.base + applied, postcard::to_allocvec(t))
            })
            .map_err(|_| self.poisoned())?;
        let payload = payload.map_err(|source| DurableError::Encode { source })?;
        self.hook.store.checkpoint_encoded(pos, &payload)?;
        Ok(pos)
    }

    /// Makes every acknowledged write durable now (they are already, except under
    /// [`SyncPolicy::Every`]).
    ///
    /// # Errors
    ///
    /// I/O failures.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let c = nr_durable::Durable::<S>::builder()
    ///     .medium(nr_durable::Medium::File { dir: dir.path().to_owned() })
    ///     .sync(nr_durable::SyncPolicy::Every(std::time::Duration::from_secs(60)))
    ///     .open(S::default)?;
    /// c.register(0)?.execute_mut(1)?; // queued
    /// c.sync()?; // durable
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync(&self) -> Result<(), DurableError> {
        self.hook.store.sync()
    }

    /// The number of writes (log positions, counted since the store was created) that are
    /// durable: every acknowledged one, except under [`SyncPolicy::Every`], where it trails the
    /// acknowledged writes until the next flush (the loss window).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let c = nr_durable::Durable::<S>::builder()
    ///     .medium(nr_durable::Medium::File { dir: dir.path().to_owned() })
    ///     .open(S::default)?;
    /// c.register(0)?.execute_mut(1)?;
    /// assert_eq!(c.durable_writes(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn durable_writes(&self) -> u64 {
        self.hook.store.durable_end()
    }

    /// The log's counters since the object was opened: writes, commits (group commits),
    /// durability actions, bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)] struct S(u64);
    /// # impl nr_core::Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let c = nr_durable::Durable::<S>::builder()
    ///     .medium(nr_durable::Medium::File { dir: dir.path().to_owned() })
    ///     .open(S::default)?;
    /// c.register(0)?.execute_mut(1)?;
    /// let s = c.stats();
    /// assert_eq!((s.ops, s.commits, s.syncs), (1, 1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.hook.store.stats()
    }
}

/// Frees a thread id when its handle is dropped.
struct Registration<'a, D: DurableDispatch> {
    durable: &'a Durable<D>,
    thread: u32,
}

impl<D: DurableDispatch> Drop for Registration<'_, D> {
    fn drop(&mut self) {
        lock(&self.durable.registered).remove(&self.thread);
    }
}

/// A thread's handle on a [`Durable`] object; from [`Durable::register`].
///
/// # Examples
///
/// See [`Durable`].
pub struct DurableHandle<'a, D: DurableDispatch> {
    inner: ThreadHandle<'a, Tracked<D>>,
    guard: Registration<'a, D>,
    /// The sequence number of this thread id's last write.
    seq: u64,
}

impl<D: DurableDispatch> std::fmt::Debug for DurableHandle<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableHandle")
            .field("thread", &self.guard.thread)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl<D: DurableDispatch> DurableHandle<'_, D> {
    /// Runs a read on this handle's replica (after it has caught up with every write that
    /// returned before the read began).
    ///
    /// # Errors
    ///
    /// `Poisoned`.
    ///
    /// # Examples
    ///
    /// See [`Durable`].
    pub fn execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, DurableError> {
        let d = self.guard.durable;
        self.inner.execute(op).map_err(|_| d.poisoned())
    }

    /// Runs a write: it is durable before any replica applies it and before this returns
    /// (under [`SyncPolicy::EveryBatch`]). Its sequence number is one more than this thread
    /// id's last.
    ///
    /// # Errors
    ///
    /// `Poisoned` (with the durability failure as its cause): the write may or may not be
    /// durable; after reopening, [`DurableHandle::last_applied`] tells.
    ///
    /// # Examples
    ///
    /// See [`Durable`].
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, DurableError> {
        let d = self.guard.durable;
        self.seq += 1;
        let op = TrackedOp {
            tid: self.guard.thread,
            seq: self.seq,
            op,
        };
        let r = self.inner.execute_mut(op).map_err(|_| d.poisoned())?;
        if d.hook.store.needs_checkpoint() {
            // Best effort: a failed automatic checkpoint is retried at the next write.
            let _ = d.checkpoint();
        }
        Ok(r)
    }

    /// This thread id's last write that the object holds: its sequence number (1 for the id's
    /// first write ever, counting across restarts) and its response, or `None` if it made none.
    /// After a crash, a thread compares it with the sequence number of the write it was
    /// making to learn whether that write took effect.
    ///
    /// # Errors
    ///
    /// `Poisoned`.
    ///
    /// # Examples
    ///
    /// See [`Durable`].
    pub fn last_applied(&self) -> Result<Option<(u64, D::Response)>, DurableError> {
        let d = self.guard.durable;
        d.last_of(self.inner.replica(), self.guard.thread)
    }

    /// The thread id.
    ///
    /// # Examples
    ///
    /// See [`Durable::register_on`].
    pub fn thread(&self) -> u32 {
        self.guard.thread
    }
}
