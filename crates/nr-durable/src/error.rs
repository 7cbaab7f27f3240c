//! Typed errors: every variant says what went wrong and what to do about it.

use std::fmt;
use std::path::PathBuf;

use crate::sync::Arc;

/// Why a durable store could not be opened, written, checkpointed or recovered.
///
/// Damaged files are one of these variants, never a panic. `Display` says what happened and
/// names the file once; the underlying error (the operating system's, the region's or the
/// encoder's) is the [`source`](std::error::Error::source), not repeated.
///
/// # Examples
///
/// ```
/// use nr_durable::DurableError;
///
/// let err = DurableError::Corrupt {
///     path: "/data/log-00000000000000000000.seg".into(),
///     offset: 24,
///     what: "checksum mismatch, and a valid entry follows".into(),
/// };
/// assert_eq!(
///     err.to_string(),
///     "/data/log-00000000000000000000.seg is damaged at byte 24: \
///      checksum mismatch, and a valid entry follows"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DurableError {
    /// A file operation failed (permissions, no space, a missing directory). Remedy: see
    /// `source` (the operating system's reason) and `path`.
    Io {
        /// What was being done (`"open"`, `"write"`, `"fdatasync"`, `"rename"`, ...).
        op: &'static str,
        /// The file or directory it concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A log or snapshot file is damaged where a torn write cannot explain it: a bad entry with
    /// a valid entry after it, a snapshot whose checksum fails, a log that does not reach the
    /// snapshot. Remedy: restore the directory from a backup; the store never guesses past
    /// damage (acknowledged writes after it would be lost silently).
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// The byte offset of the damage in that file.
        offset: u64,
        /// What is wrong there.
        what: String,
    },
    /// The file is not an nr-durable log (another crate's region, another program's file).
    /// Remedy: point the store at its own file or an empty directory.
    WrongKind {
        /// The file.
        path: PathBuf,
        /// What the file is, where `pmem::kinds` knows it (`"pcomb PBStack"`).
        found: Option<&'static str>,
    },
    /// The log was written in another version of the log format (format 1: the entries'
    /// checksum was CRC-32, before this build's CRC-32C). Remedy: open it with the nr-durable
    /// version that wrote it and take a checkpoint into a new store, or start an empty one;
    /// this build does not read the old format (it would find every entry's checksum bad).
    Version {
        /// The segment or region file.
        path: PathBuf,
        /// The format the file is in.
        found: u64,
        /// The format this build reads and writes ([`LOG_FORMAT`](crate::LOG_FORMAT)).
        supported: u64,
    },
    /// Creating or opening the persistent-memory region failed. Remedy: see `source`.
    Region {
        /// The region file.
        path: PathBuf,
        /// The region's error.
        source: pmem::RegionError,
    },
    /// An operation or the state could not be encoded (a `Serialize` implementation failed, or
    /// the state does not fit in memory). Remedy: fix the `Serialize` implementation.
    Encode {
        /// The encoder's error.
        source: postcard::Error,
    },
    /// A log entry or snapshot with a valid checksum does not decode as this store's type: the
    /// directory was written by a program with another operation or state type. Remedy: open
    /// it with the type that wrote it.
    Decode {
        /// The file.
        path: PathBuf,
        /// The byte offset of the entry or snapshot in that file.
        offset: u64,
        /// The decoder's error.
        source: postcard::Error,
    },
    /// The persistent-memory log area is full: more writes were made since the last checkpoint
    /// than it holds. Remedy: a larger `capacity`, or checkpoints more often (the store takes
    /// one by itself when the area is half full, so this needs a burst larger than half).
    LogFull {
        /// The region file (`None` for a region made by the caller).
        path: Option<PathBuf>,
        /// Bytes one half of the log area holds.
        capacity: u64,
    },
    /// The object is poisoned: an earlier write could not be made durable (the `cause`), or a
    /// panic happened inside the structure. No later write is accepted. Remedy: drop the store
    /// and open it again; recovery restores every acknowledged write.
    Poisoned {
        /// The failure that poisoned the object, when it was a durability failure.
        cause: Option<Arc<DurableError>>,
    },
    /// `register` was called with a thread id that has a live handle. Remedy: one handle per
    /// thread id at a time (drop the other first).
    AlreadyRegistered {
        /// The thread id.
        thread: u32,
    },
    /// nr-core refused to build the replicas (zero replicas, a bad topology). Remedy: see
    /// `source`.
    Build {
        /// nr-core's error.
        source: nr_core::BuildError,
    },
    /// nr-core refused a handle (no such replica). Remedy: see `source`.
    Register {
        /// nr-core's error.
        source: nr_core::RegisterError,
    },
}

impl fmt::Display for DurableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { op, path, .. } => write!(f, "{op} {} failed", path.display()),
            Self::Corrupt { path, offset, what } => {
                write!(f, "{} is damaged at byte {offset}: {what}", path.display())
            }
            Self::WrongKind {
                path,
                found: Some(kind),
            } => write!(
                f,
                "{} is a {kind} file, expected an nr-durable log",
                path.display()
            ),
            Self::WrongKind { path, found: None } => {
                write!(f, "{} is not an nr-durable log", path.display())
            }
            Self::Version {
                path,
                found,
                supported,
            } => write!(
                f,
                "{} is in log format {found}; this build reads format {supported}",
                path.display()
            ),
            Self::Region { path, .. } => {
                write!(f, "the log region {} could not be used", path.display())
            }
            Self::Encode { .. } => write!(f, "an operation or the state could not be encoded"),
            Self::Decode { path, offset, .. } => write!(
                f,
                "{} at byte {offset} does not decode as this store's type",
                path.display()
            ),
            Self::LogFull {
                path: Some(path),
                capacity,
            } => write!(
                f,
                "the log area of {} ({capacity} bytes) is full",
                path.display()
            ),
            Self::LogFull {
                path: None,
                capacity,
            } => {
                write!(f, "the log area ({capacity} bytes) is full")
            }
            Self::Poisoned { .. } => write!(f, "the durable object is poisoned"),
            Self::AlreadyRegistered { thread } => {
                write!(f, "thread id {thread} already has a live handle")
            }
            Self::Build { .. } => write!(f, "the replicas could not be built"),
            Self::Register { .. } => write!(f, "no handle could be registered"),
        }
    }
}

impl std::error::Error for DurableError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Region { source, .. } => Some(source),
            Self::Encode { source } | Self::Decode { source, .. } => Some(source),
            Self::Poisoned { cause: Some(cause) } => Some(&**cause),
            Self::Build { source } => Some(source),
            Self::Register { source } => Some(source),
            Self::Corrupt { .. }
            | Self::WrongKind { .. }
            | Self::Version { .. }
            | Self::LogFull { .. }
            | Self::Poisoned { cause: None }
            | Self::AlreadyRegistered { .. } => None,
        }
    }
}

impl DurableError {
    /// An I/O error on `path`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Damage at `offset` of `path`.
    pub(crate) fn corrupt(path: impl Into<PathBuf>, offset: u64, what: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.into(),
            offset,
            what: what.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn display_names_the_file_once_and_source_chains_the_cause() {
        let err = DurableError::io(
            "fdatasync",
            "/d/log-1.seg",
            std::io::Error::other("disk on fire"),
        );
        assert_eq!(err.to_string(), "fdatasync /d/log-1.seg failed");
        assert_eq!(
            err.source().map(|s| s.to_string()).as_deref(),
            Some("disk on fire")
        );
        let poisoned = DurableError::Poisoned {
            cause: Some(Arc::new(err)),
        };
        let chain = poisoned
            .source()
            .and_then(|s| s.source())
            .map(|s| s.to_string());
        assert_eq!(chain.as_deref(), Some("disk on fire"));
        let old = DurableError::Version {
            path: "/d/log-0.seg".into(),
            found: 1,
            supported: 2,
        };
        assert_eq!(
            old.to_string(),
            "/d/log-0.seg is in log format 1; this build reads format 2"
        );
        assert!(old.source().is_none());
    }
}
