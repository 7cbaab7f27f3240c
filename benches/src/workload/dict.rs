//! Skip-list dictionary (NR paper Fig. 7): `insert(rnd, v)` / `delete(rnd)` as updates, in equal
//! shares, and `lookup(rnd)` as the read; keys uniform or Zipf.

use seqds::{MapRead, MapWrite, SkipListMap};

use super::{Op, Workload, WorkloadInfo};
use crate::{KeyDist, Rng};

/// The NR paper's dictionary workload on [`SkipListMap`]: keys from `dist` over `0..2 * items`,
/// the `items` even keys present initially; `update_pct`% updates (half `Put`, half `Remove`),
/// the rest `Get`.
///
/// # Examples
///
/// ```
/// use benches::workload::DictWorkload;
/// use benches::{KeyDist, Op, Rng, Workload};
///
/// let w = DictWorkload::new(100, 100, KeyDist::zipf(200, 1.5));
/// assert!(matches!(w.next_op(&mut Rng::new(1, 0)), Op::Write(_)));
/// assert_eq!(w.info().distribution, "zipf-1.5");
/// ```
#[derive(Clone, Debug)]
pub struct DictWorkload {
    items: u64,
    update_pct: u32,
    dist: KeyDist,
}

impl DictWorkload {
    /// `items` keys initially, `update_pct`% updates, keys drawn from `dist` (which should
    /// cover `0..2 * items`).
    ///
    /// # Examples
    ///
    /// See [`DictWorkload`].
    pub fn new(items: u64, update_pct: u32, dist: KeyDist) -> Self {
        Self {
            items,
            update_pct,
            dist,
        }
    }
}

impl Workload for DictWorkload {
    type D = SkipListMap;
    type Read = u64;

    fn make(&self) -> SkipListMap {
        SkipListMap::with_capacity(self.items as usize * 2)
    }

    fn prefill(&self) -> Vec<MapWrite> {
        (0..self.items).map(|k| MapWrite::Put(2 * k, k)).collect()
    }

    #[inline(always)]
    fn next_op(&self, rng: &mut Rng) -> Op<u64, MapWrite> {
        let key = self.dist.sample(rng);
        if rng.percent(self.update_pct) {
            if rng.next_u64() & 1 == 0 {
                Op::Write(MapWrite::Put(key, rng.next_u64()))
            } else {
                Op::Write(MapWrite::Remove(key))
            }
        } else {
            Op::Read(key)
        }
    }

    #[inline]
    fn read_op(&self, key: &u64) -> MapRead {
        MapRead::Get(*key)
    }

    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            panel: format!("{} {}% updates", self.dist, self.update_pct),
            size: format!("{} items of {} keys", self.items, self.dist.keys()),
            mix: format!("{}% updates (insert/delete), rest lookup", self.update_pct),
            distribution: self.dist.to_string(),
        }
    }
}
