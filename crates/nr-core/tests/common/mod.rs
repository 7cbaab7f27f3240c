//! Sequential structures shared by the integration tests, and a hang detector.
#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // tests use real std threads

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use nr_core::Dispatch;

/// A counter that also counts, per replica, how many writes that replica applied (shared
/// counters outside the replicas, so a test can see which replica did work without reading it;
/// a copy made by `add_replica` shares its source's).
#[derive(Clone)]
pub(crate) struct Counted {
    pub(crate) value: u64,
    pub(crate) applied: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Dispatch for Counted {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.value
    }
    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.applied
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.value += add;
        self.value
    }
}

/// A hash map whose operations mirror `testkit::models::KvMap`.
#[derive(Default, Clone)]
pub(crate) struct Kv(pub(crate) HashMap<u64, u64>);

/// Write operations of [`Kv`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KvWrite {
    Put(u64, u64),
    Remove(u64),
}

impl Dispatch for Kv {
    type ReadOperation<'a> = u64;
    type WriteOperation = KvWrite;
    type Response = Option<u64>;

    fn dispatch(&self, key: u64) -> Option<u64> {
        self.0.get(&key).copied()
    }

    fn dispatch_mut(&mut self, op: KvWrite) -> Option<u64> {
        match op {
            KvWrite::Put(k, v) => self.0.insert(k, v),
            KvWrite::Remove(k) => self.0.remove(&k),
        }
    }

    fn dispatch_as_read(&self, op: &KvWrite) -> Option<Option<u64>> {
        match *op {
            // Removing an absent key, or putting the value already there, changes nothing.
            KvWrite::Remove(k) if !self.0.contains_key(&k) => Some(None),
            KvWrite::Put(k, v) if self.0.get(&k) == Some(&v) => Some(Some(v)),
            _ => None,
        }
    }
}

/// A stack: an order-sensitive structure, where replicas applying ops in different orders
/// would give visibly different responses.
#[derive(Default, Clone)]
pub(crate) struct Stack(pub(crate) Vec<u64>);

impl Dispatch for Stack {
    /// Reads: `true` = peek.
    type ReadOperation<'a> = ();
    /// `Some(v)` = push v, `None` = pop.
    type WriteOperation = Option<u64>;
    type Response = Option<u64>;

    fn dispatch(&self, _: ()) -> Option<u64> {
        self.0.last().copied()
    }

    fn dispatch_mut(&mut self, op: Option<u64>) -> Option<u64> {
        match op {
            Some(v) => {
                self.0.push(v);
                None
            }
            None => self.0.pop(),
        }
    }
}

/// Runs `f` on its own thread and fails the test if it has not finished after `secs` seconds:
/// a hang detector for protocols that could deadlock (never a speed check; the limit is far
/// above the normal run time).
pub(crate) fn with_deadlock_watchdog<R: Send + 'static>(
    secs: u64,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => worker.join().expect("worker panicked"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("no progress after {secs} s: the object deadlocked or livelocked")
        }
    }
}

/// xorshift64*: deterministic, and the seed is printed on failure (the histories' generator).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The environment variable `name` as a number, or `default`.
pub(crate) fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
