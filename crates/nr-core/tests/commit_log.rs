//! The commit hook (`Builder::commit_log`): order, exactly-once and grouping of the indexes the
//! hook sees, poisoning on `Err` and on a panic, and no read of an uncommitted write.
//! The loom models `commit_before_apply_*` (`tests/loom_combiner.rs`) check the hand-off itself.

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[path = "common/checked_sum.rs"]
mod checked_sum;
mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use checked_sum::{CheckedSum, Committed};
use common::with_deadlock_watchdog;
use nr_core::{CommitError, CommitLog, Dispatch, NodeReplicated, Poisoned};

/// Writes are never applied with this value unless the hook committed them; `FAIL` makes the
/// `Recorder` fail (or panic), so applying it means an uncommitted write was applied.
const FAIL: u64 = 666;
/// A commit call holding this write waits while its `Recorder` is told to hold.
const HOLD: u64 = 777;

/// The values written, in the order this replica applied them.
#[derive(Default, Clone)]
struct Seen(Vec<u64>);

impl Dispatch for Seen {
    /// `Some(v)`: whether `v` was applied (1 or 0); `None`: how many writes were.
    type ReadOperation<'a> = Option<u64>;
    type WriteOperation = u64;
    type Response = u64;

    fn dispatch(&self, q: Option<u64>) -> u64 {
        match q {
            Some(v) => u64::from(self.0.contains(&v)),
            None => self.0.len() as u64,
        }
    }

    fn dispatch_mut(&mut self, v: u64) -> u64 {
        assert_ne!(v, FAIL, "a write whose commit failed was applied");
        self.0.push(v);
        self.0.len() as u64
    }
}

/// What a `Recorder` does when a batch holds `FAIL`.
#[derive(Clone, Copy, PartialEq)]
enum OnFail {
    Err,
    Panic,
}

/// A commit log that records every call and checks that calls never overlap.
struct Recorder {
    /// The calls that returned `Ok`.
    calls: Mutex<Vec<(u64, Vec<u64>)>>,
    /// Set by the call that failed (`FAIL`).
    failed: AtomicBool,
    /// Every call made after the failed one (none may be: the object is poisoned).
    after_failure: Mutex<Vec<(u64, Vec<u64>)>>,
    in_call: AtomicBool,
    on_fail: OnFail,
    /// While set, a call holding the write `HOLD` waits inside the hook (with the commit turn)
    /// until the test clears it; `held` says that such a call is waiting.
    hold: AtomicBool,
    held: AtomicBool,
}

impl Recorder {
    fn new(on_fail: OnFail) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            after_failure: Mutex::new(Vec::new()),
            in_call: AtomicBool::new(false),
            on_fail,
            hold: AtomicBool::new(false),
            held: AtomicBool::new(false),
        })
    }

    fn calls(&self) -> Vec<(u64, Vec<u64>)> {
        self.calls.lock().unwrap().clone()
    }
}

impl CommitLog<u64> for Recorder {
    fn commit(&self, first: u64, ops: &[&u64]) -> Result<(), CommitError> {
        assert!(
            !self.in_call.swap(true, Ordering::SeqCst),
            "two commit calls at once"
        );
        assert!(!ops.is_empty(), "an empty commit");
        let ops: Vec<u64> = ops.iter().map(|&&v| v).collect();
        if self.failed.load(Ordering::SeqCst) {
            self.after_failure
                .lock()
                .unwrap()
                .push((first, ops.clone()));
        }
        if ops.contains(&HOLD) {
            self.held.store(true, Ordering::SeqCst);
            while self.hold.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
        let failed = ops.contains(&FAIL);
        if failed {
            self.failed.store(true, Ordering::SeqCst);
        } else {
            self.calls.lock().unwrap().push((first, ops));
        }
        self.in_call.store(false, Ordering::SeqCst);
        match (failed, self.on_fail) {
            (false, _) => Ok(()),
            (true, OnFail::Err) => Err(CommitError::new(std::io::Error::other("medium failed"))),
            (true, OnFail::Panic) => panic!("commit exploded"),
        }
    }
}

fn build(replicas: usize, log: Arc<Recorder>) -> NodeReplicated<Seen> {
    builder(replicas, log)
        .build(|_| Seen::default())
        .expect("build")
}

fn builder(replicas: usize, log: Arc<Recorder>) -> nr_core::Builder<Seen> {
    NodeReplicated::builder()
        .replicas(replicas)
        .log_size(64)
        .threads_per_replica(8)
        .commit_log(log)
}

/// The options that change the write path, each with the hook: none, log growth, `MIN_BATCH`,
/// dedicated combiners (the caller runs them).
fn with_option(b: nr_core::Builder<Seen>, option: usize) -> nr_core::Builder<Seen> {
    match option {
        0 => b,
        1 => b.log_growth(1024),
        2 => b.min_batch(3, std::time::Duration::from_micros(50)),
        _ => b.dedicated_combiners(true),
    }
}

/// One write, on 1 and 2 replicas: when it returns, the hook has committed it at index 0.
#[test]
fn a_write_returns_after_its_commit() {
    for replicas in [1, 2] {
        let log = Recorder::new(OnFail::Err);
        let nr = build(replicas, log.clone());
        assert_eq!(nr.register(replicas - 1).unwrap().execute_mut(5), Ok(1));
        assert_eq!(log.calls(), [(0, vec![5])], "{replicas} replica(s)");
    }
}

/// Many threads on 1-3 replicas (a small log, so that it wraps and fills), with no other
/// option, with log growth, with `MIN_BATCH` and with dedicated combiners: the hook sees indexes 0, 1, 2, ... each once,
/// in order, with every write once; every replica applied them in that order, and
/// `with_replica_state` reports how many. Fails if a write skips the hook (with one replica: if
/// the log-free single-replica path without a commit were taken) or if two combiners commit at
/// once. (One replica: the commit path without the shared log, `commit.rs` "One replica".)
#[test]
fn commit_sees_every_index_once_in_order() {
    const THREADS: u64 = 6;
    const WRITES: u64 = 300;
    for (replicas, option) in (1..=3).flat_map(|r| (0..4).map(move |o| (r, o))) {
        let log = Recorder::new(OnFail::Err);
        let nr = with_option(builder(replicas, log.clone()), option)
            .build(|_| Seen::default())
            .expect("build");
        let replicas = format!("{replicas} (option {option})");
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            if option == 3 {
                for r in 0..nr.replicas() {
                    let (nr, stop) = (&nr, &stop);
                    s.spawn(move || nr.run_combiner(r, || stop.load(Ordering::Relaxed)).unwrap());
                }
            }
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let nr = &nr;
                    s.spawn(move || {
                        let mut h = nr.register(t as usize % nr.replicas()).unwrap();
                        for i in 0..WRITES {
                            h.execute_mut(t * 1000 + i).unwrap();
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
        let calls = log.calls();
        let mut next = 0;
        let mut order = Vec::new();
        for (first, ops) in &calls {
            assert_eq!(*first, next, "{replicas} replica(s): a gap or a repeat");
            next += ops.len() as u64;
            order.extend(ops);
        }
        assert_eq!(next, THREADS * WRITES, "{replicas} replica(s)");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        let mut expected: Vec<u64> = (0..THREADS)
            .flat_map(|t| (0..WRITES).map(move |i| t * 1000 + i))
            .collect();
        expected.sort_unstable();
        assert_eq!(sorted, expected, "{replicas} replica(s): every write once");
        for r in 0..nr.replicas() {
            let (state, applied) = nr
                .with_replica_state(r, |s, applied| (s.0.clone(), applied))
                .unwrap();
            assert_eq!(applied, THREADS * WRITES, "replica {r} of {replicas}");
            assert_eq!(
                state, order,
                "replica {r} of {replicas}: not in commit order"
            );
        }
    }
}

/// Group commit: writes of other replicas' combiners that are in the log when a combiner takes
/// the commit turn go into its one `commit` call. Made deterministic: the writer on replica 0
/// holds the turn inside the hook (write `HOLD`) while the writers on replicas 1 and 2 put
/// their entries into the log and wait for the turn; once it is given back, the next turn
/// holder must commit both entries in one call. Each try waits longer before giving the turn
/// back, in case a loaded machine has not run the two writers that far yet.
#[test]
fn commits_are_grouped() {
    with_deadlock_watchdog(120, || {
        for wait_ms in [20u64, 80, 320, 1280] {
            let log = Recorder::new(OnFail::Err);
            let nr = build(3, log.clone());
            log.hold.store(true, Ordering::SeqCst);
            std::thread::scope(|s| {
                let holder = s.spawn(|| nr.register(0).unwrap().execute_mut(HOLD).unwrap());
                while !log.held.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                let writers: Vec<_> = (1..3u64)
                    .map(|r| {
                        let nr = &nr;
                        s.spawn(move || nr.register(r as usize).unwrap().execute_mut(r).unwrap())
                    })
                    .collect();
                std::thread::sleep(std::time::Duration::from_millis(wait_ms));
                log.hold.store(false, Ordering::SeqCst);
                holder.join().unwrap();
                for w in writers {
                    w.join().unwrap();
                }
            });
            let calls = log.calls();
            assert_eq!(
                calls[0],
                (0, vec![HOLD]),
                "the held call commits the first write alone"
            );
            if calls.iter().any(|(_, ops)| ops.len() > 1) {
                return;
            }
            eprintln!("waited {wait_ms} ms: every call held one write: {calls:?}");
        }
        panic!("two writers' entries waiting for the commit turn were never committed in one call");
    });
}

/// Threads write on `replicas` replicas until one writes `FAIL` (`Err` or panic in the hook):
/// every thread stops with `Poisoned` (or, for the one that ran the panicking hook, the panic),
/// no replica applies `FAIL` (`Seen` asserts it), and the object stays poisoned. (One replica:
/// the commit path without the shared log.)
fn failing_commit(on_fail: OnFail, replicas: usize) {
    with_deadlock_watchdog(120, move || {
        let log = Recorder::new(on_fail);
        let nr = build(replicas, log.clone());
        let panics = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (nr, panics) = (&nr, &panics);
                s.spawn(move || {
                    // A thread that starts late may find the object poisoned already.
                    let Ok(mut h) = nr.register(t as usize % replicas) else {
                        return;
                    };
                    for i in 0.. {
                        let v = if t == 0 && i == 100 {
                            FAIL
                        } else {
                            t * 1000 + i + 1
                        };
                        match catch_unwind(AssertUnwindSafe(|| h.execute_mut(v))) {
                            Ok(Ok(_)) => assert_ne!(v, FAIL, "the failed write returned Ok"),
                            Ok(Err(Poisoned)) => return,
                            Err(_) => {
                                panics.fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                        }
                    }
                });
            }
        });
        assert!(nr.is_poisoned());
        let expected_panics = usize::from(on_fail == OnFail::Panic);
        assert_eq!(panics.into_inner(), expected_panics);
        assert_eq!(
            nr.register(0).map(|_| ()).err(),
            Some(nr_core::RegisterError::Poisoned)
        );
        assert_eq!(
            nr.with_replica_state(replicas - 1, |_, _| ()),
            Err(Poisoned)
        );
        // Nothing was committed after the failed call (a combiner that passed its poison check
        // before the failure must check again once it holds the commit turn or the lock).
        assert!(log.failed.load(Ordering::SeqCst), "no commit failed");
        let after = log.after_failure.lock().unwrap().clone();
        assert!(
            after.is_empty(),
            "commit called after a failed commit: {after:?}"
        );
        // What was committed before is a gap-free prefix.
        let mut next = 0;
        for (first, ops) in log.calls() {
            assert_eq!(first, next);
            next += ops.len() as u64;
        }
    });
}

#[test]
fn a_failing_commit_poisons_and_applies_nothing() {
    failing_commit(OnFail::Err, 2);
}

#[test]
fn a_panicking_commit_poisons_without_hanging() {
    failing_commit(OnFail::Panic, 2);
}

#[test]
fn a_failing_commit_on_one_replica_poisons_and_applies_nothing() {
    failing_commit(OnFail::Err, 1);
}

#[test]
fn a_panicking_commit_on_one_replica_poisons_without_hanging() {
    failing_commit(OnFail::Panic, 1);
}

/// A commit log that marks each value committed when `commit` is about to return.
#[derive(Default)]
struct Marks(Mutex<Vec<u64>>);

impl Committed for Marks {
    fn is_committed(&self, v: u64) -> bool {
        self.0.lock().unwrap().contains(&v)
    }
}

impl CommitLog<u64> for Marks {
    fn commit(&self, _first: u64, ops: &[&u64]) -> Result<(), CommitError> {
        self.0.lock().unwrap().extend(ops.iter().map(|&&v| v));
        Ok(())
    }
}

/// The batch of one (a thread alone on its replica, nothing posted: nr-core's `combine_own`)
/// commits its entry before it applies it and before it answers, on each of 2 replicas and
/// when it must first replay the other replica's writes. Fails if that path skips the commit
/// or commits only the entries before its own (`write 1 applied before its commit returned`).
#[test]
fn the_batch_of_one_commits_before_it_applies_and_answers() {
    let marks = Arc::new(Marks::default());
    let nr = NodeReplicated::builder()
        .replicas(2)
        .log_size(16)
        .threads_per_replica(2)
        .commit_log(marks.clone())
        .build(|_| CheckedSum {
            sum: 0,
            log: marks.clone(),
        })
        .expect("build");
    let mut on = [nr.register(0).unwrap(), nr.register(1).unwrap()];
    let mut sum = 0;
    // 40 writes on a log of 16: it wraps; the replicas alternate, so each write replays the
    // other replica's last one first.
    for v in 1..=40 {
        sum += v;
        assert_eq!(on[(v % 2) as usize].execute_mut(v), Ok(sum));
        assert!(
            marks.is_committed(v),
            "write {v} answered before its commit"
        );
    }
    assert_eq!(on[0].execute(()), Ok(sum));
    assert_eq!(on[1].execute(()), Ok(sum));
}

/// A commit log that holds the commit of `HELD` until readers have polled for it many times.
struct Holding {
    polls: AtomicUsize,
    /// Set when the commit of `HELD` starts.
    started: AtomicBool,
    released: AtomicBool,
}

const HELD: u64 = 7;

impl CommitLog<u64> for Holding {
    fn commit(&self, _first: u64, ops: &[&u64]) -> Result<(), CommitError> {
        if ops.iter().any(|&&v| v == HELD) {
            self.started.store(true, Ordering::SeqCst);
            let start = self.polls.load(Ordering::SeqCst);
            while self.polls.load(Ordering::SeqCst) < start + 2_000 {
                std::thread::yield_now();
            }
            self.released.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// While the commit of a write is held, readers on the writer's replica and on the other one
/// poll for it: none sees it before the commit returned. Fails if a combiner applies (and so
/// exposes) its batch before committing it. On one replica (the commit path without the
/// shared log) both readers share the writer's replica, and the commit is held until they have
/// polled 2,000 times: a combiner that kept readers out while it commits (the writer side
/// taken before `commit`) hangs here, and the watchdog fails the test. The readers register
/// only once that commit has started, so the writer was its replica's only registered thread
/// when it took the combiner lock (the case where the fast path used to take the writer side
/// with the lock).
#[test]
fn no_read_sees_an_uncommitted_write() {
    for replicas in [1, 2] {
        no_read_sees_an_uncommitted_write_on(replicas);
    }
}

fn no_read_sees_an_uncommitted_write_on(replicas: usize) {
    with_deadlock_watchdog(120, move || {
        let hook = Arc::new(Holding {
            polls: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            released: AtomicBool::new(false),
        });
        let nr = NodeReplicated::builder()
            .replicas(replicas)
            .log_size(64)
            .threads_per_replica(4)
            .commit_log(hook.clone())
            .build(|_| Seen::default())
            .expect("build");
        let mut h = nr.register(0).unwrap();
        h.execute_mut(1).unwrap();
        std::thread::scope(|s| {
            for r in 0..2 {
                let (nr, hook) = (&nr, &hook);
                s.spawn(move || {
                    while !hook.started.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                    let mut h = nr.register(r % replicas).unwrap();
                    loop {
                        if h.execute(Some(HELD)).unwrap() == 1 {
                            assert!(
                                hook.released.load(Ordering::SeqCst),
                                "replica {r}: a read saw a write whose commit had not returned"
                            );
                            return;
                        }
                        hook.polls.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            h.execute_mut(HELD).unwrap();
            assert!(
                hook.released.load(Ordering::SeqCst),
                "returned before its commit"
            );
            // Replica 1's reader waits only for completed writes; one more write on replica 1
            // is not needed: `completed_tail` covers `HELD` once the write returned.
        });
    });
}

/// With `writes_as_reads`, a write that `dispatch_as_read` answers changed nothing: it is not
/// committed and gets no index; the others are committed as usual.
#[test]
fn writes_answered_as_reads_are_not_committed() {
    use common::{Kv, KvWrite};

    /// Counts the indexes committed.
    struct Count(AtomicUsize);
    impl CommitLog<KvWrite> for Count {
        fn commit(&self, first: u64, ops: &[&KvWrite]) -> Result<(), CommitError> {
            assert_eq!(first as usize, self.0.load(Ordering::SeqCst));
            self.0.fetch_add(ops.len(), Ordering::SeqCst);
            Ok(())
        }
    }

    for replicas in [1, 2] {
        let log = Arc::new(Count(AtomicUsize::new(0)));
        let nr = NodeReplicated::builder()
            .replicas(replicas)
            .writes_as_reads(true)
            .commit_log(log.clone())
            .build(|_| Kv::default())
            .expect("build");
        let mut h = nr.register(replicas - 1).unwrap();
        assert_eq!(h.execute_mut(KvWrite::Remove(1)).unwrap(), None); // absent: no change
        assert_eq!(log.0.load(Ordering::SeqCst), 0, "{replicas} replica(s)");
        h.execute_mut(KvWrite::Put(1, 5)).unwrap();
        h.execute_mut(KvWrite::Put(1, 5)).unwrap(); // the value already there: no change
        h.execute_mut(KvWrite::Remove(1)).unwrap();
        assert_eq!(log.0.load(Ordering::SeqCst), 2, "{replicas} replica(s)");
        assert_eq!(nr.with_replica_state(0, |_, applied| applied), Ok(2));
    }
}
