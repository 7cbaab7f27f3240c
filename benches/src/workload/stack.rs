//! Stack (NR paper Fig. 8): `push(v)` / `pop()` in equal shares; every operation is an update.

use seqds::{Stack, StackRead, StackWrite};

use super::{Op, Workload, WorkloadInfo};
use crate::Rng;

/// The NR paper's stack workload: `items` values initially, then half `Push(random)`, half
/// `Pop`, no reads.
///
/// # Examples
///
/// ```
/// use benches::workload::StackWorkload;
/// use benches::{Op, Rng, Workload};
///
/// let w = StackWorkload::new(10);
/// assert!(matches!(w.next_op(&mut Rng::new(1, 0)), Op::Write(_)));
/// assert_eq!(w.prefill().len(), 10);
/// ```
#[derive(Clone, Debug)]
pub struct StackWorkload {
    items: usize,
}

impl StackWorkload {
    /// `items` values initially.
    ///
    /// # Examples
    ///
    /// See [`StackWorkload`].
    pub fn new(items: usize) -> Self {
        Self { items }
    }
}

impl Workload for StackWorkload {
    type D = Stack;
    type Read = ();

    fn make(&self) -> Stack {
        Stack::with_capacity(self.items * 2)
    }

    fn prefill(&self) -> Vec<StackWrite> {
        (0..self.items as u64).map(StackWrite::Push).collect()
    }

    #[inline(always)]
    fn next_op(&self, rng: &mut Rng) -> Op<(), StackWrite> {
        let bits = rng.next_u64();
        if bits & 1 == 0 {
            Op::Write(StackWrite::Push(bits >> 1))
        } else {
            Op::Write(StackWrite::Pop)
        }
    }

    #[inline]
    fn read_op(&self, _read: &()) -> StackRead {
        StackRead::Peek
    }

    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            panel: "push/pop".into(),
            size: format!("{} items", self.items),
            mix: "100% updates (push/pop)".into(),
            distribution: "-".into(),
        }
    }
}
