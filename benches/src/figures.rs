//! The `nr-core` rows of `BENCHMARKS.md`: which workloads and methods each figure runs.

use crate::method::peers::{
    Cnr, CnrCratePeer, DashMapPeer, LfDict, LfPq, NrCratePeer, TreiberStack,
};
use crate::report::Row;
use crate::sweep::Sweep;
use crate::workload::{
    DictWorkload, PqWorkload, SortedSetWorkload, StackWorkload, SyntheticWorkload,
};
use crate::{
    Bench, BenchError, HashMapWorkload, KeyDist, Nr, NrDormant, NrWritesAsReads, Prepared,
    Replicas, RwLock, Workload, WorkloadInfo,
};

/// A figure of the NR paper (scaled to this machine), or the hash-map anchor, or the cost table.
///
/// # Examples
///
/// ```
/// use benches::figures::Figure;
///
/// assert_eq!(Figure::PqSkipList.name(), "pq-skiplist");
/// assert_eq!(Figure::ALL.len(), 11);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Hash map, 10k keys, 0/10/100% writes: NR, SL, RWL, FC, FC+, dashmap, node-replication.
    HashMap,
    /// NR Fig. 5: skip-list priority queue, 0/10/100% updates: black-box methods + LF.
    PqSkipList,
    /// NR Fig. 6: pairing-heap priority queue, 0/10/100% updates: black-box methods.
    PqPairing,
    /// NR Fig. 7: skip-list dictionary, uniform and Zipf keys: black-box methods + LF.
    Dict,
    /// NR Fig. 8: stack push/pop: black-box methods + a Treiber stack.
    Stack,
    /// NR Fig. 9-10: synthetic buffer (n lines, c per op, one hot line, u% updates).
    Synthetic,
    /// NR Fig. 11: Redis-style sorted set, ZRANK / ZINCRBY, 0/10/50/100% updates.
    SortedSet,
    /// NR with one replica at one thread against the bare structure, every structure.
    Cost,
    /// The NR paper's §6 "fake updates": hash map, 100% writes of which 0/50/90% change
    /// nothing, NR with and without `writes_as_reads` (NR-war), RWL.
    FakeUpdates,
    /// NR against the `node-replication` crate on the hash map, with exactly 1 replica (NR
    /// takes its log-free single-replica path; the crate always logs) and exactly 2 replicas
    /// (both log). The crate runs `min(replicas, threads)` replicas (rows record what ran).
    NrPeer,
    /// CNR (several logs, `nr_core::cnr`) against the `cnr` crate (0.1.0) and single-log NR on
    /// a hash map partitioned by key, 1/2/4 logs, 1 and 2 replicas, 10% and 100% writes. CNR
    /// and the crate both run `min(replicas, threads)` replicas (the same work at every point;
    /// rows record what ran), NR exactly the panel's.
    CnrPeer,
}

impl Figure {
    /// Every figure, in the order `all` runs them.
    pub const ALL: [Figure; 11] = [
        Figure::HashMap,
        Figure::PqSkipList,
        Figure::PqPairing,
        Figure::Dict,
        Figure::Stack,
        Figure::Synthetic,
        Figure::SortedSet,
        Figure::FakeUpdates,
        Figure::NrPeer,
        Figure::CnrPeer,
        Figure::Cost,
    ];

    /// The figure's name in CSV rows and file names.
    ///
    /// # Examples
    ///
    /// See [`Figure`].
    pub fn name(self) -> &'static str {
        match self {
            Figure::HashMap => "hashmap",
            Figure::PqSkipList => "pq-skiplist",
            Figure::PqPairing => "pq-pairing",
            Figure::Dict => "dict",
            Figure::Stack => "stack",
            Figure::Synthetic => "synthetic",
            Figure::SortedSet => "sortedset",
            Figure::Cost => "cost",
            Figure::FakeUpdates => "fake-updates",
            Figure::NrPeer => "nr-peer",
            Figure::CnrPeer => "cnr-peer",
        }
    }

    /// What the figure can and cannot show on the machine it runs on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(benches::figures::Figure::Cost.caveat().contains("1 thread"));
    /// ```
    pub fn caveat(self) -> &'static str {
        match self {
            Figure::Cost => {
                "1 thread, 1 replica, both fresh every run: the price of NR's combining (its \
                 single-replica path has no log)"
            }
            Figure::NrPeer => {
                "1 replica: NR skips its log, node-replication always logs; 2 replicas: both log \
                 (node-replication runs min(replicas, threads): 1 at 1 thread, see the CSV \
                 replicas column); NR-dormant is NR with dormant replicas (a replica without a \
                 thread leaves the log); node-replication's waiters only spin, so oversubscribed points \
                 measure waiting policy"
            }
            Figure::CnrPeer => {
                "CNR-Nlog and cnr-crate-Nlog run N logs over a map of N partitions (key k in log \
                 and partition k % N; lock-free reads, one writer per partition); NR runs the \
                 sequential map with one log; CNR and the cnr crate both run min(replicas, \
                 threads) replicas (the crate's idle replica would stop its logs), NR exactly \
                 the panel's; the cnr crate's waiters only spin"
            }
            _ => {
                "throughput vs threads; on a 1-node machine, replicas come from virtual nodes: \
                 multi-replica overheads, not NUMA speedups"
            }
        }
    }
}

/// Workload parameters of the figures.
///
/// # Examples
///
/// ```
/// use benches::figures::Params;
///
/// assert_eq!(Params::paper().hashmap_keys, 10_000);
/// assert!(Params::smoke().pq_items < Params::paper().pq_items);
/// ```
#[derive(Clone, Debug)]
pub struct Params {
    /// Hash-map keys (all present).
    pub hashmap_keys: u64,
    /// Initial priority-queue items.
    pub pq_items: usize,
    /// Initial dictionary items (keys range over twice as many).
    pub dict_items: u64,
    /// Initial stack items.
    pub stack_items: usize,
    /// Synthetic buffer entries (`n`, one cache line each).
    pub synthetic_n: usize,
    /// Synthetic entries touched per operation (`c`).
    pub synthetic_c: usize,
    /// Sorted-set items.
    pub sortedset_items: u64,
    /// Update (write) percentages; `None`: each figure's own list.
    pub mixes: Option<Vec<u32>>,
    /// Dictionary key distributions; `None`: uniform and Zipf 1.5.
    pub zipf: Option<Option<f64>>,
    /// Seed of the initial contents.
    pub seed: u64,
}

impl Params {
    /// The paper's sizes, scaled where noted (200k items; 10k for the hash map and sorted set;
    /// `n` = 200k, `c` = 8 for the synthetic buffer).
    ///
    /// # Examples
    ///
    /// See [`Params`].
    pub fn paper() -> Self {
        Self {
            hashmap_keys: 10_000,
            pq_items: 200_000,
            dict_items: 200_000,
            stack_items: 200_000,
            synthetic_n: 200_000,
            synthetic_c: 8,
            sortedset_items: 10_000,
            mixes: None,
            zipf: None,
            seed: 1,
        }
    }

    /// Tiny sizes for the CI smoke run.
    ///
    /// # Examples
    ///
    /// See [`Params`].
    pub fn smoke() -> Self {
        Self {
            hashmap_keys: 1_000,
            pq_items: 2_000,
            dict_items: 2_000,
            stack_items: 2_000,
            synthetic_n: 2_000,
            synthetic_c: 8,
            sortedset_items: 1_000,
            ..Self::paper()
        }
    }

    fn mixes(&self, default: &[u32]) -> Vec<u32> {
        self.mixes.clone().unwrap_or_else(|| default.to_vec())
    }

    fn dists(&self, keys: u64) -> Vec<KeyDist> {
        match self.zipf {
            None => vec![KeyDist::uniform(keys), KeyDist::zipf(keys, 1.5)],
            Some(None) => vec![KeyDist::uniform(keys)],
            Some(Some(s)) => vec![KeyDist::zipf(keys, s)],
        }
    }
}

/// A figure panel's methods, built for its workload.
pub type Methods<'p> = [Box<dyn Bench + 'p>];

/// Visits every panel of `figure` (not [`Figure::Cost`], which has no panels): builds its
/// workload and the figure's methods (those `sweep` allows, placed as `sweep` says, sized for
/// its largest thread count) and hands them to `visit`, which may rebuild them
/// ([`Bench::rebuild`]) between runs.
///
/// # Errors
///
/// The first [`BenchError`] of a build or of `visit`.
///
/// # Examples
///
/// ```
/// use benches::figures::{for_each_panel, Figure, Params};
/// use benches::sweep::Sweep;
///
/// let topology = nr_core::Topology::detect()?;
/// let sweep = Sweep::new(vec![2], std::time::Duration::ZERO, 1, 0, topology, benches::Replicas::PerNode)?;
/// let mut panels = Vec::new();
/// for_each_panel(Figure::Stack, &sweep, &Params::smoke(), &mut |info, methods| {
///     panels.push((info.panel.clone(), methods.len()));
///     Ok(())
/// })?;
/// assert_eq!(panels, [("push/pop".to_string(), 6)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn for_each_panel(
    figure: Figure,
    sweep: &Sweep,
    params: &Params,
    visit: &mut dyn FnMut(&WorkloadInfo, &mut Methods<'_>) -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    match figure {
        Figure::HashMap => {
            let mut workloads: Vec<_> = params
                .mixes(&[0, 10, 100])
                .into_iter()
                .map(|mix| HashMapWorkload::new(params.hashmap_keys, mix))
                .collect();
            if params.mixes.is_none() {
                // Thread 0 writes, the others read: "1 writer" at 1 thread, "1 reader + 1
                // writer" at 2.
                workloads.push(HashMapWorkload::split(params.hashmap_keys, 1));
            }
            for w in workloads {
                let p = sweep.prepare(w);
                let mut m = Vec::new();
                sweep.add_black_box(&mut m, &p)?;
                sweep.add::<_, DashMapPeer>(&mut m, &p)?;
                sweep.add::<_, NrCratePeer>(&mut m, &p)?;
                visit(&p.workload.info(), &mut m)?;
            }
        }
        Figure::FakeUpdates => {
            for noop in params.mixes(&[0, 50, 90]) {
                let w = HashMapWorkload::with_noop_writes(params.hashmap_keys, 100, noop);
                let p = sweep.prepare(w);
                let mut m = Vec::new();
                sweep.add::<_, Nr<_>>(&mut m, &p)?;
                sweep.add::<_, NrWritesAsReads<_>>(&mut m, &p)?;
                sweep.add::<_, RwLock<_>>(&mut m, &p)?;
                visit(&p.workload.info(), &mut m)?;
            }
        }
        Figure::PqSkipList => {
            for mix in params.mixes(&[0, 10, 100]) {
                let w = PqWorkload::<seqds::SkipListPq>::new(params.pq_items, mix, params.seed);
                let p = sweep.prepare(w);
                let mut m = Vec::new();
                sweep.add_black_box(&mut m, &p)?;
                sweep.add::<_, LfPq>(&mut m, &p)?;
                visit(&p.workload.info(), &mut m)?;
            }
        }
        Figure::PqPairing => {
            for mix in params.mixes(&[0, 10, 100]) {
                let w = PqWorkload::<seqds::PairingHeap>::new(params.pq_items, mix, params.seed);
                let p = sweep.prepare(w);
                let mut m = Vec::new();
                sweep.add_black_box(&mut m, &p)?;
                visit(&p.workload.info(), &mut m)?;
            }
        }
        Figure::Dict => {
            for dist in params.dists(2 * params.dict_items) {
                for mix in params.mixes(&[0, 10, 100]) {
                    let p = sweep.prepare(DictWorkload::new(params.dict_items, mix, dist.clone()));
                    let mut m = Vec::new();
                    sweep.add_black_box(&mut m, &p)?;
                    sweep.add::<_, LfDict>(&mut m, &p)?;
                    visit(&p.workload.info(), &mut m)?;
                }
            }
        }
        Figure::Stack => {
            let p = sweep.prepare(StackWorkload::new(params.stack_items));
            let mut m = Vec::new();
            sweep.add_black_box(&mut m, &p)?;
            sweep.add::<_, TreiberStack>(&mut m, &p)?;
            visit(&p.workload.info(), &mut m)?;
        }
        Figure::Synthetic => {
            for mix in params.mixes(&[0, 10, 100]) {
                let w = SyntheticWorkload::new(params.synthetic_n, params.synthetic_c, mix);
                let p = sweep.prepare(w);
                let mut m = Vec::new();
                sweep.add_black_box(&mut m, &p)?;
                visit(&p.workload.info(), &mut m)?;
            }
        }
        Figure::SortedSet => {
            for mix in params.mixes(&[0, 10, 50, 100]) {
                let p = sweep.prepare(SortedSetWorkload::new(params.sortedset_items, mix));
                let mut m = Vec::new();
                sweep.add_black_box(&mut m, &p)?;
                visit(&p.workload.info(), &mut m)?;
            }
        }
        Figure::NrPeer => peer_panels(sweep, params, visit, &|m, p| {
            sweep.add::<_, Nr<_>>(m, p)?;
            sweep.add::<_, NrDormant<_>>(m, p)?;
            sweep.add::<_, NrCratePeer>(m, p)
        })?,
        Figure::CnrPeer => peer_panels(sweep, params, visit, &|m, p| {
            sweep.add::<_, Nr<_>>(m, p)?;
            sweep.add::<_, Cnr<1>>(m, p)?;
            sweep.add::<_, Cnr<2>>(m, p)?;
            sweep.add::<_, Cnr<4>>(m, p)?;
            sweep.add::<_, CnrCratePeer<1>>(m, p)?;
            sweep.add::<_, CnrCratePeer<2>>(m, p)?;
            sweep.add::<_, CnrCratePeer<4>>(m, p)
        })?,
        Figure::Cost => {}
    }
    Ok(())
}

/// Appends a figure's methods for a prepared hash-map workload.
type AddMethods<'s> = dyn for<'p> Fn(
        &mut Vec<Box<dyn Bench + 'p>>,
        &'p Prepared<HashMapWorkload>,
    ) -> Result<(), BenchError>
    + 's;

/// The panels of the peer figures: the hash map at 10% and 100% writes, with exactly 1 and 2
/// replicas; `add` appends the figure's methods.
fn peer_panels(
    sweep: &Sweep,
    params: &Params,
    visit: &mut dyn FnMut(&WorkloadInfo, &mut Methods<'_>) -> Result<(), BenchError>,
    add: &AddMethods<'_>,
) -> Result<(), BenchError> {
    for mix in params.mixes(&[10, 100]) {
        for replicas in [1, 2] {
            let p = Prepared::new(
                HashMapWorkload::new(params.hashmap_keys, mix),
                sweep.topology.clone(),
                Replicas::Exactly(replicas),
                sweep.max_threads(),
            );
            let mut m = Vec::new();
            add(&mut m, &p)?;
            let mut info = p.workload.info();
            info.panel = if replicas == 1 {
                format!("{}, 1 replica", info.panel)
            } else {
                format!("{}, {replicas} replicas", info.panel)
            };
            visit(&info, &mut m)?;
        }
    }
    Ok(())
}

/// Runs `figure` with `sweep`'s settings and `params`' workloads; returns every run's row.
///
/// # Errors
///
/// The first [`BenchError`] of a run.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use benches::figures::{run, Figure, Params};
/// use benches::sweep::Sweep;
///
/// let topology = nr_core::Topology::detect()?;
/// let mut sweep = Sweep::new(vec![1], Duration::from_millis(2), 1, 0, topology, benches::Replicas::PerNode)?;
/// sweep.methods = Some(vec!["NR".into(), "dashmap".into()]);
/// let mut params = Params::smoke();
/// params.mixes = Some(vec![10]);
/// let rows = run(Figure::HashMap, &sweep, &params)?;
/// assert_eq!(rows.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run(figure: Figure, sweep: &Sweep, params: &Params) -> Result<Vec<Row>, BenchError> {
    let mut rows = Vec::new();
    if figure == Figure::Cost {
        for mix in params.mixes(&[0, 10, 100]) {
            rows.extend(sweep.cost(HashMapWorkload::new(params.hashmap_keys, mix), "hashmap")?);
            let w = PqWorkload::<seqds::SkipListPq>::new(params.pq_items, mix, params.seed);
            rows.extend(sweep.cost(w, "pq-skiplist")?);
            let w = PqWorkload::<seqds::PairingHeap>::new(params.pq_items, mix, params.seed);
            rows.extend(sweep.cost(w, "pq-pairing")?);
            let dist = KeyDist::uniform(2 * params.dict_items);
            rows.extend(sweep.cost(DictWorkload::new(params.dict_items, mix, dist), "dict")?);
            let w = SyntheticWorkload::new(params.synthetic_n, params.synthetic_c, mix);
            rows.extend(sweep.cost(w, "synthetic")?);
            let w = SortedSetWorkload::new(params.sortedset_items, mix);
            rows.extend(sweep.cost(w, "sortedset")?);
        }
        rows.extend(sweep.cost(StackWorkload::new(params.stack_items), "stack")?);
        return Ok(rows);
    }
    for_each_panel(figure, sweep, params, &mut |info, methods| {
        rows.extend(sweep.run_panel(figure.name(), info, methods)?);
        Ok(())
    })?;
    Ok(rows)
}
