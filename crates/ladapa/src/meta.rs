//! Metadata: the shared first-level table (L1) and one second-level table (L2) per node.
//!
//! Metadata is small ([`Meta`]: a version and the authoritative block's location); values live
//! in the data pools. This is the paper's data decoupling (§III-B, Fig. 5).
//!
//! # First-level table
//!
//! Set-associative: `sets` sets of up to [`WAYS`] entries, a key's set chosen by a
//! multiplicative hash. Each set has a readers-writer lock, a per-set version counter and a
//! CLOCK hand:
//!
//! - **Replacement: CLOCK within the set.** A hit sets the entry's reference bit; an insertion
//!   into a full set sweeps from the hand, clearing set bits, and evicts the first entry whose
//!   bit is clear (at most two sweeps).
//! - **Read promotion: into free ways, and now and then into the CLOCK victim's way.** A read
//!   that misses L1 and finds the key in its node's L2 inserts it into L1 if the set has a free
//!   way, or (one L1 miss in 16 per node) into the CLOCK victim's way after installing the
//!   victim in every L2, as a write's eviction does; only if the set's lock is free at that
//!   moment (`try_write`): reads never wait for promotion.
//! - **Writes always insert** (evicting by CLOCK when the set is full): the newest metadata of a
//!   key is always in L1 or, if not there, in *every* L2 (the invariant below).
//!
//! # The findability invariant
//!
//! For every key, under its set's lock: either L1 holds the key's current [`Meta`], or L1 does
//! not hold the key and every node's L2 holds its current [`Meta`] (or no L2 holds it and the
//! key is absent). It holds because every write and delete of a key runs under its set's write
//! lock; a write puts the new metadata into L1; eviction installs the victim's metadata into
//! every L2 *before* removing it from L1 (the issue's rule, paper §III-C "actively and
//! synchronously replicated across all nodes"); a delete removes the key from L1 and every L2;
//! and L2 installs are monotone in the version, so a late asynchronous propagation never
//! regresses an L2.
//!
//! Versions come from the set's counter, so they are unique per set (hence per key, across
//! deletes and re-inserts) and increase with every write of a key.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::num::NonZeroU64;

use crossbeam_utils::CachePadded;

use crate::sync::{fence, AtomicU64, AtomicUsize, Ordering, RwLock, RwLockWriteGuard};

/// Entries per first-level set (the associativity).
pub const WAYS: usize = 8;

/// Shards per second-level table.
const L2_SHARDS: usize = 64;

/// Where a value block is: its node's pool and its block number there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    pub(crate) node: u16,
    pub(crate) block: u32,
}

/// A key's metadata: the version of its current value and where the authoritative copy is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) version: u64,
    pub(crate) loc: Loc,
}

/// A second-level entry: the node's copy of the metadata and, maybe, a local replica of the
/// value with the version it was copied from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct L2Entry {
    pub(crate) meta: Meta,
    /// `(block in this domain's home pool, version copied)`. Versions start at 1, so the
    /// `NonZeroU64` gives the `Option` a niche: an entry is 32 bytes, a hash-map bucket with
    /// its key 40 (48 with a plain `u64`), which matters because the L2 lookup of a read that
    /// misses L1 is mostly cache misses on these buckets.
    pub(crate) replica: Option<(u32, NonZeroU64)>,
}

/// The contents of one first-level set (under its lock).
#[derive(Debug)]
pub(crate) struct SetData {
    keys: [u64; WAYS],
    metas: [Meta; WAYS],
    /// Bit `i` set: way `i` holds an entry.
    used: u32,
    /// CLOCK hand: the next way the sweep looks at.
    hand: u32,
    /// Ways this set has (`WAYS` except for a tiny table).
    ways: u32,
    /// The last version handed out in this set.
    last_version: u64,
    /// Bit `i`: way `i`'s key or metadata changed since the mirror was last published.
    dirty: u32,
}

/// One first-level set: its lock, its CLOCK reference bits (set by readers, hence atomic) and
/// a seqlock-published mirror of its entries for [`NodeHandle::get`](crate::NodeHandle::get).
///
/// Every change of the set's entries (and every change of an L2 that a write makes under the
/// set's lock) happens through a [`SetWrite`], which makes `seq` odd before it and publishes
/// the mirror and an even `seq` after it. A reader that finds `seq` even and unchanged around
/// its reads of the mirror (and of its L2, on a miss) saw the state between two writers'
/// critical sections, as if it had held the read lock, without writing to the set's lines:
/// a hot set read by several cores stays shared in their caches instead of bouncing with
/// every read-lock acquisition. Background threads, and readers that meet a writer, take the
/// read lock as before.
///
/// | word | meaning |
/// |---|---|
/// | `seq` | even: no writer; odd: a writer holds the lock and is changing the set |
/// | `mirror_keys[i]` | key in way `i` (meaningful when bit `i` of `mirror_used` is set) |
/// | `mirror_metas[2i]`, `[2i + 1]` | its version, its location (`node << 32 \| block`) |
/// | `mirror_used` | bit `i`: way `i` holds an entry |
#[derive(Debug)]
pub(crate) struct Set {
    pub(crate) data: RwLock<SetData>,
    /// Bit `i`: way `i` was hit since the hand last passed it.
    referenced: AtomicUsize,
    /// Ways this set has (as `SetData::ways`; never changes).
    ways: u32,
    seq: AtomicU64,
    mirror_used: AtomicU64,
    mirror_keys: [AtomicU64; WAYS],
    mirror_metas: [AtomicU64; 2 * WAYS],
}

/// The write lock of a [`Set`]: the seqlock is odd while it is held; dropping it publishes the
/// entries to the mirror, then makes the seqlock even again, then unlocks.
pub(crate) struct SetWrite<'a> {
    /// Unlocked when the guard's fields drop, after `Drop::drop` has published.
    data: RwLockWriteGuard<'a, SetData>,
    set: &'a Set,
    seq: u64,
}

impl std::fmt::Debug for SetWrite<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetWrite").field("seq", &self.seq).finish()
    }
}

impl std::ops::Deref for SetWrite<'_> {
    type Target = SetData;
    fn deref(&self) -> &SetData {
        &self.data
    }
}

impl std::ops::DerefMut for SetWrite<'_> {
    fn deref_mut(&mut self) -> &mut SetData {
        &mut self.data
    }
}

impl Drop for SetWrite<'_> {
    fn drop(&mut self) {
        let set = self.set;
        let data = &mut *self.data;
        // Only the ways whose key or metadata changed (`remove` changes only `used`).
        let mut dirty = std::mem::take(&mut data.dirty);
        while dirty != 0 {
            let way = dirty.trailing_zeros() as usize;
            dirty &= dirty - 1;
            // Relaxed: ordered before the even `seq` below by its Release.
            set.mirror_keys[way].store(data.keys[way], Ordering::Relaxed);
            let meta = data.metas[way];
            set.mirror_metas[2 * way].store(meta.version, Ordering::Relaxed);
            set.mirror_metas[2 * way + 1].store(pack(meta.loc), Ordering::Relaxed);
        }
        set.mirror_used
            .store(u64::from(data.used), Ordering::Relaxed);
        // Release: pairs with the Acquire of `Set::read_begin` (a reader that sees this even
        // value sees the mirror above); the lock is released after this store.
        set.seq.store(self.seq + 2, Ordering::Release);
    }
}

/// A location as one word: node in the high half, block in the low.
fn pack(loc: Loc) -> u64 {
    (u64::from(loc.node) << 32) | u64::from(loc.block)
}

fn unpack(word: u64) -> Loc {
    Loc {
        node: (word >> 32) as u16,
        block: word as u32,
    }
}

const NO_META: Meta = Meta {
    version: 0,
    loc: Loc { node: 0, block: 0 },
};

impl SetData {
    /// The way holding `key`. Branch-free over the ways (every key compared, the hits masked
    /// by `used`: unused ways may hold stale keys), which costs fewer instructions than an
    /// early-exit search that tests `used` per way.
    #[inline]
    pub(crate) fn find(&self, key: u64) -> Option<usize> {
        let mut hits = 0u32;
        for (i, &k) in self.keys.iter().enumerate() {
            hits |= u32::from(k == key) << i;
        }
        // `used` has no bit at or above `ways`.
        hits &= self.used;
        (hits != 0).then(|| hits.trailing_zeros() as usize)
    }

    /// The metadata in way `way`.
    #[inline]
    pub(crate) fn meta(&self, way: usize) -> Meta {
        self.metas[way]
    }

    /// Overwrites the metadata in way `way`.
    pub(crate) fn set_meta(&mut self, way: usize, meta: Meta) {
        self.metas[way] = meta;
        self.dirty |= 1 << way;
    }

    /// The next version of this set (unique within it, increasing).
    pub(crate) fn next_version(&mut self) -> u64 {
        self.last_version += 1;
        self.last_version
    }

    /// A free way, if any (the lowest).
    #[inline]
    pub(crate) fn free_way(&self) -> Option<usize> {
        let free = !self.used & ((1u32 << self.ways) - 1);
        (free != 0).then(|| free.trailing_zeros() as usize)
    }

    /// Puts `key` into the free way `way`.
    pub(crate) fn fill(&mut self, way: usize, key: u64, meta: Meta) {
        debug_assert!(self.used & (1 << way) == 0);
        self.keys[way] = key;
        self.metas[way] = meta;
        self.dirty |= 1 << way;
        self.used |= 1 << way;
    }

    /// Removes the entry in way `way`.
    pub(crate) fn remove(&mut self, way: usize) {
        self.used &= !(1 << way);
    }

    /// The `(key, meta)` in way `way`.
    pub(crate) fn entry(&self, way: usize) -> (u64, Meta) {
        (self.keys[way], self.metas[way])
    }

    /// The ways holding `key` (at most 1 while the invariants hold).
    #[cfg(test)]
    pub(crate) fn count(&self, key: u64) -> usize {
        (0..self.ways as usize)
            .filter(|&i| self.used & (1 << i) != 0 && self.keys[i] == key)
            .count()
    }

    /// The number of entries held.
    pub(crate) fn len(&self) -> usize {
        self.used.count_ones() as usize
    }
}

impl Set {
    fn new(ways: usize) -> Self {
        Self {
            data: RwLock::new(SetData {
                keys: [0; WAYS],
                metas: [NO_META; WAYS],
                used: 0,
                hand: 0,
                ways: ways as u32,
                last_version: 0,
                dirty: 0,
            }),
            referenced: AtomicUsize::new(0),
            ways: ways as u32,
            seq: AtomicU64::new(0),
            mirror_used: AtomicU64::new(0),
            mirror_keys: std::array::from_fn(|_| AtomicU64::new(0)),
            mirror_metas: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Takes the write lock; the seqlock is odd until the returned guard drops.
    pub(crate) fn write(&self) -> SetWrite<'_> {
        Self::begin_write(self, write(&self.data))
    }

    /// Takes the write lock if it is free right now.
    pub(crate) fn try_write(&self) -> Option<SetWrite<'_>> {
        self.data
            .try_write()
            .ok()
            .map(|data| Self::begin_write(self, data))
    }

    fn begin_write<'a>(set: &'a Set, data: RwLockWriteGuard<'a, SetData>) -> SetWrite<'a> {
        // Relaxed: only lock holders write `seq`, and the lock orders them.
        let seq = set.seq.load(Ordering::Relaxed);
        debug_assert_eq!(seq % 2, 0, "invariant: no other writer");
        set.seq.store(seq + 1, Ordering::Relaxed);
        // Release fence: the odd `seq` is ordered before every change this writer makes (to
        // the mirror, to L2s); pairs with the Acquire fence of `Set::read_validate`, so a
        // reader that saw any such change sees an odd or newer `seq` there.
        fence(Ordering::Release);
        SetWrite { data, set, seq }
    }

    /// Starts an optimistic read: the seqlock stamp, or `None` while a writer is inside.
    #[inline]
    pub(crate) fn read_begin(&self) -> Option<u64> {
        // Acquire: pairs with the Release in `SetWrite::drop`.
        let seq = self.seq.load(Ordering::Acquire);
        seq.is_multiple_of(2).then_some(seq)
    }

    /// Whether no writer entered the set since `read_begin` returned `stamp`: then everything
    /// read in between (the mirror, and an L2 whose writers hold this set's lock) is a state
    /// between two critical sections.
    #[inline]
    pub(crate) fn read_validate(&self, stamp: u64) -> bool {
        // Acquire fence: pairs with the Release fence in `Set::begin_write`.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        self.seq.load(Ordering::Relaxed) == stamp
    }

    /// The way and metadata of `key` in the mirror (only meaningful if `read_validate` then
    /// succeeds), and whether the set had a free way.
    #[inline]
    pub(crate) fn mirror_find(&self, key: u64) -> (Option<(usize, Meta)>, bool) {
        // Relaxed throughout: validated by the seqlock (`read_validate`).
        let used = self.mirror_used.load(Ordering::Relaxed) as u32;
        let mut hits = 0u32;
        // Branch-free, as `SetData::find`: every way compared (ways past `self.ways` are never
        // written and never in `used`), the hits masked by `used`.
        for (i, k) in self.mirror_keys.iter().enumerate() {
            hits |= u32::from(k.load(Ordering::Relaxed) == key) << i;
        }
        hits &= used;
        let room = used.count_ones() < self.ways;
        if hits == 0 {
            return (None, room);
        }
        // `% WAYS`: a no-op (`hits` has no bit at or above `WAYS`) that lets the compiler drop
        // the bounds checks below.
        let way = hits.trailing_zeros() as usize % WAYS;
        let meta = Meta {
            version: self.mirror_metas[2 * way].load(Ordering::Relaxed),
            loc: unpack(self.mirror_metas[2 * way + 1].load(Ordering::Relaxed)),
        };
        (Some((way, meta)), room)
    }

    /// Marks way `way` as recently used (CLOCK reference bit).
    #[inline]
    pub(crate) fn touch(&self, way: usize) {
        let bit = 1 << way;
        // Relaxed: a replacement hint; a lost or late bit changes only which entry is evicted,
        // never correctness (eviction runs under the write lock and installs in every L2).
        if self.referenced.load(Ordering::Relaxed) & bit == 0 {
            self.referenced.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// The CLOCK victim of a full set: sweeps from the hand, clearing reference bits, and
    /// returns the first way whose bit was clear. Call under the write lock.
    pub(crate) fn victim(&self, data: &mut SetData) -> usize {
        let ways = data.ways as usize;
        for _ in 0..2 * ways {
            let way = data.hand as usize % ways;
            data.hand = ((way + 1) % ways) as u32;
            let bit = 1 << way;
            // Relaxed: a replacement hint (see `touch`).
            if self.referenced.fetch_and(!bit, Ordering::Relaxed) & bit == 0 {
                return way;
            }
        }
        // Every bit was set again between sweeps: take the hand's way.
        data.hand as usize % ways
    }

    /// Clears way `way`'s reference bit (a new entry starts unreferenced).
    pub(crate) fn untouch(&self, way: usize) {
        // Relaxed: a replacement hint (see `touch`).
        self.referenced.fetch_and(!(1 << way), Ordering::Relaxed);
    }
}

/// The shared first-level metadata table.
#[derive(Debug)]
pub(crate) struct L1Table {
    sets: Box<[CachePadded<Set>]>,
}

impl L1Table {
    /// A table of at least `entries` entries (rounded up to whole sets).
    pub(crate) fn new(entries: usize) -> Self {
        let ways = entries.clamp(1, WAYS);
        let sets = entries.div_ceil(ways);
        Self {
            sets: (0..sets)
                .map(|_| CachePadded::new(Set::new(ways)))
                .collect(),
        }
    }

    /// The set of `key`.
    #[inline]
    pub(crate) fn set(&self, key: u64) -> &Set {
        let hash = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let index = ((u128::from(hash) * self.sets.len() as u128) >> 64) as usize;
        &self.sets[index]
    }

    /// Entries in all sets (slots, used or not).
    pub(crate) fn slots(&self) -> usize {
        self.sets.len() * self.sets.first().map_or(0, |s| ways_of(s))
    }

    /// Entries held (takes every set's read lock).
    pub(crate) fn len(&self) -> usize {
        self.sets.iter().map(|set| read(&set.data).len()).sum()
    }
}

fn ways_of(set: &Set) -> usize {
    read(&set.data).ways as usize
}

/// A hash map keyed by `u64` with [`KeyHash`].
pub(crate) type KeyMap<V> = HashMap<u64, V, KeyHash>;

/// The hash of the metadata maps, public so that a baseline can pay the same price per lookup
/// (the benches' `KvBase` and `Cr` maps use it): a per-map random seed mixed into the key by
/// the SplitMix64 finalizer (two multiplications). Much cheaper than the standard SipHash-1-3;
/// unlike SipHash it is not a keyed PRF, so an adversary who can observe timings could in
/// principle find colliding keys. Keys here come from the application, not from the network.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
///
/// let mut map: HashMap<u64, &str, ladapa::KeyHash> = HashMap::default();
/// map.insert(7, "seven");
/// assert_eq!(map[&7], "seven");
/// ```
#[derive(Clone, Debug)]
pub struct KeyHash {
    seed: u64,
}

impl Default for KeyHash {
    fn default() -> Self {
        Self {
            seed: RandomState::new().hash_one(0x5EED_u64),
        }
    }
}

impl BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    #[inline]
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { state: self.seed }
    }
}

/// The [`Hasher`] of [`KeyHash`].
///
/// # Examples
///
/// ```
/// use std::hash::{BuildHasher, Hasher};
///
/// let hash = ladapa::KeyHash::default();
/// let (mut a, mut b) = (hash.build_hasher(), hash.build_hasher());
/// a.write_u64(1);
/// b.write_u64(1);
/// assert_eq!(a.finish(), b.finish(), "one seed, one hash");
/// ```
#[derive(Clone, Debug)]
pub struct KeyHasher {
    state: u64,
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Not used for `u64` keys; correct (if slower) for anything else.
        for &b in bytes {
            self.state = mix64(self.state ^ u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.state = mix64(self.state ^ value);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.state
    }
}

/// The SplitMix64 finalizer: a bijection whose every output bit depends on every input bit.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One shard of an [`L2Table`].
pub(crate) type L2Shard = RwLock<KeyMap<L2Entry>>;

/// A node's second-level metadata table: a sharded hash map.
#[derive(Debug)]
pub(crate) struct L2Table {
    shards: Box<[CachePadded<L2Shard>]>,
}

impl L2Table {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..L2_SHARDS)
                .map(|_| CachePadded::new(RwLock::new(KeyMap::default())))
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn shard(&self, key: u64) -> &L2Shard {
        let hash = key.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        &self.shards[(hash >> 58) as usize % L2_SHARDS]
    }

    /// The entry of `key`.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<L2Entry> {
        read(self.shard(key)).get(&key).copied()
    }

    /// Installs `meta` unless the entry already has this version or a newer one (monotone).
    /// Returns the block of a local replica that the newer metadata made useless (its version
    /// is older than `meta`'s, and versions only grow): the caller retires it.
    pub(crate) fn install(&self, key: u64, meta: Meta) -> Option<u32> {
        let mut shard = write(self.shard(key));
        match shard.get_mut(&key) {
            Some(entry) if entry.meta.version >= meta.version => None,
            Some(entry) => {
                entry.meta = meta;
                match entry.replica {
                    Some((block, version)) if version.get() < meta.version => {
                        entry.replica = None;
                        Some(block)
                    }
                    _ => None,
                }
            }
            None => {
                shard.insert(
                    key,
                    L2Entry {
                        meta,
                        replica: None,
                    },
                );
                None
            }
        }
    }

    /// Removes `key`, returning its entry.
    pub(crate) fn remove(&self, key: u64) -> Option<L2Entry> {
        write(self.shard(key)).remove(&key)
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|shard| read(shard).len()).sum()
    }
}

/// Read-locks, ignoring poison (see [`write()`]: what a poisoned lock guards is intact).
#[inline]
pub(crate) fn read<T>(lock: &RwLock<T>) -> crate::sync::RwLockReadGuard<'_, T> {
    match lock.read() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Write-locks, ignoring poison. The only code that may panic under a lock is the caller's
/// operation in [`NodeHandle::update`](crate::NodeHandle::update), which runs under a set's
/// write lock before the write changes anything in the set (see `NodeHandle::write_version`):
/// the set a poisoned lock guards is intact.
#[inline]
pub(crate) fn write<T>(lock: &RwLock<T>) -> crate::sync::RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn meta(version: u64) -> Meta {
        Meta {
            version,
            loc: Loc { node: 0, block: 0 },
        }
    }

    #[test]
    fn clock_evicts_an_unreferenced_way() {
        let set = Set::new(4);
        let mut data = write(&set.data);
        for way in 0..4 {
            data.fill(way, way as u64, meta(1));
        }
        set.touch(0);
        set.touch(1);
        assert_eq!(set.victim(&mut data), 2, "ways 0 and 1 were referenced");
        // Their bits were cleared by the sweep: next time the hand goes on to 3, then 0.
        assert_eq!(set.victim(&mut data), 3);
        assert_eq!(set.victim(&mut data), 0);
    }

    #[test]
    fn l2_install_is_monotone() {
        let l2 = L2Table::new();
        assert_eq!(l2.install(7, meta(5)), None);
        assert_eq!(l2.install(7, meta(3)), None);
        assert_eq!(l2.get(7).unwrap().meta.version, 5);
        assert_eq!(l2.install(7, meta(6)), None);
        assert_eq!(l2.get(7).unwrap().meta.version, 6);
    }

    #[test]
    fn l2_entries_are_compact() {
        // Key + entry: 40 bytes per hash-map bucket (a replica version without a niche: 48).
        assert_eq!(std::mem::size_of::<(u64, L2Entry)>(), 40);
    }

    #[test]
    fn l1_rounds_up_to_whole_sets() {
        assert_eq!(L1Table::new(1).slots(), 1);
        assert_eq!(L1Table::new(9).slots(), 16);
        assert_eq!(L1Table::new(64).sets.len(), 8);
    }
}
