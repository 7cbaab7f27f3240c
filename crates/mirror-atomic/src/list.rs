//! The Harris-Michael lock-free sorted linked list (Harris, DISC'01; Michael, SPAA'02, Fig. 4-5),
//! written once over an atomic [`Flavor`].
//!
//! A node is deleted in two steps: its `next` pointer is *marked* (the linearization point of a
//! successful remove), then the node is unlinked from its predecessor, by the remover or by any
//! later traversal (`find`). Unlinked nodes are retired to the heap's epoch-based reclamation.
//!
//! Persistence comes from the flavor alone: with [`Mirror`](crate::flavor::Mirror) every CAS is
//! durable before it is visible and a new node is durable before the CAS that links it, so the
//! list is durably linearizable (paper §5); after recovery, marked nodes still linked count as
//! removed and are unlinked by the next traversal that meets them. The one exception is the
//! unlinking CAS ([`Flavor::compare_exchange_unlinking`]):
//! it changes no key (the node is already marked), so it may be visible before it is durable,
//! and the `psync` of the [`retire`](crate::Heap::retire) that follows it makes it durable
//! before the node's block can be reused.

use crate::error::{HeapAllocError, HeapError};
use crate::flavor::Flavor;
use crate::heap::{Guard, Heap, Object, Trace, Tracer};
use crate::patomic::PConst;
use crate::word::PPtr;
use core::mem::size_of;
use pmem::{NoPersist, Persist, Region};

/// A list node: the marked `next` pointer, then an immutable key (the pair first: a hop loads
/// `next` at the node's own address, format 2), then the flavor's zero [`Flavor::Pad`] (in
/// Mirror the 8 bytes that round the node to its pair's 16-byte alignment: written as zeros,
/// never padding; format 2 left them unwritten, which is why files written before it may hold
/// stray bytes there).
#[repr(C)]
pub struct Node<F: Flavor> {
    pub(crate) next: F::Atomic<PPtr<Node<F>>>,
    pub(crate) key: PConst<u64>,
    _pad: F::Pad,
}

// SAFETY: a flavor atomic of a `PPtr`, a `PConst<u64>` and the flavor's pad: any bits valid, no
// drop, no pointers, and the fields fill the type (checked below).
unsafe impl<F: Flavor> Object for Node<F> {
    const FIELD_BYTES: usize =
        size_of::<F::Atomic<PPtr<Node<F>>>>() + size_of::<PConst<u64>>() + size_of::<F::Pad>();
}

// SAFETY: one flavor atomic of a `PPtr`.
unsafe impl<F: Flavor> Object for ListRoot<F> {
    const FIELD_BYTES: usize = size_of::<Head<F>>();
}

crate::heap::assert_padding_free!(Node<F>, ListRoot<F>);

impl<F: Flavor> core::fmt::Debug for Node<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let next = F::peek(&self.next);
        f.debug_struct("Node")
            .field("key", &self.key.get())
            .field("next", &next)
            .finish()
    }
}

impl<F: Flavor> Trace for Node<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        t.visit(F::peek(&self.next).unmarked());
    }
}

/// A list head (the root object of a [`List`], a bucket of a [`HashSet`](crate::HashSet)).
pub type Head<F> = <F as Flavor>::Atomic<PPtr<Node<F>>>;

/// The root object of a [`List`].
#[repr(C)]
pub struct ListRoot<F: Flavor> {
    head: Head<F>,
}

impl<F: Flavor> core::fmt::Debug for ListRoot<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ListRoot")
            .field("head", &F::peek(&self.head))
            .finish()
    }
}

impl<F: Flavor> Trace for ListRoot<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        t.visit(F::peek(&self.head).unmarked());
    }
}

/// Where `find` stopped: `prev` points to `curr`, the first node with a key `>= key`.
struct Position<'g, F: Flavor> {
    prev: &'g Head<F>,
    curr: PPtr<Node<F>>,
    found: bool,
}

/// Michael's `Find` (SPAA'02 Fig. 5): unlinks every marked node it meets.
fn find<'g, F: Flavor, P: Persist>(
    heap: &'g Heap<F, P>,
    head: &'g Head<F>,
    key: u64,
    guard: &'g Guard,
) -> Position<'g, F> {
    let space = heap.space();
    'retry: loop {
        let mut prev = head;
        let mut curr = F::load(prev, space).unmarked();
        loop {
            if curr.is_null() {
                return Position {
                    prev,
                    curr,
                    found: false,
                };
            }
            // SAFETY: `curr` was read from a live node (or the head) while `guard` is pinned,
            // so it is not reclaimed before the guard ends.
            let node = unsafe { heap.get(curr) };
            let next = F::load(&node.next, space);
            if next.is_marked() {
                // `curr` is logically deleted: unlink it.
                // SAFETY: `curr` was read from `prev` under `guard` (above).
                if !unsafe { unlink(heap, prev, curr, next, guard) } {
                    continue 'retry;
                }
                curr = next.unmarked();
                continue;
            }
            let k = node.key.get();
            if k >= key {
                return Position {
                    prev,
                    curr,
                    found: k == key,
                };
            }
            prev = &node.next;
            curr = next;
        }
    }
}

/// `find`'s unlinking of a marked node `curr` (whose `next` is `next`) from `prev`: whether
/// the CAS succeeded (and `curr` was retired). Out of line and cold, so the traversal loop
/// carries none of the CAS's address computations (a marked node is met rarely).
///
/// # Safety
///
/// `curr` was read from `prev` under `guard`.
#[cold]
#[inline(never)]
unsafe fn unlink<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    prev: &Head<F>,
    curr: PPtr<Node<F>>,
    next: PPtr<Node<F>>,
    guard: &Guard,
) -> bool {
    // Unlinking: its durability comes from the `retire` below (see
    // `Flavor::compare_exchange_unlinking`).
    if F::compare_exchange_unlinking(prev, curr, next.unmarked(), heap.space()).is_err() {
        return false;
    }
    // SAFETY: our CAS unlinked `curr` (read under `guard`, caller); only the thread whose CAS
    // unlinks it retires it.
    unsafe { heap.retire(curr, guard) };
    true
}

/// Inserts `key` below `head`: `Ok(true)` if it was absent.
pub(crate) fn insert<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
    key: u64,
    guard: &Guard,
) -> Result<bool, HeapAllocError> {
    insert_node(heap, head, key, guard).map(|(_, new)| new)
}

/// Inserts `key` below `head` if it is absent: the node that holds it (the new one or the one
/// found) and whether it was inserted. The hash set makes its bucket sentinels with it.
#[inline]
pub(crate) fn insert_node<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
    key: u64,
    guard: &Guard,
) -> Result<(PPtr<Node<F>>, bool), HeapAllocError> {
    let space = heap.space();
    loop {
        let pos = find(heap, head, key, guard);
        if pos.found {
            return Ok((pos.curr, false));
        }
        // A new node per attempt: `next` is written before the node is published (and made
        // durable by `alloc`), so no persistent store to an unpublished node is needed.
        let node = heap.alloc(Node::<F> {
            key: PConst::new(key),
            next: F::atomic(pos.curr),
            _pad: F::Pad::default(),
        })?;
        if F::compare_exchange(pos.prev, pos.curr, node, space).is_ok() {
            return Ok((node, true));
        }
        // SAFETY: the CAS failed, so `node` was never published.
        unsafe { heap.free_unpublished(node) };
    }
}

/// Removes `key` below `head`: `true` if it was present.
pub(crate) fn remove<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
    key: u64,
    guard: &Guard,
) -> bool {
    let space = heap.space();
    loop {
        let pos = find(heap, head, key, guard);
        if !pos.found {
            return false;
        }
        // SAFETY: read under `guard` (see `find`).
        let node = unsafe { heap.get(pos.curr) };
        let next = F::load(&node.next, space);
        if next.is_marked() {
            continue;
        }
        // Linearization point of a successful remove: the mark.
        if F::compare_exchange(&node.next, next, next.with_mark(), space).is_err() {
            continue;
        }
        // Unlinking, made durable by the `retire` (see `Flavor::compare_exchange_unlinking`).
        if F::compare_exchange_unlinking(pos.prev, pos.curr, next, space).is_ok() {
            // SAFETY: our CAS unlinked it.
            unsafe { heap.retire(pos.curr, guard) };
        } else {
            let _ = find(heap, head, key, guard);
        }
        return true;
    }
}

/// Whether `key` is below `head` (wait-free traversal, no unlinking).
pub(crate) fn contains<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
    key: u64,
    _guard: &Guard,
) -> bool {
    let space = heap.space();
    let mut curr = F::load(head, space).unmarked();
    while !curr.is_null() {
        // SAFETY: read under `_guard` from a live node or the head.
        let node = unsafe { heap.get(curr) };
        let next = F::load(&node.next, space);
        let k = node.key.get();
        if k >= key {
            return k == key && !next.is_marked();
        }
        curr = next.unmarked();
    }
    false
}

/// The keys below `head` in list order (marked nodes skipped), and whether the list is well
/// formed (strictly increasing keys).
pub(crate) fn snapshot<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
    guard: &Guard,
) -> (Vec<u64>, bool) {
    let mut keys = Vec::new();
    let sorted = walk(heap, head, guard, |_, k, marked| {
        if !marked {
            keys.push(k);
        }
    });
    (keys, sorted)
}

/// Calls `visit(node, key, marked)` for each node below `head` in list order, while the keys
/// strictly increase: whether the walk reached the end (`false`: a key not above the one
/// before it, where the walk stopped, since it may be a cycle).
pub(crate) fn walk<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
    _guard: &Guard,
    mut visit: impl FnMut(PPtr<Node<F>>, u64, bool),
) -> bool {
    let space = heap.space();
    let mut last: Option<u64> = None;
    let mut curr = F::load(head, space).unmarked();
    while !curr.is_null() {
        // SAFETY: read under `_guard` from a live node or the head.
        let node = unsafe { heap.get(curr) };
        let next = F::load(&node.next, space);
        let k = node.key.get();
        if last.is_some_and(|l| l >= k) {
            return false;
        }
        last = Some(k);
        visit(curr, k, next.is_marked());
        curr = next.unmarked();
    }
    true
}

/// Recovery check of one list: keys strictly increasing (so no cycle), every node in a block.
pub(crate) fn check_recovered<F: Flavor, P: Persist>(
    heap: &Heap<F, P>,
    head: &Head<F>,
) -> Result<(), HeapError> {
    // A head never holds a marked pointer (only a node's `next` is marked, when the node is
    // removed); with one, every CAS on the head would fail and inserts would retry forever
    // (found by the recovery fuzz test).
    if F::load(head, heap.space()).is_marked() {
        return Err(HeapError::Malformed {
            what: "list head holds a marked pointer",
        });
    }
    let guard = heap.pin();
    let (_, sorted) = snapshot(heap, head, &guard);
    if sorted {
        Ok(())
    } else {
        Err(HeapError::Malformed {
            what: "list keys not strictly increasing",
        })
    }
}

/// A lock-free sorted set of `u64` keys (Harris-Michael list) in flavor `F`.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, List};
/// let list = List::<Mirror, _>::anonymous(1 << 20)?;
/// assert!(list.insert(3)?);
/// assert!(!list.insert(3)?);
/// assert!(list.contains(3));
/// assert!(list.remove(3));
/// assert!(!list.contains(3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct List<F: Flavor, P: Persist> {
    heap: Heap<F, P>,
    root: PPtr<ListRoot<F>>,
}

impl<F: Flavor, P: Persist> core::fmt::Debug for List<F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("List")
            .field("heap", &self.heap)
            .field("root", &self.root)
            .finish()
    }
}

/// Root slot a [`List`] uses.
pub const LIST_ROOT_SLOT: usize = 0;

impl<F: Flavor> List<F, NoPersist> {
    /// An empty list on an anonymous (volatile) heap of `size` bytes.
    ///
    /// # Errors
    ///
    /// As [`List::new`] and [`Heap::anonymous`].
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Heap::anonymous(size)?)
    }
}

impl<F: Flavor, P: Persist> List<F, P> {
    /// An empty list in a fresh heap (its root object in slot [`LIST_ROOT_SLOT`]).
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the root does not fit.
    pub fn new(mut heap: Heap<F, P>) -> Result<Self, HeapError> {
        let root = heap.alloc(ListRoot::<F> {
            head: F::atomic(PPtr::null()),
        })?;
        heap.set_root(LIST_ROOT_SLOT, root)?;
        Ok(Self { heap, root })
    }

    /// Recovers a list from a region (see [`Heap::recover`]).
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of [`Heap::recover`]; [`HeapError::MissingRoot`] if the region has no
    /// list root; [`HeapError::Malformed`] if the keys are not strictly increasing.
    pub fn recover(region: Region<P>) -> Result<Self, HeapError> {
        let mut root = PPtr::null();
        crate::heap::check_kind(&region, "mirror-atomic List", Some(LIST_ROOT_SLOT))?;
        let heap = Heap::recover(region, |t| {
            root = t.root::<ListRoot<F>>(LIST_ROOT_SLOT)?;
            Ok(())
        })?;
        let list = Self { heap, root };
        check_recovered(&list.heap, list.head())?;
        Ok(list)
    }

    fn head(&self) -> &Head<F> {
        // SAFETY: the root object is allocated by `new` (or found by recovery) and never freed.
        &unsafe { self.heap.get(self.root) }.head
    }

    /// Inserts `key`: `Ok(true)` if it was absent.
    ///
    /// # Errors
    ///
    /// [`HeapAllocError`] if the heap is full.
    pub fn insert(&self, key: u64) -> Result<bool, HeapAllocError> {
        let guard = self.heap.pin();
        insert(&self.heap, self.head(), key, &guard)
    }

    /// Removes `key`: `true` if it was present.
    pub fn remove(&self, key: u64) -> bool {
        let guard = self.heap.pin();
        remove(&self.heap, self.head(), key, &guard)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: u64) -> bool {
        let guard = self.heap.pin();
        contains(&self.heap, self.head(), key, &guard)
    }

    /// The keys in order (a consistent snapshot only when no operation runs concurrently), and
    /// whether the list is well formed (strictly increasing).
    pub fn snapshot(&self) -> (Vec<u64>, bool) {
        let guard = self.heap.pin();
        snapshot(&self.heap, self.head(), &guard)
    }

    /// The heap.
    pub fn heap(&self) -> &Heap<F, P> {
        &self.heap
    }
}
