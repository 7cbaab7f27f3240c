//! A lock-free skip list (Herlihy and Shavit, *The Art of Multiprocessor Programming*, §14.4,
//! after Fraser), written once over an atomic [`Flavor`].
//!
//! Every node has a tower of `height` forward pointers (1 to [`MAX_LEVEL`], drawn with
//! probability 1/4 per extra level). Level 0 is a Harris-Michael list and decides membership:
//! an insert is linearized at the CAS that links the node at level 0, a remove at the CAS that
//! marks the node's level-0 pointer; the upper levels are shortcuts, linked after level 0
//! (bottom-up) and marked before it (top-down). `find` unlinks every marked node it meets.
//!
//! **Reclamation.** With a garbage collector (the book's setting) a removed node may still be
//! linked at an upper level by an insert that is building its tower. Epoch reclamation needs
//! the node unreachable when it is retired, so the inserter and the remover shake hands on a
//! DRAM-only counter (`state`): each adds 1 when it is done with the node (the inserter when its
//! tower is complete or abandoned, the remover when its level-0 mark succeeded), and the one
//! that comes second unlinks the node from every level (`unlink_all`) and retires it. After
//! both are done nobody links the node again, and `unlink_all` leaves it on no level (see its
//! comment), so no new reader can reach it when it is retired.
//!
//! **Persistence** comes from the flavor, as for the list, at level 0: with Mirror every
//! level-0 CAS is durable before it is visible, and a new node is durable before the CAS that
//! links it. The upper levels are shortcuts with DRAM semantics: 8-byte words ([`VAtomic`]) in
//! every flavor, read and CASed by [`Volatile`]'s plain operations, never written back nor
//! fenced after the node is published (their first values go out once with the node's bytes,
//! which recovery does not read; issue 23, lever L4, and then its second skip-list lever: no
//! Mirror pair for them).
//! Recovery ([`SkipList::recover`]) therefore traces level 0 only, unlinks the nodes marked
//! at level 0, rebuilds every upper level from level 0 and the heights, resets the handshake,
//! and rebuilds the free space from what is linked after that, so nothing a crash left behind
//! stays allocated.
//!
//! **Layout.** A node's block holds its header and level 0 ([`SkipNode`]), then only the upper
//! levels it uses, in the smallest size class that holds them (issue 23: in Mirror a node of
//! height 1 to 3 takes a 64-byte block, one cache line, instead of a 224-byte tower of
//! `MAX_LEVEL` levels). So a `&SkipNode` covers the header and level 0 only; the levels above
//! are reached through a `Tower`, a pointer derived from the heap's base (never from a
//! `&SkipNode`, whose borrow does not extend past level 0). Recovery reads a node's height
//! and refuses a node whose height does not fit its block ([`HeapError::BadPointer`]). Files
//! of format 2 (every node in a 224-byte block, 16-byte upper levels) are read: level 0 is
//! where it was, the upper levels are rebuilt whatever their bytes, and a block goes back to
//! the class of its chunk.

use crate::error::{HeapAllocError, HeapError};
use crate::flavor::{Flavor, VAtomic, Volatile};
use crate::heap::{Base, Guard, Heap, Object, Space, Trace, Tracer};
use crate::patomic::PConst;
use crate::sync::{thread_random, AtomicWord, Ordering};
use crate::word::PPtr;
use core::marker::PhantomData;
use core::mem::size_of;
use pmem::{NoPersist, Persist, Region};

/// Levels of the tallest tower (with 1/4 per extra level: enough for about 4^12 = 16M keys).
pub const MAX_LEVEL: usize = 12;

/// Root slot a [`SkipList`] uses.
pub const SKIP_ROOT_SLOT: usize = 2;

/// Handshake value once the inserter is done with a node (the remover adds one more).
const TOWER_DONE: u64 = 1;

/// Level 0's forward pointer: the flavor's atomic (durable in Mirror and Izraelevitz).
type Link<F> = <F as Flavor>::Atomic<PPtr<SkipNode<F>>>;
/// An upper level's forward pointer: a DRAM-semantics word in every flavor (see the module
/// docs), used through [`Volatile`]'s operations.
type UpLink<F> = VAtomic<PPtr<SkipNode<F>>>;

/// A skip-list node's header and level 0: an immutable key and height, the handshake counter
/// (DRAM semantics: not written back after the node is published, reset by recovery), the flavor's zero [`Flavor::Pad`]
/// (in Mirror the 8 bytes before the 16-aligned link, written as zeros) and the level-0
/// forward pointer. Levels 1 to `height - 1` follow it in the same block, 8 bytes each (the
/// block is of the smallest class that holds them: [`block_size`](crate::block_size) of this
/// type is the block of a node of height 1).
#[repr(C)]
pub struct SkipNode<F: Flavor> {
    key: PConst<u64>,
    height: PConst<u64>,
    state: VAtomic<u64>,
    _pad: F::Pad,
    next: Link<F>,
}

// SAFETY: `PConst<u64>`s, an 8-byte atomic, the flavor's pad and a flavor atomic of a `PPtr`:
// any bits are valid, no drop glue, no Rust pointers, and the fields fill the type (checked
// below).
unsafe impl<F: Flavor> Object for SkipNode<F> {
    const FIELD_BYTES: usize = 2 * size_of::<PConst<u64>>()
        + size_of::<VAtomic<u64>>()
        + size_of::<F::Pad>()
        + size_of::<Link<F>>();
}

// SAFETY: a flavor atomic of a `PPtr`, an array of 8-byte atomics of `PPtr`s and the flavor's
// pad (which fills Mirror's 16-byte alignment), all fields.
unsafe impl<F: Flavor> Object for SkipRoot<F> {
    const FIELD_BYTES: usize =
        size_of::<Link<F>>() + size_of::<[UpLink<F>; MAX_LEVEL - 1]>() + size_of::<F::Pad>();
}

crate::heap::assert_padding_free!(SkipNode<F>, SkipRoot<F>);

impl<F: Flavor> SkipNode<F> {
    /// Levels in use, clamped to `1..=MAX_LEVEL` (a corrupt file may hold any height).
    fn levels(&self) -> usize {
        (self.height.get() as usize).clamp(1, MAX_LEVEL)
    }

    /// Bytes of a node of `height` levels (header, level 0 and the levels above).
    #[cfg(test)]
    fn used_len(height: usize) -> usize {
        size_of::<Self>() + (height - 1) * size_of::<UpLink<F>>()
    }
}

impl<F: Flavor> core::fmt::Debug for SkipNode<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SkipNode")
            .field("key", &self.key.get())
            .field("height", &self.height.get())
            .field("next", &F::peek(&self.next))
            .finish()
    }
}

impl<F: Flavor> Trace for SkipNode<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        // Level 0 only: the upper levels are DRAM-only and rebuilt by recovery (the file's
        // bytes there are whatever the node was published with). The height must still fit
        // the block (`tail` records a bad pointer otherwise): the node's upper levels are
        // read and written after recovery.
        if t.tail::<_, UpLink<F>>(self, self.levels() - 1).is_some() {
            t.visit(F::peek(&self.next).unmarked());
        }
    }
}

/// A tower of forward pointers: the head's (`MAX_LEVEL` levels) or a node's (its height),
/// as a pointer to level 0 with the upper levels following it. Derived from the heap's base
/// pointer or from the whole root, never from a `&SkipNode`, so it may address the levels past
/// the node's header.
struct Tower<'g, F: Flavor> {
    first: *const Link<F>,
    _g: PhantomData<&'g Link<F>>,
}

impl<F: Flavor> Clone for Tower<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: Flavor> Copy for Tower<'_, F> {}

impl<'g, F: Flavor> Tower<'g, F> {
    /// The head's tower.
    fn head(root: &'g SkipRoot<F>) -> Self {
        Self {
            // From the whole root (level 0 is its first field): its provenance covers every
            // level.
            first: (root as *const SkipRoot<F>).cast(),
            _g: PhantomData,
        }
    }

    /// The tower of node `p`, in the heap whose primary memory `base` starts. Computing it is
    /// safe (an address); [`at`](Self::at) states when it may be read.
    #[inline(always)]
    fn of<P: Persist>(base: Base<'g, P>, p: PPtr<SkipNode<F>>) -> Self {
        Self {
            first: base
                .primary()
                .wrapping_add(p.offset() as usize + core::mem::offset_of!(SkipNode<F>, next))
                .cast(),
            _g: PhantomData,
        }
    }

    /// Level 0 of the tower.
    ///
    /// # Safety
    ///
    /// The tower is the head's, or a node's that is live for `'g` (as for [`Base::get`]).
    #[inline(always)]
    unsafe fn at(self, level: usize) -> &'g Link<F> {
        debug_assert_eq!(level, 0);
        // SAFETY: by the contract, level 0 lies in the live root or node, derived from a
        // pointer whose provenance covers it, aligned; a flavor atomic: shared access only.
        unsafe { &*self.first }
    }

    /// Upper level `level` (>= 1) of the tower.
    ///
    /// # Safety
    ///
    /// - the tower is the head's, or a node's that is live for `'g` (as for [`Base::get`]);
    /// - `1 <= level` and `level` is below its height (`MAX_LEVEL` for the head,
    ///   [`SkipNode::levels`] for a node: its block holds that many levels, allocated so or
    ///   checked by recovery).
    #[inline(always)]
    unsafe fn up(self, level: usize) -> &'g UpLink<F> {
        debug_assert!(level >= 1);
        let at = self
            .first
            .cast::<u8>()
            .wrapping_add(size_of::<Link<F>>() + (level - 1) * size_of::<UpLink<F>>());
        // SAFETY: by the contract, level `level` lies in the live root or node block right
        // after level 0 (`SkipRoot`'s `up`, or the node's tail written by `alloc_with_tail`),
        // derived from a pointer whose provenance covers it, 8-aligned (level 0's size is a
        // multiple of 8); an 8-byte atomic: shared access only.
        unsafe { &*at.cast::<UpLink<F>>() }
    }

    /// Level `level`'s pointer, read through `base` (the search loops).
    ///
    /// # Safety
    ///
    /// As [`up`](Self::up) for `level >= 1`, as [`at`](Self::at) for level 0.
    #[inline(always)]
    unsafe fn load<P: Persist>(self, level: usize, base: Base<'_, P>) -> PPtr<SkipNode<F>> {
        if level == 0 {
            // SAFETY: the caller's contract.
            F::load_from(unsafe { self.at(0) }, base)
        } else {
            // SAFETY: the caller's contract.
            Volatile::load_from(unsafe { self.up(level) }, base)
        }
    }

    /// A CAS of level `level`'s pointer: durable (the flavor's) at level 0, a plain one above.
    ///
    /// # Safety
    ///
    /// As [`load`](Self::load).
    #[inline(always)]
    unsafe fn cas<P: Persist>(
        self,
        level: usize,
        current: PPtr<SkipNode<F>>,
        new: PPtr<SkipNode<F>>,
        space: &Space<P>,
    ) -> Result<PPtr<SkipNode<F>>, PPtr<SkipNode<F>>> {
        if level == 0 {
            // SAFETY: the caller's contract.
            F::compare_exchange(unsafe { self.at(0) }, current, new, space)
        } else {
            // SAFETY: the caller's contract.
            Volatile::compare_exchange(unsafe { self.up(level) }, current, new, space)
        }
    }
}

/// The root object of a [`SkipList`]: the head tower (level 0, then the upper levels, laid out
/// as a node's from its level 0 on).
#[repr(C)]
pub struct SkipRoot<F: Flavor> {
    head: Link<F>,
    up: [UpLink<F>; MAX_LEVEL - 1],
    _pad: F::Pad,
}

impl<F: Flavor> Trace for SkipRoot<F> {
    fn trace(&self, t: &mut Tracer<'_>) {
        // Level 0 only (see `SkipNode`'s `trace`).
        t.visit(F::peek(&self.head).unmarked());
    }
}

impl<F: Flavor> core::fmt::Debug for SkipRoot<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SkipRoot").finish_non_exhaustive()
    }
}

/// A lock-free sorted set of `u64` keys (skip list) in flavor `F`.
///
/// # Examples
///
/// ```
/// use mirror_atomic::{flavor::Mirror, SkipList};
/// let set = SkipList::<Mirror, _>::anonymous(1 << 20)?;
/// for k in [5, 1, 3] {
///     assert!(set.insert(k)?);
/// }
/// assert!(!set.insert(3)?);
/// assert!(set.remove(1));
/// assert!(set.contains(5) && !set.contains(1));
/// assert_eq!(set.snapshot(), (vec![3, 5], true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SkipList<F: Flavor, P: Persist> {
    heap: Heap<F, P>,
    root: PPtr<SkipRoot<F>>,
    /// Levels in use (DRAM only, a hint): every tower is at most this tall, so searches start
    /// here instead of at `MAX_LEVEL`. Only grows; recovery recomputes it.
    top: AtomicWord,
}

impl<F: Flavor, P: Persist> core::fmt::Debug for SkipList<F, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SkipList")
            .field("heap", &self.heap)
            .field("root", &self.root)
            .finish()
    }
}

/// Where `find` stopped at each level: the tower slot array of the predecessor (a node's or the
/// head's) and the first unmarked node with a key `>= key`.
struct Position<'g, F: Flavor> {
    preds: [Tower<'g, F>; MAX_LEVEL],
    succs: [PPtr<SkipNode<F>>; MAX_LEVEL],
    found: bool,
}

/// A tower height: 1, plus one with probability 1/4 each, at most `MAX_LEVEL`.
fn random_height() -> usize {
    let r = thread_random();
    // Two bits per level: a level is added while they are 00.
    let extra = ((r | (1 << 62)).trailing_zeros() / 2) as usize;
    (1 + extra).min(MAX_LEVEL)
}

impl<F: Flavor> SkipList<F, NoPersist> {
    /// An empty skip list on an anonymous (volatile) heap of `size` bytes.
    ///
    /// # Errors
    ///
    /// As [`SkipList::new`] and [`Heap::anonymous`].
    pub fn anonymous(size: u64) -> Result<Self, HeapError> {
        Self::new(Heap::anonymous(size)?)
    }
}

impl<F: Flavor, P: Persist> SkipList<F, P> {
    /// An empty skip list in a fresh heap (its head tower in root slot [`SKIP_ROOT_SLOT`]).
    ///
    /// # Errors
    ///
    /// [`HeapError::Alloc`] if the root does not fit.
    pub fn new(mut heap: Heap<F, P>) -> Result<Self, HeapError> {
        let root = heap.alloc(SkipRoot::<F> {
            head: F::atomic(PPtr::null()),
            up: core::array::from_fn(|_| VAtomic::new(PPtr::null())),
            _pad: F::Pad::default(),
        })?;
        heap.set_root(SKIP_ROOT_SLOT, root)?;
        Ok(Self {
            heap,
            root,
            top: AtomicWord::new(1),
        })
    }

    /// Recovers a skip list from a region (see [`Heap::recover`]) and repairs what a crash left
    /// half done: it unlinks the nodes marked removed at level 0 and rebuilds every upper level
    /// from level 0 and the nodes' heights (the upper levels are not durable). Afterwards no
    /// marked node is linked, every tower entry below a node's height is linked or null, and
    /// every block not in the list is free.
    ///
    /// # Errors
    ///
    /// Every [`HeapError`] of [`Heap::recover`]; [`HeapError::MissingRoot`] without a skip-list
    /// root; [`HeapError::Malformed`] if level 0's keys are not strictly increasing (a cycle
    /// included) or its head holds a marked pointer.
    pub fn recover(region: Region<P>) -> Result<Self, HeapError> {
        let mut root = PPtr::null();
        crate::heap::check_kind(&region, "mirror-atomic SkipList", Some(SKIP_ROOT_SLOT))?;
        let heap = Heap::recover(region, |t| {
            root = t.root::<SkipRoot<F>>(SKIP_ROOT_SLOT)?;
            Ok(())
        })?;
        let mut list = Self {
            heap,
            root,
            top: AtomicWord::new(MAX_LEVEL as u64),
        };
        list.repair()?;
        let space = list.heap.space();
        let head = list.head();
        let used = (0..MAX_LEVEL)
            // SAFETY: the head has `MAX_LEVEL` levels.
            .rposition(|l| !unsafe { head.load(l, space.base()) }.is_null())
            .map_or(1, |l| l + 1);
        // Relaxed: single-threaded here; the list is published by moving it to the caller.
        list.top.store(used as u64, Ordering::Relaxed);
        list.heap.retrace(|t| {
            t.root::<SkipRoot<F>>(SKIP_ROOT_SLOT)?;
            Ok(())
        })?;
        Ok(list)
    }

    /// Recovery's repair (single-threaded: `&mut self`). Level 0 decides membership and is
    /// the only durable level: its nodes marked removed are unlinked (a durable CAS each, so a
    /// crash during the repair leaves a state the next recovery repairs again). The upper
    /// levels are shortcuts whose CASes are not made durable (issue 23, lever L4: a crash
    /// leaves them in any state their unpersisted writes reached), so they are rebuilt from
    /// level 0 and the nodes' heights, whatever the file holds there.
    fn repair(&mut self) -> Result<(), HeapError> {
        let space = self.heap.space();
        let base = space.base();
        let head = self.head();
        // SAFETY: the head's level 0.
        let head0 = unsafe { head.at(0) };
        let malformed = |what| Err(HeapError::Malformed { what });
        // A head never holds a marked pointer; with one, every CAS on it would fail and
        // searches would retry forever.
        if F::load(head0, space).is_marked() {
            return malformed("skip-list head holds a marked pointer");
        }
        // A crash can leave a marked node right after an unmarked one with the same key (an
        // insert linked in front of a node being removed), so keys must only be
        // non-decreasing overall and strictly increasing among the nodes kept; the step bound
        // stops a cycle of equal keys in a corrupt file.
        let max_steps = space.len() / 16;
        let mut kept: Vec<PPtr<SkipNode<F>>> = Vec::new();
        let mut pred = head;
        let mut curr = F::load(head0, space).unmarked();
        let (mut last_any, mut last_kept): (Option<u64>, Option<u64>) = (None, None);
        let mut steps = 0;
        while !curr.is_null() {
            steps += 1;
            if steps > max_steps {
                return malformed("skip-list level does not end");
            }
            // SAFETY: traced by recovery (a block of this heap holding a node whose levels
            // fit it); nothing is freed during the repair.
            let node = unsafe { self.heap.get(curr) };
            let k = node.key.get();
            let succ = F::load(&node.next, space);
            let removed = succ.is_marked();
            if last_any.is_some_and(|l| l > k) || (!removed && last_kept.is_some_and(|l| l >= k)) {
                return malformed("skip-list keys not increasing");
            }
            last_any = Some(k);
            if removed {
                // SAFETY: level 0 of the head or of a kept node (as above).
                let link = unsafe { pred.at(0) };
                if F::compare_exchange(link, curr, succ.unmarked(), space).is_err() {
                    return malformed("skip-list link changed during recovery");
                }
            } else {
                last_kept = Some(k);
                kept.push(curr);
                pred = Tower::of(base, curr);
            }
            curr = succ.unmarked();
        }
        // Every upper level: the kept nodes tall enough, in level-0 order. Each such node's
        // entry at the level is set (to the next one, or null after the last), so no stale
        // entry below a node's height survives to keep a freed block alive; entries at or
        // above its height are never read.
        let set = |link: &UpLink<F>, to: PPtr<SkipNode<F>>| {
            let cur = Volatile::load(link, space);
            if cur != to && Volatile::compare_exchange(link, cur, to, space).is_err() {
                return malformed("skip-list link changed during recovery");
            }
            Ok(())
        };
        for level in 1..MAX_LEVEL {
            let mut pred = head;
            for &p in &kept {
                // SAFETY: as above.
                let node = unsafe { self.heap.get(p) };
                if node.levels() > level {
                    // SAFETY: `pred` is the head or a kept node taller than `level` (checked
                    // when it was taken), live during the repair.
                    set(unsafe { pred.up(level) }, p)?;
                    pred = Tower::of(base, p);
                }
            }
            // SAFETY: as above.
            set(unsafe { pred.up(level) }, PPtr::null())?;
        }
        for &p in &kept {
            // SAFETY: as above.
            unsafe { self.heap.get(p) }.state.reset(TOWER_DONE);
        }
        Ok(())
    }

    /// Levels a search starts from (see `top`).
    #[inline(always)]
    fn levels(&self) -> usize {
        // Relaxed: a hint. A stale value only starts a search lower (still correct: every level
        // is a sub-list of the one below); the only reader that needs a level covered is the
        // inserter of a tower, which raised `top` itself before searching (program order), and
        // `unlink_all`, which also covers the node's own height.
        (self.top.load(Ordering::Relaxed) as usize).clamp(1, MAX_LEVEL)
    }

    /// Makes searches start at least `height` levels up.
    fn raise_levels(&self, height: usize) {
        // Relaxed: see `levels`.
        let mut cur = self.top.load(Ordering::Relaxed);
        while cur < height as u64 {
            match self
                .top
                .compare_exchange(cur, height as u64, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(seen) => cur = seen,
            }
        }
    }

    fn root(&self) -> &SkipRoot<F> {
        // SAFETY: the root object is allocated by `new` (or found by recovery), never freed.
        unsafe { self.heap.get(self.root) }
    }

    /// The head's tower.
    fn head(&self) -> Tower<'_, F> {
        Tower::head(self.root())
    }

    /// The book's `find`: at every level, the last node with a key `< key` and its successor;
    /// unlinks every marked node on the way.
    fn find<'g>(&'g self, key: u64, _guard: &'g Guard) -> Position<'g, F> {
        let levels = self.levels();
        let space = self.heap.space();
        // Read once: the start address stays in a register across the loads (see `Base`).
        let base = space.base();
        let head = self.head();
        'retry: loop {
            let mut preds = [head; MAX_LEVEL];
            let mut succs = [PPtr::null(); MAX_LEVEL];
            let mut pred = head;
            for level in (0..levels).rev() {
                // SAFETY: `pred` is the head or a node reached at a level >= `level` (so
                // taller than `level`: a node is linked only at levels below its height), live
                // under `_guard` (see below).
                let mut curr = unsafe { pred.load(level, base) }.unmarked();
                while !curr.is_null() {
                    // SAFETY: read from a live node or the head under `_guard`: not reclaimed
                    // before the guard ends (nodes are retired only once on no level).
                    let node = unsafe { base.get(curr) };
                    let tower = Tower::of(base, curr);
                    // SAFETY: `curr` is live (as above) and was reached at `level`, so it is
                    // taller than `level`.
                    let succ = unsafe { tower.load(level, base) };
                    if succ.is_marked() {
                        // SAFETY: as for `pred` above (it may have moved since).
                        if !unsafe { unlink_at::<F, P>(space, pred, level, curr, succ) } {
                            continue 'retry;
                        }
                        curr = succ.unmarked();
                        continue;
                    }
                    if node.key.get() >= key {
                        break;
                    }
                    pred = tower;
                    curr = succ;
                }
                preds[level] = pred;
                succs[level] = curr;
            }
            let found = !succs[0].is_null() && {
                // SAFETY: as above.
                unsafe { self.heap.get(succs[0]) }.key.get() == key
            };
            return Position {
                preds,
                succs,
                found,
            };
        }
    }

    /// Unlinks `key`'s removed node(s) from every level. Called by the second party of the
    /// handshake, after which no thread links the node again.
    ///
    /// Why the node is on no level afterwards: at each level the nodes are sorted by key, and
    /// a node with key `k` is always linked right after a node with a key `< k`, so a node of
    /// key `k` sits in the run of nodes with key `k` that follows the last node with a smaller
    /// key. This walk goes through that whole run at every level (not stopping at the first
    /// unmarked node, where the book's `find` stops) and unlinks every marked node in it; every
    /// level of the node is marked (the remover marks all levels before level 0), and a failed
    /// unlink restarts the walk. A later CAS can link it again only through a predecessor whose
    /// frozen (marked) pointer names it, and such a predecessor is unlinked before the walk can
    /// pass it.
    fn unlink_all(&self, key: u64, height: usize, _guard: &Guard) {
        let levels = self.levels().max(height);
        let space = self.heap.space();
        let base = space.base();
        let head = self.head();
        'retry: loop {
            // The last unmarked node with a key < key (where the next level starts).
            let mut below: Tower<'_, F> = head;
            for level in (0..levels).rev() {
                let mut pred = below;
                // SAFETY: as in `find` (`below` is the head or a node reached at a level >=
                // `level`).
                let mut curr = unsafe { pred.load(level, base) }.unmarked();
                while !curr.is_null() {
                    // SAFETY: as in `find`.
                    let node = unsafe { self.heap.get(curr) };
                    let tower = Tower::of(base, curr);
                    // SAFETY: as in `find`.
                    let succ = unsafe { tower.load(level, base) };
                    if succ.is_marked() {
                        // SAFETY: as in `find`.
                        if !unsafe { unlink_at::<F, P>(space, pred, level, curr, succ) } {
                            continue 'retry;
                        }
                        curr = succ.unmarked();
                        continue;
                    }
                    let k = node.key.get();
                    if k > key {
                        break;
                    }
                    if k < key {
                        below = tower;
                    }
                    pred = tower;
                    curr = succ;
                }
            }
            return;
        }
    }

    /// One side of the handshake is done with `node`: the second one unlinks and retires it.
    fn release(&self, node: PPtr<SkipNode<F>>, key: u64, guard: &Guard) {
        // SAFETY: `node` is linked (or was, and is not retired before both sides released it).
        let n = unsafe { self.heap.get(node) };
        if n.state.fetch_add(1) == TOWER_DONE {
            self.unlink_all(key, n.levels(), guard);
            // SAFETY: both sides are done, so nobody links it again, and `unlink_all` left it
            // on no level: no new reader can reach it. Only the second side gets here.
            unsafe { self.heap.retire(node, guard) };
        }
    }

    /// Inserts `key`: `Ok(true)` if it was absent.
    ///
    /// # Errors
    ///
    /// [`HeapAllocError`] if the heap is full.
    pub fn insert(&self, key: u64) -> Result<bool, HeapAllocError> {
        let guard = self.heap.pin();
        let height = random_height();
        self.raise_levels(height);
        let (node, pos) = loop {
            let pos = self.find(key, &guard);
            if pos.found {
                return Ok(false);
            }
            if let Some(linked) = self.link_level0(key, height, pos)? {
                break linked;
            }
        };
        if height > 1 {
            self.build_tower(node, pos, key, &guard);
            self.release(node, key, &guard);
        }
        Ok(true)
    }

    /// A new node of `key` and `height`, its tower pointing to `pos.succs`, linked at level 0
    /// after `pos.preds[0]` (the linearization point of a successful insert): the node and
    /// the position, or `None` if the link changed since `pos` was found (the node is freed).
    #[allow(clippy::type_complexity)] // a pair, named in the doc comment
    fn link_level0<'g>(
        &'g self,
        key: u64,
        height: usize,
        pos: Position<'g, F>,
    ) -> Result<Option<(PPtr<SkipNode<F>>, Position<'g, F>)>, HeapAllocError> {
        // The header and level 0, then levels 1 to `height - 1`, in a block of the smallest
        // class that holds them (see `SkipNode`).
        let node = self.heap.alloc_with_tail(
            SkipNode::<F> {
                key: PConst::new(key),
                height: PConst::new(height as u64),
                // A single-level node has no tower to build: the inserter is done.
                state: VAtomic::new(if height == 1 { TOWER_DONE } else { 0 }),
                _pad: F::Pad::default(), // node-pad
                next: F::atomic(pos.succs[0]),
            },
            height - 1, // tower-used-levels
            |l| UpLink::<F>::new(pos.succs[l + 1]),
        )?;
        // SAFETY: `find` left at `preds[0]` the head or a node reached at level 0, live under
        // the caller's guard.
        let pred = unsafe { pos.preds[0].at(0) };
        // Linearization point of a successful insert.
        if F::compare_exchange(pred, pos.succs[0], node, self.heap.space()).is_ok() {
            return Ok(Some((node, pos)));
        }
        // SAFETY: the CAS failed, so `node` was never published.
        unsafe { self.heap.free_unpublished(node) };
        Ok(None)
    }

    /// Links `node` (linked at level 0 by us, `pos` its position) at its upper levels, bottom
    /// up, and stops as soon as a remove has marked the level about to be linked or has
    /// unlinked the node at level 0. The caller then releases its side of the handshake.
    fn build_tower<'g>(
        &'g self,
        node: PPtr<SkipNode<F>>,
        mut pos: Position<'g, F>,
        key: u64,
        guard: &'g Guard,
    ) {
        let space = self.heap.space();
        // SAFETY: linked by us and not retired before we release it.
        let n = unsafe { self.heap.get(node) };
        let tower = Tower::of(space.base(), node);
        'tower: for level in 1..n.levels() {
            // SAFETY: `node` is live (above) and `level` below its height.
            let link = unsafe { tower.up(level) };
            loop {
                let succ = pos.succs[level];
                let cur = Volatile::load(link, space);
                if cur.is_marked() {
                    break 'tower; // being removed: stop building
                }
                if cur != succ && Volatile::compare_exchange(link, cur, succ, space).is_err() {
                    break 'tower; // only the remover's mark changes it meanwhile
                }
                // SAFETY: `find` left at `preds[level]` the head or a node reached at
                // `level` (taller than it), live under `guard`.
                let pred = unsafe { pos.preds[level].up(level) };
                if Volatile::compare_exchange(pred, succ, node, space).is_ok() {
                    break;
                }
                pos = self.find(key, guard);
                if pos.succs[0] != node {
                    break 'tower; // removed (and unlinked at level 0) meanwhile
                }
            }
        }
    }

    /// Removes `key`: `true` if it was present.
    pub fn remove(&self, key: u64) -> bool {
        let guard = self.heap.pin();
        match self.mark_removed(key, &guard) {
            Some(node) => {
                self.finish_remove(node, key, &guard);
                true
            }
            None => false,
        }
    }

    /// The remove up to its linearization point: finds `key`'s node and marks its levels, the
    /// upper ones top-down, then level 0. The node if this call marked level 0, `None` if the
    /// key is absent or another remove marked it first.
    fn mark_removed(&self, key: u64, guard: &Guard) -> Option<PPtr<SkipNode<F>>> {
        let space = self.heap.space();
        let pos = self.find(key, guard);
        if !pos.found {
            return None;
        }
        let node = pos.succs[0];
        // SAFETY: read under `guard` (see `find`).
        let n = unsafe { self.heap.get(node) };
        let tower = Tower::of(space.base(), node);
        for level in (1..n.levels()).rev() {
            // SAFETY: `node` is live (above) and `level` below its height.
            let link = unsafe { tower.up(level) };
            let mut succ = Volatile::load(link, space);
            while !succ.is_marked() {
                match Volatile::compare_exchange(link, succ, succ.with_mark(), space) {
                    Ok(_) => break,
                    Err(seen) => succ = seen,
                }
            }
        }
        let mut succ = F::load(&n.next, space);
        loop {
            if succ.is_marked() {
                // Another remove marked it first (and is linearized before us).
                return None;
            }
            // Linearization point of a successful remove.
            match F::compare_exchange(&n.next, succ, succ.with_mark(), space) {
                Ok(_) => return Some(node),
                Err(seen) => succ = seen,
            }
        }
    }

    /// The remove after its level-0 mark: unlink what is linked now (the book's cleanup),
    /// then the handshake.
    fn finish_remove(&self, node: PPtr<SkipNode<F>>, key: u64, guard: &Guard) {
        let _ = self.find(key, guard);
        self.release(node, key, guard);
    }

    /// Whether `key` is present (the book's wait-free `contains`: no unlinking).
    pub fn contains(&self, key: u64) -> bool {
        let _guard = self.heap.pin();
        // Read once (see `find`).
        let base = self.heap.space().base();
        let mut pred = self.head();
        let mut curr = PPtr::null();
        for level in (0..self.levels()).rev() {
            // SAFETY: as in `find`.
            curr = unsafe { pred.load(level, base) }.unmarked();
            while !curr.is_null() {
                // SAFETY: as in `find`.
                let node = unsafe { base.get(curr) };
                let tower = Tower::of(base, curr);
                // SAFETY: as in `find`.
                let succ = unsafe { tower.load(level, base) };
                if succ.is_marked() {
                    curr = succ.unmarked();
                    continue;
                }
                if node.key.get() >= key {
                    break;
                }
                pred = tower;
                curr = succ;
            }
        }
        // SAFETY: as in `find`.
        !curr.is_null() && unsafe { base.get(curr) }.key.get() == key
    }

    /// The keys at level 0 in order, marked nodes skipped (a consistent snapshot only when
    /// nothing runs concurrently), and whether the list is well formed: every level strictly
    /// increasing, every node of an upper level present at level 0, none above its height.
    pub fn snapshot(&self) -> (Vec<u64>, bool) {
        let _guard = self.heap.pin();
        let space = self.heap.space();
        let base = space.base();
        let mut keys = Vec::new();
        let mut ok = true;
        let mut level0 = std::collections::HashSet::new();
        let head = self.head();
        for level in 0..MAX_LEVEL {
            // SAFETY: the head has `MAX_LEVEL` levels.
            let mut curr = unsafe { head.load(level, base) }.unmarked();
            let mut last: Option<u64> = None;
            while !curr.is_null() {
                // SAFETY: as in `find`.
                let node = unsafe { self.heap.get(curr) };
                let k = node.key.get();
                if last.is_some_and(|l| l >= k) || level >= node.levels() {
                    ok = false;
                    break;
                }
                // SAFETY: live (as in `find`), and `level` is below its height (checked).
                let next = unsafe { Tower::of(base, curr).load(level, base) };
                last = Some(k);
                if level == 0 {
                    level0.insert(curr.offset());
                    if !next.is_marked() {
                        keys.push(k);
                    }
                } else if !level0.contains(&curr.offset()) {
                    ok = false;
                }
                curr = next.unmarked();
            }
        }
        (keys, ok)
    }

    /// Number of nodes linked at each level (index 0 = level 0), marked ones included.
    pub fn level_sizes(&self) -> Vec<usize> {
        let _guard = self.heap.pin();
        let space = self.heap.space();
        let base = space.base();
        let head = self.head();
        (0..MAX_LEVEL)
            .map(|level| {
                let mut n = 0;
                // SAFETY: the head has `MAX_LEVEL` levels.
                let mut curr = unsafe { head.load(level, base) }.unmarked();
                while !curr.is_null() && n <= space.len() {
                    n += 1;
                    // SAFETY: as in `find`.
                    if level >= unsafe { self.heap.get(curr) }.levels() {
                        break; // linked above its height: counted, not followed
                    }
                    // SAFETY: live (as in `find`), and `level` is below its height (checked).
                    curr = unsafe { Tower::of(base, curr).load(level, base) }.unmarked();
                }
                n
            })
            .collect()
    }

    /// The heap.
    pub fn heap(&self) -> &Heap<F, P> {
        &self.heap
    }
}

/// Unlinks the marked node `curr` (whose next pointer at `level` is `succ`) from `pred`'s
/// level `level`: whether the CAS succeeded. Level 0 is durable, the upper levels are not
/// (recovery rebuilds them). Out of line and cold, so the search loops carry none of the CAS's
/// address computations (a marked node is met rarely).
///
/// # Safety
///
/// As [`Tower::load`] for `pred` and `level`.
#[cold]
#[inline(never)]
unsafe fn unlink_at<F: Flavor, P: Persist>(
    space: &Space<P>,
    pred: Tower<'_, F>,
    level: usize,
    curr: PPtr<SkipNode<F>>,
    succ: PPtr<SkipNode<F>>,
) -> bool {
    // SAFETY: the caller's contract.
    unsafe { pred.cas(level, curr, succ.unmarked(), space) }.is_ok()
}

/// Deterministic replays of two interleavings of an insert and a remove of the same key that
/// the concurrent tests do not reach (they need both threads between two of their steps). Each
/// runs the real steps of both operations in the order of the interleaving, in one thread, and
/// checks that the removed node is on no level when it is retired.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::flavor::{Izraelevitz, Mirror, Volatile};
    use pmem::sim::Simulated;

    const K: u64 = 7;

    /// Nodes linked per level, up to the highest non-empty level.
    fn on_levels<F: Flavor, P: Persist>(list: &SkipList<F, P>) -> Vec<usize> {
        let mut sizes = list.level_sizes();
        while sizes.last() == Some(&0) {
            sizes.pop();
        }
        sizes
    }

    /// Insert A links `K` at level 0 and stops before its tower; remove B then runs to the
    /// end (marks both levels, cleans up, first side of the handshake); A resumes its tower.
    /// A must see its level-1 pointer marked and stop: linking there would clear the mark and
    /// leave the node linked after the handshake retires it.
    fn tower_stops_at_a_marked_level<F: Flavor>() {
        let list = SkipList::<F, _>::anonymous(1 << 20).expect("heap");
        let guard = list.heap.pin();
        list.raise_levels(2);
        let pos = list.find(K, &guard);
        let (node, pos) = list
            .link_level0(K, 2, pos)
            .expect("room")
            .expect("nothing raced the link");
        assert!(list.remove(K)); // B, whole
        list.build_tower(node, pos, K, &guard); // A resumes
        list.release(node, K, &guard); // second side: unlinks and retires
        assert_eq!(
            on_levels(&list),
            Vec::<usize>::new(),
            "retired node still linked"
        );
        assert_eq!(list.snapshot(), (vec![], true));
    }

    #[test]
    fn tower_stops_at_a_marked_level_volatile() {
        tower_stops_at_a_marked_level::<Volatile>();
    }

    #[test]
    fn tower_stops_at_a_marked_level_mirror() {
        tower_stops_at_a_marked_level::<Mirror>();
    }

    #[test]
    fn tower_stops_at_a_marked_level_izraelevitz() {
        tower_stops_at_a_marked_level::<Izraelevitz>();
    }

    /// `K` is present as node N1 (two levels, tower built). Insert C of `K` searches level 1
    /// (finds N1 there, unmarked) and stops; remove B marks N1 (level 1, then level 0) and
    /// stops before its cleanup; C resumes at level 0 (unlinks N1 there, `K` is absent), links
    /// its node N2 and builds its tower from the level-1 position it found before, which puts
    /// N2 in front of the marked N1: level 1 is head -> N2 -> N1. B resumes: its cleanup
    /// `find` stops at N2 (unmarked, key `K`), and the handshake's `unlink_all` must walk past
    /// N2 through the whole run of `K` to unlink N1 before retiring it.
    fn unlink_all_walks_past_an_equal_key<F: Flavor>() {
        let list = SkipList::<F, _>::anonymous(1 << 20).expect("heap");
        let guard = list.heap.pin();
        list.raise_levels(2);
        // N1: a whole insert of height 2.
        let (n1, pos) = list
            .link_level0(K, 2, list.find(K, &guard))
            .expect("room")
            .expect("nothing raced the link");
        list.build_tower(n1, pos, K, &guard);
        list.release(n1, K, &guard);
        assert_eq!(on_levels(&list), vec![1, 1]);
        // C's search, level 1 (a full `find` now: only its level-1 half is used).
        let stale = list.find(K, &guard);
        assert_eq!(stale.succs[1], n1);
        // B up to its linearization point.
        assert_eq!(list.mark_removed(K, &guard), Some(n1));
        // C's search resumes at level 0 (a search that read the level hint as 1 is exactly
        // that half), then C combines both halves, as its `find` would have returned them.
        list.top.store(1, Ordering::Relaxed);
        let mut pos = list.find(K, &guard);
        list.top.store(2, Ordering::Relaxed);
        assert!(!pos.found);
        pos.preds[1] = stale.preds[1];
        pos.succs[1] = stale.succs[1];
        let (n2, pos) = list
            .link_level0(K, 2, pos)
            .expect("room")
            .expect("nothing raced the link");
        list.build_tower(n2, pos, K, &guard);
        list.release(n2, K, &guard);
        assert_eq!(on_levels(&list), vec![1, 2], "N2 in front of the marked N1");
        // B resumes.
        list.finish_remove(n1, K, &guard);
        assert_eq!(
            on_levels(&list),
            vec![1, 1],
            "retired N1 still linked at level 1"
        );
        assert_eq!(list.snapshot(), (vec![K], true));
    }

    #[test]
    fn unlink_all_walks_past_an_equal_key_volatile() {
        unlink_all_walks_past_an_equal_key::<Volatile>();
    }

    #[test]
    fn unlink_all_walks_past_an_equal_key_mirror() {
        unlink_all_walks_past_an_equal_key::<Mirror>();
    }

    #[test]
    fn unlink_all_walks_past_an_equal_key_izraelevitz() {
        unlink_all_walks_past_an_equal_key::<Izraelevitz>();
    }

    /// Issue 23's durability gap for the skip list's level-0 mark (see `crate::mark_window`):
    /// thread A's remove of `K` stops right after its marks (`mark_removed`), thread B's
    /// `contains(K)` returns `false`, and the crash image must recover without `K`.
    fn a_mark_another_thread_acted_on_survives_a_crash<F: Flavor>() {
        let region = crate::mark_window::strict_region(1 << 20, 13);
        let list = SkipList::<F, Simulated>::new(Heap::new(region).expect("heap")).expect("list");
        for k in [K - 1, K, K + 1] {
            assert!(list.insert(k).expect("room"));
        }
        crate::mark_window::check_mark_seen_by_another_thread(
            list,
            K,
            |l| {
                let guard = l.heap.pin();
                assert!(l.mark_removed(K, &guard).is_some(), "A marks K and stops");
            },
            |l, k| l.contains(k),
            |l| l.heap.space().persist().crash(),
            |r| {
                SkipList::<F, Simulated>::recover(r)
                    .expect("recover")
                    .snapshot()
            },
            vec![K - 1, K + 1],
        );
    }

    /// A whole insert of `key` with a tower of `height` levels: the node.
    fn insert_of_height<F: Flavor, P: Persist>(
        list: &SkipList<F, P>,
        key: u64,
        height: usize,
        guard: &Guard,
    ) -> PPtr<SkipNode<F>> {
        let (node, pos) = list
            .link_level0(key, height, list.find(key, guard))
            .expect("room")
            .expect("nothing raced the link");
        list.build_tower(node, pos, key, guard);
        if height > 1 {
            list.release(node, key, guard);
        }
        node
    }

    /// The block a node of `height` levels takes: the smallest class that holds them.
    fn block_for<F: Flavor>(height: usize) -> u64 {
        crate::alloc::block_of(crate::alloc::class_of(
            SkipNode::<F>::used_len(height),
            core::mem::align_of::<SkipNode<F>>(),
        ))
    }

    /// The block of every node linked at level 0, by key, checked against its height.
    fn check_blocks<F: Flavor, P: Persist>(list: &SkipList<F, P>) -> usize {
        let space = list.heap.space();
        // SAFETY: the head has `MAX_LEVEL` levels.
        let mut curr = F::load(unsafe { list.head().at(0) }, space).unmarked();
        let mut n = 0;
        while !curr.is_null() {
            // SAFETY: linked, and nothing runs concurrently.
            let node = unsafe { list.heap.get(curr) };
            let h = node.levels();
            // SAFETY: a node of this heap.
            let block = unsafe { list.heap.block_len(curr) };
            assert_eq!(block, block_for::<F>(h), "block of key {}", node.key.get());
            curr = F::load(&node.next, space).unmarked();
            n += 1;
        }
        n
    }

    /// Issue 23 (blocks sized by height): a node of each height takes the smallest block that
    /// holds its levels, not a `MAX_LEVEL` tower (224 bytes in Mirror for every node before).
    fn a_nodes_block_follows_its_height<F: Flavor>() -> Vec<u64> {
        let list = SkipList::<F, _>::anonymous(1 << 20).expect("heap");
        let guard = list.heap.pin();
        list.raise_levels(MAX_LEVEL);
        let mut blocks = Vec::new();
        for h in 1..=MAX_LEVEL {
            let node = insert_of_height(&list, h as u64, h, &guard);
            // SAFETY: allocated above, linked.
            blocks.push(unsafe { list.heap.block_len(node) });
        }
        assert_eq!(check_blocks(&list), MAX_LEVEL);
        assert_eq!(on_levels(&list), (1..=MAX_LEVEL).rev().collect::<Vec<_>>());
        blocks
    }

    #[test]
    fn a_nodes_block_follows_its_height_mirror() {
        // Header 32 bytes, level 0 16 and 8 per upper level: up to 3 levels fit one line.
        assert_eq!(
            a_nodes_block_follows_its_height::<Mirror>(),
            [64, 64, 64, 128, 128, 128, 128, 128, 128, 128, 128, 224]
        );
    }

    #[test]
    fn a_nodes_block_follows_its_height_volatile() {
        let blocks = a_nodes_block_follows_its_height::<Volatile>();
        assert_eq!(
            blocks[0], 32,
            "a one-level Volatile node (32 bytes): {blocks:?}"
        );
    }

    #[test]
    fn a_nodes_block_follows_its_height_izraelevitz() {
        let blocks = a_nodes_block_follows_its_height::<Izraelevitz>();
        assert!(blocks[0] < blocks[MAX_LEVEL - 1], "{blocks:?}");
    }

    const LAYOUT: u64 = 0x5C1B;

    fn reopen(path: &std::path::Path) -> SkipList<Mirror, pmem::Hardware> {
        let region = Region::open(path, LAYOUT).expect("open");
        SkipList::recover(region).expect("recover")
    }

    /// Lets reclamation free what was retired (single thread: a few pins and flushes).
    fn reclaim<F: Flavor, P: Persist>(list: &SkipList<F, P>, live: usize) {
        for _ in 0..1000 {
            if list.heap.live_blocks() <= live {
                return;
            }
            list.heap.pin().flush();
        }
        panic!("{} blocks live, {live} expected", list.heap.live_blocks());
    }

    /// A file with nodes of mixed heights recovers with every node traced by its height and
    /// in its block; what it removes comes back to the class of its block.
    #[test]
    fn a_file_of_mixed_heights_recovers_node_by_node() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.pmem");
        {
            let heap = Heap::<Mirror, _>::create(&path, LAYOUT, 256 + 16 * 65536).expect("create");
            let list = SkipList::new(heap).expect("list");
            for k in 0..3000 {
                assert!(list.insert(k).expect("room"));
            }
        }
        let list = reopen(&path);
        assert_eq!(list.snapshot(), ((0..3000).collect(), true));
        assert_eq!(check_blocks(&list), 3000);
        let sizes = on_levels(&list);
        assert!(sizes.len() > 3, "heights are mixed: {sizes:?}");
        for k in (0..3000).step_by(2) {
            assert!(list.remove(k));
        }
        reclaim(&list, 1 + 1500);
        for k in (0..3000).step_by(2) {
            assert!(list.insert(k).expect("room"));
        }
        assert_eq!(check_blocks(&list), 3000);
        drop(list);
        let list = reopen(&path);
        assert_eq!(list.snapshot(), ((0..3000).collect(), true));
        assert_eq!(check_blocks(&list), 3000);
    }

    /// A node of the format before issue 23's blocks by height: a `MAX_LEVEL` tower of the
    /// flavor's atomics whatever the height (224 bytes in Mirror).
    #[repr(C)]
    struct FullNode<F: Flavor> {
        key: PConst<u64>,
        height: PConst<u64>,
        state: VAtomic<u64>,
        _pad: F::Pad,
        next: [Link<F>; MAX_LEVEL],
    }

    // SAFETY: as `SkipNode`, with `MAX_LEVEL` links.
    unsafe impl<F: Flavor> Object for FullNode<F> {
        const FIELD_BYTES: usize = 2 * size_of::<PConst<u64>>()
            + size_of::<VAtomic<u64>>()
            + size_of::<F::Pad>()
            + size_of::<[Link<F>; MAX_LEVEL]>();
    }

    /// The root of that format: `MAX_LEVEL` of the flavor's atomics.
    #[repr(C)]
    struct FullRoot<F: Flavor> {
        head: [Link<F>; MAX_LEVEL],
    }

    // SAFETY: an array of flavor atomics.
    unsafe impl<F: Flavor> Object for FullRoot<F> {
        const FIELD_BYTES: usize = size_of::<[Link<F>; MAX_LEVEL]>();
    }

    /// Files written before blocks followed heights (every node and the root in a 224-byte
    /// block, 16-byte upper levels) are read: level 0 is where it was, the upper levels are
    /// rebuilt from the heights, and a removed node's block goes back to the 224-byte class
    /// (its chunk's), not to the class of its height, where a new short node would take a
    /// 224-byte block.
    #[test]
    fn a_file_of_full_towers_is_read_and_its_blocks_go_back_to_their_class() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.pmem");
        let heights = [1, 2, 3, 12, 1, 5, 7, 2, 1, 4];
        let keys: Vec<u64> = (1..=heights.len() as u64).map(|k| 10 * k).collect();
        {
            let mut heap =
                Heap::<Mirror, _>::create(&path, LAYOUT, 256 + 8 * 65536).expect("create");
            // Level 0 built back to front; upper levels with stale bytes (all ones: any
            // offset), as a crash could leave them: recovery rebuilds them from the heights.
            let tower = |first| -> [Link<Mirror>; MAX_LEVEL] {
                core::array::from_fn(|l| {
                    Mirror::atomic(if l == 0 {
                        first
                    } else {
                        PPtr::from_offset(!0 << 4)
                    })
                })
            };
            let mut first = PPtr::null();
            for (&key, &h) in keys.iter().zip(&heights).rev() {
                let node = heap
                    .alloc(FullNode::<Mirror> {
                        key: PConst::new(key),
                        height: PConst::new(h),
                        state: VAtomic::new(0),
                        _pad: Default::default(),
                        next: tower(first),
                    })
                    .expect("room");
                // SAFETY: allocated above.
                assert_eq!(unsafe { heap.block_len(node) }, 224);
                first = PPtr::from_offset(node.offset());
            }
            let root = heap
                .alloc(FullRoot::<Mirror> { head: tower(first) })
                .expect("room");
            // SAFETY: allocated above.
            assert_eq!(unsafe { heap.block_len(root) }, 224);
            heap.set_root(SKIP_ROOT_SLOT, root).expect("root");
        }
        let list = reopen(&path);
        assert_eq!(list.snapshot(), (keys.clone(), true));
        let tall = |l: u64| heights.iter().filter(|&&h| h > l).count();
        assert_eq!(on_levels(&list), (0..12).map(tall).collect::<Vec<_>>());
        for &k in &keys {
            assert!(list.remove(k));
        }
        reclaim(&list, 1);
        // New nodes: each in the block of its height, none in a freed 224-byte block of a
        // shorter class.
        let guard = list.heap.pin();
        list.raise_levels(MAX_LEVEL);
        for round in 0..4 {
            for h in 1..=MAX_LEVEL {
                insert_of_height(&list, (100 * round + h) as u64, h, &guard);
            }
        }
        drop(guard);
        assert_eq!(check_blocks(&list), 4 * MAX_LEVEL);
        drop(list);
        let list = reopen(&path);
        assert_eq!(check_blocks(&list), 4 * MAX_LEVEL);
        assert!(list.snapshot().1);
    }

    /// A node whose link CAS failed goes back to the class of its block (not of its type, the
    /// one-level node's), where the next node of its height takes it.
    #[test]
    fn an_unpublished_node_goes_back_to_its_blocks_class() {
        let list = SkipList::<Mirror, _>::anonymous(1 << 20).expect("heap");
        let guard = list.heap.pin();
        list.raise_levels(MAX_LEVEL);
        let stale = list.find(K, &guard);
        assert!(list.insert(K - 1).expect("room")); // changes the link `stale` saw
        assert!(list
            .link_level0(K, MAX_LEVEL, stale)
            .expect("room")
            .is_none());
        for (i, h) in [1, MAX_LEVEL].into_iter().enumerate() {
            let node = insert_of_height(&list, K + 1 + i as u64, h, &guard);
            // SAFETY: allocated above, linked.
            assert_eq!(unsafe { list.heap.block_len(node) }, block_for::<Mirror>(h));
        }
    }

    #[test]
    fn a_mark_another_thread_acted_on_survives_a_crash_mirror() {
        a_mark_another_thread_acted_on_survives_a_crash::<Mirror>();
    }

    #[test]
    fn a_mark_another_thread_acted_on_survives_a_crash_izraelevitz() {
        a_mark_another_thread_acted_on_survives_a_crash::<Izraelevitz>();
    }
}
