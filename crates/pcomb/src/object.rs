//! What [`PBComb`](crate::PBComb) and [`PWFComb`](crate::PWFComb) share around their protocol
//! instance: the memory it lives in (header line, shared index, records: `layout.rs`), the
//! thread slots, and how an object is created (on the heap or in a region) and reopened.

use crate::config::MAX_THREADS;
use crate::engine::pb::Instance;
use crate::engine::pwf::WfInstance;
use crate::error::BuildError;
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
    /// Whether the persisted index and the current record's flags are in range.
    fn valid(&self, words: &[AtomicU64]) -> bool;
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
    fn valid(&self, words: &[AtomicU64]) -> bool {
        Instance::valid(self, words)
    }
    fn threads(&self) -> usize {
        Instance::threads(self)
    }
}

impl<S, O, R> Protocol for WfInstance<S, O, R>
where
    S: Pod,
    O: Pod,
    R: Pod,
{
    type State = S;
    const KIND: Kind = Kind::PWFComb;
    const NAME: &'static str = "PWFComb";

    fn layout(threads: usize) -> RecordLayout {
        WfInstance::<S, O, R>::layout(threads)
    }
    fn words(threads: usize) -> usize {
        WfInstance::<S, O, R>::words(threads)
    }
    fn new(threads: usize) -> Self {
        WfInstance::new(0, threads)
    }
    fn init(&self, words: &[AtomicU64], init: &S) {
        WfInstance::init(self, words, init);
    }
    fn valid(&self, words: &[AtomicU64]) -> bool {
        WfInstance::valid(self, words)
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
    fn layout_for(max_threads: usize) -> Result<RecordLayout, BuildError> {
        if max_threads == 0 || max_threads > MAX_THREADS {
            return Err(BuildError::InvalidMaxThreads {
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
    ) -> Result<Self, BuildError> {
        let layout = Self::layout_for(max_threads)?;
        let make = |mem| {
            // The initial record (Algorithm 1: MemState[0], MIndex = 0; Algorithm 3: the dummy
            // S points to); the header write persists everything, records included.
            let obj = Self::with_memory(mem, max_threads);
            obj.inst.init(obj.mem.words(), init);
            obj.mem.init_header(I::KIND, &layout, sizes, type_id);
            obj
        };
        place.build(I::words(max_threads), make, |obj| &obj.mem)
    }

    /// The object at `region`'s root, if its header matches `sizes` and `type_id` and its
    /// current record is well formed.
    pub(crate) fn open(
        region: Region<P>,
        sizes: [usize; 3],
        type_id: u64,
    ) -> Result<Self, BuildError> {
        let mismatch = |detail| BuildError::LayoutMismatch {
            kind: I::NAME,
            detail,
        };
        let (mem, head) = Memory::open(region, I::NAME)?;
        let threads = head[header::THREADS] as usize;
        let layout =
            Self::layout_for(threads).map_err(|_| mismatch("bad max_threads in the header"))?;
        mem.check_header(I::KIND, &layout, sizes, type_id)?;
        let obj = Self::with_memory(mem, threads);
        if !obj.inst.valid(obj.mem.words()) {
            return Err(mismatch(
                "the current record is not well formed: its index or a Deactivate/Index flag is \
                 out of range (corrupt)",
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
