//! A registered thread's handle.

use std::marker::PhantomData;

use super::NodeReplicated;
use crate::replica::Replica;
use crate::{Dispatch, Poisoned, RegisterError};

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync,
{
    /// Registers the calling thread with replica `replica` and returns its handle. Register each
    /// thread with the replica of the node it runs on ([`replica_for_cpu`](Self::replica_for_cpu))
    /// for locality; any replica is *correct*.
    ///
    /// The slot is freed when the handle is dropped.
    ///
    /// # Errors
    ///
    /// [`RegisterError::NoSuchReplica`], [`RegisterError::ReplicaFull`] when
    /// `threads_per_replica` handles are alive, [`RegisterError::Poisoned`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated, RegisterError};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = NodeReplicated::builder().replicas(1).threads_per_replica(1).build(|_| S)?;
    /// let h = nr.register(0)?;
    /// assert!(matches!(nr.register(0), Err(RegisterError::ReplicaFull { .. })));
    /// drop(h);
    /// assert!(nr.register(0).is_ok(), "the slot is free again");
    /// assert!(matches!(nr.register(7), Err(RegisterError::NoSuchReplica { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(&self, replica: usize) -> Result<ThreadHandle<'_, D>, RegisterError> {
        if self.is_poisoned() {
            return Err(RegisterError::Poisoned);
        }
        let r = self
            .replicas
            .get(replica)
            .ok_or(RegisterError::NoSuchReplica {
                replica,
                replicas: self.replicas.len(),
            })?;
        self.enter_replica(r, replica)?;
        let Some(slot) = r.register() else {
            self.leave_replica(r, replica);
            return Err(RegisterError::ReplicaFull {
                replica,
                capacity: r.capacity(),
            });
        };
        Ok(ThreadHandle {
            nr: self,
            rep: r,
            replica,
            slot,
            _not_send: PhantomData,
        })
    }
}

/// A thread's registration with one replica of a [`NodeReplicated`] object: the only way to
/// operate on it.
///
/// A handle is bound to the object it came from (it borrows it, so it cannot be used with
/// another instance), and to the thread that registered: it is neither `Send` nor `Sync` nor
/// `Clone`, and its methods take `&mut self`, so its combining slot is never used by two threads
/// or two operations at once.
///
/// ```compile_fail
/// # use nr_core::{Dispatch, NodeReplicated};
/// # #[derive(Default)] struct S;
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
/// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
/// # }
/// let nr = NodeReplicated::builder().replicas(1).build(|_| S).unwrap();
/// let mut h = nr.register(0).unwrap();
/// std::thread::scope(|s| {
///     // error: `ThreadHandle` cannot be sent to another thread
///     s.spawn(move || h.execute_mut(()));
/// });
/// ```
///
/// ```compile_fail
/// # use nr_core::{Dispatch, NodeReplicated};
/// # #[derive(Default)] struct S;
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
/// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
/// # }
/// let nr = NodeReplicated::builder().replicas(1).build(|_| S).unwrap();
/// let h = nr.register(0).unwrap();
/// std::thread::scope(|s| {
///     // error: `ThreadHandle` cannot be shared between threads
///     let h = &h;
///     s.spawn(move || h.replica());
/// });
/// ```
///
/// ```compile_fail
/// # use nr_core::{Dispatch, NodeReplicated};
/// # #[derive(Default)] struct S;
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
/// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
/// # }
/// let nr = NodeReplicated::builder().replicas(1).build(|_| S).unwrap();
/// let h = nr.register(0).unwrap();
/// let h2 = h; // moves: a handle is not `Copy` ...
/// let h3 = h.clone(); // ... nor `Clone`
/// ```
///
/// ```compile_fail
/// # use nr_core::{Dispatch, NodeReplicated};
/// # #[derive(Default)] struct S;
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
/// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
/// # }
/// let h;
/// {
///     let nr = NodeReplicated::builder().replicas(1).build(|_| S).unwrap();
///     h = nr.register(0).unwrap();
/// } // error: `nr` dropped while still borrowed by its handle
/// drop(h);
/// ```
///
/// # Examples
///
/// ```
/// # use nr_core::{Dispatch, NodeReplicated};
/// # #[derive(Default)] struct S(u64);
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
/// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
/// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
/// # }
/// let nr = NodeReplicated::builder().replicas(2).build(|_| S::default())?;
/// let mut a = nr.register(0)?;
/// let mut b = nr.register(1)?;
/// a.execute_mut(5)?;
/// assert_eq!(b.execute(())?, 5, "a completed write is visible on every replica");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ThreadHandle<'a, D>
where
    D: Dispatch + Send + Sync,
{
    nr: &'a NodeReplicated<D>,
    /// `nr.replicas[replica]`, resolved once at registration (no index check per write).
    rep: &'a Replica<D>,
    replica: usize,
    slot: usize,
    /// A raw pointer makes the handle `!Send` and `!Sync`.
    _not_send: PhantomData<*mut ()>,
}

impl<D> ThreadHandle<'_, D>
where
    D: Dispatch + Send + Sync,
{
    /// Runs a read-only operation on this thread's replica, after bringing the replica up to
    /// date with every write that completed before this call.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if the object is poisoned.
    ///
    /// # Panics
    ///
    /// Propagates a panic of `dispatch` (without poisoning the object). In debug builds, panics
    /// if called from user code (`dispatch`, `dispatch_mut`, `Clone` or `Drop` of an operation)
    /// running inside an operation of the same object, which would otherwise wait for itself
    /// forever; release builds do not check.
    ///
    /// # Examples
    ///
    /// See [`ThreadHandle`].
    #[inline]
    pub fn execute(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        self.nr.execute(self.rep, self.replica, self.slot, op)
    }

    /// Runs a mutating operation: it is linearized in the shared log and applied to every
    /// replica; the response is this replica's.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if the object is, or becomes while this call waits, poisoned.
    ///
    /// # Panics
    ///
    /// Propagates a panic of `dispatch_mut` or of the operation's `clone` when it happens on this
    /// thread (this thread may be combining other threads' operations), or of the `Drop` of an
    /// earlier operation whose log entry this one reuses; the object is then poisoned. In debug
    /// builds, panics if called from user code running inside an operation of the same object
    /// (see [`execute`](Self::execute)).
    ///
    /// # Examples
    ///
    /// See [`ThreadHandle`].
    #[inline]
    pub fn execute_mut(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.nr.execute_mut(self.rep, self.replica, self.slot, op)
    }

    /// The replica this handle is registered with.
    ///
    /// # Examples
    ///
    /// ```
    /// # use nr_core::{Dispatch, NodeReplicated};
    /// # #[derive(Default)] struct S;
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
    /// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
    /// # }
    /// let nr = NodeReplicated::builder().replicas(2).build(|_| S)?;
    /// assert_eq!(nr.register(1)?.replica(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replica(&self) -> usize {
        self.replica
    }
}

impl<D> Drop for ThreadHandle<'_, D>
where
    D: Dispatch + Send + Sync,
{
    fn drop(&mut self) {
        self.rep.deregister(self.slot);
        self.nr.leave_replica(self.rep, self.replica);
    }
}

impl<D> std::fmt::Debug for ThreadHandle<'_, D>
where
    D: Dispatch + Send + Sync,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadHandle")
            .field("replica", &self.replica)
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}
