//! Small deterministic sequential models implementing [`Model`](crate::lin::Model).
//!
//! | Model | Operations (`Op`) | Results (`Ret`) |
//! |---|---|---|
//! | [`KvMap`] | [`KvOp`]: `Get(k)`, `Put(k, v)`, `Remove(k)` | [`KvRet`]: the value, or the old value |
//! | [`Counter`] | [`CounterOp`]: `Add(n)`, `Get` | [`CounterRet`]: the previous value, or the value |
//! | [`Register`] | [`RegisterOp`]: `Read`, `Write(v)` | [`RegisterRet`]: `Value(v)`, `Written` |
//! | [`Stack`] | [`StackOp`]: `Push(v)`, `Pop` | [`StackRet`]: `Pushed`, `Popped(Option<v>)` |
//! | [`PeekStack`] | [`PeekStackOp`]: `Push(v)`, `Pop`, `Peek` | [`PeekStackRet`]: `Pushed`, `Popped(..)`, `Peeked(..)` |
//! | [`Queue`] | [`QueueOp`]: `Enqueue(v)`, `Dequeue` | [`QueueRet`]: `Enqueued`, `Dequeued(Option<v>)` |
//! | [`MinPq`] | [`PqOp`]: `Insert(v)`, `DeleteMin`, `FindMin` | [`PqRet`]: `Inserted`, `Deleted(..)`, `Min(..)` |
//!
//! Keys and values are `u64`. Every `Op` and `Ret` enum derives `Clone`,
//! `Debug`, `PartialEq`, `Eq` and `Hash`; every result variant is specific to
//! its operation, so a result of the wrong kind never matches. The models are
//! also plain sequential data structures, usable as the object a concurrent
//! wrapper (such as Node Replication) replicates.
//!
//! # Examples
//!
//! ```
//! use testkit::lin::Model;
//! use testkit::models::{MinPq, PqOp, PqRet};
//!
//! let mut pq = MinPq::new();
//! pq.step(&PqOp::Insert(5));
//! pq.step(&PqOp::Insert(2));
//! assert_eq!(pq.step(&PqOp::DeleteMin), PqRet::Deleted(Some(2)));
//! assert_eq!(pq.step(&PqOp::FindMin), PqRet::Min(Some(5)));
//! ```

mod collections;
mod map;
mod scalar;

pub use collections::{
    MinPq, PeekStack, PeekStackOp, PeekStackRet, PqOp, PqRet, Queue, QueueOp, QueueRet, Stack,
    StackOp, StackRet,
};
pub use map::{KvMap, KvOp, KvRet};
pub use scalar::{Counter, CounterOp, CounterRet, Register, RegisterOp, RegisterRet};
