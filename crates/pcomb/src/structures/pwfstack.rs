//! PWFstack (paper §5): the linked stack of [`PBStack`](super::PBStack) on the wait-free
//! combining of PWFcomb ([`WfInstance`]).
//!
//! Every thread combines on its own copy of the state (`top`, the length) and installs it with
//! the emulated SC on `S`. A push needs a node that no concurrent attempt writes, so nodes are
//! per thread, as in the paper's memory management (§5): the pool is split into one chunk of
//! `capacity` nodes per thread, each thread has its own free list, and an attempt of thread `p`
//! takes nodes only from `p`'s list. Nodes taken by an attempt whose SC fails go back to the
//! list; nodes of an installed attempt are in the stack.
//!
//! Recycling (the paper's scheme: the thread whose install removed a node keeps it): the nodes
//! an install popped join the installing thread's free list once that install is durable
//! (after line 33), so a crash never finds the durable `top` reaching a reused node. A stale
//! attempt of another thread may still read such a node while it is reused; it never installs
//! what it computed: its LL precedes the install that popped the node, so its SC (a CAS on the
//! latest `S`) fails. Node words are read with `Acquire` and written with `Release`, so such an
//! attempt usually fails earlier, at its validation (line 26); `apply` never panics or loops
//! on what it read (one node per pop). Only the thread owning a free list writes its nodes, so
//! no two attempts ever write the same node.
//!
//! Consequence of per-thread free lists: besides "the stack holds `capacity` values", a push
//! also returns [`Full`] when the thread that combines it has no free node left (its chunk is
//! used up and the nodes it popped do not make up for the pushes it served). With recycling off
//! nodes come back only at [`open`](PWFStack::open), which gives every node off the durable list
//! back to the thread whose chunk holds it.

use core::fmt;

use super::shared::{
    self, audit_free, open_header, stack_handle, structure_api, walk_stack, Built, Parts, Place,
    Seat,
};
use super::store::{FreeNodes, Link, Pool, Store};
use super::{
    check_threads, poisoned, ret_unit, ret_value, unit_of, value_of, AuditError, Full, Options, Ret,
};
use crate::engine::pwf::{WfBatch, WfInstance};
use crate::error::{CombBuildError, CombRegisterError};
use crate::layout::LINE_WORDS;
use crate::slots::Slots;
use crate::sync::UnsafeCell;
use crate::Recovered;
use pmem::{NoPersist, Persist, Pod, Region};

const MAGIC: u64 = pmem::kinds::PWFSTACK_TAG;
const KIND: &str = "PWFStack";

/// `st` of a PWFstack record: the top node's link and the number of values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct StackState {
    top: Link,
    len: u64,
}

// SAFETY:
// - `repr(C)` with two `u64` fields: no padding, every bit pattern valid;
// - it holds no pointers (links are node indices).
unsafe impl Pod for StackState {}

/// A request: `[PUSH, value]` or `[POP, 0]`.
type WfOp = [u64; 2];
const POP: u64 = 0;
const PUSH: u64 = 1;

type StackInstance = WfInstance<StackState, WfOp, Ret>;

/// One thread's nodes and attempt buffers; only that thread touches them.
#[derive(Debug, Default)]
struct Local {
    /// Free nodes of this thread.
    free: FreeNodes,
    /// Nodes the current attempt took from `free` (back to `free` if it is discarded).
    taken: Vec<u32>,
    /// Nodes the current attempt popped (free once its install is durable).
    popped: Vec<u32>,
    /// Indices into the attempt's requests: pushes and pops (elimination).
    pushes: Vec<usize>,
    pops: Vec<usize>,
}

struct Core<P: Persist> {
    store: Store<P>,
    pool: Pool,
    options: Options,
    capacity: u32,
    locals: Box<[crossbeam_utils::CachePadded<UnsafeCell<Local>>]>,
}

impl<P: Persist> Core<P> {
    /// Thread `me`'s nodes and buffers.
    ///
    /// # Safety
    ///
    /// - the caller is the thread holding slot `me` (or has `&mut` of the stack), and drops
    ///   the reference before the operation returns.
    #[allow(clippy::mut_from_ref)] // exclusive by slot ownership, as the contract says
    unsafe fn local(&self, me: usize) -> &mut Local {
        // SAFETY:
        // - exclusive access: only the owner of slot `me` calls this, one operation at a time.
        self.locals[me].with_mut(|l| unsafe { &mut *l })
    }

    fn push(&self, l: &mut Local, st: &mut StackState, value: u64) -> Ret {
        if st.len >= u64::from(self.capacity) {
            return ret_unit(Err(Full(value)));
        }
        let Some(node) = l.free.pop() else {
            return ret_unit(Err(Full(value)));
        };
        l.taken.push(node);
        self.pool.set_published(
            self.store.words(),
            self.store.persist(),
            node,
            value,
            st.top,
        );
        st.top = u64::from(node) + 1;
        st.len += 1;
        ret_unit(Ok(()))
    }

    fn pop(&self, l: &mut Local, st: &mut StackState) -> Ret {
        // A torn or stale copy may name anything: stay in range, never panic (the attempt's
        // validation then fails).
        let Some(node) = self.pool.node_of(st.top) else {
            return ret_value(None);
        };
        let (value, next) = self.pool.read_acquire(self.store.words(), node);
        st.top = next;
        st.len = st.len.saturating_sub(1);
        l.popped.push(node);
        ret_value(Some(value))
    }
}

impl<P: Persist> WfBatch for Core<P> {
    type State = StackState;
    type Op = WfOp;
    type Ret = Ret;

    fn apply(&self, me: usize, st: &mut StackState, reqs: &[(usize, WfOp)], rets: &mut [Ret]) {
        // SAFETY:
        // - `apply` runs on the thread holding slot `me`; dropped before returning.
        let l = unsafe { self.local(me) };
        // A discarded attempt's nodes are free again (in the order they were taken).
        while let Some(n) = l.taken.pop() {
            l.free.push(n);
        }
        l.popped.clear();
        l.pushes.clear();
        l.pops.clear();
        for (i, (_, op)) in reqs.iter().enumerate() {
            if op[0] == PUSH {
                l.pushes.push(i);
            } else {
                l.pops.push(i);
            }
        }
        let paired = if self.options.elimination {
            l.pushes.len().min(l.pops.len())
        } else {
            0
        };
        // Elimination, as in `PBStack`: each pair is the push immediately followed by the pop.
        for k in 0..paired {
            let (pu, po) = (l.pushes[k], l.pops[k]);
            rets[pu] = ret_unit(Ok(()));
            rets[po] = ret_value(Some(reqs[pu].1[1]));
        }
        for (i, (_, op)) in reqs.iter().enumerate() {
            if paired > 0 && (l.pushes[..paired].contains(&i) || l.pops[..paired].contains(&i)) {
                continue;
            }
            rets[i] = if op[0] == PUSH {
                self.push(l, st, op[1])
            } else {
                self.pop(l, st)
            };
        }
        // The nodes this attempt wrote, before the record (ordered by line 29's pfence).
        let mut fresh = l.taken.clone();
        self.pool
            .persist_nodes(self.store.words(), self.store.persist(), &mut fresh);
    }

    fn installed(&self, me: usize, _st: &StackState) {
        // SAFETY:
        // - runs on the thread holding slot `me`; dropped before returning.
        let l = unsafe { self.local(me) };
        l.taken.clear();
        if self.options.recycling {
            // The durable `top` no longer reaches them (line 33 is behind us).
            while let Some(n) = l.popped.pop() {
                l.free.push(n);
            }
        }
        l.popped.clear();
    }
}

/// A recoverable, **wait-free**, linked stack of `u64` values with at most `capacity` values
/// (paper §5 PWFstack), persisted through `P`.
///
/// Same use as [`PBStack`](super::PBStack): threads [`register`](Self::register) for a
/// [`PWFStackHandle`]; every push and pop completes in a bounded number of its own steps (at
/// most two combining attempts). See the [module docs](crate::structures) for modes and
/// recovery; node ownership (and when a push can return [`Full`] early) is described in
/// [`push`](PWFStackHandle::push).
///
/// # Examples
///
/// ```
/// use pcomb::structures::PWFStack;
///
/// let stack = PWFStack::new(1000, 4)?;
/// std::thread::scope(|s| {
///     for t in 0..4 {
///         let stack = &stack;
///         s.spawn(move || {
///             let mut h = stack.register().expect("4 slots");
///             for i in 0..100 {
///                 h.push(t * 1000 + i).expect("room");
///                 h.pop().expect("at least our own value");
///             }
///             h.push(t).expect("room");
///         });
///     }
/// });
/// assert_eq!(stack.register()?.len(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PWFStack<P: Persist = NoPersist> {
    core: Core<P>,
    inst: StackInstance,
    slots: Slots,
}

// SAFETY:
// - `core.locals[p]` is only accessed by the holder of slot `p` (one operation at a time, the
//   handle is `&mut`), or through `&mut self`;
// - everything else is `Send + Sync` (atomics, `Store`, `WfInstance`, `Slots`).
unsafe impl<P: Persist> Send for PWFStack<P> {}
// SAFETY: as for `Send`.
unsafe impl<P: Persist> Sync for PWFStack<P> {}

impl<P: Persist> fmt::Debug for PWFStack<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PWFStack")
            .field("capacity", &self.core.capacity)
            .field("options", &self.core.options)
            .finish_non_exhaustive()
    }
}

structure_api!(
    PWFStack,
    PWFStackHandle,
    "stack",
    "`capacity` nodes per thread (a chunk each, see the type's docs)",
    store core.store,
    nodes: per_thread true, extra 0, instances StackInstance
);

impl<P: Persist> PWFStack<P> {
    fn parts(&self) -> Parts<'_> {
        Parts {
            slots: &self.slots,
            options: self.core.options,
            capacity: self.core.capacity,
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
        stack.give_every_thread_its_chunk();
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
                    nodes: (capacity as usize * max_threads) as u32,
                },
                options,
                capacity,
                locals: (0..max_threads)
                    .map(|_| crossbeam_utils::CachePadded::new(UnsafeCell::new(Local::default())))
                    .collect(),
            },
            inst: WfInstance::new(inst_at, max_threads),
            slots: Slots::new(max_threads),
        }
    }

    /// A new stack: every thread's chunk is free, never used (nothing per node is written).
    /// Single-threaded use.
    fn give_every_thread_its_chunk(&self) {
        let chunk = self.core.capacity;
        for t in 0..self.inst.threads() {
            // SAFETY:
            // - not shared (creating), so no thread holds a slot.
            let l = unsafe { self.core.local(t) };
            // In range: `nodes` checked `capacity * max_threads` fits a `u32`.
            let start = t as u32 * chunk;
            l.free = FreeNodes::unused(start..start + chunk);
        }
    }

    /// Every node not `on_list` goes to the free list of the thread whose chunk holds it,
    /// highest first (so the lowest is handed out first). Single-threaded use.
    fn give_back_free(&self, on_list: &[bool]) {
        let chunk = self.core.capacity as usize;
        for t in 0..self.inst.threads() {
            // SAFETY:
            // - not shared (opening), so no thread holds a slot.
            let l = unsafe { self.core.local(t) };
            l.free = FreeNodes::from_list(
                (t * chunk..(t + 1) * chunk)
                    .rev()
                    .filter(|&n| !on_list[n])
                    .map(|n| n as u32)
                    .collect(),
            );
        }
    }

    /// Reopens the stack at `region`'s root after a restart or crash: the values are those of
    /// the durable `top`, every other node is free again, and each thread's interrupted
    /// operation can then be recovered.
    ///
    /// # Errors
    ///
    /// [`CombBuildError::LayoutMismatch`] if the root is missing, is not a `PWFStack`, its header
    /// is corrupt, or its persisted list is malformed; [`CombBuildError::Region`] if the region
    /// refuses an access.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{pmem::Region, structures::PWFStack, CombBuildError};
    /// let err = PWFStack::open(Region::anonymous(1, 1 << 16)?).unwrap_err();
    /// assert!(matches!(err, CombBuildError::LayoutMismatch { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(region: Region<P>) -> Result<Self, CombBuildError> {
        let o = open_header(region, MAGIC, KIND, Self::total_words)?;
        let mismatch = |detail| CombBuildError::LayoutMismatch { kind: KIND, detail };
        let stack = Self::assemble(o.store, o.capacity, o.threads, o.options);
        if !stack
            .inst
            .valid(stack.core.store.words(), stack.core.store.persist())
        {
            return Err(mismatch("S names no record (corrupt)"));
        }
        let on_list = stack
            .on_list()
            .map_err(|_| mismatch("the persisted list is malformed"))?;
        stack.give_back_free(&on_list);
        Ok(stack)
    }

    /// Walks the list from the current `top`: which nodes are on it, or why it is malformed.
    fn on_list(&self) -> Result<Vec<bool>, String> {
        let w = self.core.store.words();
        let st = self.inst.state_now(w);
        walk_stack(w, &self.core.pool, st.top, st.len)
    }

    /// Checks the structure (no handle may be alive): the list from `top` is well formed and
    /// as long as the recorded length, the nodes the threads hold free are distinct and off
    /// the list, and (with recycling on) every node is on the list or free. For tests and for checking a recovered stack.
    ///
    /// # Errors
    ///
    /// [`AuditError`] describing the first violation found.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut s = pcomb::structures::PWFStack::new(4, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?;
    /// h.pop();
    /// drop(h);
    /// s.audit()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn audit(&mut self) -> Result<(), AuditError> {
        let on_list = self.on_list().map_err(AuditError)?;
        let free = (0..self.inst.threads()).flat_map(|t| {
            // SAFETY:
            // - `&mut self`: no handle, hence no operation, is alive.
            let l = unsafe { self.core.local(t) };
            // Nodes taken by a discarded last attempt are free too.
            l.free.iter().chain(l.taken.iter().copied())
        });
        audit_free(&on_list, free, self.core.options.recycling)
    }
}

stack_handle! {
    /// A registered thread's access to a [`PWFStack`]; dropping it frees the thread id.
    ///
    /// Sequence numbers and recovery work as for [`PBStackHandle`](super::PBStackHandle).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PWFStack::new(4, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?;
    /// h.push(2)?;
    /// assert_eq!(h.pop(), Some(2));
    /// assert_eq!(h.seq(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    PWFStackHandle for PWFStack, op WfOp
}

/// The wait-free stack is never poisoned (no lock; a panicking attempt installs nothing): the
/// shared calls' `Poisoned` cannot occur.
impl<P: Persist> PWFStackHandle<'_, P> {
    /// Pushes `value` (wait-free); returns once the push is durable (persistent mode).
    ///
    /// # Errors
    ///
    /// [`Full`] with `value` if the stack holds `capacity` values, or if the thread whose
    /// attempt served this push had no free node: nodes belong to threads (a chunk of
    /// `capacity` each, plus the nodes their installs popped, with recycling on), so a thread
    /// that served many more pushes than pops can run out before the stack is full.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PWFStack::new(1, 1)?;
    /// let mut h = s.register()?;
    /// assert_eq!(h.push(1), Ok(()));
    /// assert!(h.push(2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, value: u64) -> Result<(), Full> {
        self.run([PUSH, value], unit_of)
            .unwrap_or_else(|e| poisoned(e))
    }

    /// Pops the top value (`None` if empty; wait-free); returns once the pop is durable.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PWFStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// assert_eq!(h.pop(), None);
    /// h.push(4)?;
    /// assert_eq!(h.pop(), Some(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pop(&mut self) -> Option<u64> {
        self.run([POP, 0], value_of).unwrap_or_else(|e| poisoned(e))
    }

    /// The number of values (a validated, persisted snapshot; lock-free).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PWFStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// h.push(4)?;
    /// assert_eq!(h.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&mut self) -> usize {
        let s = self.stack;
        let (w, persist) = (s.core.store.words(), s.core.store.persist());
        s.inst.read(w, persist).len as usize
    }

    /// Whether the stack is empty (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = pcomb::structures::PWFStack::new(2, 1)?;
    /// assert!(s.register()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Recovers this thread's push of `value` with sequence number `seq`, interrupted by a
    /// crash (Algorithm 3 `Recover`): whether it had taken effect, and its response.
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PWFStack, Recovered};
    /// let s = PWFStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?; // seq 1
    /// assert_eq!(h.recover_push(1, 1), Recovered::Applied(Ok(())));
    /// assert_eq!(h.recover_push(2, 2), Recovered::Reexecuted(Ok(())));
    /// assert_eq!(h.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_push(&mut self, value: u64, seq: u64) -> Recovered<Result<(), Full>> {
        self.recover([PUSH, value], seq, unit_of)
            .unwrap_or_else(|e| poisoned(e))
    }

    /// Recovers this thread's pop with sequence number `seq` (see
    /// [`recover_push`](Self::recover_push)).
    ///
    /// # Examples
    ///
    /// ```
    /// use pcomb::{structures::PWFStack, Recovered};
    /// let s = PWFStack::new(2, 1)?;
    /// let mut h = s.register()?;
    /// h.push(1)?; // seq 1
    /// assert_eq!(h.recover_pop(2), Recovered::Reexecuted(Some(1)));
    /// assert_eq!(h.recover_pop(2), Recovered::Applied(Some(1)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recover_pop(&mut self, seq: u64) -> Recovered<Option<u64>> {
        self.recover([POP, 0], seq, value_of)
            .unwrap_or_else(|e| poisoned(e))
    }
}
