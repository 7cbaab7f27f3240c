//! `VolatilePBComb` over seqds's `HashMapKv` (the workspace's `HashMap`-based map, not `Pod`,
//! which `PBComb` and `PWFComb` refuse): sequential runs against testkit's map model
//! (proptest), concurrent histories checked for linearizability (threads started in lockstep,
//! the share of overlapping operations reported and required), and poisoning.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::Barrier;

use pcomb::{Dispatch, Poisoned, VolatilePBComb, VolatilePBCombHandle};
use proptest::prelude::*;
use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
use testkit::lin::{check, Model, Recorder};
use testkit::models::{KvMap, KvOp, KvRet};

/// The model's `op` through handle `h`: `Get` as a read (`execute`), the others as writes;
/// the response in the model's terms.
fn run(h: &mut VolatilePBCombHandle<'_, HashMapKv>, op: &KvOp) -> KvRet {
    match *op {
        KvOp::Get(k) => match h.execute(MapRead::Get(k)) {
            MapResponse::Get(v) => KvRet::Get(v),
            other => panic!("Get answered {other:?}"),
        },
        KvOp::Put(k, v) => match h.execute_mut(MapWrite::Put(k, v)) {
            MapResponse::Put(old) => KvRet::Put(old),
            other => panic!("Put answered {other:?}"),
        },
        KvOp::Remove(k) => match h.execute_mut(MapWrite::Remove(k)) {
            MapResponse::Removed(old) => KvRet::Remove(old),
            other => panic!("Remove answered {other:?}"),
        },
    }
}

fn op() -> impl Strategy<Value = KvOp> {
    prop_oneof![
        (0u64..8).prop_map(KvOp::Get),
        (0u64..8, 0u64..100).prop_map(|(k, v)| KvOp::Put(k, v)),
        (0u64..8).prop_map(KvOp::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every response equals the sequential model's, through two handles taking turns.
    #[test]
    fn a_hashmap_behaves_as_the_sequential_map(ops in prop::collection::vec(op(), 1..80)) {
        let obj = VolatilePBComb::new(HashMapKv::new(), 2).expect("valid");
        let mut hs = [obj.register().expect("slot"), obj.register().expect("slot")];
        let mut model = KvMap::new();
        for (i, op) in ops.iter().enumerate() {
            prop_assert_eq!(run(&mut hs[i % 2], op), model.step(op), "op {} = {:?}", i, op);
        }
        let writes = ops.iter().filter(|o| !matches!(o, KvOp::Get(_))).count() as u64;
        prop_assert_eq!(hs[0].seq() + hs[1].seq(), writes);
    }
}

/// Concurrent histories of 3 threads (started together at a barrier, 16 operations each on 4
/// keys), each checked against the map model; the share of operations that overlapped
/// another thread's is reported, and must not be 0 (a history without overlap proves
/// nothing about the protocol).
#[test]
fn concurrent_histories_are_linearizable() {
    const ROUNDS: u64 = 60;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut overlap, mut ops) = (0.0, 0usize);
    for round in 0..ROUNDS {
        let scripts: Vec<Vec<KvOp>> = (0..3)
            .map(|_| {
                (0..16)
                    .map(|_| {
                        let (r, k) = (next(), next() % 4);
                        match r % 3 {
                            0 => KvOp::Get(k),
                            1 => KvOp::Put(k, r % 1000),
                            _ => KvOp::Remove(k),
                        }
                    })
                    .collect()
            })
            .collect();
        let obj = VolatilePBComb::new(HashMapKv::new(), 3).expect("valid");
        let recorder = Recorder::new();
        let start = Barrier::new(3);
        std::thread::scope(|s| {
            for script in &scripts {
                let (obj, start, mut rec) = (&obj, &start, recorder.thread());
                s.spawn(move || {
                    let mut h = obj.register().expect("3 slots");
                    start.wait();
                    for op in script {
                        let id = rec.invoke(op.clone());
                        let r = run(&mut h, op);
                        rec.complete(id, r);
                    }
                });
            }
        });
        let history = recorder.into_history();
        if let Err(e) = check(KvMap::new(), &history) {
            panic!("round {round}: not linearizable: {e}");
        }
        overlap += history.overlap_share() * 48.0;
        ops += 48;
    }
    let share = overlap / ops as f64;
    eprintln!(
        "VolatilePBComb<HashMap>: {ROUNDS} histories of 48 operations, overlap share {share:.2}"
    );
    assert!(
        share > 0.0,
        "no operation overlapped another: nothing was tested"
    );
}

/// Many writes from 4 threads through one combiner lock: every write applied exactly once.
#[test]
fn every_write_is_applied_once() {
    let obj = VolatilePBComb::new(HashMapKv::new(), 4).expect("valid");
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let obj = &obj;
            s.spawn(move || {
                let mut h = obj.register().expect("slot");
                for i in 0..500 {
                    let r = h.execute_mut(MapWrite::Put(t * 1000 + i, i));
                    assert_eq!(r, MapResponse::Put(None));
                }
            });
        }
    });
    let mut h = obj.register().expect("slot");
    assert_eq!(h.execute(MapRead::Len), MapResponse::Len(2000));
    for t in 0..4u64 {
        for i in (0..500).step_by(37) {
            assert_eq!(
                h.execute(MapRead::Get(t * 1000 + i)),
                MapResponse::Get(Some(i))
            );
        }
    }
}

/// A panic in `dispatch_mut` poisons the object: the state (maybe half-updated in place) is
/// never reached again.
#[test]
fn a_panicking_write_poisons() {
    /// Pushes; panics after pushing 13.
    struct Fragile(Vec<u64>);
    impl Dispatch for Fragile {
        type ReadOperation<'a> = ();
        type WriteOperation = u64;
        type Response = usize;
        fn dispatch(&self, (): ()) -> usize {
            self.0.len()
        }
        fn dispatch_mut(&mut self, v: u64) -> usize {
            self.0.push(v);
            assert!(v != 13, "unlucky");
            self.0.len()
        }
    }
    let obj = VolatilePBComb::new(Fragile(Vec::new()), 2).expect("valid");
    let mut h = obj.register().expect("slot");
    assert_eq!(h.try_execute_mut(1), Ok(1));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        obj.register().expect("slot").execute_mut(13)
    }));
    assert!(panicked.is_err());
    assert_eq!(h.try_execute(()), Err(Poisoned));
    assert_eq!(h.try_execute_mut(2), Err(Poisoned));
}
