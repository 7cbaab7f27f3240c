//! The Natarajan-Mittal lock-free external binary search tree (Natarajan and Mittal, "Fast
//! Concurrent Lock-free Binary Search Trees", PPoPP'14; the BST of the Mirror paper's
//! evaluation, its reference \[34\] and Figure 6 (g)-(i)), written once over an atomic
//! [`Flavor`].
//!
//! **Shape.** Keys live in the leaves; an internal node has exactly two children and routes a
//! search left when `key < node.key`, right otherwise. Three sentinel keys
//! `INF0 < INF1 < INF2` (the top three `u64`s, so user keys are `0..=`[`BST_MAX_KEY`]) make
//! the tree never empty: the root `R` (key `INF2`) has the internal node `S` (key `INF1`) on
//! its left and a leaf `INF2` on its right; `S` has the whole user tree on its left, whose
//! rightmost leaf is `INF0`, and a leaf `INF1` on its right. Neither `R`, `S` nor a sentinel
//! leaf is ever removed, so every user leaf has a parent and a grandparent.
//!
//! **Edges carry two bits** (see [`PPtr`]): the *flag* (the mark bit) on an edge to a leaf
//! says the leaf is being removed; the *tag* (bit 1) on an edge says the edge is frozen because
//! its source node is being removed. A flagged or tagged edge never points elsewhere again (a
//! flagged edge may still be tagged, when both children of its node are being removed).
//!
//! **Operations** (the paper's `seek`, `insert`, `delete` and `cleanup`, in our words):
//! - `seek(key)` walks from `S` to the leaf where `key` belongs and records the leaf, its
//!   parent, and the last edge on the path that was not tagged (`ancestor -> successor`):
//!   every edge from `successor` down to `parent` is tagged.
//! - `insert` replaces the edge `parent -> leaf` by a new internal node whose children are
//!   `leaf` and a new leaf for `key` (one CAS, expecting the edge clean): the linearization
//!   point of a successful insert.
//! - `remove` *injects* by flagging the edge `parent -> leaf` (one CAS: the linearization point
//!   of a successful remove), then *cleans up*: it tags the parent's other edge (the sibling),
//!   and swings the `ancestor -> successor` edge to the sibling, carrying the sibling's flag.
//!   That one CAS unlinks `successor`, every node down to `parent`, the removed leaf and the
//!   flagged leaf hanging off every intermediate node (each intermediate node is there because
//!   another remove flagged its other child and tagged the edge we walked).
//! - Any operation that meets a flagged or tagged edge where it wants to write *helps*: it runs
//!   the same cleanup for the key that led it there, then retries (the paper's helping).
//! - `contains` is the walk without writes: the key is present when the leaf has it and the
//!   edge read to reach it is not flagged.
//!
//! A flagged leaf counts as **absent** everywhere: in `contains`, in [`Bst::snapshot`], in
//! `insert` (which helps remove it rather than report the key present), and after recovery.
//!
//! **Reclamation.** Only the thread whose cleanup CAS at the ancestor succeeds retires what it
//! unlinked, exactly once: the CAS expects the ancestor edge clean, and every edge of every node
//! it unlinks is flagged or tagged (frozen), so no other CAS can unlink those nodes again.
//!
//! **Persistence** comes from the flavor, as for the list: with Mirror every CAS is durable
//! before it is visible, and both new nodes of an insert are durable (published by
//! [`Heap::alloc`]) before the CAS that links them. A crash can therefore leave a remove
//! injected but not cleaned up: a flagged edge, maybe a tagged sibling edge. The flag is durable,
//! so the remove is linearized and the key is absent. [`Bst::recover`] validates the tree
//! (sentinels, key ranges, two children per internal node, flags only on edges to user leaves,
//! a tag only next to a flag, no node reached twice: so no cycle), then finishes every
//! interrupted cleanup with the same `cleanup` the operations use, and re-traces the heap so
//! that what the cleanups unlinked is free again; afterwards no edge is flagged or tagged and
//! exactly the root, the sentinels and two nodes per key are allocated.

use crate::error::{BstError, HeapAllocError, HeapError};
use crate::flavor::Flavor;
use crate::heap::{Guard, Heap, Object, Trace, Tracer};
use crate::patomic::PConst;
use crate::word::PPtr;
use pmem::{NoPersist, Persist, Region};

/// Root slot a [`Bst`] uses (the root node `R`).
pub const BST_ROOT_SLOT: usize = 3;

/// The largest key a [`Bst`] accepts: the three above it are the sentinels.
pub const BST_MAX_KEY: u64 = u64::MAX - 3;

const INF0: u64 = u64::MAX - 2;
const INF1: u64 = u64::MAX - 1;
const INF2: u64 = u64::MAX;

type Link<F> = <F as Flavor>::Atomic<PPtr<BstNode<F>>>;
type NodePtr<F> = PPtr<BstNode<F>>;

/// A tree node: an internal node (two children) or a leaf (both children null). The key is
/// immutable; each child edge is a flavor atomic of a [`PPtr`] whose mark bit is the *flag*
/// and whose tag bit is the *tag* (see [`PPtr`]).
///
/// The key is followed by the flavor's zero [`Flavor::Pad`] (in Mirror the 8 bytes that round
/// the node to its pairs' 16-byte alignment: written as zeros, never padding).
#[repr(C)]
pub struct BstNode<F: Flavor> {
    left: Link<F>,
    right: Link<F>,
    key: PConst<u64>,
    _pad: F::Pad,
}

// SAFETY: two flavor atomics of `PPtr`s, a `PConst<u64>` and the flavor's pad: any bits are
// valid, no drop glue, no Rust pointers, and the fields fill the type (checked below).
unsafe impl<F: Flavor> Object for BstNode<F> {
    const FIELD_BYTES: usize = 2 * core::mem::size_of::<Link<F>>()
        + core::mem::size_of::<PConst<u64>>()
        + core::mem::size_of::<F::Pad>();
}

crate::heap::assert_padding_free!(BstNode<F>);

impl<F: Flavor> BstNode<F> {
    fn leaf(key: u64) -> Self {
        Self {
            left: F::atomic(PPtr::null()),
            right: F::atomic(PPtr::null()),
            key: PConst::new(key),
            _pad: F::Pad::default(),
        }
    }

    fn internal(key: u64, left: NodePtr<F>, right: NodePtr<F>) -> Self {
        Self {
            left: F::atomic(left),
            right: F::atomic(right),
            key: PConst::new(key),
            _pad: F::Pad::default(),
        }
    }

    /// The edge a search for `key` follows.
    #[inline(always)]
    fn child(&self, key: u64) -> &Link<F> {
        if key < self.key.get() {
            &self.left
        } else {
            &self.right
        }
    }

    /// The other edge than the one a search for `key` follows.
    #[inline(always)]
    fn other_child(&self, key: u64) -> &Link<F> {
        if key < self.key.get() {
            &self.right
        } else {
            &self.left
        }
    }
}

impl<F: Flavor> core::fmt::Debug for BstNode<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BstNode")
            .field("key", &self.key.get())
            .field("left", &F::peek(&self.left))
            .field("right", &F::peek(&self.right))
            .finish()
    }
}

impl<F: Flavor> Trace for BstNode<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        t.visit(F::peek(&self.left).address());
        t.visit(F::peek(&self.right).address());
    }
}

/// What `seek` found (the paper's seek record), all read under one guard.
struct SeekRecord<'g, F: Flavor> {
    /// Source of the last clean (untagged) edge on the path.
    ancestor: &'g BstNode<F>,
    /// Target of that edge, as read (clean).
    successor: NodePtr<F>,
    /// The leaf's parent.
    parent: &'g BstNode<F>,
    parent_ptr: NodePtr<F>,
    /// The leaf (address only).
    leaf: NodePtr<F>,
    /// The edge `parent -> leaf` as read, with its flag and tag bits.
    leaf_edge: NodePtr<F>,
}

/// A lock-free set of `u64` keys (`0..=`[`BST_MAX_KEY`]): the Natarajan-Mittal external BST in
/// flavor `F` (the crate docs, "BST (Natarajan-Mittal)", describe the algorithm).
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, Bst};
/// let tree = Bst::<Mirror, _>::anonymous(1 << 20)?;
/// for k in [5, 1, 3] {
///     assert!(tree.insert(k)?);
/// }
/// assert!(!tree.insert(3)?);
/// assert!(tree.remove(1));
/// assert!(tree.contains(5) && !tree.contains(1));
/// assert_eq!(tree.snapshot(), (vec![3, 5], true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Bst<F: Flavor, P: Persist> {
    heap: Heap<F, P>,
    /// `R`, in root slot [`BST_ROOT_SLOT`].
    root: NodePtr<F>,
    /// `S`, `R`'s left child (never changes: cached to save a load per operation).
    sentinel: NodePtr<F>,
}

impl<F: Flavor, P: Persist> core::fmt::Debug for Bst<F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Bst")
            .field("heap", &self.heap)
            .field("root", &self.root)
            .finish()
    }
}

impl<F: Flavor> Bst<F, NoPersist> {
    /// An empty tree on an anonymous (volatile) heap of `size` bytes.
    ///
    /// # Errors
    ///
    /// As [`Bst::new`] and [`Heap::anonymous`].
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Heap::anonymous(size)?)
    }
}

/// The result of walking the whole tree (see [`Bst::walk`]).
struct Walk {
    /// Keys of the unflagged user leaves, in order.
    keys: Vec<u64>,
    /// Keys of the flagged leaves (removes not yet cleaned up).
    flagged: Vec<u64>,
    /// Tagged edges seen.
    tagged: usize,
}

impl<F: Flavor, P: Persist> Bst<F, P> {
    /// An empty tree in a fresh heap: the sentinels `R`, `S` and leaves `INF0`, `INF1`, `INF2`
    /// (five blocks), `R` in root slot [`BST_ROOT_SLOT`].
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the sentinels do not fit.
    pub fn new(mut heap: Heap<F, P>) -> Result<Self, HeapError> {
        // Built bottom-up: each node is durable (`alloc`) before a node pointing to it is
        // allocated, and the root slot is set last.
        let inf0 = heap.alloc(BstNode::<F>::leaf(INF0))?;
        let inf1 = heap.alloc(BstNode::<F>::leaf(INF1))?;
        let inf2 = heap.alloc(BstNode::<F>::leaf(INF2))?;
        let sentinel = heap.alloc(BstNode::<F>::internal(INF1, inf0, inf1))?;
        let root = heap.alloc(BstNode::<F>::internal(INF2, sentinel, inf2))?;
        heap.set_root(BST_ROOT_SLOT, root)?;
        Ok(Self {
            heap,
            root,
            sentinel,
        })
    }

    /// Recovers a tree from a region (see [`Heap::recover`]) and finishes every remove a crash
    /// interrupted after its flag (its key is absent): afterwards no edge is flagged or tagged,
    /// and every block not in the tree is free.
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of [`Heap::recover`]; [`HeapError::MissingRoot`] without a BST root;
    /// [`HeapError::Malformed`] if the sentinels are wrong, a leaf is outside its key range, a
    /// node has one child, a node is reached twice (a cycle included), a flag is on an edge to
    /// anything but a user leaf, or a tag is not next to a flag.
    pub fn recover(region: Region<P>) -> Result<Self, HeapError> {
        let mut root = PPtr::null();
        crate::heap::check_kind(&region, "mirror-atomic Bst", Some(BST_ROOT_SLOT))?;
        let heap = Heap::recover(region, |t| {
            root = t.root::<BstNode<F>>(BST_ROOT_SLOT)?;
            Ok(())
        })?;
        let mut tree = Self {
            heap,
            root,
            sentinel: PPtr::null(),
        };
        let malformed = |what| HeapError::Malformed { what };
        tree.sentinel = tree.check_sentinels().map_err(malformed)?;
        let walk = tree.walk().map_err(malformed)?;
        // A clean image (no flag; `walk` allows a tag only next to a flag) needs no repair, and
        // the first trace already freed exactly what the tree does not reach.
        if walk.flagged.is_empty() {
            return Ok(tree);
        }
        tree.finish_removes(&walk.flagged)?;
        let walk = tree.walk().map_err(malformed)?;
        if !walk.flagged.is_empty() || walk.tagged != 0 {
            return Err(malformed("BST cleanup left a flagged or tagged edge"));
        }
        tree.heap.retrace(|t| {
            t.root::<BstNode<F>>(BST_ROOT_SLOT)?;
            Ok(())
        })?;
        Ok(tree)
    }

    /// Recovery: the sentinel shape of the module docs, with clean edges at `R` and `S`
    /// (their edges are never flagged or tagged; a cleanup must never swing `R`'s). Returns `S`.
    fn check_sentinels(&self) -> Result<NodePtr<F>, &'static str> {
        let space = self.heap.space();
        // SAFETY: traced by recovery (a block that holds a `BstNode`); nothing is freed during
        // recovery.
        let r = unsafe { self.heap.get(self.root) };
        let (s_ptr, inf2) = (F::load(&r.left, space), F::load(&r.right, space));
        if r.key.get() != INF2 || s_ptr.is_null() || inf2.is_null() {
            return Err("BST root is not the INF2 sentinel");
        }
        if s_ptr.address() != s_ptr || inf2.address() != inf2 {
            return Err("BST root edge flagged or tagged");
        }
        // SAFETY: as above (traced from `R`).
        let (s, leaf2) = unsafe { (self.heap.get(s_ptr), self.heap.get(inf2)) };
        if leaf2.key.get() != INF2 || !F::load(&leaf2.left, space).is_null() {
            return Err("BST root's right child is not the INF2 leaf");
        }
        let (user, inf1) = (F::load(&s.left, space), F::load(&s.right, space));
        if s.key.get() != INF1 || user.is_null() || inf1.is_null() {
            return Err("BST root's left child is not the INF1 sentinel");
        }
        if user.address() != user || inf1.address() != inf1 {
            return Err("BST sentinel edge flagged or tagged");
        }
        // SAFETY: as above.
        let leaf1 = unsafe { self.heap.get(inf1) };
        if leaf1.key.get() != INF1 || !F::load(&leaf1.left, space).is_null() {
            return Err("BST sentinel's right child is not the INF1 leaf");
        }
        Ok(s_ptr)
    }

    /// Walks the user tree (`S`'s left subtree) in key order and checks it: every leaf in its
    /// key range (so keys are unique and a search for a leaf's key reaches it), the rightmost
    /// leaf `INF0` and unflagged, two children per internal node and none per leaf, no node
    /// reached twice, a flag only on an edge to a user leaf, a tag only next to a flagged
    /// edge.
    ///
    /// Nodes are read with `heap.get`: the caller guarantees they are live (recovery: traced;
    /// `snapshot`: under a guard, and consistent only when nothing runs concurrently).
    fn walk(&self) -> Result<Walk, &'static str> {
        let _guard = self.heap.pin();
        let space = self.heap.space();
        // SAFETY: `S` is never removed.
        let s = unsafe { self.heap.get(self.sentinel) };
        let mut out = Walk {
            keys: Vec::new(),
            flagged: Vec::new(),
            tagged: 0,
        };
        let mut seen = std::collections::HashSet::new();
        let mut last_leaf: Option<(u64, bool)> = None;
        // (edge as read, key range lo..hi); right pushed before left so leaves come in order.
        let mut stack = vec![(F::load(&s.left, space), 0u64, INF1)];
        while let Some((edge, lo, hi)) = stack.pop() {
            let ptr = edge.address();
            if ptr.is_null() {
                return Err("BST internal node with a missing child");
            }
            if !seen.insert(ptr.offset()) {
                return Err("BST node reached twice");
            }
            // SAFETY: see the doc comment.
            let node = unsafe { self.heap.get(ptr) };
            let key = node.key.get();
            let (l, r) = (F::load(&node.left, space), F::load(&node.right, space));
            if l.is_null() && r.is_null() {
                if l != PPtr::null() || r != PPtr::null() {
                    return Err("BST leaf with a flagged or tagged null edge");
                }
                if key < lo || key >= hi {
                    return Err("BST leaf outside its key range");
                }
                if edge.is_marked() {
                    if key > BST_MAX_KEY {
                        return Err("BST sentinel leaf flagged");
                    }
                    out.flagged.push(key);
                } else if key <= BST_MAX_KEY {
                    out.keys.push(key);
                }
                last_leaf = Some((key, edge.is_marked()));
                continue;
            }
            if l.is_null() || r.is_null() {
                return Err("BST internal node with one child");
            }
            if edge.is_marked() {
                return Err("BST flag on an edge to an internal node");
            }
            for (e, other) in [(l, r), (r, l)] {
                if e.is_tagged() {
                    out.tagged += 1;
                    if !other.is_marked() {
                        return Err("BST tagged edge whose sibling edge is not flagged");
                    }
                }
            }
            stack.push((r, lo.max(key), hi));
            stack.push((l, lo, hi.min(key)));
        }
        if last_leaf != Some((INF0, false)) {
            return Err("BST user tree does not end with the INF0 leaf");
        }
        Ok(out)
    }

    /// Recovery: finishes the remove of every flagged key with the operations' own cleanup
    /// (single-threaded, `&mut self`; every write is a flavor CAS, so a crash during it leaves
    /// a state the next recovery finishes again). Nothing is retired: the re-trace that follows
    /// frees what the cleanups unlinked.
    fn finish_removes(&mut self, flagged: &[u64]) -> Result<(), HeapError> {
        let guard = self.heap.pin();
        for &key in flagged {
            let rec = self.seek(key, &guard);
            // SAFETY: reached from the root under `guard`; nothing is freed during recovery.
            let leaf = unsafe { self.heap.get(rec.leaf) };
            if leaf.key.get() != key || !rec.leaf_edge.is_marked() {
                continue; // unlinked by an earlier cleanup of this loop (an intermediate leaf)
            }
            if !self.cleanup(key, &rec, None) {
                return Err(HeapError::Malformed {
                    what: "BST cleanup failed during recovery",
                });
            }
        }
        Ok(())
    }

    fn root_node(&self) -> &BstNode<F> {
        // SAFETY: `R` is allocated by `new` (or found by recovery), never freed.
        unsafe { self.heap.get(self.root) }
    }

    /// The paper's `seek`: the leaf where `key` belongs, its parent, and the last
    /// untagged edge `ancestor -> successor` on the path.
    #[inline]
    fn seek<'g>(&'g self, key: u64, _guard: &'g Guard) -> SeekRecord<'g, F> {
        let space = self.heap.space();
        // Every `get` below: each pointer was read from a node reached from `R` while `_guard`
        // is pinned, so it is not reclaimed before the guard ends (`retire` defers the free past
        // every guard pinned before the unlinking).
        // SAFETY: `S` is never removed.
        let s = unsafe { self.heap.get(self.sentinel) };
        let mut ancestor = self.root_node();
        let mut successor = self.sentinel;
        let mut parent = s;
        let mut parent_ptr = self.sentinel;
        let mut leaf_edge = F::load(&s.left, space);
        let mut leaf_ptr = leaf_edge.address();
        // SAFETY: see above.
        let mut leaf = unsafe { self.heap.get(leaf_ptr) };
        let mut next_edge = F::load(leaf.child(key), space);
        while !next_edge.is_null() {
            if !leaf_edge.is_tagged() {
                ancestor = parent;
                successor = leaf_ptr;
            }
            parent = leaf;
            parent_ptr = leaf_ptr;
            leaf_edge = next_edge;
            leaf_ptr = next_edge.address();
            // SAFETY: see above.
            leaf = unsafe { self.heap.get(leaf_ptr) };
            next_edge = F::load(leaf.child(key), space);
        }
        SeekRecord {
            ancestor,
            successor,
            parent,
            parent_ptr,
            leaf: leaf_ptr,
            leaf_edge,
        }
    }

    /// The paper's `cleanup` for the remove of the flagged leaf below
    /// `rec.parent` (on `key`'s side or, when a search for `key` only passed there, the other
    /// side): tags the parent's edge to the sibling, then swings `ancestor -> successor` to the
    /// sibling, keeping the sibling's flag. Whether that CAS succeeded; if so, and `guard` is
    /// given, retires what it unlinked.
    fn cleanup(&self, key: u64, rec: &SeekRecord<'_, F>, guard: Option<&Guard>) -> bool {
        let space = self.heap.space();
        let parent = rec.parent;
        // The flagged edge is on `key`'s side unless we are helping a remove on the other side.
        let (mut sibling, mut cut) = (parent.other_child(key), parent.child(key));
        if !F::load(cut, space).is_marked() {
            core::mem::swap(&mut sibling, &mut cut);
        }
        // Freeze the sibling edge: no insert or flag CAS succeeds on it afterwards (they expect
        // a clean edge), so the value we copy up is final. Recovery does not need the tag
        // (issue 23, L4): without it a durable state still has the flagged leaf, whose remove
        // recovery finishes (tagging again), and once the swing is durable the tagged parent
        // is unreachable. So it is not written back (one write-back and one fence less per
        // remove).
        let mut s = F::load(sibling, space);
        while !s.is_tagged() {
            match F::compare_exchange_unpersisted(sibling, s, s.with_tag(), space) {
                Ok(_) => s = s.with_tag(),
                Err(seen) => s = seen,
            }
        }
        let new = if s.is_marked() {
            s.address().with_mark()
        } else {
            s.address()
        };
        let swing = rec.ancestor.child(key);
        if let Some(guard) = guard {
            // The swing unlinks what `retire_unlinked` retires; its `psync` makes it durable
            // (see `Flavor::compare_exchange_unlinking`).
            if F::compare_exchange_unlinking(swing, rec.successor, new, space).is_err() {
                return false;
            }
            self.retire_unlinked(key, rec, F::load(cut, space).address(), guard);
        } else if F::compare_exchange(swing, rec.successor, new, space).is_err() {
            // Recovery retires nothing (its re-trace frees what the swing unlinked): a durable
            // swing.
            return false;
        }
        true
    }

    /// Retires what a successful cleanup CAS unlinked: `successor`, every node on the way down
    /// to `parent` (walked by `key`: those edges are tagged, hence unchanged since the seek) and
    /// the flagged leaf off each of them, `parent`, and `cut`, the leaf removed at `parent`.
    fn retire_unlinked(&self, key: u64, rec: &SeekRecord<'_, F>, cut: NodePtr<F>, guard: &Guard) {
        let space = self.heap.space();
        // One `psync` for the whole batch (`retire` would issue one per node): the swing is
        // durable before any block it unlinked can be reused.
        space.sync(); // bst-retire-batch-psync
        let mut node = rec.successor;
        while node != rec.parent_ptr {
            // SAFETY: unlinked by our CAS but not yet retired, read under `guard`.
            let n = unsafe { self.heap.get(node) };
            let flagged_leaf = F::load(n.other_child(key), space).address();
            let next = F::load(n.child(key), space).address();
            if next.is_null() {
                // Unreachable: the frozen path from `successor` leads to `parent`.
                debug_assert!(false, "BST cleanup path does not reach the parent");
                return;
            }
            // SAFETY: our CAS at the ancestor unlinked `node` and its flagged leaf (every edge
            // of theirs is frozen, so no other CAS unlinks them): retired once, by us, after
            // the batch's `psync` above.
            unsafe {
                self.heap.retire_synced(flagged_leaf, guard);
            }
            // SAFETY: as above.
            unsafe { self.heap.retire_synced(node, guard) };
            node = next;
        }
        // SAFETY: as above, for `parent` and the leaf removed at it.
        unsafe { self.heap.retire_synced(cut, guard) };
        // SAFETY: as above.
        unsafe { self.heap.retire_synced(rec.parent_ptr, guard) };
    }

    /// Inserts `key`: `Ok(true)` if it was absent (the paper's `insert`).
    ///
    /// # Errors
    ///
    /// [`BstError::ReservedKey`] for a key above [`BST_MAX_KEY`] (nothing changes);
    /// [`BstError::Alloc`] if the heap is full.
    pub fn insert(&self, key: u64) -> Result<bool, BstError> {
        if key > BST_MAX_KEY {
            return Err(BstError::ReservedKey { key });
        }
        let guard = self.heap.pin();
        let space = self.heap.space();
        loop {
            let rec = self.seek(key, &guard);
            // SAFETY: read under `guard` (see `seek`).
            let leaf_key = unsafe { self.heap.get(rec.leaf) }.key.get();
            let clean = rec.leaf_edge == rec.leaf;
            if leaf_key == key && !rec.leaf_edge.is_marked() {
                return Ok(false);
            }
            if clean && self.link(key, leaf_key, &rec)? {
                return Ok(true);
            }
            // The edge is flagged or tagged (or changed): help if it still points to the leaf.
            let now = F::load(rec.parent.child(key), space);
            if now.address() == rec.leaf && (now.is_marked() || now.is_tagged()) {
                self.cleanup(key, &rec, Some(&guard));
            }
        }
    }

    /// Replaces the clean edge `parent -> leaf` by a new internal node over `leaf` and a new
    /// leaf for `key`: whether the CAS succeeded (the new nodes are freed if not).
    fn link(
        &self,
        key: u64,
        leaf_key: u64,
        rec: &SeekRecord<'_, F>,
    ) -> Result<bool, HeapAllocError> {
        // Both nodes are durable (`alloc`) before the CAS publishes them; their edges are
        // written before publication, so no persistent store to an unpublished node is needed.
        let new_leaf = self.heap.alloc(BstNode::<F>::leaf(key))?;
        let internal = if key < leaf_key {
            BstNode::<F>::internal(leaf_key, new_leaf, rec.leaf)
        } else {
            BstNode::<F>::internal(key, rec.leaf, new_leaf)
        };
        let internal = match self.heap.alloc(internal) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: `new_leaf` was never published.
                unsafe { self.heap.free_unpublished(new_leaf) };
                return Err(e);
            }
        };
        // Linearization point of a successful insert.
        let linked =
            F::compare_exchange(rec.parent.child(key), rec.leaf, internal, self.heap.space())
                .is_ok();
        if !linked {
            // SAFETY: the CAS failed, so neither node was published.
            unsafe {
                self.heap.free_unpublished(internal);
            }
            // SAFETY: as above.
            unsafe { self.heap.free_unpublished(new_leaf) };
        }
        Ok(linked)
    }

    /// Removes `key`: `true` if it was present (the paper's `delete`). A key
    /// above [`BST_MAX_KEY`] is never present: `false`.
    pub fn remove(&self, key: u64) -> bool {
        if key > BST_MAX_KEY {
            return false;
        }
        let guard = self.heap.pin();
        match self.inject(key, &guard) {
            Some(rec) => {
                self.finish_remove(key, &rec, &guard);
                true
            }
            None => false,
        }
    }

    /// The remove up to its linearization point: flags the edge to `key`'s leaf. The seek
    /// record of the flagged edge, or `None` if `key` is absent (a flagged leaf of `key` is
    /// helped out of the tree first, then looked for again).
    fn inject<'g>(&'g self, key: u64, guard: &'g Guard) -> Option<SeekRecord<'g, F>> {
        let space = self.heap.space();
        loop {
            let rec = self.seek(key, guard);
            // SAFETY: read under `guard` (see `seek`).
            if unsafe { self.heap.get(rec.leaf) }.key.get() != key {
                return None;
            }
            if rec.leaf_edge != rec.leaf {
                // Flagged (another remove of `key` is linearized first: help it, then look
                // again) or tagged (help the remove of the sibling).
                self.cleanup(key, &rec, Some(guard));
                continue;
            }
            // Linearization point of a successful remove.
            match F::compare_exchange(rec.parent.child(key), rec.leaf, rec.leaf.with_mark(), space)
            {
                Ok(_) => return Some(rec),
                Err(now) => {
                    if now.address() == rec.leaf && (now.is_marked() || now.is_tagged()) {
                        self.cleanup(key, &rec, Some(guard));
                    }
                }
            }
        }
    }

    /// The remove after its flag (`rec`: the record of the flagged edge): cleans up until our
    /// leaf is unlinked, by us or by a helper. A helper's cleanup may have moved the flagged
    /// leaf up (the remove of its sibling carries the flag to the grandparent's edge), so each
    /// retry seeks again.
    fn finish_remove(&self, key: u64, rec: &SeekRecord<'_, F>, guard: &Guard) {
        if self.cleanup(key, rec, Some(guard)) {
            return;
        }
        let ours = rec.leaf;
        loop {
            let rec = self.seek(key, guard);
            if rec.leaf != ours || self.cleanup(key, &rec, Some(guard)) {
                return;
            }
        }
    }

    /// Whether `key` is present (the paper's `search`: no writes, no helping). A flagged leaf
    /// is absent.
    pub fn contains(&self, key: u64) -> bool {
        if key > BST_MAX_KEY {
            return false;
        }
        let _guard = self.heap.pin();
        let space = self.heap.space();
        // SAFETY: `S` is never removed.
        let mut node = unsafe { self.heap.get(self.sentinel) };
        let mut edge = F::load(&node.left, space);
        loop {
            // SAFETY: as above.
            node = unsafe { self.heap.get(edge.address()) };
            let next = F::load(node.child(key), space);
            if next.is_null() {
                return node.key.get() == key && !edge.is_marked();
            }
            edge = next;
        }
    }

    /// The keys in order, flagged leaves skipped (a consistent snapshot only when nothing runs
    /// concurrently), and whether the tree is well formed (the checks of [`Bst::recover`]).
    pub fn snapshot(&self) -> (Vec<u64>, bool) {
        match self.walk() {
            Ok(w) => (w.keys, true),
            Err(_) => (Vec::new(), false),
        }
    }

    /// The heap.
    pub fn heap(&self) -> &Heap<F, P> {
        &self.heap
    }
}

/// Deterministic replays of a remove stopped between its two steps (the state a crash or a
/// descheduled remover leaves): the flag is set, the cleanup is not done. Each checks that the
/// key counts as absent everywhere and that the next operation (or recovery) finishes the
/// cleanup and frees what it unlinked.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::flavor::{Izraelevitz, Mirror, Volatile};
    use pmem::sim::{Image, SimConfig, Simulated};

    /// Layout id and size of the simulated test regions.
    const SIM_LAYOUT: u64 = 0xB57;
    const SIM_SIZE: u64 = 256 + 4 * 65536;

    /// A simulated region, for a test that uses it on the calling thread only.
    fn sim_region(cfg: SimConfig) -> Region<Simulated> {
        // SAFETY:
        // - the tests of this module run the tree (every write to region memory) and every
        //   call of the region's backend on one thread; deferred frees touch only the heap's
        //   volatile free lists;
        // - they make no `&mut` into region memory.
        unsafe { Region::simulated(SIM_LAYOUT, SIM_SIZE, cfg) }.expect("region")
    }

    /// Recovers `image` as a simulated region, for the calling thread only.
    fn sim_recovery(image: &Image, cfg: SimConfig) -> Region<Simulated> {
        // SAFETY:
        // - as in `sim_region`: one thread makes every write and every backend call.
        unsafe { Region::from_image(image, SIM_LAYOUT, cfg) }.expect("image")
    }

    /// Flags the edge to `key`'s leaf (the remove's injection) and stops there.
    fn inject_only<F: Flavor, P: Persist>(tree: &Bst<F, P>, key: u64) {
        let guard = tree.heap.pin();
        let rec = tree.seek(key, &guard);
        assert_eq!(rec.leaf_edge, rec.leaf, "edge clean before the injection");
        // SAFETY: read under `guard`.
        assert_eq!(unsafe { tree.heap.get(rec.leaf) }.key.get(), key);
        F::compare_exchange(
            rec.parent.child(key),
            rec.leaf,
            rec.leaf.with_mark(),
            tree.heap.space(),
        )
        .expect("nothing races the flag");
    }

    fn flagged<F: Flavor, P: Persist>(tree: &Bst<F, P>) -> Vec<u64> {
        tree.walk().expect("well formed").flagged
    }

    /// 1, 2, 3 present; the remove of 2 stops after its flag: 2 is absent to `contains`,
    /// `snapshot` and `remove`; an insert of 2 helps the cleanup, then links a new leaf.
    fn insert_helps_an_interrupted_remove<F: Flavor>() {
        let tree = Bst::<F, _>::anonymous(1 << 20).expect("tree");
        for k in [1, 2, 3] {
            assert!(tree.insert(k).expect("room"));
        }
        inject_only(&tree, 2);
        assert!(!tree.contains(2));
        assert_eq!(tree.snapshot(), (vec![1, 3], true));
        assert_eq!(flagged(&tree), vec![2]);
        assert!(tree.insert(2).expect("room"), "2 was absent");
        assert_eq!(
            flagged(&tree),
            Vec::<u64>::new(),
            "the insert finished the cleanup"
        );
        assert_eq!(tree.snapshot(), (vec![1, 2, 3], true));
        inject_only(&tree, 3);
        assert!(!tree.remove(3), "3 was already removed (flagged)");
        assert_eq!(flagged(&tree), Vec::<u64>::new(), "the remove helped");
        assert_eq!(tree.snapshot(), (vec![1, 2], true));
    }

    #[test]
    fn insert_helps_an_interrupted_remove_volatile() {
        insert_helps_an_interrupted_remove::<Volatile>();
    }

    #[test]
    fn insert_helps_an_interrupted_remove_mirror() {
        insert_helps_an_interrupted_remove::<Mirror>();
    }

    #[test]
    fn insert_helps_an_interrupted_remove_izraelevitz() {
        insert_helps_an_interrupted_remove::<Izraelevitz>();
    }

    /// Two sibling leaves flagged (4 and 5 under one parent, then 6 next to their parent's
    /// parent's other side), no cleanup run: a crash image of that state recovers with the
    /// three keys absent, no flag or tag left, and exactly the sentinels and two blocks per
    /// remaining key allocated.
    fn recovery_finishes_interrupted_removes<F: Flavor>() {
        let region = sim_region(SimConfig::new(3));
        let tree = Bst::<F, Simulated>::new(Heap::new(region).expect("heap")).expect("tree");
        for k in [8, 4, 5, 6, 1, 9] {
            assert!(tree.insert(k).expect("room"));
        }
        for k in [4, 5, 6] {
            inject_only(&tree, k);
        }
        // One cleanup half done: tag the sibling edge of 6's parent, no swing.
        {
            let guard = tree.heap.pin();
            let rec = tree.seek(6, &guard);
            let sib = rec.parent.other_child(6);
            let v = F::load(sib, tree.heap.space());
            F::compare_exchange(sib, v, v.with_tag(), tree.heap.space()).expect("tag");
        }
        assert_eq!(tree.snapshot(), (vec![1, 8, 9], true));
        let image = tree.heap.region().persist().crash();
        drop(tree);
        let region = sim_recovery(&image, SimConfig::new(4).evictions(0.0));
        let tree = Bst::<F, Simulated>::recover(region).expect("recover");
        assert_eq!(tree.snapshot(), (vec![1, 8, 9], true));
        let walk = tree.walk().expect("well formed");
        assert!(walk.flagged.is_empty() && walk.tagged == 0);
        assert_eq!(tree.heap.live_blocks(), 5 + 2 * 3);
        assert!(tree.insert(5).expect("room") && tree.remove(8) && !tree.contains(4));
        assert_eq!(tree.snapshot(), (vec![1, 5, 9], true));
    }

    #[test]
    fn recovery_finishes_interrupted_removes_mirror() {
        recovery_finishes_interrupted_removes::<Mirror>();
    }

    #[test]
    fn recovery_finishes_interrupted_removes_izraelevitz() {
        recovery_finishes_interrupted_removes::<Izraelevitz>();
    }

    /// A tree of keys 10..=50 (step 10) on a simulated region, damaged by `damage`, then
    /// crashed and recovered: the recovery error, if any.
    fn recover_damaged<F: Flavor>(
        damage: impl FnOnce(&Bst<F, Simulated>),
    ) -> Result<Vec<u64>, HeapError> {
        let region = sim_region(SimConfig::new(5));
        let tree = Bst::<F, Simulated>::new(Heap::new(region).expect("heap")).expect("tree");
        for k in [30, 10, 50, 20, 40] {
            assert!(tree.insert(k).expect("room"));
        }
        damage(&tree);
        let image = tree.heap.region().persist().crash();
        drop(tree);
        let region = sim_recovery(&image, SimConfig::new(6).evictions(0.0));
        Bst::<F, Simulated>::recover(region).map(|t| t.snapshot().0)
    }

    /// Overwrites the edge a search for `key` follows out of the parent of `key`'s leaf
    /// (`up` = 1: out of the grandparent).
    fn set_edge<F: Flavor>(tree: &Bst<F, Simulated>, key: u64, up: bool, to: NodePtr<F>) {
        let space = tree.heap.space();
        let guard = tree.heap.pin();
        let rec = tree.seek(key, &guard);
        let node = if up {
            // SAFETY: single-threaded test; `S` is never removed.
            let s = unsafe { tree.heap.get(tree.sentinel) };
            let top = F::load(&s.left, space).address();
            // SAFETY: as above (the test trees are two levels deep under `top` for these keys).
            let mut n = unsafe { tree.heap.get(top) };
            loop {
                let next = F::load(n.child(key), space).address();
                if core::ptr::eq(n, rec.parent) || next == rec.parent_ptr {
                    break n;
                }
                // SAFETY: as above.
                n = unsafe { tree.heap.get(next) };
            }
        } else {
            rec.parent
        };
        let edge = node.child(key);
        let cur = F::load(edge, space);
        F::compare_exchange(edge, cur, to, space).expect("single-threaded");
    }

    fn malformed(r: Result<Vec<u64>, HeapError>) -> &'static str {
        match r {
            Err(HeapError::Malformed { what }) => what,
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    fn damaged_trees_are_rejected<F: Flavor>() {
        assert_eq!(
            recover_damaged::<F>(|_| {}).expect("undamaged"),
            vec![10, 20, 30, 40, 50]
        );
        let parent_of = |t: &Bst<F, Simulated>, key| t.seek(key, &t.heap.pin()).parent_ptr;
        let leaf_of = |t: &Bst<F, Simulated>, key| t.seek(key, &t.heap.pin()).leaf;
        // A cycle: the edge to 10's leaf points back to `R`.
        let what = malformed(recover_damaged::<F>(|t| set_edge(t, 10, false, t.root)));
        assert_eq!(what, "BST node reached twice");
        // A self-loop: the edge to 10's leaf points to its own parent.
        let what = malformed(recover_damaged::<F>(|t| {
            set_edge(t, 10, false, parent_of(t, 10))
        }));
        assert_eq!(what, "BST node reached twice");
        // A flag on an edge to an internal node (10's parent).
        let what = malformed(recover_damaged::<F>(|t| {
            set_edge(t, 10, true, parent_of(t, 10).with_mark())
        }));
        assert_eq!(what, "BST flag on an edge to an internal node");
        // A tag whose sibling edge is not flagged.
        let what = malformed(recover_damaged::<F>(|t| {
            set_edge(t, 10, false, leaf_of(t, 10).with_tag())
        }));
        assert_eq!(what, "BST tagged edge whose sibling edge is not flagged");
        // A leaf outside its key range (a leaf 45 where 10 belongs).
        let what = malformed(recover_damaged::<F>(|t| {
            let leaf = t.heap.alloc(BstNode::<F>::leaf(45)).expect("room");
            set_edge(t, 10, false, leaf)
        }));
        assert_eq!(what, "BST leaf outside its key range");
        // An internal node with one child.
        let what = malformed(recover_damaged::<F>(|t| {
            set_edge(t, 10, false, PPtr::null())
        }));
        assert_eq!(what, "BST internal node with one child");
        // A flagged sentinel leaf (INF0 is the rightmost leaf of the user tree).
        let what = malformed(recover_damaged::<F>(|t| {
            set_edge(t, INF0, false, leaf_of(t, INF0).with_mark())
        }));
        assert_eq!(what, "BST sentinel leaf flagged");
        // `R`'s edge to `S` flagged.
        let what = malformed(recover_damaged::<F>(|t| {
            let space = t.heap.space();
            let r = t.root_node();
            F::compare_exchange(&r.left, t.sentinel, t.sentinel.with_tag(), space).expect("tag");
        }));
        assert_eq!(what, "BST root edge flagged or tagged");
    }

    #[test]
    fn damaged_trees_are_rejected_mirror() {
        damaged_trees_are_rejected::<Mirror>();
    }

    #[test]
    fn damaged_trees_are_rejected_izraelevitz() {
        damaged_trees_are_rejected::<Izraelevitz>();
    }

    /// Tree `10, 20, 30`: `I20 {10, I30 {20, 30}}` under the top node. The remove of 10 stops
    /// after flagging its edge and tagging `I20 -> I30` (a descheduled remover). A remove of 20
    /// then finds the last untagged edge above `I20`, so its swing unlinks the chain `I20`,
    /// leaf 10, `I30`, leaf 20 at once (successor is not the parent): all four must be retired,
    /// each once, leaving the sentinels and the two nodes of key 30.
    fn a_swing_retires_the_whole_chain<F: Flavor>() {
        let tree = Bst::<F, _>::anonymous(1 << 20).expect("tree");
        for k in [10, 20, 30] {
            assert!(tree.insert(k).expect("room"));
        }
        inject_only(&tree, 10);
        {
            let guard = tree.heap.pin();
            let rec = tree.seek(10, &guard);
            let sib = rec.parent.other_child(10);
            let v = F::load(sib, tree.heap.space());
            F::compare_exchange(sib, v, v.with_tag(), tree.heap.space()).expect("tag");
            let rec = tree.seek(20, &guard);
            assert_ne!(
                rec.successor, rec.parent_ptr,
                "the remove of 20 meets a chain"
            );
        }
        assert!(tree.remove(20));
        assert_eq!(tree.snapshot(), (vec![30], true));
        assert!(!tree.remove(10), "10 was removed with the chain");
        // Retired nodes wait in this thread's bag of deferred frees: pin and flush until the
        // count settles (a leak or a double retire never settles at `want`).
        let want = 5 + 2;
        let mut live = tree.heap.live_blocks();
        for _ in 0..100_000 {
            if live == want {
                break;
            }
            tree.heap.pin().flush();
            live = tree.heap.live_blocks();
        }
        assert_eq!(
            live, want,
            "blocks after the chain was unlinked and the epoch advanced"
        );
    }

    #[test]
    fn a_swing_retires_the_whole_chain_volatile() {
        a_swing_retires_the_whole_chain::<Volatile>();
    }

    #[test]
    fn a_swing_retires_the_whole_chain_mirror() {
        a_swing_retires_the_whole_chain::<Mirror>();
    }

    /// Tree `10, 20, 30`: `I20 {10, I30 {20, 30}}`. Remove A of 20 flags its edge and stops
    /// before its cleanup; remove B of 30 runs whole: its cleanup tags A's flagged edge and
    /// swings `I20 -> I30` to A's leaf, carrying the flag up. A resumes: its cleanup from the
    /// stale record fails (the ancestor edge moved), so it must seek again and clean up at the
    /// new place, or leave a flagged leaf (and two nodes) in the tree after both returned.
    fn remove_retries_after_a_helper_moved_its_leaf<F: Flavor>() {
        let tree = Bst::<F, _>::anonymous(1 << 20).expect("tree");
        for k in [10, 20, 30] {
            assert!(tree.insert(k).expect("room"));
        }
        let guard = tree.heap.pin();
        let rec = tree.inject(20, &guard).expect("20 is present");
        assert!(tree.remove(30)); // B, whole
        assert_eq!(flagged(&tree), vec![20], "B carried A's flag up");
        tree.finish_remove(20, &rec, &guard); // A resumes
        drop(guard);
        assert_eq!(
            flagged(&tree),
            Vec::<u64>::new(),
            "A's leaf left in the tree"
        );
        assert_eq!(tree.snapshot(), (vec![10], true));
    }

    #[test]
    fn remove_retries_after_a_helper_moved_its_leaf_volatile() {
        remove_retries_after_a_helper_moved_its_leaf::<Volatile>();
    }

    #[test]
    fn remove_retries_after_a_helper_moved_its_leaf_mirror() {
        remove_retries_after_a_helper_moved_its_leaf::<Mirror>();
    }

    /// Issue 23's durability gap for the BST's flag (see `crate::mark_window`): thread A's
    /// remove of 2 stops right after its flag (`inject`), thread B's `contains(2)` returns
    /// `false`, and the crash image must recover without 2 (recovery finishing A's remove).
    fn a_flag_another_thread_acted_on_survives_a_crash<F: Flavor>() {
        let region = crate::mark_window::strict_region(SIM_SIZE, 11);
        let tree = Bst::<F, Simulated>::new(Heap::new(region).expect("heap")).expect("tree");
        for k in [1, 2, 3] {
            assert!(tree.insert(k).expect("room"));
        }
        crate::mark_window::check_mark_seen_by_another_thread(
            tree,
            2,
            |t| assert!(t.inject(2, &t.heap.pin()).is_some(), "A flags 2 and stops"),
            |t, k| t.contains(k),
            |t| t.heap.region().persist().crash(),
            |r| Bst::<F, Simulated>::recover(r).expect("recover").snapshot(),
            vec![1, 3],
        );
    }

    #[test]
    fn a_flag_another_thread_acted_on_survives_a_crash_mirror() {
        a_flag_another_thread_acted_on_survives_a_crash::<Mirror>();
    }

    #[test]
    fn a_flag_another_thread_acted_on_survives_a_crash_izraelevitz() {
        a_flag_another_thread_acted_on_survives_a_crash::<Izraelevitz>();
    }
}
