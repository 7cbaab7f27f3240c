//! The structure that fits pcomb (issue 20's "pcomb where the structure fits it"): a map held in
//! one array, [`ArrayKv`], which is `Pod`, so `pcomb`'s persistent `PBComb` can hold it (it
//! copies the whole state every combining pass), and serde, so nr-durable can too. Its subjects
//! are `pcomb-pod<N>` (`PBComb` in a region file) and `durable-pmem-pod<N>` (nr-durable's region
//! medium, as `durable-pmem`).

use std::path::Path;

use nr_core::Dispatch;
use nr_durable::{Durable, Medium};
use pcomb::{PBComb, PBCombHandle};
use pmem::{Hardware, Pod, Region};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Step, Subject, PMEM_CAPACITY};
use crate::sync::{AtomicU64, Ordering};
use crate::BenchError;

/// A map of `N` slots in one array: key `k` is slot `k % N`, every slot starts at its index.
/// `dispatch` is a get, `dispatch_mut` a put that returns the old value.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use benches::durable_bench::ArrayKv;
///
/// let mut kv = ArrayKv::<4>::prefilled();
/// assert_eq!(kv.dispatch(6), 2); // key 6 is slot 2
/// assert_eq!(kv.dispatch_mut((6, 9)), 2);
/// assert_eq!(kv.dispatch(2), 9);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct ArrayKv<const N: usize>(pub [u64; N]);

// SAFETY:
// - `repr(transparent)` over `[u64; N]`: no padding, every bit pattern is a value;
// - no pointers.
unsafe impl<const N: usize> Pod for ArrayKv<N> {}

impl<const N: usize> ArrayKv<N> {
    /// Every slot holding its index.
    ///
    /// # Examples
    ///
    /// See [`ArrayKv`].
    pub fn prefilled() -> Self {
        let mut a = [0u64; N];
        for (i, v) in a.iter_mut().enumerate() {
            *v = i as u64;
        }
        Self(a)
    }
}

impl<const N: usize> Dispatch for ArrayKv<N> {
    type ReadOperation<'a> = u64;
    type WriteOperation = (u64, u64);
    type Response = u64;
    fn dispatch(&self, k: u64) -> u64 {
        self.0[(k % N as u64) as usize]
    }
    fn dispatch_mut(&mut self, (k, v): (u64, u64)) -> u64 {
        std::mem::replace(&mut self.0[(k % N as u64) as usize], v)
    }
}

/// serde has no arrays longer than 32: the slots as a sequence.
impl<const N: usize> Serialize for ArrayKv<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de, const N: usize> Deserialize<'de> for ArrayKv<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<u64>::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map(Self)
            .map_err(|_| serde::de::Error::invalid_length(n, &"one value per slot"))
    }
}

/// `PBComb` in a region file; counts the persistence instructions of its threads.
struct Pcomb<const N: usize> {
    obj: PBComb<ArrayKv<N>, Hardware>,
    /// `psync`s and `pfence`s of the threads that have finished.
    fences: AtomicU64,
    /// Cache lines written back by them.
    lines: AtomicU64,
}

/// A thread's handle and its persistence counts at registration; adds what it issued to the
/// subject's counters when dropped (on the thread, whose counters `pmem::stats` reads).
struct Counted<'a, const N: usize> {
    h: PBCombHandle<'a, ArrayKv<N>, Hardware>,
    of: &'a Pcomb<N>,
    start: pmem::PersistStats,
}

impl<const N: usize> Drop for Counted<'_, N> {
    fn drop(&mut self) {
        let s = pmem::stats().since(self.start);
        // Relaxed: the totals are read after the threads are joined.
        self.of
            .fences
            .fetch_add(s.psyncs + s.pfences, Ordering::Relaxed);
        self.of.lines.fetch_add(s.pwbs, Ordering::Relaxed);
    }
}

impl<const N: usize> Subject for Pcomb<N> {
    fn worker(&self, _: usize) -> Result<Step<'_>, BenchError> {
        let h = self
            .obj
            .register()
            .map_err(|e| BenchError::Pcomb(e.to_string()))?;
        let mut c = Counted {
            h,
            of: self,
            start: pmem::stats(),
        };
        Ok(Box::new(move |w, k, v| {
            if w {
                c.h.try_execute_mut((k, v))
                    .map_err(|_| BenchError::Poisoned)?;
            } else {
                std::hint::black_box(c.h.try_execute(k).map_err(|_| BenchError::Poisoned)?);
            }
            Ok(())
        }))
    }
    /// (`psync`s + `pfence`s, bytes written back: cache lines × 64).
    fn log_stats(&self) -> (u64, u64) {
        // Relaxed: see `Counted::drop`.
        (
            self.fences.load(Ordering::Relaxed),
            self.lines.load(Ordering::Relaxed) * 64,
        )
    }
}

/// Opens `pcomb-pod<N>` in a region file at `path` for `threads` threads.
pub(super) fn open_pcomb<const N: usize>(
    path: &Path,
    threads: usize,
) -> Result<Box<dyn Subject>, BenchError> {
    // PBcomb keeps two state records per thread plus its own: room for them, generously.
    let state = std::mem::size_of::<ArrayKv<N>>() as u64 + 4096;
    let bytes = (state * (2 * threads as u64 + 4) + (1 << 20)).div_ceil(4096) * 4096;
    let region = Region::create(path, POD_LAYOUT, bytes)?;
    let obj = PBComb::create(region, ArrayKv::<N>::prefilled(), threads.max(1))
        .map_err(|e| BenchError::Pcomb(e.to_string()))?;
    Ok(Box::new(Pcomb {
        obj,
        fences: AtomicU64::new(0),
        lines: AtomicU64::new(0),
    }))
}

/// Opens `durable-pmem-pod<N>` at `path` with `replicas` replicas.
pub(super) fn open_durable<const N: usize>(
    path: &Path,
    replicas: usize,
) -> Result<Box<dyn Subject>, BenchError> {
    Ok(Box::new(super::DurableNr(
        Durable::builder()
            .replicas(replicas)
            .medium(Medium::Pmem {
                path: path.to_path_buf(),
                capacity: PMEM_CAPACITY,
            })
            .open(ArrayKv::<N>::prefilled)?,
    )))
}

/// The layout id of the `pcomb-pod` region files.
const POD_LAYOUT: u64 = 0x5B_E4C5;
