//! FC and FC+: flat combining (Hendler, Incze, Shavit and Tzafrir, SPAA'10), black-box.
//!
//! Each thread owns a cache-padded slot. To run an operation it publishes it in its slot and
//! waits; whichever waiting thread wins the combiner lock applies every published operation, in
//! slot order, and hands each response back through its slot. FC runs reads through combining
//! too; FC+ (the NR paper's "flat combining with a readers-writer lock", §8) combines only writes,
//! under the write side of a readers-writer lock, and runs reads in parallel under its read side.
//!
//! Two refinements make it the strong baseline the NR paper compared against:
//! - **Several passes per lock hold**, as in Hendler et al.'s combiner: after a pass that served
//!   at least one operation, the combiner scans the slots again (at most [`PASSES`] passes), so
//!   operations published while it worked are served without another lock hand-off.
//! - **A lone thread's fast path**, as NR has: a handle made for a run of one thread takes the
//!   combiner lock and applies its own operation directly, without publishing it or scanning
//!   any slot.

/// The most combining passes per lock hold; a pass that serves nothing ends the hold early.
pub(crate) const PASSES: usize = 3;

use crossbeam_utils::CachePadded;
use nr_core::{Dispatch, Poisoned};

use super::{claim, release, Handle, Method, Setup};
use crate::sync::{AtomicBool, Backoff, Ordering, UnsafeCell};
use crate::BenchError;

/// An operation published in a slot: a type-erased `FnMut(&mut D)` that lives on the stack of
/// the thread that published it, until a combiner has run it.
struct Task<D> {
    call: unsafe fn(*mut (), &mut D),
    ctx: *mut (),
}

/// Calls the closure of type `T` behind `ctx`.
///
/// # Safety
///
/// - `ctx` points to a live `T` that no one else accesses during the call.
unsafe fn trampoline<D, T: FnMut(&mut D)>(ctx: *mut (), d: &mut D) {
    // SAFETY:
    // - `ctx` points to a live, unaliased `T`: this function's contract.
    let task = unsafe { &mut *ctx.cast::<T>() };
    task(d);
}

fn erase<D, T: FnMut(&mut D)>(task: &mut T) -> Task<D> {
    Task {
        call: trampoline::<D, T>,
        ctx: (task as *mut T).cast(),
    }
}

/// One thread's publication slot.
struct Slot<D> {
    /// `true` from publication until a combiner has run the task (and written its response).
    pending: AtomicBool,
    /// Written by the owner only while `pending` is false; read by the combiner (holding the
    /// combiner lock) only while `pending` is true.
    task: UnsafeCell<Option<Task<D>>>,
}

/// The combining machinery shared by FC and FC+: the slots and the combiner lock.
struct Combining<D> {
    lock: CachePadded<AtomicBool>,
    slots: Box<[CachePadded<Slot<D>>]>,
    /// Which slots have a live handle.
    taken: Box<[AtomicBool]>,
}

impl<D> Combining<D> {
    fn new(threads: usize) -> Self {
        Self {
            lock: CachePadded::new(AtomicBool::new(false)),
            slots: (0..threads.max(1))
                .map(|_| {
                    CachePadded::new(Slot {
                        pending: AtomicBool::new(false),
                        task: UnsafeCell::new(None),
                    })
                })
                .collect(),
            taken: (0..threads.max(1))
                .map(|_| AtomicBool::new(false))
                .collect(),
        }
    }

    /// Publishes `f` in `slot` and returns its result once a combiner (perhaps this thread) has
    /// run it. A combiner gets the structure from `exclusive`, which this function calls only
    /// while holding the combiner lock.
    ///
    /// The caller must own `slot` (hold its handle). With `lone` (the handle was made for a
    /// run of one thread) the task runs directly under the combiner lock, unpublished.
    fn submit<R, F>(&self, slot: usize, lone: bool, f: F, exclusive: impl Fn(&dyn Fn(&mut D))) -> R
    where
        F: FnOnce(&mut D) -> R + Send,
        R: Send,
    {
        let s = &self.slots[slot];
        let mut f = Some(f);
        let mut out = None;
        let mut task = |d: &mut D| {
            if let Some(f) = f.take() {
                out = Some(f(d));
            }
        };
        let erased = erase(&mut task);
        if lone {
            self.lock_combiner();
            let unlock = Unlock(&self.lock);
            // SAFETY:
            // - `erased.ctx` points to `task`, alive on this stack until this function returns,
            //   of the type `erased.call` expects (both from `erase`);
            // - no one else accesses `task`: it was never published.
            exclusive(&|d| unsafe { (erased.call)(erased.ctx, d) });
            drop(unlock);
            return out.expect("invariant: the task ran under the combiner lock");
        }
        // SAFETY:
        // - exclusive access to the cell: this thread owns the slot (its handle), and `pending`
        //   is false (it was cleared by the combiner of our previous operation, or never set),
        //   so no combiner reads the cell now.
        s.task.with_mut(|p| unsafe { *p = Some(erased) });
        // Release: pairs with the Acquire in `combine_pass`, so a combiner that sees `pending`
        // also sees the task written above.
        s.pending.store(true, Ordering::Release);

        let mut backoff = Backoff::default();
        loop {
            // Acquire: pairs with the Release in `combine_pass`, so the response the task wrote
            // into `out` is visible once `pending` is false.
            if !s.pending.load(Ordering::Acquire) {
                break;
            }
            // Test before test-and-set: do not bounce the lock's line while a combiner works.
            if !self.lock.load(Ordering::Relaxed)
                && self
                    .lock
                    // Acquire: pairs with the Release in `Unlock::drop`, so the previous
                    // combiner's writes to the structure are visible to this one.
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                let unlock = Unlock(&self.lock);
                exclusive(&|d| {
                    // Our own slot is pending, so the first pass serves it; later passes serve
                    // operations published meanwhile.
                    for _ in 0..PASSES {
                        if self.combine_pass(d) == 0 {
                            break;
                        }
                    }
                });
                drop(unlock);
                // Our own slot was pending, so this pass ran our task: the next check breaks.
                continue;
            }
            backoff.snooze();
        }
        out.expect("invariant: a combiner ran the task before clearing `pending`")
    }

    /// Takes the combiner lock, waiting for it (the lone-thread path: no one else combines, so
    /// it is free unless a previous run's handle still holds it).
    fn lock_combiner(&self) {
        let mut backoff = Backoff::default();
        // Acquire: pairs with the Release in `Unlock::drop`, as in `submit`.
        while self
            .lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.snooze();
        }
    }

    /// Runs every published task on `d`; returns how many it ran. Called with the combiner lock
    /// held.
    fn combine_pass(&self, d: &mut D) -> usize {
        let mut served = 0;
        // A panic here would leave a slot pending forever and its owner waiting: abort instead.
        let abort = AbortOnUnwind;
        for s in self.slots.iter() {
            // Acquire: pairs with the Release in `submit`'s publication.
            if s.pending.load(Ordering::Acquire) {
                // SAFETY:
                // - exclusive access to the cell: `pending` is true, so its owner does not touch
                //   it, and we hold the combiner lock, so no other combiner does.
                let task = s.task.with_mut(|p| unsafe { (*p).take() });
                if let Some(t) = task {
                    // SAFETY:
                    // - `t.ctx` points to a live closure of the type `t.call` expects: `submit`
                    //   built both with `erase` and keeps the closure alive on its stack until
                    //   it sees `pending` false, which happens only below.
                    // - no one else accesses the closure: its owner only waits on `pending`.
                    unsafe { (t.call)(t.ctx, d) };
                    served += 1;
                }
                // Release: pairs with the Acquire in `submit`'s wait loop.
                s.pending.store(false, Ordering::Release);
            }
        }
        std::mem::forget(abort);
        served
    }
}

/// Releases the combiner lock when dropped.
struct Unlock<'a>(&'a AtomicBool);

impl Drop for Unlock<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire of the next combiner's compare_exchange.
        self.0.store(false, Ordering::Release);
    }
}

/// Aborts the process if dropped during a panic (forgotten on the normal path).
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!("a combined operation panicked; its owner cannot be told: aborting");
        std::process::abort();
    }
}

/// FC: black-box flat combining; every operation, read or write, is combined.
///
/// # Examples
///
/// ```
/// use benches::{FlatCombining, Handle, Method, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[], threads: 2, topology: &topology, replicas: Replicas::PerNode };
/// let fc = FlatCombining::build(&setup)?;
/// let mut h = fc.handle(0, 2)?;
/// assert!(fc.handle(0, 2).is_err(), "one handle per thread index");
/// h.write(MapWrite::Put(1, 2))?;
/// assert_eq!(fc.handle(1, 2)?.read(MapRead::Get(1))?, MapResponse::Get(Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FlatCombining<D> {
    core: Combining<D>,
    /// Accessed only by the combiner, with the combiner lock held.
    data: UnsafeCell<D>,
}

// SAFETY:
// - `data` is accessed only by the thread holding the combiner lock, one at a time: `D: Send`
//   suffices, as for a mutex.
// - a slot's task pointer is dereferenced on the combiner's thread; `submit` only publishes
//   closures that own `Send` captures (`F: Send`) and write a `Send` result (`R: Send`).
unsafe impl<D: Send> Sync for FlatCombining<D> {}

impl<D> std::fmt::Debug for FlatCombining<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatCombining")
            .field("slots", &self.core.slots.len())
            .finish_non_exhaustive()
    }
}

impl<D> FlatCombining<D> {
    fn run<R: Send>(&self, slot: usize, lone: bool, f: impl FnOnce(&mut D) -> R + Send) -> R {
        self.core.submit(slot, lone, f, |pass| {
            // SAFETY:
            // - exclusive access: `submit` calls this only with the combiner lock held, and
            //   `data` is accessed nowhere else.
            self.data.with_mut(|p| pass(unsafe { &mut *p }))
        })
    }
}

impl<D> Method<D> for FlatCombining<D>
where
    D: Dispatch + Send,
    for<'a> D::ReadOperation<'a>: Send,
{
    const NAME: &'static str = "FC";
    type Handle<'a>
        = FcHandle<'a, Self>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        Ok(Self {
            core: Combining::new(setup.threads),
            data: UnsafeCell::new(setup.fresh()),
        })
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<FcHandle<'_, Self>, BenchError> {
        claim(&self.core.taken, thread)?;
        Ok(FcHandle {
            owner: self,
            taken: &self.core.taken,
            slot: thread,
            lone: threads == 1,
        })
    }
}

impl<D> Handle<D> for FcHandle<'_, FlatCombining<D>>
where
    D: Dispatch + Send,
    for<'a> D::ReadOperation<'a>: Send,
{
    #[inline]
    fn read(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        Ok(self
            .owner
            .run(self.slot, self.lone, move |d| d.dispatch(op)))
    }

    #[inline]
    fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        Ok(self
            .owner
            .run(self.slot, self.lone, move |d| d.dispatch_mut(op)))
    }
}

/// FC+: flat combining for writes, under the write side of a readers-writer lock; reads take
/// the read side and run in parallel.
///
/// # Examples
///
/// ```
/// use benches::{FlatCombiningRw, Handle, Method, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let fcp = FlatCombiningRw::build(&setup)?;
/// let mut h = fcp.handle(0, 2)?;
/// h.write(MapWrite::Put(1, 2))?;
/// assert_eq!(h.read(MapRead::Get(1))?, MapResponse::Get(Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FlatCombiningRw<D> {
    core: Combining<D>,
    data: parking_lot::RwLock<D>,
}

// SAFETY:
// - `data` is a `parking_lot::RwLock`, shared as such (`D: Send + Sync`, as `RwLock<D>: Sync`
//   requires).
// - slot tasks: as for `FlatCombining`.
unsafe impl<D: Send + Sync> Sync for FlatCombiningRw<D> {}

impl<D> std::fmt::Debug for FlatCombiningRw<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatCombiningRw")
            .field("slots", &self.core.slots.len())
            .finish_non_exhaustive()
    }
}

impl<D> Method<D> for FlatCombiningRw<D>
where
    D: Dispatch + Send + Sync,
{
    const NAME: &'static str = "FC+";
    type Handle<'a>
        = FcHandle<'a, Self>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        Ok(Self {
            core: Combining::new(setup.threads),
            data: parking_lot::RwLock::new(setup.fresh()),
        })
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<FcHandle<'_, Self>, BenchError> {
        claim(&self.core.taken, thread)?;
        Ok(FcHandle {
            owner: self,
            taken: &self.core.taken,
            slot: thread,
            lone: threads == 1,
        })
    }
}

impl<D> Handle<D> for FcHandle<'_, FlatCombiningRw<D>>
where
    D: Dispatch + Send + Sync,
{
    #[inline]
    fn read(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        Ok(self.owner.data.read().dispatch(op))
    }

    #[inline]
    fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        let data = &self.owner.data;
        Ok(self.owner.core.submit(
            self.slot,
            self.lone,
            move |d| d.dispatch_mut(op),
            |pass| pass(&mut data.write()),
        ))
    }
}

/// A thread's slot in [`FlatCombining`] or [`FlatCombiningRw`]; frees the slot when dropped.
pub struct FcHandle<'a, T> {
    owner: &'a T,
    taken: &'a [AtomicBool],
    slot: usize,
    /// Made for a run of one thread: operations take the lone-thread fast path.
    lone: bool,
}

impl<T> std::fmt::Debug for FcHandle<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FcHandle")
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

impl<T> Drop for FcHandle<'_, T> {
    fn drop(&mut self) {
        release(self.taken, self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Replicas;
    use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};

    /// The lone-thread fast path (a handle made for a run of one thread) applies operations in
    /// order and returns their responses, for FC (reads and writes) and FC+ (writes).
    #[test]
    fn lone_thread_path_applies_ops_in_order() {
        let topology = nr_core::Topology::single_node(vec![0]).expect("one CPU");
        let make = HashMapKv::new;
        let setup = Setup {
            make: &make,
            prefill: &[],
            threads: 2,
            topology: &topology,
            replicas: Replicas::PerNode,
        };
        let fc = FlatCombining::build(&setup).expect("build");
        let mut h = fc.handle(0, 1).expect("handle");
        assert!(h.lone);
        for i in 0..100 {
            h.write(MapWrite::Put(i % 7, i)).expect("write");
            assert_eq!(
                h.read(MapRead::Get(i % 7)).expect("read"),
                MapResponse::Get(Some(i))
            );
        }
        drop(h);
        // A later two-thread run combines through the slots and sees the lone run's writes.
        let mut h = fc.handle(1, 2).expect("handle");
        assert!(!h.lone);
        assert_eq!(
            h.read(MapRead::Get(99 % 7)).expect("read"),
            MapResponse::Get(Some(99))
        );

        let fcp = FlatCombiningRw::build(&setup).expect("build");
        let mut h = fcp.handle(0, 1).expect("handle");
        h.write(MapWrite::Put(3, 4)).expect("write");
        assert_eq!(
            h.read(MapRead::Get(3)).expect("read"),
            MapResponse::Get(Some(4))
        );
    }

    /// A pass reports how many tasks it ran (the multi-pass loop stops on 0).
    #[test]
    fn empty_pass_serves_nothing() {
        let c = Combining::<u64>::new(4);
        let mut d = 0;
        assert_eq!(c.combine_pass(&mut d), 0);
    }
}
