//! The one place that names `crossbeam_epoch`'s collector, `std::thread` or `loom`.
//!
//! Normally a domain is a `crossbeam_epoch::Collector` of its own, pinned through a per-thread
//! cache of `LocalHandle`s ([`imp::RawDomain::pin`]). Under `--cfg loom` it is a stand-in with
//! the same grace-period rule whose every pin, unpin and defer is a step loom schedules
//! (crossbeam-epoch's own atomics are invisible to loom unless the whole dependency graph is
//! built with `--cfg crossbeam_loom`; see the crate README).

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(not(loom))]
mod imp {
    use crossbeam_epoch::{Collector, LocalHandle};
    use std::cell::RefCell;
    use std::sync::{Arc, Weak};

    /// A guard of a [`RawDomain`]: crossbeam's own.
    pub(crate) type RawGuard = crossbeam_epoch::Guard;

    /// A collector of one's own. The `Arc` is the domain's identity in the per-thread cache:
    /// a cached entry holds a `Weak` to it, which both keeps the address from being reused by
    /// another domain and tells that the domain is gone.
    pub(crate) struct RawDomain {
        collector: Arc<Collector>,
    }

    /// One thread's registration with one domain.
    struct Entry {
        /// The domain's identity, compared on every pin (the address `owner` keeps reserved).
        key: *const Collector,
        owner: Weak<Collector>,
        handle: LocalHandle,
    }

    std::thread_local! {
        /// This thread's handles, the most recently used domain first. Entries whose domain
        /// was dropped are pruned whenever a new entry is added, so a thread that creates and
        /// drops domains one after another holds at most one stale handle.
        static HANDLES: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    }

    impl RawDomain {
        pub(crate) fn new() -> Self {
            Self {
                collector: Arc::new(Collector::new()),
            }
        }

        /// Pins the calling thread: the cached handle of the most recently used domain (one
        /// thread-local access, a borrow flag and a pointer comparison more than
        /// `crossbeam_epoch::pin`), or the slow path.
        #[inline]
        pub(crate) fn pin(&self) -> RawGuard {
            let key = Arc::as_ptr(&self.collector);
            let hit = HANDLES.try_with(|cell| {
                // A shared borrow: a deferred function run by this pin may pin again.
                let handles = cell.try_borrow().ok()?;
                let first = handles.first()?;
                (first.key == key).then(|| first.handle.pin())
            });
            match hit {
                Ok(Some(guard)) => guard,
                _ => self.pin_slow(),
            }
        }

        /// Finds or registers this thread's handle, moves it to the front and pins it. Where
        /// the cache cannot be used (the thread is exiting, or a deferred function running
        /// inside a pin of this thread pins again), a handle registered for this one guard: the
        /// guard keeps its participant alive until it unpins.
        #[cold]
        #[inline(never)]
        fn pin_slow(&self) -> RawGuard {
            let key = Arc::as_ptr(&self.collector);
            let cached = HANDLES.try_with(|cell| {
                let mut handles = cell.try_borrow_mut().ok()?;
                match handles.iter().position(|e| e.key == key) {
                    Some(i) => handles.swap(0, i),
                    None => {
                        // Dropping a stale handle may run deferred functions of its (dropped)
                        // domain: they may pin, and then take the fallback below.
                        handles.retain(|e| e.owner.strong_count() > 0);
                        handles.push(Entry {
                            key,
                            owner: Arc::downgrade(&self.collector),
                            handle: self.collector.register(),
                        });
                        let last = handles.len() - 1;
                        handles.swap(0, last);
                    }
                }
                Some(handles[0].handle.pin())
            });
            match cached {
                Ok(Some(guard)) => guard,
                _ => self.collector.register().pin(),
            }
        }

        /// Whether `guard` was pinned on this domain.
        pub(crate) fn owns(&self, guard: &RawGuard) -> bool {
            guard.collector() == Some(&*self.collector)
        }
    }

    /// Runs `f` once every guard pinned now has been dropped.
    pub(crate) fn defer<F: FnOnce() + Send + 'static>(guard: &RawGuard, f: F) {
        guard.defer(f);
    }

    /// Hands this thread's deferred functions to the domain and tries to run due ones.
    pub(crate) fn flush(guard: &RawGuard) {
        guard.flush();
    }

    /// How many domains this thread holds a handle for (tests).
    #[cfg(test)]
    pub(crate) fn cached_handles() -> usize {
        HANDLES.with(|cell| cell.borrow().len())
    }
}

#[cfg(loom)]
mod imp {
    use core::marker::PhantomData;
    use loom::sync::{Arc, Mutex};

    type Deferred = Box<dyn FnOnce() + Send>;

    /// The stand-in's state: the guards alive, and each deferred function with the guards it
    /// waits for (those alive when it was deferred).
    #[derive(Default)]
    struct State {
        next: u64,
        alive: Vec<u64>,
        waiting: Vec<(Vec<u64>, Deferred)>,
    }

    fn lock(state: &Mutex<State>) -> loom::sync::MutexGuard<'_, State> {
        state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Under loom: the grace-period rule itself, as eagerly as it allows (a deferred function
    /// runs as soon as the last guard it waits for is dropped), so a model sees the earliest
    /// reuse that epoch-based reclamation could ever make. One loom mutex makes every pin, unpin
    /// and defer a scheduling point and totally ordered, as crossbeam's `SeqCst` pin fence
    /// orders them.
    pub(crate) struct RawDomain {
        state: Arc<Mutex<State>>,
    }

    /// A guard of the stand-in (not `Send`, as crossbeam's).
    pub(crate) struct RawGuard {
        state: Arc<Mutex<State>>,
        id: u64,
        _not_send: PhantomData<*const ()>,
    }

    impl RawDomain {
        pub(crate) fn new() -> Self {
            Self {
                state: Arc::new(Mutex::new(State::default())),
            }
        }

        pub(crate) fn pin(&self) -> RawGuard {
            let mut s = lock(&self.state);
            let id = s.next;
            s.next += 1;
            s.alive.push(id);
            RawGuard {
                state: Arc::clone(&self.state),
                id,
                _not_send: PhantomData,
            }
        }

        pub(crate) fn owns(&self, guard: &RawGuard) -> bool {
            Arc::ptr_eq(&self.state, &guard.state)
        }
    }

    /// Runs the deferred functions no alive guard holds back (outside the lock: they may pin).
    fn collect(state: &Mutex<State>) {
        let due: Vec<Deferred> = {
            let mut s = lock(state);
            let State { alive, waiting, .. } = &mut *s;
            let (due, still): (Vec<_>, Vec<_>) = waiting
                .drain(..)
                .partition(|(ids, _)| ids.iter().all(|id| !alive.contains(id)));
            *waiting = still;
            due.into_iter().map(|(_, f)| f).collect()
        };
        for f in due {
            f();
        }
    }

    impl Drop for RawGuard {
        fn drop(&mut self) {
            lock(&self.state).alive.retain(|&id| id != self.id);
            collect(&self.state);
        }
    }

    pub(crate) fn defer<F: FnOnce() + Send + 'static>(guard: &RawGuard, f: F) {
        let mut s = lock(&guard.state);
        let ids = s.alive.clone();
        s.waiting.push((ids, Box::new(f)));
    }

    pub(crate) fn flush(guard: &RawGuard) {
        collect(&guard.state);
    }
}

pub(crate) use imp::*;
