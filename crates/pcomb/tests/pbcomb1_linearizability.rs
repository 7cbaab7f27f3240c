//! Concurrent histories of `PBComb1` (volatile and in a region), checked for linearizability
//! against `testkit`'s sequential counter model. Its reads take no lock (they validate a copy
//! of the current record), so reads beside writes are what this checks most. Proptest picks the
//! thread count (2-4) and each thread's operations (20% reads).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use pcomb::objects::Counter;
use pcomb::pmem::{Persist, Region};
use pcomb::PBComb1;
use proptest::prelude::*;

mod lin_common;
use lin_common::{check_counter, record_scripts, scripts, Script};

/// Runs each script on its own thread and checks the recorded history and the final value.
fn check_history<P: Persist>(
    obj: &PBComb1<Counter, P>,
    scripts: &[Script],
) -> Result<(), TestCaseError> {
    let history = record_scripts!(obj, scripts);
    let last = obj.register().expect("threads are done").execute(());
    check_counter(&history, scripts, last)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn volatile_is_linearizable(s in scripts()) {
        check_history(&PBComb1::new(Counter::default(), s.len()).expect("valid"), &s)?;
    }

    #[test]
    fn in_region_is_linearizable(s in scripts()) {
        let region = Region::anonymous(0xC0B1, 1 << 16).expect("anonymous region");
        check_history(&PBComb1::create(region, Counter::default(), s.len()).expect("valid"), &s)?;
    }
}

/// More contention (4 threads on 2 cores, 500 operations each, a fifth of them reads) on a
/// file-backed region with real flushes.
#[test]
fn on_a_file_with_real_flushes() {
    let dir = std::env::temp_dir().join(format!("pcomb1-lin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("obj");
    let region = Region::create(&path, 0xC0B1, 1 << 16).expect("file region");
    let obj = PBComb1::create(region, Counter::default(), 4).expect("valid");
    let script: Script = (0..500).map(|i| (i % 5 != 0).then_some(1)).collect();
    check_history(&obj, &vec![script; 4]).expect("linearizable");
    drop(obj);
    let _ = std::fs::remove_dir_all(&dir);
}
