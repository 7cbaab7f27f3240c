//! Thread slots: which of the `max_threads` thread ids have a live handle.

use crate::error::CombRegisterError;
use crate::sync::{AtomicBool, Ordering};

/// One flag per thread id.
#[derive(Debug)]
pub(crate) struct Slots {
    in_use: Box<[AtomicBool]>,
}

impl Slots {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            in_use: (0..n).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Claims the lowest free id.
    pub(crate) fn claim_any(&self) -> Result<usize, CombRegisterError> {
        for id in 0..self.in_use.len() {
            if self.claim(id).is_ok() {
                return Ok(id);
            }
        }
        Err(CombRegisterError::TooManyThreads {
            max_threads: self.in_use.len(),
        })
    }

    /// Claims `id`.
    pub(crate) fn claim(&self, id: usize) -> Result<(), CombRegisterError> {
        let slot = self.in_use.get(id).ok_or(CombRegisterError::OutOfRange {
            id,
            max_threads: self.in_use.len(),
        })?;
        // Acquire: pairs with the Release in `release`, so the new owner sees everything the
        // previous owner did with the slot (its request record).
        slot.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| ())
            .map_err(|_| CombRegisterError::InUse { id })
    }

    /// Frees `id` (handle drop).
    pub(crate) fn release(&self, id: usize) {
        // Release: pairs with the Acquire in `claim`.
        self.in_use[id].store(false, Ordering::Release);
    }
}

/// A claimed thread slot; dropping it frees the id (a handle's drop).
#[derive(Debug)]
pub(crate) struct Seat<'a> {
    slots: &'a Slots,
    pub(crate) id: usize,
}

impl<'a> Seat<'a> {
    /// Claims the lowest free id.
    pub(crate) fn any(slots: &'a Slots) -> Result<Self, CombRegisterError> {
        let id = slots.claim_any()?;
        Ok(Self { slots, id })
    }

    /// Claims `id`.
    pub(crate) fn at(slots: &'a Slots, id: usize) -> Result<Self, CombRegisterError> {
        slots.claim(id)?;
        Ok(Self { slots, id })
    }
}

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        self.slots.release(self.id);
    }
}
