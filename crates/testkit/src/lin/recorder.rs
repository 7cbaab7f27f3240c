//! Recording histories from many OS threads.

use super::history::{Event, EventKind, History};
use crate::sync::{lock, Arc, AtomicU64, Mutex, Ordering};
use std::fmt;

/// Distinguishes recorders, so a [`PendingOp`] is only ever matched with the
/// recorder that issued it.
static NEXT_RECORDER_ID: AtomicU64 = AtomicU64::new(0);

type Log<Op, Ret> = Arc<Mutex<Vec<Event<Op, Ret>>>>;

struct Shared<Op, Ret> {
    id: u64,
    /// The global logical clock; every event takes a distinct tick.
    clock: AtomicU64,
    /// One log per [`ThreadRecorder`], indexed by its thread id.
    logs: Mutex<Vec<Log<Op, Ret>>>,
}

impl<Op, Ret> Shared<Op, Ret> {
    fn tick(&self) -> u64 {
        // SeqCst (AcqRel would do): all ticks are RMWs on this one word. If
        // op A's response tick is smaller than op B's invocation tick, B's
        // fetch_add reads from A's release sequence, so A's completion
        // happens-before B's invocation — the real-time order that the
        // checker assumes of `a.returned < b.invoked`.
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
}

/// A thread-safe history recorder shared by the threads of a test.
///
/// Each OS thread takes its own [`ThreadRecorder`] with
/// [`thread`](Recorder::thread) and logs its operations there without
/// contending with the others; [`into_history`](Recorder::into_history)
/// gathers every thread's events, ordered by a global logical clock.
/// Cloning a `Recorder` yields another handle to the same recording.
///
/// # Examples
///
/// ```
/// use std::sync::Mutex;
/// use testkit::lin::{check, Model, Recorder};
/// use testkit::models::{Queue, QueueOp};
///
/// let queue = Mutex::new(Queue::new());
/// let recorder = Recorder::new();
/// std::thread::scope(|s| {
///     for t in 0..3 {
///         let (queue, recorder) = (&queue, recorder.clone());
///         s.spawn(move || {
///             let mut rec = recorder.thread();
///             for op in [QueueOp::Enqueue(t), QueueOp::Dequeue] {
///                 let id = rec.invoke(op.clone());
///                 let ret = queue.lock().unwrap().step(&op);
///                 rec.complete(id, ret);
///             }
///         });
///     }
/// });
/// assert!(check(Queue::new(), &recorder.into_history()).is_ok());
/// ```
pub struct Recorder<Op, Ret> {
    shared: Arc<Shared<Op, Ret>>,
}

impl<Op, Ret> Clone for Recorder<Op, Ret> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<Op, Ret> Default for Recorder<Op, Ret> {
    fn default() -> Self {
        Self::new()
    }
}

impl<Op, Ret> fmt::Debug for Recorder<Op, Ret> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("threads", &lock(&self.shared.logs).len())
            // Relaxed: a diagnostic snapshot, ordered with nothing.
            .field("clock", &self.shared.clock.load(Ordering::Relaxed))
            .finish()
    }
}

impl<Op, Ret> Recorder<Op, Ret> {
    /// Creates an empty recording.
    ///
    /// # Examples
    ///
    /// ```
    /// let recorder = testkit::lin::Recorder::<u8, u8>::new();
    /// assert!(recorder.into_history().is_empty());
    /// ```
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                // Relaxed: a unique number, ordered with nothing.
                id: NEXT_RECORDER_ID.fetch_add(1, Ordering::Relaxed),
                clock: AtomicU64::new(0),
                logs: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Registers a new thread and returns its recorder. Thread ids are
    /// assigned 0, 1, 2, ... in registration order.
    ///
    /// Use one per OS thread: operations logged through the same
    /// `ThreadRecorder` form one sequential sub-history.
    ///
    /// # Examples
    ///
    /// ```
    /// let recorder = testkit::lin::Recorder::<u8, u8>::new();
    /// let (a, b) = (recorder.thread(), recorder.thread());
    /// assert_eq!((a.thread_id(), b.thread_id()), (0, 1));
    /// ```
    pub fn thread(&self) -> ThreadRecorder<Op, Ret> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut logs = lock(&self.shared.logs);
        let thread = logs.len();
        logs.push(Arc::clone(&log));
        ThreadRecorder {
            thread,
            shared: Arc::clone(&self.shared),
            log,
        }
    }

    /// Gathers every thread's events, ordered by time, into a [`History`].
    ///
    /// Call it after joining the threads: events a still-live
    /// [`ThreadRecorder`] logs afterwards are not included. Operations
    /// invoked but never completed are pending in the history.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{EventKind, Recorder};
    ///
    /// let recorder = Recorder::new();
    /// let mut rec = recorder.thread();
    /// let id = rec.invoke("push");
    /// rec.complete(id, ());
    /// let _pending = rec.invoke("pop"); // never completed
    /// let h = recorder.into_history();
    /// assert_eq!(h.len(), 3);
    /// assert_eq!(h.events()[2].kind, EventKind::Invoke("pop"));
    /// ```
    pub fn into_history(self) -> History<Op, Ret>
    where
        Op: Clone,
        Ret: Clone,
    {
        let mut events: Vec<Event<Op, Ret>> = Vec::new();
        for log in lock(&self.shared.logs).iter() {
            events.extend(lock(log).iter().cloned());
        }
        events.sort_by_key(|e| e.time);
        History::from_events(events)
    }
}

/// The recorder of one thread, obtained from [`Recorder::thread`].
///
/// It is `Send`, so it can be moved into the thread that uses it.
///
/// # Examples
///
/// ```
/// use testkit::lin::Recorder;
///
/// let recorder = Recorder::<&str, usize>::new();
/// let mut rec = recorder.thread();
/// std::thread::spawn(move || {
///     let id = rec.invoke("len");
///     rec.complete(id, 0);
/// })
/// .join()
/// .unwrap();
/// assert_eq!(recorder.into_history().len(), 2);
/// ```
pub struct ThreadRecorder<Op, Ret> {
    thread: usize,
    shared: Arc<Shared<Op, Ret>>,
    log: Log<Op, Ret>,
}

impl<Op, Ret> fmt::Debug for ThreadRecorder<Op, Ret> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadRecorder")
            .field("thread", &self.thread)
            .field("events", &lock(&self.log).len())
            .finish()
    }
}

/// An operation invoked through a [`ThreadRecorder`] and not yet completed;
/// pass it to [`ThreadRecorder::complete`]. Dropping it leaves the operation
/// pending.
///
/// # Examples
///
/// ```
/// let recorder = testkit::lin::Recorder::<u8, u8>::new();
/// let mut rec = recorder.thread();
/// let id = rec.invoke(7);
/// assert_eq!((id.thread(), id.invoked_at()), (0, 0));
/// rec.complete(id, 7);
/// ```
#[derive(Debug)]
#[must_use = "complete the operation with ThreadRecorder::complete, or it stays pending"]
pub struct PendingOp {
    recorder: u64,
    thread: usize,
    invoked: u64,
}

impl PendingOp {
    /// The id of the thread that invoked the operation.
    ///
    /// # Examples
    ///
    /// ```
    /// let recorder = testkit::lin::Recorder::<(), ()>::new();
    /// let _first = recorder.thread();
    /// assert_eq!(recorder.thread().invoke(()).thread(), 1);
    /// ```
    pub fn thread(&self) -> usize {
        self.thread
    }

    /// The logical time of the invocation.
    ///
    /// # Examples
    ///
    /// ```
    /// let recorder = testkit::lin::Recorder::<(), ()>::new();
    /// let mut rec = recorder.thread();
    /// let a = rec.invoke(());
    /// rec.complete(a, ());
    /// assert_eq!(rec.invoke(()).invoked_at(), 2);
    /// ```
    pub fn invoked_at(&self) -> u64 {
        self.invoked
    }
}

impl<Op, Ret> ThreadRecorder<Op, Ret> {
    /// This thread's id in the history.
    ///
    /// # Examples
    ///
    /// ```
    /// let recorder = testkit::lin::Recorder::<u8, u8>::new();
    /// assert_eq!(recorder.thread().thread_id(), 0);
    /// ```
    pub fn thread_id(&self) -> usize {
        self.thread
    }

    /// Logs the invocation of `op`; call it just before running the
    /// operation.
    ///
    /// # Examples
    ///
    /// ```
    /// let recorder = testkit::lin::Recorder::<u8, u8>::new();
    /// let mut rec = recorder.thread();
    /// let id = rec.invoke(1);
    /// rec.complete(id, 2);
    /// ```
    pub fn invoke(&mut self, op: Op) -> PendingOp {
        let time = self.shared.tick();
        lock(&self.log).push(Event {
            thread: self.thread,
            time,
            kind: EventKind::Invoke(op),
        });
        PendingOp {
            recorder: self.shared.id,
            thread: self.thread,
            invoked: time,
        }
    }

    /// Logs the response `ret` to `pending`; call it just after the
    /// operation returns.
    ///
    /// The response is logged on the thread that invoked `pending`. A
    /// `PendingOp` from another [`Recorder`] is logged on this thread (and
    /// will most likely make the history ill formed).
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::{EventKind, Recorder};
    ///
    /// let recorder = Recorder::<u8, bool>::new();
    /// let mut rec = recorder.thread();
    /// let id = rec.invoke(3);
    /// rec.complete(id, true);
    /// assert_eq!(recorder.into_history().events()[1].kind, EventKind::Return(true));
    /// ```
    pub fn complete(&mut self, pending: PendingOp, ret: Ret) {
        let time = self.shared.tick();
        let on_self = pending.recorder != self.shared.id || pending.thread == self.thread;
        let event = Event {
            thread: if on_self { self.thread } else { pending.thread },
            time,
            kind: EventKind::Return(ret),
        };
        if on_self {
            lock(&self.log).push(event);
        } else {
            self.complete_elsewhere(pending.thread, event);
        }
    }

    /// Logs `event` in the log of another thread of the same recorder.
    #[cold]
    fn complete_elsewhere(&self, thread: usize, event: Event<Op, Ret>) {
        let log = lock(&self.shared.logs).get(thread).map(Arc::clone);
        // Thread ids of this recorder always index its logs.
        lock(log.as_ref().unwrap_or(&self.log)).push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_distinct_and_increasing_per_thread() {
        let recorder = Recorder::<u32, u32>::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let mut rec = recorder.thread();
                s.spawn(move || {
                    for i in 0..100 {
                        let id = rec.invoke(i);
                        rec.complete(id, i);
                    }
                });
            }
        });
        let h = recorder.into_history();
        let times: Vec<u64> = h.events().iter().map(|e| e.time).collect();
        assert_eq!(times, (0..800).collect::<Vec<_>>());
    }

    #[test]
    fn completing_on_another_recorder_of_the_same_recording_routes_to_the_invoker() {
        let recorder = Recorder::<u8, u8>::new();
        let (mut a, mut b) = (recorder.thread(), recorder.thread());
        let id = a.invoke(1);
        b.complete(id, 2);
        let h = recorder.into_history();
        assert!(h.events().iter().all(|e| e.thread == 0));
        assert!(h.operations().is_ok());
    }

    #[test]
    fn a_foreign_pending_op_is_logged_on_the_completing_thread() {
        let (r1, r2) = (Recorder::<u8, u8>::new(), Recorder::<u8, u8>::new());
        let (mut a, mut b) = (r1.thread(), r2.thread());
        let _other = r2.thread();
        let id = a.invoke(1);
        b.complete(id, 1);
        assert_eq!(r2.into_history().events()[0].thread, 0);
    }
}
