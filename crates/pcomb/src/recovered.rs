//! What `recover` found out about a thread's interrupted operation.

/// The outcome of `recover(op, seq)` for an operation that was pending when the system crashed
/// (paper §3 "Persistence", Algorithm 1 lines 3-6 / Algorithm 3 lines 4-7).
///
/// # Examples
///
/// ```
/// use pcomb::Recovered;
///
/// let r = Recovered::Applied(7u64);
/// assert!(r.took_effect_before_crash());
/// assert_eq!(r.into_response(), 7);
/// assert!(!Recovered::Reexecuted(1u64).took_effect_before_crash());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovered<R> {
    /// The operation had taken effect (its effect is in the recovered state); this is the
    /// response it computed before the crash.
    Applied(R),
    /// The operation had not taken effect; it has now been executed, with this response.
    Reexecuted(R),
}

impl<R> Recovered<R> {
    /// Whether the operation had taken effect before the crash.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(pcomb::Recovered::Applied(()).took_effect_before_crash());
    /// ```
    pub fn took_effect_before_crash(&self) -> bool {
        matches!(self, Self::Applied(_))
    }

    /// The operation's response, whichever way it was obtained.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::Recovered::Reexecuted(3).into_response(), 3);
    /// ```
    pub fn into_response(self) -> R {
        match self {
            Self::Applied(r) | Self::Reexecuted(r) => r,
        }
    }
}
