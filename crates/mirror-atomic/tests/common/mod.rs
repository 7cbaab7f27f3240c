//! Shared by the integration tests: the set interface over both structures and every flavor,
//! the mapping of set operations onto testkit's `KvMap` model, and the crash checker.
#![allow(dead_code)] // each test file uses a part

use mirror_atomic::flavor::Flavor;
use mirror_atomic::{
    Bst, BstError, HashError, HashSet, Heap, HeapAllocError, HeapError, List, Persist, Region,
    SkipList,
};
use pmem::sim::{Image, SimConfig, Simulated};
use testkit::lin::Model;
use testkit::models::{KvMap, KvOp, KvRet};

/// Layout id of the test regions.
pub(crate) const LAYOUT: u64 = 0x1212;
/// Region size of the crash tests: header + 4 chunks.
pub(crate) const SIM_SIZE: u64 = 256 + 4 * 65536;
/// Initial buckets of the test hash set: one, so that it doubles several times within the
/// tests' streams (16 keys: doublings at 3, 5 and 9 keys), and crash points, histories and
/// recoveries fall during and between doublings.
pub(crate) const BUCKETS: usize = 1;

/// A simulated test region (`LAYOUT`, `SIM_SIZE`) for a test that uses it, and every structure
/// built on it, on the calling thread only.
pub(crate) fn single_thread_region(cfg: SimConfig) -> Result<Region<Simulated>, pmem::RegionError> {
    // SAFETY:
    // - the caller makes every write to region memory (the structures' pair CAS and node
    //   copies included) and every call of the region's backend on one thread, so the
    //   simulator's reads are sequenced with every write. Deferred frees that crossbeam-epoch
    //   may run on other threads touch only the heap's volatile free lists, never the region;
    // - nothing here makes a `&mut` into region memory.
    unsafe { Region::simulated(LAYOUT, SIM_SIZE, cfg) }
}

/// Recovers `image` as a simulated test region, for use on the calling thread only (as in
/// [`single_thread_region`]).
pub(crate) fn single_thread_recovery(
    image: &Image,
    cfg: SimConfig,
) -> Result<Region<Simulated>, pmem::RegionError> {
    // SAFETY:
    // - as in `single_thread_region`: one thread makes every write and every backend call.
    unsafe { Region::from_image(image, LAYOUT, cfg) }
}

/// What the tests need of a set structure.
pub(crate) trait Set: Sized + Send + Sync {
    type P: Persist;
    fn insert(&self, k: u64) -> Result<bool, HeapAllocError>;
    fn remove(&self, k: u64) -> bool;
    fn contains(&self, k: u64) -> bool;
    fn snapshot(&self) -> (Vec<u64>, bool);
    fn recover(region: Region<Self::P>) -> Result<Self, HeapError>;
    fn create(heap: Heap<Self::F, Self::P>) -> Result<Self, HeapError>;
    type F: Flavor;
    fn live_blocks(&self) -> usize;
    fn persist(&self) -> &Self::P;
    /// Whether recovery leaves exactly the root and one block per key allocated (the skip
    /// list repairs and re-traces; the lists keep removed-but-linked nodes until traversed).
    fn exact_blocks() -> bool {
        false
    }
    /// Blocks allocated for `keys` keys when [`exact_blocks`](Set::exact_blocks) holds.
    fn blocks_for(keys: usize) -> usize {
        keys + 1
    }
    /// Whether the structure grew since it was made (the hash set doubled its buckets).
    fn grew(&self) -> bool {
        false
    }
}

/// The `Set` methods every structure forwards to its own inherent method of the same name,
/// plus `insert` (an expression of `s` = self and `k`) and any extra items (in braces).
macro_rules! forward_set {
    (
        $ty:ident,
        |$s:ident, $k:ident| $insert:expr
        $(, new |$h:ident| $new:expr)?
        $(, { $($extra:tt)* })?
    ) => {
        impl<F: Flavor, P: Persist> Set for $ty<F, P> {
            type P = P;
            type F = F;
            fn insert(&self, k: u64) -> Result<bool, HeapAllocError> {
                let ($s, $k) = (self, k);
                $insert
            }
            fn remove(&self, k: u64) -> bool {
                $ty::remove(self, k)
            }
            fn contains(&self, k: u64) -> bool {
                $ty::contains(self, k)
            }
            fn snapshot(&self) -> (Vec<u64>, bool) {
                $ty::snapshot(self)
            }
            fn recover(region: Region<P>) -> Result<Self, HeapError> {
                $ty::recover(region)
            }
            fn create(heap: Heap<F, P>) -> Result<Self, HeapError> {
                forward_set!(@create $ty, heap $(, $h, $new)?)
            }
            fn live_blocks(&self) -> usize {
                self.heap().live_blocks()
            }
            fn persist(&self) -> &P {
                self.heap().space().persist()
            }
            $($($extra)*)?
        }
    };
    (@create $ty:ident, $heap:ident) => {
        $ty::new($heap)
    };
    (@create $ty:ident, $heap:ident, $h:ident, $new:expr) => {{
        let $h = $heap;
        $new
    }};
}

forward_set!(List, |s, k| List::insert(s, k));
forward_set!(
    HashSet,
    |s, k| HashSet::insert(s, k).map_err(|e| match e {
        HashError::Alloc(e) => e,
        other => panic!("test keys are in range: {other}"),
    }),
    new | h | HashSet::with_capacity(h, BUCKETS),
    {
        fn grew(&self) -> bool {
            self.buckets() > BUCKETS
        }
    }
);
forward_set!(SkipList, |s, k| SkipList::insert(s, k), {
    fn exact_blocks() -> bool {
        true
    }
});
forward_set!(
    Bst,
    |s, k| Bst::insert(s, k).map_err(|e| match e {
        BstError::Alloc(e) => e,
        other => panic!("test keys are never reserved: {other}"),
    }),
    {
        fn exact_blocks() -> bool {
            true
        }
        /// Five sentinels (`R`, `S`, three leaves), then a leaf and an internal node per key.
        fn blocks_for(keys: usize) -> usize {
            2 * keys + 5
        }
    }
);

/// A set operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetOp {
    Insert(u64),
    Remove(u64),
    Contains(u64),
}

/// The set operation as an op of testkit's `KvMap` (a key maps to itself when present).
pub(crate) fn to_kv(op: SetOp) -> KvOp {
    match op {
        SetOp::Insert(k) => KvOp::Put(k, k),
        SetOp::Remove(k) => KvOp::Remove(k),
        SetOp::Contains(k) => KvOp::Get(k),
    }
}

/// Runs `op` on `s` and returns the result in `KvMap`'s terms.
pub(crate) fn apply<S: Set>(s: &S, op: SetOp) -> KvRet {
    let present = |b: bool, k: u64| if b { Some(k) } else { None };
    match op {
        SetOp::Insert(k) => KvRet::Put(present(!s.insert(k).expect("heap has room"), k)),
        SetOp::Remove(k) => KvRet::Remove(present(s.remove(k), k)),
        SetOp::Contains(k) => KvRet::Get(present(s.contains(k), k)),
    }
}

/// The keys of a model state.
pub(crate) fn model_keys(m: &KvMap) -> Vec<u64> {
    m.as_map().keys().copied().collect()
}

/// SplitMix64.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random update-heavy op stream over keys `0..range`.
pub(crate) fn ops(seed: u64, n: usize, range: u64) -> Vec<SetOp> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let k = rng.below(range);
            match rng.below(10) {
                0..=4 => SetOp::Insert(k),
                5..=8 => SetOp::Remove(k),
                _ => SetOp::Contains(k),
            }
        })
        .collect()
}

/// One crash point: runs `ops` on a fresh simulated region that crashes at event `crash_at`,
/// recovers the crash image and checks it. Returns the number of events after creating the
/// structure and at the end of the run.
///
/// Checks: recovery succeeds; the structure is well formed; its keys are those of the model
/// after every op that completed before the crash, with or without the op in flight (never
/// anything else: no completed op lost, no half-applied one); then a second workload on the
/// recovered structure matches the model from there (so the rebuilt free space never hands out
/// a reachable block), and every block is accounted for after it (no leak).
pub(crate) fn crash_point<S: Set<P = Simulated>>(
    seed: u64,
    ops: &[SetOp],
    crash_at: Option<u64>,
) -> Result<(u64, u64), String> {
    let mut cfg = SimConfig::new(seed);
    if let Some(k) = crash_at {
        cfg = cfg.crash_at(k);
    }
    let region = single_thread_region(cfg).map_err(|e| e.to_string())?;
    let set =
        S::create(Heap::new(region).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let created = set_persist(&set).events();
    let mut model = KvMap::new();
    let mut before = model.clone();
    let mut pending: Option<SetOp> = None;
    for &op in ops {
        let was_crashed = set_persist(&set).is_crashed();
        let got = apply(&set, op);
        if was_crashed {
            break;
        }
        if set_persist(&set).is_crashed() {
            pending = Some(op);
            break;
        }
        let want = model.step(&to_kv(op));
        if got != want {
            return Err(format!("op {op:?}: got {got:?}, model {want:?}"));
        }
        before = model.clone();
    }
    let events = set_persist(&set).events();
    let image = match set_persist(&set).crash_image() {
        Some(img) => img,
        None => set_persist(&set).crash(),
    };
    drop(set);
    let region = single_thread_recovery(&image, SimConfig::new(seed ^ 0xDEAD).evictions(0.0))
        .map_err(|e| format!("crash at {crash_at:?}: region: {e}"))?;
    let rec = S::recover(region).map_err(|e| format!("crash at {crash_at:?}: recover: {e}"))?;
    let (keys, ok) = rec.snapshot();
    if !ok {
        return Err(format!(
            "crash at {crash_at:?}: recovered structure malformed: {keys:?}"
        ));
    }
    if S::exact_blocks() && rec.live_blocks() != S::blocks_for(keys.len()) {
        return Err(format!(
            "crash at {crash_at:?}: {} blocks allocated after recovery for {} keys",
            rec.live_blocks(),
            keys.len()
        ));
    }
    let mut after = before.clone();
    if let Some(op) = pending {
        after.step(&to_kv(op));
    }
    let mut model = if keys == model_keys(&before) {
        before
    } else if keys == model_keys(&after) {
        after
    } else {
        return Err(format!(
            "crash at {crash_at:?} (pending {pending:?}): recovered {keys:?}, expected {:?} or {:?}",
            model_keys(&before),
            model_keys(&after)
        ));
    };
    for &op in ops.iter().rev() {
        let got = apply(&rec, op);
        let want = model.step(&to_kv(op));
        if got != want {
            return Err(format!(
                "crash at {crash_at:?}: after recovery, {op:?}: got {got:?}, model {want:?}"
            ));
        }
    }
    let (keys, ok) = rec.snapshot();
    if !ok || keys != model_keys(&model) {
        return Err(format!(
            "crash at {crash_at:?}: after the second workload {keys:?}"
        ));
    }
    Ok((created, events))
}

/// The events after creating the structure and at the end of `ops`, on a crash-free run.
pub(crate) fn count_events<S: Set<P = Simulated>>(seed: u64, ops: &[SetOp]) -> (u64, u64) {
    let region = single_thread_region(SimConfig::new(seed)).expect("region");
    let set = S::create(Heap::new(region).expect("heap")).expect("structure");
    let created = set_persist(&set).events();
    for &op in ops {
        let _ = apply(&set, op);
    }
    (created, set_persist(&set).events())
}

fn set_persist<S: Set<P = Simulated>>(s: &S) -> &Simulated {
    s.persist()
}

/// A multi-threaded crash point: 2 threads on disjoint keys (thread t owns keys = t mod 2) run
/// `n` random ops each on a simulated region that crashes at `crash_at`; after recovery, each
/// thread's keys must be those of its model with or without its op in flight. Threads share
/// nodes (the keys interleave in one list), so a completed op that depends on another thread's
/// not yet durable write is caught. Returns (events after creation, events at the end).
#[allow(clippy::disallowed_methods)] // the harness's own threads
pub(crate) fn mt_crash_point<S: Set<P = Simulated>>(
    seed: u64,
    n: usize,
    crash_at: Option<u64>,
) -> Result<(u64, u64), String> {
    let mut cfg = SimConfig::new(seed);
    if let Some(k) = crash_at {
        cfg = cfg.crash_at(k);
    }
    // SAFETY: NOT met in full, deliberately, and only here (pmem's `Region::simulated`,
    // `# Safety`): the two workers' 16-byte pair CAS (`cmpxchg16b`) and plain node copies can
    // run while the other worker is in a persistence call, whose simulator reads the region
    // with 8-byte atomic loads. That is a mixed-size race or a data race, which the Rust memory
    // model leaves undefined; the test accepts it to crash-test the structures under
    // concurrency, relying on x86-64 hardware (an aligned 8-byte load is single-copy atomic and
    // sees each word before or after a locked write) for what the simulator reads. The rest of
    // the contract holds: no `&mut` into region memory. A run under Miri or a race detector
    // would rightly report it.
    let region = unsafe { Region::simulated(LAYOUT, SIM_SIZE, cfg) }.map_err(|e| e.to_string())?;
    let set =
        S::create(Heap::new(region).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let created = set_persist(&set).events();
    let results: Vec<Result<(KvMap, Option<SetOp>), String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2u64)
            .map(|t| {
                let set = &set;
                s.spawn(move || {
                    let mut model = KvMap::new();
                    let stream: Vec<SetOp> = ops(seed * 2 + t, n, 8)
                        .into_iter()
                        .map(|op| match op {
                            SetOp::Insert(k) => SetOp::Insert(k * 2 + t),
                            SetOp::Remove(k) => SetOp::Remove(k * 2 + t),
                            SetOp::Contains(k) => SetOp::Contains(k * 2 + t),
                        })
                        .collect();
                    for op in stream {
                        let was_crashed = set_persist(set).is_crashed();
                        let got = apply(set, op);
                        if was_crashed {
                            break;
                        }
                        if set_persist(set).is_crashed() {
                            return Ok((model, Some(op)));
                        }
                        let want = model.step(&to_kv(op));
                        if got != want {
                            return Err(format!(
                                "thread {t}, op {op:?}: got {got:?}, model {want:?}"
                            ));
                        }
                    }
                    Ok((model, None))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("worker")).collect()
    });
    let events = set_persist(&set).events();
    let image = match set_persist(&set).crash_image() {
        Some(img) => img,
        None => set_persist(&set).crash(),
    };
    drop(set);
    let region = single_thread_recovery(&image, SimConfig::new(seed ^ 0xBEEF).evictions(0.0))
        .map_err(|e| format!("crash at {crash_at:?}: region: {e}"))?;
    let rec = S::recover(region).map_err(|e| format!("crash at {crash_at:?}: recover: {e}"))?;
    let (keys, ok) = rec.snapshot();
    if !ok {
        return Err(format!(
            "crash at {crash_at:?}: recovered structure malformed: {keys:?}"
        ));
    }
    if S::exact_blocks() && rec.live_blocks() != S::blocks_for(keys.len()) {
        return Err(format!(
            "crash at {crash_at:?}: {} blocks allocated after recovery for {} keys",
            rec.live_blocks(),
            keys.len()
        ));
    }
    for (t, r) in results.into_iter().enumerate() {
        let (before, pending) = r?;
        let mine: Vec<u64> = keys.iter().copied().filter(|k| k % 2 == t as u64).collect();
        let mut after = before.clone();
        if let Some(op) = pending {
            after.step(&to_kv(op));
        }
        if mine != model_keys(&before) && mine != model_keys(&after) {
            return Err(format!(
                "crash at {crash_at:?}, thread {t} (pending {pending:?}): recovered {mine:?}, \
                 expected {:?} or {:?}",
                model_keys(&before),
                model_keys(&after)
            ));
        }
    }
    Ok((created, events))
}

/// Overwrites `bytes` at offset `off` of the file at `path` (corrupting a region on purpose).
pub(crate) fn patch(path: &std::path::Path, off: u64, bytes: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    f.seek(SeekFrom::Start(off)).expect("seek");
    f.write_all(bytes).expect("write");
}
