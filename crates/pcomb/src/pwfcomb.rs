//! PWFcomb: wait-free recoverable combining (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms
//! 3 and 4).
//!
//! Every thread pretends to be the combiner: it copies the record `S` points to into one of its
//! own two records, applies every active request it sees, and tries to install its record with
//! an SC on `S`. LL/SC is emulated, as in the paper's experiments (§6), by a CAS on a versioned
//! word: `S = version << 16 | record number`, so a stale combiner's SC fails even if `S` came
//! back to the same record (no ABA).
//!
//! Volatile (DRAM) part: `Request` (one [`Request`] per thread, arguments in atomic words) and
//! `Flush`. Persistent part ([`Memory`]): `S` and the `2 * (n + 1)` records `MemState[0..n][0..1]`
//! (record `2q + i` is `MemState[q][i]`; `MemState[n][*]` are the initial dummies).
//!
//! # Deviations from the published pseudocode
//!
//! - **Line 15** reads `Flush[lsPtr->pid]`; we read `Flush[p]`, so that each thread's `Flush`
//!   value only grows. With the published line, `Flush[p]` can return to an odd value it held
//!   before, and a slow thread's line-48 CAS (`lval -> lval + 1`) can then mark a newer,
//!   unpersisted install of `p` as persisted.
//! - **Line 42** persists `S` only if `Flush[pid]` is odd *and* equals `CombRound[pid][p]`
//!   (`pid` = owner of the record `S` points to now). That skips a needed persist when the
//!   combiner `c` that served `p` installed `S`, a second combiner `d` installed a newer `S` on
//!   top before `c` reached line 32, and `p` reads `S` (owned by `d`, which did not serve `p`)
//!   before either persisted it: a crash then loses `p`'s completed operation. We persist
//!   whenever `Flush[pid]` is odd (`S`'s latest install by `pid` not yet known persisted) and
//!   skip when it is even; `CombRound` then carries no information and is not kept.
//! - **Line 48** CASes `Flush[p]`; the text (§4) says the helper updates the combiner's entry,
//!   `Flush[pid]`, which is what we do.
//! - `pid` is derived from the record number (record `2q + i` belongs to `q`), not read from the
//!   record: a record being recycled holds its source's `pid` between lines 13 and 14.
//! - Request arguments are read under a per-request version (seqlock): a stale combiner may read
//!   `Request[q]` while `q` overwrites it with its next request (the paper's C code reads it
//!   racily and relies on the failing SC); a torn read is skipped, which is safe because it
//!   implies `q`'s previous request is already installed, so the stale combiner's SC fails.
//! - `Backoff` (lines 2, 36) is empty.

use core::fmt;
use core::marker::PhantomData;

use crossbeam_utils::CachePadded;
use nr_core::Dispatch;

use crate::config::MAX_THREADS;
use crate::error::{BuildError, RegisterError};
use crate::fingerprint::type_fingerprint;
use crate::layout::{header, Kind, Record, RecordLayout};
use crate::memory::Memory;
use crate::recovered::Recovered;
use crate::slots::Slots;
use crate::sync::{fence, AtomicU64, Ordering};
use crate::words::{self, words_for};
use pmem::{NoPersist, Persist, Pod, Region};

/// Attempts of the optimistic read before it keeps retrying (reads are lock-free).
const ATTEMPTS: usize = 2;

/// `ctrl` bits of a [`Request`].
const ACTIVATE: u64 = 1;
const VALID: u64 = 2;
const BUSY: u64 = 4;
const VERSION_SHIFT: u32 = 3;

/// Bits of `S` holding the record number.
const RECORD_BITS: u32 = 16;
const RECORD_MASK: u64 = (1 << RECORD_BITS) - 1;

/// One `RequestRec` (Algorithm 3), its arguments in atomic words.
///
/// | `ctrl` bits | meaning |
/// |---|---|
/// | 0 | `activate` |
/// | 1 | `valid` (0 after a restart until the thread announces) |
/// | 2 | busy: the owner is rewriting `op` |
/// | 3.. | version, +1 per announcement (seqlock for readers of `op`) |
struct Request {
    ctrl: AtomicU64,
    op: Box<[AtomicU64]>,
}

/// A wait-free, recoverable combining object over the sequential structure `D`, persisted
/// through `P` (paper Algorithms 3-4).
///
/// Same use as [`PBComb`](crate::PBComb): [`register`](Self::register) for a
/// [`PWFCombHandle`], then [`execute_mut`](PWFCombHandle::execute_mut) /
/// [`execute`](PWFCombHandle::execute). Write operations are wait-free (at most two combining
/// attempts, then the operation is known to be applied); reads are lock-free (validated
/// snapshots of the record `S` points to). Operations, like the state and responses, are
/// [`Pod`]: combiners of every thread read them concurrently.
///
/// Why `D::WriteOperation: Pod` here and not in [`PBComb`](crate::PBComb): in PBComb only the
/// lock holder reads a thread's announced operation, through a cell the owner does not touch
/// while the request is active, so any `Clone` operation works. Here every thread may be
/// simulating at once and reads `Request[q]` while its owner may already be rewriting it for
/// its next operation (the published C code reads it racily and relies on the failing SC); we
/// keep operations in atomic words read under a version (a seqlock), which needs them to be
/// plain bytes that any bit pattern read concurrently cannot make unsound.
///
/// A panic in `dispatch_mut` unwinds the thread that ran it, which then had not installed
/// anything; every other thread that applies the same request panics the same way.
///
/// # Examples
///
/// ```
/// use pcomb::objects::Counter;
/// use pcomb::PWFComb;
///
/// let counter = PWFComb::new(Counter::default(), 3)?;
/// std::thread::scope(|s| {
///     for _ in 0..3 {
///         s.spawn(|| {
///             let mut h = counter.register().expect("3 slots for 3 threads");
///             for _ in 0..100 {
///                 h.execute_mut(2);
///             }
///         });
///     }
/// });
/// assert_eq!(counter.register()?.execute(()), 600);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PWFComb<D, P = NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    mem: Memory<P>,
    layout: RecordLayout,
    requests: Box<[CachePadded<Request>]>,
    /// `Flush[p]`: odd while `p`'s latest install of `S` is not known to be persisted.
    flush: Box<[CachePadded<AtomicU64>]>,
    slots: Slots,
    _state: PhantomData<fn() -> D>,
}

impl<D, P> fmt::Debug for PWFComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PWFComb")
            .field("max_threads", &self.layout.threads)
            // Relaxed: a diagnostic snapshot.
            .field("s", &self.mem.index_word().load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<D> PWFComb<D, NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
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
    /// use pcomb::{objects::AtomicFloat, PWFComb};
    ///
    /// let f = PWFComb::new(AtomicFloat::new(3.0), 2)?;
    /// let mut h = f.register()?;
    /// assert_eq!(f64::from_bits(h.execute_mut(0.5f64.to_bits())), 3.0);
    /// assert_eq!(f64::from_bits(h.execute(())), 1.5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(init: D, max_threads: usize) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let mem = Memory::heap(layout.total_words(Self::records(max_threads)), NoPersist);
        Ok(Self::create_in(mem, layout, &init, type_fingerprint::<D>()))
    }
}

impl<D, P> PWFComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    /// A heap-backed object like [`new`](PWFComb::new), but with every persistence instruction
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
    /// use pcomb::{objects::Counter, pmem, PWFComb};
    ///
    /// let c = PWFComb::with_persist(Counter::default(), 1, pmem::Hardware::new())?;
    /// pmem::reset_stats();
    /// c.register()?.execute_mut(1);
    /// assert!(pmem::stats().psyncs >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_persist(init: D, max_threads: usize, persist: P) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let mem = Memory::heap(layout.total_words(Self::records(max_threads)), persist);
        Ok(Self::create_in(mem, layout, &init, type_fingerprint::<D>()))
    }

    fn layout_for(max_threads: usize) -> Result<RecordLayout, BuildError> {
        if max_threads == 0 || max_threads > MAX_THREADS {
            return Err(BuildError::InvalidMaxThreads {
                requested: max_threads,
                limit: MAX_THREADS,
            });
        }
        Ok(RecordLayout::new::<D, D::Response>(max_threads, true))
    }

    /// `MemState[0..n][0..1]`: two per thread and two dummies.
    fn records(n: usize) -> usize {
        2 * (n + 1)
    }

    fn sizes() -> [usize; 3] {
        [
            core::mem::size_of::<D>(),
            core::mem::size_of::<D::Response>(),
            core::mem::size_of::<D::WriteOperation>(),
        ]
    }

    /// Initializes `mem` (zeroed) as a fresh object holding `init` and persists it:
    /// `S := &MemState[n][0]`, holding `<init, <0..>, <0..>, <0..>, 0>`.
    fn create_in(mem: Memory<P>, layout: RecordLayout, init: &D, type_id: u64) -> Self {
        let dummy = 2 * layout.threads;
        Record::<D, D::Response>::at(mem.words(), &layout, dummy).set_state(init);
        // Relaxed: not shared yet; `init_header` persists and the handover publishes.
        mem.index_word().store(dummy as u64, Ordering::Relaxed);
        mem.init_header(Kind::PWFComb, &layout, Self::sizes(), type_id);
        Self::with_memory(mem, layout)
    }

    /// The object over initialized memory with fresh volatile variables.
    fn with_memory(mem: Memory<P>, layout: RecordLayout) -> Self {
        let n = layout.threads;
        let op_words = words_for::<D::WriteOperation>();
        Self {
            mem,
            layout,
            requests: (0..n)
                .map(|_| {
                    CachePadded::new(Request {
                        ctrl: AtomicU64::new(0),
                        op: words::zeroed(op_words),
                    })
                })
                .collect(),
            flush: (0..n)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            slots: Slots::new(n),
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
    /// use pcomb::{objects::Counter, pmem::Region, PWFComb};
    ///
    /// let region = Region::anonymous(7, 1 << 16)?;
    /// let c = PWFComb::create(region, Counter::new(1), 2)?;
    /// assert_eq!(c.register()?.execute_mut(1), 1);
    /// // Reopen the same memory, as recovery does after a crash.
    /// let c = PWFComb::<Counter, _>::open(c.into_region().expect("created in a region"))?;
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
    /// use pcomb::{objects::Counter, pmem::Region, PWFComb};
    ///
    /// const MY_COUNTER_V1: u64 = 0xC0_0001;
    /// let c = PWFComb::create_with_type_id(Region::anonymous(7, 1 << 16)?, Counter::new(1), 2, MY_COUNTER_V1)?;
    /// let region = c.into_region().expect("in a region");
    /// let c = PWFComb::<Counter, _>::open_with_type_id(region, MY_COUNTER_V1)?;
    /// assert_eq!(c.register()?.execute(()), 1);
    /// let region = c.into_region().expect("in a region");
    /// assert!(PWFComb::<Counter, _>::open(region).is_err()); // the default fingerprint differs
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_with_type_id(
        region: Region<P>,
        init: D,
        max_threads: usize,
        type_id: u64,
    ) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let (mem, off) = Memory::allocate(region, layout.total_words(Self::records(max_threads)))?;
        let obj = Self::create_in(mem, layout, &init, type_id);
        obj.mem.publish(off)?;
        Ok(obj)
    }

    /// Reopens the object at `region`'s root after a restart or crash: the state is the one in
    /// the persisted record indexed by the persisted `S`, and every
    /// thread's pending operation can then be [`recover`]ed.
    ///
    /// [`recover`]: PWFCombHandle::recover
    ///
    /// # Errors
    ///
    /// [`BuildError::LayoutMismatch`] if the root is missing or is not a `PWFComb` of these
    /// types (or its header is corrupt), [`BuildError::Region`] if the region refuses an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::{AtomicFloat, Counter}, pmem::Region, BuildError, PWFComb};
    ///
    /// let region = Region::anonymous(7, 1 << 16)?;
    /// let c = PWFComb::create(region, Counter::default(), 2)?;
    /// let region = c.into_region().expect("created in a region");
    /// // A region without an object does not open.
    /// let err = PWFComb::<AtomicFloat, _>::open(Region::anonymous(7, 1 << 16)?).unwrap_err();
    /// assert!(matches!(err, BuildError::LayoutMismatch { .. }));
    /// assert!(PWFComb::<Counter, _>::open(region).is_ok());
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
    /// use pcomb::{objects::Counter, pmem::Region, PWFComb};
    /// let c = PWFComb::create_with_type_id(Region::anonymous(7, 1 << 16)?, Counter::new(1), 1, 42)?;
    /// let region = c.into_region().expect("in a region");
    /// assert!(PWFComb::<Counter, _>::open_with_type_id(region, 42).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_type_id(region: Region<P>, type_id: u64) -> Result<Self, BuildError> {
        let (mem, head) = Memory::open(region, "PWFComb")?;
        let layout = Self::layout_for(head[header::THREADS] as usize).map_err(|_| {
            BuildError::LayoutMismatch {
                kind: "PWFComb",
                detail: "bad max_threads in the header",
            }
        })?;
        mem.check_header(Kind::PWFComb, &layout, Self::sizes(), type_id)?;
        // Relaxed: single-threaded reopening.
        let s = mem.index_word().load(Ordering::Relaxed);
        if (s & RECORD_MASK) as usize >= Self::records(layout.threads) {
            return Err(BuildError::LayoutMismatch {
                kind: "PWFComb",
                detail: "S names no record (corrupt)",
            });
        }
        let obj = Self::with_memory(mem, layout);
        if !obj.record(s).flags_valid(true) {
            return Err(BuildError::LayoutMismatch {
                kind: "PWFComb",
                detail: "a Deactivate or Index flag of the current record is not 0 or 1 (corrupt)",
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
    /// # use pcomb::{objects::Counter, PWFComb};
    /// assert!(PWFComb::new(Counter::default(), 1)?.into_region().is_none());
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
    /// # use pcomb::{objects::Counter, PWFComb};
    /// assert_eq!(PWFComb::new(Counter::default(), 3)?.max_threads(), 3);
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
    /// # use pcomb::{objects::Counter, PWFComb, RegisterError};
    /// let c = PWFComb::new(Counter::default(), 1)?;
    /// let _a = c.register()?;
    /// assert!(matches!(c.register(), Err(RegisterError::TooManyThreads { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self) -> Result<PWFCombHandle<'_, D, P>, RegisterError> {
        let id = self.slots.claim_any()?;
        Ok(self.handle(id))
    }

    /// Registers as thread `id` (to recover its pending operation after a crash).
    ///
    /// # Errors
    ///
    /// [`RegisterError::OutOfRange`] if `id >= max_threads`, [`RegisterError::InUse`] if `id`
    /// has a live handle.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PWFComb, RegisterError};
    /// let c = PWFComb::new(Counter::default(), 2)?;
    /// assert!(matches!(c.register_as(2), Err(RegisterError::OutOfRange { id: 2, .. })));
    /// assert_eq!(c.register_as(1)?.id(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_as(&self, id: usize) -> Result<PWFCombHandle<'_, D, P>, RegisterError> {
        self.slots.claim(id)?;
        Ok(self.handle(id))
    }

    /// A handle for slot `id`, its activate bit seeded from the current record.
    fn handle(&self, id: usize) -> PWFCombHandle<'_, D, P> {
        let (_, cur) = self.current();
        let act = u64::from(cur.deact(id));
        let req = &self.requests[id];
        // Relaxed: only the slot owner writes `ctrl`, and the slot claim (Acquire) ordered us
        // after the previous owner.
        let version = req.ctrl.load(Ordering::Relaxed) >> VERSION_SHIFT;
        // Release: pairs with the Acquire loads of `ctrl` in `read_request`; valid = 0.
        req.ctrl
            .store(((version + 1) << VERSION_SHIFT) | act, Ordering::Release);
        PWFCombHandle {
            obj: self,
            id,
            seq: act,
        }
    }

    /// The `S` word and the record it points to.
    #[inline]
    fn current(&self) -> (u64, Record<'_, D, D::Response>) {
        // Acquire: LL (lines 9, 38); pairs with the AcqRel CAS (SC, line 31) that installed the
        // record, so its contents (stored before the SC) are visible.
        let s = self.mem.index_word().load(Ordering::Acquire);
        (s, self.record(s))
    }

    #[inline]
    fn record(&self, s: u64) -> Record<'_, D, D::Response> {
        Record::at(self.mem.words(), &self.layout, (s & RECORD_MASK) as usize)
    }

    /// The thread owning the record `S = s` points to (`pid`); the dummies count as thread 0,
    /// the paper's initial `pid`.
    #[inline]
    fn owner(&self, s: u64) -> usize {
        let q = (s & RECORD_MASK) as usize / 2;
        if q >= self.layout.threads {
            0
        } else {
            q
        }
    }

    /// Lines 1 / 4: `Request[p] := <func, args, act, 1>`.
    fn announce(&self, p: usize, op: &D::WriteOperation, act: u64) {
        let req = &self.requests[p];
        // Relaxed: only the owner writes `ctrl`.
        let old = req.ctrl.load(Ordering::Relaxed);
        let version = (old >> VERSION_SHIFT) + 1;
        // Relaxed: the Release stores of `op` below keep this store before them.
        req.ctrl.store(old | BUSY, Ordering::Relaxed);
        words::store(&req.op, op);
        // Release: pairs with the Acquire loads in `read_request`.
        req.ctrl
            .store((version << VERSION_SHIFT) | VALID | act, Ordering::Release);
        // SeqCst fence: pairs with the fence after the LL in `perform`. The wait-freedom
        // argument (two failed attempts imply an install by a combiner whose LL read an `S`
        // written after our first LL, so that combiner saw this announcement) needs
        // store->load order between this store and our LL: if our LL read an `S` value
        // coherence-ordered before the other combiner's LL, this fence precedes that
        // combiner's fence, so its loads of `ctrl` see this store.
        fence(Ordering::SeqCst);
    }

    /// Reads `Request[q]`: its activate bit and operation, or `None` if it is not valid or was
    /// being rewritten (see the module docs).
    #[inline]
    fn read_request(&self, q: usize) -> Option<(u8, D::WriteOperation)> {
        let req = &self.requests[q];
        // Acquire: pairs with the Release store in `announce` (visibility of the announcement
        // itself is ensured by the two SeqCst fences, see `announce`).
        let c1 = req.ctrl.load(Ordering::Acquire);
        if c1 & VALID == 0 || c1 & BUSY != 0 {
            return None;
        }
        let op = words::load::<D::WriteOperation>(&req.op);
        // Acquire: after the Acquire loads of `op`; if they saw a rewrite, this sees BUSY or a
        // new version (the owner's `ctrl` store precedes its Release stores of `op`).
        let c2 = req.ctrl.load(Ordering::Acquire);
        (c1 == c2).then_some(((c1 & ACTIVATE) as u8, op))
    }

    /// Algorithm 4 `PerformRequest` for thread `p`.
    fn perform(&self, p: usize) -> D::Response {
        let s = self.mem.index_word();
        let persist = self.mem.persist();
        for _ in 0..2 {
            // Line 9: LL(S).
            let (ll, src) = self.current();
            // SeqCst fence: pairs with the fence in `announce` (see there).
            fence(Ordering::SeqCst);
            let ind = usize::from(src.index(p)); // line 11
            let dst = self.record((2 * p + ind) as u64);
            dst.copy_from(&src); // line 13
            dst.set_pid(p); // line 14
                            // Lines 15-17 (reading Flush[p], see the module docs). Relaxed: only p writes
                            // Flush[p] except helpers' CAS to lval + 1, which keeps the parity argument valid.
            let f = self.flush[p].load(Ordering::Relaxed);
            let lval = if f % 2 == 0 { f + 1 } else { f + 2 };
            // Acquire: VL; after the Acquire loads of the copy, so a torn copy (a word written
            // by a recycler, which first saw S move on) makes it fail.
            if s.load(Ordering::Acquire) != ll {
                continue; // line 18: VL failed, the copy may be torn
            }
            // Lines 19-25 (simulation phase).
            let mut st = dst.state();
            for q in 0..self.layout.threads {
                if let Some((act, op)) = self.read_request(q) {
                    if act != dst.deact(q) {
                        let ret = st.dispatch_mut(op); // lines 21-22
                        dst.set_ret(q, &ret); // line 23
                        dst.set_deact(q, act); // line 24
                    }
                }
            }
            dst.set_state(&st);
            // Acquire: VL, as on line 18.
            if s.load(Ordering::Acquire) == ll {
                // Line 26: VL.
                dst.set_index(p, 1 - ind as u8); // line 27
                let (addr, len) = dst.span();
                // SAFETY:
                // - `span` is the record's own bytes, inside the region's mapping, which lives as long
                //   as `self`.
                unsafe { persist.pwb(addr, len) }; // line 28
                persist.pfence(); // line 29
                                  // Line 30. Release: pairs with the Acquire load of Flush in `ensure_persisted`,
                                  // which happens after that thread's Acquire load of the S our CAS writes.
                self.flush[p].store(lval, Ordering::Release);
                let next = (((ll >> RECORD_BITS) + 1) << RECORD_BITS) | (2 * p + ind) as u64;
                // Line 31: SC(S, &MemState[p][ind]).
                // AcqRel: the Release half publishes our record to the Acquire LLs of others.
                if s.compare_exchange(ll, next, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    self.mem.pwb_index(); // line 32
                    persist.psync(); // line 33
                                     // Line 34. Release: pairs with the Acquire load in `ensure_persisted`.
                    let _ = self.flush[p].compare_exchange(
                        lval,
                        lval + 1,
                        Ordering::Release,
                        Ordering::Relaxed,
                    );
                    return dst.ret(p); // line 35 (our record: S may have moved on)
                }
            }
            // Line 36: BackoffCalculate (empty).
        }
        // Two failed attempts: a combiner that read our request has installed S (lines 38-50).
        let (cur, rec) = self.current(); // line 38
        let ret = rec.ret(p); // line 50 (the value is the same in every later record)
        self.ensure_persisted(cur);
        ret
    }

    /// Lines 40-48: makes sure the `S` value `cur` (or a later one) is persisted before
    /// returning something read from it.
    fn ensure_persisted(&self, cur: u64) {
        let pid = self.owner(cur);
        // Line 40. Acquire: pairs with the Release stores of Flush (lines 30, 34, 48).
        let lval = self.flush[pid].load(Ordering::Acquire);
        // Line 42, without the CombRound condition (see the module docs). Even: `pid` (or a
        // helper) persisted S after pid's latest successful SC, which installed `cur` or later.
        if lval % 2 == 1 {
            self.mem.pwb_index(); // line 44
            self.mem.persist().psync(); // line 46
                                        // Line 48 (on Flush[pid]). Release: pairs with the Acquire on line 40.
            let _ = self.flush[pid].compare_exchange(
                lval,
                lval + 1,
                Ordering::Release,
                Ordering::Relaxed,
            );
        }
    }

    /// A validated snapshot of the state `S` points to, persisted before it is returned.
    fn read_state(&self) -> D {
        loop {
            for _ in 0..ATTEMPTS {
                let (ll, rec) = self.current();
                let st = rec.state();
                // Acquire: VL(S), after the Acquire loads of the record.
                if self.mem.index_word().load(Ordering::Acquire) == ll {
                    self.ensure_persisted(ll);
                    return st;
                }
            }
            crate::sync::yield_now();
        }
    }
}

/// A registered thread's access to a [`PWFComb`]. Dropping it frees its thread id.
///
/// Sequence numbers work as for [`PBCombHandle`](crate::PBCombHandle).
///
/// # Examples
///
/// ```
/// # use pcomb::{objects::Counter, PWFComb};
/// let c = PWFComb::new(Counter::default(), 1)?;
/// let mut h = c.register()?;
/// h.execute_mut(1);
/// assert_eq!(h.seq(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PWFCombHandle<'a, D, P = NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    obj: &'a PWFComb<D, P>,
    id: usize,
    seq: u64,
}

impl<D, P> fmt::Debug for PWFCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PWFCombHandle")
            .field("id", &self.id)
            .field("seq", &self.seq)
            .finish()
    }
}

impl<D, P> Drop for PWFCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    fn drop(&mut self) {
        self.obj.slots.release(self.id);
    }
}

impl<D, P> PWFCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
    P: Persist,
{
    /// This thread's id, in `0..max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PWFComb};
    /// assert_eq!(PWFComb::new(Counter::default(), 1)?.register()?.id(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> usize {
        self.id
    }

    /// The sequence number of this thread's last operation.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PWFComb};
    /// assert_eq!(PWFComb::new(Counter::default(), 1)?.register()?.seq(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Applies the write operation `op` and returns its response (Algorithm 3 `PWFcomb`,
    /// lines 1-3, with `seq() + 1`). Wait-free; returns once the operation is persisted.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PWFComb};
    /// let c = PWFComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// assert_eq!(h.execute_mut(3), 0);
    /// assert_eq!(h.execute_mut(3), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> D::Response {
        self.seq += 1;
        self.obj.announce(self.id, &op, self.seq & ACTIVATE); // line 1
        self.obj.perform(self.id) // line 3
    }

    /// Runs the read operation `op` on a validated, persisted snapshot of the state (lock-free).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PWFComb};
    /// let c = PWFComb::new(Counter::new(4), 1)?;
    /// assert_eq!(c.register()?.execute(()), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute(&mut self, op: D::ReadOperation<'_>) -> D::Response {
        self.obj.read_state().dispatch(op)
    }

    /// Recovery function (Algorithm 3 `Recover`, lines 4-7) for this thread's operation `op`
    /// with sequence number `seq`, pending at the crash. Same contract as
    /// [`PBCombHandle::recover`](crate::PBCombHandle::recover).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, PWFComb, Recovered};
    ///
    /// let c = PWFComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// h.execute_mut(5); // seq 1
    /// assert_eq!(h.recover(5, 1), Recovered::Applied(0));
    /// assert_eq!(h.recover(1, 2), Recovered::Reexecuted(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover(&mut self, op: D::WriteOperation, seq: u64) -> Recovered<D::Response> {
        let act = seq & ACTIVATE;
        self.seq = seq;
        // Line 4 moved after the check (issue 11, defect 3): `Deactivate[p]` changes only when
        // `p` announces, so read before announcing it says whether the operation took effect
        // *before the crash* (the value in every record since `open` is the persisted one).
        // Read after announcing, a concurrent combiner may already have applied the request
        // without persisting it, and "applied" would be neither true of the crash nor durable.
        let (_, rec) = self.obj.current();
        if u64::from(rec.deact(self.id)) == act {
            Recovered::Applied(rec.ret(self.id)) // line 7
        } else {
            self.obj.announce(self.id, &op, act); // line 4
            Recovered::Reexecuted(self.obj.perform(self.id)) // lines 5-6
        }
    }
}
