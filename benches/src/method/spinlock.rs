//! SL: one big test-and-test-and-set spinlock with backoff.

use crossbeam_utils::CachePadded;
use nr_core::{Dispatch, Poisoned};

use super::{Handle, Method, Setup};
use crate::sync::{AtomicBool, Backoff, Ordering, UnsafeCell};
use crate::BenchError;

/// The structure behind one test-and-test-and-set spinlock: every operation, read or write,
/// takes the lock. Waiters spin on a plain load (no cache-line ping-pong while the lock is held),
/// with exponential backoff, then yield.
///
/// # Examples
///
/// ```
/// use benches::{Handle, Method, Replicas, Setup, SpinLock};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[MapWrite::Put(5, 6)], threads: 1, topology: &topology, replicas: benches::Replicas::PerNode };
/// let sl = SpinLock::build(&setup)?;
/// assert_eq!(sl.handle(0, 2)?.read(MapRead::Get(5))?, MapResponse::Get(Some(6)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SpinLock<D> {
    locked: CachePadded<AtomicBool>,
    data: UnsafeCell<D>,
}

// SAFETY:
// - `data` is only accessed by the thread holding `locked` (see `with_locked`), so sharing the
//   lock shares `D` between threads one at a time: `D: Send` suffices, as for `std::sync::Mutex`.
unsafe impl<D: Send> Sync for SpinLock<D> {}

impl<D> SpinLock<D> {
    /// Runs `f` on the data with the lock held.
    #[inline]
    fn with_locked<R>(&self, f: impl FnOnce(&mut D) -> R) -> R {
        self.lock();
        let unlock = Unlock(&self.locked);
        // SAFETY:
        // - exclusive access: `lock` returned, so this thread holds `locked` until `unlock` drops
        //   after `f` returns, and every access to `data` happens with `locked` held.
        let r = self.data.with_mut(|p| f(unsafe { &mut *p }));
        drop(unlock);
        r
    }

    #[inline]
    fn lock(&self) {
        // Acquire: pairs with the Release in `Unlock::drop`, so the previous holder's writes to
        // `data` are visible to us.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut backoff = Backoff::default();
        loop {
            // Relaxed: only a hint that the lock may be free; the CAS below synchronizes.
            while self.locked.load(Ordering::Relaxed) {
                backoff.snooze();
            }
            // Acquire: as in `lock`.
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// Releases the lock when dropped, also when the operation panics.
struct Unlock<'a>(&'a AtomicBool);

impl Drop for Unlock<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire in `SpinLock::lock`.
        self.0.store(false, Ordering::Release);
    }
}

impl<D> Method<D> for SpinLock<D>
where
    D: Dispatch + Send,
{
    const NAME: &'static str = "SL";
    type Handle<'a>
        = &'a SpinLock<D>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        Ok(Self {
            locked: CachePadded::new(AtomicBool::new(false)),
            data: UnsafeCell::new(setup.fresh()),
        })
    }

    fn handle(&self, _thread: usize, _threads: usize) -> Result<&SpinLock<D>, BenchError> {
        Ok(self)
    }
}

impl<D: Dispatch> Handle<D> for &SpinLock<D> {
    #[inline]
    fn read(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        Ok(self.with_locked(|d| d.dispatch(op)))
    }

    #[inline]
    fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        Ok(self.with_locked(|d| d.dispatch_mut(op)))
    }
}
