//! A writer thread for the loom models of `Counter` objects (`#[path]`-included next to
//! `counter.rs`, as `mod writer`).

use loom::sync::Arc;
use loom::thread;
use nr_core::NodeReplicated;

use crate::counter::Counter;

/// A thread that adds 1 `writes` times through replica `r`, checking each response when it is
/// the only writer.
pub(crate) fn writer(
    nr: &Arc<NodeReplicated<Counter>>,
    r: usize,
    writes: u64,
    alone: bool,
) -> thread::JoinHandle<()> {
    let nr = nr.clone();
    thread::spawn(move || {
        let mut h = nr.register(r).unwrap();
        for i in 1..=writes {
            let response = h.execute_mut(1).unwrap();
            assert!(!alone || response == i);
        }
    })
}
