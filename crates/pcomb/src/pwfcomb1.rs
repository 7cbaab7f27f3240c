//! PWFComb1: PWFcomb with stamped records, one write-back wait per install (beyond the paper;
//! issue 23). The protocol is the published one's implementation (`engine::pwf`) with
//! `STAMPED = true`; its design and argument are in that module's docs, "Stamped records".

use core::fmt;
use core::marker::PhantomData;

use nr_core::Dispatch;

use crate::engine::pwf::WfInstance;
use crate::error::{CombBuildError, CombRegisterError};
use crate::fingerprint::type_fingerprint;
use crate::memory::Place;
use crate::object::{handle_api, object_api, Object};
use crate::pwfcomb::{pwf_ops, Dispatcher};
use crate::recovered::Recovered;
use crate::slots::Seat;
use pmem::{NoPersist, Persist, Pod, Region};

/// The protocol instance of a `PWFComb1<D>`: PWFcomb's, with stamped records.
type Inst<D> = WfInstance<D, <D as Dispatch>::WriteOperation, <D as Dispatch>::Response, true>;

object_api! {
    /// [`PWFComb`](crate::PWFComb) with *stamped* records: the same wait-free protocol, API and
    /// guarantees (durable linearizability, detectable `recover(op, seq)`, per-thread sequence
    /// numbers and responses persisted in the record), with one write-back wait per install
    /// instead of two (beyond the paper; issue 23).
    ///
    /// The published PWFcomb writes its new record back and fences before the SC of `S`, then
    /// writes `S` back and fences. Here a record ends with a stamp (its pass, the `S` version
    /// it was installed as, and a 64-bit check of its words), written only after a successful
    /// SC; the installer then writes the record back and fences once, and `S` is never
    /// persisted: [`open`](Self::open) takes the valid record with the largest pass. A thread
    /// served by another's install returns once that install is known durable, or writes the
    /// stamp (a CAS from the slot's mark), the write-back and the fence itself (wait-free
    /// helping). Per install: 1 pwb of the record's lines and 1 psync, no pfence (PWFComb:
    /// 2 pwbs, 1 pfence, 1 psync). The argument, case by case, is in the crate README
    /// ("PWFComb1").
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::objects::Counter;
    /// use pcomb::pmem::Region;
    /// use pcomb::PWFComb1;
    ///
    /// let c = PWFComb1::create(Region::anonymous(0xC2, 1 << 16)?, Counter::default(), 3)?;
    /// std::thread::scope(|s| {
    ///     for _ in 0..3 {
    ///         s.spawn(|| {
    ///             let mut h = c.register().expect("3 slots for 3 threads");
    ///             for _ in 0..100 {
    ///                 h.execute_mut(2);
    ///             }
    ///         });
    ///     }
    /// });
    /// let c = PWFComb1::<Counter, _>::open(c.into_region().expect("in a region"))?;
    /// assert_eq!(c.register()?.execute(()), 600);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The object is `Send + Sync` (shared by reference between threads, as above); a handle
    /// borrows it, so it cannot outlive it:
    ///
    /// ```
    /// fn shared<T: Send + Sync>() {}
    /// shared::<pcomb::PWFComb1<pcomb::objects::Counter, pcomb::pmem::Hardware>>();
    /// ```
    ///
    /// ```compile_fail
    /// use pcomb::{objects::Counter, PWFComb1};
    /// let h = {
    ///     let c = PWFComb1::new(Counter::default(), 1).unwrap();
    ///     c.register().unwrap()
    /// };
    /// ```
    PWFComb1,
    PWFComb1Handle,
    [D::WriteOperation: Pod,]
}

pwf_ops!(PWFComb1, PWFComb1Handle);
