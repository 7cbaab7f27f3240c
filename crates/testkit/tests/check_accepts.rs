//! The checker accepts linearizable histories: hand-built overlapping ones,
//! ones with pending operations, and ones recorded from real threads running
//! a mutex-protected model.

use std::sync::Mutex;
use std::time::Instant;
use testkit::lin::{check, Checker, Event, EventKind, History, Model, Recorder};
use testkit::models::*;

/// A tiny deterministic generator (xorshift64), so tests need no RNG crate.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Runs `ops_per_thread` operations from `gen` on each of `threads` threads
/// against one mutex-protected `model`, recording everything; with
/// `leave_pending`, each thread's last operation runs but is never completed.
fn record_locked<M, G>(
    model: M,
    threads: usize,
    ops_per_thread: usize,
    leave_pending: bool,
    gen: G,
) -> History<M::Op, M::Ret>
where
    M: Model + Send,
    M::Op: Send,
    M::Ret: Send,
    G: Fn(&mut dyn FnMut() -> u64) -> M::Op + Sync,
{
    let shared = Mutex::new(model);
    let recorder = Recorder::new();
    std::thread::scope(|s| {
        for t in 0..threads {
            let mut rec = recorder.thread();
            let (shared, gen) = (&shared, &gen);
            s.spawn(move || {
                let mut next = rng(t as u64 + 1);
                for i in 0..ops_per_thread {
                    let op = gen(&mut next);
                    let id = rec.invoke(op.clone());
                    let ret = shared.lock().unwrap().step(&op);
                    if leave_pending && i + 1 == ops_per_thread {
                        drop(id); // took effect, never returned
                    } else {
                        rec.complete(id, ret);
                    }
                }
            });
        }
    });
    recorder.into_history()
}

/// Checks a recorded history and reports its size and checking time.
fn assert_linearizable<M: Model>(name: &str, init: M, h: &History<M::Op, M::Ret>) {
    let start = Instant::now();
    let lin = Checker::new()
        .check(init, h)
        .unwrap_or_else(|v| panic!("{name}: {v}"));
    let responses = h
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Return(_)))
        .count();
    assert!(
        lin.order.len() >= responses,
        "{name}: every completed op is linearized"
    );
    eprintln!(
        "{name}: {} events, {} states, {:?}",
        h.len(),
        lin.states_explored,
        start.elapsed()
    );
}

#[test]
fn overlapping_put_and_get_may_see_either_value() {
    for seen in [None, Some(1)] {
        let mut h = History::new();
        h.invoke(0, KvOp::Put(7, 1)).invoke(1, KvOp::Get(7));
        h.respond(1, KvRet::Get(seen)).respond(0, KvRet::Put(None));
        check(KvMap::new(), &h).unwrap_or_else(|v| panic!("Get saw {seen:?}: {v}"));
    }
}

#[test]
fn overlapping_enqueues_may_dequeue_in_either_order() {
    for (first, second) in [(1, 2), (2, 1)] {
        let mut h = History::new();
        h.invoke(0, QueueOp::Enqueue(1))
            .invoke(1, QueueOp::Enqueue(2));
        h.respond(0, QueueRet::Enqueued)
            .respond(1, QueueRet::Enqueued);
        h.invoke(0, QueueOp::Dequeue)
            .respond(0, QueueRet::Dequeued(Some(first)));
        h.invoke(1, QueueOp::Dequeue)
            .respond(1, QueueRet::Dequeued(Some(second)));
        check(Queue::new(), &h).unwrap();
    }
}

#[test]
fn overlapping_pops_split_the_stack_between_them() {
    let mut h = History::new();
    h.invoke(0, StackOp::Push(1)).respond(0, StackRet::Pushed);
    h.invoke(0, StackOp::Push(2)).respond(0, StackRet::Pushed);
    h.invoke(1, StackOp::Pop)
        .invoke(2, StackOp::Pop)
        .invoke(0, StackOp::Pop);
    h.respond(2, StackRet::Popped(Some(1)));
    h.respond(0, StackRet::Popped(None));
    h.respond(1, StackRet::Popped(Some(2)));
    check(Stack::new(), &h).unwrap();
}

#[test]
fn overlapping_adds_may_return_previous_values_in_either_order() {
    let mut h = History::new();
    h.invoke(0, CounterOp::Add(5)).invoke(1, CounterOp::Add(1));
    h.respond(0, CounterRet::Previous(1))
        .respond(1, CounterRet::Previous(0));
    h.invoke(2, CounterOp::Get).respond(2, CounterRet::Value(6));
    let lin = Checker::new().check(Counter::new(), &h).unwrap();
    assert_eq!(lin.order, vec![1, 0, 4], "Add(1) (event 1) must come first");
}

#[test]
fn overlapping_insert_and_delete_min_on_a_priority_queue() {
    let mut h = History::new();
    h.invoke(0, PqOp::Insert(5)).respond(0, PqRet::Inserted);
    h.invoke(0, PqOp::Insert(1))
        .invoke(1, PqOp::DeleteMin)
        .invoke(2, PqOp::FindMin);
    h.respond(1, PqRet::Deleted(Some(5)))
        .respond(2, PqRet::Min(Some(1)));
    h.respond(0, PqRet::Inserted);
    check(MinPq::new(), &h).unwrap();
}

#[test]
fn a_pending_operation_may_take_effect_or_not() {
    for seen in [None, Some(10)] {
        let mut h = History::new();
        h.invoke(0, KvOp::Put(1, 10)); // never returns
        h.invoke(1, KvOp::Get(1)).respond(1, KvRet::Get(seen));
        h.invoke(1, KvOp::Get(1)).respond(1, KvRet::Get(seen));
        let lin = Checker::new().check(KvMap::new(), &h).unwrap();
        assert_eq!(lin.order.contains(&0), seen.is_some());
    }
}

#[test]
fn equal_timestamps_overlap() {
    // The write returns at time 2 and the read is invoked at time 2: they
    // overlap, so the read may be linearized before the write.
    let ev = |thread, time, kind| Event { thread, time, kind };
    let h = History::from_events(vec![
        ev(0, 1, EventKind::Invoke(RegisterOp::Write(1))),
        ev(0, 2, EventKind::Return(RegisterRet::Written)),
        ev(1, 2, EventKind::Invoke(RegisterOp::Read)),
        ev(1, 3, EventKind::Return(RegisterRet::Value(0))),
    ]);
    check(Register::new(0), &h).unwrap();
}

#[test]
fn an_empty_history_is_linearizable() {
    check(KvMap::new(), &History::new()).unwrap();
}

#[test]
fn hundreds_of_fully_overlapping_rounds_check_quickly() {
    // 4 threads x 100 rounds; in each round all four operations overlap.
    let mut h = History::new();
    let mut model = KvMap::new();
    let mut next = rng(42);
    for _ in 0..100 {
        let ops: Vec<KvOp> = (0..4)
            .map(|_| match next() % 3 {
                0 => KvOp::Get(next() % 3),
                1 => KvOp::Put(next() % 3, next() % 5),
                _ => KvOp::Remove(next() % 3),
            })
            .collect();
        for (t, op) in ops.iter().enumerate() {
            h.invoke(t, op.clone());
        }
        // Linearize in reverse thread order; respond in thread order.
        let mut rets: Vec<KvRet> = ops.iter().rev().map(|op| model.step(op)).collect();
        rets.reverse();
        for (t, ret) in rets.into_iter().enumerate() {
            h.respond(t, ret);
        }
    }
    let start = Instant::now();
    let lin = Checker::new().check(KvMap::new(), &h).unwrap();
    assert_eq!(lin.order.len(), 400);
    assert!(
        lin.states_explored < 20_000,
        "explored {}",
        lin.states_explored
    );
    eprintln!(
        "400 overlapping ops: {} states, {:?}",
        lin.states_explored,
        start.elapsed()
    );
}

#[test]
fn recorded_kv_map_from_four_threads() {
    let h = record_locked(KvMap::new(), 4, 150, false, |next| match next() % 3 {
        0 => KvOp::Get(next() % 4),
        1 => KvOp::Put(next() % 4, next() % 8),
        _ => KvOp::Remove(next() % 4),
    });
    assert_eq!(h.len(), 1200);
    assert_linearizable("kv", KvMap::new(), &h);
}

#[test]
fn recorded_kv_map_with_a_pending_operation_per_thread() {
    let h = record_locked(KvMap::new(), 4, 100, true, |next| match next() % 2 {
        0 => KvOp::Get(next() % 3),
        _ => KvOp::Put(next() % 3, next() % 8),
    });
    assert_eq!(h.len(), 4 * 100 * 2 - 4);
    assert_linearizable("kv+pending", KvMap::new(), &h);
}

#[test]
fn recorded_counter_from_four_threads() {
    let h = record_locked(Counter::new(), 4, 150, false, |next| match next() % 4 {
        0 => CounterOp::Get,
        _ => CounterOp::Add(next() % 3),
    });
    assert_linearizable("counter", Counter::new(), &h);
}

#[test]
fn recorded_register_from_four_threads() {
    let h = record_locked(Register::new(0), 4, 150, true, |next| match next() % 2 {
        0 => RegisterOp::Read,
        _ => RegisterOp::Write(next() % 4),
    });
    assert_linearizable("register", Register::new(0), &h);
}

#[test]
fn recorded_stack_from_four_threads() {
    let h = record_locked(Stack::new(), 4, 150, false, |next| match next() % 2 {
        0 => StackOp::Pop,
        _ => StackOp::Push(next() % 16),
    });
    assert_linearizable("stack", Stack::new(), &h);
}

#[test]
fn recorded_queue_from_four_threads() {
    let h = record_locked(Queue::new(), 4, 150, false, |next| match next() % 2 {
        0 => QueueOp::Dequeue,
        _ => QueueOp::Enqueue(next() % 16),
    });
    assert_linearizable("queue", Queue::new(), &h);
}

#[test]
fn recorded_priority_queue_from_four_threads() {
    let h = record_locked(MinPq::new(), 4, 150, false, |next| match next() % 3 {
        0 => PqOp::DeleteMin,
        1 => PqOp::FindMin,
        _ => PqOp::Insert(next() % 16),
    });
    assert_linearizable("pq", MinPq::new(), &h);
}
