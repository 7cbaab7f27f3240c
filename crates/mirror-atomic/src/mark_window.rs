//! The window of issue 23's durability gap (`tests/mutants/l4_durability.spec`): a remove is
//! linearized at its mark (the BST's flag, the skip list's level-0 mark), so the mark must be
//! durable before another thread can act on it. The crash tests never build that window (their
//! histories are single-threaded or on disjoint keys, and the remover's own later durable step
//! covers its mark before it returns); [`check_mark_seen_by_another_thread`] builds it
//! deterministically for a structure whose remove can be stopped right after its mark.

use pmem::sim::{Image, SimConfig, Simulated};
use pmem::Region;

/// Layout id of the regions of these tests.
const LAYOUT: u64 = 0x3A4C;

/// A simulated region of `size` bytes whose crash keeps exactly what was fenced: no
/// evictions, nothing unfenced kept (on the simulator a thread's write-backs reach the media
/// at its own fence). For [`check_mark_seen_by_another_thread`] only.
pub(crate) fn strict_region(size: u64, seed: u64) -> Region<Simulated> {
    let cfg = SimConfig::new(seed).evictions(0.0).crash_keeps(0.0);
    // SAFETY:
    // - every write to region memory and every backend call is made on the test's thread,
    //   except thread A's in `check_mark_seen_by_another_thread`, which run between the spawn
    //   and the join of its scope while the test's thread waits (the join orders both ways), so
    //   the simulator's reads never race;
    // - no `&mut` into region memory is made.
    unsafe { Region::simulated(LAYOUT, size, cfg) }.expect("region")
}

/// `key` is present in `set` (made on a [`strict_region`]). Thread A runs
/// `mark_only` (a remove of `key` stopped right after its linearization point, before the
/// cleanup whose durable CAS would cover the mark); thread B's `contains(key)` then returns
/// `false`, which only A's remove explains. The image of a crash then (`crash`, which also
/// drops the set), recovered by `recover`, must hold `want` (the keys without `key`).
///
/// B's `remove(key)` or `insert(key)` would not do: each first helps A's cleanup, whose durable
/// CAS hides the mark's own durability.
#[allow(clippy::disallowed_methods)] // thread A (the loom runs run only the `loom_` tests)
pub(crate) fn check_mark_seen_by_another_thread<S: Sync>(
    set: S,
    key: u64,
    mark_only: impl Fn(&S) + Sync,
    contains: impl Fn(&S, u64) -> bool,
    crash: impl FnOnce(S) -> Image,
    recover: impl FnOnce(Region<Simulated>) -> (Vec<u64>, bool),
    want: Vec<u64>,
) {
    std::thread::scope(|s| {
        s.spawn(|| mark_only(&set));
    });
    assert!(!contains(&set, key), "B sees A's mark: {key} is absent");
    let image = crash(set);
    // SAFETY: as in `strict_region`; only this thread uses the recovered region.
    let region = unsafe { Region::from_image(&image, LAYOUT, SimConfig::new(1)) }.expect("image");
    assert_eq!(
        recover(region),
        (want, true),
        "B's completed contains({key}) = false is undone by the crash: A's mark was visible \
         before it was durable"
    );
}
