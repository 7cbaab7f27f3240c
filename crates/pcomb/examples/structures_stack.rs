//! A persistent stack in a file: push from several threads, reopen, pop everything.
//!
//! ```text
//! cargo run --release -p pcomb --example structures_stack
//! ```
#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // an example may use std threads

use pcomb::pmem::Region;
use pcomb::structures::{Options, PBStack};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("pcomb-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("stack.pmem");
    let threads = 4;
    let size = PBStack::<pcomb::pmem::Hardware>::bytes_needed(1000, threads) + (1 << 16);
    let stack = PBStack::create(
        Region::create(&path, 0x57AC, size as u64)?,
        1000,
        threads,
        Options::default(),
    )?;
    std::thread::scope(|s| {
        for t in 0..threads as u64 {
            let stack = &stack;
            s.spawn(move || {
                let mut h = stack.register().expect("a slot per thread");
                for i in 0..100 {
                    h.push(t * 100 + i).expect("room for 400 values");
                    if i % 3 == 0 {
                        h.pop(); // popped nodes are recycled
                    }
                }
            });
        }
    });
    drop(stack); // as if the process ended
    let stack = PBStack::open(Region::open(&path, 0x57AC)?)?;
    let mut h = stack.register()?;
    let n = h.len();
    let values: Vec<u64> = std::iter::from_fn(|| h.pop()).collect();
    println!("reopened a stack of {n} values; popped {}", values.len());
    assert_eq!(values.len(), n);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
