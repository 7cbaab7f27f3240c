//! A Treiber stack (Treiber, 1986) with epoch-based reclamation (`crossbeam-epoch`): the stack
//! figure's lock-free peer (the NR paper's LF stack, §8.1.4).

use crossbeam_epoch::{self as epoch, Atomic, Owned};
use nr_core::Poisoned;
use seqds::{Stack, StackRead, StackResponse, StackWrite};

use crate::method::{Handle, Method, Setup};
use crate::sync::{Backoff, Ordering};
use crate::BenchError;

#[derive(Debug)]
struct Node {
    value: u64,
    /// Written before the node is published (by the pushing thread only).
    next: Atomic<Node>,
}

/// A lock-free Treiber stack of `u64`s running the stack's operations: `push` and `pop` are one
/// CAS on the head each; popped nodes are freed once no thread can still read them (epochs).
///
/// # Examples
///
/// ```
/// use benches::method::peers::TreiberStack;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{Stack, StackRead, StackResponse, StackWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || Stack::new();
/// let setup = Setup { make: &make, prefill: &[StackWrite::Push(1)], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let ts = TreiberStack::build(&setup)?;
/// let mut h = ts.handle(0, 1)?;
/// h.write(StackWrite::Push(2))?;
/// assert_eq!(h.read(StackRead::Len)?, StackResponse::Len(2));
/// assert_eq!(h.write(StackWrite::Pop)?, StackResponse::Popped(Some(2)));
/// assert_eq!(h.read(StackRead::Peek)?, StackResponse::Top(Some(1)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TreiberStack {
    head: Atomic<Node>,
}

impl TreiberStack {
    fn push(&self, value: u64) {
        let mut node = Owned::new(Node {
            value,
            next: Atomic::null(),
        });
        let guard = epoch::pin();
        let mut backoff = Backoff::default();
        loop {
            // Relaxed: the head is only the CAS's expected value; the node it points to is not
            // read here.
            let head = self.head.load(Ordering::Relaxed, &guard);
            // Relaxed: the node is not yet published; the Release CAS below publishes this store.
            node.next.store(head, Ordering::Relaxed);
            // Release: pairs with the Acquire loads in `pop` and `peek`, so a thread that sees
            // the node also sees its `value` and `next`.
            match self.head.compare_exchange(
                head,
                node,
                Ordering::Release,
                Ordering::Relaxed,
                &guard,
            ) {
                Ok(_) => return,
                Err(e) => {
                    node = e.new;
                    backoff.snooze();
                }
            }
        }
    }

    fn pop(&self) -> Option<u64> {
        let guard = epoch::pin();
        let mut backoff = Backoff::default();
        loop {
            // Acquire: pairs with the Release CAS in `push`, so the node's fields are visible.
            let head = self.head.load(Ordering::Acquire, &guard);
            // SAFETY:
            // - `head` is null or points to a node that is not freed while `guard` is pinned:
            //   nodes are only freed through `defer_destroy` after being unlinked, which waits
            //   for every guard pinned before the unlink.
            let node = unsafe { head.as_ref() }?;
            // Relaxed: `next` was written before the node was published (Acquire above).
            let next = node.next.load(Ordering::Relaxed, &guard);
            // Relaxed success: this CAS publishes no data. The node it exposes (`next`) was
            // published by its push's Release CAS, and every write to `head` is a
            // read-modify-write, so a later Acquire load that reads this value still synchronizes
            // with that push (release sequence).
            if self
                .head
                .compare_exchange(head, next, Ordering::Relaxed, Ordering::Relaxed, &guard)
                .is_ok()
            {
                let value = node.value;
                // SAFETY:
                // - the node is unlinked (our CAS removed it from the head, and nodes below the
                //   head are never unlinked elsewhere), so no new reference to it can be made;
                // - it is destroyed only after every thread pinned now has unpinned.
                unsafe { guard.defer_destroy(head) };
                return Some(value);
            }
            backoff.snooze();
        }
    }

    fn peek(&self) -> Option<u64> {
        let guard = epoch::pin();
        // Acquire: as in `pop`.
        let head = self.head.load(Ordering::Acquire, &guard);
        // SAFETY:
        // - as in `pop`: the node is not freed while `guard` is pinned.
        unsafe { head.as_ref() }.map(|n| n.value)
    }

    fn len(&self) -> usize {
        let guard = epoch::pin();
        let mut n = 0;
        // Acquire: as in `pop`, for every node visited.
        let mut cur = self.head.load(Ordering::Acquire, &guard);
        // SAFETY:
        // - every node reached is not freed while `guard` is pinned (as in `pop`).
        while let Some(node) = unsafe { cur.as_ref() } {
            n += 1;
            cur = node.next.load(Ordering::Acquire, &guard);
        }
        n
    }
}

impl Drop for TreiberStack {
    fn drop(&mut self) {
        // SAFETY:
        // - `&mut self`: no other thread can access the stack, so no guard is needed.
        let guard = unsafe { epoch::unprotected() };
        let mut cur = self.head.load(Ordering::Relaxed, guard);
        while !cur.is_null() {
            // SAFETY:
            // - `cur` is a live node still linked in the stack, owned by it alone, and freed
            //   exactly once (we advance past it before freeing).
            let owned = unsafe { cur.into_owned() };
            cur = owned.next.load(Ordering::Relaxed, guard);
            drop(owned);
        }
    }
}

impl Method<Stack> for TreiberStack {
    const NAME: &'static str = "Treiber";
    type Handle<'a> = &'a TreiberStack;

    fn build(setup: &Setup<'_, Stack>) -> Result<Self, BenchError> {
        let stack = TreiberStack {
            head: Atomic::null(),
        };
        for op in setup.prefill {
            // This peer's operations cannot fail.
            let _ = (&stack).write(*op);
        }
        Ok(stack)
    }

    fn handle(&self, _thread: usize, _threads: usize) -> Result<&TreiberStack, BenchError> {
        Ok(self)
    }
}

impl Handle<Stack> for &TreiberStack {
    #[inline]
    fn read(&mut self, op: StackRead) -> Result<StackResponse, Poisoned> {
        Ok(match op {
            StackRead::Peek => StackResponse::Top(self.peek()),
            StackRead::Len => StackResponse::Len(self.len()),
        })
    }

    #[inline]
    fn write(&mut self, op: StackWrite) -> Result<StackResponse, Poisoned> {
        Ok(match op {
            StackWrite::Push(v) => {
                self.push(v);
                StackResponse::Pushed
            }
            StackWrite::Pop => StackResponse::Popped(self.pop()),
        })
    }
}
