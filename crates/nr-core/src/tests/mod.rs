//! In-crate model checks of private protocols (run with `--cfg loom`).

#[cfg(loom)]
mod loom_lock;
#[cfg(loom)]
mod loom_log_head;
#[cfg(loom)]
mod loom_log_join;
