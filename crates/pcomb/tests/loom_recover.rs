//! Loom model: detectable recovery while other threads run (issue 11, defect 3).
//!
//! `recover(op, seq)` answers `Applied` when the operation took effect before the crash, and
//! otherwise executes it now (`Reexecuted`), through the normal path that returns only once it
//! is durable. Here the recovering thread's operation was never applied (a fresh object, the
//! thread's first sequence number), and another thread executes an operation concurrently. In
//! every interleaving:
//!
//! - `recover` answers `Reexecuted`: a combiner that picks up the re-announced request and
//!   applies it (maybe without having persisted it yet) must not make recovery report the
//!   operation as applied before the crash. Before the fix, `recover` announced first and then
//!   read `Deactivate[p]`; loom finds the interleaving where the other thread's pass applied
//!   the request in between, and the model fails with `Applied`;
//! - both operations are applied exactly once (the final value is their sum, the responses are
//!   the two possible prefixes).
//!
//! Bounds: 2 threads, one operation each, pinned to a preemption bound of 4 whatever
//! `LOOM_MAX_PREEMPTIONS` says: loom reaches the bad interleaving of the old code only from 3-4
//! preemptions on (seen: at 2 the old code passed all 237 executions of the PBComb model; at
//! 4 it failed).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pcomb::objects::Counter;
use pcomb::structures::{Options, PBStack, PWFStack};
use pcomb::{PBComb, PWFComb, Recovered};

/// Runs `f` under loom with the preemption bound of the module docs.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(4);
    b.check(f);
}

/// Checks one execution's results: recovery of 1 (never applied) beside a concurrent add of 10.
fn check(recovered: Recovered<u64>, other: u64, total: u64) {
    let Recovered::Reexecuted(r) = recovered else {
        panic!("{recovered:?}: reported applied, but it was never applied before recovery");
    };
    assert!(
        (r, other) == (0, 1) || (r, other) == (10, 0),
        "responses {r}, {other}"
    );
    assert_eq!(total, 11);
}

#[test]
fn pbcomb_recover_reports_applied_only_for_work_done_before_it() {
    model(|| {
        let obj = Arc::new(PBComb::new(Counter::default(), 2).unwrap());
        let o = obj.clone();
        let other = thread::spawn(move || o.register_as(1).unwrap().execute_mut(10));
        let mut h = obj.register_as(0).unwrap();
        let seq = h.seq() + 1;
        let rec = h.recover(1, seq);
        let other = other.join().unwrap();
        check(rec, other, h.execute(()));
    });
}

#[test]
fn pwfcomb_recover_reports_applied_only_for_work_done_before_it() {
    model(|| {
        let obj = Arc::new(PWFComb::new(Counter::default(), 2).unwrap());
        let o = obj.clone();
        let other = thread::spawn(move || o.register_as(1).unwrap().execute_mut(10));
        let mut h = obj.register_as(0).unwrap();
        let seq = h.seq() + 1;
        let rec = h.recover(1, seq);
        let other = other.join().unwrap();
        check(rec, other, h.execute(()));
    });
}

#[test]
fn pbstack_recover_reports_applied_only_for_work_done_before_it() {
    model(|| {
        let s = Arc::new(PBStack::with_options(2, 2, Options::default()).unwrap());
        let s2 = s.clone();
        let other = thread::spawn(move || s2.register_as(1).unwrap().push(2).unwrap());
        let mut h = s.register_as(0).unwrap();
        let seq = h.seq() + 1;
        let rec = h.recover_push(1, seq);
        other.join().unwrap();
        assert!(matches!(rec, Recovered::Reexecuted(Ok(()))), "{rec:?}");
        let mut drained = vec![h.pop(), h.pop(), h.pop()];
        drained.sort_unstable();
        assert_eq!(drained, vec![None, Some(1), Some(2)]);
    });
}

#[test]
fn pwfstack_recover_reports_applied_only_for_work_done_before_it() {
    model(|| {
        let s = Arc::new(PWFStack::with_options(2, 2, Options::default()).unwrap());
        let s2 = s.clone();
        let other = thread::spawn(move || s2.register_as(1).unwrap().push(2).unwrap());
        let mut h = s.register_as(0).unwrap();
        let seq = h.seq() + 1;
        let rec = h.recover_push(1, seq);
        other.join().unwrap();
        assert!(matches!(rec, Recovered::Reexecuted(Ok(()))), "{rec:?}");
        let mut drained = vec![h.pop(), h.pop(), h.pop()];
        drained.sort_unstable();
        assert_eq!(drained, vec![None, Some(1), Some(2)]);
    });
}
