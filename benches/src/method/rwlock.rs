//! RWL: one big readers-writer lock (`parking_lot::RwLock`).

use nr_core::{Dispatch, Poisoned};

use super::{Handle, Method, Setup};
use crate::BenchError;

/// The structure behind one `parking_lot::RwLock`: reads share the lock, writes take it
/// exclusively.
///
/// # Examples
///
/// ```
/// use benches::{Handle, Method, Replicas, RwLock, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::with_items(4);
/// let setup = Setup { make: &make, prefill: &[], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let rwl = RwLock::build(&setup)?;
/// assert_eq!(rwl.handle(0, 2)?.read(MapRead::Get(3))?, MapResponse::Get(Some(3)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RwLock<D>(parking_lot::RwLock<D>);

impl<D> Method<D> for RwLock<D>
where
    D: Dispatch + Send + Sync,
{
    const NAME: &'static str = "RWL";
    type Handle<'a>
        = &'a RwLock<D>
    where
        Self: 'a;

    fn build(setup: &Setup<'_, D>) -> Result<Self, BenchError> {
        Ok(Self(parking_lot::RwLock::new(setup.fresh())))
    }

    fn handle(&self, _thread: usize, _threads: usize) -> Result<&RwLock<D>, BenchError> {
        Ok(self)
    }
}

impl<D: Dispatch> Handle<D> for &RwLock<D> {
    #[inline]
    fn read(&mut self, op: D::ReadOperation<'_>) -> Result<D::Response, Poisoned> {
        Ok(self.0.read().dispatch(op))
    }

    #[inline]
    fn write(&mut self, op: D::WriteOperation) -> Result<D::Response, Poisoned> {
        Ok(self.0.write().dispatch_mut(op))
    }
}
