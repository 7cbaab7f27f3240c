//! What the linearizability tests of the combining objects share (`linearizability.rs`,
//! `pbcomb1_linearizability.rs`, `pwfcomb1_linearizability.rs`): the scripts proptest draws
//! and a run that records their history against `testkit`'s counter model.
#![allow(dead_code)]

use proptest::prelude::*;

/// One thread's script: `None` reads, `Some(k)` adds `k`.
pub(crate) type Script = Vec<Option<u64>>;

/// 2-4 threads of 1-11 operations, a fifth of them reads.
pub(crate) fn scripts() -> impl Strategy<Value = Vec<Script>> {
    prop::collection::vec(
        prop::collection::vec(prop::option::weighted(0.8, 1u64..4), 1..12),
        2..=4,
    )
}

/// Runs each script of `$scripts` on its own thread through a handle of `$obj` (any of the
/// combining objects: `register`, `execute_mut`, `execute`), the threads started together at
/// a barrier; evaluates to the recorded `testkit` history.
macro_rules! record_scripts {
    ($obj:expr, $scripts:expr) => {{
        let obj = &$obj;
        let scripts = &$scripts;
        let recorder = testkit::lin::Recorder::new();
        let start = std::sync::Barrier::new(scripts.len());
        std::thread::scope(|s| {
            for script in scripts.iter() {
                let mut rec = recorder.thread();
                let start = &start;
                s.spawn(move || {
                    let mut h = obj.register().expect("one slot per script");
                    start.wait();
                    for op in script {
                        if let Some(k) = *op {
                            let id = rec.invoke(testkit::models::CounterOp::Add(k));
                            let r = h.execute_mut(k);
                            rec.complete(id, testkit::models::CounterRet::Previous(r));
                        } else {
                            let id = rec.invoke(testkit::models::CounterOp::Get);
                            let r = h.execute(());
                            rec.complete(id, testkit::models::CounterRet::Value(r));
                        }
                    }
                });
            }
        });
        recorder.into_history()
    }};
}
pub(crate) use record_scripts;

/// Checks `history` against the counter model and the object's final value `last` against
/// the sum of every add in `scripts`.
pub(crate) fn check_counter(
    history: &testkit::lin::History<testkit::models::CounterOp, testkit::models::CounterRet>,
    scripts: &[Script],
    last: u64,
) -> Result<(), TestCaseError> {
    testkit::lin::check(testkit::models::Counter::default(), history)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let total: u64 = scripts.iter().flatten().flatten().sum();
    prop_assert_eq!(last, total);
    Ok(())
}
