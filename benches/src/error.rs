//! The harness's error type.

use std::fmt;

/// Why a benchmark could not run as asked. Benchmarks fail loudly rather than run something
/// other than what was asked (see `BENCHMARKS.md`: exact thread counts).
///
/// The binaries' top-level error, printed once as `error: {e}`: its `Display` folds in the
/// whole cause chain of a wrapped error ([`error_chain`]) and `source()` is `None`, so every
/// cause is printed exactly once.
///
/// # Examples
///
/// ```
/// use benches::BenchError;
///
/// let e = BenchError::Config("threads must be at least 1".into());
/// assert!(e.to_string().contains("threads"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// An invalid combination of arguments (zero threads, a thread count above what a method was
    /// built for, an unknown method name). Remedy: fix the arguments as the message says.
    Config(String),
    /// Building the NR object failed (log size, replica count, topology). Remedy: see the
    /// wrapped error.
    Build(nr_core::BuildError),
    /// Registering a thread with an NR replica failed (more threads than
    /// `threads_per_replica`, or a poisoned object). Remedy: see the wrapped error.
    Register(nr_core::RegisterError),
    /// Topology discovery or pinning a thread failed. Remedy: see the wrapped error; run on
    /// Linux, or inside an affinity mask that holds the CPUs asked for.
    Topology(nr_core::TopologyError),
    /// A method reported a poisoned object (a panic in user code). Remedy: the structure's
    /// `dispatch_mut` panicked; fix it.
    Poisoned,
    /// A `pcomb` object or a thread's registration could not be built, or a structure ran out
    /// of room. Remedy: see the message (a full structure: fewer operations per run).
    Pcomb(String),
    /// A benchmark thread panicked. Remedy: see the panic message printed above.
    ThreadPanicked,
    /// A persistent-memory region (a benchmark's file, or a pointer into it) could not be
    /// created or used. Remedy: see the wrapped error (it names the path; check the temp
    /// dir's free space).
    Region(pmem::RegionError),
    /// A region had no room for a benchmark's own block (the Mutex+persist baselines).
    /// Remedy: see the wrapped error; a larger region.
    RegionAlloc(pmem::AllocError),
    /// A key-value store of the YCSB driver ([`kv`](crate::kv): ladapa's store or a baseline)
    /// refused an operation (a wrong value size, a full store, no such node). Remedy: see
    /// the wrapped error.
    Store(ladapa::StoreError),
    /// A durable NR object or its log (`nr_durable`: the durable-NR benchmarks) could not be
    /// opened or refused a write (a full region, a failed `fdatasync`). Remedy: see the wrapped
    /// error (it names the path; check the directory's free space).
    Durable(nr_durable::DurableError),
    /// Writing results (CSV, chart) failed. Remedy: check the output directory.
    Io(std::io::Error),
    /// Drawing a chart failed. Remedy: see the message.
    Chart(String),
    /// A CSV line could not be parsed back. Remedy: the file was not written by this harness,
    /// or was edited; the message names the field.
    Parse(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(m) => write!(f, "invalid benchmark configuration: {m}"),
            Self::Pcomb(m) => write!(f, "pcomb: {m}"),
            Self::Build(e) => write!(f, "building the NR object failed: {}", error_chain(e)),
            Self::Register(e) => write!(f, "registering a thread failed: {}", error_chain(e)),
            Self::Topology(e) => write!(f, "topology: {}", error_chain(e)),
            Self::Poisoned => f.write_str("the object is poisoned (a panic in user code)"),
            Self::ThreadPanicked => f.write_str("a benchmark thread panicked"),
            Self::Region(e) => write!(f, "region: {}", error_chain(e)),
            Self::RegionAlloc(e) => write!(f, "region allocation: {}", error_chain(e)),
            Self::Store(e) => write!(f, "key-value store: {}", error_chain(e)),
            Self::Durable(e) => write!(f, "durable NR: {}", error_chain(e)),
            Self::Io(e) => write!(f, "writing results failed: {}", error_chain(e)),
            Self::Chart(m) => write!(f, "drawing a chart failed: {m}"),
            Self::Parse(m) => write!(f, "parsing a CSV row failed: {m}"),
        }
    }
}

/// Its causes are part of its `Display` (see the type's docs), so it has no `source()`.
impl std::error::Error for BenchError {}

/// An error's message followed by each of its causes' (`source()` chain), joined by `": "`:
/// the text for a message that has no `source()` of its own to carry them.
///
/// # Examples
///
/// ```
/// let err = nr_core::Topology::single_node(vec![0])?.with_virtual_nodes(0).unwrap_err();
/// let err = benches::BenchError::Topology(err);
/// assert_eq!(err.to_string(), "topology: cannot split the CPUs into 0 virtual nodes");
/// let io = std::io::Error::other("disk full");
/// assert_eq!(benches::error_chain(&io), "disk full");
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(err) = cause {
        text.push_str(": ");
        text.push_str(&err.to_string());
        cause = err.source();
    }
    text
}

/// The end of a program's `main`: `Ok` exits 0; an error prints `error: ` and its
/// [`error_chain`] (each cause once, not `Debug`) on stderr and exits 1.
///
/// # Examples
///
/// ```
/// fn try_main() -> Result<(), Box<dyn std::error::Error>> {
///     Err("unknown distribution foo".into())
/// }
/// let code = benches::exit_with(try_main()); // prints "error: unknown distribution foo"
/// assert_eq!(code, std::process::ExitCode::FAILURE);
/// ```
pub fn exit_with(result: Result<(), Box<dyn std::error::Error>>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_chain(&*e));
            std::process::ExitCode::FAILURE
        }
    }
}

impl From<nr_core::BuildError> for BenchError {
    fn from(e: nr_core::BuildError) -> Self {
        Self::Build(e)
    }
}

impl From<nr_core::RegisterError> for BenchError {
    fn from(e: nr_core::RegisterError) -> Self {
        Self::Register(e)
    }
}

impl From<nr_core::TopologyError> for BenchError {
    fn from(e: nr_core::TopologyError) -> Self {
        Self::Topology(e)
    }
}

impl From<pmem::RegionError> for BenchError {
    fn from(e: pmem::RegionError) -> Self {
        Self::Region(e)
    }
}

impl From<pmem::AllocError> for BenchError {
    fn from(e: pmem::AllocError) -> Self {
        Self::RegionAlloc(e)
    }
}

impl From<ladapa::StoreError> for BenchError {
    fn from(e: ladapa::StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<nr_durable::DurableError> for BenchError {
    fn from(e: nr_durable::DurableError) -> Self {
        Self::Durable(e)
    }
}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}
