//! Concurrent histories of `PBStack`, `PWFStack`, `PBQueue`, `PWFQueue` and `PBHeap`, volatile and in a region, checked
//! for linearizability against `testkit`'s `Stack`, `Queue` and `MinPq` models. Proptest picks
//! the thread count (2-4), each thread's script and the options (elimination, recycling); after
//! each run the structure is audited (list well formed, no node leaked or aliased).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod struct_common;

use pcomb::pmem::Region;
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};
use pcomb::NoPersist;
use proptest::prelude::*;
use struct_common::{scripts, Subject, HEAP_CAP};
use testkit::lin::{check, Model, Recorder};

type Op<S> = <<S as Subject>::M as Model>::Op;

fn run_and_check<S: Subject>(mut obj: S, script: &[Vec<Op<S>>]) -> Result<(), TestCaseError>
where
    Op<S>: Send + Sync,
    <S::M as Model>::Ret: Send,
{
    let recorder = Recorder::new();
    std::thread::scope(|s| {
        for (t, ops) in script.iter().enumerate() {
            let (obj, recorder) = (&obj, recorder.clone());
            s.spawn(move || {
                let mut rec = recorder.thread();
                let mut h = obj.handle(t);
                for op in ops {
                    let id = rec.invoke(op.clone());
                    let ret = S::run(&mut h, op);
                    rec.complete(id, ret);
                }
            });
        }
    });
    check(S::model(), &recorder.into_history()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    obj.audit().map_err(TestCaseError::fail)?;
    Ok(())
}

fn case<S: Subject<P = NoPersist>>(
    seed: u64,
    threads: usize,
    ops: usize,
    o: u8,
    in_region: bool,
) -> Result<(), TestCaseError>
where
    Op<S>: Send + Sync,
    <S::M as Model>::Ret: Send,
{
    let options = Options {
        elimination: o & 1 != 0,
        recycling: o & 2 != 0,
    };
    let script = scripts::<S>(seed, threads, ops);
    let capacity = (threads * ops) as u32;
    let obj = if in_region {
        let region = Region::anonymous(0x11, 1 << 17).expect("anonymous region");
        S::create(region, capacity, threads, options)
    } else {
        S::heap_backed(capacity, threads, options, NoPersist)
    };
    run_and_check(obj, &script)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn pbstack_is_linearizable(seed: u64, threads in 2usize..=4, ops in 1usize..12, o in 0u8..4, r: bool) {
        case::<PBStack>(seed, threads, ops, o, r)?;
    }

    #[test]
    fn pwfstack_is_linearizable(seed: u64, threads in 2usize..=4, ops in 1usize..12, o in 0u8..4, r: bool) {
        case::<PWFStack>(seed, threads, ops, o, r)?;
    }

    #[test]
    fn pbqueue_is_linearizable(seed: u64, threads in 2usize..=4, ops in 1usize..12, o in 0u8..4, r: bool) {
        case::<PBQueue>(seed, threads, ops, o, r)?;
    }

    #[test]
    fn pwfqueue_is_linearizable(seed: u64, threads in 2usize..=4, ops in 1usize..12, o in 0u8..4, r: bool) {
        case::<PWFQueue>(seed, threads, ops, o, r)?;
    }

    #[test]
    fn pbheap_is_linearizable(seed: u64, threads in 2usize..=4, ops in 1usize..12, r: bool) {
        case::<PBHeap<HEAP_CAP>>(seed, threads, ops, 0, r)?;
    }
}

/// A longer, more contended run per structure (`PBStack`, `PBQueue`, `PWFQueue`; 4 threads on
/// 2 cores, 300 ops each): too long for the exhaustive checker, so it checks conservation
/// instead: every value pushed or enqueued is popped or dequeued exactly once, and a final
/// drain leaves nothing.
#[test]
fn long_runs_conserve_values() {
    let threads = 4;
    let per = 300u64;
    for recycling in [true, false] {
        let o = Options {
            elimination: true,
            recycling,
        };
        let stack =
            PBStack::with_options(if recycling { 64 } else { 4 * 300 }, threads, o).expect("valid");
        let queue =
            PBQueue::with_options(if recycling { 64 } else { 4 * 300 }, threads, o).expect("valid");
        // PWFQueue reuses no node while it runs: a chunk per thread for every value of the run.
        let wfq = PWFQueue::with_options(4 * 300, threads, o).expect("valid");
        let got: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let (stack, queue, wfq) = (&stack, &queue, &wfq);
                    s.spawn(move || {
                        let mut sh = stack.register().expect("slot");
                        let mut qh = queue.register().expect("slot");
                        let mut wh = wfq.register().expect("slot");
                        let mut got = Vec::new();
                        for i in 0..per {
                            let v = t << 32 | i;
                            sh.push(v).expect("at most 4 values in flight");
                            got.extend(sh.pop());
                            qh.enqueue(v).expect("at most 4 values in flight");
                            got.extend(qh.dequeue());
                            wh.enqueue(v).expect("room for every value");
                            got.extend(wh.dequeue());
                        }
                        got
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        let mut all: Vec<u64> = got.into_iter().flatten().collect();
        let mut sh = stack.register().expect("slot");
        let mut qh = queue.register().expect("slot");
        all.extend(std::iter::from_fn(|| sh.pop()));
        all.extend(std::iter::from_fn(|| qh.dequeue()));
        let mut wh = wfq.register().expect("slot");
        all.extend(std::iter::from_fn(|| wh.dequeue()));
        drop(wh);
        all.sort_unstable();
        let mut want: Vec<u64> = (0..threads as u64)
            .flat_map(|t| (0..per).map(move |i| t << 32 | i))
            .flat_map(|v| [v, v, v])
            .collect();
        want.sort_unstable();
        assert_eq!(
            all, want,
            "recycling {recycling}: values lost or duplicated"
        );
        let mut wfq = wfq;
        wfq.audit().expect("PWFQueue well formed after the run");
    }
}

/// `PWFStack` under the same load as `long_runs_conserve_values` (push-pop pairs, 4 threads on
/// 2 cores, 300 pairs each), with and without recycling and elimination. Each thread's chunk
/// holds every value of the run, so no push finds its combiner out of nodes.
#[test]
fn pwfstack_long_runs_conserve_values() {
    let threads = 4;
    let per = 300u64;
    for o in 0..4u8 {
        let opts = Options {
            elimination: o & 1 != 0,
            recycling: o & 2 != 0,
        };
        let stack = PWFStack::with_options(4 * 300, threads, opts).expect("valid");
        let got: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let stack = &stack;
                    s.spawn(move || {
                        let mut h = stack.register().expect("slot");
                        let mut got = Vec::new();
                        for i in 0..per {
                            h.push(t << 32 | i).expect("room for every value");
                            got.extend(h.pop());
                        }
                        got
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        let mut all: Vec<u64> = got.into_iter().flatten().collect();
        let mut h = stack.register().expect("slot");
        all.extend(std::iter::from_fn(|| h.pop()));
        drop(h);
        all.sort_unstable();
        let want: Vec<u64> = (0..threads as u64)
            .flat_map(|t| (0..per).map(move |i| t << 32 | i))
            .collect();
        assert_eq!(all, want, "{opts:?}: values lost or duplicated");
        let mut stack = stack;
        stack.audit().expect("well formed after the run");
    }
}
