//! `Builder::log_growth` (§6 "Log length"): a full log doubles instead of making the appender
//! bring a lagging replica up to date, until it reaches its largest size; then the help path
//! takes over as without the option. Every response is checked, and replicas agree at the end.
//! (Linearizability with the option on: `tests/linearizability.rs` turns it on in a third of its
//! histories; real-time order across a lagging replica: `tests/real_time_order.rs`.)

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use common::{with_deadlock_watchdog, Counted};
use nr_core::{BuildError, NodeReplicated};

fn counted(
    replicas: usize,
    log: usize,
    max: usize,
) -> (NodeReplicated<Counted>, Vec<Arc<AtomicUsize>>) {
    let applied: Vec<_> = (0..replicas)
        .map(|_| Arc::new(AtomicUsize::new(0)))
        .collect();
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .log_size(log)
        .log_growth(max)
        .threads_per_replica(2)
        .build(|r| Counted {
            value: 0,
            applied: applied[r].clone(),
        })
        .expect("valid configuration");
    (nr, applied)
}

#[test]
fn an_idle_replica_is_not_replayed_by_appenders_while_the_log_can_grow() {
    // 4 entries growing to 64: the segments hold 4 + 8 + 16 + 32 + 64 = 124 writes without
    // anyone touching replica 1.
    let (nr, applied) = counted(2, 4, 64);
    let mut h0 = nr.register(0).unwrap();
    for i in 1..=124u64 {
        assert_eq!(h0.execute_mut(1).unwrap(), i);
    }
    assert_eq!(nr.log_size(), 64);
    assert_eq!(
        applied[1].load(Ordering::Relaxed),
        0,
        "an appender replayed the idle replica although the log could grow"
    );
    // The lagging replica replays every segment itself when read, in order.
    let mut h1 = nr.register(1).unwrap();
    assert_eq!(h1.execute(()).unwrap(), 124);
    assert_eq!(applied[1].load(Ordering::Relaxed), 124);
}

#[test]
fn at_its_largest_size_the_log_falls_back_to_helping_the_idle_replica() {
    let (nr, applied) = counted(2, 4, 16);
    let mut h0 = nr.register(0).unwrap();
    // Past 16 entries behind, replica 1 holds the head: the appender must replay it.
    for i in 1..=100u64 {
        assert_eq!(h0.execute_mut(1).unwrap(), i);
    }
    assert_eq!(nr.log_size(), 16);
    assert!(
        applied[1].load(Ordering::Relaxed) >= 100 - 16,
        "replica 1 applied only {} writes: the help path did not run",
        applied[1].load(Ordering::Relaxed)
    );
    let mut h1 = nr.register(1).unwrap();
    assert_eq!(h1.execute(()).unwrap(), 100);
}

#[test]
fn a_stale_head_does_not_grow_the_log() {
    // A 16-entry log refreshes its head every 4 entries (§5.6 low mark).
    let (nr, _) = counted(2, 16, 1024);
    let mut h0 = nr.register(0).unwrap();
    let mut h1 = nr.register(1).unwrap();
    for _ in 0..16 {
        h0.execute_mut(1).unwrap();
    }
    // The last refresh (at 16) saw replica 1 at 0; now it catches up, and the head is stale.
    assert_eq!(h1.execute(()).unwrap(), 16);
    // The log looks full against the stale head: refreshing it makes room, no growth needed.
    assert_eq!(h0.execute_mut(1).unwrap(), 17);
    assert_eq!(
        nr.log_size(),
        16,
        "the log grew although a head refresh made room"
    );
}

#[test]
fn without_growth_the_log_keeps_its_size() {
    let (nr, applied) = counted(2, 4, 4);
    let mut h0 = nr.register(0).unwrap();
    for i in 1..=20u64 {
        assert_eq!(h0.execute_mut(1).unwrap(), i);
    }
    assert_eq!(nr.log_size(), 4);
    assert!(
        applied[1].load(Ordering::Relaxed) >= 16,
        "the help path did not run"
    );
}

#[test]
fn invalid_largest_sizes_are_typed_errors() {
    for (log, max) in [(8, 4), (8, 12), (8, 0)] {
        let err = NodeReplicated::builder()
            .replicas(2)
            .log_size(log)
            .log_growth(max)
            .threads_per_replica(2)
            .build(|_| Counted {
                value: 0,
                applied: Arc::default(),
            })
            .expect_err("invalid largest size");
        assert!(
            matches!(err, BuildError::LogGrowth { max_entries, entries } if max_entries == max && entries == log),
            "{err:?}"
        );
        assert!(err.to_string().contains("power of two"), "{err}");
    }
}

/// Threads on 3 replicas add their own increments while one replica lags (its only thread reads
/// now and then); the log starts at 8 entries and grows. Each thread checks that the counter
/// only grows as seen through its replica; at the end every replica shows the exact sum.
#[test]
fn growing_under_concurrent_appenders_loses_no_write() {
    with_deadlock_watchdog(120, || {
        const WRITERS: usize = 4;
        const OPS: u64 = if cfg!(debug_assertions) {
            3_000
        } else {
            30_000
        };
        let (nr, _) = counted(3, 8, 1 << 12);
        let nr = &nr;
        let start = Barrier::new(WRITERS + 1);
        std::thread::scope(|s| {
            for t in 0..WRITERS {
                let start = &start;
                s.spawn(move || {
                    // Replicas 0 and 1 write; replica 2 lags.
                    let mut h = nr.register(t % 2).unwrap();
                    start.wait();
                    let mut last = 0;
                    for _ in 0..OPS {
                        let v = h.execute_mut(1).unwrap();
                        assert!(v > last, "counter went back: {last} then {v}");
                        last = v;
                    }
                });
            }
            s.spawn(|| {
                let mut h = nr.register(2).unwrap();
                start.wait();
                let mut last = 0;
                for _ in 0..20 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    let v = h.execute(()).unwrap();
                    assert!(v >= last, "lagging replica went back: {last} then {v}");
                    last = v;
                }
            });
        });
        let total = WRITERS as u64 * OPS;
        for r in 0..3 {
            assert_eq!(
                nr.register(r).unwrap().execute(()).unwrap(),
                total,
                "replica {r}"
            );
        }
        println!("log grew from 8 to {} entries", nr.log_size());
        assert!(nr.log_size() > 8, "the log never grew");
    });
}
