//! PWFqueue (paper §5): the linked queue with a dummy head of [`PBQueue`](super::PBQueue) on
//! two instances of the wait-free combining of PWFcomb ([`WfInstance`]), one for enqueuers and
//! one for dequeuers, as SimQueue does on PSim.
//!
//! - **Two-part list.** An enqueue attempt cannot append to the shared list: its attempt may
//!   be discarded, and other attempts run at once on copies of the same state. It builds a
//!   *local* list of new nodes (from its own thread's chunk) and installs the enqueuers' state
//!   `{link_a, link_b, tail, count}`: `link_a` is the tail it started from, `link_b` the first
//!   node of its local list, `tail` the last one. The queue is then the shared list up to
//!   `link_a`, then `link_b ..= tail`; the pointer `link_a.next = link_b` is not written yet.
//! - **Linking.** Every enqueue attempt first performs the pending link (`link_a.next :=
//!   link_b`; every writer writes the same value, and a node is linked once: nodes are not
//!   reused while the queue runs) and writes it back (pwb) together with its new nodes, before
//!   its record, so line 29's `pfence` orders them before the install. The two linking
//!   pointers themselves are in the installed record, hence persisted before the new `tail`:
//!   a crash finds either the old record (whose pending link recovery performs) or the new one
//!   (whose predecessor's link is durable).
//! - **Dequeuers** take a validated, persisted snapshot of the enqueuers' state
//!   ([`WfInstance::read`]) and move `Head` at most to its `tail`, reading `link_b` as the
//!   successor of `link_a` (they help by not needing the link). So `Head` never passes a
//!   durable `tail`: every link after the durable `Head` is durable or is the pending link of
//!   the durable enqueuers' record, which [`open`](PWFQueue::open) performs. Dequeuers write
//!   no node; they persist only their record (the paper: "it is enough to persist only the
//!   head").
//! - **Nodes.** As in [`PWFStack`](super::PWFStack), the pool is split into one chunk of
//!   `capacity` nodes per thread (plus the first dummy) and an attempt of thread `p` takes
//!   nodes only from `p`'s free list. Node reuse while the queue runs is left out, as in the
//!   paper ("we have left this for future work"): a dequeued node stays unused until the next
//!   [`open`](PWFQueue::open), which gives every node off the durable list back to the thread
//!   whose chunk holds it. [`Options`] have no effect on a `PWFQueue`.
//!
//! Progress: enqueues are wait-free (at most two attempts). A dequeue makes at most two
//! attempts; each takes a snapshot of the enqueuers' state, which retries (lock-free) only
//! while enqueue installs keep landing between its two reads of `S`.

use core::fmt;

use super::shared::{
    self, audit_free, open_header, queue_handle, structure_api, Built, Parts, Place, Seat,
};
use super::store::{FreeNodes, Link, Pool, Store};
use super::{
    check_threads, poisoned, ret_unit, ret_value, unit_of, value_of, AuditError, Full, Options, Ret,
};
use crate::engine::pwf::{WfBatch, WfInstance};
use crate::error::{CombBuildError, CombRegisterError};
use crate::layout::LINE_WORDS;
use crate::slots::Slots;
use crate::sync::UnsafeCell;
use crate::Recovered;
use pmem::{NoPersist, Persist, Pod, Region};

const MAGIC: u64 = pmem::kinds::PWFQUEUE_TAG;
const KIND: &str = "PWFQueue";

/// `st` of the enqueuers' records: the two linking pointers, the tail, and the number of
/// values ever enqueued (for `len`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct EnqState {
    /// The node whose `next` must become `link_b` (0: no pending link).
    link_a: Link,
    /// The first node of the last installed local list (0: no pending link).
    link_b: Link,
    tail: Link,
    count: u64,
}

// SAFETY:
// - `repr(C)` with four `u64` fields: no padding, every bit pattern valid;
// - it holds no pointers (links are node indices).
unsafe impl Pod for EnqState {}

/// `st` of the dequeuers' records: the dummy node and the number of values ever dequeued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct DeqState {
    head: Link,
    count: u64,
}

// SAFETY: as for `EnqState` (two `u64` fields).
unsafe impl Pod for DeqState {}

impl EnqState {
    /// The pending link, if any.
    fn pending(&self) -> Option<(Link, Link)> {
        (self.link_a != 0 && self.link_b != 0).then_some((self.link_a, self.link_b))
    }
}

type EnqInstance = WfInstance<EnqState, u64, Ret>;
/// The dequeuers' instance; a request carries no argument (always 0).
type DeqInstance = WfInstance<DeqState, u64, Ret>;

/// One thread's free nodes; only that thread touches them.
#[derive(Debug, Default)]
struct Local {
    /// Free nodes of this thread.
    free: FreeNodes,
    /// Nodes the current enqueue attempt took from `free` (back to `free` if it is discarded).
    taken: Vec<u32>,
    /// Lines to write back (the attempt's nodes and the linked node).
    flush: Vec<u32>,
}

/// What both instances share.
struct Shared<P: Persist> {
    store: Store<P>,
    pool: Pool,
    capacity: u32,
    locals: Box<[crossbeam_utils::CachePadded<UnsafeCell<Local>>]>,
}

impl<P: Persist> Shared<P> {
    /// Thread `me`'s nodes.
    ///
    /// # Safety
    ///
    /// - the caller is the thread holding slot `me` (or has `&mut` of the queue), and drops
    ///   the reference before the operation returns.
    #[allow(clippy::mut_from_ref)] // exclusive by slot ownership, as the contract says
    unsafe fn local(&self, me: usize) -> &mut Local {
        // SAFETY:
        // - exclusive access: only the owner of slot `me` calls this, one operation at a time.
        self.locals[me].with_mut(|l| unsafe { &mut *l })
    }

    /// The successor of `node` in the list described by the enqueuers' state `enq` (the
    /// pending link counts as written).
    fn next(&self, enq: &EnqState, node: Link) -> Link {
        if let Some((a, b)) = enq.pending() {
            if node == a {
                return b;
            }
        }
        self.pool
            .node_of(node)
            .map_or(0, |n| self.pool.next(self.store.words(), n))
    }
}

struct Enq<'a, P: Persist>(&'a Shared<P>);

struct Deq<'a, P: Persist> {
    s: &'a Shared<P>,
    enq: &'a EnqInstance,
}

impl<P: Persist> WfBatch for Enq<'_, P> {
    type State = EnqState;
    type Op = u64;
    type Ret = Ret;

    fn apply(&self, me: usize, st: &mut EnqState, reqs: &[(usize, u64)], rets: &mut [Ret]) {
        let s = self.0;
        let w = s.store.words();
        // SAFETY:
        // - `apply` runs on the thread holding slot `me`; dropped before returning.
        let l = unsafe { s.local(me) };
        // A discarded attempt's nodes are free again (in the order they were taken).
        while let Some(n) = l.taken.pop() {
            l.free.push(n);
        }
        l.flush.clear();
        let mut first: Link = 0;
        let mut last: Link = 0;
        for (i, &(_, value)) in reqs.iter().enumerate() {
            let Some(node) = l.free.pop() else {
                rets[i] = ret_unit(Err(Full(value)));
                continue;
            };
            l.taken.push(node);
            // Relaxed: published by the SC (Release) that installs the state naming it; a
            // discarded attempt's writes are overwritten by this thread before any install.
            s.pool.set(w, s.store.persist(), node, value, 0);
            if let Some(prev) = s.pool.node_of(last) {
                s.pool
                    .set_next(w, s.store.persist(), prev, u64::from(node) + 1);
            } else {
                first = u64::from(node) + 1;
            }
            last = u64::from(node) + 1;
            rets[i] = ret_unit(Ok(()));
        }
        if first == 0 {
            // Nothing appended: the state (and its pending link) stays as it is.
            return;
        }
        // The pending link leaves the state now: perform it and write it back. A stale
        // attempt (its SC fails) writes the same value: `link_a` is linked once.
        if let Some((a, b)) = st.pending() {
            if let Some(a) = s.pool.node_of(a) {
                s.pool.set_next(w, s.store.persist(), a, b);
                l.flush.push(a);
            }
        }
        l.flush.extend_from_slice(&l.taken);
        s.pool.persist_nodes(w, s.store.persist(), &mut l.flush);
        *st = EnqState {
            link_a: st.tail,
            link_b: first,
            tail: last,
            count: st.count + l.taken.len() as u64,
        };
    }

    fn installed(&self, me: usize, _st: &EnqState) {
        // SAFETY:
        // - runs on the thread holding slot `me`; dropped before returning.
        let l = unsafe { self.0.local(me) };
        // The installed attempt's nodes are in the queue.
        l.taken.clear();
    }
}

impl<P: Persist> WfBatch for Deq<'_, P> {
    type State = DeqState;
    type Op = u64;
    type Ret = Ret;

    fn apply(&self, _me: usize, st: &mut DeqState, reqs: &[(usize, u64)], rets: &mut [Ret]) {
        let s = self.s;
        // A validated snapshot of the enqueuers' state, persisted before we use it: `Head`
        // never passes a durable `tail`. Its Acquire LL pairs with the enqueuers' SC, so the
        // nodes up to its `tail` (and the links before `link_a`) are visible.
        let enq = self.enq.read(s.store.words(), s.store.persist());
        for ret in rets.iter_mut().take(reqs.len()) {
            *ret = ret_value(None);
            if st.head == enq.tail {
                continue;
            }
            // A stale attempt may hold an older `Head`: still on the list (nodes are not
            // reused while the queue runs). Never panic on what it reads: its SC fails.
            let next = s.next(&enq, st.head);
            let Some(first) = s.pool.node_of(next) else {
                continue;
            };
            st.head = next;
            st.count += 1;
            *ret = ret_value(Some(s.pool.value(s.store.words(), first)));
        }
    }

    fn installed(&self, _me: usize, _st: &DeqState) {}
}

/// A recoverable, **wait-free**, linked FIFO queue of `u64` values (paper §5 PWFqueue),
/// persisted through `P`.
///
/// Same use as [`PBQueue`](super::PBQueue): threads [`register`](Self::register) for a
/// [`PWFQueueHandle`]; enqueues and dequeues are combined by separate wait-free instances and
/// run in parallel. Each thread owns a chunk of `capacity` nodes; dequeued nodes are reused
/// only after [`open`](Self::open) (see [`enqueue`](PWFQueueHandle::enqueue) for when that
/// returns [`Full`]). See the [module docs](crate::structures) for modes and recovery.
///
/// # Examples
///
/// ```
/// use pcomb::structures::PWFQueue;
///
/// let queue = PWFQueue::new(100, 2)?;
/// std::thread::scope(|s| {
///     let q = &queue;
///     s.spawn(move || {
///         let mut h = q.register().expect("slot");
///         for i in 0..50 {
///             h.enqueue(i).expect("room");
///         }
///     });
///     s.spawn(move || {
///         let mut h = q.register().expect("slot");
///         let mut last = None;
///         let mut got = 0;
///         while got < 50 {
///             if let Some(v) = h.dequeue() {
///                 assert!(last.map_or(true, |l| l < v), "FIFO order");
///                 last = Some(v);
///                 got += 1;
///             }
///         }
///     });
/// });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PWFQueue<P: Persist = NoPersist> {
    shared: Shared<P>,
    enq: EnqInstance,
    deq: DeqInstance,
    slots: Slots,
    options: Options,
}

// SAFETY:
// - `shared.locals[p]` is only accessed by the holder of slot `p` (one operation at a time,
//   the handle is `&mut`), or through `&mut self`;
// - everything else is `Send + Sync` (atomics, `Store`, `WfInstance`, `Slots`).
unsafe impl<P: Persist> Send for PWFQueue<P> {}
// SAFETY: as for `Send`.
unsafe impl<P: Persist> Sync for PWFQueue<P> {}

impl<P: Persist> fmt::Debug for PWFQueue<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PWFQueue")
            .field("capacity", &self.shared.capacity)
            .field("enq", &self.enq)
            .field("deq", &self.deq)
            .finish_non_exhaustive()
    }
}

structure_api!(
    PWFQueue,
    PWFQueueHandle,
    "queue",
    "`capacity` nodes per thread (a chunk each, see the type's docs)",
    store shared.store,
    nodes: per_thread true, extra 1, instances EnqInstance, DeqInstance
);

impl<P: Persist> PWFQueue<P> {
    fn parts(&self) -> Parts<'_> {
        Parts {
            slots: &self.slots,
            options: self.options,
            capacity: self.shared.capacity,
            threads: self.enq.threads(),
        }
    }

    fn into_store(self) -> Store<P> {
        self.shared.store
    }

    fn create_in(store: Store<P>, capacity: u32, max_threads: usize, o: Options) -> Built<Self> {
        let q = Self::assemble(store, capacity, max_threads, o);
        let w = q.shared.store.words();
        // The last node is the first dummy: Tail = Head = &DUMMY.
        let dummy = u64::from(q.shared.pool.nodes);
        q.enq.init(
            w,
            &EnqState {
                tail: dummy,
                ..EnqState::default()
            },
        );
        q.deq.init(
            w,
            &DeqState {
                head: dummy,
                count: 0,
            },
        );
        // The block `build` allocated: `total_words` words.
        let total = q.shared.store.words().len();
        let head = shared::header(MAGIC, max_threads, capacity, total, o);
        q.shared.store.init_structure(&head);
        // The dummy is the node after every thread's chunk: each chunk is free, never used.
        let chunk = capacity;
        for t in 0..max_threads {
            // SAFETY:
            // - not shared (creating), so no thread holds a slot.
            let l = unsafe { q.shared.local(t) };
            // In range: `nodes` checked `capacity * max_threads + 1` fits a `u32`.
            let start = t as u32 * chunk;
            l.free = FreeNodes::unused(start..start + chunk);
        }
        Ok(q)
    }

    fn assemble(store: Store<P>, capacity: u32, max_threads: usize, options: Options) -> Self {
        let enq_at = LINE_WORDS;
        let deq_at = enq_at + EnqInstance::words(max_threads);
        let pool_at = deq_at + DeqInstance::words(max_threads);
        Self {
            shared: Shared {
                store,
                pool: Pool {
                    at: pool_at,
                    nodes: (capacity as usize * max_threads + 1) as u32,
                },
                capacity,
                locals: (0..max_threads)
                    .map(|_| crossbeam_utils::CachePadded::new(UnsafeCell::new(Local::default())))
                    .collect(),
            },
            enq: EnqInstance::new(enq_at, max_threads),
            deq: DeqInstance::new(deq_at, max_threads),
            slots: Slots::new(max_threads),
            options,
        }
    }

    /// Every node not `on_list` goes to the free list of the thread whose chunk holds it (the
    /// extra node to the last thread), highest first. Single-threaded use.
    fn give_back_free(&self, on_list: &[bool]) {
        let chunk = self.shared.capacity as usize;
        let threads = self.enq.threads();
        for t in 0..threads {
            // SAFETY:
            // - not shared (creating or opening), so no thread holds a slot.
            let l = unsafe { self.shared.local(t) };
            let end = if t + 1 == threads {
                on_list.len()
            } else {
                (t + 1) * chunk
            };
            l.free = FreeNodes::from_list(
                (t * chunk..end)
                    .rev()
                    .filter(|&n| !on_list[n])
                    .map(|n| n as u32)
                    .collect(),
            );
            l.taken.clear();
        }
    }

    /// Reopens the queue at `region`'s root after a restart or crash: performs the durable
    /// pending link (the enqueuers' `link_a.next := link_b`) and drops it from the state, so
    /// the values are the durable list from `Head` to `tail`; every other node is free again,
    /// and each thread's interrupted operation can then be recovered.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::LayoutMismatch`] if the root is missing, is not a `PWFQueue`, its header
    /// is corrupt, or its persisted list does not lead from `Head` to `tail`;
    /// [`CombBuildError::Region`] if the region refuses an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem::Region, structures::PWFQueue, CombBuildError};
    /// let err = PWFQueue::open(Region::anonymous(1, 1 << 16)?).unwrap_err();
    /// assert!(matches!(err, CombBuildError::LayoutMismatch { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(region: Region<P>) -> Result<Self, CombBuildError> {
        let o = open_header(region, MAGIC, KIND, Self::total_words)?;
        let mismatch = |detail| CombBuildError::LayoutMismatch { kind: KIND, detail };
        let q = Self::assemble(o.store, o.capacity, o.threads, o.options);
        let w = q.shared.store.words();
        let p = q.shared.store.persist();
        if !q.enq.valid(w, p) || !q.deq.valid(w, p) {
            return Err(mismatch("S names no record (corrupt)"));
        }
        let enq = q.enq.state_now(w);
        if let Some((a, b)) = enq.pending() {
            let node = q
                .shared
                .pool
                .node_of(a)
                .ok_or(mismatch("the pending link names no node"))?;
            let persist = q.shared.store.persist();
            // The link first, durably; then the state without it (a torn rewrite leaves one
            // of the two pointers 0: no pending link, and the link is durable).
            q.shared.pool.set_next(w, persist, node, b);
            q.shared.pool.persist_nodes(w, persist, &mut [node]);
            persist.pfence(); // repair: pfence
            persist.psync(); // repair: psync
            q.enq.rewrite_state(
                w,
                persist,
                &EnqState {
                    link_a: 0,
                    link_b: 0,
                    ..enq
                },
            );
        }
        let on_list = q
            .on_list()
            .map_err(|_| mismatch("the persisted list does not lead from Head to tail"))?;
        q.give_back_free(&on_list);
        Ok(q)
    }

    /// Walks the list from `Head` to `tail` (the pending link counts as written): which nodes
    /// are on it, or why it is malformed.
    fn on_list(&self) -> Result<Vec<bool>, String> {
        let w = self.shared.store.words();
        let pool = &self.shared.pool;
        let enq = self.enq.state_now(w);
        let deq = self.deq.state_now(w);
        let mut on_list = vec![false; pool.nodes as usize];
        let mut link = deq.head;
        let mut values = 0u64;
        loop {
            let node = pool
                .node_of(link)
                .ok_or_else(|| format!("link {link} out of the pool"))?;
            if std::mem::replace(&mut on_list[node as usize], true) {
                return Err(format!("node {node} is on the list twice (a cycle)"));
            }
            if link == enq.tail {
                break;
            }
            values += 1;
            link = self.shared.next(&enq, link);
        }
        if enq.count.checked_sub(deq.count) != Some(values) {
            return Err(format!(
                "{values} values on the list, {} enqueued and {} dequeued",
                enq.count, deq.count
            ));
        }
        Ok(on_list)
    }

    /// Checks the structure (no handle may be alive): the list leads from `Head` to `tail`
    /// and holds as many values as were enqueued and not dequeued, and the nodes the threads
    /// hold free are distinct and off the list. (Dequeued nodes are neither on the list nor
    /// free until the next `open`, so there is no leak check.) For tests and for checking a
    /// recovered queue.
    ///
    /// # Errors
    ///
    /// [`AuditError`] describing the first violation found.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut q = pcomb::structures::PWFQueue::new(4, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?;
    /// h.dequeue();
    /// drop(h);
    /// q.audit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn audit(&mut self) -> Result<(), AuditError> {
        let on_list = self.on_list().map_err(AuditError)?;
        let free = (0..self.enq.threads()).flat_map(|t| {
            // SAFETY:
            // - `&mut self`: no handle, hence no operation, is alive.
            let l = unsafe { self.shared.local(t) };
            // Nodes taken by a discarded last attempt are free too.
            l.free.iter().chain(l.taken.iter().copied())
        });
        // No leak check: dequeued nodes come back only at `open`.
        audit_free(&on_list, free, false)
    }

    fn deq_batch(&self) -> Deq<'_, P> {
        Deq {
            s: &self.shared,
            enq: &self.enq,
        }
    }
}

queue_handle! {
    /// A registered thread's access to a [`PWFQueue`]; dropping it frees the thread id.
    ///
    /// Enqueues and dequeues are numbered separately, as for
    /// [`PBQueueHandle`](super::PBQueueHandle).
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PWFQueue::new(4, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?;
    /// h.enqueue(2)?;
    /// assert_eq!(h.dequeue(), Some(1));
    /// assert_eq!((h.enqueue_seq(), h.dequeue_seq()), (2, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    PWFQueueHandle for PWFQueue, dequeue op 0
}

impl<P: Persist> PWFQueueHandle<'_, P> {
    /// Enqueues `value` (wait-free); returns once the enqueue is durable.
    ///
    /// # Errors
    ///
    /// [`Full`] with `value` if the thread whose attempt served this enqueue had no free
    /// node: each thread owns a chunk of `capacity` nodes, and nodes are reused only after
    /// [`open`](PWFQueue::open). A thread that only enqueues for itself can enqueue
    /// `capacity` values per `open`; an attempt serving other threads' enqueues spends its own
    /// nodes on them.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PWFQueue::new(1, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?;
    /// assert!(h.enqueue(2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enqueue(&mut self, value: u64) -> Result<(), Full> {
        self.enq(value).unwrap_or_else(|e| poisoned(e))
    }

    /// Dequeues the oldest value (`None` if the queue is empty); returns once durable.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PWFQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// assert_eq!(h.dequeue(), None);
    /// h.enqueue(4)?;
    /// assert_eq!(h.dequeue(), Some(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dequeue(&mut self) -> Option<u64> {
        self.deq().unwrap_or_else(|e| poisoned(e))
    }

    /// The number of values: enqueued minus dequeued, from two persisted snapshots (dequeuers'
    /// first); exact when no operation runs concurrently.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PWFQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(4)?;
    /// assert_eq!(h.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&mut self) -> usize {
        let q = self.queue;
        let (w, p) = (q.shared.store.words(), q.shared.store.persist());
        let d = q.deq.read(w, p).count;
        let e = q.enq.read(w, p).count;
        e.saturating_sub(d) as usize
    }

    /// Whether the queue is empty (a snapshot, see [`len`](Self::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PWFQueue::new(2, 1)?;
    /// assert!(q.register()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Recovers this thread's enqueue of `value` numbered `seq`, interrupted by a crash
    /// (Algorithm 3 `Recover`): whether it had taken effect, and its response.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PWFQueue, Recovered};
    /// let q = PWFQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?; // enqueue 1
    /// assert_eq!(h.recover_enqueue(1, 1), Recovered::Applied(Ok(())));
    /// assert_eq!(h.recover_enqueue(2, 2), Recovered::Reexecuted(Ok(())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_enqueue(&mut self, value: u64, seq: u64) -> Recovered<Result<(), Full>> {
        self.recover_enq(value, seq).unwrap_or_else(|e| poisoned(e))
    }

    /// Recovers this thread's dequeue numbered `seq` (see
    /// [`recover_enqueue`](Self::recover_enqueue)).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PWFQueue, Recovered};
    /// let q = PWFQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(7)?;
    /// assert_eq!(h.recover_dequeue(1), Recovered::Reexecuted(Some(7)));
    /// assert_eq!(h.recover_dequeue(1), Recovered::Applied(Some(7)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_dequeue(&mut self, seq: u64) -> Recovered<Option<u64>> {
        self.recover_deq(seq).unwrap_or_else(|e| poisoned(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pending link of an install is written by the next enqueue attempt that changes the
    /// state, and dequeuers read through it before it is written.
    #[test]
    fn dequeuers_read_through_the_pending_link() {
        let q = PWFQueue::new(4, 1).expect("valid");
        let s = &q.shared;
        let w = s.store.words();
        let mut st = q.enq.state_now(w);
        let mut rets = [Ret::default(); 2];
        Enq(s).apply(0, &mut st, &[(0, 5)], &mut rets[..1]);
        Enq(s).installed(0, &st);
        let first = st;
        assert_eq!(first.pending(), Some((u64::from(s.pool.nodes), 1)));
        assert_eq!(s.pool.next(w, s.pool.nodes - 1), 0, "linked too early");
        assert_eq!(s.next(&first, first.link_a), 1);
        Enq(s).apply(0, &mut st, &[(0, 6)], &mut rets[..1]);
        assert_eq!(
            s.pool.next(w, s.pool.nodes - 1),
            1,
            "pending link not performed"
        );
        assert_eq!(st.link_a, first.tail);
        assert_eq!(st.count, 2);
    }

    /// A discarded attempt's nodes go back to the thread's free list.
    #[test]
    fn discarded_attempts_return_their_nodes() {
        let q = PWFQueue::new(1, 1).expect("valid");
        let s = &q.shared;
        let mut st = q.enq.state_now(s.store.words());
        let mut r = [Ret::default(); 1];
        Enq(s).apply(0, &mut st.clone(), &[(0, 5)], &mut r);
        assert_eq!(unit_of(r[0]), Ok(()));
        Enq(s).apply(0, &mut st, &[(0, 6)], &mut r);
        assert_eq!(unit_of(r[0]), Ok(()), "the discarded attempt kept the node");
    }
}
