//! `Builder::writes_as_reads` (the paper's §6 "Fake update operations"): a write that
//! `Dispatch::dispatch_as_read` answers never reaches `dispatch_mut`, and responses do not change.

use nr_core::{Dispatch, NodeReplicated};

/// A set that counts how many times it was mutated.
#[derive(Default)]
struct CountingSet {
    keys: std::collections::BTreeSet<u64>,
    mutations: u64,
}

#[derive(Clone)]
enum Write {
    Insert(u64),
    Remove(u64),
}

impl Dispatch for CountingSet {
    /// Reads return the mutation count.
    type ReadOperation<'a> = ();
    type WriteOperation = Write;
    type Response = u64;

    fn dispatch(&self, _: ()) -> u64 {
        self.mutations
    }

    fn dispatch_mut(&mut self, op: Write) -> u64 {
        self.mutations += 1;
        u64::from(match op {
            Write::Insert(k) => self.keys.insert(k),
            Write::Remove(k) => self.keys.remove(&k),
        })
    }

    fn dispatch_as_read(&self, op: &Write) -> Option<u64> {
        match *op {
            Write::Insert(k) if self.keys.contains(&k) => Some(0),
            Write::Remove(k) if !self.keys.contains(&k) => Some(0),
            _ => None,
        }
    }
}

/// Runs a fixed script; returns (responses, mutation count seen by a read on each replica).
fn script(replicas: usize, as_reads: bool) -> (Vec<u64>, Vec<u64>) {
    let nr = NodeReplicated::builder()
        .replicas(replicas)
        .writes_as_reads(as_reads)
        .build(|_| CountingSet::default())
        .unwrap();
    let mut h = nr.register(0).unwrap();
    let ops = [
        Write::Remove(1), // absent: a no-op
        Write::Insert(1),
        Write::Insert(1), // present: a no-op
        Write::Insert(2),
        Write::Remove(1),
        Write::Remove(1), // absent: a no-op
    ];
    let responses = ops
        .iter()
        .map(|op| h.execute_mut(op.clone()).unwrap())
        .collect();
    let counts = (0..replicas)
        .map(|r| nr.register(r).unwrap().execute(()).unwrap())
        .collect();
    (responses, counts)
}

#[test]
fn no_op_writes_skip_the_log_and_the_combiner() {
    for replicas in [1, 3] {
        let (plain, plain_counts) = script(replicas, false);
        let (as_reads, as_reads_counts) = script(replicas, true);
        assert_eq!(plain, as_reads, "responses must not depend on the option");
        assert_eq!(plain, [0, 1, 0, 1, 1, 0]);
        assert_eq!(
            plain_counts,
            vec![6; replicas],
            "every write mutates without the option"
        );
        assert_eq!(
            as_reads_counts,
            vec![3; replicas],
            "only the three real writes reach dispatch_mut, on every replica"
        );
    }
}
