//! The one place that names `std::sync`, `std::thread` or `loom`.
//!
//! Everything the algorithms synchronize through comes from here: the standard library normally,
//! `loom`'s model-checked replacements under `--cfg loom`. `clippy.toml` forbids the standard
//! versions everywhere else in the crate, so no atomic escapes the model checker.
//!
//! Under loom the shim also mocks the environment: parking becomes a yield (loom cannot model
//! timeouts) and building a replica "on its node" runs the closure in place.

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{fence, Ordering};

    /// Wraps a std atomic in a distinct type so that `clippy.toml` can forbid the std type
    /// everywhere else; every method is a forwarding `#[inline(always)]` call.
    macro_rules! atomic_wrapper {
        ($name:ident, $std:ident, $int:ty) => {
            #[derive(Debug, Default)]
            #[repr(transparent)]
            pub(crate) struct $name(std::sync::atomic::$std);

            #[allow(dead_code)] // not every wrapper uses every operation
            impl $name {
                #[inline(always)]
                pub(crate) const fn new(v: $int) -> Self {
                    Self(std::sync::atomic::$std::new(v))
                }
                #[inline(always)]
                pub(crate) fn load(&self, o: Ordering) -> $int {
                    self.0.load(o)
                }
                #[inline(always)]
                pub(crate) fn store(&self, v: $int, o: Ordering) {
                    self.0.store(v, o)
                }
                #[inline(always)]
                pub(crate) fn compare_exchange(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.0.compare_exchange(current, new, success, failure)
                }
                #[inline(always)]
                pub(crate) fn compare_exchange_weak(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.0.compare_exchange_weak(current, new, success, failure)
                }
            }
        };
    }

    atomic_wrapper!(AtomicBool, AtomicBool, bool);
    atomic_wrapper!(AtomicU8, AtomicU8, u8);
    atomic_wrapper!(AtomicUsize, AtomicUsize, usize);

    impl AtomicU8 {
        #[inline(always)]
        pub(crate) fn swap(&self, v: u8, o: Ordering) -> u8 {
            self.0.swap(v, o)
        }
        #[inline(always)]
        pub(crate) fn fetch_or(&self, v: u8, o: Ordering) -> u8 {
            self.0.fetch_or(v, o)
        }
        #[inline(always)]
        pub(crate) fn fetch_and(&self, v: u8, o: Ordering) -> u8 {
            self.0.fetch_and(v, o)
        }
    }

    /// `std::sync::atomic::AtomicPtr` behind a distinct type, as the integer wrappers above.
    #[derive(Debug)]
    #[repr(transparent)]
    pub(crate) struct AtomicPtr<T>(std::sync::atomic::AtomicPtr<T>);

    impl<T> AtomicPtr<T> {
        #[inline(always)]
        pub(crate) fn new(p: *mut T) -> Self {
            Self(std::sync::atomic::AtomicPtr::new(p))
        }
        #[inline(always)]
        pub(crate) fn load(&self, o: Ordering) -> *mut T {
            self.0.load(o)
        }
        #[inline(always)]
        pub(crate) fn store(&self, p: *mut T, o: Ordering) {
            self.0.store(p, o)
        }
    }

    /// What a `SeqCst` read-modify-write followed by `SeqCst` loads needs to act as the
    /// store-fence-load half of a Dekker pair: nothing. Under the C++20 model (\[atomics.order\]
    /// p4) the RMW and the loads are in the single total order S, which is enough (the argument
    /// is in `lock.rs`). Under loom this is a real `SeqCst` fence, because loom models `SeqCst`
    /// accesses as `AcqRel`.
    #[inline(always)]
    pub(crate) fn fence_after_seqcst_rmw() {}

    impl AtomicUsize {
        #[inline(always)]
        pub(crate) fn fetch_add(&self, v: usize, o: Ordering) -> usize {
            self.0.fetch_add(v, o)
        }
        #[inline(always)]
        pub(crate) fn fetch_sub(&self, v: usize, o: Ordering) -> usize {
            self.0.fetch_sub(v, o)
        }
        #[inline(always)]
        pub(crate) fn fetch_max(&self, v: usize, o: Ordering) -> usize {
            self.0.fetch_max(v, o)
        }
    }

    /// Yields the CPU to another thread.
    #[inline]
    pub(crate) fn yield_now() {
        std::thread::yield_now();
    }

    /// Spin-loop hint for the CPU (`PAUSE` on x86, `YIELD`/`ISB` on Arm).
    #[inline]
    pub(crate) fn spin_loop() {
        std::hint::spin_loop();
    }

    /// Sleeps the calling thread for `micros` microseconds: the blind, bounded park of a
    /// [`Waiter`](crate::wait::Waiter) that nobody wakes. It deliberately does not use the
    /// thread's std park token (`std::thread::park_timeout`): that token belongs to the user,
    /// and consuming it would swallow an `unpark` meant for the user's own `thread::park()`.
    pub(crate) fn park_timeout(micros: u64) {
        std::thread::sleep(std::time::Duration::from_micros(micros));
    }

    /// A wake-up token a thread can sleep on with a timeout; `unpark` before `park_timeout`
    /// makes the next park return at once (no lost wake-up). Lives as long as its owner
    /// (a combining slot), unlike a `Thread` handle, so it never needs to be swapped.
    #[derive(Debug, Default)]
    pub(crate) struct Parker {
        notified: std::sync::Mutex<bool>,
        wake: std::sync::Condvar,
    }

    impl Parker {
        /// A parker with no pending wake-up.
        pub(crate) fn new() -> Self {
            Self::default()
        }

        /// Sleeps until `unpark` or until `micros` microseconds pass; consumes the token.
        pub(crate) fn park_timeout(&self, micros: u64) {
            // A poisoned mutex only means another thread panicked while holding it; the bool
            // inside is still meaningful.
            let mut notified = self.notified.lock().unwrap_or_else(|e| e.into_inner());
            if !*notified {
                notified = match self
                    .wake
                    .wait_timeout(notified, std::time::Duration::from_micros(micros))
                {
                    Ok((guard, _)) => guard,
                    Err(e) => e.into_inner().0,
                };
            }
            *notified = false;
        }

        /// Wakes the sleeper, or makes its next `park_timeout` return at once.
        pub(crate) fn unpark(&self) {
            let mut notified = self.notified.lock().unwrap_or_else(|e| e.into_inner());
            *notified = true;
            self.wake.notify_one();
        }
    }

    /// An `UnsafeCell` with loom's closure-based access API, so the same algorithm code runs
    /// under both builds.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Runs `f` with a shared raw pointer to the contents.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Runs `f` with an exclusive raw pointer to the contents.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// Runs `f` on a helper thread pinned to `cpus`, so that memory `f` allocates and touches
    /// first is placed on the NUMA node those CPUs belong to (Linux's first-touch policy).
    pub(crate) fn run_pinned<R: Send>(
        cpus: &[usize],
        f: impl FnOnce() -> R + Send,
    ) -> Result<R, crate::TopologyError> {
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                crate::pin_current_thread(cpus)?;
                Ok(f())
            });
            match worker.join() {
                Ok(result) => result,
                // Re-raise a panic of the user's constructor on the caller's thread.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        })
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering,
    };
    pub(crate) use loom::thread::yield_now;

    /// Loom models `SeqCst` accesses as `AcqRel`, so the Dekker pairs that rely on a `SeqCst`
    /// read-modify-write (see the std version) get the fence loom understands.
    pub(crate) fn fence_after_seqcst_rmw() {
        fence(Ordering::SeqCst);
    }

    /// Under loom parking is a yield (timeouts cannot be modelled), so `unpark` has nothing to do.
    #[derive(Debug, Default)]
    pub(crate) struct Parker;

    impl Parker {
        /// A parker with no pending wake-up (a unit struct under loom).
        pub(crate) fn new() -> Self {
            Parker
        }

        pub(crate) fn park_timeout(&self, _micros: u64) {
            loom::thread::yield_now();
        }

        pub(crate) fn unpark(&self) {}
    }

    /// Under loom a spin is a yield, so the model checker can schedule the thread we wait for.
    pub(crate) fn spin_loop() {
        loom::thread::yield_now();
    }

    /// Loom cannot model timeouts: a bounded park is a yield.
    pub(crate) fn park_timeout(_micros: u64) {
        loom::thread::yield_now();
    }

    /// Loom builds run in one model; replicas are built in place.
    pub(crate) fn run_pinned<R: Send>(
        _cpus: &[usize],
        f: impl FnOnce() -> R + Send,
    ) -> Result<R, crate::TopologyError> {
        Ok(f())
    }
}

pub(crate) use imp::*;

/// Whether the current thread is unwinding (the signal that poisons the object).
pub(crate) fn panicking() -> bool {
    std::thread::panicking()
}

/// Debug builds: the objects (by address) whose operation the current thread is inside, to
/// detect a re-entrant call from user code (`dispatch`, `dispatch_mut`, `Clone` or `Drop` of an
/// operation) back into the same object, which would otherwise wait for itself forever.
/// Compiled out of release builds and loom models (loom runs its threads on one OS thread).
#[cfg(all(debug_assertions, not(loom)))]
mod reentrancy {
    use std::cell::RefCell;

    std::thread_local! {
        static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    /// Marks the current thread as inside an operation of `object` until dropped.
    #[derive(Debug)]
    pub(crate) struct Entered(usize);

    impl Entered {
        /// # Panics
        ///
        /// If the current thread is already inside an operation of `object`.
        #[inline]
        pub(crate) fn new(object: usize) -> Self {
            INSIDE.with(|inside| {
                let mut inside = inside.borrow_mut();
                assert!(
                    !inside.contains(&object),
                    "nr_core: re-entrant call: user code running inside an operation of this \
                     NodeReplicated object (dispatch, dispatch_mut, or Clone/Drop of an \
                     operation) called back into the same object, which would deadlock"
                );
                inside.push(object);
            });
            Self(object)
        }
    }

    impl Drop for Entered {
        fn drop(&mut self) {
            // `try_with`: a handle used from another thread-local's destructor at thread exit
            // may find this one already gone; there is nothing left to check then.
            let _ = INSIDE.try_with(|inside| {
                let mut inside = inside.borrow_mut();
                if let Some(pos) = inside.iter().rposition(|&o| o == self.0) {
                    inside.remove(pos);
                }
            });
        }
    }
}

/// Release builds and loom: no re-entrancy bookkeeping.
#[cfg(not(all(debug_assertions, not(loom))))]
mod reentrancy {
    /// A no-op marker.
    #[derive(Debug)]
    pub(crate) struct Entered;

    impl Entered {
        #[inline(always)]
        pub(crate) fn new(_object: usize) -> Self {
            Self
        }
    }
}

pub(crate) use reentrancy::Entered;
