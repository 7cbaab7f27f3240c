//! Recovering mirror-atomic structures from arbitrary region bytes never panics or hangs, and a
//! structure that recovery accepts is well formed and runs operations safely.
//!
//! The same body runs without cargo-fuzz, over thousands of mutated crash images, in
//! `crates/mirror-atomic/tests/recovery_fuzz.rs` (`exercise`); keep the two in step.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mirror_atomic::flavor::{Izraelevitz, Mirror};
use mirror_atomic::{Bst, HashSet, List, SkipList};
use pmem::sim::{Image, SimConfig};
use pmem::Region;

/// The layout id of the mirror-atomic crash tests (their images make good seeds).
const LAYOUT: u64 = 0x1212;

macro_rules! exercise {
    ($image:expr, $ops:expr, $t:ty) => {{
        // SAFETY: this thread runs the recovered structure (every write to the region) and
        // makes every persistence call.
        let recovered = unsafe { Region::from_image($image, LAYOUT, SimConfig::new(1).evictions(0.0)) };
        if let Ok(region) = recovered {
            if let Ok(set) = <$t>::recover(region) {
                assert!(set.snapshot().1, "recovery accepted a malformed structure");
                for &b in $ops {
                    let k = u64::from(b >> 2);
                    match b & 3 {
                        0 => drop(set.insert(k)),
                        1 => drop(set.remove(k)),
                        _ => drop(set.contains(k)),
                    }
                }
                assert!(set.snapshot().1, "operations broke a recovered structure");
            }
        }
    }};
}

fuzz_target!(|data: &[u8]| {
    // The last 16 bytes (if any) drive the operations run after a successful recovery.
    let split = data.len().saturating_sub(16);
    let (bytes, ops) = data.split_at(split);
    let image = Image::from_bytes(bytes.to_vec());
    exercise!(&image, ops, List<Mirror, pmem::sim::Simulated>);
    exercise!(&image, ops, List<Izraelevitz, pmem::sim::Simulated>);
    exercise!(&image, ops, HashSet<Mirror, pmem::sim::Simulated>);
    exercise!(&image, ops, HashSet<Izraelevitz, pmem::sim::Simulated>);
    exercise!(&image, ops, SkipList<Mirror, pmem::sim::Simulated>);
    exercise!(&image, ops, SkipList<Izraelevitz, pmem::sim::Simulated>);
    exercise!(&image, ops, Bst<Mirror, pmem::sim::Simulated>);
    exercise!(&image, ops, Bst<Izraelevitz, pmem::sim::Simulated>);
});
