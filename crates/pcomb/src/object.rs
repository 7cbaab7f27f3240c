//! What [`PBComb`](crate::PBComb) and [`PWFComb`](crate::PWFComb) share around their protocol
//! instance: the memory it lives in (header line, shared index, records: `layout.rs`), the
//! thread slots, and how an object is created (on the heap or in a region) and reopened.

use crate::config::MAX_THREADS;
use crate::engine::pb::Instance;
use crate::engine::pwf::WfInstance;
use crate::error::CombBuildError;
use crate::layout::{header, Kind, RecordLayout};
use crate::memory::{Memory, Place};
use crate::slots::Slots;
use crate::sync::AtomicU64;
use pmem::{Persist, Pod, Region};

/// A protocol instance at word 0 of an object's memory, as the object layer builds and opens
/// it.
pub(crate) trait Protocol: Sized {
    /// `st` of the records.
    type State: Pod;
    /// Which protocol (the header's magic).
    const KIND: Kind;
    /// The name in errors.
    const NAME: &'static str;

    /// The record layout for `threads` threads.
    fn layout(threads: usize) -> RecordLayout;
    /// Words of the object (header line, shared index, every record).
    fn words(threads: usize) -> usize;
    /// The instance with fresh volatile variables.
    fn new(threads: usize) -> Self;
    /// Writes the initial record holding `init` (the header write persists it).
    fn init(&self, words: &[AtomicU64], init: &Self::State);
    /// Whether the persisted index and the current record's flags are in range (PWFComb1:
    /// after finding the current record, the valid one with the largest pass, and scrubbing
    /// the others' checks through `persist`).
    fn valid<P: Persist>(&self, words: &[AtomicU64], persist: &P) -> bool;
    /// `max_threads`.
    fn threads(&self) -> usize;
}

impl<S, O, R> Protocol for Instance<S, O, R>
where
    S: Pod,
    O: Clone + Send + Sync,
    R: Pod,
{
    type State = S;
    const KIND: Kind = Kind::PBComb;
    const NAME: &'static str = "PBComb";

    fn layout(threads: usize) -> RecordLayout {
        Instance::<S, O, R>::layout(threads)
    }
    fn words(threads: usize) -> usize {
        Instance::<S, O, R>::words(threads)
    }
    fn new(threads: usize) -> Self {
        Instance::new(0, threads)
    }
    fn init(&self, words: &[AtomicU64], init: &S) {
        Instance::init(self, words, init);
    }
    fn valid<P: Persist>(&self, words: &[AtomicU64], _persist: &P) -> bool {
        Instance::valid(self, words)
    }
    fn threads(&self) -> usize {
        Instance::threads(self)
    }
}

impl<S, O, R, const STAMPED: bool> Protocol for WfInstance<S, O, R, STAMPED>
where
    S: Pod,
    O: Pod,
    R: Pod,
{
    type State = S;
    const KIND: Kind = if STAMPED {
        Kind::PWFComb1
    } else {
        Kind::PWFComb
    };
    const NAME: &'static str = if STAMPED { "PWFComb1" } else { "PWFComb" };

    fn layout(threads: usize) -> RecordLayout {
        WfInstance::<S, O, R, STAMPED>::layout(threads)
    }
    fn words(threads: usize) -> usize {
        WfInstance::<S, O, R, STAMPED>::words(threads)
    }
    fn new(threads: usize) -> Self {
        WfInstance::new(0, threads)
    }
    fn init(&self, words: &[AtomicU64], init: &S) {
        WfInstance::init(self, words, init);
    }
    fn valid<P: Persist>(&self, words: &[AtomicU64], persist: &P) -> bool {
        WfInstance::valid(self, words, persist)
    }
    fn threads(&self) -> usize {
        WfInstance::threads(self)
    }
}

/// An object: its memory, its protocol instance and its thread slots.
#[derive(Debug)]
pub(crate) struct Object<I, P: Persist> {
    pub(crate) mem: Memory<P>,
    pub(crate) inst: I,
    pub(crate) slots: Slots,
}

impl<I: Protocol, P: Persist> Object<I, P> {
    /// The layout for `max_threads`, or `InvalidMaxThreads`.
    fn layout_for(max_threads: usize) -> Result<RecordLayout, CombBuildError> {
        if max_threads == 0 || max_threads > MAX_THREADS {
            return Err(CombBuildError::InvalidMaxThreads {
                requested: max_threads,
                limit: MAX_THREADS,
            });
        }
        Ok(I::layout(max_threads))
    }

    fn with_memory(mem: Memory<P>, threads: usize) -> Self {
        Self {
            mem,
            inst: I::new(threads),
            slots: Slots::new(threads),
        }
    }

    /// A fresh object holding `init` at `place`, its header naming `sizes` (state, response,
    /// operation) and `type_id`; everything is persisted (and, in a region, recorded as the
    /// root) before this returns.
    pub(crate) fn build(
        place: Place<P>,
        init: &I::State,
        max_threads: usize,
        sizes: [usize; 3],
        type_id: u64,
    ) -> Result<Self, CombBuildError> {
        let layout = Self::layout_for(max_threads)?;
        let make = |mem| {
            // The initial record (Algorithm 1: MemState[0], MIndex = 0; Algorithm 3: the dummy
            // S points to); the header write persists everything, records included.
            let obj = Self::with_memory(mem, max_threads);
            obj.inst.init(obj.mem.words(), init);
            obj.mem.init_header(I::KIND, &layout, sizes, type_id);
            Ok(obj)
        };
        place.build(I::words(max_threads), make, |obj| &obj.mem)
    }

    /// The object at `region`'s root, if its header matches `sizes` and `type_id` and its
    /// current record is well formed.
    pub(crate) fn open(
        region: Region<P>,
        sizes: [usize; 3],
        type_id: u64,
    ) -> Result<Self, CombBuildError> {
        let mismatch = |detail| CombBuildError::LayoutMismatch {
            kind: I::NAME,
            detail,
        };
        let (mem, head) = Memory::open(region, I::NAME)?;
        let threads = head[header::THREADS] as usize;
        let layout =
            Self::layout_for(threads).map_err(|_| mismatch("bad max_threads in the header"))?;
        mem.check_header(I::KIND, &layout, sizes, type_id)?;
        let obj = Self::with_memory(mem, threads);
        if !obj.inst.valid(obj.mem.words(), obj.mem.persist()) {
            return Err(mismatch(
                "the current record is not well formed: its index or a per-thread Index flag \
                 is out of range, or (PWFComb1) no record is valid or the newest one's pass \
                 leaves no room for the next (corrupt)",
            ));
        }
        Ok(obj)
    }

    /// The object's words.
    #[inline]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        self.mem.words()
    }

    /// The persistence domain.
    #[inline]
    pub(crate) fn persist(&self) -> &P {
        self.mem.persist()
    }

    /// `max_threads`.
    pub(crate) fn max_threads(&self) -> usize {
        self.inst.threads()
    }
}

/// The constructors, `open`, accessors and registration of [`PBComb`](crate::PBComb) and
/// [`PWFComb`](crate::PWFComb), written once. The type `$T` (handle `$H`, extra bounds `$b`)
/// has a field `obj: Object<..>` and a private `sizes()`; its handle has fields `obj`, `seat`
/// and `seq`.
macro_rules! object_api {
    ($(#[$m:meta])* $T:ident, $H:ident, [$($b:tt)*]) => {
        $(#[$m])*
        pub struct $T<D, P = NoPersist>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
            P: Persist,
        {
            obj: Object<Inst<D>, P>,
        }

        impl<D, P> fmt::Debug for $T<D, P>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
            P: Persist,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($T))
                    .field("max_threads", &self.max_threads())
                    .field("inst", &self.obj.inst)
                    .finish_non_exhaustive()
            }
        }

        impl<D> $T<D, NoPersist>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
        {
            /// A volatile object (no persistence cost) holding `init`, for up to `max_threads`
            /// concurrently registered threads.
            ///
            /// # Errors
            ///
            /// [`CombBuildError::InvalidMaxThreads`] if `max_threads` is 0 or above
            /// [`MAX_THREADS`](crate::MAX_THREADS).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::AtomicFloat, ", stringify!($T), "};")]
            ///
            #[doc = concat!("let f = ", stringify!($T), "::new(AtomicFloat::new(1.0), 2)?;")]
            /// let mut h = f.register()?;
            /// assert_eq!(f64::from_bits(h.execute_mut(2.0f64.to_bits())), 1.0);
            /// assert_eq!(f64::from_bits(h.execute(())), 2.0);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn new(init: D, max_threads: usize) -> Result<Self, CombBuildError> {
                Self::with_persist(init, max_threads, NoPersist)
            }
        }

        impl<D, P> $T<D, P>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
            P: Persist,
        {
            #[doc = concat!("A heap-backed object like [`new`](", stringify!($T), "::new), but with every persistence")]
            /// instruction sent to `persist`: no durability (the words are not in a region),
            /// but the exact pwb/pfence/psync sequence of the persistent protocol, e.g. to
            /// count or cost it.
            ///
            /// # Errors
            ///
            /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::Counter, pmem, ", stringify!($T), "};")]
            ///
            #[doc = concat!("let c = ", stringify!($T), "::with_persist(Counter::default(), 1, pmem::Hardware::new())?;")]
            /// pmem::reset_stats();
            /// c.register()?.execute_mut(1);
            /// assert!(pmem::stats().psyncs >= 1);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn with_persist(init: D, max_threads: usize, persist: P) -> Result<Self, CombBuildError> {
                let type_id = type_fingerprint::<D>();
                Self::build(Place::Heap(persist), &init, max_threads, type_id)
            }

            fn build(place: Place<P>, init: &D, threads: usize, type_id: u64) -> Result<Self, CombBuildError> {
                let obj = Object::build(place, init, threads, Self::sizes(), type_id)?;
                Ok(Self { obj })
            }

            /// A persistent object holding `init`, allocated in `region` (which becomes its
            /// owner) and recorded as the region's root, for up to `max_threads` registered
            /// threads. Everything is persisted before this returns.
            ///
            /// # Errors
            ///
            /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`,
            /// [`CombBuildError::RegionTooSmall`] if the region has no room,
            /// [`CombBuildError::Region`] if the region refuses the allocation or the root.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::Counter, pmem::Region, ", stringify!($T), "};")]
            ///
            /// let region = Region::anonymous(7, 1 << 16)?;
            #[doc = concat!("let c = ", stringify!($T), "::create(region, Counter::new(1), 2)?;")]
            /// assert_eq!(c.register()?.execute_mut(1), 1);
            /// // Reopen the same memory, as recovery does after a crash.
            #[doc = concat!("let c = ", stringify!($T), "::<Counter, _>::open(c.into_region().expect(\"created in a region\"))?;")]
            /// assert_eq!(c.register()?.execute(()), 2);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn create(region: Region<P>, init: D, max_threads: usize) -> Result<Self, CombBuildError> {
                Self::create_with_type_id(region, init, max_threads, type_fingerprint::<D>())
            }

            /// [`create`](Self::create) with the type fingerprint `type_id` chosen by the
            /// caller instead of [`type_fingerprint::<D>()`](crate::type_fingerprint) (which
            /// changes when `D` is renamed or moved); the object then opens only with
            /// [`open_with_type_id`](Self::open_with_type_id) and the same id.
            ///
            /// # Errors
            ///
            /// As [`create`](Self::create).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::Counter, pmem::Region, ", stringify!($T), "};")]
            ///
            /// const MY_COUNTER_V1: u64 = 0xC0_0001;
            /// let region = Region::anonymous(7, 1 << 16)?;
            #[doc = concat!("let c = ", stringify!($T), "::create_with_type_id(region, Counter::new(1), 2, MY_COUNTER_V1)?;")]
            /// let region = c.into_region().expect("in a region");
            #[doc = concat!("let c = ", stringify!($T), "::<Counter, _>::open_with_type_id(region, MY_COUNTER_V1)?;")]
            /// assert_eq!(c.register()?.execute(()), 1);
            /// let region = c.into_region().expect("in a region");
            #[doc = concat!("assert!(", stringify!($T), "::<Counter, _>::open(region).is_err()); // the default fingerprint differs")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn create_with_type_id(
                region: Region<P>,
                init: D,
                max_threads: usize,
                type_id: u64,
            ) -> Result<Self, CombBuildError> {
                Self::build(Place::Region(region), &init, max_threads, type_id)
            }

            /// Reopens the object at `region`'s root after a restart or crash: the state is
            /// the one in the persisted record the persisted index (`MIndex` / `S`) names,
            /// and every thread's pending operation can then be recovered (`recover` on a
            /// handle from [`register_as`](Self::register_as)).
            ///
            /// # Errors
            ///
            #[doc = concat!("[`CombBuildError::LayoutMismatch`] if the root is missing or is not a `", stringify!($T), "` of these")]
            /// types (or its header or current record is corrupt), [`CombBuildError::Region`] if
            /// the region refuses an access.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::{AtomicFloat, Counter}, pmem::Region, CombBuildError, ", stringify!($T), "};")]
            ///
            /// let region = Region::anonymous(7, 1 << 16)?;
            #[doc = concat!("let c = ", stringify!($T), "::create(region, Counter::default(), 2)?;")]
            /// let region = c.into_region().expect("created in a region");
            /// // A region without an object does not open.
            #[doc = concat!("let err = ", stringify!($T), "::<AtomicFloat, _>::open(Region::anonymous(7, 1 << 16)?).unwrap_err();")]
            /// assert!(matches!(err, CombBuildError::LayoutMismatch { .. }));
            #[doc = concat!("assert!(", stringify!($T), "::<Counter, _>::open(region).is_ok());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn open(region: Region<P>) -> Result<Self, CombBuildError> {
                Self::open_with_type_id(region, type_fingerprint::<D>())
            }

            /// [`open`](Self::open) for an object created by
            /// [`create_with_type_id`](Self::create_with_type_id) with `type_id`.
            ///
            /// # Errors
            ///
            /// As [`open`](Self::open); [`CombBuildError::LayoutMismatch`] when the object was
            /// created with another type id.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::Counter, pmem::Region, ", stringify!($T), "};")]
            /// let region = Region::anonymous(7, 1 << 16)?;
            #[doc = concat!("let c = ", stringify!($T), "::create_with_type_id(region, Counter::new(1), 1, 42)?;")]
            /// let region = c.into_region().expect("in a region");
            #[doc = concat!("assert!(", stringify!($T), "::<Counter, _>::open_with_type_id(region, 42).is_ok());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn open_with_type_id(region: Region<P>, type_id: u64) -> Result<Self, CombBuildError> {
                let obj = Object::open(region, Self::sizes(), type_id)?;
                Ok(Self { obj })
            }

            /// Gives back the region of a persistent object (`None` for a volatile one), e.g.
            /// to [`open`](Self::open) it again.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("assert!(", stringify!($T), "::new(Counter::default(), 1)?.into_region().is_none());")]
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
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("assert_eq!(", stringify!($T), "::new(Counter::default(), 3)?.max_threads(), 3);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn max_threads(&self) -> usize {
                self.obj.max_threads()
            }

            /// Registers the calling thread: claims the lowest free thread id.
            ///
            /// # Errors
            ///
            /// [`CombRegisterError::TooManyThreads`] if `max_threads` handles are alive.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("let c = ", stringify!($T), "::new(Counter::default(), 2)?;")]
            /// let a = c.register()?;
            /// let b = c.register()?;
            /// assert_eq!((a.id(), b.id()), (0, 1));
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn register(&self) -> Result<$H<'_, D, P>, CombRegisterError> {
                Ok(self.handle(Seat::any(&self.obj.slots)?))
            }

            /// Registers as thread `id`: after a crash, each thread reclaims its old id to
            /// recover its pending operation.
            ///
            /// # Errors
            ///
            /// [`CombRegisterError::OutOfRange`] if `id >= max_threads`, [`CombRegisterError::InUse`]
            /// if `id` has a live handle.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), ", CombRegisterError};")]
            #[doc = concat!("let c = ", stringify!($T), "::new(Counter::default(), 2)?;")]
            /// let h = c.register_as(1)?;
            /// assert_eq!(h.id(), 1);
            /// assert_eq!(c.register_as(1).unwrap_err(), CombRegisterError::InUse { id: 1 });
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn register_as(&self, id: usize) -> Result<$H<'_, D, P>, CombRegisterError> {
                Ok(self.handle(Seat::at(&self.obj.slots, id)?))
            }

            /// A handle for the claimed slot, its `activate` bit seeded from the current
            /// record so that the next announcement flips it (after a restart `Request` is
            /// zeroed but `Deactivate[id]` is whatever was persisted).
            fn handle<'a>(&'a self, seat: Seat<'a>) -> $H<'a, D, P> {
                let seq = self.obj.inst.seed(self.obj.words(), seat.id);
                $H {
                    obj: self,
                    seat,
                    seq,
                }
            }
        }
    };
}
pub(crate) use object_api;

/// The handle type of `$T` (`PBComb` or `PWFComb`, with the extra bounds `$b`) and what every
/// handle has regardless of the protocol: its thread id and sequence number (persisted in the
/// records, see [`crate::layout`]) and the thread's last applied operation.
macro_rules! handle_api {
    ($T:ident, $H:ident, [$($b:tt)*]) => {
        #[doc = concat!("A registered thread's access to a [`", stringify!($T), "`]. Dropping it frees its thread id.")]
        ///
        /// The handle carries the thread's sequence number: the `n`-th call of
        /// [`execute_mut`](Self::execute_mut) on this thread id passes `n` to the protocol
        /// (`n & 1` is the request's activate bit), and [`seq`](Self::seq) is the number of the
        /// *last* call. The number is persisted with the state, so after a crash a handle from
        /// `register_as(thread)` knows it: [`last_applied`](Self::last_applied) says which
        /// operation of the thread took effect last, with its response. A system that persisted
        /// `(op, n)` before a call can instead pass them to [`recover`](Self::recover) (paper
        /// §2), which re-executes the operation if it had not taken effect.
        ///
        /// # Examples
        ///
        /// ```
        #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
        #[doc = concat!("let c = ", stringify!($T), "::new(Counter::default(), 1)?;")]
        /// let mut h = c.register()?;
        /// assert_eq!(h.seq(), 0);
        /// assert_eq!(h.execute_mut(2), 0);
        /// assert_eq!(h.seq(), 1);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub struct $H<'a, D, P = NoPersist>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
            P: Persist,
        {
            obj: &'a $T<D, P>,
            seat: Seat<'a>,
            seq: u64,
        }

        impl<D, P> fmt::Debug for $H<'_, D, P>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
            P: Persist,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($H))
                    .field("id", &self.seat.id)
                    .field("seq", &self.seq)
                    .finish()
            }
        }

        impl<D, P> $H<'_, D, P>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            $($b)*
            P: Persist,
        {
            /// This thread's id, in `0..max_threads`.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("assert_eq!(", stringify!($T), "::new(Counter::default(), 1)?.register()?.id(), 0);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn id(&self) -> usize {
                self.seat.id
            }

            /// The sequence number of this thread's *last* operation; the next one gets
            /// `seq() + 1`.
            ///
            /// It is persisted: the record of every combining pass holds, per thread, the
            /// number of its last applied operation (modulo 2^32, in the word where the paper
            /// keeps the `Deactivate` bit), so a handle made after `open` (or for a slot that
            /// an earlier handle released) starts from the number of the slot's last operation
            /// that took effect. Operations numbered up to `seq()` took effect; none after it
            /// did. A thread that numbers its work can therefore resume after a crash without
            /// having persisted anything itself (see [`last_applied`](Self::last_applied)).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("let c = ", stringify!($T), "::new(Counter::default(), 1)?;")]
            /// let mut h = c.register()?;
            /// h.execute_mut(1);
            /// h.execute_mut(1);
            /// assert_eq!(h.seq(), 2);
            /// drop(h);
            /// assert_eq!(c.register()?.seq(), 2); // the slot's number is kept
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn seq(&self) -> u64 {
                self.seq
            }

            /// This thread's last operation that took effect: its number
            /// ([`seq`](Self::seq)) and its response, read from the current record (durable:
            /// an operation returns only once its record is persisted, and after `open` the
            /// records hold what was persisted). `(0, the response type's zero value)` for a
            /// slot that never ran an operation.
            ///
            /// This is recovery without arguments: after a crash, `register_as(thread)` then
            /// `last_applied()` says which of the thread's operations was the last to take
            /// effect and what it returned; every operation with a larger number did not take
            /// effect, and the thread continues with number `seq() + 1`. To re-execute a
            /// pending operation in the same call instead, use [`recover`](Self::recover) with
            /// the operation and its number.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::Counter, pmem::Region, ", stringify!($T), "};")]
            ///
            #[doc = concat!("let c = ", stringify!($T), "::create(Region::anonymous(0xC1, 1 << 16)?, Counter::default(), 2)?;")]
            /// let mut h = c.register_as(1)?;
            /// for i in 1..=3 {
            ///     h.execute_mut(i); // operation number i adds i
            /// }
            /// drop(h);
            /// // "Crash": reopen; thread 1's handle knows how far it got.
            #[doc = concat!("let c = ", stringify!($T), "::<Counter, _>::open(c.into_region().expect(\"in a region\"))?;")]
            /// let mut h = c.register_as(1)?;
            /// assert_eq!(h.last_applied(), (3, 3)); // operation 3 returned 1 + 2
            /// for i in h.seq() + 1..=5 {
            ///     h.execute_mut(i); // resume with operation 4
            /// }
            /// assert_eq!(h.execute(()), 15);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn last_applied(&self) -> (u64, D::Response) {
                let obj = &self.obj.obj;
                let (seq, ret) = obj.inst.last_applied(obj.words(), self.seat.id);
                (u64::from(seq), ret)
            }
        }
    };
}
pub(crate) use handle_api;
