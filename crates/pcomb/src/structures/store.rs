//! Where a linked structure's persistent words live, and its header.
//!
//! A stack or queue keeps everything persistent in one block of 8-byte words: a header line, one
//! or two combining instances (`MIndex` and the two `StateRec` records each, see
//! [`Instance`](crate::engine::pb::Instance)) and the node pool. The block is a heap array (volatile
//! mode, and every structure under loom) or a 64-byte aligned range of a [`Region`] recorded as
//! the region's root (persistent mode).
//!
//! ```text
//! word 0..8   header: magic, max threads, capacity (nodes), total words, options, checksum
//! word 8..    instance(s), each `RecordLayout::total_words(2)` words
//! then        node pool: `2 * nodes` words, node i = [value, next] (next: index + 1, 0 = none)
//! ```
//!
//! All accesses go through `AtomicU64` (the `words::` convention of the protocols), so a loom
//! model and the simulated persistence domain see every one of them.

use pmem::{Persist, Region};

use crate::error::{wrong_kind, CombBuildError};
use crate::layout::LINE_WORDS;
use crate::memory::{checksum, Memory};
use crate::sync::{AtomicU64, Ordering};

/// Header word indices.
pub(crate) mod header {
    pub(crate) const MAGIC: usize = 0;
    pub(crate) const THREADS: usize = 1;
    pub(crate) const CAPACITY: usize = 2;
    pub(crate) const TOTAL_WORDS: usize = 3;
    pub(crate) const OPTIONS: usize = 4;
    pub(crate) const CHECKSUM: usize = 5;
    /// Words covered by the checksum.
    pub(crate) const CHECKED: usize = CHECKSUM;
}

/// The header of a structure: what [`Store::open_structure`] checks before anything else is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) magic: u64,
    pub(crate) threads: u64,
    pub(crate) capacity: u64,
    pub(crate) total_words: u64,
    pub(crate) options: u64,
}

impl Header {
    fn values(&self) -> [u64; LINE_WORDS] {
        let mut v = [0u64; LINE_WORDS];
        v[header::MAGIC] = self.magic;
        v[header::THREADS] = self.threads;
        v[header::CAPACITY] = self.capacity;
        v[header::TOTAL_WORDS] = self.total_words;
        v[header::OPTIONS] = self.options;
        v[header::CHECKSUM] = checksum(&v[..header::CHECKED]);
        v
    }
}

/// A structure's persistent words and the persistence domain that flushes them: the one
/// [`Memory`] type of the crate, with the structure's header.
pub(crate) type Store<P> = Memory<P>;

impl<P: Persist> Memory<P> {
    /// Writes `head`, then persists every word (pwb of everything, psync): a crash at
    /// any later point finds a complete initial structure.
    pub(crate) fn init_structure(&self, head: &Header) {
        self.write_header_and_persist(&head.values());
    }

    /// The block at `region`'s root, whose header has magic `magic` (named `kind` in errors).
    pub(crate) fn open_structure(
        region: Region<P>,
        magic: u64,
        kind: &'static str,
    ) -> Result<(Self, Header), CombBuildError> {
        let mismatch = |detail| CombBuildError::LayoutMismatch { kind, detail };
        let (off, v) = Self::read_root::<LINE_WORDS>(&region, kind)?;
        // The last byte of a structure's magic is its format: 2 since the records hold
        // per-thread sequence numbers (`layout.rs`), 1 before.
        let format_1 = (magic & !(0xff << 56)) | (u64::from(b'1') << 56);
        if v[header::MAGIC] == format_1 {
            return Err(CombBuildError::OldFormat { kind, found: 1 });
        }
        if v[header::MAGIC] != magic {
            return Err(wrong_kind(
                region.kind(),
                kind,
                mismatch("wrong magic (another structure, or not a structure root)"),
            ));
        }
        if v[header::CHECKSUM] != checksum(&v[..header::CHECKED]) {
            return Err(mismatch("header checksum does not match (corrupt header)"));
        }
        let head = Header {
            magic,
            threads: v[header::THREADS],
            capacity: v[header::CAPACITY],
            total_words: v[header::TOTAL_WORDS],
            options: v[header::OPTIONS],
        };
        let len = usize::try_from(head.total_words).ok();
        Ok((Self::open_root(region, off, len, kind)?, head))
    }
}

/// The node pool: node `i` is words `[at + 2i, at + 2i + 2)`: its value and its link (`i + 1`
/// of the next node, 0 for none). Four nodes share a cache line, so nodes allocated in order
/// are persisted with few pwbs (persistence principle 3).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pool {
    pub(crate) at: usize,
    pub(crate) nodes: u32,
}

/// Free node numbers: an explicit LIFO list, handed out first, then the never-used nodes
/// `next..end` in increasing order. A new structure's nodes are all in the range, so building
/// one costs no memory per node (issue 19: a free list filled node by node touched 4 bytes per
/// node at construction).
#[derive(Debug, Default)]
pub(crate) struct FreeNodes {
    list: Vec<u32>,
    next: u32,
    end: u32,
}

impl FreeNodes {
    /// Every node of `nodes` free, never used.
    pub(crate) fn unused(nodes: core::ops::Range<u32>) -> Self {
        Self {
            list: Vec::new(),
            next: nodes.start,
            end: nodes.end,
        }
    }

    /// Exactly the nodes of `list` free (`list`'s last is handed out first).
    pub(crate) fn from_list(list: Vec<u32>) -> Self {
        Self {
            list,
            next: 0,
            end: 0,
        }
    }

    /// A free node: the last one returned, else the lowest never used.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<u32> {
        if let Some(n) = self.list.pop() {
            return Some(n);
        }
        (self.next < self.end).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    /// Returns `node` (handed out next).
    #[inline]
    pub(crate) fn push(&mut self, node: u32) {
        self.list.push(node);
    }

    /// Returns every node of `nodes` (the last handed out first), leaving it empty.
    pub(crate) fn append(&mut self, nodes: &mut Vec<u32>) {
        self.list.append(nodes);
    }

    /// Whether `node` is free.
    #[cfg(test)]
    pub(crate) fn contains(&self, node: u32) -> bool {
        (self.next..self.end).contains(&node) || self.list.contains(&node)
    }

    /// Every free node (for audits).
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.list.iter().copied().chain(self.next..self.end)
    }
}

/// A link value: `0` is none, `i + 1` is node `i`.
pub(crate) type Link = u64;

impl Pool {
    /// Words a pool of `nodes` nodes takes, rounded up to whole lines.
    pub(crate) fn words(nodes: u32) -> usize {
        (2 * nodes as usize).div_ceil(LINE_WORDS) * LINE_WORDS
    }

    /// The node a link names, if it is in range.
    #[inline]
    pub(crate) fn node_of(&self, link: Link) -> Option<u32> {
        link.checked_sub(1)
            .filter(|&i| i < u64::from(self.nodes))
            .map(|i| i as u32)
    }

    #[inline]
    pub(crate) fn value(&self, w: &[AtomicU64], node: u32) -> u64 {
        // Relaxed: node words are published by the lock hand-off (stack) or by `old_tail`
        // (queue); see the callers.
        w[self.at + 2 * node as usize].load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn next(&self, w: &[AtomicU64], node: u32) -> Link {
        // Relaxed: as for `value`.
        w[self.at + 2 * node as usize + 1].load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn set<P: Persist>(
        &self,
        w: &[AtomicU64],
        persist: &P,
        node: u32,
        value: u64,
        next: Link,
    ) {
        let at = self.at + 2 * node as usize;
        // Relaxed: as for `value`.
        w[at].store(value, Ordering::Relaxed);
        persist.stored(&w[at]);
        w[at + 1].store(next, Ordering::Relaxed);
        persist.stored(&w[at + 1]);
    }

    #[inline]
    pub(crate) fn set_next<P: Persist>(&self, w: &[AtomicU64], persist: &P, node: u32, next: Link) {
        let at = self.at + 2 * node as usize + 1;
        // Relaxed: as for `value`.
        w[at].store(next, Ordering::Relaxed);
        // A store point (issue 11, defect 7): the simulator may evict or crash here, between
        // persistence events; nothing on real backends.
        persist.stored(&w[at]);
    }

    /// A node's value and link, for a wait-free attempt that may race with the node's reuse.
    /// Acquire: pairs with the Release stores of [`set_published`](Self::set_published) by a
    /// thread that reused the node, so the attempt's validation of `S` that follows sees that
    /// `S` moved on (the node was freed only after an install that no longer names it).
    #[inline]
    pub(crate) fn read_acquire(&self, w: &[AtomicU64], node: u32) -> (u64, Link) {
        let at = self.at + 2 * node as usize;
        (
            w[at].load(Ordering::Acquire),
            w[at + 1].load(Ordering::Acquire),
        )
    }

    /// Writes a node that a wait-free attempt owns. Release: pairs with
    /// [`read_acquire`](Self::read_acquire).
    #[inline]
    pub(crate) fn set_published<P: Persist>(
        &self,
        w: &[AtomicU64],
        persist: &P,
        node: u32,
        value: u64,
        next: Link,
    ) {
        let at = self.at + 2 * node as usize;
        w[at].store(value, Ordering::Release);
        persist.stored(&w[at]);
        w[at + 1].store(next, Ordering::Release);
        persist.stored(&w[at + 1]);
    }

    /// pwb of every line holding one of `nodes` (sorted in place; runs of nodes in consecutive
    /// lines are written back with one call).
    pub(crate) fn persist_nodes<P: Persist>(
        &self,
        w: &[AtomicU64],
        persist: &P,
        nodes: &mut [u32],
    ) {
        if nodes.is_empty() {
            return;
        }
        nodes.sort_unstable();
        let line = |n: u32| (self.at + 2 * n as usize) / LINE_WORDS;
        let mut first = line(nodes[0]);
        let mut last = first;
        for &n in &nodes[1..] {
            let l = line(n);
            if l > last + 1 {
                pwb_lines(w, persist, first, last);
                first = l;
            }
            last = l;
        }
        pwb_lines(w, persist, first, last);
    }
}

fn pwb_lines<P: Persist>(w: &[AtomicU64], persist: &P, first: usize, last: usize) {
    persist.pwb_val(&w[first * LINE_WORDS..(last + 1) * LINE_WORDS]);
}
