//! Key-value stores for the YCSB workloads of the `ladapa` benchmarks: ladapa's [`Store`]
//! and its baselines behind one [`KvStore`] trait, and the [`ycsb`] load generator that drives
//! any of them (paper §IV-A). They live here, not in `ladapa`, because only the benchmarks
//! and the examples of this package use them (and `dashmap` is a dependency of the
//! benchmarks, not of the store).
//!
//! [`Store`]: ladapa::Store

mod baselines;
pub mod ycsb;

pub use baselines::{
    Cr, CrMap, CrRead, CrSession, CrWrite, DashMapKv, DashMapSession, KvBase, KvBaseSession,
    KvSession, KvStore,
};
