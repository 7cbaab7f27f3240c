//! Concurrent histories of a durable `HashMap` store across 1-3 replicas (on one, the writes
//! are ordered by the commit log alone, nr-core's `combine_committed`), checked for
//! linearizability against testkit's `KvMap`, on both media; half of the histories reopen the
//! store half way (the second half runs on the recovered object, so the whole history must be
//! linearizable across the restart). Threads start together at a barrier and each moves to
//! another replica from one operation to the next; the share of overlapping operations is
//! printed and must be substantial.
//!
//! `NR_DURABLE_LIN_HISTORIES` histories per medium (default 60).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::Barrier;

use common::{env, Kv, KvWrite, Rng};
use nr_durable::{Durable, DurableHandle, Medium};
use testkit::models::{KvMap, KvOp, KvRet};
use testkit::{check, History, Recorder};

/// The store, yielding the CPU in the middle of each update: wider windows between logging a
/// write and completing it, so more operations overlap.
#[derive(Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
struct YieldKv(Kv);

impl nr_core::Dispatch for YieldKv {
    type ReadOperation<'a> = u64;
    type WriteOperation = KvWrite;
    type Response = Option<u64>;
    fn dispatch(&self, k: u64) -> Option<u64> {
        self.0.dispatch(k)
    }
    fn dispatch_mut(&mut self, op: KvWrite) -> Option<u64> {
        std::thread::yield_now();
        self.0.dispatch_mut(op)
    }
}

fn apply(h: &mut DurableHandle<'_, YieldKv>, op: &KvOp) -> KvRet {
    match *op {
        KvOp::Get(k) => KvRet::Get(h.execute(k).unwrap()),
        KvOp::Put(k, v) => KvRet::Put(h.execute_mut(KvWrite::Put(k, v)).unwrap()),
        KvOp::Remove(k) => KvRet::Remove(h.execute_mut(KvWrite::Remove(k)).unwrap()),
    }
}

/// Runs `programs` (one per thread) on `kv`, recording into `rec`; thread `t`'s `i`-th op runs
/// on replica `(t + i) % replicas` under thread id `t * 8 + replica`.
fn phase(kv: &Durable<YieldKv>, programs: &[Vec<KvOp>], recorder: &Recorder<KvOp, KvRet>) {
    let start = Barrier::new(programs.len());
    std::thread::scope(|s| {
        for (t, program) in programs.iter().enumerate() {
            let (start, mut rec) = (&start, recorder.thread());
            s.spawn(move || {
                let r = kv.replicas();
                let mut handles: Vec<_> = (0..r)
                    .map(|i| kv.register_on((t * 8 + i) as u32, i).unwrap())
                    .collect();
                start.wait();
                for (i, op) in program.iter().enumerate() {
                    let id = rec.invoke(op.clone());
                    let ret = apply(&mut handles[(t + i) % r], op);
                    rec.complete(id, ret);
                }
            });
        }
    });
}

fn history(
    medium: &Medium,
    replicas: usize,
    programs: &[Vec<KvOp>],
    restart: bool,
) -> History<KvOp, KvRet> {
    let recorder = Recorder::new();
    let open = || {
        Durable::<YieldKv>::builder()
            .replicas(replicas)
            .log_size(64)
            .medium(medium.clone())
            .open(YieldKv::default)
            .unwrap()
    };
    if restart {
        let half: Vec<Vec<KvOp>> = programs.iter().map(|p| p[..p.len() / 2].to_vec()).collect();
        let rest: Vec<Vec<KvOp>> = programs.iter().map(|p| p[p.len() / 2..].to_vec()).collect();
        phase(&open(), &half, &recorder);
        phase(&open(), &rest, &recorder);
    } else {
        phase(&open(), programs, &recorder);
    }
    recorder.into_history()
}

#[test]
fn kv_histories_across_replicas_and_restarts_are_linearizable() {
    let histories = env("NR_DURABLE_LIN_HISTORIES", 60);
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x11_4EA2);
    let mut next_value = 0;
    for kind in ["file", "pmem"] {
        let mut share = 0.0;
        for h in 0..histories {
            let replicas = 1 + rng.below(3) as usize;
            let threads = 4;
            let keys = 1 + rng.below(2);
            let programs: Vec<Vec<KvOp>> = (0..threads)
                .map(|_| {
                    (0..6 + rng.below(7))
                        .map(|_| match rng.below(9) {
                            0..=3 => KvOp::Get(rng.below(keys)),
                            4..=7 => {
                                next_value += 1;
                                KvOp::Put(rng.below(keys), next_value)
                            }
                            _ => KvOp::Remove(rng.below(keys)),
                        })
                        .collect()
                })
                .collect();
            let medium = match kind {
                "file" => Medium::File {
                    dir: tmp.path().join(format!("h{h}")),
                },
                _ => Medium::Pmem {
                    path: tmp.path().join(format!("h{h}.pmem")),
                    capacity: 1 << 16,
                },
            };
            let restart = h % 2 == 1;
            let hist = history(&medium, replicas, &programs, restart);
            if let Err(v) = check(KvMap::new(), &hist) {
                panic!("{kind} history {h}, {replicas} replicas, restart {restart}: {v}");
            }
            share += hist.overlap_share();
        }
        let share = share / histories as f64;
        println!(
            "{kind}: {histories} histories linearizable; overlap share {:.1}%",
            100.0 * share
        );
        assert!(
            share > 0.3,
            "{kind}: only {:.1}% of operations overlapped",
            100.0 * share
        );
    }
}
