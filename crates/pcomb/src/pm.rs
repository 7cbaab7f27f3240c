//! TEMPORARY placeholder for the `pmem` crate's API until its branch is merged.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub trait Persist: Send + Sync + 'static {
    fn pwb(&self, addr: *const u8, len: usize);
    fn pfence(&self);
    fn psync(&self);
}

#[derive(Debug, Default, Clone, Copy)]
pub struct NoPersist;

impl Persist for NoPersist {
    fn pwb(&self, _addr: *const u8, _len: usize) {}
    fn pfence(&self) {}
    fn psync(&self) {}
}

/// # Safety
/// Every bit pattern valid, no padding, no pointers.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
// SAFETY: integers: any bit pattern is valid, no padding.
unsafe impl Pod for u64 {}
// SAFETY: as above.
unsafe impl Pod for i64 {}
// SAFETY: as above.
unsafe impl Pod for u32 {}
// SAFETY: as above.
unsafe impl Pod for () {}
