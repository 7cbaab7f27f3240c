//! PBcomb: blocking recoverable combining (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms
//! 1 and 2), as a user of the protocol's one implementation (`engine::pb`): the batch of a
//! combining pass is `dispatch_mut` on each request, in thread order.

use core::fmt;
use core::marker::PhantomData;

use nr_core::{Dispatch, Poisoned};

use crate::engine::pb::{Batch, Instance};
use crate::error::{CombBuildError, CombRegisterError};
use crate::fingerprint::type_fingerprint;
use crate::memory::Place;
use crate::object::{handle_api, object_api, Object};
use crate::recovered::Recovered;
use crate::slots::Seat;
use pmem::{NoPersist, Persist, Pod, Region};

/// The batch of a `PBComb` pass: `dispatch_mut` on each request in thread order (Algorithm 2
/// lines 18-19); nothing to persist besides the record, nothing to do once it is durable.
struct Dispatcher<D>(PhantomData<fn() -> D>);

impl<D> Batch for Dispatcher<D>
where
    D: Dispatch + Pod,
    D::Response: Pod,
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
        for ((_, op), ret) in reqs.iter().zip(rets) {
            *ret = st.dispatch_mut(op.clone()); // lines 18-19
        }
    }

    #[inline]
    fn published(&self, _me: usize, _st: &D) {}
}

/// The protocol instance of a `PBComb<D>` (at word 0 of its memory: header line, `MIndex`,
/// records, the layout of `layout.rs`).
type Inst<D> = Instance<D, <D as Dispatch>::WriteOperation, <D as Dispatch>::Response>;

object_api! {
    /// A blocking, recoverable combining object over the sequential structure `D`, persisted
    /// through `P` (paper Algorithms 1-2).
    ///
    /// Threads [`register`](Self::register) for a [`PBCombHandle`] (at most `max_threads` at a
    /// time) and call [`execute_mut`](PBCombHandle::execute_mut) /
    /// [`execute`](PBCombHandle::execute) on it. With `P = NoPersist` ([`new`](Self::new)) every
    /// persistence instruction is a no-op and this is a plain (fast) combining object.
    ///
    /// `D` and its responses are [`Pod`]: they live in the two `StateRec` records, which a
    /// persistent object keeps in a region and recovers after a crash.
    ///
    /// # Poisoning
    ///
    /// A combiner works on a copy of the state, so a panic in `dispatch_mut` leaves the current
    /// state intact; the combiner releases the lock and marks the object *poisoned*: every later
    /// `try_*` call of a handle returns nr-core's [`Poisoned`] error, and the plain calls
    /// (`execute_mut`, `execute`, `recover`) panic (like `Mutex::lock().unwrap()`). The panicking
    /// operation is never applied.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::objects::Counter;
    /// use pcomb::PBComb;
    ///
    /// let counter = PBComb::new(Counter::default(), 4)?;
    /// std::thread::scope(|s| {
    ///     for _ in 0..4 {
    ///         s.spawn(|| {
    ///             let mut h = counter.register().expect("4 slots for 4 threads");
    ///             for _ in 0..100 {
    ///                 h.execute_mut(1);
    ///             }
    ///         });
    ///     }
    /// });
    /// assert_eq!(counter.register()?.execute(()), 400);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A handle borrows the object, so it cannot outlive it:
    ///
    /// ```compile_fail
    /// use pcomb::{objects::Counter, PBComb};
    /// let h = {
    ///     let c = PBComb::new(Counter::default(), 1).unwrap();
    ///     c.register().unwrap()
    /// };
    /// ```
    PBComb,
    PBCombHandle,
    []
}

impl<D, P> PBComb<D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    /// The header's sizes: state, response, operation.
    fn sizes() -> [usize; 3] {
        [
            core::mem::size_of::<D>(),
            core::mem::size_of::<D::Response>(),
            0,
        ]
    }
}

#[cold]
#[inline(never)]
fn poisoned(_: Poisoned) -> ! {
    panic!("PBComb is poisoned: a dispatch_mut panicked in a combiner")
}

handle_api!(PBComb, PBCombHandle, []);

impl<D, P> PBCombHandle<'_, D, P>
where
    D: Dispatch + Pod,
    D::Response: Pod,
    P: Persist,
{
    /// Applies the write operation `op` through the combiner and returns its response
    /// (Algorithm 1 `PBcomb`, lines 1-2, with `seq() + 1`). Returns once the operation is
    /// persisted (in persistent mode).
    ///
    /// # Panics
    ///
    /// If the object is poisoned (see [`PBComb`]'s *Poisoning*).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// assert_eq!(h.execute_mut(3), 0);
    /// assert_eq!(h.execute_mut(4), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> D::Response {
        self.try_execute_mut(op).unwrap_or_else(|e| poisoned(e))
    }

    /// [`execute_mut`](Self::execute_mut) that returns [`Poisoned`] (nr-core's error type)
    /// instead of panicking when the object is poisoned.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a `dispatch_mut` panicked in a combiner (before or during this call).
    /// An operation announced before the poisoning was noticed may or may not have been
    /// applied (as for nr-core).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// assert_eq!(c.register()?.try_execute_mut(3), Ok(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        let obj = &self.obj.obj;
        obj.inst.check_poison()?;
        self.seq += 1;
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

    /// Runs the read operation `op` on a snapshot of the current, persisted state.
    ///
    /// Reads are not announced: they copy the record indexed by `MIndex` while validating with
    /// `Lock` (no combiner started meanwhile), and take the lock after a few failed attempts.
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::new(9), 1)?;
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
    /// # use pcomb::{objects::Counter, PBComb};
    /// let c = PBComb::new(Counter::new(9), 1)?;
    /// assert_eq!(c.register()?.try_execute(()), Ok(9));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        let obj = &self.obj.obj;
        let persist = obj.persist();
        let st = obj
            .inst
            .read(obj.words(), persist, &Dispatcher(PhantomData), self.seat.id)?;
        Ok(st.dispatch(op))
    }

    /// Recovery function (Algorithm 1 `Recover`, lines 3-6) for this thread's operation `op`
    /// with sequence number `seq`, pending when the system crashed: returns its response, and
    /// whether it had taken effect or was executed now. Later operations continue from `seq`.
    ///
    /// Call it at most once, for the operation (and the same `seq`) the thread was executing at
    /// the crash, before the thread's next operation; a recovery that crashes may be retried.
    ///
    /// # Panics
    ///
    /// If the object is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{objects::Counter, PBComb, Recovered};
    ///
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// h.execute_mut(5); // seq 1
    /// // Recovering seq 1 finds it applied; seq 2 had not run, so it is executed now.
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
    /// use pcomb::{objects::Counter, PBComb, Recovered};
    /// let c = PBComb::new(Counter::default(), 1)?;
    /// let mut h = c.register()?;
    /// assert_eq!(h.try_recover(2, 1), Ok(Recovered::Reexecuted(0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover(
        &mut self,
        op: D::WriteOperation,
        seq: u64,
    ) -> Result<Recovered<D::Response>, Poisoned> {
        let obj = &self.obj.obj;
        obj.inst.check_poison()?;
        self.seq = seq;
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
