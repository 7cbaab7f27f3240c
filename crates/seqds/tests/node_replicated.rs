//! Every structure runs under `nr_core::NodeReplicated` (two replicas, two threads), and the
//! replicas agree afterwards: a check that the types meet NR's bounds and that the writes are
//! deterministic enough for replication.

use nr_core::{Dispatch, NodeReplicated};
use seqds::*;

/// Builds `make()` under NR with two replicas, runs `work(thread, handle)` on two threads, then
/// returns each replica's answer to `probe`.
fn run<D, R>(
    make: impl Fn() -> D + Send + Sync,
    work: impl Fn(usize, &mut nr_core::ThreadHandle<'_, D>) + Sync,
    probe: impl Fn() -> R,
) -> Vec<D::Response>
where
    D: Dispatch + Send + Sync,
    R: for<'a> Into<D::ReadOperation<'a>>,
{
    let nr = NodeReplicated::builder()
        .replicas(2)
        .build(|_| make())
        .expect("build");
    std::thread::scope(|s| {
        for t in 0..2 {
            let (nr, work) = (&nr, &work);
            s.spawn(move || {
                let mut h = nr.register(t).expect("register");
                work(t, &mut h);
            });
        }
    });
    (0..2)
        .map(|r| {
            let mut h = nr.register(r).expect("register");
            h.execute(probe().into()).expect("not poisoned")
        })
        .collect()
}

#[test]
fn priority_queues() {
    fn check<Q>(make: fn() -> Q)
    where
        Q: for<'a> Dispatch<
                ReadOperation<'a> = PqRead,
                WriteOperation = PqWrite,
                Response = PqResponse,
            > + Send
            + Sync
            + 'static,
    {
        let work = |t: usize, h: &mut nr_core::ThreadHandle<'_, Q>| {
            for i in 0..300u64 {
                h.execute_mut(PqWrite::Insert(i * 2 + t as u64))
                    .expect("ok");
                if i % 3 == 0 {
                    h.execute_mut(PqWrite::DeleteMin).expect("ok");
                }
            }
        };
        let lens = run(make, work, || PqRead::Len);
        assert_eq!(lens, [PqResponse::Len(100 + 600 - 200); 2]);
        let mins = run(make, work, || PqRead::FindMin);
        assert_eq!(mins[0], mins[1]);
    }
    check(|| SkipListPq::with_items(100, 1));
    check(|| PairingHeap::with_items(100, 1));
}

#[test]
fn dictionaries() {
    fn check<M>(make: fn() -> M)
    where
        M: for<'a> Dispatch<
                ReadOperation<'a> = MapRead,
                WriteOperation = MapWrite,
                Response = MapResponse,
            > + Send
            + Sync
            + 'static,
    {
        let work = |t: usize, h: &mut nr_core::ThreadHandle<'_, M>| {
            for i in 0..300u64 {
                // Thread 0 puts even keys, thread 1 odd keys; both remove below 100.
                h.execute_mut(MapWrite::Put(1000 + i * 2 + t as u64, i))
                    .expect("ok");
                h.execute_mut(MapWrite::Remove(i % 100)).expect("ok");
            }
        };
        assert_eq!(run(make, work, || MapRead::Len), [MapResponse::Len(600); 2]);
        assert_eq!(
            run(make, work, || MapRead::Get(1001)),
            [MapResponse::Get(Some(0)); 2]
        );
    }
    check(|| SkipListMap::with_items(100));
    check(|| HashMapKv::with_items(100));
}

#[test]
fn stack() {
    let work = |t: usize, h: &mut nr_core::ThreadHandle<'_, Stack>| {
        for i in 0..300u64 {
            h.execute_mut(StackWrite::Push(i + t as u64)).expect("ok");
            if i % 2 == 0 {
                h.execute_mut(StackWrite::Pop).expect("ok");
            }
        }
    };
    let lens = run(|| Stack::with_items(10), work, || StackRead::Len);
    assert_eq!(lens, [StackResponse::Len(10 + 300); 2]);
}

#[test]
fn synthetic_buffer() {
    let work = |t: usize, h: &mut nr_core::ThreadHandle<'_, SyntheticBuffer>| {
        for i in 0..300u64 {
            h.execute_mut(SyntheticWrite {
                seed: i * 2 + t as u64,
            })
            .expect("ok");
        }
    };
    // Additions commute, so the final sums are fixed whatever the interleaving.
    let mut model = SyntheticBuffer::new(64, 4);
    for seed in 0..600 {
        model.update(seed);
    }
    let sums = run(
        || SyntheticBuffer::new(64, 4),
        work,
        || SyntheticRead { seed: 77 },
    );
    assert_eq!(sums, [model.read(77); 2]);
}

#[test]
fn sorted_set() {
    let work = |t: usize, h: &mut nr_core::ThreadHandle<'_, SortedSet>| {
        for i in 0..300u64 {
            let op = SortedSetWrite::ZIncrBy {
                member: i % 50,
                delta: if t == 0 { 3 } else { -1 },
            };
            h.execute_mut(op).expect("ok");
        }
    };
    // Increments commute: member m < 50 ends at m + 6 * 3 - 6 = m + 12. Member 49 (score 61)
    // comes after members 0..=48 (scores 12..=60) and 50..=60, and before member 61 (score 61
    // too, but a larger member): rank 49 + 11.
    let ranks = run(
        || SortedSet::with_items(100),
        work,
        || SortedSetRead::ZRank(49),
    );
    assert_eq!(ranks, [SortedSetResponse::Rank(Some(60)); 2]);
    let scores = run(
        || SortedSet::with_items(100),
        work,
        || SortedSetRead::ZScore(49),
    );
    assert_eq!(scores, [SortedSetResponse::Score(Some(49 + 12)); 2]);
}
