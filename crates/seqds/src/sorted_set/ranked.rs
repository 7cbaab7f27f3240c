//! A skip list with span counts (Redis's `zskiplist`, `t_zset.c`): each forward link also
//! records how many level-0 steps it skips, so the rank of an element is the sum of the spans
//! along its search path, O(log n) expected.
//!
//! Arena-based like [`crate::skiplist`]: nodes and `(next, span)` towers in vectors, free lists
//! per tower height, heights from a seeded generator stored in the list.

use crate::invariant::{ensure, InvariantError};
use crate::rng::SplitMix64;
use crate::skiplist::{index, random_height, LEVEL_SEED, MAX_HEIGHT, NIL};

/// The head sentinel: node 0, full height, never removed.
const HEAD: u32 = 0;

/// A sorted-set element, ordered by score, then member (Redis orders equal scores by member).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Entry {
    pub(crate) score: i64,
    pub(crate) member: u64,
}

#[derive(Clone, Copy)]
struct Link {
    next: u32,
    /// Level-0 steps from this node to `next`. When `next` is `NIL`: the steps to one past the
    /// last element (`len - rank(this)`), as Redis keeps it. Meaningless for free nodes and for
    /// the head's links at or above `level`.
    span: u32,
}

#[derive(Clone)]
struct Node {
    key: Entry,
    tower: u32,
    height: u8,
}

/// A skip list of distinct [`Entry`]s with rank queries.
#[derive(Clone)]
pub(crate) struct RankedSkipList {
    nodes: Vec<Node>,
    /// Node `x`'s link at level `l` is `links[nodes[x].tower + l]`; a free node's level-0
    /// `next` is the next free node of its height.
    links: Vec<Link>,
    free: [u32; MAX_HEIGHT + 1],
    level: usize,
    len: usize,
    rng: SplitMix64,
}

impl RankedSkipList {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let mut nodes = Vec::with_capacity(capacity.saturating_add(1));
        nodes.push(Node {
            key: Entry::default(),
            tower: 0,
            height: MAX_HEIGHT as u8,
        });
        let mut links = Vec::with_capacity(MAX_HEIGHT + capacity.saturating_mul(4) / 3);
        links.resize(MAX_HEIGHT, Link { next: NIL, span: 0 });
        Self {
            nodes,
            links,
            free: [NIL; MAX_HEIGHT + 1],
            level: 1,
            len: 0,
            rng: SplitMix64::new(LEVEL_SEED),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn levels(&self) -> usize {
        self.level
    }

    #[inline]
    fn link(&self, x: u32, level: usize) -> Link {
        self.links[self.nodes[x as usize].tower as usize + level]
    }

    #[inline]
    fn link_mut(&mut self, x: u32, level: usize) -> &mut Link {
        let tower = self.nodes[x as usize].tower as usize;
        &mut self.links[tower + level]
    }

    #[inline]
    fn key(&self, x: u32) -> Entry {
        self.nodes[x as usize].key
    }

    /// Inserts `key`, which must be absent (`zslInsert`).
    pub(crate) fn insert(&mut self, key: Entry) {
        let mut update = [HEAD; MAX_HEIGHT];
        // rank[l]: the rank (1-based, head = 0) of update[l].
        let mut rank = [0u32; MAX_HEIGHT];
        let mut x = HEAD;
        for level in (0..self.level).rev() {
            rank[level] = if level + 1 == self.level {
                0
            } else {
                rank[level + 1]
            };
            loop {
                let Link { next, span } = self.link(x, level);
                if next != NIL && self.key(next) < key {
                    rank[level] += span;
                    x = next;
                } else {
                    break;
                }
            }
            update[level] = x;
        }
        let height = random_height(&mut self.rng);
        if height > self.level {
            let len = index(self.len);
            for level in self.level..height {
                rank[level] = 0;
                update[level] = HEAD;
                self.link_mut(HEAD, level).span = len;
            }
            self.level = height;
        }
        let x = self.alloc(key, height);
        for level in 0..height {
            let pred = self.link(update[level], level);
            let before = rank[0] - rank[level];
            *self.link_mut(x, level) = Link {
                next: pred.next,
                span: pred.span - before,
            };
            *self.link_mut(update[level], level) = Link {
                next: x,
                span: before + 1,
            };
        }
        for (level, &pred) in update.iter().enumerate().take(self.level).skip(height) {
            self.link_mut(pred, level).span += 1;
        }
        self.len += 1;
    }

    /// Removes `key`; returns whether it was present (`zslDelete`).
    pub(crate) fn remove(&mut self, key: Entry) -> bool {
        let mut update = [HEAD; MAX_HEIGHT];
        let mut x = HEAD;
        for level in (0..self.level).rev() {
            loop {
                let next = self.link(x, level).next;
                if next != NIL && self.key(next) < key {
                    x = next;
                } else {
                    break;
                }
            }
            update[level] = x;
        }
        let x = self.link(x, 0).next;
        if x == NIL || self.key(x) != key {
            return false;
        }
        for (level, &pred) in update.iter().enumerate().take(self.level) {
            if self.link(pred, level).next == x {
                // Only levels below x's height reach x; x's own link exists there.
                let gone = self.link(x, level);
                let link = self.link_mut(pred, level);
                link.span += gone.span;
                link.span -= 1;
                link.next = gone.next;
            } else {
                self.link_mut(pred, level).span -= 1;
            }
        }
        while self.level > 1 && self.link(HEAD, self.level - 1).next == NIL {
            self.level -= 1;
        }
        let height = self.nodes[x as usize].height as usize;
        let free = self.free[height];
        self.link_mut(x, 0).next = free;
        self.free[height] = x;
        self.len -= 1;
        true
    }

    /// The 0-based rank of `key`, if present (`zslGetRank` - 1).
    #[inline]
    pub(crate) fn rank(&self, key: Entry) -> Option<usize> {
        let mut x = HEAD;
        let mut rank = 0usize;
        for level in (0..self.level).rev() {
            loop {
                let Link { next, span } = self.link(x, level);
                if next != NIL && self.key(next) <= key {
                    rank += span as usize;
                    x = next;
                } else {
                    break;
                }
            }
            if x != HEAD && self.key(x) == key {
                return Some(rank - 1);
            }
        }
        None
    }

    /// The element of 0-based rank `rank` (`zslGetElementByRank`).
    pub(crate) fn by_rank(&self, rank: usize) -> Option<Entry> {
        if rank >= self.len {
            return None;
        }
        let target = rank + 1;
        let mut x = HEAD;
        let mut traversed = 0usize;
        for level in (0..self.level).rev() {
            loop {
                let Link { next, span } = self.link(x, level);
                if next != NIL && traversed + span as usize <= target {
                    traversed += span as usize;
                    x = next;
                } else {
                    break;
                }
            }
            if traversed == target {
                return Some(self.key(x));
            }
        }
        None
    }

    /// The elements in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Entry> + '_ {
        let mut x = self.link(HEAD, 0).next;
        std::iter::from_fn(move || {
            if x == NIL {
                return None;
            }
            let key = self.key(x);
            x = self.link(x, 0).next;
            Some(key)
        })
    }

    fn alloc(&mut self, key: Entry, height: usize) -> u32 {
        let x = self.free[height];
        if x != NIL {
            self.free[height] = self.link(x, 0).next;
            self.nodes[x as usize].key = key;
            return x;
        }
        let x = index(self.nodes.len());
        let tower = index(self.links.len());
        self.links
            .resize(self.links.len() + height, Link { next: NIL, span: 0 });
        self.nodes.push(Node {
            key,
            tower,
            height: height as u8,
        });
        x
    }

    /// Checks order, level structure, spans, length and free lists. O(n · MAX_HEIGHT).
    pub(crate) fn check(&self, name: &'static str) -> Result<(), InvariantError> {
        let n_nodes = self.nodes.len();
        let head = &self.nodes[0];
        ensure!(
            name,
            head.tower == 0 && head.height as usize == MAX_HEIGHT,
            "head sentinel malformed"
        );
        ensure!(
            name,
            (1..=MAX_HEIGHT).contains(&self.level),
            "level {} out of range",
            self.level
        );
        let mut end = 0usize;
        for (i, node) in self.nodes.iter().enumerate() {
            let h = node.height as usize;
            ensure!(name, (1..=MAX_HEIGHT).contains(&h), "node {i} height {h}");
            ensure!(name, node.tower as usize == end, "node {i} tower overlaps");
            end += h;
        }
        ensure!(name, end == self.links.len(), "links not tiled by towers");
        for (i, l) in self.links.iter().enumerate() {
            ensure!(
                name,
                l.next == NIL || (l.next as usize) < n_nodes,
                "link {i} -> {} out of range",
                l.next
            );
        }

        // Level 0, and each element's rank.
        let mut rank_of = vec![usize::MAX; n_nodes];
        rank_of[0] = 0;
        let mut order = Vec::with_capacity(self.len);
        let mut x = self.link(HEAD, 0).next;
        while x != NIL {
            ensure!(
                name,
                rank_of[x as usize] == usize::MAX,
                "node {x} reached twice at level 0"
            );
            rank_of[x as usize] = order.len() + 1;
            let h = self.nodes[x as usize].height as usize;
            ensure!(
                name,
                h <= self.level,
                "node {x} height {h} above level {}",
                self.level
            );
            if let Some(&p) = order.last() {
                let (a, b) = (self.key(p), self.key(x));
                ensure!(name, a < b, "entries out of order: {a:?} then {b:?}");
            }
            order.push(x);
            x = self.link(x, 0).next;
        }
        ensure!(
            name,
            order.len() == self.len,
            "len {} but {} reachable",
            self.len,
            order.len()
        );

        for level in 0..MAX_HEIGHT {
            let mut expected = order
                .iter()
                .copied()
                .filter(|&x| self.nodes[x as usize].height as usize > level);
            let mut x = HEAD;
            loop {
                let Link { next, span } = self.link(x, level);
                if level >= self.level {
                    ensure!(name, next == NIL, "head link at unused level {level}");
                    break;
                }
                let to = if next == NIL {
                    self.len
                } else {
                    rank_of[next as usize]
                };
                ensure!(
                    name,
                    span as usize == to.wrapping_sub(rank_of[x as usize]),
                    "span of node {x} at level {level} is {span}, expected {}",
                    to.wrapping_sub(rank_of[x as usize])
                );
                if next == NIL {
                    break;
                }
                if level > 0 {
                    ensure!(
                        name,
                        expected.next() == Some(next),
                        "level {level} reaches node {next} out of place"
                    );
                }
                x = next;
            }
            if level > 0 {
                ensure!(
                    name,
                    expected.next().is_none(),
                    "level {level} misses a tall node"
                );
            }
        }
        ensure!(
            name,
            self.level == 1 || self.link(HEAD, self.level - 1).next != NIL,
            "level {} not tight",
            self.level
        );

        let mut n_free = 0usize;
        for (h, &first) in self.free.iter().enumerate() {
            let mut x = first;
            while x != NIL {
                ensure!(name, h != 0, "free list 0 in use");
                ensure!(name, (x as usize) < n_nodes, "free node {x} out of range");
                ensure!(
                    name,
                    rank_of[x as usize] == usize::MAX,
                    "node {x} free and in use, or freed twice"
                );
                rank_of[x as usize] = 0;
                ensure!(
                    name,
                    self.nodes[x as usize].height as usize == h,
                    "node {x} on free list {h} has another height"
                );
                n_free += 1;
                x = self.link(x, 0).next;
            }
        }
        ensure!(
            name,
            n_free + self.len + 1 == n_nodes,
            "{} nodes but {} free + {} in use + head",
            n_nodes,
            n_free,
            self.len
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(score: i64, member: u64) -> Entry {
        Entry { score, member }
    }

    #[test]
    fn ranks_follow_score_then_member() {
        let mut list = RankedSkipList::with_capacity(0);
        for (s, m) in [(5, 1), (1, 9), (5, 0), (-3, 4)] {
            list.insert(e(s, m));
        }
        list.check("test").expect("invariants");
        assert_eq!(list.rank(e(-3, 4)), Some(0));
        assert_eq!(list.rank(e(1, 9)), Some(1));
        assert_eq!(list.rank(e(5, 0)), Some(2));
        assert_eq!(list.rank(e(5, 1)), Some(3));
        assert_eq!(list.rank(e(5, 2)), None);
        assert_eq!(list.by_rank(2), Some(e(5, 0)));
        assert_eq!(list.by_rank(4), None);
        assert!(list.remove(e(1, 9)));
        assert!(!list.remove(e(1, 9)));
        assert_eq!(list.rank(e(5, 1)), Some(2));
        list.check("test").expect("invariants");
    }

    #[test]
    fn checker_detects_a_wrong_span() {
        let mut list = RankedSkipList::with_capacity(0);
        for m in 0..50 {
            list.insert(e(0, m));
        }
        list.check("test").expect("invariants");
        let mut broken = list.clone();
        broken.links[0].span += 1; // head's level-0 span must be 1
        assert!(broken.check("test").is_err());
        let mut broken = list;
        let top = broken.level - 1;
        broken.links[top].span += 1;
        assert!(broken.check("test").is_err());
    }
}
