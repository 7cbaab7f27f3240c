//! Why a history was not accepted.

use std::fmt;

/// One operation of a history, rendered for a report.
///
/// `op` and `ret` are the `Debug` renderings of the operation and its
/// recorded result, so a [`Violation`] does not depend on the model's types.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History, Violation};
/// use testkit::models::{Register, RegisterOp, RegisterRet};
///
/// let h = History::sequential([(RegisterOp::Read, RegisterRet::Value(9))]);
/// let Err(Violation::NotLinearizable { unplaced, .. }) = check(Register::new(0), &h) else {
///     panic!("a read of 9 from a register holding 0 must be rejected");
/// };
/// assert_eq!(unplaced[0].op.op, "Read");
/// assert_eq!(unplaced[0].op.ret.as_deref(), Some("Value(9)"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpSummary {
    /// Index of the operation's invocation in [`History::events`](super::History::events).
    pub index: usize,
    /// The invoking thread.
    pub thread: usize,
    /// The operation, `Debug`-formatted.
    pub op: String,
    /// The recorded result, `Debug`-formatted; `None` if the operation is pending.
    pub ret: Option<String>,
    /// Invocation time.
    pub invoked: u64,
    /// Response time; `None` if the operation is pending.
    pub returned: Option<u64>,
}

impl fmt::Display for OpSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} thread {}: {} -> ", self.index, self.thread, self.op)?;
        match (&self.ret, self.returned) {
            (Some(ret), Some(at)) => write!(f, "{ret} [{}, {at}]", self.invoked),
            _ => write!(f, "(pending) [{}, ..)", self.invoked),
        }
    }
}

/// A completed operation that could have come next after the longest
/// linearizable prefix (no other remaining operation precedes it in real
/// time), with what the model returns for it there.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History, Violation};
/// use testkit::models::{Stack, StackOp, StackRet};
///
/// let h = History::sequential([(StackOp::Pop, StackRet::Popped(Some(1)))]);
/// let Err(Violation::NotLinearizable { unplaced, .. }) = check(Stack::new(), &h) else {
///     panic!("popping from an empty stack returns None");
/// };
/// assert_eq!(unplaced[0].model_ret, "Popped(None)");
/// assert!(!unplaced[0].ret_matches);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unplaced {
    /// The operation.
    pub op: OpSummary,
    /// What the model returns for it after the prefix, `Debug`-formatted.
    pub model_ret: String,
    /// Whether that equals the recorded result. If it does, the operation fit
    /// here but every continuation after it failed.
    pub ret_matches: bool,
}

impl fmt::Display for Unplaced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ret_matches {
            write!(f, "{} (fits here, but every continuation fails)", self.op)
        } else {
            write!(f, "{} (model returns {})", self.op, self.model_ret)
        }
    }
}

/// How a thread's sub-history is ill formed.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History, Malformation, Violation};
/// use testkit::models::{Counter, CounterOp, CounterRet};
///
/// let mut h = History::new();
/// h.respond(2, CounterRet::Value(0));
/// assert_eq!(
///     check(Counter::new(), &h),
///     Err(Violation::IllFormed { thread: 2, event: 0, problem: Malformation::ReturnWithoutInvoke })
/// );
/// # let _ = CounterOp::Get;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Malformation {
    /// The thread invoked an operation while its previous one (invoked by the
    /// event at `pending_event`) had not returned.
    ///
    /// Remedy: use one [`ThreadRecorder`](super::ThreadRecorder) per OS
    /// thread and complete each operation before invoking the next; when
    /// building by hand, respond before invoking again on the same thread.
    InvokeWhilePending {
        /// Index of the outstanding invocation in the history's events.
        pending_event: usize,
    },
    /// A response arrived for a thread with no outstanding invocation (or an
    /// explicit timestamp put it before its invocation).
    ///
    /// Remedy: complete each operation once, on the thread that invoked it,
    /// with a time after the invocation's.
    ReturnWithoutInvoke,
}

impl fmt::Display for Malformation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvokeWhilePending { pending_event } => write!(
                f,
                "invocation while the operation invoked by event {pending_event} is outstanding"
            ),
            Self::ReturnWithoutInvoke => f.write_str("response with no outstanding invocation"),
        }
    }
}

/// Why [`check`](fn@super::check) did not accept a history.
///
/// Formats (`Display`) as a multi-line report fit for a test failure.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History, Violation};
/// use testkit::models::{Counter, CounterOp, CounterRet};
///
/// // Both adds overlap, yet the later read misses one of them: a lost update.
/// let mut h = History::new();
/// h.invoke(0, CounterOp::Add(1)).invoke(1, CounterOp::Add(1));
/// h.respond(0, CounterRet::Previous(0)).respond(1, CounterRet::Previous(1));
/// h.invoke(2, CounterOp::Get).respond(2, CounterRet::Value(1));
/// let err = check(Counter::new(), &h).unwrap_err();
/// let Violation::NotLinearizable { completed_ops, longest_prefix, .. } = &err else { panic!() };
/// assert_eq!((*completed_ops, longest_prefix.len()), (3, 2));
/// assert!(err.to_string().contains("model returns Value(2)"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// No linearization exists: the implementation under test (or the model)
    /// is wrong.
    ///
    /// Remedy: read the report — the longest prefix that could be linearized,
    /// the model state after it, and the operations that could not come next
    /// — and find which response the implementation got wrong.
    NotLinearizable {
        /// The number of completed (non-pending) operations in the history.
        completed_ops: usize,
        /// The longest sequence of operations (completed or pending) that
        /// the search linearized, in linearization order.
        longest_prefix: Vec<OpSummary>,
        /// The model state after `longest_prefix`, `Debug`-formatted.
        state_after_prefix: String,
        /// The completed operations that could have come next, with what the
        /// model returns for them.
        unplaced: Vec<Unplaced>,
        /// The number of distinct (linearized set, state) configurations
        /// explored.
        states_explored: usize,
    },
    /// The search gave up after exploring `limit` configurations; the history
    /// may or may not be linearizable.
    ///
    /// Remedy: record shorter histories, fewer threads, or a smaller key or
    /// value space; or raise the budget with
    /// [`Checker::max_states`](super::Checker::max_states).
    StateLimit {
        /// The budget that was exhausted.
        limit: usize,
        /// The number of configurations explored (equals `limit`).
        states_explored: usize,
        /// The number of completed operations in the history.
        completed_ops: usize,
        /// The length of the longest linearizable prefix found so far.
        longest_prefix_len: usize,
    },
    /// The history is not well formed, so linearizability is undefined.
    ///
    /// Remedy: see [`Malformation`].
    IllFormed {
        /// The offending thread.
        thread: usize,
        /// Index of the offending event in the history's events.
        event: usize,
        /// What is wrong.
        problem: Malformation,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotLinearizable {
                completed_ops,
                longest_prefix,
                state_after_prefix,
                unplaced,
                states_explored,
            } => {
                writeln!(
                    f,
                    "history is not linearizable ({completed_ops} completed operations, \
                     {states_explored} states explored)"
                )?;
                writeln!(
                    f,
                    "longest linearizable prefix ({} operations):",
                    longest_prefix.len()
                )?;
                for op in longest_prefix {
                    writeln!(f, "  {op}")?;
                }
                writeln!(f, "model state after the prefix: {state_after_prefix}")?;
                write!(f, "operations that could not come next:")?;
                for op in unplaced {
                    write!(f, "\n  {op}")?;
                }
                Ok(())
            }
            Self::StateLimit {
                limit,
                completed_ops,
                longest_prefix_len,
                ..
            } => write!(
                f,
                "linearizability check gave up after exploring {limit} states \
                 ({completed_ops} completed operations, longest linearizable prefix so far \
                 {longest_prefix_len}); the history may or may not be linearizable: \
                 record a smaller history or raise Checker::max_states"
            ),
            Self::IllFormed {
                thread,
                event,
                problem,
            } => write!(
                f,
                "ill-formed history: thread {thread}, event {event}: {problem}"
            ),
        }
    }
}

impl std::error::Error for Violation {}
