//! The recorder: thread ids, logical time, pending operations, and the
//! real-time order it captures between threads.

use std::sync::Barrier;
use testkit::lin::{check, EventKind, History, Recorder};
use testkit::models::{Register, RegisterOp, RegisterRet};

#[test]
fn clones_share_one_recording_and_thread_ids_count_up() {
    let recorder = Recorder::<u8, u8>::new();
    let other = recorder.clone();
    let ids: Vec<usize> = (0..3)
        .map(|i| {
            if i % 2 == 0 {
                recorder.thread()
            } else {
                other.thread()
            }
            .thread_id()
        })
        .collect();
    assert_eq!(ids, vec![0, 1, 2]);
    assert!(format!("{recorder:?}").contains("threads: 3"));
}

#[test]
fn events_are_gathered_in_time_order_across_threads() {
    let recorder = Recorder::new();
    let (mut a, mut b) = (recorder.thread(), recorder.thread());
    let x = a.invoke(RegisterOp::Write(1));
    let y = b.invoke(RegisterOp::Read);
    b.complete(y, RegisterRet::Value(0));
    a.complete(x, RegisterRet::Written);
    let h = recorder.into_history();
    let threads: Vec<usize> = h.events().iter().map(|e| e.thread).collect();
    assert_eq!(threads, vec![0, 1, 1, 0]);
    let times: Vec<u64> = h.events().iter().map(|e| e.time).collect();
    assert_eq!(times, vec![0, 1, 2, 3]);
    check(Register::new(0), &h).unwrap();
}

#[test]
fn an_uncompleted_operation_is_pending_in_the_history() {
    let recorder = Recorder::new();
    let mut rec = recorder.thread();
    let pending = rec.invoke(RegisterOp::Write(3));
    drop(pending);
    let h = recorder.into_history();
    assert_eq!(h.len(), 1);
    assert_eq!(h.events()[0].kind, EventKind::Invoke(RegisterOp::Write(3)));
    check(Register::new(0), &h).unwrap();
}

#[test]
fn a_thread_recorder_moves_into_a_spawned_thread() {
    let recorder = Recorder::new();
    let mut rec = recorder.thread();
    std::thread::spawn(move || {
        let id = rec.invoke(RegisterOp::Read);
        rec.complete(id, RegisterRet::Value(0));
    })
    .join()
    .unwrap();
    let h = recorder.into_history();
    assert_eq!(h, {
        let mut expected = History::new();
        expected
            .invoke(0, RegisterOp::Read)
            .respond(0, RegisterRet::Value(0));
        expected
    });
}

#[test]
fn synchronisation_between_threads_becomes_real_time_order() {
    // Thread 0's write completes before the barrier; thread 1 reads after
    // it. The recorded clock must order the write's response before the
    // read's invocation, so a read of the old value is caught.
    for _ in 0..50 {
        let recorder = Recorder::new();
        let barrier = Barrier::new(2);
        std::thread::scope(|s| {
            let (mut w, mut r) = (recorder.thread(), recorder.thread());
            let barrier = &barrier;
            s.spawn(move || {
                let id = w.invoke(RegisterOp::Write(1));
                w.complete(id, RegisterRet::Written);
                barrier.wait();
            });
            s.spawn(move || {
                barrier.wait();
                let id = r.invoke(RegisterOp::Read);
                r.complete(id, RegisterRet::Value(0));
            });
        });
        let h = recorder.into_history();
        let write_returned = h
            .events()
            .iter()
            .find(|e| e.thread == 0 && matches!(e.kind, EventKind::Return(_)));
        let read_invoked = h
            .events()
            .iter()
            .find(|e| e.thread == 1 && matches!(e.kind, EventKind::Invoke(_)));
        assert!(write_returned.unwrap().time < read_invoked.unwrap().time);
        assert!(check(Register::new(0), &h).is_err());
    }
}
