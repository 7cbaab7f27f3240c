//! The error reported by the structural checkers (`check_invariants`).

use std::fmt;

/// A broken structural invariant, found by a structure's `check_invariants` method.
///
/// Cause: a bug in this crate (the checkers exist for tests; a correct structure never reports
/// one). Remedy: report the operation sequence that led to it; the message names the structure,
/// the invariant and where it broke.
///
/// # Examples
///
/// ```
/// use seqds::SkipListPq;
///
/// let pq: SkipListPq = [3, 1, 2].into_iter().collect();
/// assert!(pq.check_invariants().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantError {
    structure: &'static str,
    violation: String,
}

impl InvariantError {
    pub(crate) fn new(structure: &'static str, violation: String) -> Self {
        Self {
            structure,
            violation,
        }
    }

    /// The structure that failed its check (`"SkipListPq"`, `"PairingHeap"`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = seqds::PairingHeap::new();
    /// assert!(heap.check_invariants().is_ok());
    /// ```
    pub fn structure(&self) -> &'static str {
        self.structure
    }

    /// What is wrong, in words.
    ///
    /// # Examples
    ///
    /// ```
    /// let heap = seqds::PairingHeap::new();
    /// assert!(heap.check_invariants().map_err(|e| e.violation().to_owned()).is_ok());
    /// ```
    pub fn violation(&self) -> &str {
        &self.violation
    }
}

impl fmt::Display for InvariantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} invariant broken: {}", self.structure, self.violation)
    }
}

impl std::error::Error for InvariantError {}

/// Returns `Err(InvariantError)` from the enclosing checker when `cond` is false.
macro_rules! ensure {
    ($structure:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::invariant::InvariantError::new($structure, format!($($fmt)+)));
        }
    };
}
pub(crate) use ensure;
