//! How the object waits: it never takes the user's thread park token, and a combiner waiting
//! for log space does not lock its node's readers out (§5.4).

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    /// Readers inside `dispatch` of this replica right now.
    readers_inside: AtomicUsize,
    /// Set when `dispatch_mut` ran while a reader was inside: the writer side failed.
    overlapped: &'static AtomicBool,
}

static NEVER: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Debug)]
enum Op {
    Set(u64),
    /// Blocks inside `dispatch_mut` on replica `blocks_on` until the gate opens.
    Hold,
    /// Blocks inside `dispatch_mut` on replica `.0` until the gate opens, then sets `.1`.
    HoldOn(usize, u64),
}

impl Dispatch for Gated {
    /// `Some(gate)`: stay inside the read while `gate` is shut.
    type ReadOperation<'a> = Option<&'static AtomicBool>;
    type WriteOperation = Op;
    type Response = u64;

    fn dispatch(&self, hold: Option<&'static AtomicBool>) -> u64 {
        self.readers_inside.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = hold {
            self.holding.store(true, Ordering::SeqCst);
            while gate.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let v = self.value;
        self.readers_inside.fetch_sub(1, Ordering::SeqCst);
        v
    }

    fn dispatch_mut(&mut self, op: Op) -> u64 {
        if self.readers_inside.load(Ordering::SeqCst) != 0 {
            self.overlapped.store(true, Ordering::SeqCst);
        }
        match op {
            Op::Set(v) => self.value = v,
            Op::Hold if self.replica == self.blocks_on => {
                self.holding.store(true, Ordering::SeqCst);
                while self.shut.load(Ordering::SeqCst) {
                    if self.readers_inside.load(Ordering::SeqCst) != 0 {
                        self.overlapped.store(true, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Op::Hold => {}
            Op::HoldOn(r, v) => {
                if self.replica == r {
                    self.holding.store(true, Ordering::SeqCst);
                    while self.shut.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                self.value = v;
            }
        }
        self.value
    }
}

/// A thread's `unpark` that arrives before it enters the object must still be there for its
/// own `park()` afterwards, even if the object's waits park the thread: the object uses a
/// private parker, never the std park token. (The reader also must not enter the replica while
/// the writer is inside `dispatch_mut`: the writer side of the readers-writer lock.)
#[test]
fn waiting_inside_the_object_keeps_the_users_unpark() {
    static SHUT: AtomicBool = AtomicBool::new(true);
    static HOLDING: AtomicBool = AtomicBool::new(false);
    static OVERLAPPED: AtomicBool = AtomicBool::new(false);
    with_deadlock_watchdog(120, || {
        let nr = NodeReplicated::builder()
            .replicas(1)
            .build(|r| Gated {
                replica: r,
                blocks_on: 0,
                value: 0,
                shut: &SHUT,
                holding: &HOLDING,
                readers_inside: AtomicUsize::new(0),
                overlapped: &OVERLAPPED,
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
                h.execute(None).unwrap();
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
            // The same setup checks the readers-writer lock: the reader waited for the writer.
            assert!(
                !OVERLAPPED.load(Ordering::SeqCst),
                "a reader entered the replica while a writer was changing it"
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
                readers_inside: AtomicUsize::new(0),
                overlapped: &NEVER,
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
                let _ = tx.send(h.execute(None).unwrap());
            });
            let read = rx.recv_timeout(Duration::from_secs(10));
            SHUT.store(false, Ordering::SeqCst);
            let read =
                read.expect("a reader on replica 0 was locked out while its combiner waited");
            assert_eq!(read, 3, "the reader sees every completed write");
        });
    });
}

/// The help path never replays into a replica under its readers: a combiner whose own replica
/// lags when the log is full takes the writer side first, so it waits for a reader that is
/// inside the replica. Setup as above, plus a reader parked inside replica 0 before the log
/// fills.
#[test]
fn helper_does_not_replay_under_a_reader() {
    static SHUT: AtomicBool = AtomicBool::new(true);
    static HOLDING: AtomicBool = AtomicBool::new(false);
    static READ_GATE: AtomicBool = AtomicBool::new(true);
    static OVERLAPPED: AtomicBool = AtomicBool::new(false);
    with_deadlock_watchdog(120, || {
        let nr = NodeReplicated::builder()
            .replicas(3)
            .log_size(4)
            .threads_per_replica(3)
            .build(|r| Gated {
                replica: r,
                blocks_on: 2,
                value: 0,
                shut: &SHUT,
                holding: &HOLDING,
                readers_inside: AtomicUsize::new(0),
                overlapped: &OVERLAPPED,
            })
            .expect("valid configuration");
        let nr = &nr;
        std::thread::scope(|s| {
            // Replica 2: stuck applying its own entry (index 0), not yet completed.
            s.spawn(move || {
                let mut h = nr.register(2).unwrap();
                h.execute_mut(Op::Hold).unwrap();
            });
            while !HOLDING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            HOLDING.store(false, Ordering::SeqCst);
            // A reader stays inside replica 0 (nothing completed yet, so it needs no catch-up).
            s.spawn(move || {
                let mut h = nr.register(0).unwrap();
                h.execute(Some(&READ_GATE)).unwrap();
            });
            while !HOLDING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // Replica 1 fills the log; replica 0 lags behind.
            let mut h1 = nr.register(1).unwrap();
            for v in 1..=3 {
                h1.execute_mut(Op::Set(v)).unwrap();
            }
            // Replica 0's writer finds the log full and its own replica the laggard.
            s.spawn(move || {
                let mut h = nr.register(0).unwrap();
                h.execute_mut(Op::Set(10)).unwrap();
            });
            std::thread::sleep(Duration::from_millis(300));
            READ_GATE.store(false, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            SHUT.store(false, Ordering::SeqCst);
        });
        assert!(
            !OVERLAPPED.load(Ordering::SeqCst),
            "a replay changed replica 0 while a reader was inside it"
        );
    });
}

/// The help path never exposes an entry that is not completed (issue 9, help side). Four
/// replicas and a 4-entry log: replica 3 is stuck applying entry 0 and replica 1 is stuck
/// applying entry 3 (written, not completed), so the log stays full. Replica 0's writer then
/// brings the idle replica 2 up to date while it waits. A reader that reads replica 2 and then
/// replica 0 must not see entry 3 first and an older state after.
#[test]
fn helper_never_exposes_entries_that_are_not_completed() {
    static SHUT: AtomicBool = AtomicBool::new(true);
    static HOLDING: AtomicBool = AtomicBool::new(false);
    with_deadlock_watchdog(120, || {
        let nr = NodeReplicated::builder()
            .replicas(4)
            .log_size(4)
            .threads_per_replica(2)
            .build(|r| Gated {
                replica: r,
                blocks_on: usize::MAX,
                value: 0,
                shut: &SHUT,
                holding: &HOLDING,
                readers_inside: AtomicUsize::new(0),
                overlapped: &NEVER,
            })
            .expect("valid configuration");
        let nr = &nr;
        // Runs `op` on a new thread registered with `replica`, where it gets stuck.
        let stuck = |replica: usize, op: Op| {
            HOLDING.store(false, Ordering::SeqCst);
            move || {
                let mut h = nr.register(replica).unwrap();
                h.execute_mut(op).unwrap();
            }
        };
        let (first, second) = std::thread::scope(|s| {
            // Entry 0: stuck on replica 3.
            s.spawn(stuck(3, Op::HoldOn(3, 0)));
            while !HOLDING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // Entries 1-2 from replica 0, completed.
            let mut h0 = nr.register(0).unwrap();
            h0.execute_mut(Op::Set(1)).unwrap();
            h0.execute_mut(Op::Set(2)).unwrap();
            // Entry 3: written by replica 1's combiner, which is stuck applying it.
            s.spawn(stuck(1, Op::HoldOn(1, 100)));
            while !HOLDING.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // Replica 0's writer: the log is full; it helps replica 2 while it waits.
            s.spawn(move || {
                let mut h = nr.register(0).unwrap();
                h.execute_mut(Op::Set(200)).unwrap();
            });
            std::thread::sleep(Duration::from_millis(300));
            let mut r2 = nr.register(2).unwrap();
            let first = r2.execute(None).unwrap();
            let second = h0.execute(None).unwrap();
            SHUT.store(false, Ordering::SeqCst);
            (first, second)
        });
        assert!(
            second >= first,
            "read went back in time: replica 2 returned {first}, then replica 0 returned {second}"
        );
    });
}
