//! NR: Node Replication (`nr-core`), the method under study.

use nr_core::{Builder, Dispatch, NodeReplicated, Poisoned, ThreadHandle, Topology};

use super::{Handle, Method, Replicas, Setup};
use crate::BenchError;

/// Node Replication from `nr-core`: one replica per (virtual) node, or an explicit count.
///
/// # Examples
///
/// ```
/// use benches::{Handle, Method, Nr, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
///
/// let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[], threads: 2, topology: &topology, replicas: Replicas::Exactly(2) };
/// let nr: Nr<HashMapKv> = Nr::build(&setup)?;
/// assert_eq!(nr.replicas(2), 2);
/// let mut h = nr.handle(1, 2)?;
/// h.write(MapWrite::Put(3, 4))?;
/// assert_eq!(nr.handle(0, 2)?.read(MapRead::Get(3))?, MapResponse::Get(Some(4)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `WRITES_AS_READS = true` is the variant `NR-war` that tries each write as a read first
/// (`nr_core::Builder::writes_as_reads`, the paper's §6 "fake updates"); see [`NrWritesAsReads`].
#[derive(Debug)]
pub struct Nr<D: Dispatch + Send + Sync, const WRITES_AS_READS: bool = false> {
    nr: NodeReplicated<D>,
    /// The topology threads are pinned by, to find each thread's node.
    topology: Topology,
    placed: bool,
}

/// NR that tries every write as a read first (`Builder::writes_as_reads(true)`), named `NR-war`.
pub type NrWritesAsReads<D> = Nr<D, true>;

impl<D, const WRITES_AS_READS: bool> Method<D> for Nr<D, WRITES_AS_READS>
where
    D: Dispatch + Send + Sync,
{
    const NAME: &'static str = if WRITES_AS_READS { "NR-war" } else { "NR" };
    type Handle<'a>
        = ThreadHandle<'a, D>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        Self::build_with(setup, |b| b.writes_as_reads(WRITES_AS_READS))
    }

    fn handle(&self, thread: usize, _threads: usize) -> Result<ThreadHandle<'_, D>, BenchError> {
        let replica = if self.placed {
            self.nr
                .replica_for_cpu(self.topology.cpu_for_thread(thread))
                .unwrap_or(thread % self.nr.replicas())
        } else {
            thread % self.nr.replicas()
        };
        Ok(self.nr.register(replica)?)
    }

    fn replicas(&self, _threads: usize) -> usize {
        self.nr.replicas()
    }
}

impl<D, const WRITES_AS_READS: bool> Nr<D, WRITES_AS_READS>
where
    D: Dispatch + Send + Sync,
{
    /// Builds as `Method::build`, with `options` applied to the builder first.
    fn build_with(
        setup: &Setup<'_, D>,
        options: impl FnOnce(Builder<D>) -> Builder<D>,
    ) -> Result<Self, BenchError> {
        let builder = options(NodeReplicated::builder().threads_per_replica(setup.threads.max(1)));
        let (builder, placed) = match setup.replicas {
            Replicas::PerNode => (builder.topology(setup.topology.clone()), true),
            Replicas::Exactly(n) => (builder.replicas(n), false),
        };
        let nr = builder.build(|_| setup.fresh())?;
        Ok(Self {
            nr,
            topology: setup.topology.clone(),
            placed,
        })
    }
}

/// NR with dormant replicas (`Builder::dormant_replicas(true)`), named `NR-dormant`: a replica
/// with no registered thread leaves the log (issue 21, "an idle replica"). Threads are placed
/// as for [`Nr`].
///
/// # Examples
///
/// ```
/// use benches::{Handle, Method, NrDormant, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
///
/// let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[], threads: 1, topology: &topology, replicas: Replicas::Exactly(2) };
/// let nr: NrDormant<HashMapKv> = NrDormant::build(&setup)?;
/// let mut h = nr.handle(0, 1)?;
/// h.write(MapWrite::Put(3, 4))?;
/// assert_eq!(h.read(MapRead::Get(3))?, MapResponse::Get(Some(4)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct NrDormant<D: Dispatch + Send + Sync>(Nr<D>);

impl<D> Method<D> for NrDormant<D>
where
    D: Dispatch + Send + Sync + Clone,
{
    const NAME: &'static str = "NR-dormant";
    type Handle<'a>
        = ThreadHandle<'a, D>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        Nr::build_with(setup, |b| b.dormant_replicas(true)).map(Self)
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<ThreadHandle<'_, D>, BenchError> {
        self.0.handle(thread, threads)
    }

    fn replicas(&self, threads: usize) -> usize {
        self.0.replicas(threads)
    }
}

impl<D> Handle<D> for ThreadHandle<'_, D>
where
    D: Dispatch + Send + Sync,
{
    #[inline]
    fn read(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        self.execute(op)
    }

    #[inline]
    fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        self.execute_mut(op)
    }
}
