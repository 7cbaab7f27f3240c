//! PBcomb (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms 1 and 2): the one implementation
//! of the protocol, used by [`PBComb`](crate::PBComb) and by the linked structures (the paper's
//! PBstack and PBqueue, appendix Algorithms 5-7).
//!
//! Volatile (DRAM) part: the `Request` array (one [`Request`] per thread), `Lock` and `LockVal`.
//! Persistent part: `MIndex` and the two `StateRec` records `MemState[0..1]`, in words owned by
//! the user of the instance, at a fixed word offset (so that several instances and a node pool
//! share one block, as PBqueue's two instances share the list).
//!
//! Every *write* operation is a request served by a combiner. A *read* operation does not
//! announce anything: it reads the current record optimistically, validated by `Lock` (a
//! seqlock-style check: the record indexed by `MIndex` is rewritten only by a combiner, and a
//! combiner holds `Lock` odd), and falls back to taking the lock after a few failed attempts.
//!
//! The hooks a user plugs in ([`Batch`]):
//!
//! 1. the batch it applies: lines 16-21 are one call of [`Batch::apply`] with every pending
//!    request of the pass (elimination pairs pushes with pops of the same pass;
//!    `PBComb` calls `dispatch_mut` on each in turn);
//! 2. what it persists: `apply` writes back (pwb) whatever it wrote besides the record (new
//!    nodes) before returning, and the `pfence` of line 23 orders those before the record;
//! 3. what it does once the pass is durable: [`Batch::published`], between line 27 (`psync`)
//!    and line 28 (unlock): PBqueue's `oldTail := Tail` (Algorithm 5 line 31), and handing
//!    popped nodes to the recycler only once the state that no longer names them is durable.

use crossbeam_utils::CachePadded;

use nr_core::Poisoned;

use crate::layout::{Record, RecordLayout, INDEX_WORD};
use crate::recovered::Recovered;
use crate::sync::{AtomicBool, AtomicU64, Ordering, UnsafeCell};
use crate::wait::Waiter;
use pmem::{Persist, Pod};

/// Optimistic read attempts before a read takes the lock.
const READ_ATTEMPTS: usize = 4;
/// `ctrl` bit 0: `activate`.
const ACTIVATE: u64 = 1;
/// `ctrl` bit 1: `valid` (0 until the thread announces after a (re)start).
const VALID: u64 = 2;
/// `ctrl` bits 2..34: the request's sequence number (mod 2^32), written to `Seq[p]` when the
/// request is applied.
const SEQ_SHIFT: u32 = 2;

/// The sequential part a structure plugs into an [`Instance`].
pub(crate) trait Batch {
    /// `st` of the records.
    type State: Pod;
    /// A request (`func`, `Args`).
    type Op: Clone + Send + Sync;
    /// `ReturnVal[q]`.
    type Ret: Pod;

    /// Lines 16-21 for a whole pass: serves `reqs[i] = (q, op)` on `st` and writes `rets[i]`
    /// (which holds `ReturnVal[q]` of the previous record until then).
    /// Runs on the combiner's thread (`me`) while it holds the instance's lock; anything it
    /// writes to persistent memory besides `st` it must write back (pwb) before returning: the
    /// `pfence` of line 23 orders those pwbs before the new record becomes durable.
    fn apply(
        &self,
        me: usize,
        st: &mut Self::State,
        reqs: &[(usize, Self::Op)],
        rets: &mut [Self::Ret],
    );

    /// After line 27 (the new record and `MIndex` are durable), before line 28 (unlock), on the
    /// combiner's thread, still holding the lock.
    fn published(&self, me: usize, st: &Self::State);
}

/// One `RequestRec` (Algorithm 1): the operation (`func`, `Args`) and a control word.
///
/// | `ctrl` bit | meaning |
/// |---|---|
/// | 0 | `activate`: differs from `Deactivate[p]` of the current record while the request is pending |
/// | 1 | `valid`: the request was announced since this process started (0 after a restart) |
/// | 2..34 | the request's sequence number mod 2^32 (its low bit is bit 0) |
struct Request<Op> {
    ctrl: AtomicU64,
    /// Written only by the owner while its request is not active (equal activate/deactivate
    /// bits); read only by the combiner, under `Lock`, while the request is active.
    op: UnsafeCell<Option<Op>>,
}

/// Buffers of a combining pass, reused by every lock holder.
struct Scratch<O, R> {
    reqs: Vec<(usize, O)>,
    seqs: Vec<u32>,
    rets: Vec<R>,
}

/// One PBcomb instance at word `at` of a structure's words, with state `S`, requests `O` and
/// responses `R` (served by a [`Batch`] with these types).
pub(crate) struct Instance<S, O, R> {
    at: usize,
    layout: RecordLayout,
    /// Odd: taken (Algorithm 1 `Lock`).
    lock: CachePadded<AtomicU64>,
    /// `LockVal`.
    lock_val: CachePadded<AtomicU64>,
    requests: Box<[CachePadded<Request<O>>]>,
    /// Only the lock holder touches it.
    scratch: UnsafeCell<Scratch<O, R>>,
    poisoned: AtomicBool,
    _state: core::marker::PhantomData<fn() -> S>,
}

// SAFETY:
// - the request cells hold `O: Send + Sync` values that the owner writes and the lock holder
//   clones, under the protocol described on `Request::op`;
// - `scratch` is only accessed by the lock holder (`Lock` odd, taken by an Acquire CAS and
//   released by a Release store), so never by two threads at once; it holds `O` and `R: Pod`
//   values (`Send`);
// - everything else is atomics.
unsafe impl<S, O: Send + Sync, R: Pod> Send for Instance<S, O, R> {}
// SAFETY: as for `Send`.
unsafe impl<S, O: Send + Sync, R: Pod> Sync for Instance<S, O, R> {}

impl<S, O, R> core::fmt::Debug for Instance<S, O, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Instance")
            .field("at", &self.at)
            // Relaxed: a diagnostic snapshot.
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<S: Pod, O: Clone + Send + Sync, R: Pod> Instance<S, O, R> {
    /// The record layout of an instance for `threads` threads.
    pub(crate) fn layout(threads: usize) -> RecordLayout {
        RecordLayout::new::<S, R>(threads, false)
    }

    /// Words an instance takes (an unused line, `MIndex`'s line, two records).
    pub(crate) fn words(threads: usize) -> usize {
        Self::layout(threads).total_words(2)
    }

    /// The instance at word `at`, with fresh volatile variables.
    pub(crate) fn new(at: usize, threads: usize) -> Self {
        Self {
            at,
            layout: Self::layout(threads),
            lock: CachePadded::new(AtomicU64::new(0)),
            lock_val: CachePadded::new(AtomicU64::new(0)),
            requests: (0..threads)
                .map(|_| {
                    CachePadded::new(Request {
                        ctrl: AtomicU64::new(0),
                        op: UnsafeCell::new(None),
                    })
                })
                .collect(),
            scratch: UnsafeCell::new(Scratch {
                reqs: Vec::with_capacity(threads),
                seqs: Vec::with_capacity(threads),
                rets: Vec::with_capacity(threads),
            }),
            poisoned: AtomicBool::new(false),
            _state: core::marker::PhantomData,
        }
    }

    /// The `max_threads` of the instance.
    pub(crate) fn threads(&self) -> usize {
        self.layout.threads
    }

    fn mine<'w>(&self, words: &'w [AtomicU64]) -> &'w [AtomicU64] {
        &words[self.at..self.at + self.layout.total_words(2)]
    }

    /// Initial values: `MemState[0] := <init, ..>`, `MIndex := 0` (the caller persists).
    pub(crate) fn init(&self, words: &[AtomicU64], init: &S) {
        Record::<S, R>::at(self.mine(words), &self.layout, 0).set_state(init);
    }

    /// `MemState[MIndex]`.
    #[inline]
    fn current<'w>(&'w self, words: &'w [AtomicU64]) -> Record<'w, S, R> {
        let w = self.mine(words);
        // Acquire: pairs with the Release store of MIndex in `combine` (line 25).
        let mi = w[INDEX_WORD].load(Ordering::Acquire) as usize;
        Record::at(w, &self.layout, mi & 1)
    }

    /// Whether the current record's flags are 0 or 1 (checked by `open`; `MIndex` itself always
    /// names a record: only its low bit is used).
    pub(crate) fn valid(&self, words: &[AtomicU64]) -> bool {
        self.current(words).flags_valid(false)
    }

    /// The current state (single-threaded use: opening, auditing).
    pub(crate) fn state_now(&self, words: &[AtomicU64]) -> S {
        self.current(words).state()
    }

    /// The sequence number a freshly registered thread `id` starts from: `Seq[id]` of the
    /// current record, the number of its last applied operation (its low bit is
    /// `Deactivate[id]`, the `activate` bit of its request until it announces).
    pub(crate) fn seed(&self, words: &[AtomicU64], id: usize) -> u64 {
        let seq = self.current(words).seq(id);
        let act = u64::from(seq) & ACTIVATE;
        // Release: pairs with the combiner's Acquire load of `ctrl`; valid = 0 until the first
        // announcement.
        self.requests[id].ctrl.store(act, Ordering::Release);
        u64::from(seq)
    }

    /// `Seq[p]` and `ReturnVal[p]` of the current record: thread `p`'s last applied operation.
    /// Stable while `p` runs no operation (only `p`'s own requests change them), and durable:
    /// `p`'s operations return only once their record is persisted, and after `open` every
    /// record holds the persisted values.
    pub(crate) fn last_applied(&self, words: &[AtomicU64], p: usize) -> (u32, R) {
        let cur = self.current(words);
        (cur.seq(p), cur.ret(p))
    }

    /// `Err(Poisoned)` once a combining pass panicked (the state is the one before that pass).
    #[inline]
    pub(crate) fn check_poison(&self) -> Result<(), Poisoned> {
        // Acquire: pairs with the Release in `Unlock::drop`.
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Poisoned);
        }
        Ok(())
    }

    /// Line 1 / line 3: `Request[p] := <func, Args, act, 1>`, `act` the low bit of `seq`.
    fn announce(&self, p: usize, op: O, seq: u64) {
        let act = seq & ACTIVATE;
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
        let seq = u64::from(seq as u32) << SEQ_SHIFT;
        req.ctrl.store(seq | act | VALID, Ordering::Release);
    }

    /// Runs `op` as thread `p`'s operation number `seq` (Algorithm 1 lines 1-2).
    pub(crate) fn execute<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<R, Poisoned> {
        self.check_poison()?;
        self.announce(p, op, seq); // line 1
        self.perform(words, persist, batch, p, (seq & ACTIVATE) as u8) // line 2
    }

    /// Algorithm 1 `Recover` (lines 3-6) for thread `p`'s operation `op` with sequence number
    /// `seq`: whether it had taken effect before the crash, and its response. The check
    /// compares the whole number with `Seq[p]` (mod 2^32), not only its low bit.
    pub(crate) fn recover<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Recovered<R>, Poisoned> {
        self.check_poison()?;
        let act = seq & ACTIVATE;
        // Line 3 moved after the check (issue 11, defect 3): `Deactivate[p]` changes only when
        // `p` announces, so read before announcing it says whether the operation took effect
        // *before the crash* (the value in every record since `open` is the persisted one).
        // Read after announcing, a concurrent combiner may already have applied the request
        // without persisting it, and "applied" would be neither true of the crash nor durable.
        let cur = self.current(words);
        if cur.seq(p) == seq as u32 {
            return Ok(Recovered::Applied(cur.ret(p))); // line 6
        }
        self.announce(p, op, seq); // line 3
                                   // Lines 4-5: not yet applied; the normal path returns once it is durable.
        let ret = self.perform(words, persist, batch, p, act as u8)?;
        Ok(Recovered::Reexecuted(ret))
    }

    /// Algorithm 2 `PerformRequest`.
    fn perform<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        act: u8,
    ) -> Result<R, Poisoned> {
        loop {
            self.check_poison()?;
            // Line 6. Acquire: pairs with the Release of `Lock` on line 28.
            let mut lval = self.lock.load(Ordering::Acquire);
            if lval.is_multiple_of(2) {
                // Line 8. Acquire: pairs with the previous holder's Release on line 28.
                if self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    // `ReturnVal[p]` of the new record: p's request was served by this pass, or
                    // by a pass that ran after p's check on line 11 (the record is a copy).
                    return Ok(self.combine(words, persist, batch, lval + 1, p).1);
                }
                lval += 1; // line 9
            }
            // Line 10: wait until the combiner holding `lval` releases.
            self.wait_while_lock_is(lval);
            self.check_poison()?;
            // Line 11.
            if self.current(words).deact(p) == act {
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
                return Ok(self.current(words).ret(p)); // line 13
            }
        }
    }

    fn wait_while_lock_is(&self, value: u64) {
        let mut waiter = Waiter::default();
        // Acquire: pairs with the Release of `Lock` on line 28.
        while self.lock.load(Ordering::Acquire) == value {
            waiter.snooze();
        }
    }

    /// Lines 14-28 by thread `me` holding `Lock == lval`; returns the new state and the new
    /// record's `ReturnVal[me]`.
    fn combine<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        lval: u64,
        me: usize,
    ) -> (S, R) {
        let unlock = Unlock { inst: self, lval };
        let w = self.mine(words);
        // Relaxed: we hold the lock; our Acquire CAS on `Lock` pairs with the previous holder's
        // Release on line 28, which follows its MIndex store.
        let mi = w[INDEX_WORD].load(Ordering::Relaxed) as usize & 1;
        let ind = 1 - mi; // line 14
        let cur = Record::<S, R>::at(w, &self.layout, mi);
        let new = Record::<S, R>::at(w, &self.layout, ind);
        new.copy_from(&cur); // line 15
        let mut st = new.state();
        // SAFETY:
        // - `scratch` is only touched by the lock holder, and we hold the lock (taken by the
        //   Acquire CAS in `perform`/`read`, released by `unlock` below after the last use);
        // - the reference does not escape this function.
        let scratch = self.scratch.with_mut(|s| unsafe { &mut *s });
        scratch.reqs.clear();
        scratch.seqs.clear();
        scratch.rets.clear();
        for (q, req) in self.requests.iter().enumerate() {
            // Acquire: pairs with the Release in `announce`.
            let ctrl = req.ctrl.load(Ordering::Acquire);
            let act = (ctrl & ACTIVATE) as u8;
            // Line 17: q has a valid request not yet applied.
            if ctrl & VALID != 0 && act != new.deact(q) {
                // SAFETY:
                // - the request is active, so its owner does not write the cell until a record
                //   with equal bits is current, which only this lock holder can install;
                // - only the lock holder reads request cells.
                let op = req.op.with(|cell| unsafe { (*cell).clone() });
                let op = op.expect("invariant: an active, valid request has an operation");
                scratch.reqs.push((q, op));
                scratch.seqs.push((ctrl >> SEQ_SHIFT) as u32);
                scratch.rets.push(new.ret(q));
            }
        }
        batch.apply(me, &mut st, &scratch.reqs, &mut scratch.rets); // lines 18-19
        for (i, &(q, _)) in scratch.reqs.iter().enumerate() {
            new.set_ret(q, &scratch.rets[i]); // line 20
            new.set_seq(q, scratch.seqs[i]); // line 21 (Deactivate[q] := the low bit)
        }
        new.set_state(&st);
        let (addr, len) = new.span();
        // SAFETY:
        // - `span` is the record's own bytes, inside the region's mapping, which lives as long
        //   as `self`.
        unsafe { persist.pwb(addr, len) }; // line 22
        persist.pfence(); // line 23

        // Line 24. Release: pairs with the Acquire in `perform` (line 12).
        self.lock_val.store(lval, Ordering::Release);
        // Line 25. Release: pairs with the Acquire in `current`.
        w[INDEX_WORD].store(ind as u64, Ordering::Release);
        persist.pwb_val(&w[INDEX_WORD]); // line 26
        persist.psync(); // line 27
        batch.published(me, &st); // Algorithm 5 line 31 (and recycling)
        let ret = new.ret(me); // line 29 (read before the unlock; same value)
        drop(unlock); // line 28
        (st, ret)
    }

    /// A snapshot of the current, persisted state: optimistic (validated by `Lock`), then under
    /// the lock (a combining pass for whoever is pending) after a few failed attempts.
    pub(crate) fn read<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        me: usize,
    ) -> Result<S, Poisoned> {
        for _ in 0..READ_ATTEMPTS {
            self.check_poison()?;
            // Acquire: pairs with the Release of `Lock` on line 28; with `l1` even the record at
            // MIndex is complete and persisted.
            let l1 = self.lock.load(Ordering::Acquire);
            if l1 % 2 == 1 {
                self.wait_while_lock_is(l1);
                continue;
            }
            let st = self.current(words).state();
            // Acquire: keeps this load after the record loads (Acquire too).
            if self.lock.load(Ordering::Acquire) == l1 {
                return Ok(st);
            }
        }
        self.read_locked(words, persist, batch, me)
    }

    /// Takes the lock (waiting for it) for a read that could not validate optimistically.
    #[cold]
    fn read_locked<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        me: usize,
    ) -> Result<S, Poisoned> {
        loop {
            self.check_poison()?;
            // Acquire: pairs with the Release of `Lock` on line 28.
            let lval = self.lock.load(Ordering::Acquire);
            if lval.is_multiple_of(2)
                && self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok(self.combine(words, persist, batch, lval + 1, me).0);
            }
            self.wait_while_lock_is(lval | 1);
        }
    }
}

/// Releases `Lock` (line 28) when dropped; poisons the instance first if dropped by a panic.
struct Unlock<'a, S, O, R> {
    inst: &'a Instance<S, O, R>,
    lval: u64,
}

impl<S, O, R> Drop for Unlock<'_, S, O, R> {
    fn drop(&mut self) {
        // Line 28 (the Release pairs with the Acquire loads of `Lock` in `perform`, `read`
        // and the next combiner's CAS).
        crate::unlock::release(&self.inst.lock, &self.inst.poisoned, self.lval);
    }
}
