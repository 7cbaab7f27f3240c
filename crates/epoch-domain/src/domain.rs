//! [`Domain`] and its [`Guard`]: the public face of the shim's raw domain.

use crate::sync::{self, RawDomain, RawGuard};
use core::fmt;

/// An epoch-based reclamation domain of its own: the guards of one domain never hold back the
/// deferred functions of another (nor those of `crossbeam_epoch`'s global collector, nor they
/// these).
///
/// Give each object that reclaims memory its own domain (a heap, a store), pin it around every
/// access to memory that may be retired ([`pin`](Self::pin)), and retire with
/// [`Guard::defer`]. Pinning costs about what `crossbeam_epoch::pin` costs: each thread keeps
/// a small cache of its handles, the most recently used domain first.
///
/// Dropping a domain does not run or leak its pending deferred functions: they run when the
/// last thread that used the domain lets go of its handle (at its next pin of a new domain, or
/// when it exits), so a deferred function must own what it needs (an `Arc`), never borrow the
/// object that owns the domain.
///
/// # Examples
///
/// ```
/// use epoch_domain::Domain;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// let (a, b) = (Domain::new(), Domain::new());
/// let freed = Arc::new(AtomicBool::new(false));
/// let reader_of_a = a.pin(); // holds back `a`'s deferred functions only
/// let flag = Arc::clone(&freed);
/// b.pin().defer(move || flag.store(true, Ordering::Relaxed));
/// for _ in 0..1_000 {
///     if freed.load(Ordering::Relaxed) {
///         break;
///     }
///     b.pin().flush();
/// }
/// assert!(freed.load(Ordering::Relaxed), "a guard of `a` held back `b`");
/// drop(reader_of_a);
/// ```
pub struct Domain {
    raw: RawDomain,
}

impl Domain {
    /// A new domain with no guard and nothing deferred.
    ///
    /// # Examples
    ///
    /// ```
    /// let domain = epoch_domain::Domain::new();
    /// assert!(domain.pin().belongs_to(&domain));
    /// ```
    pub fn new() -> Self {
        Self {
            raw: RawDomain::new(),
        }
    }

    /// Pins the calling thread in this domain until the guard is dropped: no function deferred
    /// in this domain after this call runs before then. Pins nest (a thread may hold several
    /// guards of one domain).
    ///
    /// # Examples
    ///
    /// ```
    /// let domain = epoch_domain::Domain::new();
    /// let outer = domain.pin();
    /// let inner = domain.pin();
    /// drop(outer);
    /// inner.defer(|| ());
    /// ```
    #[inline]
    pub fn pin(&self) -> Guard {
        Guard {
            raw: self.raw.pin(),
        }
    }
}

impl Default for Domain {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain").finish_non_exhaustive()
    }
}

/// A pin of one [`Domain`] by the current thread (see [`Domain::pin`]).
///
/// A guard stays on the thread that pinned (it is neither `Send` nor `Sync`):
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// send(epoch_domain::Domain::new().pin());
/// ```
///
/// # Examples
///
/// ```
/// let domain = epoch_domain::Domain::new();
/// let guard = domain.pin();
/// guard.defer(|| println!("no guard of this domain pinned before me is alive"));
/// guard.flush();
/// ```
pub struct Guard {
    raw: RawGuard,
}

impl Guard {
    /// Runs `f` once every guard of this domain that is alive now (this one included) has been
    /// dropped: the way to free memory that a pinned thread may still read.
    ///
    /// # Examples
    ///
    /// ```
    /// let domain = epoch_domain::Domain::new();
    /// domain.pin().defer(|| ());
    /// ```
    #[inline]
    pub fn defer<F: FnOnce() + Send + 'static>(&self, f: F) {
        sync::defer(&self.raw, f);
    }

    /// Hands this thread's deferred functions to the domain and runs those that are due (they
    /// otherwise wait until enough have gathered).
    ///
    /// # Examples
    ///
    /// ```
    /// epoch_domain::Domain::new().pin().flush();
    /// ```
    pub fn flush(&self) {
        sync::flush(&self.raw);
    }

    /// Whether this guard pins `domain` (and so protects what `domain` reclaims): an object
    /// that defers through a guard it was handed checks this first.
    ///
    /// # Examples
    ///
    /// ```
    /// use epoch_domain::Domain;
    /// let (a, b) = (Domain::new(), Domain::new());
    /// assert!(a.pin().belongs_to(&a));
    /// assert!(!a.pin().belongs_to(&b));
    /// ```
    #[inline]
    pub fn belongs_to(&self, domain: &Domain) -> bool {
        domain.raw.owns(&self.raw)
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard").finish_non_exhaustive()
    }
}

// The tests' own counters and holder thread, outside the shim (these tests never run under loom).
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Pins `domain` and flushes until `done` holds, at most 10,000 times.
    fn flush_until(domain: &Domain, done: impl Fn() -> bool) -> bool {
        for _ in 0..10_000 {
            if done() {
                return true;
            }
            domain.pin().flush();
        }
        done()
    }

    /// A guard of another domain, and one of crossbeam's global collector, held on another
    /// thread, do not hold back this domain's deferred functions.
    #[test]
    fn foreign_guards_do_not_hold_back_reclamation() {
        let other = Domain::new();
        let ours = Domain::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let _a = other.pin();
                let _b = crossbeam_epoch::pin();
                held.wait();
                release.wait();
            });
            held.wait();
            for _ in 0..100 {
                let r = Arc::clone(&ran);
                ours.pin().defer(move || {
                    r.fetch_add(1, Ordering::Relaxed);
                });
            }
            let all = flush_until(&ours, || ran.load(Ordering::Relaxed) == 100);
            release.wait();
            assert!(all, "only {} of 100 ran", ran.load(Ordering::Relaxed));
        });
    }

    /// A guard of the domain itself does hold them back (the rule the foreign-guard test
    /// relies on not being vacuous).
    #[test]
    fn own_guard_holds_back_reclamation() {
        let domain = Domain::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let reader = domain.pin();
        let r = Arc::clone(&ran);
        domain.pin().defer(move || {
            r.fetch_add(1, Ordering::Relaxed);
        });
        for _ in 0..1_000 {
            domain.pin().flush();
        }
        assert_eq!(
            ran.load(Ordering::Relaxed),
            0,
            "ran while a reader was pinned"
        );
        drop(reader);
        assert!(flush_until(&domain, || ran.load(Ordering::Relaxed) == 1));
    }

    /// Creating, using and dropping domains one after another keeps this thread's cache at
    /// one live and at most one stale handle, and the deferred functions of a dropped domain
    /// still run (they own what they free).
    #[test]
    fn dropped_domains_release_their_handles_and_run_their_garbage() {
        let ran = Arc::new(AtomicUsize::new(0));
        let keep = Domain::new();
        let _ = keep.pin();
        for _ in 0..1_000 {
            let d = Domain::new();
            let r = Arc::clone(&ran);
            d.pin().defer(move || {
                r.fetch_add(1, Ordering::Relaxed);
            });
            let _ = keep.pin();
            assert!(sync::cached_handles() <= 3, "{}", sync::cached_handles());
        }
        let _ = Domain::new().pin(); // prunes the last stale handle
        assert_eq!(sync::cached_handles(), 2);
        assert_eq!(
            ran.load(Ordering::Relaxed),
            1_000,
            "deferred functions lost"
        );
    }

    /// A guard is recognized by its own domain only.
    #[test]
    fn guards_know_their_domain() {
        let (a, b) = (Domain::new(), Domain::new());
        let (ga, gb) = (a.pin(), b.pin());
        assert!(ga.belongs_to(&a) && gb.belongs_to(&b));
        assert!(!ga.belongs_to(&b) && !gb.belongs_to(&a));
    }
}
