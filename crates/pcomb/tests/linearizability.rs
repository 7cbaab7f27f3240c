//! Concurrent histories of both protocols, volatile and persistent (in a region), checked for
//! linearizability against `testkit`'s sequential counter model. Proptest picks the thread
//! count (2-4) and each thread's operations.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use pcomb::objects::Counter;
use pcomb::pmem::Region;
use pcomb::{PBComb, PWFComb};
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

/// Runs `scripts` on one thread each, through `run_op(handle, op)`, and checks the history.
macro_rules! check_object {
    ($obj:expr, $scripts:expr) => {{
        let obj = $obj;
        let recorder = Recorder::new();
        std::thread::scope(|s| {
            for script in &$scripts {
                let mut rec = recorder.thread();
                let obj = &obj;
                s.spawn(move || {
                    let mut h = obj.register().expect("one slot per script");
                    for op in script {
                        match *op {
                            Some(k) => {
                                let id = rec.invoke(CounterOp::Add(k));
                                let r = h.execute_mut(k);
                                rec.complete(id, CounterRet::Previous(r));
                            }
                            None => {
                                let id = rec.invoke(CounterOp::Get);
                                let r = h.execute(());
                                rec.complete(id, CounterRet::Value(r));
                            }
                        }
                    }
                });
            }
        });
        let history = recorder.into_history();
        check(CounterModel::default(), &history).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let total: u64 = $scripts.iter().flatten().flatten().sum();
        prop_assert_eq!(obj.register().expect("threads are done").execute(()), total);
    }};
}

fn region() -> Region<pcomb::NoPersist> {
    Region::anonymous(0xC0B, 1 << 16).expect("anonymous region")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn pbcomb_volatile_is_linearizable(s in scripts()) {
        check_object!(PBComb::new(Counter::default(), s.len()).expect("valid"), s);
    }

    #[test]
    fn pbcomb_in_region_is_linearizable(s in scripts()) {
        check_object!(PBComb::create(region(), Counter::default(), s.len()).expect("valid"), s);
    }

    #[test]
    fn pwfcomb_volatile_is_linearizable(s in scripts()) {
        check_object!(PWFComb::new(Counter::default(), s.len()).expect("valid"), s);
    }

    #[test]
    fn pwfcomb_in_region_is_linearizable(s in scripts()) {
        check_object!(PWFComb::create(region(), Counter::default(), s.len()).expect("valid"), s);
    }
}

/// A longer run with more contention than the proptest cases (4 threads on 2 cores), on a
/// file-backed region with real flushes.
#[test]
fn both_protocols_on_a_file_count_every_op() {
    let dir = std::env::temp_dir().join(format!("pcomb-lin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for pwf in [false, true] {
        let path = dir.join(format!("obj-{pwf}"));
        let _ = std::fs::remove_file(&path);
        let region = Region::create(&path, 0xC0B, 1 << 16).expect("file region");
        let scripts: Vec<Script> = vec![vec![Some(1); 500]; 4];
        let run = || -> Result<(), TestCaseError> {
            if pwf {
                check_object!(
                    PWFComb::create(region, Counter::default(), 4).expect("valid"),
                    scripts
                );
            } else {
                check_object!(
                    PBComb::create(region, Counter::default(), 4).expect("valid"),
                    scripts
                );
            }
            Ok(())
        };
        run().expect("linearizable, 2000 increments");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
