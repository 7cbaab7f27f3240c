//! Inserts at 100,000 keys: fills a file-backed Mirror hash set with `KEYS` scrambled keys on
//! one thread and prints the insert throughput, the write-backs (pwb) and fences (pfence +
//! psync) per insert, and the bucket count at the end; then runs `MIX_OPS` (default 1,000,000)
//! operations of an 80/10/10 mix (lookups, inserts, removes) over twice the keys (so about
//! half are present, as in `mirror_fig6`) on the filled set and prints the same figures for
//! them. `VARIANT` is `default`
//! (`HashSet::new`) or `capacity` (`HashSet::with_capacity(heap, KEYS)`). It uses only API
//! that the fixed-bucket set (hash-set format 3) had too, so the same file builds against the
//! code before growth, for side-by-side runs (crate README, "The hash set grows").
//!
//! ```sh
//! cargo run --release -p mirror-atomic --example hash_inserts -- default 100000 [MIX_OPS]
//! ```

use mirror_atomic::flavor::Mirror;
use mirror_atomic::{HashSet, Heap};
use std::time::Instant;

const LAYOUT: u64 = 0x4855_4e53;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let variant = args.next().unwrap_or_else(|| "default".into());
    let keys: u64 = args.next().map_or(Ok(100_000), |s| s.parse())?;
    let mix_ops: u64 = args.next().map_or(Ok(1_000_000), |s| s.parse())?;
    let dir = tempfile::tempdir()?;
    // 64 B per key is plenty (a 32-byte node and at most one 32-byte sentinel).
    let heap = Heap::<Mirror, _>::create(dir.path().join("h.pmem"), LAYOUT, (8 << 20) + 64 * keys)?;
    let set = match variant.as_str() {
        "default" => HashSet::new(heap)?,
        "capacity" => HashSet::with_capacity(heap, keys as usize)?,
        other => return Err(format!("unknown variant {other:?} (default, capacity)").into()),
    };
    // Distinct for i < 2^63 (an odd multiplier is a bijection), below 2^63.
    let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1;
    let before = pmem::stats();
    let start = Instant::now();
    let mut inserted = 0u64;
    for i in 0..keys {
        inserted += u64::from(set.insert(key(i))?);
    }
    report(&variant, "insert", inserted, start, before, set.buckets());
    let before = pmem::stats();
    let start = Instant::now();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..mix_ops {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = key((x >> 8) % (2 * keys));
        match x % 10 {
            0 => drop(set.insert(k)?),
            1 => drop(set.remove(k)),
            _ => drop(set.contains(k)),
        }
    }
    report(&variant, "80/10/10", mix_ops, start, before, set.buckets());
    Ok(())
}

/// Prints one phase: operations per second, write-backs and fences per operation.
fn report(
    variant: &str,
    phase: &str,
    ops: u64,
    start: Instant,
    before: pmem::PersistStats,
    buckets: usize,
) {
    let secs = start.elapsed().as_secs_f64();
    let s = pmem::stats().since(before);
    println!(
        "{variant:<9} {phase:<8} {ops:>8} ops  {:>7.3} Mops/s  {:>5.2} pwb/op  {:>5.2} fence/op  {buckets:>7} buckets",
        ops as f64 / secs / 1e6,
        s.pwbs as f64 / ops as f64,
        (s.pfences + s.psyncs) as f64 / ops as f64,
    );
}
