//! The baselines: `std::sync::Mutex` over volatile std collections, `crossbeam_queue::SegQueue`,
//! and `Mutex+persist` (a `Mutex` over an array structure in a mapped region, persisting what
//! each operation changed: durable, not detectable).

#![allow(clippy::disallowed_types)] // the Mutex baselines are std's Mutex, what users would pick

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Mutex;

use crossbeam_queue::SegQueue;
use pcomb::pmem::{Hardware, Persist, Region};

use super::structures::PairOps;
use crate::BenchError;

pub(super) struct MutexVec<'a>(pub(super) &'a Mutex<Vec<u64>>);

impl PairOps for MutexVec<'_> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.0.lock().map_err(|_| BenchError::Poisoned)?.push(v);
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.0.lock().map_err(|_| BenchError::Poisoned)?.pop())
    }
}

impl PairOps for &Mutex<VecDeque<u64>> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.lock().map_err(|_| BenchError::Poisoned)?.push_back(v);
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.lock().map_err(|_| BenchError::Poisoned)?.pop_front())
    }
}

impl PairOps for &Mutex<BinaryHeap<Reverse<u64>>> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.lock()
            .map_err(|_| BenchError::Poisoned)?
            .push(Reverse(v));
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self
            .lock()
            .map_err(|_| BenchError::Poisoned)?
            .pop()
            .map(|r| r.0))
    }
}

impl PairOps for &SegQueue<u64> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.push(v);
        Ok(())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.pop())
    }
}

/// A `Mutex` over a sequential array structure in a region, persisting what each operation
/// changed (pwb of the written lines, pfence, then the length/index word, pwb, psync): durable
/// (a completed operation survives a crash), not detectable.
pub(super) struct MutexPersist {
    region: Region<Hardware>,
    /// Word 0: length (stack, heap) or head (queue); word 1: tail (queue); words 8..: slots.
    base: usize,
    slots: usize,
    lock: Mutex<()>,
}

/// Access to a [`MutexPersist`]'s words while its lock is held.
pub(super) struct Words<'a>(&'a MutexPersist);

impl Words<'_> {
    fn word(&self, i: usize) -> *mut u64 {
        (self.0.base as *mut u64).wrapping_add(i)
    }
    pub(super) fn get(&self, i: usize) -> u64 {
        assert!(i < self.0.slots + 8, "word {i} out of bounds");
        // SAFETY:
        // - `i < slots + 8` words of the 8-aligned allocation `base` points to (checked above);
        // - `Words` exists only while the lock is held, so no other thread accesses the words.
        unsafe { self.word(i).read() }
    }
    pub(super) fn set(&self, i: usize, v: u64) {
        assert!(i < self.0.slots + 8, "word {i} out of bounds");
        // SAFETY: as for `get`.
        unsafe { self.word(i).write(v) };
    }
    pub(super) fn pwb(&self, i: usize, words: usize) {
        assert!(
            i + words <= self.0.slots + 8,
            "words {i}..{} out of bounds",
            i + words
        );
        // SAFETY: words `i..i + words` lie inside the allocation `base` points to (checked
        // above), which the region keeps mapped while `self.0` lives.
        unsafe { self.0.region.persist().pwb(self.word(i).cast(), words * 8) };
    }
    fn pfence(&self) {
        self.0.region.persist().pfence();
    }
    pub(super) fn psync(&self) {
        self.0.region.persist().psync();
    }
}

impl MutexPersist {
    pub(super) fn new(region: Region<Hardware>, slots: usize) -> Result<Self, BenchError> {
        let bytes = ((slots + 8) * 8) as u64;
        let off = region.allocator(bytes).alloc_bytes(bytes, 64)?;
        let base = region.ptr::<u64>(off)?.as_ptr() as usize;
        Ok(Self {
            region,
            base,
            slots,
            lock: Mutex::new(()),
        })
    }

    pub(super) fn with<R>(&self, f: impl FnOnce(&Words<'_>) -> R) -> Result<R, BenchError> {
        let _g = self.lock.lock().map_err(|_| BenchError::Poisoned)?;
        Ok(f(&Words(self)))
    }

    /// Binary min-heap in the slots; persists the touched array range and the length.
    pub(super) fn heap_op(&self, insert: Option<u64>) -> Result<Option<u64>, BenchError> {
        self.with(|w| {
            let n = w.get(0) as usize;
            let key = |i: usize| w.get(8 + i);
            let (mut lo, mut hi, ret, len);
            match insert {
                Some(k) => {
                    if n == self.slots {
                        return None;
                    }
                    let mut i = n;
                    w.set(8 + i, k);
                    hi = i;
                    while i > 0 && key((i - 1) / 2) > key(i) {
                        let p = (i - 1) / 2;
                        let (a, b) = (key(p), key(i));
                        w.set(8 + p, b);
                        w.set(8 + i, a);
                        i = p;
                    }
                    lo = i;
                    len = n + 1;
                    ret = None;
                }
                None => {
                    if n == 0 {
                        return None;
                    }
                    ret = Some(key(0));
                    len = n - 1;
                    w.set(8, key(len));
                    let mut i = 0;
                    lo = 0;
                    loop {
                        let (l, r) = (2 * i + 1, 2 * i + 2);
                        let mut m = i;
                        if l < len && key(l) < key(m) {
                            m = l;
                        }
                        if r < len && key(r) < key(m) {
                            m = r;
                        }
                        if m == i {
                            break;
                        }
                        let (a, b) = (key(i), key(m));
                        w.set(8 + i, b);
                        w.set(8 + m, a);
                        i = m;
                    }
                    hi = i;
                }
            }
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            w.pwb(8 + lo, hi - lo + 1);
            w.pfence();
            w.set(0, len as u64);
            w.pwb(0, 1);
            w.psync();
            ret
        })
    }
}

/// The stack on a [`MutexPersist`].
impl PairOps for &MutexPersist {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.with(|w| {
            let n = w.get(0) as usize;
            if n == self.slots {
                return Err(BenchError::Pcomb("Mutex+persist stack full".into()));
            }
            w.set(8 + n, v);
            w.pwb(8 + n, 1);
            w.pfence();
            w.set(0, n as u64 + 1);
            w.pwb(0, 1);
            w.psync();
            Ok(())
        })?
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        self.with(|w| {
            let n = w.get(0) as usize;
            if n == 0 {
                return None;
            }
            w.set(0, n as u64 - 1);
            w.pwb(0, 1);
            w.psync();
            Some(w.get(8 + n - 1))
        })
    }
}

/// The queue (a ring of `slots`) on a [`MutexPersist`].
pub(super) struct MutexPersistQueue<'a>(pub(super) &'a MutexPersist);

impl PairOps for MutexPersistQueue<'_> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        let m = self.0;
        m.with(|w| {
            let (h, t) = (w.get(0), w.get(1));
            if t - h == m.slots as u64 {
                return Err(BenchError::Pcomb("Mutex+persist queue full".into()));
            }
            let i = 8 + (t as usize % m.slots);
            w.set(i, v);
            w.pwb(i, 1);
            w.pfence();
            w.set(1, t + 1);
            w.pwb(1, 1);
            w.psync();
            Ok(())
        })?
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        let m = self.0;
        m.with(|w| {
            let (h, t) = (w.get(0), w.get(1));
            if h == t {
                return None;
            }
            let v = w.get(8 + (h as usize % m.slots));
            w.set(0, h + 1);
            w.pwb(0, 1);
            w.psync();
            Some(v)
        })
    }
}

/// The heap on a [`MutexPersist`].
pub(super) struct MutexPersistHeap<'a>(pub(super) &'a MutexPersist);

impl PairOps for MutexPersistHeap<'_> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.0.heap_op(Some(v)).map(|_| ())
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        self.0.heap_op(None)
    }
}

impl<T: PairOps + ?Sized> PairOps for Box<T> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        (**self).first(v)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        (**self).second()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A region with no room for the baseline's slots is the region allocator's typed error,
    /// not a message.
    #[test]
    fn a_region_without_room_is_a_typed_region_error() {
        let path = std::env::temp_dir().join(format!(
            "benches-test-{}-region-room.pmem",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let region = Region::create(&path, 1, 1 << 16).expect("region");
        let result = MutexPersist::new(region, 1 << 20).map(|_| ());
        std::fs::remove_file(&path).expect("remove the region file");
        let Err(err) = result else {
            panic!("1 Mi slots fit in a 64 KiB region");
        };
        assert!(
            matches!(
                err,
                BenchError::RegionAlloc(pcomb::pmem::AllocError::Exhausted { .. })
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("region allocation: region exhausted: "),
            "{err}"
        );
    }
}
