//! [`Base`]: the space read once per traversal finds the same objects and loads the same
//! values as the heap and the flavor's `load` do, in every flavor.

use mirror_atomic::flavor::{Flavor, Izraelevitz, Mirror, Volatile};
use mirror_atomic::{Heap, NoPersist, PConst, PPtr};

/// Through a `Base`, `get` gives the very object `Heap::get` gives (the primary memory: the
/// volatile arena for Mirror), and `load_from` the value `load` gives, before and after
/// successful and failed CASes on several objects.
fn base_agrees_with_the_heap<F: Flavor>() {
    let heap = Heap::<F, NoPersist>::anonymous(1 << 20).expect("a 1 MiB heap");
    let space = heap.space();
    let atomics: Vec<PPtr<F::Atomic<u64>>> = (0..8u64)
        .map(|i| heap.alloc(F::atomic(i * 3)).expect("room"))
        .collect();
    let key = heap.alloc(PConst::new(0xfeed_u64)).expect("room");
    for round in 0..3u64 {
        let base = space.base();
        assert!(core::ptr::eq(base.space(), space));
        for (i, &p) in atomics.iter().enumerate() {
            // SAFETY: allocated above, never freed.
            let (via_heap, via_base) = unsafe { (heap.get(p), base.get(p)) };
            assert!(core::ptr::eq(via_heap, via_base), "{} object {i}", F::NAME);
            let v = F::load(via_heap, space);
            assert_eq!(F::load_from(via_base, base), v, "{} object {i}", F::NAME);
            assert_eq!(v, i as u64 * 3 + round * 100, "{}", F::NAME);
            assert_eq!(F::compare_exchange(via_heap, v + 1, 0, space), Err(v));
            assert_eq!(F::compare_exchange(via_heap, v, v + 100, space), Ok(v));
            assert_eq!(F::load_from(via_base, base), v + 100, "{}", F::NAME);
        }
        // SAFETY: allocated above, never freed.
        assert_eq!(unsafe { base.get(key) }.get(), 0xfeed);
    }
}

#[test]
fn base_agrees_with_the_heap_volatile() {
    base_agrees_with_the_heap::<Volatile>();
}

#[test]
fn base_agrees_with_the_heap_mirror() {
    base_agrees_with_the_heap::<Mirror>();
}

#[test]
fn base_agrees_with_the_heap_izraelevitz() {
    base_agrees_with_the_heap::<Izraelevitz>();
}
