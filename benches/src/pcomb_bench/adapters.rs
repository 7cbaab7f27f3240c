//! The adapters: every call into `pcomb` made by the benchmarks is in this file, so an API change
//! there (operations returning `Result` for poisoning, say) is a change here only.

use std::hint::black_box;

use pcomb::objects::AtomicFloat;
use pcomb::pmem::Persist;
use pcomb::structures::{
    PBHeapHandle, PBQueueHandle, PBStackHandle, PWFQueueHandle, PWFStackHandle,
};
use pcomb::{PBComb1Handle, PBCombHandle, PWFCombHandle};

use super::structures::PairOps;
use crate::{error_chain, BenchError};

/// A built pcomb object, or why not.
pub(super) fn built<T, E: std::error::Error + 'static>(r: Result<T, E>) -> Result<T, BenchError> {
    r.map_err(|e| BenchError::Pcomb(format!("build: {}", error_chain(&e))))
}

/// A registered pcomb handle, or why not.
pub(super) fn register<T, E: std::error::Error + 'static>(
    r: Result<T, E>,
) -> Result<T, BenchError> {
    r.map_err(|e| BenchError::Pcomb(format!("register: {}", error_chain(&e))))
}

fn full(e: pcomb::structures::Full) -> BenchError {
    BenchError::Pcomb(format!("structure full: {e}"))
}

pub(super) fn float_op_pb<P: Persist>(
    h: &mut PBCombHandle<'_, AtomicFloat, P>,
    k: u64,
) -> Result<(), BenchError> {
    black_box(h.execute_mut(k));
    Ok(())
}

pub(super) fn float_op_pb1<P: Persist>(
    h: &mut PBComb1Handle<'_, AtomicFloat, P>,
    k: u64,
) -> Result<(), BenchError> {
    black_box(h.execute_mut(k));
    Ok(())
}

pub(super) fn float_op_pwf<P: Persist>(
    h: &mut PWFCombHandle<'_, AtomicFloat, P>,
    k: u64,
) -> Result<(), BenchError> {
    black_box(h.execute_mut(k));
    Ok(())
}

impl<P: Persist> PairOps for PBStackHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.push(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.pop())
    }
}

impl<P: Persist> PairOps for PWFStackHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.push(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.pop())
    }
}

impl<P: Persist> PairOps for PBQueueHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.enqueue(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.dequeue())
    }
}

impl<P: Persist> PairOps for PWFQueueHandle<'_, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.enqueue(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.dequeue())
    }
}

impl<const CAP: usize, P: Persist> PairOps for PBHeapHandle<'_, CAP, P> {
    fn first(&mut self, v: u64) -> Result<(), BenchError> {
        self.insert(v).map_err(full)
    }
    fn second(&mut self) -> Result<Option<u64>, BenchError> {
        Ok(self.delete_min())
    }
}
