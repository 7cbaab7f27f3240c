//! Concurrent histories of NR objects, recorded and checked for linearizability against the
//! sequential models of `testkit`: proptest picks 2-4 threads, 1-4 replicas, a small log (so it
//! wraps) and a random mix of reads and writes over a few keys (so operations conflict); KV
//! objects also try their writes as reads first in half of the cases (`Builder::writes_as_reads`).

// Integration tests drive the crate from real std threads; the loom-shim rule of clippy.toml
// applies to the library, not to its callers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::Barrier;

use common::{Kv, KvWrite, Stack};
use nr_core::{Dispatch, NodeReplicated, ThreadHandle};
use proptest::prelude::*;
use testkit::models::{KvMap, KvOp, KvRet, StackOp, StackRet};
use testkit::{check, Recorder};

const CASES: u32 = 200;

fn kv_op() -> impl Strategy<Value = KvOp> {
    prop_oneof![
        4 => (0u64..4).prop_map(KvOp::Get),
        4 => (0u64..4, 1u64..100).prop_map(|(k, v)| KvOp::Put(k, v)),
        1 => (0u64..4).prop_map(KvOp::Remove),
    ]
}

fn stack_op() -> impl Strategy<Value = StackOp> {
    prop_oneof![
        3 => (1u64..1000).prop_map(StackOp::Push),
        2 => Just(StackOp::Pop),
    ]
}

/// Runs each thread's program against one NR object built from `init`, recording every call;
/// `apply` performs one model operation through a thread's handle and returns the response in
/// the model's terms.
fn run<D, Op, Ret>(
    replicas: usize,
    writes_as_reads: bool,
    log: usize,
    programs: &[Vec<Op>],
    init: impl Fn() -> D + Send + Sync,
    apply: impl Fn(&mut ThreadHandle<'_, D>, &Op) -> Ret + Sync,
) -> testkit::History<Op, Ret>
where
    D: Dispatch + Send + Sync,
    Op: Clone + Send + Sync,
    Ret: Clone + Send,
{
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .log_size(log)
        .threads_per_replica(4)
        .writes_as_reads(writes_as_reads)
        .build(|_| init())
        .expect("valid configuration");
    let recorder = Recorder::new();
    let start = Barrier::new(programs.len());
    std::thread::scope(|s| {
        for (t, program) in programs.iter().enumerate() {
            let (nr, start, apply) = (&nr, &start, &apply);
            let mut rec = recorder.thread();
            s.spawn(move || {
                let mut h = nr.register(t % replicas).expect("slot available");
                start.wait();
                for op in program {
                    let id = rec.invoke(op.clone());
                    let ret = apply(&mut h, op);
                    rec.complete(id, ret);
                }
            });
        }
    });
    recorder.into_history()
}

fn run_kv(
    replicas: usize,
    writes_as_reads: bool,
    log: usize,
    programs: &[Vec<KvOp>],
) -> testkit::History<KvOp, KvRet> {
    run(
        replicas,
        writes_as_reads,
        log,
        programs,
        Kv::default,
        |h, op| match *op {
            KvOp::Get(k) => KvRet::Get(h.execute(k).unwrap()),
            KvOp::Put(k, v) => KvRet::Put(h.execute_mut(KvWrite::Put(k, v)).unwrap()),
            KvOp::Remove(k) => KvRet::Remove(h.execute_mut(KvWrite::Remove(k)).unwrap()),
        },
    )
}

fn run_stack(
    replicas: usize,
    log: usize,
    programs: &[Vec<StackOp>],
) -> testkit::History<StackOp, StackRet> {
    run(
        replicas,
        false,
        log,
        programs,
        Stack::default,
        |h, op| match *op {
            StackOp::Push(v) => {
                h.execute_mut(Some(v)).unwrap();
                StackRet::Pushed
            }
            StackOp::Pop => StackRet::Popped(h.execute_mut(None).unwrap()),
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn kv_histories_are_linearizable(
        replicas in 1usize..=4,
        writes_as_reads in any::<bool>(),
        log in prop::sample::select(vec![4usize, 8, 64]),
        programs in prop::collection::vec(prop::collection::vec(kv_op(), 5..40), 2..=4),
    ) {
        let history = run_kv(replicas, writes_as_reads, log, &programs);
        if let Err(v) = check(KvMap::new(), &history) {
            panic!("{replicas} replicas, log {log}, writes as reads {writes_as_reads}: {v}");
        }
    }

    #[test]
    fn stack_histories_are_linearizable(
        replicas in 1usize..=4,
        log in prop::sample::select(vec![4usize, 8, 64]),
        programs in prop::collection::vec(prop::collection::vec(stack_op(), 5..30), 2..=4),
    ) {
        let history = run_stack(replicas, log, &programs);
        if let Err(v) = check(testkit::models::Stack::new(), &history) {
            panic!("{replicas} replicas, log {log}: {v}");
        }
    }
}
