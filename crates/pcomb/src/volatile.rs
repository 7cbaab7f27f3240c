//! PBcomb for any sequential structure in volatile memory: [`VolatilePBComb`]. Nothing is
//! persisted, so nothing needs a copy of the state: the combiner applies the batch in place
//! and hands each response over in its thread's slot.

use core::fmt;

use crossbeam_utils::CachePadded;
use nr_core::{Dispatch, Poisoned};

use crate::config::MAX_THREADS;
use crate::error::{CombBuildError, CombRegisterError};
use crate::slots::{Seat, Slots};
use crate::sync::{AtomicBool, AtomicU64, Ordering, UnsafeCell};
use crate::wait::Waiter;

/// One thread's request slot (Algorithm 1's `RequestRec`, with the response beside it).
///
/// Request `n` of the slot is *pending* from `announced == n` until `served == n`:
///
/// | word | written by | meaning |
/// |---|---|---|
/// | `announced` | the owner (Release), after `op` | the number of its last request |
/// | `served` | the lock holder (Release), after `ret` | the number of its last served request |
///
/// While no request is pending (`announced == served`), `op` and `ret` belong to the owner;
/// while one is, to the lock holder. Each side hands them over with its Release store.
struct Request<O, R> {
    announced: AtomicU64,
    served: AtomicU64,
    op: UnsafeCell<Option<O>>,
    ret: UnsafeCell<Option<R>>,
}

/// The request slot of a `VolatilePBComb<D>`.
type RequestOf<D> = Request<<D as Dispatch>::WriteOperation, <D as Dispatch>::Response>;

/// A blocking combining object over **any** sequential structure `D` (a `HashMap`, a `Vec`,
/// a `BTreeMap`...), in volatile memory: PBcomb's announce-and-combine protocol (Fatourou,
/// Kallimanis, Kosmas, PPoPP'22, Algorithms 1-2) without its persistence.
///
/// The bound is `D: Dispatch + Send`, nothing else: no [`Pod`](crate::Pod), no `Clone`.
/// [`PBComb`](crate::PBComb) needs `Pod` because its state lives in two `StateRec` records
/// that a combiner copies and a persistent object writes back to a region; here nothing is
/// written to media, so the combiner applies each batch *in place* (no copy of the state per
/// pass) and passes every response to its thread through the thread's slot (so responses need
/// neither `Pod` nor `Clone`). What it gives up: detectable recovery (there is nothing to
/// recover from), and lock-free reads: a read ([`execute`](VolatilePBCombHandle::execute))
/// takes the combiner lock (serving the pending writes first), because a state that is not
/// `Pod` cannot be copied while a combiner changes it. For a `Pod` state, `PBComb::new` keeps
/// its copy-based protocol with lock-free reads and the same code as the persistent objects.
///
/// # Poisoning
///
/// The state is changed in place, so a panic in `dispatch_mut` (or `dispatch`) in a lock
/// holder may leave it half-updated: the lock holder marks the object poisoned, and every later
/// `try_*` call returns nr-core's [`Poisoned`] (the plain calls panic). The state is never
/// reached again.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use pcomb::{Dispatch, VolatilePBComb};
///
/// /// A word count: `HashMap`-based, so not `Pod`.
/// #[derive(Default)]
/// struct Words(HashMap<String, u64>);
///
/// impl Dispatch for Words {
///     type ReadOperation<'a> = &'a str;
///     type WriteOperation = String;
///     type Response = u64;
///
///     fn dispatch(&self, word: &str) -> u64 {
///         self.0.get(word).copied().unwrap_or(0)
///     }
///     fn dispatch_mut(&mut self, word: String) -> u64 {
///         let n = self.0.entry(word).or_insert(0);
///         *n += 1;
///         *n
///     }
/// }
///
/// let words = VolatilePBComb::new(Words::default(), 4)?;
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             let mut h = words.register().expect("4 slots");
///             for w in ["a", "b", "a"] {
///                 h.execute_mut(w.to_string());
///             }
///         });
///     }
/// });
/// let mut h = words.register()?;
/// assert_eq!((h.execute("a"), h.execute("b"), h.execute("c")), (8, 4, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The persistent objects still require `Pod`: a `HashMap` state does not go into a region.
///
/// ```compile_fail
/// use std::collections::HashMap;
/// use pcomb::{pmem::Region, Dispatch, PBComb};
///
/// #[derive(Default)]
/// struct Map(HashMap<u64, u64>);
/// impl Dispatch for Map {
///     type ReadOperation<'a> = u64;
///     type WriteOperation = (u64, u64);
///     type Response = Option<u64>;
///     fn dispatch(&self, k: u64) -> Option<u64> { self.0.get(&k).copied() }
///     fn dispatch_mut(&mut self, (k, v): (u64, u64)) -> Option<u64> { self.0.insert(k, v) }
/// }
///
/// let region = Region::anonymous(7, 1 << 16).unwrap();
/// let _ = PBComb::create(region, Map::default(), 2); // error: `Map: Pod` is not satisfied
/// ```
///
/// A state that is not `Send` (here an `Rc`) cannot be shared through the object:
///
/// ```compile_fail
/// use std::rc::Rc;
/// use pcomb::{Dispatch, VolatilePBComb};
///
/// struct Shared(Rc<u64>);
/// impl Dispatch for Shared {
///     type ReadOperation<'a> = ();
///     type WriteOperation = u64;
///     type Response = u64;
///     fn dispatch(&self, _: ()) -> u64 { *self.0 }
///     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 = Rc::new(v); v }
/// }
///
/// let _ = VolatilePBComb::new(Shared(Rc::new(0)), 2); // error: `Rc<u64>` is not `Send`
/// ```
pub struct VolatilePBComb<D>
where
    D: Dispatch + Send,
{
    /// Odd: taken (Algorithm 1 `Lock`); only its holder touches `state`.
    lock: CachePadded<AtomicU64>,
    state: UnsafeCell<D>,
    requests: Box<[CachePadded<RequestOf<D>>]>,
    slots: Slots,
    poisoned: AtomicBool,
}

// SAFETY:
// - `state` is touched only by the holder of `lock` (taken by an Acquire CAS, released by a
//   Release store), one thread at a time, and `D: Send`;
// - each request's `op` (`D::WriteOperation: Send`) and `ret` (`D::Response: Send`) cells are
//   touched by one side at a time, handed over by the Release stores of `announced` and
//   `served` (see `Request`);
// - everything else is atomics.
unsafe impl<D: Dispatch + Send> Sync for VolatilePBComb<D> {}
// SAFETY: as for `Sync`: the object owns a `D: Send` and `Send` operations and responses.
unsafe impl<D: Dispatch + Send> Send for VolatilePBComb<D> {}

impl<D: Dispatch + Send> fmt::Debug for VolatilePBComb<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VolatilePBComb")
            .field("max_threads", &self.max_threads())
            // Relaxed: a diagnostic snapshot.
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<D: Dispatch + Send> VolatilePBComb<D> {
    /// An object holding `init`, for up to `max_threads` concurrently registered threads.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::InvalidMaxThreads`] if `max_threads` is 0 or above
    /// [`MAX_THREADS`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{CombBuildError, VolatilePBComb};
    /// # use pcomb::objects::Counter;
    ///
    /// assert!(VolatilePBComb::new(Counter::default(), 2).is_ok());
    /// let err = VolatilePBComb::new(Counter::default(), 0).unwrap_err();
    /// assert!(matches!(err, CombBuildError::InvalidMaxThreads { requested: 0, .. }));
    /// ```
    pub fn new(init: D, max_threads: usize) -> Result<Self, CombBuildError> {
        if max_threads == 0 || max_threads > MAX_THREADS {
            return Err(CombBuildError::InvalidMaxThreads {
                requested: max_threads,
                limit: MAX_THREADS,
            });
        }
        Ok(Self {
            lock: CachePadded::new(AtomicU64::new(0)),
            state: UnsafeCell::new(init),
            requests: (0..max_threads)
                .map(|_| {
                    CachePadded::new(Request {
                        announced: AtomicU64::new(0),
                        served: AtomicU64::new(0),
                        op: UnsafeCell::new(None),
                        ret: UnsafeCell::new(None),
                    })
                })
                .collect(),
            slots: Slots::new(max_threads),
            poisoned: AtomicBool::new(false),
        })
    }

    /// The `max_threads` fixed at construction.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// assert_eq!(VolatilePBComb::new(Counter::default(), 3)?.max_threads(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_threads(&self) -> usize {
        self.requests.len()
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
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::default(), 2)?;
    /// let (a, b) = (c.register()?, c.register()?);
    /// assert_eq!((a.id(), b.id()), (0, 1));
    /// assert!(c.register().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self) -> Result<VolatilePBCombHandle<'_, D>, CombRegisterError> {
        Ok(self.handle(Seat::any(&self.slots)?))
    }

    /// Registers as thread `id`.
    ///
    /// # Errors
    ///
    /// [`CombRegisterError::OutOfRange`] if `id >= max_threads`,
    /// [`CombRegisterError::InUse`] if `id` has a live handle.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, CombRegisterError, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::default(), 2)?;
    /// let h = c.register_as(1)?;
    /// assert_eq!(c.register_as(1).unwrap_err(), CombRegisterError::InUse { id: 1 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_as(&self, id: usize) -> Result<VolatilePBCombHandle<'_, D>, CombRegisterError> {
        Ok(self.handle(Seat::at(&self.slots, id)?))
    }

    fn handle<'a>(&'a self, seat: Seat<'a>) -> VolatilePBCombHandle<'a, D> {
        // Relaxed: the slot's claim (Acquire, paired with the previous owner's release) orders
        // this after the previous owner's last announcement.
        let seq = self.requests[seat.id].announced.load(Ordering::Relaxed);
        VolatilePBCombHandle {
            obj: self,
            seat,
            seq,
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

    /// Takes the lock if it is free (Algorithm 2 lines 6-8).
    #[inline]
    fn try_lock(&self) -> Option<Unlock<'_, D>> {
        // Relaxed: a hint only (test-and-test-and-set); the CAS below synchronizes.
        let lval = self.lock.load(Ordering::Relaxed);
        if lval % 2 == 1 {
            return None;
        }
        // Acquire: pairs with the previous holder's Release in `Unlock::drop`, so this holder
        // sees the state and the slots as the previous one left them.
        self.lock
            .compare_exchange(lval, lval + 1, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Unlock {
                obj: self,
                lval: lval + 1,
            })
    }

    /// Line 1: `Request[p] := <op, n>`.
    fn announce(&self, p: usize, op: D::WriteOperation, n: u64) {
        let req = &self.requests[p];
        // SAFETY:
        // - only thread `p` (the owner of the live handle for slot `p`) writes this cell;
        // - no request of `p` is pending (its previous `execute_mut` returned once `served`
        //   reached its number), so no lock holder reads the cell now: it reads it only after
        //   seeing `announced != served`, which the store below makes true.
        req.op.with_mut(|cell| unsafe { *cell = Some(op) });
        // Release: pairs with the Acquire load of `announced` in `combine`, which then sees
        // the operation written above.
        req.announced.store(n, Ordering::Release);
    }

    /// Lines 2, 5-13 for thread `p`'s pending request `n`: waits until a combiner served it,
    /// or becomes the combiner; returns the response from `p`'s slot.
    fn perform(&self, p: usize, n: u64) -> Result<D::Response, Poisoned> {
        let req = &self.requests[p];
        let mut waiter = Waiter::default();
        loop {
            // Acquire: pairs with the Release store of `served` in `combine`, after the
            // response was written.
            if req.served.load(Ordering::Acquire) == n {
                // SAFETY:
                // - request `n` is served, so the lock holders are done with the cell (they
                //   write it only for a pending request), and only `p` takes it;
                // - the Acquire load above makes the response written before `served` visible.
                let ret = req.ret.with_mut(|cell| unsafe { (*cell).take() });
                return Ok(ret.expect("invariant: a served request has a response"));
            }
            self.check_poison()?;
            if let Some(unlock) = self.try_lock() {
                self.combine(&unlock)?;
                continue; // our request is served now
            }
            waiter.snooze();
        }
    }

    /// Lines 14-21 in place, by the lock holder: every pending request, in thread order.
    fn combine(&self, _locked: &Unlock<'_, D>) -> Result<(), Poisoned> {
        // A poisoned state is never touched again (a holder that took the lock just before
        // the poisoning holder released it finds the flag set here).
        self.check_poison()?; // under the lock
                              // SAFETY:
                              // - only the lock holder touches `state`, and the caller holds the lock (`_locked`);
                              // - the reference does not outlive this call, which ends before the unlock.
        let st = self.state.with_mut(|s| unsafe { &mut *s });
        for req in self.requests.iter() {
            // Acquire: pairs with the Release in `announce`: the operation is visible.
            let n = req.announced.load(Ordering::Acquire);
            // Relaxed: only lock holders write `served`, and the lock orders them.
            if n == req.served.load(Ordering::Relaxed) {
                continue;
            }
            // SAFETY:
            // - the request is pending, so its owner does not touch `op` or `ret` until
            //   `served` reaches `n` (the store below), and no other thread holds the lock.
            let op = req.op.with_mut(|cell| unsafe { (*cell).take() });
            let op = op.expect("invariant: a pending request has an operation");
            let ret = st.dispatch_mut(op);
            // SAFETY: as above: the cell belongs to the lock holder until the store below.
            req.ret.with_mut(|cell| unsafe { *cell = Some(ret) });
            // Release: pairs with the owner's Acquire load in `perform`: the response is
            // visible to it, and the cells are its own again.
            req.served.store(n, Ordering::Release);
        }
        Ok(())
    }

    /// Runs `f` on the state under the lock, after serving the pending writes.
    fn read<T>(&self, f: impl FnOnce(&D) -> T) -> Result<T, Poisoned> {
        let mut waiter = Waiter::default();
        loop {
            self.check_poison()?;
            if let Some(unlock) = self.try_lock() {
                self.combine(&unlock)?;
                // SAFETY:
                // - only the lock holder touches `state`, and `unlock` is alive until after
                //   `f` returns;
                // - `combine`'s mutable reference ended with it.
                let st = self.state.with(|s| unsafe { &*s });
                let out = f(st);
                drop(unlock);
                return Ok(out);
            }
            waiter.snooze();
        }
    }
}

/// Releases the lock (line 28) when dropped; poisons the object first if dropped by a panic
/// (in `dispatch_mut` or `dispatch`, while the state may be half-updated).
struct Unlock<'a, D: Dispatch + Send> {
    obj: &'a VolatilePBComb<D>,
    lval: u64,
}

impl<D: Dispatch + Send> Drop for Unlock<'_, D> {
    fn drop(&mut self) {
        // The Release pairs with the next holder's Acquire CAS in `try_lock`: it sees the
        // state and the `served` words as this holder left them.
        crate::unlock::release(&self.obj.lock, &self.obj.poisoned, self.lval);
    }
}

#[cold]
#[inline(never)]
fn poisoned(_: Poisoned) -> ! {
    panic!("VolatilePBComb is poisoned: a dispatch_mut or dispatch panicked in a lock holder")
}

/// A registered thread's access to a [`VolatilePBComb`]. Dropping it frees its thread id.
///
/// # Examples
///
/// ```
/// # use pcomb::{objects::Counter, VolatilePBComb};
/// let c = VolatilePBComb::new(Counter::default(), 1)?;
/// let mut h = c.register()?;
/// assert_eq!(h.execute_mut(2), 0);
/// assert_eq!(h.seq(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct VolatilePBCombHandle<'a, D: Dispatch + Send> {
    obj: &'a VolatilePBComb<D>,
    seat: Seat<'a>,
    seq: u64,
}

impl<D: Dispatch + Send> fmt::Debug for VolatilePBCombHandle<'_, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VolatilePBCombHandle")
            .field("id", &self.seat.id)
            .field("seq", &self.seq)
            .finish()
    }
}

impl<D: Dispatch + Send> VolatilePBCombHandle<'_, D> {
    /// This thread's id, in `0..max_threads`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// assert_eq!(VolatilePBComb::new(Counter::default(), 1)?.register()?.id(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> usize {
        self.seat.id
    }

    /// The number of this slot's write operations so far (the next one gets `seq() + 1`);
    /// a new handle for a slot continues its count.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::default(), 1)?;
    /// c.register()?.execute_mut(1);
    /// assert_eq!(c.register()?.seq(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Applies the write operation `op` through the combiner and returns its response.
    ///
    /// # Panics
    ///
    /// If the object is poisoned (see [`VolatilePBComb`]'s *Poisoning*).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::default(), 1)?;
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
    /// [`Poisoned`] if a lock holder panicked (before or during this call); the operation may
    /// or may not have been applied to the (abandoned) state.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::default(), 1)?;
    /// assert_eq!(c.register()?.try_execute_mut(3), Ok(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.obj.check_poison()?;
        self.seq += 1;
        self.obj.announce(self.seat.id, op, self.seq);
        self.obj.perform(self.seat.id, self.seq)
    }

    /// Runs the read operation `op` on the current state, under the combiner lock (after
    /// serving the pending writes).
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::new(9), 1)?;
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
    /// # use pcomb::{objects::Counter, VolatilePBComb};
    /// let c = VolatilePBComb::new(Counter::new(9), 1)?;
    /// assert_eq!(c.register()?.try_execute(()), Ok(9));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        self.obj.read(|st| st.dispatch(op))
    }
}
