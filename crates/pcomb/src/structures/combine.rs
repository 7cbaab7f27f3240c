//! PBcomb for linked structures: Algorithms 1-2 with the batch view and the extra persistence
//! steps of the paper's PBstack and PBqueue (appendix, Algorithms 5-7).
//!
//! [`PBComb`](crate::PBComb) applies requests one at a time through `Dispatch::dispatch_mut`
//! and owns its region. A linked structure needs three things that interface does not give:
//!
//! 1. the whole batch at once (elimination pairs pushes with pops of the same pass);
//! 2. a step between line 27 (`psync`) and line 28 (unlock): PBqueue's `oldTail := Tail`
//!    (Algorithm 5 line 31), and handing popped nodes to the recycler only once the state that
//!    no longer names them is durable;
//! 3. several instances and a node pool in one region (PBqueue's two instances share the list).
//!
//! [`Instance`] is that protocol, line for line as in `pbcomb.rs` (same records, same
//! `Lock`/`LockVal` hand-off, same recovery), with the combining loop (lines 16-21) replaced by
//! one call of [`Batch::apply`] and the hook [`Batch::published`] inserted before line 28. It
//! works on words owned by the structure (a [`Store`](super::store::Store)), at a fixed word
//! offset, so that several instances share one block.

use crossbeam_utils::CachePadded;

use crate::layout::{Record, RecordLayout, INDEX_WORD};
use crate::sync::{panicking, AtomicBool, AtomicU64, Ordering, UnsafeCell};
use crate::wait::Waiter;
use pmem::{Persist, Pod};

/// Optimistic read attempts before a read takes the lock.
const READ_ATTEMPTS: usize = 4;
/// `ctrl` bit 0: `activate`.
const ACTIVATE: u64 = 1;
/// `ctrl` bit 1: `valid` (0 until the thread announces after a (re)start).
const VALID: u64 = 2;

/// The sequential part a structure plugs into an [`Instance`].
pub(crate) trait Batch {
    /// `st` of the records.
    type State: Pod;
    /// A request (`func`, `Args`).
    type Op: Copy + Send + Sync;
    /// `ReturnVal[q]`.
    type Ret: Pod + Default;

    /// Lines 16-21 for a whole pass: serves `reqs[i] = (q, op)` on `st` and writes `rets[i]`.
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

/// One `RequestRec`.
///
/// | `ctrl` bit | meaning |
/// |---|---|
/// | 0 | `activate` |
/// | 1 | `valid` |
struct Request<Op> {
    ctrl: AtomicU64,
    /// Written by the owner while its request is inactive; read by the lock holder while it is
    /// active (the protocol of `pbcomb.rs`'s `Request::op`).
    op: UnsafeCell<Option<Op>>,
}

/// Buffers of a combining pass, reused by every lock holder.
struct Scratch<O, R> {
    reqs: Vec<(usize, O)>,
    acts: Vec<u8>,
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
// - the request cells hold `O: Send + Sync` values written by their owner and read by the lock
//   holder under the announce protocol;
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

impl<S: Pod, O: Copy + Send + Sync, R: Pod + Default> Instance<S, O, R> {
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
                acts: Vec::with_capacity(threads),
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

    /// The `activate` bit a freshly registered thread `id` starts from (`Deactivate[id]`).
    pub(crate) fn seed(&self, words: &[AtomicU64], id: usize) -> u64 {
        let act = u64::from(self.current(words).deact(id));
        // Release: pairs with the combiner's Acquire load of `ctrl`; valid = 0 until the first
        // announcement.
        self.requests[id].ctrl.store(act, Ordering::Release);
        act
    }

    #[inline]
    fn check_poison(&self) {
        // Acquire: pairs with the Release in `Unlock::drop`.
        if self.poisoned.load(Ordering::Acquire) {
            poisoned();
        }
    }

    /// Line 1 / 3: `Request[p] := <op, act, 1>`.
    fn announce(&self, p: usize, op: O, act: u64) {
        let req = &self.requests[p];
        // SAFETY:
        // - only the owner of slot `p` writes this cell;
        // - `p`'s previous request is inactive (its bits are equal in the current record, or
        //   `valid` is 0), so no combiner reads the cell: it reads it only after loading a
        //   `ctrl` whose activate bit differs from `Deactivate[p]`, which the store below makes.
        req.op.with_mut(|cell| unsafe { *cell = Some(op) });
        // Release: pairs with the combiner's Acquire load of `ctrl` in `combine`.
        req.ctrl.store(act | VALID, Ordering::Release);
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
    ) -> R {
        let act = seq & ACTIVATE;
        self.announce(p, op, act);
        self.perform(words, persist, batch, p, act as u8)
    }

    /// Algorithm 1 `Recover` (lines 3-6): `Ok(response)` if thread `p`'s operation `seq` had
    /// taken effect, `Err(response)` if it is executed now.
    pub(crate) fn recover<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<R, R> {
        let act = seq & ACTIVATE;
        // Line 3 moved after the check (issue 11, defect 3): `Deactivate[p]` changes only when
        // `p` announces, so read before announcing it says whether the operation took effect
        // *before the crash* (the value in every record since `open` is the persisted one).
        // Read after announcing, a concurrent combiner may already have applied the request
        // without persisting it, and "applied" would be neither true of the crash nor durable.
        let cur = self.current(words);
        if u64::from(cur.deact(p)) == act {
            return Ok(cur.ret(p)); // line 6
        }
        self.announce(p, op, act); // line 3
        Err(self.perform(words, persist, batch, p, act as u8)) // lines 4-5
    }

    /// Algorithm 2 `PerformRequest`.
    fn perform<P: Persist, B: Batch<State = S, Op = O, Ret = R>>(
        &self,
        words: &[AtomicU64],
        persist: &P,
        batch: &B,
        p: usize,
        act: u8,
    ) -> R {
        loop {
            self.check_poison();
            // Line 6. Acquire: pairs with the Release of `Lock` on line 28.
            let mut lval = self.lock.load(Ordering::Acquire);
            if lval % 2 == 0 {
                // Line 8. Acquire: pairs with the previous holder's Release on line 28.
                if self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    // `ReturnVal[p]` of the new record: p's request was served by this pass, or
                    // by a pass that ran after p's check on line 11 (the record is a copy).
                    return self.combine(words, persist, batch, lval + 1, p).1;
                }
                lval += 1; // line 9
            }
            self.wait_while_lock_is(lval); // line 10
            self.check_poison();
            if self.current(words).deact(p) == act {
                // Line 12 (as in `pbcomb.rs`: wait for the combiner whose `LockVal` we read).
                // Acquire: pairs with the Release of `LockVal` on line 24.
                let lv = self.lock_val.load(Ordering::Acquire);
                if lv != lval {
                    self.wait_while_lock_is(lv);
                }
                return self.current(words).ret(p); // line 13
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
        scratch.acts.clear();
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
                let op = req.op.with(|cell| unsafe { *cell });
                let op = op.expect("invariant: an active, valid request has an operation");
                scratch.reqs.push((q, op));
                scratch.acts.push(act);
            }
        }
        scratch.rets.clear();
        scratch.rets.resize(scratch.reqs.len(), R::default());
        batch.apply(me, &mut st, &scratch.reqs, &mut scratch.rets); // lines 18-19
        for (i, &(q, _)) in scratch.reqs.iter().enumerate() {
            new.set_ret(q, &scratch.rets[i]); // line 20
            new.set_deact(q, scratch.acts[i]); // line 21
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
    ) -> S {
        for _ in 0..READ_ATTEMPTS {
            self.check_poison();
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
                return st;
            }
        }
        loop {
            self.check_poison();
            // Acquire: pairs with the Release of `Lock` on line 28.
            let lval = self.lock.load(Ordering::Acquire);
            if lval % 2 == 0
                && self
                    .lock
                    .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return self.combine(words, persist, batch, lval + 1, me).0;
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
        if panicking() {
            // Release: pairs with the Acquire in `check_poison`.
            self.inst.poisoned.store(true, Ordering::Release);
        }
        // Line 28. Release: pairs with the Acquire loads of `Lock` in `perform`, `read` and the
        // next combiner's CAS.
        self.inst.lock.store(self.lval + 1, Ordering::Release);
    }
}

#[cold]
#[inline(never)]
fn poisoned() -> ! {
    panic!("structure is poisoned: a combining pass panicked")
}
