//! `NodeReplicated` poisons like `std::sync::Mutex`, and like it is unwind-safe.

use std::panic::catch_unwind;

use nr_core::{Dispatch, NodeReplicated};

/// A counter.
#[derive(Default)]
struct Counter(u64);

impl Dispatch for Counter {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, v: u64) -> u64 {
        self.0 += v;
        self.0
    }
}

/// `NodeReplicated` is `RefUnwindSafe` (and `UnwindSafe`), as `std::sync::Mutex` is: poisoning
/// makes a panic inside visible, so no `AssertUnwindSafe` is needed around code that uses it.
#[test]
fn object_is_unwind_safe() {
    fn unwind_safe<T: std::panic::RefUnwindSafe + std::panic::UnwindSafe>(_: &T) {}
    let nr = NodeReplicated::builder()
        .replicas(1)
        .build(|_| Counter::default())
        .unwrap();
    unwind_safe(&nr);
    let nr_ref = &nr;
    // Compiles only if `&NodeReplicated` is `UnwindSafe`, i.e. the object is `RefUnwindSafe`.
    let r = catch_unwind(|| nr_ref.replicas());
    assert_eq!(r.ok(), Some(1));
}
