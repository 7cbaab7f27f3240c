//! `PBComb1`'s persisted sequence numbers (format 2): a reopened handle continues its
//! thread's numbers and knows its last applied operation (format 1 restarted every handle at
//! `seq()` 0 or 1 and had no `last_applied`), also past the 16 bits the record keeps per
//! thread, where the `Base` word each thread persists every 2^15 operations completes them.
//! The crash tests with these checks at random crash points are in `pbcomb1_crash.rs`.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};

use pcomb::objects::Counter;
use pcomb::pmem::sim::{SimConfig, Simulated};
use pcomb::pmem::Region;
use pcomb::{PBComb1, Persist, Recovered};

mod sim_region;

const LAYOUT: u64 = 0x5043_4232;
/// `Base[q]` is persisted before operations number `k * STEP` (the crate's `BASE_STEP`).
const STEP: u64 = 1 << 15;

fn region(seed: u64) -> Region<Simulated> {
    let cfg = SimConfig::new(seed).evictions(0.0);
    sim_region::simulated(LAYOUT, 1 << 13, cfg).expect("region")
}

/// The object reopened from what `obj`'s domain persisted (a crash now).
fn crash_and_reopen(obj: PBComb1<Counter, Simulated>) -> PBComb1<Counter, Simulated> {
    let image = obj.into_region().expect("in a region").persist().crash();
    let region = sim_region::from_image(&image, LAYOUT, SimConfig::new(1)).expect("image");
    PBComb1::open(region).expect("reopens")
}

#[test]
fn reopened_handles_continue_their_numbers() {
    let obj = PBComb1::create(region(3), Counter::default(), 3).expect("fits");
    for (t, ops) in [(0, 5u64), (1, 2), (2, 0)] {
        let mut h = obj.register_as(t).expect("slot");
        for _ in 0..ops {
            h.execute_mut(10 + t as u64);
        }
        assert_eq!(h.seq(), ops);
    }
    let obj = crash_and_reopen(obj);
    for (t, ops, ret) in [(0, 5, 40), (1, 2, 61), (2, 0, 0)] {
        let mut h = obj.register_as(t).expect("slot");
        assert_eq!(h.seq(), ops, "thread {t}: seq after reopen");
        assert_eq!(h.last_applied(), (ops, ret), "thread {t}: last applied");
        if ops > 0 {
            // The last operation took effect; the next number had not.
            assert_eq!(h.recover(10 + t as u64, ops), Recovered::Applied(ret));
            assert!(matches!(
                h.recover(10 + t as u64, ops + 1),
                Recovered::Reexecuted(_)
            ));
            assert_eq!(h.seq(), ops + 1);
        }
    }
}

/// Past 2^16 operations the record's `Seq[q]` has wrapped; the persisted `Base[q]` gives the
/// full number back.
#[test]
fn numbers_survive_past_the_16_bit_window() {
    let obj = PBComb1::create(region(4), Counter::default(), 2).expect("fits");
    let n = 2 * STEP + STEP / 2 + 7; // 81,927: Seq = n mod 2^16 = 16,391
    let mut h = obj.register_as(1).expect("slot");
    for _ in 0..n {
        h.execute_mut(1);
    }
    drop(h);
    let obj = crash_and_reopen(obj);
    let h = obj.register_as(1).expect("slot");
    assert_eq!(h.seq(), n, "seq after reopen");
    assert_eq!(h.last_applied(), (n, n - 1));
    assert_eq!(obj.register_as(0).expect("slot").seq(), 0);
}

/// `Base[q]` is written back and fenced (psync) before the operation it numbers is announced:
/// a one-word write-back every `STEP` operations, each followed at once by a psync (the next
/// event would otherwise be the operation's record write-back, and a crash after a pass of
/// another combiner could keep the operation without its base).
#[test]
fn each_base_is_durable_before_its_operation() {
    #[derive(Debug, Clone, Default)]
    struct Log(Arc<Mutex<Vec<usize>>>); // write-back lengths, 0 for a psync
    impl Persist for Log {
        unsafe fn pwb(&self, _addr: *const u8, len: usize) {
            self.0.lock().expect("log").push(len);
        }
        fn pfence(&self) {}
        fn psync(&self) {
            self.0.lock().expect("log").push(0);
        }
    }
    let log = Log::default();
    let obj = PBComb1::with_persist(Counter::default(), 1, log.clone()).expect("fits");
    log.0.lock().expect("log").clear();
    let mut h = obj.register().expect("slot");
    for _ in 0..2 * STEP + 1 {
        h.execute_mut(1);
    }
    let events = log.0.lock().expect("log").clone();
    let bases: Vec<usize> = (0..events.len()).filter(|&i| events[i] == 8).collect();
    assert_eq!(bases.len(), 2, "one Base write-back per {STEP} operations");
    for i in bases {
        assert_eq!(
            events.get(i + 1),
            Some(&0),
            "Base[0] written back at event {i} without a psync next"
        );
    }
}
