//! Debug builds detect user code calling back into the object it runs inside (which would wait
//! for itself forever) and panic with a clear message, as `RefCell` does for a double borrow.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
#![cfg(debug_assertions)]

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use common::with_deadlock_watchdog;
use nr_core::{Dispatch, NodeReplicated};

/// A structure whose operations call back into the object `OBJECT` (when set).
#[derive(Default)]
struct Recursive(u64);

static OBJECT: OnceLock<NodeReplicated<Recursive>> = OnceLock::new();

impl Dispatch for Recursive {
    /// `true`: read the object again from inside this read.
    type ReadOperation<'a> = bool;
    /// `true`: write to the object again from inside this write.
    type WriteOperation = bool;
    type Response = u64;

    fn dispatch(&self, again: bool) -> u64 {
        if again {
            let nr = OBJECT.get().expect("object set");
            let mut h = nr.register(0).expect("slot");
            return h.execute(false).unwrap_or(0);
        }
        self.0
    }

    fn dispatch_mut(&mut self, again: bool) -> u64 {
        if again {
            let nr = OBJECT.get().expect("object set");
            let mut h = nr.register(0).expect("slot");
            return h.execute_mut(false).unwrap_or(0);
        }
        self.0 += 1;
        self.0
    }
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn calling_back_into_the_same_object_panics_instead_of_hanging() {
    std::panic::set_hook(Box::new(|_| {}));
    let messages = with_deadlock_watchdog(60, || {
        let nr = OBJECT.get_or_init(|| {
            NodeReplicated::builder()
                .replicas(2)
                .threads_per_replica(8)
                .build(|_| Recursive::default())
                .expect("valid configuration")
        });
        let mut h = nr.register(0).expect("slot");
        let read = catch_unwind(AssertUnwindSafe(|| h.execute(true)))
            .expect_err("a nested read must panic");
        let write = catch_unwind(AssertUnwindSafe(|| h.execute_mut(true)))
            .expect_err("a nested write must panic");
        (message(&*read), message(&*write))
    });
    for m in [messages.0, messages.1] {
        assert!(
            m.contains("re-entrant call"),
            "unclear panic message: {m:?}"
        );
    }
}

/// Nesting *different* objects is fine: an operation of one object may use another.
#[test]
fn using_another_object_from_inside_an_operation_is_allowed() {
    #[derive(Default)]
    struct Outer;
    static INNER: OnceLock<NodeReplicated<Recursive>> = OnceLock::new();
    impl Dispatch for Outer {
        type ReadOperation<'a> = ();
        type WriteOperation = ();
        type Response = u64;
        fn dispatch(&self, _: ()) -> u64 {
            let mut h = INNER.get().expect("set").register(0).expect("slot");
            h.execute(false).expect("not poisoned")
        }
        fn dispatch_mut(&mut self, _: ()) -> u64 {
            let mut h = INNER.get().expect("set").register(0).expect("slot");
            h.execute_mut(false).expect("not poisoned")
        }
    }
    INNER.get_or_init(|| {
        NodeReplicated::builder()
            .replicas(1)
            .build(|_| Recursive::default())
            .expect("valid configuration")
    });
    let outer = NodeReplicated::builder()
        .replicas(1)
        .build(|_| Outer)
        .expect("valid configuration");
    let mut h = outer.register(0).expect("slot");
    assert_eq!(h.execute_mut(()), Ok(1));
    assert_eq!(h.execute(()), Ok(1));
}
