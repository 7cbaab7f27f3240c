//! A persistent queue in a file: producers and consumers in parallel (the enqueuers' and the
//! dequeuers' combining instances run side by side), then a reopen that finds what was left.
//!
//! ```text
//! cargo run --release -p pcomb --example structures_queue
//! ```
#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // an example may use std threads

use pcomb::pmem::Region;
use pcomb::structures::{Options, PBQueue};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("pcomb-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("queue.pmem");
    let size = PBQueue::<pcomb::pmem::Hardware>::bytes_needed(10_000, 4) + (1 << 16);
    let queue = PBQueue::create(
        Region::create(&path, 0x0E0E, size as u64)?,
        10_000,
        4,
        Options::default(),
    )?;
    let consumed: usize = std::thread::scope(|s| {
        for t in 0..2u64 {
            let queue = &queue;
            s.spawn(move || {
                let mut h = queue.register().expect("slot");
                for i in 0..1000 {
                    h.enqueue(t << 32 | i).expect("room");
                }
            });
        }
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let queue = &queue;
                s.spawn(move || {
                    let mut h = queue.register().expect("slot");
                    (0..600).filter(|_| h.dequeue().is_some()).count()
                })
            })
            .collect();
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer"))
            .sum()
    });
    drop(queue);
    let queue = PBQueue::open(Region::open(&path, 0x0E0E)?)?;
    let mut h = queue.register()?;
    let left = std::iter::from_fn(|| h.dequeue()).count();
    println!("2000 enqueued, {consumed} dequeued before the reopen, {left} found after it");
    assert_eq!(consumed + left, 2000);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
