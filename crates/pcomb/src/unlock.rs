//! Releasing a combiner lock (PBcomb, Algorithm 2 line 28), written once for the three
//! blocking protocols of the crate (`engine/pb.rs`, `pbcomb1.rs`, `volatile.rs`).

use crate::sync::{panicking, AtomicBool, AtomicU64, Ordering};

/// Releases the combiner lock `lock`, held at the odd value `lval`, to `lval + 1`; when the
/// holder is unwinding from a panic in its pass (a `Drop` guard calls this), first marks the
/// object poisoned (`poisoned := true`).
#[inline]
pub(crate) fn release(lock: &AtomicU64, poisoned: &AtomicBool, lval: u64) {
    if panicking() {
        // Release: pairs with the Acquire load in each protocol's `check_poison`.
        poisoned.store(true, Ordering::Release);
    }
    // Release: pairs with the Acquire loads of the lock by the waiters and with the next
    // holder's Acquire CAS: they see everything this holder wrote under the lock (the record
    // and its index, or the state and the `served` words).
    lock.store(lval + 1, Ordering::Release);
}
