//! What the four linked structures share around their protocol instances: the calls a handle
//! makes ([`Engine`], [`run`], [`recover`]), the thread slot a handle holds ([`Seat`]), and the
//! checks `open` makes of a structure's header ([`open_header`]) and of a stack's list
//! ([`walk_stack`]), and the audit of free nodes ([`audit_free`]).

use nr_core::Poisoned;

use super::store::{Header, Link, Pool, Store};
use super::{check_threads, AuditError, Options, Ret};
use crate::engine::pb::{Batch, Instance};
use crate::engine::pwf::{WfBatch, WfInstance};
use crate::error::CombBuildError;
pub(crate) use crate::memory::Place;
pub(crate) use crate::slots::Seat;
use crate::sync::AtomicU64;
use crate::Recovered;
use pmem::{Persist, Pod, Region};

/// A protocol instance (PBcomb's [`Instance`] or PWFcomb's [`WfInstance`]) served by the batch
/// `B`, as a handle calls it.
pub(crate) trait Engine<B> {
    /// A request.
    type Op;

    /// Thread `p`'s operation `op` numbered `seq`.
    fn execute<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: Self::Op,
        seq: u64,
    ) -> Result<Ret, Poisoned>;

    /// Recovery of thread `p`'s operation `op` numbered `seq`.
    fn recover<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: Self::Op,
        seq: u64,
    ) -> Result<Recovered<Ret>, Poisoned>;
}

impl<S, O, B> Engine<B> for Instance<S, O, Ret>
where
    S: Pod,
    O: Clone + Send + Sync,
    B: Batch<State = S, Op = O, Ret = Ret>,
{
    type Op = O;

    fn execute<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Ret, Poisoned> {
        Instance::execute(self, store.words(), store.persist(), batch, p, op, seq)
    }

    fn recover<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Recovered<Ret>, Poisoned> {
        Instance::recover(self, store.words(), store.persist(), batch, p, op, seq)
    }
}

impl<S, O, B> Engine<B> for WfInstance<S, O, Ret>
where
    S: Pod,
    O: Pod,
    B: WfBatch<State = S, Op = O, Ret = Ret>,
{
    type Op = O;

    fn execute<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Ret, Poisoned> {
        // Wait-free: no lock, nothing to poison (a panicking attempt installs nothing).
        Ok(WfInstance::execute(
            self,
            store.words(),
            store.persist(),
            batch,
            p,
            op,
            seq,
        ))
    }

    fn recover<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Recovered<Ret>, Poisoned> {
        Ok(WfInstance::recover(
            self,
            store.words(),
            store.persist(),
            batch,
            p,
            op,
            seq,
        ))
    }
}

/// Runs `op` as the next operation of the seat's thread on `engine`: `seq` (the number of the
/// thread's last operation on it) is advanced first.
pub(crate) fn run<E: Engine<B>, B, P: Persist, T>(
    engine: &E,
    store: &Store<P>,
    batch: &B,
    seat: &Seat<'_>,
    seq: &mut u64,
    op: E::Op,
    answer: fn(Ret) -> T,
) -> Result<T, Poisoned> {
    *seq += 1;
    engine.execute(store, batch, seat.id, op, *seq).map(answer)
}

/// Recovers the seat's thread's operation `op` numbered `seq` on `engine`; later operations
/// continue from `seq`.
#[allow(clippy::too_many_arguments)] // the instance, its memory and batch, and the call
pub(crate) fn recover<E: Engine<B>, B, P: Persist, T>(
    engine: &E,
    store: &Store<P>,
    batch: &B,
    seat: &Seat<'_>,
    last: &mut u64,
    op: E::Op,
    seq: u64,
    answer: fn(Ret) -> T,
) -> Result<Recovered<T>, Poisoned> {
    *last = seq;
    Ok(match engine.recover(store, batch, seat.id, op, seq)? {
        Recovered::Applied(r) => Recovered::Applied(answer(r)),
        Recovered::Reexecuted(r) => Recovered::Reexecuted(answer(r)),
    })
}

/// What a structure's header says, checked: the block, its thread count, capacity and
/// options.
pub(crate) struct Opened<P: Persist> {
    pub(crate) store: Store<P>,
    pub(crate) threads: usize,
    pub(crate) capacity: u32,
    pub(crate) options: Options,
}

/// Opens the structure with `magic` (named `kind`) at `region`'s root and checks its header:
/// a valid thread count, a capacity for which `total_words(capacity, threads)` is defined (see
/// [`node_count`]), and that many words.
pub(crate) fn open_header<P: Persist>(
    region: Region<P>,
    magic: u64,
    kind: &'static str,
    total_words: impl Fn(u32, usize) -> Option<usize>,
) -> Result<Opened<P>, CombBuildError> {
    let (store, head) = Store::open_structure(region, magic, kind)?;
    let mismatch = |detail| CombBuildError::LayoutMismatch { kind, detail };
    let threads = usize::try_from(head.threads)
        .ok()
        .filter(|&t| check_threads(t).is_ok())
        .ok_or(mismatch("bad max_threads in the header"))?;
    let (capacity, total) = u32::try_from(head.capacity)
        .ok()
        .and_then(|c| Some((c, total_words(c, threads)?)))
        .ok_or(mismatch("bad capacity"))?;
    if head.total_words != total as u64 {
        return Err(mismatch("the header's sizes do not match"));
    }
    Ok(Opened {
        store,
        threads,
        capacity,
        options: Options::from_bits(head.options),
    })
}

/// The number of pool nodes of a structure (named `kind`) holding `capacity` values for
/// `max_threads` threads: `chunks`
/// chunks of `capacity` nodes (1 for the blocking structures, one per thread for the
/// wait-free ones) and `extra` more (a queue's first dummy), checked (issue 19: sizes were
/// computed unchecked, and a capacity of 0 was accepted).
///
/// # Errors
///
/// [`CombBuildError::ZeroCapacity`] for a capacity of 0; [`CombBuildError::TooLarge`] when the count
/// is not below `u32::MAX` (a link is a node number plus one, in the 32 bits a node number has).
pub(crate) fn node_count(
    kind: &'static str,
    capacity: u32,
    max_threads: usize,
    chunks: usize,
    extra: u32,
) -> Result<u32, CombBuildError> {
    if capacity == 0 {
        return Err(CombBuildError::ZeroCapacity { kind });
    }
    (capacity as usize)
        .checked_mul(chunks)
        .and_then(|n| n.checked_add(extra as usize))
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n < u32::MAX)
        .ok_or(CombBuildError::TooLarge {
            kind,
            capacity: u64::from(capacity),
            max_threads,
        })
}

/// What building a structure returns.
pub(crate) type Built<T> = Result<T, CombBuildError>;

/// Words of a structure made of `parts` words, or `None` if the sum overflows.
pub(crate) fn words_of(parts: &[usize]) -> Option<usize> {
    parts.iter().try_fold(0usize, |sum, &p| sum.checked_add(p))
}

/// The header of a new structure.
pub(crate) fn header(
    magic: u64,
    threads: usize,
    capacity: u32,
    total_words: usize,
    options: Options,
) -> Header {
    Header {
        magic,
        threads: threads as u64,
        capacity: u64::from(capacity),
        total_words: total_words as u64,
        options: options.bits(),
    }
}

/// Walks a stack's list from `top`: which of the pool's nodes are on it, or why it is
/// malformed (a link out of the pool, a cycle, a length other than `len`).
pub(crate) fn walk_stack(
    w: &[AtomicU64],
    pool: &Pool,
    top: Link,
    len: u64,
) -> Result<Vec<bool>, String> {
    let mut on_list = vec![false; pool.nodes as usize];
    let mut link = top;
    let mut count = 0u64;
    while link != 0 {
        let node = pool
            .node_of(link)
            .ok_or_else(|| format!("link {link} out of the pool"))?;
        if std::mem::replace(&mut on_list[node as usize], true) {
            return Err(format!("node {node} is on the list twice (a cycle)"));
        }
        count += 1;
        link = pool.next(w, node);
    }
    if count != len {
        return Err(format!("{count} nodes on the list, length {len}"));
    }
    Ok(on_list)
}

/// Checks the free nodes `free` against the nodes `on_list`: each free node is in the pool,
/// free once and off the list, and with `recycling` every node is on the list or free.
pub(crate) fn audit_free(
    on_list: &[bool],
    free: impl IntoIterator<Item = u32>,
    recycling: bool,
) -> Result<(), AuditError> {
    let mut is_free = vec![false; on_list.len()];
    for n in free {
        let slot = is_free
            .get_mut(n as usize)
            .ok_or_else(|| AuditError(format!("free node {n} out of the pool")))?;
        if std::mem::replace(slot, true) {
            return Err(AuditError(format!("node {n} is free twice")));
        }
        if on_list[n as usize] {
            return Err(AuditError(format!("node {n} is both on the list and free")));
        }
    }
    if recycling {
        if let Some(n) = (0..on_list.len()).find(|&n| !on_list[n] && !is_free[n]) {
            return Err(AuditError(format!(
                "node {n} leaked: neither on the list nor free"
            )));
        }
    }
    Ok(())
}

/// What the generated accessors read from a structure.
pub(crate) struct Parts<'a> {
    pub(crate) slots: &'a crate::slots::Slots,
    pub(crate) options: Options,
    pub(crate) capacity: u32,
    pub(crate) threads: usize,
}

/// The constructors, accessors and registration every linked structure has, written once.
///
/// The structure `$T` (handle `$H`, a `$what` holding `$holds`, its words in `$store`)
/// provides `create_in(store, capacity, max_threads, options)`, `handle(seat)` and `parts()`;
/// the macro adds `nodes` and `total_words` (from the `nodes:` shape and the instance types),
/// `build` and the public constructors and accessors.
macro_rules! structure_api {
    (
        $T:ident, $H:ident, $what:literal, $holds:literal, store $($store:ident).+,
        nodes: per_thread $per_thread:literal, extra $extra:literal, instances $($inst:ty),+
    ) => {
        impl<P: Persist> $T<P> {
            /// Nodes of the pool: `capacity` (per thread, for a wait-free structure) and the
            /// extra ones (a queue's first dummy), checked by [`node_count`](shared::node_count).
            fn nodes(capacity: u32, max_threads: usize) -> Result<u32, CombBuildError> {
                let chunks = if $per_thread { max_threads } else { 1 };
                shared::node_count(KIND, capacity, max_threads, chunks, $extra)
            }

            /// Words of the structure: header line, instance(s), pool; `None` for a capacity
            /// [`nodes`](Self::nodes) refuses.
            fn total_words(capacity: u32, max_threads: usize) -> Option<usize> {
                let nodes = Self::nodes(capacity, max_threads).ok()?;
                shared::words_of(&[LINE_WORDS, $(<$inst>::words(max_threads),)+ Pool::words(nodes)])
            }

            /// Creates the structure in `place`: checks the sizes, then `create_in` on a block
            /// of `total_words` (persisted, and recorded as the root, by `Place::build`).
            fn build(
                place: Place<P>,
                capacity: u32,
                max_threads: usize,
                options: Options,
            ) -> Result<Self, CombBuildError> {
                check_threads(max_threads)?;
                Self::nodes(capacity, max_threads)?;
                let total = Self::total_words(capacity, max_threads).ok_or(CombBuildError::TooLarge {
                    kind: KIND,
                    capacity: u64::from(capacity),
                    max_threads,
                })?;
                place.build(
                    total,
                    |store| Self::create_in(store, capacity, max_threads, options),
                    |s| &s.$($store).+,
                )
            }
        }

        impl $T<NoPersist> {
            #[doc = concat!("A volatile ", $what, " (no persistence cost) holding ", $holds, ", for up to")]
            /// `max_threads` registered threads, with the default [`Options`] (elimination and
            /// recycling on).
            ///
            /// # Errors
            ///
            /// [`CombBuildError::InvalidMaxThreads`] if `max_threads` is 0 or above
            /// [`MAX_THREADS`](crate::MAX_THREADS).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let s = pcomb::structures::", stringify!($T), "::new(8, 1)?;")]
            /// assert_eq!(s.capacity(), 8);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn new(capacity: u32, max_threads: usize) -> Result<Self, CombBuildError> {
                Self::with_options(capacity, max_threads, Options::default())
            }

            /// [`new`](Self::new) with explicit [`Options`].
            ///
            /// # Errors
            ///
            /// As [`new`](Self::new).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::structures::{Options, ", stringify!($T), "};")]
            /// let o = Options { elimination: false, recycling: true };
            #[doc = concat!("assert_eq!(", stringify!($T), "::with_options(8, 1, o)?.options(), o);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn with_options(
                capacity: u32,
                max_threads: usize,
                options: Options,
            ) -> Result<Self, CombBuildError> {
                Self::with_persist(capacity, max_threads, options, NoPersist)
            }
        }

        impl<P: Persist> $T<P> {
            #[doc = concat!("Bytes a ", $what, " holding ", $holds, " for `max_threads` threads takes in a")]
            /// region (add the region's own header, 4 KiB, when sizing a region).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::structures::", stringify!($T), ";")]
            #[doc = concat!("assert!(", stringify!($T), "::<pcomb::NoPersist>::bytes_needed(1000, 4) >= 16_000);")]
            /// ```
            pub fn bytes_needed(capacity: u32, max_threads: usize) -> usize {
                // Saturates for the sizes `create` refuses as `TooLarge` (or `ZeroCapacity`).
                Self::total_words(capacity, max_threads).map_or(usize::MAX, |w| w.saturating_mul(8))
            }

            #[doc = concat!("A heap-backed ", $what, " like [`new`](", stringify!($T), "::new) whose persistence")]
            /// instructions go to `persist`: not durable, but with the exact pwb/pfence/psync
            /// sequence of the persistent structure (to count or cost it).
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`new`](", stringify!($T), "::new); [`CombBuildError::RegionTooSmall`] if the node")]
            /// pool cannot be named by 32-bit links.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{pmem, structures::{Options, ", stringify!($T), "}};")]
            #[doc = concat!("let s = ", stringify!($T), "::with_persist(8, 1, Options::default(), pmem::Hardware::no_flush())?;")]
            /// assert_eq!(s.max_threads(), 1);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn with_persist(
                capacity: u32,
                max_threads: usize,
                options: Options,
                persist: P,
            ) -> Result<Self, CombBuildError> {
                Self::build(Place::Heap(persist), capacity, max_threads, options)
            }

            #[doc = concat!("A persistent ", $what, " allocated in `region` (which becomes its owner) and")]
            /// recorded as the region's root; everything is persisted before this returns.
            ///
            /// # Errors
            ///
            /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`,
            /// [`CombBuildError::RegionTooSmall`] if the region has no room for
            /// [`bytes_needed`](Self::bytes_needed) bytes, [`CombBuildError::Region`] if the region
            /// refuses the allocation or the root.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{pmem::Region, structures::{Options, ", stringify!($T), "}};")]
            ///
            #[doc = concat!("let s = ", stringify!($T), "::create(Region::anonymous(1, 1 << 16)?, 100, 2, Options::default())?;")]
            #[doc = concat!("let s = ", stringify!($T), "::open(s.into_region().expect(\"in a region\"))?;")]
            /// assert_eq!((s.capacity(), s.max_threads()), (100, 2));
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn create(
                region: Region<P>,
                capacity: u32,
                max_threads: usize,
                options: Options,
            ) -> Result<Self, CombBuildError> {
                Self::build(Place::Region(region), capacity, max_threads, options)
            }

            #[doc = concat!("Gives back the region of a persistent ", $what, " (`None` for a volatile one).")]
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("assert!(pcomb::structures::", stringify!($T), "::new(1, 1)?.into_region().is_none());")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn into_region(self) -> Option<Region<P>> {
                self.into_store().into_region()
            }

            /// The capacity fixed at creation.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("assert_eq!(pcomb::structures::", stringify!($T), "::new(3, 1)?.capacity(), 3);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn capacity(&self) -> u32 {
                self.parts().capacity
            }

            /// The options fixed at creation.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let s = pcomb::structures::", stringify!($T), "::new(3, 1)?;")]
            /// assert_eq!(s.options(), pcomb::structures::Options::default());
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn options(&self) -> Options {
                self.parts().options
            }

            /// The `max_threads` fixed at creation.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("assert_eq!(pcomb::structures::", stringify!($T), "::new(3, 2)?.max_threads(), 2);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn max_threads(&self) -> usize {
                self.parts().threads
            }

            /// Registers the calling thread under the lowest free thread id.
            ///
            /// # Errors
            ///
            /// [`CombRegisterError::TooManyThreads`] if `max_threads` handles are alive.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let s = pcomb::structures::", stringify!($T), "::new(3, 1)?;")]
            /// let _h = s.register()?;
            /// assert!(s.register().is_err());
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn register(&self) -> Result<$H<'_, P>, CombRegisterError> {
                Ok(self.handle(Seat::any(self.parts().slots)?))
            }

            /// Registers as thread `id` (after a crash, to recover that thread's operations).
            ///
            /// # Errors
            ///
            /// [`CombRegisterError::OutOfRange`] if `id >= max_threads`, [`CombRegisterError::InUse`]
            /// if `id` has a live handle.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let s = pcomb::structures::", stringify!($T), "::new(3, 2)?;")]
            /// assert_eq!(s.register_as(1)?.id(), 1);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn register_as(&self, id: usize) -> Result<$H<'_, P>, CombRegisterError> {
                Ok(self.handle(Seat::at(self.parts().slots, id)?))
            }
        }
    };
}
pub(crate) use structure_api;

/// The handle type `$H` of the stack `$T` (whose instance `inst` takes requests `$Op`), with
/// what both stacks' handles share: the thread's seat and sequence number, `id`, `seq`, and the
/// private calls `run` / `recover` (through [`run`] and [`recover`], so `Poisoned` is the
/// blocking stack's; the wait-free one unwraps it, it cannot occur).
macro_rules! stack_handle {
    ($(#[$m:meta])* $H:ident for $T:ident, op $Op:ty) => {
        $(#[$m])*
        pub struct $H<'a, P: Persist = NoPersist> {
            stack: &'a $T<P>,
            seat: Seat<'a>,
            seq: u64,
        }

        impl<P: Persist> fmt::Debug for $H<'_, P> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($H))
                    .field("id", &self.seat.id)
                    .field("seq", &self.seq)
                    .finish()
            }
        }

        impl<P: Persist> $T<P> {
            fn handle<'a>(&'a self, seat: Seat<'a>) -> $H<'a, P> {
                let seq = self.inst.seed(self.core.store.words(), seat.id);
                $H { stack: self, seat, seq }
            }
        }

        impl<P: Persist> $H<'_, P> {
            fn run<T>(&mut self, op: $Op, answer: fn(Ret) -> T) -> Result<T, $crate::Poisoned> {
                let s = self.stack;
                let (store, seat) = (&s.core.store, &self.seat);
                shared::run(&s.inst, store, &s.core, seat, &mut self.seq, op, answer)
            }

            fn recover<T>(
                &mut self,
                op: $Op,
                seq: u64,
                answer: fn(Ret) -> T,
            ) -> Result<$crate::Recovered<T>, $crate::Poisoned> {
                let s = self.stack;
                let (store, seat, last) = (&s.core.store, &self.seat, &mut self.seq);
                shared::recover(&s.inst, store, &s.core, seat, last, op, seq, answer)
            }

            /// This thread's id.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("assert_eq!(pcomb::structures::", stringify!($T), "::new(1, 1)?.register()?.id(), 0);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn id(&self) -> usize {
                self.seat.id
            }

            /// The sequence number of this thread id's last operation (the next push or pop
            /// is `seq() + 1`).
            ///
            /// Persisted: a handle made after `open` starts from the number of the last one that
            /// took effect (see the [module docs](crate::structures)).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let s = pcomb::structures::", stringify!($T), "::new(1, 1)?;")]
            /// let mut h = s.register()?;
            /// let before = h.seq();
            /// h.pop();
            /// assert_eq!(h.seq(), before + 1);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn seq(&self) -> u64 {
                self.seq
            }
        }
    };
}
pub(crate) use stack_handle;

/// The handle type `$H` of the queue `$T` (instances `enq` and `deq`, batches `Enq(&shared)`
/// and `deq_batch()`, dequeue request `$deq`), with what both queues' handles share: the seat,
/// the two sequence numbers, `id`, `enqueue_seq`, `dequeue_seq`, and the private calls of the
/// four operations (returning the blocking queue's `Poisoned`; the wait-free one unwraps it).
macro_rules! queue_handle {
    ($(#[$m:meta])* $H:ident for $T:ident, dequeue op $deq:expr) => {
        $(#[$m])*
        pub struct $H<'a, P: Persist = NoPersist> {
            queue: &'a $T<P>,
            seat: Seat<'a>,
            enq_seq: u64,
            deq_seq: u64,
        }

        impl<P: Persist> fmt::Debug for $H<'_, P> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($H))
                    .field("id", &self.seat.id)
                    .field("enq_seq", &self.enq_seq)
                    .field("deq_seq", &self.deq_seq)
                    .finish()
            }
        }

        impl<P: Persist> $T<P> {
            fn handle<'a>(&'a self, seat: Seat<'a>) -> $H<'a, P> {
                let w = self.shared.store.words();
                $H {
                    queue: self,
                    enq_seq: self.enq.seed(w, seat.id),
                    deq_seq: self.deq.seed(w, seat.id),
                    seat,
                }
            }
        }

        impl<P: Persist> $H<'_, P> {
            fn enq(&mut self, value: u64) -> Result<Result<(), Full>, $crate::Poisoned> {
                let q = self.queue;
                let (s, seat, last) = (&q.shared, &self.seat, &mut self.enq_seq);
                shared::run(&q.enq, &s.store, &Enq(s), seat, last, value, unit_of)
            }

            fn deq(&mut self) -> Result<Option<u64>, $crate::Poisoned> {
                let q = self.queue;
                let (s, seat, last) = (&q.shared, &self.seat, &mut self.deq_seq);
                shared::run(&q.deq, &s.store, &q.deq_batch(), seat, last, $deq, value_of)
            }

            fn recover_enq(
                &mut self,
                value: u64,
                seq: u64,
            ) -> Result<Recovered<Result<(), Full>>, $crate::Poisoned> {
                let q = self.queue;
                let (s, seat, last) = (&q.shared, &self.seat, &mut self.enq_seq);
                shared::recover(&q.enq, &s.store, &Enq(s), seat, last, value, seq, unit_of)
            }

            fn recover_deq(&mut self, seq: u64) -> Result<Recovered<Option<u64>>, $crate::Poisoned> {
                let q = self.queue;
                let (s, seat, last) = (&q.shared, &self.seat, &mut self.deq_seq);
                let batch = &q.deq_batch();
                shared::recover(&q.deq, &s.store, batch, seat, last, $deq, seq, value_of)
            }

            /// This thread's id.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("assert_eq!(pcomb::structures::", stringify!($T), "::new(1, 1)?.register()?.id(), 0);")]
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn id(&self) -> usize {
                self.seat.id
            }

            /// The number of this thread id's last enqueue (the next one is
            /// `enqueue_seq() + 1`).
            ///
            /// Persisted: a handle made after `open` starts from the number of the last one that
            /// took effect (see the [module docs](crate::structures)).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let q = pcomb::structures::", stringify!($T), "::new(1, 1)?;")]
            /// let mut h = q.register()?;
            /// let before = h.enqueue_seq();
            /// h.enqueue(1)?;
            /// assert_eq!(h.enqueue_seq(), before + 1);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn enqueue_seq(&self) -> u64 {
                self.enq_seq
            }

            /// The number of this thread id's last dequeue (the next one is
            /// `dequeue_seq() + 1`).
            ///
            /// Persisted: a handle made after `open` starts from the number of the last one that
            /// took effect (see the [module docs](crate::structures)).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let q = pcomb::structures::", stringify!($T), "::new(1, 1)?;")]
            /// let mut h = q.register()?;
            /// let before = h.dequeue_seq();
            /// h.dequeue();
            /// assert_eq!(h.dequeue_seq(), before + 1);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn dequeue_seq(&self) -> u64 {
                self.deq_seq
            }
        }
    };
}
pub(crate) use queue_handle;
