#![doc = include_str!("../README.md")]

mod alloc;
mod error;
mod header;
pub mod kinds;
mod ownership;
mod persist;
mod pod;
mod region;
mod rng;
pub mod sim;
mod sync;

pub use alloc::{ChunkAllocator, MAX_ALIGN};
pub use error::{AllocError, RegionError};
pub use header::{FORMAT_VERSION, HEADER_SIZE, MAGIC, MIN_REGION_SIZE, ROOT_SLOTS};
pub use persist::{
    reset_stats, stats, FlushKind, Hardware, NoPersist, Persist, PersistStats, CACHE_LINE,
    NO_FLUSH_ENV,
};
pub use pod::{Offset, Pod};
pub use region::Region;
