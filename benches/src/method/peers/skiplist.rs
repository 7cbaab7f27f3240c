//! LF: `crossbeam-skiplist`, the lock-free skip list, as the dictionary's and the skip-list
//! priority queue's lock-free peer (the NR paper uses Lindén and Jonsson's lock-free skip-list
//! priority queue and Herlihy et al.'s lock-free skip list, §8.1).
//!
//! Unlike the paper's LF baselines (which leaked memory), crossbeam reclaims nodes with epochs;
//! that costs it some throughput, and is what a real program would pay.

use crossbeam_skiplist::{SkipMap, SkipSet};
use nr_core::Poisoned;
use seqds::{MapRead, MapResponse, MapWrite, PqRead, PqResponse, PqWrite, SkipListMap, SkipListPq};

use crate::method::{claim, release, Handle, Method, Setup};
use crate::sync::AtomicBool;
use crate::BenchError;

/// `crossbeam_skiplist::SkipMap<u64, u64>` running the dictionary's operations.
///
/// `Put` answers `Put(None)` whatever the key held: crossbeam's `insert` replaces a value
/// without reporting the old one, and reading it first would not be atomic. The benchmark
/// ignores responses, so the measured work is the same.
///
/// # Examples
///
/// ```
/// use benches::method::peers::LfDict;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{MapRead, MapResponse, MapWrite, SkipListMap};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || SkipListMap::new();
/// let setup = Setup { make: &make, prefill: &[MapWrite::Put(1, 2)], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let lf = LfDict::build(&setup)?;
/// let mut h = lf.handle(0, 1)?;
/// assert_eq!(h.read(MapRead::Get(1))?, MapResponse::Get(Some(2)));
/// assert_eq!(h.write(MapWrite::Remove(1))?, MapResponse::Removed(Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LfDict(SkipMap<u64, u64>);

impl Method<SkipListMap> for LfDict {
    const NAME: &'static str = "LF";
    type Handle<'a> = &'a LfDict;

    fn build(setup: &Setup<'_, SkipListMap>) -> Result<Self, BenchError> {
        let peer = LfDict(SkipMap::new());
        for op in setup.prefill {
            // This peer's operations cannot fail.
            let _ = (&peer).write(*op);
        }
        Ok(peer)
    }

    fn handle(&self, _thread: usize, _threads: usize) -> Result<&LfDict, BenchError> {
        Ok(self)
    }
}

impl Handle<SkipListMap> for &LfDict {
    #[inline]
    fn read(&mut self, op: MapRead) -> Result<MapResponse, Poisoned> {
        Ok(match op {
            MapRead::Get(k) => MapResponse::Get(self.0.get(&k).map(|e| *e.value())),
            MapRead::Contains(k) => MapResponse::Contains(self.0.contains_key(&k)),
            MapRead::Len => MapResponse::Len(self.0.len()),
        })
    }

    #[inline]
    fn write(&mut self, op: MapWrite) -> Result<MapResponse, Poisoned> {
        Ok(match op {
            MapWrite::Put(k, v) => {
                self.0.insert(k, v);
                MapResponse::Put(None)
            }
            MapWrite::Remove(k) => MapResponse::Removed(self.0.remove(&k).map(|e| *e.value())),
        })
    }
}

/// Thread index used for the prefill's unique ids.
const PREFILL_THREAD: u64 = 0xFFFF;

/// `crossbeam_skiplist::SkipSet<(key, unique id)>` as a priority queue: `DeleteMin` is
/// `pop_front`, `FindMin` is `front`. The unique id (thread index and a per-thread counter) keeps
/// duplicate keys apart, as the sequential queue does.
///
/// # Examples
///
/// ```
/// use benches::method::peers::LfPq;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{PqRead, PqResponse, PqWrite, SkipListPq};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || SkipListPq::new();
/// let prefill = [PqWrite::Insert(5), PqWrite::Insert(5)];
/// let setup = Setup { make: &make, prefill: &prefill, threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let lf = LfPq::build(&setup)?;
/// let mut h = lf.handle(0, 1)?;
/// assert_eq!(h.read(PqRead::Len)?, PqResponse::Len(2), "duplicates are kept");
/// assert_eq!(h.write(PqWrite::DeleteMin)?, PqResponse::Deleted(Some(5)));
/// assert_eq!(h.read(PqRead::FindMin)?, PqResponse::Min(Some(5)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LfPq {
    set: SkipSet<(u64, u64)>,
    taken: Box<[AtomicBool]>,
}

impl Method<SkipListPq> for LfPq {
    const NAME: &'static str = "LF";
    type Handle<'a> = LfPqHandle<'a>;

    fn build(setup: &Setup<'_, SkipListPq>) -> Result<Self, BenchError> {
        let set = SkipSet::new();
        for (i, op) in setup.prefill.iter().enumerate() {
            if let PqWrite::Insert(k) = *op {
                set.insert((k, PREFILL_THREAD << 48 | i as u64));
            } else {
                set.pop_front();
            }
        }
        Ok(Self {
            set,
            taken: (0..setup.threads.max(1))
                .map(|_| AtomicBool::new(false))
                .collect(),
        })
    }

    fn handle(&self, thread: usize, _threads: usize) -> Result<LfPqHandle<'_>, BenchError> {
        claim(&self.taken, thread)?;
        Ok(LfPqHandle {
            pq: self,
            thread,
            next_id: (thread as u64) << 48,
        })
    }
}

/// A thread's handle on [`LfPq`]: it numbers the thread's inserts.
#[derive(Debug)]
pub struct LfPqHandle<'a> {
    pq: &'a LfPq,
    thread: usize,
    next_id: u64,
}

impl Drop for LfPqHandle<'_> {
    fn drop(&mut self) {
        release(&self.pq.taken, self.thread);
    }
}

impl Handle<SkipListPq> for LfPqHandle<'_> {
    #[inline]
    fn read(&mut self, op: PqRead) -> Result<PqResponse, Poisoned> {
        Ok(match op {
            PqRead::FindMin => PqResponse::Min(self.pq.set.front().map(|e| e.value().0)),
            PqRead::Len => PqResponse::Len(self.pq.set.len()),
        })
    }

    #[inline]
    fn write(&mut self, op: PqWrite) -> Result<PqResponse, Poisoned> {
        Ok(match op {
            PqWrite::Insert(k) => {
                self.next_id += 1;
                self.pq.set.insert((k, self.next_id));
                PqResponse::Inserted
            }
            PqWrite::DeleteMin => PqResponse::Deleted(self.pq.set.pop_front().map(|e| e.value().0)),
        })
    }
}
