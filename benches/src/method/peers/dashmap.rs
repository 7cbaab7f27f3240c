//! `dashmap`: a sharded concurrent hash map, the hash-map anchor's lock-based-sharding peer.

use nr_core::{Dispatch, Poisoned};
use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};

use crate::method::{Handle, Method, Setup};
use crate::BenchError;

/// `dashmap::DashMap<u64, u64>` running the hash map's operations.
///
/// # Examples
///
/// ```
/// use benches::method::peers::DashMapPeer;
/// use benches::{Handle, Method, Replicas, Setup};
/// use seqds::{HashMapKv, MapRead, MapResponse, MapWrite};
/// # let topology = nr_core::Topology::single_node(vec![0])?;
/// let make = || HashMapKv::new();
/// let setup = Setup { make: &make, prefill: &[MapWrite::Put(1, 2)], threads: 1, topology: &topology, replicas: Replicas::PerNode };
/// let dm = DashMapPeer::build(&setup)?;
/// assert_eq!(dm.handle(0, 1)?.read(MapRead::Get(1))?, MapResponse::Get(Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DashMapPeer(dashmap::DashMap<u64, u64>);

impl Method<HashMapKv> for DashMapPeer {
    const NAME: &'static str = "dashmap";
    type Handle<'a> = &'a DashMapPeer;

    fn build(setup: &Setup<'_, HashMapKv>) -> Result<Self, BenchError> {
        let map = dashmap::DashMap::with_capacity(setup.prefill.len());
        let peer = DashMapPeer(map);
        for op in setup.prefill {
            // This peer's operations cannot fail.
            let _ = (&peer).write(*op);
        }
        Ok(peer)
    }

    fn handle(&self, _thread: usize, _threads: usize) -> Result<&DashMapPeer, BenchError> {
        Ok(self)
    }
}

impl Handle<HashMapKv> for &DashMapPeer {
    #[inline]
    fn read(&mut self, op: MapRead) -> Result<<HashMapKv as Dispatch>::Response, Poisoned> {
        Ok(match op {
            MapRead::Get(k) => MapResponse::Get(self.0.get(&k).map(|v| *v)),
            MapRead::Contains(k) => MapResponse::Contains(self.0.contains_key(&k)),
            MapRead::Len => MapResponse::Len(self.0.len()),
        })
    }

    #[inline]
    fn write(&mut self, op: MapWrite) -> Result<<HashMapKv as Dispatch>::Response, Poisoned> {
        Ok(match op {
            MapWrite::Put(k, v) => MapResponse::Put(self.0.insert(k, v)),
            MapWrite::Remove(k) => MapResponse::Removed(self.0.remove(&k).map(|(_, v)| v)),
        })
    }
}
