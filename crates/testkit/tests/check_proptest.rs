//! Property tests: sequential executions of the key-value model are accepted
//! and any single corrupted response is rejected; interleaved executions that
//! are linearizable by construction are accepted.

use proptest::prelude::*;
use testkit::lin::{check, Checker, History, Model, Violation};
use testkit::models::{KvMap, KvOp, KvRet};

/// Operations over a few keys and values, so reads often hit.
fn kv_op() -> impl Strategy<Value = KvOp> {
    prop_oneof![
        (0..4u64).prop_map(KvOp::Get),
        (0..4u64, 0..6u64).prop_map(|(k, v)| KvOp::Put(k, v)),
        (0..4u64).prop_map(KvOp::Remove),
    ]
}

/// A strictly sequential history (each operation returns before the next is
/// invoked) spread over up to four threads, with the model's responses.
fn sequential_history(ops: &[(usize, KvOp)]) -> (History<KvOp, KvRet>, Vec<KvRet>) {
    let mut model = KvMap::new();
    let mut h = History::new();
    let mut rets = Vec::new();
    for (thread, op) in ops {
        let ret = model.step(op);
        h.invoke(*thread, op.clone()).respond(*thread, ret.clone());
        rets.push(ret);
    }
    (h, rets)
}

/// A different response of the same kind as `ret`.
fn corrupt(ret: &KvRet, salt: u64) -> KvRet {
    let bump = |v: Option<u64>| match v {
        None => Some(salt % 6),
        Some(x) if salt.is_multiple_of(2) => Some(x + 1 + salt % 5),
        Some(_) => None,
    };
    match *ret {
        KvRet::Get(v) => KvRet::Get(bump(v)),
        KvRet::Put(v) => KvRet::Put(bump(v)),
        KvRet::Remove(v) => KvRet::Remove(bump(v)),
    }
}

/// One thread of a simulated concurrent execution.
enum Phase {
    Idle,
    /// Invoked, not yet taken effect.
    Invoked(KvOp),
    /// Taken effect with this result, not yet returned.
    Effected(KvRet),
}

/// Simulates `threads` threads: each `schedule` entry advances one thread by
/// one phase (invoke, take effect on the model, respond). Every history this
/// produces is linearizable: the effect points are a linearization. Threads
/// left mid-operation at the end are pending.
fn interleaved_history(
    threads: usize,
    schedule: &[usize],
    mut ops: impl Iterator<Item = KvOp>,
) -> History<KvOp, KvRet> {
    let mut model = KvMap::new();
    let mut phases: Vec<Phase> = (0..threads).map(|_| Phase::Idle).collect();
    let mut h = History::new();
    for &pick in schedule {
        let t = pick % threads;
        phases[t] = match std::mem::replace(&mut phases[t], Phase::Idle) {
            Phase::Idle => match ops.next() {
                Some(op) => {
                    h.invoke(t, op.clone());
                    Phase::Invoked(op)
                }
                None => Phase::Idle,
            },
            Phase::Invoked(op) => Phase::Effected(model.step(&op)),
            Phase::Effected(ret) => {
                h.respond(t, ret);
                Phase::Idle
            }
        };
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn sequential_kv_executions_are_accepted(
        ops in prop::collection::vec((0..4usize, kv_op()), 0..200),
    ) {
        let (h, _) = sequential_history(&ops);
        let lin = Checker::new().check(KvMap::new(), &h);
        prop_assert!(lin.is_ok(), "{}", lin.unwrap_err());
        // A sequential history has exactly one linearization: its own order.
        let order = lin.unwrap().order;
        prop_assert_eq!(order, (0..ops.len()).map(|i| 2 * i).collect::<Vec<_>>());
    }

    #[test]
    fn one_corrupted_response_in_a_sequential_history_is_rejected(
        ops in prop::collection::vec((0..4usize, kv_op()), 1..200),
        victim in any::<prop::sample::Index>(),
        salt in any::<u64>(),
    ) {
        let (_, mut rets) = sequential_history(&ops);
        let victim = victim.index(ops.len());
        let bad = corrupt(&rets[victim], salt);
        prop_assert_ne!(&bad, &rets[victim]);
        rets[victim] = bad;
        let mut h = History::new();
        for ((thread, op), ret) in ops.iter().zip(rets) {
            h.invoke(*thread, op.clone()).respond(*thread, ret);
        }
        match check(KvMap::new(), &h) {
            Err(Violation::NotLinearizable { longest_prefix, unplaced, .. }) => {
                // Everything before the corrupted response is linearizable.
                prop_assert_eq!(longest_prefix.len(), victim);
                prop_assert_eq!(unplaced.len(), 1);
                prop_assert_eq!(unplaced[0].op.index, 2 * victim);
            }
            other => prop_assert!(false, "expected NotLinearizable, got {:?}", other),
        }
    }

    #[test]
    fn interleaved_kv_executions_are_accepted(
        threads in 2..=4usize,
        schedule in prop::collection::vec(0..4usize, 0..600),
        ops in prop::collection::vec(kv_op(), 0..200),
    ) {
        let h = interleaved_history(threads, &schedule, ops.into_iter());
        let lin = Checker::new().check(KvMap::new(), &h);
        prop_assert!(lin.is_ok(), "{}", lin.unwrap_err());
    }
}
