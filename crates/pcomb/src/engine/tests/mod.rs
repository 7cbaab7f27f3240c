//! What the engines' unit tests and in-crate loom models share, and the loom models of private
//! protocol steps (`--cfg loom`; in-crate because they drive the engine directly).

use crate::engine::pwf::WfBatch;

#[cfg(loom)]
mod loom_pwf_stamp;

/// A counter batch: each request adds its operand and gets the value before.
pub(crate) struct Add;

impl WfBatch for Add {
    type State = u64;
    type Op = u64;
    type Ret = u64;

    fn apply(&self, _me: usize, st: &mut u64, reqs: &[(usize, u64)], rets: &mut [u64]) {
        for (&(_, op), ret) in reqs.iter().zip(rets) {
            *ret = *st;
            *st += op;
        }
    }

    fn installed(&self, _me: usize, _st: &u64) {}
}
