//! A sum whose replicas check, on every apply, that the write was committed first: shared by the
//! commit-hook tests (`tests/commit_log.rs`) and the loom models (`tests/loom_combiner.rs`),
//! `#[path]`-included as `counter.rs` is.

use nr_core::Dispatch;

/// What a test's `CommitLog` has made durable.
pub(crate) trait Committed: Send + Sync {
    /// Whether the `commit` call that covered write `v` has run.
    fn is_committed(&self, v: u64) -> bool;
}

/// Adds its writes (a write returns the new total, a read the current one), and asserts on
/// every apply that `log` has committed the value.
pub(crate) struct CheckedSum<L> {
    pub(crate) sum: u64,
    /// A std `Arc` in the loom models too: the type `Builder::commit_log` takes (only its count
    /// is shared, which orders nothing the models check).
    pub(crate) log: std::sync::Arc<L>,
}

impl<L: Committed + 'static> Dispatch for CheckedSum<L> {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.sum
    }
    fn dispatch_mut(&mut self, v: u64) -> u64 {
        assert!(
            self.log.is_committed(v),
            "write {v} applied before its commit returned"
        );
        self.sum += v;
        self.sum
    }
}
