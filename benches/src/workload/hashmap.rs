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
    /// With `Some(w)`, threads `0..w` only write and the others only read (`write_pct` unused).
    writers: Option<usize>,
    /// Percentage of writes that change nothing (removals of keys that are never present).
    noop_pct: u32,
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
            writers: None,
            noop_pct: 0,
        }
    }

    /// Per-thread roles: threads `0..writers` only write (`Put`), the others only read. With 2
    /// threads and one writer this is the "1 reader + 1 writer" setting.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::{HashMapWorkload, Op, Rng, Workload};
    ///
    /// let w = HashMapWorkload::split(100, 1);
    /// let mut rng = Rng::new(1, 0);
    /// assert!(matches!(w.next_op_for(0, &mut rng), Op::Write(_)));
    /// assert!(matches!(w.next_op_for(1, &mut rng), Op::Read(_)));
    /// ```
    pub fn split(keys: u64, writers: usize) -> Self {
        Self {
            writers: Some(writers),
            ..Self::new(keys, 0)
        }
    }

    /// `write_pct`% writes, of which `noop_pct`% remove a key that is never present (a write
    /// that changes nothing: the NR paper's §6 "fake update"); the rest are `Put`s.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::{HashMapWorkload, Workload};
    ///
    /// let w = HashMapWorkload::with_noop_writes(100, 100, 50);
    /// assert_eq!(w.info().mix, "100% writes, 50% of them no-ops");
    /// ```
    pub fn with_noop_writes(keys: u64, write_pct: u32, noop_pct: u32) -> Self {
        Self {
            noop_pct,
            ..Self::new(keys, write_pct)
        }
    }

    #[inline(always)]
    fn write(&self, rng: &mut Rng, key: u64) -> MapWrite {
        if self.noop_pct > 0 && rng.percent(self.noop_pct) {
            // Keys `keys..2 keys` are never inserted.
            MapWrite::Remove(self.keys + key)
        } else {
            MapWrite::Put(key, rng.next_u64())
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

    #[inline(always)]
    fn next_op(&self, rng: &mut Rng) -> Op<u64, MapWrite> {
        let key = rng.below(self.keys);
        if rng.percent(self.write_pct) {
            Op::Write(self.write(rng, key))
        } else {
            Op::Read(key)
        }
    }

    // Always inlined: returned through the stack, the 24-byte operation is written in pieces
    // and read back whole, a store-forwarding stall that belongs to no method.
    #[inline(always)]
    fn next_op_for(&self, thread: usize, rng: &mut Rng) -> Op<u64, MapWrite> {
        match self.writers {
            None => self.next_op(rng),
            Some(w) => {
                let key = rng.below(self.keys);
                if thread < w {
                    Op::Write(self.write(rng, key))
                } else {
                    Op::Read(key)
                }
            }
        }
    }

    #[inline]
    fn read_op(&self, key: &u64) -> MapRead {
        MapRead::Get(*key)
    }

    fn info(&self) -> WorkloadInfo {
        let mix = match (self.writers, self.noop_pct) {
            (Some(w), _) => format!("{w} writer thread(s), the others read"),
            (None, 0) => format!("{}% writes", self.write_pct),
            (None, n) => format!("{}% writes, {n}% of them no-ops", self.write_pct),
        };
        WorkloadInfo {
            panel: mix.clone(),
            size: format!("{} keys", self.keys),
            mix,
            distribution: "uniform".into(),
        }
    }
}
