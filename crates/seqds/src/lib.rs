#![doc = include_str!("../README.md")]

mod invariant;
mod map;
mod pq;
mod rng;
mod skiplist;

pub use invariant::InvariantError;
pub use map::{HashMapKv, MapRead, MapResponse, MapWrite, SkipListMap};
pub use pq::{PairingHeap, PqRead, PqResponse, PqWrite, SkipListPq};
pub use rng::SplitMix64;
