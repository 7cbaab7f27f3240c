//! The pairing-heap priority queue.

use super::{PqRead, PqResponse, PqWrite};
use crate::invariant::{ensure, InvariantError};
use crate::rng::SplitMix64;
use crate::skiplist::{index, NIL};
use nr_core::Dispatch;
use std::fmt;

#[derive(Clone, Copy)]
struct Node {
    key: u64,
    /// First child, or `NIL`.
    child: u32,
    /// Next sibling, or `NIL`; for a free node, the next free node.
    sibling: u32,
}

/// A min-priority queue of `u64` keys (a multiset: duplicates are kept) on a pairing heap
/// (Fredman, Sedgewick, Sleator and Tarjan, *The pairing heap*, Algorithmica 1986) — the
/// structure of Calciu et al., ASPLOS'17, §8.1.2 (Figure 6).
///
/// A heap-ordered multiway tree in child/sibling form: `insert` melds a one-node tree with the
/// root in O(1); `delete_min` removes the root and combines its children with the standard
/// two-pass pairing (meld pairs left to right, then meld the results right to left), in
/// O(log n) amortized; `find_min` reads the root. Both passes reuse the sibling links, so no
/// scratch memory is needed; nodes live in one arena vector with a free list, so a warmed-up
/// heap allocates nothing per operation. Deterministic: no randomness at all.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{PairingHeap, PqRead, PqResponse, PqWrite};
///
/// let mut heap = PairingHeap::with_capacity(16);
/// for k in [5, 1, 3, 1] {
///     heap.dispatch_mut(PqWrite::Insert(k));
/// }
/// assert_eq!(heap.dispatch(PqRead::FindMin), PqResponse::Min(Some(1)));
/// assert_eq!(heap.dispatch_mut(PqWrite::DeleteMin), PqResponse::Deleted(Some(1)));
/// assert_eq!(heap.dispatch_mut(PqWrite::DeleteMin), PqResponse::Deleted(Some(1)));
/// assert_eq!(heap.delete_min(), Some(3));
/// assert_eq!(heap.len(), 1);
/// ```
#[derive(Clone)]
pub struct PairingHeap {
    nodes: Vec<Node>,
    root: u32,
    /// First free node, chained through `sibling`.
    free: u32,
    len: usize,
}

impl PairingHeap {
    /// An empty heap.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::PairingHeap::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty heap with room for `capacity` keys before its arena grows.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = seqds::PairingHeap::with_capacity(1000);
    /// assert_eq!(heap.len(), 0);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            nodes: Vec::with_capacity(capacity),
            root: NIL,
            free: NIL,
            len: 0,
        }
    }

    /// A heap holding `n` keys drawn uniformly from all of `u64` by [`SplitMix64`]`(seed)`:
    /// the benchmarks' prefill (the same keys as [`SkipListPq::with_items`](crate::SkipListPq::with_items)).
    /// Equal arguments give equal heaps.
    ///
    /// The keys are only melded in, so the first `delete_min` pays O(n) to pair them; call it
    /// once (and re-insert) before timing if that matters.
    ///
    /// # Examples
    ///
    /// ```
    /// use seqds::{PairingHeap, SkipListPq};
    ///
    /// let heap = PairingHeap::with_items(100, 7);
    /// assert_eq!(heap.len(), 100);
    /// assert_eq!(heap.find_min(), SkipListPq::with_items(100, 7).find_min());
    /// ```
    pub fn with_items(n: usize, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut heap = Self::with_capacity(n);
        heap.extend((0..n).map(|_| rng.next_u64()));
        heap
    }

    /// The number of keys, counting duplicates.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap: seqds::PairingHeap = [1, 1, 2].into_iter().collect();
    /// assert_eq!(heap.len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the heap is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::PairingHeap::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `key`.
    ///
    /// # Panics
    ///
    /// Past about 2^32 keys (the arena uses `u32` indices).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut heap = seqds::PairingHeap::new();
    /// heap.insert(4);
    /// assert_eq!(heap.find_min(), Some(4));
    /// ```
    #[inline]
    pub fn insert(&mut self, key: u64) {
        let node = Node {
            key,
            child: NIL,
            sibling: NIL,
        };
        let x = if self.free != NIL {
            let x = self.free;
            self.free = self.nodes[x as usize].sibling;
            self.nodes[x as usize] = node;
            x
        } else {
            let x = index(self.nodes.len());
            self.nodes.push(node);
            x
        };
        self.root = if self.root == NIL {
            x
        } else {
            self.meld(self.root, x)
        };
        self.len += 1;
    }

    /// Removes and returns one copy of the smallest key.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut heap: seqds::PairingHeap = [2, 1].into_iter().collect();
    /// assert_eq!(heap.delete_min(), Some(1));
    /// assert_eq!(heap.delete_min(), Some(2));
    /// assert_eq!(heap.delete_min(), None);
    /// ```
    #[inline]
    pub fn delete_min(&mut self) -> Option<u64> {
        let root = self.root;
        if root == NIL {
            return None;
        }
        let Node { key, child, .. } = self.nodes[root as usize];
        self.root = self.merge_pairs(child);
        self.nodes[root as usize].sibling = self.free;
        self.free = root;
        self.len -= 1;
        Some(key)
    }

    /// The smallest key.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap: seqds::PairingHeap = [2, 1].into_iter().collect();
    /// assert_eq!(heap.find_min(), Some(1));
    /// ```
    #[inline]
    pub fn find_min(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.nodes[self.root as usize].key)
    }

    /// Makes the root with the larger key the first child of the other; returns the new root.
    /// On equal keys `a` stays the root. Leaves the winner's `sibling` as it was.
    #[inline]
    fn meld(&mut self, a: u32, b: u32) -> u32 {
        let (top, under) = if self.nodes[b as usize].key < self.nodes[a as usize].key {
            (b, a)
        } else {
            (a, b)
        };
        self.nodes[under as usize].sibling = self.nodes[top as usize].child;
        self.nodes[top as usize].child = under;
        top
    }

    /// Two-pass pairing of the sibling list starting at `first`; returns the new root (with no
    /// sibling), or `NIL` for an empty list.
    fn merge_pairs(&mut self, first: u32) -> u32 {
        // Pass 1, left to right: meld pairs; chain the results in reverse through `sibling`.
        let mut pairs = NIL;
        let mut x = first;
        while x != NIL {
            let y = self.nodes[x as usize].sibling;
            if y == NIL {
                self.nodes[x as usize].sibling = pairs;
                pairs = x;
                break;
            }
            let rest = self.nodes[y as usize].sibling;
            let m = self.meld(x, y);
            self.nodes[m as usize].sibling = pairs;
            pairs = m;
            x = rest;
        }
        if pairs == NIL {
            return NIL;
        }
        // Pass 2, right to left (the reversed chain starts with the rightmost pair).
        let mut root = pairs;
        let mut x = self.nodes[pairs as usize].sibling;
        while x != NIL {
            let rest = self.nodes[x as usize].sibling;
            root = self.meld(root, x);
            x = rest;
        }
        self.nodes[root as usize].sibling = NIL;
        root
    }

    /// Checks the heap's structure: every child's key is at least its parent's, every node is
    /// reached once (a tree), the length, the free list. O(n); for tests.
    ///
    /// # Errors
    ///
    /// [`InvariantError`] naming the first broken invariant (a bug in this crate).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut heap = seqds::PairingHeap::with_items(50, 1);
    /// heap.delete_min();
    /// assert!(heap.check_invariants().is_ok());
    /// ```
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        const NAME: &str = "PairingHeap";
        let n = self.nodes.len();
        let mut seen = vec![false; n];
        let mut reached = 0usize;
        if self.root != NIL {
            ensure!(
                NAME,
                (self.root as usize) < n,
                "root {} out of range",
                self.root
            );
            ensure!(
                NAME,
                self.nodes[self.root as usize].sibling == NIL,
                "root has a sibling"
            );
            seen[self.root as usize] = true;
            reached = 1;
            let mut stack = vec![self.root];
            while let Some(parent) = stack.pop() {
                let key = self.nodes[parent as usize].key;
                let mut c = self.nodes[parent as usize].child;
                while c != NIL {
                    ensure!(NAME, (c as usize) < n, "link to {c} out of range");
                    ensure!(NAME, !seen[c as usize], "node {c} reached twice");
                    seen[c as usize] = true;
                    reached += 1;
                    let ck = self.nodes[c as usize].key;
                    ensure!(NAME, ck >= key, "child {c} key {ck} below parent key {key}");
                    stack.push(c);
                    c = self.nodes[c as usize].sibling;
                }
            }
        }
        ensure!(
            NAME,
            reached == self.len,
            "len {} but {reached} reachable",
            self.len
        );
        let mut x = self.free;
        while x != NIL {
            ensure!(NAME, (x as usize) < n, "free node {x} out of range");
            ensure!(
                NAME,
                !seen[x as usize],
                "node {x} free and in use, or freed twice"
            );
            seen[x as usize] = true;
            reached += 1;
            x = self.nodes[x as usize].sibling;
        }
        ensure!(
            NAME,
            reached == n,
            "{} nodes but {reached} in use or free",
            n
        );
        Ok(())
    }
}

impl Default for PairingHeap {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for PairingHeap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairingHeap")
            .field("len", &self.len)
            .field("min", &self.find_min())
            .finish_non_exhaustive()
    }
}

impl Extend<u64> for PairingHeap {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, keys: I) {
        for k in keys {
            self.insert(k);
        }
    }
}

impl FromIterator<u64> for PairingHeap {
    fn from_iter<I: IntoIterator<Item = u64>>(keys: I) -> Self {
        let mut heap = Self::new();
        heap.extend(keys);
        heap
    }
}

impl Dispatch for PairingHeap {
    type ReadOperation<'a> = PqRead;
    type WriteOperation = PqWrite;
    type Response = PqResponse;

    #[inline]
    fn dispatch(&self, op: PqRead) -> PqResponse {
        match op {
            PqRead::FindMin => PqResponse::Min(self.find_min()),
            PqRead::Len => PqResponse::Len(self.len),
        }
    }

    #[inline]
    fn dispatch_mut(&mut self, op: PqWrite) -> PqResponse {
        match op {
            PqWrite::Insert(k) => {
                self.insert(k);
                PqResponse::Inserted
            }
            PqWrite::DeleteMin => PqResponse::Deleted(self.delete_min()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checker_detects_heap_order_violation() {
        let mut heap: PairingHeap = [5, 1, 9, 3].into_iter().collect();
        heap.delete_min(); // pairs the children into a deeper tree
        assert!(heap.check_invariants().is_ok());
        let mut broken = heap.clone();
        let child = broken.nodes[broken.root as usize].child;
        broken.nodes[child as usize].key = 0; // a child below its parent
        assert!(broken.check_invariants().is_err());
        let mut broken = heap;
        broken.len = 7;
        assert!(broken.check_invariants().is_err());
    }
}
