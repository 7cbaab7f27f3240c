//! Typed errors: [`FrameError`] for the wire, [`RaftError`] for hosts and clients.

use std::fmt;
use std::io;

/// A frame that could not be read or written. Every variant but [`FrameError::Io`] and
/// [`FrameError::Closed`] means the stream can no longer be trusted: the reader closes the
/// connection.
///
/// # Examples
///
/// ```
/// let err = nr_raft::read_frame::<u8, _>(&mut &b"NRRF"[..]).unwrap_err();
/// assert_eq!(err.to_string(), "truncated frame: 4 of 12 bytes");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum FrameError {
    /// Reading or writing the stream failed. Cause: the peer went away or the socket broke.
    /// Remedy: reconnect.
    Io {
        /// The I/O error.
        source: io::Error,
    },
    /// The stream ended cleanly between frames. Cause: the peer closed the connection.
    /// Remedy: none needed; reconnect to go on.
    Closed,
    /// The stream ended inside a frame. Cause: the peer died or sent a cut frame. Remedy:
    /// reconnect; the frame was not delivered.
    Truncated {
        /// The bytes the frame part needed.
        expected: u64,
        /// The bytes that came.
        got: u64,
    },
    /// The frame does not start with `NRRF`. Cause: a client of another protocol, or a stream
    /// out of step. Remedy: connect with this crate's client.
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The length field is 0 or above [`MAX_FRAME`](crate::MAX_FRAME). Cause: garbage, or a
    /// message too large. Remedy: send smaller operations.
    BadLength {
        /// The length read.
        len: u64,
    },
    /// The payload's CRC-32 differs from the header's. Cause: corruption in transit or garbage.
    /// Remedy: reconnect and resend.
    Checksum {
        /// The checksum in the header.
        expected: u32,
        /// The checksum of the payload received.
        actual: u32,
    },
    /// The payload passed its checksum but does not decode as the expected message. Cause: a
    /// peer of another version or another structure type. Remedy: run the same build on every
    /// host and client.
    Decode {
        /// postcard's error.
        source: postcard::Error,
    },
    /// A peer frame passed its checks but its bytes are not a raft-rs message (protobuf).
    /// Cause: a peer of another version, or garbage from a process that spoke the greeting.
    /// Remedy: run the same build on every host.
    NotRaft {
        /// The payload's length.
        len: u64,
    },
    /// A message could not be encoded. Cause: a serde implementation that fails. Remedy: fix
    /// the operation's `Serialize`.
    Encode {
        /// postcard's error.
        source: postcard::Error,
    },
    /// An encoded message is empty or above [`MAX_FRAME`](crate::MAX_FRAME). Remedy: send
    /// smaller operations.
    TooLarge {
        /// Its length.
        len: u64,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { .. } => write!(f, "frame I/O failed"),
            Self::Closed => write!(f, "connection closed"),
            Self::Truncated { expected, got } => {
                write!(f, "truncated frame: {got} of {expected} bytes")
            }
            Self::BadMagic { found } => write!(f, "not a frame: starts with {found:02x?}"),
            Self::BadLength { len } => write!(f, "frame length {len} out of range"),
            Self::Checksum { expected, actual } => write!(
                f,
                "frame checksum mismatch: header {expected:#010x}, payload {actual:#010x}"
            ),
            Self::Decode { .. } => write!(f, "frame payload does not decode"),
            Self::NotRaft { len } => write!(f, "peer frame of {len} bytes is no raft message"),
            Self::Encode { .. } => write!(f, "message does not encode"),
            Self::TooLarge { len } => write!(f, "message of {len} bytes does not fit a frame"),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source } => Some(source),
            Self::Decode { source } | Self::Encode { source } => Some(source),
            _ => None,
        }
    }
}

/// Why a host or a client call failed.
///
/// # Examples
///
/// ```
/// let err = nr_raft::RaftError::Timeout { what: "write" };
/// assert_eq!(err.to_string(), "write timed out: its outcome is unknown");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RaftError {
    /// A socket or thread operation failed. Cause: the address is taken or unreachable, or
    /// the system is out of threads. Remedy: check the address and that the host runs.
    Io {
        /// What was being done.
        op: &'static str,
        /// The I/O error.
        source: io::Error,
    },
    /// A frame failed its checks, or the connection broke. Remedy: reconnect.
    Frame {
        /// The frame error.
        source: FrameError,
    },
    /// The host's durable log failed. Remedy: see the source (nr-durable names the file).
    Durable {
        /// nr-durable's error.
        source: nr_durable::DurableError,
    },
    /// raft-rs refused the configuration or its storage. Remedy: see the source.
    Engine {
        /// raft-rs's error.
        source: raft::Error,
    },
    /// nr-core refused to build the local replicas or register a thread. Remedy: see the
    /// source (too many replicas for the machine, or more client connections than
    /// `HostConfig::threads` handles).
    Replica {
        /// nr-core's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The local object is poisoned (a `dispatch_mut` panicked). Remedy: restart the host; it
    /// recovers from its log.
    Poisoned,
    /// The operation did not complete in time: no leader, a partition, or a proposal lost in a
    /// leader change. A write's outcome is then **unknown** (it may still take effect); a
    /// read had no effect. Remedy: retry a read; for a write, read to see whether it took
    /// effect, or make writes idempotent.
    Timeout {
        /// "write" or "read".
        what: &'static str,
    },
    /// The request was refused before it took effect: there is no leader right now (a write
    /// then certainly did not happen). Remedy: retry after an election (a few hundred ms).
    NoLeader,
    /// The host is shutting down. Remedy: use another host.
    Stopped,
    /// The client's session is no longer in the group's session table: more sessions were
    /// opened since its last write than `HostConfig::sessions` holds, and it was the least
    /// recently used (or it was never registered). The write was **not** applied; an earlier
    /// write of the session whose outcome was unknown may or may not have been. Remedy: write
    /// again (the client opens a new session); size `HostConfig::sessions` above the number of
    /// clients that write.
    SessionExpired {
        /// The expired session's id.
        session: u64,
    },
    /// The session already applied a later write than this one, so this one was not applied.
    /// Cause: a write given up on (it failed and the client wrote again) was retried. A
    /// [`Client`](crate::Client) never retries an abandoned write, so this does not reach it.
    /// Remedy: none; the write did not happen.
    Superseded,
    /// A checkpoint's state or a log record could not be encoded or decoded. Remedy: run the
    /// same build on every host.
    Codec {
        /// postcard's error.
        source: postcard::Error,
    },
}

impl fmt::Display for RaftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { op, .. } => write!(f, "{op} failed"),
            Self::Frame { .. } => write!(f, "connection failed"),
            Self::Durable { .. } => write!(f, "the durable log failed"),
            Self::Engine { .. } => write!(f, "the raft engine refused"),
            Self::Replica { .. } => write!(f, "the local replicas refused"),
            Self::Poisoned => write!(f, "the local object is poisoned"),
            Self::Timeout { what } => write!(f, "{what} timed out: its outcome is unknown"),
            Self::NoLeader => write!(f, "no leader: the request did not take effect"),
            Self::Stopped => write!(f, "the host is stopping"),
            Self::SessionExpired { session } => {
                write!(f, "session {session} expired: the write was not applied")
            }
            Self::Superseded => write!(f, "a later write of the session was applied first"),
            Self::Codec { .. } => write!(f, "state encoding failed"),
        }
    }
}

impl std::error::Error for RaftError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Frame { source } => Some(source),
            Self::Durable { source } => Some(source),
            Self::Engine { source } => Some(source),
            Self::Replica { source } => Some(source.as_ref()),
            Self::Codec { source } => Some(source),
            _ => None,
        }
    }
}

impl From<FrameError> for RaftError {
    fn from(source: FrameError) -> Self {
        Self::Frame { source }
    }
}

impl From<nr_durable::DurableError> for RaftError {
    fn from(source: nr_durable::DurableError) -> Self {
        Self::Durable { source }
    }
}

impl From<raft::Error> for RaftError {
    fn from(source: raft::Error) -> Self {
        Self::Engine { source }
    }
}

impl From<nr_core::Poisoned> for RaftError {
    fn from(_: nr_core::Poisoned) -> Self {
        Self::Poisoned
    }
}
