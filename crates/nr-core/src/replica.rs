//! One node's replica: the data structure, its lock word (combiner lock and readers-writer
//! lock) and the per-thread slots of flat combining (paper §5.2, Algorithm 1 lines 18-41).
//!
//! A slot goes through these states; the owner thread and the combiner alternate ownership of
//! its `op` and `response` cells, each hand-off a Release store paired with an Acquire load:
//!
//! | `state` | who may touch `op`/`response` | next |
//! |---|---|---|
//! | `EMPTY` | the owner | owner writes `op`, stores `POSTED` |
//! | `POSTED` | the combiner holding the combiner lock | combiner takes `op`, writes `response`, stores `DONE` |
//! | `DONE` | the owner | owner takes `response`, stores `EMPTY` |

use crossbeam_utils::CachePadded;

use crate::lock::ReplicaLock;
use crate::sync::{fence, AtomicBool, AtomicU8, AtomicUsize, Ordering, Parker, UnsafeCell};
use crate::Dispatch;

pub(crate) const EMPTY: u8 = 0;
pub(crate) const POSTED: u8 = 1;
pub(crate) const DONE: u8 = 2;

/// `Replica::handles`: the replica is retired.
const RETIRED: usize = 1 << (usize::BITS - 1);
/// `Replica::handles`: the replica is dormant (`Builder::dormant_replicas`): it does not follow
/// the log until a registration wakes it (`nr/dormancy.rs`).
const DORMANT: usize = 1 << (usize::BITS - 2);

/// What `Replica::enter` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entered {
    /// Counted on an awake replica: it may be used at once.
    Awake,
    /// Counted on a dormant replica: it must be woken before use.
    Dormant,
    /// Not counted: the replica is retired.
    Retired,
}

/// A thread's combining slot (the paper's per-core `slot` and `response`).
pub(crate) struct Slot<W, R> {
    state: AtomicU8,
    /// Set by the owner while it is parked waiting on this slot.
    parked: AtomicBool,
    /// Whether a live handle owns this slot.
    in_use: AtomicBool,
    op: UnsafeCell<Option<W>>,
    response: UnsafeCell<Option<R>>,
    /// Where the owner sleeps; belongs to the slot, not to a thread, so waking it is always safe.
    parker: Parker,
}

impl<W, R> Slot<W, R> {
    fn new() -> Self {
        Self {
            state: AtomicU8::new(EMPTY),
            parked: AtomicBool::new(false),
            in_use: AtomicBool::new(false),
            op: UnsafeCell::new(None),
            response: UnsafeCell::new(None),
            parker: Parker::new(),
        }
    }

    /// Owner: posts `op` for the combiner (Algorithm 1, line 19).
    ///
    /// # Safety
    ///
    /// - The caller is the slot's owner (the thread whose live handle registered it), so no
    ///   other thread posts to or takes from it;
    /// - the slot is `EMPTY` (the owner's previous operation, if any, was taken back).
    #[inline]
    pub(crate) unsafe fn post(&self, op: W) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), EMPTY);
        // SAFETY: the slot is `EMPTY` and we are its owner (the caller's contract), so only we
        // may touch `op`; no combiner reads it before the Release store below.
        self.op.with_mut(|p| unsafe { *p = Some(op) });
        // Release: pairs with the Acquire in `Replica::collect`, publishing `op`.
        self.state.store(POSTED, Ordering::Release);
    }

    /// Owner: whether the response is ready.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        // Acquire: pairs with the Release store in `Replica::respond`.
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Owner: takes the response after `is_done` returned true.
    ///
    /// # Safety
    ///
    /// - The caller is the slot's owner and saw `is_done()` return true since it posted; before
    ///   that, the combiner may still be writing the response cell.
    #[inline]
    pub(crate) unsafe fn take_response(&self) -> R {
        // SAFETY: the state is `DONE` (seen with Acquire by the caller, per the contract), so
        // the combiner has finished with the cell and ownership is back with the owner.
        let r = self.response.with_mut(|p| unsafe { (*p).take() });
        // Relaxed: the slot is only read again by a combiner after the owner's next Release
        // store of `POSTED`.
        self.state.store(EMPTY, Ordering::Relaxed);
        r.expect("invariant: a DONE slot holds a response")
    }

    /// Owner: announces that it is about to park; returns whether it still should (the
    /// response did not arrive in between). Must be followed by `unmark_parked`.
    pub(crate) fn mark_parked(&self) -> bool {
        // Relaxed store + SeqCst fence: a Dekker pair with `Replica::respond` (store DONE, fence,
        // load `parked`): either the combiner sees our flag and unparks us, or we see DONE here.
        self.parked.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // Relaxed: the caller re-checks with `is_done` (Acquire) before taking the response.
        self.state.load(Ordering::Relaxed) != DONE
    }

    /// Owner: clears the parked flag.
    pub(crate) fn unmark_parked(&self) {
        // Relaxed: at worst a combiner sends one needless unpark.
        self.parked.store(false, Ordering::Relaxed);
    }
}

/// Scratch space of the combiner, only touched while the combiner lock is held.
pub(crate) struct Batch<W> {
    /// Slot indices in the current batch, in log order.
    pub(crate) slots: Vec<usize>,
    /// The clones that go into the log.
    pub(crate) ops: Vec<W>,
    /// Previous laps' operations taken out of the log slots this batch overwrote. They are
    /// dropped (user code) only once every entry of the batch is published.
    pub(crate) evicted: Vec<W>,
}

/// The combining slots of a replica, one per registered thread.
type Slots<D> =
    Box<[CachePadded<Slot<<D as Dispatch>::WriteOperation, <D as Dispatch>::Response>>]>;

/// The state of a replica's dedicated combiner (§4, §6 "Inactive replica";
/// `Builder::dedicated_combiners`), on a cache line of its own.
#[derive(Debug, Default)]
pub(crate) struct Dedicated {
    /// Whether a thread runs `NodeReplicated::run_combiner` for this replica: posting threads
    /// then leave combining to it.
    attached: AtomicBool,
    /// Set by the dedicated combiner while it is about to sleep (a Dekker pair with `post`).
    sleeping: AtomicBool,
    /// Where the dedicated combiner sleeps.
    parker: Parker,
}

/// One node's replica.
pub(crate) struct Replica<D: Dispatch> {
    /// The dedicated combiner's state (unused unless `Builder::dedicated_combiners`).
    pub(crate) dedicated: CachePadded<Dedicated>,
    /// The combiner lock (Algorithm 1, line 21) and the readers-writer lock (§5.5) guarding
    /// `data`, in one word (see `lock.rs`). The combiner lock also guards `local_tail` moves of
    /// this replica and the `batch` scratch.
    pub(crate) lock: ReplicaLock,
    /// Operations announced by `post` and not yet collected (at least as many as are `POSTED`):
    /// lets the combiner skip the slot scan when nobody posted, which is the uncontended case.
    pending: CachePadded<AtomicUsize>,
    slots: Slots<D>,
    /// Live handles (and a running dedicated combiner) on this replica, plus two flags:
    ///
    /// | bit | name | set by | cleared by | meaning |
    /// |---|---|---|---|---|
    /// | 63 | `RETIRED` | `retire` (`remove_replica`) | never | no registration succeeds again |
    /// | 62 | `DORMANT` | `try_sleep` (count 0) | `wake` | out of the log; a registration wakes it |
    /// | 0-61 | count | `enter` | `leave` | handles and dedicated combiners counted |
    ///
    /// The flags are set by compare-exchange from a count of 0, so they never appear while a
    /// handle is counted on an awake replica.
    handles: AtomicUsize,
    pub(crate) batch: UnsafeCell<Batch<D::WriteOperation>>,
    pub(crate) data: CachePadded<UnsafeCell<D>>,
}

// SAFETY: `data` is read by many threads under the reader lock (`D: Sync`) and mutated by one
// thread at a time under the writer side, on whichever thread is combining (`D: Send`); write
// operations move from the posting thread to the combiner (`W: Send`) and responses back
// (`R: Send`). All cell accesses follow the slot protocol and locks documented above.
unsafe impl<D> Sync for Replica<D>
where
    D: Dispatch + Send + Sync,
    D::WriteOperation: Send,
    D::Response: Send,
{
}
// SAFETY: owning a replica owns its structure, queued operations and responses.
unsafe impl<D> Send for Replica<D>
where
    D: Dispatch + Send,
    D::WriteOperation: Send,
    D::Response: Send,
{
}

impl<D: Dispatch> std::fmt::Debug for Replica<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("combiner_locked", &self.lock.is_combiner_locked())
            .field("registered", &self.lock.active())
            .field("capacity", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl<D: Dispatch> Replica<D> {
    pub(crate) fn new(data: D, threads: usize) -> Self {
        Self {
            dedicated: CachePadded::new(Dedicated::default()),
            lock: ReplicaLock::new(threads),
            pending: CachePadded::new(AtomicUsize::new(0)),
            slots: (0..threads)
                .map(|_| CachePadded::new(Slot::new()))
                .collect(),
            handles: AtomicUsize::new(0),
            batch: UnsafeCell::new(Batch {
                slots: Vec::with_capacity(threads),
                ops: Vec::with_capacity(threads),
                evicted: Vec::with_capacity(threads),
            }),
            data: CachePadded::new(UnsafeCell::new(data)),
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub(crate) fn slot(&self, idx: usize) -> &Slot<D::WriteOperation, D::Response> {
        &self.slots[idx]
    }

    /// Slots that may be in use (ever registered): the bound of every scan.
    #[inline]
    pub(crate) fn registered(&self) -> usize {
        self.lock.active()
    }

    /// Counts a new handle (or dedicated combiner) on this replica, unless it is retired.
    pub(crate) fn enter(&self) -> Entered {
        // Relaxed: the count only decides between entering, retiring and sleeping; the CASes
        // of `retire` and `try_sleep` and these are totally ordered on the one word, which is
        // all that is needed (the wake-up that a `Dormant` answer leads to synchronizes
        // through `Places::changing`).
        let mut n = self.handles.load(Ordering::Relaxed);
        loop {
            if n & RETIRED != 0 {
                return Entered::Retired;
            }
            match self
                .handles
                .compare_exchange_weak(n, n + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) if n & DORMANT != 0 => return Entered::Dormant,
                Ok(_) => return Entered::Awake,
                Err(now) => n = now,
            }
        }
    }

    /// Uncounts a handle counted by `enter`; returns whether it was the last one.
    pub(crate) fn leave(&self) -> bool {
        // Relaxed: as in `enter`.
        self.handles.fetch_sub(1, Ordering::Relaxed) & !(RETIRED | DORMANT) == 1
    }

    /// Retires the replica if no handle is counted (awake or dormant); otherwise returns how
    /// many are. `Ok(true)`: it was dormant.
    pub(crate) fn retire(&self) -> Result<bool, usize> {
        // Relaxed: as in `enter`.
        let n = self.handles.load(Ordering::Relaxed);
        if n & !DORMANT != 0 {
            return Err(n & !(RETIRED | DORMANT));
        }
        self.handles
            .compare_exchange(n, RETIRED, Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| n & DORMANT != 0)
            .map_err(|now| now & !(RETIRED | DORMANT))
    }

    /// Whether `retire` succeeded.
    pub(crate) fn is_retired(&self) -> bool {
        // Relaxed: as in `enter`.
        self.handles.load(Ordering::Relaxed) & RETIRED != 0
    }

    /// Marks the replica dormant if it is awake, not retired and no handle is counted.
    pub(crate) fn try_sleep(&self) -> bool {
        // Relaxed: as in `enter`.
        self.handles
            .compare_exchange(0, DORMANT, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// Whether the replica is dormant (only a holder of `Places::changing` sees a stable answer).
    pub(crate) fn is_dormant(&self) -> bool {
        // Relaxed: as in `enter`.
        self.handles.load(Ordering::Relaxed) & DORMANT != 0
    }

    /// Clears `DORMANT` (the replica has been rebuilt and has joined the log, or a sleep gave up
    /// before it left the log). The caller holds `Places::changing` and saw `is_dormant()` (or
    /// set the flag itself), so the flag is set and nobody else clears it.
    pub(crate) fn wake(&self) {
        debug_assert!(self.is_dormant());
        // Relaxed: as in `enter`; the rebuilt state is published to the registrants by
        // `Places::changing` and the combiner lock.
        self.handles.fetch_sub(DORMANT, Ordering::Relaxed);
    }

    /// Claims a free slot for the calling thread.
    pub(crate) fn register(&self) -> Option<usize> {
        for (idx, slot) in self.slots.iter().enumerate() {
            // Acquire: pairs with the Release in `deregister`: the previous owner is done.
            if slot
                .in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                // Relaxed: the slot is ours; the Release of `post` publishes it.
                slot.state.store(EMPTY, Ordering::Relaxed);
                self.lock.activate(idx);
                return Some(idx);
            }
        }
        None
    }

    /// Releases slot `idx` (its handle is dropped).
    pub(crate) fn deregister(&self, idx: usize) {
        // Release: pairs with the Acquire in `register`.
        self.slots[idx].in_use.store(false, Ordering::Release);
    }

    /// Owner of slot `idx`: posts `op` for a combiner (Algorithm 1, line 19).
    ///
    /// # Safety
    ///
    /// As [`Slot::post`]: the caller owns slot `idx`, and the slot is `EMPTY`.
    pub(crate) unsafe fn post(&self, idx: usize, op: D::WriteOperation) {
        // Relaxed: a hint counted *before* the slot turns `POSTED`, so it is never below the
        // number of posted slots; the slot's own Release/Acquire `state` publishes the op. A
        // combiner that reads a stale 0 misses an op posted concurrently, which its owner then
        // runs itself (it keeps trying the combiner lock, and a parked owner is woken at unlock).
        self.pending.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.slot(idx).post(op) };
    }

    /// Whether a dedicated combiner serves this replica now (a hint: a poster that reads a stale
    /// value waits a bounded park longer, or combines itself, both correct).
    #[inline]
    pub(crate) fn dedicated_attached(&self) -> bool {
        // Relaxed: see above; the combining itself is ordered by the combiner lock and the slots.
        self.dedicated.attached.load(Ordering::Relaxed)
    }

    /// Makes the calling thread this replica's dedicated combiner; false if one is attached.
    pub(crate) fn attach_dedicated(&self) -> bool {
        // Relaxed: only makes attachment exclusive; the combining is ordered by the combiner lock.
        self.dedicated
            .attached
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// The dedicated combiner leaves; posters combine for themselves again.
    pub(crate) fn detach_dedicated(&self) {
        // Relaxed: as in `attach_dedicated`.
        self.dedicated.attached.store(false, Ordering::Relaxed);
    }

    /// Poster, right after `post`: wakes the dedicated combiner if it sleeps.
    #[inline]
    pub(crate) fn wake_dedicated(&self) {
        // SeqCst fence: the poster half of a Dekker pair with `sleep_dedicated` (the poster's
        // `pending` increment, fence, load of `sleeping`; the combiner's store of `sleeping`,
        // fence, load of `pending`): either the combiner sees the operation or we see it asleep.
        fence(Ordering::SeqCst);
        // Relaxed: ordered by the fence; a needless unpark is harmless.
        if self.dedicated.sleeping.load(Ordering::Relaxed) {
            self.dedicated.parker.unpark();
        }
    }

    /// Dedicated combiner, idle: sleeps at most `micros` unless an operation is pending (or gets
    /// posted meanwhile, which wakes it).
    pub(crate) fn sleep_dedicated(&self, micros: u64) {
        // Relaxed store + SeqCst fence: the combiner half of the Dekker pair in `wake_dedicated`.
        self.dedicated.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if !self.has_pending() {
            self.dedicated.parker.park_timeout(micros);
        }
        // Relaxed: at worst a poster sends one needless unpark.
        self.dedicated.sleeping.store(false, Ordering::Relaxed);
    }

    /// Owner of slot `idx` with a dedicated combiner: sleeps until its response is ready or
    /// `micros` pass (`respond` wakes it; no lock bit to announce, as nobody needs to take over
    /// combining).
    pub(crate) fn park_owner_dedicated(&self, idx: usize, micros: u64) {
        let slot = self.slot(idx);
        if slot.mark_parked() {
            slot.parker.park_timeout(micros);
        }
        slot.unmark_parked();
    }

    /// Whether some operation may be posted and not yet collected (a hint; see `post`).
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        // Relaxed: see `post`.
        self.pending.load(Ordering::Relaxed) != 0
    }

    /// How many operations are posted and not yet collected (a hint, never below the number of
    /// `POSTED` slots; see `post`). The §5.2 `MIN_BATCH` wait counts on it.
    #[inline]
    pub(crate) fn pending(&self) -> usize {
        // Relaxed: see `post`; a stale value only shortens or lengthens a bounded wait.
        self.pending.load(Ordering::Relaxed)
    }

    /// Tries to become this node's combiner (Algorithm 1, line 21); with `exclude_readers`,
    /// also takes the writer side at once (see `ReplicaLock::try_lock_combiner`).
    #[inline]
    pub(crate) fn try_lock_combiner(&self, exclude_readers: bool) -> bool {
        self.lock.try_lock_combiner(exclude_readers)
    }

    /// Releases the combiner lock (and the writer side) and wakes the parked owners whose
    /// operations are still pending, so that one of them becomes the next combiner.
    ///
    /// # Safety
    ///
    /// As [`ReplicaLock::unlock`]: the caller holds this replica's combiner lock.
    #[inline]
    pub(crate) unsafe fn unlock_combiner(&self) {
        // SAFETY: forwarded from the caller's contract.
        if unsafe { self.lock.unlock() } {
            self.wake_pending();
        }
    }

    #[cold]
    fn wake_pending(&self) {
        for slot in &self.slots[..self.registered()] {
            // Relaxed: the unlocking swap (Acquire) read the parker's Release CAS of `PARKED`,
            // which its parked flag and `POSTED` precede; a needless unpark is harmless.
            if slot.state.load(Ordering::Relaxed) == POSTED && slot.parked.load(Ordering::Relaxed) {
                slot.parker.unpark();
            }
        }
    }

    /// Owner of slot `idx`: parks until its response is ready, the combiner lock is released,
    /// or `micros` pass. The announce/re-check order makes wake-ups exact (no lost wake-up).
    pub(crate) fn park_owner(&self, idx: usize, micros: u64) {
        let slot = self.slot(idx);
        if slot.mark_parked() && self.lock.announce_parked() {
            slot.parker.park_timeout(micros);
        }
        slot.unmark_parked();
    }

    /// Combiner: gathers posted operations into the batch scratch (Algorithm 1, lines 23-24).
    /// With `for_log`, clones of them go to `batch.ops` (for the log); the originals stay in
    /// their slots until `apply_own`. Returns the batch size.
    ///
    /// User code (`Clone`) runs here, before anything is reserved in the log, so a panic cannot
    /// leave a reserved entry unfilled.
    ///
    /// # Safety
    ///
    /// - The caller holds this replica's combiner lock (only the combiner may read a `POSTED`
    ///   slot's operation, and `batch` is the combiner's scratch space).
    pub(crate) unsafe fn collect(
        &self,
        batch: &mut Batch<D::WriteOperation>,
        for_log: bool,
    ) -> usize {
        batch.slots.clear();
        batch.ops.clear();
        if !self.has_pending() {
            return 0;
        }
        for idx in 0..self.registered() {
            let slot = self.slot(idx);
            // Acquire: pairs with the Release in `Slot::post`, making `op` visible.
            if slot.state.load(Ordering::Acquire) == POSTED {
                if for_log {
                    // SAFETY: the slot is `POSTED` and we hold the combiner lock (the caller's
                    // contract), so we alone may read `op`; the owner does not touch it until it
                    // sees `DONE`.
                    let op = slot.op.with(|p| unsafe { (*p).clone() });
                    batch
                        .ops
                        .push(op.expect("invariant: a POSTED slot holds an operation"));
                }
                batch.slots.push(idx);
            }
        }
        let n = batch.slots.len();
        if n > 0 {
            // Relaxed: each collected slot's `post` counted it before its Release store of
            // `POSTED`, which our Acquire load read, so this never takes the count below zero.
            self.pending.fetch_sub(n, Ordering::Relaxed);
        }
        n
    }

    /// Combiner, holding the writer side: applies the operation posted in slot `idx` to the
    /// replica and stores the response (Algorithm 1, line 33). The slot stays `POSTED` until
    /// `respond`.
    ///
    /// # Safety
    ///
    /// - The caller holds this replica's combiner lock, and collected slot `idx` into its
    ///   current batch under that lock (so the slot is `POSTED` and its owner waits for `DONE`);
    /// - `apply_own` was not called for `idx` in this batch yet.
    pub(crate) unsafe fn apply_own(&self, data: &mut D, idx: usize) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.apply_own_with(idx, |op| data.dispatch_mut(op)) }
    }

    /// Combiner: the operation posted in slot `idx` of its current batch, borrowed (a commit
    /// log gets it before it is applied; see `NodeReplicated::combine_committed`).
    ///
    /// # Safety
    ///
    /// - The caller holds this replica's combiner lock, and collected slot `idx` into its
    ///   current batch under that lock (so the slot is `POSTED` and its owner waits for `DONE`);
    /// - the reference is dropped before `apply_own` is called for `idx`, which takes the
    ///   operation out of the slot.
    pub(crate) unsafe fn posted_op(&self, idx: usize) -> &D::WriteOperation {
        // SAFETY: slot `idx` is in the batch we collected under the combiner lock we hold (the
        // caller's contract): its owner does not touch the cell before `DONE`, and nothing
        // changes it before `apply_own`, which the caller does not call while this borrow lives.
        let op = self.slot(idx).op.with(|p| unsafe { &*p });
        op.as_ref()
            .expect("invariant: a batched slot holds its op until it is applied")
    }

    /// Like [`apply_own`](Self::apply_own), with `apply` in place of `dispatch_mut` (CNR applies
    /// operations to a concurrent structure through `&self`).
    ///
    /// # Safety
    ///
    /// As [`apply_own`](Self::apply_own).
    pub(crate) unsafe fn apply_own_with(
        &self,
        idx: usize,
        apply: impl FnOnce(D::WriteOperation) -> D::Response,
    ) {
        let slot = self.slot(idx);
        // SAFETY: slot `idx` is in the batch we collected under the combiner lock we still hold
        // (the caller's contract); its owner waits for `DONE` and does not touch the cells.
        let op = slot.op.with_mut(|p| unsafe { (*p).take() });
        let response = apply(op.expect("invariant: a batched slot holds its op"));
        // SAFETY: as above.
        slot.response.with_mut(|p| unsafe { *p = Some(response) });
    }

    /// Combiner: gives back a batch of `n` operations collected with `for_log` but not reserved
    /// in the log (their slots are still `POSTED` with their operations), so that the next
    /// combiner collects them again. CNR's combiner does this instead of holding its lock while
    /// it waits for log space.
    pub(crate) fn uncollect(&self, n: usize) {
        // Relaxed: as in `post` (a hint, never below the number of `POSTED` slots).
        self.pending.fetch_add(n, Ordering::Relaxed);
    }

    /// Combiner: hands the responses of `slots` to their owners and wakes those that parked.
    pub(crate) fn respond(&self, slots: &[usize]) {
        if slots.is_empty() {
            return;
        }
        for &idx in slots {
            // Release: pairs with the Acquire in `Slot::is_done`, publishing `response`.
            self.slot(idx).state.store(DONE, Ordering::Release);
        }
        // SeqCst fence: the combiner half of the Dekker pair with `Slot::mark_parked`; one for
        // the whole batch.
        fence(Ordering::SeqCst);
        for &idx in slots {
            let slot = self.slot(idx);
            // Relaxed: ordered by the fence. An owner that already took its response and parked
            // for its next operation gets a needless unpark, which is harmless.
            if slot.parked.load(Ordering::Relaxed) {
                slot.parker.unpark();
            }
        }
    }
}
