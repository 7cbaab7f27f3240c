//! Loom model of log reuse through a head published by *another* thread (`log.rs`, §5.6):
//! an appender that reuses a slot must see every replica's read of the slot's previous lap,
//! even when the head it checks was computed by a third thread. The chain is: the replica's
//! reads, then its Release store of its local tail; the head computer's Acquire load of that
//! local tail, then its AcqRel `fetch_max` of the head; the appender's Acquire load of the head,
//! then its write into the slot. A Relaxed head load breaks the chain, and loom's `UnsafeCell`
//! tracking reports the replica's read and the appender's overwrite as concurrent.
//!
//! Bounds: 3 threads, an 8-entry log, one lap; no thread spins (the appender tries once), so
//! the model is small: preemption bound 3 runs in about 0.1 s. (The Relaxed head load is caught
//! from bound 2; with 2 entries instead of 8 the appender's own head refresh, an AcqRel
//! read-modify-write of the head at every reservation, would hide it, which is why the earlier
//! models could not reach it.)

use loom::sync::Arc;
use loom::thread;

use crate::log::Log;

#[test]
fn reuse_through_a_head_published_by_another_thread_is_ordered_after_the_reads() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        // 8 entries: the head is refreshed every 2 (§5.6 low mark), so the appender's
        // reservation at index 8 crosses no refresh point and never touches the head itself.
        let log: Arc<Log<u32>> = Arc::new(Log::new(8, 2));
        assert_eq!(log.try_reserve(8), Ok(0));
        for idx in 0..8 {
            // SAFETY: indices 0..8 were reserved above, by this thread, each written once.
            unsafe { log.write(idx, idx as u32) };
        }
        // Replica 0 (this thread's) has consumed every entry.
        log.set_local_tail(0, 8);
        let reader = {
            let log = log.clone();
            thread::spawn(move || {
                // Replica 1 replays every entry, then records its progress.
                for idx in 0..8 {
                    assert!(log.is_filled(idx));
                    // SAFETY: `is_filled(idx)` was seen; replica 1's local tail is 0 <= idx
                    // until the store below, so the slot is not reused meanwhile.
                    assert_eq!(unsafe { log.read(idx, |v| *v) }, idx as u32);
                }
                log.set_local_tail(1, 8);
            })
        };
        let head = {
            let log = log.clone();
            thread::spawn(move || {
                log.advance_head();
            })
        };
        // One attempt, no spinning (loom explores every order): when the published head lets
        // the appender reuse slot 0, its overwrite must come after replica 1's read of it.
        if let Ok(start) = log.try_reserve(1) {
            assert_eq!(start, 8);
            // SAFETY: index 8 was reserved above by this thread and is written once.
            let previous = unsafe { log.write(8, 8) };
            assert_eq!(previous, Some(0));
        }
        reader.join().unwrap();
        head.join().unwrap();
    });
}
