//! Exclusive ownership of a region file: one live [`Region`](crate::Region) per file, in this
//! process and across processes.
//!
//! Two regions over one file would each rebuild their structure's free space from the same
//! image and hand out the same blocks, then write them concurrently: a corrupted file, and a
//! data race between the two regions' plain stores. So creating or opening a region file takes
//! ownership of it, and the region keeps it until it is dropped:
//!
//! - **this process**: a process-wide registry of the files owned by live regions, keyed by
//!   device and inode (so a second path to the same file, a hard link or a rename, is the same
//!   key). It does not depend on the file system's lock support, and it tells "already open
//!   here" apart from "locked elsewhere";
//! - **other processes**: an advisory `flock(LOCK_EX | LOCK_NB)` on the region's own open file
//!   description, held until the file is closed. Every process that opens the file through this
//!   crate honours it; a program that maps the file without taking the lock is not stopped
//!   (advisory locks bind only those who ask).
//!
//! The registry entry is taken first, then the lock; a region releases the lock (closes the
//! file) first, then the entry, so a concurrent open in this process sees
//! [`RegionError::AlreadyOpen`] until the lock is gone, never this process's own lock.

use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::sync::ProcessSet;
use crate::RegionError;

/// A file's identity: device and inode number (stable while any descriptor of it is open, so
/// a registry entry can never name a reused inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct FileId {
    dev: u64,
    ino: u64,
}

/// The files owned by this process's live regions.
static OWNED: ProcessSet<FileId> = ProcessSet::new();

/// Ownership of one region file: its registry entry and its lock, released on drop.
#[derive(Debug)]
pub(crate) struct FileOwner {
    /// `Some` until `drop` closes it (releasing the lock) before leaving the registry.
    file: Option<File>,
    id: FileId,
}

impl FileOwner {
    /// Takes ownership of `file` (opened at `path`, named in the errors): registers it, then
    /// locks it.
    ///
    /// # Errors
    ///
    /// [`RegionError::AlreadyOpen`] when a live region of this process owns the file,
    /// [`RegionError::Locked`] when another process holds its lock, [`RegionError::Io`] when
    /// `fstat` or `flock` fails otherwise (a file system without `flock` support, for one).
    pub(crate) fn acquire(file: File, path: &Path) -> Result<Self, RegionError> {
        let meta = file.metadata().map_err(|e| RegionError::Io {
            op: "metadata",
            path: Some(path.to_path_buf()),
            source: e,
        })?;
        let id = FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        };
        let fresh = OWNED.insert(id);
        if !fresh {
            return Err(RegionError::AlreadyOpen {
                path: path.to_path_buf(),
            });
        }
        // From here on, dropping `owner` (on an error below too) leaves the registry again.
        let owner = Self {
            file: Some(file),
            id,
        };
        owner.lock(path)?;
        Ok(owner)
    }

    /// `flock(LOCK_EX | LOCK_NB)` on the owned file.
    fn lock(&self, path: &Path) -> Result<(), RegionError> {
        let fd = self.file().as_raw_fd();
        loop {
            // SAFETY:
            // - `fd` is the open descriptor of `self.file`, which outlives the call;
            // - `flock` reads and writes no memory of this process.
            let rc = unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(());
            }
            let err = std::io::Error::last_os_error();
            match err.kind() {
                ErrorKind::Interrupted => continue,
                ErrorKind::WouldBlock => {
                    return Err(RegionError::Locked {
                        path: path.to_path_buf(),
                    })
                }
                _ => {
                    return Err(RegionError::Io {
                        op: "flock",
                        path: Some(path.to_path_buf()),
                        source: err,
                    })
                }
            }
        }
    }

    /// The owned file.
    pub(crate) fn file(&self) -> &File {
        self.file
            .as_ref()
            .expect("invariant: the file is taken only by `drop`")
    }
}

impl Drop for FileOwner {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock; only then may this process open the file
        // again (see the module docs for the order).
        drop(self.file.take());
        OWNED.remove(&self.id);
    }
}
