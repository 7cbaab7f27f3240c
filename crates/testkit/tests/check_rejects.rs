//! The checker rejects non-linearizable and ill-formed histories, explains
//! why, and reports an exhausted state budget as its own error.

use std::sync::{Barrier, Mutex};
use testkit::lin::{check, Checker, History, Malformation, Model, Recorder, Violation};
use testkit::models::*;

/// Unwraps a `NotLinearizable` report, failing the test on anything else.
fn not_linearizable<M: Model>(init: M, h: &History<M::Op, M::Ret>) -> Violation {
    match check(init, h) {
        Err(v @ Violation::NotLinearizable { .. }) => v,
        other => panic!("expected NotLinearizable, got {other:?}"),
    }
}

#[test]
fn stale_read_after_a_completed_write() {
    let mut h = History::new();
    h.invoke(0, KvOp::Put(7, 1)).respond(0, KvRet::Put(None));
    h.invoke(1, KvOp::Get(7)).respond(1, KvRet::Get(None));
    let v = not_linearizable(KvMap::new(), &h);
    let Violation::NotLinearizable {
        longest_prefix,
        state_after_prefix,
        unplaced,
        ..
    } = &v
    else {
        unreachable!()
    };
    assert_eq!(longest_prefix.len(), 1);
    assert_eq!(longest_prefix[0].op, "Put(7, 1)");
    assert_eq!(state_after_prefix, "KvMap { map: {7: 1} }");
    assert_eq!(unplaced.len(), 1);
    assert_eq!(unplaced[0].op.index, 2);
    assert_eq!(unplaced[0].model_ret, "Get(Some(1))");
    assert!(!unplaced[0].ret_matches);
    let report = v.to_string();
    for needle in [
        "not linearizable",
        "Put(7, 1)",
        "Get(None)",
        "model returns Get(Some(1))",
    ] {
        assert!(
            report.contains(needle),
            "{needle:?} missing from:\n{report}"
        );
    }
}

#[test]
fn lost_update_on_a_counter() {
    // Both adds report a consistent order, but a later read misses one.
    let mut h = History::new();
    h.invoke(0, CounterOp::Add(1)).invoke(1, CounterOp::Add(1));
    h.respond(0, CounterRet::Previous(0))
        .respond(1, CounterRet::Previous(1));
    h.invoke(2, CounterOp::Get).respond(2, CounterRet::Value(1));
    not_linearizable(Counter::new(), &h);
}

#[test]
fn lost_update_where_both_adds_saw_zero() {
    let mut h = History::new();
    h.invoke(0, CounterOp::Add(1)).invoke(1, CounterOp::Add(1));
    h.respond(0, CounterRet::Previous(0))
        .respond(1, CounterRet::Previous(0));
    let v = not_linearizable(Counter::new(), &h);
    let Violation::NotLinearizable {
        longest_prefix,
        unplaced,
        ..
    } = v
    else {
        unreachable!()
    };
    assert_eq!(longest_prefix.len(), 1);
    assert_eq!(unplaced[0].model_ret, "Previous(1)");
}

#[test]
fn queue_returning_items_out_of_fifo_order() {
    let h = History::sequential([
        (QueueOp::Enqueue(1), QueueRet::Enqueued),
        (QueueOp::Enqueue(2), QueueRet::Enqueued),
        (QueueOp::Dequeue, QueueRet::Dequeued(Some(2))),
    ]);
    let v = not_linearizable(Queue::new(), &h);
    eprintln!("{v}");
    assert!(
        v.to_string().contains("model returns Dequeued(Some(1))"),
        "{v}"
    );
}

#[test]
fn stack_pop_returning_an_item_twice() {
    let mut h = History::new();
    h.invoke(0, StackOp::Push(1)).respond(0, StackRet::Pushed);
    h.invoke(0, StackOp::Push(2)).respond(0, StackRet::Pushed);
    h.invoke(1, StackOp::Pop).invoke(2, StackOp::Pop);
    h.respond(1, StackRet::Popped(Some(2)))
        .respond(2, StackRet::Popped(Some(2)));
    not_linearizable(Stack::new(), &h);
}

#[test]
fn real_time_order_matters_where_sequential_consistency_would_not() {
    // Per-thread programs: t0 enqueues 1, t1 enqueues 2, t2 dequeues 2.
    // Sequential consistency only keeps each thread's order, so it allows
    // Enqueue(2), Enqueue(1), Dequeue -> 2 whatever the timing.
    // Linearizability also keeps real-time order: when Enqueue(1) returned
    // before Enqueue(2) was invoked, the dequeue must return 1.
    let mut sequential = History::new();
    sequential
        .invoke(0, QueueOp::Enqueue(1))
        .respond(0, QueueRet::Enqueued);
    sequential
        .invoke(1, QueueOp::Enqueue(2))
        .respond(1, QueueRet::Enqueued);
    sequential
        .invoke(2, QueueOp::Dequeue)
        .respond(2, QueueRet::Dequeued(Some(2)));
    not_linearizable(Queue::new(), &sequential);

    // The same per-thread programs with overlapping enqueues are accepted.
    let mut overlapping = History::new();
    overlapping
        .invoke(0, QueueOp::Enqueue(1))
        .invoke(1, QueueOp::Enqueue(2));
    overlapping
        .respond(0, QueueRet::Enqueued)
        .respond(1, QueueRet::Enqueued);
    overlapping
        .invoke(2, QueueOp::Dequeue)
        .respond(2, QueueRet::Dequeued(Some(2)));
    check(Queue::new(), &overlapping).unwrap();
}

#[test]
fn a_pending_write_cannot_take_effect_before_it_is_invoked() {
    let mut h = History::new();
    h.invoke(1, RegisterOp::Read)
        .respond(1, RegisterRet::Value(5));
    h.invoke(0, RegisterOp::Write(5)); // pending, but invoked after the read
    let v = not_linearizable(Register::new(0), &h);
    let Violation::NotLinearizable {
        completed_ops,
        longest_prefix,
        ..
    } = v
    else {
        unreachable!()
    };
    assert_eq!((completed_ops, longest_prefix.len()), (1, 0));
}

#[test]
fn a_pending_operation_cannot_return_a_wrong_value_later() {
    // The pending Put may take effect, but then a completed Get must agree.
    let mut h = History::new();
    h.invoke(0, KvOp::Put(1, 3));
    h.invoke(1, KvOp::Get(1)).respond(1, KvRet::Get(Some(4)));
    not_linearizable(KvMap::new(), &h);
}

#[test]
fn invoke_while_pending_is_ill_formed() {
    let mut h = History::new();
    h.invoke(3, RegisterOp::Read)
        .invoke(3, RegisterOp::Write(1));
    h.respond(3, RegisterRet::Written);
    assert_eq!(
        check(Register::new(0), &h),
        Err(Violation::IllFormed {
            thread: 3,
            event: 1,
            problem: Malformation::InvokeWhilePending { pending_event: 0 },
        })
    );
}

#[test]
fn a_second_response_is_ill_formed() {
    let mut h = History::new();
    h.invoke(0, RegisterOp::Read)
        .respond(0, RegisterRet::Value(0));
    h.respond(0, RegisterRet::Value(0));
    let err = check(Register::new(0), &h).unwrap_err();
    assert_eq!(
        err,
        Violation::IllFormed {
            thread: 0,
            event: 2,
            problem: Malformation::ReturnWithoutInvoke
        }
    );
    assert!(err.to_string().contains("thread 0, event 2"), "{err}");
}

#[test]
fn two_outstanding_operations_on_one_thread_recorder_are_ill_formed() {
    let recorder = Recorder::new();
    let mut rec = recorder.thread();
    let first = rec.invoke(StackOp::Push(1));
    let second = rec.invoke(StackOp::Pop);
    rec.complete(second, StackRet::Popped(None));
    rec.complete(first, StackRet::Pushed);
    let err = check(Stack::new(), &recorder.into_history()).unwrap_err();
    assert!(
        matches!(err, Violation::IllFormed { thread: 0, .. }),
        "{err}"
    );
}

#[test]
fn recorded_stale_reads_are_rejected() {
    // A broken map whose readers use a snapshot taken before any write.
    // The barrier makes every Put return before any Get is invoked.
    let live = Mutex::new(KvMap::new());
    let snapshot = KvMap::new();
    let barrier = Barrier::new(2);
    let recorder = Recorder::new();
    std::thread::scope(|s| {
        let mut writer = recorder.thread();
        let mut reader = recorder.thread();
        let (live, barrier) = (&live, &barrier);
        s.spawn(move || {
            let op = KvOp::Put(1, 1);
            let id = writer.invoke(op.clone());
            let ret = live.lock().unwrap().step(&op);
            writer.complete(id, ret);
            barrier.wait();
        });
        s.spawn(move || {
            barrier.wait();
            let op = KvOp::Get(1);
            let id = reader.invoke(op.clone());
            let ret = snapshot.clone().step(&op);
            reader.complete(id, ret);
        });
    });
    not_linearizable(KvMap::new(), &recorder.into_history());
}

/// `n` overlapping pushes of distinct values, then a pop of a value that was
/// never pushed: every order of every subset of pushes is a distinct state.
fn exhaustive_stack_history(n: u64) -> History<StackOp, StackRet> {
    let mut h = History::new();
    for t in 0..n {
        h.invoke(t as usize, StackOp::Push(t));
    }
    for t in 0..n {
        h.respond(t as usize, StackRet::Pushed);
    }
    h.invoke(0, StackOp::Pop)
        .respond(0, StackRet::Popped(Some(99)));
    h
}

#[test]
fn exhausting_the_state_budget_is_a_distinct_error() {
    let h = exhaustive_stack_history(14);
    let err = Checker::new()
        .max_states(10_000)
        .check(Stack::new(), &h)
        .unwrap_err();
    let Violation::StateLimit {
        limit,
        states_explored,
        completed_ops,
        longest_prefix_len,
    } = err
    else {
        panic!("expected StateLimit, got {err}")
    };
    assert_eq!(
        (limit, states_explored, completed_ops),
        (10_000, 10_000, 15)
    );
    assert_eq!(longest_prefix_len, 14);
    assert!(err.to_string().contains("may or may not be linearizable"));
}

#[test]
fn within_the_budget_the_same_shape_is_refuted() {
    // 5 pushes: sum over k of 5!/(5-k)! = 326 configurations, 325 non-empty.
    let h = exhaustive_stack_history(5);
    let err = Checker::new()
        .max_states(325)
        .check(Stack::new(), &h)
        .unwrap_err();
    let Violation::NotLinearizable {
        states_explored,
        unplaced,
        ..
    } = &err
    else {
        panic!("expected NotLinearizable, got {err}")
    };
    assert_eq!(*states_explored, 325);
    assert_eq!(unplaced.len(), 1);
    // One state fewer and the search must give up instead of answering.
    let err = Checker::new()
        .max_states(324)
        .check(Stack::new(), &h)
        .unwrap_err();
    assert!(
        matches!(err, Violation::StateLimit { limit: 324, .. }),
        "{err}"
    );
}

#[test]
fn violation_is_a_thread_safe_static_error() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<Violation>();
    let boxed: Box<dyn std::error::Error> = Box::new(Violation::IllFormed {
        thread: 1,
        event: 0,
        problem: Malformation::ReturnWithoutInvoke,
    });
    assert!(boxed
        .to_string()
        .contains("response with no outstanding invocation"));
}
