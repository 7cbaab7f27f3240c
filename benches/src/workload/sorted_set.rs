//! Redis-style sorted set (NR paper §8.3, Fig. 11): `ZRANK` reads and `ZINCRBY` updates on
//! random members.

use seqds::{SortedSet, SortedSetRead, SortedSetWrite};

use super::{Op, Workload, WorkloadInfo};
use crate::Rng;

/// The NR paper's sorted-set workload: members `0..items` (member `m` with score `m`), then
/// `update_pct`% `ZINCRBY member delta` (delta in `-8..=8`) and the rest `ZRANK member`, members
/// uniform.
///
/// # Examples
///
/// ```
/// use benches::workload::SortedSetWorkload;
/// use benches::{Op, Rng, Workload};
///
/// let w = SortedSetWorkload::new(100, 100);
/// assert!(matches!(w.next_op(&mut Rng::new(1, 0)), Op::Write(_)));
/// ```
#[derive(Clone, Debug)]
pub struct SortedSetWorkload {
    items: u64,
    update_pct: u32,
}

impl SortedSetWorkload {
    /// `items` members, `update_pct`% updates.
    ///
    /// # Examples
    ///
    /// See [`SortedSetWorkload`].
    pub fn new(items: u64, update_pct: u32) -> Self {
        Self {
            items: items.max(1),
            update_pct,
        }
    }
}

impl Workload for SortedSetWorkload {
    type D = SortedSet;
    type Read = u64;

    fn make(&self) -> SortedSet {
        SortedSet::with_capacity(self.items as usize)
    }

    fn prefill(&self) -> Vec<SortedSetWrite> {
        (0..self.items)
            .map(|m| SortedSetWrite::ZAdd {
                member: m,
                score: m as i64,
            })
            .collect()
    }

    #[inline(always)]
    fn next_op(&self, rng: &mut Rng) -> Op<u64, SortedSetWrite> {
        let member = rng.below(self.items);
        if rng.percent(self.update_pct) {
            let delta = rng.below(17) as i64 - 8;
            Op::Write(SortedSetWrite::ZIncrBy { member, delta })
        } else {
            Op::Read(member)
        }
    }

    #[inline]
    fn read_op(&self, member: &u64) -> SortedSetRead {
        SortedSetRead::ZRank(*member)
    }

    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            panel: format!("{}% updates", self.update_pct),
            size: format!("{} members", self.items),
            mix: format!("{}% ZINCRBY, rest ZRANK", self.update_pct),
            distribution: "uniform".into(),
        }
    }
}
