//! The Raft log of one host: raft-rs's [`Storage`] over nr-durable's [`Store`].
//!
//! Every change raft-rs asks to persist is appended to an nr-durable store as [`Record`]s (one
//! `append`, so one `fdatasync`, per ready batch) before the messages that depend on it leave
//! the host. A Raft log can replace its uncommitted suffix (a new leader overwrites it), while
//! the store only appends: a [`Record::Entry`] at index `i` replaces every entry from `i` on,
//! both in memory and when the store is replayed at recovery.
//!
//! A snapshot (taken locally every `snapshot_every` applied entries, or received from the
//! leader) is an nr-durable checkpoint of a [`Checkpoint`]: the structure's state at the
//! snapshot index, and everything else the host needs (the hard state, the entries after the
//! index), so that the store drops every record before it.

use nr_durable::{Medium, Store, SyncPolicy};
use raft::eraftpb::{ConfState, Entry, EntryType, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, Storage, StorageError};
use serde::{Deserialize, Serialize};

use crate::RaftError;

/// One entry of the Raft log, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoredEntry {
    index: u64,
    term: u64,
    /// `EntryType` as its protobuf number.
    kind: i32,
    data: Vec<u8>,
    context: Vec<u8>,
}

impl StoredEntry {
    fn of(e: &Entry) -> Self {
        Self {
            index: e.index,
            term: e.term,
            kind: e.get_entry_type() as i32,
            data: e.data.to_vec(),
            context: e.context.to_vec(),
        }
    }

    fn to_entry(&self) -> Entry {
        let mut e = Entry {
            index: self.index,
            term: self.term,
            data: self.data.clone().into(),
            context: self.context.clone().into(),
            ..Default::default()
        };
        e.set_entry_type(match self.kind {
            1 => EntryType::EntryConfChange,
            2 => EntryType::EntryConfChangeV2,
            _ => EntryType::EntryNormal,
        });
        e
    }
}

/// A record of the store's log.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Record {
    /// An entry; it replaces every entry at or after its index.
    Entry(StoredEntry),
    /// The hard state `(term, vote, commit)`.
    Hard(u64, u64, u64),
}

/// A checkpoint: the snapshot and everything after it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    hard: (u64, u64, u64),
    index: u64,
    term: u64,
    voters: Vec<u64>,
    /// postcard of the structure at `index`.
    state: Vec<u8>,
    entries: Vec<StoredEntry>,
}

/// raft-rs's storage for one host, persisted in an nr-durable store.
pub(crate) struct DiskLog {
    hard: HardState,
    conf: ConfState,
    /// The newest snapshot, with its data (the structure at its index).
    snapshot: Snapshot,
    /// The entries after the snapshot: `entries[0].index == snapshot index + 1`.
    entries: Vec<Entry>,
    store: Store<Record>,
    /// The store position of the next record.
    next: u64,
    /// Encoding buffer of the records of one batch.
    batch: Vec<Record>,
}

impl std::fmt::Debug for DiskLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskLog")
            .field("snapshot_index", &self.snapshot_index())
            .field("last_index", &self.last())
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

fn hard_tuple(h: &HardState) -> (u64, u64, u64) {
    (h.term, h.vote, h.commit)
}

fn hard_of((term, vote, commit): (u64, u64, u64)) -> HardState {
    HardState {
        term,
        vote,
        commit,
        ..Default::default()
    }
}

impl DiskLog {
    /// Opens (or creates) the log in `dir`. A new log starts from a snapshot at index 1, term
    /// 1, of `init_state` with `voters`, identical on every host, so no host needs anything
    /// before it. Returns the log and the structure's state at its snapshot.
    pub(crate) fn open(
        dir: &std::path::Path,
        voters: &[u64],
        init_state: impl FnOnce() -> Result<Vec<u8>, RaftError>,
    ) -> Result<(Self, Vec<u8>), RaftError> {
        let medium = Medium::File {
            dir: dir.to_owned(),
        };
        let (store, rec) = Store::<Record>::open::<Checkpoint>(&medium, SyncPolicy::EveryBatch)?;
        let fresh = rec.snapshot.is_none() && rec.ops.is_empty();
        let cp = match rec.snapshot {
            Some((_, cp)) => cp,
            None => Checkpoint {
                hard: (1, 0, 1),
                index: 1,
                term: 1,
                voters: voters.to_vec(),
                state: init_state()?,
                entries: Vec::new(),
            },
        };
        let mut log = Self {
            hard: hard_of(cp.hard),
            conf: ConfState::default(),
            snapshot: Snapshot::default(),
            entries: cp.entries.iter().map(StoredEntry::to_entry).collect(),
            store,
            next: rec.end,
            batch: Vec::new(),
        };
        log.conf.voters = cp.voters.clone();
        let meta = log.snapshot.mut_metadata();
        meta.index = cp.index;
        meta.term = cp.term;
        meta.set_conf_state(log.conf.clone());
        log.snapshot.data = cp.state.clone().into();
        for (_, record) in rec.ops {
            match record {
                Record::Entry(e) => log.put(e.to_entry()),
                Record::Hard(t, v, c) => log.hard = hard_of((t, v, c)),
            }
        }
        if fresh {
            // The initial snapshot is durable before the host says anything.
            log.checkpoint()?;
        }
        // raft-rs panics on a commit index outside the log: refuse it here, typed.
        let in_log = (log.snapshot_index()..=log.last()).contains(&log.hard.commit);
        if !in_log {
            return Err(RaftError::Durable {
                source: nr_durable::DurableError::Corrupt {
                    path: dir.to_owned(),
                    offset: 0,
                    what: format!(
                        "the commit index {} is outside the log {}..={}",
                        log.hard.commit,
                        log.snapshot_index(),
                        log.last()
                    ),
                },
            });
        }
        Ok((log, cp.state))
    }

    /// Durability actions (`fdatasync`s) of the store since it was opened.
    pub(crate) fn syncs(&self) -> u64 {
        self.store.stats().syncs
    }

    pub(crate) fn snapshot_index(&self) -> u64 {
        self.snapshot.get_metadata().index
    }

    fn last(&self) -> u64 {
        self.snapshot_index() + self.entries.len() as u64
    }

    /// Puts `e` in memory, replacing every entry at or after its index.
    fn put(&mut self, e: Entry) {
        let first = self.snapshot_index() + 1;
        if e.index < first {
            return; // covered by the snapshot
        }
        let keep = ((e.index - first) as usize).min(self.entries.len());
        self.entries.truncate(keep);
        self.entries.push(e);
    }

    /// Persists `entries` and the hard state `hs` (either may be empty) with one append: one
    /// `fdatasync`. Returns when they are durable.
    ///
    /// A hard state whose term and vote did not change is kept in memory unless entries are
    /// written anyway: Raft needs the term and the vote durable, while the commit index may
    /// be recovered lower (the leader tells it again), so a commit alone costs no sync.
    pub(crate) fn persist(
        &mut self,
        entries: &[Entry],
        hs: Option<&HardState>,
    ) -> Result<(), RaftError> {
        self.batch.clear();
        for e in entries {
            self.batch.push(Record::Entry(StoredEntry::of(e)));
            self.put(e.clone());
        }
        if let Some(hs) = hs {
            let unchanged = (hs.term, hs.vote) == (self.hard.term, self.hard.vote);
            self.hard = hs.clone();
            if !(unchanged && entries.is_empty()) {
                let (t, v, c) = hard_tuple(hs);
                self.batch.push(Record::Hard(t, v, c));
            }
        }
        self.append_batch()
    }

    /// Appends the current hard state alone.
    fn append_hard(&mut self) -> Result<(), RaftError> {
        self.batch.clear();
        let (t, v, c) = hard_tuple(&self.hard);
        self.batch.push(Record::Hard(t, v, c));
        self.append_batch()
    }

    fn append_batch(&mut self) -> Result<(), RaftError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let refs: Vec<&Record> = self.batch.iter().collect();
        self.store.append(self.next, &refs)?;
        self.next += refs.len() as u64;
        Ok(())
    }

    /// Records a commit index learned after the ready batch (in memory: the next hard state
    /// written carries it, and a lower one on disk only means replaying more after a restart).
    pub(crate) fn set_commit(&mut self, commit: u64) {
        self.hard.commit = commit;
    }

    /// Installs a snapshot received from the leader: every entry is dropped, the commit index
    /// moves to the snapshot's, and the checkpoint is durable when this returns.
    pub(crate) fn install(&mut self, snap: &Snapshot) -> Result<(), RaftError> {
        let meta = snap.get_metadata();
        self.entries.clear();
        self.hard.term = self.hard.term.max(meta.term);
        self.hard.commit = meta.index;
        self.conf = meta.get_conf_state().clone();
        self.snapshot = snap.clone();
        self.checkpoint()
    }

    /// Takes a local snapshot at `index` (applied), with `state` the structure there: the
    /// entries up to `index` are dropped, in memory and from the store.
    pub(crate) fn compact(&mut self, index: u64, state: Vec<u8>) -> Result<(), RaftError> {
        if index <= self.snapshot_index() || index > self.last() {
            return Ok(());
        }
        let term = self.term(index)?;
        let drop = (index - self.snapshot_index()) as usize;
        self.entries.drain(..drop);
        let meta = self.snapshot.mut_metadata();
        meta.index = index;
        meta.term = term;
        meta.set_conf_state(self.conf.clone());
        self.snapshot.data = state.into();
        self.checkpoint()
    }

    /// Writes the current snapshot and everything after it as an nr-durable checkpoint at the
    /// store's end, which drops every record before it.
    ///
    /// nr-durable ignores a checkpoint at or before its newest one's position, and two
    /// checkpoints may follow each other with no record between them (a compaction, then the
    /// leader's snapshot): the hard state is appended first, so that each checkpoint's position
    /// is past the previous one's.
    fn checkpoint(&mut self) -> Result<(), RaftError> {
        self.append_hard()?;
        let meta = self.snapshot.get_metadata();
        let cp = Checkpoint {
            hard: hard_tuple(&self.hard),
            index: meta.index,
            term: meta.term,
            voters: self.conf.voters.clone(),
            state: self.snapshot.data.to_vec(),
            entries: self.entries.iter().map(StoredEntry::of).collect(),
        };
        let written = self.store.checkpoint(self.next, &cp)?;
        debug_assert!(
            written,
            "invariant: the hard state appended above moved the position"
        );
        Ok(())
    }
}

impl Storage for DiskLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(self.hard.clone(), self.conf.clone()))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        let first = self.snapshot_index() + 1;
        if low < first {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last() + 1 || low > high {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let mut out = self.entries[(low - first) as usize..(high - first) as usize].to_vec();
        raft::util::limit_size(&mut out, max_size.into());
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let snap = self.snapshot_index();
        if idx == snap {
            return Ok(self.snapshot.get_metadata().term);
        }
        if idx < snap {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > self.last() {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        Ok(self.entries[(idx - snap - 1) as usize].term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.snapshot_index() + 1)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last())
    }

    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        if self.snapshot_index() < request_index {
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        Ok(self.snapshot.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
        Entry {
            index,
            term,
            data: data.to_vec().into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_replaced_suffix_stays_replaced_after_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, _) =
                DiskLog::open(dir.path(), &[1, 2, 3], || Ok(vec![7])).expect("opens");
            log.persist(
                &[entry(2, 1, b"a"), entry(3, 1, b"b"), entry(4, 1, b"c")],
                None,
            )
            .expect("persists");
            // A new leader of term 2 overwrites index 3 on.
            log.persist(&[entry(3, 2, b"x")], Some(&hard_of((2, 1, 2))))
                .expect("persists");
        }
        let (log, state) = DiskLog::open(dir.path(), &[1, 2, 3], || Ok(vec![9])).expect("reopens");
        assert_eq!(state, vec![7], "the initial snapshot, not a new one");
        assert_eq!(log.last_index().expect("last"), 3);
        assert_eq!(log.term(3).expect("term"), 2);
        let es = log
            .entries(2, 4, None, GetEntriesContext::empty(false))
            .expect("entries");
        assert_eq!(es[1].data.as_ref(), b"x");
        assert_eq!(
            hard_tuple(&log.initial_state().expect("state").hard_state),
            (2, 1, 2)
        );
    }

    #[test]
    fn a_snapshot_installed_right_after_a_compaction_is_the_one_recovered() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, _) = DiskLog::open(dir.path(), &[1, 2], || Ok(vec![0])).expect("opens");
            log.persist(
                &[entry(2, 1, b"a"), entry(3, 1, b"b")],
                Some(&hard_of((1, 1, 3))),
            )
            .expect("persists");
            log.compact(3, vec![3]).expect("compacts");
            // The leader's snapshot at 10, with no record appended since the compaction.
            let mut snap = Snapshot::default();
            snap.mut_metadata().index = 10;
            snap.mut_metadata().term = 2;
            snap.mut_metadata().mut_conf_state().voters = vec![1, 2];
            snap.data = vec![10].into();
            log.install(&snap).expect("installs");
            log.persist(&[entry(11, 2, b"c")], Some(&hard_of((2, 0, 11))))
                .expect("persists");
        }
        let (log, state) = DiskLog::open(dir.path(), &[1, 2], || Ok(vec![0])).expect("reopens");
        assert_eq!(state, vec![10], "the installed snapshot's state");
        assert_eq!(log.first_index().expect("first"), 11);
        assert_eq!(log.last_index().expect("last"), 11);
        assert_eq!(log.term(11).expect("term"), 2);
    }

    #[test]
    fn a_commit_index_beyond_the_log_is_a_typed_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, _) = DiskLog::open(dir.path(), &[1], || Ok(vec![0])).expect("opens");
            log.persist(&[], Some(&hard_of((1, 1, 50))))
                .expect("persists");
        }
        let err = DiskLog::open(dir.path(), &[1], || Ok(vec![0])).unwrap_err();
        assert!(err.to_string().contains("durable log"), "{err}");
        let source = std::error::Error::source(&err)
            .expect("a cause")
            .to_string();
        assert!(
            source.contains("commit index 50 is outside the log 1..=1"),
            "{source}"
        );
    }

    #[test]
    fn a_vote_is_durable_and_a_commit_alone_costs_no_sync() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, _) =
                DiskLog::open(dir.path(), &[1, 2, 3], || Ok(vec![0])).expect("opens");
            log.persist(&[entry(2, 1, b"a")], None).expect("persists");
            let syncs = log.syncs();
            log.persist(&[], Some(&hard_of((1, 0, 2))))
                .expect("commit only");
            assert_eq!(log.syncs(), syncs, "a commit alone is not synced");
            log.persist(&[], Some(&hard_of((2, 3, 2)))).expect("a vote");
            assert_eq!(log.syncs(), syncs + 1, "a vote is synced");
        }
        let (log, _) = DiskLog::open(dir.path(), &[1, 2, 3], || Ok(vec![0])).expect("reopens");
        let hard = log.initial_state().expect("state").hard_state;
        assert_eq!(hard_tuple(&hard), (2, 3, 2));
    }

    #[test]
    fn a_compacted_log_reopens_from_its_checkpoint() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let (mut log, _) = DiskLog::open(dir.path(), &[1], || Ok(vec![0])).expect("opens");
            log.persist(
                &[entry(2, 1, b"a"), entry(3, 1, b"b")],
                Some(&hard_of((1, 1, 3))),
            )
            .expect("persists");
            log.compact(2, vec![42]).expect("compacts");
        }
        let (log, state) = DiskLog::open(dir.path(), &[1], || Ok(vec![0])).expect("reopens");
        assert_eq!(state, vec![42]);
        assert_eq!(log.first_index().expect("first"), 3);
        assert_eq!(log.term(3).expect("term"), 1);
        assert!(matches!(
            log.term(1),
            Err(raft::Error::Store(StorageError::Compacted))
        ));
    }
}
