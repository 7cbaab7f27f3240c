//! What the structure tests share: one interface over `PBStack`, `PWFStack`, `PBQueue`, `PWFQueue` and `PBHeap` that
//! maps each onto its `testkit` model (`Stack`, `Queue`, `MinPq`), and deterministic scripts.
#![allow(dead_code)] // each test file uses part of it

use pcomb::pmem::{Persist, Region};
use pcomb::structures::{Options, PBHeap, PBHeapHandle, PBQueue, PBQueueHandle, PBStack};
use pcomb::structures::{PBStackHandle, PWFQueue, PWFQueueHandle, PWFStack, PWFStackHandle};
use pcomb::{CombBuildError, Recovered};
use testkit::lin::Model;
use testkit::models::{MinPq, PqOp, PqRet, Queue, QueueOp, QueueRet, Stack, StackOp, StackRet};

/// Heap capacity used by the tests (above every script's number of inserts).
pub(crate) const HEAP_CAP: usize = 64;

/// A structure under test, seen through its sequential model's operations.
pub(crate) trait Subject: Sized + Sync {
    type P: Persist;
    type M: Model + Send;
    type H<'a>
    where
        Self: 'a;
    const NAME: &'static str;

    fn model() -> Self::M;
    fn create(region: Region<Self::P>, capacity: u32, threads: usize, o: Options) -> Self;
    /// In heap words (volatile with `NoPersist`).
    fn heap_backed(capacity: u32, threads: usize, o: Options, persist: Self::P) -> Self;
    fn open(region: Region<Self::P>) -> Result<Self, CombBuildError>;
    fn into_region(self) -> Region<Self::P>;
    fn handle(&self, t: usize) -> Self::H<'_>;
    /// The sequence number `op` would get if called now.
    fn next_seq(h: &Self::H<'_>, op: &<Self::M as Model>::Op) -> u64;
    /// `None` for an operation with no recovery (a read).
    fn run(h: &mut Self::H<'_>, op: &<Self::M as Model>::Op) -> <Self::M as Model>::Ret;
    fn is_read(op: &<Self::M as Model>::Op) -> bool;
    /// `(applied, response)`.
    fn recover(
        h: &mut Self::H<'_>,
        op: &<Self::M as Model>::Op,
        seq: u64,
    ) -> (bool, <Self::M as Model>::Ret);
    fn drain_op() -> <Self::M as Model>::Op;
    fn drained(ret: &<Self::M as Model>::Ret) -> bool;
    fn audit(&mut self) -> Result<(), String>;
    /// Operation `i` of thread `t` from random bits `r`; values are unique per (t, i).
    fn op(t: usize, i: usize, r: u64) -> <Self::M as Model>::Op;
}

fn unique(t: usize, i: usize) -> u64 {
    ((t as u64) << 16) | (i as u64 + 1)
}

fn split<T>(r: Recovered<T>) -> (bool, T) {
    let applied = r.took_effect_before_crash();
    (applied, r.into_response())
}

/// `Subject` for a stack type (`PBStack`, `PWFStack`: same API).
macro_rules! stack_subject {
    ($stack:ident, $handle:ident) => {
        impl<P: Persist> Subject for $stack<P> {
            type P = P;
            type M = Stack;
            type H<'a> = $handle<'a, P>;
            const NAME: &'static str = stringify!($stack);

            fn model() -> Stack {
                Stack::new()
            }
            fn create(region: Region<P>, capacity: u32, threads: usize, o: Options) -> Self {
                $stack::create(region, capacity, threads, o).expect("fits")
            }
            fn heap_backed(capacity: u32, threads: usize, o: Options, persist: P) -> Self {
                $stack::with_persist(capacity, threads, o, persist).expect("valid")
            }
            fn open(region: Region<P>) -> Result<Self, CombBuildError> {
                $stack::open(region)
            }
            fn into_region(self) -> Region<P> {
                $stack::into_region(self).expect("in a region")
            }
            fn handle(&self, t: usize) -> $handle<'_, P> {
                self.register_as(t).expect("free slot")
            }
            fn next_seq(h: &$handle<'_, P>, _op: &StackOp) -> u64 {
                h.seq() + 1
            }
            fn run(h: &mut $handle<'_, P>, op: &StackOp) -> StackRet {
                match *op {
                    StackOp::Push(v) => {
                        h.push(v).expect("tests never fill the stack");
                        StackRet::Pushed
                    }
                    StackOp::Pop => StackRet::Popped(h.pop()),
                }
            }
            fn is_read(_op: &StackOp) -> bool {
                false
            }
            fn recover(h: &mut $handle<'_, P>, op: &StackOp, seq: u64) -> (bool, StackRet) {
                match *op {
                    StackOp::Push(v) => {
                        let (a, r) = split(h.recover_push(v, seq));
                        r.expect("tests never fill the stack");
                        (a, StackRet::Pushed)
                    }
                    StackOp::Pop => {
                        let (a, r) = split(h.recover_pop(seq));
                        (a, StackRet::Popped(r))
                    }
                }
            }
            fn drain_op() -> StackOp {
                StackOp::Pop
            }
            fn drained(ret: &StackRet) -> bool {
                *ret == StackRet::Popped(None)
            }
            fn audit(&mut self) -> Result<(), String> {
                $stack::audit(self).map_err(|e| e.to_string())
            }
            fn op(t: usize, i: usize, r: u64) -> StackOp {
                if r % 5 < 3 {
                    StackOp::Push(unique(t, i))
                } else {
                    StackOp::Pop
                }
            }
        }
    };
}

stack_subject!(PBStack, PBStackHandle);
stack_subject!(PWFStack, PWFStackHandle);

/// `Subject` for a queue type (`PBQueue`, `PWFQueue`: same API).
macro_rules! queue_subject {
    ($queue:ident, $handle:ident) => {
        impl<P: Persist> Subject for $queue<P> {
            type P = P;
            type M = Queue;
            type H<'a> = $handle<'a, P>;
            const NAME: &'static str = stringify!($queue);

            fn model() -> Queue {
                Queue::new()
            }
            fn create(region: Region<P>, capacity: u32, threads: usize, o: Options) -> Self {
                $queue::create(region, capacity, threads, o).expect("fits")
            }
            fn heap_backed(capacity: u32, threads: usize, o: Options, persist: P) -> Self {
                $queue::with_persist(capacity, threads, o, persist).expect("valid")
            }
            fn open(region: Region<P>) -> Result<Self, CombBuildError> {
                $queue::open(region)
            }
            fn into_region(self) -> Region<P> {
                $queue::into_region(self).expect("in a region")
            }
            fn handle(&self, t: usize) -> $handle<'_, P> {
                self.register_as(t).expect("free slot")
            }
            fn next_seq(h: &$handle<'_, P>, op: &QueueOp) -> u64 {
                match op {
                    QueueOp::Enqueue(_) => h.enqueue_seq() + 1,
                    QueueOp::Dequeue => h.dequeue_seq() + 1,
                }
            }
            fn run(h: &mut $handle<'_, P>, op: &QueueOp) -> QueueRet {
                match *op {
                    QueueOp::Enqueue(v) => {
                        h.enqueue(v).expect("tests never fill the queue");
                        QueueRet::Enqueued
                    }
                    QueueOp::Dequeue => QueueRet::Dequeued(h.dequeue()),
                }
            }
            fn is_read(_op: &QueueOp) -> bool {
                false
            }
            fn recover(h: &mut $handle<'_, P>, op: &QueueOp, seq: u64) -> (bool, QueueRet) {
                match *op {
                    QueueOp::Enqueue(v) => {
                        let (a, r) = split(h.recover_enqueue(v, seq));
                        r.expect("tests never fill the queue");
                        (a, QueueRet::Enqueued)
                    }
                    QueueOp::Dequeue => {
                        let (a, r) = split(h.recover_dequeue(seq));
                        (a, QueueRet::Dequeued(r))
                    }
                }
            }
            fn drain_op() -> QueueOp {
                QueueOp::Dequeue
            }
            fn drained(ret: &QueueRet) -> bool {
                *ret == QueueRet::Dequeued(None)
            }
            fn audit(&mut self) -> Result<(), String> {
                $queue::audit(self).map_err(|e| e.to_string())
            }
            fn op(t: usize, i: usize, r: u64) -> QueueOp {
                if r % 5 < 3 {
                    QueueOp::Enqueue(unique(t, i))
                } else {
                    QueueOp::Dequeue
                }
            }
        }
    };
}

queue_subject!(PBQueue, PBQueueHandle);
queue_subject!(PWFQueue, PWFQueueHandle);

impl<P: Persist> Subject for PBHeap<HEAP_CAP, P> {
    type P = P;
    type M = MinPq;
    type H<'a> = PBHeapHandle<'a, HEAP_CAP, P>;
    const NAME: &'static str = "PBHeap";

    fn model() -> MinPq {
        MinPq::new()
    }
    fn create(region: Region<P>, _capacity: u32, threads: usize, _o: Options) -> Self {
        PBHeap::create(region, threads).expect("fits")
    }
    fn heap_backed(_capacity: u32, threads: usize, _o: Options, persist: P) -> Self {
        PBHeap::with_persist(threads, persist).expect("valid")
    }
    fn open(region: Region<P>) -> Result<Self, CombBuildError> {
        PBHeap::open(region)
    }
    fn into_region(self) -> Region<P> {
        PBHeap::into_region(self).expect("in a region")
    }
    fn handle(&self, t: usize) -> Self::H<'_> {
        self.register_as(t).expect("free slot")
    }
    fn next_seq(h: &Self::H<'_>, _op: &PqOp) -> u64 {
        h.seq() + 1
    }
    fn run(h: &mut Self::H<'_>, op: &PqOp) -> PqRet {
        match *op {
            PqOp::Insert(k) => {
                h.insert(k).expect("tests never fill the heap");
                PqRet::Inserted
            }
            PqOp::DeleteMin => PqRet::Deleted(h.delete_min()),
            PqOp::FindMin => PqRet::Min(h.min()),
        }
    }
    fn is_read(op: &PqOp) -> bool {
        *op == PqOp::FindMin
    }
    fn recover(h: &mut Self::H<'_>, op: &PqOp, seq: u64) -> (bool, PqRet) {
        match *op {
            PqOp::Insert(k) => {
                let (a, r) = split(h.recover_insert(k, seq));
                r.expect("tests never fill the heap");
                (a, PqRet::Inserted)
            }
            PqOp::DeleteMin => {
                let (a, r) = split(h.recover_delete_min(seq));
                (a, PqRet::Deleted(r))
            }
            PqOp::FindMin => unreachable!("reads are not recovered"),
        }
    }
    fn drain_op() -> PqOp {
        PqOp::DeleteMin
    }
    fn drained(ret: &PqRet) -> bool {
        *ret == PqRet::Deleted(None)
    }
    fn audit(&mut self) -> Result<(), String> {
        Ok(())
    }
    fn op(t: usize, i: usize, r: u64) -> PqOp {
        match r % 10 {
            0..=4 => PqOp::Insert((r >> 8) % 40 + unique(t, i) % 3),
            5..=8 => PqOp::DeleteMin,
            _ => PqOp::FindMin,
        }
    }
}

/// SplitMix64.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The op scripts of `threads` threads, `ops` each, from `seed`.
pub(crate) fn scripts<S: Subject>(
    seed: u64,
    threads: usize,
    ops: usize,
) -> Vec<Vec<<S::M as Model>::Op>> {
    (0..threads)
        .map(|t| {
            (0..ops)
                .map(|i| S::op(t, i, mix(seed ^ mix((t * 1000 + i) as u64))))
                .collect()
        })
        .collect()
}

/// Env var `name` as a number, or `default`.
pub(crate) fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
