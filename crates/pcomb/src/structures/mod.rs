//! Recoverable structures built on combining (paper §5 and appendix): [`PBStack`], [`PWFStack`]
//! (wait-free), [`PBQueue`], [`PWFQueue`] (wait-free) and [`PBHeap`].
//!
//! Each one has a volatile mode (`new`: heap memory, no persistence instruction) and a
//! persistent mode (`create` in a [`Region`](pmem::Region), `open` after a crash), a
//! per-thread handle from `register` / `register_as`, and detectable recovery. The handle's
//! `seq()` / `*_seq()` is the number of its thread's *last* operation (the next call gets that
//! plus one), and it is persisted: the combined records keep, per thread, the number (mod
//! 2^32) of its last applied operation (where the paper keeps the `Deactivate` bit, in the
//! record each pass writes back anyway), so a handle made after `open` starts from the number
//! of the last operation that took effect: every operation up to it took effect, none after it
//! did, and a thread that numbers its work resumes from `seq() + 1` with nothing persisted by
//! itself. A thread that persisted `(operation, seq)` before a call can instead call
//! `recover_*` with them after a crash and learn whether that operation had taken effect
//! ([`Recovered::Applied`](crate::Recovered::Applied), with the response it had) or run it now
//! ([`Recovered::Reexecuted`](crate::Recovered::Reexecuted)); `seq` must be the pending
//! operation's number, and later calls continue from it. A region written by the format
//! before these numbers gives [`CombBuildError::OldFormat`](crate::CombBuildError::OldFormat).
//!
//! The blocking structures' handles ([`PBStackHandle`], [`PBQueueHandle`], [`PBHeapHandle`])
//! panic on a poisoned structure (a combining pass that panicked); each call has a `try_*`
//! twin that returns nr-core's [`Poisoned`](crate::Poisoned) instead, as `PBCombHandle`'s do.
//! The wait-free ones have no lock and are never poisoned.
//!
//! | structure | state in the combined record | paper |
//! |---|---|---|
//! | [`PBStack`] | `top` and the length; nodes in a pool in the same region | §5 PBstack |
//! | [`PWFStack`] | `top` and the length (PWFcomb records); a node chunk per thread | §5 PWFstack |
//! | [`PBQueue`] | enqueuers' `Tail`, dequeuers' `Head` (two instances); nodes in a pool | Algorithms 5-7 |
//! | [`PWFQueue`] | enqueuers' `{link_a, link_b, tail}` (the two-part list), dequeuers' `Head` (two PWFcomb instances); a node chunk per thread, reused only after `open` | §5 PWFqueue |
//! | [`PBHeap`] | the whole bounded array and its length (a [`PBComb`](crate::PBComb)) | §5 PBheap |
//!
//! Values and keys are `u64`. Stacks and queues hold at most `capacity` values (fixed at
//! creation: the node pool is allocated with the structure); a push or enqueue beyond it, and an
//! insert into a full heap, return [`Full`] with the rejected value. The wait-free structures
//! give each thread a chunk of `capacity` nodes, so a combining thread out of nodes also
//! answers [`Full`] (see [`PWFStackHandle::push`], [`PWFQueueHandle::enqueue`]); `PWFQueue`
//! reuses dequeued nodes only after `open`, as the paper leaves its node reuse open.
//!
//! Not here (yet): a wait-free heap.
//!
//! # Examples
//!
//! ```
//! use pcomb::structures::{PBQueue, PBStack, PBHeap};
//!
//! let stack = PBStack::new(16, 2)?;
//! let mut s = stack.register()?;
//! s.push(1)?;
//! assert_eq!(s.pop(), Some(1));
//!
//! let queue = PBQueue::new(16, 2)?;
//! let mut q = queue.register()?;
//! q.enqueue(7)?;
//! assert_eq!(q.dequeue(), Some(7));
//!
//! let heap = PBHeap::<8>::new(2)?;
//! let mut h = heap.register()?;
//! h.insert(3)?;
//! h.insert(1)?;
//! assert_eq!(h.delete_min(), Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod heap;
mod pwfqueue;
mod pwfstack;
mod queue;
mod shared;
mod stack;
mod store;

use core::fmt;

pub use heap::{HeapOp, HeapRead, HeapState, PBHeap, PBHeapHandle, MAX_HEAP_CAPACITY};
pub use pwfqueue::{PWFQueue, PWFQueueHandle};
pub use pwfstack::{PWFStack, PWFStackHandle};
pub use queue::{PBQueue, PBQueueHandle};
pub use stack::{PBStack, PBStackHandle};

/// How a linked structure manages its nodes and pairs its operations. The default turns both
/// on, as the paper's measured configuration does.
///
/// # Examples
///
/// ```
/// use pcomb::structures::{Options, PBStack};
///
/// let plain = Options { elimination: false, recycling: false };
/// let stack = PBStack::with_options(4, 1, plain)?;
/// let mut h = stack.register()?;
/// h.push(1)?;
/// h.pop();
/// h.push(2)?;
/// h.pop();
/// // Without recycling, popped nodes are not reused until the next `open`.
/// assert_eq!(h.push(3), Ok(()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Stack only: a combining pass pairs pushes with pops of the same pass and answers them
    /// without touching the list (no node is allocated or persisted for them).
    pub elimination: bool,
    /// Nodes that left the structure are reused once the state that no longer names them is
    /// durable. Without it they stay allocated until the structure is reopened (`open`
    /// rebuilds the free nodes from the persisted list).
    pub recycling: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            elimination: true,
            recycling: true,
        }
    }
}

impl Options {
    fn bits(self) -> u64 {
        u64::from(self.elimination) | u64::from(self.recycling) << 1
    }

    fn from_bits(bits: u64) -> Self {
        Self {
            elimination: bits & 1 != 0,
            recycling: bits & 2 != 0,
        }
    }
}

/// The structure had no room for the value, which is handed back: a stack or queue already
/// holds `capacity` values (its node pool is exhausted), or a heap is full.
///
/// Remedy: remove values first, or create the structure with a larger capacity.
///
/// # Examples
///
/// ```
/// use pcomb::structures::{Full, PBStack};
///
/// let stack = PBStack::new(1, 1)?;
/// let mut h = stack.register()?;
/// h.push(1)?;
/// assert_eq!(h.push(2), Err(Full(2)));
/// assert_eq!(h.push(3).unwrap_err().to_string(), "the structure is full (value 3 rejected)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full(pub u64);

impl fmt::Display for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the structure is full (value {} rejected)", self.0)
    }
}

impl std::error::Error for Full {}

/// A response as stored in a record's `ReturnVal`: `[tag, value]`.
type Ret = [u64; 2];

const TAG_NONE: u64 = 0;
const TAG_SOME: u64 = 1;
const TAG_FULL: u64 = 2;

fn ret_unit(r: Result<(), Full>) -> Ret {
    match r {
        Ok(()) => [TAG_NONE, 0],
        Err(Full(v)) => [TAG_FULL, v],
    }
}

fn ret_value(v: Option<u64>) -> Ret {
    match v {
        Some(v) => [TAG_SOME, v],
        None => [TAG_NONE, 0],
    }
}

fn unit_of(r: Ret) -> Result<(), Full> {
    if r[0] == TAG_FULL {
        Err(Full(r[1]))
    } else {
        Ok(())
    }
}

fn value_of(r: Ret) -> Option<u64> {
    (r[0] == TAG_SOME).then_some(r[1])
}

/// The instance's `Recovered<Ret>` with its response converted by `f`.
fn recovered<T>(r: crate::Recovered<Ret>, f: impl FnOnce(Ret) -> T) -> crate::Recovered<T> {
    match r {
        crate::Recovered::Applied(r) => crate::Recovered::Applied(f(r)),
        crate::Recovered::Reexecuted(r) => crate::Recovered::Reexecuted(f(r)),
    }
}

/// The structures' plain calls panic on a poisoned structure (their `try_*` twins return it).
#[cold]
#[inline(never)]
fn poisoned(_: crate::Poisoned) -> ! {
    panic!("structure is poisoned: a combining pass panicked")
}

/// Checks a `max_threads` argument.
fn check_threads(max_threads: usize) -> Result<(), crate::CombBuildError> {
    if max_threads == 0 || max_threads > crate::MAX_THREADS {
        return Err(crate::CombBuildError::InvalidMaxThreads {
            requested: max_threads,
            limit: crate::MAX_THREADS,
        });
    }
    Ok(())
}

/// Why [`PBStack::audit`] or [`PBQueue::audit`] rejected a structure: its list or its free
/// nodes are not what they must be (a bug, or memory corrupted behind the structure's back).
///
/// # Examples
///
/// ```
/// let mut stack = pcomb::structures::PBStack::new(4, 1)?;
/// stack.register()?.push(1)?;
/// assert!(stack.audit().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditError(pub String);

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "structure audit failed: {}", self.0)
    }
}

impl std::error::Error for AuditError {}
