//! A persistent bounded min-heap: a small scheduler of deadlines that survives a restart, with
//! `recover_insert` telling whether an insert interrupted by the restart had taken effect.
//!
//! ```text
//! cargo run --release -p pcomb --example structures_heap
//! ```
#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // an example may use std threads

use pcomb::pmem::Region;
use pcomb::structures::{Full, PBHeap};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("pcomb-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("heap.pmem");
    let heap = PBHeap::<128, _>::create(Region::create(&path, 0x4EA9, 1 << 16)?, 2)?;
    let mut h = heap.register()?;
    for deadline in [50, 10, 40, 20, 30] {
        h.insert(deadline)?;
    }
    let seq = h.seq(); // the last insert (30) was operation number `seq`
    drop(h);
    drop(heap);

    let heap = PBHeap::<128, _>::open(Region::open(&path, 0x4EA9)?)?;
    let mut h = heap.register_as(0)?;
    let r = h.recover_insert(30, seq);
    println!(
        "the insert of 30 had taken effect: {}",
        r.took_effect_before_crash()
    );
    let order: Vec<u64> = std::iter::from_fn(|| h.delete_min()).collect();
    println!("deadlines in order: {order:?}");
    assert_eq!(order, [10, 20, 30, 40, 50]);
    for k in 0..128 {
        h.insert(k)?;
    }
    assert_eq!(h.insert(999), Err(Full(999)));
    println!("a full heap hands the key back: Full(999)");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
