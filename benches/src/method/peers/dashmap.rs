//! `dashmap`: a sharded concurrent hash map, the hash-map anchor's lock-based-sharding peer.

use examples::{KvMap, KvRead, KvWrite};
use nr_core::{Dispatch, Poisoned};

use crate::method::{Handle, Method, Setup};
use crate::BenchError;

/// `dashmap::DashMap<u64, u64>` running the hash map's operations.
///
/// # Examples
///
/// ```
/// use benches::method::peers::DashMapPeer;
/// use benches::{Handle, Method, Replicas, Setup};
/// use examples::{KvMap, KvRead, KvWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || KvMap::default();
/// let setup = Setup { make: &make, prefill: &[KvWrite::Put(1, 2)], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let dm = DashMapPeer::build(&setup)?;
/// assert_eq!(dm.handle(0, 1)?.read(KvRead::Get(1))?, Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DashMapPeer(dashmap::DashMap<u64, u64>);

impl Method<KvMap> for DashMapPeer {
    const NAME: &'static str = "dashmap";
    type Handle<'a> = &'a DashMapPeer;

    fn build(setup: &Setup<'_, KvMap>) -> Result<Self, BenchError> {
        let map = dashmap::DashMap::with_capacity(setup.prefill.len());
        for op in setup.prefill {
            match *op {
                KvWrite::Put(k, v) => map.insert(k, v),
            };
        }
        Ok(DashMapPeer(map))
    }

    fn handle(&self, _thread: usize, _threads: usize) -> Result<&DashMapPeer, BenchError> {
        Ok(self)
    }
}

impl Handle<KvMap> for &DashMapPeer {
    #[inline]
    fn read(&mut self, op: KvRead) -> Result<<KvMap as Dispatch>::Response, Poisoned> {
        Ok(match op {
            KvRead::Get(k) => self.0.get(&k).map(|v| *v),
        })
    }

    #[inline]
    fn write(&mut self, op: KvWrite) -> Result<<KvMap as Dispatch>::Response, Poisoned> {
        Ok(match op {
            KvWrite::Put(k, v) => self.0.insert(k, v),
        })
    }
}
