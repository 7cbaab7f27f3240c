//! PWFcomb: wait-free recoverable combining (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms
//! 3 and 4), as a user of the protocol's one implementation (`engine::pwf`, which also lists
//! the deviations from the published pseudocode): the batch of an attempt is `dispatch_mut` on
//! each request, in thread order.

use core::fmt;
use core::marker::PhantomData;

use nr_core::Dispatch;

use crate::engine::pwf::{WfBatch, WfInstance};
use crate::error::{BuildError, RegisterError};
use crate::fingerprint::type_fingerprint;
use crate::memory::Place;
use crate::object::Object;
use crate::recovered::Recovered;
use crate::slots::Seat;
use pmem::{NoPersist, Persist, Pod, Region};

/// The batch of a `PWFComb` attempt: `dispatch_mut` on each request in thread order
/// (Algorithm 4 lines 21-22); nothing to persist besides the record, nothing to do once the
/// install is durable.
struct Dispatcher<D>(PhantomData<fn() -> D>);

impl<D> WfBatch for Dispatcher<D>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    D::WriteOperation: Pod,
{
    type State = D;
    type Op = D::WriteOperation;
    type Ret = D::Response;

    #[inline]
    fn apply(
        &self,
        _me: usize,
        st: &mut D,
        reqs: &[(usize, D::WriteOperation)],
        rets: &mut [D::Response],
    ) {
        for (&(_, op), ret) in reqs.iter().zip(rets) {
            *ret = st.dispatch_mut(op); // lines 21-22
        }
    }

    #[inline]
    fn installed(&self, _me: usize, _st: &D) {}
}

/// The protocol instance of a `PWFComb<D>` (at word 0 of its memory: header line, `S`,
/// records, the layout of `layout.rs`).
type Inst<D> = WfInstance<D, <D as Dispatch>::WriteOperation, <D as Dispatch>::Response>;

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
    obj: Object<Inst<D>, P>,
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
            .field("max_threads", &self.max_threads())
            .field("inst", &self.obj.inst)
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
        Self::with_persist(init, max_threads, NoPersist)
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
        let type_id = type_fingerprint::<D>();
        Self::build(Place::Heap(persist), &init, max_threads, type_id)
    }

    fn build(place: Place<P>, init: &D, threads: usize, type_id: u64) -> Result<Self, BuildError> {
        let obj = Object::build(place, init, threads, Self::sizes(), type_id)?;
        Ok(Self { obj })
    }

    /// The header's sizes: state, response, operation.
    fn sizes() -> [usize; 3] {
        [
            core::mem::size_of::<D>(),
            core::mem::size_of::<D::Response>(),
            core::mem::size_of::<D::WriteOperation>(),
        ]
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
        Self::build(Place::Region(region), &init, max_threads, type_id)
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
        let obj = Object::open(region, Self::sizes(), type_id)?;
        Ok(Self { obj })
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
        self.obj.mem.into_region()
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
        self.obj.max_threads()
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
        Ok(self.handle(Seat::any(&self.obj.slots)?))
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
        Ok(self.handle(Seat::at(&self.obj.slots, id)?))
    }

    /// A handle for the claimed slot, its `activate` bit seeded from the current record so that
    /// the next announcement flips it (after a restart `Request` is zeroed but `Deactivate[id]`
    /// is whatever was persisted).
    fn handle<'a>(&'a self, seat: Seat<'a>) -> PWFCombHandle<'a, D, P> {
        let seq = self.obj.inst.seed(self.obj.words(), seat.id);
        PWFCombHandle {
            obj: self,
            seat,
            seq,
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
    seat: Seat<'a>,
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
            .field("id", &self.seat.id)
            .field("seq", &self.seq)
            .finish()
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
        self.seat.id
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
        let obj = &self.obj.obj;
        let persist = obj.persist();
        obj.inst.execute(
            obj.words(),
            persist,
            &Dispatcher(PhantomData),
            self.seat.id,
            op,
            self.seq,
        )
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
        let obj = &self.obj.obj;
        obj.inst.read(obj.words(), obj.persist()).dispatch(op)
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
        self.seq = seq;
        let obj = &self.obj.obj;
        let persist = obj.persist();
        obj.inst.recover(
            obj.words(),
            persist,
            &Dispatcher(PhantomData),
            self.seat.id,
            op,
            seq,
        )
    }
}
