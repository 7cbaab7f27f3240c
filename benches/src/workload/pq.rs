//! Priority queues (NR paper Fig. 5-6): `insert(rnd)` / `deleteMin()` as updates, in equal
//! shares so the size stays near constant, and `findMin()` as the read.

use std::marker::PhantomData;

use nr_core::Dispatch;
use seqds::{PairingHeap, PqRead, PqWrite, SkipListPq};

use super::{Op, Workload, WorkloadInfo};
use crate::Rng;

/// A sequential min-priority queue from `seqds` that [`PqWorkload`] can build.
pub trait PriorityQueue: Dispatch<WriteOperation = PqWrite> + Sized + 'static {
    /// An empty queue with room for `capacity` keys.
    fn with_capacity(capacity: usize) -> Self;
    /// The `findMin` read operation.
    fn find_min<'a>() -> Self::ReadOperation<'a>;
    /// Its name in panels (`skip list`, `pairing heap`).
    const LABEL: &'static str;
}

impl PriorityQueue for SkipListPq {
    fn with_capacity(capacity: usize) -> Self {
        SkipListPq::with_capacity(capacity)
    }
    fn find_min<'a>() -> Self::ReadOperation<'a> {
        PqRead::FindMin
    }
    const LABEL: &'static str = "skip list";
}

impl PriorityQueue for PairingHeap {
    fn with_capacity(capacity: usize) -> Self {
        PairingHeap::with_capacity(capacity)
    }
    fn find_min<'a>() -> Self::ReadOperation<'a> {
        PqRead::FindMin
    }
    const LABEL: &'static str = "pairing heap";
}

/// The NR paper's priority-queue workload: `items` random keys initially, then `update_pct`%
/// updates (half `Insert(random)`, half `DeleteMin`) and the rest `FindMin`.
///
/// # Examples
///
/// ```
/// use benches::workload::PqWorkload;
/// use benches::{Op, Rng, Workload};
/// use seqds::SkipListPq;
///
/// let w = PqWorkload::<SkipListPq>::new(1000, 0, 1);
/// assert!(matches!(w.next_op(&mut Rng::new(1, 0)), Op::Read(())));
/// assert_eq!(w.prefill().len(), 1000);
/// ```
#[derive(Debug)]
pub struct PqWorkload<Q> {
    items: usize,
    update_pct: u32,
    seed: u64,
    _queue: PhantomData<fn() -> Q>,
}

impl<Q> PqWorkload<Q> {
    /// `items` keys initially (drawn from `seed`), `update_pct`% updates.
    ///
    /// # Examples
    ///
    /// See [`PqWorkload`].
    pub fn new(items: usize, update_pct: u32, seed: u64) -> Self {
        Self {
            items,
            update_pct,
            seed,
            _queue: PhantomData,
        }
    }
}

impl<Q: PriorityQueue> Workload for PqWorkload<Q> {
    type D = Q;
    type Read = ();

    fn make(&self) -> Q {
        Q::with_capacity(self.items + self.items / 2)
    }

    fn prefill(&self) -> Vec<PqWrite> {
        let mut rng = Rng::new(self.seed, u64::MAX);
        (0..self.items)
            .map(|_| PqWrite::Insert(rng.next_u64()))
            .collect()
    }

    #[inline(always)]
    fn next_op(&self, rng: &mut Rng) -> Op<(), PqWrite> {
        if rng.percent(self.update_pct) {
            if rng.next_u64() & 1 == 0 {
                Op::Write(PqWrite::Insert(rng.next_u64()))
            } else {
                Op::Write(PqWrite::DeleteMin)
            }
        } else {
            Op::Read(())
        }
    }

    #[inline]
    fn read_op<'a>(&self, _read: &'a ()) -> Q::ReadOperation<'a> {
        Q::find_min()
    }

    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            panel: format!("{}% updates", self.update_pct),
            size: format!("{} items", self.items),
            mix: format!(
                "{}% updates (insert/deleteMin), rest findMin",
                self.update_pct
            ),
            distribution: "uniform".into(),
        }
    }
}
