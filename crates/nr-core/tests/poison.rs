//! A panic in user code poisons the object (like `std::sync::Mutex`), and never deadlocks.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;

use common::with_deadlock_watchdog;
use nr_core::{Dispatch, NodeReplicated, Poisoned, RegisterError};

/// Panics on request: in `dispatch_mut`, in `dispatch`, or in the write operation's `clone`.
#[derive(Default)]
struct Fragile(u64);

static PANIC_IN_CLONE: AtomicBool = AtomicBool::new(false);

#[derive(Debug)]
enum Op {
    Add(u64),
    Explode,
}

impl Clone for Op {
    fn clone(&self) -> Self {
        if PANIC_IN_CLONE.load(Ordering::Relaxed) {
            panic!("clone exploded");
        }
        match self {
            Op::Add(v) => Op::Add(*v),
            Op::Explode => Op::Explode,
        }
    }
}

impl Dispatch for Fragile {
    /// `true` = panic.
    type ReadOperation<'a> = bool;
    type WriteOperation = Op;
    type Response = u64;

    fn dispatch(&self, explode: bool) -> u64 {
        assert!(!explode, "read exploded");
        self.0
    }

    fn dispatch_mut(&mut self, op: Op) -> u64 {
        match op {
            Op::Add(v) => {
                self.0 += v;
                self.0
            }
            Op::Explode => panic!("write exploded"),
        }
    }
}

fn quiet_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}

/// With one replica (the inlined uncontended write, which reads poisoning and its configuration
/// from one word) and with two (the log path).
#[test]
fn panicking_write_poisons_and_later_calls_fail() {
    quiet_panics();
    for replicas in [1, 2] {
        let nr = NodeReplicated::builder()
            .replicas(replicas)
            .build(|_| Fragile::default())
            .unwrap();
        let mut a = nr.register(0).unwrap();
        let mut b = nr.register(replicas - 1).unwrap();
        assert_eq!(a.execute_mut(Op::Add(1)).unwrap(), 1);
        let caught = catch_unwind(AssertUnwindSafe(|| a.execute_mut(Op::Explode)));
        assert!(
            caught.is_err(),
            "the panic reaches the thread that ran the operation"
        );
        assert!(nr.is_poisoned());
        assert_eq!(
            a.execute_mut(Op::Add(1)),
            Err(Poisoned),
            "{replicas} replicas"
        );
        assert_eq!(a.execute(false), Err(Poisoned));
        assert_eq!(b.execute(false), Err(Poisoned));
        assert_eq!(
            b.execute_mut(Op::Add(1)),
            Err(Poisoned),
            "{replicas} replicas"
        );
        assert!(matches!(nr.register(0), Err(RegisterError::Poisoned)));
    }
}

#[test]
fn panicking_read_does_not_poison_or_hold_the_lock() {
    quiet_panics();
    with_deadlock_watchdog(120, || {
        let nr = NodeReplicated::builder()
            .replicas(1)
            .build(|_| Fragile::default())
            .unwrap();
        let mut h = nr.register(0).unwrap();
        assert!(catch_unwind(AssertUnwindSafe(|| h.execute(true))).is_err());
        assert!(!nr.is_poisoned());
        // A write needs the writer lock, which waits for every reader flag: the panicking read
        // must have released its flag, or this hangs.
        assert_eq!(h.execute_mut(Op::Add(5)).unwrap(), 5);
        assert_eq!(h.execute(false).unwrap(), 5);
    });
}

#[test]
fn panicking_clone_poisons() {
    quiet_panics();
    let nr = NodeReplicated::builder()
        .replicas(2)
        .build(|_| Fragile::default())
        .unwrap();
    let mut h = nr.register(0).unwrap();
    PANIC_IN_CLONE.store(true, Ordering::Relaxed);
    let caught = catch_unwind(AssertUnwindSafe(|| h.execute_mut(Op::Add(1))));
    PANIC_IN_CLONE.store(false, Ordering::Relaxed);
    assert!(caught.is_err());
    assert!(nr.is_poisoned());
    assert_eq!(h.execute(false), Err(Poisoned));
}

/// Many threads on two replicas; one of them submits a panicking write half way. Whoever
/// combines it panics; every other thread must come back (with responses before the poisoning,
/// `Poisoned` after it), none may hang.
#[test]
fn panic_under_load_wakes_every_waiter() {
    quiet_panics();
    with_deadlock_watchdog(300, || {
        for round in 0..20 {
            let nr = NodeReplicated::builder()
                .replicas(2)
                .log_size(16)
                .threads_per_replica(4)
                .build(|_| Fragile::default())
                .unwrap();
            let start = Barrier::new(6);
            let panics = AtomicUsize::new(0);
            let poisoned = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for t in 0..6 {
                    let (nr, start, panics, poisoned) = (&nr, &start, &panics, &poisoned);
                    s.spawn(move || {
                        let mut h = nr.register(t % 2).unwrap();
                        start.wait();
                        for i in 0..2_000 {
                            let op = if t == round % 6 && i == 500 {
                                Op::Explode
                            } else {
                                Op::Add(1)
                            };
                            let r = catch_unwind(AssertUnwindSafe(|| {
                                if i % 3 == 0 {
                                    h.execute(false)
                                } else {
                                    h.execute_mut(op)
                                }
                            }));
                            match r {
                                Err(_) => {
                                    panics.fetch_add(1, Ordering::Relaxed);
                                }
                                Ok(Err(Poisoned)) => {
                                    poisoned.fetch_add(1, Ordering::Relaxed);
                                    return;
                                }
                                Ok(Ok(_)) => {}
                            }
                        }
                    });
                }
            });
            assert!(nr.is_poisoned(), "round {round}");
            assert!(
                panics.load(Ordering::Relaxed) >= 1,
                "round {round}: nobody panicked"
            );
            assert!(
                poisoned.load(Ordering::Relaxed) >= 1,
                "round {round}: nobody saw poison"
            );
        }
    });
}

/// Runs a write, then a read on another replica (which must catch up with it, as the combiner
/// of that replica), from a `Drop` while an unrelated panic unwinds.
/// (It records the results instead of asserting: a second panic while unwinding would abort.)
struct OperateOnDrop<'a, 'b> {
    writer: &'a mut nr_core::ThreadHandle<'b, Fragile>,
    reader: &'a mut nr_core::ThreadHandle<'b, Fragile>,
    results: &'a mut Vec<Result<u64, Poisoned>>,
}

impl Drop for OperateOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.results.push(self.writer.execute_mut(Op::Add(1)));
        self.results.push(self.reader.execute(false));
    }
}

/// As `std::sync::Mutex`: only a panic that *starts* while the object is being changed
/// poisons it. Operations run from a `Drop` during an unrelated panic (a write, and a read that
/// replays the log into its replica) complete normally and leave the object usable.
#[test]
fn operation_during_unrelated_unwinding_does_not_poison() {
    quiet_panics();
    for replicas in [1, 2] {
        let nr = NodeReplicated::builder()
            .replicas(replicas)
            .build(|_| Fragile::default())
            .unwrap();
        let mut w = nr.register(0).unwrap();
        let mut r = nr.register(replicas - 1).unwrap();
        let mut results = Vec::new();
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let _on_drop = OperateOnDrop {
                writer: &mut w,
                reader: &mut r,
                results: &mut results,
            };
            panic!("unrelated panic, before and outside the object");
        }));
        assert!(caught.is_err());
        assert_eq!(results, [Ok(1), Ok(1)], "{replicas} replica(s)");
        assert!(
            !nr.is_poisoned(),
            "{replicas} replica(s): a panic that started outside the object poisoned it"
        );
        assert_eq!(w.execute(false), Ok(1), "the write from Drop took effect");
    }
}

/// Runs a write that panics inside the object from a `Drop` during an unrelated panic, under
/// its own `catch_unwind` (the only way a thread survives a second panic).
struct ExplodeOnDrop<'a, 'b> {
    writer: &'a mut nr_core::ThreadHandle<'b, Fragile>,
    nested: &'a mut bool,
}

impl Drop for ExplodeOnDrop<'_, '_> {
    fn drop(&mut self) {
        let writer = &mut *self.writer;
        *self.nested = catch_unwind(AssertUnwindSafe(|| writer.execute_mut(Op::Explode))).is_err();
    }
}

/// A panic that *starts* inside the object poisons it even when the thread was already
/// unwinding from an unrelated panic (it can only survive under a nested `catch_unwind`): the
/// replica may be half-updated. (`std::sync::Mutex` would not poison here; the uncontended
/// write path decides by where the panic started, not by the panic count.)
#[test]
fn panic_inside_during_unrelated_unwinding_poisons() {
    quiet_panics();
    let nr = NodeReplicated::builder()
        .replicas(1)
        .build(|_| Fragile::default())
        .unwrap();
    let mut w = nr.register(0).unwrap();
    let mut nested = false;
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let _on_drop = ExplodeOnDrop {
            writer: &mut w,
            nested: &mut nested,
        };
        panic!("unrelated panic, before and outside the object");
    }));
    assert!(caught.is_err());
    assert!(nested, "the nested write did not panic");
    assert!(
        nr.is_poisoned(),
        "a panic inside the object did not poison it"
    );
}
