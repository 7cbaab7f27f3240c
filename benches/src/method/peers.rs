//! Workload-specific peers: concurrent structures that are not built from the sequential one,
//! each implementing [`Method`](crate::Method) for one sequential structure `D` by translating `D`'s operations
//! to its own, so it runs exactly the workload the black-box methods run.

mod cnr;
mod dashmap;
mod nr_crate;
mod skiplist;
mod tokens;
mod treiber;

pub use self::cnr::{
    Cnr, CnrCrateHandle, CnrCratePeer, CnrMapHandle, PartRead, PartWrite, PartitionedMap,
};
pub use self::dashmap::DashMapPeer;
pub use self::nr_crate::{NrCrateHandle, NrCratePeer};
pub use self::skiplist::{LfDict, LfPq, LfPqHandle};
pub use self::treiber::TreiberStack;
