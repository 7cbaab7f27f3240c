//! The Raft loop of one host: one thread owns raft-rs's `RawNode`, persists what it asks,
//! sends its messages, and applies committed writes in log order to the local
//! `NodeReplicated`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use protobuf::Message as _;
use raft::eraftpb::{Entry, EntryType, Message};
use raft::{RawNode, ReadState};
use serde::{Deserialize, Serialize};

use crate::host::Shared;
use crate::session::{Command, Outcome, SessionCmd};
use crate::storage::DiskLog;
use crate::sync::{Arc, Ordering, Receiver, RecvTimeoutError, Sender};
use crate::wire::{Failure, Reply};
use crate::{RaftDispatch, RaftError};

/// What the other threads of a host ask of its Raft loop.
pub(crate) enum Event<D: RaftDispatch> {
    /// Propose a session command; `reply` gets its outcome once it is applied here.
    Propose {
        cmd: SessionCmd<D::WriteOperation>,
        reply: Sender<Reply<Outcome<D::Response>>>,
    },
    /// Ask for a read index; `reply` gets it once this host has applied that far.
    ReadIndex { reply: Sender<Reply<u64>> },
    /// A message from a peer.
    Raft(Message),
}

/// The data of a log entry: a session command and who proposed it.
#[derive(Serialize, Deserialize)]
struct Proposal<W> {
    host: u64,
    /// The proposing host's incarnation: ids restart at each start, so a write proposed
    /// before a restart and committed after it does not answer a new request.
    boot: u64,
    id: u64,
    cmd: SessionCmd<W>,
}

/// A request waiting since an instant for its answer.
type Waiting<T> = (Instant, Sender<Reply<T>>);

/// Reads sharing one read-index request, waiting since an instant.
type WaitingReads = (Instant, Vec<Sender<Reply<u64>>>);

/// The Raft loop's state.
pub(crate) struct Driver<D: RaftDispatch> {
    pub(crate) raw: RawNode<DiskLog>,
    pub(crate) shared: Arc<Shared<D>>,
    pub(crate) events: Receiver<Event<D>>,
    pub(crate) peers: HashMap<u64, Sender<Message>>,
    pub(crate) boot: u64,
    pub(crate) tick: Duration,
    pub(crate) snapshot_every: u64,
    next_id: u64,
    writes: HashMap<u64, Waiting<Outcome<D::Response>>>,
    /// Reads received since the last read-index request: they share the next one.
    unsent_reads: Vec<Sender<Reply<u64>>>,
    /// Read-index requests waiting for raft-rs's answer, by id, with the reads they serve.
    reads: HashMap<u64, WaitingReads>,
    /// Read indexes known, waiting until this host has applied that far.
    read_waits: Vec<(u64, Sender<Reply<u64>>)>,
    applied: u64,
}

impl<D: RaftDispatch> Driver<D> {
    pub(crate) fn new(
        raw: RawNode<DiskLog>,
        shared: Arc<Shared<D>>,
        events: Receiver<Event<D>>,
        peers: HashMap<u64, Sender<Message>>,
        tick: Duration,
        snapshot_every: u64,
        boot: u64,
    ) -> Self {
        let applied = raw.store().snapshot_index();
        Self {
            raw,
            shared,
            events,
            peers,
            boot,
            tick,
            snapshot_every,
            next_id: 0,
            writes: HashMap::new(),
            unsent_reads: Vec::new(),
            reads: HashMap::new(),
            read_waits: Vec::new(),
            applied,
        }
    }

    /// Runs until the host stops or a step fails (the failure stops the host: its log is
    /// the truth, and a restart recovers from it).
    pub(crate) fn run(mut self) {
        if let Err(e) = self.run_inner() {
            eprintln!("nr-raft host {}: stopped: {e}", self.shared.id);
            // Relaxed: a flag polled by the other threads; nothing is published through it.
            self.shared.stop.store(true, Ordering::Relaxed);
        }
    }

    fn run_inner(&mut self) -> Result<(), RaftError> {
        let mut last_tick = Instant::now();
        loop {
            // Relaxed: see `run`.
            if self.shared.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let wait = self.tick.saturating_sub(last_tick.elapsed());
            match self.events.recv_timeout(wait) {
                Ok(ev) => {
                    self.handle(ev);
                    // Take what else is queued before the next ready: one sync for all.
                    for _ in 0..256 {
                        match self.events.try_recv() {
                            Ok(ev) => self.handle(ev),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            self.request_read_index();
            if last_tick.elapsed() >= self.tick {
                self.raw.tick();
                last_tick = Instant::now();
                self.sweep();
                let leader = self.raw.raft.leader_id;
                // Relaxed: information for `Host::leader`, read alone.
                self.shared.leader.store(leader, Ordering::Relaxed);
            }
            self.on_ready()?;
        }
    }

    fn handle(&mut self, ev: Event<D>) {
        match ev {
            Event::Propose { cmd, reply } => {
                self.next_id += 1;
                let id = self.next_id;
                let p = Proposal {
                    host: self.shared.id,
                    boot: self.boot,
                    id,
                    cmd,
                };
                let data = match postcard::to_allocvec(&p) {
                    Ok(d) => d,
                    Err(_) => {
                        let _ = reply.send(Err(Failure::Poisoned));
                        return;
                    }
                };
                match self.raw.propose(Vec::new(), data) {
                    Ok(()) => {
                        self.writes.insert(id, (Instant::now(), reply));
                    }
                    // Dropped before it entered any log: it certainly did not happen.
                    Err(_) => {
                        let _ = reply.send(Err(Failure::NoLeader));
                    }
                }
            }
            Event::ReadIndex { reply } => {
                // raft-rs drops a read index silently while no leader is known: answer now.
                if self.raw.raft.leader_id == raft::INVALID_ID {
                    let _ = reply.send(Err(Failure::NoLeader));
                    return;
                }
                self.unsent_reads.push(reply);
            }
            Event::Raft(m) => {
                // A message raft-rs rejects (from an unknown peer, say) is dropped: the sender
                // retries what matters.
                let _ = self.raw.step(m);
            }
        }
    }

    /// Asks raft-rs for one read index for every read received since the last request. It is
    /// valid for all of them: each arrived before the request, so the leader's commit index
    /// when it answers covers every write acknowledged before any of them was sent.
    fn request_read_index(&mut self) {
        if self.unsent_reads.is_empty() {
            return;
        }
        self.next_id += 1;
        let id = self.next_id;
        let batch = std::mem::take(&mut self.unsent_reads);
        self.reads.insert(id, (Instant::now(), batch));
        self.raw.read_index(read_ctx(self.boot, id));
    }

    /// Forgets requests whose callers gave up (they answered their clients `Timeout`).
    fn sweep(&mut self) {
        let limit = self.shared.request_timeout * 2;
        self.writes.retain(|_, (t, _)| t.elapsed() < limit);
        self.reads.retain(|_, (t, _)| t.elapsed() < limit);
    }

    fn send(&self, msgs: Vec<Message>) {
        for m in msgs {
            if let Some(tx) = self.peers.get(&m.to) {
                let _ = tx.send(m);
            }
        }
    }

    fn on_ready(&mut self) -> Result<(), RaftError> {
        if !self.raw.has_ready() {
            return Ok(());
        }
        let mut ready = self.raw.ready();
        // A leader may send before it persists (Raft §10.2.1); raft-rs puts only such
        // messages here.
        self.send(ready.take_messages());
        if !ready.snapshot().is_empty() {
            let snap = ready.snapshot().clone();
            self.raw.mut_store().install(&snap)?;
            self.shared.replace_state(&snap.data)?;
            self.set_applied(snap.get_metadata().index);
        }
        self.on_read_states(ready.take_read_states());
        self.apply(ready.take_committed_entries())?;
        // Durable before the messages that acknowledge it: one append, one sync.
        self.raw.mut_store().persist(ready.entries(), ready.hs())?;
        // Relaxed: a statistic.
        let syncs = self.raw.store().syncs();
        self.shared.log_syncs.store(syncs, Ordering::Relaxed);
        self.send(ready.take_persisted_messages());
        let mut light = self.raw.advance(ready);
        if let Some(commit) = light.commit_index() {
            self.raw.mut_store().set_commit(commit);
        }
        self.send(light.take_messages());
        self.apply(light.take_committed_entries())?;
        self.raw.advance_apply();
        self.maybe_compact()
    }

    fn on_read_states(&mut self, states: Vec<ReadState>) {
        for rs in states {
            let Some(id) = parse_read_ctx(self.boot, &rs.request_ctx) else {
                continue;
            };
            if let Some((_, batch)) = self.reads.remove(&id) {
                self.read_waits
                    .extend(batch.into_iter().map(|reply| (rs.index, reply)));
            }
        }
        self.release_reads();
    }

    /// Answers the reads whose index this host has applied.
    fn release_reads(&mut self) {
        let applied = self.applied;
        self.read_waits.retain(|(index, reply)| {
            if *index <= applied {
                let _ = reply.send(Ok(*index));
                false
            } else {
                true
            }
        });
    }

    /// Applies committed entries in log order to the local object.
    fn apply(&mut self, entries: Vec<Entry>) -> Result<(), RaftError> {
        if entries.is_empty() {
            return Ok(());
        }
        let nr = self.shared.nr();
        let mut handle = nr.register(0).map_err(|e| RaftError::Replica {
            source: Box::new(e),
        })?;
        for e in entries {
            if e.index <= self.applied {
                continue; // covered by an installed snapshot
            }
            if e.get_entry_type() == EntryType::EntryNormal && !e.data.is_empty() {
                let p: Proposal<D::WriteOperation> =
                    postcard::from_bytes(&e.data).map_err(|source| RaftError::Codec { source })?;
                let resp = handle.execute_mut(Command {
                    index: e.index,
                    cmd: p.cmd,
                })?;
                if matches!(resp, Outcome::Duplicate(_)) {
                    // Relaxed: a statistic.
                    self.shared.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                if p.host == self.shared.id && p.boot == self.boot {
                    if let Some((_, reply)) = self.writes.remove(&p.id) {
                        let _ = reply.send(Ok(resp));
                    }
                }
            }
            self.set_applied(e.index);
        }
        drop(handle);
        self.release_reads();
        Ok(())
    }

    fn set_applied(&mut self, index: u64) {
        self.applied = index;
        // Relaxed: statistics for `Host::applied`; readers learn the applied index through
        // the reply channel, whose send/receive orders it.
        self.shared.applied.store(index, Ordering::Relaxed);
    }

    fn maybe_compact(&mut self) -> Result<(), RaftError> {
        let snap = self.raw.store().snapshot_index();
        if self.snapshot_every == 0 || self.applied < snap + self.snapshot_every {
            return Ok(());
        }
        let state = self.shared.encode_state()?;
        self.raw.mut_store().compact(self.applied, state)
    }
}

fn read_ctx(boot: u64, id: u64) -> Vec<u8> {
    let mut v = boot.to_le_bytes().to_vec();
    v.extend_from_slice(&id.to_le_bytes());
    v
}

fn parse_read_ctx(boot: u64, ctx: &[u8]) -> Option<u64> {
    let b = u64::from_le_bytes(ctx.get(0..8)?.try_into().ok()?);
    let id = u64::from_le_bytes(ctx.get(8..16)?.try_into().ok()?);
    (b == boot).then_some(id)
}

/// Encodes a raft-rs message for a peer frame.
pub(crate) fn encode_message(m: &Message) -> Option<Vec<u8>> {
    m.write_to_bytes().ok()
}

/// Decodes a peer frame's raft-rs message.
pub(crate) fn decode_message(bytes: &[u8]) -> Option<Message> {
    Message::parse_from_bytes(bytes).ok()
}
