#![doc = include_str!("../README.md")]

mod background;
mod baselines;
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
pub mod ycsb;

pub use background::AdaptiveRule;
pub use baselines::{
    Cr, CrMap, CrRead, CrSession, CrWrite, DashMapKv, DashMapSession, KvBase, KvBaseSession,
    KvSession, KvStore,
};
pub use config::{
    Builder, MetadataMode, ReplicationScope, ValueReplication, MAX_CAPACITY, MAX_NODES,
    MAX_VALUE_SIZE,
};
pub use dispatch::DispatchValue;
pub use error::{BackgroundPanic, BackgroundThread, CodecError, ConfigError, StoreError};
pub use meta::WAYS;
pub use pool::Binding;
pub use stats::{MemoryUsage, Stats};
pub use store::{NodeHandle, Store, ValueGuard};
