//! Single-word objects: a register and a counter.

use crate::lin::Model;

/// An operation on a [`Register`].
///
/// # Examples
///
/// ```
/// use testkit::models::RegisterOp;
///
/// assert_ne!(RegisterOp::Read, RegisterOp::Write(0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    /// Reads the value.
    Read,
    /// Replaces the value.
    Write(u64),
}

/// The result of a [`RegisterOp`].
///
/// # Examples
///
/// ```
/// use testkit::models::RegisterRet;
///
/// assert_ne!(RegisterRet::Value(0), RegisterRet::Written);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterRet {
    /// [`RegisterOp::Read`]: the value read.
    Value(u64),
    /// [`RegisterOp::Write`] completed.
    Written,
}

/// A read/write register holding a `u64`.
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{Register, RegisterOp, RegisterRet};
///
/// let mut r = Register::new(3);
/// assert_eq!(r.step(&RegisterOp::Read), RegisterRet::Value(3));
/// assert_eq!(r.step(&RegisterOp::Write(4)), RegisterRet::Written);
/// assert_eq!(r.value(), 4);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Register {
    value: u64,
}

impl Register {
    /// A register holding `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(testkit::models::Register::new(9).value(), 9);
    /// ```
    pub fn new(value: u64) -> Self {
        Self { value }
    }

    /// The current value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(testkit::models::Register::default().value(), 0);
    /// ```
    pub fn value(&self) -> u64 {
        self.value
    }
}

impl Model for Register {
    type Op = RegisterOp;
    type Ret = RegisterRet;

    fn step(&mut self, op: &RegisterOp) -> RegisterRet {
        match *op {
            RegisterOp::Read => RegisterRet::Value(self.value),
            RegisterOp::Write(value) => {
                self.value = value;
                RegisterRet::Written
            }
        }
    }
}

/// An operation on a [`Counter`].
///
/// # Examples
///
/// ```
/// use testkit::models::CounterOp;
///
/// assert_ne!(CounterOp::Add(0), CounterOp::Get);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CounterOp {
    /// Adds to the counter (wrapping on overflow), like `fetch_add`.
    Add(u64),
    /// Reads the counter.
    Get,
}

/// The result of a [`CounterOp`].
///
/// # Examples
///
/// ```
/// use testkit::models::CounterRet;
///
/// assert_ne!(CounterRet::Previous(1), CounterRet::Value(1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CounterRet {
    /// [`CounterOp::Add`]: the value before the addition.
    Previous(u64),
    /// [`CounterOp::Get`]: the value.
    Value(u64),
}

/// A `u64` counter with `fetch_add` semantics.
///
/// # Examples
///
/// ```
/// use testkit::lin::Model;
/// use testkit::models::{Counter, CounterOp, CounterRet};
///
/// let mut c = Counter::new();
/// assert_eq!(c.step(&CounterOp::Add(5)), CounterRet::Previous(0));
/// assert_eq!(c.step(&CounterOp::Add(1)), CounterRet::Previous(5));
/// assert_eq!(c.step(&CounterOp::Get), CounterRet::Value(6));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counter {
    value: u64,
}

impl Counter {
    /// A counter at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(testkit::models::Counter::new().value(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The current value.
    ///
    /// # Examples
    ///
    /// ```
    /// use testkit::lin::Model;
    /// use testkit::models::{Counter, CounterOp};
    ///
    /// let mut c = Counter::new();
    /// c.step(&CounterOp::Add(2));
    /// assert_eq!(c.value(), 2);
    /// ```
    pub fn value(&self) -> u64 {
        self.value
    }
}

impl Model for Counter {
    type Op = CounterOp;
    type Ret = CounterRet;

    fn step(&mut self, op: &CounterOp) -> CounterRet {
        match *op {
            CounterOp::Add(n) => {
                let previous = self.value;
                self.value = previous.wrapping_add(n);
                CounterRet::Previous(previous)
            }
            CounterOp::Get => CounterRet::Value(self.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_add_wraps_instead_of_panicking() {
        let mut c = Counter { value: u64::MAX };
        assert_eq!(c.step(&CounterOp::Add(2)), CounterRet::Previous(u64::MAX));
        assert_eq!(c.value(), 1);
    }

    #[test]
    fn register_read_does_not_change_state() {
        let mut r = Register::new(7);
        let before = r.clone();
        r.step(&RegisterOp::Read);
        assert_eq!(r, before);
    }
}
