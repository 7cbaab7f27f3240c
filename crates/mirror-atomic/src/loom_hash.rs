//! Loom models of the growing hash set (`hash.rs`) under the Mirror flavor: the lazy bucket
//! initialization (two threads racing to link one bucket's sentinel, and to publish the DRAM
//! table segment that records it) and the table doubling (an insert that doubles the bucket
//! count against operations that read the old or the new count).
//!
//! Afterwards the keys must be exactly those inserted, the set well formed (every table entry
//! names its own sentinel) and, once every guard is gone, the heap must hold exactly the root,
//! one sentinel per bucket made and one node per key (a sentinel linked twice, or a losing
//! thread's unpublished sentinel not freed, is a block too many).
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p mirror-atomic
//! --lib loom_` (exhaustive within the preemption bound).

use crate::flavor::Mirror;
use crate::hash::{hash, HashSet};
use crate::heap::Heap;
use crate::sync::{model, thread, Arc};
use pmem::NoPersist;

type MirrorSet = HashSet<Mirror, NoPersist>;

/// Room for the root chunk and one chunk of nodes.
const HEAP: u64 = 256 << 10;

/// The first keys from `from` whose hash has low bits `bucket` (of `bits` bits).
fn keys_in(bucket: u64, bits: u32, n: usize, from: u64) -> Vec<u64> {
    (from..)
        .filter(|&k| hash(k) & ((1 << bits) - 1) == bucket)
        .take(n)
        .collect()
}

/// Two threads insert a key each into bucket 3 of a set of 4 buckets (sized for 8 keys),
/// which no operation
/// used before: both initialize bucket 3 (and its parent, bucket 1) at once, and both make
/// the table's segment 2 (buckets 2 and 3) at once. Exactly one sentinel per bucket is
/// linked, the table records it, and both keys are present.
#[test]
fn loom_racing_bucket_initializations_link_one_sentinel() {
    let keys = keys_in(3, 2, 2, 0);
    model(move || {
        let set = Arc::new(
            MirrorSet::with_capacity(Heap::anonymous(HEAP).expect("heap"), 8).expect("set"),
        );
        let s2 = Arc::clone(&set);
        let k1 = keys[1];
        let t = thread::spawn(move || s2.insert(k1).expect("room"));
        assert!(set.insert(keys[0]).expect("room"));
        assert!(t.join().expect("no panic"));
        let mut want = keys.clone();
        want.sort_unstable();
        assert_eq!(
            set.snapshot(),
            (want, true),
            "keys, and each bucket names its sentinel"
        );
        assert_eq!(
            set.heap().live_blocks(),
            1 + 2 + 2,
            "blocks: the root, the sentinels of buckets 1 and 3, two nodes"
        );
    });
}

/// From `{a}` in one bucket: one thread inserts `b` and looks `c` up, the other inserts `c`
/// and looks `a` up; the second of the two inserts (3 keys: more than 2 per bucket) doubles
/// the bucket count to 2, so each operation reads the count before or after the doubling, and
/// the inserts of `b` and `c` (both in bucket 1) may race to initialize it. Every key is found by both, whichever count it read.
#[test]
fn loom_an_insert_that_doubles_the_table_loses_no_key() {
    let odd = keys_in(1, 1, 2, 0);
    let even = keys_in(0, 1, 1, 0);
    let (a, b, c) = (even[0], odd[0], odd[1]);
    model(move || {
        let set = Arc::new(
            MirrorSet::with_capacity(Heap::anonymous(HEAP).expect("heap"), 1).expect("set"),
        );
        assert!(set.insert(a).expect("room"));
        assert_eq!(set.buckets(), 1);
        let s2 = Arc::clone(&set);
        let t = thread::spawn(move || {
            assert!(s2.insert(b).expect("room"));
            s2.contains(c)
        });
        assert!(set.insert(c).expect("room"));
        assert!(set.contains(a), "a key inserted before the doubling");
        // `contains(c)` on the other thread may run before or after this insert: either is
        // linearizable, so only the panic-free join is checked.
        t.join().expect("no panic");
        assert!(set.buckets() >= 2, "3 keys in 1 bucket doubled it");
        let mut want = vec![a, b, c];
        want.sort_unstable();
        assert_eq!(set.snapshot(), (want, true));
        assert!(set.contains(b) && set.contains(c));
    });
}
