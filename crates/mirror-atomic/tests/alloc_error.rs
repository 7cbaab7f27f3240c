//! A heap that runs out of room says so in its own terms and keeps the region allocator's
//! typed error as its `source()`, each part of the chain said once.

use std::error::Error;

use mirror_atomic::flavor::Volatile;
use mirror_atomic::{Heap, HeapAllocError};

#[test]
fn an_exhausted_heap_keeps_the_region_error_as_its_source() {
    let heap = Heap::<Volatile, _>::anonymous(1 << 20).expect("heap");
    let err = loop {
        if let Err(err) = heap.alloc([0u64; 8]) {
            break err;
        }
    };
    let HeapAllocError::Exhausted { requested, source } = &err else {
        panic!("expected Exhausted, got {err:?}");
    };
    assert_eq!(*requested, 64);
    assert!(matches!(source, pmem::AllocError::Exhausted { .. }));
    let cause = err.source().expect("the region's error is the source");
    assert_eq!(
        cause.downcast_ref::<pmem::AllocError>(),
        Some(source),
        "the source keeps its type"
    );
    assert_eq!(
        err.to_string(),
        "heap exhausted: no free block of 64 bytes and no new chunk"
    );
    assert!(
        cause.to_string().starts_with("region exhausted: "),
        "{cause}"
    );
    assert!(cause.source().is_none());
}
