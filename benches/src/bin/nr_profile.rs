//! A fixed number of single-thread operations on one structure, for instruction counting
//! (`perf stat -e instructions:u`, `valgrind --tool=callgrind`): the uncontended paths of NR
//! (one replica) against the bare structure and `parking_lot::RwLock`. Run it twice with
//! different `--ops` and take the difference, so that setup (prefill, thread start) cancels:
//!
//! ```text
//! for n in 1000000 2000000; do
//!   perf stat -x, -e instructions:u target/release/nr_profile nr-map-put --ops $n
//! done
//! ```
//!
//! Without `perf` (as on the shared VMs), callgrind counts the same instructions and, with
//! `--cache-sim=yes --LL=<L2 size>,8,64`, models the misses of an L2-sized last level:
//!
//! ```text
//! for n in 300000 600000; do
//!   valgrind --tool=callgrind --cache-sim=yes --LL=524288,8,64 \
//!     target/release/nr_profile nr2-map-put --ops $n
//! done
//! ```

use std::hint::black_box;
use std::time::Instant;

use benches::method::peers::{Cnr, CnrCratePeer, PartitionedMap};
use benches::{Handle, HashMapWorkload, Method, Op, Replicas, Rng, Setup, Workload};
use clap::{Parser, ValueEnum};
use nr_core::{Dispatch, NodeReplicated};
use seqds::{MapWrite, Stack, StackRead, StackWrite};

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Case {
    /// Hash map (10k keys) `Put`s on the bare structure.
    BareMapPut,
    /// The same through NR (1 replica, 1 registered thread).
    NrMapPut,
    /// The same under `parking_lot::RwLock` (write lock).
    RwlMapPut,
    /// The same through NR with 2 replicas, the thread on replica 0: replica 1 is idle, so the
    /// writer also brings it up to date whenever the log fills (the cost of an idle replica).
    Nr2MapPut,
    /// The same with `Builder::dormant_replicas`: replica 1, without a thread, stays dormant
    /// (out of the log), so nobody brings it up to date.
    Nr2DormantMapPut,
    /// Hash map `Get`s on the bare structure.
    BareMapGet,
    /// The same through NR.
    NrMapGet,
    /// The same under `parking_lot::RwLock` (read lock).
    RwlMapGet,
    /// Stack push/pop pairs on the bare structure (one op each).
    BareStack,
    /// The same through NR.
    NrStack,
    /// The same under `parking_lot::RwLock` (write lock).
    RwlStack,
    /// Hash map `Put`s on the bare partitioned map of the CNR benchmark, 4 partitions
    /// (`benches::method::peers::PartitionedMap`).
    BarePartPut,
    /// The same through CNR (`nr_core::cnr`) with 1 log, 1 replica, 1 thread (the runner's
    /// `CNR-1log` method).
    Cnr1MapPut,
    /// The same with 4 logs (`CNR-4log`).
    Cnr4MapPut,
    /// The same through the `cnr` crate (0.1.0) with 4 logs (`cnr-crate-4log`).
    Crate4MapPut,
    /// `CNR-4log` with 2 replicas: one thread alternates between a handle on each, as two
    /// threads with one replica each would (every write appended, the other replica's
    /// entries replayed), without their contention.
    Cnr4TwoReplicasPut,
    /// The same through the `cnr` crate with 4 logs.
    Crate4TwoReplicasPut,
}

/// Single-thread operation loops for instruction counting.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The case to run.
    #[arg(value_enum)]
    case: Case,
    /// Operations to run.
    #[arg(long, default_value_t = 1_000_000)]
    ops: u64,
    /// Log entries of `nr2-map-put` (a power of two; NR's default is 65536).
    #[arg(long, default_value_t = 1 << 16)]
    log_size: usize,
}

fn prefilled(w: &HashMapWorkload) -> seqds::HashMapKv {
    let mut d = w.make();
    for op in w.prefill() {
        d.dispatch_mut(op);
    }
    d
}

/// NR with one replica and one thread slot, holding `d`.
fn nr_single<D: Dispatch + Send + Sync>(d: D) -> NodeReplicated<D> {
    let mut d = Some(d);
    NodeReplicated::builder()
        .replicas(1)
        .threads_per_replica(1)
        .build(move |_| d.take().expect("one replica"))
        .expect("valid configuration")
}

fn main() {
    let a = Args::parse();
    // Setup (prefill) is inside the timed span for every case alike; at 1M+ operations it is
    // a few percent. Instruction counts should use the two-run difference instead.
    let began = Instant::now();
    run(&a);
    let ns = began.elapsed().as_nanos() as f64 / a.ops as f64;
    println!("{:?}: {} ops, {ns:.2} ns/op", a.case, a.ops);
}

fn run(a: &Args) {
    let w = HashMapWorkload::new(10_000, 100);
    let mut rng = Rng::new(1, 0);
    let mut put = || match w.next_op(&mut rng) {
        Op::Write(op) => op,
        Op::Read(k) => MapWrite::Put(k, k),
    };
    match a.case {
        Case::BareMapPut => {
            let mut d = prefilled(&w);
            for _ in 0..a.ops {
                black_box(d.dispatch_mut(put()));
            }
        }
        Case::NrMapPut => {
            let nr = nr_single(prefilled(&w));
            let mut h = nr.register(0).expect("slot");
            for _ in 0..a.ops {
                black_box(h.execute_mut(put()).expect("not poisoned"));
            }
        }
        Case::Nr2MapPut | Case::Nr2DormantMapPut => {
            let w2 = &w;
            let nr = NodeReplicated::builder()
                .replicas(2)
                .threads_per_replica(1)
                .log_size(a.log_size)
                .dormant_replicas(a.case == Case::Nr2DormantMapPut)
                .build(|_| prefilled(w2))
                .expect("valid configuration");
            let mut h = nr.register(0).expect("slot");
            for _ in 0..a.ops {
                black_box(h.execute_mut(put()).expect("not poisoned"));
            }
        }
        Case::RwlMapPut => {
            let l = parking_lot::RwLock::new(prefilled(&w));
            for _ in 0..a.ops {
                black_box(l.write().dispatch_mut(put()));
            }
        }
        Case::BareMapGet | Case::NrMapGet | Case::RwlMapGet => {
            let w = HashMapWorkload::new(10_000, 0);
            let mut key = || match w.next_op(&mut rng) {
                Op::Read(k) => k,
                Op::Write(_) => 0,
            };
            match a.case {
                Case::BareMapGet => {
                    let d = prefilled(&w);
                    for _ in 0..a.ops {
                        let k = key();
                        black_box(d.dispatch(w.read_op(&k)));
                    }
                }
                Case::NrMapGet => {
                    let nr = nr_single(prefilled(&w));
                    let mut h = nr.register(0).expect("slot");
                    for _ in 0..a.ops {
                        let k = key();
                        black_box(h.execute(w.read_op(&k)).expect("not poisoned"));
                    }
                }
                _ => {
                    let l = parking_lot::RwLock::new(prefilled(&w));
                    for _ in 0..a.ops {
                        let k = key();
                        black_box(l.read().dispatch(w.read_op(&k)));
                    }
                }
            }
        }
        Case::BareStack => {
            let mut s = Stack::default();
            for i in 0..a.ops / 2 {
                black_box(s.dispatch_mut(StackWrite::Push(i)));
                black_box(s.dispatch_mut(StackWrite::Pop));
            }
            black_box(s.dispatch(StackRead::Len));
        }
        Case::RwlStack => {
            let l = parking_lot::RwLock::new(Stack::default());
            for i in 0..a.ops / 2 {
                black_box(l.write().dispatch_mut(StackWrite::Push(i)));
                black_box(l.write().dispatch_mut(StackWrite::Pop));
            }
        }
        Case::BarePartPut => {
            let d = PartitionedMap::with_prefill(&w.prefill(), 4);
            for _ in 0..a.ops {
                black_box(d.write(put()));
            }
        }
        Case::Cnr1MapPut => peer_puts::<Cnr<1>>(&w, 1, a.ops, &mut put),
        Case::Cnr4MapPut => peer_puts::<Cnr<4>>(&w, 1, a.ops, &mut put),
        Case::Crate4MapPut => peer_puts::<CnrCratePeer<4>>(&w, 1, a.ops, &mut put),
        Case::Cnr4TwoReplicasPut => peer_puts::<Cnr<4>>(&w, 2, a.ops, &mut put),
        Case::Crate4TwoReplicasPut => peer_puts::<CnrCratePeer<4>>(&w, 2, a.ops, &mut put),
        Case::NrStack => {
            let nr = nr_single(Stack::default());
            let mut h = nr.register(0).expect("slot");
            for i in 0..a.ops / 2 {
                black_box(h.execute_mut(StackWrite::Push(i)).expect("not poisoned"));
                black_box(h.execute_mut(StackWrite::Pop).expect("not poisoned"));
            }
        }
    }
}

/// `ops` puts through a runner method built for `replicas` threads on `replicas` replicas (1 or
/// 2), from one thread that takes every thread index's handle and uses them in turn.
fn peer_puts<M: Method<seqds::HashMapKv>>(
    w: &HashMapWorkload,
    replicas: usize,
    ops: u64,
    put: &mut impl FnMut() -> MapWrite,
) {
    let topology = nr_core::Topology::single_node(vec![0]).expect("one CPU");
    let (make, prefill) = (|| w.make(), w.prefill());
    let setup = Setup {
        make: &make,
        prefill: &prefill,
        threads: replicas,
        topology: &topology,
        replicas: Replicas::Exactly(replicas),
    };
    let method = M::build(&setup).expect("valid configuration");
    let mut handles: Vec<_> = (0..replicas)
        .map(|t| method.handle(t, replicas).expect("slot"))
        .collect();
    for i in 0..ops {
        let h = &mut handles[i as usize & (replicas - 1)];
        black_box(h.write(put()).expect("not poisoned"));
    }
}
