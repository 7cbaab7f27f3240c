//! PWFcomb: wait-free recoverable combining (Fatourou, Kallimanis, Kosmas, PPoPP'22, Algorithms
//! 3 and 4), as a user of the protocol's one implementation (`engine::pwf`, which also lists
//! the deviations from the published pseudocode): the batch of an attempt is `dispatch_mut` on
//! each request, in thread order.

use core::fmt;
use core::marker::PhantomData;

use nr_core::Dispatch;

use crate::engine::pwf::{WfBatch, WfInstance};
use crate::error::{CombBuildError, CombRegisterError};
use crate::fingerprint::type_fingerprint;
use crate::memory::Place;
use crate::object::{handle_api, object_api, Object};
use crate::recovered::Recovered;
use crate::slots::Seat;
use pmem::{NoPersist, Persist, Pod, Region};

/// The batch of a `PWFComb` attempt: `dispatch_mut` on each request in thread order
/// (Algorithm 4 lines 21-22); nothing to persist besides the record, nothing to do once the
/// install is durable.
pub(crate) struct Dispatcher<D>(pub(crate) PhantomData<fn() -> D>);

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

object_api! {
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
    PWFComb,
    PWFCombHandle,
    [D::WriteOperation: Pod,]
}

/// The parts of [`PWFComb`] and [`PWFComb1`](crate::PWFComb1) beyond `object_api!`: the
/// header's sizes, the handle type (`handle_api!`) and its operations, written once. The
/// module using it has `Inst<D>` (the protocol instance) and `Dispatcher` in scope.
macro_rules! pwf_ops {
    ($T:ident, $H:ident) => {
        impl<D, P> $T<D, P>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            D::WriteOperation: Pod,
            P: Persist,
        {
            /// The header's sizes: state, response, operation.
            fn sizes() -> [usize; 3] {
                [
                    core::mem::size_of::<D>(),
                    core::mem::size_of::<D::Response>(),
                    core::mem::size_of::<D::WriteOperation>(),
                ]
            }
        }

        handle_api!($T, $H, [D::WriteOperation: Pod,]);

        impl<D, P> $H<'_, D, P>
        where
            D: Dispatch + Pod,
            D::Response: Pod,
            D::WriteOperation: Pod,
            P: Persist,
        {
            /// Applies the write operation `op` and returns its response (Algorithm 3 `PWFcomb`,
            /// lines 1-3, with `seq() + 1`). Wait-free; returns once the operation is persisted.
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("let c = ", stringify!($T), "::new(Counter::default(), 1)?;")]
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

            /// Runs the read operation `op` on a validated, persisted snapshot of the state
            /// (lock-free).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("# use pcomb::{objects::Counter, ", stringify!($T), "};")]
            #[doc = concat!("let c = ", stringify!($T), "::new(Counter::new(4), 1)?;")]
            /// assert_eq!(c.register()?.execute(()), 4);
            /// # Ok::<(), Box<dyn std::error::Error>>(())
            /// ```
            pub fn execute(&mut self, op: D::ReadOperation<'_>) -> D::Response {
                let obj = &self.obj.obj;
                obj.inst.read(obj.words(), obj.persist()).dispatch(op)
            }

            /// Recovery function (Algorithm 3 `Recover`, lines 4-7) for this thread's operation
            /// `op` with sequence number `seq`, pending at the crash. Same contract as
            /// [`PBCombHandle::recover`](crate::PBCombHandle::recover).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use pcomb::{objects::Counter, ", stringify!($T), ", Recovered};")]
            ///
            #[doc = concat!("let c = ", stringify!($T), "::new(Counter::default(), 1)?;")]
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
    };
}
pub(crate) use pwf_ops;

pwf_ops!(PWFComb, PWFCombHandle);
