//! Recovery from arbitrary region bytes never panics, never hangs, and what it accepts is safe
//! to use: a deterministic randomized test (the offline stand-in for the `recover_region`
//! cargo-fuzz target in `fuzz/`, which runs the same `exercise` body).
//!
//! Seeds: images of every structure (list, hash set, skip list, BST) in both persistent flavors,
//! clean and at random crash points. Each case mutates a seed (random bytes, bit flips, words
//! set to plausible offsets with or without the mark bit, words copied from elsewhere in the
//! image so pointers form cycles, chunk headers with other sizes, truncation) and recovers it as
//! every structure in every flavor. A recovery that succeeds must give a well-formed structure
//! that then runs operations without panicking. `MIRROR_FUZZ_CASES` sets the number of mutated
//! images (default 2,000; each is recovered 8 ways).

mod common;

use common::{Rng, Set, SetOp};
use mirror_atomic::flavor::{Izraelevitz, Mirror};
use mirror_atomic::{Bst, HashSet, Heap, List, SkipList};
use pmem::sim::{Image, SimConfig, Simulated};

const USER: u64 = 256;
const CHUNK: u64 = 65536;

fn cases() -> u64 {
    std::env::var("MIRROR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// An image of structure `S` after `n` random ops (crashing at event `crash_at`, if given).
fn seed_image<S: Set<P = Simulated>>(seed: u64, n: usize, crash_at: Option<u64>) -> Image {
    let mut cfg = SimConfig::new(seed);
    if let Some(k) = crash_at {
        cfg = cfg.crash_at(k);
    }
    let region = common::single_thread_region(cfg).expect("region");
    let set = S::create(Heap::new(region).expect("heap")).expect("structure");
    for op in common::ops(seed, n, 40) {
        if set.persist().is_crashed() {
            break;
        }
        let _ = common::apply(&set, op);
    }
    let p = set.persist();
    p.crash_image().unwrap_or_else(|| p.crash())
}

/// Recovers `image` as `S`; if that succeeds, checks well-formedness and runs a few ops.
/// Returns whether recovery accepted the image.
fn exercise<S: Set<P = Simulated>>(image: &Image, rng: &mut Rng) -> bool {
    let Ok(region) = common::single_thread_recovery(image, SimConfig::new(1).evictions(0.0)) else {
        return false;
    };
    let Ok(set) = S::recover(region) else {
        return false;
    };
    let (keys, ok) = set.snapshot();
    assert!(ok, "recovery accepted a malformed structure: {keys:?}");
    for _ in 0..16 {
        let k = rng.below(64);
        let op = match rng.below(3) {
            0 => SetOp::Insert(k),
            1 => SetOp::Remove(k),
            _ => SetOp::Contains(k),
        };
        match op {
            // A corrupt image may leave little free space: a full heap is a typed error.
            SetOp::Insert(k) => drop(set.insert(k)),
            SetOp::Remove(k) => drop(set.remove(k)),
            SetOp::Contains(k) => drop(set.contains(k)),
        }
    }
    let (keys, ok) = set.snapshot();
    assert!(ok, "operations on a recovered structure broke it: {keys:?}");
    true
}

/// A plausible word for a pointer field: a block offset of some class in some chunk, maybe
/// marked, or a corner value.
fn interesting_word(rng: &mut Rng, len: u64) -> u64 {
    match rng.below(6) {
        0 => {
            let chunk = rng.below(5);
            let block = 16 << rng.below(6);
            USER + chunk * CHUNK + 64 + rng.below(16) * block + rng.below(2)
        }
        1 => rng.below(len + 64),
        2 => [0, 1, u64::MAX, u64::MAX - 1, 1 << 63, 0x4d49_5252_4f52_3032][rng.below(6) as usize],
        3 => 1 << rng.below(64),
        4 => rng.below(64),
        _ => rng.next(),
    }
}

fn mutate(bytes: &mut Vec<u8>, rng: &mut Rng) {
    let len = bytes.len() as u64;
    // Most mutations hit the used part of the region: the first two chunks after the header.
    let end = bytes.len().saturating_sub(1);
    let pick = |rng: &mut Rng| -> usize {
        match rng.below(8) {
            0 => rng.below(len) as usize,
            1 => rng.below(USER) as usize,
            2..=4 => (USER + rng.below(1024)) as usize,
            _ => (USER + CHUNK + rng.below(4096)) as usize,
        }
        .min(end)
    };
    for _ in 0..1 + rng.below(6) {
        match rng.below(6) {
            0 => {
                let at = pick(rng);
                bytes[at] = rng.next() as u8;
            }
            1 => {
                let at = pick(rng);
                bytes[at] ^= 1 << rng.below(8);
            }
            2 | 3 => {
                let at = pick(rng) & !7;
                let w = interesting_word(rng, len);
                if at + 8 <= bytes.len() {
                    bytes[at..at + 8].copy_from_slice(&w.to_le_bytes());
                }
            }
            4 => {
                // Copy a word from elsewhere (another node's pointer: cycles, shared nodes).
                let from = pick(rng) & !7;
                let to = pick(rng) & !7;
                if from + 8 <= bytes.len() && to + 8 <= bytes.len() {
                    let w: [u8; 8] = bytes[from..from + 8].try_into().expect("8 bytes");
                    bytes[to..to + 8].copy_from_slice(&w);
                }
            }
            _ => {
                // Another block size in a chunk header.
                let chunk = (USER + rng.below(4) * CHUNK) as usize;
                let size = 1u64 << rng.below(20);
                if chunk + 16 <= bytes.len() {
                    bytes[chunk + 8..chunk + 16].copy_from_slice(&size.to_le_bytes());
                }
            }
        }
    }
    if rng.below(16) == 0 {
        let keep = rng.below(len + 1) as usize;
        bytes.truncate(keep);
    }
}

#[test]
fn recovery_from_arbitrary_bytes_never_panics() {
    let mut seeds = Vec::new();
    for s in 0..4u64 {
        let n = 20 + 10 * s as usize;
        seeds.push(seed_image::<List<Mirror, Simulated>>(s, n, None));
        seeds.push(seed_image::<HashSet<Mirror, Simulated>>(s, n, None));
        seeds.push(seed_image::<SkipList<Mirror, Simulated>>(s, n, None));
        seeds.push(seed_image::<List<Izraelevitz, Simulated>>(s, n, None));
        seeds.push(seed_image::<HashSet<Izraelevitz, Simulated>>(s, n, None));
        seeds.push(seed_image::<SkipList<Izraelevitz, Simulated>>(s, n, None));
        seeds.push(seed_image::<Bst<Mirror, Simulated>>(s, n, None));
        seeds.push(seed_image::<Bst<Izraelevitz, Simulated>>(s, n, None));
        // Mid-run crash images: half-built towers, half-removed nodes, torn chunk headers.
        let at = 200 + 150 * s;
        seeds.push(seed_image::<SkipList<Mirror, Simulated>>(
            s + 10,
            n,
            Some(at),
        ));
        seeds.push(seed_image::<SkipList<Izraelevitz, Simulated>>(
            s + 10,
            n,
            Some(at),
        ));
        seeds.push(seed_image::<List<Mirror, Simulated>>(s + 10, n, Some(at)));
        // Hash sets from one bucket: crashes during growth (a sentinel being linked).
        seeds.push(seed_image::<HashSet<Mirror, Simulated>>(
            s + 10,
            n,
            Some(at),
        ));
        seeds.push(seed_image::<HashSet<Izraelevitz, Simulated>>(
            s + 10,
            n,
            Some(at),
        ));
        seeds.push(seed_image::<Bst<Mirror, Simulated>>(s + 10, n, Some(at)));
        seeds.push(seed_image::<Bst<Izraelevitz, Simulated>>(
            s + 10,
            n,
            Some(at),
        ));
    }
    let mut rng = Rng(0xF0220);
    let (mut accepted, mut tried) = (0u64, 0u64);
    let total = cases();
    for case in 0..total {
        let base = &seeds[(case % seeds.len() as u64) as usize];
        let mut bytes = base.as_bytes().to_vec();
        mutate(&mut bytes, &mut rng);
        let image = Image::from_bytes(bytes);
        let results = [
            exercise::<List<Mirror, Simulated>>(&image, &mut rng),
            exercise::<List<Izraelevitz, Simulated>>(&image, &mut rng),
            exercise::<HashSet<Mirror, Simulated>>(&image, &mut rng),
            exercise::<HashSet<Izraelevitz, Simulated>>(&image, &mut rng),
            exercise::<SkipList<Mirror, Simulated>>(&image, &mut rng),
            exercise::<SkipList<Izraelevitz, Simulated>>(&image, &mut rng),
            exercise::<Bst<Mirror, Simulated>>(&image, &mut rng),
            exercise::<Bst<Izraelevitz, Simulated>>(&image, &mut rng),
        ];
        tried += results.len() as u64;
        accepted += results.iter().filter(|&&r| r).count() as u64;
    }
    eprintln!(
        "recovery fuzz: {total} mutated images, {tried} recoveries, {accepted} accepted \
         (well formed, operations ran), {} rejected with a typed error",
        tried - accepted
    );
    // Each image is valid for the structure and flavor that wrote it only: some must be
    // accepted (the mutations are not all fatal) and many rejected.
    assert!(accepted > 0 && accepted < tried);
}

#[test]
fn unmutated_seed_images_recover() {
    let mut rng = Rng(1);
    let image = seed_image::<SkipList<Mirror, Simulated>>(3, 60, None);
    assert!(exercise::<SkipList<Mirror, Simulated>>(&image, &mut rng));
    let image = seed_image::<SkipList<Izraelevitz, Simulated>>(3, 60, Some(500));
    assert!(exercise::<SkipList<Izraelevitz, Simulated>>(
        &image, &mut rng
    ));
    let image = seed_image::<Bst<Mirror, Simulated>>(3, 60, None);
    assert!(exercise::<Bst<Mirror, Simulated>>(&image, &mut rng));
    let image = seed_image::<Bst<Izraelevitz, Simulated>>(3, 60, Some(500));
    assert!(exercise::<Bst<Izraelevitz, Simulated>>(&image, &mut rng));
    let image = seed_image::<HashSet<Mirror, Simulated>>(3, 60, None);
    assert!(exercise::<HashSet<Mirror, Simulated>>(&image, &mut rng));
    let image = seed_image::<HashSet<Izraelevitz, Simulated>>(3, 60, Some(500));
    assert!(exercise::<HashSet<Izraelevitz, Simulated>>(
        &image, &mut rng
    ));
}
