//! What the four linked structures share around their protocol instances: the calls a handle
//! makes ([`Engine`], [`run`], [`recover`]), the thread slot a handle holds ([`Seat`]), and the
//! checks `open` makes of a structure's header ([`open_header`]) and of a stack's list
//! ([`walk_stack`]), and the audit of free nodes ([`audit_free`]).

use nr_core::Poisoned;

use super::store::{Header, Link, Pool, Store};
use super::{check_threads, AuditError, Options, Ret};
use crate::engine::pb::{Batch, Instance};
use crate::engine::pwf::{WfBatch, WfInstance};
use crate::error::BuildError;
pub(crate) use crate::memory::Place;
pub(crate) use crate::slots::Seat;
use crate::sync::AtomicU64;
use crate::Recovered;
use pmem::{Persist, Pod, Region};

/// A protocol instance (PBcomb's [`Instance`] or PWFcomb's [`WfInstance`]) served by the batch
/// `B`, as a handle calls it.
pub(crate) trait Engine<B> {
    /// A request.
    type Op;

    /// Thread `p`'s operation `op` numbered `seq`.
    fn execute<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: Self::Op,
        seq: u64,
    ) -> Result<Ret, Poisoned>;

    /// Recovery of thread `p`'s operation `op` numbered `seq`.
    fn recover<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: Self::Op,
        seq: u64,
    ) -> Result<Recovered<Ret>, Poisoned>;
}

impl<S, O, B> Engine<B> for Instance<S, O, Ret>
where
    S: Pod,
    O: Clone + Send + Sync,
    B: Batch<State = S, Op = O, Ret = Ret>,
{
    type Op = O;

    fn execute<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Ret, Poisoned> {
        Instance::execute(self, store.words(), store.persist(), batch, p, op, seq)
    }

    fn recover<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Recovered<Ret>, Poisoned> {
        Instance::recover(self, store.words(), store.persist(), batch, p, op, seq)
    }
}

impl<S, O, B> Engine<B> for WfInstance<S, O, Ret>
where
    S: Pod,
    O: Pod,
    B: WfBatch<State = S, Op = O, Ret = Ret>,
{
    type Op = O;

    fn execute<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Ret, Poisoned> {
        // Wait-free: no lock, nothing to poison (a panicking attempt installs nothing).
        Ok(WfInstance::execute(
            self,
            store.words(),
            store.persist(),
            batch,
            p,
            op,
            seq,
        ))
    }

    fn recover<P: Persist>(
        &self,
        store: &Store<P>,
        batch: &B,
        p: usize,
        op: O,
        seq: u64,
    ) -> Result<Recovered<Ret>, Poisoned> {
        Ok(WfInstance::recover(
            self,
            store.words(),
            store.persist(),
            batch,
            p,
            op,
            seq,
        ))
    }
}

/// Runs `op` as the next operation of the seat's thread on `engine`: `seq` (the number of the
/// thread's last operation on it) is advanced first.
pub(crate) fn run<E: Engine<B>, B, P: Persist, T>(
    engine: &E,
    store: &Store<P>,
    batch: &B,
    seat: &Seat<'_>,
    seq: &mut u64,
    op: E::Op,
    answer: fn(Ret) -> T,
) -> Result<T, Poisoned> {
    *seq += 1;
    engine.execute(store, batch, seat.id, op, *seq).map(answer)
}

/// Recovers the seat's thread's operation `op` numbered `seq` on `engine`; later operations
/// continue from `seq`.
#[allow(clippy::too_many_arguments)] // the instance, its memory and batch, and the call
pub(crate) fn recover<E: Engine<B>, B, P: Persist, T>(
    engine: &E,
    store: &Store<P>,
    batch: &B,
    seat: &Seat<'_>,
    last: &mut u64,
    op: E::Op,
    seq: u64,
    answer: fn(Ret) -> T,
) -> Result<Recovered<T>, Poisoned> {
    *last = seq;
    Ok(match engine.recover(store, batch, seat.id, op, seq)? {
        Recovered::Applied(r) => Recovered::Applied(answer(r)),
        Recovered::Reexecuted(r) => Recovered::Reexecuted(answer(r)),
    })
}

/// What a structure's header says, checked: the block, its thread count, capacity and
/// options.
pub(crate) struct Opened<P: Persist> {
    pub(crate) store: Store<P>,
    pub(crate) threads: usize,
    pub(crate) capacity: u32,
    pub(crate) options: Options,
}

/// Opens the structure with `magic` (named `kind`) at `region`'s root and checks its header:
/// a valid thread count, a capacity `capacity_ok` accepts, and `total_words(capacity,
/// threads)` words.
pub(crate) fn open_header<P: Persist>(
    region: Region<P>,
    magic: u64,
    kind: &'static str,
    capacity_ok: impl Fn(u32, usize) -> bool,
    total_words: impl Fn(u32, usize) -> usize,
) -> Result<Opened<P>, BuildError> {
    let (store, head) = Store::open_structure(region, magic, kind)?;
    let mismatch = |detail| BuildError::LayoutMismatch { kind, detail };
    let threads = usize::try_from(head.threads)
        .ok()
        .filter(|&t| check_threads(t).is_ok())
        .ok_or(mismatch("bad max_threads in the header"))?;
    let capacity = u32::try_from(head.capacity)
        .ok()
        .filter(|&c| capacity_ok(c, threads))
        .ok_or(mismatch("bad capacity"))?;
    if head.total_words != total_words(capacity, threads) as u64 {
        return Err(mismatch("the header's sizes do not match"));
    }
    Ok(Opened {
        store,
        threads,
        capacity,
        options: Options::from_bits(head.options),
    })
}

/// The header of a new structure.
pub(crate) fn header(
    magic: u64,
    threads: usize,
    capacity: u32,
    total_words: usize,
    options: Options,
) -> Header {
    Header {
        magic,
        threads: threads as u64,
        capacity: u64::from(capacity),
        total_words: total_words as u64,
        options: options.bits(),
    }
}

/// Walks a stack's list from `top`: which of the pool's nodes are on it, or why it is
/// malformed (a link out of the pool, a cycle, a length other than `len`).
pub(crate) fn walk_stack(
    w: &[AtomicU64],
    pool: &Pool,
    top: Link,
    len: u64,
) -> Result<Vec<bool>, String> {
    let mut on_list = vec![false; pool.nodes as usize];
    let mut link = top;
    let mut count = 0u64;
    while link != 0 {
        let node = pool
            .node_of(link)
            .ok_or_else(|| format!("link {link} out of the pool"))?;
        if std::mem::replace(&mut on_list[node as usize], true) {
            return Err(format!("node {node} is on the list twice (a cycle)"));
        }
        count += 1;
        link = pool.next(w, node);
    }
    if count != len {
        return Err(format!("{count} nodes on the list, length {len}"));
    }
    Ok(on_list)
}

/// Checks the free nodes `free` against the nodes `on_list`: each free node is in the pool,
/// free once and off the list, and with `recycling` every node is on the list or free.
pub(crate) fn audit_free<'n>(
    on_list: &[bool],
    free: impl IntoIterator<Item = &'n u32>,
    recycling: bool,
) -> Result<(), AuditError> {
    let mut is_free = vec![false; on_list.len()];
    for &n in free {
        let slot = is_free
            .get_mut(n as usize)
            .ok_or_else(|| AuditError(format!("free node {n} out of the pool")))?;
        if std::mem::replace(slot, true) {
            return Err(AuditError(format!("node {n} is free twice")));
        }
        if on_list[n as usize] {
            return Err(AuditError(format!("node {n} is both on the list and free")));
        }
    }
    if recycling {
        if let Some(n) = (0..on_list.len()).find(|&n| !on_list[n] && !is_free[n]) {
            return Err(AuditError(format!(
                "node {n} leaked: neither on the list nor free"
            )));
        }
    }
    Ok(())
}
