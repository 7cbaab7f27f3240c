//! Poisoning returns nr-core's `Poisoned` error from the `try_*` calls (issue 11, API
//! consistency); the plain calls panic as documented.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::panic::{catch_unwind, AssertUnwindSafe};

use pcomb::{Dispatch, PBComb, Pod, Poisoned, Recovered};

/// A counter whose `dispatch_mut` panics on the operation `u64::MAX`.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct Fragile(u64);

// SAFETY: one `u64`, every bit pattern valid, no padding.
unsafe impl Pod for Fragile {}

impl Dispatch for Fragile {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;

    fn dispatch(&self, _op: ()) -> u64 {
        self.0
    }

    fn dispatch_mut(&mut self, op: u64) -> u64 {
        assert_ne!(op, u64::MAX, "a user operation that panics");
        let old = self.0;
        self.0 += op;
        old
    }
}

#[test]
fn a_panicking_operation_poisons_and_try_calls_return_poisoned() {
    let obj = PBComb::new(Fragile::default(), 2).expect("valid");
    let mut h = obj.register().expect("slot");
    assert_eq!(h.try_execute_mut(5), Ok(0));
    let boom = catch_unwind(AssertUnwindSafe(|| h.execute_mut(u64::MAX)));
    assert!(boom.is_err(), "the combiner runs the panicking operation");
    assert_eq!(h.try_execute_mut(1), Err(Poisoned));
    assert_eq!(h.try_execute(()), Err(Poisoned));
    assert_eq!(h.try_recover(1, h.seq() + 1), Err(Poisoned));
    let mut other = obj.register().expect("another slot");
    assert_eq!(other.try_execute_mut(1), Err(Poisoned));
    // The plain calls panic, as documented.
    assert!(catch_unwind(AssertUnwindSafe(|| other.execute(()))).is_err());
}

#[test]
fn try_calls_work_on_a_healthy_object() {
    let obj = PBComb::new(Fragile::default(), 1).expect("valid");
    let mut h = obj.register().expect("slot");
    assert_eq!(h.try_execute_mut(2), Ok(0));
    assert_eq!(h.try_execute(()), Ok(2));
    assert_eq!(h.try_recover(3, h.seq()), Ok(Recovered::Applied(0)));
}
