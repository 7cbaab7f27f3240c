//! What the `node-replication` 0.1.1 and `cnr` 0.1.0 peers share. Both crates never return a
//! thread's registration (so every thread index's token is registered once, when an instance is
//! built), and a replica no thread uses stops their logs' garbage collection (so a run of `n`
//! threads uses an instance with `min(replicas, n)` replicas, built lazily, one per count).
//! `nr-core`'s CNR peer uses the same instances, so that it runs exactly as many replicas as
//! the `cnr` crate at every point (its registrations are returned, so for it the claims only
//! keep one handle per thread index).

use std::sync::OnceLock;

use crate::method::{claim, release};
use crate::sync::AtomicBool;
use crate::BenchError;

/// The instances of one peer, `instances[r - 1]` with `r` replicas, and the thread indices
/// that hold a handle.
pub(crate) struct Instances<I> {
    instances: Vec<OnceLock<Result<I, String>>>,
    threads: usize,
    taken: Box<[AtomicBool]>,
}

impl<I> std::fmt::Debug for Instances<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instances")
            .field("max_replicas", &self.instances.len())
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl<I> Instances<I> {
    /// Up to `max_replicas` replicas, `threads` threads (the crate's limit is `limit` threads
    /// per replica, named `name` in the error).
    pub(crate) fn new(
        max_replicas: usize,
        threads: usize,
        limit: usize,
        name: &str,
    ) -> Result<Self, BenchError> {
        let threads = threads.max(1);
        if threads >= limit {
            return Err(BenchError::Config(format!(
                "{name} allows fewer than {limit} threads per replica, {threads} asked"
            )));
        }
        Ok(Self {
            instances: (0..max_replicas.max(1)).map(|_| OnceLock::new()).collect(),
            threads,
            taken: (0..threads).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// The replicas a run of `threads` threads uses: `min(replicas, threads)`.
    pub(crate) fn replicas(&self, threads: usize) -> usize {
        self.instances.len().min(threads.max(1))
    }

    /// The instance for a run of `threads` threads (made by `build(replicas, threads)` on first
    /// use), the replica of thread `thread` in it, and the claim of that thread index.
    pub(crate) fn handle(
        &self,
        thread: usize,
        threads: usize,
        build: impl FnOnce(usize, usize) -> Result<I, String>,
    ) -> Result<(&I, usize, Claim<'_>), BenchError> {
        let replicas = self.replicas(threads);
        let instance = self.instances[replicas - 1]
            .get_or_init(|| build(replicas, self.threads))
            .as_ref()
            .map_err(|e| BenchError::Config(e.clone()))?;
        claim(&self.taken, thread)?;
        let claim = Claim {
            taken: &self.taken,
            thread,
        };
        Ok((instance, thread % replicas, claim))
    }
}

/// Registers `threads` tokens with each of `replicas` (`register` returns `None` past the
/// crate's limit, `name`'s `limit`).
pub(crate) fn register_all<R, T>(
    replicas: &[R],
    threads: usize,
    register: impl Fn(&R) -> Option<T>,
    limit: usize,
    name: &str,
) -> Result<Vec<Vec<T>>, String> {
    replicas
        .iter()
        .map(|r| {
            (0..threads)
                .map(|_| register(r))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    format!("{name} allows {limit} threads per replica, {threads} asked")
                })
        })
        .collect()
}

/// A thread index held by a handle; released on drop.
#[derive(Debug)]
pub(crate) struct Claim<'a> {
    taken: &'a [AtomicBool],
    thread: usize,
}

impl Claim<'_> {
    /// The thread index.
    pub(crate) fn thread(&self) -> usize {
        self.thread
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        release(self.taken, self.thread);
    }
}
