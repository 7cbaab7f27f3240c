#![doc = include_str!("../README.md")]

mod crc;
mod durable;
mod entry;
mod error;
mod file_log;
mod fsutil;
mod medium;
mod pmem_log;
mod snapshot;
mod store;
mod sync;
mod tracked;

pub use durable::{Builder, Durable, DurableDispatch, DurableHandle};
pub use entry::{LOG_FORMAT, MAX_PAYLOAD};
pub use error::DurableError;
pub use pmem_log::PMEM_LAYOUT;
pub use store::{Medium, Recovery, Stats, Store, SyncPolicy, CHECKPOINT_BYTES};
