//! Containers: a LIFO stack, a FIFO queue and a min-priority queue.

use crate::lin::Model;
use std::collections::{BTreeMap, VecDeque};

/// An operation on a [`Stack`].
///
/// # Examples
///
/// ```
/// use testkit::models::StackOp;
///
/// assert_ne!(StackOp::Push(1), StackOp::Pop);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StackOp {
    /// Pushes a value on top.
    Push(u64),
    /// Removes the top value.
    Pop,
}

/// The result of a [`StackOp`].
///
/// # Examples
///
/// ```
/// use testkit::models::StackRet;
///
/// assert_ne!(StackRet::Pushed, StackRet::Popped(None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StackRet {
    /// [`StackOp::Push`] completed.
    Pushed,
    /// [`StackOp::Pop`]: the value removed, or `None` if the stack was empty.
    Popped(Option<u64>),
}

/// A LIFO stack of `u64`s.
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{Stack, StackOp, StackRet};
///
/// let mut s = Stack::new();
/// s.step(&StackOp::Push(1));
/// s.step(&StackOp::Push(2));
/// assert_eq!(s.step(&StackOp::Pop), StackRet::Popped(Some(2)));
/// assert_eq!(s.items(), &[1]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stack {
    items: Vec<u64>,
}

impl Stack {
    /// An empty stack.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(testkit::models::Stack::new().items().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The items, bottom first.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::Model;
    /// use testkit::models::{Stack, StackOp};
    ///
    /// let mut s = Stack::new();
    /// s.step(&StackOp::Push(4));
    /// assert_eq!(s.items(), &[4]);
    /// ```
    pub fn items(&self) -> &[u64] {
        &self.items
    }
}

impl Model for Stack {
    type Op = StackOp;
    type Ret = StackRet;

    fn step(&mut self, op: &StackOp) -> StackRet {
        match *op {
            StackOp::Push(value) => {
                self.items.push(value);
                StackRet::Pushed
            }
            StackOp::Pop => StackRet::Popped(self.items.pop()),
        }
    }
}

/// An operation on a [`PeekStack`]: a [`Stack`] that can also be read.
///
/// # Examples
///
/// ```
/// use testkit::models::PeekStackOp;
///
/// assert_ne!(PeekStackOp::Peek, PeekStackOp::Pop);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeekStackOp {
    /// Pushes a value on top.
    Push(u64),
    /// Removes the top value.
    Pop,
    /// Reads the top value without removing it.
    Peek,
}

/// The result of a [`PeekStackOp`].
///
/// # Examples
///
/// ```
/// use testkit::models::PeekStackRet;
///
/// assert_ne!(PeekStackRet::Popped(None), PeekStackRet::Peeked(None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeekStackRet {
    /// [`PeekStackOp::Push`] completed.
    Pushed,
    /// [`PeekStackOp::Pop`]: the value removed, or `None` if the stack was empty.
    Popped(Option<u64>),
    /// [`PeekStackOp::Peek`]: the top value, or `None` if the stack was empty.
    Peeked(Option<u64>),
}

/// A LIFO stack of `u64`s with a read-only `Peek`, for objects that separate reads from
/// writes (a read that returns a stale top is caught, which a push/pop-only history cannot
/// show as directly).
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{PeekStack, PeekStackOp, PeekStackRet};
///
/// let mut s = PeekStack::new();
/// s.step(&PeekStackOp::Push(7));
/// assert_eq!(s.step(&PeekStackOp::Peek), PeekStackRet::Peeked(Some(7)));
/// assert_eq!(s.step(&PeekStackOp::Pop), PeekStackRet::Popped(Some(7)));
/// assert_eq!(s.step(&PeekStackOp::Peek), PeekStackRet::Peeked(None));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PeekStack {
    items: Vec<u64>,
}

impl PeekStack {
    /// An empty stack.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(testkit::models::PeekStack::new().items().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The items, bottom first.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::Model;
    /// use testkit::models::{PeekStack, PeekStackOp};
    ///
    /// let mut s = PeekStack::new();
    /// s.step(&PeekStackOp::Push(4));
    /// assert_eq!(s.items(), &[4]);
    /// ```
    pub fn items(&self) -> &[u64] {
        &self.items
    }
}

impl Model for PeekStack {
    type Op = PeekStackOp;
    type Ret = PeekStackRet;

    fn step(&mut self, op: &PeekStackOp) -> PeekStackRet {
        match *op {
            PeekStackOp::Push(value) => {
                self.items.push(value);
                PeekStackRet::Pushed
            }
            PeekStackOp::Pop => PeekStackRet::Popped(self.items.pop()),
            PeekStackOp::Peek => PeekStackRet::Peeked(self.items.last().copied()),
        }
    }
}

/// An operation on a [`Queue`].
///
/// # Examples
///
/// ```
/// use testkit::models::QueueOp;
///
/// assert_ne!(QueueOp::Enqueue(1), QueueOp::Dequeue);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueOp {
    /// Appends a value at the back.
    Enqueue(u64),
    /// Removes the front value.
    Dequeue,
}

/// The result of a [`QueueOp`].
///
/// # Examples
///
/// ```
/// use testkit::models::QueueRet;
///
/// assert_ne!(QueueRet::Enqueued, QueueRet::Dequeued(None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueRet {
    /// [`QueueOp::Enqueue`] completed.
    Enqueued,
    /// [`QueueOp::Dequeue`]: the value removed, or `None` if the queue was
    /// empty.
    Dequeued(Option<u64>),
}

/// A FIFO queue of `u64`s.
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{Queue, QueueOp, QueueRet};
///
/// let mut q = Queue::new();
/// q.step(&QueueOp::Enqueue(1));
/// q.step(&QueueOp::Enqueue(2));
/// assert_eq!(q.step(&QueueOp::Dequeue), QueueRet::Dequeued(Some(1)));
/// assert_eq!(q.items().collect::<Vec<_>>(), [2]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Queue {
    items: VecDeque<u64>,
}

impl Queue {
    /// An empty queue.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(testkit::models::Queue::new().items().count(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The items, front first.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::Model;
    /// use testkit::models::{Queue, QueueOp};
    ///
    /// let mut q = Queue::new();
    /// q.step(&QueueOp::Enqueue(3));
    /// assert_eq!(q.items().next(), Some(3));
    /// ```
    pub fn items(&self) -> impl Iterator<Item = u64> + '_ {
        self.items.iter().copied()
    }
}

impl Model for Queue {
    type Op = QueueOp;
    type Ret = QueueRet;

    fn step(&mut self, op: &QueueOp) -> QueueRet {
        match *op {
            QueueOp::Enqueue(value) => {
                self.items.push_back(value);
                QueueRet::Enqueued
            }
            QueueOp::Dequeue => QueueRet::Dequeued(self.items.pop_front()),
        }
    }
}

/// An operation on a [`MinPq`].
///
/// # Examples
///
/// ```
/// use testkit::models::PqOp;
///
/// assert_ne!(PqOp::DeleteMin, PqOp::FindMin);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PqOp {
    /// Inserts a value (duplicates are kept).
    Insert(u64),
    /// Removes one copy of the smallest value.
    DeleteMin,
    /// Reads the smallest value without removing it.
    FindMin,
}

/// The result of a [`PqOp`].
///
/// # Examples
///
/// ```
/// use testkit::models::PqRet;
///
/// assert_ne!(PqRet::Deleted(Some(1)), PqRet::Min(Some(1)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PqRet {
    /// [`PqOp::Insert`] completed.
    Inserted,
    /// [`PqOp::DeleteMin`]: the value removed, or `None` if empty.
    Deleted(Option<u64>),
    /// [`PqOp::FindMin`]: the smallest value, or `None` if empty.
    Min(Option<u64>),
}

/// A min-priority queue (a multiset) of `u64`s.
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{MinPq, PqOp, PqRet};
///
/// let mut pq = MinPq::new();
/// for v in [3, 1, 1] {
///     pq.step(&PqOp::Insert(v));
/// }
/// assert_eq!(pq.step(&PqOp::DeleteMin), PqRet::Deleted(Some(1)));
/// assert_eq!(pq.step(&PqOp::FindMin), PqRet::Min(Some(1)));
/// assert_eq!(pq.len(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MinPq {
    /// Value -> number of copies (never zero).
    counts: BTreeMap<u64, usize>,
}

impl MinPq {
    /// An empty priority queue.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(testkit::models::MinPq::new().len(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of values, counting duplicates.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::Model;
    /// use testkit::models::{MinPq, PqOp};
    ///
    /// let mut pq = MinPq::new();
    /// pq.step(&PqOp::Insert(2));
    /// pq.step(&PqOp::Insert(2));
    /// assert_eq!(pq.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.counts.values().sum()
    }

    /// Whether the priority queue is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(testkit::models::MinPq::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl Model for MinPq {
    type Op = PqOp;
    type Ret = PqRet;

    fn step(&mut self, op: &PqOp) -> PqRet {
        match *op {
            PqOp::Insert(value) => {
                *self.counts.entry(value).or_insert(0) += 1;
                PqRet::Inserted
            }
            PqOp::DeleteMin => {
                let Some(mut min) = self.counts.first_entry() else {
                    return PqRet::Deleted(None);
                };
                let value = *min.key();
                *min.get_mut() -= 1;
                if *min.get() == 0 {
                    min.remove();
                }
                PqRet::Deleted(Some(value))
            }
            PqOp::FindMin => PqRet::Min(self.counts.keys().next().copied()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pq_state_is_canonical_after_deleting_every_copy() {
        let mut pq = MinPq::new();
        pq.step(&PqOp::Insert(4));
        pq.step(&PqOp::Insert(4));
        assert_eq!(pq.step(&PqOp::DeleteMin), PqRet::Deleted(Some(4)));
        assert_eq!(pq.step(&PqOp::DeleteMin), PqRet::Deleted(Some(4)));
        assert_eq!(pq, MinPq::new());
        assert_eq!(pq.step(&PqOp::DeleteMin), PqRet::Deleted(None));
    }

    #[test]
    fn empty_stack_and_queue_return_none() {
        assert_eq!(Stack::new().step(&StackOp::Pop), StackRet::Popped(None));
        assert_eq!(
            Queue::new().step(&QueueOp::Dequeue),
            QueueRet::Dequeued(None)
        );
    }
}
