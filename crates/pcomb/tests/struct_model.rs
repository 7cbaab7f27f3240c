//! Single-threaded operation sequences against sequential models with the same capacity, in a
//! region that is closed and reopened at random points (so `open`'s rebuilt free nodes are
//! exercised), with every response compared and the structure audited after each reopen.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use pcomb::pmem::Region;
use pcomb::structures::{Full, Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Add(u64),
    Remove,
    Reopen,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            5 => (0u64..1000).prop_map(Op::Add),
            4 => Just(Op::Remove),
            1 => Just(Op::Reopen),
        ],
        1..120,
    )
}

fn region() -> Region<pcomb::NoPersist> {
    Region::anonymous(0x22, 1 << 16).expect("anonymous region")
}

/// What the stack model test needs of `PBStack` and `PWFStack` (single-threaded).
trait StackLike: Sized {
    fn create(region: Region<pcomb::NoPersist>, cap: u32, o: Options) -> Self;
    fn reopen(self) -> Self;
    fn push(&self, v: u64) -> Result<(), Full>;
    fn pop(&self) -> Option<u64>;
    fn len(&self) -> usize;
    fn audit(&mut self) -> Result<(), TestCaseError>;
}

macro_rules! stack_like {
    ($t:ident) => {
        impl StackLike for $t {
            fn create(region: Region<pcomb::NoPersist>, cap: u32, o: Options) -> Self {
                $t::create(region, cap, 1, o).expect("fits")
            }
            fn reopen(self) -> Self {
                $t::open(self.into_region().expect("region")).expect("reopens")
            }
            fn push(&self, v: u64) -> Result<(), Full> {
                self.register().expect("slot").push(v)
            }
            fn pop(&self) -> Option<u64> {
                self.register().expect("slot").pop()
            }
            fn len(&self) -> usize {
                self.register().expect("slot").len()
            }
            fn audit(&mut self) -> Result<(), TestCaseError> {
                $t::audit(self).map_err(|e| TestCaseError::fail(e.to_string()))
            }
        }
    };
}

stack_like!(PBStack);
stack_like!(PWFStack);

fn stack_matches_a_bounded_vec<S: StackLike>(
    ops: Vec<Op>,
    cap: u32,
    o: u8,
) -> Result<(), TestCaseError> {
    let opts = Options {
        elimination: o & 1 != 0,
        recycling: o & 2 != 0,
    };
    let mut s = S::create(region(), cap, opts);
    let mut model: Vec<u64> = Vec::new();
    // Without recycling, a node is used once per open.
    let mut fresh = cap as usize;
    for op in ops {
        match op {
            Op::Add(v) => {
                let want = if model.len() < cap as usize && (opts.recycling || fresh > 0) {
                    model.push(v);
                    fresh -= 1;
                    Ok(())
                } else {
                    Err(Full(v))
                };
                prop_assert_eq!(s.push(v), want);
            }
            Op::Remove => prop_assert_eq!(s.pop(), model.pop()),
            Op::Reopen => {
                s = s.reopen();
                s.audit()?;
                fresh = cap as usize - model.len();
            }
        }
        if opts.recycling {
            fresh = cap as usize - model.len();
        }
        prop_assert_eq!(s.len(), model.len());
    }
    s.audit()?;
    Ok(())
}

/// What the queue model test needs of `PBQueue` and `PWFQueue` (single-threaded).
trait QueueLike: Sized {
    fn create(region: Region<pcomb::NoPersist>, cap: u32, o: Options) -> Self;
    fn reopen(self) -> Self;
    fn enqueue(&self, v: u64) -> Result<(), Full>;
    fn dequeue(&self) -> Option<u64>;
    /// Whether dequeued nodes are reused before the next `open` with these options.
    fn recycles(o: Options) -> bool;
    /// The length, for a queue that reports it.
    fn len(&self) -> Option<usize>;
    fn audit(&mut self) -> Result<(), TestCaseError>;
}

macro_rules! queue_like {
    ($t:ident, $recycles:expr, $len:expr) => {
        impl QueueLike for $t {
            fn create(region: Region<pcomb::NoPersist>, cap: u32, o: Options) -> Self {
                $t::create(region, cap, 1, o).expect("fits")
            }
            fn reopen(self) -> Self {
                $t::open(self.into_region().expect("region")).expect("reopens")
            }
            fn enqueue(&self, v: u64) -> Result<(), Full> {
                self.register().expect("slot").enqueue(v)
            }
            fn dequeue(&self) -> Option<u64> {
                self.register().expect("slot").dequeue()
            }
            fn recycles(o: Options) -> bool {
                $recycles(o)
            }
            fn len(&self) -> Option<usize> {
                $len(self)
            }
            fn audit(&mut self) -> Result<(), TestCaseError> {
                $t::audit(self).map_err(|e| TestCaseError::fail(e.to_string()))
            }
        }
    };
}

queue_like!(PBQueue, |o: Options| o.recycling, |_: &PBQueue| None);
// PWFQueue reuses nodes only at `open` (the paper leaves its node reuse open).
queue_like!(PWFQueue, |_: Options| false, |q: &PWFQueue| Some(
    q.register().expect("slot").len()
));

fn queue_matches_a_bounded_deque<Q: QueueLike>(
    ops: Vec<Op>,
    cap: u32,
    recycling: bool,
) -> Result<(), TestCaseError> {
    let opts = Options {
        elimination: false,
        recycling,
    };
    let recycles = Q::recycles(opts);
    let mut q = Q::create(region(), cap, opts);
    let mut model: VecDeque<u64> = VecDeque::new();
    // Without reuse, a node is used once per open.
    let mut fresh = cap as usize;
    for op in ops {
        match op {
            Op::Add(v) => {
                let want = if model.len() < cap as usize && (recycles || fresh > 0) {
                    model.push_back(v);
                    fresh -= 1;
                    Ok(())
                } else {
                    Err(Full(v))
                };
                prop_assert_eq!(q.enqueue(v), want);
            }
            Op::Remove => prop_assert_eq!(q.dequeue(), model.pop_front()),
            Op::Reopen => {
                q = q.reopen();
                q.audit()?;
                fresh = cap as usize - model.len();
            }
        }
        if recycles {
            fresh = cap as usize - model.len();
        }
        if let Some(len) = q.len() {
            prop_assert_eq!(len, model.len());
        }
    }
    q.audit()?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pbstack_matches_a_bounded_vec(ops in ops(), cap in 1u32..8, o in 0u8..4) {
        stack_matches_a_bounded_vec::<PBStack>(ops, cap, o)?;
    }

    #[test]
    fn pwfstack_matches_a_bounded_vec(ops in ops(), cap in 1u32..8, o in 0u8..4) {
        stack_matches_a_bounded_vec::<PWFStack>(ops, cap, o)?;
    }

    #[test]
    fn pbqueue_matches_a_bounded_deque(ops in ops(), cap in 1u32..8, recycling: bool) {
        queue_matches_a_bounded_deque::<PBQueue>(ops, cap, recycling)?;
    }

    #[test]
    fn pwfqueue_matches_a_bounded_deque(ops in ops(), cap in 1u32..8, recycling: bool) {
        queue_matches_a_bounded_deque::<PWFQueue>(ops, cap, recycling)?;
    }

    #[test]
    fn pbheap_matches_a_bounded_binary_heap(ops in ops()) {
        const CAP: usize = 8;
        let mut h = PBHeap::<CAP, _>::create(region(), 1).expect("fits");
        let mut model: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
        for op in ops {
            match op {
                Op::Add(v) => {
                    let want = if model.len() < CAP {
                        model.push(Reverse(v));
                        Ok(())
                    } else {
                        Err(Full(v))
                    };
                    prop_assert_eq!(h.register().expect("slot").insert(v), want);
                }
                Op::Remove => prop_assert_eq!(
                    h.register().expect("slot").delete_min(),
                    model.pop().map(|Reverse(v)| v)
                ),
                Op::Reopen => {
                    h = PBHeap::open(h.into_region().expect("region")).expect("reopens");
                }
            }
            let mut hh = h.register().expect("slot");
            prop_assert_eq!(hh.min(), model.peek().map(|Reverse(v)| *v));
            prop_assert_eq!(hh.len(), model.len());
        }
    }
}
