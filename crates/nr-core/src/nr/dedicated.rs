//! A dedicated combiner per node (§4, §6 "Inactive replica"; `Builder::dedicated_combiners`).
//!
//! The thread that calls [`NodeReplicated::run_combiner`] becomes its replica's only combiner
//! while it runs: posting threads see it attached and only post and wait; it takes the combiner
//! lock whenever an operation is pending or its replica lags `completed_tail`, and otherwise
//! sleeps (bounded) until a poster wakes it. It combines exactly as a posting thread would
//! (`combine`, `serve_posted_single`, under the same lock), so it adds no synchronization to
//! the data path: only the attach flag (a hint: a poster that reads it stale waits a bounded
//! park longer, or combines itself, both correct) and the wake-up of the sleeping combiner (a
//! Dekker pair; every sleep is bounded, so a lost wake-up costs latency, never progress).

use super::{CombinerGuard, NodeReplicated};
use crate::replica::Replica;
use crate::sync::Entered;
use crate::wait::Waiter;
use crate::{Dispatch, RegisterError};

/// Detaches the dedicated combiner when `run_combiner` returns or unwinds.
struct Attached<'a, D: Dispatch + Send + Sync> {
    nr: &'a NodeReplicated<D>,
    replica: &'a Replica<D>,
    r: usize,
}

impl<D: Dispatch + Send + Sync> Drop for Attached<'_, D> {
    fn drop(&mut self) {
        self.replica.detach_dedicated();
        self.nr.leave_replica(self.replica, self.r);
    }
}

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync,
{
    /// Runs replica `replica`'s dedicated combiner on the calling thread until `stop()` returns
    /// true (checked between batches and at least every millisecond while idle). Needs
    /// [`Builder::dedicated_combiners`](crate::Builder::dedicated_combiners). While it runs, the
    /// replica's writers leave all combining to it; it also keeps the replica refreshed from the
    /// log when its writers are idle (§6 "Inactive replica").
    ///
    /// # Errors
    ///
    /// [`RegisterError::DedicatedCombinersOff`], [`RegisterError::NoSuchReplica`],
    /// [`RegisterError::CombinerRunning`] if another thread runs this replica's combiner, and
    /// [`RegisterError::Poisoned`] (at the start, or when the object gets poisoned meanwhile).
    ///
    /// # Panics
    ///
    /// A panic in user code it runs (`dispatch_mut`, `Clone` of an operation) propagates, and
    /// poisons the object, as for any combiner.
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
    /// let nr = NodeReplicated::builder().replicas(1).build(|_| S)?;
    /// // Off by default.
    /// assert_eq!(nr.run_combiner(0, || true), Err(RegisterError::DedicatedCombinersOff));
    /// # Ok::<(), nr_core::BuildError>(())
    /// ```
    pub fn run_combiner(
        &self,
        replica: usize,
        stop: impl Fn() -> bool,
    ) -> Result<(), RegisterError> {
        if !self.dedicated {
            return Err(RegisterError::DedicatedCombinersOff);
        }
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
        self.enter_replica(rep, replica)?;
        if !rep.attach_dedicated() {
            self.leave_replica(rep, replica);
            return Err(RegisterError::CombinerRunning { replica });
        }
        let _attached = Attached {
            nr: self,
            replica: rep,
            r: replica,
        };
        let _entered = Entered::new(self as *const Self as usize);
        let single = self.single();
        let mut waiter = Waiter::new();
        while !stop() {
            if self.is_poisoned() {
                return Err(RegisterError::Poisoned);
            }
            let behind = !single && self.log.local_tail(replica) < self.log.completed_tail();
            if (rep.has_pending() || behind) && rep.try_lock_combiner(self.writer_with_lock()) {
                let combiner = CombinerGuard::new(self, rep);
                // Poisoned since the check above: serve nothing (as `execute_mut_posted`).
                if self.poisoned_under_lock() {
                    return Err(RegisterError::Poisoned);
                }
                if single {
                    self.serve_posted_alone(rep)
                        .map_err(|_| RegisterError::Poisoned)?;
                } else {
                    self.combine(replica, None)
                        .map_err(|_| RegisterError::Poisoned)?;
                    // With nothing posted, `combine` did not replay: refresh the replica, only
                    // up to `completed_tail` (the read-order invariant, see `Log::completed_tail`).
                    let completed = self.log.completed_tail();
                    if self.log.local_tail(replica) < completed {
                        rep.lock.lock_writer();
                        self.replay(replica, completed, false)
                            .map_err(|_| RegisterError::Poisoned)?;
                    }
                }
                combiner.release();
                waiter = Waiter::new();
                continue;
            }
            waiter.snooze_or(|micros| rep.sleep_dedicated(micros));
        }
        Ok(())
    }
}
