//! PBqueue (paper appendix A, Algorithms 5-7): a linked queue with a dummy head, driven by two
//! combining instances, one for enqueuers (state: `Tail`) and one for dequeuers (state:
//! `Head`), so enqueues run in parallel with dequeues.
//!
//! - An enqueue pass appends its nodes (`Tail->next := new`, Algorithm 5 lines 35-39) and writes
//!   back every node it created or linked (`toPersist`, lines 19, 23-24) before its record.
//! - After its record is durable and before it unlocks, it publishes `oldTail := Tail`
//!   (line 31), the last node whose link is durable. A dequeue pass never moves `Head` past
//!   `oldTail` (line 57): a node whose link might not survive a crash is never handed out.
//! - Recovery (Algorithm 7): `open` sets `oldTail` to the durable `Tail` and rebuilds the free
//!   nodes as every node off the durable list `Head ..= Tail`.
//!
//! Recycling (deviation from the paper, which gives each thread its own free list): nodes a
//! dequeue pass removed go, once that pass is durable, to one recycling ring shared by the two
//! instances. Exactly one dequeue combiner produces into it and one enqueue combiner consumes
//! from it at any time (each instance's lock serializes its side), so the ring is a
//! single-producer single-consumer queue of node numbers; removal order is allocation order, so
//! enqueue passes keep writing consecutive nodes. With one shared pool, `Full` means exactly
//! "`capacity` values are in the queue", which per-thread free lists cannot promise.

use core::fmt;

use crossbeam_utils::CachePadded;

use super::shared::{
    self, audit_free, open_header, queue_handle, structure_api, Built, Parts, Place, Seat,
};
use super::store::{Link, Pool, Store};
use super::{
    check_threads, poisoned, ret_unit, ret_value, unit_of, value_of, AuditError, Full, Options, Ret,
};
use crate::engine::pb::{Batch, Instance};
use crate::error::{CombBuildError, CombRegisterError};
use crate::layout::LINE_WORDS;
use crate::slots::Slots;
use crate::sync::{AtomicU64, Ordering, UnsafeCell};
use crate::{Poisoned, Recovered};
use pmem::{NoPersist, Persist, Region};

const MAGIC: u64 = pmem::kinds::PBQUEUE_TAG;
const KIND: &str = "PBQueue";

/// The enqueuers' instance: state `Tail`, request = the value.
type EnqInstance = Instance<Link, u64, Ret>;
/// The dequeuers' instance: state `Head`, request = `()`.
type DeqInstance = Instance<Link, (), Ret>;

/// Free node numbers handed from dequeue passes (producer) to enqueue passes (consumer).
///
/// `head` and `tail` count pops and pushes since creation; the ring holds `tail - head`
/// numbers at `slots[head % len ..]`. There are never more free nodes than nodes, and the ring
/// has a slot per node, so a push always finds room.
///
/// A slot holds `node + 1`; a slot still 0 holds the node its first lap stands for,
/// `slot index + 1`: a new queue starts with `tail = capacity` and nodes `1..=capacity` free
/// without writing a slot (its slots are reserved zeroed and untouched, issue 19). A slot is
/// read at most once per lap, after the push of that lap wrote it, except in the first lap of
/// [`Ring::hold_first_lap`], whose pushes are those implicit ones.
struct Ring {
    slots: Box<[AtomicU64]>,
    head: CachePadded<AtomicU64>,
    tail: CachePadded<AtomicU64>,
}

impl Ring {
    /// An empty ring of `len` slots.
    fn empty(len: usize) -> Result<Self, CombBuildError> {
        Ok(Self {
            slots: crate::words::reserve(len.max(1))?,
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
        })
    }

    /// Makes a ring fresh from [`empty`](Self::empty) hold nodes `1..len` (a new queue's free
    /// nodes) without writing a slot: see the type's docs. Single-threaded use.
    fn hold_first_lap(&self) {
        // Relaxed: not shared yet.
        self.tail
            .store(self.slots.len() as u64 - 1, Ordering::Relaxed);
    }

    /// The node slot `i` stands for (see the type's docs).
    #[inline]
    fn node_at(&self, i: usize) -> u32 {
        // Relaxed: ordered by the caller's Acquire load of `tail` (or single-threaded).
        match self.slots[i].load(Ordering::Relaxed) {
            0 => i as u32 + 1,
            v => (v - 1) as u32,
        }
    }

    /// Producer side (the dequeue lock holder, or a single-threaded owner).
    fn push(&self, node: u32) {
        // Relaxed: only the producer writes `tail`; producers hand over through the dequeue
        // lock (Acquire CAS / Release unlock).
        let t = self.tail.load(Ordering::Relaxed);
        // Acquire: pairs with the Release store of `head` in `pop`: the consumer's read of the
        // slot we may reuse happens before our write of it.
        let h = self.head.load(Ordering::Acquire);
        let len = self.slots.len() as u64;
        assert!(t - h < len, "invariant: more free nodes than nodes");
        // Relaxed: published by the Release store of `tail` below.
        self.slots[(t % len) as usize].store(u64::from(node) + 1, Ordering::Relaxed);
        // Release: pairs with the Acquire load of `tail` in `pop`, publishing the slot and
        // everything the producer did to the node before (it read its last value).
        self.tail.store(t + 1, Ordering::Release);
    }

    /// Consumer side (the enqueue lock holder).
    fn pop(&self) -> Option<u32> {
        // Relaxed: only the consumer writes `head`; consumers hand over through the enqueue
        // lock.
        let h = self.head.load(Ordering::Relaxed);
        // Acquire: pairs with the Release store of `tail` in `push`.
        let t = self.tail.load(Ordering::Acquire);
        if h == t {
            return None;
        }
        let len = self.slots.len() as u64;
        let node = self.node_at((h % len) as usize);
        // Release: pairs with the Acquire load of `head` in `push`.
        self.head.store(h + 1, Ordering::Release);
        Some(node)
    }

    /// The free nodes (single-threaded use).
    fn snapshot(&self) -> Vec<u32> {
        // Relaxed (both): called with `&mut` of the queue or before sharing it.
        let h = self.head.load(Ordering::Relaxed);
        let t = self.tail.load(Ordering::Relaxed);
        let len = self.slots.len() as u64;
        (h..t).map(|i| self.node_at((i % len) as usize)).collect()
    }
}

/// What both instances share: the words, the pool, `oldTail`, the recycling ring and the
/// per-instance pass buffers.
struct Shared<P: Persist> {
    store: Store<P>,
    pool: Pool,
    options: Options,
    /// Algorithm 5's `oldTail`: the last node whose link is durable (a link value).
    old_tail: CachePadded<AtomicU64>,
    ring: Ring,
    /// Nodes an enqueue pass wrote (`toPersist`); only the enqueue lock holder touches it.
    to_persist: UnsafeCell<Vec<u32>>,
    /// Nodes a dequeue pass removed; only the dequeue lock holder touches it.
    removed: UnsafeCell<Vec<u32>>,
}

struct Enq<'a, P: Persist>(&'a Shared<P>);
struct Deq<'a, P: Persist>(&'a Shared<P>);

impl<P: Persist> Batch for Enq<'_, P> {
    type State = Link;
    type Op = u64;
    type Ret = Ret;

    fn apply(&self, _me: usize, tail: &mut Link, reqs: &[(usize, u64)], rets: &mut [Ret]) {
        let s = self.0;
        let w = s.store.words();
        // SAFETY:
        // - `apply` runs on the enqueue lock holder, the only user of `to_persist`; the
        //   reference is dropped before returning.
        let to_persist = s.to_persist.with_mut(|v| unsafe { &mut *v });
        to_persist.clear();
        for (i, &(_, value)) in reqs.iter().enumerate() {
            let Some(node) = s.ring.pop() else {
                rets[i] = ret_unit(Err(Full(value)));
                continue;
            };
            let last = s
                .pool
                .node_of(*tail)
                .expect("invariant: Tail names a node of the pool");
            let persist = s.store.persist();
            s.pool.set(w, persist, node, value, 0); // lines 35-37
            s.pool.set_next(w, persist, last, u64::from(node) + 1); // line 38
            to_persist.push(last); // line 19
            to_persist.push(node);
            *tail = u64::from(node) + 1; // line 39
            rets[i] = ret_unit(Ok(())); // line 21
        }
        s.pool.persist_nodes(w, s.store.persist(), to_persist); // line 24
    }

    fn published(&self, _me: usize, tail: &Link) {
        // Line 31. Release: pairs with the Acquire load in `Deq::apply`: a dequeue pass that
        // sees this tail sees the node words written by this and earlier passes.
        self.0.old_tail.store(*tail, Ordering::Release);
    }
}

impl<P: Persist> Batch for Deq<'_, P> {
    type State = Link;
    type Op = ();
    type Ret = Ret;

    fn apply(&self, _me: usize, head: &mut Link, reqs: &[(usize, ())], rets: &mut [Ret]) {
        let s = self.0;
        let w = s.store.words();
        // SAFETY:
        // - `apply` runs on the dequeue lock holder, the only user of `removed` (besides
        //   `published`, on the same thread); dropped before returning.
        let removed = s.removed.with_mut(|v| unsafe { &mut *v });
        removed.clear();
        // Acquire: pairs with the Release in `Enq::published`.
        let mut old_tail = s.old_tail.load(Ordering::Acquire);
        for ret in rets.iter_mut().take(reqs.len()) {
            if *head == old_tail {
                // Line 57: maybe an enqueue pass made more durable since we looked.
                // Acquire: as above.
                old_tail = s.old_tail.load(Ordering::Acquire);
            }
            *ret = if *head != old_tail {
                // Lines 58, 70-72: the first node after the dummy becomes the dummy.
                let dummy = s
                    .pool
                    .node_of(*head)
                    .expect("invariant: Head names a node of the pool");
                let next = s.pool.next(w, dummy);
                let first = s
                    .pool
                    .node_of(next)
                    .expect("invariant: a node before oldTail has a durable successor");
                removed.push(dummy);
                *head = next;
                ret_value(Some(s.pool.value(w, first)))
            } else {
                ret_value(None) // line 59
            };
        }
    }

    fn published(&self, _me: usize, _head: &Link) {
        let s = self.0;
        // SAFETY:
        // - runs on the dequeue lock holder (the `apply` above returned its reference).
        let removed = s.removed.with_mut(|v| unsafe { &mut *v });
        if s.options.recycling {
            // The durable Head is past these nodes: nothing recovers them any more.
            for &n in removed.iter() {
                s.ring.push(n);
            }
        }
        removed.clear();
    }
}

/// A recoverable, blocking, linked FIFO queue of `u64` values with at most `capacity` values
/// (paper appendix A, PBqueue), persisted through `P`.
///
/// Threads [`register`](Self::register) for a [`PBQueueHandle`]. Enqueues and dequeues are
/// combined by separate instances and run in parallel. [`Options::elimination`] has no effect
/// on a queue.
///
/// # Examples
///
/// ```
/// use pcomb::structures::PBQueue;
///
/// let queue = PBQueue::new(100, 2)?;
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
///
/// A handle cannot outlive its queue:
///
/// ```compile_fail
/// use pcomb::structures::PBQueue;
/// let h = {
///     let q = PBQueue::new(1, 1).unwrap();
///     q.register().unwrap()
/// };
/// ```
pub struct PBQueue<P: Persist = NoPersist> {
    shared: Shared<P>,
    enq: EnqInstance,
    deq: DeqInstance,
    slots: Slots,
    capacity: u32,
}

// SAFETY:
// - `shared.to_persist` is only accessed by the enqueue lock holder, `shared.removed` by the
//   dequeue lock holder, or either through `&mut self`;
// - the ring is used by one producer and one consumer at a time, as its docs require;
// - everything else is `Send + Sync`.
unsafe impl<P: Persist> Send for PBQueue<P> {}
// SAFETY: as for `Send`.
unsafe impl<P: Persist> Sync for PBQueue<P> {}

impl<P: Persist> fmt::Debug for PBQueue<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBQueue")
            .field("capacity", &self.capacity)
            .field("options", &self.shared.options)
            .field("enq", &self.enq)
            .field("deq", &self.deq)
            .finish_non_exhaustive()
    }
}

structure_api!(
    PBQueue,
    PBQueueHandle,
    "queue",
    "up to `capacity` values",
    store shared.store,
    nodes: per_thread false, extra 1, instances EnqInstance, DeqInstance
);

impl<P: Persist> PBQueue<P> {
    /// The dequeuers' batch (the queue's handles go through it).
    fn deq_batch(&self) -> Deq<'_, P> {
        Deq(&self.shared)
    }

    fn parts(&self) -> Parts<'_> {
        Parts {
            slots: &self.slots,
            options: self.shared.options,
            capacity: self.capacity,
            threads: self.enq.threads(),
        }
    }

    fn into_store(self) -> Store<P> {
        self.shared.store
    }

    fn create_in(store: Store<P>, capacity: u32, max_threads: usize, o: Options) -> Built<Self> {
        let q = Self::assemble(store, capacity, max_threads, o)?;
        let w = q.shared.store.words();
        // Node 0 is the first dummy (Figure 9's DUMMY): Tail = Head = &DUMMY.
        q.shared.pool.set(w, q.shared.store.persist(), 0, 0, 0);
        q.enq.init(w, &1);
        q.deq.init(w, &1);
        // The block `build` allocated: `total_words` words.
        let total = q.shared.store.words().len();
        let head = shared::header(MAGIC, max_threads, capacity, total, o);
        q.shared.store.init_structure(&head);
        // Relaxed: not shared yet.
        q.shared.old_tail.store(1, Ordering::Relaxed);
        // Nodes 1..=capacity are free (node 0 is the dummy).
        q.shared.ring.hold_first_lap();
        Ok(q)
    }

    fn assemble(store: Store<P>, capacity: u32, max_threads: usize, o: Options) -> Built<Self> {
        let enq_at = LINE_WORDS;
        let deq_at = enq_at + EnqInstance::words(max_threads);
        let pool_at = deq_at + DeqInstance::words(max_threads);
        Ok(Self {
            shared: Shared {
                store,
                pool: Pool {
                    at: pool_at,
                    nodes: capacity + 1,
                },
                options: o,
                old_tail: CachePadded::new(AtomicU64::new(0)),
                ring: Ring::empty(capacity as usize + 1)?,
                to_persist: UnsafeCell::new(Vec::new()),
                removed: UnsafeCell::new(Vec::new()),
            },
            enq: EnqInstance::new(enq_at, max_threads),
            deq: DeqInstance::new(deq_at, max_threads),
            slots: Slots::new(max_threads),
            capacity,
        })
    }

    /// Reopens the queue at `region`'s root after a restart or crash (Algorithm 7): the values
    /// are the durable list from `Head` to `Tail`, `oldTail` is the durable `Tail`, every other
    /// node is free, and each thread's interrupted operation can then be recovered.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::LayoutMismatch`] if the root is missing, is not a `PBQueue`, its header is
    /// corrupt, or its persisted list does not lead from `Head` to `Tail`;
    /// [`CombBuildError::Region`] if the region refuses an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem::Region, structures::PBQueue};
    /// assert!(PBQueue::open(Region::anonymous(1, 1 << 16)?).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(region: Region<P>) -> Result<Self, CombBuildError> {
        let o = open_header(region, MAGIC, KIND, Self::total_words)?;
        let mismatch = |detail| CombBuildError::LayoutMismatch { kind: KIND, detail };
        let (capacity, q) = (
            o.capacity,
            Self::assemble(o.store, o.capacity, o.threads, o.options)?,
        );
        let w = q.shared.store.words();
        if !q.enq.valid(w) || !q.deq.valid(w) {
            return Err(mismatch("a Deactivate flag is not 0 or 1 (corrupt)"));
        }
        let (on_list, tail) = q
            .walk()
            .map_err(|_| mismatch("the persisted list does not lead from Head to Tail"))?;
        for n in (0..=capacity).filter(|&n| !on_list[n as usize]) {
            q.shared.ring.push(n);
        }
        // Algorithm 7 lines 73-74. Relaxed: not shared yet.
        q.shared.old_tail.store(tail, Ordering::Relaxed);
        Ok(q)
    }

    /// Walks the durable list from `Head` to `Tail`: which nodes are on it, and `Tail`.
    fn walk(&self) -> Result<(Vec<bool>, Link), String> {
        let w = self.shared.store.words();
        let pool = &self.shared.pool;
        let tail = self.enq.state_now(w);
        let mut link = self.deq.state_now(w);
        let mut on_list = vec![false; pool.nodes as usize];
        loop {
            let node = pool
                .node_of(link)
                .ok_or_else(|| format!("link {link} out of the pool"))?;
            if std::mem::replace(&mut on_list[node as usize], true) {
                return Err(format!("node {node} is on the list twice (a cycle)"));
            }
            if link == tail {
                return Ok((on_list, tail));
            }
            link = pool.next(w, node);
        }
    }

    /// Checks the structure (no handle may be alive): the list leads from `Head` to `Tail`,
    /// `oldTail` is on it, the free nodes are distinct and off the list, and (with recycling
    /// on) every node is on the list or free. For tests and for checking a recovered queue.
    ///
    /// # Errors
    ///
    /// [`AuditError`] describing the first violation found.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut q = pcomb::structures::PBQueue::new(4, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?;
    /// h.dequeue();
    /// drop(h);
    /// q.audit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn audit(&mut self) -> Result<(), AuditError> {
        let (on_list, tail) = self.walk().map_err(AuditError)?;
        // Relaxed: `&mut self`, no other thread.
        let old_tail = self.shared.old_tail.load(Ordering::Relaxed);
        if old_tail != tail {
            return Err(AuditError(format!(
                "oldTail {old_tail} is not the durable Tail {tail} of a quiescent queue"
            )));
        }
        let free = self.shared.ring.snapshot();
        audit_free(&on_list, free, self.shared.options.recycling)
    }
}

queue_handle! {
    /// A registered thread's access to a [`PBQueue`]; dropping it frees the thread id.
    ///
    /// Enqueues and dequeues are numbered separately (they go to different instances): the next
    /// enqueue is number [`enqueue_seq`](Self::enqueue_seq)` + 1`, the next dequeue
    /// [`dequeue_seq`](Self::dequeue_seq)` + 1`. For detectability, persist the operation and its
    /// number before each call; after a crash pass them to
    /// [`recover_enqueue`](Self::recover_enqueue) / [`recover_dequeue`](Self::recover_dequeue).
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PBQueue::new(4, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?;
    /// h.enqueue(2)?;
    /// assert_eq!(h.dequeue(), Some(1));
    /// assert_eq!((h.enqueue_seq(), h.dequeue_seq()), (2, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    PBQueueHandle for PBQueue, dequeue op ()
}

impl<P: Persist> PBQueueHandle<'_, P> {
    /// Enqueues `value`; returns once the enqueue is durable (Algorithm 5 `PBqueueEnq`).
    ///
    /// # Errors
    ///
    /// [`Full`] with `value` if the queue holds `capacity` values (with recycling off: if every
    /// node was handed out since creation or the last `open`).
    ///
    /// # Panics
    ///
    /// If the queue is poisoned (a combining pass panicked: an internal bug).
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PBQueue::new(1, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?;
    /// assert!(h.enqueue(2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enqueue(&mut self, value: u64) -> Result<(), Full> {
        self.try_enqueue(value).unwrap_or_else(|e| poisoned(e))
    }

    /// Dequeues the oldest value (`None` if the queue is empty, or holds only values whose
    /// enqueue is not yet durable); returns once durable (Algorithm 6 `PBqueueDeq`).
    ///
    /// # Panics
    ///
    /// If the queue is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PBQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// assert_eq!(h.dequeue(), None);
    /// h.enqueue(4)?;
    /// assert_eq!(h.dequeue(), Some(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dequeue(&mut self) -> Option<u64> {
        self.try_dequeue().unwrap_or_else(|e| poisoned(e))
    }

    /// Recovers this thread's enqueue of `value` numbered `seq`, interrupted by a crash
    /// (Algorithm 7): whether it had taken effect, and its response.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBQueue, Recovered};
    /// let q = PBQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(1)?; // enqueue 1
    /// assert_eq!(h.recover_enqueue(1, 1), Recovered::Applied(Ok(())));
    /// assert_eq!(h.recover_enqueue(2, 2), Recovered::Reexecuted(Ok(())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_enqueue(&mut self, value: u64, seq: u64) -> Recovered<Result<(), Full>> {
        self.try_recover_enqueue(value, seq)
            .unwrap_or_else(|e| poisoned(e))
    }

    /// Recovers this thread's dequeue numbered `seq` (see
    /// [`recover_enqueue`](Self::recover_enqueue)).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBQueue, Recovered};
    /// let q = PBQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// h.enqueue(7)?;
    /// assert_eq!(h.recover_dequeue(1), Recovered::Reexecuted(Some(7)));
    /// assert_eq!(h.recover_dequeue(1), Recovered::Applied(Some(7)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_dequeue(&mut self, seq: u64) -> Recovered<Option<u64>> {
        self.try_recover_dequeue(seq)
            .unwrap_or_else(|e| poisoned(e))
    }

    /// [`enqueue`](Self::enqueue) that returns nr-core's [`Poisoned`] instead of panicking when
    /// the queue is poisoned (as
    /// [`PBCombHandle::try_execute_mut`](crate::PBCombHandle::try_execute_mut)).
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked; otherwise the enqueue's own answer.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PBQueue::new(1, 1)?;
    /// assert_eq!(q.register()?.try_enqueue(1), Ok(Ok(())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_enqueue(&mut self, value: u64) -> Result<Result<(), Full>, Poisoned> {
        self.enq(value)
    }

    /// [`dequeue`](Self::dequeue) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let q = pcomb::structures::PBQueue::new(1, 1)?;
    /// assert_eq!(q.register()?.try_dequeue(), Ok(None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_dequeue(&mut self) -> Result<Option<u64>, Poisoned> {
        self.deq()
    }

    /// [`recover_enqueue`](Self::recover_enqueue) that returns [`Poisoned`] instead of
    /// panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBQueue, Recovered};
    /// let q = PBQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// assert_eq!(h.try_recover_enqueue(5, 1), Ok(Recovered::Reexecuted(Ok(()))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover_enqueue(
        &mut self,
        value: u64,
        seq: u64,
    ) -> Result<Recovered<Result<(), Full>>, Poisoned> {
        self.recover_enq(value, seq)
    }

    /// [`recover_dequeue`](Self::recover_dequeue) that returns [`Poisoned`] instead of
    /// panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBQueue, Recovered};
    /// let q = PBQueue::new(2, 1)?;
    /// let mut h = q.register()?;
    /// assert_eq!(h.try_recover_dequeue(1), Ok(Recovered::Reexecuted(None)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover_dequeue(&mut self, seq: u64) -> Result<Recovered<Option<u64>>, Poisoned> {
        self.recover_deq(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dequeue pass never takes a node that an enqueue pass linked but has not yet made
    /// durable (Algorithm 6 line 57): until `Enq::published`, the dequeuers see an empty queue.
    #[test]
    fn dequeuers_stop_at_old_tail() {
        let q = PBQueue::new(4, 2).expect("valid");
        let s = &q.shared;
        let mut tail = 1;
        let mut rets = [Ret::default(); 2];
        Enq(s).apply(0, &mut tail, &[(0, 5), (1, 6)], &mut rets);
        let mut head = 1;
        let mut got = [Ret::default(); 1];
        Deq(s).apply(1, &mut head, &[(1, ())], &mut got);
        assert_eq!(value_of(got[0]), None, "dequeued a node not yet durable");
        Deq(s).published(1, &head);
        Enq(s).published(0, &tail);
        Deq(s).apply(1, &mut head, &[(1, ())], &mut got);
        assert_eq!(value_of(got[0]), Some(5));
    }

    /// Nodes a dequeue pass removed are recycled only by `published` (once durable).
    #[test]
    fn removed_nodes_are_recycled_after_the_pass() {
        let q = PBQueue::new(1, 1).expect("valid");
        let s = &q.shared;
        let (mut tail, mut head) = (1, 1);
        let mut r = [Ret::default(); 1];
        Enq(s).apply(0, &mut tail, &[(0, 5)], &mut r);
        Enq(s).published(0, &tail);
        Deq(s).apply(0, &mut head, &[(0, ())], &mut r);
        assert_eq!(value_of(r[0]), Some(5));
        Enq(s).apply(0, &mut tail, &[(0, 6)], &mut r);
        assert_eq!(
            unit_of(r[0]),
            Err(Full(6)),
            "reused a node before its removal was durable"
        );
        Deq(s).published(0, &head);
        Enq(s).apply(0, &mut tail, &[(0, 6)], &mut r);
        assert_eq!(unit_of(r[0]), Ok(()));
    }
}
