//! In-crate model checks of private protocols (run with `--cfg loom`).

#[cfg(loom)]
mod loom_lock;
