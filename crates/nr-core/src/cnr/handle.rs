//! Thread registration with a CNR replica.

use std::marker::PhantomData;

use super::{ConcurrentDispatch, ConcurrentReplicated};
use crate::error::{Poisoned, RegisterError};

impl<D: ConcurrentDispatch> ConcurrentReplicated<D> {
    /// Registers the calling thread with replica `replica`: it takes one combining slot of that
    /// replica for each log.
    ///
    /// # Errors
    ///
    /// [`RegisterError::NoSuchReplica`], [`RegisterError::ReplicaFull`] (all
    /// `threads_per_replica` slots are taken by live handles), [`RegisterError::Poisoned`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
    /// # struct S; #[derive(Clone)] struct W;
    /// # impl LogMapper for W { fn route(&self, _: usize) -> Route { Route::Scan } }
    /// # impl ConcurrentDispatch for S {
    /// #     type ReadOperation<'a> = W; type WriteOperation = W; type Response = ();
    /// #     fn dispatch(&self, _: W) {} fn dispatch_mut(&self, _: W) {}
    /// # }
    /// let cnr = ConcurrentReplicated::builder().threads_per_replica(1).build(|_| S)?;
    /// let h = cnr.register(0)?;
    /// assert!(cnr.register(0).is_err());
    /// drop(h);
    /// assert!(cnr.register(0).is_ok());
    /// assert!(cnr.register(1).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self, replica: usize) -> Result<CnrHandle<'_, D>, RegisterError> {
        if self.is_poisoned() {
            return Err(RegisterError::Poisoned);
        }
        let rep = self
            .replicas
            .get(replica)
            .ok_or(RegisterError::NoSuchReplica {
                replica,
                replicas: self.replicas.len(),
            })?;
        let mut slots = Vec::with_capacity(rep.combining.len());
        for area in rep.combining.iter() {
            match area.register() {
                Some(slot) => slots.push(slot),
                None => {
                    for (area, &slot) in rep.combining.iter().zip(&slots) {
                        area.deregister(slot);
                    }
                    return Err(RegisterError::ReplicaFull {
                        replica,
                        capacity: area.capacity(),
                    });
                }
            }
        }
        Ok(CnrHandle {
            cnr: self,
            replica,
            slots: slots.into(),
            _not_send: PhantomData,
        })
    }
}

/// A thread's registration with one replica of a [`ConcurrentReplicated`] object: one combining
/// slot per log. Neither `Send` nor `Sync`; dropping it frees the slots.
///
/// ```compile_fail
/// # use nr_core::cnr::{ConcurrentDispatch, ConcurrentReplicated, LogMapper, Route};
/// # struct S; #[derive(Clone)] struct W;
/// # impl LogMapper for W { fn route(&self, _: usize) -> Route { Route::Scan } }
/// # impl ConcurrentDispatch for S {
/// #     type ReadOperation<'a> = W; type WriteOperation = W; type Response = ();
/// #     fn dispatch(&self, _: W) {} fn dispatch_mut(&self, _: W) {}
/// # }
/// fn is_send<T: Send>(_: T) {}
/// let cnr = ConcurrentReplicated::builder().build(|_| S).unwrap();
/// is_send(cnr.register(0).unwrap());
/// ```
///
/// # Examples
///
/// See [`ConcurrentReplicated`].
pub struct CnrHandle<'a, D: ConcurrentDispatch> {
    cnr: &'a ConcurrentReplicated<D>,
    replica: usize,
    /// Our slot in each log's combining area of the replica.
    slots: Box<[usize]>,
    _not_send: PhantomData<*const ()>,
}

impl<D: ConcurrentDispatch> std::fmt::Debug for CnrHandle<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnrHandle")
            .field("replica", &self.replica)
            .field("slots", &self.slots)
            .finish_non_exhaustive()
    }
}

impl<D: ConcurrentDispatch> CnrHandle<'_, D> {
    /// The replica this handle is registered with.
    ///
    /// # Examples
    ///
    /// See [`ConcurrentReplicated::register`].
    pub fn replica(&self) -> usize {
        self.replica
    }

    /// Runs a read on this replica, after it applied every write of the read's log(s) that
    /// completed before the call.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] once a panic in user code poisoned the object.
    ///
    /// # Examples
    ///
    /// See [`ConcurrentReplicated`].
    pub fn execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        self.cnr.read(self.replica, op)
    }

    /// Runs a write through the log it maps to, or a scan through every log
    /// ([`Route::Scan`](super::Route::Scan)), and returns its response on this replica.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] once a panic in user code poisoned the object (the operation may or may
    /// not have been applied).
    ///
    /// # Panics
    ///
    /// Propagates a panic of `dispatch_mut` (or of `Clone`/`Drop` of an operation) that this
    /// thread ran as combiner, after poisoning the object.
    ///
    /// # Examples
    ///
    /// See [`ConcurrentReplicated`].
    #[inline]
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.cnr.write(self.replica, &self.slots, op)
    }
}

impl<D: ConcurrentDispatch> Drop for CnrHandle<'_, D> {
    fn drop(&mut self) {
        let rep = &self.cnr.replicas[self.replica];
        for (area, &slot) in rep.combining.iter().zip(self.slots.iter()) {
            area.deregister(slot);
        }
    }
}
