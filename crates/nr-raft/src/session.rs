//! Client sessions: exactly-once writes (Raft thesis, Ongaro 2014, §6.3).
//!
//! The object every host replicates is not the user's structure alone but a
//! [`Replicated`]: the structure and a table of client sessions. A client registers a session
//! through the log (its id is the log index of the registration, so ids are unique forever)
//! and numbers its writes 1, 2, 3, ...; the table keeps, per session, the last sequence number
//! applied and its response. A write whose number is the last one is a retry: it is answered
//! with the saved response and not applied again. The table is part of the replicated state,
//! so a snapshot (a checkpoint, or one sent to a lagging follower) carries it and a restarted
//! host has it.
//!
//! **Expiry.** The table holds at most `max` sessions (`HostConfig::sessions`, fixed by the
//! group's first start: it is part of the initial state). Registering one more evicts the
//! session used least recently, by the log index of its last command: every host applies the
//! same commands at the same indexes, so every host evicts the same one. A write of an evicted
//! (or never registered) session is refused with [`Outcome::Expired`] without being applied.

use std::collections::HashMap;

use nr_core::Dispatch;
use serde::{Deserialize, Serialize};

use crate::RaftDispatch;

/// What a client asks of the replicated state (the data of a log entry, with its proposer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum SessionCmd<W> {
    /// Open a session; its id is this entry's log index.
    Register,
    /// Write `op` as write number `seq` of `session`.
    Write { session: u64, seq: u64, op: W },
}

/// A command as it is applied: with the log index of its entry.
#[derive(Debug, Clone)]
pub(crate) struct Command<W> {
    pub(crate) index: u64,
    pub(crate) cmd: SessionCmd<W>,
}

/// The answer of the replicated state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome<R> {
    /// A session was opened with this id.
    Registered(u64),
    /// The write was applied (or a read answered): its response.
    Applied(R),
    /// The write was a retry of the session's last write: its saved response, not applied
    /// again.
    Duplicate(R),
    /// The session is not in the table (evicted, or never registered): not applied.
    Expired,
    /// The session already applied a later write: this older one is not applied (its client
    /// gave up on it and moved on).
    Superseded,
}

/// One session's entry of the table.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Session<R> {
    /// The last write number applied (0: none yet).
    seq: u64,
    /// Its response.
    response: Option<R>,
    /// The log index of the session's last command (its registration or a write).
    used: u64,
}

/// The replicated object: the user's structure and the client sessions.
#[derive(Serialize, Deserialize)]
#[serde(bound(
    serialize = "D: Serialize, D::Response: Serialize",
    deserialize = "D: Deserialize<'de>, D::Response: Deserialize<'de>"
))]
pub(crate) struct Replicated<D: Dispatch> {
    inner: D,
    /// At most this many sessions.
    max: usize,
    sessions: HashMap<u64, Session<D::Response>>,
}

impl<D: RaftDispatch> Replicated<D> {
    /// `inner` with an empty table of at most `max` sessions (at least 1).
    pub(crate) fn new(inner: D, max: usize) -> Self {
        Self {
            inner,
            max: max.max(1),
            sessions: HashMap::new(),
        }
    }

    /// Opens session `id` (an entry's log index), evicting the least recently used one if the
    /// table is full.
    fn register(&mut self, id: u64) -> Outcome<D::Response> {
        if self.sessions.len() >= self.max {
            // Deterministic: `used` values are distinct log indexes, the same on every host.
            let oldest = self
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.sessions.remove(&k);
            }
        }
        let fresh = Session {
            seq: 0,
            response: None,
            used: id,
        };
        self.sessions.insert(id, fresh);
        Outcome::Registered(id)
    }

    /// Applies write `seq` of `session` at log index `index`, at most once.
    fn write(
        &mut self,
        index: u64,
        session: u64,
        seq: u64,
        op: D::WriteOperation,
    ) -> Outcome<D::Response> {
        let Some(s) = self.sessions.get_mut(&session) else {
            return Outcome::Expired;
        };
        s.used = index;
        if seq < s.seq {
            return Outcome::Superseded;
        }
        if seq == s.seq {
            return s
                .response
                .clone()
                .map_or(Outcome::Superseded, Outcome::Duplicate);
        }
        let r = self.inner.dispatch_mut(op);
        s.seq = seq;
        s.response = Some(r.clone());
        Outcome::Applied(r)
    }
}

impl<D: RaftDispatch> Dispatch for Replicated<D> {
    type ReadOperation<'a>
        = D::ReadOperation<'a>
    where
        Self: 'a;
    type WriteOperation = Command<D::WriteOperation>;
    type Response = Outcome<D::Response>;

    fn dispatch(&self, op: Self::ReadOperation<'_>) -> Self::Response {
        Outcome::Applied(self.inner.dispatch(op))
    }

    fn dispatch_mut(&mut self, c: Self::WriteOperation) -> Self::Response {
        match c.cmd {
            SessionCmd::Register => self.register(c.index),
            SessionCmd::Write { session, seq, op } => self.write(c.index, session, seq, op),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kv;

    fn put(index: u64, session: u64, seq: u64, k: u64, v: u64) -> Command<(u64, u64)> {
        Command {
            index,
            cmd: SessionCmd::Write {
                session,
                seq,
                op: (k, v),
            },
        }
    }

    fn register(index: u64) -> Command<(u64, u64)> {
        Command {
            index,
            cmd: SessionCmd::Register,
        }
    }

    #[test]
    fn a_retried_write_is_answered_with_its_saved_response_and_not_applied() {
        let mut r = Replicated::new(Kv::default(), 4);
        assert_eq!(r.dispatch_mut(register(1)), Outcome::Registered(1));
        assert_eq!(r.dispatch_mut(put(2, 1, 1, 7, 70)), Outcome::Applied(None));
        assert_eq!(
            r.dispatch_mut(put(3, 1, 2, 7, 71)),
            Outcome::Applied(Some(70))
        );
        // The retry of write 2 (its reply was lost), with another value: not applied.
        assert_eq!(
            r.dispatch_mut(put(4, 1, 2, 7, 99)),
            Outcome::Duplicate(Some(70))
        );
        assert_eq!(r.dispatch(7), Outcome::Applied(Some(71)));
        // A copy of write 1 committed late: not applied either.
        assert_eq!(r.dispatch_mut(put(5, 1, 1, 7, 98)), Outcome::Superseded);
        assert_eq!(r.dispatch(7), Outcome::Applied(Some(71)));
    }

    #[test]
    fn the_least_recently_used_session_expires_and_its_writes_are_refused() {
        let mut r = Replicated::new(Kv::default(), 2);
        r.dispatch_mut(register(1));
        r.dispatch_mut(register(2));
        // Session 1 is used after session 2 registered: 2 is now the least recently used.
        r.dispatch_mut(put(3, 1, 1, 0, 1));
        assert_eq!(r.dispatch_mut(register(4)), Outcome::Registered(4));
        assert_eq!(r.dispatch_mut(put(5, 2, 1, 0, 2)), Outcome::Expired);
        assert_eq!(
            r.dispatch_mut(put(6, 1, 2, 0, 3)),
            Outcome::Applied(Some(1))
        );
        assert_eq!(r.dispatch_mut(put(7, 9, 1, 0, 4)), Outcome::Expired);
        assert_eq!(r.dispatch(0), Outcome::Applied(Some(3)));
    }

    #[test]
    fn the_session_table_travels_in_the_encoded_state() {
        let mut r = Replicated::new(Kv::default(), 4);
        r.dispatch_mut(register(1));
        r.dispatch_mut(put(2, 1, 1, 5, 50));
        let bytes = postcard::to_allocvec(&r).expect("encodes");
        let mut back: Replicated<Kv> = postcard::from_bytes(&bytes).expect("decodes");
        assert_eq!(
            back.dispatch_mut(put(3, 1, 1, 5, 51)),
            Outcome::Duplicate(None)
        );
        assert_eq!(back.dispatch(5), Outcome::Applied(Some(50)));
    }
}
