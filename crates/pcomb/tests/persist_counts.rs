//! Persistence instructions per operation (one thread, so every operation is its own pass),
//! counted by `pmem::stats` (a count, independent of load): the per-thread sequence numbers of
//! format 2 (`Seq[q]` in the record) cost none. The table printed (`--nocapture`) is the
//! record's before/after comparison in the README.

mod sim_region;

use pcomb::objects::{AtomicFloat, Counter};
use pcomb::pmem;
use pcomb::pmem::sim::SimConfig;
use pcomb::{PBComb, PWFComb, PWFComb1};

const OPS: u64 = 100;

/// pwb, pfence, psync per operation for `max_threads` slots, one thread running.
fn per_op<F: FnMut()>(mut op: F) -> (f64, f64, f64) {
    pmem::reset_stats();
    for _ in 0..OPS {
        op();
    }
    let s = pmem::stats();
    let n = OPS as f64;
    (s.pwbs as f64 / n, s.pfences as f64 / n, s.psyncs as f64 / n)
}

fn counts(max_threads: usize) -> [(f64, f64, f64); 4] {
    let region = || sim_region::simulated(0xC0, 1 << 18, SimConfig::new(1)).expect("region");
    let c = PBComb::create(region(), Counter::default(), max_threads).expect("room");
    let mut h = c.register().expect("slot");
    let pb_counter = per_op(|| {
        h.execute_mut(1);
    });
    let c = PBComb::create(region(), AtomicFloat::new(1.0), max_threads).expect("room");
    let mut h = c.register().expect("slot");
    let pb_float = per_op(|| {
        h.execute_mut(1.0f64.to_bits());
    });
    let c = PWFComb::create(region(), Counter::default(), max_threads).expect("room");
    let mut h = c.register().expect("slot");
    let pwf_counter = per_op(|| {
        h.execute_mut(1);
    });
    let c = PWFComb::create(region(), AtomicFloat::new(1.0), max_threads).expect("room");
    let mut h = c.register().expect("slot");
    let pwf_float = per_op(|| {
        h.execute_mut(1.0f64.to_bits());
    });
    [pb_counter, pb_float, pwf_counter, pwf_float]
}

#[test]
fn one_record_line_and_the_index_per_pass_up_to_4_threads() {
    for t in [1, 2, 3, 4, 8, 16] {
        let c = counts(t);
        eprintln!(
            "max_threads {t:2}: pwb/pfence/psync per op: PBComb counter {:?}, AtomicFloat {:?}; \
             PWFComb counter {:?}, AtomicFloat {:?}",
            c[0], c[1], c[2], c[3]
        );
        if t <= 4 {
            // One line of record + the index word; one pfence, one psync.
            for x in c {
                assert_eq!(x, (2.0, 1.0, 1.0), "max_threads {t}");
            }
        }
    }
}

/// PWFComb1 (stamped records): one write-back of the record and one psync per install, no
/// pfence and no write-back of `S`; the record is two words longer than PWFComb's, so the
/// AtomicFloat's spans one line up to 2 threads (the counter's too) and two at 3-4.
#[test]
fn pwfcomb1_one_record_write_back_and_one_psync_per_pass() {
    for t in [1, 2, 3, 4, 8, 16] {
        let region = || sim_region::simulated(0xC0, 1 << 18, SimConfig::new(1)).expect("region");
        let c = PWFComb1::create(region(), Counter::default(), t).expect("room");
        let mut h = c.register().expect("slot");
        let counter = per_op(|| {
            h.execute_mut(1);
        });
        let c = PWFComb1::create(region(), AtomicFloat::new(1.0), t).expect("room");
        let mut h = c.register().expect("slot");
        let float = per_op(|| {
            h.execute_mut(1.0f64.to_bits());
        });
        eprintln!(
            "max_threads {t:2}: PWFComb1 pwb/pfence/psync per op: counter {counter:?}, \
             AtomicFloat {float:?}"
        );
        let lines = if t <= 2 { 1.0 } else { 2.0 };
        if t <= 4 {
            assert_eq!(counter, (lines, 0.0, 1.0), "max_threads {t}");
            assert_eq!(float, (lines, 0.0, 1.0), "max_threads {t}");
        }
    }
}
