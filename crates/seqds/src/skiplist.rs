//! The arena-based skip list (Pugh, *Skip lists: a probabilistic alternative to balanced trees*,
//! CACM 1990) behind [`SkipListPq`](crate::SkipListPq) and [`SkipListMap`](crate::SkipListMap).
//!
//! Nodes live in one `Vec`, their towers of forward links in another, indices instead of
//! pointers: no `unsafe`, no allocation per operation once the arena has grown, and a `Clone`
//! that is two `memcpy`s. A removed node goes on a free list of nodes of its height, so its
//! tower is reused exactly by the next node drawn with that height.
//!
//! Tower heights come from a [`SplitMix64`] stored in the list: a replica's heights are part of
//! its state, so replicas applying the same writes stay identical (see
//! [`Dispatch`](nr_core::Dispatch#determinism)).

use crate::invariant::{ensure, InvariantError};
use crate::rng::SplitMix64;

/// The tallest tower. With p = 1/4 a list needs about `log4(n)` levels, so 24 levels serve up
/// to 2^48 elements, far past what the `u32` indices can address.
pub(crate) const MAX_HEIGHT: usize = 24;

/// The "no node" index.
pub(crate) const NIL: u32 = u32::MAX;

/// The head sentinel: node 0, a full-height tower, never removed, key never read.
const HEAD: u32 = 0;

/// The seed of the tower-height generator of every new list. Fixed, so that replicas built by
/// the same constructor are equal.
pub(crate) const LEVEL_SEED: u64 = 0x5EED_0F5C_1B11_57E5;

/// A tower height with P(height > h) = 4^-h (Redis's p = 1/4), at most [`MAX_HEIGHT`].
#[inline]
pub(crate) fn random_height(rng: &mut SplitMix64) -> usize {
    // Two random bits per level: the number of trailing zero pairs.
    let h = 1 + (rng.next_u64().trailing_zeros() / 2) as usize;
    h.min(MAX_HEIGHT)
}

/// Converts an arena position to a `u32` index.
///
/// # Panics
///
/// Past `u32::MAX - 1` nodes or links (tens of gigabytes of structure).
#[inline]
pub(crate) fn index(n: usize) -> u32 {
    match u32::try_from(n) {
        Ok(i) if i != NIL => i,
        _ => too_large(),
    }
}

#[cold]
#[inline(never)]
fn too_large() -> ! {
    panic!("seqds: arena index space exhausted (more than 2^32 - 2 nodes or links)")
}

#[derive(Clone)]
struct Node<K, V> {
    key: K,
    value: V,
    /// Where this node's forward links start in `SkipList::links`.
    tower: u32,
    height: u8,
}

/// A skip list ordered by `K`, with `V` carried along. Duplicate keys are allowed by
/// [`insert_after_equal`](Self::insert_after_equal) and refused by
/// [`insert_or_replace`](Self::insert_or_replace); a list uses one or the other.
#[derive(Clone)]
pub(crate) struct SkipList<K, V> {
    /// `nodes[0]` is the head; the others are elements or free.
    nodes: Vec<Node<K, V>>,
    /// Forward links: node `x`'s successor at level `l` is `links[nodes[x].tower + l]`. For a
    /// free node, `links[tower]` is the next free node of the same height.
    links: Vec<u32>,
    /// `free[h]`: the first free node of height `h` (`free[0]` is unused).
    free: [u32; MAX_HEIGHT + 1],
    /// Levels in use: the head's links at `level..` are all `NIL`, and at `level - 1` it is not
    /// `NIL` unless `level == 1`.
    level: usize,
    len: usize,
    rng: SplitMix64,
}

impl<K: Copy + Ord + Default, V: Copy + Default> SkipList<K, V> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let mut nodes = Vec::with_capacity(capacity.saturating_add(1));
        nodes.push(Node {
            key: K::default(),
            value: V::default(),
            tower: 0,
            height: MAX_HEIGHT as u8,
        });
        // Expected links per element: 1 / (1 - 1/4) = 4/3.
        let mut links = Vec::with_capacity(MAX_HEIGHT + capacity.saturating_mul(4) / 3);
        links.resize(MAX_HEIGHT, NIL);
        Self {
            nodes,
            links,
            free: [NIL; MAX_HEIGHT + 1],
            level: 1,
            len: 0,
            rng: SplitMix64::new(LEVEL_SEED),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Levels in use (for `Debug`).
    pub(crate) fn levels(&self) -> usize {
        self.level
    }

    #[inline]
    fn next(&self, x: u32, level: usize) -> u32 {
        self.links[self.nodes[x as usize].tower as usize + level]
    }

    #[inline]
    fn set_next(&mut self, x: u32, level: usize, to: u32) {
        let tower = self.nodes[x as usize].tower as usize;
        self.links[tower + level] = to;
    }

    #[inline]
    fn key(&self, x: u32) -> K {
        self.nodes[x as usize].key
    }

    /// The smallest element (the first of equal keys).
    #[inline]
    pub(crate) fn first(&self) -> Option<(K, V)> {
        let x = self.next(HEAD, 0);
        (x != NIL).then(|| {
            let node = &self.nodes[x as usize];
            (node.key, node.value)
        })
    }

    /// Removes the smallest element in O(its height): the first node is the head's successor
    /// at every level of its tower, so no search is needed.
    #[inline]
    pub(crate) fn pop_first(&mut self) -> Option<(K, V)> {
        let x = self.next(HEAD, 0);
        if x == NIL {
            return None;
        }
        Some(self.unlink(&[HEAD; MAX_HEIGHT], x))
    }

    /// The first node whose key is not below `key`, or `NIL`.
    #[inline]
    fn lower_bound(&self, key: &K) -> u32 {
        let mut x = HEAD;
        for level in (0..self.level).rev() {
            loop {
                let n = self.next(x, level);
                if n != NIL && self.key(n) < *key {
                    x = n;
                } else {
                    break;
                }
            }
        }
        self.next(x, 0)
    }

    /// Fills `preds[l]` (for `l < self.level`) with the last node at level `l` whose key is
    /// below `key` (`INCLUSIVE`: not above `key`).
    #[inline]
    fn find_preds<const INCLUSIVE: bool>(&self, key: &K, preds: &mut [u32; MAX_HEIGHT]) {
        let mut x = HEAD;
        for level in (0..self.level).rev() {
            loop {
                let n = self.next(x, level);
                if n == NIL {
                    break;
                }
                let k = self.key(n);
                if k < *key || (INCLUSIVE && k == *key) {
                    x = n;
                } else {
                    break;
                }
            }
            preds[level] = x;
        }
    }

    /// The value stored under `key` (the first, if duplicated).
    #[inline]
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let x = self.lower_bound(key);
        (x != NIL && self.key(x) == *key).then(|| self.nodes[x as usize].value)
    }

    /// Inserts after every element with an equal key (duplicates allowed).
    #[inline]
    pub(crate) fn insert_after_equal(&mut self, key: K, value: V) {
        let mut preds = [HEAD; MAX_HEIGHT];
        self.find_preds::<true>(&key, &mut preds);
        self.link_new(&mut preds, key, value);
    }

    /// Inserts `key`, or replaces its value and returns the old one.
    #[inline]
    pub(crate) fn insert_or_replace(&mut self, key: K, value: V) -> Option<V> {
        let mut preds = [HEAD; MAX_HEIGHT];
        self.find_preds::<false>(&key, &mut preds);
        let x = self.next(preds[0], 0);
        if x != NIL && self.key(x) == key {
            return Some(std::mem::replace(&mut self.nodes[x as usize].value, value));
        }
        self.link_new(&mut preds, key, value);
        None
    }

    /// Removes the (first) element with key `key` and returns its value.
    #[inline]
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let mut preds = [HEAD; MAX_HEIGHT];
        self.find_preds::<false>(key, &mut preds);
        let x = self.next(preds[0], 0);
        if x != NIL && self.key(x) == *key {
            Some(self.unlink(&preds, x).1)
        } else {
            None
        }
    }

    /// Links a new node after `preds[l]` at each level `l` of its (random) height.
    fn link_new(&mut self, preds: &mut [u32; MAX_HEIGHT], key: K, value: V) {
        let height = random_height(&mut self.rng);
        if height > self.level {
            preds[self.level..height].fill(HEAD);
            self.level = height;
        }
        let x = self.alloc(key, value, height);
        for (level, &pred) in preds.iter().enumerate().take(height) {
            let succ = self.next(pred, level);
            self.set_next(x, level, succ);
            self.set_next(pred, level, x);
        }
        self.len += 1;
    }

    /// A node of `height` holding `key` and `value`: a free one if any, else a new one.
    fn alloc(&mut self, key: K, value: V, height: usize) -> u32 {
        let x = self.free[height];
        if x != NIL {
            self.free[height] = self.next(x, 0);
            let node = &mut self.nodes[x as usize];
            node.key = key;
            node.value = value;
            return x;
        }
        let x = index(self.nodes.len());
        let tower = index(self.links.len());
        // The caller sets every link of the new tower.
        self.links.resize(self.links.len() + height, NIL);
        self.nodes.push(Node {
            key,
            value,
            tower,
            height: height as u8,
        });
        x
    }

    /// Unlinks node `x`, whose predecessor at each level `l` of its tower is `preds[l]`, and
    /// puts it on its free list.
    fn unlink(&mut self, preds: &[u32; MAX_HEIGHT], x: u32) -> (K, V) {
        let node = &self.nodes[x as usize];
        let (height, key, value) = (node.height as usize, node.key, node.value);
        for (level, &pred) in preds.iter().enumerate().take(height) {
            let succ = self.next(x, level);
            self.set_next(pred, level, succ);
        }
        while self.level > 1 && self.next(HEAD, self.level - 1) == NIL {
            self.level -= 1;
        }
        let head_of_free = self.free[height];
        self.set_next(x, 0, head_of_free);
        self.free[height] = x;
        self.len -= 1;
        (key, value)
    }

    /// The elements in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        let mut x = self.next(HEAD, 0);
        std::iter::from_fn(move || {
            if x == NIL {
                return None;
            }
            let node = &self.nodes[x as usize];
            x = self.next(x, 0);
            Some((node.key, node.value))
        })
    }

    /// Checks every structural invariant; O(n · MAX_HEIGHT). `unique`: keys strictly increase
    /// (else they must not decrease).
    pub(crate) fn check(&self, name: &'static str, unique: bool) -> Result<(), InvariantError>
    where
        K: std::fmt::Debug,
    {
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
        // Towers tile `links` exactly, in node order.
        let mut end = 0usize;
        for (i, node) in self.nodes.iter().enumerate() {
            let h = node.height as usize;
            ensure!(name, (1..=MAX_HEIGHT).contains(&h), "node {i} height {h}");
            ensure!(name, node.tower as usize == end, "node {i} tower overlaps");
            end += h;
        }
        ensure!(name, end == self.links.len(), "links not tiled by towers");
        for (i, &l) in self.links.iter().enumerate() {
            ensure!(
                name,
                l == NIL || (l as usize) < n_nodes,
                "link {i} -> {l} out of range"
            );
        }

        // Level 0: the elements, in order, each once.
        let mut seen = vec![false; n_nodes];
        seen[0] = true;
        let mut order = Vec::with_capacity(self.len);
        let mut x = self.next(HEAD, 0);
        while x != NIL {
            ensure!(name, !seen[x as usize], "node {x} reached twice at level 0");
            seen[x as usize] = true;
            let h = self.nodes[x as usize].height as usize;
            ensure!(
                name,
                h <= self.level,
                "node {x} height {h} above level {}",
                self.level
            );
            if let Some(&p) = order.last() {
                let (a, b) = (self.key(p), self.key(x));
                ensure!(
                    name,
                    a < b || (!unique && a == b),
                    "keys out of order at level 0: {a:?} then {b:?}"
                );
            }
            order.push(x);
            x = self.next(x, 0);
        }
        ensure!(
            name,
            order.len() == self.len,
            "len {} but {} reachable",
            self.len,
            order.len()
        );

        // Level l: exactly the level-0 nodes taller than l, in the same order.
        for level in 1..MAX_HEIGHT {
            let mut expected = order
                .iter()
                .copied()
                .filter(|&x| self.nodes[x as usize].height as usize > level);
            let mut x = self.next(HEAD, level);
            while x != NIL {
                ensure!(
                    name,
                    expected.next() == Some(x),
                    "level {level} reaches node {x} out of place"
                );
                x = self.next(x, level);
            }
            ensure!(
                name,
                expected.next().is_none(),
                "level {level} misses a tall node"
            );
        }
        ensure!(
            name,
            self.level == 1 || self.next(HEAD, self.level - 1) != NIL,
            "level {} not tight",
            self.level
        );

        // Free lists: every other node, each on the list of its height.
        let mut n_free = 0usize;
        for (h, &first) in self.free.iter().enumerate() {
            let mut x = first;
            while x != NIL {
                ensure!(name, h != 0, "free list 0 in use");
                ensure!(name, (x as usize) < n_nodes, "free node {x} out of range");
                ensure!(
                    name,
                    !seen[x as usize],
                    "node {x} free and in use, or freed twice"
                );
                seen[x as usize] = true;
                ensure!(
                    name,
                    self.nodes[x as usize].height as usize == h,
                    "node {x} on free list {h} has another height"
                );
                n_free += 1;
                x = self.next(x, 0);
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

    #[test]
    fn heights_follow_quarter_probability() {
        let mut rng = SplitMix64::new(1);
        let mut at_least_2 = 0;
        let draws = 40_000;
        for _ in 0..draws {
            let h = random_height(&mut rng);
            assert!((1..=MAX_HEIGHT).contains(&h));
            if h >= 2 {
                at_least_2 += 1;
            }
        }
        // Expected 10_000; a deterministic seed, so no flakiness.
        assert!((9_000..11_000).contains(&at_least_2), "{at_least_2}");
    }

    #[test]
    fn freed_towers_are_reused() {
        let mut list = SkipList::<u64, ()>::with_capacity(0);
        for k in 0..100 {
            list.insert_after_equal(k, ());
        }
        let (nodes, links) = (list.nodes.len(), list.links.len());
        for _ in 0..1000 {
            let (k, ()) = list.pop_first().expect("non-empty");
            list.insert_after_equal(k + 100, ());
            list.check("test", false).expect("invariants");
        }
        // Heights are random, so a few more nodes may be needed, but nowhere near 1000.
        assert!(list.nodes.len() < nodes + 100, "{} nodes", list.nodes.len());
        assert!(list.links.len() < links + 400);
        assert_eq!(list.len(), 100);
    }

    #[test]
    fn checker_detects_corruption() {
        let mut list = SkipList::<u64, u64>::with_capacity(0);
        for k in [5, 1, 9, 3] {
            list.insert_or_replace(k, k);
        }
        assert!(list.check("test", true).is_ok());
        let mut broken = list.clone();
        broken.nodes[1].key = 100; // key 5 becomes 100: out of order
        assert!(broken.check("test", true).is_err());
        let mut broken = list.clone();
        broken.len += 1;
        assert!(broken.check("test", true).is_err());
        let mut broken = list;
        broken.links[0] = NIL; // head's level 0 loses every element
        assert!(broken.check("test", true).is_err());
    }
}
