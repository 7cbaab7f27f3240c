//! Mirror (PLDI'21) Figure 6, scaled to this machine: the same Harris-Michael list, hash set,
//! skip list and Natarajan-Mittal BST code in three atomic flavors (volatile, Mirror, Izraelevitz), side by side and
//! interleaved in one run, with write-backs and fences per operation.
//!
//! ```sh
//! cargo run --release -p benches --bin mirror_fig6 -- [--structures list,hash,skip,bst]
//!     [--threads 1,2,4] [--mix 80,a,b,c] [--list-range 256] [--hash-range 65536]
//!     [--skip-range 65536] [--bst-range 65536] [--prefill 50] [--duration-ms 1000] [--reps 3]
//!     [--recovery 1000,10000,100000,1000000] [--ops N] [--flavors volatile,mirror,izraelevitz]
//!     [--smoke]
//! ```
//!
//! Workload: uniform keys in `0..range`, `--prefill` percent of the range inserted first (the
//! paper: half); a mix `R` (a number) means R% lookups and (100-R)/2% each of inserts and
//! deletes (80 is the paper's 80/10/10). YCSB's mixes for a set: `a` = 50% lookups, 50%
//! updates; `b` = 95/5; `c` = 100% lookups (an update is an insert or a delete, half each, so
//! the size stays near the prefill). Thread counts above the core count are run and labelled
//! oversubscribed. Persistence: Mirror and Izraelevitz on a mapped file (`pmem::Hardware`:
//! real `clwb`/`clflushopt` + `sfence`, on DRAM here: no NVMM), volatile on an anonymous
//! mapping. Prints Mops/s (median of `--reps`, min-max), pwb/op and pfence+psync/op, pwb per
//! successful update, and bytes per node per flavor; then the ratios of the issue's targets.

// A benchmark driver: its threads, stop flag and sleeps are the harness, not code under test.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use clap::Parser;
use mirror_atomic::flavor::{Flavor, Izraelevitz, Mirror, Volatile};
use mirror_atomic::{Bst, BstNode, HashSet, Heap, List, Node, Persist, Region, SkipList, SkipNode};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

const LAYOUT: u64 = 0x000F_1606;

#[derive(Parser, Debug)]
#[command(
    about = "Mirror Figure 6 (scaled): volatile vs Mirror vs Izraelevitz flavors of the same structures"
)]
struct Args {
    /// Structures: list, hash, skip, bst.
    #[arg(long, value_delimiter = ',', default_value = "list,hash,skip,bst")]
    structures: Vec<String>,
    /// Thread counts (exactly this many run; more than the cores is oversubscribed).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    threads: Vec<usize>,
    /// Mixes: a lookup percentage (the rest split evenly between inserts and deletes), or a
    /// YCSB mix `a` (50), `b` (95), `c` (100).
    #[arg(long, alias = "reads", value_delimiter = ',', default_value = "80")]
    mix: Vec<String>,
    /// Key range of the list (the paper: 256, 128 keys prefilled).
    #[arg(long, default_value_t = 256)]
    list_range: u64,
    /// Key range of the hash set.
    #[arg(long, default_value_t = 65536)]
    hash_range: u64,
    /// Capacity the hash set is made with (`HashSet::with_capacity`: `MAX_LOAD` keys per
    /// bucket, rounded up to a power of two; the set grows past it); 0: the key range.
    #[arg(long, default_value_t = 0)]
    hash_buckets: usize,
    /// Key range of the skip list.
    #[arg(long, default_value_t = 65536)]
    skip_range: u64,
    /// Key range of the BST.
    #[arg(long, default_value_t = 65536)]
    bst_range: u64,
    /// Percent of the key range inserted before measuring.
    #[arg(long, default_value_t = 50)]
    prefill: u64,
    /// Duration of one measurement, milliseconds.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
    /// Repetitions (median reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Also measure recovery time of a Mirror hash set, skip list and BST of these sizes.
    #[arg(long, value_delimiter = ',')]
    recovery: Vec<u64>,
    /// Tiny sizes and durations (CI smoke).
    #[arg(long)]
    smoke: bool,
    /// Seed of the key streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run exactly this many operations per thread instead of `--duration-ms` (a fixed amount
    /// of work, for instruction counts: `valgrind --tool=callgrind` on two values of `--ops`
    /// gives the instructions per operation as the difference over the extra operations).
    #[arg(long)]
    ops: Option<u64>,
    /// Flavors to run (volatile, mirror, izraelevitz); the ratios need all three.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "volatile,mirror,izraelevitz"
    )]
    flavors: Vec<String>,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

trait Set: Send + Sync {
    fn insert(&self, k: u64) -> bool;
    fn remove(&self, k: u64) -> bool;
    fn contains(&self, k: u64) -> bool;
}
/// `Set` for a structure: its own `insert` (which fails only when the region is full, or for
/// the BST's reserved keys, neither of which the workloads reach), `remove` and `contains`.
macro_rules! forward_set {
    ($($ty:ident $(<$c:ident>)?),*) => {$(
        impl<F: Flavor, P: Persist> Set for $ty<F, P $(, $c)?> {
            fn insert(&self, k: u64) -> bool {
                $ty::insert(self, k).expect("region large enough, key below any sentinel")
            }
            fn remove(&self, k: u64) -> bool {
                $ty::remove(self, k)
            }
            fn contains(&self, k: u64) -> bool {
                $ty::contains(self, k)
            }
        }
    )*};
}
forward_set!(List, HashSet, SkipList, Bst);

/// A mix name or lookup percentage as the lookup percentage and a label.
fn parse_mix(m: &str) -> (u32, String) {
    match m.to_ascii_lowercase().as_str() {
        "a" | "ycsb-a" => (50, "ycsb-a".into()),
        "b" | "ycsb-b" => (95, "ycsb-b".into()),
        "c" | "ycsb-c" => (100, "ycsb-c".into()),
        n => {
            let r: u32 = n
                .parse()
                .ok()
                .filter(|r| *r <= 100)
                .unwrap_or_else(|| panic!("--mix: {m:?} is neither a, b, c nor 0..=100"));
            (
                r,
                format!("{r}/{}/{}", (100 - r) / 2, 100 - r - (100 - r) / 2),
            )
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Outcome {
    mops: f64,
    /// Operations per second of the workers' own CPU time (robust to other processes sharing
    /// the cores; with oversubscription it hides the cost of waiting for a descheduled thread).
    mops_cpu: f64,
    pwb_per_op: f64,
    fence_per_op: f64,
    pwb_per_update: f64,
}

fn build(structure: &str, flavor: &str, dir: &Path, n: usize, buckets: usize) -> Box<dyn Set> {
    let size: u64 = 256 + 1024 * 65536; // 64 MiB
    let path = dir.join(format!("{structure}-{flavor}-{n}.pmem"));
    let _ = std::fs::remove_file(&path);
    fn file<F: Flavor>(p: &Path, size: u64) -> Heap<F, pmem::Hardware> {
        Heap::create(p, LAYOUT, size).expect("create region file")
    }
    fn anon(size: u64) -> Heap<Volatile, pmem::NoPersist> {
        Heap::anonymous(size).expect("anonymous heap")
    }
    let set: Box<dyn Set> = match (structure, flavor) {
        ("list", "volatile") => Box::new(List::new(anon(size)).expect("list")),
        ("list", "mirror") => Box::new(List::new(file::<Mirror>(&path, size)).expect("list")),
        ("list", "izraelevitz") => {
            Box::new(List::new(file::<Izraelevitz>(&path, size)).expect("list"))
        }
        ("hash", "volatile") => {
            Box::new(HashSet::with_capacity(anon(size), buckets).expect("hash"))
        }
        ("hash", "mirror") => {
            Box::new(HashSet::with_capacity(file::<Mirror>(&path, size), buckets).expect("hash"))
        }
        ("hash", "izraelevitz") => Box::new(
            HashSet::with_capacity(file::<Izraelevitz>(&path, size), buckets).expect("hash"),
        ),
        ("skip", "volatile") => Box::new(SkipList::new(anon(size)).expect("skip")),
        ("skip", "mirror") => Box::new(SkipList::new(file::<Mirror>(&path, size)).expect("skip")),
        ("skip", "izraelevitz") => {
            Box::new(SkipList::new(file::<Izraelevitz>(&path, size)).expect("skip"))
        }
        ("bst", "volatile") => Box::new(Bst::new(anon(size)).expect("bst")),
        ("bst", "mirror") => Box::new(Bst::new(file::<Mirror>(&path, size)).expect("bst")),
        ("bst", "izraelevitz") => {
            Box::new(Bst::new(file::<Izraelevitz>(&path, size)).expect("bst"))
        }
        other => panic!("unknown structure/flavor {other:?}"),
    };
    set
}

#[allow(clippy::too_many_arguments)]
fn measure(
    set: &dyn Set,
    range: u64,
    prefill: u64,
    reads: u32,
    threads: usize,
    dur: Duration,
    fixed_ops: Option<u64>,
    seed: u64,
) -> Outcome {
    let mut rng = Rng(seed);
    let mut filled = 0;
    while filled < range * prefill.min(100) / 100 {
        if set.insert(rng.next() % range) {
            filled += 1;
        }
    }
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let mut elapsed = Duration::ZERO;
    let results: Vec<(u64, u64, pmem::PersistStats, f64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, barrier) = (&stop, &barrier);
                s.spawn(move || {
                    let mut rng = Rng(seed ^ ((t as u64 + 1) * 0x51));
                    let (mut ops, mut updates) = (0u64, 0u64);
                    let limit = fixed_ops.unwrap_or(u64::MAX);
                    barrier.wait();
                    let before = pmem::stats();
                    let cpu0 = thread_cpu_s();
                    // Relaxed: a stop flag; the scope join orders the results.
                    while !stop.load(Ordering::Relaxed) && ops < limit {
                        for _ in 0..64 {
                            let r = rng.next();
                            let k = (r >> 8) % range;
                            let p = (r % 100) as u32;
                            if p < reads {
                                set.contains(k);
                            } else if p < reads + (100 - reads) / 2 {
                                updates += u64::from(set.insert(k));
                            } else {
                                updates += u64::from(set.remove(k));
                            }
                        }
                        ops += 64;
                    }
                    let cpu = thread_cpu_s().zip(cpu0).map_or(f64::NAN, |(b, a)| b - a);
                    (ops, updates, pmem::stats().since(before), cpu)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        if fixed_ops.is_none() {
            std::thread::sleep(dur);
            stop.store(true, Ordering::Relaxed);
        }
        let r = hs.into_iter().map(|h| h.join().expect("worker")).collect();
        elapsed = start.elapsed();
        r
    });
    let dur = if fixed_ops.is_some() { elapsed } else { dur };
    let ops: u64 = results.iter().map(|r| r.0).sum();
    let updates: u64 = results.iter().map(|r| r.1).sum();
    let pwbs: u64 = results.iter().map(|r| r.2.pwbs).sum();
    let fences: u64 = results.iter().map(|r| r.2.pfences + r.2.psyncs).sum();
    Outcome {
        mops: ops as f64 / dur.as_secs_f64() / 1e6,
        mops_cpu: ops as f64 / results.iter().map(|r| r.3).sum::<f64>() / 1e6,
        pwb_per_op: pwbs as f64 / ops as f64,
        fence_per_op: fences as f64 / ops as f64,
        // No successful update (a read-only mix): nothing to divide by.
        pwb_per_update: if updates == 0 {
            f64::NAN
        } else {
            pwbs as f64 / updates as f64
        },
    }
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// CPU time of the calling thread in seconds (`/proc/thread-self/schedstat`, Linux): recovery
/// is single-threaded, so this is its cost even when other processes share the cores.
fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Recovery time of Mirror structures of `sizes` keys, from a file, after a clean drop.
fn recovery(dir: &Path, sizes: &[u64]) {
    println!(
        "\nrecovery from a file after a clean drop (Mirror flavor; open + trace + copy to DRAM + \
         rebuild free space; the skip list also repairs and re-traces, the BST when a remove was \
         interrupted):"
    );
    println!(
        "{:<24} {:>10} {:>10} {:>12} {:>12} {:>16}",
        "structure", "keys", "region MiB", "wall ms", "CPU ms", "CPU µs per 1k keys"
    );
    #[allow(clippy::too_many_arguments)]
    fn one<S>(
        dir: &Path,
        name: &str,
        n: u64,
        node_block: u64,
        create: impl Fn(Heap<Mirror, pmem::Hardware>) -> S,
        insert: impl Fn(&S, u64),
        recover: impl Fn(Region<pmem::Hardware>) -> S,
        contains: impl Fn(&S, u64) -> bool,
    ) {
        let path = dir.join(format!("recovery-{name}-{n}.pmem"));
        let _ = std::fs::remove_file(&path);
        // Nodes plus the chunk headers, the root, and slack.
        let size = (256 + (n * node_block / 65000 + 4) * 65536).max(1 << 20);
        {
            let set = create(Heap::<Mirror, _>::create(&path, LAYOUT, size).expect("create"));
            // A scrambled order (an odd 64-bit multiplier, halved to stay below the BST's
            // sentinels; key 0 stays 0): increasing keys would build the BST as one path,
            // quadratic to insert.
            for k in 0..n {
                insert(&set, k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1);
            }
        }
        let cpu0 = thread_cpu_s();
        let start = Instant::now();
        let set = recover(Region::open(&path, LAYOUT).expect("open"));
        let took = start.elapsed();
        let cpu = thread_cpu_s().zip(cpu0).map(|(b, a)| b - a);
        assert!(contains(&set, 0));
        println!(
            "{name:<24} {n:>10} {:>10} {:>12.1} {:>12} {:>16}",
            size >> 20,
            took.as_secs_f64() * 1e3,
            cpu.map_or("-".into(), |c| format!("{:.1}", c * 1e3)),
            cpu.map_or("-".into(), |c| format!(
                "{:.1}",
                c * 1e6 / (n as f64 / 1000.0)
            ))
        );
        drop(set);
        let _ = std::fs::remove_file(&path);
    }
    for &n in sizes {
        one(
            dir,
            "hash set (sized)",
            n,
            // A node per key plus a bucket's sentinel node per bucket (up to one per key after
            // the capacity's rounding to a power of two): 2x the node block.
            2 * mirror_atomic::block_size::<Node<Mirror>>() as u64,
            |h| HashSet::<Mirror, _>::with_capacity(h, n as usize).expect("set"),
            |s, k| {
                s.insert(k).expect("room");
            },
            |r| HashSet::<Mirror, _>::recover(r).expect("recover"),
            |s, k| s.contains(k),
        );
        one(
            dir,
            "skip list",
            n,
            // A node's block follows its height: 64 bytes for 63 in 64 nodes (1-3 levels), 128
            // or 224 for the rest (about 65 bytes on average); 2x the one-level block leaves
            // room.
            2 * mirror_atomic::block_size::<SkipNode<Mirror>>() as u64,
            |h| SkipList::new(h).expect("skip list"),
            |s, k| {
                s.insert(k).expect("room");
            },
            |r| SkipList::<Mirror, _>::recover(r).expect("recover"),
            |s, k| s.contains(k),
        );
        one(
            dir,
            "bst",
            n,
            2 * mirror_atomic::block_size::<BstNode<Mirror>>() as u64,
            |h| Bst::new(h).expect("bst"),
            |s, k| {
                s.insert(k).expect("room");
            },
            |r| Bst::<Mirror, _>::recover(r).expect("recover"),
            |s, k| s.contains(k),
        );
    }
}

fn main() {
    let mut a = Args::parse();
    if a.smoke {
        a.threads = vec![1, 2];
        a.duration_ms = 50;
        a.reps = 1;
        a.hash_range = 4096;
        a.skip_range = 4096;
        a.bst_range = 4096;
        if a.recovery.is_empty() {
            a.recovery = vec![1000];
        }
    }
    let dir: PathBuf = std::env::temp_dir().join(format!("mirror-fig6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    println!(
        "mirror_fig6: {cores} cores, 1 NUMA node, flush = {:?} (mapped file on DRAM, no NVMM), \
         duration {} ms, median of {} (min-max), seed {}, git {}",
        pmem::Hardware::new().kind(),
        a.duration_ms,
        a.reps,
        a.seed,
        commit.trim()
    );
    println!(
        "bytes per list/hash node (block): volatile {} ({}), mirror {} ({}), izraelevitz {} ({}); \
         Mirror keeps a second copy of each node in the region",
        core::mem::size_of::<Node<Volatile>>(),
        mirror_atomic::block_size::<Node<Volatile>>(),
        core::mem::size_of::<Node<Mirror>>(),
        mirror_atomic::block_size::<Node<Mirror>>(),
        core::mem::size_of::<Node<Izraelevitz>>(),
        mirror_atomic::block_size::<Node<Izraelevitz>>(),
    );
    println!(
        "bytes per skip-list node of one level (block; each level more adds a link, and the \
         block is the smallest that holds them, up to {} levels): volatile {} ({}), mirror {} \
         ({}), izraelevitz {} ({})",
        mirror_atomic::MAX_LEVEL,
        core::mem::size_of::<SkipNode<Volatile>>(),
        mirror_atomic::block_size::<SkipNode<Volatile>>(),
        core::mem::size_of::<SkipNode<Mirror>>(),
        mirror_atomic::block_size::<SkipNode<Mirror>>(),
        core::mem::size_of::<SkipNode<Izraelevitz>>(),
        mirror_atomic::block_size::<SkipNode<Izraelevitz>>(),
    );
    println!(
        "bytes per BST node (block; a leaf and an internal node per key): volatile {} ({}), \
         mirror {} ({}), izraelevitz {} ({})",
        core::mem::size_of::<BstNode<Volatile>>(),
        mirror_atomic::block_size::<BstNode<Volatile>>(),
        core::mem::size_of::<BstNode<Mirror>>(),
        mirror_atomic::block_size::<BstNode<Mirror>>(),
        core::mem::size_of::<BstNode<Izraelevitz>>(),
        mirror_atomic::block_size::<BstNode<Izraelevitz>>(),
    );
    println!(
        "workload: prefill {}% of the range; list range {}, hash range {}, skip range {}, \
         bst range {}",
        a.prefill, a.list_range, a.hash_range, a.skip_range, a.bst_range
    );
    let flavors: Vec<&str> = a.flavors.iter().map(String::as_str).collect();
    for f in &flavors {
        assert!(
            ["volatile", "mirror", "izraelevitz"].contains(f),
            "--flavors: unknown {f:?} (volatile, mirror, izraelevitz)"
        );
    }
    println!(
        "{:<6} {:>8} {:>3} {:<12} {:>8} {:>17} {:>9} {:>8} {:>9} {:>10}",
        "struct",
        "mix",
        "thr",
        "flavor",
        "Mops/s",
        "(min-max)",
        "Mops/cpu-s",
        "pwb/op",
        "fence/op",
        "pwb/update"
    );
    let dur = Duration::from_millis(a.duration_ms);
    let mut ratios = Vec::new();
    for s in &a.structures {
        let range = match s.as_str() {
            "list" => a.list_range,
            "hash" => a.hash_range,
            "skip" => a.skip_range,
            "bst" => a.bst_range,
            other => panic!("--structures: unknown {other:?} (list, hash, skip, bst)"),
        };
        for (reads, mix) in a.mix.iter().map(|m| parse_mix(m)) {
            for &t in &a.threads {
                let mut runs: Vec<Vec<Outcome>> = vec![Vec::new(); flavors.len()];
                for rep in 0..a.reps {
                    // Interleaved: every flavor once per repetition, same seed.
                    for (i, f) in flavors.iter().enumerate() {
                        let buckets = match a.hash_buckets {
                            0 => range as usize,
                            b => b,
                        };
                        let set = build(s, f, &dir, rep, buckets);
                        runs[i].push(measure(
                            &*set,
                            range,
                            a.prefill,
                            reads,
                            t,
                            dur,
                            a.ops,
                            a.seed + rep as u64,
                        ));
                    }
                }
                let (mut med, mut med_cpu) = (Vec::new(), Vec::new());
                for (i, f) in flavors.iter().enumerate() {
                    let (m, lo, hi) = median(runs[i].iter().map(|o| o.mops).collect());
                    let (mc, _, _) = median(runs[i].iter().map(|o| o.mops_cpu).collect());
                    let o = runs[i][runs[i].len() / 2];
                    let over = if t > cores { " (oversubscribed)" } else { "" };
                    println!(
                        "{s:<6} {mix:>8} {t:>3} {f:<12} {m:>8.3} {:>17} {mc:>10.3} {:>8.3} {:>9.3} {:>10.2}{over}",
                        format!("({lo:.3}-{hi:.3})"),
                        o.pwb_per_op,
                        o.fence_per_op,
                        o.pwb_per_update
                    );
                    med.push(m);
                    med_cpu.push(mc);
                }
                if flavors != ["volatile", "mirror", "izraelevitz"] {
                    continue;
                }
                ratios.push(format!(
                    "{s} {mix} threads={t}: mirror/volatile = {:.2}, mirror/izraelevitz = {:.1} \
                     (per CPU second: {:.2}, {:.1})",
                    med[1] / med[0],
                    med[1] / med[2],
                    med_cpu[1] / med_cpu[0],
                    med_cpu[1] / med_cpu[2]
                ));
            }
        }
    }
    println!("\nratios (medians of this run; targets, list at 1 thread: mirror/volatile >= 0.75, mirror/izraelevitz >= 30):");
    for r in ratios {
        println!("  {r}");
    }
    if !a.recovery.is_empty() {
        recovery(&dir, &a.recovery);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
