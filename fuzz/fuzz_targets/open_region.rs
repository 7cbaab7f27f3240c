//! Opening (recovering) a region from arbitrary bytes never panics, and a region that opens is
//! safe to use: root slots, the high-water mark, allocation and addressing all return values or
//! typed errors.
//!
//! Keep the body in sync with `crates/pmem/tests/fuzz_corpus.rs::exercise`, which runs the seed
//! corpus through the same path in `cargo test`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pmem::sim::{Image, SimConfig};
use pmem::{Offset, Region, ROOT_SLOTS};

/// The layout id of the seed corpus.
const LAYOUT: u64 = 0xF022;

fuzz_target!(|data: &[u8]| {
    let image = Image::from_bytes(data.to_vec());
    // SAFETY: this thread makes every write to the region and every persistence call.
    let Ok(region) = (unsafe { Region::from_image(&image, LAYOUT, SimConfig::new(0)) }) else {
        return;
    };
    for i in 0..ROOT_SLOTS {
        if let Ok(Some(root)) = region.root_slot(i) {
            let _ = region.ptr::<u64>(root);
        }
    }
    let mark = region.high_water_mark();
    assert!(mark.get() <= region.len());
    let mut alloc = region.allocator(256);
    for _ in 0..4 {
        if let Ok(off) = alloc.alloc::<u64>() {
            let p = region
                .ptr::<u64>(off)
                .expect("allocated memory is addressable");
            // SAFETY: in bounds and aligned (checked by `ptr`); single-threaded.
            unsafe { p.as_ptr().write(1) };
            region
                .set_root(off)
                .expect("allocated offsets are valid roots");
        }
    }
    let _ = region.ptr::<u64>(Offset(u64::from(data.len() as u32)));
});
