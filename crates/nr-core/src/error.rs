//! Error types. Each variant documents its cause and the remedy.

use std::fmt;

use crate::TopologyError;

/// Returned by every operation once the object is poisoned.
///
/// **Cause:** user code (`dispatch_mut`, or `clone` of a write operation) panicked while a
/// replica was being updated. That replica may be half-updated and no longer equal to the others,
/// so no further operation is accepted, exactly as a [`std::sync::Mutex`] refuses its guard after
/// a panic while it was held. The thread whose operation panicked receives the panic itself (on
/// the thread that ran the operation, which may be a combiner working for other threads). Or,
/// with a [`CommitLog`](crate::CommitLog), its `commit` returned an error or panicked: the
/// entries it was given are not durable, so no replica applies them.
///
/// **Remedy:** drop the object and rebuild it from a known-good state (with a commit log: recover
/// from what the log made durable); fix the panicking operation or the failing log. Operations are not retried: an operation that returned `Poisoned` may or may not
/// have been applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poisoned;

impl fmt::Display for Poisoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the replicated object is poisoned: a write operation panicked while a replica was \
             being updated, or the commit log failed, so replicas may differ; rebuild the object",
        )
    }
}

impl std::error::Error for Poisoned {}

/// Returned by [`CommitLog::commit`](crate::CommitLog::commit) when it could not make the entries
/// it was given durable.
///
/// **Cause:** the commit log's medium failed (an I/O error, a full device, ...); the wrapped
/// error, given by [`source`](std::error::Error::source), says which. The object is then
/// poisoned: no replica applies those entries, and every writer waiting on them, and every later
/// operation, gets [`Poisoned`].
///
/// **Remedy:** fix the medium, then rebuild the object from what the log made durable.
///
/// # Examples
///
/// ```
/// use std::error::Error;
/// use nr_core::CommitError;
///
/// let e = CommitError::new(std::io::Error::other("disk full"));
/// assert_eq!(e.to_string(), "the commit log could not make the entries durable");
/// assert_eq!(e.source().map(|s| s.to_string()), Some("disk full".into()));
/// ```
#[derive(Debug)]
pub struct CommitError {
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl CommitError {
    /// Wraps the cause of a failed commit.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = nr_core::CommitError::new("fdatasync failed");
    /// assert_eq!(e.into_inner().to_string(), "fdatasync failed");
    /// ```
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            source: source.into(),
        }
    }

    /// The cause, given back.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = nr_core::CommitError::new(std::io::Error::other("gone"));
    /// assert!(e.into_inner().downcast::<std::io::Error>().is_ok());
    /// ```
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.source
    }
}

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the commit log could not make the entries durable")
    }
}

impl std::error::Error for CommitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Why [`Builder::build`](crate::Builder::build) refused to build an object.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// **Cause:** the log size is not a power of two, is smaller than 2, or is smaller than the
    /// number of threads per replica (one combiner batch holds one operation per thread and must
    /// fit in the log). **Remedy:** pick a power of two at least `threads_per_replica`.
    LogSize {
        /// The rejected log size (entries).
        entries: usize,
        /// The configured threads per replica.
        threads_per_replica: usize,
    },
    /// **Cause:** the largest size given to `Builder::log_growth` is not a power of two, or is
    /// smaller than the log size. **Remedy:** pick a power of two at least `log_size`.
    LogGrowth {
        /// The rejected largest size (entries).
        max_entries: usize,
        /// The configured (initial) log size.
        entries: usize,
    },
    /// **Cause:** zero replicas, or zero threads per replica, were asked for.
    /// **Remedy:** ask for at least one of each.
    Zero(&'static str),
    /// **Cause:** an explicit replica count and a topology disagree (one replica per node).
    /// **Remedy:** set only one of them, or use `Topology::with_virtual_nodes`.
    ReplicaCountMismatch {
        /// Replicas asked for.
        replicas: usize,
        /// Nodes in the topology.
        nodes: usize,
    },
    /// **Cause:** the topology could not be read, the `NR_VIRTUAL_NODES` override was invalid, or
    /// a helper thread could not be pinned to a node's CPUs to place its replica.
    /// **Remedy:** see the inner error.
    Topology(TopologyError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::LogSize {
                entries,
                threads_per_replica,
            } => write!(
                f,
                "log size {entries} is invalid: it must be a power of two, at least 2 and at \
                 least threads_per_replica ({threads_per_replica})"
            ),
            BuildError::LogGrowth {
                max_entries,
                entries,
            } => write!(
                f,
                "largest log size {max_entries} is invalid: it must be a power of two and at                  least the log size ({entries})"
            ),
            BuildError::Zero(what) => write!(f, "{what} must be at least 1"),
            BuildError::ReplicaCountMismatch { replicas, nodes } => write!(
                f,
                "{replicas} replicas were asked for, but the topology has {nodes} nodes (one \
                 replica per node); set only one, or split the topology into virtual nodes"
            ),
            BuildError::Topology(_) => write!(f, "the topology could not be built or used"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Topology(e) => Some(e),
            _ => None,
        }
    }
}

impl From<TopologyError> for BuildError {
    fn from(e: TopologyError) -> Self {
        BuildError::Topology(e)
    }
}

/// Why [`NodeReplicated::register`](crate::NodeReplicated::register) refused a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// **Cause:** the replica index is not below the number of replicas.
    /// **Remedy:** use `0..nr.replicas()`, or `NodeReplicated::replica_for_cpu`.
    NoSuchReplica {
        /// The index asked for.
        replica: usize,
        /// How many replicas there are.
        replicas: usize,
    },
    /// **Cause:** every thread slot of the replica is held by a live handle.
    /// **Remedy:** drop handles that are no longer used, register with another replica, or build
    /// with a larger `Builder::threads_per_replica`.
    ReplicaFull {
        /// The replica asked for.
        replica: usize,
        /// Its number of thread slots.
        capacity: usize,
    },
    /// **Cause:** the object is poisoned (see [`Poisoned`]). **Remedy:** rebuild it.
    Poisoned,
    /// **Cause:** `NodeReplicated::run_combiner` on an object built without
    /// `Builder::dedicated_combiners`. **Remedy:** turn the option on, or do not run one.
    DedicatedCombinersOff,
    /// **Cause:** `NodeReplicated::run_combiner` while another thread runs the replica's
    /// dedicated combiner. **Remedy:** run one per replica.
    CombinerRunning {
        /// The replica asked for.
        replica: usize,
    },
    /// **Cause:** the replica was retired by `NodeReplicated::remove_replica`. **Remedy:**
    /// register with a live replica, or add one (`NodeReplicated::add_replica`).
    Retired {
        /// The replica asked for.
        replica: usize,
    },
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::NoSuchReplica { replica, replicas } => {
                write!(f, "replica {replica} does not exist (there are {replicas})")
            }
            RegisterError::ReplicaFull { replica, capacity } => write!(
                f,
                "replica {replica} already has {capacity} registered threads; drop unused \
                 handles or build with a larger threads_per_replica"
            ),
            RegisterError::Poisoned => Poisoned.fmt(f),
            RegisterError::DedicatedCombinersOff => f.write_str(
                "dedicated combiners are off: build with Builder::dedicated_combiners(true)",
            ),
            RegisterError::CombinerRunning { replica } => write!(
                f,
                "replica {replica} already has a dedicated combiner running"
            ),
            RegisterError::Retired { replica } => write!(f, "replica {replica} is retired"),
        }
    }
}

impl std::error::Error for RegisterError {}

/// Why [`NodeReplicated::add_replica`](crate::NodeReplicated::add_replica) or
/// [`NodeReplicated::remove_replica`](crate::NodeReplicated::remove_replica) refused.
///
/// # Examples
///
/// ```
/// # use nr_core::{Dispatch, NodeReplicated, ReplicaError};
/// # #[derive(Default, Clone)] struct S;
/// # impl Dispatch for S {
/// #     type ReadOperation<'a> = (); type WriteOperation = (); type Response = ();
/// #     fn dispatch(&self, _: ()) {} fn dispatch_mut(&mut self, _: ()) {}
/// # }
/// let nr = NodeReplicated::builder().replicas(2).build(|_| S)?;
/// let err = nr.add_replica(0).unwrap_err();
/// assert_eq!(err, ReplicaError::Full { capacity: 2 });
/// assert_eq!(err.to_string(), "all 2 replica places are used; build with a larger Builder::max_replicas");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaError {
    /// **Cause:** the replica index is not below `NodeReplicated::replicas`. **Remedy:** use an
    /// index that `add_replica` returned or the object was built with.
    NoSuchReplica {
        /// The index asked for.
        replica: usize,
        /// How many replica places are used.
        replicas: usize,
    },
    /// **Cause:** every place of `Builder::max_replicas` is used (retired replicas keep
    /// theirs). **Remedy:** build with a larger `Builder::max_replicas`.
    Full {
        /// The object's number of places.
        capacity: usize,
    },
    /// **Cause:** the replica was retired already (to copy from, or to retire again).
    /// **Remedy:** use a live replica.
    Retired {
        /// The replica asked for.
        replica: usize,
    },
    /// **Cause:** `remove_replica` while handles (or a dedicated combiner) are alive on the
    /// replica. **Remedy:** drop them first (register their threads elsewhere).
    InUse {
        /// The replica asked for.
        replica: usize,
        /// How many were alive.
        handles: usize,
    },
    /// **Cause:** `remove_replica` of the only live replica. **Remedy:** add another first.
    LastReplica,
    /// **Cause:** the object is poisoned (see [`Poisoned`]). **Remedy:** rebuild it.
    Poisoned,
}

impl fmt::Display for ReplicaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicaError::NoSuchReplica { replica, replicas } => {
                write!(f, "replica {replica} does not exist (there are {replicas})")
            }
            ReplicaError::Full { capacity } => write!(
                f,
                "all {capacity} replica places are used; build with a larger Builder::max_replicas"
            ),
            ReplicaError::Retired { replica } => write!(f, "replica {replica} is retired"),
            ReplicaError::InUse { replica, handles } => write!(
                f,
                "replica {replica} still has {handles} live handle(s); drop them first"
            ),
            ReplicaError::LastReplica => f.write_str("the last live replica cannot be removed"),
            ReplicaError::Poisoned => Poisoned.fmt(f),
        }
    }
}

impl std::error::Error for ReplicaError {}
