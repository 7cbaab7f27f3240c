//! Synthetic buffer (NR paper §8.2, Fig. 9-10): `n` cache lines, `c` lines per operation plus one
//! hot line every operation touches, `u`% updates.

use seqds::{SyntheticBuffer, SyntheticRead, SyntheticWrite};

use super::{Op, Workload, WorkloadInfo};
use crate::Rng;

/// The NR paper's synthetic workload: reads and updates of `c` random entries and the hot entry
/// of an `n`-entry buffer, `update_pct`% updates.
///
/// # Examples
///
/// ```
/// use benches::workload::SyntheticWorkload;
/// use benches::{Op, Rng, Workload};
///
/// let w = SyntheticWorkload::new(1000, 8, 0);
/// assert!(matches!(w.next_op(&mut Rng::new(1, 0)), Op::Read(_)));
/// assert_eq!(w.info().size, "n=1000 c=8");
/// ```
#[derive(Clone, Debug)]
pub struct SyntheticWorkload {
    n: usize,
    c: usize,
    update_pct: u32,
}

impl SyntheticWorkload {
    /// A buffer of `n` entries, `c` per operation, `update_pct`% updates.
    ///
    /// # Examples
    ///
    /// See [`SyntheticWorkload`].
    pub fn new(n: usize, c: usize, update_pct: u32) -> Self {
        Self { n, c, update_pct }
    }
}

impl Workload for SyntheticWorkload {
    type D = SyntheticBuffer;
    type Read = u64;

    fn make(&self) -> SyntheticBuffer {
        SyntheticBuffer::new(self.n, self.c)
    }

    fn prefill(&self) -> Vec<SyntheticWrite> {
        Vec::new()
    }

    #[inline(always)]
    fn next_op(&self, rng: &mut Rng) -> Op<u64, SyntheticWrite> {
        let seed = rng.next_u64();
        if rng.percent(self.update_pct) {
            Op::Write(SyntheticWrite { seed })
        } else {
            Op::Read(seed)
        }
    }

    #[inline]
    fn read_op(&self, seed: &u64) -> SyntheticRead {
        SyntheticRead { seed: *seed }
    }

    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            panel: format!("u={}%", self.update_pct),
            size: format!("n={} c={}", self.n, self.c),
            mix: format!("{}% updates", self.update_pct),
            distribution: "uniform + 1 hot line".into(),
        }
    }
}
