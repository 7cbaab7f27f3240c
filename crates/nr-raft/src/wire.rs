//! The messages inside frames: a connection's first frame says who speaks, then peers send
//! raft-rs messages and clients send requests.

use serde::{Deserialize, Serialize};

/// The first frame of every connection.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Hello {
    /// A Raft peer with this id; raft-rs messages follow.
    Peer { from: u64 },
    /// A client; [`Request`]s follow, each answered by one [`Reply`].
    Client,
}

/// A peer frame: one raft-rs message in its protobuf encoding.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PeerFrame(pub(crate) Vec<u8>);

/// How a read is served.
///
/// # Examples
///
/// ```
/// assert_eq!(nr_raft::Consistency::default(), nr_raft::Consistency::Linearizable);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Consistency {
    /// The default: the host asks the leader for a read index (the leader confirms its
    /// leadership with a quorum), waits until it has applied that far, then reads its local
    /// replica through NR. The read sees every write acknowledged before it was sent.
    #[default]
    Linearizable,
    /// Reads the local replica at once, skipping the confirmation: no network round trip, but
    /// the host may lag the leader (a partitioned follower serves old values) and may be
    /// behind a read a client made on another host. Each host's own reads never go back in
    /// time while it runs.
    Stale,
}

/// A client request.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Request<W, Q> {
    /// Open a session (answered with its id, a `Reply<u64>`).
    Register,
    /// Write number `seq` of `session`, proposed to Raft (applied at most once).
    Write { session: u64, seq: u64, op: W },
    /// A read.
    Read(Q, Consistency),
}

/// Why a server could not answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) enum Failure {
    Timeout,
    NoLeader,
    Stopped,
    Poisoned,
    SessionExpired,
    Superseded,
}

/// The answer to one request.
pub(crate) type Reply<R> = Result<R, Failure>;
