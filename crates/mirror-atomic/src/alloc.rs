//! The heap's block allocator: size classes in chunks (powers of two, and 224 bytes for the
//! tallest Mirror skip-list towers), sharded free lists.
//!
//! Scaling: each thread uses the shard its thread hash picks (8 shards, each behind its own
//! cache-padded lock), so threads rarely share a lock; a block freed by reclamation goes to the
//! shard of the thread that runs the deferred free; a shard with no block of a class takes one
//! of another shard (a free one, or the rest of its current chunk) before claiming a chunk, so
//! a heap needs one chunk per class in use, not one per class and shard. Chunks are claimed from `pmem`'s durable
//! high-water mark (one CAS, `pwb` + `psync`), then their header is made durable, so recovery
//! can always tell which class a chunk holds.

use crate::error::HeapAllocError;
use crate::heap::Space;
use crate::sync::{lock, thread_hint, Mutex};
use crossbeam_utils::CachePadded;
use pmem::Persist;

/// Bytes per chunk.
pub(crate) const CHUNK: u64 = 64 * 1024;
/// Bytes of the chunk header (`{CHUNK_TAG, block size}`, padded to a cache line).
pub(crate) const CHUNK_HEADER: u64 = 64;
/// Tag of a chunk header ("MIRROR02": format 2, list nodes `{next, key}`).
pub(crate) const CHUNK_TAG: u64 = pmem::kinds::MIRROR_CHUNK_TAG;
/// Tag of a format-1 chunk header ("MIRRORCK": list nodes `{key, next}`), recognized only to
/// name the problem ([`HeapError::OldFormat`](crate::HeapError::OldFormat)).
pub(crate) const OLD_CHUNK_TAG: u64 = 0x4d49_5252_4f52_434b;
/// Block sizes: the powers of two from 16 B to 32 KiB, plus 224 B, the Mirror skip-list tower
/// before its blocks followed a node's height (in a 256-byte block before issue 23; still the
/// block of a 12-level node, 136 bytes, and of files of format 2). Chunks start at a 64-byte boundary and
/// their first block 64 bytes in, so a block of a class is aligned to the largest power of two
/// dividing its size, capped at 64: 32 for 224. A 48-byte class for the Mirror BST node was
/// measured and dropped: half its blocks straddle two cache lines, which cost 0.5 write-backs
/// per update and 0.65-0.68x the throughput per CPU second (crate README, "Issue 23's levers").
const BLOCKS: &[u64] = &[
    16, 32, 64, 128, 224, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768,
];
const CLASSES: usize = BLOCKS.len();
const SHARDS: usize = 8;

/// The alignment every block of `block` bytes has (chunks are 64-aligned, their blocks start
/// 64 bytes in): the largest power of two dividing `block`, at most 64.
pub(crate) const fn block_align(block: u64) -> u64 {
    let a = 1 << block.trailing_zeros();
    if a > 64 {
        64
    } else {
        a
    }
}

/// The size class of an object of `size` bytes aligned to `align`: the smallest block that
/// holds it and is aligned enough (`size <= MAX_OBJECT`, `align <= 64`).
#[inline]
pub(crate) const fn class_of(size: usize, align: usize) -> usize {
    let mut c = 0;
    while c + 1 < CLASSES {
        let fits = BLOCKS[c] >= size as u64;
        let aligned = block_align(BLOCKS[c]) >= align as u64; // class-aligned
        if fits && aligned {
            break;
        }
        c += 1;
    }
    c
}

/// The class of blocks of exactly `block` bytes (a chunk header's size), if there is one.
pub(crate) fn class_of_block(block: u64) -> Option<usize> {
    BLOCKS.iter().position(|&b| b == block)
}

pub(crate) const fn block_of(class: usize) -> u64 {
    BLOCKS[class]
}

#[derive(Default)]
struct Class {
    free: Vec<u64>,
    next: u64,
    end: u64,
}

#[derive(Default)]
struct Shard {
    classes: [Class; CLASSES],
    /// Blocks handed out minus blocks freed through this shard (may be negative per shard).
    live: i64,
}

impl Shard {
    /// A block of `class` from this shard's free list or its current chunk.
    fn take(&mut self, class: usize) -> Option<u64> {
        let block = block_of(class);
        let c = &mut self.classes[class];
        if let Some(off) = c.free.pop() {
            return Some(off);
        }
        let off = c.next;
        (off + block <= c.end).then(|| {
            c.next += block;
            off
        })
    }
}

/// The allocator state (DRAM only; rebuilt by recovery).
pub(crate) struct Alloc {
    shards: Box<[CachePadded<Mutex<Shard>>]>,
    /// Chunks claimed before a crash whose header never became durable: reused first.
    spare: Mutex<Vec<u64>>,
}

impl Alloc {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Shard::default())))
                .collect(),
            spare: Mutex::new(Vec::new()),
        }
    }

    fn shard(&self) -> &Mutex<Shard> {
        &self.shards[thread_hint() % SHARDS]
    }

    /// A free block of `class`: from this thread's shard, its current chunk, or a new chunk.
    pub(crate) fn alloc<P: Persist>(
        &self,
        class: usize,
        space: &Space<P>,
    ) -> Result<u64, HeapAllocError> {
        let block = block_of(class);
        let own = self.shard();
        {
            let mut shard = lock(own);
            shard.live += 1;
            if let Some(off) = shard.take(class) {
                return Ok(off);
            }
        }
        // Before a new chunk, a block of another shard (recovery hands each chunk's free
        // blocks to one shard, and the skip list's nodes use several classes, so a small heap
        // would otherwise run out of chunks with room left in others). One lock at a time: no
        // lock order to keep. The cost: while any shard has room in a class, a shard without
        // it takes that class's blocks under the other shard's lock instead of claiming a chunk
        // of its own. Stealing only when the region has no chunk left was tried (review of
        // 2026-11-28): the two-thread Izraelevitz skip-list crash test's small heap then ran
        // out ("heap has room: Exhausted"), since every shard claims a chunk per class.
        if let Some(off) = self.steal(own, class) {
            return Ok(off);
        }
        let mut shard = lock(own);
        // Another thread of this shard may have claimed a chunk meanwhile.
        if let Some(off) = shard.take(class) {
            return Ok(off);
        }
        let spare = lock(&self.spare).pop();
        let chunk = match spare {
            Some(chunk) => chunk,
            None => match space.region().allocator(CHUNK).alloc_bytes(CHUNK, 64) {
                Ok(off) => off.0,
                Err(source) => {
                    shard.live -= 1;
                    return Err(HeapAllocError::Exhausted {
                        requested: block as usize,
                        source,
                    });
                }
            },
        };
        space.write_chunk_header(chunk, block);
        let c = &mut shard.classes[class];
        c.next = chunk + CHUNK_HEADER + block;
        c.end = chunk + CHUNK;
        Ok(chunk + CHUNK_HEADER)
    }

    /// A block of `class` from a shard other than `own` (its free list or its current
    /// chunk), if one has any.
    #[cold]
    fn steal(&self, own: &Mutex<Shard>, class: usize) -> Option<u64> {
        self.shards
            .iter()
            .filter(|s| !core::ptr::eq::<Mutex<Shard>>(&***s, own))
            .find_map(|s| lock(s).take(class)) // alloc-steal
    }

    /// Returns a block to the calling thread's shard.
    pub(crate) fn free(&self, off: u64, class: usize) {
        let mut shard = lock(self.shard());
        shard.live -= 1;
        shard.classes[class].free.push(off);
    }

    /// Blocks allocated and not freed.
    pub(crate) fn live(&self) -> usize {
        let total: i64 = self.shards.iter().map(|s| lock(s).live).sum();
        total.max(0) as usize
    }

    /// The allocator after recovery: every block of a used chunk that `reachable` rejects is
    /// free; blank chunks are spare.
    pub(crate) fn rebuild(user: u64, chunks: &[u64], reachable: impl Fn(u64) -> bool) -> Self {
        let alloc = Self::new();
        for (i, &block) in chunks.iter().enumerate() {
            let chunk = user + i as u64 * CHUNK;
            if block == 0 {
                lock(&alloc.spare).push(chunk);
                continue;
            }
            let Some(class) = class_of_block(block) else {
                // Unreachable: recovery accepts only chunk headers of a class.
                debug_assert!(false, "chunk of block size {block} has no class");
                continue;
            };
            let mut shard = lock(&alloc.shards[i % SHARDS]);
            let mut off = chunk + CHUNK_HEADER;
            while off + block <= chunk + CHUNK {
                if reachable(off) {
                    shard.live += 1;
                } else {
                    shard.classes[class].free.push(off);
                }
                off += block;
            }
        }
        alloc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recovery hands each chunk's free blocks to one shard (chunk `i` to shard `i % SHARDS`);
    /// a thread of another shard must find them before it claims a new chunk (a small heap
    /// would otherwise run out of chunks with free blocks left). The same holds for the rest
    /// of another shard's current chunk.
    #[test]
    fn a_shard_takes_free_blocks_of_another_before_a_new_chunk() {
        let class = class_of_block(64).expect("a 64-byte class");
        let alloc = Alloc::rebuild(0, &[64], |_| false);
        let off = alloc
            .steal(&alloc.shards[1], class)
            .expect("a block of shard 0");
        assert!((CHUNK_HEADER..CHUNK).contains(&off), "{off}");
        assert_eq!(alloc.steal(&alloc.shards[0], class), None, "its own shard");
        let mut other = lock(&alloc.shards[2]);
        other.classes[class].next = 5 * CHUNK + CHUNK_HEADER;
        other.classes[class].end = 6 * CHUNK;
        drop(other);
        while alloc.steal(&alloc.shards[2], class).is_some() {} // empties shard 0
        assert_eq!(
            alloc.steal(&alloc.shards[0], class),
            Some(5 * CHUNK + CHUNK_HEADER),
            "shard 2's current chunk"
        );
    }
}
