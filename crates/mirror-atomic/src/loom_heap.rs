//! Loom models of the heap's retire and reuse (`heap.rs`, `alloc.rs`) under the Mirror flavor,
//! with the heap's epoch domain as `epoch-domain`'s loom stand-in: a retired block is freed the
//! moment the last guard alive at its retire is dropped (the earliest any epoch scheme may free
//! it), and the allocator hands it out again at once. So loom explores the most aggressive
//! reuse the heap allows, against readers and allocators on other threads.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p mirror-atomic
//! --lib loom_` (exhaustive within the preemption bound).

use crate::flavor::{Flavor, Mirror};
use crate::heap::{Heap, Object};
use crate::patomic::PAtomic;
use crate::sync::{model, thread, Arc};
use crate::word::PPtr;
use pmem::NoPersist;

/// A published object: its value tells which allocation it is (never changed after
/// publication, so a reader that sees another value sees a reused block).
#[repr(C)]
struct Cell {
    value: PAtomic<u64>,
}
// SAFETY: one persistent atomic of a `u64`: any bits valid, no drop, no pointers, no padding.
unsafe impl Object for Cell {
    const FIELD_BYTES: usize = core::mem::size_of::<PAtomic<u64>>();
}

type MirrorHeap = Heap<Mirror, NoPersist>;

/// Room for a chunk of slots and a chunk of cells (both 16-byte classes share one chunk).
const HEAP: u64 = 256 << 10;

struct World {
    heap: MirrorHeap,
    slot: PPtr<PAtomic<PPtr<Cell>>>,
    first: PPtr<Cell>,
}

impl World {
    fn new() -> Arc<Self> {
        let heap = MirrorHeap::anonymous(HEAP).expect("heap");
        let first = heap.alloc(cell(1)).expect("room");
        let slot = heap.alloc(PAtomic::new(first)).expect("room");
        Arc::new(Self { heap, slot, first })
    }

    fn slot(&self) -> &PAtomic<PPtr<Cell>> {
        // SAFETY: allocated by `new`, never retired.
        unsafe { self.heap.get(self.slot) }
    }
}

fn cell(value: u64) -> Cell {
    Cell {
        value: PAtomic::new(value),
    }
}

/// A reader pinned before a writer replaces and retires the published cell reads the cell it
/// found, never a block handed out again under it; the writer's next allocation and the
/// reader's own (after it unpinned) are blocks no live object holds; and once both are done
/// the retired block is free again (exactly four blocks live: slot, replacement, two new).
#[test]
fn loom_retired_block_is_not_reused_under_a_reader() {
    model(|| {
        let w = World::new();
        let w2 = Arc::clone(&w);
        let reader = thread::spawn(move || {
            let guard = w2.heap.pin();
            let p = w2.slot().load();
            // SAFETY: read from the slot under `guard`, which was pinned before any retire of
            // what the slot held.
            let v = unsafe { w2.heap.get(p) }.value.load();
            let want = if p == w2.first { 1 } else { 2 };
            assert_eq!(v, want, "the reader's cell was reused under its guard");
            drop(guard);
            w2.heap.alloc(cell(4)).expect("room")
        });
        let guard = w.heap.pin();
        let second = w.heap.alloc(cell(2)).expect("room");
        assert_eq!(
            Mirror::compare_exchange(w.slot(), w.first, second, w.heap.space()),
            Ok(w.first)
        );
        // SAFETY: unlinked by the CAS above, retired once.
        unsafe { w.heap.retire(w.first, &guard) };
        drop(guard);
        let third = w.heap.alloc(cell(3)).expect("room");
        let mine = reader.join().expect("no panic");
        let live = [
            w.slot.offset(),
            second.offset(),
            third.offset(),
            mine.offset(),
        ];
        for (i, a) in live.iter().enumerate() {
            assert!(
                !live[i + 1..].contains(a),
                "one block handed out twice: {live:?}"
            );
        }
        assert_eq!(w.heap.live_blocks(), 4, "the retired block came back");
    });
}
