//! Inserts at 100,000 keys: fills a file-backed Mirror hash set with `KEYS` scrambled keys on
//! one thread and prints the insert throughput, the write-backs (pwb) and fences (pfence +
//! psync) per insert, and the bucket count at the end. `VARIANT` is `default`
//! (`HashSet::new`) or `capacity` (`HashSet::with_capacity(heap, KEYS)`). It uses only API
//! that the fixed-bucket set (hash-set format 3) had too, so the same file builds against the
//! code before growth, for side-by-side runs (crate README, "The hash set grows").
//!
//! ```sh
//! cargo run --release -p mirror-atomic --example hash_inserts -- default 100000
//! ```

use mirror_atomic::flavor::Mirror;
use mirror_atomic::{HashSet, Heap};
use std::time::Instant;

const LAYOUT: u64 = 0x4855_4e53;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let variant = args.next().unwrap_or_else(|| "default".into());
    let keys: u64 = args.next().map_or(Ok(100_000), |s| s.parse())?;
    let dir = tempfile::tempdir()?;
    // 64 B per key is plenty (a 32-byte node and at most one 32-byte sentinel).
    let heap = Heap::<Mirror, _>::create(dir.path().join("h.pmem"), LAYOUT, (8 << 20) + 64 * keys)?;
    let set = match variant.as_str() {
        "default" => HashSet::new(heap)?,
        "capacity" => HashSet::with_capacity(heap, keys as usize)?,
        other => return Err(format!("unknown variant {other:?} (default, capacity)").into()),
    };
    let before = pmem::stats();
    let start = Instant::now();
    let mut inserted = 0u64;
    for i in 0..keys {
        // Distinct for i < 2^63 (an odd multiplier is a bijection), below 2^63.
        let k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1;
        inserted += u64::from(set.insert(k)?);
    }
    let secs = start.elapsed().as_secs_f64();
    let s = pmem::stats().since(before);
    println!(
        "{variant:<9} keys {inserted:>7}  {:>7.3} Mops/s  {:>5.2} pwb/op  {:>5.2} fence/op  {:>7} buckets",
        inserted as f64 / secs / 1e6,
        s.pwbs as f64 / inserted as f64,
        (s.pfences + s.psyncs) as f64 / inserted as f64,
        set.buckets()
    );
    Ok(())
}
