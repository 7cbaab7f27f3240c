//! How the object waits: it never takes the user's thread park token, and a combiner waiting
//! for log space does not lock its node's readers out (§5.4).

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::with_deadlock_watchdog;
use nr_core::{Dispatch, NodeReplicated};

/// A register whose write `Hold` blocks, on the replica it is built for, while `gate` is shut.
struct Gated {
    replica: usize,
    blocks_on: usize,
    value: u64,
    /// Shut while `Hold` must block; set by the test.
    shut: &'static AtomicBool,
    /// Set by `Hold` once it blocks.
    holding: &'static AtomicBool,
}

#[derive(Clone, Debug)]
enum Op {
    Set(u64),
    /// Blocks inside `dispatch_mut` on replica `blocks_on` until the gate opens.
    Hold,
}

impl Dispatch for Gated {
    type ReadOperation<'a> = ();
    type WriteOperation = Op;
    type Response = u64;

    fn dispatch(&self, _: ()) -> u64 {
        self.value
    }

    fn dispatch_mut(&mut self, op: Op) -> u64 {
        match op {
            Op::Set(v) => self.value = v,
            Op::Hold if self.replica == self.blocks_on => {
                self.holding.store(true, Ordering::SeqCst);
                while self.shut.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Op::Hold => {}
        }
        self.value
    }
}

/// A thread's `unpark` that arrives before it enters the object must still be there for its
/// own `park()` afterwards, even if the object's waits park the thread: the object uses a
/// private parker, never the std park token.
#[test]
fn waiting_inside_the_object_keeps_the_users_unpark() {
    static SHUT: AtomicBool = AtomicBool::new(true);
    static HOLDING: AtomicBool = AtomicBool::new(false);
    with_deadlock_watchdog(120, || {
        let nr = NodeReplicated::builder()
            .replicas(1)
            .build(|r| Gated {
                replica: r,
                blocks_on: 0,
                value: 0,
                shut: &SHUT,
                holding: &HOLDING,
            })
            .expect("valid configuration");
        let nr = &nr;
        std::thread::scope(|s| {
            // Holds the only replica's writer side inside `dispatch_mut`.
            s.spawn(move || {
                let mut h = nr.register(0).unwrap();
                h.execute_mut(Op::Hold).unwrap();
            });
            while !HOLDING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            let reader = s.spawn(move || {
                std::thread::current().unpark();
                let mut h = nr.register(0).unwrap();
                // Waits for the writer long enough to reach the park phase of its backoff.
                h.execute(()).unwrap();
                // The token from before must still be here: this returns at once.
                let began = Instant::now();
                std::thread::park_timeout(Duration::from_secs(20));
                began.elapsed()
            });
            std::thread::sleep(Duration::from_millis(200));
            SHUT.store(false, Ordering::SeqCst);
            let waited = reader.join().unwrap();
            assert!(
                waited < Duration::from_secs(10),
                "the object consumed the thread's park token (park waited {waited:?})"
            );
        });
    });
}

/// Three replicas and a 4-entry log. Replica 2's combiner is stuck inside `dispatch_mut` (the
/// user's code blocks), so the log fills behind it; a writer on replica 0 must wait for log
/// space. While it waits, a reader on replica 0 (which is up to date) must not be locked out.
#[test]
fn combiner_waiting_for_log_space_lets_local_readers_run() {
    static SHUT: AtomicBool = AtomicBool::new(true);
    static HOLDING: AtomicBool = AtomicBool::new(false);
    with_deadlock_watchdog(120, || {
        let nr = NodeReplicated::builder()
            .replicas(3)
            .log_size(4)
            .threads_per_replica(2)
            .build(|r| Gated {
                replica: r,
                blocks_on: 2,
                value: 0,
                shut: &SHUT,
                holding: &HOLDING,
            })
            .expect("valid configuration");
        let nr = &nr;
        std::thread::scope(|s| {
            // Replica 2: stuck applying its own entry (index 0).
            s.spawn(move || {
                let mut h = nr.register(2).unwrap();
                h.execute_mut(Op::Hold).unwrap();
            });
            while !HOLDING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // Replica 1 fills the rest of the log (indices 1-3); replica 0 lags behind.
            let mut h1 = nr.register(1).unwrap();
            for v in 1..=3 {
                h1.execute_mut(Op::Set(v)).unwrap();
            }
            // Replica 0's writer: the log is full, so it brings replica 0 up to date and waits
            // for replica 2.
            s.spawn(move || {
                let mut h = nr.register(0).unwrap();
                h.execute_mut(Op::Set(10)).unwrap();
            });
            std::thread::sleep(Duration::from_millis(300));
            let (tx, rx) = mpsc::channel();
            s.spawn(move || {
                let mut h = nr.register(0).unwrap();
                let _ = tx.send(h.execute(()).unwrap());
            });
            let read = rx.recv_timeout(Duration::from_secs(10));
            SHUT.store(false, Ordering::SeqCst);
            let read =
                read.expect("a reader on replica 0 was locked out while its combiner waited");
            assert_eq!(read, 3, "the reader sees every completed write");
        });
    });
}
