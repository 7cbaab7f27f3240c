//! Loom model of a head refresh racing with a join (`Log::join`, `Log::advance_head`): a
//! replica that joins *below* the place of the replica it copied (a dormant replica woken from
//! a live one in a higher place, `nr/dormancy.rs`) must not be passed by a head computed from a
//! scan that read its place before the join and the source's local tail after the source moved
//! on. The scan reads places upwards, so without the `joins` count it can read place 0 as
//! `NO_REPLICA`, then place 1 past the join index, and store a head past the joined replica:
//! appenders would then overwrite entries it has not replayed.
//!
//! Bounds: 2 threads, no spinning; exhaustive at loom's default preemption bound.

use loom::sync::Arc;
use loom::thread;

use crate::log::Log;

#[test]
fn a_head_refresh_never_passes_a_replica_joining_below_its_source() {
    loom::model(|| {
        // Places 0-2; place 0 out of the log (dormant), places 1 and 2 at index 1.
        let log: Arc<Log<u32>> = Arc::new(Log::with_growth(4, 4, 3, 3));
        log.retire(0);
        log.set_local_tail(1, 1);
        log.set_local_tail(2, 1);
        let scanner = {
            let log = log.clone();
            thread::spawn(move || log.advance_head())
        };
        // The waker: place 0 joins at its source's (place 1) local tail, 1; then the source,
        // its lock given back, moves on (in the real protocol another thread, ordered after
        // this one by the source's combiner lock).
        log.join(0, 1);
        log.set_local_tail(1, 3);
        log.set_local_tail(2, 3);
        let head = scanner.join().unwrap();
        assert!(head <= 1, "the head passed the joined replica: {head}");
    });
}
