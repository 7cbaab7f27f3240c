//! Histories: time-stamped invocation and response events.

use super::violation::{Malformation, Violation};
use std::collections::HashMap;

/// What happened in an [`Event`].
///
/// # Examples
///
/// ```
/// use testkit::lin::{EventKind, History};
///
/// let mut h = History::<&str, u32>::new();
/// h.invoke(0, "len").respond(0, 3);
/// assert_eq!(h.events()[0].kind, EventKind::Invoke("len"));
/// assert_eq!(h.events()[1].kind, EventKind::Return(3));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKind<Op, Ret> {
    /// The thread invoked this operation.
    Invoke(Op),
    /// The thread's outstanding operation returned this value.
    Return(Ret),
}

/// One invocation or response by one thread, at one logical time.
///
/// A response belongs to the single outstanding invocation of the same
/// thread, as in Herlihy & Wing's definition of a history.
///
/// # Examples
///
/// ```
/// use testkit::lin::{Event, EventKind, History};
///
/// let h = History::from_events(vec![
///     Event { thread: 3, time: 10, kind: EventKind::Invoke("pop") },
///     Event { thread: 3, time: 12, kind: EventKind::Return(Some(4)) },
/// ]);
/// assert_eq!(h.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event<Op, Ret> {
    /// The thread that invoked or received a response (any number; threads
    /// are only compared for equality).
    pub thread: usize,
    /// The logical time of the event. Events are ordered by time, ties keep
    /// their order in the history; an operation precedes another only if its
    /// response time is strictly smaller than the other's invocation time.
    pub time: u64,
    /// The invocation or the response.
    pub kind: EventKind<Op, Ret>,
}

/// A concurrent history: invocation and response events of many threads.
///
/// Build one by hand with [`invoke`](History::invoke) and
/// [`respond`](History::respond), which stamp each event with the next
/// logical time, or gather one from a [`Recorder`](super::Recorder). The
/// history is not validated when built; [`check`](fn@super::check) reports an
/// ill-formed one as [`Violation::IllFormed`].
///
/// Operations are identified by the index of their invocation event in
/// [`events`](History::events); the checker's reports use that index.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History};
/// use testkit::models::{Queue, QueueOp, QueueRet};
///
/// // Two enqueues overlap, so either order is allowed.
/// let mut h = History::new();
/// h.invoke(0, QueueOp::Enqueue(1));
/// h.invoke(1, QueueOp::Enqueue(2));
/// h.respond(0, QueueRet::Enqueued).respond(1, QueueRet::Enqueued);
/// h.invoke(0, QueueOp::Dequeue).respond(0, QueueRet::Dequeued(Some(2)));
/// assert!(check(Queue::new(), &h).is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History<Op, Ret> {
    events: Vec<Event<Op, Ret>>,
    next_time: u64,
}

impl<Op, Ret> Default for History<Op, Ret> {
    fn default() -> Self {
        Self::new()
    }
}

impl<Op, Ret> History<Op, Ret> {
    /// Creates an empty history whose logical clock starts at 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let h = testkit::lin::History::<u8, u8>::new();
    /// assert!(h.is_empty());
    /// ```
    pub fn new() -> Self {
        Self {
            events: Vec::new(),
            next_time: 0,
        }
    }

    /// Creates a history from events in any order (they are ordered by time
    /// when checked).
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{Event, EventKind, History};
    ///
    /// let mut h = History::from_events(vec![Event { thread: 0, time: 5, kind: EventKind::Invoke('a') }]);
    /// h.respond(0, 'b'); // stamped after the latest event
    /// assert_eq!(h.events()[1].time, 6);
    /// ```
    pub fn from_events(events: Vec<Event<Op, Ret>>) -> Self {
        let next_time = events
            .iter()
            .map(|e| e.time.saturating_add(1))
            .max()
            .unwrap_or(0);
        Self { events, next_time }
    }

    /// Creates a strictly sequential history on thread 0: each operation
    /// returns before the next is invoked.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{check, History};
    /// use testkit::models::{Counter, CounterOp, CounterRet};
    ///
    /// let h = History::sequential([
    ///     (CounterOp::Add(2), CounterRet::Previous(0)),
    ///     (CounterOp::Get, CounterRet::Value(2)),
    /// ]);
    /// assert_eq!(h.len(), 4);
    /// assert!(check(Counter::new(), &h).is_ok());
    /// ```
    pub fn sequential(ops: impl IntoIterator<Item = (Op, Ret)>) -> Self {
        let mut history = Self::new();
        for (op, ret) in ops {
            history.invoke(0, op).respond(0, ret);
        }
        history
    }

    /// Appends an invocation of `op` by `thread` at the next logical time.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = testkit::lin::History::<char, ()>::new();
    /// h.invoke(0, 'x').invoke(1, 'y');
    /// assert_eq!(h.events()[1].time, 1);
    /// ```
    pub fn invoke(&mut self, thread: usize, op: Op) -> &mut Self {
        self.push_now(thread, EventKind::Invoke(op))
    }

    /// Appends the response `ret` to `thread`'s outstanding operation at the
    /// next logical time.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = testkit::lin::History::<char, bool>::new();
    /// h.invoke(0, 'x').respond(0, true);
    /// assert_eq!(h.len(), 2);
    /// ```
    pub fn respond(&mut self, thread: usize, ret: Ret) -> &mut Self {
        self.push_now(thread, EventKind::Return(ret))
    }

    /// Appends an event with an explicit time; later [`invoke`](Self::invoke)
    /// and [`respond`](Self::respond) calls are stamped after it.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{Event, EventKind, History};
    ///
    /// let mut h = History::<u8, u8>::new();
    /// h.push(Event { thread: 0, time: 41, kind: EventKind::Invoke(1) });
    /// h.respond(0, 2);
    /// assert_eq!(h.events()[1].time, 42);
    /// ```
    pub fn push(&mut self, event: Event<Op, Ret>) {
        self.next_time = self.next_time.max(event.time.saturating_add(1));
        self.events.push(event);
    }

    /// The events, in the order they were added.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = testkit::lin::History::<u8, u8>::new();
    /// h.invoke(4, 0);
    /// assert_eq!(h.events()[0].thread, 4);
    /// ```
    pub fn events(&self) -> &[Event<Op, Ret>] {
        &self.events
    }

    /// The number of events (invocations plus responses).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = testkit::lin::History::<u8, u8>::new();
    /// h.invoke(0, 1).respond(0, 1).invoke(0, 2);
    /// assert_eq!(h.len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether the history has no events.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(testkit::lin::History::<u8, u8>::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The share of completed operations whose interval (invocation to response) intersects
    /// the interval of an operation of another thread, in `0.0..=1.0`; `0.0` for a history
    /// without completed operations or one that is not well formed. A linearizability check
    /// of a history with no overlap proves little: report this next to it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut h = testkit::lin::History::<u8, u8>::new();
    /// h.invoke(0, 1).invoke(1, 2).respond(0, 1).respond(1, 2); // these two overlap
    /// h.invoke(0, 3).respond(0, 3); // this one does not
    /// assert!((h.overlap_share() - 2.0 / 3.0).abs() < 1e-9);
    /// ```
    pub fn overlap_share(&self) -> f64 {
        let Ok(ops) = self.operations() else {
            return 0.0;
        };
        let done: Vec<(usize, u64, u64)> = ops
            .iter()
            .filter_map(|o| o.response.map(|(end, _)| (o.thread, o.invoked, end)))
            .collect();
        if done.is_empty() {
            return 0.0;
        }
        // Pending operations overlap everything after their invocation.
        let pending: Vec<(usize, u64)> = ops
            .iter()
            .filter(|o| o.response.is_none())
            .map(|o| (o.thread, o.invoked))
            .collect();
        let overlapping = done
            .iter()
            .filter(|&&(t, a0, a1)| {
                done.iter()
                    .any(|&(u, b0, b1)| u != t && a0 <= b1 && b0 <= a1)
                    || pending.iter().any(|&(u, b0)| u != t && b0 <= a1)
            })
            .count();
        overlapping as f64 / done.len() as f64
    }

    fn push_now(&mut self, thread: usize, kind: EventKind<Op, Ret>) -> &mut Self {
        let time = self.next_time;
        self.push(Event { thread, time, kind });
        self
    }

    /// Pairs invocations with responses, checking that every thread's
    /// sub-history is well formed.
    pub(crate) fn operations(&self) -> Result<Vec<Operation<'_, Op, Ret>>, Violation> {
        let mut order: Vec<usize> = (0..self.events.len()).collect();
        order.sort_by_key(|&i| self.events[i].time); // stable: ties keep their order
        let mut ops = Vec::new();
        let mut outstanding: HashMap<usize, usize> = HashMap::new(); // thread -> position in ops
        for i in order {
            let event = &self.events[i];
            match &event.kind {
                EventKind::Invoke(op) => {
                    if let Some(&pending) = outstanding.get(&event.thread) {
                        let pending: &Operation<'_, Op, Ret> = &ops[pending];
                        return Err(Violation::IllFormed {
                            thread: event.thread,
                            event: i,
                            problem: Malformation::InvokeWhilePending {
                                pending_event: pending.index,
                            },
                        });
                    }
                    outstanding.insert(event.thread, ops.len());
                    ops.push(Operation {
                        index: i,
                        thread: event.thread,
                        op,
                        invoked: event.time,
                        response: None,
                    });
                }
                EventKind::Return(ret) => {
                    let Some(pending) = outstanding.remove(&event.thread) else {
                        return Err(Violation::IllFormed {
                            thread: event.thread,
                            event: i,
                            problem: Malformation::ReturnWithoutInvoke,
                        });
                    };
                    ops[pending].response = Some((event.time, ret));
                }
            }
        }
        ops.sort_by_key(|op| op.index);
        Ok(ops)
    }
}

/// One operation of a well-formed history: an invocation and, unless it is
/// pending, its response.
#[derive(Debug)]
pub(crate) struct Operation<'h, Op, Ret> {
    /// Index of the invocation event in [`History::events`].
    pub(crate) index: usize,
    pub(crate) thread: usize,
    pub(crate) op: &'h Op,
    pub(crate) invoked: u64,
    /// Response time and value; `None` while pending.
    pub(crate) response: Option<(u64, &'h Ret)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_pair_by_thread_and_time() {
        let h = History::from_events(vec![
            Event {
                thread: 1,
                time: 3,
                kind: EventKind::<u8, u8>::Return(30),
            },
            Event {
                thread: 0,
                time: 0,
                kind: EventKind::Invoke(1),
            },
            Event {
                thread: 1,
                time: 1,
                kind: EventKind::Invoke(2),
            },
            Event {
                thread: 0,
                time: 2,
                kind: EventKind::Return(10),
            },
            Event {
                thread: 0,
                time: 4,
                kind: EventKind::Invoke(3),
            },
        ]);
        let ops = h.operations().expect("well formed");
        let summary: Vec<_> = ops
            .iter()
            .map(|o| {
                (
                    o.index,
                    o.thread,
                    *o.op,
                    o.invoked,
                    o.response.map(|(t, r)| (t, *r)),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (1, 0, 1, 0, Some((2, 10))),
                (2, 1, 2, 1, Some((3, 30))),
                (4, 0, 3, 4, None),
            ]
        );
    }

    #[test]
    fn explicit_times_advance_the_clock() {
        let mut h = History::<u8, u8>::new();
        h.push(Event {
            thread: 0,
            time: 9,
            kind: EventKind::Invoke(0),
        });
        h.push(Event {
            thread: 1,
            time: 2,
            kind: EventKind::Invoke(0),
        });
        h.respond(0, 0);
        assert_eq!(h.events()[2].time, 10);
    }
}
