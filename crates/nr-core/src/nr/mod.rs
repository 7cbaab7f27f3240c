//! The replicated object: the paper's Algorithm 1 over a [`Log`] and one [`Replica`] per node.

mod builder;
mod commit;
mod dedicated;
mod dormancy;
mod handle;
mod membership;

pub use builder::Builder;
pub use commit::CommitLog;
pub use handle::ThreadHandle;

use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::lock::ReplicaLock;
use crate::log::{Grow, Log};
use crate::replica::Replica;
use crate::sync::{panicking, AtomicU8, Entered, Ordering};
use crate::wait::{retry_lock, Waiter};
use crate::{Dispatch, Poisoned, Topology};
use commit::Commit;

/// A linearizable concurrent object made from a sequential [`Dispatch`] structure by Node
/// Replication (Calciu, Sen, Balakrishnan, Aguilera: *Black-box Concurrent Data Structures for
/// NUMA Architectures*, ASPLOS'17, Algorithm 1).
///
/// There is one replica of the structure per NUMA node, built in that node's memory. Write
/// operations go through a shared circular log; within a node, one thread at a time (the
/// *combiner*) gathers the node's pending writes, appends them to the log with one CAS, replays
/// other nodes' writes into the local replica and applies the batch. Reads run directly on the
/// local replica, in parallel, once it has caught up with every write that completed before the
/// read started.
///
/// Threads first [`register`](Self::register) with a replica and then operate through the
/// returned [`ThreadHandle`].
///
/// # Examples
///
/// ```
/// use nr_core::{Dispatch, NodeReplicated};
///
/// #[derive(Default)]
/// struct Counter(u64);
///
/// impl Dispatch for Counter {
///     type ReadOperation<'a> = ();
///     type WriteOperation = u64;
///     type Response = u64;
///     fn dispatch(&self, _: ()) -> u64 { self.0 }
///     fn dispatch_mut(&mut self, add: u64) -> u64 { self.0 += add; self.0 }
/// }
///
/// // Two replicas (as on a two-node machine), whatever this machine's topology.
/// let nr = NodeReplicated::builder().replicas(2).build(|_| Counter::default())?;
/// std::thread::scope(|s| {
///     for t in 0..4 {
///         let nr = &nr;
///         s.spawn(move || {
///             let mut h = nr.register(t % nr.replicas()).unwrap();
///             for _ in 0..100 {
///                 h.execute_mut(1).unwrap();
///             }
///         });
///     }
/// });
/// let mut h = nr.register(1)?;
/// assert_eq!(h.execute(())?, 400);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Poisoning
///
/// If user code panics while a replica is being changed (`dispatch_mut`, or `clone` of a write
/// operation), that replica may be left half-updated and different from the others. As with
/// [`std::sync::Mutex`], the object is then *poisoned*: the panic propagates on the thread that
/// ran the user code (a combiner may be running other threads' operations), every thread waiting
/// inside the object wakes up and returns [`Poisoned`], and every later operation or
/// registration fails with [`Poisoned`]. Nothing deadlocks and no lock stays held. An operation
/// that returned `Poisoned` may or may not have been applied. A panic in `dispatch` (a read) does
/// not poison: it releases the reader lock and propagates. As with `Mutex`, only a panic that
/// *starts* while the thread works inside the object poisons it: an operation called from a
/// `Drop` while an unrelated panic unwinds completes normally. Because a panic inside is made
/// visible this way, the object is [`RefUnwindSafe`](std::panic::RefUnwindSafe).
///
/// # Re-entrancy
///
/// User code must not call back into the object it runs inside (from `dispatch`,
/// `dispatch_mut`, or an operation's `Clone` or `Drop`): the inner call would wait for the
/// outer one. Debug builds detect this and panic with a message saying so.
pub struct NodeReplicated<D: Dispatch> {
    log: Log<D::WriteOperation>,
    replicas: membership::Places<D>,
    /// The object's state word, so that the uncontended write tests one word:
    ///
    /// | bit | name | set by | meaning |
    /// |---|---|---|---|
    /// | 0 | `POISONED` | `poison`, never cleared | see [Poisoning](#poisoning) |
    /// | 1 | `SINGLE` | the builder, never changed | one replica and no room for more: no shared log (reads need not catch up) |
    /// | 2 | `NO_WRITE_OPTIONS` | the builder, never changed | none of `writes_as_reads`, `min_batch`, `dedicated` |
    /// | 3 | `COMMITS` | the builder, never changed | a commit log (`Builder::commit_log`) |
    ///
    /// A write takes the inlined path of `execute_mut` only when the word is exactly
    /// `INLINED_WRITE` (`SINGLE | NO_WRITE_OPTIONS`: no commit log, not poisoned).
    state: CachePadded<AtomicU8>,
    topology: Option<Topology>,
    /// Try each write as a read first (`Builder::writes_as_reads`).
    writes_as_reads: bool,
    /// §5.2 `MIN_BATCH` (`Builder::min_batch`); 1 when off.
    min_batch: usize,
    /// The longest a combiner waits for `min_batch` operations.
    min_batch_wait: Duration,
    /// `Builder::dedicated_combiners`: `run_combiner` may attach a dedicated combiner.
    dedicated: bool,
    /// One replica and no room for more: the combiner applies its batch directly, without the
    /// shared log, after committing it if there is a commit log (the `SINGLE` bit of `state`,
    /// as a plain field for the out-of-line paths).
    single: bool,
    /// `Builder::commit_log`: the commit hook and its state (see `commit.rs`).
    commit: Option<Commit<D::WriteOperation>>,
    /// `Builder::dormant_replicas`: how a dormant replica's state is rebuilt from a live one's
    /// (`Clone::clone_from`); `None`: dormancy is off (see `dormancy.rs`).
    copy_state: Option<fn(&mut D, &D)>,
}

/// `NodeReplicated::state`: a panic in user code poisoned the object.
const POISONED: u8 = 1;
/// `NodeReplicated::state`: one replica, no room for more (set at build).
const SINGLE: u8 = 2;
/// `NodeReplicated::state`: no option that changes the write path is on (set at build).
const NO_WRITE_OPTIONS: u8 = 4;
/// `NodeReplicated::state`: a commit log (set at build).
const COMMITS: u8 = 8;
/// `NodeReplicated::state` when a write may take the inlined path: one replica, no write option,
/// not poisoned.
const INLINED_WRITE: u8 = SINGLE | NO_WRITE_OPTIONS;

impl<D: Dispatch> std::fmt::Debug for NodeReplicated<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeReplicated")
            .field("replicas", &self.replicas.len())
            .field("log", &self.log)
            .field(
                "poisoned",
                &(self.state.load(Ordering::Relaxed) & POISONED != 0),
            )
            .field("topology", &self.topology)
            .field("writes_as_reads", &self.writes_as_reads)
            .field("min_batch", &self.min_batch)
            .field("min_batch_wait", &self.min_batch_wait)
            .field("dedicated", &self.dedicated)
            .field("commit_log", &self.commit.is_some())
            .field("dormant_replicas", &self.copy_state.is_some())
            .finish_non_exhaustive()
    }
}

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync,
{
    /// Starts configuring an object; see [`Builder`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default)] struct S(u64);
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 = v; v }
    /// # }
    /// let nr = NodeReplicated::builder()
    ///     .replicas(2)
    ///     .log_size(1024)
    ///     .threads_per_replica(8)
    ///     .build(|_replica| S::default())?;
    /// assert_eq!(nr.replicas(), 2);
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn builder() -> Builder<D> {
        Builder::new()
    }

    /// Number of replicas: those built, plus those added by [`add_replica`](Self::add_replica),
    /// retired ones included (replica indices are `0..replicas()`; a retired one refuses
    /// registration).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = NodeReplicated::builder().replicas(3).build(|_| S)?;
    /// assert_eq!(nr.replicas(), 3);
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }

    /// Entries in the shared log now: [`Builder::log_size`], or more once the log has grown
    /// ([`Builder::log_growth`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = NodeReplicated::builder().replicas(2).log_size(64).build(|_| S)?;
    /// assert_eq!(nr.log_size(), 64);
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn log_size(&self) -> usize {
        self.log.size()
    }

    /// The topology the replicas were placed by, if they were placed (not when built with an
    /// explicit [`Builder::replicas`] count alone).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated, Topology};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let topo = Topology::detect()?;
    /// let nr = NodeReplicated::builder().topology(topo.clone()).build(|_| S)?;
    /// assert_eq!(nr.topology(), Some(&topo));
    /// assert_eq!(nr.replicas(), topo.num_nodes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn topology(&self) -> Option<&Topology> {
        self.topology.as_ref()
    }

    /// The replica that serves threads running on `cpu` (its node's replica), if the object was
    /// placed by a topology that contains `cpu`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated, Topology};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let topo = Topology::detect()?;
    /// let cpu = topo.nodes()[0].cpus()[0];
    /// let nr = NodeReplicated::builder().topology(topo).build(|_| S)?;
    /// assert_eq!(nr.replica_for_cpu(cpu), Some(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replica_for_cpu(&self, cpu: usize) -> Option<usize> {
        self.topology.as_ref()?.node_of_cpu(cpu)
    }

    /// Whether a panic in user code has poisoned the object (see [Poisoning](#poisoning)).
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = NodeReplicated::builder().replicas(1).build(|_| S)?;
    /// assert!(!nr.is_poisoned());
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn is_poisoned(&self) -> bool {
        // Acquire: pairs with the Release in `poison`.
        self.state.load(Ordering::Acquire) & POISONED != 0
    }

    fn poison(&self) {
        // Release: pairs with the Acquire in `is_poisoned` and in `execute_mut`'s state check.
        self.state.fetch_or(POISONED, Ordering::Release);
    }

    /// Whether the object was poisoned, asked right after taking a combiner lock: a writer
    /// checks for poisoning before it locks, and a holder whose operation panicked poisons and
    /// then unlocks in between, so the check is repeated under the lock (else the writer would
    /// apply its operation to the replica that panic left half-updated). Relaxed: the lock's
    /// Acquire CAS read the Release unlock of that holder, which follows its `poison` store, so
    /// the store is visible.
    #[inline(always)]
    fn poisoned_under_lock(&self) -> bool {
        self.state.load(Ordering::Relaxed) & POISONED != 0
    }

    /// Gives back a combiner lock just taken on a poisoned object, without touching the
    /// replica; the caller returns the `Poisoned` this gives.
    #[cold]
    #[inline(never)]
    fn unlock_poisoned(&self, replica: &Replica<D>) -> Poisoned {
        // SAFETY: the caller took `replica`'s combiner lock just before and has not given it
        // back; nothing else releases it.
        unsafe { replica.unlock_combiner() };
        Poisoned
    }

    #[inline]
    fn check(&self) -> Result<(), Poisoned> {
        if self.is_poisoned() {
            Err(Poisoned)
        } else {
            Ok(())
        }
    }

    /// With a single replica (and no room for more) there is nothing to replicate: the combiner
    /// applies its batch directly, without the shared log (`combine_single` and
    /// `serve_posted_single`; with a commit log, `combine_committed`, which commits the batch
    /// first). Several replicas go through `combine`.
    #[inline]
    fn single(&self) -> bool {
        self.single
    }

    /// Whether a combiner takes the writer side together with the combiner lock: a single
    /// replica without a commit log (it applies at once). With a commit log the writer side
    /// waits for the commit, so that readers go on meanwhile.
    #[inline]
    fn writer_with_lock(&self) -> bool {
        self.single && self.commit.is_none()
    }

    /// A single replica's combiner, holding the combiner lock (and the writer side without a
    /// commit log): applies `op` and whatever else is posted, committing the batch first with a
    /// commit log.
    #[inline]
    fn combine_alone(
        &self,
        replica: &Replica<D>,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        match &self.commit {
            None => Ok(self.combine_single(replica, op)),
            Some(commit) => Ok(self
                .combine_committed(commit, replica, Some(op))?
                .expect("invariant: the combiner's own operation is answered")),
        }
    }

    /// A single replica's combiner, holding the combiner lock (and the writer side without a
    /// commit log), with no operation of its own: serves the posted ones.
    #[cold]
    fn serve_posted_alone(&self, replica: &Replica<D>) -> Result<(), Poisoned> {
        match &self.commit {
            None => {
                self.serve_posted_single(replica);
                Ok(())
            }
            Some(commit) => self.combine_committed(commit, replica, None).map(drop),
        }
    }

    /// A write, from the thread registered in `slot` of replica `r` (`replica` is
    /// `self.replicas[r]`, resolved once by the handle) (Algorithm 1, `Combine`).
    ///
    /// The uncontended write of a plain single-replica object is inlined into the caller: one
    /// load of the state word, the lock word's CAS (which also takes the writer side) and the
    /// scan of the reader flags, the operation applied in hand (never through the slot, so its
    /// response needs no hand-off), and the unlocking swap. Everything else is out of line.
    ///
    /// # Panics
    ///
    /// In debug builds, if called from user code running inside an operation of this object.
    #[inline(always)]
    fn execute_mut(
        &self,
        replica: &Replica<D>,
        r: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let _entered = Entered::new(self as *const Self as usize);
        // One load answers both "is this the plain single-replica configuration" and "is the
        // object poisoned" (then the word is not exactly `INLINED_WRITE`, and the general path
        // returns the error). Acquire: pairs with the Release in `poison`, as `is_poisoned`.
        if self.state.load(Ordering::Acquire) == INLINED_WRITE && replica.try_lock_combiner(true) {
            if self.poisoned_under_lock() {
                return Err(self.unlock_poisoned(replica));
            }
            let combiner = CombinerGuard::new_released_on_success(self, replica);
            let response = self.combine_single(replica, op);
            // `release`, spelled out: a call taking the guard by value made the compiler copy
            // it to another stack slot first.
            std::mem::forget(combiner);
            // SAFETY: we took the combiner lock above, and forgot its guard, so it is
            // released exactly once, here.
            unsafe { replica.unlock_combiner() };
            return Ok(response);
        }
        self.execute_mut_general(r, slot, op)
    }

    /// Every write that `execute_mut` does not finish inline: the options, several replicas, a
    /// busy combiner lock.
    #[inline(never)]
    fn execute_mut_general(
        &self,
        r: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        if self.writes_as_reads {
            return self.execute_mut_read_first(r, slot, op);
        }
        self.check()?;
        self.execute_mut_combining(r, slot, op)
    }

    /// A write with `Builder::writes_as_reads`: tried as a read first (§6 "fake updates").
    /// Kept out of line so that the plain write path never takes the operation's address.
    #[inline(never)]
    fn execute_mut_read_first(
        &self,
        r: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let replica = &self.replicas[r];
        if let Some(response) =
            self.read_with(replica, r, slot, |data| data.dispatch_as_read(&op))?
        {
            return Ok(response);
        }
        self.execute_mut_combining(r, slot, op)
    }

    /// A write through combining (the caller has checked for poisoning).
    #[inline]
    fn execute_mut_combining(
        &self,
        r: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let replica = &self.replicas[r];
        // Fast path: nobody is combining, so become the combiner with the operation in hand
        // (it never visits the slot, and its response needs no hand-off). Not while a dedicated
        // combiner serves the replica: it does all the combining.
        // The writer side is taken in the same CAS with one replica (`combine_single` applies at
        // once), and with several when this is the replica's only registered thread: then no
        // other reader on it is kept waiting while the combiner appends, and `combine_own`'s
        // `lock_writer` finds the side held (one read-modify-write fewer per write). A thread
        // that registers meanwhile waits one write at most; `help_laggards` gives the side back
        // while it waits for log space, as always. Never with one replica and a commit log: its
        // commit runs without the writer side, so that readers, even ones that register during
        // the commit, read the old state meanwhile (`combine_committed` takes the side after).
        if !(self.dedicated && replica.dedicated_attached())
            && replica.try_lock_combiner(
                self.writer_with_lock() || (replica.registered() == 1 && !self.single()),
            )
        {
            if self.poisoned_under_lock() {
                return Err(self.unlock_poisoned(replica));
            }
            let combiner = CombinerGuard::new_released_on_success(self, replica);
            if self.min_batch > 1 {
                self.wait_for_batch(r, 1)?;
            }
            let response = if self.single() {
                self.combine_alone(replica, op)?
            } else {
                self.combine_own(r, replica, op)?
            };
            combiner.release();
            return Ok(response);
        }
        // One replica, no MIN_BATCH, no dedicated combiner (fake updates too, once their read
        // failed): before posting (the op goes to another core via its slot), retry for a short,
        // bounded while, as an unfair lock's waiting does: the holder's critical section is
        // one operation or one short batch, and a thread that takes the lock keeps the
        // replica's lines in its own cache. Measured (quiet 2-core AMD VM, runner `hashmap`,
        // 3 interleaved rounds): 100% writes NR 13.9 -> 21.6 Mops/s at 2 threads and 13.5 ->
        // 20.6 at 4 (oversubscribed), every other row unchanged. The schedule is
        // `parking_lot`'s (spins doubling from 2 hints, then yields; issue 21): a waiter that
        // yields leaves the holder alone with the lock line for a whole time slice of
        // operations, instead of pulling the line back after every one (crate README, "Two
        // writers on one replica"). Bounded, so a preempted holder costs at most
        // `LOCK_RETRIES` tries before the posting path (which parks). Correctness is that of
        // the fast path above: the same acquisition, the same combine. (`wait::retry_lock`,
        // shared with CNR's single-replica write.)
        if self.single()
            && self.min_batch <= 1
            && !self.dedicated
            && retry_lock(|| replica.try_lock_combiner(self.writer_with_lock()))
        {
            if self.poisoned_under_lock() {
                return Err(self.unlock_poisoned(replica));
            }
            let combiner = CombinerGuard::new_released_on_success(self, replica);
            let response = self.combine_alone(replica, op)?;
            combiner.release();
            return Ok(response);
        }
        self.execute_mut_posted(r, slot, op)
    }

    /// The slow path of a write: post it and wait for a combiner, or become one.
    #[cold]
    fn execute_mut_posted(
        &self,
        r: usize,
        slot: usize,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        let replica = &self.replicas[r];
        // SAFETY: `slot` is the calling thread's own (its handle, borrowed mutably for this
        // call, registered it), and it is `EMPTY`: every earlier operation through the handle
        // took its response back before returning.
        unsafe { replica.post(slot, op) };
        if self.dedicated {
            replica.wake_dedicated();
        }
        let own = replica.slot(slot);
        let mut waiter = Waiter::new();
        loop {
            if own.is_done() {
                // SAFETY: our own slot, and `is_done` just returned true.
                return Ok(unsafe { own.take_response() });
            }
            self.check()?;
            if self.dedicated && replica.dedicated_attached() {
                // The dedicated combiner serves us; `respond` wakes us.
                waiter.snooze_or(|micros| replica.park_owner_dedicated(slot, micros));
                continue;
            }
            if replica.try_lock_combiner(self.writer_with_lock()) {
                let _combiner = CombinerGuard::new(self, replica);
                // Poisoned since `check` above (a holder panicked or its commit failed, then
                // unlocked): serve nothing; the slots may hold that holder's batch.
                if self.poisoned_under_lock() {
                    return Err(Poisoned);
                }
                if self.min_batch > 1 {
                    self.wait_for_batch(r, 0)?;
                }
                // Our own operation was posted before we took the lock, so this batch serves it
                // (unless an earlier combiner already did).
                if self.single() {
                    self.serve_posted_alone(replica)?;
                } else {
                    self.combine(r, None)?;
                }
                continue;
            }
            // Lines 38-39: wait while the response is missing and some combiner is at work.
            waiter.snooze_or(|micros| replica.park_owner(slot, micros));
        }
    }

    /// A read, from the thread registered in `slot` of replica `r` (Algorithm 1, `ReadOnly`).
    ///
    /// # Panics
    ///
    /// In debug builds, if called from user code running inside an operation of this object.
    #[inline]
    fn execute(
        &self,
        replica: &Replica<D>,
        r: usize,
        slot: usize,
        op: D::ReadOperation<'_>,
    ) -> Result<D::Response, Poisoned> {
        let _entered = Entered::new(self as *const Self as usize);
        self.read_with(replica, r, slot, |data| data.dispatch(op))
    }

    /// Runs `f` on replica `r` (`replica`, which is `self.replicas[r]`) as a read (Algorithm 1,
    /// `ReadOnly`) for the thread in `slot`.
    #[inline]
    fn read_with<R>(
        &self,
        replica: &Replica<D>,
        r: usize,
        slot: usize,
        f: impl FnOnce(&D) -> R,
    ) -> Result<R, Poisoned> {
        // Acquire: pairs with the Release in `poison`, as `is_poisoned`.
        let state = self.state.load(Ordering::Acquire);
        if state & POISONED != 0 {
            return Err(Poisoned);
        }
        // Line 43: the replica must reflect every write that completed before this read began,
        // and need not reflect later ones. (A single replica is always current: its writers
        // apply their batches under the writer side, without the log.)
        if state & SINGLE == 0 {
            // Relied on: `completed_tail` is the only thing a read waits for, so it must cover
            // every entry any replica has exposed to a read (the invariant documented on
            // `Log::completed_tail`). A read that returned a value containing entry `e` left
            // `completed_tail > e` behind it, and this read, starting later, waits for `e` too.
            let read_tail = self.log.completed_tail();
            if self.log.local_tail(r) < read_tail {
                self.catch_up(r, read_tail)?;
            }
        }
        if !replica.lock.read_lock(slot, || self.is_poisoned()) {
            return Err(Poisoned);
        }
        let _reader = ReadGuard {
            lock: &replica.lock,
            reader: slot,
        };
        // A writer that panicked may have left the replica half-updated before releasing it.
        self.check()?;
        // SAFETY: we hold the reader lock, so no writer mutates `data` until `_reader` drops;
        // other readers only take shared references (`D: Sync`).
        let data = replica.data.with(|p| unsafe { &*p });
        Ok(f(data))
    }

    /// Brings replica `r` up to at least `read_tail` (Algorithm 1, line 46 `WaitOrUpdate`):
    /// waits for the node's combiner, or becomes the one that replays.
    #[cold]
    fn catch_up(&self, r: usize, read_tail: usize) -> Result<(), Poisoned> {
        let replica = &self.replicas[r];
        let mut waiter = Waiter::new();
        while self.log.local_tail(r) < read_tail {
            self.check()?;
            if replica.try_lock_combiner(true) {
                let _combiner = CombinerGuard::new(self, replica);
                // Only up to `read_tail` (Algorithm 1, line 46), never to `tail`: entries past
                // `completed_tail` may be written but not completed, and exposing them here
                // would let a later read on another replica (which waits only for
                // `completed_tail`) return an older state. Every index below `completed_tail`
                // is filled, so this reaches `read_tail` without waiting.
                self.replay(r, read_tail, false)?;
            } else {
                waiter.snooze();
            }
        }
        Ok(())
    }

    /// §5.2 `MIN_BATCH`: the combiner of replica `r`, holding its combiner lock and `own`
    /// operations in hand (not posted), waits until at least `min_batch` operations are at hand
    /// or `min_batch_wait` has passed, whichever comes first. The caller has changed nothing in
    /// the replica yet under this lock.
    ///
    /// Readers are not held up meanwhile. With several replicas the combiner does not hold the
    /// writer side here; it refreshes its replica from the log up to `completed_tail` while it
    /// waits (the paper's "rather than idle waiting"), under the writer side only for the
    /// replay, which also serves local readers waiting in `catch_up`. With a single replica
    /// there is nothing to replay; without a commit log the combiner took the writer side with
    /// the lock, and gives it back for the wait and takes it again before returning.
    ///
    /// Adds no hand-off of its own: posters wait on their slots as they do for any busy
    /// combiner, and the bound on the wait makes it end even when fewer than `min_batch`
    /// threads post. It spins, then yields (never parks: a blind park would overshoot a
    /// microsecond bound), and waits for no more operations than threads ever registered with
    /// the replica (a replica with one thread never waits).
    #[cold]
    fn wait_for_batch(&self, r: usize, own: usize) -> Result<(), Poisoned> {
        let replica = &self.replicas[r];
        // A batch can hold at most one operation per thread ever registered with the replica:
        // waiting for more than that would always run into the bound.
        let min_batch = self.min_batch.min(replica.registered());
        if replica.pending() + own >= min_batch {
            return Ok(());
        }
        let single = self.single();
        // Given back for the wait if taken with the lock (taken as the only registered thread,
        // it stays held: we returned above, or one registered since and waits a bounded time).
        let holds_writer = self.writer_with_lock();
        if holds_writer {
            // SAFETY: we hold the combiner lock (the caller's contract) and have changed nothing
            // in the replica under it, so readers may see it as it is; we take the writer side
            // back below before anything changes it.
            unsafe { replica.lock.unlock_writer() };
        }
        let deadline = Instant::now() + self.min_batch_wait;
        let mut waiter = Waiter::new();
        loop {
            self.check()?;
            if !single {
                let completed = self.log.completed_tail();
                if self.log.local_tail(r) < completed {
                    replica.lock.lock_writer();
                    // Only up to `completed_tail` (see `catch_up`); every index below it is
                    // filled, so this does not wait.
                    self.replay(r, completed, false)?;
                    // SAFETY: we hold `r`'s combiner lock, and the replica now shows only
                    // entries below `completed_tail`; `combine` takes the writer side again
                    // before changing it.
                    unsafe { replica.lock.unlock_writer() };
                }
            }
            if replica.pending() + own >= min_batch || Instant::now() >= deadline {
                break;
            }
            waiter.snooze_without_parking();
        }
        if holds_writer {
            replica.lock.lock_writer();
        }
        Ok(())
    }

    /// The fast path of a single replica's combiner, which holds the combiner lock and the writer
    /// side: apply its own operation, then serve any other posted ones.
    #[inline]
    fn combine_single(&self, replica: &Replica<D>, op: D::WriteOperation) -> D::Response {
        // SAFETY: we hold the combiner lock and the writer side of the only replica: no reader
        // and no other writer touches `data` until we unlock.
        let data = replica.data.with_mut(|p| unsafe { &mut *p });
        let response = data.dispatch_mut(op);
        // Uncontended, nobody has posted anything: skip the slot scan.
        if replica.has_pending() {
            self.serve_posted_single(replica);
        }
        response
    }

    /// With a single replica (its own path: no log, no replay, no completed tail): applies the
    /// operations posted in the slots and answers them. The caller holds the combiner lock and
    /// the writer side.
    #[cold]
    fn serve_posted_single(&self, replica: &Replica<D>) {
        // SAFETY: the batch scratch is only used under the combiner lock, which the caller holds.
        let batch = replica.batch.with_mut(|p| unsafe { &mut *p });
        // SAFETY: the caller holds the combiner lock.
        if unsafe { replica.collect(batch, false) } == 0 {
            return;
        }
        // SAFETY: as in `combine_single`.
        let data = replica.data.with_mut(|p| unsafe { &mut *p });
        for &slot in &batch.slots {
            // SAFETY: we hold the combiner lock and collected `slot` into this batch above;
            // each slot appears once in it.
            unsafe { replica.apply_own(data, slot) };
        }
        replica.respond(&batch.slots);
    }

    /// The combiner's work for replica `r` with several replicas (Algorithm 1, lines 22-35):
    /// the operations posted in the slots, plus `own` (the combiner's operation, if it did not
    /// post it). Returns the response to `own`. The caller holds the combiner lock of `r`, not
    /// its writer side. (A single replica has its own path: `combine_single`.)
    fn combine(
        &self,
        r: usize,
        own: Option<D::WriteOperation>,
    ) -> Result<Option<D::Response>, Poisoned> {
        let replica = &self.replicas[r];
        // SAFETY: the batch scratch is only used under the combiner lock, which the caller holds.
        let batch = replica.batch.with_mut(|p| unsafe { &mut *p });
        // User code (`Clone`) runs here, before anything is reserved in the log, so a panic
        // cannot leave a reserved entry unfilled.
        // SAFETY: the caller holds the combiner lock.
        let posted = unsafe { replica.collect(batch, true) };
        let own_entry = own.clone();
        let n = posted + usize::from(own.is_some());
        if n == 0 {
            return Ok(None);
        }
        let start = self.reserve(r, n)?;
        // The combiner's own operation goes first, then the slots' in scan order: the same
        // order in which they are applied below.
        let entries = own_entry.into_iter().chain(batch.ops.drain(..));
        for (k, op) in entries.enumerate() {
            // SAFETY: `start..start + n` was reserved by this thread in `reserve`, and each
            // index is written once.
            let previous = unsafe { self.log.write(start + k, op) };
            batch.evicted.extend(previous);
        }
        // Only now, with every reserved entry published, may user code run again: dropping the
        // previous laps' operations runs their `Drop`, and a panic there leaves no entry
        // unfilled for other replicas to wait on.
        batch.evicted.clear();
        let end = start + n;
        if let Some(commit) = &self.commit {
            // Durable before anything is applied or answered (see `commit.rs`).
            self.commit_through(commit, end)?;
        }
        replica.lock.lock_writer();
        // Line 27: replay everything before our batch, waiting for entries still being written.
        // Checked here first: alone on the log, the replica is already there (the call is out of
        // line, and its commit gate needs nothing here: `commit_through` covered `end` above).
        if self.log.local_tail(r) < start {
            self.replay(r, start, true)?;
        }
        // SAFETY: we hold the combiner lock and the writer side of replica `r`: no reader and no
        // other writer touches `data` until we unlock.
        let data = replica.data.with_mut(|p| unsafe { &mut *p });
        // Lines 32-33: apply the batch from the slots (local), not from the log.
        let response = own.map(|op| data.dispatch_mut(op));
        for &slot in &batch.slots {
            // SAFETY: we hold the combiner lock and collected `slot` into this batch above;
            // each slot appears once in it.
            unsafe { replica.apply_own(data, slot) };
        }
        // Lines 29-31. The local tail moves only after the batch is applied, because applying
        // reads the slots' originals. Then `completed_tail` covers everything this replica now
        // shows, before `CombinerGuard` lets its readers back in (the invariant readers rely
        // on; see `Log::completed_tail`).
        self.log.set_local_tail(r, end);
        self.log.advance_completed_tail(end);
        replica.respond(&batch.slots);
        Ok(response)
    }

    /// `combine` for the combiner's own operation `op` when nothing else is posted (a replica
    /// with one thread, or an uncontended moment): the same steps for a batch of one, without
    /// the batch scratch (no slot scan, no vectors or iterators, no responses to hand out).
    /// With a commit log, the entry is committed (`commit_through`) after it is written and
    /// before the writer side, the replay and the apply, as in `combine`. Posted operations go
    /// to `combine`. The caller holds replica `r`'s combiner lock (`replica` is
    /// `self.replicas[r]`).
    ///
    /// The posted count is a snapshot, as in `combine` (whose `collect` checks it first): an
    /// operation posted after it is served by the next combiner, which its owner becomes
    /// itself once we unlock if nobody else does.
    #[inline]
    fn combine_own(
        &self,
        r: usize,
        replica: &Replica<D>,
        op: D::WriteOperation,
    ) -> Result<D::Response, Poisoned> {
        if replica.has_pending() {
            return Ok(self
                .combine(r, Some(op))?
                .expect("invariant: the combiner's own operation is answered"));
        }
        // User code (`Clone`) runs before anything is reserved, as in `combine`.
        let entry = op.clone();
        let start = self.reserve(r, 1)?;
        // SAFETY: `start` was reserved by this thread in `reserve`, and is written once.
        let previous = unsafe { self.log.write(start, entry) };
        // Our only reserved entry is published: the previous lap's `Drop` (user code) may run.
        drop(previous);
        if let Some(commit) = &self.commit {
            // Durable before anything is applied or answered, as in `combine`.
            self.commit_through(commit, start + 1)?;
        }
        replica.lock.lock_writer();
        // Line 27, as in `combine`.
        if self.log.local_tail(r) < start {
            self.replay(r, start, true)?;
        }
        // SAFETY: we hold the combiner lock and the writer side of replica `r`.
        let data = replica.data.with_mut(|p| unsafe { &mut *p });
        let response = data.dispatch_mut(op);
        // Lines 29-31, as in `combine`.
        self.log.set_local_tail(r, start + 1);
        self.log.advance_completed_tail(start + 1);
        Ok(response)
    }

    /// Reserves `n` log entries for replica `r`'s combiner. When the log is full, brings the
    /// replicas that hold it back up to date itself, so that no configuration deadlocks (e.g. a
    /// replica whose threads are all idle, §6 "Inactive replica").
    ///
    /// With `Builder::log_growth`, a full log grows first (§6 "Log length"), and laggards are
    /// helped only once it is at its largest size.
    #[inline]
    fn reserve(&self, r: usize, n: usize) -> Result<usize, Poisoned> {
        match self.log.try_reserve(n) {
            Ok(start) => Ok(start),
            Err(_) => self.reserve_full(r, n),
        }
    }

    /// The rest of `reserve` once the log looked full: out of line, so that a reservation that
    /// finds room builds no backoff state.
    #[cold]
    fn reserve_full(&self, r: usize, n: usize) -> Result<usize, Poisoned> {
        let mut waiter = Waiter::new();
        loop {
            if let Ok(start) = self.log.try_reserve(n) {
                return Ok(start);
            }
            self.check()?;
            if self.log.can_grow() {
                // The head is refreshed only now and then (§5.6): the log may not really be
                // full, and growing it then would only waste memory.
                self.log.advance_head();
                if let Ok(start) = self.log.try_reserve(n) {
                    return Ok(start);
                }
                match self.log.try_grow(n) {
                    Grow::Reserved(start) => return Ok(start),
                    Grow::Retry => {
                        waiter.snooze();
                        continue;
                    }
                    Grow::AtMax => {}
                }
            }
            if !self.help_laggards(r)? {
                waiter.snooze();
            }
        }
    }

    /// Replays the replicas whose local tail holds the log head back. Returns whether it moved
    /// the head. The caller holds replica `own`'s combiner lock, not its writer side, and does
    /// not hold it on return either: local readers keep running while the caller waits for log
    /// space (§5.4).
    #[cold]
    fn help_laggards(&self, own: usize) -> Result<bool, Poisoned> {
        let head = self.log.advance_head();
        // Only up to `completed_tail`, not `tail`: a replica brought past it here would expose
        // entries that are not completed to its readers once we let go of it (see `catch_up`).
        // Entries between the two belong to combiners that already reserved them, which finish
        // without needing log space, so `completed_tail` keeps moving and this cannot deadlock.
        let tail = self.log.completed_tail();
        for q in 0..self.replicas.len() {
            if self.log.local_tail(q) > head {
                continue;
            }
            let replica = &self.replicas[q];
            if q == own {
                replica.lock.lock_writer();
                self.replay(q, tail, false)?;
                // SAFETY: we hold `own`'s combiner lock (the caller's contract), and the replica
                // now shows only entries below `completed_tail`, so its readers may run while we
                // wait; `combine` takes the writer side again before changing it.
                unsafe { replica.lock.unlock_writer() };
            } else if replica.try_lock_combiner(true) {
                // Only ever *try* another node's lock: a node whose combiner is busy is making
                // progress on its own, and never blocking here rules out lock-order deadlocks.
                let _combiner = CombinerGuard::new(self, replica);
                self.replay(q, tail, false)?;
            }
        }
        Ok(self.log.advance_head() > head)
    }

    /// Applies log entries `local_tail(r)..to` to replica `r` (Algorithm 1, `UpdateFromLog`).
    /// With `wait`, waits for entries still being written; otherwise stops at the first one.
    /// The caller holds replica `r`'s combiner lock and its writer side.
    ///
    /// With a commit log it never applies an index at or above `committed`: it stops there, or
    /// with `wait` waits for it, as for an unfilled entry (see `commit.rs`).
    fn replay(&self, r: usize, to: usize, wait: bool) -> Result<(), Poisoned> {
        debug_assert!(to <= self.log.tail(), "replay past the reserved tail");
        let to = match &self.commit {
            None => to,
            Some(commit) => self.committed_bound(commit, to, wait)?,
        };
        let replica = &self.replicas[r];
        let from = self.log.local_tail(r);
        if from >= to {
            return Ok(());
        }
        // SAFETY: the caller holds replica `r`'s combiner lock and writer side.
        let data = replica.data.with_mut(|p| unsafe { &mut *p });
        let mut idx = from;
        loop {
            // A replayed operation's response is dropped: it belongs to another node's thread.
            // SAFETY: we hold `r`'s combiner lock with `local_tail(r) == from <= idx` until the
            // loop ends, and `to` is at most a tail or `completed_tail` our caller read.
            idx = unsafe {
                self.log
                    .read_filled(idx, to, |op| drop(data.dispatch_mut(op.clone())))
            };
            if idx >= to || !wait {
                break;
            }
            self.wait_filled(idx)?;
        }
        self.log.set_local_tail(r, idx);
        Ok(())
    }

    /// The replay gate: how far a replay towards `to` may go with a commit log, `to` or less
    /// (`committed`, without `wait`). With `wait`, waits until `to` is committed. Out of line,
    /// so that the replay of an object without a commit log is compiled as before.
    #[cold]
    #[inline(never)]
    fn committed_bound(
        &self,
        commit: &Commit<D::WriteOperation>,
        to: usize,
        wait: bool,
    ) -> Result<usize, Poisoned> {
        let mut waiter = Waiter::new();
        loop {
            let committed = commit.committed();
            if committed >= to {
                return Ok(to);
            }
            if !wait {
                return Ok(committed);
            }
            self.check()?;
            waiter.snooze();
        }
    }

    /// Waits until log entry `idx` (already reserved by some combiner) is written. Writers never
    /// block between reserving and writing, so this ends, unless the object gets poisoned.
    #[cold]
    fn wait_filled(&self, idx: usize) -> Result<(), Poisoned> {
        let mut waiter = Waiter::new();
        while !self.log.is_filled(idx) {
            self.check()?;
            waiter.snooze();
        }
        Ok(())
    }
}

/// Holds a replica's combiner lock (and its writer side, if taken); releasing it while a panic
/// that started during the hold unwinds poisons the object (as `std::sync::Mutex` does).
struct CombinerGuard<'a, D: Dispatch + Send + Sync> {
    nr: &'a NodeReplicated<D>,
    replica: &'a Replica<D>,
    /// Whether the thread was already unwinding when it took the lock (an operation run from a
    /// `Drop` during an unrelated panic): only a panic that starts while the lock is held can
    /// leave the replica half-updated.
    panicking_before: bool,
}

impl<'a, D: Dispatch + Send + Sync> CombinerGuard<'a, D> {
    /// Wraps the combiner lock of `replica`, which the caller has just taken.
    #[inline]
    fn new(nr: &'a NodeReplicated<D>, replica: &'a Replica<D>) -> Self {
        Self {
            nr,
            replica,
            panicking_before: panicking(),
        }
    }

    /// Wraps the combiner lock of `replica` for a caller that ends every successful path with
    /// [`release`](Self::release), so that the guard is dropped only by a panic unwinding out
    /// of the hold or on an `Err(Poisoned)` return. It skips the `panicking()` query of `new`
    /// (a call into std on every uncontended write). What gets poisoned: a panic that starts
    /// during the hold poisons, as with `new`; an `Err(Poisoned)` return poisons an object that
    /// is poisoned already; an operation that completes during an unrelated unwinding (called
    /// from a `Drop`) ends in `release`, which never poisons, as with `new`. The one difference:
    /// a panic in user code that starts while the thread was already unwinding (which only a
    /// `catch_unwind` inside that `Drop` can survive; otherwise the process aborts) poisons
    /// here and not with `new`. The replica may then be half-updated, so poisoning is the
    /// right answer.
    #[inline]
    fn new_released_on_success(nr: &'a NodeReplicated<D>, replica: &'a Replica<D>) -> Self {
        Self {
            nr,
            replica,
            panicking_before: false,
        }
    }

    /// Unlocks on the normal path, without asking whether the thread is panicking.
    #[inline]
    fn release(self) {
        // SAFETY: a guard is only created by the thread that took the combiner lock, and this
        // consumes it, so the lock is released exactly once.
        unsafe { self.replica.unlock_combiner() };
        std::mem::forget(self);
    }
}

impl<D: Dispatch + Send + Sync> Drop for CombinerGuard<'_, D> {
    fn drop(&mut self) {
        if !self.panicking_before && panicking() {
            self.nr.poison();
        }
        // SAFETY: as in `release` (exactly one of `release` and `drop` runs).
        unsafe { self.replica.unlock_combiner() };
    }
}

/// Holds a reader lock; a panicking read releases it without poisoning.
struct ReadGuard<'a> {
    lock: &'a ReplicaLock,
    reader: usize,
}

impl Drop for ReadGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard is created right after `read_lock(reader)` succeeded, by the reader
        // that holds it, and the reference to the replica it protects does not outlive it.
        unsafe { self.lock.read_unlock(self.reader) };
    }
}

// Poisoning makes a panic observable instead of leaving broken state hidden, as with
// `std::sync::Mutex`, so the object may be used across `catch_unwind`.
impl<D: Dispatch> std::panic::RefUnwindSafe for NodeReplicated<D> {}
impl<D: Dispatch> std::panic::UnwindSafe for NodeReplicated<D> {}

#[cfg(all(test, not(loom)))]
mod poisoned_under_lock_tests {
    use super::*;

    /// Adds its writes; the write `NEVER` must never be applied.
    #[derive(Default)]
    struct Count(u64);

    const NEVER: u64 = 7;

    impl Dispatch for Count {
        type ReadOperation<'a> = ();
        type WriteOperation = u64;
        type Response = u64;

        fn dispatch(&self, _: ()) -> u64 {
            self.0
        }

        fn dispatch_mut(&mut self, add: u64) -> u64 {
            assert_ne!(add, NEVER, "a write was applied to a poisoned object");
            self.0 += add;
            self.0
        }
    }

    /// A writer that passed its poison check before another holder poisoned the object and
    /// unlocked (the window that the bounded lock retry widens) must not apply its operation
    /// once it takes the lock. Emulated by poisoning first and then entering the combining
    /// path, which does not check again before it locks. Fails without `poisoned_under_lock`
    /// (the write is applied: the `assert_ne!` above fires).
    #[test]
    fn a_writer_that_locks_after_a_poisoning_does_not_apply() {
        for replicas in [1, 2] {
            let nr = NodeReplicated::<Count>::builder()
                .replicas(replicas)
                .build(|_| Count::default())
                .expect("build");
            let _h = nr.register(0).expect("register");
            // The first registration on replica 0 holds slot 0.
            assert_eq!(nr.execute_mut_combining(0, 0, 5), Ok(5));
            nr.poison();
            assert_eq!(
                nr.execute_mut_combining(0, 0, NEVER),
                Err(Poisoned),
                "{replicas} replica(s)"
            );
            // The lock was given back.
            let replica = &nr.replicas[0];
            assert!(replica.try_lock_combiner(true), "lock left taken");
            // SAFETY: taken just above.
            unsafe { replica.unlock_combiner() };
        }
    }
}
