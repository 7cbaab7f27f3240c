//! PBcomb with a self-naming state record: one write-back and one fence per combining pass
//! (issue 11, "Beyond the paper: fewer persists per pass"). The design and the argument are on
//! [`PBComb1`].

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;
use nr_core::{Dispatch, Poisoned};

use crate::config::MAX_THREADS;
use crate::error::{wrong_kind, CombBuildError, CombRegisterError};
use crate::fingerprint::type_fingerprint;
use crate::recovered::Recovered;
use crate::slots::Slots;
use crate::sync::{words_at, AtomicBool, AtomicU64, Ordering, UnsafeCell};
use crate::wait::Waiter;
use crate::words::{self, words_for};
use pmem::{NoPersist, Offset, Persist, Pod, Region};

/// The protocol's name in errors.
const KIND: &str = "PBComb1";
/// Words per cache line.
const LINE_WORDS: usize = 8;
/// Word index of slot 0 (slot 1 follows it).
const SLOTS_AT: usize = LINE_WORDS;

/// `ctrl` bit 0: the `activate` bit of Algorithm 1's `RequestRec`.
const ACTIVATE: u64 = 1;
/// `ctrl` bit 1: the `valid` bit (0 until the thread announces after a (re)start).
const VALID: u64 = 2;
/// `ctrl` bits 2..18: the request's sequence number mod 2^16 (its low bit is bit 0), written
/// to `Seq[p]` when the request is applied.
const SEQ_SHIFT: u32 = 2;
/// `Seq[q]` entries (16 bits each) per record word.
const SEQS_PER_WORD: usize = 4;
/// A thread persists its `Base[q]` before announcing an operation whose number is a multiple
/// of this: then `Base[q] - 1 <= S <= Base[q] + BASE_STEP - 1` for the number `S` of its last
/// applied operation, a window of fewer than 2^16 numbers, so `S` is the one number of the
/// window that `Seq[q]` (`S` mod 2^16) names.
const BASE_STEP: u64 = 1 << 15;

/// Header word indices.
mod header {
    pub(super) const MAGIC: usize = 0;
    pub(super) const THREADS: usize = 1;
    pub(super) const STATE_BYTES: usize = 2;
    pub(super) const RESPONSE_BYTES: usize = 3;
    pub(super) const RECORD_WORDS: usize = 4;
    /// Words covered by the checksum.
    pub(super) const CHECKED: usize = 6;
    pub(super) const CHECKSUM: usize = 6;
    pub(super) const TYPE_ID: usize = 7;
    pub(super) const MAGIC_VALUE: u64 = pmem::kinds::PBCOMB1_TAG;
    /// Format 1 (one `Deactivate` bit per thread, no sequence numbers, no `Base` words):
    /// recognized only to be refused with [`CombBuildError::OldFormat`](crate::CombBuildError).
    pub(super) const OLD_MAGIC_VALUE: u64 = u64::from_le_bytes(*b"PBCOMB1L");
}

/// Where the words of one record are, for `threads` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    threads: usize,
    state_words: usize,
    ret_words: usize,
    ret_at: usize,
    /// `Seq[0..n]`, 16 bits each, [`SEQS_PER_WORD`] per word.
    seq_at: usize,
    /// The `check` word: the record's last word.
    check_at: usize,
    /// Record length in words (a multiple of [`LINE_WORDS`]).
    len: usize,
}

impl Layout {
    fn new<D, R>(threads: usize) -> Self {
        let state_words = words_for::<D>();
        let ret_words = words_for::<R>();
        let ret_at = 1 + state_words;
        let seq_at = ret_at + threads * ret_words;
        let end = seq_at + threads.div_ceil(SEQS_PER_WORD) + 1;
        let len = end.div_ceil(LINE_WORDS) * LINE_WORDS;
        Self {
            threads,
            state_words,
            ret_words,
            ret_at,
            seq_at,
            check_at: len - 1,
            len,
        }
    }

    /// Word index of `Base[0]` (after the two slots; one word per thread, whole lines).
    fn bases_at(&self) -> usize {
        SLOTS_AT + 2 * self.len
    }

    /// Words of the whole object: header line, two records, the `Base` words.
    fn total_words(&self) -> usize {
        self.bases_at() + self.threads.div_ceil(LINE_WORDS) * LINE_WORDS
    }
}

/// A view of one record slot.
#[derive(Clone, Copy)]
struct Rec<'a, D, R> {
    words: &'a [AtomicU64],
    layout: &'a Layout,
    _types: PhantomData<fn() -> (D, R)>,
}

impl<'a, D: Pod, R: Pod> Rec<'a, D, R> {
    fn at(all: &'a [AtomicU64], layout: &'a Layout, slot: usize) -> Self {
        let start = SLOTS_AT + slot * layout.len;
        Self {
            words: &all[start..start + layout.len],
            layout,
            _types: PhantomData,
        }
    }

    fn pass(&self) -> u64 {
        // Acquire: as in `words::load` (pairs with the Release stores of the writer).
        self.words[0].load(Ordering::Acquire)
    }

    fn set_pass(&self, pass: u64) {
        // Release: as in `words::store`.
        self.words[0].store(pass, Ordering::Release);
    }

    fn state(&self) -> D {
        words::load(&self.words[1..1 + self.layout.state_words])
    }

    fn set_state(&self, st: &D) {
        words::store(&self.words[1..1 + self.layout.state_words], st);
    }

    fn ret(&self, q: usize) -> R {
        let at = self.layout.ret_at + q * self.layout.ret_words;
        words::load(&self.words[at..at + self.layout.ret_words])
    }

    fn set_ret(&self, q: usize, r: &R) {
        let at = self.layout.ret_at + q * self.layout.ret_words;
        words::store(&self.words[at..at + self.layout.ret_words], r);
    }

    /// `Seq[q]`: the number of thread `q`'s last applied operation, mod 2^16.
    fn seq(&self, q: usize) -> u16 {
        // Acquire: as in `words::load`.
        let w = self.words[self.layout.seq_at + q / SEQS_PER_WORD].load(Ordering::Acquire);
        (w >> (16 * (q % SEQS_PER_WORD))) as u16
    }

    /// `Deactivate[q]` (0 or 1): the low bit of `Seq[q]`.
    fn deact(&self, q: usize) -> u8 {
        (self.seq(q) & 1) as u8
    }

    /// Sets `Seq[q]`; only the record's single writer (the combiner) calls this.
    fn set_seq(&self, q: usize, seq: u16) {
        let word = &self.words[self.layout.seq_at + q / SEQS_PER_WORD];
        let shift = 16 * (q % SEQS_PER_WORD);
        // Relaxed: the caller is the only writer, it reads its own last store.
        let old = word.load(Ordering::Relaxed);
        let new = (old & !(0xFFFF << shift)) | (u64::from(seq) << shift);
        // Release: as in `words::store`.
        word.store(new, Ordering::Release);
    }

    /// The check the record's words call for.
    fn expected_check(&self) -> u64 {
        // Acquire: as in `words::load`.
        words::seal(
            self.words[..self.layout.check_at]
                .iter()
                .map(|w| w.load(Ordering::Acquire)),
        )
    }

    /// Writes the check word (last: the record is valid from this store on, if every other
    /// word is already in place).
    fn seal(&self) {
        let check = self.expected_check();
        // Release: as in `words::store`.
        self.words[self.layout.check_at].store(check, Ordering::Release);
    }

    /// Whether the record in slot `slot` is a complete, untorn record of that slot.
    fn valid(&self, slot: usize) -> bool {
        // Acquire: as in `words::load`.
        let check = self.words[self.layout.check_at].load(Ordering::Acquire);
        check == self.expected_check() && self.pass() % 2 == slot as u64
    }
}

/// Where the object's words are.
enum Backing<P: Persist> {
    /// A heap array (volatile objects, and every object under loom); the object's words are
    /// `words[start..start + len]`, `start` chosen so that they are line aligned (a one-line
    /// record is then written back with one pwb, also on the heap).
    Heap {
        words: Box<[AtomicU64]>,
        start: usize,
        len: usize,
        persist: P,
    },
    /// `len` words at `ptr` (64-byte aligned) in `region`'s mapping; only this object touches
    /// them, and only through atomics.
    Region {
        region: Region<P>,
        ptr: NonNull<u64>,
        len: usize,
    },
}

impl<P: Persist> Backing<P> {
    fn words(&self) -> &[AtomicU64] {
        match self {
            Backing::Heap {
                words, start, len, ..
            } => &words[*start..*start + *len],
            Backing::Region { ptr, len, .. } => {
                // SAFETY:
                // - `ptr` came from `Region::ptr_array` for `len` words: in bounds and aligned,
                //   and the mapping lives as long as `region`, hence as long as `&self`;
                // - this object accesses its words only through these atomics.
                unsafe { words_at(ptr.as_ptr(), *len) }
            }
        }
    }

    fn persist(&self) -> &P {
        match self {
            Backing::Heap { persist, .. } => persist,
            Backing::Region { region, .. } => region.persist(),
        }
    }
}

/// One `RequestRec` (Algorithm 1): the operation and a control word (bit 0 `activate`, bit 1
/// `valid`).
struct Request<Op> {
    ctrl: AtomicU64,
    /// Written only by the owner while its request is not active (equal activate/deactivate
    /// bits); read only by the combiner, under `Lock`, while the request is active.
    op: UnsafeCell<Option<Op>>,
}

/// A blocking, detectably recoverable combining object like [`PBComb`](crate::PBComb), whose
/// persisted state record names itself: **one write-back and one fence per combining pass**
/// when the record fits in a cache line (the paper's layout pays two of each).
///
/// Same API and same guarantees as `PBComb` (durable linearizability, `recover(op, seq)`
/// saying whether an interrupted operation took effect, per-thread sequence numbers persisted
/// with the state so that a reopened handle knows its `seq()` and `last_applied()`, a type
/// fingerprint checked by `open`), with a different persistent layout (see *Design* below for the layout and the argument, and *Design:
/// sizes* for which objects need one line). Differences a user sees:
///
/// - reads ([`execute`](PBComb1Handle::execute)) never take the lock (they validate a copy of
///   the current record, which is always durable);
/// - a region holding a `PBComb` does not open as a `PBComb1`, nor the other way round.
///
/// The paper's PBcomb (Algorithms 1-2) persists the new `StateRec` (line 22), fences (line 23),
/// flips `MIndex` and persists it (lines 25-27): two write-backs and two fences per pass, the
/// second pair only to say *which* record is current. Here each record names itself: it carries
/// the number of the pass that wrote it and a checksum over its words, and recovery picks the
/// newest record whose checksum holds. A pass is then "copy the current record into the other
/// slot, apply the batch, seal, one pwb of the record, one psync", and the record it replaced
/// (two passes old) was already superseded by a durable one.
///
/// # Design: persistent layout
///
/// ```text
/// word 0..8        header line: magic "PBCOM1L2" (format 2), max threads, sizes of D /
///                  response, record length in words, (0), header checksum, type fingerprint
/// word 8..8+L      slot 0 \  L = record length, a whole number of cache lines,
/// word 8+L..8+2L   slot 1 /  line aligned
/// word 8+2L..      Base[0..n], one word per thread, whole lines
/// ```
///
/// A record (`L` words):
///
/// ```text
/// pass | st (state words) | ReturnVal[0..n] | Seq[0..n] (16 bits per thread) | 0.. | check
/// ```
///
/// - `pass`: the number of the combining pass that wrote it (0: the initial record); a record
///   with pass `k` lives in slot `k % 2`, so pass `k + 1` overwrites pass `k - 1`, never `k`;
/// - `check`: a 64-bit hash of every other word of the record (pass included);
/// - `Seq[q]`: the number of thread `q`'s last applied operation mod 2^16, whose low bit is the
///   paper's `Deactivate[q]` (format 1 kept only that bit, so a reopened handle restarted at
///   `seq() == 0` or `1`). The full number is `Seq[q]` and `Base[q]`: thread `q` persists
///   `Base[q] := n` before it announces an operation whose number `n` is a multiple of 2^15,
///   so its last applied number is the one number in `Base[q] - 1 ..= Base[q] + 2^16 - 2` that
///   is `Seq[q]` mod 2^16 (one extra pwb and psync per 2^15 operations of a thread; 16 bits
///   per thread keep an 8-byte state with 8-byte responses in one line up to 4 threads, as
///   the `Deactivate` bits did). A reopened handle's [`seq`](PBComb1Handle::seq) and
///   [`last_applied`](PBComb1Handle::last_applied) are that number (all 64 bits; `PBComb`
///   keeps them mod 2^32).
///
/// A record is *valid* when its `check` matches and its `pass` has its slot's parity. Recovery
/// ([`PBComb1::open`]) takes the valid record with the larger pass. Why that is the last
/// durable state:
///
/// 1. a combiner of pass `k + 1` starts only after pass `k` was persisted (its pwb and psync
///    precede the release of `Lock`), so the slot it overwrites holds pass `k - 1`, already
///    superseded by a durable record;
/// 2. a crash while pass `k + 1`'s record is being written or written back leaves, in its
///    slot, any mix of its words and pass `k - 1`'s (only aligned 8-byte words are
///    failure-atomic): either exactly the new record (valid, and the newest: pass `k + 1` may
///    take effect, its operations were not acknowledged yet), or a mix that the checksum
///    rejects (probability of a false accept: about 2^-64 per torn record: a full 64-bit hash
///    here, where `PWFComb1`'s forces a bit), or the old record
///    (valid, older than `k`);
/// 3. so the slots always hold pass `k` (durable, valid) and `k - 1` or `k + 1` or garbage.
/// 4. *across crashes*: the first pass after a recovery to pass `k` reuses pass `k + 1`'s slot
///    and number, and may leave that slot's check word alone until its `seal`. If the crash
///    left there a torn pass `k + 1` whose check line was persisted (a record of two lines or
///    more), a rebuild whose lines all equal the pre-crash ones (a re-run pending operation
///    does that) could be validated by the old check while the rebuild's own check line is not
///    yet written back, and a second crash would recover the pre-crash batch: operations that
///    the first recovery reported as not applied, among them those of threads that did not
///    re-run them (a thread that went on from `seq()`, its next number reused: `recover` then
///    says `Applied` for an operation that never took effect). So `open` *scrubs* the other
///    slot first: its check becomes one its words do not call for, written back and fenced,
///    before any pass (one store, one pwb, one psync per `open`; nothing per pass). Every
///    check on the media is then the recovered record's, the scrubbed one, or one sealed since
///    the last `open`, after any number of crashes; a crash during the scrub leaves the
///    recovered record as it was (the next `open` chooses it again).
///    `tests::a_check_left_by_a_crash_does_not_validate_a_later_rebuild` is that case.
///
/// # Design: hand-off
///
/// The index of the current record is *volatile* (`current`, the pass number, in DRAM): a
/// combiner publishes it after the psync, so every record a thread can see is durable. That
/// removes the paper's `LockVal` (line 12: a waiter that found its request served in a record
/// not yet persisted had to wait for the next combiner), and lets reads skip the lock: a read
/// copies the current record and re-reads `current`; unchanged means no combiner has started
/// overwriting that slot (which needs two later passes). Writes still go through `Lock` as in
/// Algorithm 2 (lines 5-11).
///
/// # Design: sizes
///
/// Every `Pod` state and response and any `max_threads` up to
/// [`MAX_THREADS`] are supported; the record takes
/// `2 + words(D) + n * words(R) + ceil(n / 4)` words rounded up to whole lines, and a pass
/// writes back that many lines (still one fence). One line, so one write-back per pass, holds
/// `words(D) + n * words(R) + ceil(n / 4) <= 6`: an 8-byte state with 8-byte responses
/// (the AtomicFloat, the counter) for up to 4 threads. [`PBComb1::record_lines`] says how many
/// lines a given object uses.
///
/// # Examples
///
/// ```
/// use pcomb::objects::Counter;
/// use pcomb::pmem::Region;
/// use pcomb::{PBComb1, Recovered};
///
/// let region = Region::anonymous(7, 1 << 16)?;
/// let c = PBComb1::create(region, Counter::default(), 4)?;
/// assert_eq!(c.record_lines(), 1); // one pwb per pass
/// std::thread::scope(|s| {
///     for t in 0..4 {
///         let c = &c;
///         s.spawn(move || {
///             let mut h = c.register_as(t).expect("4 slots");
///             for _ in 0..100 {
///                 h.execute_mut(1);
///             }
///         });
///     }
/// });
/// // Reopen (as after a crash): thread 0's handle knows its last operation (number 100,
/// // persisted with the state); recover(op, seq) answers for a given operation.
/// let c = PBComb1::<Counter, _>::open(c.into_region().expect("persistent"))?;
/// let mut h = c.register_as(0)?;
/// assert_eq!(h.seq(), 100);
/// assert!(matches!(h.recover(1, 100), Recovered::Applied(_)));
/// assert_eq!(h.execute(()), 400);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PBComb1<D, P = NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    backing: Backing<P>,
    layout: Layout,
    /// The pass number of the current record (volatile; published after its psync).
    current: CachePadded<AtomicU64>,
    /// Odd: taken by the combiner whose value it is; even: free (Algorithm 1 `Lock`).
    lock: CachePadded<AtomicU64>,
    requests: Box<[CachePadded<Request<D::WriteOperation>>]>,
    slots: Slots,
    poisoned: AtomicBool,
    _state: PhantomData<fn() -> D>,
}

// SAFETY:
// - `Backing::Region`'s `ptr` points into the mapping owned by the `Region` stored beside it,
//   which is `Send + Sync`; the words are only accessed through atomics;
// - the `UnsafeCell<Option<Op>>` slots hold `D::WriteOperation: Send + Sync` values that one
//   thread writes and another clones, under the protocol described on `Request::op`;
// - `D` and `D::Response` are `Pod` (`Send + Sync`) and are only stored in atomic words.
unsafe impl<D, P> Send for PBComb1<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
}

// SAFETY: as for `Send`: all shared mutation goes through atomics, and the request cells follow
// the owner-writes-while-inactive / combiner-reads-while-active protocol.
unsafe impl<D, P> Sync for PBComb1<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
}

impl<D, P> fmt::Debug for PBComb1<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBComb1")
            .field("max_threads", &self.layout.threads)
            .field("record_lines", &self.record_lines())
            // Relaxed: diagnostic snapshots.
            .field("pass", &self.current.load(Ordering::Relaxed))
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<D> PBComb1<D, NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
{
    /// A volatile object (no persistence cost) holding `init`, for up to `max_threads`
    /// concurrently registered threads.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::InvalidMaxThreads`] if `max_threads` is 0 or above
    /// [`MAX_THREADS`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::AtomicFloat, PBComb1};
    ///
    /// let f = PBComb1::new(AtomicFloat::new(1.0), 2)?;
    /// let mut h = f.register()?;
    /// assert_eq!(f64::from_bits(h.execute_mut(2.0f64.to_bits())), 1.0);
    /// assert_eq!(f64::from_bits(h.execute(())), 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(init: D, max_threads: usize) -> Result<Self, CombBuildError> {
        Self::with_persist(init, max_threads, NoPersist)
    }
}

impl<D, P> PBComb1<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    /// A heap-backed object like [`new`](PBComb1::new), with every persistence instruction
    /// sent to `persist` (no durability: the words are not in a region), e.g. to count them.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem, PBComb1};
    ///
    /// let c = PBComb1::with_persist(Counter::default(), 1, pmem::Hardware::new())?;
    /// let mut h = c.register()?;
    /// pmem::reset_stats();
    /// h.execute_mut(1);
    /// let s = pmem::stats();
    /// assert_eq!((s.pwbs, s.pfences, s.psyncs), (1, 0, 1)); // one line, one fence
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_persist(init: D, max_threads: usize, persist: P) -> Result<Self, CombBuildError> {
        let layout = Self::layout_for(max_threads)?;
        let len = layout.total_words();
        let words = words::reserve(len + LINE_WORDS - 1)?;
        let line = LINE_WORDS * 8;
        let start = (line - words.as_ptr() as usize % line) % line / 8;
        let backing = Backing::Heap {
            words,
            start,
            len,
            persist,
        };
        Ok(Self::create_in(
            backing,
            layout,
            &init,
            type_fingerprint::<D>(),
        ))
    }

    /// A persistent object holding `init`, allocated in `region` (which becomes its owner) and
    /// recorded as the region's root, for up to `max_threads` registered threads. Everything is
    /// persisted before this returns.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::InvalidMaxThreads`] for a bad `max_threads`,
    /// [`CombBuildError::RegionTooSmall`] if the region has no room, [`CombBuildError::Region`] if the
    /// region refuses the allocation or the root.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb1};
    ///
    /// let c = PBComb1::create(Region::anonymous(7, 1 << 16)?, Counter::new(1), 2)?;
    /// assert_eq!(c.register()?.execute_mut(1), 1);
    /// let c = PBComb1::<Counter, _>::open(c.into_region().expect("created in a region"))?;
    /// assert_eq!(c.register()?.execute(()), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(region: Region<P>, init: D, max_threads: usize) -> Result<Self, CombBuildError> {
        Self::create_with_type_id(region, init, max_threads, type_fingerprint::<D>())
    }

    /// [`create`](Self::create) with the type fingerprint `type_id` chosen by the caller
    /// instead of [`type_fingerprint::<D>()`](crate::type_fingerprint); the object then opens
    /// only with [`open_with_type_id`](Self::open_with_type_id) and the same id.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb1};
    ///
    /// let c = PBComb1::create_with_type_id(Region::anonymous(7, 1 << 16)?, Counter::new(1), 1, 42)?;
    /// let region = c.into_region().expect("in a region");
    /// let c = PBComb1::<Counter, _>::open_with_type_id(region, 42)?;
    /// let region = c.into_region().expect("in a region");
    /// assert!(PBComb1::<Counter, _>::open(region).is_err()); // the default fingerprint differs
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_with_type_id(
        region: Region<P>,
        init: D,
        max_threads: usize,
        type_id: u64,
    ) -> Result<Self, CombBuildError> {
        let layout = Self::layout_for(max_threads)?;
        let len = layout.total_words();
        let off = crate::memory::alloc_words(&region, len)?;
        let ptr = region
            .ptr_array::<u64>(off, len as u64)
            .map_err(region_err)?;
        let obj = Self::create_in(Backing::Region { region, ptr, len }, layout, &init, type_id);
        if let Backing::Region { region, .. } = &obj.backing {
            // Persisted by `set_root`, after the object (`create_in` ends with a psync).
            region.set_root(off).map_err(region_err)?;
        }
        Ok(obj)
    }

    /// Reopens the object at `region`'s root after a restart or crash: its state is the newest
    /// valid record (see [`PBComb1`], *Design*); each thread's pending operation can then be
    /// [`recover`](PBComb1Handle::recover)ed.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::LayoutMismatch`] if the root is missing, is not a `PBComb1` of these types
    /// (magic, header checksum, sizes, thread count, type fingerprint) or holds no valid record;
    /// [`CombBuildError::Region`] if the root lies outside the region.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::{AtomicFloat, Counter}, pmem::Region, CombBuildError, PBComb1};
    ///
    /// let c = PBComb1::create(Region::anonymous(7, 1 << 16)?, Counter::default(), 2)?;
    /// let region = c.into_region().expect("created in a region");
    /// let err = PBComb1::<AtomicFloat, _>::open(Region::anonymous(7, 1 << 16)?).unwrap_err();
    /// assert!(matches!(err, CombBuildError::LayoutMismatch { .. }));
    /// assert!(PBComb1::<Counter, _>::open(region).is_ok());
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
    /// As [`open`](Self::open); [`CombBuildError::LayoutMismatch`] when the object was created with
    /// another type id.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb1};
    /// let c = PBComb1::create_with_type_id(Region::anonymous(7, 1 << 16)?, Counter::new(1), 1, 9)?;
    /// let region = c.into_region().expect("in a region");
    /// assert!(PBComb1::<Counter, _>::open_with_type_id(region, 9).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_type_id(region: Region<P>, type_id: u64) -> Result<Self, CombBuildError> {
        let mismatch = |detail| CombBuildError::LayoutMismatch { kind: KIND, detail };
        let off = region.root().ok_or_else(|| {
            wrong_kind(
                region.kind(),
                KIND,
                mismatch("the region has no root object"),
            )
        })?;
        let head = read_words(&region, off, LINE_WORDS)?;
        if head[header::MAGIC] == header::OLD_MAGIC_VALUE {
            return Err(CombBuildError::OldFormat {
                kind: KIND,
                found: 1,
            });
        }
        if head[header::MAGIC] != header::MAGIC_VALUE {
            return Err(wrong_kind(
                region.kind(),
                KIND,
                mismatch("wrong magic (another protocol, or not an object root)"),
            ));
        }
        if head[header::CHECKSUM] != fnv(&head[..header::CHECKED]) {
            return Err(mismatch("header checksum does not match (corrupt header)"));
        }
        let threads = head[header::THREADS] as usize;
        let layout =
            Self::layout_for(threads).map_err(|_| mismatch("bad max_threads in the header"))?;
        if head[..header::CHECKED] != header_values(&layout)[..header::CHECKED] {
            return Err(mismatch("different state or response sizes"));
        }
        if head[header::TYPE_ID] != type_id {
            return Err(mismatch(
                "a different type fingerprint (created with another state type, or another type id)",
            ));
        }
        let len = layout.total_words();
        let ptr = region
            .ptr_array::<u64>(off, len as u64)
            .map_err(region_err)?;
        if !(ptr.as_ptr() as usize).is_multiple_of(LINE_WORDS * 8) {
            return Err(mismatch("the object is not cache-line aligned"));
        }
        let backing = Backing::Region { region, ptr, len };
        let pass =
            recover_current::<D, D::Response, P>(backing.words(), &layout, backing.persist())
                .ok_or(mismatch(
                    "no valid state record (both slots torn or corrupt)",
                ))?;
        Ok(Self::with_backing(backing, layout, pass))
    }

    /// Gives back the region of a persistent object (`None` for a volatile one).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// assert!(PBComb1::new(Counter::default(), 1)?.into_region().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_region(self) -> Option<Region<P>> {
        match self.backing {
            Backing::Heap { .. } => None,
            Backing::Region { region, .. } => Some(region),
        }
    }

    /// The `max_threads` fixed at construction.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// assert_eq!(PBComb1::new(Counter::default(), 3)?.max_threads(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_threads(&self) -> usize {
        self.layout.threads
    }

    /// Cache lines per record: the write-backs of one combining pass (one for small states,
    /// see [`PBComb1`], *Design: sizes*).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, PBComb1};
    /// assert_eq!(PBComb1::new(Counter::default(), 4)?.record_lines(), 1);
    /// assert_eq!(PBComb1::new(Counter::default(), 8)?.record_lines(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_lines(&self) -> usize {
        self.layout.len / LINE_WORDS
    }

    /// The number of combining passes that changed the state since creation (persisted in the
    /// current record, so it survives `open`).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::default(), 1)?;
    /// c.register()?.execute_mut(1);
    /// assert_eq!(c.passes(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn passes(&self) -> u64 {
        // Acquire: pairs with the Release in `publish`.
        self.current.load(Ordering::Acquire)
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
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::default(), 2)?;
    /// let (a, b) = (c.register()?, c.register()?);
    /// assert_eq!((a.id(), b.id()), (0, 1));
    /// assert!(c.register().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self) -> Result<PBComb1Handle<'_, D, P>, CombRegisterError> {
        let id = self.slots.claim_any()?;
        Ok(self.handle(id))
    }

    /// Registers as thread `id`: after a crash, each thread reclaims its old id to
    /// [`recover`](PBComb1Handle::recover) its pending operation.
    ///
    /// # Errors
    ///
    /// [`CombRegisterError::OutOfRange`] if `id >= max_threads`, [`CombRegisterError::InUse`] if `id`
    /// has a live handle.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1, CombRegisterError};
    /// let c = PBComb1::new(Counter::default(), 2)?;
    /// let h = c.register_as(1)?;
    /// assert_eq!(c.register_as(1).unwrap_err(), CombRegisterError::InUse { id: 1 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_as(&self, id: usize) -> Result<PBComb1Handle<'_, D, P>, CombRegisterError> {
        self.slots.claim(id)?;
        Ok(self.handle(id))
    }

    fn layout_for(max_threads: usize) -> Result<Layout, CombBuildError> {
        if max_threads == 0 || max_threads > MAX_THREADS {
            return Err(CombBuildError::InvalidMaxThreads {
                requested: max_threads,
                limit: MAX_THREADS,
            });
        }
        Ok(Layout::new::<D, D::Response>(max_threads))
    }

    /// Initializes the (zeroed or reused) words as a fresh object holding `init`: header,
    /// slot 0 = the sealed record of pass 0, slot 1 = zeros (invalid: wrong parity and check);
    /// then persists everything (pwb of every word, psync).
    fn create_in(backing: Backing<P>, layout: Layout, init: &D, type_id: u64) -> Self {
        let w = backing.words();
        for (word, v) in w.iter().zip(header_values(&layout)) {
            // Relaxed: the object is not shared yet; the psync below and the handover of the
            // object to other threads (by reference, a synchronizing operation) publish it.
            word.store(v, Ordering::Relaxed);
        }
        // Relaxed: as above.
        w[header::TYPE_ID].store(type_id, Ordering::Relaxed);
        for word in &w[SLOTS_AT..] {
            // Relaxed: as above.
            word.store(0, Ordering::Relaxed);
        }
        let first = Rec::<D, D::Response>::at(w, &layout, 0);
        first.set_state(init);
        first.seal();
        let persist = backing.persist();
        persist.pwb_val(w); // creation: the whole object
        persist.psync(); // creation: durable before the root names it
        Self::with_backing(backing, layout, 0)
    }

    /// The object over initialized words whose current record has pass `pass`, with fresh
    /// volatile variables (`Request` zeroed: every `valid` bit is 0).
    fn with_backing(backing: Backing<P>, layout: Layout, pass: u64) -> Self {
        let n = layout.threads;
        Self {
            backing,
            layout,
            current: CachePadded::new(AtomicU64::new(pass)),
            lock: CachePadded::new(AtomicU64::new(0)),
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

    /// A handle for the claimed slot `id`, its `activate` bit seeded from the current record so
    /// that the next announcement flips it.
    fn handle(&self, id: usize) -> PBComb1Handle<'_, D, P> {
        let seq = self.last_applied(id).0;
        // Release: pairs with the combiner's Acquire load of `ctrl`; valid = 0 until the first
        // announcement.
        self.requests[id]
            .ctrl
            .store(seq & ACTIVATE, Ordering::Release);
        PBComb1Handle { obj: self, id, seq }
    }

    /// `Base[q]`: a number persisted by thread `q` (see [`BASE_STEP`]).
    fn base(&self, q: usize) -> &AtomicU64 {
        &self.backing.words()[self.layout.bases_at() + q]
    }

    /// Thread `q`'s last applied operation: its full number (from `Seq[q]` of the current
    /// record and `Base[q]`) and its response. Called by the holder of slot `q` only, while it
    /// runs no operation (then neither `Seq[q]` nor `Base[q]` changes).
    fn last_applied(&self, q: usize) -> (u64, D::Response) {
        let (low, ret) = self.read(|r| (r.seq(q), r.ret(q)));
        // Acquire: pairs with the Release in `begin` of the slot's previous holder (also
        // ordered by the slot's claim, which pairs with that holder's release).
        let base = self.base(q).load(Ordering::Acquire);
        (full_seq(low, base), ret)
    }

    /// Before thread `q` announces its operation number `seq`: at each multiple of
    /// [`BASE_STEP`], persists `Base[q] := seq` (one pwb and one psync per 2^15 operations),
    /// so that the full numbers survive a crash while the record keeps 16 bits per thread.
    #[inline]
    fn begin(&self, q: usize, seq: u64) {
        if seq.is_multiple_of(BASE_STEP) {
            self.persist_base(q, seq);
        }
    }

    #[cold]
    fn persist_base(&self, q: usize, seq: u64) {
        let base = self.base(q);
        // Release: pairs with the Acquire in `last_applied` (a later holder of the slot).
        base.store(seq, Ordering::Release);
        let persist = self.backing.persist();
        persist.pwb_val(base); // Base[q]: before the operation is announced
        persist.psync(); // Base[q]: durable before the operation can take effect
    }

    fn record(&self, pass: u64) -> Rec<'_, D, D::Response> {
        Rec::at(self.backing.words(), &self.layout, (pass % 2) as usize)
    }

    /// Runs `f` on a consistent view of the current record (always a durable one): reads
    /// `current`, runs `f` on its slot, and retries if `current` moved meanwhile.
    ///
    /// A slot is rewritten only by the combiner of the pass two after the one it holds, which
    /// starts after the pass in between was published; so if `current` still reads `k` after
    /// `f`, no word `f` read came from a later pass (`f`'s loads are Acquire and the stores of
    /// a combiner are Release: had one of them been seen, so would the store of `k + 1` to
    /// `current` that precedes it). Torn values are `Pod`, so `f` is harmless on them; they are
    /// discarded.
    #[inline]
    fn read<T>(&self, f: impl Fn(Rec<'_, D, D::Response>) -> T) -> T {
        loop {
            // Acquire: pairs with the Release in `publish`: the record's words are visible.
            let k = self.current.load(Ordering::Acquire);
            let out = f(self.record(k));
            // Acquire: keeps this load after the record loads (see above).
            if self.current.load(Ordering::Acquire) == k {
                return out;
            }
        }
    }

    #[inline]
    fn check_poison(&self) -> Result<(), Poisoned> {
        // Acquire: pairs with the Release in `Unlock::drop`.
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Poisoned);
        }
        Ok(())
    }

    /// Algorithm 1 line 1 / line 3: `Request[p] := <op, act, 1>` for the operation numbered
    /// `seq` (`act` its low bit).
    fn announce(&self, p: usize, op: D::WriteOperation, seq: u64) {
        let act = seq & ACTIVATE;
        let req = &self.requests[p];
        // SAFETY:
        // - only thread `p` (the owner of the live handle for slot `p`) writes this cell;
        // - `p`'s previous request is not active (its bits are equal in the current record,
        //   or `valid` is 0), so no combiner reads the cell now: a combiner reads it only after
        //   loading a `ctrl` whose activate bit differs from its record's `Deactivate[p]`, and
        //   the store below is what makes them differ.
        req.op.with_mut(|cell| unsafe { *cell = Some(op) });
        // Release: pairs with the combiner's Acquire load of `ctrl`, which then sees the
        // operation written above.
        let low = u64::from(seq as u16) << SEQ_SHIFT;
        req.ctrl.store(low | act | VALID, Ordering::Release);
    }

    /// Algorithm 2 `PerformRequest` (lines 5-13) for thread `p` whose pending request has
    /// activate bit `act`. Without `LockVal`: a record a waiter can see is durable.
    fn perform(&self, p: usize, act: u8) -> Result<D::Response, Poisoned> {
        loop {
            self.check_poison()?;
            // Acquire: pairs with the Release of `Lock` in `Unlock::drop`.
            let mut lval = self.lock.load(Ordering::Acquire);
            if lval.is_multiple_of(2) {
                // Acquire: pairs with the previous combiner's Release in `Unlock::drop`.
                if self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Ok(self.combine(lval + 1, p));
                }
                lval += 1;
            }
            self.wait_while_lock_is(lval);
            self.check_poison()?;
            let (deact, ret) = self.read(|r| (r.deact(p), r.ret(p)));
            if deact == act {
                return Ok(ret);
            }
        }
    }

    /// Waits until `Lock != value` (spin, then yield).
    fn wait_while_lock_is(&self, value: u64) {
        let mut waiter = Waiter::default();
        // Acquire: pairs with the Release of `Lock` in `Unlock::drop`.
        while self.lock.load(Ordering::Acquire) == value {
            waiter.snooze();
        }
    }

    /// Makes pass `pass` the current one (volatile; after its record is durable).
    #[inline]
    fn publish(&self, pass: u64) {
        // Release: pairs with the Acquire loads in `read` and `passes`.
        self.current.store(pass, Ordering::Release);
    }

    /// A combining pass by the holder of `Lock == lval` (odd), for its own request `own`:
    /// builds the next record in the other slot, persists it (one pwb of the record, one
    /// psync), publishes it, releases the lock. Returns `ReturnVal[own]`.
    fn combine(&self, lval: u64, own: usize) -> D::Response {
        let unlock = Unlock { obj: self, lval };
        // Relaxed: we hold the lock; our Acquire CAS on `Lock` pairs with the previous
        // combiner's Release, which follows its `publish`.
        let k = self.current.load(Ordering::Relaxed);
        let cur = self.record(k);
        let next = self.record(k.wrapping_add(1));
        // The pass number first, the check last: until `seal`, the slot holds no valid record
        // (the check word is still pass k - 1's, over other words).
        next.set_pass(k.wrapping_add(1));
        words::copy(
            &next.words[1..self.layout.check_at],
            &cur.words[1..self.layout.check_at],
        );
        let mut st = next.state();
        let mut applied = false;
        for (q, req) in self.requests.iter().enumerate() {
            // Acquire: pairs with the Release in `announce`.
            let ctrl = req.ctrl.load(Ordering::Acquire);
            let act = (ctrl & ACTIVATE) as u8;
            // q has a valid request that is not yet applied (Algorithm 2 line 17).
            if ctrl & VALID != 0 && act != next.deact(q) {
                // SAFETY:
                // - the request is active (`act != Deactivate[q]` in the current record), so
                //   its owner does not write the cell until a record with equal bits is
                //   published, which only this combiner (holding `Lock`) can do;
                // - no other thread reads it: only the lock holder reads request cells.
                let op = req.op.with(|cell| unsafe { (*cell).clone() });
                let op = op.expect("invariant: an active, valid request has an operation");
                let ret = st.dispatch_mut(op);
                next.set_ret(q, &ret);
                next.set_seq(q, (ctrl >> SEQ_SHIFT) as u16); // Deactivate[q] := its low bit
                applied = true;
            }
        }
        if !applied {
            // Our own request was served by the previous combiner (whose record is durable
            // and current): nothing to persist. The slot we wrote to holds no valid record.
            let ret = cur.ret(own);
            drop(unlock);
            return ret;
        }
        next.set_state(&st);
        next.seal();
        let persist = self.backing.persist();
        persist.pwb_val(next.words); // the record: its only write-back
        persist.psync(); // the pass's only fence
        self.publish(k.wrapping_add(1));
        let ret = next.ret(own);
        drop(unlock);
        ret
    }
}

/// Releases `Lock` when dropped; if dropped by a panic in `dispatch_mut`, poisons the object
/// first (nothing was published, so the state is the one before the pass).
struct Unlock<'a, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    obj: &'a PBComb1<D, P>,
    lval: u64,
}

impl<D, P> Drop for Unlock<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn drop(&mut self) {
        // The Release pairs with the Acquire loads of `Lock` in `perform`,
        // `wait_while_lock_is` and the next combiner's CAS.
        crate::unlock::release(&self.obj.lock, &self.obj.poisoned, self.lval);
    }
}

#[cold]
#[inline(never)]
fn poisoned(_: Poisoned) -> ! {
    panic!("PBComb1 is poisoned: a dispatch_mut panicked in a combiner")
}

/// A registered thread's access to a [`PBComb1`]. Dropping it frees its thread id.
///
/// Sequence numbers work as for [`PBCombHandle`](crate::PBCombHandle): the `n`-th call of
/// [`execute_mut`](Self::execute_mut) on this thread id carries `n`; a system persists
/// `(op, seq() + 1)` before each call and, after a crash, calls [`recover`](Self::recover) with
/// them.
///
/// # Examples
///
/// ```
/// # use pcomb::{objects::Counter, PBComb1};
/// let c = PBComb1::new(Counter::default(), 1)?;
/// let mut h = c.register()?;
/// assert_eq!(h.execute_mut(2), 0);
/// assert_eq!(h.seq(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PBComb1Handle<'a, D, P = NoPersist>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    obj: &'a PBComb1<D, P>,
    id: usize,
    seq: u64,
}

impl<D, P> fmt::Debug for PBComb1Handle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBComb1Handle")
            .field("id", &self.id)
            .field("seq", &self.seq)
            .finish()
    }
}

impl<D, P> Drop for PBComb1Handle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    fn drop(&mut self) {
        self.obj.slots.release(self.id);
    }
}

impl<D, P> PBComb1Handle<'_, D, P>
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
    /// # use pcomb::{objects::Counter, PBComb1};
    /// assert_eq!(PBComb1::new(Counter::default(), 1)?.register()?.id(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> usize {
        self.id
    }

    /// The sequence number of this thread's last operation (the next one gets `seq() + 1`).
    ///
    /// It is persisted (see [`PBComb1`], *Design: persistent layout*): a handle made after
    /// `open`, or for a slot an earlier handle released, starts from the number of the slot's
    /// last operation that took effect.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::default(), 1)?;
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

    /// This thread's last operation that took effect: its number and its response, read from
    /// the current record (always durable) and `Base[id]`. `(0, the response type's zero
    /// value)` for a slot that never ran an operation.
    ///
    /// Recovery without arguments, as for [`PBCombHandle::last_applied`](crate::PBCombHandle::last_applied):
    /// after a crash, `register_as(thread)` then `last_applied()` says which of the thread's
    /// operations took effect last and what it returned; the thread continues with number
    /// `seq() + 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, pmem::Region, PBComb1};
    ///
    /// let c = PBComb1::create(Region::anonymous(0xC1, 1 << 16)?, Counter::default(), 2)?;
    /// let mut h = c.register_as(1)?;
    /// for i in 1..=3 {
    ///     h.execute_mut(i); // operation number i adds i
    /// }
    /// drop(h);
    /// // "Crash": reopen; thread 1's handle knows how far it got.
    /// let c = PBComb1::<Counter, _>::open(c.into_region().expect("in a region"))?;
    /// let mut h = c.register_as(1)?;
    /// assert_eq!(h.last_applied(), (3, 3)); // operation 3 returned 1 + 2
    /// for i in h.seq() + 1..=5 {
    ///     h.execute_mut(i); // resume with operation 4
    /// }
    /// assert_eq!(h.execute(()), 15);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_applied(&self) -> (u64, D::Response) {
        self.obj.last_applied(self.id)
    }

    /// Applies the write operation `op` through the combiner and returns its response, once it
    /// is persisted (in persistent mode).
    ///
    /// # Panics
    ///
    /// If the object is poisoned (a `dispatch_mut` panicked in a combiner).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// assert_eq!(h.execute_mut(3), 0);
    /// assert_eq!(h.execute_mut(4), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> D::Response {
        self.try_execute_mut(op).unwrap_or_else(|e| poisoned(e))
    }

    /// [`execute_mut`](Self::execute_mut) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a `dispatch_mut` panicked in a combiner (before or during this call).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::default(), 1)?;
    /// assert_eq!(c.register()?.try_execute_mut(3), Ok(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.obj.check_poison()?;
        self.seq += 1;
        self.obj.begin(self.id, self.seq);
        self.obj.announce(self.id, op, self.seq);
        self.obj.perform(self.id, (self.seq & ACTIVATE) as u8)
    }

    /// Runs the read operation `op` on a validated copy of the current (durable) state,
    /// without taking the lock.
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::new(9), 1)?;
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
    /// # use pcomb::{objects::Counter, PBComb1};
    /// let c = PBComb1::new(Counter::new(9), 1)?;
    /// assert_eq!(c.register()?.try_execute(()), Ok(9));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        self.obj.check_poison()?;
        Ok(self.obj.read(|r| r.state()).dispatch(op))
    }

    /// Recovery (Algorithm 1 `Recover`) for this thread's operation `op` with sequence number
    /// `seq`, pending when the system crashed: [`Recovered::Applied`] with the response it had
    /// if it took effect before the crash, else it is executed now ([`Recovered::Reexecuted`]).
    /// Later operations continue from `seq`.
    ///
    /// `Seq[p]` is read before the operation is re-announced (it changes only when this
    /// thread announces), so the answer is about the crash even while other threads run; it
    /// is compared with `seq` mod 2^16 (not only its parity), so `seq` must be the number of
    /// the operation that was pending (`seq() + 1` if it had not taken effect, `seq()` if it
    /// had).
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, PBComb1, Recovered};
    ///
    /// let c = PBComb1::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// h.execute_mut(5); // seq 1
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
    /// use pcomb::{objects::Counter, PBComb1, Recovered};
    /// let c = PBComb1::new(Counter::default(), 1)?;
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
        self.seq = seq;
        let (low, ret) = self.obj.read(|r| (r.seq(self.id), r.ret(self.id)));
        if low == seq as u16 {
            return Ok(Recovered::Applied(ret));
        }
        self.obj.begin(self.id, seq);
        self.obj.announce(self.id, op, seq);
        Ok(Recovered::Reexecuted(
            self.obj.perform(self.id, (seq & ACTIVATE) as u8)?,
        ))
    }
}

/// The full number of a thread's last applied operation, from its `Seq` (the number mod
/// 2^16) and its `Base` `b`: the one number `s` with `s = low` mod 2^16 in
/// `b - 1 ..= b - 1 + 0xFFFF`, a window that holds every value the number can have (see
/// [`BASE_STEP`]). Wrapping: a damaged image gives some number, never a panic.
fn full_seq(low: u16, base: u64) -> u64 {
    let from = base.wrapping_sub(1);
    from.wrapping_add(u64::from(low.wrapping_sub(from as u16)))
}

/// Recovery at `open`: the pass of the newest valid record, after the scrub of the other slot
/// (see [`PBComb1`], *Design: record*, item 4): its check becomes one that its words do not
/// call for, written back and fenced, so that no check written before the crash is left on
/// the media to validate a later rebuild of that slot. `None` if no record is valid.
fn recover_current<D: Pod, R: Pod, P: Persist>(
    all: &[AtomicU64],
    layout: &Layout,
    persist: &P,
) -> Option<u64> {
    let pass = newest_valid::<D, R>(all, layout)?;
    let other = Rec::<D, R>::at(all, layout, (pass.wrapping_add(1) % 2) as usize);
    let check = &other.words[layout.check_at];
    // Relaxed: single-threaded reopening; handing the object over publishes it.
    check.store(!other.expected_check(), Ordering::Relaxed); // scrub: write
    persist.pwb_val(check); // scrub: pwb
    persist.psync(); // scrub: psync
    Some(pass)
}

/// The pass of the newest valid record of the two slots, if any.
fn newest_valid<D: Pod, R: Pod>(all: &[AtomicU64], layout: &Layout) -> Option<u64> {
    (0..2)
        .map(|s| Rec::<D, R>::at(all, layout, s))
        .enumerate()
        .filter(|(s, r)| r.valid(*s))
        .map(|(_, r)| r.pass())
        .max()
}

/// The header line's words for `layout` (type id 0: stored separately).
fn header_values(layout: &Layout) -> [u64; LINE_WORDS] {
    let mut v = [0u64; LINE_WORDS];
    v[header::MAGIC] = header::MAGIC_VALUE;
    v[header::THREADS] = layout.threads as u64;
    v[header::STATE_BYTES] = (layout.state_words * 8) as u64;
    v[header::RESPONSE_BYTES] = (layout.ret_words * 8) as u64;
    v[header::RECORD_WORDS] = layout.len as u64;
    v[header::CHECKSUM] = fnv(&v[..header::CHECKED]);
    v
}

/// FNV-1a over the header words.
fn fnv(words: &[u64]) -> u64 {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// Copies `n` words at `off` out of `region` (bounds and alignment checked).
fn read_words<P: Persist>(
    region: &Region<P>,
    off: Offset,
    n: usize,
) -> Result<Vec<u64>, CombBuildError> {
    let ptr = region.ptr_array::<u64>(off, n as u64).map_err(region_err)?;
    // SAFETY:
    // - `ptr_array` checked that `n` words at `ptr` are in bounds and aligned, and the mapping
    //   lives as long as `region`, which outlives this call;
    // - nothing else accesses the region while it is being opened (`open` owns it).
    let view = unsafe { words_at(ptr.as_ptr(), n) };
    // Relaxed: single-threaded reopening.
    Ok(view.iter().map(|w| w.load(Ordering::Relaxed)).collect())
}

fn region_err(e: pmem::RegionError) -> CombBuildError {
    CombBuildError::Region(e)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::objects::Counter;
    use crate::test_media::MediaModel;
    use crate::words::seal;

    #[test]
    fn zero_records_are_invalid() {
        for lines in 1..=8 {
            let n = lines * LINE_WORDS - 1;
            assert_ne!(seal(std::iter::repeat_n(0, n)), 0, "{lines} lines");
        }
    }

    #[test]
    fn one_line_holds_an_8_byte_state_for_4_threads() {
        assert_eq!(Layout::new::<u64, u64>(4).len, LINE_WORDS);
        assert_eq!(Layout::new::<u64, u64>(5).len, 2 * LINE_WORDS);
        assert_eq!(Layout::new::<[u64; 5], ()>(1).len, 2 * LINE_WORDS);
        assert_eq!(Layout::new::<[u64; 4], ()>(1).len, LINE_WORDS);
        let l = Layout::new::<u64, u64>(65);
        assert_eq!(l.check_at, l.len - 1);
        assert!(l.seq_at + 65usize.div_ceil(SEQS_PER_WORD) <= l.check_at);
    }

    #[test]
    fn full_seq_is_exact_in_its_window() {
        // Every base a thread persists (0 and multiples of BASE_STEP, also near 2^64), and
        // every last applied number the protocol allows with it: base - 1 ..= base + STEP - 1.
        for base in [
            0,
            BASE_STEP,
            2 * BASE_STEP,
            3 * BASE_STEP,
            u64::MAX - BASE_STEP + 1,
        ] {
            for s in 0..=BASE_STEP {
                let s = base.wrapping_sub(1).wrapping_add(s);
                assert_eq!(full_seq(s as u16, base), s, "base {base}, seq {s}");
            }
        }
        // A fresh slot: Seq 0, Base 0.
        assert_eq!(full_seq(0, 0), 0);
    }

    /// An object reopened from `image` as `open` does (the scrub through a media model),
    /// 5 threads: a counter's record takes two lines.
    fn reopen(image: &[u64]) -> PBComb1<Counter, MediaModel> {
        let model = MediaModel::new(image);
        let obj = PBComb1::with_persist(Counter::default(), 5, model).expect("5 threads");
        let w = obj.backing.words();
        for (word, &v) in w.iter().zip(image) {
            // Relaxed: one thread.
            word.store(v, Ordering::Relaxed);
        }
        obj.backing.persist().bind(w);
        let pass = recover_current::<Counter, u64, _>(w, &obj.layout, obj.backing.persist());
        // Relaxed: one thread.
        obj.current
            .store(pass.expect("a valid record"), Ordering::Relaxed);
        obj
    }

    fn snapshot<D: Dispatch + Pod, P: Persist>(obj: &PBComb1<D, P>) -> Vec<u64>
    where
        D::Response: Pod,
    {
        // Relaxed: one thread.
        obj.backing
            .words()
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect()
    }

    /// Found in review (issue 23). Crash 1 tears pass 2 (threads 0 and 4, both adding 0): its
    /// second line (Seq[4] and the check) reaches the media, its first does not; recovery 1
    /// takes pass 1, where thread 4's operation 2 is not applied. Thread 4 goes on from
    /// `seq()`: its next operation (add 5) is number 2 again, announced and not yet served.
    /// Thread 0 re-runs its pending operation: pass 2 again, the first line equal to the torn
    /// one's; that line is evicted, and crash 2 comes before the psync. Without the scrub, the
    /// old check validates the slot: recovery 2 takes pass 2 and `recover(add 5, 2)` says
    /// `Applied`, but 5 was never added.
    #[test]
    fn a_check_left_by_a_crash_does_not_validate_a_later_rebuild() {
        let lay = Layout::new::<Counter, u64>(5);
        assert_eq!(lay.len, 2 * LINE_WORDS);
        let slot0 = SLOTS_AT..SLOTS_AT + lay.len;
        let (line0, line1) = (
            slot0.start..slot0.start + LINE_WORDS,
            slot0.start + LINE_WORDS..slot0.end,
        );
        // Era 1.
        let obj = PBComb1::with_persist(Counter::default(), 5, NoPersist).expect("5 threads");
        let (mut h0, mut h4) = (
            obj.register_as(0).expect("free"),
            obj.register_as(4).expect("free"),
        );
        assert_eq!(h4.execute_mut(0), 0); // pass 1, slot 1
        let mut media = snapshot(&obj);
        obj.announce(4, 0, 2);
        assert_eq!(h0.execute_mut(0), 0); // pass 2, slot 0: threads 0 and 4
        let words = snapshot(&obj);
        media[line1.clone()].copy_from_slice(&words[line1.clone()]);
        drop((h0, h4));
        // Crash 1.
        let obj = reopen(&media);
        let mut media = obj.backing.persist().image();
        let h4 = obj.register_as(4).expect("free");
        assert_eq!(
            h4.last_applied(),
            (1, 0),
            "recovery 1: thread 4's operation 2 not applied"
        );
        // Era 2.
        let mut h0 = obj.register_as(0).expect("free");
        assert_eq!(h0.recover(0, 1), Recovered::Reexecuted(0));
        assert_eq!(h4.seq(), 1);
        obj.announce(4, 5, 2);
        let words = snapshot(&obj);
        media[line0.clone()].copy_from_slice(&words[line0]);
        drop((h0, h4));
        // Crash 2, before thread 0's psync.
        let obj = reopen(&media);
        let mut h4 = obj.register_as(4).expect("free");
        assert_eq!(
            h4.recover(5, 2),
            Recovered::Reexecuted(0),
            "thread 4's add 5 (number 2) never took effect"
        );
        assert_eq!(h4.execute(()), 5);
    }

    #[test]
    fn the_check_sees_every_word_and_its_place() {
        let base: Vec<u64> = (1..8).collect();
        let h = seal(base.iter().copied());
        for i in 0..base.len() {
            let mut w = base.clone();
            w[i] ^= 1 << (i * 7);
            assert_ne!(seal(w.iter().copied()), h, "word {i}");
        }
        let mut swapped = base.clone();
        swapped.swap(1, 2);
        assert_ne!(seal(swapped.iter().copied()), h);
    }
}
