//! Concurrent histories of `PWFComb1` (PWFcomb with stamped records; volatile, in an anonymous
//! region, and on a file with real flushes), checked for linearizability against `testkit`'s
//! sequential counter model. Threads start in lockstep (a barrier), and each check reports the
//! share of operations that overlapped another thread's (`overlap_share`), summed over the
//! proptest cases; the file run asserts that some did. Reads (a fifth of the operations) take
//! no lock and may help persist the record they read, which is what this checks beside writes.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

use pcomb::objects::Counter;
use pcomb::pmem::{Persist, Region};
use pcomb::PWFComb1;
use proptest::prelude::*;
use testkit::lin::{check, Recorder};
use testkit::models::{Counter as CounterModel, CounterOp, CounterRet};

/// One thread's script: `None` reads, `Some(k)` adds `k`.
type Script = Vec<Option<u64>>;

fn scripts() -> impl Strategy<Value = Vec<Script>> {
    prop::collection::vec(
        prop::collection::vec(prop::option::weighted(0.8, 1u64..4), 1..12),
        2..=4,
    )
}

/// Overlapping and total operations over the cases of one test.
type Tally = [AtomicU64; 2];
static VOLATILE: Tally = [AtomicU64::new(0), AtomicU64::new(0)];
static IN_REGION: Tally = [AtomicU64::new(0), AtomicU64::new(0)];
static ON_FILE: Tally = [AtomicU64::new(0), AtomicU64::new(0)];

/// Runs each script on its own thread (started together) and checks the recorded history and
/// the final value; adds the overlapping and total operations to `tally` and returns the
/// history's overlap share.
fn check_history<P: Persist>(
    obj: &PWFComb1<Counter, P>,
    scripts: &[Script],
    tally: &Tally,
) -> Result<f64, TestCaseError> {
    let recorder = Recorder::new();
    let start = Barrier::new(scripts.len());
    std::thread::scope(|s| {
        for script in scripts {
            let mut rec = recorder.thread();
            let start = &start;
            s.spawn(move || {
                let mut h = obj.register().expect("one slot per script");
                start.wait();
                for op in script {
                    if let Some(k) = *op {
                        let id = rec.invoke(CounterOp::Add(k));
                        let r = h.execute_mut(k);
                        rec.complete(id, CounterRet::Previous(r));
                    } else {
                        let id = rec.invoke(CounterOp::Get);
                        let r = h.execute(());
                        rec.complete(id, CounterRet::Value(r));
                    }
                }
            });
        }
    });
    let history = recorder.into_history();
    let share = history.overlap_share();
    let ops = scripts.iter().map(Vec::len).sum::<usize>() as u64;
    tally[0].fetch_add((share * ops as f64).round() as u64, Ordering::Relaxed);
    tally[1].fetch_add(ops, Ordering::Relaxed);
    check(CounterModel::default(), &history).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let total: u64 = scripts.iter().flatten().flatten().sum();
    prop_assert_eq!(obj.register().expect("threads are done").execute(()), total);
    Ok(share)
}

fn report(name: &str, tally: &Tally) {
    let [o, n] = tally;
    let (o, n) = (o.load(Ordering::Relaxed), n.load(Ordering::Relaxed));
    eprintln!("{name}: {o} of {n} operations overlapped another thread's (cumulative)");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn volatile_is_linearizable(s in scripts()) {
        check_history(&PWFComb1::new(Counter::default(), s.len()).expect("valid"), &s, &VOLATILE)?;
        report("PWFComb1 volatile", &VOLATILE);
    }

    #[test]
    fn in_region_is_linearizable(s in scripts()) {
        let region = Region::anonymous(0xC0B2, 1 << 16).expect("anonymous region");
        let obj = PWFComb1::create(region, Counter::default(), s.len()).expect("valid");
        check_history(&obj, &s, &IN_REGION)?;
        report("PWFComb1 in a region", &IN_REGION);
    }
}

/// More contention (4 threads on 2 cores, 500 operations each, a fifth of them reads) on a
/// file-backed region with real flushes; some operations must overlap.
#[test]
fn on_a_file_with_real_flushes() {
    let dir = std::env::temp_dir().join(format!("pwfcomb1-lin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let region = Region::create(dir.join("obj"), 0xC0B2, 1 << 16).expect("file region");
    let obj = PWFComb1::create(region, Counter::default(), 4).expect("valid");
    let script: Script = (0..500).map(|i| (i % 5 != 0).then_some(1)).collect();
    let share = check_history(&obj, &vec![script; 4], &ON_FILE).expect("linearizable");
    eprintln!("PWFComb1 on a file: overlap share {share:.3}");
    assert!(
        share > 0.0,
        "no operation overlapped: the check proved nothing"
    );
    drop(obj);
    let _ = std::fs::remove_dir_all(&dir);
}
