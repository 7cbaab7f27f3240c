//! The durable store: a log medium plus snapshots, and recovery from both. nr-core's commit
//! hook will drive one (issue 20); it is public for structures that keep their own
//! synchronization (the `Mutex` + write-ahead-log baseline of the benchmarks uses it).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pmem::{Persist, Region};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::file_log::FileLog;
use crate::medium::{Batch, LogMedium, RecoveredLog};
use crate::pmem_log::{PmemLog, PMEM_LAYOUT};
use crate::snapshot::Snapshots;
use crate::sync::{lock, Mutex, Ordering};
use crate::DurableError;

/// Where the log and the snapshots live.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let file = nr_durable::Medium::File { dir: dir.path().join("store") };
/// let pmem = nr_durable::Medium::Pmem { path: dir.path().join("log.pmem"), capacity: 1 << 20 };
/// assert_ne!(file, pmem);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Medium {
    /// Segment files and snapshots in directory `dir` (created if missing), on any file system.
    File {
        /// The store's directory.
        dir: PathBuf,
    },
    /// The log in a persistent-memory region file at `path` (created with `capacity` bytes if
    /// missing; DAX-mapped on a persistent-memory file system, else an ordinary mapping whose
    /// durability is the page cache's), snapshots beside it (`<file name>.snap-<pos>.snap`).
    Pmem {
        /// The region file.
        path: PathBuf,
        /// Its size in bytes when it is created: a multiple of 64, at least 4096. Half of what
        /// follows the header holds the live log.
        capacity: u64,
    },
}

/// When a write is durable.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let relaxed = nr_durable::SyncPolicy::Every(Duration::from_millis(10));
/// assert_ne!(relaxed, nr_durable::SyncPolicy::EveryBatch);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// Before it returns: each commit (a combiner's batch, with whatever other replicas'
    /// batches are ready) is made durable with one `fdatasync` or one persistent-memory fence.
    #[default]
    EveryBatch,
    /// File medium only (the persistent-memory medium treats it as `EveryBatch`): writes return
    /// once queued, and a background thread writes and syncs the queue every `d`. A crash loses
    /// at most the writes acknowledged during the last `d` plus the time of one write and
    /// `fdatasync`; what survives is always a prefix of the acknowledged writes. Redis's
    /// `appendfsync everysec` is `Every(1 s)`.
    Every(Duration),
}

/// What a store has done since it was opened.
///
/// # Examples
///
/// ```
/// let s = nr_durable::Stats { ops: 10, commits: 2, syncs: 2, bytes: 400 };
/// assert_eq!(s.bytes_per_op(), 40.0);
/// assert_eq!(s.syncs_per_op(), 0.2);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Write operations logged.
    pub ops: u64,
    /// Commits: calls that logged a batch of them.
    pub commits: u64,
    /// Durability actions: `fdatasync` calls, or persistent-memory `psync`s (a checkpoint
    /// counts one).
    pub syncs: u64,
    /// Log bytes written (entry frames and padding).
    pub bytes: u64,
}

impl Stats {
    /// Log bytes written per operation (0 when there was none).
    pub fn bytes_per_op(&self) -> f64 {
        if self.ops == 0 {
            0.0
        } else {
            self.bytes as f64 / self.ops as f64
        }
    }

    /// Durability actions per operation (0 when there was none).
    pub fn syncs_per_op(&self) -> f64 {
        if self.ops == 0 {
            0.0
        } else {
            self.syncs as f64 / self.ops as f64
        }
    }
}

/// What recovery found: the newest snapshot and the logged operations after it.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let medium = nr_durable::Medium::File { dir: dir.path().to_owned() };
/// let (_store, rec) = nr_durable::Store::<String>::open::<Vec<String>>(&medium, Default::default())?;
/// assert!(rec.snapshot.is_none() && rec.ops.is_empty() && rec.end == 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Recovery<S, Op> {
    /// The newest snapshot, with its position: the state after operations `0 .. pos`.
    pub snapshot: Option<(u64, S)>,
    /// The logged operations after it, with their positions, in order.
    pub ops: Vec<(u64, Op)>,
    /// The position the next operation gets: the number of operations the store holds.
    pub end: u64,
}

/// A durable operation log with snapshots.
///
/// [`Store::append`] is called by one thread at a time (callers serialize it: nr-core's commit
/// turn, or a lock), with consecutive positions.
///
/// # Examples
///
/// ```
/// use nr_durable::{Medium, Store, SyncPolicy};
///
/// let dir = tempfile::tempdir()?;
/// let medium = Medium::File { dir: dir.path().to_owned() };
/// {
///     let (store, _) = Store::<u64>::open::<u64>(&medium, SyncPolicy::EveryBatch)?;
///     store.append(0, &[&5, &7])?; // durable when it returns
///     store.checkpoint(1, &5u64)?; // the state after operation 0
///     store.append(2, &[&1])?;
/// }
/// let (_store, rec) = Store::<u64>::open::<u64>(&medium, SyncPolicy::EveryBatch)?;
/// assert_eq!(rec.snapshot, Some((1, 5)));
/// assert_eq!(rec.ops, [(1, 7), (2, 1)]);
/// assert_eq!(rec.end, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store<Op> {
    medium: Box<dyn LogMedium>,
    snapshots: Snapshots,
    /// The position of the newest snapshot, and the encoding buffer, under the append turn.
    inner: Mutex<Inner>,
    /// Held by a checkpoint from its snapshot to the removal of what it replaced.
    checkpointing: Mutex<()>,
    _op: PhantomData<fn(Op) -> Op>,
}

#[derive(Debug, Default)]
struct Inner {
    snapshot_pos: u64,
}

thread_local! {
    /// [`Store::append`]'s frames, one buffer per thread (reused: no allocation per commit): the
    /// operations are encoded straight into their frames, which the medium seals and copies.
    static ENCODED: RefCell<Batch> = RefCell::new(Batch::default());
}

/// The live log grows this far (file medium: the current segment's bytes) before
/// [`Store::needs_checkpoint`] says so.
pub const CHECKPOINT_BYTES: u64 = 64 << 20;

impl<Op: Serialize + DeserializeOwned> Store<Op> {
    /// Opens the store on `medium` (creating it if empty) and recovers it.
    ///
    /// # Errors
    ///
    /// [`DurableError`]: I/O failures, damage (never a panic), a file of another kind, data
    /// that does not decode as `S`/`Op`.
    pub fn open<S: DeserializeOwned>(
        medium: &Medium,
        sync: SyncPolicy,
    ) -> Result<(Self, Recovery<S, Op>), DurableError> {
        match medium {
            Medium::File { dir } => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| DurableError::io("create directory", dir, e))?;
                let snapshots = Snapshots::new(dir.clone(), "snap-".into());
                let newest = newest_snapshot::<S>(&snapshots)?;
                let from = newest.as_ref().map_or(0, |s| s.0);
                let (log, rec) = FileLog::open(dir, sync, CHECKPOINT_BYTES, from)?;
                Self::assemble(Box::new(log), snapshots, newest, rec)
            }
            Medium::Pmem { path, capacity } => {
                let region = if path.exists() {
                    Region::open(path, PMEM_LAYOUT)
                } else {
                    Region::create(path, PMEM_LAYOUT, *capacity)
                };
                let region = region.map_err(|source| match source {
                    pmem::RegionError::WrongLayout { .. } => DurableError::WrongKind {
                        path: path.clone(),
                        found: None,
                    },
                    source => DurableError::Region {
                        path: path.clone(),
                        source,
                    },
                })?;
                let name = path
                    .file_name()
                    .map_or_else(|| "log".to_owned(), |n| n.to_string_lossy().into_owned());
                let dir = crate::fsutil::parent(path).to_owned();
                let snapshots = Snapshots::new(dir, format!("{name}.snap-"));
                Self::on_region(region, Some(path.clone()), snapshots)
            }
        }
    }

    /// Opens the store on a region the caller made (a simulated one, for crash tests), with
    /// its snapshots in `snapshot_dir`. The region must be fresh or hold an nr-durable log
    /// (layout id [`PMEM_LAYOUT`]).
    ///
    /// # Errors
    ///
    /// As [`Store::open`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let region = pmem::Region::anonymous(nr_durable::PMEM_LAYOUT, 1 << 16)?;
    /// let (store, rec) = nr_durable::Store::<u32>::open_region::<(), _>(region, dir.path())?;
    /// assert_eq!(rec.end, 0);
    /// store.append(0, &[&1])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_region<S: DeserializeOwned, P: Persist>(
        region: Region<P>,
        snapshot_dir: &Path,
    ) -> Result<(Self, Recovery<S, Op>), DurableError> {
        let snapshots = Snapshots::new(snapshot_dir.to_owned(), "snap-".into());
        Self::on_region(region, None, snapshots)
    }

    fn on_region<S: DeserializeOwned, P: Persist>(
        region: Region<P>,
        path: Option<PathBuf>,
        snapshots: Snapshots,
    ) -> Result<(Self, Recovery<S, Op>), DurableError> {
        let newest = newest_snapshot::<S>(&snapshots)?;
        let from = newest.as_ref().map_or(0, |s| s.0);
        let (log, rec) = PmemLog::open(region, path, from)?;
        Self::assemble(Box::new(log), snapshots, newest, rec)
    }

    fn assemble<S: DeserializeOwned>(
        medium: Box<dyn LogMedium>,
        snapshots: Snapshots,
        snapshot: Option<(u64, S)>,
        rec: RecoveredLog,
    ) -> Result<(Self, Recovery<S, Op>), DurableError> {
        let mut ops = Vec::with_capacity(rec.records.len());
        for r in rec.records {
            let op = postcard::from_bytes(&r.op).map_err(|source| DurableError::Decode {
                path: rec.files[r.file].clone(),
                offset: r.offset,
                source,
            })?;
            ops.push((r.pos, op));
        }
        let snapshot_pos = snapshot.as_ref().map_or(0, |s| s.0);
        let store = Self {
            medium,
            snapshots,
            inner: Mutex::new(Inner { snapshot_pos }),
            checkpointing: Mutex::new(()),
            _op: PhantomData,
        };
        Ok((
            store,
            Recovery {
                snapshot,
                ops,
                end: rec.end,
            },
        ))
    }

    /// Logs `ops` at positions `first ..`: durable when it returns under
    /// [`SyncPolicy::EveryBatch`], with one durability action.
    ///
    /// # Errors
    ///
    /// I/O failures, [`DurableError::LogFull`], [`DurableError::Encode`], and
    /// [`DurableError::Corrupt`] when `first` is not the next position (a caller's bug).
    pub fn append(&self, first: u64, ops: &[&Op]) -> Result<(), DurableError> {
        // The encoding buffer is the calling thread's: the commit turn passes from thread to
        // thread, and a buffer shared by the store would move its lines to the committing core
        // on every commit (the medium's lock orders the appends themselves).
        ENCODED.with(|cell| {
            let batch = &mut *cell.borrow_mut();
            batch.clear();
            for (i, op) in ops.iter().enumerate() {
                batch.push(first + i as u64, op)?;
            }
            self.medium.append(first, batch)
        })
    }

    /// Makes every logged operation durable now (it is already, except under
    /// [`SyncPolicy::Every`]).
    ///
    /// # Errors
    ///
    /// I/O failures.
    pub fn sync(&self) -> Result<(), DurableError> {
        self.medium.sync()
    }

    /// Writes `state`, the state after operations `0 .. pos`, as a snapshot (a new file,
    /// written, synced, renamed, directory synced), then drops the log before `pos` and the
    /// older snapshots. A `pos` at or before the newest snapshot does nothing. Returns whether
    /// a snapshot was written.
    ///
    /// # Errors
    ///
    /// I/O failures, [`DurableError::Encode`].
    pub fn checkpoint<S: Serialize>(&self, pos: u64, state: &S) -> Result<bool, DurableError> {
        let payload =
            postcard::to_allocvec(state).map_err(|source| DurableError::Encode { source })?;
        self.checkpoint_encoded(pos, &payload)
    }

    /// [`Store::checkpoint`] of a state already encoded with postcard.
    pub(crate) fn checkpoint_encoded(
        &self,
        pos: u64,
        payload: &[u8],
    ) -> Result<bool, DurableError> {
        let _one_at_a_time = lock(&self.checkpointing);
        if pos <= lock(&self.inner).snapshot_pos && pos != 0 {
            return Ok(false);
        }
        self.snapshots.write(pos, payload)?;
        self.medium.drop_before(pos)?;
        self.snapshots.remove_before(pos)?;
        let mut inner = lock(&self.inner);
        inner.snapshot_pos = inner.snapshot_pos.max(pos);
        Ok(true)
    }

    /// The number of logged operations that are durable: every appended one, except under
    /// [`SyncPolicy::Every`], where it trails until the next flush.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let medium = nr_durable::Medium::File { dir: dir.path().to_owned() };
    /// let every = nr_durable::SyncPolicy::Every(std::time::Duration::from_secs(3600));
    /// let (store, _) = nr_durable::Store::<u8>::open::<()>(&medium, every)?;
    /// store.append(0, &[&1, &2])?;
    /// assert_eq!(store.durable_end(), 0); // queued
    /// store.sync()?;
    /// assert_eq!(store.durable_end(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn durable_end(&self) -> u64 {
        self.medium.durable_end()
    }

    /// Whether the live log has grown enough that a checkpoint should shrink it (persistent
    /// memory: half of its half of the area; file: [`CHECKPOINT_BYTES`] in the current segment).
    pub fn needs_checkpoint(&self) -> bool {
        self.medium.needs_checkpoint()
    }

    /// The counters since the store was opened.
    pub fn stats(&self) -> Stats {
        let c = self.medium.counters();
        // Relaxed: statistics only.
        Stats {
            ops: c.ops.load(Ordering::Relaxed),
            commits: c.commits.load(Ordering::Relaxed),
            syncs: c.syncs.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
        }
    }
}

/// The newest snapshot, checked. A damaged newest snapshot is an error, not a fallback to an
/// older one: the log before the newest snapshot may be dropped already.
fn newest_snapshot<S: DeserializeOwned>(
    snapshots: &Snapshots,
) -> Result<Option<(u64, S)>, DurableError> {
    match snapshots.list()?.pop() {
        None => Ok(None),
        Some((pos, path)) => Ok(Some((pos, Snapshots::load(&path, pos)?))),
    }
}
