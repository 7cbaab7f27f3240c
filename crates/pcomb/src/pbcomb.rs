//! PBcomb: blocking recoverable combining (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms
//! 1 and 2).
//!
//! Volatile (DRAM) part: the `Request` array (one [`Request`] per thread), `Lock` and `LockVal`.
//! Persistent part ([`Memory`]): `MIndex` and the two `StateRec` records `MemState[0..1]`.
//!
//! Every *write* operation is a request served by a combiner. A *read* operation does not
//! announce anything: it reads the current record optimistically, validated by `Lock` (a
//! seqlock-style check: the record indexed by `MIndex` is rewritten only by a combiner, and a
//! combiner holds `Lock` odd), and falls back to taking the lock after a few failed attempts.

use core::fmt;
use core::marker::PhantomData;

use crossbeam_utils::CachePadded;
use nr_core::{Dispatch, Poisoned};

use crate::config::MAX_THREADS;
use crate::error::{BuildError, RegisterError};
use crate::fingerprint::type_fingerprint;
use crate::layout::{header, Kind, Record, RecordLayout};
use crate::memory::Memory;
use crate::recovered::Recovered;
use crate::slots::Slots;
use crate::sync::{panicking, AtomicBool, AtomicU64, Ordering, UnsafeCell};
use crate::wait::Waiter;
use pmem::{NoPersist, Persist, Pod, Region};

/// Optimistic read attempts before a read takes the lock.
const READ_ATTEMPTS: usize = 4;

/// `ctrl` bit 0: the `activate` bit of Algorithm 1's `RequestRec`.
const ACTIVATE: u64 = 1;
/// `ctrl` bit 1: the `valid` bit (0 until the thread announces after a (re)start).
const VALID: u64 = 2;

/// One `RequestRec` (Algorithm 1): the operation (`func`, `Args`) and a control word.
///
/// | `ctrl` bit | meaning |
/// |---|---|
/// | 0 | `activate`: differs from `Deactivate[p]` of the current record while the request is pending |
/// | 1 | `valid`: the request was announced since this process started (0 after a restart) |
struct Request<Op> {
    ctrl: AtomicU64,
    /// Written only by the owner while its request is not active (equal activate/deactivate
    /// bits); read only by the combiner, under `Lock`, while the request is active.
    op: UnsafeCell<Option<Op>>,
}

/// A blocking, recoverable combining object over the sequential structure `D`, persisted
/// through `P` (paper Algorithms 1-2).
///
/// Threads [`register`](Self::register) for a [`PBCombHandle`] (at most `max_threads` at a
/// time) and call [`execute_mut`](PBCombHandle::execute_mut) /
/// [`execute`](PBCombHandle::execute) on it. With `P = NoPersist` ([`new`](Self::new)) every
/// persistence instruction is a no-op and this is a plain (fast) combining object.
///
/// `D` and its responses are [`Pod`]: they live in the two `StateRec` records, which a
/// persistent object keeps in a region and recovers after a crash.
///
/// # Poisoning
///
/// A combiner works on a copy of the state, so a panic in `dispatch_mut` leaves the current
/// state intact; the combiner releases the lock and marks the object *poisoned*: every later
/// `try_*` call of a handle returns nr-core's [`Poisoned`] error, and the plain calls
/// (`execute_mut`, `execute`, `recover`) panic (like `Mutex::lock().unwrap()`). The panicking
/// operation is never applied.
///
/// # Examples
///
/// ```
/// use pcomb::objects::Counter;
/// use pcomb::PBComb;
///
/// let counter = PBComb::new(Counter::default(), 4)?;
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             let mut h = counter.register().expect("4 slots for 4 threads");
///             for _ in 0..100 {
///                 h.execute_mut(1);
///             }
///         });
///     }
/// });
/// assert_eq!(counter.register()?.execute(()), 400);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A handle borrows the object, so it cannot outlive it:
///
/// ```compile_fail
/// use pcomb::{objects::Counter, PBComb};
/// let h = {
///     let c = PBComb::new(Counter::default(), 1).unwrap();
///     c.register().unwrap()
/// };
/// ```
pub struct PBComb<D, P = NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    mem: Memory<P>,
    layout: RecordLayout,
    /// Odd: taken by the combiner whose value it is; even: free (Algorithm 1 `Lock`).
    lock: CachePadded<AtomicU64>,
    /// The `Lock` value of the last combiner that reached line 24.
    lock_val: CachePadded<AtomicU64>,
    requests: Box<[CachePadded<Request<D::WriteOperation>>]>,
    slots: Slots,
    poisoned: AtomicBool,
    _state: PhantomData<fn() -> D>,
}

// SAFETY:
// - the shared `UnsafeCell<Option<Op>>` slots hold `D::WriteOperation: Send + Sync` values that
//   one thread writes and another clones, under the protocol described on `Request::op`;
// - `D` and `D::Response` are `Pod` (`Send + Sync`) and are only stored in atomic words;
// - every other field is `Send + Sync` (atomics, `P: Persist: Send + Sync`).
unsafe impl<D, P> Send for PBComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
}

// SAFETY: as for `Send`: all shared mutation goes through atomics, and the request cells follow
// the owner-writes-while-inactive / combiner-reads-while-active protocol.
unsafe impl<D, P> Sync for PBComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
}

impl<D, P> fmt::Debug for PBComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBComb")
            .field("max_threads", &self.layout.threads)
            // Relaxed: a diagnostic snapshot.
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<D> PBComb<D, NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
{
    /// A volatile object (no persistence cost) holding `init`, for up to `max_threads`
    /// concurrently registered threads.
    ///
    /// # Errors
    ///
    /// [`BuildError::InvalidMaxThreads`] if `max_threads` is 0 or above
    /// [`MAX_THREADS`](crate::MAX_THREADS).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::AtomicFloat, PBComb};
    ///
    /// let f = PBComb::new(AtomicFloat::new(1.0), 2)?;
    /// let mut h = f.register()?;
    /// assert_eq!(f64::from_bits(h.execute_mut(2.0f64.to_bits())), 1.0);
    /// assert_eq!(f64::from_bits(h.execute(())), 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(init: D, max_threads: usize) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let mem = Memory::heap(layout.total_words(2), NoPersist);
        Ok(Self::create_in(mem, layout, &init, type_fingerprint::<D>()))
    }
}

impl<D, P> PBComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    /// A heap-backed object like [`new`](PBComb::new), but with every persistence instruction
    /// sent to `persist`: no durability (the words are not in a region), but the exact
    /// pwb/pfence/psync sequence of the persistent protocol, e.g. to count or cost it.
    ///
    /// # Errors
    ///
    /// [`BuildError::InvalidMaxThreads`] for a bad `max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem, PBComb};
    ///
    /// let c = PBComb::with_persist(Counter::default(), 1, pmem::Hardware::new())?;
    /// pmem::reset_stats();
    /// c.register()?.execute_mut(1);
    /// assert!(pmem::stats().psyncs >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_persist(init: D, max_threads: usize, persist: P) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let mem = Memory::heap(layout.total_words(2), persist);
        Ok(Self::create_in(mem, layout, &init, type_fingerprint::<D>()))
    }

    fn layout_for(max_threads: usize) -> Result<RecordLayout, BuildError> {
        if max_threads == 0 || max_threads > MAX_THREADS {
            return Err(BuildError::InvalidMaxThreads {
                requested: max_threads,
                limit: MAX_THREADS,
            });
        }
        Ok(RecordLayout::new::<D, D::Response>(max_threads, false))
    }

    fn sizes() -> [usize; 3] {
        [
            core::mem::size_of::<D>(),
            core::mem::size_of::<D::Response>(),
            0,
        ]
    }

    /// Initializes `mem` (zeroed) as a fresh object holding `init` and persists it.
    fn create_in(mem: Memory<P>, layout: RecordLayout, init: &D, type_id: u64) -> Self {
        // MemState[0] := <init, <0..>, <0..>>; MIndex := 0 (Algorithm 1, initial values); the
        // header write persists everything, records included.
        Record::<D, D::Response>::at(mem.words(), &layout, 0).set_state(init);
        mem.init_header(Kind::PBComb, &layout, Self::sizes(), type_id);
        Self::with_memory(mem, layout)
    }

    /// The object over already-initialized memory, with fresh volatile variables (the state a
    /// restarted process finds: `Request` zeroed, so every `valid` bit is 0).
    fn with_memory(mem: Memory<P>, layout: RecordLayout) -> Self {
        let n = layout.threads;
        Self {
            mem,
            layout,
            lock: CachePadded::new(AtomicU64::new(0)),
            lock_val: CachePadded::new(AtomicU64::new(0)),
            requests: (0..n)
                .map(|_| {
                    CachePadded::new(Request {
                        ctrl: AtomicU64::new(0),
                        op: UnsafeCell::new(None),
                    })
                })
                .collect(),
            slots: Slots::new(n),
            poisoned: AtomicBool::new(false),
            _state: PhantomData,
        }
    }

    /// A persistent object holding `init`, allocated in `region` (which becomes its owner)
    /// and recorded as the region's root, for up to `max_threads` registered threads.
    /// Everything is persisted before this returns.
    ///
    /// # Errors
    ///
    /// [`BuildError::InvalidMaxThreads`] for a bad `max_threads`,
    /// [`BuildError::RegionTooSmall`] if the region has no room, [`BuildError::Region`] if the
    /// region refuses the allocation or the root.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb};
    ///
    /// let region = Region::anonymous(7, 1 << 16)?;
    /// let c = PBComb::create(region, Counter::new(1), 2)?;
    /// assert_eq!(c.register()?.execute_mut(1), 1);
    /// // Reopen the same memory, as recovery does after a crash.
    /// let c = PBComb::<Counter, _>::open(c.into_region().expect("created in a region"))?;
    /// assert_eq!(c.register()?.execute(()), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(region: Region<P>, init: D, max_threads: usize) -> Result<Self, BuildError> {
        Self::create_with_type_id(region, init, max_threads, type_fingerprint::<D>())
    }

    /// [`create`](Self::create) with the type fingerprint `type_id` chosen by the caller
    /// instead of [`type_fingerprint::<D>()`](crate::type_fingerprint) (which changes when `D`
    /// is renamed or moved); the object then opens only with
    /// [`open_with_type_id`](Self::open_with_type_id) and the same id.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb};
    ///
    /// const MY_COUNTER_V1: u64 = 0xC0_0001;
    /// let c = PBComb::create_with_type_id(Region::anonymous(7, 1 << 16)?, Counter::new(1), 2, MY_COUNTER_V1)?;
    /// let region = c.into_region().expect("in a region");
    /// let c = PBComb::<Counter, _>::open_with_type_id(region, MY_COUNTER_V1)?;
    /// assert_eq!(c.register()?.execute(()), 1);
    /// let region = c.into_region().expect("in a region");
    /// assert!(PBComb::<Counter, _>::open(region).is_err()); // the default fingerprint differs
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_with_type_id(
        region: Region<P>,
        init: D,
        max_threads: usize,
        type_id: u64,
    ) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let (mem, off) = Memory::allocate(region, layout.total_words(2))?;
        let obj = Self::create_in(mem, layout, &init, type_id);
        obj.mem.publish(off)?;
        Ok(obj)
    }

    /// Reopens the object at `region`'s root after a restart or crash: the state is the one in
    /// the persisted record indexed by the persisted `MIndex`, and every
    /// thread's pending operation can then be [`recover`]ed.
    ///
    /// [`recover`]: PBCombHandle::recover
    ///
    /// # Errors
    ///
    /// [`BuildError::LayoutMismatch`] if the root is missing or is not a `PBComb` of these
    /// types (or its header is corrupt), [`BuildError::Region`] if the region refuses an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::{AtomicFloat, Counter}, pmem::Region, BuildError, PBComb};
    ///
    /// let region = Region::anonymous(7, 1 << 16)?;
    /// let c = PBComb::create(region, Counter::default(), 2)?;
    /// let region = c.into_region().expect("created in a region");
    /// // A region without an object does not open.
    /// let err = PBComb::<AtomicFloat, _>::open(Region::anonymous(7, 1 << 16)?).unwrap_err();
    /// assert!(matches!(err, BuildError::LayoutMismatch { .. }));
    /// assert!(PBComb::<Counter, _>::open(region).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(region: Region<P>) -> Result<Self, BuildError> {
        Self::open_with_type_id(region, type_fingerprint::<D>())
    }

    /// [`open`](Self::open) for an object created by
    /// [`create_with_type_id`](Self::create_with_type_id) with `type_id`.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open); [`BuildError::LayoutMismatch`] when the object was created
    /// with another type id.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb};
    /// let c = PBComb::create_with_type_id(Region::anonymous(7, 1 << 16)?, Counter::new(1), 1, 42)?;
    /// let region = c.into_region().expect("in a region");
    /// assert!(PBComb::<Counter, _>::open_with_type_id(region, 42).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_type_id(region: Region<P>, type_id: u64) -> Result<Self, BuildError> {
        let (mem, head) = Memory::open(region, "PBComb")?;
        let layout = Self::layout_for(head[header::THREADS] as usize).map_err(|_| {
            BuildError::LayoutMismatch {
                kind: "PBComb",
                detail: "bad max_threads in the header",
            }
        })?;
        mem.check_header(Kind::PBComb, &layout, Self::sizes(), type_id)?;
        let obj = Self::with_memory(mem, layout);
        if !obj.current().flags_valid(false) {
            return Err(BuildError::LayoutMismatch {
                kind: "PBComb",
                detail: "a Deactivate flag of the current record is not 0 or 1 (corrupt)",
            });
        }
        Ok(obj)
    }

    /// Gives back the region of a persistent object (`None` for a volatile one), e.g. to
    /// [`open`](Self::open) it again.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// assert!(PBComb::new(Counter::default(), 1)?.into_region().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_region(self) -> Option<Region<P>> {
        self.mem.into_region()
    }

    /// The `max_threads` fixed at construction.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// assert_eq!(PBComb::new(Counter::default(), 3)?.max_threads(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_threads(&self) -> usize {
        self.layout.threads
    }

    /// Registers the calling thread: claims the lowest free thread id.
    ///
    /// # Errors
    ///
    /// [`RegisterError::TooManyThreads`] if `max_threads` handles are alive.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::default(), 2)?;
    /// let a = c.register()?;
    /// let b = c.register()?;
    /// assert_eq!((a.id(), b.id()), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self) -> Result<PBCombHandle<'_, D, P>, RegisterError> {
        let id = self.slots.claim_any()?;
        Ok(self.handle(id))
    }

    /// Registers as thread `id`: after a crash, each thread reclaims its old id to
    /// [`recover`](PBCombHandle::recover) its pending operation.
    ///
    /// # Errors
    ///
    /// [`RegisterError::OutOfRange`] if `id >= max_threads`, [`RegisterError::InUse`] if `id`
    /// has a live handle.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb, RegisterError};
    /// let c = PBComb::new(Counter::default(), 2)?;
    /// let h = c.register_as(1)?;
    /// assert_eq!(h.id(), 1);
    /// assert_eq!(c.register_as(1).unwrap_err(), RegisterError::InUse { id: 1 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_as(&self, id: usize) -> Result<PBCombHandle<'_, D, P>, RegisterError> {
        self.slots.claim(id)?;
        Ok(self.handle(id))
    }

    /// A handle for the claimed slot `id`, its `activate` bit seeded from the current record so
    /// that the next announcement flips it (after a restart `Request` is zeroed but
    /// `Deactivate[id]` is whatever was persisted).
    fn handle(&self, id: usize) -> PBCombHandle<'_, D, P> {
        let act = u64::from(self.current().deact(id));
        // Release: pairs with the combiner's Acquire load of `ctrl`; valid = 0 until the first
        // announcement.
        self.requests[id].ctrl.store(act, Ordering::Release);
        PBCombHandle {
            obj: self,
            id,
            seq: act,
        }
    }

    /// The record `MemState[MIndex]`.
    #[inline]
    fn current(&self) -> Record<'_, D, D::Response> {
        // Acquire: pairs with the Release store of MIndex on line 25 (`combine`), so the record
        // contents written before it are visible.
        let mi = self.mem.index_word().load(Ordering::Acquire) as usize;
        Record::at(self.mem.words(), &self.layout, mi & 1)
    }

    #[inline]
    fn check_poison(&self) -> Result<(), Poisoned> {
        // Acquire: pairs with the Release in `Unlock::drop`.
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Poisoned);
        }
        Ok(())
    }

    /// Line 1 / line 3: `Request[p] := <func, Args, act, 1>`.
    fn announce(&self, p: usize, op: D::WriteOperation, act: u64) {
        let req = &self.requests[p];
        // SAFETY:
        // - only thread `p` (the owner of the live handle for slot `p`) writes this cell;
        // - `p`'s previous request is not active (its bits are equal in the current record,
        //   or `valid` is 0), so no combiner reads the cell now: a combiner reads it only after
        //   loading a `ctrl` whose activate bit differs from its record's `Deactivate[p]`, and
        //   the store below is what makes them differ.
        req.op.with_mut(|cell| unsafe { *cell = Some(op) });
        // Release: pairs with the combiner's Acquire load of `ctrl` (line 17), which then sees
        // the operation written above.
        req.ctrl.store(act | VALID, Ordering::Release);
    }

    /// Algorithm 2 `PerformRequest` for thread `p` whose pending request has activate bit
    /// `act`.
    fn perform(&self, p: usize, act: u8) -> Result<D::Response, Poisoned> {
        loop {
            self.check_poison()?;
            // Line 6. Acquire: pairs with the Release of `Lock` on line 28.
            let mut lval = self.lock.load(Ordering::Acquire);
            if lval % 2 == 0 {
                // Line 8. Acquire: pairs with the previous combiner's Release on line 28.
                if self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    let (_, ret) = self.combine(lval + 1, Some(p));
                    return Ok(ret.expect("invariant: combine(Some(p)) returns p's response"));
                }
                lval += 1; // line 9
            }
            // Line 10: wait until the combiner holding `lval` releases.
            self.wait_while_lock_is(lval);
            self.check_poison()?;
            // Line 11.
            if self.current().deact(p) == act {
                // Line 12: if a later combiner has already reached line 24 (set `LockVal` and
                // maybe flipped `MIndex` without persisting it yet), wait until it has released.
                // The paper waits for `lval + 2`; we wait for the combiner whose `LockVal` we
                // read, which is that one or a later one, so the record we return from is
                // persisted in every interleaving.
                // Acquire: pairs with the Release of `LockVal` on line 24.
                let lv = self.lock_val.load(Ordering::Acquire);
                if lv != lval {
                    self.wait_while_lock_is(lv);
                }
                return Ok(self.current().ret(p)); // line 13
            }
        }
    }

    /// Waits until `Lock != value` (spin, then yield).
    fn wait_while_lock_is(&self, value: u64) {
        let mut waiter = Waiter::default();
        // Acquire: pairs with the Release of `Lock` on line 28.
        while self.lock.load(Ordering::Acquire) == value {
            waiter.snooze();
        }
    }

    /// Lines 14-28, run by the combiner holding `Lock == lval` (odd). Returns the new state and,
    /// for `Some(p)`, `ReturnVal[p]` of the new record.
    fn combine(&self, lval: u64, own: Option<usize>) -> (D, Option<D::Response>) {
        let unlock = Unlock { obj: self, lval };
        let words = self.mem.words();
        let persist = self.mem.persist();
        // Relaxed: we hold the lock; our Acquire CAS on `Lock` pairs with the previous
        // combiner's Release on line 28, which follows its MIndex store.
        let mi = self.mem.index_word().load(Ordering::Relaxed) as usize & 1;
        let ind = 1 - mi; // line 14
        let cur = Record::<D, D::Response>::at(words, &self.layout, mi);
        let new = Record::<D, D::Response>::at(words, &self.layout, ind);
        new.copy_from(&cur); // line 15
        let mut st = new.state();
        for (q, req) in self.requests.iter().enumerate() {
            // Acquire: pairs with the Release in `announce`.
            let ctrl = req.ctrl.load(Ordering::Acquire);
            let act = (ctrl & ACTIVATE) as u8;
            // Line 17: q has a valid request that is not yet applied.
            if ctrl & VALID != 0 && act != new.deact(q) {
                // SAFETY:
                // - the request is active (`act != Deactivate[q]` in the current state), so its
                //   owner does not write the cell until a record with equal bits is current,
                //   which only this combiner (holding `Lock`) can install;
                // - no other thread reads it: only the lock holder reads request cells.
                let op = req.op.with(|cell| unsafe { (*cell).clone() });
                let op = op.expect("invariant: an active, valid request has an operation");
                let ret = st.dispatch_mut(op); // lines 18-19
                new.set_ret(q, &ret); // line 20
                new.set_deact(q, act); // line 21
            }
        }
        new.set_state(&st);
        let (addr, len) = new.span();
        // SAFETY:
        // - `span` is the record's own bytes, inside the region's mapping, which lives as long
        //   as `self`.
        unsafe { persist.pwb(addr, len) }; // line 22
        persist.pfence(); // line 23
                          // Line 24. Release: pairs with the Acquire load in `perform` (line 12), ordered before
                          // the MIndex store below.
        self.lock_val.store(lval, Ordering::Release);
        // Line 25. Release: pairs with the Acquire in `current`.
        self.mem.index_word().store(ind as u64, Ordering::Release);
        self.mem.pwb_index(); // line 26
        persist.psync(); // line 27
        let ret = own.map(|p| new.ret(p)); // line 29 (read before the unlock; same value)
        drop(unlock); // line 28
        (st, ret)
    }

    /// Takes the lock (waiting for it) for a read that could not validate optimistically.
    #[cold]
    fn read_locked(&self) -> Result<D, Poisoned> {
        loop {
            self.check_poison()?;
            // Acquire: pairs with the Release of `Lock` on line 28.
            let lval = self.lock.load(Ordering::Acquire);
            if lval % 2 == 0
                && self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok(self.combine(lval + 1, None).0);
            }
            self.wait_while_lock_is(lval | 1);
        }
    }

    /// A snapshot of the current (persisted) state.
    fn read_state(&self) -> Result<D, Poisoned> {
        for _ in 0..READ_ATTEMPTS {
            self.check_poison()?;
            // Acquire: pairs with the Release of `Lock` on line 28: with `l1` even, the record
            // at MIndex is complete and persisted (line 27 precedes line 28).
            let l1 = self.lock.load(Ordering::Acquire);
            if l1 % 2 == 1 {
                self.wait_while_lock_is(l1);
                continue;
            }
            let st = self.current().state();
            // Acquire: keeps this load after the record loads (which are Acquire too). If no
            // combiner took the lock meanwhile, nobody wrote the record we copied.
            if self.lock.load(Ordering::Acquire) == l1 {
                return Ok(st);
            }
        }
        self.read_locked()
    }
}

/// Releases `Lock` (line 28) when dropped; if dropped by a panic in `dispatch_mut`, poisons the
/// object first (MIndex was not flipped, so the state is the one before the combining pass).
struct Unlock<'a, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    obj: &'a PBComb<D, P>,
    lval: u64,
}

impl<D, P> Drop for Unlock<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn drop(&mut self) {
        if panicking() {
            // Release: pairs with the Acquire in `check_poison`.
            self.obj.poisoned.store(true, Ordering::Release);
        }
        // Line 28. Release: pairs with the Acquire loads of `Lock` in `perform`, `read_state`
        // and the next combiner's CAS.
        self.obj.lock.store(self.lval + 1, Ordering::Release);
    }
}

#[cold]
#[inline(never)]
fn poisoned(_: Poisoned) -> ! {
    panic!("PBComb is poisoned: a dispatch_mut panicked in a combiner")
}

/// A registered thread's access to a [`PBComb`]. Dropping it frees its thread id.
///
/// The handle carries the thread's sequence number: the `seq`-th call of
/// [`execute_mut`](Self::execute_mut) on this thread id passes `seq` to the protocol
/// (`seq & 1` is the request's activate bit). For detectability, a system persists
/// `(op, seq())` *before* each call; after a crash it calls [`recover`](Self::recover) with
/// them (paper §2).
///
/// # Examples
///
/// ```
/// # use pcomb::{objects::Counter, PBComb};
/// let c = PBComb::new(Counter::default(), 1)?;
/// let mut h = c.register()?;
/// assert_eq!(h.seq(), 0);
/// assert_eq!(h.execute_mut(2), 0);
/// assert_eq!(h.seq(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PBCombHandle<'a, D, P = NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    obj: &'a PBComb<D, P>,
    id: usize,
    seq: u64,
}

impl<D, P> fmt::Debug for PBCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBCombHandle")
            .field("id", &self.id)
            .field("seq", &self.seq)
            .finish()
    }
}

impl<D, P> Drop for PBCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn drop(&mut self) {
        self.obj.slots.release(self.id);
    }
}

impl<D, P> PBCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    /// This thread's id, in `0..max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// assert_eq!(PBComb::new(Counter::default(), 1)?.register()?.id(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> usize {
        self.id
    }

    /// The sequence number of this thread's last operation (the next one gets `seq() + 1`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// h.execute_mut(1);
    /// h.execute_mut(1);
    /// assert_eq!(h.seq(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Applies the write operation `op` through the combiner and returns its response
    /// (Algorithm 1 `PBcomb`, lines 1-2, with `seq() + 1`). Returns once the operation is
    /// persisted (in persistent mode).
    ///
    /// # Panics
    ///
    /// If the object is poisoned (see [`PBComb`]'s *Poisoning*).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// assert_eq!(h.execute_mut(3), 0);
    /// assert_eq!(h.execute_mut(4), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> D::Response {
        self.try_execute_mut(op).unwrap_or_else(|e| poisoned(e))
    }

    /// [`execute_mut`](Self::execute_mut) that returns [`Poisoned`] (nr-core's error type)
    /// instead of panicking when the object is poisoned.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a `dispatch_mut` panicked in a combiner (before or during this call).
    /// An operation announced before the poisoning was noticed may or may not have been
    /// applied (as for nr-core).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// assert_eq!(c.register()?.try_execute_mut(3), Ok(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.obj.check_poison()?;
        self.seq += 1;
        let act = self.seq & ACTIVATE;
        self.obj.announce(self.id, op, act); // line 1
        self.obj.perform(self.id, act as u8) // line 2
    }

    /// Runs the read operation `op` on a snapshot of the current, persisted state.
    ///
    /// Reads are not announced: they copy the record indexed by `MIndex` while validating with
    /// `Lock` (no combiner started meanwhile), and take the lock after a few failed attempts.
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::new(9), 1)?;
    /// assert_eq!(c.register()?.execute(()), 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute(&mut self, op: D::ReadOperation<'_>) -> D::Response {
        self.try_execute(op).unwrap_or_else(|e| poisoned(e))
    }

    /// [`execute`](Self::execute) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::new(9), 1)?;
    /// assert_eq!(c.register()?.try_execute(()), Ok(9));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        Ok(self.obj.read_state()?.dispatch(op))
    }

    /// Recovery function (Algorithm 1 `Recover`, lines 3-6) for this thread's operation `op`
    /// with sequence number `seq`, pending when the system crashed: returns its response, and
    /// whether it had taken effect or was executed now. Later operations continue from `seq`.
    ///
    /// Call it at most once, for the operation (and the same `seq`) the thread was executing at
    /// the crash, before the thread's next operation; a recovery that crashes may be retried.
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, PBComb, Recovered};
    ///
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// h.execute_mut(5); // seq 1
    /// // Recovering seq 1 finds it applied; seq 2 had not run, so it is executed now.
    /// assert_eq!(h.recover(5, 1), Recovered::Applied(0));
    /// assert_eq!(h.recover(1, 2), Recovered::Reexecuted(5));
    /// assert_eq!(h.execute(()), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover(&mut self, op: D::WriteOperation, seq: u64) -> Recovered<D::Response> {
        self.try_recover(op, seq).unwrap_or_else(|e| poisoned(e))
    }

    /// [`recover`](Self::recover) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, PBComb, Recovered};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// assert_eq!(h.try_recover(2, 1), Ok(Recovered::Reexecuted(0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover(
        &mut self,
        op: D::WriteOperation,
        seq: u64,
    ) -> Result<Recovered<D::Response>, Poisoned> {
        self.obj.check_poison()?;
        let act = seq & ACTIVATE;
        self.seq = seq;
        // Line 3 moved after the check (issue 11, defect 3): `Deactivate[p]` changes only when
        // `p` announces, so read before announcing it says whether the operation took effect
        // *before the crash* (the value in every record since `open` is the persisted one).
        // Read after announcing, a concurrent combiner may already have applied the request
        // without persisting it, and "applied" would be neither true of the crash nor durable.
        let cur = self.obj.current();
        if u64::from(cur.deact(self.id)) == act {
            return Ok(Recovered::Applied(cur.ret(self.id))); // line 6
        }
        self.obj.announce(self.id, op, act); // line 3
                                             // Lines 4-5: not yet applied; the normal path returns once it is durable.
        Ok(Recovered::Reexecuted(self.obj.perform(self.id, act as u8)?))
    }
}
