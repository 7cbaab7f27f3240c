//! The hash-map anchor: 10k keys, 0/10/100% writes.

use seqds::{HashMapKv, MapRead, MapWrite};

use super::{Op, Workload, WorkloadInfo};
use crate::Rng;

/// Uniform random `Get`s and `Put`s on a hash map of `keys` keys, `write_pct`% of them writes.
///
/// # Examples
///
/// ```
/// use benches::{HashMapWorkload, Workload};
///
/// let w = HashMapWorkload::new(10_000, 10);
/// assert_eq!(w.info().mix, "10% writes");
/// ```
#[derive(Clone, Debug)]
pub struct HashMapWorkload {
    keys: u64,
    write_pct: u32,
}

impl HashMapWorkload {
    /// A workload over keys `0..keys` (all present initially), `write_pct`% writes.
    ///
    /// # Examples
    ///
    /// See [`HashMapWorkload`].
    pub fn new(keys: u64, write_pct: u32) -> Self {
        Self {
            keys: keys.max(1),
            write_pct,
        }
    }
}

impl Workload for HashMapWorkload {
    type D = HashMapKv;
    type Read = u64;

    fn make(&self) -> HashMapKv {
        HashMapKv::new()
    }

    fn prefill(&self) -> Vec<MapWrite> {
        (0..self.keys).map(|k| MapWrite::Put(k, k)).collect()
    }

    #[inline]
    fn next_op(&self, rng: &mut Rng) -> Op<u64, MapWrite> {
        let key = rng.below(self.keys);
        if rng.percent(self.write_pct) {
            Op::Write(MapWrite::Put(key, rng.next_u64()))
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
            panel: format!("{}% writes", self.write_pct),
            size: format!("{} keys", self.keys),
            mix: format!("{}% writes", self.write_pct),
            distribution: "uniform".into(),
        }
    }
}
