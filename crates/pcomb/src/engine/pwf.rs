//! PWFcomb (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms 3 and 4): the one
//! implementation of the protocol, used by [`PWFComb`](crate::PWFComb) and by the wait-free
//! structures (PWFstack, PWFqueue).
//!
//! Every thread pretends to be the combiner: it copies the record `S` points to into one of its
//! own two records, applies every active request it sees, and tries to install its record with
//! an SC on `S`. LL/SC is emulated, as in the paper's experiments (§6), by a CAS on a versioned
//! word: `S = version << 16 | record number`, so a stale combiner's SC fails even if `S` came
//! back to the same record (no ABA).
//!
//! Volatile (DRAM) part: `Request` (one [`Request`] per thread, arguments in atomic words) and
//! `Flush`. Persistent part (words owned by the user of the instance, at a fixed offset): `S` and the `2 * (n + 1)` records `MemState[0..n][0..1]`
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
//! - **Served early** (from the authors' C code, `PWFCombApplyOp`, not in the pseudocode): an
//!   attempt whose LL finds its own request already applied in the record `S` names (`Seq[p]`
//!   there is the request's number) returns that record's response after a VL and lines 40-48,
//!   instead of copying and installing a record that serves nothing new for it. The
//!   pseudocode's attempt installs anyway: on 2 cores about one install (2 pwbs, a pfence, a
//!   psync) per operation however many requests an install served.
//! - `Backoff` (lines 2, 36) is empty.
//!
//! # Stamped records (`STAMPED = true`, [`PWFComb1`](crate::PWFComb1); beyond the paper)
//!
//! The published protocol waits for two write-backs per install: the new record's (line 28,
//! before the SC) and `S`'s (line 32, after it). With `STAMPED`, each record says by itself
//! whether it was installed, and `S` is never persisted: one write-back wait per install.
//!
//! - A record ends with a *stamp*, `pass | check`: `pass` is the number of the `S` version the
//!   record is (to be) installed as (`S = pass << 16 | record`), `check` a 64-bit hash of
//!   every word before it with its top bit set. Building a record starts with `check := pass`
//!   (the slot's *mark*: never a hash) and `pass` (`Record::begin`), then the content, as
//!   before, **without a write-back**. After a successful SC the installer writes the check
//!   (`stamp`), writes the record back and fences once (one pwb of the record's lines, one
//!   psync), then publishes `Durable[p] := pass` (volatile, one per thread, only `p` writes
//!   it). An attempt whose SC fails never stamps.
//! - *Valid record*: its check matches. Only installed records are ever stamped (by the
//!   installer, or by a helper for the record `S` names, below), so a valid record is an
//!   installed one, and a pass is installed once, so it has one content. A torn record (any
//!   word mix of two builds of the slot) or a build whose SC failed (its check still a mark
//!   or an older stamp over a different pass word) fails the check (false accept about
//!   2^-63: the check's top bit is forced, so it has 63 free bits). "Installed" means
//!   installed *since the last `open`*: see the scrub below.
//! - *Recovery* (`open`): the valid record with the largest pass is the state; `S` and every
//!   `Durable[q]` are set from it. Each record is a copy of the state installed before it plus
//!   a batch, so the newest valid record holds every operation of every older one. A largest
//!   pass of `2^48 - 1` (a damaged image: the next pass would not fit in `S`) is refused.
//! - *The scrub* (`open`, before the object is handed out): every record but the chosen one
//!   gets the check `UNSTAMPED` (`Record::unstamp`: top bit clear, so no check; above every
//!   pass, so no mark), written back, one psync. Without it a stamp from before the crash
//!   outlives recovery: a record torn by the crash (its check line, stamp of pass `K`,
//!   persisted; a content line old) is invalid at recovery, passes restart at `P + 1 <= K`,
//!   and the owner may rebuild that slot at pass `K` with the same content (it re-runs its
//!   pending operation through `recover`); if its content lines reach the media and its check
//!   line (the new mark) does not, a second crash finds the old stamp valid again, at pass
//!   `K`, tying with or beating a durable install of pass `K` whose operations returned
//!   (`tests::a_stale_stamp_completed_after_a_crash_is_not_recovered`). Raising the pass at
//!   `open` is no fix: `K` may exist only inside the torn record's check line. What holds
//!   across any number of crashes: *every check on the media is the recovered record's,
//!   `UNSTAMPED`, a mark, or a stamp written since the last completed `open`* (by induction
//!   on crashes: the scrub's psync leaves only the recovered record's check and sentinels,
//!   and after it only this era's installs stamp, at passes above the recovered one).
//!   Within an era, passes are installed once each, so the items above hold. A crash during
//!   the scrub leaves the chosen record untouched and still the largest valid one (the scrub
//!   only invalidates), so the next `open` chooses it again and scrubs again. Cost: `2n + 1`
//!   word stores, as many pwbs and one psync per `open`; nothing per operation.
//! - *The newest durable record is never overwritten.* A thread builds only in the slot that
//!   `Index[p]` of the current record names, which it flipped when it last installed: so it
//!   rebuilds the slot holding its install of pass `j` only after installing its other slot
//!   at a pass `j' > j`, and that install was stamped, written back and fenced before its
//!   operation returned. So when a slot's old record is destroyed, a durable valid record
//!   with a larger pass exists; by induction (the same holds for that one) a durable valid
//!   record with a pass at least as large exists at every later point. (After `open`, no
//!   thread's `Index` names the recovered record's slot, and it has the largest pass.)
//! - *Returning only once durable.* An operation (or a read) that got its response from the
//!   record `S = cur` names (pass `k`, owner `c`) returns once `Durable[c] >= k`, or after
//!   helping (`ensure_persisted`): it computes the check from the record as it reads it,
//!   stamps by a CAS from the mark `k` (`Record::stamp_from_mark`), writes the record back
//!   and psyncs. At the psync's end a durable valid record of pass `>= k` exists: either `c`
//!   had not begun to rebuild the slot before the helper's pwb, and then what the helper read
//!   was the record of pass `k` (a build starts with a new mark, which the helper's CAS would
//!   have seen, since the content stores are Release and its loads Acquire), stamped (by the
//!   owner or by the CAS) and written back; or `c` had begun, and then (previous item) a
//!   durable record of a larger pass existed. A stale helper's CAS expects the mark of its
//!   pass, which a later build of the slot never holds (passes grow), so it cannot stamp a
//!   later build with a wrong check; the installer's stamp is a plain store.
//! - Detectability and sequence numbers are as in the published protocol (`Seq[q]` in the
//!   content). `S` keeps its version counter (the pass), 48 bits.
//!
//! What it costs: one pwb of the record's lines and one psync per install, no pfence (the SC
//! no longer waits for a write-back: on AMD a locked instruction issued while a write-back is
//! in flight waits for it, so the write-back comes after the SC); a helper pays one pwb and
//! one psync when the installer has not yet published `Durable`. The record is two words
//! longer (one line more for AtomicFloat at 4 threads). Structures keep the published
//! protocol.
//!
//! # Hooks
//!
//! [`WfInstance`] runs the protocol; a user plugs in ([`WfBatch`]) the batch an attempt
//! applies (lines 19-25 are one call of [`WfBatch::apply`]; `PWFComb` calls `dispatch_mut` on
//! each request), what it writes back besides the record (`apply` pwbs its new nodes before
//! returning; line 29's `pfence` orders them before the install), and what it does once its
//! install is durable ([`WfBatch::installed`], after line 33, on the installing thread: a
//! linked structure frees the nodes its install removed there).
//!
//! Unlike PBcomb's combiner, an attempt here may be discarded (its SC fails), and attempts of
//! different threads run at once on copies of the same state. So `apply` must write only memory
//! no other attempt writes (nodes from the thread's own free list), must tolerate reading
//! garbage (a node recycled behind a stale attempt: the VL that follows then fails), and must
//! not publish anything: only the SC does.

use crossbeam_utils::CachePadded;

use crate::layout::{Record, RecordLayout, INDEX_WORD};
use crate::recovered::Recovered;
use crate::sync::{fence, AtomicU64, Ordering, UnsafeCell};
use crate::words::{self, words_for};
use pmem::{Persist, Pod};

/// `ctrl` bits of a [`Request`].
const ACTIVATE: u64 = 1;
const VALID: u64 = 2;
const BUSY: u64 = 4;
const VERSION_SHIFT: u32 = 3;

/// Bits of `S` holding the record number.
const RECORD_BITS: u32 = 16;
const RECORD_MASK: u64 = (1 << RECORD_BITS) - 1;
/// The largest pass `S` can hold (48 bits): a recovered pass must be below it, so that the
/// next install's `pass << RECORD_BITS` keeps every bit (stamped records).
const LAST_PASS: u64 = (1 << (64 - RECORD_BITS)) - 1;

/// The sequential part a structure plugs into a [`WfInstance`].
pub(crate) trait WfBatch {
    /// `st` of the records.
    type State: Pod;
    /// A request (`func`, `Args`); read by every thread's attempts, hence `Pod`.
    type Op: Pod;
    /// `ReturnVal[q]`.
    type Ret: Pod;

    /// Lines 19-25 for a whole attempt of thread `me`: serves `reqs[i] = (q, op)` on `st` and
    /// writes `rets[i]`. The attempt may be discarded; see the module docs for what it may
    /// touch. Anything it writes to persistent memory besides `st` it writes back (pwb) before
    /// returning: line 29's `pfence` orders those pwbs before the record is installed.
    fn apply(
        &self,
        me: usize,
        st: &mut Self::State,
        reqs: &[(usize, Self::Op)],
        rets: &mut [Self::Ret],
    );

    /// After `me`'s attempt was installed (line 31) and `S` persisted (line 33); `st` is the
    /// installed state.
    fn installed(&self, me: usize, st: &Self::State);
}

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
    /// The operation's words, then its sequence number (mod 2^32, written to `Seq[p]` when the
    /// request is applied), all read under the `ctrl` version.
    op: Box<[AtomicU64]>,
}

/// One thread's attempt buffers, padded to its own cache lines.
type ScratchCell<O, R> = CachePadded<UnsafeCell<Scratch<O, R>>>;

/// Buffers of one thread's attempts (only that thread touches them).
struct Scratch<O, R> {
    reqs: Vec<(usize, O)>,
    seqs: Vec<u32>,
    rets: Vec<R>,
}

/// One PWFcomb instance at word `at` of a structure's words: an unused line, `S`'s line and the
/// records `MemState[0..n][0..1]` and the two dummies `MemState[n][*]` (record `2q + i` is
/// `MemState[q][i]`). `STAMPED`: the records carry stamps and `S` is not persisted (module
/// docs, "Stamped records").
pub(crate) struct WfInstance<S, O, R, const STAMPED: bool = false> {
    at: usize,
    layout: RecordLayout,
    requests: Box<[CachePadded<Request>]>,
    /// Published: `Flush[p]`, odd while `p`'s latest install of `S` is not known to be
    /// persisted. Stamped: `Durable[p]`, the pass of `p`'s latest install that it wrote back
    /// and fenced (only `p` writes it; after `open`, the recovered pass).
    flush: Box<[CachePadded<AtomicU64>]>,
    scratch: Box<[ScratchCell<O, R>]>,
    _state: core::marker::PhantomData<fn() -> S>,
}

// SAFETY:
// - `scratch[p]` is only touched by the thread holding slot `p` (the structure's handle for
//   `p` is `&mut` in every operation that reaches `perform`/`recover`); it holds `O: Pod` and
//   `R: Pod` values (`Send`);
// - everything else is atomics.
unsafe impl<S, O: Pod, R: Pod, const STAMPED: bool> Send for WfInstance<S, O, R, STAMPED> {}
// SAFETY: as for `Send`.
unsafe impl<S, O: Pod, R: Pod, const STAMPED: bool> Sync for WfInstance<S, O, R, STAMPED> {}

impl<S, O, R, const STAMPED: bool> core::fmt::Debug for WfInstance<S, O, R, STAMPED> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WfInstance")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl<S: Pod, O: Pod, R: Pod, const STAMPED: bool> WfInstance<S, O, R, STAMPED> {
    pub(crate) fn layout(threads: usize) -> RecordLayout {
        let layout = RecordLayout::new::<S, R>(threads, true);
        if STAMPED {
            layout.stamped()
        } else {
            layout
        }
    }

    fn records(threads: usize) -> usize {
        2 * (threads + 1)
    }

    /// Words an instance takes.
    pub(crate) fn words(threads: usize) -> usize {
        Self::layout(threads).total_words(Self::records(threads))
    }

    /// The instance at word `at`, with fresh volatile variables.
    pub(crate) fn new(at: usize, threads: usize) -> Self {
        let op_words = words_for::<O>();
        Self {
            at,
            layout: Self::layout(threads),
            requests: (0..threads)
                .map(|_| {
                    CachePadded::new(Request {
                        ctrl: AtomicU64::new(0),
                        op: words::zeroed(op_words + 1),
                    })
                })
                .collect(),
            flush: (0..threads)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            scratch: (0..threads)
                .map(|_| {
                    CachePadded::new(UnsafeCell::new(Scratch {
                        reqs: Vec::with_capacity(threads),
                        seqs: Vec::with_capacity(threads),
                        rets: Vec::with_capacity(threads),
                    }))
                })
                .collect(),
            _state: core::marker::PhantomData,
        }
    }

    pub(crate) fn threads(&self) -> usize {
        self.layout.threads
    }

    fn mine<'w>(&self, words: &'w [AtomicU64]) -> &'w [AtomicU64] {
        &words[self.at..self.at + Self::words(self.layout.threads)]
    }

    /// Initial values: `S := &MemState[n][0]` holding `init` (the caller persists); stamped,
    /// as pass 0.
    pub(crate) fn init(&self, words: &[AtomicU64], init: &S) {
        let w = self.mine(words);
        let dummy = 2 * self.layout.threads;
        let rec = Record::<S, R>::at(w, &self.layout, dummy);
        if STAMPED {
            rec.begin(0);
        }
        rec.set_state(init);
        if STAMPED {
            rec.stamp(rec.expected_check());
        }
        // Relaxed: not shared yet; the structure's `init` persists, the hand-over publishes.
        w[INDEX_WORD].store(dummy as u64, Ordering::Relaxed);
    }

    /// Whether the persisted `S` names a record whose flags are 0 or 1 (checked by `open`).
    /// Stamped: first sets `S` (and every `Durable[q]`) to the valid record with the largest
    /// pass and scrubs every other record's check, durably (module docs, "Stamped records");
    /// false if no record is valid or the largest pass has no successor `S` can hold.
    pub(crate) fn valid<P: Persist>(&self, words: &[AtomicU64], persist: &P) -> bool {
        if STAMPED && !self.find_current(words, persist) {
            return false;
        }
        // Relaxed: single-threaded reopening.
        let s = self.mine(words)[INDEX_WORD].load(Ordering::Relaxed);
        ((s & RECORD_MASK) as usize) < Self::records(self.layout.threads)
            && self.current(words).1.flags_valid(true)
    }

    /// Stamped recovery: `S :=` the valid record with the largest pass, `Durable[q] :=` its
    /// pass, then the scrub: every other record's check becomes [`Record::unstamp`]'s
    /// sentinel, written back, one psync (module docs, "Stamped records"). False if no record
    /// is valid, or if the largest pass is [`LAST_PASS`] or more (a damaged image: the next
    /// install's pass would not fit in `S`). Single-threaded: `open`, before the object is
    /// handed out.
    fn find_current<P: Persist>(&self, words: &[AtomicU64], persist: &P) -> bool {
        let w = self.mine(words);
        let records = Self::records(self.layout.threads);
        let best = (0..records)
            .map(|id| (id, Record::<S, R>::at(w, &self.layout, id)))
            .filter(|(_, rec)| rec.is_sealed() && rec.flags_valid(true))
            .map(|(id, rec)| (rec.pass(), id))
            .max();
        let Some((pass, id)) = best else {
            return false;
        };
        if pass >= LAST_PASS {
            return false; // no successor `S` can hold (a damaged image)
        }
        // The scrub. A crash before the psync leaves the chosen record as it was and still the
        // largest valid one, so the next `open` chooses it again and scrubs again.
        for other in (0..records).filter(|&o| o != id) {
            let check = Record::<S, R>::at(w, &self.layout, other).unstamp(); // scrub: write
            persist.pwb_val(check); // scrub: pwb
        }
        persist.psync(); // scrub: psync
                         // Relaxed: single-threaded reopening; handing the object over publishes it.
        w[INDEX_WORD].store(pass << RECORD_BITS | id as u64, Ordering::Relaxed);
        for d in self.flush.iter() {
            // Relaxed: as above.
            d.store(pass, Ordering::Relaxed);
        }
        true
    }

    /// The current state (single-threaded use: opening, auditing).
    pub(crate) fn state_now(&self, words: &[AtomicU64]) -> S {
        self.current(words).1.state()
    }

    /// Rewrites the current record's state to `st` and persists it (single-threaded use:
    /// `open` normalizing a recovered state). Deactivate bits and responses are kept, so
    /// recovery of every thread's last operation is unaffected.
    pub(crate) fn rewrite_state<P: Persist>(&self, words: &[AtomicU64], persist: &P, st: &S) {
        debug_assert!(
            !STAMPED,
            "a stamped record is rewritten only by a new install"
        );
        let (_, rec) = self.current(words);
        rec.set_state(st);
        let (addr, len) = rec.span();
        // SAFETY:
        // - `span` is the record's own bytes, inside the region's mapping, which lives as long
        //   as `self`.
        unsafe { persist.pwb(addr, len) }; // rewrite: pwb
        persist.pfence(); // rewrite: pfence
        persist.psync(); // rewrite: psync
    }

    /// The `S` word and the record it points to.
    #[inline]
    fn current<'w>(&'w self, words: &'w [AtomicU64]) -> (u64, Record<'w, S, R>) {
        // Acquire: LL (lines 9, 38); pairs with the AcqRel CAS (SC, line 31) that installed
        // the record.
        let s = self.mine(words)[INDEX_WORD].load(Ordering::Acquire);
        (s, self.record(words, s))
    }

    #[inline]
    fn record<'w>(&'w self, words: &'w [AtomicU64], s: u64) -> Record<'w, S, R> {
        Record::at(self.mine(words), &self.layout, (s & RECORD_MASK) as usize)
    }

    /// The thread owning the record `S = s` points to; the dummies count as thread 0.
    #[inline]
    fn owner(&self, s: u64) -> usize {
        let q = (s & RECORD_MASK) as usize / 2;
        if q >= self.layout.threads {
            0
        } else {
            q
        }
    }

    /// The sequence number a freshly registered thread `id` starts from: `Seq[id]` of the
    /// current record (its low bit is `Deactivate[id]`); marks its request invalid until it
    /// announces.
    pub(crate) fn seed(&self, words: &[AtomicU64], id: usize) -> u64 {
        let seq = self.current(words).1.seq(id);
        let act = u64::from(seq) & ACTIVATE;
        let req = &self.requests[id];
        // Relaxed: only the slot owner writes `ctrl`; the slot claim (Acquire) ordered us after
        // the previous owner.
        let version = req.ctrl.load(Ordering::Relaxed) >> VERSION_SHIFT;
        // Release: pairs with the Acquire loads of `ctrl` in `read_request`; valid = 0.
        req.ctrl
            .store(((version + 1) << VERSION_SHIFT) | act, Ordering::Release);
        u64::from(seq)
    }

    /// `Seq[p]` and `ReturnVal[p]` of the current record: thread `p`'s last applied operation
    /// (stable while `p` runs no operation; durable, as for `engine::pb`).
    pub(crate) fn last_applied(&self, words: &[AtomicU64], p: usize) -> (u32, R) {
        let (_, rec) = self.current(words);
        (rec.seq(p), rec.ret(p))
    }

    /// Lines 1 / 4: `Request[p] := <func, args, act, 1>`, `act` the low bit of `seq`.
    fn announce(&self, p: usize, op: &O, seq: u64) {
        let act = seq & ACTIVATE;
        let req = &self.requests[p];
        // Relaxed: only the owner writes `ctrl`.
        let old = req.ctrl.load(Ordering::Relaxed);
        let version = (old >> VERSION_SHIFT) + 1;
        // Relaxed: the Release stores of `op` below keep this store before them.
        req.ctrl.store(old | BUSY, Ordering::Relaxed);
        let (op_words, seq_word) = req.op.split_at(req.op.len() - 1);
        words::store(op_words, op);
        words::store(seq_word, &(seq as u32));
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

    /// Reads `Request[q]`: its activate bit, sequence number and operation, or `None` if it is
    /// not valid or was being rewritten.
    #[inline]
    fn read_request(&self, q: usize) -> Option<(u8, u32, O)> {
        let req = &self.requests[q];
        // Acquire: pairs with the Release store in `announce`.
        let c1 = req.ctrl.load(Ordering::Acquire);
        if c1 & VALID == 0 || c1 & BUSY != 0 {
            return None;
        }
        let (op_words, seq_word) = req.op.split_at(req.op.len() - 1);
        let op = words::load::<O>(op_words);
        let seq = words::load::<u32>(seq_word);
        // Acquire: after the Acquire loads of `op`; a rewrite they saw shows here.
        let c2 = req.ctrl.load(Ordering::Acquire);
        (c1 == c2).then_some(((c1 & ACTIVATE) as u8, seq, op))
    }

    /// Runs `op` as thread `p`'s operation number `seq` (Algorithm 3 lines 1-3).
    pub(crate) fn execute<P: Persist, B: WfBatch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> R {
        self.announce(p, &op, seq);
        self.perform(words, persist, batch, p, seq)
    }

    /// Algorithm 3 `Recover` (lines 4-7) for thread `p`'s operation `op` with sequence number
    /// `seq`: whether it had taken effect before the crash, and its response. The check
    /// compares the whole number with `Seq[p]` (mod 2^32), not only its low bit.
    pub(crate) fn recover<P: Persist, B: WfBatch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Recovered<R> {
        // Line 4 moved after the check (issue 11, defect 3): `Deactivate[p]` changes only when
        // `p` announces, so read before announcing it says whether the operation took effect
        // *before the crash* (the value in every record since `open` is the persisted one).
        // Read after announcing, a concurrent combiner may already have applied the request
        // without persisting it, and "applied" would be neither true of the crash nor durable.
        let (_, rec) = self.current(words);
        if rec.seq(p) == seq as u32 {
            return Recovered::Applied(rec.ret(p)); // line 7
        }
        self.announce(p, &op, seq); // line 4
        Recovered::Reexecuted(self.perform(words, persist, batch, p, seq)) // lines 5-6
    }

    /// Algorithm 4 `PerformRequest` for thread `p`, whose announced request has number `seq`.
    fn perform<P: Persist, B: WfBatch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        seq: u64,
    ) -> R {
        let s = &self.mine(words)[INDEX_WORD];
        // SAFETY:
        // - `scratch[p]` is only touched by the thread holding slot `p`, which is us (the
        //   handle is borrowed mutably for the whole operation);
        // - the reference does not escape this function.
        let scratch = self.scratch[p].with_mut(|s| unsafe { &mut *s });
        for _ in 0..2 {
            let (ll, src) = self.current(words); // line 9: LL(S)
                                                 // SeqCst fence: pairs with the fence in `announce`.
            fence(Ordering::SeqCst);
            // Served already: the record `S` names applied our request (another thread's
            // install picked it up). As the authors' C code does (and unlike the published
            // pseudocode, which installs a record anyway), take lines 38-50 now: no copy, no
            // install, no write-back of a record that would change nothing for us.
            if src.seq(p) == seq as u32 {
                let ret = src.ret(p);
                // Acquire: VL(S) after the Acquire loads of the record: it was not recycled
                // while we read it (its owner writes only its other record while S names it).
                if s.load(Ordering::Acquire) == ll {
                    self.ensure_persisted(words, persist, ll);
                    return ret;
                }
                continue;
            }
            let ind = usize::from(src.index(p)); // line 11
            let dst = self.record(words, (2 * p + ind) as u64);
            let pass = (ll >> RECORD_BITS) + 1;
            if STAMPED {
                dst.begin(pass); // the mark, then the pass (stamped records)
            }
            dst.copy_from(&src); // line 13
            dst.set_pid(p); // line 14
                            // Lines 15-17 (reading Flush[p], see the module docs). Relaxed: only p and helpers
                            // (CAS to lval + 1) write Flush[p], which keeps the parity argument valid.
            let f = self.flush[p].load(Ordering::Relaxed);
            let lval = if f.is_multiple_of(2) { f + 1 } else { f + 2 };
            // Acquire: VL after the Acquire loads of the copy (a torn copy fails it).
            if s.load(Ordering::Acquire) != ll {
                continue; // line 18
            }
            // Lines 19-25 (simulation phase), as one batch.
            let mut st = dst.state();
            scratch.reqs.clear();
            scratch.seqs.clear();
            scratch.rets.clear();
            for q in 0..self.layout.threads {
                if let Some((act, seq, op)) = self.read_request(q) {
                    if act != dst.deact(q) {
                        scratch.reqs.push((q, op));
                        scratch.seqs.push(seq);
                        scratch.rets.push(dst.ret(q));
                    }
                }
            }
            batch.apply(p, &mut st, &scratch.reqs, &mut scratch.rets);
            for (i, &(q, _)) in scratch.reqs.iter().enumerate() {
                dst.set_ret(q, &scratch.rets[i]); // line 23
                dst.set_seq(q, scratch.seqs[i]); // line 24 (Deactivate[q] := the low bit)
            }
            dst.set_state(&st);
            // Acquire: VL, after the Acquire loads of nodes in `apply` (a node recycled behind
            // this attempt was written after S moved on, so this sees S moved on).
            if s.load(Ordering::Acquire) == ll {
                dst.set_index(p, 1 - ind as u8); // line 27
                if !STAMPED {
                    // Lines 28-29: the record's write-back, ordered before the SC that
                    // publishes it. The SC is a locked RMW, which orders it by itself on Intel
                    // CPUs, so line 29 is `pfence_before_rmw` (no instruction there, an `sfence`
                    // elsewhere); only the volatile `Flush[p]` is written between it and the SC.
                    pwb_record(persist, &dst); // line 28
                    persist.pfence_before_rmw(); // line 29
                                                 // Line 30. Release: pairs with the Acquire load of Flush in `ensure_persisted`.
                    self.flush[p].store(lval, Ordering::Release);
                }
                let next = (pass << RECORD_BITS) | (2 * p + ind) as u64;
                // Line 31: SC(S). AcqRel: the Release half publishes our record (and the nodes
                // `apply` wrote) to the Acquire LLs of others.
                if s.compare_exchange(ll, next, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    if STAMPED {
                        // The stamp, then one write-back of the record and one fence; then
                        // `Durable[p]`. Release: pairs with the Acquire load in
                        // `ensure_persisted`.
                        dst.stamp(dst.expected_check()); // stamp
                        pwb_record(persist, &dst); // stamped: pwb
                        persist.psync(); // stamped: psync
                        self.flush[p].store(pass, Ordering::Release); // stamped: durable
                    } else {
                        persist.pwb_val(s); // line 32
                        persist.psync(); // line 33
                                         // Line 34. Release: pairs with the Acquire load in `ensure_persisted`.
                        let _ = self.flush[p].compare_exchange(
                            lval,
                            lval + 1,
                            Ordering::Release,
                            Ordering::Relaxed,
                        );
                    }
                    batch.installed(p, &st);
                    return dst.ret(p); // line 35
                }
            }
        }
        // Two failed attempts: a combiner that read our request has installed S (lines 38-50).
        let (cur, rec) = self.current(words); // line 38
        let ret = rec.ret(p); // line 50
        self.ensure_persisted(words, persist, cur);
        ret
    }

    /// Lines 40-48: makes sure the `S` value `cur` (or a later one) is persisted before
    /// returning something read from it. Stamped: that a valid record of `cur`'s pass or a
    /// later one is durable (module docs, "Stamped records").
    fn ensure_persisted<P: Persist>(&self, words: &[AtomicU64], persist: &P, cur: u64) {
        let pid = self.owner(cur);
        if STAMPED {
            let pass = cur >> RECORD_BITS;
            // Acquire: pairs with the Release store of `Durable[pid]` after its psync.
            if self.flush[pid].load(Ordering::Acquire) >= pass {
                return;
            }
            let rec = self.record(words, cur);
            rec.stamp_from_mark(pass, rec.expected_check()); // help: stamp
            pwb_record(persist, &rec); // help: pwb
            persist.psync(); // help: psync
            return;
        }
        // Line 40. Acquire: pairs with the Release stores of Flush (lines 30, 34, 48).
        let lval = self.flush[pid].load(Ordering::Acquire);
        // Line 42, without the CombRound condition (see the module docs). Even: `pid` (or a
        // helper) persisted S after pid's latest successful SC, which installed `cur` or later.
        if lval % 2 == 1 {
            let s = &self.mine(words)[INDEX_WORD];
            persist.pwb_val(s); // line 44
            persist.psync(); // line 46
                             // Line 48 (on Flush[pid]). Release: pairs with the Acquire on line 40.
            let _ = self.flush[pid].compare_exchange(
                lval,
                lval + 1,
                Ordering::Release,
                Ordering::Relaxed,
            );
        }
    }

    /// A validated snapshot of the current state, persisted before it is returned
    /// (lock-free).
    pub(crate) fn read<P: Persist>(&self, words: &[AtomicU64], persist: &P) -> S {
        loop {
            for _ in 0..2 {
                let (ll, rec) = self.current(words);
                let st = rec.state();
                // Acquire: VL(S), after the Acquire loads of the record.
                if self.mine(words)[INDEX_WORD].load(Ordering::Acquire) == ll {
                    self.ensure_persisted(words, persist, ll);
                    return st;
                }
            }
            crate::sync::yield_now();
        }
    }
}

/// A pwb of the whole record (line 28; a stamped record after its stamp).
#[inline]
fn pwb_record<P: Persist, S: Pod, R: Pod>(persist: &P, rec: &Record<'_, S, R>) {
    let (addr, len) = rec.span();
    // SAFETY:
    // - `span` is the record's own bytes, inside the object's words (a region's mapping or
    //   the heap), which outlive the borrow of `rec`.
    unsafe { persist.pwb(addr, len) };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::engine::tests::Add;
    use crate::test_media::MediaModel;
    use pmem::{Hardware, NoPersist};

    type Inst<const STAMPED: bool = false> = WfInstance<u64, u64, u64, STAMPED>;

    /// Thread 1 announces (operand 5, its operation 1) and stalls; thread 0's operation
    /// (operand 10) serves both, its install persisted. State 100 before, 115 after.
    fn thread_1_served_by_thread_0<const STAMPED: bool>(
    ) -> (Inst<STAMPED>, Box<[AtomicU64]>, Hardware) {
        let inst = Inst::<STAMPED>::new(0, 2);
        let words = words::zeroed(Inst::<STAMPED>::words(2));
        inst.init(&words, &100);
        let hw = Hardware::new();
        assert_eq!((inst.seed(&words, 0), inst.seed(&words, 1)), (0, 0));
        inst.announce(1, &5, 1);
        assert_eq!(inst.execute(&words, &hw, &Add, 0, 10, 1), 100);
        (inst, words, hw)
    }

    /// Thread 1's `perform` finds its request applied in the record `S` names: it returns the
    /// response written there and persists nothing (the install was persisted, `Flush[0]` is
    /// even). Without the early return it copied, installed and wrote back a record of its
    /// own: 2 pwbs, a pfence and a psync for a pass that serves nothing.
    #[test]
    fn a_request_served_by_another_install_installs_nothing() {
        let (inst, words, hw) = thread_1_served_by_thread_0::<false>();
        pmem::reset_stats();
        assert_eq!(inst.perform(&words, &hw, &Add, 1, 1), 110);
        let s = pmem::stats();
        assert_eq!((s.pwbs, s.pfences, s.psyncs), (0, 0, 0), "{s:?}");
        assert_eq!(inst.state_now(&words), 115);
        assert_eq!(inst.last_applied(&words, 1), (1, 110));
    }

    /// As above, but thread 0 stalls between its install (line 31) and its write-back of `S`
    /// (lines 32-33): `Flush[0]` is odd. Thread 1, served by that install, must persist `S`
    /// itself before it returns (lines 40-48): 1 pwb and 1 psync, then `Flush[0]` even.
    #[test]
    fn a_request_served_by_an_unpersisted_install_persists_it() {
        let (inst, words, hw) = thread_1_served_by_thread_0::<false>();
        // Relaxed: one thread. Back to the odd value thread 0 held before its line 34.
        let even = inst.flush[0].load(Ordering::Relaxed);
        inst.flush[0].store(even - 1, Ordering::Relaxed);
        pmem::reset_stats();
        assert_eq!(inst.perform(&words, &hw, &Add, 1, 1), 110);
        let s = pmem::stats();
        assert_eq!((s.pwbs, s.pfences, s.psyncs), (1, 0, 1), "{s:?}");
        assert_eq!(inst.flush[0].load(Ordering::Relaxed), even);
    }

    /// The current record of a stamped instance (its `S` value and the record).
    fn current_stamped(inst: &Inst<true>, words: &[AtomicU64]) -> (u64, bool, u64) {
        let (s, rec) = inst.current(words);
        (s >> RECORD_BITS, rec.is_sealed(), rec.pass())
    }

    /// PWFComb1: an install writes its stamp, then one write-back of the record and one
    /// fence (no pfence, no write-back of `S`), then publishes `Durable[p]`.
    #[test]
    fn a_stamped_install_stamps_and_persists_its_record_once() {
        let inst = Inst::<true>::new(0, 1);
        let words = words::zeroed(Inst::<true>::words(1));
        inst.init(&words, &100);
        let hw = Hardware::new();
        assert_eq!(inst.seed(&words, 0), 0);
        pmem::reset_stats();
        assert_eq!(inst.execute(&words, &hw, &Add, 0, 10, 1), 100);
        let s = pmem::stats();
        let (addr, len) = inst.current(&words).1.span();
        let lines = (addr as usize + len - 1) / 64 - addr as usize / 64 + 1;
        assert_eq!((s.pwbs, s.pfences, s.psyncs), (lines as u64, 0, 1), "{s:?}");
        assert_eq!(current_stamped(&inst, &words), (1, true, 1));
        // Relaxed: one thread.
        assert_eq!(inst.flush[0].load(Ordering::Relaxed), 1, "Durable[0]");
    }

    /// PWFComb1: thread 1, served by thread 0's install that is already durable
    /// (`Durable[0]` is its pass), returns without any persistence instruction.
    #[test]
    fn a_request_served_by_a_durable_stamped_install_persists_nothing() {
        let (inst, words, hw) = thread_1_served_by_thread_0::<true>();
        pmem::reset_stats();
        assert_eq!(inst.perform(&words, &hw, &Add, 1, 1), 110);
        let s = pmem::stats();
        assert_eq!((s.pwbs, s.pfences, s.psyncs), (0, 0, 0), "{s:?}");
        assert_eq!(inst.last_applied(&words, 1), (1, 110));
    }

    /// PWFComb1: thread 0 stalls right after its SC (no stamp, no write-back, `Durable[0]`
    /// not published). Thread 1, served by that install, stamps the record itself (a CAS from
    /// the mark), writes it back and fences: after it returns the record is valid.
    #[test]
    fn a_request_served_by_an_unstamped_install_stamps_and_persists_it() {
        let (inst, words, hw) = thread_1_served_by_thread_0::<true>();
        let (_, rec) = inst.current(&words);
        let pass = rec.pass();
        rec.stamp(pass); // back to the mark: as before thread 0's stamp
                         // Relaxed: one thread.
        inst.flush[0].store(pass - 1, Ordering::Relaxed);
        assert_eq!(current_stamped(&inst, &words), (pass, false, pass));
        pmem::reset_stats();
        assert_eq!(inst.perform(&words, &hw, &Add, 1, 1), 110);
        let s = pmem::stats();
        assert!(s.pwbs >= 1 && s.pfences == 0 && s.psyncs == 1, "{s:?}");
        assert_eq!(current_stamped(&inst, &words), (pass, true, pass));
    }

    /// PWFComb1: a helper's stamp is a CAS from the mark of the pass it read; once the owner
    /// began a later build of the slot (a new mark), the stale helper's stamp does nothing.
    #[test]
    fn a_stale_helper_cannot_stamp_a_later_build() {
        let (inst, words, _hw) = thread_1_served_by_thread_0::<true>();
        let (_, rec) = inst.current(&words);
        let old = rec.pass();
        let check = rec.expected_check();
        rec.begin(old + 2); // the owner rebuilds the slot for a later pass
        rec.stamp_from_mark(old, check);
        assert!(!rec.is_sealed());
        // Relaxed: one thread. The slot still holds the new mark.
        let at = inst.layout.stamp_at.expect("stamped");
        assert_eq!(rec.words[at + 1].load(Ordering::Relaxed), old + 2);
    }

    /// PWFComb1 recovery: the valid record with the largest pass is current; a torn newest
    /// record (one word changed) is skipped for the next one.
    #[test]
    fn recovery_takes_the_valid_record_with_the_largest_pass() {
        let inst = Inst::<true>::new(0, 1);
        let words = words::zeroed(Inst::<true>::words(1));
        inst.init(&words, &0);
        let hw = Hardware::new();
        inst.seed(&words, 0);
        for seq in 1..=3 {
            inst.execute(&words, &hw, &Add, 0, 1, seq);
        }
        // Relaxed: one thread.
        let image: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
        let copy = || -> Box<[AtomicU64]> { image.iter().map(|&v| AtomicU64::new(v)).collect() };
        let words = copy();
        let fresh = Inst::<true>::new(0, 1);
        // Relaxed: one thread. S is not persisted: a reopened image holds anything there.
        fresh.mine(&words)[INDEX_WORD].store(0, Ordering::Relaxed);
        assert!(fresh.valid(&words, &NoPersist));
        assert_eq!(current_stamped(&fresh, &words), (3, true, 3));
        assert_eq!(fresh.state_now(&words), 3);
        // The scrub: pass 3's record is the only valid one left.
        let sealed = (0..Inst::<true>::records(1) as u64)
            .filter(|&id| fresh.record(&words, id).is_sealed())
            .collect::<Vec<_>>();
        assert_eq!(sealed, [fresh.current(&words).0 & RECORD_MASK]);
        // The recovered record is durable: a read after `open` persists nothing.
        pmem::reset_stats();
        assert_eq!(fresh.read(&words, &hw), 3);
        let s = pmem::stats();
        assert_eq!((s.pwbs, s.pfences, s.psyncs), (0, 0, 0), "{s:?}");
        // The image before that `open`, pass 3's record torn: its state word changes, its
        // check no longer matches.
        let words = copy();
        let (_, rec) = fresh.current(&words);
        rec.set_state(&7);
        let fresh = Inst::<true>::new(0, 1);
        assert!(fresh.valid(&words, &NoPersist));
        assert_eq!(current_stamped(&fresh, &words), (2, true, 2));
        assert_eq!(fresh.state_now(&words), 2);
        assert_eq!(fresh.last_applied(&words, 0).0, 2);
    }

    /// Found in review (issue 23). A record that crash 1 left torn, its stamp line (pass 4)
    /// persisted and its content line old, is invalid at recovery 1 (pass 2), so passes
    /// restart at 3. The owner rebuilds that slot at pass 4 with the same content (it re-runs
    /// its pending operation); its content line is evicted, its check line (the new mark) is
    /// not. Without the scrub at `open`, crash 2 finds the old stamp valid again, pass 4,
    /// beating (same pass, larger slot) the durable pass 4 another thread installed and
    /// returned from: its +100 is lost. With the scrub, the old stamp was overwritten
    /// durably at recovery 1. For 3, 4 and 8 threads (records of two, two and three lines).
    #[test]
    fn a_stale_stamp_completed_after_a_crash_is_not_recovered() {
        for n in [3, 4, 8] {
            stale_stamp_case(n);
        }
    }

    fn stale_stamp_case(n: usize) {
        use crate::layout::{LINE_WORDS, RECORDS_AT};
        type I = Inst<true>;
        let (d, e, p) = (0usize, 1usize, 2usize);
        let hw = Hardware::new();
        let lay = I::layout(n);
        let stamp_at = lay.stamp_at.expect("a stamped layout");
        let stamp_line = (stamp_at + 1) / LINE_WORDS; // the check's line
        let rec_words = |id: usize| RECORDS_AT + id * lay.len..RECORDS_AT + (id + 1) * lay.len;
        // Relaxed: one thread.
        let load = |w: &AtomicU64| w.load(Ordering::Relaxed);
        let snap = |w: &[AtomicU64]| -> Vec<u64> { w.iter().map(load).collect() };
        let from =
            |m: &[u64]| -> Box<[AtomicU64]> { m.iter().map(|&v| AtomicU64::new(v)).collect() };
        // Evictions: line `l` of record `id` (or the whole record) reaches the media.
        let persist_line = |media: &mut Vec<u64>, w: &[AtomicU64], id: usize, l: usize| {
            let r = rec_words(id);
            for i in r.start + l * LINE_WORDS..(r.start + (l + 1) * LINE_WORDS).min(r.end) {
                media[i] = load(&w[i]);
            }
        };
        let persist_rec = |media: &mut Vec<u64>, w: &[AtomicU64], id: usize| {
            for i in rec_words(id) {
                media[i] = load(&w[i]);
            }
        };
        // Era 1.
        let inst = I::new(0, n);
        let w = words::zeroed(I::words(n));
        inst.init(&w, &0);
        for t in 0..n {
            inst.seed(&w, t);
        }
        assert_eq!(inst.execute(&w, &hw, &Add, p, 10, 1), 0); // pass 1, slot 2p
        assert_eq!(inst.execute(&w, &hw, &Add, d, 1, 1), 10); // pass 2, slot 0
        let mut media = snap(&w); // all durable: P = 2
                                  // d installs pass 3 (slot 1) and stalls after its SC: nothing of it persisted.
        assert_eq!(inst.execute(&w, &hw, &Add, d, 2, 2), 11);
        // p installs pass 4 (slot 2p + 1), stamps, and crashes before its psync: only the
        // check's line reached the media.
        assert_eq!(inst.execute(&w, &hw, &Add, p, 20, 2), 13);
        assert_eq!(inst.current(&w).0, 4 << RECORD_BITS | (2 * p + 1) as u64);
        persist_line(&mut media, &w, 2 * p + 1, stamp_line);
        // Crash 1; recovery 1 (through the media model, so the scrub's write-backs count).
        let inst = I::new(0, n);
        let w = from(&media);
        let model = MediaModel::new(&media);
        model.bind(&w);
        assert!(inst.valid(&w, &model));
        let mut media = model.image();
        assert_eq!(
            inst.current(&w).0 >> RECORD_BITS,
            2,
            "recovery 1 finds pass 2"
        );
        assert_eq!(inst.state_now(&w), 11);
        for t in 0..n {
            inst.seed(&w, t);
        }
        // Era 2. d re-runs its pending operation: pass 3 again, the same content.
        assert!(matches!(
            inst.recover(&w, &hw, &Add, d, 2, 2),
            Recovered::Reexecuted(11)
        ));
        persist_rec(&mut media, &w, 1);
        // p re-runs its operation: it builds pass 4 in slot 2p + 1 (as before the crash, the
        // same content) and is preempted before its SC.
        assert_eq!(inst.current(&w).1.seq(p), 1);
        inst.announce(p, &20, 2);
        {
            let (ll, src) = inst.current(&w);
            let ind = usize::from(src.index(p));
            assert_eq!(2 * p + ind, 2 * p + 1);
            let dst = inst.record(&w, (2 * p + ind) as u64);
            dst.begin((ll >> RECORD_BITS) + 1);
            dst.copy_from(&src);
            dst.set_pid(p);
            let (act, seq, op) = inst.read_request(p).expect("p's request");
            assert_ne!(act, dst.deact(p));
            let st = dst.state();
            dst.set_ret(p, &st);
            dst.set_seq(p, seq);
            dst.set_state(&(st + op));
            dst.set_index(p, 1 - ind as u8);
        }
        // e's operation (+100) serves p's too: pass 4 in slot 2e, durable; e returns.
        assert_eq!(inst.execute(&w, &hw, &Add, e, 100, 1), 13);
        persist_rec(&mut media, &w, 2 * e);
        assert_eq!(inst.current(&w).0, 4 << RECORD_BITS | (2 * e) as u64);
        assert_eq!(inst.state_now(&w), 133);
        // p's SC fails; its second attempt finds itself served, and returns.
        assert_eq!(inst.perform(&w, &hw, &Add, p, 2), 113);
        // Evictions: slot 2p + 1's lines but the check's.
        for l in (0..lay.len.div_ceil(LINE_WORDS)).filter(|&l| l != stamp_line) {
            persist_line(&mut media, &w, 2 * p + 1, l);
        }
        // Crash 2.
        let inst = I::new(0, n);
        let w = from(&media);
        assert!(inst.valid(&w, &NoPersist));
        assert_eq!(
            inst.state_now(&w),
            133,
            "{n} threads: e's returned +100 is lost (recovered S = pass {}, record {})",
            inst.current(&w).0 >> RECORD_BITS,
            inst.current(&w).0 & RECORD_MASK
        );
    }

    /// A damaged image whose largest valid pass is the largest `S` can hold: the next
    /// install's pass would lose its top bit in `S` (`pass << 16`), so `open` refuses it.
    #[test]
    fn open_refuses_a_pass_without_successor() {
        let inst = Inst::<true>::new(0, 1);
        let words = words::zeroed(Inst::<true>::words(1));
        inst.init(&words, &7);
        let rec = inst.record(&words, 2);
        for (pass, ok) in [(LAST_PASS - 1, true), (LAST_PASS, false)] {
            rec.begin(pass);
            rec.set_state(&7);
            rec.stamp(rec.expected_check());
            assert_eq!(inst.valid(&words, &NoPersist), ok, "pass {pass}");
        }
    }
}
