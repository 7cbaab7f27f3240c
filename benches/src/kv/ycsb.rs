//! A YCSB-style load generator shared by the example and the benchmarks: key choosers
//! (uniform, and YCSB's *scrambled* Zipfian), operation mixes (paper §IV-A: write-only,
//! read-only, 95% update, 95% read, 50/50), a loader and a timed multi-threaded driver over
//! any [`KvStore`].
//!
//! The scrambled Zipfian follows YCSB's `ScrambledZipfianGenerator`: a Zipfian rank is drawn
//! over 10^10 items with θ = 0.99 (Gray et al.'s method, YCSB's precomputed ζ(10^10) =
//! 26.46902820178302), then hashed with 64-bit FNV-1a and reduced modulo the key count, so
//! the hot keys are spread over the key space instead of being keys 0, 1, 2, ...

use std::fmt;
use std::time::{Duration, Instant};

use nr_core::Topology;

use super::{KvSession, KvStore};
use crate::error::BenchError;
use crate::sync::{scope, sleep, AtomicBool, Barrier, Ordering};

/// A small, fast, seedable generator (xorshift64*).
///
/// # Examples
///
/// ```
/// let mut rng = benches::kv::ycsb::Rng::new(7);
/// assert!(rng.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value).
    ///
    /// # Examples
    ///
    /// ```
    /// let a = benches::kv::ycsb::Rng::new(1).next_u64();
    /// assert_eq!(a, benches::kv::ycsb::Rng::new(1).next_u64());
    /// ```
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = benches::kv::ycsb::Rng::new(1);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(benches::kv::ycsb::Rng::new(3).below(1), 0);
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    ///
    /// # Examples
    ///
    /// ```
    /// let u = benches::kv::ycsb::Rng::new(3).unit();
    /// assert!((0.0..1.0).contains(&u));
    /// ```
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How keys are chosen.
///
/// # Examples
///
/// ```
/// use benches::kv::ycsb::{KeyDist, Rng};
///
/// let zipf = KeyDist::scrambled_zipfian(1000);
/// let mut rng = Rng::new(1);
/// let mut hits = std::collections::HashMap::new();
/// for _ in 0..10_000 {
///     *hits.entry(zipf.sample(&mut rng)).or_insert(0u32) += 1;
/// }
/// let hottest = hits.values().max().copied().unwrap_or(0);
/// // Uniform keys would give each about 10; Zipf 0.99 gives the hottest about 4%.
/// assert!(hottest > 200, "skewed: the hottest key gets {hottest} of 10000");
/// assert!(hits.keys().all(|&k| k < 1000));
/// ```
#[derive(Clone, Debug)]
pub enum KeyDist {
    /// Every key of `0..keys` equally likely.
    Uniform {
        /// The key count.
        keys: u64,
    },
    /// YCSB's scrambled Zipfian, θ = 0.99, over `0..keys`.
    ScrambledZipfian {
        /// The key count.
        keys: u64,
    },
}

/// YCSB's item count for the scrambled Zipfian.
const ZIPF_ITEMS: f64 = 1e10;
/// YCSB's ζ(10^10) for θ = 0.99.
const ZIPF_ZETAN: f64 = 26.469_028_201_783_02;
/// θ.
const ZIPF_THETA: f64 = 0.99;

impl KeyDist {
    /// Uniform over `0..keys`.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = benches::kv::ycsb::KeyDist::uniform(10);
    /// assert_eq!(d.keys(), 10);
    /// ```
    pub fn uniform(keys: u64) -> Self {
        Self::Uniform { keys: keys.max(1) }
    }

    /// YCSB's scrambled Zipfian (θ = 0.99) over `0..keys`.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = benches::kv::ycsb::KeyDist::scrambled_zipfian(10);
    /// assert_eq!(d.to_string(), "zipf0.99");
    /// ```
    pub fn scrambled_zipfian(keys: u64) -> Self {
        Self::ScrambledZipfian { keys: keys.max(1) }
    }

    /// The key count.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(benches::kv::ycsb::KeyDist::uniform(4).keys(), 4);
    /// ```
    pub fn keys(&self) -> u64 {
        match *self {
            Self::Uniform { keys } | Self::ScrambledZipfian { keys } => keys,
        }
    }

    /// A key.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::kv::ycsb::{KeyDist, Rng};
    /// assert!(KeyDist::uniform(5).sample(&mut Rng::new(1)) < 5);
    /// ```
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            Self::Uniform { keys } => rng.below(keys),
            Self::ScrambledZipfian { keys } => fnv1a64(zipf_rank(rng)) % keys,
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uniform { .. } => f.write_str("uniform"),
            Self::ScrambledZipfian { .. } => f.write_str("zipf0.99"),
        }
    }
}

/// A Zipfian rank in `0..10^10` (Gray et al., "Quickly generating billion-record synthetic
/// databases", as in YCSB's `ZipfianGenerator.nextLong`).
fn zipf_rank(rng: &mut Rng) -> u64 {
    let alpha = 1.0 / (1.0 - ZIPF_THETA);
    let zeta2 = 1.0 + 0.5f64.powf(ZIPF_THETA);
    let eta = (1.0 - (2.0 / ZIPF_ITEMS).powf(1.0 - ZIPF_THETA)) / (1.0 - zeta2 / ZIPF_ZETAN);
    let u = rng.unit();
    let uz = u * ZIPF_ZETAN;
    if uz < 1.0 {
        return 0;
    }
    if uz < zeta2 {
        return 1;
    }
    (ZIPF_ITEMS * (eta * u - eta + 1.0).powf(alpha)) as u64
}

/// YCSB's 64-bit FNV-1a over the 8 bytes of `value` (least significant first).
fn fnv1a64(mut value: u64) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        hash ^= value & 0xff;
        hash = hash.wrapping_mul(0x0100_0000_01B3);
        value >>= 8;
    }
    // YCSB takes Math.abs of the signed result.
    (hash as i64).unsigned_abs()
}

/// An operation mix: the share of reads in percent (the rest are updates of existing keys).
///
/// # Examples
///
/// ```
/// use benches::kv::ycsb::Mix;
///
/// assert_eq!(Mix::ALL.len(), 5);
/// assert_eq!(Mix::WRITE_ONLY.read_pct, 0);
/// assert_eq!(Mix::READ_INTENSIVE.to_string(), "read95");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Reads in percent.
    pub read_pct: u32,
}

impl Mix {
    /// 100% updates (paper Fig. 7).
    pub const WRITE_ONLY: Mix = Mix { read_pct: 0 };
    /// 100% reads (Fig. 8).
    pub const READ_ONLY: Mix = Mix { read_pct: 100 };
    /// 95% updates, 5% reads (Fig. 9).
    pub const WRITE_INTENSIVE: Mix = Mix { read_pct: 5 };
    /// 95% reads, 5% updates (Fig. 9).
    pub const READ_INTENSIVE: Mix = Mix { read_pct: 95 };
    /// 50% reads, 50% updates (Fig. 9).
    pub const BALANCED: Mix = Mix { read_pct: 50 };
    /// The five mixes of the paper.
    pub const ALL: [Mix; 5] = [
        Mix::WRITE_ONLY,
        Mix::READ_ONLY,
        Mix::WRITE_INTENSIVE,
        Mix::READ_INTENSIVE,
        Mix::BALANCED,
    ];
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.read_pct {
            0 => f.write_str("write-only"),
            100 => f.write_str("read-only"),
            5 => f.write_str("update95"),
            95 => f.write_str("read95"),
            50 => f.write_str("balanced"),
            r => write!(f, "read{r}"),
        }
    }
}

/// Puts keys `0..keys`, spread round-robin over the store's nodes, with deterministic values.
///
/// # Errors
///
/// The store's errors (for instance a full store: [`BenchError::Store`]).
///
/// # Examples
///
/// ```
/// let kv = benches::kv::KvBase::new(8, 1);
/// benches::kv::ycsb::load(&kv, 100)?;
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn load<S: KvStore>(store: &S, keys: u64) -> Result<(), BenchError> {
    let nodes = store.num_nodes();
    let mut sessions = (0..nodes)
        .map(|node| store.session(node))
        .collect::<Result<Vec<_>, _>>()?;
    let mut value = vec![0u8; store.value_size()];
    for key in 0..keys {
        value[..8].copy_from_slice(&key.to_le_bytes());
        sessions[(key % nodes as u64) as usize].put(key, &value)?;
    }
    Ok(())
}

/// A timed run: threads, mix, keys, duration.
///
/// # Examples
///
/// ```
/// use benches::kv::ycsb::{KeyDist, Mix, RunConfig};
/// let config = RunConfig::new(2, Mix::BALANCED, KeyDist::uniform(100), std::time::Duration::from_millis(10));
/// assert_eq!(config.threads, 2);
/// ```
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Worker threads (exactly this many run; more than CPUs means oversubscribed).
    pub threads: usize,
    /// The operation mix.
    pub mix: Mix,
    /// The key distribution.
    pub dist: KeyDist,
    /// How long to run.
    pub duration: Duration,
    /// Base seed; thread `t` uses `seed + t`.
    pub seed: u64,
    /// When set, threads are pinned: thread `t` runs as node [`spread`]`(t, threads, nodes)`,
    /// pinned to one of that node's CPUs. Otherwise it runs as that node, unpinned.
    pub topology: Option<Topology>,
}

impl RunConfig {
    /// A run without pinning, seed 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::kv::ycsb::{KeyDist, Mix, RunConfig};
    /// let c = RunConfig::new(1, Mix::READ_ONLY, KeyDist::uniform(1), std::time::Duration::ZERO);
    /// assert!(c.topology.is_none());
    /// ```
    pub fn new(threads: usize, mix: Mix, dist: KeyDist, duration: Duration) -> Self {
        Self {
            threads,
            mix,
            dist,
            duration,
            seed: 1,
            topology: None,
        }
    }
}

/// The node thread `t` of `threads` runs as: threads spread evenly over the nodes (with 2
/// threads and 4 virtual nodes over 2 CPUs, nodes 0 and 2, which sit on different CPUs),
/// round-robin when there are more threads than nodes.
///
/// # Examples
///
/// ```
/// use benches::kv::ycsb::spread;
/// assert_eq!((0..2).map(|t| spread(t, 2, 4)).collect::<Vec<_>>(), [0, 2]);
/// assert_eq!((0..4).map(|t| spread(t, 4, 2)).collect::<Vec<_>>(), [0, 1, 0, 1]);
/// ```
pub fn spread(t: usize, threads: usize, nodes: usize) -> usize {
    if threads <= nodes {
        t * nodes / threads.max(1)
    } else {
        t % nodes.max(1)
    }
}

/// What a run did.
///
/// # Examples
///
/// ```
/// let r = benches::kv::ycsb::RunResult {
///     ops: 2_000_000,
///     reads: 1,
///     writes: 1,
///     misses: 0,
///     elapsed: std::time::Duration::from_secs(1),
/// };
/// assert_eq!(r.mops(), 2.0);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct RunResult {
    /// Operations completed by all threads.
    pub ops: u64,
    /// Of which reads.
    pub reads: u64,
    /// Of which updates.
    pub writes: u64,
    /// Reads that found no value (0 after [`load`]: the runs never delete; a check that every
    /// read really copied a value).
    pub misses: u64,
    /// Wall time from the common start to the last thread's stop.
    pub elapsed: Duration,
}

impl RunResult {
    /// Millions of operations per second.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(benches::kv::ycsb::RunResult::default().mops(), 0.0);
    /// ```
    pub fn mops(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs == 0.0 {
            0.0
        } else {
            self.ops as f64 / secs / 1e6
        }
    }
}

/// Runs `config` against `store` (which should hold the keys: see [`load`]). `tick` is called
/// on the calling thread about every `tick_every` while the workers run (for progress or lag
/// reports).
///
/// # Errors
///
/// The first error a worker met (its thread then stops).
///
/// # Examples
///
/// ```
/// use benches::kv::ycsb::{load, run, KeyDist, Mix, RunConfig};
/// use std::time::Duration;
///
/// let kv = benches::kv::DashMapKv::new(8, 1);
/// load(&kv, 100)?;
/// let config = RunConfig::new(2, Mix::BALANCED, KeyDist::scrambled_zipfian(100), Duration::from_millis(20));
/// let result = run(&kv, &config, Duration::from_millis(5), |_| {})?;
/// assert!(result.ops > 0);
/// assert_eq!(result.ops, result.reads + result.writes);
/// assert_eq!(result.misses, 0, "every key was loaded");
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn run<S: KvStore>(
    store: &S,
    config: &RunConfig,
    tick_every: Duration,
    mut tick: impl FnMut(Duration),
) -> Result<RunResult, BenchError> {
    let stop = AtomicBool::new(false);
    let nodes = store.num_nodes();
    let barrier = Barrier::new(config.threads + 1);
    scope(|scope| {
        let workers: Vec<_> = (0..config.threads)
            .map(|t| {
                let (stop, barrier) = (&stop, &barrier);
                scope.spawn(move || -> Result<(u64, u64, u64, Instant), BenchError> {
                    let node = spread(t, config.threads, nodes);
                    if let Some(node) = config.topology.as_ref().and_then(|t| t.nodes().get(node)) {
                        let cpu = node.cpus()[(t / nodes) % node.cpus().len()];
                        // Best effort: an unpinned worker still runs, only less local.
                        let _ = nr_core::pin_current_thread(&[cpu]);
                    }
                    let session = store.session(node);
                    barrier.wait();
                    let mut session = session?;
                    let mut rng = Rng::new(config.seed.wrapping_add(t as u64));
                    let mut value = vec![0u8; store.value_size()];
                    let mut buf = vec![0u8; store.value_size()];
                    let (mut reads, mut writes, mut misses) = (0u64, 0u64, 0u64);
                    // Relaxed: a stop flag; the scope's join orders the results.
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            let key = config.dist.sample(&mut rng);
                            if rng.below(100) < u64::from(config.mix.read_pct) {
                                misses += u64::from(!session.get(key, &mut buf)?);
                                reads += 1;
                            } else {
                                value[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
                                session.put(key, &value)?;
                                writes += 1;
                            }
                        }
                    }
                    Ok((reads, writes, misses, Instant::now()))
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut next_tick = tick_every;
        while start.elapsed() < config.duration {
            let left = config.duration.saturating_sub(start.elapsed());
            sleep(
                left.min(next_tick.saturating_sub(start.elapsed()))
                    .max(Duration::from_micros(100)),
            );
            if start.elapsed() >= next_tick {
                tick(start.elapsed());
                next_tick += tick_every.max(Duration::from_millis(1));
            }
        }
        // Relaxed: see the workers' loop.
        stop.store(true, Ordering::Relaxed);
        let mut result = RunResult::default();
        let mut end = start;
        for worker in workers {
            let (reads, writes, misses, stopped) = match worker.join() {
                Ok(r) => r?,
                Err(payload) => std::panic::resume_unwind(payload),
            };
            result.reads += reads;
            result.writes += writes;
            result.misses += misses;
            end = end.max(stopped);
        }
        result.ops = result.reads + result.writes;
        result.elapsed = end - start;
        Ok(result)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1a 64 of eight zero bytes (offset basis, then eight xor-0/multiply rounds).
        assert_eq!(fnv1a64(0), (0xA8C7_F832_281A_39C5u64 as i64).unsigned_abs());
        assert_ne!(fnv1a64(1), fnv1a64(0));
    }

    #[test]
    fn zipf_rank_zero_is_hottest() {
        let mut rng = Rng::new(9);
        let zeros = (0..100_000).filter(|_| zipf_rank(&mut rng) == 0).count();
        // P(rank 0) = 1 / zeta(10^10) ~ 3.8%.
        assert!((3000..4600).contains(&zeros), "{zeros}");
    }
}
