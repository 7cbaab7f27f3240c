#![doc = include_str!("../README.md")]

mod invariant;
mod map;
mod pq;
mod rng;
mod skiplist;
mod sorted_set;
mod stack;
mod synthetic;

pub use invariant::InvariantError;
pub use map::{HashMapKv, MapRead, MapResponse, MapWrite, SkipListMap};
pub use pq::{PairingHeap, PqRead, PqResponse, PqWrite, SkipListPq};
pub use rng::SplitMix64;
pub use sorted_set::{ScoreOverflow, SortedSet, SortedSetRead, SortedSetResponse, SortedSetWrite};
pub use stack::{Stack, StackRead, StackResponse, StackWrite};
pub use synthetic::{SyntheticBuffer, SyntheticRead, SyntheticWrite};
