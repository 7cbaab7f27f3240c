//! The one place pcomb's tests build simulated regions: pmem's simulator is a test facility
//! whose constructors are `unsafe` (their contract: `pmem::Region::simulated`, `# Safety`), and
//! this is where the tests' side of that contract is argued, once.
#![allow(dead_code)] // each test file uses a part

use pcomb::pmem::sim::{Image, SimConfig, Simulated};
use pcomb::pmem::{Region, RegionError};

/// `Region::simulated` for pcomb's tests.
pub(crate) fn simulated(
    layout: u64,
    size: u64,
    cfg: SimConfig,
) -> Result<Region<Simulated>, RegionError> {
    // SAFETY:
    // - pcomb's objects and structures write region memory only with `AtomicU64` operations
    //   on aligned words (`words.rs`, `memory.rs`, `structures/store.rs`), and pmem's own header
    //   writes are atomic too, so no write races with the simulator's 8-byte loads, whatever
    //   threads run;
    // - pcomb's tests write no region memory of their own (they damage images, not regions)
    //   and never make a `&mut` into it.
    unsafe { Region::simulated(layout, size, cfg) }
}

/// `Region::from_image` for pcomb's tests.
pub(crate) fn from_image(
    image: &Image,
    layout: u64,
    cfg: SimConfig,
) -> Result<Region<Simulated>, RegionError> {
    // SAFETY:
    // - as for `simulated`: only pcomb's atomic word writes and pmem's atomic header writes
    //   reach region memory, and no `&mut` into it is made.
    unsafe { Region::from_image(image, layout, cfg) }
}
