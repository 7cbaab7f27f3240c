//! File-system steps with the path in every error: durable creation (write a temporary file,
//! sync it, rename, sync the directory), directory listing and the store directory's lock.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::DurableError;

/// `fsync` of a directory: makes the names created, renamed or removed in it durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), DurableError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| DurableError::io("fsync directory", dir, e))
}

/// Writes `bytes` to `path` atomically and durably: `path.tmp` is written and synced, renamed
/// to `path`, and the directory synced. After a crash, `path` is either absent or complete.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DurableError> {
    let tmp = tmp_path(path);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| DurableError::io("create", &tmp, e))?;
    f.write_all(bytes)
        .map_err(|e| DurableError::io("write", &tmp, e))?;
    f.sync_all()
        .map_err(|e| DurableError::io("fsync", &tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| DurableError::io("rename", &tmp, e))?;
    sync_dir(parent(path))
}

/// The temporary name of `path` while it is written.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The files of `dir` named `prefix` + a decimal number + `suffix`, with their numbers, sorted
/// by number. Leftover `.tmp` files of such names (a crash while one was written) are removed.
pub(crate) fn numbered(
    dir: &Path,
    prefix: &str,
    suffix: &str,
) -> Result<Vec<(u64, PathBuf)>, DurableError> {
    let mut out = Vec::new();
    let read = std::fs::read_dir(dir).map_err(|e| DurableError::io("list", dir, e))?;
    for entry in read {
        let entry = entry.map_err(|e| DurableError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        if let Some(num) = rest.strip_suffix(&format!("{suffix}.tmp")) {
            if num.parse::<u64>().is_ok() {
                let p = entry.path();
                std::fs::remove_file(&p).map_err(|e| DurableError::io("remove", &p, e))?;
            }
            continue;
        }
        let Some(num) = rest.strip_suffix(suffix) else {
            continue;
        };
        if let Ok(n) = num.parse::<u64>() {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Removes `path` (absent is fine).
pub(crate) fn remove(path: &Path) -> Result<(), DurableError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(DurableError::io("remove", path, e))
        }
        _ => Ok(()),
    }
}

/// An exclusive advisory lock on `dir/LOCK`, held while the value lives (and released by the
/// kernel when the process dies, killed or not): two stores on one directory would interleave
/// their segments.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock, or fails with `WouldBlock` in the error's source if another store holds it.
    pub(crate) fn take(dir: &Path) -> Result<Self, DurableError> {
        use std::os::fd::AsRawFd;
        let path = dir.join("LOCK");
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| DurableError::io("open", &path, e))?;
        // SAFETY: `flock` on a descriptor this function owns (open for the call's duration);
        // it touches no memory.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(DurableError::io(
                "lock",
                &path,
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Self { _file: file })
    }
}
