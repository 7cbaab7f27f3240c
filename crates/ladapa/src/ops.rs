//! The data path of a [`NodeHandle`]: never-stale reads, out-of-place writes, deletes.
//!
//! See [`crate::store`] for the never-stale argument and [`crate::meta`] for the findability
//! invariant these functions maintain.

use crate::background::MetaNote;
use crate::config::MetadataMode;
use crate::error::StoreError;
use crate::meta::{read, L2Entry, L2Table, Loc, Meta, Set};
use crate::pool::FreshBlock;
use crate::store::{NodeHandle, Shared, Store, ValueGuard};
use crate::sync::{yield_now, Guard, Ordering};

impl<'a> NodeHandle<'a> {
    /// The node this handle runs as.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert_eq!(store.node(0)?.index(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn index(&self) -> usize {
        self.node
    }

    fn shared(&self) -> &Shared {
        &self.store.shared
    }

    /// Finds the current metadata of `key` and the block to read: the local replica when its
    /// version is current, else the authoritative block. The caller is pinned by `guard`.
    #[inline]
    /// `value`: the caller will read the value (a `contains` will not, and asks for no copy).
    fn locate(&self, key: u64, value: bool, guard: &Guard) -> Option<Loc> {
        let shared = self.shared();
        let node = self.node;
        let l2 = shared.l2(node);
        let set = shared.l1.set(key);
        let counters = &shared.counters[node];
        let (meta, entry) = match current_meta(set, l2, key) {
            Current::Absent => return None,
            Current::InL1(meta) => (meta, None),
            Current::InL2 { entry, room } => {
                // The read-promotion rule: into a free way always; into a full set (the
                // steady state) one L1 miss in `PROMOTE_EVICTING_EVERY` on this node, evicting
                // the CLOCK victim. Hot keys get in and stay (their hits set reference bits);
                // a cold key let in starts unreferenced and is the next victim. Both are hints
                // (`try_write`, never waiting); `promote` re-checks under the lock.
                // Relaxed: a sampling counter.
                let misses = counters.l1_misses.fetch_add(1, Ordering::Relaxed);
                if room || misses.is_multiple_of(PROMOTE_EVICTING_EVERY) {
                    promote(shared, set, key, node, guard);
                }
                (entry.meta, Some(entry))
            }
        };
        // Relaxed: statistics (and the adapters' samples). One counter on the local path;
        // `Stats::local_reads` is derived as reads minus remote reads.
        counters.reads.fetch_add(1, Ordering::Relaxed);
        if shared.same_domain(meta.loc.node as usize, node) {
            // The authoritative block is in this node's memory: no replica to consult.
            return Some(meta.loc);
        }
        let replica = match entry {
            Some(entry) => entry.replica,
            None => l2.get(key).and_then(|entry| entry.replica),
        };
        match replica {
            // The version check: a replica is used only when it holds the current version.
            Some((block, version)) if version.get() == meta.version => {
                counters.replica_reads.fetch_add(1, Ordering::Relaxed);
                Some(Loc {
                    node: shared.homes[shared.domain_of[node]] as u16,
                    block,
                })
            }
            _ => {
                counters.remote_reads.fetch_add(1, Ordering::Relaxed);
                if value {
                    shared.remote_read(node, key, meta);
                }
                Some(meta.loc)
            }
        }
    }

    fn check_len(&self, len: usize) -> Result<(), StoreError> {
        let expected = self.shared().value_size;
        if len != expected {
            return Err(StoreError::WrongValueSize { expected, got: len });
        }
        Ok(())
    }

    /// [`Store::get`] as this node.
    ///
    /// # Errors
    ///
    /// [`StoreError::WrongValueSize`] if `buf.len()` is not the value size.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(1, &[3; 8])?;
    /// let mut buf = [0; 8];
    /// assert!(store.node(0)?.get(1, &mut buf)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: u64, buf: &mut [u8]) -> Result<bool, StoreError> {
        self.check_len(buf.len())?;
        let guard = self.shared().domain.pin();
        let Some(loc) = self.locate(key, true, &guard) else {
            return Ok(false);
        };
        // SAFETY:
        // - `loc` was named by the key's current metadata (or a replica of that very version)
        //   read while pinned by `guard`, so the block is published, immutable, and not
        //   reclaimed before `guard` drops, after this copy.
        let bytes = unsafe { self.shared().pools[loc.node as usize].bytes(loc.block) };
        buf.copy_from_slice(bytes);
        Ok(true)
    }

    /// [`Store::get_guard`] as this node.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.put(1, &[3; 8])?;
    /// assert!(store.node(0)?.get_guard(1).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_guard(&self, key: u64) -> Option<ValueGuard<'a>> {
        let guard = self.shared().domain.pin();
        let loc = self.locate(key, true, &guard)?;
        let store: &'a Store = self.store;
        // SAFETY:
        // - as in `get`; the bytes are returned inside a `ValueGuard` that owns `guard`, so
        //   the pin outlives every use of the slice (the slice's lifetime is tied to the
        //   store, and the guard field is dropped with the slice).
        let bytes = unsafe { store.shared.pools[loc.node as usize].bytes(loc.block) };
        Some(ValueGuard {
            bytes,
            _guard: guard,
        })
    }

    /// [`Store::contains`] as this node.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().build()?;
    /// assert!(!store.node(0)?.contains(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, key: u64) -> bool {
        let guard = self.shared().domain.pin();
        self.locate(key, false, &guard).is_some()
    }

    /// [`Store::put`] as this node: the value goes into this node's pool.
    ///
    /// # Errors
    ///
    /// As [`Store::put`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// store.node(0)?.put(1, &[3; 8])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, key: u64, value: &[u8]) -> Result<(), StoreError> {
        self.store.check_poison()?;
        self.check_len(value.len())?;
        // Allocate and fill before pinning and locking: a pinned thread would hold back the
        // epoch that frees blocks, and the copy need not lengthen the set's critical section.
        let mut block = self.fresh_block()?;
        block.bytes_mut().copy_from_slice(value);
        self.write_version(key, block, |_, _| Ok(Some(())))?;
        Ok(())
    }

    /// A block from this node's pool, waiting a little for retired blocks to come back if it
    /// is exhausted. Called before pinning (see `put`).
    pub(crate) fn fresh_block(&self) -> Result<FreshBlock<'a>, StoreError> {
        let shared: &'a Shared = &self.store.shared;
        let block = alloc_block(shared, self.node)?;
        // SAFETY:
        // - `block` was just allocated from this node's pool and nobody else knows it.
        Ok(unsafe { FreshBlock::new(&shared.pools[self.node], block) })
    }

    /// Publishes `block` as the next version of `key`: the write path of `put`, `put_value`
    /// and `update`, linearized under the key's set write lock.
    ///
    /// Under that lock, pinned, `fill` is first given the key's current value (`None`:
    /// absent; it is the value of the version this write replaces, as nothing else writes
    /// the key while the lock is held) and the block's bytes. `Ok(Some(response))` publishes
    /// the block; `Ok(None)` or an error leaves the key as it was and frees the block (so does
    /// a panic in `fill`: nothing of the set has changed yet, and the lock guard still
    /// publishes and releases the set as it unwinds). `Ok(None)` is returned as it came.
    ///
    /// # Errors
    ///
    /// `fill`'s; [`StoreError::Full`] for a new key beyond the capacity.
    pub(crate) fn write_version<R>(
        &self,
        key: u64,
        mut block: FreshBlock<'_>,
        fill: impl FnOnce(Option<&[u8]>, &mut [u8]) -> Result<Option<R>, StoreError>,
    ) -> Result<Option<R>, StoreError> {
        let shared = self.shared();
        let node = self.node;
        let guard = shared.domain.pin();
        let set = shared.l1.set(key);
        let mut data = set.write();
        let way = data.find(key);
        let old = match way {
            Some(way) => Some(data.meta(way)),
            // L1 misses: this node's L2 is current.
            None => shared.l2(node).get(key).map(|entry| entry.meta),
        };
        let current = old.map(|old| {
            // SAFETY:
            // - `old` is the key's current metadata, read under the set's write lock: its
            //   block is published (immutable) and stays so while the lock is held (only a
            //   writer of the key, under this lock, unpublishes it), and it cannot be
            //   reclaimed before `guard` unpins, after `fill` returns.
            unsafe { shared.pools[old.loc.node as usize].bytes(old.loc.block) }
        });
        let Some(response) = fill(current, block.bytes_mut())? else {
            return Ok(None);
        };
        if old.is_none() {
            // Relaxed: the count is only changed under set write locks of the keys
            // concerned; its exactness is all that matters, not its ordering.
            if shared.live_keys.fetch_add(1, Ordering::Relaxed) >= shared.capacity {
                shared.live_keys.fetch_sub(1, Ordering::Relaxed);
                return Err(StoreError::Full {
                    capacity: shared.capacity,
                });
            }
        }
        let meta = Meta {
            version: data.next_version(),
            loc: Loc {
                node: node as u16,
                block: block.publish(),
            },
        };
        match way {
            Some(way) => {
                data.set_meta(way, meta);
                set.touch(way);
            }
            None => {
                let way = match data.free_way() {
                    Some(way) => way,
                    None => {
                        let victim = set.victim(&mut data);
                        let (victim_key, victim_meta) = data.entry(victim);
                        // Install in every L2 *before* removing from L1: the key stays findable.
                        shared.install_everywhere(victim_key, victim_meta, &guard);
                        data.remove(victim);
                        victim
                    }
                };
                data.fill(way, key, meta);
                set.touch(way);
            }
        }
        // One replication domain (every node on one memory node, the default scope): the one
        // L2 table is all there is to update, and updating it here, under the set lock this
        // write already holds, is cheaper than handing it to the propagator (a queue push, a
        // wake-up, and a thread competing with the writers for the CPUs). So every mode
        // writes synchronously then; the modes differ only with several domains.
        let sync = shared.l2.len() == 1
            || match shared.mode {
                MetadataMode::Sync => true,
                MetadataMode::Async => false,
                // Relaxed: a mode hint; both modes are correct for every write.
                MetadataMode::Adaptive => shared.sync_now.load(Ordering::Relaxed),
            };
        let mut ring = false;
        let queued = !sync && {
            ring = shared.propagator_pending.publish();
            let pushed = shared.propagator_queue.push(MetaNote { key, meta }).is_ok();
            if !pushed {
                shared.propagator_pending.unpublish();
                ring = false;
            }
            pushed
        };
        if !queued {
            // Synchronous (by mode, or because the propagator is backed up): under the set
            // lock, so no delete can slip in between and no install can resurrect a key.
            shared.install_everywhere(key, meta, &guard);
        }
        drop(data);
        if let Some(old) = old {
            shared.pools[old.loc.node as usize].retire(old.loc.block, &guard);
        }
        drop(guard);
        let counters = &shared.counters[node];
        // Relaxed: statistics.
        counters.writes.fetch_add(1, Ordering::Relaxed);
        if queued {
            counters.async_writes.fetch_add(1, Ordering::Relaxed);
            if ring {
                if let Some(bells) = &shared.bells {
                    bells.propagator.ring();
                }
            }
        } else {
            counters.sync_writes.fetch_add(1, Ordering::Relaxed);
            shared.notify_replicators(key, meta);
        }
        Ok(Some(response))
    }

    /// [`Store::delete`] as this node.
    ///
    /// # Errors
    ///
    /// As [`Store::delete`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = ladapa::Store::builder().value_size(8).build()?;
    /// assert!(!store.node(0)?.delete(1)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&self, key: u64) -> Result<bool, StoreError> {
        self.store.check_poison()?;
        let shared = self.shared();
        let guard = shared.domain.pin();
        let set = shared.l1.set(key);
        let mut data = set.write();
        let mut current = data.find(key).map(|way| {
            let meta = data.meta(way);
            data.remove(way);
            meta
        });
        for (l2, &home) in shared.l2.iter().zip(&shared.homes) {
            if let Some(entry) = l2.remove(key) {
                // Not in L1: every L2 held the current metadata.
                current.get_or_insert(entry.meta);
                if let Some((block, _)) = entry.replica {
                    // A domain's replicas live in its home node's pool.
                    shared.pools[home].retire(block, &guard);
                }
            }
        }
        drop(data);
        // Relaxed: statistics.
        shared.counters[self.node]
            .writes
            .fetch_add(1, Ordering::Relaxed);
        let Some(meta) = current else {
            return Ok(false);
        };
        shared.pools[meta.loc.node as usize].retire(meta.loc.block, &guard);
        // Relaxed: see `put`.
        shared.live_keys.fetch_sub(1, Ordering::Relaxed);
        Ok(true)
    }
}

/// What a read found as the current metadata of a key.
enum Current {
    /// Neither L1 nor (L1 missing) the node's L2 holds the key.
    Absent,
    /// L1's entry.
    InL1(Meta),
    /// L1 misses: the node's L2 entry (current, by the findability invariant), and whether
    /// the L1 set had a free way.
    InL2 { entry: L2Entry, room: bool },
}

/// The current metadata of `key` for a read through `l2`: optimistically first, through the
/// set's seqlock mirror (no write to the set's lines), and under the set's read lock when a
/// writer was in the set meanwhile. Either way it is the state between two writers' critical
/// sections: the read's linearization point.
#[inline]
fn current_meta(set: &Set, l2: &L2Table, key: u64) -> Current {
    if let Some(stamp) = set.read_begin() {
        let (hit, room) = set.mirror_find(key);
        let found = match hit {
            Some((way, meta)) => Ok((way, meta)),
            // L1 misses: this node's L2 is current (the findability invariant), provided no
            // writer of the set ran meanwhile: the validation below checks it.
            None => Err(l2.get(key)),
        };
        if set.read_validate(stamp) {
            return match found {
                Ok((way, meta)) => {
                    set.touch(way);
                    Current::InL1(meta)
                }
                Err(Some(entry)) => Current::InL2 { entry, room },
                Err(None) => Current::Absent,
            };
        }
    }
    current_meta_locked(set, l2, key)
}

/// [`current_meta`] under the set's read lock (a writer was in the set).
#[cold]
fn current_meta_locked(set: &Set, l2: &L2Table, key: u64) -> Current {
    let data = read(&set.data);
    match data.find(key) {
        Some(way) => {
            set.touch(way);
            Current::InL1(data.meta(way))
        }
        None => match l2.get(key) {
            Some(entry) => Current::InL2 {
                entry,
                room: data.free_way().is_some(),
            },
            None => Current::Absent,
        },
    }
}

/// L1 misses of reads on one node per read promotion that may evict (see `locate`).
const PROMOTE_EVICTING_EVERY: u64 = 16;

/// Read promotion: moves `key` from `node`'s L2 into its L1 set if the set's lock is free
/// right now (never waits): into a free way, else into the CLOCK victim's way, after
/// installing the victim in every L2 as a write's eviction does (so it stays findable).
fn promote(shared: &Shared, set: &Set, key: u64, node: usize, guard: &Guard) {
    let Some(mut data) = set.try_write() else {
        return;
    };
    if data.find(key).is_some() {
        return;
    }
    // Re-read under the write lock: L1 still misses, so this L2 is current.
    let Some(entry) = shared.l2(node).get(key) else {
        return;
    };
    let way = match data.free_way() {
        Some(way) => way,
        None => {
            let victim = set.victim(&mut data);
            let (victim_key, victim_meta) = data.entry(victim);
            // Install in every L2 *before* removing from L1: the victim stays findable.
            shared.install_everywhere(victim_key, victim_meta, guard);
            data.remove(victim);
            victim
        }
    };
    data.fill(way, key, entry.meta);
    set.untouch(way);
}

/// A block from `pool`, waiting a little for retired blocks to come back if it is exhausted.
fn alloc_block(shared: &Shared, node: usize) -> Result<u32, StoreError> {
    if let Some(block) = shared.pools[node].alloc() {
        return Ok(block);
    }
    alloc_block_slow(shared, node)
}

#[cold]
fn alloc_block_slow(shared: &Shared, node: usize) -> Result<u32, StoreError> {
    let pool = &shared.pools[node];
    // Retired blocks come back as the epoch advances: flush this thread's garbage and give
    // the other threads (readers, replicators) time to unpin; about 100 ms at most.
    for round in 0..2000 {
        shared.domain.pin().flush();
        if let Some(block) = pool.alloc() {
            return Ok(block);
        }
        if round < 100 {
            yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
    Err(StoreError::OutOfBlocks { node })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::MetadataMode;

    /// Promotion must re-check L1 under the write lock: a writer may have inserted the key
    /// between the reader's miss and its `try_write`, and a second way holding the key would
    /// shadow (or be shadowed by) the current entry.
    #[test]
    fn promotion_never_duplicates_a_key_already_in_l1() {
        let topology = nr_core::Topology::single_node(vec![0])
            .unwrap()
            .with_shared_virtual_nodes(2)
            .unwrap();
        let store = Store::builder()
            .topology(topology)
            .value_size(8)
            .capacity(16)
            .l1_entries(8)
            .metadata_mode(MetadataMode::Sync)
            .manual_pump()
            .build()
            .unwrap();
        store.node(0).unwrap().put(5, &[1; 8]).unwrap(); // in L1 and (sync) in every L2
        let set = store.shared.l1.set(5);
        // As if a read on node 1 had just missed.
        promote(&store.shared, set, 5, 1, &store.shared.domain.pin());
        assert_eq!(read(&set.data).count(5), 1, "the key is in one way only");
    }
}
