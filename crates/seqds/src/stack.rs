//! The stack.

use nr_core::Dispatch;
use std::fmt;

/// A read-only stack operation (`ReadOperation` of [`Stack`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{Stack, StackRead, StackResponse};
///
/// let stack: Stack = [1, 2].into_iter().collect();
/// assert_eq!(stack.dispatch(StackRead::Peek), StackResponse::Top(Some(2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackRead {
    /// The top value, without removing it.
    Peek,
    /// The number of values.
    Len,
}

/// A mutating stack operation (`WriteOperation` of [`Stack`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{Stack, StackResponse, StackWrite};
///
/// let mut stack = Stack::new();
/// assert_eq!(stack.dispatch_mut(StackWrite::Push(1)), StackResponse::Pushed);
/// assert_eq!(stack.dispatch_mut(StackWrite::Pop), StackResponse::Popped(Some(1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackWrite {
    /// Pushes a value (`push(v)`).
    Push(u64),
    /// Pops the top value (`pop()`).
    Pop,
}

/// The result of a [`StackRead`] or [`StackWrite`]: one variant per operation.
///
/// # Examples
///
/// ```
/// use seqds::StackResponse;
///
/// assert_ne!(StackResponse::Top(Some(1)), StackResponse::Popped(Some(1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackResponse {
    /// [`StackWrite::Push`] is done.
    Pushed,
    /// [`StackWrite::Pop`]: the value removed, `None` if the stack was empty.
    Popped(Option<u64>),
    /// [`StackRead::Peek`]: the top value, `None` if the stack is empty.
    Top(Option<u64>),
    /// [`StackRead::Len`]: the number of values.
    Len(usize),
}

/// A LIFO stack of `u64` values on a `Vec` — the structure of Calciu et al., ASPLOS'17, §8.1.4
/// (Figure 8), where every operation is an update.
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{Stack, StackRead, StackResponse, StackWrite};
///
/// let mut stack = Stack::with_capacity(16);
/// stack.dispatch_mut(StackWrite::Push(1));
/// stack.dispatch_mut(StackWrite::Push(2));
/// assert_eq!(stack.dispatch(StackRead::Len), StackResponse::Len(2));
/// assert_eq!(stack.dispatch_mut(StackWrite::Pop), StackResponse::Popped(Some(2)));
/// assert_eq!(stack.peek(), Some(1));
/// ```
#[derive(Clone, Default)]
pub struct Stack {
    items: Vec<u64>,
}

impl Stack {
    /// An empty stack.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::Stack::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty stack with room for `capacity` values before it reallocates.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::Stack::with_capacity(100).is_empty());
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
        }
    }

    /// A stack holding `0..n`, `n - 1` on top: the benchmarks' prefill.
    ///
    /// # Examples
    ///
    /// ```
    /// let stack = seqds::Stack::with_items(10);
    /// assert_eq!(stack.len(), 10);
    /// assert_eq!(stack.peek(), Some(9));
    /// ```
    pub fn with_items(n: usize) -> Self {
        (0..n as u64).collect()
    }

    /// The number of values.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::Stack::with_items(3).len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the stack is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::Stack::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Pushes `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut stack = seqds::Stack::new();
    /// stack.push(5);
    /// assert_eq!(stack.peek(), Some(5));
    /// ```
    #[inline]
    pub fn push(&mut self, value: u64) {
        self.items.push(value);
    }

    /// Pops the top value.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut stack = seqds::Stack::with_items(1);
    /// assert_eq!(stack.pop(), Some(0));
    /// assert_eq!(stack.pop(), None);
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<u64> {
        self.items.pop()
    }

    /// The top value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::Stack::with_items(2).peek(), Some(1));
    /// ```
    #[inline]
    pub fn peek(&self) -> Option<u64> {
        self.items.last().copied()
    }

    /// The values, bottom first.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::Stack::with_items(3).as_slice(), [0, 1, 2]);
    /// ```
    pub fn as_slice(&self) -> &[u64] {
        &self.items
    }
}

impl fmt::Debug for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stack")
            .field("len", &self.len())
            .field("top", &self.peek())
            .finish_non_exhaustive()
    }
}

impl Extend<u64> for Stack {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, values: I) {
        self.items.extend(values);
    }
}

impl FromIterator<u64> for Stack {
    fn from_iter<I: IntoIterator<Item = u64>>(values: I) -> Self {
        Self {
            items: values.into_iter().collect(),
        }
    }
}

impl Dispatch for Stack {
    type ReadOperation<'a> = StackRead;
    type WriteOperation = StackWrite;
    type Response = StackResponse;

    #[inline]
    fn dispatch(&self, op: StackRead) -> StackResponse {
        match op {
            StackRead::Peek => StackResponse::Top(self.peek()),
            StackRead::Len => StackResponse::Len(self.len()),
        }
    }

    #[inline]
    fn dispatch_mut(&mut self, op: StackWrite) -> StackResponse {
        match op {
            StackWrite::Push(v) => {
                self.push(v);
                StackResponse::Pushed
            }
            StackWrite::Pop => StackResponse::Popped(self.pop()),
        }
    }
}
