//! Histories, their recording, and the linearizability checker.
//!
//! * [`Model`]: a deterministic sequential specification.
//! * [`History`]: a sequence of invocation and response [`Event`]s, built by
//!   hand ([`History::invoke`], [`History::respond`]) or gathered from a
//!   [`Recorder`] shared by many OS threads.
//! * [`check()`] / [`Checker::check`]: decide whether a history is
//!   linearizable with respect to a model; failures are typed [`Violation`]s.
//!
//! # Semantics
//!
//! Each thread's sub-history must be *well formed*: it alternates invocations
//! and responses, one outstanding operation at a time. An operation still
//! outstanding at the end of the history is *pending*: it may have taken
//! effect at any point after its invocation, or not at all. Operation `A`
//! *precedes* `B` in real time iff `A`'s response timestamp is strictly
//! smaller than `B`'s invocation timestamp; equal timestamps mean the two
//! overlap. A history is linearizable iff there is a sequential order of all
//! completed operations and some of the pending ones that respects real-time
//! precedence and in which the model returns every recorded response.
//!
//! # Algorithm
//!
//! The checker is the depth-first search of Wing & Gong ("Testing and
//! verifying concurrent objects", JPDC 1993) in the form given by Lowe
//! ("Testing for linearizability", CCPE 2017, section 3): calls and returns
//! sit in one time-ordered doubly linked list; the search linearizes the
//! first call it can, unlinks it with its return, restarts from the front,
//! and backtracks when it reaches a return whose call is not linearized yet.
//! Configurations — the set of linearized operations (a bitset) and the model
//! state — are memoized, so a configuration that failed once is never
//! explored again. A state budget ([`Checker::max_states`]) turns a
//! pathological blow-up into [`Violation::StateLimit`] instead of a hang.
//!
//! # Examples
//!
//! Two overlapping writes and a read that sees the one that was linearized
//! last:
//!
//! ```
//! use testkit::lin::{check, History};
//! use testkit::models::{Register, RegisterOp, RegisterRet};
//!
//! let mut h = History::new();
//! h.invoke(0, RegisterOp::Write(1));
//! h.invoke(1, RegisterOp::Write(2));
//! h.respond(1, RegisterRet::Written);
//! h.respond(0, RegisterRet::Written);
//! h.invoke(0, RegisterOp::Read).respond(0, RegisterRet::Value(1));
//! check(Register::new(0), &h).expect("Write(2) then Write(1) explains it");
//! ```

use std::fmt::Debug;
use std::hash::Hash;

mod check;
mod history;
mod recorder;
mod violation;

pub use check::{check, Checker, Linearization};
pub use history::{Event, EventKind, History};
pub use recorder::{PendingOp, Recorder, ThreadRecorder};
pub use violation::{Malformation, OpSummary, Unplaced, Violation};

/// A deterministic sequential specification of a concurrent object.
///
/// `step` applies one operation to the state and returns its result. It must
/// be a pure function of the state and the operation: the checker replays
/// operations in many orders and compares the results with recorded
/// responses. `Clone + Eq + Hash` let the checker memoize states, so keep
/// states small (a few keys or items) for fast checks.
///
/// # Examples
///
/// ```
/// use testkit::lin::{check, History, Model};
///
/// /// A flag that can be set once; `Set` reports whether it was clear.
/// #[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
/// struct Flag(bool);
///
/// impl Model for Flag {
///     type Op = ();
///     type Ret = bool;
///     fn step(&mut self, _op: &()) -> bool {
///         !std::mem::replace(&mut self.0, true)
///     }
/// }
///
/// let mut h = History::new();
/// h.invoke(0, ()).invoke(1, ()).respond(1, true).respond(0, false);
/// assert!(check(Flag::default(), &h).is_ok());
/// h.invoke(2, ()).respond(2, true); // a second winner: not linearizable
/// assert!(check(Flag::default(), &h).is_err());
/// ```
pub trait Model: Clone + Eq + Hash + Debug {
    /// An operation (with its arguments).
    type Op: Clone + Debug;
    /// The result of an operation.
    type Ret: Clone + PartialEq + Debug;

    /// Applies `op` to the state and returns its result.
    fn step(&mut self, op: &Self::Op) -> Self::Ret;
}
