#![doc = include_str!("../README.md")]

pub mod chart;
pub mod crit;
mod driver;
pub mod durable_bench;
mod error;
pub mod figures;
pub mod kv;

pub mod method;
pub mod pcomb_bench;
pub mod report;
mod rng;
pub mod scaling;
pub mod sweep;
mod sync;
pub mod workload;

pub use driver::{run_bare, run_for, run_ops, thread_cpu_ns, Bench, Contender, Prepared, Sample};
pub use error::{error_chain, exit_with, BenchError};
pub use method::{
    FcHandle, FlatCombining, FlatCombiningRw, Handle, Method, Nr, NrDormant, NrWritesAsReads,
    Replicas, RwLock, Setup, SpinLock,
};
pub use rng::{KeyDist, Rng};
pub use workload::{HashMapWorkload, Op, Workload, WorkloadInfo};
