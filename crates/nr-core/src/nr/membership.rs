//! Replicas added and removed at run time (issue 21): the table of replica places,
//! [`NodeReplicated::add_replica`] and [`NodeReplicated::remove_replica`].
//!
//! An object has `Builder::max_replicas` places. The first `replicas` hold the replicas built
//! with it; `add_replica` fills the next one with a copy (`D: Clone`) of an existing replica's
//! state, taken at a log position, and the new replica *joins* the log there (`Log::join`): it
//! replays from that position on, and the log head never passes it before it does.
//! `remove_replica` *retires* a replica whose threads have all dropped their handles: its local
//! tail becomes `NO_REPLICA`, so the head no longer waits for it and no helper replays it. A
//! retired replica keeps its place and its memory until the object is dropped (a helper may
//! still hold a reference to it), and takes no registration again.
//!
//! Why the copy and the join are consistent: `add_replica` holds the source replica's combiner
//! lock from before it brings the source up to `completed_tail` until after the join. Every
//! change to a replica's state and local tail is made under its combiner lock, so the copy is
//! exactly the state after the entries below the source's local tail `at`, and while the lock is
//! held the source's local tail stays `at`, so the head is at most `at` when the new replica
//! joins there. After the join `advance_head` counts the new local tail (a scan that the join
//! overlapped is repeated: the argument is in `Log::advance_head`).
//!
//! With [`Builder::dormant_replicas`](crate::Builder::dormant_replicas) a replica also leaves
//! and rejoins the log while it has no handle, through the same `changing` lock, retirement and
//! join (`dormancy.rs`); `live` then counts the replicas neither retired nor dormant.

use super::{CombinerGuard, NodeReplicated};
use crate::error::ReplicaError;
use crate::replica::Replica;
use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use crate::wait::Waiter;
use crate::Dispatch;

/// The replica places of an object: each empty (null) or holding a replica, live or retired.
pub(crate) struct Places<D: Dispatch> {
    places: Box<[AtomicPtr<Replica<D>>]>,
    /// Places filled so far: every place below it holds a replica (`add_replica` fills the next,
    /// then publishes the count).
    used: AtomicUsize,
    /// Replicas neither retired nor dormant (`dormancy.rs`).
    live: AtomicUsize,
    /// Held by the one `add_replica`, `remove_replica`, sleep or wake-up under way.
    changing: AtomicBool,
}

// SAFETY: the places own their replicas (made by `Box::into_raw`, freed only in `drop`), which
// are shared and sent exactly as `Box<Replica<D>>` would be.
unsafe impl<D: Dispatch> Send for Places<D> where Box<Replica<D>>: Send {}
// SAFETY: as above; the places hand out `&Replica<D>` only.
unsafe impl<D: Dispatch> Sync for Places<D> where Box<Replica<D>>: Sync {}

impl<D: Dispatch> Places<D> {
    /// `places` places, the first filled with `replicas` (at least one, at most `places`).
    pub(crate) fn new(replicas: Vec<Box<Replica<D>>>, places: usize) -> Self {
        debug_assert!(!replicas.is_empty() && replicas.len() <= places);
        let used = replicas.len();
        let mut table: Vec<AtomicPtr<Replica<D>>> = replicas
            .into_iter()
            .map(|r| AtomicPtr::new(Box::into_raw(r)))
            .collect();
        table.resize_with(places, || AtomicPtr::new(std::ptr::null_mut()));
        Self {
            places: table.into_boxed_slice(),
            used: AtomicUsize::new(used),
            live: AtomicUsize::new(used),
            changing: AtomicBool::new(false),
        }
    }

    /// Places filled so far (replica indices are below it).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // Acquire: pairs with the Release store in `fill`, so the places below are seen filled.
        self.used.load(Ordering::Acquire)
    }

    /// The most replicas the object can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.places.len()
    }

    /// The replica in place `r`, if the place is filled.
    #[inline]
    pub(crate) fn get(&self, r: usize) -> Option<&Replica<D>> {
        // Acquire: pairs with the Release store in `fill`, publishing the replica's fields.
        let p = self.places.get(r)?.load(Ordering::Acquire);
        // SAFETY: a non-null place points to a replica made by `Box::into_raw` (in `new` or
        // `fill`), never changed again and freed only in `drop`, which `&self` excludes.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Fills place `r` (the next one: `len()`) with `replica` and publishes it. The caller holds
    /// `changing`.
    fn fill(&self, r: usize, replica: Box<Replica<D>>) {
        debug_assert_eq!(self.used.load(Ordering::Relaxed), r);
        // Release: pairs with the Acquire in `get`.
        self.places[r].store(Box::into_raw(replica), Ordering::Release);
        // Relaxed: only holders of `changing` change `live`, which hands it on.
        self.live
            .store(self.live.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // Release: pairs with the Acquire in `len`.
        self.used.store(r + 1, Ordering::Release);
    }

    /// Replicas neither retired nor dormant. The caller holds `changing` (which orders the
    /// count's changes), else the value is only a hint.
    pub(super) fn live(&self) -> usize {
        // Relaxed: only holders of `changing` change `live`, which hands it on.
        self.live.load(Ordering::Relaxed)
    }

    /// Sets the count of `live`; the caller holds `changing`.
    pub(super) fn set_live(&self, n: usize) {
        debug_assert!(n >= 1, "at least one replica stays live");
        // Relaxed: as in `live`.
        self.live.store(n, Ordering::Relaxed);
    }

    /// Takes `changing`, waiting for the `add_replica`, `remove_replica`, sleep or wake-up
    /// under way.
    pub(super) fn lock_changes(&self) -> ChangesGuard<'_, D> {
        let mut waiter = Waiter::new();
        // Acquire: pairs with the Release in `ChangesGuard::drop` (the previous change's
        // writes to `live` and the places).
        while self
            .changing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            waiter.snooze();
        }
        ChangesGuard(self)
    }
}

impl<D: Dispatch> std::ops::Index<usize> for Places<D> {
    type Output = Replica<D>;

    /// The replica in place `r`. Internal callers pass indices of filled places (a handle's,
    /// or one below `len()`); a public method that takes an index checks it first or
    /// documents the panic, as slice indexing does.
    #[inline]
    fn index(&self, r: usize) -> &Replica<D> {
        self.get(r)
            .unwrap_or_else(|| panic!("no replica {r} (there are {})", self.len()))
    }
}

impl<D: Dispatch> Drop for Places<D> {
    fn drop(&mut self) {
        for place in self.places.iter() {
            let p = place.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: made by `Box::into_raw` and owned by this place alone; `&mut self`
                // rules out any other access.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// Holds `Places::changing`.
pub(super) struct ChangesGuard<'a, D: Dispatch>(&'a Places<D>);

impl<D: Dispatch> Drop for ChangesGuard<'_, D> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire in `lock_changes`.
        self.0.changing.store(false, Ordering::Release);
    }
}

impl<D> NodeReplicated<D>
where
    D: Dispatch + Send + Sync,
{
    /// Adds a replica: a copy of replica `from`'s state, taken at a log position, which then
    /// joins the log there (it replays every write after that position, and the log keeps
    /// those entries until it has). Returns the new replica's index, which threads may then
    /// [`register`](Self::register) with.
    ///
    /// The copy is made with `D::clone` (rather than by running the build closure again and
    /// replaying: the log does not keep every write since the start) on the calling thread, so
    /// its memory is placed as that thread's allocations are: call it from a thread of the node
    /// that the replica is for. While it runs, writes from `from`'s threads wait and reads go
    /// on. A panic in `clone` propagates and does not poison the object (`clone` only reads).
    ///
    /// # Errors
    ///
    /// [`ReplicaError::Full`] when every one of [`Builder::max_replicas`](crate::Builder::max_replicas)
    /// places has been used (retired replicas keep theirs), [`ReplicaError::NoSuchReplica`] and
    /// [`ReplicaError::Retired`] for `from`, [`ReplicaError::Poisoned`].
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{Dispatch, NodeReplicated};
    ///
    /// #[derive(Clone, Default)]
    /// struct Counter(u64);
    ///
    /// impl Dispatch for Counter {
    ///     type ReadOperation<'a> = ();
    ///     type WriteOperation = u64;
    ///     type Response = u64;
    ///     fn dispatch(&self, _: ()) -> u64 { self.0 }
    ///     fn dispatch_mut(&mut self, add: u64) -> u64 { self.0 += add; self.0 }
    /// }
    ///
    /// let nr = NodeReplicated::builder().replicas(1).max_replicas(2).build(|_| Counter::default())?;
    /// let mut h = nr.register(0)?;
    /// h.execute_mut(5)?;
    /// let r = nr.add_replica(0)?;
    /// assert_eq!((r, nr.replicas()), (1, 2));
    /// let mut h1 = nr.register(r)?;
    /// assert_eq!(h1.execute(())?, 5);
    /// h1.execute_mut(1)?;
    /// assert_eq!(h.execute(())?, 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_replica(&self, from: usize) -> Result<usize, ReplicaError>
    where
        D: Clone,
    {
        let changing = self.replicas.lock_changes();
        let r = self.replicas.len();
        if r == self.replicas.capacity() {
            return Err(ReplicaError::Full { capacity: r });
        }
        let source = self.replicas.get(from).ok_or(ReplicaError::NoSuchReplica {
            replica: from,
            replicas: r,
        })?;
        if source.is_retired() {
            return Err(ReplicaError::Retired { replica: from });
        }
        let threads = source.capacity();
        self.with_state_locked(from, |data, at| {
            // `clone` runs first: a panic in it leaves nothing half-joined.
            let replica = Box::new(Replica::new(data.clone(), threads));
            self.log.join(r, at);
            self.replicas.fill(r, replica);
        })
        .map_err(|_| ReplicaError::Poisoned)?;
        // With dormant replicas, a replica without a handle does not follow the log: the copy
        // above gave it its memory, and a registration refreshes it.
        if self.copy_state.is_some() {
            self.sleep(&changing, r);
        }
        Ok(r)
    }

    /// Retires replica `r`, whose threads have all dropped their handles: the log no longer
    /// waits for it (the head moves past it, and no writer replays it when the log is full),
    /// and it takes no registration again. Its index is not reused, and its memory is freed
    /// when the object is dropped.
    ///
    /// # Errors
    ///
    /// [`ReplicaError::InUse`] while a handle (or a dedicated combiner) is alive on it,
    /// [`ReplicaError::LastReplica`], [`ReplicaError::NoSuchReplica`],
    /// [`ReplicaError::Retired`], [`ReplicaError::Poisoned`].
    ///
    /// # Examples
    ///
    /// ```
    /// use nr_core::{Dispatch, NodeReplicated, ReplicaError};
    /// # #[derive(Default)] struct S(u64);
    /// # impl Dispatch for S {
    /// #     type ReadOperation<'a> = (); type WriteOperation = u64; type Response = u64;
    /// #     fn dispatch(&self, _: ()) -> u64 { self.0 }
    /// #     fn dispatch_mut(&mut self, v: u64) -> u64 { self.0 += v; self.0 }
    /// # }
    /// let nr = NodeReplicated::builder().replicas(2).build(|_| S::default())?;
    /// let h = nr.register(1)?;
    /// assert!(matches!(nr.remove_replica(1), Err(ReplicaError::InUse { replica: 1, handles: 1 })));
    /// drop(h);
    /// nr.remove_replica(1)?;
    /// assert!(nr.register(1).is_err(), "retired");
    /// assert!(matches!(nr.remove_replica(0), Err(ReplicaError::LastReplica)));
    /// let mut h = nr.register(0)?;
    /// for _ in 0..100_000 {
    ///     h.execute_mut(1)?; // the log never waits for replica 1 again
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_replica(&self, r: usize) -> Result<(), ReplicaError> {
        let _changing = self.replicas.lock_changes();
        let replica = self.replicas.get(r).ok_or(ReplicaError::NoSuchReplica {
            replica: r,
            replicas: self.replicas.len(),
        })?;
        if replica.is_retired() {
            return Err(ReplicaError::Retired { replica: r });
        }
        let live = self.replicas.live();
        let dormant = replica.is_dormant();
        if live == 1 && !dormant {
            return Err(ReplicaError::LastReplica);
        }
        self.check().map_err(|_| ReplicaError::Poisoned)?;
        replica.retire().map_err(|handles| ReplicaError::InUse {
            replica: r,
            handles,
        })?;
        if dormant {
            // Out of the log already (`dormancy.rs`), and not counted as live.
            return Ok(());
        }
        // Under its combiner lock, so that no helper is replaying it while its local tail
        // changes (a helper that takes the lock afterwards finds `NO_REPLICA` and replays
        // nothing). Helpers hold it briefly, and no thread of `r` is left to hold it long.
        let mut waiter = Waiter::new();
        while !replica.try_lock_combiner(true) {
            waiter.snooze();
        }
        let combiner = CombinerGuard::new(self, replica);
        self.log.retire(r);
        combiner.release();
        self.replicas.set_live(live - 1);
        Ok(())
    }
}
