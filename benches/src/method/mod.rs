//! The methods under test, behind one trait, so that every method runs the same workload.
//!
//! A [`Method`] turns a sequential structure `D` (a [`Dispatch`] implementation) into something
//! many threads can use; each thread takes a [`Handle`] and runs `D`'s own read and write
//! operations through it. The black-box methods ([`Nr`], [`SpinLock`], [`RwLock`],
//! [`FlatCombining`], [`FlatCombiningRw`]) work for any `D`; the peers in [`peers`] implement
//! `Method<D>` for one specific `D` by translating its operations to their own structure.

use nr_core::{Dispatch, Poisoned, Topology};

use crate::BenchError;

mod fc;
mod nr;
pub mod peers;
mod rwlock;
mod spinlock;

pub use fc::{FcHandle, FlatCombining, FlatCombiningRw};
pub use nr::{Nr, NrDormant, NrWritesAsReads};
pub use rwlock::RwLock;
pub use spinlock::SpinLock;

/// How the NR method places its replicas.
///
/// # Examples
///
/// ```
/// use benches::Replicas;
///
/// assert_eq!(Replicas::PerNode.to_string(), "per-node");
/// assert_eq!(Replicas::Exactly(3).to_string(), "3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// One replica per node of the run's topology (real or virtual nodes), each built on its
    /// node; thread `t` registers with the replica of the node its CPU belongs to.
    PerNode,
    /// Exactly this many replicas, not placed; thread `t` registers with replica `t % n`.
    Exactly(usize),
}

impl std::fmt::Display for Replicas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PerNode => f.write_str("per-node"),
            Self::Exactly(n) => write!(f, "{n}"),
        }
    }
}

/// Everything a method needs to build its copy of the structure.
///
/// # Examples
///
/// ```
/// use benches::{Replicas, Setup};
/// use nr_core::Topology;
///
/// let topology = Topology::single_node(vec![0])?;
/// let make = || seqds::HashMapKv::new();
/// let prefill = [seqds::MapWrite::Put(1, 10)];
/// let setup = Setup { make: &make, prefill: &prefill, threads: 4, topology: &topology, replicas: Replicas::PerNode };
/// assert_eq!(setup.fresh().get(1), Some(10));
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
#[allow(missing_debug_implementations)] // holds a closure
pub struct Setup<'a, D: Dispatch> {
    /// Builds an empty structure; every call must return an equal one.
    pub make: &'a (dyn Fn() -> D + Sync),
    /// Writes applied to every fresh copy before measuring (the initial contents).
    pub prefill: &'a [D::WriteOperation],
    /// The most threads that will hold handles at once; handle indices are `0..threads`.
    pub threads: usize,
    /// The topology threads are pinned by (thread `t` runs on `cpu_for_thread(t)`).
    pub topology: &'a Topology,
    /// NR's replica placement (ignored by the other methods).
    pub replicas: Replicas,
}

impl<D: Dispatch> Setup<'_, D> {
    /// A fresh structure with the prefill applied.
    ///
    /// # Examples
    ///
    /// See [`Setup`].
    pub fn fresh(&self) -> D {
        let mut d = (self.make)();
        for op in self.prefill {
            d.dispatch_mut(op.clone());
        }
        d
    }
}

/// One thread's access to a method's structure.
///
/// # Examples
///
/// ```
/// use benches::{Handle, Method, Replicas, Setup, SpinLock};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// # let make = || HashMapKv::new();
/// # let setup = Setup { make: &make, prefill: &[], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let sl = SpinLock::build(&setup)?;
/// let mut h = sl.handle(0, 1)?;
/// h.write(MapWrite::Put(1, 2))?;
/// assert_eq!(h.read(MapRead::Get(1))?, MapResponse::Get(Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Handle<D: Dispatch> {
    /// Runs a read-only operation.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] when the method's object was poisoned by a panic in user code (NR only).
    fn read(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned>;

    /// Runs a mutating operation.
    ///
    /// # Errors
    ///
    /// As [`read`](Self::read).
    fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned>;
}

/// A way to make the sequential structure `D` concurrent.
///
/// # Examples
///
/// See [`Handle`].
pub trait Method<D: Dispatch>: Sync + Sized {
    /// The method's short name in tables, CSV and charts (`NR`, `SL`, `RWL`, `FC`, `FC+`, ...).
    const NAME: &'static str;

    /// A thread's handle; created on the thread that uses it.
    type Handle<'a>: Handle<D>
    where
        Self: 'a;

    /// Builds the method's structure (or structures) from `setup`.
    ///
    /// # Errors
    ///
    /// [`BenchError`] when the method cannot be built as asked.
    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError>;

    /// The handle of thread `thread` in a run of `threads` threads (`thread < threads <=
    /// setup.threads`); at most one live handle per index. Knowing the run's size lets a method
    /// use only as many copies as there are threads (the `node-replication` peer needs that).
    ///
    /// # Errors
    ///
    /// [`BenchError::Config`] for an index out of range or already in use,
    /// [`BenchError::Register`] when NR refuses the thread.
    fn handle(&self, thread: usize, threads: usize) -> Result<Self::Handle<'_>, BenchError>;

    /// How many copies of the structure a run of `threads` threads really uses (NR's
    /// replicas; `min(replicas, threads)` for the `node-replication` peer; 1 for the others).
    fn replicas(&self, threads: usize) -> usize {
        let _ = threads;
        1
    }
}

/// Claims handle slot `thread` of `taken`, or says why not.
pub(crate) fn claim(taken: &[crate::sync::AtomicBool], thread: usize) -> Result<(), BenchError> {
    use crate::sync::Ordering;
    let flag = taken.get(thread).ok_or_else(|| {
        BenchError::Config(format!(
            "thread index {thread} out of range: built for {} threads",
            taken.len()
        ))
    })?;
    // Acquire: pairs with the Release in `release`, so the previous owner's last use of the slot
    // happens before ours.
    flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .map(|_| ())
        .map_err(|_| BenchError::Config(format!("thread index {thread} already has a handle")))
}

/// Releases a slot claimed by [`claim`].
pub(crate) fn release(taken: &[crate::sync::AtomicBool], thread: usize) {
    // Release: pairs with the Acquire in `claim`.
    taken[thread].store(false, crate::sync::Ordering::Release);
}
