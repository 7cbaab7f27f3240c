#![doc = include_str!("../README.md")]

mod alloc;
mod bst;
mod error;
pub mod flavor;
mod hash;
mod heap;
mod list;
#[cfg(all(test, loom))]
mod loom_bst;
#[cfg(all(test, loom))]
mod loom_cas;
#[cfg(all(test, loom))]
mod loom_hash;
#[cfg(all(test, loom))]
mod loom_heap;
#[cfg(all(test, loom))]
mod loom_list;
#[cfg(test)]
mod mark_window;
mod patomic;
mod persist;
mod skiplist;
mod sync;
mod word;

pub use bst::{Bst, BstNode, BST_MAX_KEY, BST_ROOT_SLOT};
pub use error::{BstError, HashError, HeapAllocError, HeapError};
pub use hash::{
    HashRoot, HashSet, DEFAULT_BUCKETS, HASH_MAX_KEY, HASH_ROOT_SLOT, HASH_TAG, MAX_BUCKETS,
    MAX_LOAD,
};
pub use heap::{block_size, Base, Domain, Guard, Heap, Object, Space, Trace, Tracer, MAX_OBJECT};
pub use list::{Head, List, ListRoot, Node, LIST_ROOT_SLOT};
pub use patomic::{Arith, PAtomic, PConst};
pub use pmem::{self, NoPersist, Persist, Pod, Region};
pub use skiplist::{SkipList, SkipNode, SkipRoot, MAX_LEVEL, SKIP_ROOT_SLOT};
pub use word::PPtr;
