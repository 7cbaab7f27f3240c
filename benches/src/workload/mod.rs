//! Workloads: the operation mixes of the NR paper's figures, for one sequential structure each.

use nr_core::Dispatch;

use crate::Rng;

mod dict;
mod hashmap;
mod pq;
mod sorted_set;
mod stack;
mod synthetic;

pub use dict::DictWorkload;
pub use hashmap::HashMapWorkload;
pub use pq::{PqWorkload, PriorityQueue};
pub use sorted_set::SortedSetWorkload;
pub use stack::StackWorkload;
pub use synthetic::SyntheticWorkload;

/// One operation drawn by a workload: a read (kept as an owned description, turned into the
/// structure's possibly-borrowing read operation by [`Workload::read_op`]) or a write.
///
/// # Examples
///
/// ```
/// use benches::Op;
///
/// let op: Op<u64, u64> = Op::Write(1);
/// assert!(matches!(op, Op::Write(1)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op<R, W> {
    /// A read-only operation.
    Read(R),
    /// A mutating operation.
    Write(W),
}

/// The settings a workload records with each result.
///
/// # Examples
///
/// ```
/// let info = benches::WorkloadInfo { panel: "u=10%".into(), size: "10000 keys".into(), mix: "10% writes".into(), distribution: "uniform".into() };
/// assert_eq!(info.panel, "u=10%");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadInfo {
    /// Short label of this workload within its figure (one chart panel), e.g. `u=10%`.
    pub panel: String,
    /// Structure size, e.g. `10000 keys` or `n=200000 c=8`.
    pub size: String,
    /// The operation mix, e.g. `10% updates`.
    pub mix: String,
    /// Key distribution, e.g. `uniform` or `zipf-1.5` (`-` where none applies).
    pub distribution: String,
}

/// A workload over the sequential structure [`Workload::D`]: how to build it, its initial
/// contents, and the random operation stream each thread runs.
///
/// # Examples
///
/// ```
/// use benches::{HashMapWorkload, Op, Rng, Workload};
///
/// let w = HashMapWorkload::new(100, 100);
/// let mut rng = Rng::new(1, 0);
/// assert!(matches!(w.next_op(&mut rng), Op::Write(_)), "100% writes");
/// assert_eq!(w.prefill().len(), 100);
/// ```
pub trait Workload: Sync {
    /// The sequential structure.
    type D: Dispatch;
    /// An owned description of a read operation.
    type Read: Send;

    /// An empty structure; every call returns an equal one.
    fn make(&self) -> Self::D;

    /// Writes that fill a fresh structure to its initial contents.
    fn prefill(&self) -> Vec<<Self::D as Dispatch>::WriteOperation>;

    /// Draws the next operation.
    fn next_op(&self, rng: &mut Rng) -> Op<Self::Read, <Self::D as Dispatch>::WriteOperation>;

    /// Draws the next operation of thread `thread` of the run; by default every thread draws
    /// from the same mix ([`Workload::next_op`]). Workloads with per-thread roles (a writer
    /// thread and reader threads) override it.
    #[inline(always)]
    fn next_op_for(
        &self,
        thread: usize,
        rng: &mut Rng,
    ) -> Op<Self::Read, <Self::D as Dispatch>::WriteOperation> {
        let _ = thread;
        self.next_op(rng)
    }

    /// The structure's read operation for `read`.
    fn read_op<'a>(&self, read: &'a Self::Read) -> <Self::D as Dispatch>::ReadOperation<'a>;

    /// The settings to record with each result.
    fn info(&self) -> WorkloadInfo;
}
