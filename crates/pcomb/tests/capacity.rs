//! Capacities at the edges (issue 19, item 8): 0 is refused when the structure is built, a
//! capacity whose size cannot be represented or allocated is a typed error (before the fix
//! `PBStack::new(u32::MAX, 2)` aborted the process with "memory allocation of 68719477056 bytes
//! failed"), and a large valid capacity is reserved without touching its memory (before, the
//! words and the free list were filled element by element: `PBStack::new(1 << 30, 2)` touched
//! 20 GB).
//!
//! This file is its own test binary: the resident-memory test measures the whole process, so
//! nothing else here allocates much, and the memory test runs its cases one after another.

use pcomb::pmem::Region;
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack, MAX_HEAP_CAPACITY};
use pcomb::{CombBuildError, NoPersist};

/// Builds a linked structure: `new` without a region, `create` in one.
type Build = fn(u32, usize, Option<Region<NoPersist>>) -> Result<(), CombBuildError>;

/// A structure's builder: `new` without a region, `create` in one.
macro_rules! builder {
    ($T:ident) => {
        (stringify!($T), |c, t, region| match region {
            None => $T::new(c, t).map(drop),
            Some(r) => $T::create(r, c, t, Options::default()).map(drop),
        })
    };
}

/// The four linked structures, each with its builder.
fn linked() -> [(&'static str, Build); 4] {
    [
        builder!(PBStack),
        builder!(PBQueue),
        builder!(PWFStack),
        builder!(PWFQueue),
    ]
}

fn region() -> Region<NoPersist> {
    Region::anonymous(1, 1 << 20).expect("region")
}

#[test]
fn capacity_zero_is_refused_when_the_structure_is_built() {
    for (name, build) in linked() {
        for r in [build(0, 2, None), build(0, 2, Some(region()))] {
            assert!(
                matches!(r, Err(CombBuildError::ZeroCapacity { kind }) if kind == name),
                "{name}: {r:?}"
            );
        }
        // Capacity 1 is the smallest accepted.
        build(1, 2, None).expect("capacity 1");
    }
    assert!(matches!(
        PBHeap::<0>::new(1),
        Err(CombBuildError::ZeroCapacity { kind: "PBHeap" })
    ));
    assert!(matches!(
        PBHeap::<0, NoPersist>::create(region(), 1),
        Err(CombBuildError::ZeroCapacity { kind: "PBHeap" })
    ));
}

/// Sizes that cannot be represented: node counts past the 32-bit links (a queue's extra dummy
/// node makes `u32::MAX` one too many; the wait-free structures multiply by the threads).
#[test]
fn a_capacity_past_the_node_links_is_a_typed_error() {
    // (name, capacity, threads): a node count must be below `u32::MAX`; PBStack needs capacity
    // nodes, PBQueue capacity + 1, the wait-free structures capacity * threads (+ 1 for the
    // queue).
    for (name, cap, threads) in [
        ("PBStack", u32::MAX, 2),
        ("PBQueue", u32::MAX, 2),
        ("PBQueue", u32::MAX - 1, 2),
        ("PWFStack", u32::MAX, 2),
        ("PWFStack", 1 << 31, 2),
        ("PWFStack", u32::MAX, 1024),
        ("PWFQueue", 1 << 31, 2),
        ("PWFQueue", (u32::MAX - 1) / 2, 2),
    ] {
        let (_, build) = linked()
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("known");
        for r in [
            build(cap, threads, None),
            build(cap, threads, Some(region())),
        ] {
            assert!(
                matches!(r, Err(CombBuildError::TooLarge { kind, capacity, max_threads })
                    if kind == name && capacity == u64::from(cap) && max_threads == threads),
                "{name} ({cap}, {threads}): {r:?}"
            );
        }
    }
    assert_eq!(PWFStack::<NoPersist>::bytes_needed(u32::MAX, 2), usize::MAX);
    assert!(matches!(
        PBHeap::<{ MAX_HEAP_CAPACITY + 1 }>::new(1),
        Err(CombBuildError::TooLarge { kind: "PBHeap", .. })
    ));
}

/// `PBStack::new(u32::MAX - 1, 2)` needs 64 GiB: a typed error where the system will not map
/// that much (this machine: 23 GiB, no swap, heuristic overcommit), and a lazily backed
/// reservation where it will. Never the abort it was (`u32::MAX` itself is `TooLarge` now).
#[test]
fn a_capacity_beyond_memory_is_a_typed_error_not_an_abort() {
    match PBStack::new(u32::MAX - 1, 2) {
        Err(CombBuildError::OutOfMemory { bytes }) => assert!(bytes >= 64 << 30, "{bytes}"),
        Err(e) => panic!("unexpected error {e:?}"),
        Ok(_) => eprintln!("this system reserved 64 GiB lazily"),
    }
}

/// The largest heap works in a test thread (2 MiB stack): its state is built and copied on
/// the stack.
#[test]
fn the_largest_heap_runs_in_a_test_thread() {
    let heap = PBHeap::<MAX_HEAP_CAPACITY>::new(2).expect("the limit is accepted");
    let mut h = heap.register().expect("slot");
    for k in (0..64).rev() {
        h.insert(k).expect("room");
    }
    assert_eq!(h.delete_min(), Some(0));
    assert_eq!(h.len(), 63);
}

/// Resident pages of this process (`/proc/self/statm`, second field).
#[cfg(target_os = "linux")]
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("resident field");
    pages * 4096
}

/// A 1 GiB structure (2^26 nodes of 16 bytes) costs far less resident memory than its size
/// when built, through `new` and through `create` in an anonymous region, and works: the
/// reservation is lazy, and the free nodes are a range, not a list.
#[cfg(target_os = "linux")]
#[test]
fn a_large_capacity_is_reserved_without_touching_it() {
    const CAP: u32 = 1 << 26;
    const SIZE: u64 = (CAP as u64) * 16;
    const BOUND: u64 = 64 << 20;
    for (name, in_region) in [
        ("PBStack", false),
        ("PBQueue", false),
        ("PWFStack", false),
        ("PWFQueue", false),
        ("PBStack", true),
        ("PBQueue", true),
        ("PWFStack", true),
        ("PWFQueue", true),
    ] {
        let threads = if name.starts_with("PWF") { 1 } else { 2 };
        let region =
            in_region.then(|| Region::anonymous(1, SIZE + (1 << 20)).expect("region of 1 GiB"));
        let before = resident_bytes();
        let grown = |what: &str| {
            let grown = resident_bytes().saturating_sub(before);
            eprintln!(
                "{name} (region: {in_region}), {what}: resident memory grew {} KiB for {} MiB reserved",
                grown >> 10,
                SIZE >> 20
            );
            assert!(
                grown < BOUND,
                "{name} (region: {in_region}) {what}: {grown} bytes became resident"
            );
        };
        macro_rules! check {
            ($T:ident, $push:ident, $pop:ident) => {{
                let s = match region {
                    None => $T::new(CAP, threads).expect("a valid capacity"),
                    Some(r) => $T::create(r, CAP, threads, Options::default()).expect("fits"),
                };
                grown("built");
                let mut h = s.register().expect("slot");
                for v in 0..1000 {
                    h.$push(v).expect("room");
                }
                let mut out: Vec<u64> = (0..1000).filter_map(|_| h.$pop()).collect();
                out.sort_unstable();
                assert_eq!(out, (0..1000).collect::<Vec<_>>(), "{name}");
                grown("after 1,000 operations");
            }};
        }
        match name {
            "PBStack" => check!(PBStack, push, pop),
            "PBQueue" => check!(PBQueue, enqueue, dequeue),
            "PWFStack" => check!(PWFStack, push, pop),
            _ => check!(PWFQueue, enqueue, dequeue),
        }
    }
}
