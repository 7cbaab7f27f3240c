//! A fetch-and-add counter, shared by the loom models (`#[path]`-included: they do not use the
//! rest of `common`, which runs std threads).

use nr_core::Dispatch;

/// Adds its writes; a write returns the new total, a read the current one.
#[derive(Default, Clone)]
pub(crate) struct Counter(pub(crate) u64);

impl Dispatch for Counter {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.0 += add;
        self.0
    }
}
