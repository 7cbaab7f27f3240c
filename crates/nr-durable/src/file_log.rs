//! The file medium: the log in segment files `log-<base, 20 digits>.seg` of a directory, each
//! a 16-byte header (magic `NRDSEG02`, base position u64 LE) and the entries from `base` on.
//! The magic's last two digits are the log format ([`LOG_FORMAT`](crate::LOG_FORMAT)); a
//! segment of format 1 (`NRDSEG01`) is refused with `DurableError::Version`.
//!
//! `SyncPolicy::EveryBatch`: each commit is one `write` of its entries and one `fdatasync`.
//! `SyncPolicy::Every(d)`: a commit only queues its entries; a background flusher writes and
//! syncs what is queued every `d` (one `write` and one `fdatasync` per flush), so a crash
//! loses at most the writes acknowledged in the last `d` plus the flush under way.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::entry::{self, Tail};
use crate::fsutil::{self, DirLock};
use crate::medium::{Batch, Counters, LogMedium, Record, RecoveredLog};
use crate::sync::{lock, spawn_named, Arc, AtomicBool, Condvar, JoinHandle, Mutex, Ordering};
use crate::{DurableError, SyncPolicy};

/// The first 8 bytes of a segment file (format 2).
pub(crate) const SEG_MAGIC: &[u8; 8] = b"NRDSEG02";
/// The first 8 bytes of a segment file of format 1 (entries checksummed with CRC-32).
const SEG_MAGIC_V1: &[u8; 8] = b"NRDSEG01";
const SEG_HEADER: u64 = 16;
const PREFIX: &str = "log-";
const SUFFIX: &str = ".seg";

/// The segment being appended to.
#[derive(Debug)]
struct Segment {
    file: File,
    base: u64,
    path: PathBuf,
    len: u64,
    /// The position the next entry written gets.
    end: u64,
}

/// Entries committed but not yet written (`Every` policy).
#[derive(Debug, Default)]
struct Pending {
    batch: Batch,
    /// The position of the first queued entry.
    first: u64,
    /// The position the next commit gets.
    end: u64,
    /// A background flush failed: every later commit fails with this.
    failed: Option<String>,
}

impl Pending {
    /// Fails when a background flush failed: the queued writes it held are lost, so no later
    /// write may be acknowledged.
    fn check(&self, dir: &Path) -> Result<(), DurableError> {
        match &self.failed {
            Some(why) => Err(DurableError::io(
                "flush",
                dir,
                std::io::Error::other(why.clone()),
            )),
            None => Ok(()),
        }
    }
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    io: Mutex<Io>,
    pending: Mutex<Pending>,
    counters: Counters,
    stop: AtomicBool,
    wake: Condvar,
    relaxed: bool,
    checkpoint_bytes: u64,
}

#[derive(Debug)]
struct Io {
    seg: Segment,
    /// Bases of the live segments, oldest first (the last is `seg`).
    segments: Vec<(u64, PathBuf)>,
}

/// The file medium.
#[derive(Debug)]
pub(crate) struct FileLog {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
    _lock: DirLock,
}

fn seg_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{base:020}{SUFFIX}"))
}

/// Creates the empty segment at `base` atomically and opens it for appending.
fn create_segment(dir: &Path, base: u64) -> Result<Segment, DurableError> {
    let path = seg_path(dir, base);
    let mut header = Vec::with_capacity(SEG_HEADER as usize);
    header.extend_from_slice(SEG_MAGIC);
    header.extend_from_slice(&base.to_le_bytes());
    fsutil::write_atomic(&path, &header)?;
    let mut file = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| DurableError::io("open", &path, e))?;
    file.seek(SeekFrom::End(0))
        .map_err(|e| DurableError::io("seek", &path, e))?;
    Ok(Segment {
        file,
        base,
        path,
        len: SEG_HEADER,
        end: base,
    })
}

impl FileLog {
    /// Opens (or creates) the log in `dir`, recovering the entries from `from` on (the newest
    /// snapshot's position).
    pub(crate) fn open(
        dir: &Path,
        policy: SyncPolicy,
        checkpoint_bytes: u64,
        from: u64,
    ) -> Result<(Self, RecoveredLog), DurableError> {
        std::fs::create_dir_all(dir).map_err(|e| DurableError::io("create directory", dir, e))?;
        let dir_lock = DirLock::take(dir)?;
        let (io, recovered) = recover(dir, from)?;
        let end = recovered.end;
        let counters = Counters::default();
        counters.set_due(io.seg.len, checkpoint_bytes);
        let relaxed = matches!(policy, SyncPolicy::Every(_));
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            io: Mutex::new(io),
            pending: Mutex::new(Pending {
                first: end,
                end,
                ..Pending::default()
            }),
            counters,
            stop: AtomicBool::new(false),
            wake: Condvar::new(),
            relaxed,
            checkpoint_bytes,
        });
        let flusher = match policy {
            SyncPolicy::EveryBatch => None,
            SyncPolicy::Every(period) => {
                let s = Arc::clone(&shared);
                let h = spawn_named("nr-durable flusher", move || s.flusher(period))
                    .map_err(|e| DurableError::io("start the flusher of", dir, e))?;
                Some(h)
            }
        };
        Ok((
            Self {
                shared,
                flusher,
                _lock: dir_lock,
            },
            recovered,
        ))
    }
}

/// Reads every segment of `dir`: checks the chain, cuts a torn tail off the last one, and
/// returns the entries from `from` on.
fn recover(dir: &Path, from: u64) -> Result<(Io, RecoveredLog), DurableError> {
    let segments = fsutil::numbered(dir, PREFIX, SUFFIX)?;
    let mut out = RecoveredLog::default();
    let mut live = Vec::new();
    let mut chain_end: Option<u64> = None;
    let n = segments.len();
    for (i, (base, path)) in segments.into_iter().enumerate() {
        let last = i + 1 == n;
        let bytes = std::fs::read(&path).map_err(|e| DurableError::io("read", &path, e))?;
        if bytes.len() >= SEG_HEADER as usize && &bytes[..8] == SEG_MAGIC_V1 {
            return Err(DurableError::Version {
                path,
                found: 1,
                supported: entry::LOG_FORMAT,
            });
        }
        if bytes.len() < SEG_HEADER as usize || &bytes[..8] != SEG_MAGIC {
            return Err(DurableError::corrupt(
                &path,
                0,
                "not a segment (bad header)",
            ));
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[8..16]);
        if u64::from_le_bytes(w) != base {
            return Err(DurableError::corrupt(
                &path,
                8,
                "a segment under another base's name",
            ));
        }
        match chain_end {
            None if base > from => {
                return Err(DurableError::corrupt(
                    &path,
                    0,
                    format!("the log starts at entry {base}, after the newest snapshot at {from}"),
                ))
            }
            Some(prev) if prev != base && base > from => {
                return Err(DurableError::corrupt(
                    &path,
                    0,
                    format!("entries {prev} .. {base} are missing before this segment"),
                ))
            }
            _ => {}
        }
        let scan = entry::scan(&bytes[SEG_HEADER as usize..], base, base, &path, SEG_HEADER)?;
        let valid = SEG_HEADER + scan.valid_len as u64;
        if let Tail::Torn { what, .. } = scan.tail {
            if !last {
                return Err(DurableError::corrupt(
                    &path,
                    valid,
                    format!("{what} in a sealed segment"),
                ));
            }
        }
        let end = base + scan.entries.len() as u64;
        let file = out.files.len();
        out.files.push(path.clone());
        for e in scan.entries.iter().filter(|e| e.pos >= from) {
            out.records.push(Record {
                pos: e.pos,
                op: e.op_bytes().to_vec(),
                file,
                offset: SEG_HEADER + e.offset as u64,
            });
        }
        chain_end = Some(end);
        live.push((base, path.clone(), valid, end));
    }
    let Some((base, path, valid, end)) = live.last().cloned() else {
        let seg = create_segment(dir, from)?;
        out.end = from;
        return Ok((
            Io {
                segments: vec![(from, seg.path.clone())],
                seg,
            },
            out,
        ));
    };
    let mut file = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| DurableError::io("open", &path, e))?;
    let len = file
        .metadata()
        .map_err(|e| DurableError::io("stat", &path, e))?
        .len();
    if len != valid {
        // The torn tail of the last write: cut it, durably, before anything is appended.
        file.set_len(valid)
            .map_err(|e| DurableError::io("truncate", &path, e))?;
        file.sync_all()
            .map_err(|e| DurableError::io("fsync", &path, e))?;
    }
    file.seek(SeekFrom::End(0))
        .map_err(|e| DurableError::io("seek", &path, e))?;
    let segments = live.iter().map(|(b, p, ..)| (*b, p.clone())).collect();
    let mut io = Io {
        seg: Segment {
            file,
            base,
            path,
            len: valid,
            end,
        },
        segments,
    };
    if end < from {
        // A relaxed-policy crash lost entries the snapshot holds: go on at the snapshot.
        io.rotate(dir, from)?;
    }
    out.end = end.max(from);
    Ok((io, out))
}

impl Io {
    /// Writes `batch` (entries from `first` on) as one write, then `fdatasync`s it.
    fn write_synced(
        &mut self,
        first: u64,
        batch: &mut Batch,
        counters: &Counters,
        threshold: u64,
    ) -> Result<(), DurableError> {
        if batch.len() == 0 {
            return Ok(());
        }
        if first != self.seg.end {
            return Err(DurableError::corrupt(
                &self.seg.path,
                self.seg.len,
                format!(
                    "entry {first} appended where entry {} belongs",
                    self.seg.end
                ),
            ));
        }
        // One write for the whole batch: its entries are one write (`write_start`), even
        // when the `Every` policy queued them from several appends.
        entry::seal_frames(batch.frames_mut(), self.seg.base, first);
        let path = &self.seg.path;
        self.seg
            .file
            .write_all(batch.frames())
            .map_err(|e| DurableError::io("write", path, e))?;
        self.seg
            .file
            .sync_data()
            .map_err(|e| DurableError::io("fdatasync", path, e))?;
        self.seg.len += batch.frames().len() as u64;
        counters.set_due(self.seg.len, threshold);
        self.seg.end += batch.len() as u64;
        counters.add(&counters.syncs, 1);
        counters.add(&counters.bytes, batch.frames().len() as u64);
        Ok(())
    }

    /// Seals the current segment and starts a new one at `base` (`>=` its end).
    fn rotate(&mut self, dir: &Path, base: u64) -> Result<(), DurableError> {
        self.seg
            .file
            .sync_data()
            .map_err(|e| DurableError::io("fdatasync", &self.seg.path, e))?;
        self.seg = create_segment(dir, base)?;
        self.segments.push((base, self.seg.path.clone()));
        Ok(())
    }
}

impl Shared {
    /// Writes and syncs what is queued (`Every` policy).
    fn flush(&self, io: &mut Io) -> Result<(), DurableError> {
        let mut taken = Batch::default();
        let first = {
            let mut p = lock(&self.pending);
            p.check(&self.dir)?;
            std::mem::swap(&mut taken, &mut p.batch);
            let first = p.first;
            p.first = p.end;
            first
        };
        let result = io.write_synced(first, &mut taken, &self.counters, self.checkpoint_bytes);
        if let Err(e) = &result {
            lock(&self.pending).failed = Some(format!("a background flush failed: {e}"));
        }
        result
    }

    fn flusher(&self, period: Duration) {
        loop {
            {
                let p = lock(&self.pending);
                if self.stop.load(Ordering::Acquire) {
                    break;
                }
                // Acquire above pairs with the Release store in `FileLog::drop`; the wait
                // re-checks after `period` or a wake-up from drop.
                let _ = self.wake.wait_timeout(p, period);
            }
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            let mut io = lock(&self.io);
            let _ = self.flush(&mut io);
        }
    }
}

impl LogMedium for FileLog {
    fn append(&self, first: u64, batch: &mut Batch) -> Result<(), DurableError> {
        let s = &self.shared;
        s.counters.add(&s.counters.commits, 1);
        s.counters.add(&s.counters.ops, batch.len() as u64);
        if s.relaxed {
            let mut p = lock(&s.pending);
            p.check(&s.dir)?;
            if first != p.end {
                return Err(DurableError::corrupt(
                    &s.dir,
                    0,
                    format!("entry {first} appended where entry {} belongs", p.end),
                ));
            }
            p.batch.append(batch);
            p.end += batch.len() as u64;
            return Ok(());
        }
        lock(&s.io).write_synced(first, batch, &s.counters, s.checkpoint_bytes)
    }

    fn sync(&self) -> Result<(), DurableError> {
        let mut io = lock(&self.shared.io);
        self.shared.flush(&mut io)
    }

    fn drop_before(&self, pos: u64) -> Result<(), DurableError> {
        let s = &self.shared;
        let mut io = lock(&s.io);
        s.flush(&mut io)?;
        let end = io.seg.end;
        if io.seg.len > SEG_HEADER || end < pos {
            io.rotate(&s.dir, end.max(pos))?;
            s.counters.set_due(io.seg.len, s.checkpoint_bytes);
            if end < pos {
                let mut p = lock(&s.pending);
                p.first = pos;
                p.end = pos;
            }
        }
        // A segment whose successor starts at or before `pos` holds only entries before it.
        while io.segments.len() > 1 && io.segments[1].0 <= pos {
            let (_, path) = io.segments.remove(0);
            fsutil::remove(&path)?;
        }
        Ok(())
    }

    fn durable_end(&self) -> u64 {
        lock(&self.shared.io).seg.end
    }

    fn counters(&self) -> &Counters {
        &self.shared.counters
    }
}

impl Drop for FileLog {
    fn drop(&mut self) {
        // Release: pairs with the Acquire loads in `Shared::flusher`.
        self.shared.stop.store(true, Ordering::Release);
        {
            let _p = lock(&self.shared.pending);
            self.shared.wake.notify_all();
        }
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        // What is queued is written on a clean close (a crash loses it: the loss window).
        let _ = self.sync();
    }
}
