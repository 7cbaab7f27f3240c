//! Making your own lock-free structure persistent by switching its atomic type.
//!
//! A Treiber stack written once against a flavor `F`: with `Volatile` it is an ordinary
//! lock-free stack; with `Mirror` the same code is durably linearizable and survives a restart
//! (here: a file-backed heap dropped and reopened). What the structure provides: its nodes as
//! heap `Object`s, a `Trace` impl naming their pointers, and `alloc`/`retire` for its nodes.
//!
//! ```sh
//! cargo run -p mirror-atomic --example persistent_stack
//! ```

use core::mem::size_of;
use mirror_atomic::flavor::{Flavor, Mirror, Volatile};
use mirror_atomic::{Heap, HeapError, Object, PConst, PPtr, Persist, Trace, Tracer};

#[repr(C)]
struct Node<F: Flavor> {
    value: PConst<u64>,
    // Zero bytes where the layout would leave a gap before a Mirror pair (16-aligned): a
    // heap object has no padding, so no uninitialized byte reaches the file.
    _pad: F::Pad,
    next: F::Atomic<PPtr<Node<F>>>,
}
// SAFETY: a `PConst<u64>`, the flavor's pad and a flavor atomic of a `PPtr`: any bits valid,
// no drop, no pointers, and the fields fill the type (`Heap::alloc` checks that at compile time).
unsafe impl<F: Flavor> Object for Node<F> {
    const FIELD_BYTES: usize =
        size_of::<PConst<u64>>() + size_of::<F::Pad>() + size_of::<F::Atomic<PPtr<Node<F>>>>();
}
impl<F: Flavor> Trace for Node<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        t.visit(F::peek(&self.next));
    }
}

#[repr(C)]
struct Top<F: Flavor> {
    top: F::Atomic<PPtr<Node<F>>>,
}
// SAFETY: one flavor atomic of a `PPtr`.
unsafe impl<F: Flavor> Object for Top<F> {
    const FIELD_BYTES: usize = size_of::<F::Atomic<PPtr<Node<F>>>>();
}
impl<F: Flavor> Trace for Top<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        t.visit(F::peek(&self.top));
    }
}

struct Stack<F: Flavor, P: Persist> {
    heap: Heap<F, P>,
    top: PPtr<Top<F>>,
}

const ROOT: usize = 0;

impl<F: Flavor, P: Persist> Stack<F, P> {
    fn new(mut heap: Heap<F, P>) -> Result<Self, HeapError> {
        let top = heap.alloc(Top::<F> {
            top: F::atomic(PPtr::null()),
        })?;
        heap.set_root(ROOT, top)?;
        Ok(Self { heap, top })
    }

    fn recover(region: pmem::Region<P>) -> Result<Self, HeapError> {
        let mut top = PPtr::null();
        let heap = Heap::recover(region, |t| {
            top = t.root::<Top<F>>(ROOT)?;
            Ok(())
        })?;
        Ok(Self { heap, top })
    }

    fn top(&self) -> &F::Atomic<PPtr<Node<F>>> {
        // SAFETY: allocated by `new` (or found by recovery), never freed.
        &unsafe { self.heap.get(self.top) }.top
    }

    fn push(&self, value: u64) -> Result<(), mirror_atomic::HeapAllocError> {
        let space = self.heap.space();
        loop {
            let top = F::load(self.top(), space);
            let node = self.heap.alloc(Node::<F> {
                value: PConst::new(value),
                _pad: F::Pad::default(),
                next: F::atomic(top),
            })?;
            if F::compare_exchange(self.top(), top, node, space).is_ok() {
                return Ok(());
            }
            // SAFETY: the CAS failed: `node` was never published.
            unsafe { self.heap.free_unpublished(node) };
        }
    }

    fn pop(&self) -> Option<u64> {
        let space = self.heap.space();
        let guard = self.heap.pin();
        loop {
            let top = F::load(self.top(), space);
            if top.is_null() {
                return None;
            }
            // SAFETY: read from the stack under `guard`; retired nodes outlive the guard.
            let node = unsafe { self.heap.get(top) };
            let next = F::load(&node.next, space);
            if F::compare_exchange(self.top(), top, next, space).is_ok() {
                let v = node.value.get();
                // SAFETY: our CAS unlinked `top`.
                unsafe { self.heap.retire(top, &guard) };
                return Some(v);
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The volatile flavor: an ordinary lock-free stack.
    let s = Stack::<Volatile, _>::new(Heap::anonymous(1 << 20)?)?;
    s.push(1)?;
    s.push(2)?;
    assert_eq!((s.pop(), s.pop(), s.pop()), (Some(2), Some(1), None));
    println!("volatile stack: ok");

    // The same code with `Mirror` on a file: it survives a restart.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("stack.pmem");
    const LAYOUT: u64 = 0x57AC;
    {
        let s = Stack::<Mirror, _>::new(Heap::create(&path, LAYOUT, 1 << 20)?)?;
        for v in 1..=5 {
            s.push(v)?;
        }
        assert_eq!(s.pop(), Some(5));
    } // dropped without any shutdown step: every completed push/pop is already durable
    let s = Stack::<Mirror, _>::recover(pmem::Region::open(&path, LAYOUT)?)?;
    let mut left = Vec::new();
    while let Some(v) = s.pop() {
        left.push(v);
    }
    assert_eq!(left, [4, 3, 2, 1]);
    println!("mirror stack after a restart: {left:?}");
    Ok(())
}
