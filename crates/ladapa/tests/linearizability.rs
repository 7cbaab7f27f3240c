//! Per-key linearizability under concurrency: 4 virtual nodes, 8 threads started in lockstep
//! (a barrier), each operation's recorded interval widened by a short random spin on both
//! sides of the call (an operation of ~100 ns would otherwise rarely overlap another on this
//! 2-core machine; the call still lies inside its interval, so a correct store must pass and a
//! stale read that misses a completed write is still caught),
//! replication lagging on purpose (manual pump: a pumper thread replicates only now and then,
//! and often only one node), histories checked with testkit's Wing-Gong checker against a
//! register per key. The share of operations that overlap another one on the same key is
//! reported and must be substantial, or the check proved little.

#![cfg(not(loom))]
// Tests run real threads, outside the loom shim.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use common::{lagging_store, spin, Draw};
use ladapa::{MetadataMode, NodeHandle, ValueReplication};
use testkit::lin::{check, EventKind, History, ThreadRecorder};
use testkit::models::{Register, RegisterOp, RegisterRet};

type Hist = History<RegisterOp, RegisterRet>;

/// Operations of `history` whose interval overlaps another operation's, and all operations.
fn overlap(history: &Hist) -> (usize, usize) {
    let mut open: Vec<Option<u64>> = Vec::new(); // per thread: invocation time
    let mut intervals: Vec<(u64, u64)> = Vec::new();
    for event in history.events() {
        if open.len() <= event.thread {
            open.resize(event.thread + 1, None);
        }
        match event.kind {
            EventKind::Invoke(_) => open[event.thread] = Some(event.time),
            EventKind::Return(_) => {
                if let Some(start) = open[event.thread].take() {
                    intervals.push((start, event.time));
                }
            }
        }
    }
    let overlapping = intervals
        .iter()
        .enumerate()
        .filter(|&(i, &(s, e))| {
            intervals
                .iter()
                .enumerate()
                .any(|(j, &(s2, e2))| i != j && s <= e2 && s2 <= e)
        })
        .count();
    (overlapping, intervals.len())
}

/// One operation of a thread: a put (3 in 8), a delete (1 in 8) or a get.
fn register_op(
    node: &NodeHandle<'_>,
    rec: &mut ThreadRecorder<RegisterOp, RegisterRet>,
    draw: Draw,
) {
    let Draw {
        key, before, after, ..
    } = draw;
    match (draw.rng >> 8) % 8 {
        0..=2 => {
            let value = ((draw.thread as u64 + 1) << 32) | (draw.index as u64 + 1);
            let p = rec.invoke(RegisterOp::Write(value));
            spin(before);
            node.put(key, &value.to_le_bytes()).unwrap();
            spin(after);
            rec.complete(p, RegisterRet::Written);
        }
        3 => {
            let p = rec.invoke(RegisterOp::Write(0));
            spin(before);
            node.delete(key).unwrap();
            spin(after);
            rec.complete(p, RegisterRet::Written);
        }
        _ => {
            let p = rec.invoke(RegisterOp::Read);
            spin(before);
            let mut buf = [0; 8];
            let found = node.get(key, &mut buf).unwrap();
            spin(after);
            let value = if found { u64::from_le_bytes(buf) } else { 0 };
            rec.complete(p, RegisterRet::Value(value));
        }
    }
}

fn round(mode: MetadataMode, replication: ValueReplication, seed: u64) -> (usize, usize) {
    let store = lagging_store(mode, replication);
    let mut totals = (0, 0);
    for (key, history) in common::round(&store, seed, register_op)
        .into_iter()
        .enumerate()
    {
        let (o, n) = overlap(&history);
        totals.0 += o;
        totals.1 += n;
        if let Err(violation) = check(Register::new(0), &history) {
            panic!("{mode:?} {replication} seed {seed} key {key}: not linearizable: {violation:?}");
        }
    }
    assert!(store.check_health().is_ok());
    totals
}

#[test]
fn every_key_is_linearizable_under_lagging_replication() {
    common::rounds(90, |mode, replication, seed| {
        let (overlapping, total) = round(mode, replication, seed);
        (overlapping as f64, total)
    });
}
