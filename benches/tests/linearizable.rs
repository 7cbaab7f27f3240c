//! Every method is linearizable: short concurrent histories of each, run against the
//! sequential models of `testkit`, are checked for a legal linearization.
//!
//! Rounds per method: `BENCHES_LIN_ROUNDS` (default 30); each round builds a fresh object and
//! runs 3 threads of 24 random operations on a few keys, so conflicts are frequent.

// The sync shim is crate-private; integration tests spawn their threads with std directly.
#![allow(clippy::disallowed_methods)]

use benches::method::peers::{Cnr, CnrCratePeer, DashMapPeer, LfPq, NrCratePeer, TreiberStack};
use benches::{
    FlatCombining, FlatCombiningRw, Handle, Method, Nr, Replicas, Rng, RwLock, Setup, SpinLock,
};
use nr_core::{Dispatch, Topology};
use seqds::{
    HashMapKv, MapRead, MapResponse, MapWrite, PqRead, PqResponse, PqWrite, SkipListPq, Stack,
    StackResponse, StackWrite,
};
use testkit::lin::{check, Model, Recorder};
use testkit::models::{KvMap, KvOp, KvRet, MinPq, PqOp, PqRet, StackOp, StackRet};

const THREADS: usize = 3;
const OPS: usize = 24;

fn rounds() -> u64 {
    std::env::var("BENCHES_LIN_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

/// How a test drives structure `D` with the operations of model `M`.
trait Adapter<D: Dispatch>: Sync {
    type Model: Model + Default;
    fn op(&self, rng: &mut Rng) -> <Self::Model as Model>::Op;
    fn run<H: Handle<D>>(
        &self,
        h: &mut H,
        op: &<Self::Model as Model>::Op,
    ) -> <Self::Model as Model>::Ret;
}

/// Runs `rounds()` histories of method `M` on a fresh `D` and checks each against the model.
fn check_method<D, M, A>(make: impl Fn() -> D + Sync, adapter: &A, replicas: Replicas)
where
    D: Dispatch,
    M: Method<D>,
    A: Adapter<D>,
    <A::Model as Model>::Op: Send,
    <A::Model as Model>::Ret: Send,
{
    let topology = Topology::detect().expect("topology");
    for round in 0..rounds() {
        let setup = Setup {
            make: &make,
            prefill: &[],
            threads: THREADS,
            topology: &topology,
            replicas,
        };
        let method = M::build(&setup).expect("build");
        let recorder = Recorder::new();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (method, recorder) = (&method, recorder.clone());
                s.spawn(move || {
                    let mut rec = recorder.thread();
                    let mut h = method.handle(t, THREADS).expect("handle");
                    let mut rng = Rng::new(round, t as u64);
                    for _ in 0..OPS {
                        let op = adapter.op(&mut rng);
                        let id = rec.invoke(op.clone());
                        let ret = adapter.run(&mut h, &op);
                        rec.complete(id, ret);
                    }
                });
            }
        });
        let history = recorder.into_history();
        if let Err(v) = check(A::Model::default(), &history) {
            panic!("{} is not linearizable (round {round}):\n{v}", M::NAME);
        }
    }
}

struct Kv;

impl Adapter<HashMapKv> for Kv {
    type Model = KvMap;

    fn op(&self, rng: &mut Rng) -> KvOp {
        let key = rng.below(3);
        match rng.below(3) {
            0 => KvOp::Get(key),
            1 => KvOp::Put(key, rng.below(100)),
            _ => KvOp::Remove(key),
        }
    }

    fn run<H: Handle<HashMapKv>>(&self, h: &mut H, op: &KvOp) -> KvRet {
        let r = match *op {
            KvOp::Get(k) => h.read(MapRead::Get(k)),
            KvOp::Put(k, v) => h.write(MapWrite::Put(k, v)),
            KvOp::Remove(k) => h.write(MapWrite::Remove(k)),
        };
        match r.expect("not poisoned") {
            MapResponse::Get(v) => KvRet::Get(v),
            MapResponse::Put(v) => KvRet::Put(v),
            MapResponse::Removed(v) => KvRet::Remove(v),
            other => panic!("unexpected response {other:?}"),
        }
    }
}

struct StackOps;

impl Adapter<Stack> for StackOps {
    type Model = testkit::models::Stack;

    fn op(&self, rng: &mut Rng) -> StackOp {
        if rng.below(2) == 0 {
            StackOp::Push(rng.below(100))
        } else {
            StackOp::Pop
        }
    }

    fn run<H: Handle<Stack>>(&self, h: &mut H, op: &StackOp) -> StackRet {
        let r = match *op {
            StackOp::Push(v) => h.write(StackWrite::Push(v)),
            StackOp::Pop => h.write(StackWrite::Pop),
        };
        match r.expect("not poisoned") {
            StackResponse::Pushed => StackRet::Pushed,
            StackResponse::Popped(v) => StackRet::Popped(v),
            other => panic!("unexpected response {other:?}"),
        }
    }
}

struct Pq;

impl Adapter<SkipListPq> for Pq {
    type Model = MinPq;

    fn op(&self, rng: &mut Rng) -> PqOp {
        match rng.below(3) {
            0 => PqOp::Insert(rng.below(10)),
            1 => PqOp::DeleteMin,
            _ => PqOp::FindMin,
        }
    }

    fn run<H: Handle<SkipListPq>>(&self, h: &mut H, op: &PqOp) -> PqRet {
        let r = match *op {
            PqOp::Insert(v) => h.write(PqWrite::Insert(v)),
            PqOp::DeleteMin => h.write(PqWrite::DeleteMin),
            PqOp::FindMin => h.read(PqRead::FindMin),
        };
        match r.expect("not poisoned") {
            PqResponse::Inserted => PqRet::Inserted,
            PqResponse::Deleted(v) => PqRet::Deleted(v),
            PqResponse::Min(v) => PqRet::Min(v),
            other => panic!("unexpected response {other:?}"),
        }
    }
}

#[test]
fn nr_one_replica_is_linearizable() {
    check_method::<_, Nr<_>, _>(HashMapKv::new, &Kv, Replicas::Exactly(1));
}

#[test]
fn nr_two_replicas_is_linearizable() {
    check_method::<_, Nr<_>, _>(HashMapKv::new, &Kv, Replicas::Exactly(2));
}

#[test]
fn spinlock_is_linearizable() {
    check_method::<_, SpinLock<_>, _>(HashMapKv::new, &Kv, Replicas::PerNode);
}

#[test]
fn rwlock_is_linearizable() {
    check_method::<_, RwLock<_>, _>(HashMapKv::new, &Kv, Replicas::PerNode);
}

#[test]
fn flat_combining_is_linearizable() {
    check_method::<_, FlatCombining<_>, _>(HashMapKv::new, &Kv, Replicas::PerNode);
}

#[test]
fn flat_combining_rw_is_linearizable() {
    check_method::<_, FlatCombiningRw<_>, _>(HashMapKv::new, &Kv, Replicas::PerNode);
}

#[test]
fn dashmap_peer_is_linearizable() {
    check_method::<_, DashMapPeer, _>(HashMapKv::new, &Kv, Replicas::PerNode);
}

#[test]
fn node_replication_crate_peer_is_linearizable() {
    check_method::<_, NrCratePeer, _>(HashMapKv::new, &Kv, Replicas::Exactly(2));
}

/// CNR with 2 logs over the partitioned map (its lock-free reads rely on one writer per
/// partition, which CNR's per-log combiners give), 1 and 2 replicas.
#[test]
fn cnr_peer_is_linearizable() {
    check_method::<_, Cnr<2>, _>(HashMapKv::new, &Kv, Replicas::Exactly(1));
    check_method::<_, Cnr<2>, _>(HashMapKv::new, &Kv, Replicas::Exactly(2));
}

/// The `cnr` crate with 2 logs over the same map.
#[test]
fn cnr_crate_peer_is_linearizable() {
    check_method::<_, CnrCratePeer<2>, _>(HashMapKv::new, &Kv, Replicas::Exactly(2));
}

#[test]
fn treiber_stack_is_linearizable() {
    check_method::<_, TreiberStack, _>(Stack::new, &StackOps, Replicas::PerNode);
}

#[test]
fn flat_combining_stack_is_linearizable() {
    check_method::<_, FlatCombining<_>, _>(Stack::new, &StackOps, Replicas::PerNode);
}

#[test]
fn lock_free_priority_queue_is_linearizable() {
    check_method::<_, LfPq, _>(SkipListPq::new, &Pq, Replicas::PerNode);
}

#[test]
fn nr_priority_queue_is_linearizable() {
    check_method::<_, Nr<_>, _>(SkipListPq::new, &Pq, Replicas::Exactly(2));
}

/// The checker must be able to fail here: a "method" that answers every `Get` with a stale
/// `None` is rejected.
#[test]
fn a_stale_read_is_caught() {
    struct Stale;
    impl Adapter<HashMapKv> for Stale {
        type Model = KvMap;
        fn op(&self, rng: &mut Rng) -> KvOp {
            Kv.op(rng)
        }
        fn run<H: Handle<HashMapKv>>(&self, h: &mut H, op: &KvOp) -> KvRet {
            match Kv.run(h, op) {
                KvRet::Get(_) => KvRet::Get(None),
                other => other,
            }
        }
    }
    let caught = std::panic::catch_unwind(|| {
        check_method::<_, SpinLock<_>, _>(HashMapKv::new, &Stale, Replicas::PerNode)
    });
    assert!(caught.is_err(), "stale reads must fail the check");
}
