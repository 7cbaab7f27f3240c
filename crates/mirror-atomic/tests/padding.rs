//! No uninitialized byte reaches the media: every structure in every flavor, on a file-backed
//! heap, runs its operations on a stack dirtied with a recognisable pattern (`0xA5`), and the
//! file read back afterwards holds no word of that pattern and zeros in every byte of a node
//! block that is not a field's (the explicit pad fields, and the block tail past the node).
//!
//! Before node types were padding-free, a Mirror list node's 8 padding bytes (a 16-byte pair
//! and an 8-byte key in a 32-byte block) were copied to the file by `publish` with whatever the
//! stack held: this test saw `0xA5A5A5A5A5A5A5A5` there.

mod common;

use common::{Rng, Set, LAYOUT};
use mirror_atomic::flavor::{Flavor, Izraelevitz, Mirror, Volatile};
use mirror_atomic::{
    Bst, HashSet, Heap, List, Region, SkipList, BST_ROOT_SLOT, HASH_ROOT_SLOT, LIST_ROOT_SLOT,
    SKIP_ROOT_SLOT,
};
use pmem::Hardware;

/// The byte the stack is filled with before every operation.
const PATTERN: u8 = 0xA5;
/// Region size: header and enough chunks for every structure's nodes.
const SIZE: u64 = 4 << 20;
/// Keys drawn from `0..RANGE`.
const RANGE: u64 = 512;
/// Format 2: chunks of 64 KiB from the user offset, a 64-byte header `{tag, block size}`.
const CHUNK: u64 = 64 * 1024;
const CHUNK_HEADER: u64 = 64;
/// "MIRROR02".
const CHUNK_TAG: u64 = 0x4d49_5252_4f52_3032;

/// Fills 64 KiB of the stack below the caller's frame with [`PATTERN`]: the next call from
/// the caller reuses that memory, so a byte it leaves unwritten and copies shows the pattern.
#[inline(never)]
fn dirty_stack() {
    let mut buf = [PATTERN; 64 * 1024];
    std::hint::black_box(&mut buf);
}

/// The node blocks of one structure and flavor: their size and the byte ranges `(start, end)`
/// of each block that no field covers (must be zero).
struct Nodes {
    block: u64,
    zero: &'static [(usize, usize)],
}

/// Builds `S` on a file, runs inserts and removes on a dirty stack, drops it, and checks the
/// file: no pattern word anywhere, and every `nodes.block` block except the root zero in
/// `nodes.zero`.
fn check<S: Set<P = Hardware>>(root_slot: usize, nodes: Nodes) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("heap.pmem");
    {
        let heap = Heap::<S::F, Hardware>::create(&path, LAYOUT, SIZE).expect("create");
        let s = S::create(heap).expect("structure");
        let mut rng = Rng(7);
        for _ in 0..3 {
            for _ in 0..RANGE {
                let k = rng.below(RANGE);
                dirty_stack();
                s.insert(k).expect("room");
                dirty_stack();
                s.remove(rng.below(RANGE));
            }
        }
        assert!(!s.snapshot().0.is_empty());
    }
    // Where the chunks start and which block is the root (the file is closed again before it
    // is read).
    let (user, root) = {
        let region = Region::<Hardware>::open(&path, LAYOUT).expect("reopen");
        let root = region.root_slot(root_slot).expect("slot").expect("root");
        (region.user_offset().0, root.0)
    };
    let bytes = std::fs::read(&path).expect("read the file back");
    let word = |off: u64| {
        let o = off as usize;
        u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"))
    };
    let pattern = u64::from_ne_bytes([PATTERN; 8]);
    for off in (0..bytes.len() as u64 - 7).step_by(8) {
        assert_ne!(
            word(off),
            pattern,
            "{}: stack bytes in the file at {off:#x}",
            S::F::NAME
        );
    }
    let (mut chunks, mut used) = (0, 0);
    let mut chunk = user;
    while chunk + CHUNK <= bytes.len() as u64 && word(chunk) == CHUNK_TAG {
        if word(chunk + 8) == nodes.block {
            chunks += 1;
            let mut b = chunk + CHUNK_HEADER;
            while b + nodes.block <= chunk + CHUNK {
                let block = &bytes[b as usize..(b + nodes.block) as usize];
                used += usize::from(block.iter().any(|&x| x != 0));
                if b != root {
                    for &(start, end) in nodes.zero {
                        let gap = &block[start..end];
                        assert!(
                            gap.iter().all(|&x| x == 0),
                            "{}: block {b:#x}, bytes {start}..{end} (no field) hold {gap:02x?}",
                            S::F::NAME
                        );
                    }
                }
                b += nodes.block;
            }
        }
        chunk += CHUNK;
    }
    assert!(
        chunks > 0 && used > 100,
        "no node blocks found ({chunks} chunks, {used} used)"
    );
}

/// A Mirror list node: pair `0..16`, key `16..24`, pad `24..32` (block 32).
const MIRROR_LIST: Nodes = Nodes {
    block: 32,
    zero: &[(24, 32)],
};
/// An 8-byte-flavor list node: `next`, key (block 16, no gap).
const WORD_LIST: Nodes = Nodes {
    block: 16,
    zero: &[],
};
/// A Mirror skip-list node of 1 to 3 levels: key, height, state, pad `24..32`, level 0
/// `32..48`, upper levels of 8 bytes from 48 (block 64: a node's block follows its height).
const MIRROR_SKIP: Nodes = Nodes {
    block: 64,
    zero: &[(24, 32)],
};
/// An 8-byte-flavor skip-list node of one level: key, height, state, level 0 (block 32, no
/// gap).
const WORD_SKIP: Nodes = Nodes {
    block: 32,
    zero: &[],
};
/// A Mirror BST node: two pairs, key `32..40`, pad `40..48` (block 64).
const MIRROR_BST: Nodes = Nodes {
    block: 64,
    zero: &[(40, 64)],
};
/// An 8-byte-flavor BST node: `0..24` (block 32).
const WORD_BST: Nodes = Nodes {
    block: 32,
    zero: &[(24, 32)],
};

type Hash<F> = HashSet<F, Hardware>;

#[test]
fn mirror_list_writes_no_uninitialized_byte() {
    check::<List<Mirror, Hardware>>(LIST_ROOT_SLOT, MIRROR_LIST);
}

#[test]
fn mirror_hash_writes_no_uninitialized_byte() {
    check::<Hash<Mirror>>(HASH_ROOT_SLOT, MIRROR_LIST);
}

#[test]
fn mirror_skiplist_writes_no_uninitialized_byte() {
    check::<SkipList<Mirror, Hardware>>(SKIP_ROOT_SLOT, MIRROR_SKIP);
}

#[test]
fn mirror_bst_writes_no_uninitialized_byte() {
    check::<Bst<Mirror, Hardware>>(BST_ROOT_SLOT, MIRROR_BST);
}

#[test]
fn izraelevitz_and_volatile_write_no_uninitialized_byte() {
    fn all<F: Flavor>() {
        check::<List<F, Hardware>>(LIST_ROOT_SLOT, WORD_LIST);
        check::<Hash<F>>(HASH_ROOT_SLOT, WORD_LIST);
        check::<SkipList<F, Hardware>>(SKIP_ROOT_SLOT, WORD_SKIP);
        check::<Bst<F, Hardware>>(BST_ROOT_SLOT, WORD_BST);
    }
    all::<Izraelevitz>();
    all::<Volatile>();
}
