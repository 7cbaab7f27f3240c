//! The search for a linearization (Wing & Gong, with Lowe's memoization).

use super::history::{History, Operation};
use super::violation::{OpSummary, Unplaced, Violation};
use super::Model;
use std::collections::HashSet;

/// Checks whether `history` is linearizable with respect to the sequential
/// model whose initial state is `init`, with the default state budget
/// ([`Checker::DEFAULT_MAX_STATES`]).
///
/// Pending operations may be linearized anywhere after their invocation, with
/// any result, or left out.
///
/// # Errors
///
/// * [`Violation::NotLinearizable`] if no linearization exists;
/// * [`Violation::StateLimit`] if the search exhausted its budget first;
/// * [`Violation::IllFormed`] if a thread's sub-history is not well formed.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History};
/// use testkit::models::{Stack, StackOp, StackRet};
///
/// let mut h = History::new();
/// h.invoke(0, StackOp::Push(1)).respond(0, StackRet::Pushed);
/// h.invoke(1, StackOp::Pop).invoke(2, StackOp::Pop); // overlapping pops
/// h.respond(1, StackRet::Popped(Some(1))).respond(2, StackRet::Popped(None));
/// assert!(check(Stack::new(), &h).is_ok());
///
/// h.invoke(0, StackOp::Pop).respond(0, StackRet::Popped(Some(1))); // popped twice
/// assert!(check(Stack::new(), &h).is_err());
/// ```
pub fn check<M: Model>(init: M, history: &History<M::Op, M::Ret>) -> Result<(), Violation> {
    Checker::new().check(init, history).map(drop)
}

/// A configurable linearizability checker.
///
/// # Examples
///
/// ```
/// use testkit::lin::{Checker, History};
/// use testkit::models::{Register, RegisterOp, RegisterRet};
///
/// let mut h = History::new();
/// h.invoke(0, RegisterOp::Write(5)).invoke(1, RegisterOp::Read);
/// h.respond(1, RegisterRet::Value(5)).respond(0, RegisterRet::Written);
/// let lin = Checker::new().max_states(1_000).check(Register::new(0), &h).unwrap();
/// assert_eq!(lin.order, vec![0, 1]); // the write (event 0), then the read (event 1)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checker {
    max_states: usize,
}

impl Default for Checker {
    fn default() -> Self {
        Self::new()
    }
}

/// A witness that a history is linearizable.
///
/// # Examples
///
/// ```
/// use testkit::lin::{Checker, History};
/// use testkit::models::{Counter, CounterOp, CounterRet};
///
/// let h = History::sequential([(CounterOp::Add(1), CounterRet::Previous(0))]);
/// let lin = Checker::new().check(Counter::new(), &h).unwrap();
/// assert_eq!((lin.order.len(), lin.states_explored), (1, 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linearization {
    /// The linearized operations, in order, each named by the index of its
    /// invocation in [`History::events`]. Contains every completed operation
    /// and the pending ones that had to take effect.
    pub order: Vec<usize>,
    /// The number of distinct configurations explored.
    pub states_explored: usize,
}

impl Checker {
    /// The default budget of explored configurations. With a small model
    /// state that is a few hundred MiB at most and a few seconds of search.
    pub const DEFAULT_MAX_STATES: usize = 1_000_000;

    /// A checker with the default budget.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(testkit::lin::Checker::new(), Default::default());
    /// ```
    pub fn new() -> Self {
        Self {
            max_states: Self::DEFAULT_MAX_STATES,
        }
    }

    /// Sets the budget: the search returns [`Violation::StateLimit`] rather
    /// than explore more than `limit` distinct configurations.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{Checker, History, Violation};
    /// use testkit::models::{Counter, CounterOp, CounterRet};
    ///
    /// let h = History::sequential([(CounterOp::Get, CounterRet::Value(0))]);
    /// let err = Checker::new().max_states(0).check(Counter::new(), &h).unwrap_err();
    /// assert!(matches!(err, Violation::StateLimit { limit: 0, .. }));
    /// ```
    #[must_use]
    pub fn max_states(self, limit: usize) -> Self {
        Self { max_states: limit }
    }

    /// Checks `history` against the model starting at `init`, returning a
    /// linearization on success.
    ///
    /// # Errors
    ///
    /// As [`check`]: [`Violation::NotLinearizable`], [`Violation::StateLimit`]
    /// (after `max_states` configurations) or [`Violation::IllFormed`].
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{Checker, History};
    /// use testkit::models::{KvMap, KvOp, KvRet};
    ///
    /// let mut h = History::new();
    /// h.invoke(0, KvOp::Put(1, 10)); // pending: never returned
    /// h.invoke(1, KvOp::Get(1)).respond(1, KvRet::Get(Some(10)));
    /// let lin = Checker::new().check(KvMap::new(), &h).unwrap();
    /// assert_eq!(lin.order, vec![0, 1]); // the pending put had to take effect
    /// ```
    pub fn check<M: Model>(
        &self,
        init: M,
        history: &History<M::Op, M::Ret>,
    ) -> Result<Linearization, Violation> {
        let ops = history.operations()?;
        Search::new(&ops, self.max_states).run(init)
    }
}

/// A fixed-size set of operation positions, hashed by value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BitSet(Vec<u64>);

impl BitSet {
    fn new(len: usize) -> Self {
        Self(vec![0; len.div_ceil(64)])
    }

    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

/// Sentinel of the circular entry list.
const HEAD: usize = 0;

/// The search state: a circular doubly linked list of call and return
/// entries in time order, from which linearized operations are unlinked
/// (and relinked on backtracking, in reverse order, as in "dancing links").
///
/// Entry `0` is the sentinel; entries `1 + 2p` and `2 + 2p` are the call and
/// the return of the operation at position `p` of `ops`.
struct Search<'a, 'h, M: Model> {
    ops: &'a [Operation<'h, M::Op, M::Ret>],
    next: Vec<usize>,
    prev: Vec<usize>,
    max_states: usize,
    completed: usize,
}

impl<'a, 'h, M: Model> Search<'a, 'h, M> {
    fn new(ops: &'a [Operation<'h, M::Op, M::Ret>], max_states: usize) -> Self {
        // Calls sort before returns at equal times (equal times overlap);
        // pending operations return after everything else.
        let mut entries: Vec<(u64, u8, usize)> = Vec::with_capacity(2 * ops.len());
        for (p, op) in ops.iter().enumerate() {
            entries.push((op.invoked, 0, 1 + 2 * p));
            let ret_key = match op.response {
                Some((time, _)) => (time, 1),
                None => (u64::MAX, 2),
            };
            entries.push((ret_key.0, ret_key.1, 2 + 2 * p));
        }
        entries.sort_unstable();
        let n = entries.len() + 1;
        let (mut next, mut prev) = (vec![HEAD; n], vec![HEAD; n]);
        let mut last = HEAD;
        for &(_, _, e) in &entries {
            next[last] = e;
            prev[e] = last;
            last = e;
        }
        next[last] = HEAD;
        prev[HEAD] = last;
        let completed = ops.iter().filter(|op| op.response.is_some()).count();
        Self {
            ops,
            next,
            prev,
            max_states,
            completed,
        }
    }

    fn unlink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = n;
        self.prev[n] = p;
    }

    fn relink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = e;
        self.prev[n] = e;
    }

    fn run(mut self, init: M) -> Result<Linearization, Violation> {
        let mut linearized = BitSet::new(self.ops.len());
        let mut seen: HashSet<(BitSet, M)> = HashSet::new();
        // (call entry, state before it) for each linearized operation.
        let mut stack: Vec<(usize, M)> = Vec::new();
        let mut longest: Vec<usize> = Vec::new();
        let mut state = init.clone();
        let mut done = 0; // completed operations on the stack
        let mut entry = self.next[HEAD];
        while done < self.completed {
            // Every call's return is in the list after it, so the list never
            // ends on a call while completed operations remain.
            debug_assert_ne!(entry, HEAD, "invariant: the scan stops at a return");
            let p = (entry - 1) / 2;
            if entry % 2 == 1 {
                // A call: try to linearize operation `p` now.
                let op = &self.ops[p];
                let mut after = state.clone();
                let ret = after.step(op.op);
                let fits = op.response.is_none_or(|(_, want)| *want == ret);
                if fits {
                    linearized.insert(p);
                    let key = (linearized.clone(), after);
                    if !seen.contains(&key) {
                        if seen.len() >= self.max_states {
                            return Err(Violation::StateLimit {
                                limit: self.max_states,
                                states_explored: seen.len(),
                                completed_ops: self.completed,
                                longest_prefix_len: longest.len(),
                            });
                        }
                        let after = key.1.clone();
                        seen.insert(key);
                        stack.push((entry, std::mem::replace(&mut state, after)));
                        self.unlink(entry);
                        self.unlink(entry + 1);
                        done += usize::from(op.response.is_some());
                        if stack.len() > longest.len() {
                            longest = stack.iter().map(|&(e, _)| (e - 1) / 2).collect();
                        }
                        entry = self.next[HEAD];
                        continue;
                    }
                    linearized.remove(p);
                }
                entry = self.next[entry];
            } else {
                // The return of an operation not yet linearized: every
                // choice since the last linearization failed; backtrack.
                let Some((call, before)) = stack.pop() else {
                    return Err(self.not_linearizable(init, &longest, seen.len()));
                };
                let q = (call - 1) / 2;
                self.relink(call + 1);
                self.relink(call);
                linearized.remove(q);
                done -= usize::from(self.ops[q].response.is_some());
                state = before;
                entry = self.next[call];
            }
        }
        Ok(Linearization {
            order: stack
                .iter()
                .map(|&(e, _)| self.ops[(e - 1) / 2].index)
                .collect(),
            states_explored: seen.len(),
        })
    }

    /// Builds the report: the longest prefix, the state after it, and the
    /// completed operations that could have come next.
    #[cold]
    fn not_linearizable(
        &self,
        mut state: M,
        longest: &[usize],
        states_explored: usize,
    ) -> Violation {
        let mut placed = vec![false; self.ops.len()];
        for &p in longest {
            state.step(self.ops[p].op);
            placed[p] = true;
        }
        let remaining = || {
            self.ops
                .iter()
                .zip(&placed)
                .filter(|(op, &placed)| !placed && op.response.is_some())
                .map(|(op, _)| op)
        };
        // An operation can come next iff no remaining one returned before it
        // was invoked.
        let first_return = remaining()
            .filter_map(|op| op.response.map(|(time, _)| time))
            .min()
            .unwrap_or(u64::MAX);
        let unplaced = remaining()
            .filter(|op| op.invoked <= first_return)
            .map(|op| {
                let ret = state.clone().step(op.op);
                Unplaced {
                    op: summary(op),
                    model_ret: format!("{ret:?}"),
                    ret_matches: op.response.is_some_and(|(_, want)| *want == ret),
                }
            })
            .collect();
        Violation::NotLinearizable {
            completed_ops: self.completed,
            longest_prefix: longest.iter().map(|&p| summary(&self.ops[p])).collect(),
            state_after_prefix: format!("{state:?}"),
            unplaced,
            states_explored,
        }
    }
}

fn summary<Op: std::fmt::Debug, Ret: std::fmt::Debug>(op: &Operation<'_, Op, Ret>) -> OpSummary {
    OpSummary {
        index: op.index,
        thread: op.thread,
        op: format!("{:?}", op.op),
        ret: op.response.map(|(_, ret)| format!("{ret:?}")),
        invoked: op.invoked,
        returned: op.response.map(|(time, _)| time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose operations return their argument.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Echo;

    impl Model for Echo {
        type Op = u8;
        type Ret = u8;
        fn step(&mut self, op: &u8) -> u8 {
            *op
        }
    }

    #[test]
    fn bitset_tracks_members_across_words() {
        let mut a = BitSet::new(130);
        let mut b = BitSet::new(130);
        a.insert(129);
        a.insert(3);
        assert_ne!(a, b);
        b.insert(3);
        b.insert(129);
        assert_eq!(a, b);
        a.remove(129);
        assert_eq!(a.0, vec![8, 0, 0]);
    }

    #[test]
    fn entries_are_time_ordered_with_calls_first_and_pending_last() {
        let mut h = History::<u8, u8>::new();
        h.invoke(0, 1); // pending
        h.push(crate::lin::Event {
            thread: 1,
            time: 5,
            kind: crate::lin::EventKind::Invoke(2),
        });
        h.push(crate::lin::Event {
            thread: 1,
            time: 7,
            kind: crate::lin::EventKind::Return(2),
        });
        h.push(crate::lin::Event {
            thread: 2,
            time: 7,
            kind: crate::lin::EventKind::Invoke(3),
        });
        h.respond(2, 3);
        let ops = h.operations().expect("well formed");
        let search = Search::<Echo>::new(&ops, 10);
        let mut order = Vec::new();
        let mut e = search.next[HEAD];
        while e != HEAD {
            order.push(e);
            e = search.next[e];
        }
        // op0 call, op1 call, op2 call (time 7) before op1 return (time 7),
        // op2 return, op0 (pending) return.
        assert_eq!(order, vec![1, 3, 5, 4, 6, 2]);
        // Everything fits; the pending operation is linearized eagerly.
        let lin = search.run(Echo).expect("every result echoes its operation");
        assert_eq!(lin.order, vec![0, 1, 3]);
    }
}
