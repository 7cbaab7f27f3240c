//! Dormant replicas ([`Builder::dormant_replicas`](crate::Builder::dormant_replicas), issue 21
//! "an idle replica").
//!
//! A replica with no registered thread serves nobody, yet every write must eventually be
//! replayed into it: the log head waits for its local tail, so a writer facing a full log
//! catches it up itself (`help_laggards`), which with one thread on one of two replicas doubles
//! the work of every write. With dormancy on, such a replica leaves the log instead:
//!
//! - **Sleep.** When the last handle (or dedicated combiner) on a replica goes, and another
//!   replica is live, the replica becomes *dormant*: `DORMANT` is set in its handle word by a
//!   compare-exchange from a count of 0 (so a registration that counted itself first keeps it
//!   awake), and under its combiner lock its local tail becomes `NO_REPLICA` (`Log::retire`):
//!   the head no longer waits for it and no helper replays it. Its state is left as it was
//!   (stale); nobody reads it, since a read needs a handle. At build, every replica but the
//!   first starts dormant; a replica added by `add_replica` does too.
//! - **Wake.** A registration that counts itself on a dormant replica rebuilds it before its
//!   handle is returned, as `add_replica` builds a new one: under the combiner lock of a live
//!   replica, brought up to `completed_tail`, it copies that replica's state into the dormant
//!   one (`Clone::clone_from`, which may reuse the dormant state's memory) and joins the log at
//!   the live replica's local tail (`Log::join`; why the head never passes the join index is
//!   argued in `Log::advance_head`). Then the live replicas that have no handle go dormant: at
//!   least one replica (the one just woken) stays live.
//!
//! Every sleep and wake runs under `Places::changing` (the lock of `add_replica` and
//! `remove_replica`), so they are serialized with each other and with membership changes, and
//! the set of live replicas is stable for whoever holds it. A registration that found its
//! replica dormant takes `changing` before it returns, so no handle ever sees a dormant
//! replica: the wake (or an earlier one) happened before, ordered by `changing`.
//!
//! What dormancy changes for callers: registering on a dormant replica costs a copy of the
//! whole state; `with_replica_state` on a dormant replica answers from a live one (the same
//! state: every replica holds the same sequence of writes); nothing else. A panic in `clone_from`
//! leaves the replica dormant (its half-copied state is overwritten by the next wake), fails
//! nothing else and does not poison: only the dormant replica's unused state was written.

use super::{membership::ChangesGuard, NodeReplicated};
use crate::log::NO_REPLICA;
use crate::replica::{Entered, Replica};
use crate::wait::Waiter;
use crate::{Dispatch, Poisoned, RegisterError};

/// Tries `sleep` makes for the combiner lock of the replica it puts to sleep before it leaves
/// the replica awake (the waits grow from spins to bounded parks: a few milliseconds in all).
const SLEEP_LOCK_TRIES: u32 = 200;

/// Gives back a combiner lock on every exit, a panic included, without poisoning: for a hold
/// that changes only a dormant replica, whose state no reader sees.
struct Unlock<'a, D: Dispatch>(&'a Replica<D>);

impl<D: Dispatch> Drop for Unlock<'_, D> {
    fn drop(&mut self) {
        // SAFETY: an `Unlock` is made right after its creator took the combiner lock, and
        // nothing else gives that lock back.
        unsafe { self.0.unlock_combiner() };
    }
}

/// Uncounts a handle counted on a dormant replica if its wake-up unwinds.
struct LeaveOnUnwind<'a, D: Dispatch>(&'a Replica<D>);

impl<D: Dispatch> Drop for LeaveOnUnwind<'_, D> {
    fn drop(&mut self) {
        // The replica is still dormant, so there is nothing to put to sleep.
        self.0.leave();
    }
}

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync,
{
    /// Counts a handle (or a dedicated combiner) on replica `r` (`replica`), waking it first if
    /// it is dormant. On success the caller must uncount it with `leave_replica`.
    pub(super) fn enter_replica(
        &self,
        replica: &Replica<D>,
        r: usize,
    ) -> Result<(), RegisterError> {
        match replica.enter() {
            Entered::Awake => Ok(()),
            Entered::Retired => Err(RegisterError::Retired { replica: r }),
            Entered::Dormant => {
                let leave = LeaveOnUnwind(replica);
                let woken = self.wake(r);
                if woken.is_ok() {
                    std::mem::forget(leave);
                }
                woken.map_err(|Poisoned| RegisterError::Poisoned)
            }
        }
    }

    /// Uncounts a handle counted by `enter_replica`; the last one to go puts the replica to
    /// sleep if dormancy is on (and another replica is live).
    pub(super) fn leave_replica(&self, replica: &Replica<D>, r: usize) {
        if replica.leave() && self.copy_state.is_some() && !self.is_poisoned() {
            let changing = self.replicas.lock_changes();
            self.sleep(&changing, r);
        }
    }

    /// Puts replica `r` to sleep if no handle is counted on it, it is awake and not retired,
    /// another replica is live and the object is not poisoned; returns whether it did. The
    /// caller holds `changing`.
    pub(super) fn sleep(&self, _changing: &ChangesGuard<'_, D>, r: usize) -> bool {
        let live = self.replicas.live();
        let replica = &self.replicas[r];
        if live <= 1 || self.is_poisoned() || !replica.try_sleep() {
            return false;
        }
        // Its combiner lock, so that no helper is replaying it (or `with_replica_state`
        // reading it) while its local tail changes; a helper that takes the lock afterwards
        // finds `NO_REPLICA` and replays nothing. Such holds are short, and no thread of `r`
        // is left to hold it long, but the holder may be this very thread (a handle dropped
        // inside `with_replica_state`'s closure): so the wait is bounded, and a lock that stays
        // taken leaves the replica awake, in the log, for a later drop to try again.
        let mut waiter = Waiter::new();
        let mut tries = 0;
        while !replica.try_lock_combiner(false) {
            tries += 1;
            if tries > SLEEP_LOCK_TRIES {
                // Under `changing`, so no wake saw the flag yet: a registration that counted
                // itself meanwhile finds the replica awake once it gets `changing`.
                self.replicas[r].wake();
                return false;
            }
            waiter.snooze();
        }
        let _unlock = Unlock(replica);
        self.log.retire(r);
        self.replicas.set_live(live - 1);
        true
    }

    /// Wakes dormant replica `r` for a registration counted on it (module docs), unless
    /// another registration did already.
    #[cold]
    fn wake(&self, r: usize) -> Result<(), Poisoned> {
        let changing = self.replicas.lock_changes();
        let replica = &self.replicas[r];
        if !replica.is_dormant() {
            return Ok(());
        }
        let copy = self
            .copy_state
            .expect("invariant: replicas are dormant only with `dormant_replicas`");
        // Under `changing` the live replicas stay live; there is at least one (a replica goes
        // dormant only while another is live).
        let source = (0..self.replicas.len())
            .find(|&q| self.log.local_tail(q) != NO_REPLICA)
            .expect("invariant: one replica is live");
        self.with_state_locked(source, |state, at| {
            // Nobody holds a dormant replica's lock for long: it is neither replayed nor read
            // (`with_replica_state` lets go of it at once).
            let mut waiter = Waiter::new();
            while !replica.try_lock_combiner(true) {
                waiter.snooze();
            }
            let _unlock = Unlock(replica);
            // SAFETY: we hold `r`'s combiner lock and its writer side, and no reader exists: a
            // read needs a handle, and every handle counted on `r` since it went dormant waits
            // for `changing` (which we hold) before it is returned.
            let data = replica.data.with_mut(|p| unsafe { &mut *p });
            copy(data, state);
            self.log.join(r, at);
        })?;
        replica.wake();
        self.replicas.set_live(self.replicas.live() + 1);
        for q in (0..self.replicas.len()).filter(|&q| q != r) {
            self.sleep(&changing, q);
        }
        Ok(())
    }
}
