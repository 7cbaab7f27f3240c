//! What the two media have in common: the interface the store drives, and what recovery hands
//! back.

use std::path::PathBuf;

use crossbeam_utils::CachePadded;

use crate::entry;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::DurableError;

/// The unsealed frames of consecutive entries, back to back (`entry::encode_frame`): the
/// payloads are encoded here once, and the medium seals them in place
/// (`entry::seal_frames`) and copies them to the log as they lie.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Zero-initialized room, reused from batch to batch; the frames are `room[..used]`.
    room: Vec<u8>,
    /// The bytes of the frames.
    used: usize,
    /// How many frames there are.
    len: usize,
}

impl Batch {
    /// Appends the unsealed frame of the entry at `pos`.
    #[inline]
    pub(crate) fn push<Op: serde::Serialize>(
        &mut self,
        pos: u64,
        op: &Op,
    ) -> Result<(), DurableError> {
        self.used = entry::encode_frame(&mut self.room, self.used, pos, op)?;
        self.len += 1;
        Ok(())
    }

    /// The frames.
    #[inline]
    pub(crate) fn frames(&self) -> &[u8] {
        &self.room[..self.used]
    }

    /// The frames, to seal.
    #[inline]
    pub(crate) fn frames_mut(&mut self) -> &mut [u8] {
        &mut self.room[..self.used]
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.used = 0;
        self.len = 0;
    }

    /// Moves `other`'s frames to the end of this batch.
    pub(crate) fn append(&mut self, other: &Batch) {
        let end = self.used + other.used;
        entry::room(&mut self.room, end);
        self.room[self.used..end].copy_from_slice(other.frames());
        self.used = end;
        self.len += other.len;
    }
}

/// One entry found by recovery.
#[derive(Debug)]
pub(crate) struct Record {
    /// Its position.
    pub(crate) pos: u64,
    /// The encoded operation.
    pub(crate) op: Vec<u8>,
    /// Index of its file in [`RecoveredLog::files`].
    pub(crate) file: usize,
    /// Its byte offset in that file.
    pub(crate) offset: u64,
}

/// The live log after recovery.
#[derive(Debug, Default)]
pub(crate) struct RecoveredLog {
    /// The files the records came from.
    pub(crate) files: Vec<PathBuf>,
    /// The entries at positions `>=` the snapshot's, in order.
    pub(crate) records: Vec<Record>,
    /// The position the next append gets.
    pub(crate) end: u64,
}

/// A durable log medium. Appends come in log order (nr-core's commit turn makes them one at a
/// time); a medium serializes concurrent calls under its own lock and rejects a position out of
/// order.
pub(crate) trait LogMedium: Send + Sync + std::fmt::Debug {
    /// Appends the entries `first .. first + batch.len()`, sealing their frames in place (the
    /// salt is the medium's); with `SyncPolicy::EveryBatch` they are durable when it returns.
    fn append(&self, first: u64, batch: &mut Batch) -> Result<(), DurableError>;
    /// Makes every appended entry durable now.
    fn sync(&self) -> Result<(), DurableError>;
    /// Drops the entries before `pos` (a durable snapshot at `pos` holds them); the next
    /// append gets `max(end, pos)`.
    fn drop_before(&self, pos: u64) -> Result<(), DurableError>;
    /// The position before which every entry is durable (all appended entries, except under
    /// `SyncPolicy::Every`).
    fn durable_end(&self) -> u64;
    /// Whether the live log has grown past the point where a checkpoint should shrink it
    /// (read on every write: an atomic flag the medium keeps, no lock).
    fn needs_checkpoint(&self) -> bool {
        // Relaxed: a hint; a late or early checkpoint is correct either way.
        self.counters().due.load(Ordering::Relaxed)
    }
    /// The counters.
    fn counters(&self) -> &Counters;
}

/// What a medium has done, counted.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Durability actions: `fdatasync` calls, or persistent-memory fences that end a commit.
    pub(crate) syncs: AtomicU64,
    /// Log bytes written (frames and padding).
    pub(crate) bytes: AtomicU64,
    /// Entries appended.
    pub(crate) ops: AtomicU64,
    /// `append` calls.
    pub(crate) commits: AtomicU64,
    /// The live log has outgrown its checkpoint threshold. Read after every write by every
    /// writer, so on its own cache line, stored only when it changes: the commits' counter
    /// updates do not take it from the other cores' caches.
    pub(crate) due: CachePadded<AtomicBool>,
}

impl Counters {
    #[inline]
    pub(crate) fn add(&self, c: &AtomicU64, n: u64) {
        let _ = self;
        // Relaxed: statistics only; nothing is ordered by them.
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// [`Counters::add`] for a counter whose writers all hold one lock (the memory medium's
    /// state lock): a load and a store, so the commit path runs no locked read-modify-write
    /// instruction for its statistics.
    #[inline]
    pub(crate) fn add_serialized(&self, c: &AtomicU64, n: u64) {
        let _ = self;
        // Relaxed: statistics only; the writers' common lock orders them (no update is lost),
        // and readers only need some recent value.
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// Records whether the live log, now `len` bytes, has outgrown `threshold`.
    #[inline]
    pub(crate) fn set_due(&self, len: u64, threshold: u64) {
        let due = len > threshold;
        // Relaxed (both): a hint (see `LogMedium::needs_checkpoint`). Its writers hold the
        // medium's lock (the region's state, the file log's I/O state), so the value read is
        // the current one.
        if self.due.load(Ordering::Relaxed) != due {
            self.due.store(due, Ordering::Relaxed);
        }
    }
}
