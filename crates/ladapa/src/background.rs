//! The control plane (paper §III-C, Fig. 5-6): the propagator, and per node a replicator and
//! an adapter; their notifications, steps, threads and the adaptive rule.
//!
//! Every step works the same with background threads or under the manual pump, so tests that
//! pump by hand exercise the very code the threads run.
//!
//! - **Propagator** (Fig. 6 steps 5a, 5, 6): pops a [`MetaNote`], and if its version is still
//!   the key's current one (checked under the key's set lock), installs the metadata into every
//!   node's L2 and, under [`ValueReplication::Eager`], queues a [`DataNote`] for every other
//!   node's replicator (under `OnDemand` a reader's second remote read of a version queues one
//!   for its own node: [`Shared::remote_read`]). A note whose version is no longer current is
//!   skipped: a newer write queued its own note (coalescing).
//! - **Replicator** of node `m` (steps 7-9): pops a [`DataNote`]; pinned, it checks under the
//!   set lock that the version is still current (so the source block cannot be reclaimed while
//!   it copies), copies the value into node `m`'s pool, and installs the copy as the local
//!   replica of L2 entry, tagged with the version it copied. Stale notes are skipped; a full
//!   pool or queue drops the replication (best effort: reads never depend on it).
//! - **Adapter** of node `m` (steps 10-12): samples the global read/write counters every
//!   [`Builder::adapter_period_us`](crate::Builder::adapter_period_us) while there is activity
//!   (naps 100 periods otherwise); when the last window was read-intensive (at least 90% reads) it helps
//!   its replicator drain the queue; adapter 0 also applies the [`AdaptiveRule`].

use std::num::NonZeroU64;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use crate::config::ValueReplication;
use crate::error::{BackgroundPanic, BackgroundThread};
use crate::meta::{mix64, read, write, Loc, Meta};
use crate::store::Shared;
use crate::sync::{doze, yield_now, Guard, Ordering};

/// A metadata replication notification (to the propagator).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MetaNote {
    pub(crate) key: u64,
    pub(crate) meta: Meta,
}

/// A value replication notification (to one node's replicator).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataNote {
    pub(crate) key: u64,
    pub(crate) version: u64,
    pub(crate) src: Loc,
}

/// The rule [`MetadataMode::Adaptive`](crate::MetadataMode::Adaptive) follows (ours; the paper
/// leaves it open). Adapter 0 judges it once per sampling period over the operations of that
/// period, all nodes together. Each judged period *votes*:
///
/// - **for synchronous** when the propagator's queue is more than 3/4 full (back-pressure:
///   writers do the work themselves rather than let the backlog grow; this vote switches at
///   once), or, while asynchronous, when fewer than 1 operation in
///   [`AdaptiveRule::ENTER_SYNC_BELOW_ONE_WRITE_IN`] (5%) was a write (writes are rare, so
///   doing their metadata replication inline costs little and makes every node's L2 fresh at
///   once, which is what read-mostly loads want);
/// - **for asynchronous** while synchronous when more than 1 operation in
///   [`AdaptiveRule::LEAVE_SYNC_ABOVE_ONE_WRITE_IN`] (10%) was a write and the queue is no more
///   than 3/4 full (write-heavy loads keep replication off the critical path);
/// - otherwise for the current mode.
///
/// **Hysteresis**, twice over: the thresholds differ (enter synchronous below 5% writes, leave
/// it only above 10%), and a rate vote against the current mode must come
/// [`AdaptiveRule::CONFIRM_PERIODS`] judged periods in a row before the mode changes. A period
/// with fewer than [`AdaptiveRule::MIN_OPS`] operations is not judged (it neither votes nor
/// breaks a streak). [`Stats::mode_switches`] counts the changes and [`Stats::sync_writes`] /
/// [`Stats::async_writes`] what writes did.
///
/// [`Stats::mode_switches`]: crate::Stats::mode_switches
/// [`Stats::sync_writes`]: crate::Stats::sync_writes
/// [`Stats::async_writes`]: crate::Stats::async_writes
///
/// # Examples
///
/// ```
/// use ladapa::AdaptiveRule;
///
/// let mut rule = AdaptiveRule::new();
/// assert!(!rule.is_sync(), "starts asynchronous");
/// for _ in 0..AdaptiveRule::CONFIRM_PERIODS - 1 {
///     rule.observe(1000, 10, false); // 1% writes
///     assert!(!rule.is_sync(), "not yet: the vote must be confirmed");
/// }
/// assert!(rule.observe(1000, 10, false), "switched to synchronous");
/// rule.observe(920, 80, false); // 8% writes: between the thresholds, stays synchronous
/// assert!(rule.is_sync());
/// rule.observe(10, 0, false); // too few operations to judge
/// assert!(rule.is_sync());
/// let mut async_again = false;
/// for _ in 0..AdaptiveRule::CONFIRM_PERIODS {
///     async_again = rule.observe(500, 500, false); // 50% writes
/// }
/// assert!(async_again && !rule.is_sync());
/// assert!(rule.observe(500, 500, true) && rule.is_sync(), "a backlog switches at once");
/// assert_eq!(rule.switches(), 3);
/// ```
#[derive(Debug, Clone, Default)]
pub struct AdaptiveRule {
    sync: bool,
    /// Consecutive judged periods that voted against the current mode.
    streak: u32,
    switches: u64,
}

impl AdaptiveRule {
    /// Operations a period needs before it is judged.
    pub const MIN_OPS: u64 = 64;
    /// While asynchronous, a period votes synchronous when writes are fewer than one in this
    /// many operations (5%).
    pub const ENTER_SYNC_BELOW_ONE_WRITE_IN: u64 = 20;
    /// While synchronous, a period votes asynchronous when writes are more than one in this
    /// many operations (10%).
    pub const LEAVE_SYNC_ABOVE_ONE_WRITE_IN: u64 = 10;
    /// Consecutive votes against the current mode that change it (a backlog vote needs one).
    pub const CONFIRM_PERIODS: u32 = 3;

    /// Asynchronous, no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the rule currently chooses synchronous metadata replication.
    pub fn is_sync(&self) -> bool {
        self.sync
    }

    /// Mode changes so far.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Takes one period: `reads` and `writes` done in it, and whether the propagator's queue
    /// is more than 3/4 full (`backlog`). Returns whether the mode changed.
    pub fn observe(&mut self, reads: u64, writes: u64, backlog: bool) -> bool {
        let ops = reads + writes;
        let vote_sync = if backlog {
            if !self.sync {
                self.streak = Self::CONFIRM_PERIODS; // switch now
            }
            true
        } else if ops < Self::MIN_OPS {
            return false;
        } else if self.sync {
            writes * Self::LEAVE_SYNC_ABOVE_ONE_WRITE_IN <= ops
        } else {
            writes * Self::ENTER_SYNC_BELOW_ONE_WRITE_IN < ops
        };
        if vote_sync == self.sync {
            self.streak = 0;
            return false;
        }
        self.streak = self.streak.saturating_add(1).min(Self::CONFIRM_PERIODS);
        if self.streak < Self::CONFIRM_PERIODS {
            return false;
        }
        self.sync = vote_sync;
        self.streak = 0;
        self.switches += 1;
        true
    }
}

/// An adapter's memory between samples.
#[derive(Debug, Default)]
pub(crate) struct AdapterState {
    reads: u64,
    writes: u64,
    /// Adapter 0's adaptive rule.
    rule: AdaptiveRule,
}

/// How long an idle propagator or replicator dozes (without parking) after a busy pass before
/// it parks: producers that publish meanwhile find it awake and need not wake it with a
/// system call, so under a steady load notes are taken in batches about this far apart.
const DOZE: Duration = Duration::from_micros(50);

impl Shared {
    /// The current metadata of `key` as seen under its set's read lock from node `node`'s
    /// point of view (L1, else that node's L2, which is current when L1 misses).
    fn current_version(&self, key: u64, node: usize) -> Option<u64> {
        let set = self.l1.set(key);
        let data = read(&set.data);
        match data.find(key) {
            Some(way) => Some(data.meta(way).version),
            None => self.l2(node).get(key).map(|entry| entry.meta.version),
        }
    }

    /// Processes up to `max` propagator notes; returns how many it popped.
    pub(crate) fn propagate_step(&self, max: usize) -> usize {
        let mut done = 0;
        while done < max {
            let Some(note) = self.propagator_queue.pop() else {
                break;
            };
            done += 1;
            let _done = self.propagator_pending.consumed_on_drop();
            let source = note.meta.loc.node as usize;
            {
                let set = self.l1.set(note.key);
                let data = read(&set.data);
                let current = match data.find(note.key) {
                    Some(way) => Some(data.meta(way).version),
                    None => self.l2(source).get(note.key).map(|e| e.meta.version),
                };
                if current != Some(note.meta.version) {
                    self.counters[source]
                        .meta_skipped
                        .fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                // Under the set's read lock, so no delete of the key can run in between and
                // no install can resurrect a deleted key.
                self.install_everywhere(note.key, note.meta, &self.domain.pin());
            }
            self.counters[source]
                .propagated
                .fetch_add(1, Ordering::Relaxed);
            self.notify_replicators(note.key, note.meta);
        }
        done
    }

    /// Installs `meta` into every domain's L2 (monotone) and retires the local replicas it
    /// made useless (a domain's replicas live in its home node's pool). Call under the key's
    /// set lock.
    pub(crate) fn install_everywhere(&self, key: u64, meta: Meta, guard: &Guard) {
        for (l2, &home) in self.l2.iter().zip(&self.homes) {
            if let Some(stale) = l2.install(key, meta) {
                self.pools[home].retire(stale, guard);
            }
        }
    }

    /// Queues the value of `meta` for the home node of every replication domain but its own,
    /// and rings their threads ([`ValueReplication::Eager`]; nothing under `OnDemand`, where
    /// readers ask).
    pub(crate) fn notify_replicators(&self, key: u64, meta: Meta) {
        if self.replication != ValueReplication::Eager {
            return;
        }
        let note = DataNote {
            key,
            version: meta.version,
            src: meta.loc,
        };
        let source = self.domain_of[meta.loc.node as usize];
        for (domain, &home) in self.homes.iter().enumerate() {
            if domain != source {
                self.queue_data_note(home, note);
            }
        }
    }

    /// Queues `note` for node `node`'s replicator (dropping it when the queue is full) and
    /// rings the replicator if its queue was empty.
    fn queue_data_note(&self, node: usize, note: DataNote) {
        let pending = &self.replicator_pending[node];
        let first = pending.publish();
        if self.replicator_queues[node].push(note).is_err() {
            pending.unpublish();
            // Relaxed: statistics.
            self.counters[node].dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if first {
            if let Some(bells) = &self.bells {
                bells.replicators[node].ring();
            }
        }
    }

    /// A read on node `node` used the authoritative copy of `key` at `meta` because the node
    /// has no replica of that version ([`ValueReplication::OnDemand`] only). On the
    /// [`ValueReplication::REMOTE_READS_BEFORE_COPY`]-th such read of one version, asks the
    /// node's replicator for a copy. The table is a hint: each slot remembers one
    /// `(key, version)` tag and whether a copy was asked for; a collision only delays or
    /// repeats a request (a repeated one is skipped by the replicator's checks).
    pub(crate) fn remote_read(&self, node: usize, key: u64, meta: Meta) {
        let Some(table) = self.remote_reads.get(node) else {
            return;
        };
        let hash = mix64(key ^ meta.version.rotate_left(32));
        let slot = &table[(hash as usize) & (table.len() - 1)];
        // Tags use the high bits; the low bits count remote reads (saturating at the
        // threshold, which means "asked").
        let tag = hash & !0xFF;
        // Relaxed: a hint; a lost update between two readers of one node only delays or
        // repeats a request.
        let seen = slot.load(Ordering::Relaxed);
        let reads = if seen & !0xFF == tag { seen & 0xFF } else { 0 };
        let threshold = u64::from(ValueReplication::REMOTE_READS_BEFORE_COPY);
        if reads >= threshold {
            return; // asked already
        }
        slot.store(tag | (reads + 1), Ordering::Relaxed);
        if reads + 1 == threshold {
            // The copy goes to the home node of this node's domain (see `ReplicationScope`).
            self.queue_data_note(
                self.homes[self.domain_of[node]],
                DataNote {
                    key,
                    version: meta.version,
                    src: meta.loc,
                },
            );
        }
    }

    /// Processes up to `max` notes of node `node`'s replicator queue; returns how many it
    /// popped.
    pub(crate) fn replicate_step(&self, node: usize, max: usize) -> usize {
        let mut done = 0;
        while done < max {
            let Some(note) = self.replicator_queues[node].pop() else {
                break;
            };
            done += 1;
            let _done = self.replicator_pending[node].consumed_on_drop();
            self.replicate_one(node, note);
        }
        done
    }

    fn replicate_one(&self, node: usize, note: DataNote) {
        let counters = &self.counters[node];
        // Pin before the version check: if the source block is current at the check, it is
        // retired only after this guard unpins (the retiring writer needs the set's write
        // lock, which it gets after our read lock is released).
        let guard = self.domain.pin();
        if self.current_version(note.key, node) != Some(note.version) {
            // Relaxed: statistics.
            counters.stale_skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Some(block) = self.pools[node].alloc() else {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let src = &self.pools[note.src.node as usize];
        // SAFETY:
        // - `note.src` named the current version at the check above, made while pinned by
        //   `guard`, so it is published and not reclaimed before `guard` drops;
        // - `block` is fresh from this node's pool and unpublished; sizes match (one pool
        //   block size for the whole store).
        unsafe { self.pools[node].write(block, src.bytes(note.src.block)) };
        let replaced = {
            let mut shard = write(self.l2(node).shard(note.key));
            match shard.get_mut(&note.key) {
                Some(entry) if entry.replica.is_none_or(|(_, v)| v.get() < note.version) => {
                    // Versions start at 1 (`SetData::next_version`): a 0 is never current.
                    NonZeroU64::new(note.version)
                        .map(|version| entry.replica.replace((block, version)))
                        .ok_or(())
                }
                _ => Err(()),
            }
        };
        match replaced {
            Ok(old) => {
                if let Some((old, _)) = old {
                    self.pools[node].retire(old, &guard);
                }
                counters.replicated.fetch_add(1, Ordering::Relaxed);
            }
            Err(()) => {
                // Deleted meanwhile, or a newer replica is already there: never published.
                self.pools[node].free_now(block);
                counters.stale_skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// One adapter sample for node `node`; returns whether there was activity.
    pub(crate) fn adapter_step(&self, node: usize, state: &mut AdapterState) -> bool {
        let (reads, writes) = self.counters.iter().fold((0, 0), |(r, w), c| {
            // Relaxed: statistics.
            (
                r + c.reads.load(Ordering::Relaxed),
                w + c.writes.load(Ordering::Relaxed),
            )
        });
        let (dr, dw) = (reads - state.reads, writes - state.writes);
        state.reads = reads;
        state.writes = writes;
        if node == 0 && self.mode == crate::MetadataMode::Adaptive {
            let backlog = self.propagator_queue.len() * 4 > self.propagator_queue.capacity() * 3;
            if state.rule.observe(dr, dw, backlog) {
                // Relaxed: a mode hint; either mode is correct for every write.
                self.sync_now.store(state.rule.is_sync(), Ordering::Relaxed);
                self.mode_switches.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut helped = 0;
        if dr + dw > 0 && dr * 10 >= (dr + dw) * 9 {
            helped = self.replicate_step(node, 64);
            self.counters[node]
                .adapter_helped
                .fetch_add(helped as u64, Ordering::Relaxed);
        }
        dr + dw > 0 || helped > 0 || !self.replicator_queues[node].is_empty()
    }

    /// Panics if a fault was injected for `thread` (see `Store::inject_panic`).
    pub(crate) fn take_fault(&self, thread: BackgroundThread) {
        let code = fault_code(thread);
        // Relaxed: the injection is a request, not a synchronization.
        if self.fault.load(Ordering::Relaxed) == code
            && self
                .fault
                .compare_exchange(code, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            panic!("fault injected into the {thread}");
        }
    }

    /// Records a background panic: writes are refused from now on.
    pub(crate) fn report_panic(
        &self,
        thread: BackgroundThread,
        payload: Box<dyn std::any::Any + Send>,
    ) {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_owned()
        };
        let mut slot = crate::sync::lock(&self.panic);
        if slot.is_none() {
            *slot = Some(BackgroundPanic { thread, message });
        }
        // Release: pairs with the Acquire in `Store::check_poison`, which then reads `panic`.
        self.poisoned.store(true, Ordering::Release);
    }

    /// Runs `f` for `thread`, reporting a panic instead of unwinding further.
    pub(crate) fn guarded<R>(&self, thread: BackgroundThread, f: impl FnOnce() -> R) -> Option<R> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => Some(r),
            Err(payload) => {
                self.report_panic(thread, payload);
                None
            }
        }
    }

    /// The body of a background thread: steps until shutdown, parking when idle.
    pub(crate) fn run(&self, thread: BackgroundThread) {
        let Some(bells) = &self.bells else { return };
        let period = Duration::from_micros(self.adapter_period_us);
        let mut state = AdapterState::default();
        // Whether the last pass found work (then an empty pass dozes before parking).
        let mut busy = false;
        // Acquire: pairs with the Release in `Store::stop`.
        while !self.shutdown.load(Ordering::Acquire) {
            self.take_fault(thread);
            let (done, pending, bell) = match thread {
                BackgroundThread::Propagator => (
                    self.propagate_step(256),
                    &*self.propagator_pending,
                    &bells.propagator,
                ),
                BackgroundThread::Replicator(node) => (
                    self.replicate_step(node, 256),
                    &*self.replicator_pending[node],
                    &bells.replicators[node],
                ),
                BackgroundThread::Adapter(node) => {
                    let active = self.adapter_step(node, &mut state);
                    // Idle: a long nap (100 periods) rather than none, so a read-only load that
                    // never rings still gets sampled; shutdown rings it awake.
                    bells.adapters[node].wait(Some(if active { period } else { period * 100 }));
                    continue;
                }
            };
            if done > 0 {
                busy = true;
            } else if !pending.is_idle() {
                yield_now(); // a producer is between counting and pushing
            } else if busy {
                // Doze rather than park: a ring while dozing is one atomic swap, no wake-up
                // system call; the loop re-checks the queue (and shutdown) afterwards.
                busy = false;
                doze(DOZE);
            } else {
                bell.wait(None);
            }
        }
    }
}

/// The fault-injection code of a thread (0 = none).
pub(crate) fn fault_code(thread: BackgroundThread) -> usize {
    match thread {
        BackgroundThread::Propagator => 1,
        BackgroundThread::Replicator(node) => 2 + 2 * node,
        BackgroundThread::Adapter(node) => 3 + 2 * node,
    }
}
