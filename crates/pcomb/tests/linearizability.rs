//! Concurrent histories of both protocols, volatile and persistent (in a region), checked for
//! linearizability against `testkit`'s sequential counter model. Proptest picks the thread
//! count (2-4) and each thread's operations.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use pcomb::objects::Counter;
use pcomb::pmem::Region;
use pcomb::{PBComb, PWFComb};
use proptest::prelude::*;

mod lin_common;
use lin_common::{check_counter, record_scripts, scripts, Script};

/// Runs `scripts` on one thread each (started together) and checks the history and the total.
macro_rules! check_object {
    ($obj:expr, $scripts:expr) => {{
        let obj = $obj;
        let history = record_scripts!(obj, $scripts);
        let last = obj.register().expect("threads are done").execute(());
        check_counter(&history, &$scripts, last)?;
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
