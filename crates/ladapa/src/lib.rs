#![doc = include_str!("../README.md")]

mod background;
mod config;
mod dispatch;
mod doorbell;
mod error;
mod meta;
mod ops;
mod pool;
mod stats;
mod store;
mod sync;

pub use background::AdaptiveRule;
pub use config::{
    Builder, MetadataMode, ReplicationScope, ValueReplication, MAX_CAPACITY, MAX_NODES,
    MAX_VALUE_SIZE,
};
pub use dispatch::DispatchValue;
pub use error::{BackgroundPanic, BackgroundThread, CodecError, ConfigError, StoreError};
pub use meta::{KeyHash, KeyHasher, WAYS};
pub use pool::Binding;
pub use stats::{MemoryUsage, Stats};
pub use store::{NodeHandle, Store, ValueGuard};
