//! Linearizability of `update` and `read_with` under concurrency: a fetch-and-add counter per
//! key, updated and read by 8 threads on 4 virtual nodes started in lockstep (a barrier),
//! with replication lagging on purpose (manual pump, a pumper thread replicating now and
//! then), each operation's recorded interval widened by a short random spin on both sides
//! (see `linearizability.rs`). Histories are checked with testkit's checker against its
//! `Counter` model: a lost update (two read-modify-writes of one version) or a stale read
//! (a replica of an older version) is not linearizable. The share of operations overlapping
//! an operation of another thread on the same key is reported and must be substantial.

#![cfg(not(loom))]
// Tests run real threads, outside the loom shim.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use common::{lagging_store, spin, Draw, KEYS};
use ladapa::{CodecError, DispatchValue, MetadataMode, NodeHandle, ValueReplication};
use nr_core::Dispatch;
use testkit::lin::{check, ThreadRecorder};
use testkit::models::{Counter as Model, CounterOp, CounterRet};

/// A `u64` counter in a value's 8 bytes.
struct Counter(u64);

impl Dispatch for Counter {
    type ReadOperation<'a> = ();
    /// Adds, returning the value before (`fetch_add`).
    type WriteOperation = u64;
    type Response = u64;

    fn dispatch(&self, (): ()) -> u64 {
        self.0
    }

    fn dispatch_mut(&mut self, add: u64) -> u64 {
        let previous = self.0;
        self.0 = previous.wrapping_add(add);
        previous
    }
}

impl DispatchValue for Counter {
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let bytes: [u8; 8] = bytes.try_into().map_err(|_| CodecError::Invalid {
            reason: "not 8 bytes",
        })?;
        Ok(Counter(u64::from_le_bytes(bytes)))
    }

    fn encode(&self, bytes: &mut [u8]) -> Result<(), CodecError> {
        bytes.copy_from_slice(&self.0.to_le_bytes());
        Ok(())
    }
}

/// One operation of a thread: an update (add 1..=1000) or a read, one in two each.
fn counter_op(node: &NodeHandle<'_>, rec: &mut ThreadRecorder<CounterOp, CounterRet>, draw: Draw) {
    let Draw {
        key,
        rng,
        before,
        after,
        ..
    } = draw;
    if (rng >> 8) % 2 == 0 {
        let add = 1 + (rng >> 44) % 1000;
        let p = rec.invoke(CounterOp::Add(add));
        spin(before);
        let previous = node.update::<Counter>(key, add).unwrap();
        spin(after);
        rec.complete(p, CounterRet::Previous(previous.expect("present")));
    } else {
        let p = rec.invoke(CounterOp::Get);
        spin(before);
        let value = node.read_with::<Counter>(key, ()).unwrap();
        spin(after);
        rec.complete(p, CounterRet::Value(value.expect("present")));
    }
}

/// One round; returns (operations overlapping another thread's on the same key, operations).
fn round(mode: MetadataMode, replication: ValueReplication, seed: u64) -> (f64, usize) {
    let store = lagging_store(mode, replication);
    for key in 0..KEYS {
        store.put_value(key, &Counter(0)).unwrap();
    }
    let mut totals = (0.0, 0);
    for (key, history) in common::round(&store, seed, counter_op)
        .into_iter()
        .enumerate()
    {
        let ops = history.len() / 2;
        totals.0 += history.overlap_share() * ops as f64;
        totals.1 += ops;
        if let Err(violation) = check(Model::new(), &history) {
            panic!("{mode:?} {replication} seed {seed} key {key}: not linearizable: {violation:?}");
        }
    }
    assert!(store.check_health().is_ok());
    totals
}

#[test]
fn updates_and_reads_on_different_nodes_are_linearizable() {
    common::rounds(60, round);
}
