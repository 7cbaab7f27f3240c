//! Typed errors: bad configuration ([`ConfigError`]) and failed operations ([`StoreError`]).

use std::fmt;

/// A [`Builder`](crate::Builder) setting that cannot work. Each variant names the cause and the
/// remedy.
///
/// # Examples
///
/// ```
/// use ladapa::{ConfigError, Store};
///
/// let err = Store::builder().capacity(0).build().unwrap_err();
/// assert!(matches!(err, ConfigError::ZeroCapacity));
/// println!("{err}");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The capacity (the most keys the store holds) is 0.
    ///
    /// Remedy: give [`Builder::capacity`](crate::Builder::capacity) at least 1.
    ZeroCapacity,
    /// The value size is 0.
    ///
    /// Remedy: give [`Builder::value_size`](crate::Builder::value_size) a positive multiple of 8.
    ZeroValueSize,
    /// The value size is not a multiple of 8 (value blocks are copied as whole 8-byte words
    /// and kept 8-byte aligned).
    ///
    /// Remedy: round it up to a multiple of 8 and pad the values.
    ValueSizeNotMultipleOf8 {
        /// The size asked for.
        size: usize,
    },
    /// The value size is larger than [`MAX_VALUE_SIZE`](crate::MAX_VALUE_SIZE).
    ///
    /// Remedy: store large values out of line and keep a handle as the value.
    ValueSizeTooLarge {
        /// The size asked for.
        size: usize,
    },
    /// The first-level table has more entries than the store has capacity: its entries would
    /// never all be used.
    ///
    /// Remedy: make [`Builder::l1_entries`](crate::Builder::l1_entries) at most the capacity.
    L1LargerThanCapacity {
        /// First-level entries asked for.
        l1_entries: usize,
        /// The capacity.
        capacity: usize,
    },
    /// The first-level table has no entry: every write must insert its key there.
    ///
    /// Remedy: give [`Builder::l1_entries`](crate::Builder::l1_entries) at least 1.
    ZeroL1,
    /// The capacity is beyond [`MAX_CAPACITY`](crate::MAX_CAPACITY) (block numbers are 32 bits).
    ///
    /// Remedy: split the data over several stores.
    CapacityTooLarge {
        /// The capacity asked for.
        capacity: usize,
    },
    /// A notification queue bound is 0.
    ///
    /// Remedy: give [`Builder::queue_bounds`](crate::Builder::queue_bounds) positive bounds.
    ZeroQueueBound,
    /// The topology has more nodes than [`MAX_NODES`](crate::MAX_NODES).
    ///
    /// Remedy: ask for fewer virtual nodes.
    TooManyNodes {
        /// The node count.
        nodes: usize,
    },
    /// Topology discovery (or the `NR_VIRTUAL_NODES` override) failed.
    ///
    /// Remedy: see the wrapped error.
    Topology(nr_core::TopologyError),
    /// A background thread could not be started.
    ///
    /// Remedy: raise the process's thread limit, or build with
    /// [`Builder::manual_pump`](crate::Builder::manual_pump).
    Spawn(std::io::Error),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroCapacity => f.write_str("capacity must be at least 1 key"),
            Self::ZeroValueSize => f.write_str("value size must be a positive multiple of 8"),
            Self::ValueSizeNotMultipleOf8 { size } => {
                write!(f, "value size {size} is not a multiple of 8")
            }
            Self::ValueSizeTooLarge { size } => write!(
                f,
                "value size {size} exceeds the limit of {} bytes",
                crate::MAX_VALUE_SIZE
            ),
            Self::L1LargerThanCapacity {
                l1_entries,
                capacity,
            } => write!(
                f,
                "first-level table of {l1_entries} entries is larger than the capacity of \
                 {capacity} keys"
            ),
            Self::ZeroL1 => f.write_str("the first-level table needs at least 1 entry"),
            Self::CapacityTooLarge { capacity } => write!(
                f,
                "capacity {capacity} exceeds the limit of {} keys",
                crate::MAX_CAPACITY
            ),
            Self::ZeroQueueBound => f.write_str("notification queue bounds must be positive"),
            Self::TooManyNodes { nodes } => {
                write!(f, "{nodes} nodes exceed the limit of {}", crate::MAX_NODES)
            }
            Self::Topology(_) => f.write_str("the store's topology is unusable"),
            Self::Spawn(_) => f.write_str("cannot start a background thread"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Topology(e) => Some(e),
            Self::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

impl From<nr_core::TopologyError> for ConfigError {
    fn from(e: nr_core::TopologyError) -> Self {
        Self::Topology(e)
    }
}

/// Which background thread a [`BackgroundPanic`] came from.
///
/// # Examples
///
/// ```
/// use ladapa::BackgroundThread;
///
/// assert_eq!(BackgroundThread::Replicator(2).to_string(), "replicator of node 2");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackgroundThread {
    /// The global propagator (metadata to every node's second-level table).
    Propagator,
    /// The replicator of a node (values to that node's pool).
    Replicator(usize),
    /// The adapter of a node (workload monitor, replication helper).
    Adapter(usize),
}

impl fmt::Display for BackgroundThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Propagator => f.write_str("propagator"),
            Self::Replicator(n) => write!(f, "replicator of node {n}"),
            Self::Adapter(n) => write!(f, "adapter of node {n}"),
        }
    }
}

/// A background thread panicked; the store stopped accepting writes.
///
/// # Examples
///
/// ```
/// use ladapa::{BackgroundPanic, BackgroundThread};
///
/// let p = BackgroundPanic { thread: BackgroundThread::Propagator, message: "boom".into() };
/// assert_eq!(p.to_string(), "background propagator panicked: boom");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackgroundPanic {
    /// The thread that panicked.
    pub thread: BackgroundThread,
    /// Its panic message (or a placeholder for a non-string payload).
    pub message: String,
}

impl fmt::Display for BackgroundPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "background {} panicked: {}", self.thread, self.message)
    }
}

impl std::error::Error for BackgroundPanic {}

/// An operation that could not be done. Each variant names the cause and the remedy.
///
/// # Examples
///
/// ```
/// use ladapa::{Store, StoreError};
///
/// let store = Store::builder().value_size(8).capacity(1).manual_pump().build()?;
/// store.put(1, &[0; 8])?;
/// assert!(matches!(store.put(2, &[0; 8]), Err(StoreError::Full { capacity: 1 })));
/// assert!(matches!(store.put(1, &[0; 4]), Err(StoreError::WrongValueSize { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The value is not exactly the store's value size.
    ///
    /// Remedy: pad or cut it to [`Store::value_size`](crate::Store::value_size) bytes.
    WrongValueSize {
        /// The store's value size.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The store holds `capacity` keys already and the key is new.
    ///
    /// Remedy: delete keys, or build a larger store.
    Full {
        /// The capacity.
        capacity: usize,
    },
    /// A node's data pool has no free block even after reclaiming retired ones (too many
    /// blocks are still held by readers or waiting for an epoch to pass).
    ///
    /// Remedy: retry; drop long-lived [`ValueGuard`](crate::ValueGuard)s.
    OutOfBlocks {
        /// The node whose pool is exhausted.
        node: usize,
    },
    /// The node index is not a node of the store's topology.
    ///
    /// Remedy: use an index below [`Store::num_nodes`](crate::Store::num_nodes).
    NoSuchNode {
        /// The index given.
        node: usize,
        /// The number of nodes.
        nodes: usize,
    },
    /// A background thread panicked; writes are refused from then on (reads still return
    /// current values, since they never depend on replication).
    ///
    /// Remedy: report the bug; [`Store::shutdown`](crate::Store::shutdown) returns the panic.
    BackgroundPanicked(BackgroundPanic),
    /// A value's bytes could not be decoded as the [`DispatchValue`](crate::DispatchValue)
    /// type an operation named, or the type's new state did not encode into the value size.
    ///
    /// Remedy: see the source ([`CodecError`]); write keys that are read or updated as a type
    /// with [`Store::put_value`](crate::Store::put_value) of that type.
    Codec {
        /// The key operated on.
        key: u64,
        /// The value type's name (`std::any::type_name`).
        type_name: &'static str,
        /// What the type's codec reported.
        source: CodecError,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongValueSize { expected, got } => {
                write!(
                    f,
                    "value of {got} bytes given, the store's values are {expected} bytes"
                )
            }
            Self::Full { capacity } => write!(f, "store is full ({capacity} keys)"),
            Self::OutOfBlocks { node } => {
                write!(f, "no free value block in the pool of node {node}")
            }
            Self::NoSuchNode { node, nodes } => {
                write!(
                    f,
                    "node {node} does not exist (the store has {nodes} nodes)"
                )
            }
            Self::BackgroundPanicked(p) => write!(f, "{p}; writes are refused"),
            Self::Codec { key, type_name, .. } => {
                write!(
                    f,
                    "the value of key {key} does not convert to or from {type_name}"
                )
            }
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Codec { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a [`DispatchValue`](crate::DispatchValue) could not be decoded from a value's bytes or
/// encoded into them. Returned by the type's own codec and wrapped in [`StoreError::Codec`].
///
/// # Examples
///
/// ```
/// use ladapa::CodecError;
///
/// let err = CodecError::TooLarge { needed: 24, value_size: 16 };
/// assert_eq!(err.to_string(), "the encoding needs 24 bytes, values are 16 bytes");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// The bytes are not an encoding of the type: the key was written with other bytes (by
    /// [`Store::put`](crate::Store::put)) or as another type.
    ///
    /// Remedy: write the key with [`Store::put_value`](crate::Store::put_value) of this type,
    /// or read it as the type it was written as.
    Invalid {
        /// What is wrong with the bytes, in the codec's words.
        reason: &'static str,
    },
    /// The state needs more bytes than the store's values have.
    ///
    /// Remedy: bound the state (refuse the operation that grows it), or build the store with
    /// a larger [`Builder::value_size`](crate::Builder::value_size).
    TooLarge {
        /// Bytes the encoding needs.
        needed: usize,
        /// The store's value size.
        value_size: usize,
    },
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid { reason } => write!(f, "the bytes are not a valid encoding: {reason}"),
            Self::TooLarge { needed, value_size } => write!(
                f,
                "the encoding needs {needed} bytes, values are {value_size} bytes"
            ),
        }
    }
}

impl std::error::Error for CodecError {}
