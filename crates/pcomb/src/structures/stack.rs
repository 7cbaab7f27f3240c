//! PBstack (paper §5): a linked stack whose combined state is `top`, with elimination and a
//! recycling stack of nodes.
//!
//! The combiner serves a whole pass at once ([`Batch::apply`]): with elimination on it first
//! pairs pushes with pops of the pass (each pop answered with a paired push's value, neither
//! touching the list), then applies the rest in thread order. A push takes a node from the
//! recycling stack (the paper's single free list, LIFO: nodes come back in the order they were
//! first handed out, so a pass writes consecutive nodes), writes `[value, top]` and the pass
//! writes back (pwb) every new node before the record (line 22), so the `pfence` of line 23
//! orders them before the state that names them. Popped nodes join the recycling stack only
//! after line 27: from then on the durable `top` no longer reaches them, so reusing (and
//! overwriting) them cannot break recovery.
//!
//! The recycling stack is volatile. [`PBStack::open`] rebuilds it from the persisted list:
//! every node not reachable from the durable `top` is free, so no node leaks across a crash and
//! none is both in the list and free.

use core::fmt;

use super::shared::{
    self, audit_free, open_header, stack_handle, structure_api, walk_stack, Built, Parts, Place,
    Seat,
};
use super::store::{FreeNodes, Link, Pool, Store};
use super::{
    check_threads, poisoned, ret_unit, ret_value, unit_of, value_of, AuditError, Full, Options, Ret,
};
use crate::engine::pb::{Batch, Instance};
use crate::error::{CombBuildError, CombRegisterError};
use crate::layout::LINE_WORDS;
use crate::slots::Slots;
use crate::sync::UnsafeCell;
use crate::{Poisoned, Recovered};
use pmem::{NoPersist, Persist, Pod, Region};

const MAGIC: u64 = pmem::kinds::PBSTACK_TAG;
const KIND: &str = "PBStack";

type StackInstance = Instance<StackState, StackOp, Ret>;

/// `st` of a PBstack record: the top node's link and the number of values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct StackState {
    top: Link,
    len: u64,
}

// SAFETY:
// - `repr(C)` with two `u64` fields: no padding, every bit pattern valid;
// - it holds no pointers (links are node indices).
unsafe impl Pod for StackState {}

/// A stack request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StackOp {
    Push(u64),
    Pop,
}

/// The recycling stack and the buffers of a pass; only the lock holder touches them.
#[derive(Debug, Default)]
struct Nodes {
    /// Free nodes.
    free: FreeNodes,
    /// Nodes written by this pass (to write back).
    fresh: Vec<u32>,
    /// Nodes popped by this pass (free once the pass is durable).
    popped: Vec<u32>,
    /// Indices into the pass's requests: unpaired pushes and pops (elimination).
    pushes: Vec<usize>,
    pops: Vec<usize>,
}

/// The sequential part: the words, the pool, the recycling stack.
struct Core<P: Persist> {
    store: Store<P>,
    pool: Pool,
    options: Options,
    nodes: UnsafeCell<Nodes>,
}

impl<P: Persist> Core<P> {
    /// The recycling stack and buffers.
    ///
    /// # Safety
    ///
    /// - the caller holds the stack's combining lock (or `&mut` of the stack), and drops the
    ///   reference before releasing it.
    #[allow(clippy::mut_from_ref)] // exclusive by the lock, as the contract says
    unsafe fn nodes(&self) -> &mut Nodes {
        // SAFETY:
        // - exclusive access: the caller holds the lock that every access takes.
        self.nodes.with_mut(|n| unsafe { &mut *n })
    }

    fn push(&self, n: &mut Nodes, st: &mut StackState, value: u64) -> Ret {
        let w = self.store.words();
        let Some(node) = n.free.pop() else {
            return ret_unit(Err(Full(value)));
        };
        self.pool.set(w, self.store.persist(), node, value, st.top);
        n.fresh.push(node);
        st.top = u64::from(node) + 1;
        st.len += 1;
        ret_unit(Ok(()))
    }

    fn pop(&self, n: &mut Nodes, st: &mut StackState) -> Ret {
        let w = self.store.words();
        let Some(node) = self.pool.node_of(st.top) else {
            return ret_value(None);
        };
        let value = self.pool.value(w, node);
        st.top = self.pool.next(w, node);
        st.len -= 1;
        n.popped.push(node);
        ret_value(Some(value))
    }
}

impl<P: Persist> Batch for Core<P> {
    type State = StackState;
    type Op = StackOp;
    type Ret = Ret;

    fn apply(&self, _me: usize, st: &mut StackState, reqs: &[(usize, StackOp)], rets: &mut [Ret]) {
        // SAFETY:
        // - `apply` runs on the lock holder; the reference is dropped before returning.
        let n = unsafe { self.nodes() };
        n.fresh.clear();
        n.popped.clear();
        n.pushes.clear();
        n.pops.clear();
        for (i, (_, op)) in reqs.iter().enumerate() {
            match op {
                StackOp::Push(_) => n.pushes.push(i),
                StackOp::Pop => n.pops.push(i),
            }
        }
        let paired = if self.options.elimination {
            n.pushes.len().min(n.pops.len())
        } else {
            0
        };
        // Elimination: pair the first `paired` pushes and pops; each pair is linearized as the
        // push immediately followed by the pop, at this pass's linearization point.
        for k in 0..paired {
            let (pu, po) = (n.pushes[k], n.pops[k]);
            let StackOp::Push(v) = reqs[pu].1 else {
                unreachable!("invariant: `pushes` indexes pushes")
            };
            rets[pu] = ret_unit(Ok(()));
            rets[po] = ret_value(Some(v));
        }
        // The rest in thread order (all pushes or all pops when elimination paired them).
        for (i, (_, op)) in reqs.iter().enumerate() {
            let eliminated =
                paired > 0 && (n.pushes[..paired].contains(&i) || n.pops[..paired].contains(&i));
            if eliminated {
                continue;
            }
            rets[i] = match *op {
                StackOp::Push(v) => self.push(n, st, v),
                StackOp::Pop => self.pop(n, st),
            };
        }
        // Every node this pass wrote, before the record (ordered by line 23's pfence).
        self.pool
            .persist_nodes(self.store.words(), self.store.persist(), &mut n.fresh);
    }

    fn published(&self, _me: usize, _st: &StackState) {
        if self.options.recycling {
            // SAFETY:
            // - `published` runs on the lock holder; the reference is dropped before returning.
            let n = unsafe { self.nodes() };
            // Popped top first: reversed order comes back out of the LIFO first.
            n.free.append(&mut n.popped);
        }
    }
}

/// A recoverable, blocking, linked stack of `u64` values with at most `capacity` values
/// (paper §5 PBstack), persisted through `P`.
///
/// Threads [`register`](Self::register) for a [`PBStackHandle`]. See the
/// [module docs](crate::structures) for modes and recovery, and [`Options`] for elimination and
/// recycling.
///
/// # Examples
///
/// ```
/// use pcomb::structures::PBStack;
///
/// let stack = PBStack::new(1000, 4)?;
/// std::thread::scope(|s| {
///     for t in 0..4 {
///         let stack = &stack;
///         s.spawn(move || {
///             let mut h = stack.register().expect("4 slots");
///             for i in 0..100 {
///                 h.push(t * 1000 + i).expect("room for 400");
///             }
///         });
///     }
/// });
/// let mut h = stack.register()?;
/// assert_eq!(h.len(), 400);
/// let mut n = 0;
/// while h.pop().is_some() {
///     n += 1;
/// }
/// assert_eq!(n, 400);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A handle cannot outlive its stack:
///
/// ```compile_fail
/// use pcomb::structures::PBStack;
/// let h = {
///     let s = PBStack::new(1, 1).unwrap();
///     s.register().unwrap()
/// };
/// ```
pub struct PBStack<P: Persist = NoPersist> {
    core: Core<P>,
    inst: Instance<StackState, StackOp, Ret>,
    slots: Slots,
    capacity: u32,
}

// SAFETY:
// - `core.nodes` is only accessed by the holder of `inst`'s lock, or through `&mut self`;
// - everything else is `Send + Sync` (atomics, `Store`, `Instance`, `Slots`).
unsafe impl<P: Persist> Send for PBStack<P> {}
// SAFETY: as for `Send`.
unsafe impl<P: Persist> Sync for PBStack<P> {}

impl<P: Persist> fmt::Debug for PBStack<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PBStack")
            .field("capacity", &self.capacity)
            .field("options", &self.core.options)
            .field("inst", &self.inst)
            .finish_non_exhaustive()
    }
}

structure_api!(
    PBStack,
    PBStackHandle,
    "stack",
    "up to `capacity` values",
    store core.store,
    nodes: per_thread false, extra 0, instances StackInstance
);

impl<P: Persist> PBStack<P> {
    fn parts(&self) -> Parts<'_> {
        Parts {
            slots: &self.slots,
            options: self.core.options,
            capacity: self.capacity,
            threads: self.inst.threads(),
        }
    }

    fn into_store(self) -> Store<P> {
        self.core.store
    }

    fn create_in(store: Store<P>, capacity: u32, max_threads: usize, o: Options) -> Built<Self> {
        let stack = Self::assemble(store, capacity, max_threads, o);
        stack
            .inst
            .init(stack.core.store.words(), &StackState::default());
        // The block `build` allocated: `total_words` words.
        let total = stack.core.store.words().len();
        let head = shared::header(MAGIC, max_threads, capacity, total, o);
        stack.core.store.init_structure(&head);
        // SAFETY:
        // - not shared yet (we own the only reference).
        let nodes = unsafe { stack.core.nodes() };
        nodes.free = FreeNodes::unused(0..capacity);
        Ok(stack)
    }

    fn assemble(store: Store<P>, capacity: u32, max_threads: usize, options: Options) -> Self {
        let inst_at = LINE_WORDS;
        let pool_at = inst_at + StackInstance::words(max_threads);
        Self {
            core: Core {
                store,
                pool: Pool {
                    at: pool_at,
                    nodes: capacity,
                },
                options,
                nodes: UnsafeCell::new(Nodes::default()),
            },
            inst: Instance::new(inst_at, max_threads),
            slots: Slots::new(max_threads),
            capacity,
        }
    }

    /// Reopens the stack at `region`'s root after a restart or crash: the values are those of
    /// the durable `top`, the free nodes every other node, and each thread's interrupted
    /// operation can then be recovered (`recover_push` / `recover_pop` on a handle from
    /// [`register_as`](Self::register_as)).
    ///
    /// # Errors
    ///
    /// [`CombBuildError::LayoutMismatch`] if the root is missing, is not a `PBStack`, its header is
    /// corrupt, or its persisted list is malformed (a cycle, a link out of the pool, a length
    /// that does not match); [`CombBuildError::Region`] if the region refuses an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem::Region, structures::PBStack, CombBuildError};
    /// let err = PBStack::open(Region::anonymous(1, 1 << 16)?).unwrap_err();
    /// assert!(matches!(err, CombBuildError::LayoutMismatch { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(region: Region<P>) -> Result<Self, CombBuildError> {
        let o = open_header(region, MAGIC, KIND, Self::total_words)?;
        let mismatch = |detail| CombBuildError::LayoutMismatch { kind: KIND, detail };
        let stack = Self::assemble(o.store, o.capacity, o.threads, o.options);
        if !stack.inst.valid(stack.core.store.words()) {
            return Err(mismatch("a Deactivate flag is not 0 or 1 (corrupt)"));
        }
        let free = stack
            .free_nodes()
            .map_err(|_| mismatch("the persisted list is malformed"))?;
        // SAFETY:
        // - not shared yet (we own the only reference).
        unsafe { stack.core.nodes() }.free = FreeNodes::from_list(free);
        Ok(stack)
    }

    /// Walks the list from the durable `top`: which nodes are on it, or why it is malformed.
    fn on_list(&self) -> Result<Vec<bool>, String> {
        let w = self.core.store.words();
        let st = self.inst.state_now(w);
        walk_stack(w, &self.core.pool, st.top, st.len)
    }

    /// Every node not on the list from the durable `top`, highest index first (so that the
    /// lowest is handed out first), or why the list is malformed.
    fn free_nodes(&self) -> Result<Vec<u32>, String> {
        let on_list = self.on_list()?;
        Ok((0..self.capacity)
            .rev()
            .filter(|&i| !on_list[i as usize])
            .collect())
    }

    /// Checks the structure (no handle may be alive: it takes `&mut self`): the list from `top`
    /// is well formed and as long as the recorded length, the free nodes are distinct and off
    /// the list, and (with recycling on) every node is on the list or free. Meant for tests and
    /// for checking a recovered stack.
    ///
    /// # Errors
    ///
    /// [`AuditError`] describing the first violation found.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut stack = pcomb::structures::PBStack::new(4, 1)?;
    /// let mut h = stack.register()?;
    /// h.push(1)?;
    /// h.pop();
    /// drop(h);
    /// stack.audit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn audit(&mut self) -> Result<(), AuditError> {
        let on_list = self.on_list().map_err(AuditError)?;
        // SAFETY:
        // - `&mut self`: no handle, hence no combiner, is alive.
        let nodes = unsafe { self.core.nodes() };
        audit_free(&on_list, nodes.free.iter(), self.core.options.recycling)
    }
}

stack_handle! {
    /// A registered thread's access to a [`PBStack`]; dropping it frees the thread id.
    ///
    /// Its sequence number counts this thread id's operations: the next push or pop is number
    /// [`seq`](Self::seq)` + 1`. For detectability, persist `(operation, seq() + 1)` before each
    /// call and, after a crash, pass them to [`recover_push`](Self::recover_push) /
    /// [`recover_pop`](Self::recover_pop).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(4, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?;
    /// h.push(2)?;
    /// assert_eq!(h.pop(), Some(2));
    /// assert_eq!(h.seq(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    PBStackHandle for PBStack, op StackOp
}

impl<P: Persist> PBStackHandle<'_, P> {
    /// Pushes `value`; returns once the push is durable (persistent mode).
    ///
    /// # Errors
    ///
    /// [`Full`] with `value` if the stack holds `capacity` values (with recycling off: if every
    /// node was handed out since the stack was created or opened).
    ///
    /// # Panics
    ///
    /// If the stack is poisoned (a combining pass panicked: an internal bug).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(1, 1)?;
    /// let mut h = s.register()?;
    /// assert_eq!(h.push(1), Ok(()));
    /// assert!(h.push(2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, value: u64) -> Result<(), Full> {
        self.try_push(value).unwrap_or_else(|e| poisoned(e))
    }

    /// Pops the top value (`None` if empty); returns once the pop is durable.
    ///
    /// # Panics
    ///
    /// If the stack is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// assert_eq!(h.pop(), None);
    /// h.push(4)?;
    /// assert_eq!(h.pop(), Some(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pop(&mut self) -> Option<u64> {
        self.try_pop().unwrap_or_else(|e| poisoned(e))
    }

    /// The number of values (a snapshot of the durable state).
    ///
    /// # Panics
    ///
    /// If the stack is poisoned.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// h.push(4)?;
    /// assert_eq!(h.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&mut self) -> usize {
        self.try_len().unwrap_or_else(|e| poisoned(e))
    }

    /// Whether the stack is empty (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(2, 1)?;
    /// assert!(s.register()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Recovers this thread's push of `value` with sequence number `seq`, interrupted by a
    /// crash (Algorithm 1 `Recover`): whether it had taken effect, and its response. Call it at
    /// most once per crash, before the thread's next operation.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBStack, Recovered};
    /// let s = PBStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?; // seq 1
    /// assert_eq!(h.recover_push(1, 1), Recovered::Applied(Ok(())));
    /// assert_eq!(h.recover_push(2, 2), Recovered::Reexecuted(Ok(())));
    /// assert_eq!(h.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_push(&mut self, value: u64, seq: u64) -> Recovered<Result<(), Full>> {
        self.try_recover_push(value, seq)
            .unwrap_or_else(|e| poisoned(e))
    }

    /// Recovers this thread's pop with sequence number `seq` (see
    /// [`recover_push`](Self::recover_push)).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBStack, Recovered};
    /// let s = PBStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?; // seq 1
    /// assert_eq!(h.recover_pop(2), Recovered::Reexecuted(Some(1)));
    /// assert_eq!(h.recover_pop(2), Recovered::Applied(Some(1)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_pop(&mut self, seq: u64) -> Recovered<Option<u64>> {
        self.try_recover_pop(seq).unwrap_or_else(|e| poisoned(e))
    }

    /// [`push`](Self::push) that returns nr-core's [`Poisoned`] instead of panicking when the
    /// stack is poisoned (as [`PBCombHandle::try_execute_mut`](crate::PBCombHandle::try_execute_mut)).
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked; otherwise the push's own answer.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(1, 1)?;
    /// assert_eq!(s.register()?.try_push(1), Ok(Ok(())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_push(&mut self, value: u64) -> Result<Result<(), Full>, Poisoned> {
        self.run(StackOp::Push(value), unit_of)
    }

    /// [`pop`](Self::pop) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(1, 1)?;
    /// assert_eq!(s.register()?.try_pop(), Ok(None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_pop(&mut self) -> Result<Option<u64>, Poisoned> {
        self.run(StackOp::Pop, value_of)
    }

    /// [`len`](Self::len) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PBStack::new(1, 1)?;
    /// assert_eq!(s.register()?.try_len(), Ok(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_len(&mut self) -> Result<usize, Poisoned> {
        let s = self.stack;
        let (w, persist) = (s.core.store.words(), s.core.store.persist());
        Ok(s.inst.read(w, persist, &s.core, self.seat.id)?.len as usize)
    }

    /// [`recover_push`](Self::recover_push) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBStack, Recovered};
    /// let s = PBStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// assert_eq!(h.try_recover_push(1, 1), Ok(Recovered::Reexecuted(Ok(()))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover_push(
        &mut self,
        value: u64,
        seq: u64,
    ) -> Result<Recovered<Result<(), Full>>, Poisoned> {
        self.recover(StackOp::Push(value), seq, unit_of)
    }

    /// [`recover_pop`](Self::recover_pop) that returns [`Poisoned`] instead of panicking.
    ///
    /// # Errors
    ///
    /// [`Poisoned`] if a combining pass panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PBStack, Recovered};
    /// let s = PBStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// assert_eq!(h.try_recover_pop(1), Ok(Recovered::Reexecuted(None)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recover_pop(&mut self, seq: u64) -> Result<Recovered<Option<u64>>, Poisoned> {
        self.recover(StackOp::Pop, seq, value_of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pass of [push 1, pop, push 2] without elimination: the pop's node must not be
    /// reused by the later push of the same pass (the durable `top` may still name it until
    /// the pass is durable).
    #[test]
    fn a_pass_never_reuses_the_node_it_popped() {
        let opts = Options {
            elimination: false,
            recycling: true,
        };
        let stack = PBStack::with_options(4, 3, opts).expect("valid");
        let mut st = StackState::default();
        let reqs = [
            (0, StackOp::Push(1)),
            (1, StackOp::Pop),
            (2, StackOp::Push(2)),
        ];
        let mut rets = [Ret::default(); 3];
        stack.core.apply(0, &mut st, &reqs, &mut rets);
        assert_eq!(value_of(rets[1]), Some(1));
        let w = stack.core.store.words();
        let top = stack.core.pool.node_of(st.top).expect("one value");
        assert_eq!(stack.core.pool.value(w, top), 2);
        // SAFETY:
        // - single-threaded test, no handle, no combiner.
        let n = unsafe { stack.core.nodes() };
        assert_eq!(n.popped.len(), 1);
        assert_ne!(
            n.popped[0], top,
            "the popped node was reused in its own pass"
        );
        assert!(
            !n.free.contains(n.popped[0]),
            "freed before the pass is durable"
        );
        stack.core.published(0, &st);
        // SAFETY: as above.
        assert!(unsafe { stack.core.nodes() }.free.contains(0));
    }

    /// Elimination pairs a push with a pop of the same pass: no node is written.
    #[test]
    fn elimination_writes_no_node() {
        let stack = PBStack::new(4, 2).expect("valid");
        let mut st = StackState::default();
        let reqs = [(0, StackOp::Pop), (1, StackOp::Push(9))];
        let mut rets = [Ret::default(); 2];
        stack.core.apply(0, &mut st, &reqs, &mut rets);
        assert_eq!(value_of(rets[0]), Some(9));
        assert_eq!(unit_of(rets[1]), Ok(()));
        assert_eq!(st, StackState::default());
        // SAFETY: single-threaded test.
        assert!(unsafe { stack.core.nodes() }.fresh.is_empty());
    }
}
