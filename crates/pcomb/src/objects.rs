//! Small ready-made objects: the paper's AtomicFloat and a counter.
//!
//! They are `Pod` sequential structures, usable with both protocols in both modes, and are what
//! the examples, tests and the AtomicFloat benchmark run.

use nr_core::Dispatch;

use pmem::Pod;

/// The paper's synthetic AtomicFloat object (§6): `AtomicFloat(O, k)` reads `v`, sets
/// `v := v * k` and returns the value read. The value is held as `f64` bits, so states and
/// responses compare bit for bit (deterministic across threads and crashes).
///
/// # Examples
///
/// ```
/// use pcomb::objects::AtomicFloat;
/// use pcomb::Dispatch;
///
/// let mut f = AtomicFloat::new(2.0);
/// assert_eq!(f64::from_bits(f.dispatch_mut(1.5f64.to_bits())), 2.0);
/// assert_eq!(f.value(), 3.0);
/// assert_eq!(f64::from_bits(f.dispatch(())), 3.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct AtomicFloat {
    bits: u64,
}

// SAFETY:
// - `AtomicFloat` is `repr(transparent)` over a `u64`: no padding, every bit pattern valid;
// - it holds no pointers or references.
unsafe impl Pod for AtomicFloat {}

impl AtomicFloat {
    /// An object holding `v`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::objects::AtomicFloat::new(1.0).value(), 1.0);
    /// ```
    pub fn new(v: f64) -> Self {
        Self { bits: v.to_bits() }
    }

    /// The current value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::objects::AtomicFloat::new(0.5).value(), 0.5);
    /// ```
    pub fn value(&self) -> f64 {
        f64::from_bits(self.bits)
    }
}

impl Dispatch for AtomicFloat {
    /// Reads the value (as bits).
    type ReadOperation<'a> = ();
    /// The factor `k`, as `f64` bits.
    type WriteOperation = u64;
    /// The value before the operation, as `f64` bits.
    type Response = u64;

    fn dispatch(&self, _op: ()) -> u64 {
        self.bits
    }

    fn dispatch_mut(&mut self, k: u64) -> u64 {
        let old = self.bits;
        self.bits = (f64::from_bits(old) * f64::from_bits(k)).to_bits();
        old
    }
}

/// A `u64` counter: the write operation adds (wrapping) and returns the previous value, the read
/// operation returns the value.
///
/// # Examples
///
/// ```
/// use pcomb::objects::Counter;
/// use pcomb::Dispatch;
///
/// let mut c = Counter::default();
/// assert_eq!(c.dispatch_mut(5), 0);
/// assert_eq!(c.dispatch(()), 5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Counter {
    value: u64,
}

// SAFETY:
// - `Counter` is `repr(transparent)` over a `u64`: no padding, every bit pattern valid;
// - it holds no pointers or references.
unsafe impl Pod for Counter {}

impl Counter {
    /// A counter holding `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::objects::Counter::new(4).value(), 4);
    /// ```
    pub fn new(value: u64) -> Self {
        Self { value }
    }

    /// The current value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pcomb::objects::Counter::default().value(), 0);
    /// ```
    pub fn value(&self) -> u64 {
        self.value
    }
}

impl Dispatch for Counter {
    /// Reads the value.
    type ReadOperation<'a> = ();
    /// The amount to add.
    type WriteOperation = u64;
    /// The previous value (writes) or the value (reads).
    type Response = u64;

    fn dispatch(&self, _op: ()) -> u64 {
        self.value
    }

    fn dispatch_mut(&mut self, add: u64) -> u64 {
        let old = self.value;
        self.value = old.wrapping_add(add);
        old
    }
}
