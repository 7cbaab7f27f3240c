//! The `node-replication` crate (0.1.1, VMware's Rust NR) wrapping the same `seqds::HashMapKv`: the
//! hash-map anchor's "other NR" peer.
//!
//! Two properties of that version shape this wrapper:
//! - thread registrations are never returned (at most 256 per replica over a replica's life),
//!   so every thread index's token is registered once, at build time;
//! - a replica that no thread uses stops the log's garbage collection once the log wraps, and
//!   the appenders then wait forever. So a run of `n` threads uses an instance with
//!   `min(replicas, n)` replicas, each with at least one thread (instances are built lazily, one
//!   per replica count), and a fixed-operation run must append fewer than the log's entries
//!   (32 MiB of log: hundreds of thousands) between two runs.

use std::sync::Arc;

use node_replication::{Log, Replica, ReplicaToken};
use nr_core::Poisoned;
use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};

use super::tokens::{register_all, Claim, Instances};
use crate::method::{Handle, Method, Replicas, Setup};
use crate::BenchError;

/// The same sequential map, seen through `node-replication`'s own `Dispatch` trait.
#[derive(Debug, Default)]
struct LegacyMap(HashMapKv);

impl node_replication::Dispatch for LegacyMap {
    type ReadOperation = MapRead;
    type WriteOperation = MapWrite;
    type Response = MapResponse;

    fn dispatch(&self, op: MapRead) -> MapResponse {
        nr_core::Dispatch::dispatch(&self.0, op)
    }

    fn dispatch_mut(&mut self, op: MapWrite) -> MapResponse {
        nr_core::Dispatch::dispatch_mut(&mut self.0, op)
    }
}

/// One `node-replication` object: a log, its replicas and a token per (replica, thread).
struct Instance {
    // Keeps the log alive as long as the replicas (they also hold it).
    _log: Arc<Log<'static, MapWrite>>,
    replicas: Vec<Arc<Replica<'static, LegacyMap>>>,
    /// `tokens[r][t]`: thread `t`'s registration with replica `r`.
    tokens: Vec<Vec<ReplicaToken>>,
}

/// `node-replication` 0.1.1 running the hash map's operations.
///
/// # Examples
///
/// ```
/// use benches::method::peers::NrCratePeer;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[MapWrite::Put(1, 2)], threads: 2, topology: &topology, replicas: Replicas::Exactly(2) };
/// let nr = NrCratePeer::build(&setup)?;
/// let mut h = nr.handle(1, 2)?;
/// h.write(MapWrite::Put(1, 3))?;
/// assert_eq!(nr.handle(0, 2)?.read(MapRead::Get(1))?, MapResponse::Get(Some(3)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NrCratePeer {
    instances: Instances<Instance>,
    prefill: Vec<MapWrite>,
}

impl std::fmt::Debug for NrCratePeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NrCratePeer")
            .field("instances", &self.instances)
            .finish_non_exhaustive()
    }
}

impl NrCratePeer {
    fn build_instance(&self, replicas: usize, threads: usize) -> Result<Instance, String> {
        let log = Arc::new(Log::<MapWrite>::default());
        let replicas: Vec<_> = (0..replicas)
            .map(|_| {
                let mut map = LegacyMap::default();
                for op in &self.prefill {
                    nr_core::Dispatch::dispatch_mut(&mut map.0, *op);
                }
                Replica::with_data(&log, map)
            })
            .collect();
        let tokens = register_all(
            &replicas,
            threads,
            |r| r.register(),
            node_replication::MAX_THREADS_PER_REPLICA,
            "node-replication",
        )?;
        Ok(Instance {
            _log: log,
            replicas,
            tokens,
        })
    }
}

impl Method<HashMapKv> for NrCratePeer {
    const NAME: &'static str = "nr-crate";
    type Handle<'a> = NrCrateHandle<'a>;

    fn build(setup: &Setup<'_, HashMapKv>) -> Result<Self, BenchError> {
        let max_replicas = match setup.replicas {
            Replicas::PerNode => setup.topology.num_nodes(),
            Replicas::Exactly(n) => n,
        }
        .clamp(1, node_replication::MAX_REPLICAS_PER_LOG);
        Ok(Self {
            instances: Instances::new(
                max_replicas,
                setup.threads,
                node_replication::MAX_THREADS_PER_REPLICA,
                "node-replication",
            )?,
            prefill: setup.prefill.to_vec(),
        })
    }

    fn handle(&self, thread: usize, threads: usize) -> Result<NrCrateHandle<'_>, BenchError> {
        let (instance, r, claim) = self
            .instances
            .handle(thread, threads, |n, t| self.build_instance(n, t))?;
        Ok(NrCrateHandle {
            replica: &instance.replicas[r],
            token: instance.tokens[r][claim.thread()],
            _claim: claim,
        })
    }

    fn replicas(&self, threads: usize) -> usize {
        // What `handle` really builds for a run of `threads` threads.
        self.instances.replicas(threads)
    }
}

/// A thread's registration with a `node-replication` replica.
pub struct NrCrateHandle<'a> {
    replica: &'a Replica<'static, LegacyMap>,
    token: ReplicaToken,
    _claim: Claim<'a>,
}

impl std::fmt::Debug for NrCrateHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NrCrateHandle")
            .field("claim", &self._claim)
            .finish_non_exhaustive()
    }
}

impl Handle<HashMapKv> for NrCrateHandle<'_> {
    #[inline]
    fn read(&mut self, op: MapRead) -> Result<MapResponse, Poisoned> {
        Ok(self.replica.execute(op, self.token))
    }

    #[inline]
    fn write(&mut self, op: MapWrite) -> Result<MapResponse, Poisoned> {
        Ok(self.replica.execute_mut(op, self.token))
    }
}
